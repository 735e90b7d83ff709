"""The table API end to end on generated tables (>= 100 Parquet files written by pyarrow,
partitioned and not): build, prune against DuckDB's answer per file, refresh after add /
delete / in-place rewrite, compact, vacuum, history, drop, describe, encryption, and two
processes refreshing at once."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import textwrap

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metaindex
from metaindex import MetaIndex
from metaindex.api import StoreEncryption
from metaindex.description import Description, History
from metaindex.engine.executors import SerialExecutor
from metaindex.errors import KeyAccessError, MetaIndexError, SchemaError, UnsafeRetentionError

SERIAL = SerialExecutor()
SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("cat", pa.string()),
        ("u", pa.int64()),
        ("d", pa.date32()),
    ]
)
STRINGS = ["", "abc", "abd", "ä", "😀x", "Zeta", None]


def _file_table(k: int, rng, rows: int = 40) -> pa.Table:
    i = rng.integers(k * 100, k * 100 + 100, rows)
    i_mask = rng.random(rows) < 0.1
    if k % 17 == 0:
        i_mask[:] = True  # an all-null file
    f = rng.normal(k, 1.0, rows)
    if k % 5 == 0:
        f[0] = np.nan
    if k % 7 == 0:
        f[1] = np.inf
    if k % 3 == 0:
        f[2] = -0.0
    s = [STRINGS[(k + j) % len(STRINGS)] if j % 4 else f"k{k}" for j in range(rows)]
    cat = [["red", "green"], ["blue"], ["red", None]][k % 3]
    return pa.table(
        {
            "i": pa.array(i, pa.int64(), mask=i_mask),
            "f": pa.array(f, pa.float64()),
            "s": pa.array(s, pa.string()),
            "cat": pa.array([cat[j % len(cat)] for j in range(rows)], pa.string()),
            "u": pa.array(rng.integers(0, 10**9, rows) * 2 + 1, pa.int64()),  # odd values only
            "d": pa.array(
                [
                    datetime.date(2020, 1, 1) + datetime.timedelta(days=k + j % 3)
                    for j in range(rows)
                ],
                pa.date32(),
            ),
        },
        schema=SCHEMA,
    )


def make_table(root, n_files: int, *, partitioned: bool, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    paths = []
    for k in range(n_files):
        directory = root
        if partitioned:
            directory = os.path.join(root, f"region={['eu', 'us', 'apac'][k % 3]}", f"day={k % 10}")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"part-{k:04d}.parquet")
        pq.write_table(_file_table(k, rng), path, row_group_size=16)
        paths.append(path)
    return paths


def _build(mi, executor=SERIAL):
    return (
        mi.index_builder()
        .add_min_max_index("i")
        .add_min_max_index("f")
        .add_min_max_index("s")
        .add_value_list_index("cat", max_values=10)
        .add_bloom_filter_index("u", fpp=0.01)
        .add_min_max_index("d")
        .build(executor=executor)
    )


def matching_files(paths, predicate: str, hive: bool) -> set:
    """The files DuckDB finds at least one matching row in."""
    files = ", ".join(f"'{p}'" for p in paths)
    rows = duckdb.sql(
        f"SELECT DISTINCT filename FROM read_parquet([{files}], filename=true, "
        f"hive_partitioning={'true' if hive else 'false'}) "
        f"WHERE {predicate}"
    ).fetchall()
    return {r[0] for r in rows}


PREDICATES = [
    "i > 5000",
    "i = 1234",
    "i < 0",
    "i IN (5, 777, 11999)",
    "i BETWEEN 1000 AND 1050",
    "NOT (i < 11000)",
    "i <> 42",
    "i IS NULL",
    "i IS NOT NULL",
    "i IN (1, NULL)",
    "i NOT IN (1, 2)",
    "f > 1e308",
    "f < -0.5",
    "f = 0.0",
    "isnan(f)",
    "f >= 110.0",
    "f > 50 AND f < 51",
    "NOT (f <= 30)",
    "s = ''",
    "s = 'abc'",
    "s LIKE 'ab%'",
    "s = '😀x'",
    "s > 'zzz'",
    "s IS NULL",
    "s = 'k17'",
    "s LIKE 'k1%'",
    "cat = 'blue'",
    "cat IN ('green', 'purple')",
    "cat IS NULL",
    "cat = 'none'",
    "u = 7",
    "u = 8",
    "u IN (2, 4, 6)",
    "d = DATE '2020-02-15'",
    "d < DATE '2020-01-03'",
    "d > DATE '2020-04-01' OR i = 50",
    "(i < 300 OR i > 11000) AND s = 'abd'",
    "NOT (cat = 'red' OR i > 100)",
    "i = 150 AND f > 1000",
    "u = 8 OR i = 1234",
]
PARTITION_PREDICATES = [
    "region = 'eu'",
    "day > 7",
    "region = 'us' AND i < 1000",
    "day = 3 OR u = 8",
    "NOT (region = 'apac')",
    "region IN ('eu', 'apac') AND f > 50",
    "day IS NULL",
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    base = tmp_path_factory.mktemp("plain")
    root = os.path.join(base, "events")
    paths = make_table(root, 120, partitioned=False)
    mi = MetaIndex(root)
    result = _build(mi)
    return mi, root, paths, result


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory):
    base = tmp_path_factory.mktemp("partitioned")
    root = os.path.join(base, "events")
    paths = make_table(root, 102, partitioned=True, seed=1)
    mi = MetaIndex(root, store=os.path.join(base, "mystore"))
    result = _build(mi)
    return mi, root, paths, result


def test_build_result_and_default_store(plain):
    mi, root, paths, result = plain
    assert result.status == "SUCCESS" and result.version == 1
    assert result.entries_added == len(paths) == 120 and result.entries_removed == 0
    assert not result.failed
    assert result.footer_minmax > 0, "int/string/date min/max come from pyarrow's footers"
    assert result.scanned_minmax >= 120, "float min/max without NaN counts are scanned"
    assert mi.store_path.startswith(os.path.join(os.path.dirname(root), "_metaindex")), (
        "the default store is _metaindex next to the table, never inside it"
    )
    assert mi.is_indexed()
    assert isinstance(metaindex.MetaIndex, type)


@pytest.mark.parametrize("predicate", PREDICATES)
def test_prune_keeps_every_matching_file(plain, predicate):
    mi, root, paths, _ = plain
    result = mi.prune(predicate)
    truth = matching_files(paths, predicate, hive=False)
    kept = set(result.kept)
    assert truth <= kept, f"{predicate}: skipped files with matching rows: {truth - kept}"
    assert kept | set(result.skipped) == set(paths) and not kept & set(result.skipped)
    s = result.stats
    assert (s.total_files, s.kept_files + s.skipped_files) == (120, 120)
    assert s.unindexed_files == 0
    assert s.skipped_bytes == sum(os.path.getsize(p) for p in result.skipped)


def test_prune_skips_what_it_should(plain):
    mi, _, _, _ = plain
    expectations = {  # predicate: (index that proves it, at least this many skipped)
        "i = 1234": ("minmax(i)", 118),
        "u = 8": ("bloom(u)", 110),
        "cat = 'blue'": ("valuelist(cat)", 80),
        "d < DATE '2020-01-03'": ("minmax(d)", 110),
        "f > 1e308": ("minmax(f)", 80),  # kept: the 38 files holding inf or NaN
    }
    for predicate, (index, least) in expectations.items():
        r = mi.prune(predicate)
        assert r.stats.skipped_files >= least, (
            f"{predicate}: only {r.stats.skipped_files} skipped ({r.stats.skipped_by_index})"
        )
        assert r.stats.skipped_by_index[index] >= least, r.stats.skipped_by_index
    r = mi.prune("i = 1234 AND cat = 'blue'")
    assert r.stats.skipped_files == 120 - len(r.kept) and len(r.kept) <= 1


@pytest.mark.parametrize("predicate", PARTITION_PREDICATES + PREDICATES[:12])
def test_partitioned_prune(partitioned, predicate):
    mi, root, paths, _ = partitioned
    result = mi.prune(predicate)
    truth = matching_files(paths, predicate, hive=True)
    assert truth <= set(result.kept), f"{predicate}: skipped {truth - set(result.kept)}"


def test_partition_columns_prune_without_an_index(partitioned):
    mi, _, paths, _ = partitioned
    r = mi.prune("region = 'eu'")
    assert r.stats.skipped_by_index["partition(region)"] == 68, r.stats.skipped_by_index
    assert all("region=eu" in p for p in r.kept) and len(r.kept) == 34
    info = mi.describe()
    assert info.partition_columns == {"region": "string", "day": "int64"}
    other = MetaIndex(mi._location.root, store=mi.store_path + "-other")
    with pytest.raises(SchemaError, match="partition column"):
        other.index_builder().add_min_max_index("region").build(executor=SERIAL)


def test_prune_given_files(plain):
    mi, root, paths, _ = plain
    given = [(p, os.path.getsize(p), os.stat(p).st_mtime_ns // 1_000_000) for p in paths[:10]]
    given.append((os.path.join(root, "elsewhere.parquet"), 10, 10))  # not indexed
    given.append(
        (
            "file://" + paths[50],
            os.path.getsize(paths[50]),
            os.stat(paths[50]).st_mtime_ns // 1_000_000,
        )
    )
    r = mi.prune("i = 1234", files=given)
    assert r.kept == [given[10][0]], "only the unindexed file may match i = 1234 here"
    assert r.stats.unindexed_files == 1 and r.stats.total_files == 12
    r = mi.prune("i = 1234", files=[(paths[12], 1, 1)])
    assert r.kept == [paths[12]], "a size/mtime that differs from the entry means not indexed"
    with pytest.raises(TypeError):
        mi.prune("i = 1", files=["just a path"])


def test_prune_accepts_expressions_and_case(plain):
    from metaindex.expr import col

    mi, _, _, _ = plain
    a = mi.prune((col("I") == 1234) | (col("cat") == "blue"))
    b = mi.prune("I = 1234 OR CAT = 'blue'")
    assert a.kept == b.kept and a.stats.skipped_files > 0
    with pytest.raises(SchemaError):
        mi.prune("I = 1", case_sensitive=True)
    with pytest.raises(SchemaError):
        mi.prune("nope = 1")
    with pytest.raises(TypeError):
        mi.prune(42)


def test_snapshot_and_pruning_context_are_cached_per_version(plain):
    mi, root, paths, result = plain
    snap = mi.snapshot()
    assert snap.version == result.version and len(snap.files) == len(paths)
    assert mi.snapshot() is snap, "the same snapshot while the log is unchanged"
    ctx = mi.pruning_context()
    assert mi.pruning_context() is ctx and len(ctx.names) == len(paths)
    assert sorted(ctx.names.to_pylist()) == sorted(os.path.relpath(p, root) for p in paths)


def test_describe_and_history(plain):
    mi, _, paths, _ = plain
    info = mi.describe()
    assert info.version == 1 and info.counts.indexed_files == 120
    assert info.counts.indexed_rows == 120 * 40
    assert info.freshness.to_dict() == {
        "new_files": 0,
        "changed_files": 0,
        "deleted_files": 0,
        "up_to_date": True,
        "unreadable_files": 0,
        "unreadable": {},
    }
    assert [x.kind for x in info.indexes] == [
        "minmax",
        "minmax",
        "minmax",
        "valuelist",
        "bloom",
        "minmax",
    ]
    assert 0 < info.store_bytes.live_parts <= info.store_bytes.total
    hist = mi.history()
    assert [h.operation for h in hist] == ["create", "build"]
    assert hist[1].files_added == 120 and "schema" not in hist[1].details


# ------------------------------------------------------------------------------ lifecycle


def test_describe_and_history_keep_their_dict_forms(plain):
    mi, _, _, _ = plain
    info, hist = mi.describe(), mi.history()
    assert isinstance(info, Description) and isinstance(hist, History)
    doc = info.to_dict()
    assert set(doc) == {
        "table",
        "store",
        "version",
        "timestamp",
        "indexes",
        "partition_columns",
        "encryption",
        "counts",
        "freshness",
        "store_bytes",
        "damage",
        "formats",
    }, "the core's JSON form is the dict it returned (plus the formats the index was built with)"
    assert set(doc["indexes"][0]) == {
        "kind",
        "column",
        "params",
        "key_label",
        "point_read_fraction",
        "range_read_fraction",
        "unknown_files",
        "verdict",
        "estimates",
        "type_drift",
    }
    json.dumps(doc, default=str)
    with pytest.warns(DeprecationWarning, match=r"read \.counts"):
        assert info["counts"]["indexed_files"] == 120 == info.counts.indexed_files
    with pytest.warns(DeprecationWarning, match=r"read \.files_added"):
        assert hist[1]["files_added"] == 120
    assert [e.to_dict() for e in hist] == hist.to_dicts() and len(hist[-1:]) == 1
    assert [r[4] for r in info.rows()] == [x.kind for x in info.indexes], (
        "the Spark rendering has one row per index"
    )
    with pytest.raises(TypeError, match=r"to_spark\(spark\)"):
        info.to_spark()
    with pytest.raises(AttributeError):
        info.show  # noqa: B018 - a core result is no DataFrame


@pytest.fixture
def small(tmp_path):
    root = str(tmp_path / "t")
    paths = make_table(root, 30, partitioned=False, seed=5)
    mi = MetaIndex(root)
    mi.index_builder().add_min_max_index("i").add_bloom_filter_index("u").build(executor=SERIAL)
    return mi, root, paths


def _mtime_ms(path):
    return os.stat(path).st_mtime_ns // 1_000_000


def test_rewritten_file_is_never_skipped_before_refresh(small):
    mi, root, paths = small
    victim = paths[7]  # i in [700, 800)
    before = os.stat(victim)
    t = pa.table({"i": pa.array([999_999] * 40, pa.int64())}).append_column(
        "u", pa.array([8] * 40, pa.int64())
    )
    pq.write_table(t, victim)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns + 7_000_000_000))
    r = mi.prune("i = 999999")
    assert victim in r.kept, "a file rewritten in place is not indexed until refreshed"
    assert r.stats.unindexed_files == 1
    assert mi.prune("u = 8").kept == [victim]
    assert mi.describe().freshness.changed_files == 1
    res = mi.refresh(executor=SERIAL)
    assert (res.status, res.entries_added, res.entries_removed) == ("SUCCESS", 1, 1)
    assert mi.prune("i = 999999").kept == [victim]
    assert victim not in mi.prune("i = 750").kept, "the new content has no 750"
    assert mi.history()[-1].files_superseded == 1


def test_same_size_rewrite_detected_by_mtime(small):
    mi, root, paths = small
    victim = paths[3]
    data = open(victim, "rb").read()
    st = os.stat(victim)
    with open(victim, "wb") as f:  # same bytes, same size: only the mtime tells
        f.write(data)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000))
    r = mi.prune("i = -5")
    assert r.kept == [victim], "same size but a new mtime: not indexed, kept"


def test_refresh_add_delete(small):
    mi, root, paths = small
    rng = np.random.default_rng(9)
    new = os.path.join(root, "sub", "new.parquet")
    os.makedirs(os.path.dirname(new))
    pq.write_table(_file_table(500, rng), new)  # i in [50000, 50100)
    os.remove(paths[0])
    r = mi.prune("i >= 50000")
    assert r.kept == [new], "a new file is kept before refresh, indexed ones skipped"
    assert paths[0] not in r.kept + r.skipped, "a deleted file is not a candidate"
    fresh = mi.describe().freshness
    assert (fresh.new_files, fresh.deleted_files, fresh.up_to_date) == (1, 1, False)
    res = mi.refresh(executor=SERIAL)
    assert (res.entries_added, res.entries_removed) == (1, 1)
    r = mi.prune("i >= 50000")
    assert r.kept == [new] and r.stats.unindexed_files == 0
    assert mi.describe().counts.indexed_files == 30
    assert mi.refresh(executor=SERIAL).status == "NO_CHANGE"
    assert mi.history()[-1].files_removed == 1


def test_schema_evolution_new_column(small):
    mi, root, paths = small
    t = _file_table(900, np.random.default_rng(1)).append_column("extra", pa.array(["q"] * 40))
    pq.write_table(t, os.path.join(root, "evolved.parquet"))
    mi.refresh(executor=SERIAL)
    r = mi.prune("extra = 'q' AND i >= 90000")
    assert r.kept == [os.path.join(root, "evolved.parquet")], (
        "a column added by a refresh binds, and files without it read it as NULL"
    )
    t2 = _file_table(901, np.random.default_rng(2)).append_column("more", pa.array([1] * 40))
    pq.write_table(t2, os.path.join(root, "evolved2.parquet"))
    mi.refresh(executor=SERIAL)
    mi.compact()  # an entry that records no schema: the recorded ones still apply
    r = mi.prune("extra = 'q' OR more = 1")
    assert {os.path.basename(p) for p in r.kept} >= {"evolved.parquet", "evolved2.parquet"}


def test_unreadable_file_is_reported_and_kept(tmp_path):
    root = str(tmp_path / "t")
    make_table(root, 5, partitioned=False)
    junk = os.path.join(root, "notes.parquet")
    open(junk, "wb").write(b"PAR1 but not really")
    mi = MetaIndex(root)
    res = mi.index_builder().add_min_max_index("i").build(executor=SERIAL)
    assert list(res.failed) == ["notes.parquet"] and res.entries_added == 5
    assert junk in mi.prune("i = 1").kept, "a file that cannot be indexed is always kept"


def test_compact_vacuum_history_drop(small):
    mi, root, paths = small
    rng = np.random.default_rng(3)
    for n in range(3):
        pq.write_table(_file_table(600 + n, rng), os.path.join(root, f"add{n}.parquet"))
        mi.refresh(executor=SERIAL)
    before = mi.describe()
    assert before.counts.parts >= 4
    answers = {p: mi.prune(p).kept for p in ("i = 60010", "i < 100", "u = 8")}
    version = mi.compact(target_file_size=64 * 1024 * 1024)
    after = mi.describe()
    assert after.counts.parts == 1 and after.version == version
    assert after.counts.indexed_files == before.counts.indexed_files == 33
    assert {p: mi.prune(p).kept for p in answers} == answers, "compaction changes no answer"
    ops = [h.operation for h in mi.history()]
    assert ops == ["create", "build", "refresh", "refresh", "refresh", "compact"]
    with pytest.raises(UnsafeRetentionError, match="force=True"):
        mi.vacuum(retain=0)
    vac = mi.vacuum(retain=0, force=True)
    assert len(vac.deleted_parts) >= 4, "the parts compaction replaced are gone"
    assert {p: mi.prune(p).kept for p in answers} == answers
    assert mi.describe().store_bytes.total < before.store_bytes.total + 10**6
    with pytest.raises(TypeError):
        mi.vacuum(retain="1 day")
    mi.drop()
    assert not mi.is_indexed()
    with pytest.raises(MetaIndexError, match="no index"):
        mi.prune("i = 1")


def test_rebuild_after_drop(small):
    mi, root, paths = small
    mi.prune("i = 1")  # the first index's version 1 is now cached
    mi.drop()
    mi.index_builder().add_value_list_index("cat").build(executor=SERIAL)
    assert [x.kind for x in mi.describe().indexes] == ["valuelist"]
    r = mi.prune("cat = 'blue'")
    assert (
        r.stats.skipped_by_index == {"valuelist(cat)": r.stats.skipped_files}
        and r.stats.skipped_files > 0
    )
    assert mi.prune("i = 1").stats.skipped_files == 0, "no min/max index any more"


def test_build_twice_and_errors(small, tmp_path):
    mi, root, _ = small
    with pytest.raises(MetaIndexError, match="already indexed"):
        mi.index_builder().add_min_max_index("i").build(executor=SERIAL)
    other = MetaIndex(root, store=str(tmp_path / "s2"))
    with pytest.raises(ValueError, match="at least one index"):
        other.index_builder().build()
    with pytest.raises(SchemaError):
        other.index_builder().add_min_max_index("missing").build(executor=SERIAL)
    with pytest.raises(MetaIndexError, match="no index"):
        other.refresh()
    assert not other.is_indexed(), "failed builds leave no index behind"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MetaIndexError, match="no data files"):
        MetaIndex(str(empty)).index_builder().add_min_max_index("i").build()
    with pytest.raises(TypeError):
        MetaIndex(root, store=42)
    with pytest.raises(TypeError):
        MetaIndex(root, encryption="secret")


def test_default_executor_builds_in_worker_processes(tmp_path):
    root = str(tmp_path / "t")
    paths = make_table(root, 100, partitioned=True, seed=2)
    seen = []
    mi = MetaIndex(root)
    res = (
        mi.index_builder()
        .add_min_max_index("i")
        .add_bloom_filter_index("u")
        .build(progress=lambda done, total: seen.append((done, total)))
    )
    assert res.entries_added == 100 and seen and seen[-1][0] == seen[-1][1] >= 2
    truth = matching_files(paths, "i = 4242 OR u = 8", hive=True)
    assert truth <= set(mi.prune("i = 4242 OR u = 8").kept)


# ------------------------------------------------------------------------------ encryption


def kms_factory(config):
    from metaindex.crypto import InMemoryKms

    return InMemoryKms({"footer": b"0123456789abcdef", "idx": b"fedcba9876543210"})


def test_encrypted_store(tmp_path):
    root = str(tmp_path / "t")
    make_table(root, 12, partitioned=False)
    enc = StoreEncryption(kms_factory, "footer", index_keys={"i": "idx"})
    store = str(tmp_path / "store")
    mi = MetaIndex(root, store=store, encryption=enc)
    mi.index_builder().add_min_max_index("i").add_bloom_filter_index("u").build(executor=SERIAL)
    assert len(mi.prune("i = 150").kept) == 1
    labels = {x.column: x.key_label for x in mi.describe().indexes}
    assert labels == {"i": "idx", "u": "footer"}
    parts_dir = os.path.join(mi.store_path, "parts")
    for name in os.listdir(parts_dir):
        with open(os.path.join(parts_dir, name), "rb") as f:
            assert f.read(4) == b"PARE", "parts are written with encrypted footers"
    pq.write_table(_file_table(70, np.random.default_rng(0)), os.path.join(root, "n.parquet"))
    assert mi.refresh(executor=SERIAL).entries_added == 1, "refresh keeps the encryption"
    with pytest.raises(KeyAccessError):
        MetaIndex(root, store=store).prune("i = 150")
    described = MetaIndex(root, store=store).describe()
    assert described.counts.indexed_files == 13, "counted from the log, without keys"
    assert described.freshness.up_to_date is None and "no key" in described.freshness.unknown, (
        "the file list is inside the encrypted parts: freshness unknown without the key"
    )
    keyless = described.indexes
    assert [x.point_read_fraction for x in keyless] == [None, None], (
        "describe works without keys; the estimates need them"
    )
    assert all(x.verdict.startswith("unknown: the index metadata is encrypted") for x in keyless), (
        keyless
    )
    assert mi.describe().indexes[0].point_read_fraction is not None


# ------------------------------------------------------------------------------ concurrency


def test_two_processes_refresh_at_once(small):
    mi, root, paths = small
    rng = np.random.default_rng(4)
    for n in range(40):
        pq.write_table(_file_table(700 + n, rng), os.path.join(root, f"c{n:02d}.parquet"))
    os.remove(paths[1])
    script = textwrap.dedent(f"""
        import sys
        from metaindex import MetaIndex
        from metaindex.engine.executors import SerialExecutor
        from metaindex.errors import CommitConflictError
        try:
            r = MetaIndex({root!r}).refresh(executor=SerialExecutor())
            print(r.status, r.version, r.entries_added)
        except CommitConflictError as exc:
            print("CONFLICT", exc)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    statuses = sorted(out.split()[0] for out, _ in outs)
    assert statuses.count("SUCCESS") >= 1, outs
    assert set(statuses) <= {"SUCCESS", "NO_CHANGE", "CONFLICT"}, outs
    info = mi.describe()
    assert info.freshness.up_to_date, "one of them indexed everything"
    assert info.counts.indexed_files == 30 - 1 + 40
    snap_files = set(mi._table_store.snapshot().files)
    listed = {os.path.relpath(p, root) for p in mi.prune("i = 1").kept + mi.prune("i = 1").skipped}
    assert snap_files == listed, "no lost, no duplicated, no stale entries"
    adds = [h.files_added for h in mi.history() if h.operation == "refresh"]
    assert sum(adds) == 40, f"each new file indexed by exactly one committed refresh: {adds}"


def test_io_paths_are_full(partitioned):
    mi, root, paths, _ = partitioned
    r = mi.prune("day = 3")
    assert r.kept and all(p.startswith(root + os.sep) for p in r.kept), r.kept[:3]
    assert all(os.path.exists(p) for p in r.kept), "reported paths open as they are"
