"""Tables written by delta-spark (:mod:`tests.delta.spark_writer`), read by
:mod:`metaindex.delta` and compared with delta-spark's own answers, recorded by the writer:

- every version's files (``DeltaLog.getSnapshotAt(v).allFiles``): path, size, modification
  time, partition values, deletion vector id and cardinality;
- the operation of every commit (``DESCRIBE HISTORY``);
- the version ``timestampAsOf`` resolves for probe timestamps around every commit, and the
  timestamps it refuses;
- under column mapping, the rows Spark reads against the data files read by the physical names
  and field ids our mapping gives.

Plus: the checkpoint forms each table was meant to exercise are really in its log and are what
our snapshots read, and changes between consecutive versions turn one snapshot into the next.
"""

from __future__ import annotations

import os
from itertools import pairwise
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.delta import DeltaLog, partition_value
from metaindex.errors import DeltaLogError, DeltaVersionError
from metaindex.parquet import ParquetFile

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLES = ["plain", "parts", "cm_name", "cm_id", "dv", "v2cp", "evolve", "ict", "history"]


def _theirs(rows: list, snap) -> dict:
    types = {
        f["name"]: f["type"]
        for f in __import__("json").loads(snap.metadata.schema_string)["fields"]
    }
    out = {}
    for row in rows:
        values = {}
        for column in snap.partition_columns:
            key = snap.column_mapping.physical_name(column)
            values[column] = partition_value(row["partitionValues"].get(key), types[column])
        vector = row.get("deletionVector")
        dv = None
        if vector:
            dv = (
                vector["storageType"]
                + vector["pathOrInlineDv"]
                + (f"@{vector['offset']}" if vector.get("offset") is not None else "")
            )
            dv = (dv, vector["cardinality"])
        out[unquote(row["path"])] = (row["size"], row["modificationTime"], values, dv)
    return out


def _ours(snap) -> dict:
    return {
        f.path: (
            f.size,
            f.modification_time,
            f.partition_values,
            None
            if f.deletion_vector is None
            else (f.deletion_vector.unique_id, f.deletion_vector.cardinality),
        )
        for f in snap.files
    }


@pytest.mark.parametrize("name", TABLES)
def test_every_version_matches_delta_spark(spark_tables, name):
    root, oracle = spark_tables
    table = oracle[name]
    log = DeltaLog(os.path.join(root, name))
    assert log.latest_version() == table["latest"]
    for version, expected in table["versions"].items():
        version = int(version)
        if "error" in expected:
            with pytest.raises(DeltaLogError):
                log.snapshot(version)
            continue
        snap = log.snapshot(version)
        assert _ours(snap) == _theirs(expected["files"], snap), f"{name} v{version} differs"


@pytest.mark.parametrize("name", TABLES)
def test_changes_and_operations_match(spark_tables, name):
    root, oracle = spark_tables
    log = DeltaLog(os.path.join(root, name))
    latest = oracle[name]["latest"]
    snaps = [log.snapshot(v) for v in range(latest + 1)]
    for before, after in pairwise(snaps):
        changes = log.changes(before.version, after.version)
        assert not changes.from_snapshots
        assert changes.metadata == after.metadata and changes.protocol == after.protocol
        assert changes.metadata_changed == (before.metadata != after.metadata)
        if changes.metadata_changed:  # e.g. a partition column renamed: compare identities
            assert [(f.key, f.size) for f in changes.apply(before.files)] == [
                (f.key, f.size) for f in after.files
            ], f"{name} v{after.version}"
        else:
            assert changes.apply(before.files) == list(after.files), f"{name} v{after.version}"
        [commit] = changes.commits
        assert commit.operation == oracle[name]["operations"][str(after.version)]
    wide = log.changes(0)
    assert [(f.key, f.size) for f in wide.apply(snaps[0].files)] == [
        (f.key, f.size) for f in snaps[-1].files
    ]


