"""The ``metaindex`` command end to end: every command through a subprocess
(``python -m metaindex``) on small pyarrow-written tables, checking the JSON it prints, its human
output, and the exit code of each error family (bad path, missing or wrong key, corrupt metadata,
unknown column, bad predicate); ``inspect`` on plain, dictionary / bloom / page-index and PME
files."""

from __future__ import annotations

import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.crypto import (
    CryptoFactory,
    EncryptionConfiguration,
    InMemoryKms,
    KmsConnectionConfig,
)
from metaindex.parquet import write_table

COMMANDS = (
    "build",
    "refresh",
    "compact",
    "vacuum",
    "describe",
    "check",
    "advise",
    "history",
    "drop",
    "prune",
    "inspect",
)
N_FILES = 12
ROWS = 20
MASTER_KEYS = {"footer": b"0123456789abcdef", "pii": b"fedcba9876543210"}
WRONG_KEYS = {"footer": b"x123456789abcdef", "pii": b"yedcba9876543210"}


# ------------------------------------------------------------------------------ helpers


def run(*args, timeout: int = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("METAINDEX_STORE", None)
    env.pop("METAINDEX_KMS", None)
    return subprocess.run(
        [sys.executable, "-m", "metaindex", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def run_json(*args):
    proc = run(*args, "--json")
    assert proc.returncode == 0, f"{args} failed ({proc.returncode}): {proc.stderr}"
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(
            f"--json should print exactly one JSON document, got {proc.stdout!r}"
        ) from exc


def assert_error(proc, code: int, *needles: str) -> None:
    """One clear line on stderr, no traceback, the family's exit code."""
    assert proc.returncode == code, (
        f"exit code should be {code}, got {proc.returncode}: {proc.stderr!r}"
    )
    err = proc.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err, (
        f"an error is one line starting 'error: ', got {proc.stderr!r}"
    )
    assert "Traceback" not in proc.stderr, "no traceback without --debug"
    for needle in needles:
        assert needle in err, f"the error should mention {needle!r}: {err!r}"


def write_keys(path, keys) -> str:
    with open(path, "w") as f:
        json.dump({k: base64.b64encode(v).decode() for k, v in keys.items()}, f)
    return f"inmemory:{path}"


def file_table(k: int) -> pa.Table:
    """File k: i in [k*100, k*100 + ROWS), s = 'c<k % 3>', f floats around k."""
    rng = np.random.default_rng(k)
    return pa.table(
        {
            "i": pa.array(np.arange(k * 100, k * 100 + ROWS), pa.int64()),
            "s": pa.array([f"c{k % 3}"] * ROWS, pa.string()),
            "f": pa.array(rng.normal(k, 0.1, ROWS), pa.float64()),
        }
    )


def make_table(root, n: int = N_FILES) -> str:
    os.makedirs(root, exist_ok=True)
    for k in range(n):
        pq.write_table(file_table(k), os.path.join(root, f"part-{k:03d}.parquet"))
    return str(root)


def build_args(table, store, *extra):
    return (
        "build",
        table,
        "--store",
        store,
        "--min-max",
        "i,f",
        "--value-list",
        "s",
        "--bloom",
        "s",
        "--workers",
        "1",
        *extra,
    )


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """A 12-file table indexed once (read-only for the tests that use it)."""
    base = tmp_path_factory.mktemp("cli")
    table = make_table(base / "t")
    store = str(base / "store")
    doc = run_json(*build_args(table, store))
    return table, store, doc


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("keys")
    return write_keys(base / "keys.json", MASTER_KEYS), write_keys(base / "wrong.json", WRONG_KEYS)


# ------------------------------------------------------------------------------ help


def test_every_command_has_help_with_an_example():
    top = run("--help")
    assert top.returncode == 0, top.stderr
    for command in COMMANDS:
        assert command in top.stdout, f"top-level help should list {command}"
    for code in ("2", "3", "4", "5", "6", "7", "8"):
        assert f"\n    {code} " in top.stdout, f"help epilog should document exit code {code}"
    for command in COMMANDS:
        proc = run(command, "--help")
        assert proc.returncode == 0, proc.stderr
        assert "Examples:" in proc.stdout and f"$ metaindex {command}" in proc.stdout, (
            f"{command} --help should show an example:\n{proc.stdout}"
        )
        assert "--json" in proc.stdout, f"{command} should take --json"


def test_exit_code_table_in_docstring_matches_the_mapping():
    import metaindex.cli
    from metaindex.cli.errors import EXIT_CODES

    doc = metaindex.cli.__doc__
    for code in EXIT_CODES:
        assert f"\n{code:<4}  " in doc, f"the module docstring should document exit code {code}"


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and "metaindex" in proc.stdout, proc.stdout


# ------------------------------------------------------------------------------ build / prune


def test_build_json(indexed):
    table, store, doc = indexed
    assert doc["status"] == "SUCCESS" and doc["version"] == 1, doc
    assert doc["files_indexed"] == N_FILES and doc["failed"] == {}, doc
    assert doc["executor"] == "local" and doc["store"].startswith(store), doc


def test_build_is_quiet_when_not_a_terminal(tmp_path):
    table = make_table(tmp_path / "t", 3)
    proc = run("build", table, "--store", tmp_path / "s", "--min-max", "i", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", f"no progress bar when stderr is not a terminal: {proc.stderr!r}"
    assert "indexed 3 files" in proc.stdout, proc.stdout


def test_prune_json_counts_and_files(indexed):
    table, store, _ = indexed
    doc = run_json("prune", table, "--store", store, "--where", "i >= 1000", "--files")
    kept = sorted(os.path.basename(p) for p in doc["kept"])
    assert kept == ["part-010.parquet", "part-011.parquet"], (
        f"only files 10 and 11 hold i >= 1000 (max of file k is k*100+19): {kept}"
    )
    assert doc["kept_files"] == 2 and doc["skipped_files"] == N_FILES - 2, doc
    assert len(doc["skipped"]) == N_FILES - 2, doc
    assert doc["skipped_by_index"]["minmax(i)"] == N_FILES - 2, doc["skipped_by_index"]
    assert doc["skipped_by_index"]["valuelist(s)"] == 0, doc["skipped_by_index"]
    assert doc["total_bytes"] == doc["kept_bytes"] + doc["skipped_bytes"], doc


def test_prune_value_list_contribution(indexed):
    table, store, _ = indexed
    doc = run_json("prune", table, "--store", store, "--where", "s = 'c1'")
    assert doc["kept_files"] == 4, "files 1, 4, 7, 10 hold s = 'c1'"
    assert doc["skipped_by_index"]["valuelist(s)"] == 8, doc["skipped_by_index"]
    assert "kept" not in doc, "file lists only with --files"


def test_prune_human_output(indexed):
    table, store, _ = indexed
    proc = run("prune", table, "--store", store, "--where", "i < 150", "--files")
    assert proc.returncode == 0, proc.stderr
    assert "2 of 12 files kept" in proc.stdout and "10 skipped" in proc.stdout, proc.stdout
    assert "minmax(i)" in proc.stdout and "part-001.parquet" in proc.stdout, proc.stdout


def test_prune_explain_names_dropped_conjuncts_and_index_counts(indexed):
    table, store, _ = indexed
    where = "upper(s) = 'C1' AND i >= 1000"
    plain = run_json("prune", table, "--store", store, "--where", where, "--allow-unused")
    doc = run_json("prune", table, "--store", store, "--where", where, "--explain")
    assert [(c["used"], c["reason"]) for c in doc["conjuncts"]] == [
        (False, "unknown function"),
        (True, None),
    ], doc["conjuncts"]
    assert (
        doc["conjuncts"][1]["indexes"]
        == {"minmax(i)": plain["skipped_files"]}
        == {"minmax(i)": N_FILES - 2}
    ), doc["conjuncts"]
    for key in (
        "total_files",
        "kept_files",
        "skipped_files",
        "unindexed_files",
        "skipped_by_index",
        "version",
    ):
        assert doc[key] == plain[key], key
    proc = run("prune", table, "--store", store, "--where", where, "--explain")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "10 of 12 files skipped" in lines[0], proc.stdout
    assert lines[1].split()[:1] == ["dropped"] and "unknown function" in lines[1], proc.stdout
    assert lines[2].split()[:1] == ["used"] and "minmax(i) rules out 10" in lines[2], proc.stdout
    missing = run_json("prune", table, "--store", store, "--where", "nope = 1", "--explain")
    assert missing["conjuncts"][0]["reason"] == "unknown column", missing
    assert_error(
        run("prune", table, "--store", store, "--where", "i = 1", "--explain", "--files"),
        2,
        "--files",
    )


def test_prune_reports_unused_conjuncts_and_takes_a_time_zone(indexed):
    table, store, _ = indexed
    where = "i >= 1000 AND upper(s) = 'C1'"
    doc = run_json(
        "prune",
        table,
        "--store",
        store,
        "--where",
        where,
        "--time-zone",
        "America/Los_Angeles",
        "--allow-unused",
    )
    assert doc["kept_files"] == 2 and doc["time_zone"] == "America/Los_Angeles", doc
    assert [(c["used"], c["reason"]) for c in doc["conjuncts"]] == [
        (True, None),
        (False, "unknown function"),
    ], doc["conjuncts"]
    proc = run("prune", table, "--store", store, "--where", where, "--allow-unused")
    assert proc.returncode == 0 and "not used (unknown function)" in proc.stdout, proc.stdout
    assert_error(
        run("prune", table, "--store", store, "--where", "i = 1", "--time-zone", "Nowhere/Special"),
        6,
        "time zone",
    )


def test_describe_and_history(indexed):
    table, store, _ = indexed
    doc = run_json("describe", table, "--store", store)
    assert doc["counts"] == {
        "indexed_files": N_FILES,
        "indexed_rows": N_FILES * ROWS,
        "parts": 1,
    }, doc["counts"]
    kinds = sorted((ix["kind"], ix["column"]) for ix in doc["indexes"])
    assert kinds == [("bloom", "s"), ("minmax", "f"), ("minmax", "i"), ("valuelist", "s")]
    assert doc["freshness"]["up_to_date"] is True, doc["freshness"]
    human = run("describe", table, "--store", store)
    assert human.returncode == 0 and "up to date" in human.stdout, human.stdout
    assert "valuelist" in human.stdout and "bloom" in human.stdout, human.stdout
    hist = run_json("history", table, "--store", store)
    assert [e["operation"] for e in hist["history"]] == ["create", "build"], hist
    assert hist["history"][1]["files_added"] == N_FILES, hist
    last = run_json("history", table, "--store", store, "--limit", "1")
    assert [e["version"] for e in last["history"]] == [1], last


def test_lifecycle_refresh_compact_vacuum_drop(tmp_path):
    table = make_table(tmp_path / "t", 6)
    store = str(tmp_path / "store")
    run_json(*build_args(table, store))
    pq.write_table(file_table(50), os.path.join(table, "part-050.parquet"))
    os.remove(os.path.join(table, "part-000.parquet"))
    doc = run_json("refresh", table, "--store", store, "--workers", "1")
    assert doc["status"] == "SUCCESS" and doc["files_indexed"] == 1, doc
    assert doc["entries_removed"] == 1 and doc["version"] == 2, doc
    compacted = run_json("compact", table, "--store", store, "--target-size", "64MiB")
    assert compacted["compacted"] and compacted["parts_removed"] == 2, compacted
    assert compacted["parts_added"] == 1 and compacted["version"] == 3, compacted
    assert_error(
        run("vacuum", table, "--store", store, "--retain-hours", "0"), 1, "below the floor"
    )
    vac = run_json("vacuum", table, "--store", store, "--retain-hours", "0", "--force")
    assert vac["deleted_parts"], f"vacuum with no retention deletes the old parts: {vac}"
    assert vac["oldest_version"] >= 3, vac
    hist = run_json("history", table, "--store", store)
    ops = [(e["version"], e["operation"]) for e in hist["history"]]
    assert ops == [(3, "compact"), (4, "vacuum")], f"vacuum dropped entries below 3: {ops}"
    refused = run("drop", table, "--store", store)
    assert_error(refused, 2, "--yes")
    dropped = run_json("drop", table, "--store", store, "--yes")
    assert dropped["dropped"] is True, dropped
    assert_error(run("describe", table, "--store", store), 3, "has no index")


# ------------------------------------------------------------------------------ errors


def test_bad_path(tmp_path):
    assert_error(
        run("describe", tmp_path / "nope", "--store", tmp_path / "s"), 3, "not a directory"
    )
    assert_error(run("build", tmp_path / "nope", "--min-max", "i"), 3)
    assert_error(run("inspect", tmp_path / "nope.parquet"), 3, "no such Parquet file")


def test_table_without_index(tmp_path):
    table = make_table(tmp_path / "t", 2)
    assert_error(
        run("prune", table, "--store", tmp_path / "s", "--where", "i = 1"), 3, "has no index"
    )


def test_unknown_column_and_bad_predicate(indexed, tmp_path):
    table, store, _ = indexed
    assert_error(run("prune", table, "--store", store, "--where", "nope > 1"), 6, "nope")
    assert_error(run("prune", table, "--store", store, "--where", "i >>> 1"), 6, "cannot parse")
    assert_error(
        run("build", table, "--store", tmp_path / "s", "--min-max", "missing"), 6, "missing"
    )


@pytest.mark.parametrize(
    "where, why",
    [
        ("s = c1", "quote it: 'c1'"),  # the quotes forgotten
        ("i >> 3", "not a predicate"),
        ("i > 'abc'", "cannot read 'abc' as a number"),
        ("upper(s) = 'C1'", "unknown function"),
    ],
)
def test_a_conjunct_that_cannot_be_used_is_an_error(indexed, where, why):
    table, store, _ = indexed
    for args in ((), ("--json",), ("--files",)):
        proc = run("prune", table, "--store", store, "--where", f"i >= 1000 AND {where}", *args)
        assert_error(proc, 6, "cannot be used", why, "--allow-unused")
        if args == ("--json",):
            error = json.loads(proc.stdout)["error"]
            assert error["code"] == 6 and "conjunct" in error["message"], error
    allowed = run_json(
        "prune", table, "--store", store, "--where", f"i >= 1000 AND {where}", "--allow-unused"
    )
    assert allowed["kept_files"] == 2, "the usable conjunct still prunes (today's behaviour)"
    assert [(c["used"], c["reason"] is None) for c in allowed["conjuncts"]] == [
        (True, True),
        (False, False),
    ], allowed["conjuncts"]
    explained = run_json("prune", table, "--store", store, "--where", where, "--explain")
    assert explained["conjuncts"][0]["used"] is False, "--explain reports, it does not refuse"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_ctrl_c_during_build_prints_one_line_and_exits_130(tmp_path):
    """SIGINT to the command's whole process group, as a terminal's Ctrl-C sends it, while
    worker processes are running: one line on stderr, exit 130, no worker traceback."""
    import signal
    import time

    table = tmp_path / "t"
    os.makedirs(table)
    strings = pa.array(np.arange(20_000) % 5000).cast(pa.string())
    for k in range(64):  # two tasks of 32 files (the fewest a task takes): two workers
        pq.write_table(
            pa.table({"i": pa.array(np.arange(k, k + 20_000), pa.int64()), "s": strings}),
            table / f"f{k:03d}.parquet",
        )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "metaindex",
            "build",
            str(table),
            "--store",
            str(tmp_path / "s"),
            "--min-max",
            "i",
            "--bloom",
            "s",
            "--workers",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        workers = []
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = subprocess.run(
                ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
        assert workers, "the build should start worker processes"
        # The command is held while the Ctrl-C is sent, so that the build cannot end first on
        # a loaded machine (its workers are still importing: they started a moment ago)
        os.kill(proc.pid, signal.SIGSTOP)
        os.killpg(proc.pid, signal.SIGINT)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert [line for line in err.splitlines() if line.strip()] == ["error: interrupted"], err
    for pid in workers:
        assert (
            not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
        ), f"worker {pid} was stopped"


def test_usage_errors(indexed):
    table, store, _ = indexed
    assert_error(run("prune", table, "--store", store), 2, "--where")
    assert_error(run("build", table, "--store", store), 2, "at least one index")
    assert_error(run("build", table, "--min-max", "i", "--encrypt-footer-key", "k"), 2, "--kms")
    assert_error(run("build", table, "--min-max", "i", "--spark", "--workers", "2"), 2)
    assert_error(run("compact", table, "--target-size", "lots"), 2, "size")
    assert_error(run("frobnicate"), 2)


def test_already_indexed_is_a_plain_error(indexed):
    table, store, _ = indexed
    assert_error(run(*build_args(table, store)), 1, "already indexed")


def test_json_error_document_and_debug_traceback(indexed):
    table, store, _ = indexed
    proc = run("prune", table, "--store", store, "--where", "nope > 1", "--json")
    assert proc.returncode == 6, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["error"]["code"] == 6 and doc["error"]["type"] == "SchemaError", doc
    debug = run("prune", table, "--store", store, "--where", "nope > 1", "--debug")
    assert debug.returncode == 6 and "Traceback" in debug.stderr, "--debug prints the traceback"
    assert debug.stderr.rstrip().splitlines()[-1].startswith("error: "), debug.stderr


def test_corrupt_metadata_part(indexed, tmp_path):
    table, store, _ = indexed
    copy = str(tmp_path / "store")
    shutil.copytree(store, copy)
    (part,) = glob.glob(os.path.join(copy, "*", "parts", "*.parquet"))
    data = bytearray(open(part, "rb").read())
    data[len(data) // 2] ^= 0xFF
    with open(part, "wb") as f:
        f.write(data)
    doc = run_json("prune", table, "--store", copy, "--where", "i = 1")
    assert doc["skipped_files"] == 0 and doc["kept_files"] == doc["total_files"] > 0, (
        f"a damaged part: every file is read: {doc}"
    )
    assert "SHA-256 differs" in doc["damage"], doc
    shown = run("prune", table, "--store", copy, "--where", "i = 1")
    assert shown.returncode == 0 and "every file read" in shown.stdout, shown
    assert "Warning" not in shown.stderr, "the damage is rendered once, not warned as well"
    checked = run("check", table, "--store", copy)
    assert checked.returncode == 4 and "SHA-256 differs" in checked.stdout, checked


def test_corrupt_log_entry(indexed, tmp_path):
    table, store, _ = indexed
    copy = str(tmp_path / "store")
    shutil.copytree(store, copy)
    (entry,) = glob.glob(os.path.join(copy, "*", "_log", "*1.json"))
    text = open(entry).read()
    with open(entry, "w") as f:
        f.write(text.replace('"build"', '"bxild"'))
    shown = run("describe", table, "--store", copy)
    assert shown.returncode == 0 and "DAMAGED" in shown.stdout and "checksum" in shown.stdout, shown
    doc = run_json("describe", table, "--store", copy)
    assert doc["version"] is None and "checksum" in " ".join(doc["damage"]["problems"]), doc
    assert_error(run("history", table, "--store", copy), 4, "checksum", "refresh() repairs")
    report = run("check", table, "--store", copy, "--json")
    assert report.returncode == 4, report
    found = json.loads(report.stdout)
    assert not found["healthy"] and found["problems"][0]["kind"] == "log", found
    assert run_json("refresh", table, "--store", copy)["status"] == "SUCCESS"
    assert run_json("check", table, "--store", copy)["healthy"], "refresh repaired the store"


# ------------------------------------------------------------------------------ encryption


def test_encrypted_store_needs_the_right_keys(tmp_path, keys):
    good, wrong = keys
    table = make_table(tmp_path / "t", 6)
    store = str(tmp_path / "store")
    doc = run_json(
        *build_args(
            table, store, "--kms", good, "--encrypt-footer-key", "footer", "--index-key", "pii:s"
        )
    )
    assert doc["status"] == "SUCCESS", doc
    for part in glob.glob(os.path.join(store, "*", "parts", "*.parquet")):
        with open(part, "rb") as f:
            assert f.read(4) == b"PARE", "store parts have encrypted footers"
    desc = run_json("describe", table, "--store", store)
    labels = {(ix["kind"], ix["column"]): ix["key_label"] for ix in desc["indexes"]}
    assert labels[("valuelist", "s")] == "pii" and labels[("minmax", "i")] == "footer", labels
    where = ("--where", "s = 'c1'")
    assert_error(run("prune", table, "--store", store, *where), 5, "--kms")
    assert_error(
        run("prune", table, "--store", store, "--kms", wrong, *where), 5, "does not unwrap"
    )
    assert_error(
        run(
            "prune",
            table,
            "--store",
            store,
            "--kms",
            f"inmemory:{tmp_path / 'absent.json'}",
            *where,
        ),
        5,
    )
    ok = run_json("prune", table, "--store", store, "--kms", good, *where)
    assert ok["kept_files"] == 2, "files 1 and 4 hold s = 'c1'"
    (part,) = glob.glob(os.path.join(store, "*", "parts", "*.parquet"))
    sealed = run_json("inspect", part)
    assert sealed["encryption"]["footer_key"]["label"] == "footer", sealed["encryption"]


# ------------------------------------------------------------------------------ inspect


def test_inspect_plain_pyarrow_file(tmp_path):
    path = str(tmp_path / "plain.parquet")
    pq.write_table(file_table(3), path, compression="snappy")
    doc = run_json("inspect", path)
    assert doc["magic"] == "PAR1" and doc["footer"]["num_rows"] == ROWS, doc["footer"]
    assert doc["footer"]["created_by"].startswith("parquet-cpp-arrow"), doc["footer"]
    assert [kv["key"] for kv in doc["footer"]["key_value_metadata"]] == ["ARROW:schema"]
    assert [e["name"] for e in doc["schema"][1:]] == ["i", "s", "f"], doc["schema"]
    assert doc["encryption"] is None
    (rg,) = doc["row_groups"]
    i = rg["columns"][0]
    assert i["codec"] == "SNAPPY" and i["type"] == "INT64", i
    assert i["statistics"]["trusted"] and (i["statistics"]["min"], i["statistics"]["max"]) == (
        300,
        300 + ROWS - 1,
    ), i["statistics"]
    assert i["bloom_filter"] is None, "pyarrow writes no bloom filter unless asked"
    human = run("inspect", path)
    assert human.returncode == 0, human.stderr
    for text in ("PAR1", "Schema", "Row group 0", "snappy", "319"):
        assert text in human.stdout, f"{text!r} should be in the human output"


def test_inspect_dictionary_bloom_page_index(tmp_path):
    path = str(tmp_path / "rich.parquet")
    t = pa.table(
        {
            "id": pa.array(np.arange(2000), pa.int64()),
            "city": pa.array([["Paris", "Rome", "Oslo"][k % 3] for k in range(2000)]),
        }
    )
    write_table(
        t,
        path,
        compression="zstd",
        write_page_index=True,
        data_page_size=1024,
        use_dictionary=["city"],
        bloom_filter_options={"city": True},
        row_group_size=1000,
    )
    doc = run_json("inspect", path, "--pages")
    assert len(doc["row_groups"]) == 2, "two row groups of 1000 rows"
    ident, city = doc["row_groups"][0]["columns"]
    assert "RLE_DICTIONARY" in city["encodings"] and city["codec"] == "ZSTD", city
    assert "RLE_DICTIONARY" not in ident["encodings"], "id is not dictionary-encoded"
    assert city["bloom_filter"]["num_bytes"] >= 32, city["bloom_filter"]
    assert city["bloom_filter"]["offset"] > 0 and city["bloom_filter"]["length"] > 0
    pi = ident["page_index"]
    assert pi["offset_index"]["pages"] > 1, f"1 KiB pages make several pages: {pi}"
    assert pi["column_index"]["boundary_order"] == "ASCENDING", pi
    pages = pi["pages"]
    assert pages[0]["first_row"] == 0 and pages[0]["min"] == 0, pages[0]
    assert all(a["max"] < b["min"] for a, b in pairwise(pages)), "ascending pages"
    human = run("inspect", path)
    assert "page(s), ascending" in human.stdout and "fpp" in human.stdout, human.stdout


def _pme_file(path, plaintext_footer: bool) -> None:
    factory = CryptoFactory(lambda config: InMemoryKms(MASTER_KEYS))
    props = factory.file_encryption_properties(
        KmsConnectionConfig(),
        EncryptionConfiguration("footer", {"pii": ["s"]}, plaintext_footer=plaintext_footer),
    )
    write_table(
        file_table(4),
        path,
        encryption_properties=props,
        write_page_index=True,
        bloom_filter_options={"s": True},
    )


def test_inspect_pme_plaintext_footer_without_keys(tmp_path):
    path = str(tmp_path / "signed.parquet")
    _pme_file(path, plaintext_footer=True)
    doc = run_json("inspect", path)
    enc = doc["encryption"]
    assert doc["magic"] == "PAR1" and enc["footer_mode"] == "plaintext (signed)", enc
    assert enc["algorithm"]["name"] == "AES_GCM_V1" and enc["footer_key"]["label"] == "footer"
    assert enc["columns"] == {"i": None, "s": "pii", "f": None}, enc["columns"]
    assert enc["signature_verified"] is False, "no key, no verification"
    i, s, _ = doc["row_groups"][0]["columns"]
    assert i["statistics"]["trusted"], "plaintext columns read without keys"
    assert s["statistics"] is None and s["page_index"]["sealed"], s
    assert s["bloom_filter"]["sealed"], s["bloom_filter"]
    human = run("inspect", path)
    assert "plaintext (signed)" in human.stdout and "pii" in human.stdout, human.stdout


def test_inspect_pme_encrypted_footer(tmp_path, keys):
    good, wrong = keys
    path = str(tmp_path / "sealed.parquet")
    _pme_file(path, plaintext_footer=False)
    doc = run_json("inspect", path)
    assert doc["magic"] == "PARE" and "schema" not in doc, "the footer is sealed without keys"
    assert doc["encryption"]["footer_mode"] == "encrypted", doc["encryption"]
    assert doc["encryption"]["footer_key"]["label"] == "footer", doc["encryption"]
    full = run_json("inspect", path, "--kms", good)
    assert full["footer"]["num_rows"] == ROWS, full["footer"]
    assert full["encryption"]["columns"] == {"i": None, "s": "pii", "f": None}
    s = full["row_groups"][0]["columns"][1]
    assert s["statistics"]["min"] == "c1" and s["bloom_filter"]["num_bytes"] >= 32, s
    assert s["page_index"]["offset_index"]["pages"] == 1, s["page_index"]
    assert_error(run("inspect", path, "--kms", wrong), 5, "does not unwrap")


def test_inspect_not_parquet(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"this is not a parquet file at all")
    assert_error(run("inspect", path), 4, "not a Parquet file")


# ------------------------------------------------------------------------------ terminal / spark


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_in_a_terminal(tmp_path):
    table = make_table(tmp_path / "t", 40)
    master, slave = os.openpty()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "metaindex",
            "build",
            table,
            "--store",
            str(tmp_path / "s"),
            "--min-max",
            "i",
            "--workers",
            "1",
        ],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert "indexing" in screen and "40/40 files" in screen and "files/s" in screen, (
        f"a terminal gets a progress bar over files: {screen[-500:]!r}"
    )
    assert "indexed 40 files" in screen, screen[-500:]


@pytest.mark.spark
@pytest.mark.slow
def test_build_with_spark(tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("metaindex.spark.executor")
    table = make_table(tmp_path / "t", 8)
    proc = run(
        "build",
        table,
        "--store",
        tmp_path / "s",
        "--min-max",
        "i",
        "--spark",
        "--json",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["executor"] == "spark" and doc["files_indexed"] == 8, doc
    prune = run_json("prune", table, "--store", tmp_path / "s", "--where", "i >= 700")
    assert prune["kept_files"] == 1, prune


def test_inspect_shows_temporal_bounds_as_values(tmp_path):
    import datetime

    path = tmp_path / "t.parquet"
    pq.write_table(
        pa.table(
            {
                "ts": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5, 6)], pa.timestamp("us")),
                "d": pa.array([datetime.date(2026, 1, 2)], pa.date32()),
                "n": pa.array([7], pa.int64()),
            }
        ),
        path,
    )
    doc = run_json("inspect", path)
    stats = {c["path"]: c["statistics"] for c in doc["row_groups"][0]["columns"]}
    assert stats["ts"]["min"] == "2026-01-02T03:04:05.000006", stats["ts"]
    assert stats["d"]["max"] == "2026-01-02", stats["d"]
    assert stats["n"]["min"] == 7, "plain integers stay numbers"
