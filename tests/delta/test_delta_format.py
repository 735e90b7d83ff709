"""The ``delta`` table format: indexing Delta Lake tables from their transaction log.

Tables are written by delta-rs (``deltalake``, in this process) for most cases, and by
delta-spark (the cached tables of :func:`tests.delta.conftest.spark_tables`) for column
mapping, deletion vectors, OPTIMIZE / ZORDER / VACUUM / MERGE and v2 checkpoints. Reads are
counted through a registered data format (every file a build or refresh opens goes through
it), and every answer is checked against the rows pyarrow / DuckDB read from the files.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import uuid
from typing import ClassVar

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from metaindex import MetaIndex
from metaindex.delta import DeltaLog
from metaindex.engine.executors import SerialExecutor
from metaindex.errors import UnsupportedDeltaFeatureError, UnsupportedFeatureError
from metaindex.formats import ParquetFormat, register_data_format
from tests.spark.conftest import spark  # noqa: F401 (the one local session)


class CountingParquet(ParquetFormat):
    """Our Parquet reader, counting the files it opens (the builds here run serially)."""

    name = "counting-parquet"
    opened: ClassVar[list] = []

    def open(self, path, filesystem, *, decryption_properties=None):
        CountingParquet.opened.append(path)
        return super().open(path, filesystem, decryption_properties=decryption_properties)


register_data_format(CountingParquet, replace=True)


def _opened() -> set:
    found = {os.path.basename(p) for p in CountingParquet.opened}
    CountingParquet.opened.clear()
    return found


def _batch(start: int, n: int, cat: str, seed: int = 0) -> pa.Table:
    rnd = random.Random(seed * 7919 + start)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "cat": pa.array([f"{cat}{i % 3}" for i in range(n)], pa.string()),
            "u": pa.array([str(uuid.UUID(int=rnd.getrandbits(128))) for _ in range(n)]),
            "x": pa.array([rnd.uniform(-100, 100) for _ in range(n)], pa.float64()),
            "p": pa.array([f"p{start // 100 % 3}"] * n, pa.string()),
        }
    )


def _table(root, batches: int = 6, partitioned: bool = True) -> str:
    path = str(root / "events")
    for i in range(batches):
        write_deltalake(
            path,
            _batch(i * 100, 100, "abc"[i % 3], i),
            mode="append",
            partition_by=["p"] if partitioned else None,
        )
    return path


def _index(path, store, **kw) -> MetaIndex:
    mi = MetaIndex(path, store=str(store), **kw)
    mi.index_builder().add_min_max_index("id").add_value_list_index("cat").add_bloom_filter_index(
        "u"
    ).add_min_max_index("x").build(executor=SerialExecutor())
    return mi


def _live(path: str) -> dict:
    """{absolute path: partition values} of the latest snapshot, as delta-rs says."""
    actions = DeltaTable(path).get_add_actions(flatten=True)
    actions = pa.table(actions) if not isinstance(actions, pa.Table) else actions
    names = actions.column("path").to_pylist()
    parts = (
        actions.column("partition.p").to_pylist()
        if "partition.p" in actions.column_names
        else [None] * len(names)
    )
    return {os.path.join(path, n): p for n, p in zip(names, parts, strict=True)}


def _matching(files: dict, where: str) -> set:
    """The files holding a row matching ``where`` (DuckDB over each file's rows, with its
    partition value)."""
    out = set()
    for f, p in files.items():
        value = "NULL" if p is None else f"'{p}'"
        n = duckdb.sql(
            f"SELECT count(*) FROM (SELECT *, {value} AS p FROM read_parquet('{f}')) WHERE {where}"
        ).fetchall()[0][0]
        if n:
            out.add(f)
    return out


# ------------------------------------------------------------------------------ build, prune


def test_a_delta_table_is_indexed_from_its_log_never_its_directory(tmp_path):
    path = _table(tmp_path)
    DeltaTable(path).delete("id < 100")  # the files it rewrote stay in the directory
    stray = os.path.join(path, "p=p0", "not-in-the-log.parquet")
    pq.write_table(_batch(0, 5, "zzz").drop(["p"]), stray)
    mi = _index(path, tmp_path / "store")
    live = _live(path)
    d = mi.describe()
    assert d.formats["table_format"] == "delta", "a _delta_log/ makes it a Delta table"
    assert d.counts.indexed_files == len(live), "only the snapshot's files are indexed"
    assert d.delta_version == DeltaLog(path).latest_version() and d.delta_versions_behind == 0
    assert d.partition_columns == {}, "partition values come from the log, not directories"
    result = mi.prune("id >= 0")
    assert set(result.kept) | set(result.skipped) == set(live), (
        "prune decides on the snapshot's files: no stray file, no removed one"
    )
    assert stray not in result.kept
    assert d.to_dict()["delta_version"] == d.delta_version


def test_prune_keeps_exactly_what_might_match_and_paths_open_elsewhere(tmp_path):
    path = _table(tmp_path)
    mi = _index(path, tmp_path / "store")
    live = _live(path)
    kept = mi.prune("id = 250").kept
    assert kept == sorted(_matching(live, "id = 250")), "min/max: one file holds id 250"
    u = pq.read_table(kept[0]).column("u")[7].as_py()
    assert mi.prune(f"u = '{u}'").kept == kept, "the bloom filter finds the uuid's file"
    # the kept paths are what delta-rs, DuckDB and pyarrow read
    assert (
        duckdb.sql(f"SELECT count(*) FROM read_parquet({kept!r}) WHERE id = 250").fetchall()[0][0]
        == 1
    )
    uris = {os.path.normpath(u.removeprefix("file://")) for u in DeltaTable(path).file_uris()}
    assert set(kept) <= uris
    # the README's delta-rs read: delta-rs's dataset (schema, partition values), kept files
    dataset = DeltaTable(path).to_pyarrow_dataset()
    fragments = [f for f in dataset.get_fragments() if os.path.join(path, f.path) in kept]
    rows = pads.FileSystemDataset(
        fragments, dataset.schema, dataset.format, dataset.filesystem
    ).to_table(filter=pads.field("id") == 250)
    assert len(fragments) == 1 and rows.column("id").to_pylist() == [250]
    assert rows.column("p").to_pylist() == ["p2"], "the partition value comes from delta-rs"


def test_partition_columns_bind_and_index_exactly(tmp_path):
    path = _table(tmp_path)
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    mi.index_builder().add_value_list_index("p").add_min_max_index("id").build(
        executor=SerialExecutor()
    )
    live = _live(path)
    for where in ("p = 'p1'", "p IN ('p0', 'p2') AND id > 150", "p != 'p0'", "p IS NULL"):
        assert set(mi.prune(where).kept) == _matching(live, where), where


def test_random_predicates_never_skip_a_matching_file(tmp_path):
    path = _table(tmp_path, batches=9)
    table = DeltaTable(path)
    table.delete("id % 7 = 0 AND id < 300")
    write_deltalake(path, _batch(2000, 50, "c", 99), mode="append", partition_by=["p"])
    mi = _index(path, tmp_path / "store")
    DeltaTable(path).optimize.compact()
    write_deltalake(path, _batch(5000, 40, "b", 98), mode="append", partition_by=["p"])
    mi.refresh(executor=SerialExecutor())
    live = _live(path)
    rows = pa.concat_tables(pq.read_table(f) for f in live)
    ids, uuids = rows.column("id").to_pylist(), rows.column("u").to_pylist()
    rnd = random.Random(31)
    skipped_any = 0
    for _ in range(60):
        a, b = sorted(rnd.sample(range(-10, 5100), 2))
        atoms = [
            f"id = {rnd.choice(ids)}",
            f"id BETWEEN {a} AND {b}",
            f"id > {b}",
            f"id < {a}",
            f"cat IN ('{rnd.choice('abc')}{rnd.randrange(3)}', 'zz')",
            f"cat = '{rnd.choice('abcz')}{rnd.randrange(3)}'",
            f"u = '{rnd.choice(uuids)}'",
            f"u = '{uuid.uuid4()}'",
            f"x > {rnd.uniform(-120, 120):.3f}",
            "x < -99.5",
            f"p = 'p{rnd.randrange(4)}'",
            f"NOT (id >= {a})",
            f"cat != '{rnd.choice('abc')}0'",
        ]
        k = rnd.randrange(1, 4)
        joiner = rnd.choice([" AND ", " OR "])
        where = joiner.join(f"({x})" for x in rnd.sample(atoms, k))
        result = mi.prune(where)
        missing = _matching(live, where) - set(result.kept)
        assert not missing, f"{where}: skipped {sorted(missing)}, which hold matching rows"
        skipped_any += len(result.skipped)
    assert skipped_any, "the indexes should skip some files"


# ------------------------------------------------------------------------------ refresh


def test_refresh_follows_the_log_and_reads_only_the_changed_files(tmp_path):
    path = _table(tmp_path)
    mi = _index(path, tmp_path / "store", format="counting-parquet")
    assert len(_opened()) == len(_live(path))
    before = set(_live(path))
    write_deltalake(path, _batch(900, 10, "a", 5), mode="append", partition_by=["p"])
    added = set(_live(path)) - before
    d = mi.describe()
    assert d.delta_versions_behind == 1 and d.freshness.new_files == 1
    assert set(mi.prune("id = 905").kept) >= added, "a file the index does not know yet is kept"
    assert not _opened(), "describe and prune read no data file"
    result = mi.refresh(executor=SerialExecutor())
    assert result.entries_added == 1 and _opened() == {os.path.basename(f) for f in added}, (
        "refresh opens only the appended file"
    )
    # a rewrite (DELETE): the removed files are forgotten, only the rewritten ones read
    before = set(_live(path))
    DeltaTable(path).delete("id = 150")
    now = set(_live(path))
    result = mi.refresh(executor=SerialExecutor())
    assert _opened() == {os.path.basename(f) for f in now - before}
    assert result.entries_removed == len(before - now)
    # OPTIMIZE: remove + add
    before = now
    DeltaTable(path).optimize.compact()
    now = set(_live(path))
    assert now != before
    mi.refresh(executor=SerialExecutor())
    assert _opened() == {os.path.basename(f) for f in now - before}
    assert mi.describe().counts.indexed_files == len(now)
    # Z-ORDER: every file rewritten
    before = now
    DeltaTable(path).optimize.z_order(["x", "id"])
    now = set(_live(path))
    mi.refresh(executor=SerialExecutor())
    assert _opened() == {os.path.basename(f) for f in now - before} and now - before
    # VACUUM: the live set does not change, nothing is read
    DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    result = mi.refresh(executor=SerialExecutor())
    assert not _opened() and result.entries_added == 0
    d = mi.describe()
    assert d.delta_versions_behind == 0 and d.freshness.up_to_date
    live = _live(path)
    assert not _matching(live, "id = 150")
    assert set(mi.prune("id = 151").kept) >= _matching(live, "id = 151") != set()
    assert len(mi.prune("id = 151").kept) < len(live)


def test_refresh_without_file_changes_records_the_new_version(tmp_path):
    path = _table(tmp_path, batches=2)
    mi = _index(path, tmp_path / "store")
    DeltaTable(path).alter.set_table_properties({"delta.appendOnly": "false"})
    assert mi.describe().delta_versions_behind == 1
    result = mi.refresh(executor=SerialExecutor())
    assert result.entries_added == 0 and mi.describe().delta_versions_behind == 0
    assert mi.refresh(executor=SerialExecutor()).status == "NO_CHANGE"


def test_schema_evolution_keeps_the_index_valid(tmp_path):
    path = _table(tmp_path, batches=3)
    mi = _index(path, tmp_path / "store")
    more = _batch(700, 20, "b", 3).append_column("extra", pa.array(range(20), pa.int32()))
    write_deltalake(path, more, mode="append", partition_by=["p"], schema_mode="merge")
    mi.refresh(executor=SerialExecutor())
    live = _live(path)
    assert set(mi.prune("id = 710").kept) == _matching(live, "id = 710")
    assert set(mi.prune("extra = 3").kept) == set(live), "no index on the new column"
    assert mi.describe().counts.indexed_files == len(live)


def test_a_column_added_later_is_null_in_the_files_before_it(tmp_path):
    """An index on a column a later commit added (``schema_mode="merge"``): the files written
    before hold no such column, Delta reads it as NULL there, and so does the index: they
    are skipped for a value and kept for ``IS NULL``; a refresh indexes the next files."""
    path = _table(tmp_path, batches=3)
    more = _batch(700, 20, "b", 3).append_column("extra", pa.array(range(20), pa.int32()))
    write_deltalake(path, more, mode="append", partition_by=["p"], schema_mode="merge")
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("extra").add_value_list_index("extra").build(
        executor=SerialExecutor()
    )
    even = _batch(800, 10, "c", 4).append_column("extra", pa.array([None, 50] * 5, pa.int32()))
    write_deltalake(path, even, mode="append", partition_by=["p"])
    assert mi.refresh(executor=SerialExecutor()).entries_added == 1
    live = _live(path)
    before = {f for f in live if "extra" not in pq.read_schema(f).names}
    assert len(before) == 3 and len(live) == 5
    for where in ("extra = 3", "extra = 50", "extra IN (1, 50)", "extra > 10", "extra < 0"):
        kept = set(mi.prune(where).kept)
        assert kept == _matching({f: p for f, p in live.items() if f not in before}, where), where
        assert not kept & before, f"{where}: a file without the column holds only NULLs"
    with_nulls = {f for f in set(live) - before if pq.read_table(f).column("extra").null_count}
    assert len(with_nulls) == 1
    assert set(mi.prune("extra IS NULL").kept) == before | with_nulls


def test_prune_at_an_older_delta_version(tmp_path):
    path = _table(tmp_path, batches=4)
    mi = _index(path, tmp_path / "store")
    v = DeltaLog(path).latest_version()
    old = set(_live(path))
    DeltaTable(path).delete("id < 200")
    mi.refresh(executor=SerialExecutor())
    then = mi.prune("id = 120", delta_version=v)
    assert set(then.kept) | set(then.skipped) == old, "the files of version v"
    assert _matching(dict.fromkeys(old), "id = 120") <= set(then.kept), (
        "files removed since the indexed version are not indexed: kept"
    )
    assert not mi.prune("id = 120").kept, "at the latest version no row has id 120"
    with pytest.raises(TypeError):
        mi.prune("id = 1", files=[], delta_version=v)


def test_an_unsupported_reader_feature_is_refused_by_name(tmp_path):
    path = _table(tmp_path, batches=1)
    log = os.path.join(path, "_delta_log")
    latest = DeltaLog(path).latest_version()
    with open(os.path.join(log, f"{latest + 1:020d}.json"), "w") as f:
        f.write(
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 3,
                        "minWriterVersion": 7,
                        "readerFeatures": ["catalogManaged"],
                        "writerFeatures": ["catalogManaged"],
                    }
                }
            )
            + "\n"
        )
    with pytest.raises(UnsupportedDeltaFeatureError) as caught:
        _index(path, tmp_path / "store")
    assert caught.value.features == ("catalogManaged",)


def test_iceberg_stays_refused(tmp_path):
    table = tmp_path / "ice"
    (table / "metadata").mkdir(parents=True)
    (table / "metadata" / "v1.metadata.json").write_text("{}")
    pq.write_table(_batch(0, 3, "a"), str(table / "f.parquet"))
    with pytest.raises(UnsupportedFeatureError):
        MetaIndex(str(table), store=str(tmp_path / "store")).index_builder().add_min_max_index(
            "id"
        ).build(executor=SerialExecutor())


def test_the_cli_indexes_a_delta_table(tmp_path):
    from click.testing import CliRunner

    from metaindex.cli.app import cli

    path = _table(tmp_path, batches=2)
    store = str(tmp_path / "store")
    runner = CliRunner()
    done = runner.invoke(cli, ["build", path, "--min-max", "id", "--store", store])
    assert done.exit_code == 0, done.output
    done = runner.invoke(cli, ["describe", path, "--store", store, "--json"])
    assert done.exit_code == 0, done.output
    described = json.loads(done.output)
    assert described["formats"]["table_format"] == "delta"
    assert described["delta_version"] == DeltaLog(path).latest_version()
    done = runner.invoke(cli, ["describe", path, "--store", store])
    assert done.exit_code == 0 and "indexed, 0 version(s) behind" in done.output, done.output


# ------------------------------------------------------------------------------ delta-spark


def _spark_table(spark_tables, name, tmp_path) -> str:
    out, _ = spark_tables
    path = str(tmp_path / name)
    shutil.copytree(os.path.join(out, name), path)
    return path


def _physical_rows(path: str, column: str) -> dict:
    """{absolute file: values of logical ``column``} read by physical name with pyarrow."""
    snap = DeltaLog(path).snapshot()
    physical = snap.column_mapping.physical_name(column)
    return {
        os.path.join(path, f.path): pq.read_table(os.path.join(path, f.path), columns=[physical])
        .column(0)
        .to_pylist()
        for f in snap.files
    }


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cm_name", "cm_id"])
def test_column_mapping_indexes_by_logical_names(spark_tables, tmp_path, name):
    path = _spark_table(spark_tables, name, tmp_path)
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("id").add_value_list_index("st.aa").add_value_list_index(
        "region"
    ).build(executor=SerialExecutor())
    rows = _physical_rows(path, "id")
    assert mi.describe().counts.indexed_files == len(rows)
    for f, ids in rows.items():
        for v in ids:
            assert f in mi.prune(f"id = {v}").kept, f"{f} holds id {v}"
    assert not mi.prune("id = 12345").kept, "min/max came from the physical column"
    oracle = spark_tables[1][name]["rows"]
    for row in oracle:
        aa = row["st"]["aa"]
        kept = mi.prune(f"st.aa = {aa} AND region = '{row['region']}'").kept
        assert kept, f"the row {row} is in some file"
    assert not mi.prune("st.aa = 999").kept
    assert not mi.prune("region = 'nowhere'").kept, "partition values from the log"


@pytest.mark.spark
@pytest.mark.slow
def test_refresh_refuses_an_indexed_column_renamed_since(spark_tables, tmp_path):
    path = _spark_table(spark_tables, "cm_name", tmp_path)
    moved = _truncate(path, 1)  # before RENAME COLUMN name TO full_name
    named = MetaIndex(path, store=str(tmp_path / "a"))
    named.index_builder().add_value_list_index("name").build(executor=SerialExecutor())
    other = MetaIndex(path, store=str(tmp_path / "b"))
    other.index_builder().add_min_max_index("id").build(executor=SerialExecutor())
    for src, dst in moved:
        shutil.move(src, dst)
    assert named.describe().delta_versions_behind > 0, "describe still answers"
    with pytest.raises(UnsupportedFeatureError, match="name"):
        named.refresh(executor=SerialExecutor())
    assert other.refresh(executor=SerialExecutor()).status == "SUCCESS", (
        "a rename of a column no index uses is followed"
    )
    assert other.describe().delta_versions_behind == 0


@pytest.mark.spark
@pytest.mark.slow
def test_deletion_vectors_index_physical_rows(spark_tables, tmp_path):
    path = _spark_table(spark_tables, "dv", tmp_path)
    # the table at the version before REORG PURGE still has deletion vectors
    log = DeltaLog(path)
    with_dv = max(
        v
        for v in range(log.latest_version() + 1)
        if any(f.deletion_vector is not None for f in log.snapshot(v).files)
    )
    _truncate(path, with_dv)
    assert any(f.deletion_vector for f in DeltaLog(path).snapshot().files)
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("id").add_bloom_filter_index("s").build(
        executor=SerialExecutor()
    )
    for f, ids in _physical_rows(path, "id").items():
        for v in ids[::3]:  # deleted rows included: the index covers every physical row
            assert f in mi.prune(f"id = {v}").kept, f"{f} holds id {v} (maybe deleted)"


def _truncate(path: str, version: int) -> list:
    """Remove the log files after ``version`` (returns them, moved aside, to restore)."""
    log = os.path.join(path, "_delta_log")
    aside = os.path.join(os.path.dirname(path), "aside-" + os.path.basename(path))
    os.makedirs(aside, exist_ok=True)
    moved = []
    for name in sorted(os.listdir(log)):
        head = name.split(".")[0]
        if head.isdigit() and int(head) > version or name == "_last_checkpoint":
            shutil.move(os.path.join(log, name), os.path.join(aside, name))
            moved.append(name)
    return [(os.path.join(aside, n), os.path.join(log, n)) for n in moved]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name, version", [("plain", 8), ("parts", 1), ("dv", 1), ("v2cp", 1)])
def test_refresh_over_spark_rewrites_reads_only_added_files(spark_tables, tmp_path, name, version):
    """Indexed at ``version``, refreshed over what delta-spark did next: VACUUM (plain: the
    files of its earlier versions are vacuumed), DELETE / UPDATE on a partitioned table with
    multi-part checkpoints (parts), DELETE / UPDATE / MERGE with deletion vectors and REORG
    PURGE (dv), appends and a DELETE with v2 checkpoints and sidecars (v2cp)."""
    path = _spark_table(spark_tables, name, tmp_path)
    _, oracle = spark_tables
    moved = _truncate(path, version)
    mi = MetaIndex(path, store=str(tmp_path / "store"), format="counting-parquet")
    mi.index_builder().add_min_max_index("id").build(executor=SerialExecutor())
    _opened()
    first = {f.path for f in DeltaLog(path).snapshot().files}
    for src, dst in moved:
        shutil.move(src, dst)
    snap = DeltaLog(path).snapshot()
    now = {f.path for f in snap.files}
    mi.refresh(executor=SerialExecutor())
    assert _opened() == {os.path.basename(p) for p in now - first}, (
        "only the files added since the indexed version are read"
    )
    d = mi.describe()
    assert (
        d.counts.indexed_files
        == len(now)
        == len(oracle[name]["versions"][str(oracle[name]["latest"])]["files"])
    )
    assert d.delta_version == snap.version and d.delta_versions_behind == 0
    for f, ids in _physical_rows(path, "id").items():
        for v in ids[::5]:
            assert f in mi.prune(f"id = {v}").kept


def _literal(value) -> str:
    import datetime as dt

    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


@pytest.mark.spark
@pytest.mark.slow
def test_partition_values_of_every_type_come_from_the_log(spark_tables, tmp_path):
    """Strings with escapes, dates, ints, timestamps and nulls as delta-spark wrote them."""
    path = _spark_table(spark_tables, "parts", tmp_path)
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    builder = mi.index_builder()
    for column in ("p", "d", "n", "t"):
        builder.add_value_list_index(column)
    builder.build(executor=SerialExecutor())
    snap = DeltaLog(path).snapshot()
    for f in snap.files:
        where = " AND ".join(
            f"{c} IS NULL" if v is None else f"{c} = {_literal(v)}"
            for c, v in f.partition_values.items()
        )
        assert os.path.join(path, f.path) in mi.prune(where).kept, where
    assert not mi.prune("n = 7").kept and not mi.prune("p = 'nowhere'").kept
    assert not mi.prune("t = TIMESTAMP '2024-05-01 10:30:00.12346'").kept


@pytest.mark.spark
@pytest.mark.slow
def test_the_spark_face_indexes_a_delta_path(spark, tmp_path):  # noqa: F811
    from metaindex.spark import MetaIndex as SparkMetaIndex

    path = _table(tmp_path, batches=3)
    mi = SparkMetaIndex(spark, path, store=str(tmp_path / "store"))
    mi.index_builder().add_bloom_filter_index("u").build()
    d = mi.describe()
    assert d.formats["table_format"] == "delta"
    row = d.to_spark().collect()[0]
    assert row["delta_version"] == DeltaLog(path).latest_version()
    assert row["delta_versions_behind"] == 0 and row["table_format"] == "delta"
    live = _live(path)
    u = pq.read_table(sorted(live)[0]).column("u")[3].as_py()
    assert mi.core.prune(f"u = '{u}'").kept == sorted(_matching(live, f"u = '{u}'"))