@pytest.mark.parametrize("name", ["plain", "ict", "history"])
def test_time_travel_by_timestamp_matches_delta_spark(spark_tables, name):
    root, oracle = spark_tables
    log = DeltaLog(os.path.join(root, name))
    probes = oracle[name]["timestamps"]
    assert any(isinstance(v, str) for _, v in probes) and any(isinstance(v, int) for _, v in probes)
    for when, expected in probes:
        if isinstance(expected, int):
            assert log.version_at(when) == expected, f"{name} at {when}"
            assert log.snapshot(timestamp=when).version == expected
        else:
            with pytest.raises(DeltaVersionError):
                log.version_at(when)


def test_checkpoint_forms_are_present_and_read(spark_tables):
    root, oracle = spark_tables
    logs = {name: oracle[name]["log"] for name in TABLES}
    assert any(n.endswith(".checkpoint.parquet") for n in logs["plain"])
    multi = [n for n in logs["parts"] if n.count(".") == 4 and ".checkpoint." in n]
    assert multi, logs["parts"]
    v2 = [n for n in logs["v2cp"] if ".checkpoint." in n and len(n.split(".")) == 4]
    assert {n.rsplit(".", 1)[1] for n in v2} >= {"json", "parquet"}, logs["v2cp"]
    assert "_sidecars" in logs["v2cp"]
    for name in ("plain", "parts", "v2cp"):
        log = DeltaLog(os.path.join(root, name))
        snap = log.snapshot()
        assert any(".checkpoint." in f for f in snap.log_files), (name, snap.log_files)
    v2snap = DeltaLog(os.path.join(root, "v2cp")).snapshot()
    assert any("/_sidecars/" in f for f in v2snap.log_files), v2snap.log_files
    assert "v2Checkpoint" in v2snap.protocol.reader_features
    assert DeltaLog(os.path.join(root, "plain")).last_checkpoint() is not None


def test_each_v2_checkpoint_alone_gives_delta_sparks_files(spark_tables, tmp_path):
    """Every UUID-named checkpoint (JSON and Parquet top level) read on its own: a copy of the
    log with only that checkpoint and the commits after it."""
    import shutil

    root, oracle = spark_tables
    source = os.path.join(root, "v2cp", "_delta_log")
    names = sorted(os.listdir(source))
    checkpoints = [n for n in names if ".checkpoint." in n and len(n.split(".")) == 4]
    for checkpoint in checkpoints:
        version = int(checkpoint.split(".")[0])
        copy = tmp_path / checkpoint
        os.makedirs(copy / "_delta_log")
        shutil.copytree(os.path.join(source, "_sidecars"), copy / "_delta_log" / "_sidecars")
        shutil.copy(os.path.join(source, checkpoint), copy / "_delta_log")
        for n in names:
            if n.endswith(".json") and n.count(".") == 1 and int(n.split(".")[0]) >= version:
                shutil.copy(os.path.join(source, n), copy / "_delta_log")
        snap = DeltaLog(str(copy)).snapshot(version)
        assert snap.log_files[0].endswith(checkpoint)
        expected = oracle["v2cp"]["versions"][str(version)]["files"]
        assert {f.path: f.size for f in snap.files} == {
            unquote(r["path"]): r["size"] for r in expected
        }


def test_sidecar_damage_is_typed(spark_tables, tmp_path):
    import shutil

    from metaindex.errors import DeltaLogDamageError

    root, _ = spark_tables
    copy = str(tmp_path / "v2cp")
    shutil.copytree(os.path.join(root, "v2cp"), copy)
    snap = DeltaLog(copy).snapshot()
    sidecar = next(f for f in snap.log_files if "/_sidecars/" in f)
    with open(os.path.join(copy, sidecar), "ab") as f:
        f.write(b"x")
    with pytest.raises(DeltaLogDamageError, match="sidecar holds"):
        DeltaLog(copy).snapshot()
    os.remove(os.path.join(copy, sidecar))
    with pytest.raises(DeltaLogDamageError, match="missing"):
        DeltaLog(copy).snapshot()


