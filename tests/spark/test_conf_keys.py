"""The Spark conf keys: one Python module (metaindex.spark.config) says which matter, and the Java
shim's key lists (jvm/src) are pinned to it here, by reading the Java source; the request the
JVM sends is read by SessionConf the way the hook needs. No Spark session is started."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from metaindex.engine.prune import SessionSettings
from metaindex.spark import config, hook

JAVA = pathlib.Path(__file__).resolve().parents[2] / "jvm" / "src"
SHIM = JAVA / "main" / "java" / "io" / "metaindex" / "spark"

NOT_CONF = {
    "metaindex.spark.pruned": "the Python module the JVM runs as the pruning process",
    "spark.lines": "a property of the jar's own metadata",
    "spark.version": "Spark's version, not a conf",
    "spark.sql.execution.id": "a local property of the running query, not a conf",
}


def _java(name: str) -> str:
    return (SHIM / f"{name}.java").read_text()


def _array(source: str, name: str) -> tuple:
    found = re.search(name + r"\s*=\s*\{([^}]*)\}", source)
    assert found, f"no {name} array in the Java source"
    return tuple(re.findall(r'"([^"]*)"', found.group(1)))


def _constants(source: str) -> dict:
    return dict(re.findall(r'static final String (\w+_CONF)\s*=\s*"([^"]*)"', source))


def test_the_jvm_sends_the_keys_python_reads():
    index = _java("MetaIndexFileIndex")
    assert _array(index, "SENT_PREFIXES") == config.SENT_PREFIXES, (
        "the JVM sends by prefix exactly what metaindex.spark.config says matters"
    )
    assert _array(index, "SESSION_KEYS") == config.session_keys() == hook.SESSION_CONF
    assert set(config.session_keys()) == set(SessionSettings.SPARK_CONF.values())


def test_the_jvm_switches_are_python_constants():
    assert _constants(_java("MetaIndexRule"))["ENABLED_CONF"] == config.ENABLED_CONF
    assert set(_constants(_java("PruningProcess")).values()) == set(config.PROCESS_CONF)
    package, _, name = config.EXTENSION.rpartition(".")
    assert (JAVA / "main" / "java" / package.replace(".", "/") / f"{name}.java").is_file(), (
        f"{config.EXTENSION} names a class of the shim"
    )
    assert hook.EXTENSION == config.EXTENSION and hook.ENABLED_CONF == config.ENABLED_CONF


def test_every_conf_key_in_the_java_source_is_known_to_python():
    known = {
        *config.SENT_PREFIXES,
        *config.session_keys(),
        config.ENABLED_CONF,
        *config.PROCESS_CONF,
    }
    literals = set()
    for path in JAVA.rglob("*.java"):
        literals.update(
            re.findall(r'"((?:spark|metaindex|fs\.s3a)\.[A-Za-z0-9_.]*)"', path.read_text())
        )
    unknown = literals - known - set(NOT_CONF)
    assert not unknown, (
        f"conf keys the JVM reads that metaindex.spark.config does not list: {sorted(unknown)}"
    )


def _request(conf: dict) -> str:
    return json.dumps({"session": "conf-keys-test", "roots": [], "filters": [], "conf": conf})


def test_a_request_conf_is_split_into_index_and_session_entries():
    sent = {
        "metaindex.store": "/s",
        "spark.metaindex.encryption.kms": "inmemory:k.json",
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.access.key": "a",
        "spark.sql.session.timeZone": "Asia/Tokyo",
        "spark.sql.caseSensitive": "true",
        "spark.sql.legacy.parquet.int96RebaseModeInRead": "LEGACY",
        "spark.executor.memory": "2g",
    }
    conf = config.SessionConf.of_request(sent)
    assert dict(conf.index) == {
        k: v
        for k, v in sent.items()
        if k.startswith(("metaindex.", "spark.metaindex.", "fs.s3a.", "spark.hadoop.fs.s3a."))
    }
    assert "spark.executor.memory" not in {**dict(conf.index), **dict(conf.session)}, (
        "a key metaindex does not read is not part of the captured conf"
    )
    assert conf.session_settings() == SessionSettings("Asia/Tokyo", True, "CORRECTED", "LEGACY")
    settings = conf.settings()
    assert (
        settings.store == "/s"
        and settings.storage_options["endpoint"] == "http://127.0.0.1:9000"
        and settings.storage_options["access_key_id"] == "a"
    )
    assert hash(conf) == hash(config.SessionConf.of_request(dict(reversed(sent.items())))), (
        "one conf, one cache key, whatever the order it was sent in"
    )
    with pytest.raises(TypeError, match="string keys"):
        config.SessionConf.of_request({1: "x"})


def test_a_request_with_a_bad_session_setting_reads_every_file():
    with pytest.warns(hook.SkippingWarning, match="session settings not understood"):
        reply = hook.handle_prune_request(
            _request({"spark.sql.parquet.datetimeRebaseModeInRead": "SOMETIMES"})
        )
    stats = json.loads(reply.split("\n", 1)[0])
    assert reply.endswith("\nNONE") and "session settings not understood" in stats["reason"]
