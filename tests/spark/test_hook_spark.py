"""Automatic skipping (metaindex.spark.hook) on the shared local[2] session.

Covers enable / disable / is_enabled (per session: ``newSession()`` needs its own enable; other
optimizer rules survive), a Hive-partitioned table, catalog tables (``saveAsTable`` and
``CREATE TABLE ... LOCATION``, partitioned too), refresh after files are added, deleted and
rewritten in place (a rewritten file is never skipped before the refresh), compaction, AQE on
and off, cached DataFrames, concurrent queries, bad index states (corrupt or missing metadata
part, undecryptable store: the query reads every file, with a warning and the reason in the
stats), an encrypted store found through the ``metaindex.encryption.*`` conf, the query stats,
the shim's jar cache, and the planning overhead on a table without an index (printed).

Tables are written with pyarrow and indexed with the core ``metaindex.MetaIndex`` on the serial
executor (tiny files). Expected file counts are the core's ``prune(...).kept`` for the filter
Spark gives the scan.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import threading
import time
import warnings
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.spark import _jvm, config, hook, stats
from metaindex.spark.metrics import files_read
from metaindex.store import normalize_table_uri
from tests.spark.conftest import ENCRYPTION_CONF_KEYS, write_demo_keys

pytestmark = pytest.mark.spark

N_FILES = 200
ROWS = 20
SERIAL = SerialExecutor()


def _file(k: int, rows: int = ROWS, shift: int = 0) -> pa.Table:
    base = k * rows + shift
    return pa.table(
        {
            "id": pa.array(np.arange(base, base + rows), pa.int64()),
            "temp": pa.array([float((base + r) % 97) for r in range(rows)], pa.float64()),
            "city": pa.array([f"city{k % 20}"] * rows),
        }
    )


def _write(root, files=range(N_FILES), partitioned=False) -> None:
    for k in files:
        directory = root / f"p={k % 4}" if partitioned else root
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_file(k), directory / f"part-{k:04d}.parquet")


def _index(root, store=None, encryption=None) -> MetaIndex:
    mi = MetaIndex(str(root), store, encryption=encryption)
    mi.index_builder().add_min_max_index("id").add_value_list_index("city").build(executor=SERIAL)
    return mi


def _rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


def _run(df):
    """(sorted rows, Spark's files read) of one execution of ``df``."""
    return _rows(df), files_read(df)


def _kept(mi, where) -> int:
    return mi.prune(where).stats.kept_files


@pytest.fixture(scope="module")
def events(spark, tmp_path_factory):
    """A registered 200-file table; skipping enabled for the module, off afterwards."""
    root = tmp_path_factory.mktemp("hook") / "events"
    _write(root)
    mi = _index(root)
    hook.register(spark, mi)
    hook.enable(spark)
    yield mi
    hook.disable(spark)
    hook.unregister(spark, mi.table_uri)


def _path(mi) -> str:
    return mi.table_uri[len("file://") :]


# ------------------------------------------------------------------------------ enable


def _rules(session) -> list:
    rules = session._jsparkSession.experimental().extraOptimizations()
    return [rules.apply(k) for k in range(rules.size())]


def _set_rules(session, rules) -> None:
    jvm = session._jvm
    seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(jvm.java.util.ArrayList(rules))
    getattr(session._jsparkSession.experimental(), "extraOptimizations_$eq")(seq.toList())


def _rule_names(session) -> list:
    return [r.getClass().getName() for r in _rules(session)]


def test_enable_disable_is_enabled_keeps_other_rules(spark, events):
    before = _rules(spark)
    other = getattr(
        getattr(spark._jvm.org.apache.spark.sql.catalyst.optimizer, "ConvertToLocalRelation$"),
        "MODULE$",
    )
    _set_rules(spark, [*before, other])
    where = "id < 100"
    try:
        hook.enable(spark)
        hook.enable(spark)
        names = _rule_names(spark)
        assert names.count("io.metaindex.spark.MetaIndexRule") == 1, (
            f"enable twice installs the rule once: {names}"
        )
        assert any("ConvertToLocalRelation" in n for n in names), "another rule survives enable"
        assert hook.is_enabled(spark)
        on = spark.read.parquet(_path(events)).where(where)
        assert _run(on)[1] == _kept(events, where) == 5, "100 ids = 5 files of 20 rows"

        hook.disable(spark)
        assert not hook.is_enabled(spark)
        names = _rule_names(spark)
        assert "io.metaindex.spark.MetaIndexRule" not in names
        assert any("ConvertToLocalRelation" in n for n in names), "another rule survives disable"
        rows_off, read_off = _run(spark.read.parquet(_path(events)).where(where))
        assert read_off == N_FILES, "disabled: every file is read"
        assert [r[0] for r in rows_off] == list(range(100))
    finally:
        _set_rules(spark, before)
        hook.enable(spark)


def test_new_session_needs_enable(spark, events):
    other = spark.newSession()
    other.conf.set("spark.sql.session.timeZone", "UTC")
    assert hook.is_enabled(spark) and not hook.is_enabled(other), "the rule is per session"
    where = "id BETWEEN 1000 AND 1010"
    assert _run(other.read.parquet(_path(events)).where(where))[1] == N_FILES
    hook.enable(other)
    try:
        rows, read = _run(other.read.parquet(_path(events)).where(where))
        assert read == _kept(events, where) == 1
        assert [r[0] for r in rows] == list(range(1000, 1011))
    finally:
        hook.disable(other)
    assert hook.is_enabled(spark), "disabling one session leaves the other enabled"


# ------------------------------------------------------------------------------ tables


@pytest.fixture(scope="module")
def partitioned(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hookp") / "parted"
    _write(root, partitioned=True)
    mi = _index(root)
    hook.register(spark, mi)
    yield mi
    hook.unregister(spark, mi.table_uri)


def test_partitioned_table(spark, events, partitioned):
    path = _path(partitioned)
    for where, listed in (
        ("id < 300", N_FILES),
        ("p = 1 AND id >= 3000", N_FILES // 4),
        ("p IN (0, 3) AND city = 'city4'", N_FILES // 2),
    ):
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(path).where(where))
        hook.enable(spark)
        stats.clear_stats(spark)
        rows, read = _run(spark.read.parquet(path).where(where))
        assert rows == rows_off, f"{where}: same rows with skipping"
        assert read == _kept(partitioned, where), f"{where}: reads what the index keeps"
        last = stats.last_query_stats(spark)
        assert last.files_total == listed, f"{where}: Spark listed only its partitions ({last})"
        assert last.files_total - last.files_skipped == read


def test_partition_filters_are_left_to_spark(spark, events, tmp_path):
    """With partition type inference off, Spark compares directory values as strings
    ('10' < '6'); the index reads them as ints. Only data filters decide skipping, so the
    files Spark lists under q=10 are not dropped by the index's reading of q."""
    root = tmp_path / "strparts"
    for k in range(8):
        directory = root / f"q={5 if k < 4 else 10}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_file(k), directory / f"part-{k}.parquet")
    mi = _index(root)
    hook.register(spark, mi)
    previous = spark.conf.get("spark.sql.sources.partitionColumnTypeInference.enabled")
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    where = "q < '6' AND id >= 60"
    try:
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(str(root)).where(where))
        hook.enable(spark)
        rows, read = _run(spark.read.parquet(str(root)).where(where))
        assert rows == rows_off and len(rows) == 100, "q=10 rows are found"
        assert read == 5, "files 0-2 are skipped by id, files under q=10 are read"
    finally:
        spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", previous)
        hook.unregister(spark, mi.table_uri)


def test_catalog_tables(spark, events, partitioned, tmp_path):
    where = "id BETWEEN 500 AND 530"
    # CREATE TABLE ... LOCATION over the indexed (partitioned) directory
    spark.sql(f"CREATE TABLE hook_parted USING parquet LOCATION '{_path(partitioned)}'")
    try:
        spark.sql("MSCK REPAIR TABLE hook_parted")
        for q in (
            f"SELECT * FROM hook_parted WHERE {where}",
            f"SELECT * FROM hook_parted WHERE p = 2 AND {where}",
        ):
            hook.disable(spark)
            rows_off = _rows(spark.sql(q))
            hook.enable(spark)
            rows, read = _run(spark.sql(q))
            assert rows == rows_off, q
            cond = q.split("WHERE ", 1)[1]
            assert read == _kept(partitioned, cond) >= 1, f"{q}: the catalog location's index"
        # saveAsTable: Spark writes the files; index the table's location
        spark.read.parquet(_path(events)).repartition(8, "city").write.format(
            "parquet"
        ).saveAsTable("hook_saved")
        location = (
            spark.sql("DESCRIBE TABLE EXTENDED hook_saved")
            .where("col_name = 'Location'")
            .collect()[0]["data_type"]
        )
        saved = _index(normalize_table_uri(location))
        written = len(saved.prune("id IS NULL OR id IS NOT NULL").kept)
        q = "SELECT * FROM hook_saved WHERE city = 'city3'"
        hook.disable(spark)
        rows_off, read_off = _run(spark.sql(q))
        hook.enable(spark)
        rows, read = _run(spark.sql(q))
        assert rows == rows_off and read_off == written
        assert read == _kept(saved, "city = 'city3'") < read_off, (
            "found on demand under the default store, no register needed"
        )
    finally:
        spark.sql("DROP TABLE IF EXISTS hook_parted")
        spark.sql("DROP TABLE IF EXISTS hook_saved")


# ------------------------------------------------------------------------------ freshness


def test_refresh_after_add_delete_and_rewrite(spark, events, tmp_path):
    root = tmp_path / "fresh"
    _write(root, range(40))
    mi = _index(root)
    hook.register(spark, mi)
    path = _path(mi)
    where = "id >= 780"  # only the last file, ids 780..799

    def check(expect_read):
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(path).where(where))
        hook.enable(spark)
        rows, read = _run(spark.read.parquet(path).where(where))
        assert rows == rows_off, "skipping never changes the rows"
        assert read == expect_read, f"read {read} files, expected {expect_read}"
        return rows

    try:
        check(1)
        pq.write_table(_file(40), root / "part-0040.parquet")  # new, matching, not indexed
        assert len(check(2)) == 2 * ROWS, "a new file is read before refresh"
        os.remove(root / "part-0003.parquet")
        check(2)
        # rewrite part-0001 in place: now it holds ids >= 780; same name, other size/mtime
        target = root / "part-0001.parquet"
        before = os.stat(target)
        pq.write_table(_file(1, shift=10_000), target)
        os.utime(target, (before.st_atime + 5, before.st_mtime + 5))
        rows = check(3)
        assert any(r[0] >= 10_000 for r in rows), "the rewritten file's rows are found"
        assert _kept(mi, where) == 3, "the core keeps it too (not indexed any more)"

        result = mi.refresh(executor=SERIAL)
        assert (result.entries_added, result.entries_removed) == (2, 2), result
        check(3)  # now indexed: new file, rewritten file, last file
        stale = "id < 20"  # the old content of part-0001, gone
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(path).where(stale))
        hook.enable(spark)
        rows, read = _run(spark.read.parquet(path).where(stale))
        assert rows == rows_off and read == 1, "after refresh the index knows the new content"

        version = mi.history()[-1].version
        assert mi.compact() > version
        rows, read = _run(spark.read.parquet(path).where(where))
        assert read == _kept(mi, where) == 3 and len(rows) == 3 * ROWS, (
            "compaction changes no answer"
        )
        assert stats.last_query_stats(spark).tables[0]["version"] == mi.history()[-1].version
    finally:
        hook.unregister(spark, mi.table_uri)