def test_deletion_vectors_point_at_real_files(spark_tables):
    root, _ = spark_tables
    log = DeltaLog(os.path.join(root, "dv"))
    seen = 0
    for version in range(log.latest_version() + 1):
        for f in log.snapshot(version).files:
            if f.deletion_vector is not None and f.deletion_vector.storage_type == "u":
                seen += 1
                assert os.path.exists(os.path.join(root, "dv", f.deletion_vector.file_path()))
    assert seen, "delta-spark wrote no deletion vector"
    assert "deletionVectors" in log.snapshot().protocol.reader_features
    assert all(f.deletion_vector is None for f in log.snapshot().files)  # after PURGE


def _logical(table: pa.Table, mapping, prefix=()) -> dict:
    """Columns of a data file renamed from physical to logical names (nested too); columns
    the schema no longer has (dropped) left out."""
    inverse = {phys: logical for logical, phys in mapping.physical.items()}

    def convert(array, phys_path):
        if pa.types.is_struct(array.type):
            fields, arrays = [], []
            for i in range(array.type.num_fields):
                child = phys_path + (array.type.field(i).name,)
                if child in inverse:
                    fields.append(inverse[child][-1])
                    arrays.append(convert(array.field(i), child))
            return pa.StructArray.from_arrays(arrays, fields, mask=array.is_null())
        return array

    out = {}
    for name in table.column_names:
        if (name,) in inverse:
            out[inverse[(name,)][0]] = convert(table.column(name).combine_chunks(), (name,))
    return out


@pytest.mark.parametrize("name", ["cm_name", "cm_id"])
def test_column_mapping_reads_the_rows_spark_reads(spark_tables, name):
    root, oracle = spark_tables
    snap = DeltaLog(os.path.join(root, name)).snapshot()
    mapping = snap.column_mapping
    assert mapping.mode == name[3:]
    assert snap.schema.names == ["id", "st", "region"]
    rows = []
    for f in snap.files:
        path = os.path.join(root, name, f.path)
        if mapping.mode == "id":  # the files carry the ids our mapping names
            ids = {e.name: e.field_id for e in ParquetFile(path).footer.schema}
            for column in ("id", "st"):
                assert ids[mapping.physical_name(column)] == mapping.ids[(column,)]
        columns = _logical(pq.read_table(path), mapping)
        for i in range(len(columns["id"])):
            row = {k: v[i].as_py() for k, v in columns.items()}
            row.update(f.partition_values)
            rows.append(row)
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(rows, key=key) == sorted(oracle[name]["rows"], key=key)


def test_type_widening_and_timestamp_ntz(spark_tables):
    root, _ = spark_tables
    log = DeltaLog(os.path.join(root, "evolve"))
    snap = log.snapshot()
    assert {"typeWidening", "timestampNtz"} <= set(snap.protocol.reader_features)
    assert snap.schema.field("id").type == pa.int64()
    assert snap.schema.field("ntz").type == pa.timestamp("us")
    assert [(c.path, c.from_type, c.to_type) for c in snap.type_changes] == [
        (("id",), "integer", "long")
    ]
    kinds = {
        ParquetFile(os.path.join(root, "evolve", f.path)).schema_arrow.field("id").type
        for f in snap.files
    }
    assert kinds == {pa.int32(), pa.int64()}  # files from before and after the change
    assert log.snapshot(0).schema.names == ["id", "a"]


def test_a_multi_part_checkpoint_missing_a_part_is_passed_over(spark_tables, tmp_path):
    import shutil

    root, oracle = spark_tables
    copy = str(tmp_path / "parts")
    shutil.copytree(os.path.join(root, "parts"), copy)
    log_dir = os.path.join(copy, "_delta_log")
    newest = max(
        int(n.split(".")[0])
        for n in os.listdir(log_dir)
        if n.count(".") == 4 and ".checkpoint." in n and not n.startswith(".")
    )
    part = sorted(n for n in os.listdir(log_dir) if n.startswith(f"{newest:020d}.checkpoint."))
    os.remove(os.path.join(log_dir, part[1]))
    snap = DeltaLog(copy).snapshot()
    assert not any(f.startswith(f"_delta_log/{newest:020d}.checkpoint.") for f in snap.log_files)
    expected = oracle["parts"]["versions"][str(snap.version)]["files"]
    assert {f.path: f.size for f in snap.files} == {unquote(r["path"]): r["size"] for r in expected}
