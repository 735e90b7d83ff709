"""Stores written by the real xskipper (1.6.0 on Spark 3.5), read and used by metaindex.

One run of the real xskipper (``realxskipper.run``) writes a table and its xskipper store per
scenario: Parquet tables plaintext, partitioned (format version 4's ``virtual_`` columns),
encrypted with an encrypted footer and with a plaintext footer (PME, parquet-java's
properties-driven crypto factory, the same master keys on both sides), with min/max on int,
long, double, string, date and timestamp columns, value lists and bloom filters; and a CSV
(header, a schema), a JSON and an ORC table that xskipper indexed with ``build(reader)`` (that
format's ``DataFrameReader``), with min/max, value lists and bloom filters. For each query it
records xskipper's skipping (its skipped-object count and rows) and the truth (rows with
skipping off, the files holding a matching row). Then metaindex reads each store, prunes with
it through the one pruning path (a CSV/JSON/ORC table's schema given: it has no footer), and
upgrades it to its own format:

* every file holding a matching row is kept (never a wrong skip);
* metaindex skips at least as many files as xskipper wherever xskipper was right; where
  xskipper was wrong (it skipped a file holding a matching row), the test records it
  (:data:`XSKIPPER_WRONG`), and metaindex keeps the file;
* the upgraded store keeps every index (kind, column, key label) and prunes the same files;
  the store of a CSV/JSON/ORC table is upgraded only with Spark reading the files (a core
  upgrade refuses it with a typed error instead of recording the table as Parquet), and
  reads no file whose path and mtime did not change (their access times say so): only a new
  and a changed file are read, by Spark's reader.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pyarrow as pa
import pytest

from metaindex.engine.listing import list_files, locate_table
from metaindex.engine.prune import PruneContext, Pruner, candidates
from metaindex.engine.xskipper import open_snapshot
from metaindex.errors import KeyAccessError, UnsupportedFeatureError
from metaindex.store.xskipper_format import read_store
from tests import toolcache
from tests.spark.conftest import spark  # noqa: F401  (the shared session fixture)
from tests.xskipper import realxskipper

pytestmark = [pytest.mark.spark, pytest.mark.slow]

QUERIES = [
    "i > 250",
    "i = 107",
    "i < 20 OR i > 480",
    "i IN (3, 512)",
    "NOT (i = 107)",
    "i != 107",
    "l = 107007",
    "l IN (7, 300007)",
    "l > 400000",
    "s = 'v2_1'",
    "s = ''",
    "s IN ('v1_0', 'nope')",
    "s > 'v4'",
    "NOT (s = 'v0_0')",
    "s IS NULL",
    "d > 60.0",
    "d < 1.0",
    "d = 0.0",
    "d >= 70",
    "dt >= DATE '2020-02-10'",
    "dt < DATE '2020-01-05'",
    "ts < TIMESTAMP '2021-03-02 00:00:00'",
    "ts > TIMESTAMP '2021-03-07 00:00:00'",
    "i > 100 AND s = 'v3_2'",
    "i IS NULL",
]
INDEXES = [["minmax", c, None] for c in ("i", "l", "d", "s", "dt", "ts")] + [
    ["valuelist", "s", None],
    ["bloom", "i", None],
    ["bloom", "l", None],
    ["bloom", "s", None],
]
ENCRYPTED_INDEXES = [
    ["minmax", "i", "col_master"],
    ["minmax", "d", None],
    ["minmax", "dt", "other_master"],
    ["valuelist", "s", "col_master"],
    ["bloom", "l", "other_master"],
    ["bloom", "s", None],
]


FOOTER_INDEXES = [["minmax", c, None] for c in ("i", "l", "d")]
"""Only min/max on numeric columns: xskipper reads them from Parquet footers."""

XSKIPPER_WRONG = {"NOT (i = 107)", "i != 107", "NOT (s = 'v0_0')"}
"""Queries where xskipper skips files that hold matching rows (its min/max filter turns
``NOT (c = v)`` and ``c != v`` into ``min > v OR max < v``): metaindex keeps those files."""

WRONG_ON_FOOTER_STATS = {"NOT (i = 107)", "i != 107", "d > 60.0", "d >= 70"}
"""The same on a store whose min/max xskipper read from Parquet footers, plus ``>``/``>=`` on
the double column: parquet-java drops the min/max of a column chunk holding NaN, xskipper then
records null bounds and takes the file for all-null, and skips it though ``NaN > x`` holds."""

FEWER_ON_FOOTER_STATS = {"d < 1.0", "d = 0.0"}
"""Where metaindex skips fewer files than xskipper, by design: on a store whose min/max came
from footers, null bounds do not prove a file all-null (above), so that file's entry is unknown
and read; xskipper skipped it and was right only because its values (and NaN) fail these."""


TEXT_SCHEMA = "f INT, i INT, l BIGINT, d DOUBLE, s STRING, dt DATE, ts TIMESTAMP"
FORMATS = {  # scenario -> (Spark format, reader options, DDL schema given to the reader)
    "csv": ("csv", {"header": "true"}, TEXT_SCHEMA),
    "json": ("json", {}, TEXT_SCHEMA),
    "orc": ("orc", {}, None),
}
FORMAT_QUERIES = [
    "i IN (3, 512)",
    "i != 107",
    "s = 'v2_1'",
    "d > 60.0",
    "dt >= DATE '2020-02-10'",
    "ts < TIMESTAMP '2021-03-02 00:00:00' AND l > 7",
]
"""The queries run on the CSV/JSON/ORC tables: each column and index kind once (each query
costs two Spark scans of the table's text files)."""
FORMAT_INDEXES = [["minmax", c, None] for c in ("i", "l", "d", "dt", "ts")] + [
    ["valuelist", "s", None],
    ["bloom", "i", None],
    ["bloom", "s", None],
]
_ARROW = {
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def _data_schema(run) -> pa.Schema | None:
    """The Arrow schema of what Spark read from a CSV/JSON/ORC table (its files have no
    Parquet footer to read it from); None for Parquet."""
    if run["name"] not in FORMATS:
        return None
    return pa.schema([(name, _ARROW[t]) for name, t in run["schema"]])


PLAINTEXT_FOOTER_QUERIES = [
    "i > 250",
    "NOT (i = 107)",
    "i != 107",
    "l = 107007",
    "s = 'v2_1'",
    "s IN ('v1_0', 'nope')",
    "NOT (s = 'v0_0')",
    "d > 60.0",
    "dt >= DATE '2020-02-10'",
    "i > 100 AND s = 'v3_2'",
]
"""The plaintext-footer store (partitioned, the same indexes as ``encrypted``, which runs every
query) runs each of its indexes and xskipper's wrong skips once."""


FOOTER_QUERIES = [q for q in QUERIES if re.match(r"(NOT \()?[ild] ", q) and " AND " not in q]
"""The footer-minmax store (min/max on i, l and d only) runs the queries on those columns: on
the others neither tool has an index and both read every file."""

PARTITIONED_QUERIES = [
    "i > 250",
    "i IN (3, 512)",
    "NOT (i = 107)",
    "i != 107",
    "i IS NULL",
    "l = 107007",
    "l > 400000",
    "s = 'v2_1'",
    "s IN ('v1_0', 'nope')",
    "NOT (s = 'v0_0')",
    "s IS NULL",
    "d > 60.0",
    "dt >= DATE '2020-02-10'",
    "ts > TIMESTAMP '2021-03-07 00:00:00'",
    "i > 100 AND s = 'v3_2'",
]
"""The partitioned store (the ``plain`` store's indexes, which runs every query) runs each
column and index kind, and xskipper's wrong skips, once."""


def _scenarios(root: str) -> list:
    out = []
    for name, indexes, conf, partition in [
        ("plain", INDEXES, {}, None),
        ("partitioned", INDEXES, {}, "f"),
        ("footer-minmax", FOOTER_INDEXES, {}, None),
        (
            "encrypted",
            ENCRYPTED_INDEXES,
            {"io.xskipper.parquet.encryption.footer.key": "footer_master"},
            None,
        ),
        (
            "plaintext-footer",
            ENCRYPTED_INDEXES,
            {
                "io.xskipper.parquet.encryption.footer.key": "footer_master",
                "io.xskipper.parquet.encryption.plaintext.footer": "true",
            },
            "f",
        ),
    ]:
        out.append(
            {
                "name": name,
                "table": os.path.join(root, name, "table"),
                "md_base": os.path.join(root, name, "md"),
                "indexes": indexes,
                "conf": conf,
                "partition_by": partition,
                "queries": {
                    "plaintext-footer": PLAINTEXT_FOOTER_QUERIES,
                    "footer-minmax": FOOTER_QUERIES,
                    "partitioned": PARTITIONED_QUERIES,
                }.get(name),
            }
        )
    for name, (fmt, options, schema) in FORMATS.items():
        out.append(
            {
                "name": name,
                "table": os.path.join(root, name, "table"),
                "md_base": os.path.join(root, name, "md"),
                "indexes": FORMAT_INDEXES,
                "conf": {},
                "partition_by": None,
                "format": fmt,
                "options": options,
                "schema": schema,
                "queries": FORMAT_QUERIES,
            }
        )
    return out


ON_35_QUERIES = ["s = 'v2_1'", "l = 107007", "i > 250"]
"""Run by metaindex on the driver's Spark 3.5 session over a CSV table (its value list, bloom
filter and min/max): 2 scans each."""


def _on_35(root: str) -> dict:
    return {
        "table": os.path.join(root, "on-3.5", "table"),
        "store": os.path.join(root, "on-3.5", "store"),
        "format": "csv",
        "options": {"header": "true"},
        "schema": TEXT_SCHEMA,
        "queries": ON_35_QUERIES,
    }


SCENARIOS = ["plain", "partitioned", "footer-minmax", "encrypted", "plaintext-footer"]
_INDEXES = {
    "plain": INDEXES,
    "partitioned": INDEXES,
    "footer-minmax": FOOTER_INDEXES,
    "encrypted": ENCRYPTED_INDEXES,
    "plaintext-footer": ENCRYPTED_INDEXES,
    **dict.fromkeys(FORMATS, FORMAT_INDEXES),
}
_KINDS = {"minmax": "minmax", "valuelist": "valuelist", "bloom": "sketchbloom"}


@pytest.fixture(scope="module")
def xskipper_runs(tmp_path_factory):
    work = os.environ.get(realxskipper.WORK_ENV) or str(tmp_path_factory.mktemp("real-xskipper"))
    try:
        results = realxskipper.run(work, _scenarios(work), QUERIES, metaindex=_on_35(work))
    except toolcache.ToolUnavailable as exc:
        pytest.skip(f"the real xskipper cannot run here: {exc}")
    return {r["name"]: r for r in results}


def _relative(run, paths) -> set:
    root = run["table"].rstrip("/") + "/"
    out = set()
    for p in paths:
        for scheme in ("file://", "file:"):
            if p.startswith(scheme):
                p = p[len(scheme) :]
                break
        assert p.startswith(root), (p, root)
        out.add(p[len(root) :])
    return out


def _xskipper_skipped(q) -> int:
    return sum(int(s.get("skipped_Objs") or 0) for s in q["stats"])


def _encrypted(name) -> bool:
    return name in ("encrypted", "plaintext-footer")


@pytest.mark.parametrize("name", SCENARIOS + list(FORMATS))
def test_the_store_xskipper_wrote_is_read(xskipper_runs, name):
    run = xskipper_runs[name]
    store = read_store(run["md_path"], key_access=realxskipper.key_access())
    assert store.version == 4 and store.identifier == run["identifier"] == run["table"]
    assert {(d.name, d.cols, d.key_metadata) for d in store.index_defs} == {
        (_KINDS[k], (c,), key) for k, c, key in _INDEXES[name]
    }
    assert store.problems == []
    location = locate_table(run["table"])
    assert store.objects.num_rows == len(list_files(location)) == 6
    suffix = FORMATS[name][0] if name in FORMATS else "parquet"
    assert all(f.path.endswith(f".{suffix}") for f in list_files(location).files)
    if _encrypted(name):
        assert store.encryption.footer_key == "footer_master"
        assert store.encryption.plaintext_footer == (name == "plaintext-footer")
    else:
        assert store.encryption is None
    assert store.partitions == (("f",) if name in ("partitioned", "plaintext-footer") else ())


@pytest.mark.parametrize("name", ["encrypted", "plaintext-footer"])
def test_an_encrypted_store_needs_its_keys(xskipper_runs, name):
    with pytest.raises(KeyAccessError):
        read_store(xskipper_runs[name]["md_path"])


@pytest.mark.parametrize("name", SCENARIOS + list(FORMATS))
def test_pruning_is_sound_and_skips_as_much_as_xskipper(xskipper_runs, name):
    run = xskipper_runs[name]
    location = locate_table(run["table"])
    listing = list_files(location)
    snapshot = open_snapshot(
        location,
        run["md_path"],
        key_access=realxskipper.key_access(),
        schema=_data_schema(run),
    )
    assert snapshot.object_count == 6, "every entry names a file of the table"
    pruner = Pruner(PruneContext(snapshot))
    wrong = set()
    for q in run["queries"]:
        result = pruner.decide(q["query"], candidates(location, listing))
        kept = _relative(run, result.kept)
        matching = _relative(run, q["matching_files"])
        assert matching <= kept, f"{name}: {q['query']} skipped {matching - kept}"
        if q["rows_on"] != q["rows_off"]:
            wrong.add(q["query"])
            continue
        if name == "footer-minmax" and q["query"] in FEWER_ON_FOOTER_STATS:
            assert result.stats.skipped_files == _xskipper_skipped(q) - 1, q["query"]
            continue
        assert result.stats.skipped_files >= _xskipper_skipped(q), (
            f"{name}: {q['query']}: xskipper skipped {_xskipper_skipped(q)}, metaindex "
            f"{result.stats.skipped_files}"
        )
    expected = XSKIPPER_WRONG if name != "footer-minmax" else WRONG_ON_FOOTER_STATS
    if _encrypted(name):  # no min/max on s there: its value list is right
        expected = expected - {"NOT (s = 'v0_0')"}
    expected = expected & {q["query"] for q in run["queries"]}
    assert wrong == expected, f"{name}: xskipper lost rows for {sorted(wrong)}"


@pytest.mark.parametrize("name", SCENARIOS)
def test_upgrade_keeps_indexes_and_prunes_the_same(xskipper_runs, name, tmp_path):
    from metaindex import MetaIndex
    from metaindex.api import StoreEncryption

    run = xskipper_runs[name]
    encryption = (
        StoreEncryption(realxskipper._kms_factory, "footer_master") if _encrypted(name) else None
    )
    mi = MetaIndex(run["table"], store=str(tmp_path / "ours"), encryption=encryption)
    result = mi.upgrade(run["md_path"])
    assert result.status == "SUCCESS" and result.entries_added == 6
    assert result.scanned_minmax == 0 and result.footer_minmax == 0, (
        "no data file is read again: every entry was carried over"
    )
    snap = mi.snapshot()
    assert {(d.name, d.cols, d.key_metadata) for d in snap.index_defs} == {
        (_KINDS[k], (c,), key) for k, c, key in _INDEXES[name]
    }
    if _encrypted(name):
        assert snap.encryption.footer_key == "footer_master"
        assert snap.encryption.plaintext_footer == (name == "plaintext-footer")
    location = locate_table(run["table"])
    pruner = Pruner(
        PruneContext(open_snapshot(location, run["md_path"], key_access=realxskipper.key_access()))
    )
    for q in run["queries"]:
        ours = mi.prune(q["query"])
        kept = _relative(run, ours.kept)
        assert _relative(run, q["matching_files"]) <= kept, q["query"]
        before = pruner.decide(q["query"], candidates(location, list_files(location)))
        assert ours.stats.skipped_files >= before.stats.skipped_files, q["query"]


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_core_upgrade_of_a_text_table_names_its_format_or_refuses(xskipper_runs, name, tmp_path):
    """xskipper's store does not say the table is CSV/JSON/ORC: a core upgrade that names no
    format would record Parquet, so it refuses (files that are not Parquet); one that names
    the format needs Spark's reader (no executor reading with Spark here). Neither writes a
    store."""
    from metaindex import MetaIndex
    from metaindex.errors import DecodeError

    run = xskipper_runs[name]
    fmt, options, _ = FORMATS[name]
    mi = MetaIndex(run["table"], store=str(tmp_path / "ours"))
    with pytest.raises(DecodeError, match="no data file reads as parquet.*name it"):
        mi.upgrade(run["md_path"])
    assert not mi.is_indexed()
    named = MetaIndex(
        run["table"], store=str(tmp_path / "ours"), format=fmt, format_options=options
    )
    with pytest.raises(UnsupportedFeatureError, match="built with Spark"):
        named.upgrade(run["md_path"])
    assert not named.is_indexed()


def _reads_are_recorded(directory: str) -> bool:
    """Whether this filesystem records a read in the access time (``relatime``: a read
    updates an access time older than the modification time)."""
    probe = os.path.join(directory, ".atime-probe")
    with open(probe, "w") as f:
        f.write("x")
    _unread(probe)
    with open(probe) as f:
        f.read()
    recorded = os.stat(probe).st_atime_ns >= os.stat(probe).st_mtime_ns
    os.remove(probe)
    return recorded


def _unread(path: str) -> None:
    """An access time before the modification time (which stays as it was to the ns)."""
    mtime = os.stat(path).st_mtime_ns
    os.utime(path, ns=(mtime - 10**10, mtime))


def _was_read(path: str) -> bool:
    st = os.stat(path)
    return st.st_atime_ns >= st.st_mtime_ns


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_text_table_is_upgraded_without_reading_unchanged_files(
    xskipper_runs,
    name,
    spark,  # noqa: F811
    tmp_path,
):
    """With the format named (the CLI's ``--format``/``--option``, the Spark face's
    ``format=``/``options=``, as the xskipper face's ``refreshIndex(reader)`` passes them),
    the upgrade records it and carries every entry whose file kept its path and mtime
    without opening the file; Spark's reader indexes only the new and the changed file. The
    carried entries decide every query as the xskipper store did; the index prunes soundly,
    at least as much as xskipper where it was right; describe, effectiveness, compaction and
    check take the unknown row counts; a later refresh reads the files as the format."""
    from click.testing import CliRunner

    from metaindex import MetaIndex as CoreMetaIndex
    from metaindex.cli.app import cli
    from metaindex.spark import MetaIndex

    run = xskipper_runs[name]
    fmt, options, schema = FORMATS[name]
    options = {**options, "schema": schema or TEXT_SCHEMA}  # given: no file read to infer it
    location = locate_table(run["table"])
    original = sorted(f.path for f in list_files(location))
    view = Pruner(
        PruneContext(
            open_snapshot(
                location,
                run["md_path"],
                key_access=realxskipper.key_access(),
                schema=_data_schema(run),
            )
        )
    )
    before = {
        q["query"]: set(original)
        - _relative(run, view.decide(q["query"], candidates(location, list_files(location))).kept)
        for q in run["queries"]
    }
    copied, touched = original[0], original[1]  # a new file (a copy of one) and a changed one
    new = f"part-99999-copy.{fmt}"
    root = run["table"]
    touched_mtime = os.stat(os.path.join(root, touched)).st_mtime_ns
    store = str(tmp_path / "ours")
    try:
        shutil.copyfile(os.path.join(root, copied), os.path.join(root, new))
        os.utime(os.path.join(root, touched), ns=(touched_mtime, touched_mtime + 10**10))
        for f in [*original, new]:
            _unread(os.path.join(root, f))
        if name == "csv":  # through the CLI
            args = ["upgrade", root, "--xskipper", run["md_path"], "--store", store, "--json"]
            args += ["--spark", "--format", fmt]
            for k, v in options.items():
                args += ["--option", f"{k}={v}"]
            done = CliRunner().invoke(cli, args)
            assert done.exit_code == 0, done.output
            assert json.loads(done.output)["files_indexed"] == 7
        else:
            result = MetaIndex(spark, root, store=store, format=fmt, options=options).upgrade(
                run["md_path"]
            )
            assert result.status == "SUCCESS" and result.entries_added == 7
        if _reads_are_recorded(root):
            read = {f for f in [*original, new] if _was_read(os.path.join(root, f))}
            assert read == {new, touched}, f"the upgrade read {sorted(read)}"
        core = CoreMetaIndex(root, store=store)
        [built] = [h for h in core.history() if h.version == 1]
        assert built.details["upgraded_from"]["carried"] == 5, built
        formats = core.describe().formats
        assert formats["data_format"] == fmt and "schema" in formats["format_options"], formats

        def check_queries():
            for q in run["queries"]:
                ours = core.prune(q["query"])
                kept = _relative(run, ours.kept)
                matching = _relative(run, q["matching_files"])
                assert matching | ({new} if copied in matching else set()) <= kept, q["query"]
                skipped = set(original) - kept
                carried = set(original) - {touched}
                assert skipped & carried == before[q["query"]] & carried, q["query"]
                if q["rows_on"] == q["rows_off"]:
                    assert ours.stats.skipped_files >= _xskipper_skipped(q), q["query"]

        check_queries()
        if name == "csv":  # the consumers of the unknown row counts
            assert core.describe().counts.indexed_rows is None
            for e in core.effectiveness():  # no NaN from the unknown counts
                assert e.point_read_fraction is None or 0 <= e.point_read_fraction <= 1, e
            core.compact()
            assert len(core.snapshot().part_paths) == 1 and core.check().healthy
            check_queries()
        again = MetaIndex(spark, root, store=store).refresh()
        assert again.status == "NO_CHANGE", again
    finally:
        if os.path.exists(os.path.join(root, new)):
            os.remove(os.path.join(root, new))
        os.utime(os.path.join(root, touched), ns=(touched_mtime, touched_mtime))


def test_metaindex_builds_and_skips_a_csv_table_on_spark_3_5(xskipper_runs):
    """metaindex itself on the Spark 3.5 line (the driver's session): a CSV index built with
    Spark 3.5's reader in its Python workers, and its queries skip through the rule of the 3.5
    jar: rows equal to skipping off, Spark's files-read metric where the index says."""
    run = xskipper_runs["metaindex"]
    assert "error" not in run, run.get("error")
    assert run["pyspark"].startswith("3.5."), run["pyspark"]
    read = {}
    for q in run["queries"]:
        assert q["rows_on"] == q["rows_off"], f"{q['query']}: other rows with skipping"
        assert q["files_total"] == 6, q
        assert q["files_read"] == q["files_total"] - q["files_skipped"], q
        read[q["query"]] = q["files_read"]
    assert read["s = 'v2_1'"] == 1, "the value list keeps only the file of f = 2"
    assert read["l = 107007"] == 1, "the bloom filter keeps only the file of f = 1"
    assert read["i > 250"] == 3, "min/max keeps the files of f = 3, 4, 5 (f = 2's i <= 239)"