# ------------------------------------------------------------------------------ plans


@pytest.mark.parametrize("aqe", ["true", "false"])
def test_join_aqe_on_and_off(spark, events, aqe):
    previous = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", aqe)
    spark.read.parquet(_path(events)).createOrReplaceTempView("hook_ev")
    q = (
        "SELECT a.id, b.temp FROM hook_ev a JOIN hook_ev b ON a.city = b.city "
        "WHERE a.id BETWEEN 380 AND 420 AND b.id BETWEEN 3990 AND 3999"
    )
    try:
        hook.disable(spark)
        rows_off = _rows(spark.sql(q))
        hook.enable(spark)
        rows, read = _run(spark.sql(q))
        assert rows == rows_off and len(rows) > 0
        expected = _kept(events, "id >= 380 AND id <= 420 AND city IS NOT NULL") + _kept(
            events, "id >= 3990 AND id <= 3999 AND city IS NOT NULL"
        )
        assert read == expected == 4, f"AQE {aqe}: both scans skip"
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", previous)
        spark.catalog.dropTempView("hook_ev")


def test_cached_dataframes(spark, events):
    path = _path(events)
    hook.disable(spark)
    full = spark.read.parquet(path)
    expected = _rows(full.where("id < 45"))
    full.cache()
    try:
        assert full.count() == N_FILES * ROWS
        hook.enable(spark)
        rows, read = _run(full.where("id < 45"))
        assert rows == expected and read == 0, "a table cached before enable is used as is"
    finally:
        full.unpersist(blocking=True)
    filtered = spark.read.parquet(path).where("id >= 3950")
    filtered.cache()
    try:
        rows = _rows(filtered)  # fills the cache through a skipping scan
        assert [r[0] for r in rows] == list(range(3950, 4000))
        assert _rows(filtered.where("id % 2 = 0")) == [r for r in rows if r[0] % 2 == 0]
        hook.disable(spark)
        assert _rows(filtered) == rows, "the cached data stays right with the hook off"
    finally:
        filtered.unpersist(blocking=True)
        hook.enable(spark)


