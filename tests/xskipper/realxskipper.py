"""The real xskipper (1.6.0, Spark 3.5, Scala 2.12) run side by side with metaindex.

:func:`run` starts ``xskipper_driver.py`` in a cached pyspark 3.5 venv with xskipper's jar
(``tests.toolcache.xskipper_jar``) and a test KMS, and returns what the driver recorded per
scenario: the table, the store directory xskipper wrote, and per query xskipper's skipping
stats and rows and the files that hold a matching row (skipping off). Everything it installs
is cached: a second run fetches nothing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys

from tests import toolcache

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYSPARK = "pyspark>=3.5,<3.6"
VENV = f"venv-py{sys.version_info[0]}{sys.version_info[1]}-pyspark-3.5"

MASTER_KEYS = {
    "footer_master": bytes.fromhex("8f9896d76b15df0249abd7a1c928efe8"),
    "col_master": bytes.fromhex("39512fc8997fedcb7d1ae28c53db2c94fed45981613c3ccd"),
    "other_master": bytes.fromhex(
        "83aa153a97a8689b4348ce1c4e0509685aa4b8ca9098f8df523ad354b0c2d42e"
    ),
}
KMS_CLASS = "metaindex.testkms.InMemoryKms"
WORK_ENV = "METAINDEX_XSKIPPER_WORK"
"""A directory to run in instead of a temporary one; a finished run found there (its
``out.json``, for the same job) is reused: for working on the assertions, not for CI."""


def key_list() -> str:
    return ", ".join(f"{k}: {base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())


def key_access():
    """metaindex's access to the same master keys (``InMemoryKms``, parquet-java's wrapping)."""
    from metaindex.store import KeyAccess

    return KeyAccess(_kms_factory)


def _kms_factory(config):
    from metaindex.crypto import InMemoryKms

    return InMemoryKms(MASTER_KEYS)


def _pyspark_jars(python: str) -> str:
    done = subprocess.run(
        [
            python,
            "-c",
            "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def _kms_jar(jars: str, work: str) -> str:
    """parquet-java's InMemoryKMS sample (the test KMS of tests/spark/test_crypto_spark.py)
    compiled against pyspark 3.5's jars."""
    from tests.spark.test_crypto_spark import JAVA_KMS

    source = os.path.join(work, "kms", "metaindex", "testkms", "InMemoryKms.java")
    os.makedirs(os.path.dirname(source), exist_ok=True)
    with open(source, "w") as f:
        f.write(JAVA_KMS)
    classes = os.path.join(work, "kms", "classes")
    subprocess.run(
        ["javac", "-d", classes, "-cp", os.path.join(jars, "*"), source],
        check=True,
        capture_output=True,
        timeout=300,
    )
    jar = os.path.join(work, "kms", "testkms.jar")
    subprocess.run(
        ["jar", "cf", jar, "-C", classes, "."], check=True, capture_output=True, timeout=300
    )
    return jar


def _metaindex_dependencies(python: str) -> None:
    """metaindex's own dependencies (pyproject's, and pandas for pyspark 3.5's Arrow
    conversion) in the venv, installed once (the venv may have been made with pyspark only)."""
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    spark_extra = project["optional-dependencies"]["spark"]
    wanted = [*project["dependencies"], *(d for d in spark_extra if not d.startswith("pyspark"))]
    modules = "numpy, pyarrow, cryptography, zstandard, lz4, cramjam, brotli, sqlglot, pandas"
    probe = subprocess.run(
        [python, "-c", f"import {modules}"], capture_output=True, timeout=300, env=_clean_env()
    )
    if probe.returncode != 0:
        toolcache._run(
            [python, "-m", "pip", "install", "--quiet", *wanted],
            "installing metaindex's dependencies into the pyspark 3.5 venv",
            1800,
            env=_clean_env(),
        )


def _clean_env() -> dict:
    return {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME", "SPARK_REMOTE")
    }


def run(
    work: str,
    scenarios: list,
    queries: list,
    files: int = 6,
    rows_per_file: int = 40,
    metaindex: dict | None = None,
) -> list:
    """Run the driver; returns its per-scenario results (see ``xskipper_driver.py``), and the
    ``metaindex`` scenario's last when one is given (metaindex from this source tree on the
    same Spark 3.5 session).

    Raises:
        toolcache.ToolUnavailable: no JDK, no pyspark 3.5 venv, no xskipper jar.
    """
    for tool in ("java", "javac", "jar"):
        if shutil.which(tool) is None:
            raise toolcache.ToolUnavailable(f"no {tool} on PATH (a JDK 17 runs Spark 3.5)")
    python = toolcache.venv(VENV, PYSPARK)
    if metaindex is not None:
        _metaindex_dependencies(python)
    jars = _pyspark_jars(python)
    jar = toolcache.xskipper_jar(jars)
    job = {
        "jars": [jar, _kms_jar(jars, work)],
        "hadoop": {
            "parquet.crypto.factory.class": (
                "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory"
            ),
            "parquet.encryption.kms.client.class": KMS_CLASS,
            "parquet.encryption.key.list": key_list(),
        },
        "scenarios": scenarios,
        "queries": queries,
        "files": files,
        "rows_per_file": rows_per_file,
        "metaindex": metaindex,
    }
    job_path, out_path = os.path.join(work, "job.json"), os.path.join(work, "out.json")
    if os.path.isfile(out_path) and os.path.isfile(job_path):
        with open(job_path) as f:
            same = json.load(f) == json.loads(json.dumps(job))
        if same:
            with open(out_path) as f:
                return json.load(f)
        os.remove(out_path)
    for sc in scenarios:  # the driver writes new tables and stores: start empty
        shutil.rmtree(sc["table"], ignore_errors=True)
        shutil.rmtree(sc["md_base"], ignore_errors=True)
    if metaindex is not None:
        shutil.rmtree(metaindex["table"], ignore_errors=True)
        shutil.rmtree(metaindex["store"], ignore_errors=True)
    with open(job_path, "w") as f:
        json.dump(job, f)
    env = _clean_env()
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, SPARK_LOCAL_IP="127.0.0.1")
    if metaindex is not None:  # this tree (its compiled kernels: the same Python), workers too
        env["PYTHONPATH"] = REPO
    done = subprocess.run(
        [python, os.path.join(HERE, "xskipper_driver.py"), job_path, out_path],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"the xskipper driver exited {done.returncode}:\n{(done.stdout + done.stderr)[-6000:]}"
        )
    with open(out_path) as f:
        return json.load(f)