def test_concurrent_queries(spark, events):
    path = _path(events)
    cases = [f"id BETWEEN {k * 97} AND {k * 97 + 30}" for k in range(8)]
    expected = {w: [(i,) for i in range(int(w.split()[2]), int(w.split()[4]) + 1)] for w in cases}
    errors, results = [], {}

    def worker(chunk):
        try:
            for w in chunk:
                results[w] = _rows(spark.read.parquet(path).where(w).select("id"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(cases[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == expected, "queries from 4 threads at once all get their rows"


# ------------------------------------------------------------------------------ stats


def test_query_stats(spark, events):
    stats.clear_stats(spark)
    assert stats.last_query_stats(spark) is None
    path = _path(events)
    _run(spark.read.parquet(path).where("id < 100"))
    first = stats.last_query_stats(spark)
    assert (first.files_total, first.files_skipped) == (N_FILES, N_FILES - 5), first
    assert first.bytes_skipped < first.bytes_total and first.reason is None
    assert first.skipped_by_index["minmax(id)"] == N_FILES - 5, first.skipped_by_index
    assert first.skip_ratio == pytest.approx((N_FILES - 5) / N_FILES)
    assert first.tables[0]["table"] == events.table_uri and first.tables[0]["version"] == 1
    _run(spark.read.parquet(path).where("city = 'city7'"))
    second = stats.last_query_stats(spark)
    assert second.files_skipped == N_FILES - N_FILES // 20, second
    total = stats.aggregated_stats(spark)
    assert total.files_total == 2 * N_FILES
    assert total.files_skipped == first.files_skipped + second.files_skipped
    stats.clear_stats(spark)
    assert stats.aggregated_stats(spark).files_total == 0


def test_stats_record_and_keys():
    key = "test-session-key"
    stats.clear_stats(key)
    stats.record(
        key,
        {
            "table": "file:///a",
            "files_total": 10,
            "files_skipped": 4,
            "bytes_total": 100,
            "bytes_skipped": 40,
            "query": "q1",
            "skipped_by_index": {"minmax(x)": 4},
        },
    )
    stats.record(key, stats.ScanStats("file:///b", files_total=5, query="q1", reason="no index"))
    q = stats.last_query_stats(key)
    assert (q.files_total, q.files_skipped, q.reason) == (15, 4, "no index")
    assert [t["table"] for t in q.tables] == ["file:///a", "file:///b"]
    stats.record(key, stats.ScanStats("file:///a", files_total=10, files_skipped=10, query="q2"))
    assert stats.last_query_stats(key).files_skipped == 10
    agg = stats.aggregated_stats(key)
    assert (agg.files_total, agg.files_skipped) == (25, 14)
    assert agg.skipped_by_index == {"minmax(x)": 4}
    with pytest.raises(TypeError):
        stats.record(key, ("not", "stats"))
    with pytest.raises(TypeError):
        stats.last_query_stats(42)
    stats.clear_stats(key)


def test_scan_stats_json_and_the_jvm_record():
    """A scan's stats line round-trips; the JVM's record (the SQL function's JSON) becomes the
    same QueryStats, with the JVM's counts and its own reason where Python gave none."""
    from metaindex.engine.prune import ConjunctOutcome, DropReason

    scan = stats.ScanStats(
        "file:///t",
        3,
        10,
        0,
        100,
        0,
        {"minmax(x)": 6},
        None,
        0.25,
        "7",
        (
            ConjunctOutcome("x < 5", True, indexes=("minmax(x)",)),
            ConjunctOutcome("f(y) = 1", False, DropReason.UNKNOWN_FUNCTION, "f"),
        ),
        files_named=6,
    )
    line = scan.to_json()
    assert "\n" not in line and stats.ScanStats.from_json(json.loads(line)) == scan
    record = {
        "session": "s",
        "query": "7",
        "scans": [
            {
                "table": "file:/t",
                "query": "7",
                "files_total": 10,
                "bytes_total": 100,
                "files_skipped": 5,
                "bytes_skipped": 50,
                "reason": None,
                "detail": json.loads(line),
            },
            {
                "table": "file:/u",
                "query": "7",
                "files_total": 4,
                "bytes_total": 8,
                "files_skipped": 0,
                "bytes_skipped": 0,
                "reason": "the pruning process gave no answer",
                "detail": None,
            },
        ],
    }
    q = stats.query_stats_from_json(json.dumps(record))
    assert (q.files_total, q.files_skipped, q.bytes_skipped) == (14, 5, 50), (
        "the JVM's counts: it dropped 5 of the 6 named (one changed since indexing)"
    )
    assert q.skipped_by_index == {"minmax(x)": 6}
    assert [t["table"] for t in q.tables] == ["file:///t", "file:/u"]
    assert q.tables[0]["conjuncts"][1]["reason"] == "unknown function"
    assert q.reason == "the pruning process gave no answer"


# ------------------------------------------------------------------------------ bad states


def _bad_state(spark, root, damage, expect_reason):
    """Query ``root`` (index damaged by ``damage()``, looked up on demand): all rows, every
    file read, a SkippingWarning and the reason in the stats."""
    path = str(root)
    hook.disable(spark)
    rows_off = _rows(spark.read.parquet(path).where("id < 50"))
    hook.enable(spark)
    damage()
    stats.clear_stats(spark)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows, read = _run(spark.read.parquet(path).where("id < 50"))
    assert rows == rows_off, "a bad index never changes the rows"
    assert read == 40, "a bad index means every file is read"
    last = stats.last_query_stats(spark)
    assert last.files_skipped == 0 and last.reason and expect_reason in last.reason, last
    assert any(
        issubclass(w.category, hook.SkippingWarning) and expect_reason in str(w.message)
        for w in caught
    ), [str(w.message) for w in caught]


def _parts(mi) -> list:
    parts = os.path.join(mi.store_path, "parts")
    return sorted(os.path.join(parts, n) for n in os.listdir(parts) if n.endswith(".parquet"))


@pytest.mark.parametrize("kind", ["corrupt", "missing"])
def test_bad_metadata_part_reads_every_file(spark, events, tmp_path, kind):
    root = tmp_path / "bad"
    _write(root, range(40))
    mi = _index(root)  # default store next to the table: found on demand

    def damage():
        for part in _parts(mi):
            if kind == "missing":
                os.remove(part)
            else:
                data = bytearray(open(part, "rb").read())
                data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
                data[-12:-8] = b"\xff\xff\xff\x7f"  # footer length past the file
                open(part, "wb").write(bytes(data))

    _bad_state(spark, root, damage, "index not usable")


def test_log_damaged_below_a_checkpoint_reads_every_file(spark, events, tmp_path):
    """Issue 27: an entry damaged in the middle of the log (the latest version still reads
    from a checkpoint above it) is damage: the scan reads every file and says why."""
    from metaindex.store import CHECKPOINT_INTERVAL, MIN_RETAIN

    root = tmp_path / "log"
    _write(root, range(40))
    mi = _index(root)
    for _ in range(CHECKPOINT_INTERVAL):
        mi.vacuum(MIN_RETAIN)  # a version each, nothing old enough to delete
    entry = os.path.join(mi.store_path, "_log", f"{1:020d}.json")

    def damage():
        data = bytearray(open(entry, "rb").read())
        data[len(data) // 2] ^= 0x04
        open(entry, "wb").write(bytes(data))

    _bad_state(spark, root, damage, "damaged")
    described = MetaIndex(str(root)).describe()
    assert described.version == CHECKPOINT_INTERVAL + 1 and described.damage, described


def test_part_damaged_within_the_session_is_noticed(spark, events, tmp_path):
    """The snapshot is cached per table; the store's head is checked per query, so a part
    damaged in place after the first query makes the next one read every file."""
    root = tmp_path / "later"
    _write(root, range(40))
    mi = _index(root)
    path, where = str(root), "id < 50"
    hook.disable(spark)
    rows_off = _rows(spark.read.parquet(path).where(where))
    hook.enable(spark)
    first_rows, first_read = _run(spark.read.parquet(path).where(where))
    assert first_rows == rows_off and first_read == 3, "50 ids = 3 files: the index is used"
    for part in _parts(mi):
        data = bytearray(open(part, "rb").read())
        data[len(data) // 2 : len(data) // 2 + 32] = os.urandom(32)
        open(part, "wb").write(bytes(data))
        os.utime(part, ns=(os.stat(part).st_atime_ns, os.stat(part).st_mtime_ns + 10**9))
    stats.clear_stats(spark)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hook.SkippingWarning)
        rows, read = _run(spark.read.parquet(path).where(where))
    assert rows == rows_off and read == 40, "a damaged part means every file is read"
    last = stats.last_query_stats(spark)
    assert last.files_skipped == 0 and "IntegrityError" in (last.reason or ""), last


def test_session_time_zone_and_case_reach_the_pruner(spark, events, tmp_path):
    """An America/Los_Angeles session: a point lookup returns the same rows on and off; the
    shim forwards the session's time zone and case sensitivity with each request."""
    root = tmp_path / "tz"
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    root.mkdir()
    for k in range(12):
        ts = [base + datetime.timedelta(hours=k, minutes=m) for m in range(3)]
        pq.write_table(
            pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "Name": [f"n{k}"] * 3}),
            root / f"f{k:02d}.parquet",
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("ts").add_value_list_index("Name").build(executor=SERIAL)
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        for where in (
            "ts = TIMESTAMP '2024-01-01 00:00:00'",
            "ts = '2024-01-01 00:01:00'",
            "ts >= TIMESTAMP '2024-01-01 02:59:00' AND ts < '2024-01-01 03:00:01'",
        ):
            hook.disable(spark)
            rows_off = _rows(spark.read.parquet(str(root)).where(where))
            hook.enable(spark)
            rows_on, read = _run(spark.read.parquet(str(root)).where(where))
            assert rows_on == rows_off and rows_off, f"{where!r}: same rows on and off"
            assert read == 1, f"{where!r}: one file (hour 8, 8 or 11 UTC) is read"
        stats.clear_stats(spark)
        spark.conf.set("spark.sql.caseSensitive", "true")
        rows_on, read = _run(spark.read.parquet(str(root)).where("Name = 'n3'"))
        assert len(rows_on) == 3 and read == 1, "the exact name binds case-sensitively"
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
        spark.conf.unset("spark.sql.caseSensitive")
    request = {
        "scan": 7,
        "session": "case",
        "roots": [mi.table_uri],
        "table": None,
        "filters": [{"op": "eq", "col": ["name"], "value": {"type": "string", "value": "n3"}}],
        "num_files": 12,
        "num_bytes": 1,
        "query": "q",
        "conf": {"spark.sql.caseSensitive": "true"},
    }
    first, reply = hook.handle_prune_request(json.dumps(request)).split("\n", 1)
    assert reply == f"OK\t{mi.table_uri}"
    assert "unknown column" in stats.last_query_stats("case").reason, (
        "a case-sensitive session does not resolve name to Name: nothing skipped"
    )
    assert "unknown column" in json.loads(first)["reason"], (
        "the reply's stats line says why, as the session's stats do"
    )
    request["conf"] = {"spark.sql.caseSensitive": "false"}
    first, *reply = hook.handle_prune_request(json.dumps(request)).splitlines()
    assert len(reply) == 12, "case-insensitively it binds: 11 files named as skippable"
    scan = stats.ScanStats.from_json(json.loads(first))
    assert (scan.table, scan.files_total, scan.files_named, scan.reason) == (
        mi.table_uri,
        12,
        11,
        None,
    ), "the stats line: 11 files named, before Spark drops any"
    assert scan.conjuncts[0].used and scan.conjuncts[0].text == "name = 'n3'", scan.conjuncts
    stats.clear_stats("case")


def test_int96_value_list_and_bloom_skip_as_spark_reads(spark, events, tmp_path):
    """INT96 (Spark's default outputTimestampType) is TIMESTAMP to Spark: value lists and
    blooms skip with TIMESTAMP literals, with the same rows on and off, in UTC and in an
    America/Los_Angeles session."""
    root = tmp_path / "int96"
    root.mkdir()
    for k in range(8):
        ts = [datetime.datetime(2024, 1, 1, k), datetime.datetime(2024, 1, 1, k, 30)]
        pq.write_table(
            pa.table({"ts": pa.array(ts, pa.timestamp("us")), "k": [k, k]}),
            root / f"f{k}.parquet",
            use_deprecated_int96_timestamps=True,
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_value_list_index("ts").add_bloom_filter_index("ts").build(
        executor=SERIAL
    )
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone, where, expect in (
            ("UTC", "ts = TIMESTAMP '2024-01-01 03:30:00'", 1),
            ("UTC", "ts IN (TIMESTAMP '2024-01-01 01:00:00', '2024-01-01 05:30:00')", 2),
            ("America/Los_Angeles", "ts = TIMESTAMP '2023-12-31 22:00:00'", 1),
        ):
            spark.conf.set("spark.sql.session.timeZone", zone)
            hook.disable(spark)
            rows_off = _rows(spark.read.parquet(str(root)).where(where))
            hook.enable(spark)
            rows_on, read = _run(spark.read.parquet(str(root)).where(where))
            assert rows_on == rows_off and len(rows_off) == expect, f"{zone} {where!r}"
            assert read == expect, f"{zone} {where!r}: {expect} file(s) read, not {read}"
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_encrypted_store_end_to_end(spark, events, tmp_path, encryption_conf):
    root = tmp_path / "secret"
    _write(root, range(40))
    store = tmp_path / "secret-store"
    spark.conf.set("metaindex.store", str(store))
    try:
        mi = config.open_index(str(root), config.settings(spark))
        mi.index_builder().add_min_max_index("id").add_value_list_index("city").build(
            executor=SERIAL
        )
        part = _parts(mi)[0]
        with open(part, "rb") as f:
            assert f.read(4) == b"PARE", "metadata parts are encrypted (PME, encrypted footer)"
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(str(root)).where("id < 50"))
        hook.enable(spark)
        stats.clear_stats(spark)
        rows, read = _run(spark.read.parquet(str(root)).where("id < 50"))
        assert rows == rows_off and read == 3 == _kept(mi, "id < 50"), (
            "the hook opens the encrypted store with the session's conf keys"
        )
        assert stats.last_query_stats(spark).reason is None

        # the same store without the KMS conf: undecryptable, every file read
        for k in ENCRYPTION_CONF_KEYS:
            spark.conf.unset(k)
        _bad_state(spark, root, lambda: None, "index not usable")
        # a wrong key under the right label: undecryptable too
        write_demo_keys(encryption_conf)
        spark.conf.set("metaindex.encryption.kms", f"inmemory:{encryption_conf}")
        _bad_state(spark, root, lambda: None, "index not usable")
    finally:
        spark.conf.unset("metaindex.store")


def test_index_without_its_key_is_left_out_and_others_skip(
    spark, events, tmp_path, encryption_conf
):
    """A session whose KMS lacks one index column's key: that index is unknown (its conjunct
    dropped, 'keys unavailable' in the stats), the others still skip; rows as with skipping
    off."""
    root = tmp_path / "partial"
    _write(root, range(40))
    spark.conf.set("metaindex.store", str(tmp_path / "partial-store"))
    spark.conf.set("metaindex.encryption.index.keys", "secret:id;cols:city")
    try:
        mi = config.open_index(str(root), config.settings(spark))
        mi.index_builder().add_min_max_index("id").add_value_list_index("city").build(
            executor=SERIAL
        )
        keys = json.loads(encryption_conf.read_text())
        del keys["secret"]
        partial = tmp_path / "partial-keys.json"
        partial.write_text(json.dumps(keys))
        spark.conf.set("metaindex.encryption.kms", f"inmemory:{partial}")
        where = "id < 50 AND city = 'city1'"
        hook.disable(spark)
        rows_off = _rows(spark.read.parquet(str(root)).where(where))
        hook.enable(spark)
        stats.clear_stats(spark)
        rows, read = _run(spark.read.parquet(str(root)).where(where))
        assert rows == rows_off and len(rows) == 20, "file 1 holds ids 20-39 of city1"
        assert read == 2, "the value list of city still skips: files 1 and 21 are read"
        assert "keys unavailable" in (stats.last_query_stats(spark).reason or "")
    finally:
        spark.conf.unset("metaindex.store")


# ------------------------------------------------------------------------------ shim


def test_jar_path_without_jars_or_with_stale_ones(tmp_path, monkeypatch):
    """An installation without its jars, or a source tree whose jars are older than jvm/: a
    ShimUnavailable naming the fix and the data source (nothing is compiled at run time)."""
    import pyspark

    real = _jvm.jar_path(pyspark.__version__)
    monkeypatch.setattr(_jvm, "JARS_DIR", str(tmp_path))
    with pytest.raises(_jvm.ShimUnavailable, match=r'no jars in .*format\("metaindex"\)'):
        _jvm.jar_path(pyspark.__version__)
    stale = tmp_path / os.path.basename(real)
    with zipfile.ZipFile(real) as src, zipfile.ZipFile(stale, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "META-INF/metaindex-spark.properties":
                data = data.replace(b"sources.sha256=", b"sources.sha256=0")
            dst.writestr(item, data)
    with pytest.raises(_jvm.ShimUnavailable, match=r"built from other sources.*make jars"):
        _jvm.jar_path(pyspark.__version__)


def test_single_file_and_glob_reads_are_read_whole(spark, events):
    """Roots that are files (one file, a glob) are no table root: no index, no warning."""
    one = os.path.join(_path(events), "part-0003.parquet")
    glob = os.path.join(_path(events), "part-000*.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats.clear_stats(spark)
        rows, read = _run(spark.read.parquet(one).where("id < 70"))
        assert [r[0] for r in rows] == list(range(60, 70)) and read == 1
        assert stats.last_query_stats(spark).reason == "no index"
        rows, read = _run(spark.read.parquet(glob).where("id < 30"))
        assert [r[0] for r in rows] == list(range(30)) and read == 10
    assert not [w for w in caught if issubclass(w.category, hook.SkippingWarning)]


def test_register_checks_its_argument(spark):
    with pytest.raises(TypeError):
        hook.register(spark, "/some/path")
    hook.unregister(spark, "/never/registered")  # no error


# ------------------------------------------------------------------------------ overhead


def test_planning_overhead_unindexed(spark, events, tmp_path):
    """Prints the median cost the hook adds to a small query on a table without an index
    (no assertion on speed: the machine is shared)."""
    root = tmp_path / "plain"
    _write(root, range(20))
    path = str(root)
    q = lambda: spark.read.parquet(path).where("id < 5").select("id")  # noqa: E731

    def median_ms(runs=7):
        times = []
        for _ in range(runs):
            df = q()
            t = time.perf_counter()
            df.collect()
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1000

    hook.disable(spark)
    median_ms(2)
    off = median_ms()
    hook.enable(spark)
    on = median_ms()
    stats.clear_stats(spark)
    q().collect()
    assert stats.last_query_stats(spark).reason == "no index"
    request = json.dumps(
        {
            "scan": 1,
            "session": "overhead",
            "roots": [f"file:{path}"],
            "table": None,
            "filters": [],
            "num_files": 20,
            "num_bytes": 1,
            "query": "q",
            "conf": {},
        }
    )
    t = time.perf_counter()
    for _ in range(100):
        assert hook._callback().prune(request).endswith("\nNONE")
    callback = (time.perf_counter() - t) * 10
    print(
        f"\nhook overhead, unindexed 20-file table: query {off:.1f} ms off, {on:.1f} ms on "
        f"(+{on - off:.1f} ms median); Python callback {callback:.2f} ms"
    )
    stats.clear_stats("overhead")
