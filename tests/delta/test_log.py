"""The reader on hand-written logs: action reconciliation as PROTOCOL.md specifies it, path and
partition value decoding, the protocol's own examples (checksum, deletion vector paths, column
mapping), log compaction files, and the feature check."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pytest

from metaindex.delta import DeltaLog, is_delta_table, partition_value
from metaindex.delta.actions import DeletionVector
from metaindex.delta.checkpoint import last_checkpoint_checksum
from metaindex.delta.schema import (
    column_mapping,
    is_supported_widening,
    parse_schema_string,
    to_arrow_schema,
)
from metaindex.errors import (
    DeltaLogDamageError,
    DeltaTableNotFoundError,
    UnsupportedDeltaFeatureError,
)
from tests.delta.logs import (
    add,
    basic_table,
    commit_info,
    dv,
    metadata,
    protocol,
    remove,
    schema,
    write_commit,
)


def test_protocol_checksum_example():
    text = (
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", '
        '[1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert last_checkpoint_checksum(text) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_protocol_deletion_vector_examples():
    relative = DeletionVector("u", "ab^-aqEH.-t@S}K{vb[*k^", 4, 40, 6)
    assert relative.file_path() == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert relative.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"
    inline = DeletionVector("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 40, 6)
    assert inline.file_path() is None and inline.unique_id.startswith("iwi5b")


def test_protocol_schema_example_and_nested_column_mapping():
    parsed = parse_schema_string(
        json.dumps(
            {
                "type": "struct",
                "fields": [
                    {
                        "name": "a",
                        "type": "integer",
                        "nullable": False,
                        "metadata": {
                            "delta.columnMapping.id": 1,
                            "delta.columnMapping.physicalName": "col-a",
                        },
                    },
                    {
                        "name": "e",
                        "type": {
                            "type": "array",
                            "containsNull": True,
                            "elementType": {
                                "type": "struct",
                                "fields": [
                                    {
                                        "name": "d",
                                        "type": "integer",
                                        "nullable": False,
                                        "metadata": {
                                            "delta.columnMapping.id": 5,
                                            "delta.columnMapping.physicalName": "col-d",
                                        },
                                    }
                                ],
                            },
                        },
                        "nullable": True,
                        "metadata": {
                            "delta.columnMapping.id": 4,
                            "delta.columnMapping.physicalName": "col-e",
                        },
                    },
                    {
                        "name": "f",
                        "type": {
                            "type": "map",
                            "keyType": "string",
                            "valueType": "decimal(10,2)",
                            "valueContainsNull": True,
                        },
                        "nullable": True,
                        "metadata": {
                            "delta.columnMapping.id": 6,
                            "delta.columnMapping.physicalName": "col-f",
                        },
                    },
                ],
            }
        )
    )
    arrow = to_arrow_schema(parsed)
    assert arrow.field("a").type == pa.int32() and not arrow.field("a").nullable
    assert arrow.field("a").metadata[b"PARQUET:field_id"] == b"1"
    assert arrow.field("e").type == pa.list_(
        pa.field("element", pa.struct([pa.field("d", pa.int32(), False)]), True)
    )
    assert arrow.field("f").type == pa.map_(pa.string(), pa.decimal128(10, 2))
    mapping = column_mapping(parsed, "name")
    assert mapping.physical[("e", "element", "d")] == ("col-e", "element", "col-d")
    assert mapping.ids[("e", "element", "d")] == 5
    assert mapping.physical_name("f") == "col-f"
    assert column_mapping(parsed, "none").physical[("e", "element", "d")] == ("e", "element", "d")


@pytest.mark.parametrize(
    "raw,kind,value",
    [
        (None, "integer", None),
        ("", "string", None),
        ("7", "byte", 7),
        ("-32768", "short", -32768),
        ("9223372036854775807", "long", 2**63 - 1),
        ("1.5", "double", 1.5),
        ("true", "boolean", True),
        ("false", "boolean", False),
        ("a b/c", "string", "a b/c"),
        ("2024-02-29", "date", dt.date(2024, 2, 29)),
        ("2024-05-01 10:30:00.123456", "timestamp", dt.datetime(2024, 5, 1, 10, 30, 0, 123456)),
        (
            "2024-05-01T10:30:00.000001Z",
            "timestamp",
            dt.datetime(2024, 5, 1, 10, 30, 0, 1, tzinfo=dt.timezone.utc),
        ),
        ("2024-05-01 10:30:00", "timestamp_ntz", dt.datetime(2024, 5, 1, 10, 30)),
        ("12.30", "decimal(5,2)", Decimal("12.30")),
        ("\u0001\u0002", "binary", b"\x01\x02"),
    ],
)
def test_partition_values_are_typed(raw, kind, value):
    assert partition_value(raw, kind) == value


@pytest.mark.parametrize(
    "raw,kind",
    [
        ("128", "byte"),
        ("x", "integer"),
        ("1.5", "long"),
        ("yes", "boolean"),
        ("2024-13-01", "date"),
        ("NaN", "decimal(5,2)"),
        ("1", "array"),
    ],
)
def test_bad_partition_values_are_refused(raw, kind):
    from metaindex.delta.schema import SchemaFormatError

    with pytest.raises(SchemaFormatError):
        partition_value(raw, kind)


@pytest.mark.parametrize(
    "old,new,ok",
    [
        ("byte", "long", True),
        ("integer", "short", False),
        ("float", "double", True),
        ("integer", "double", True),
        ("long", "double", False),
        ("date", "timestamp_ntz", True),
        ("decimal(6,2)", "decimal(10,4)", True),
        ("decimal(6,2)", "decimal(7,4)", False),
        ("integer", "decimal(10,0)", True),
        ("long", "decimal(19,0)", False),
        ("string", "binary", False),
    ],
)
def test_type_widening_rule(old, new, ok):
    assert is_supported_widening(old, new) is ok


def test_reconciliation_latest_action_wins_by_path_and_deletion_vector(tmp_path):
    t = str(tmp_path)
    pv = {"p": "1"}
    write_commit(
        t,
        0,
        protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
        metadata(schema(("id", "long"), ("p", "string")), ["p"]),
        add("p=1/a", partition_values=pv),
        add("p=1/b", partition_values=pv),
        {"txn": {"appId": "app", "version": 3}},
        {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}},
    )
    # a DELETE with deletion vectors: same file, new logical file (path, dv)
    write_commit(
        t,
        1,
        commit_info("DELETE"),
        remove("p=1/a", partition_values=pv),
        add("p=1/a", partition_values=pv, dv=dv(), data_change=True),
        {"txn": {"appId": "app", "version": 4}},
    )
    # the vector replaced; b re-committed unchanged (metadata update); d1 removed
    write_commit(
        t,
        2,
        commit_info("DELETE"),
        remove("p=1/a", partition_values=pv, dv=dv()),
        add("p=1/a", partition_values=pv, dv=dv("ab^-aqEH.-t@S}K{vb[*k^", 50, 4)),
        add("p=1/b", partition_values=pv, data_change=False),
        {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": True}},
        {"domainMetadata": {"domain": "d2", "configuration": "x", "removed": False}},
    )
    write_commit(
        t,
        3,
        commit_info("OPTIMIZE"),
        remove("p=1/b", partition_values=pv),
        remove("p=1/a", partition_values=pv, dv=dv("ab^-aqEH.-t@S}K{vb[*k^", 50, 4)),
        add("p=1/c", 150, partition_values=pv, data_change=False),
    )
    log = DeltaLog(t)
    s1 = log.snapshot(1)
    assert [
        (f.path, f.deletion_vector.offset if f.deletion_vector else None) for f in s1.files
    ] == [("p=1/a", 4), ("p=1/b", None)]
    assert s1.txns == {"app": 4} and s1.domains == {"d1": "{}"}
    assert {f.key for f in s1.tombstones} == {("p=1/a", None)}
    s2 = log.snapshot(2)
    assert [f.deletion_vector.cardinality for f in s2.files if f.path == "p=1/a"] == [4]
    assert s2.domains == {"d2": "x"}
    s3 = log.snapshot(3)
    assert [(f.path, f.size, f.data_change) for f in s3.files] == [("p=1/c", 150, False)]
    changes = log.changes(1, 3)
    assert [f.path for f in changes.added] == ["p=1/c"]
    assert changes.apply(s1.files) == list(s3.files)
    assert [c.operation for c in changes.commits] == ["DELETE", "OPTIMIZE"]
    same = log.changes(1, 2)  # b committed again: reported added, still a correct delta
    assert changes_keys(same.added) == {("p=1/a", "uab^-aqEH.-t@S}K{vb[*k^@50"), ("p=1/b", None)}
    assert same.apply(s1.files) == list(s2.files)


def changes_keys(files) -> set:
    return {f.key for f in files}


def test_paths_are_decoded_and_absolute_paths_inside_the_root_made_relative(tmp_path):
    t = str(tmp_path / "tbl")
    write_commit(
        t,
        0,
        protocol(),
        metadata(schema(("id", "long"))),
        add("p%3D1/a%20b%2520c.parquet"),
        add(f"file:{t}/abs.parquet"),
        add(f"file://{t}/sub/x%25.parquet"),
        add("file:/elsewhere/other.parquet"),
        add("s3a://bucket/t/part-1.parquet"),
        add(f"file://{t}/q%2520r.parquet"),
        add(f"{t}/k=%C3%A9.parquet"),
        add("s3://bucket/t/a%2520b.parquet"),
    )
    paths = [f.path for f in DeltaLog(t).snapshot().files]
    assert paths == [
        "abs.parquet",
        "file:///elsewhere/other.parquet",
        "k=é.parquet",
        "p=1/a b%20c.parquet",
        "q%20r.parquet",
        "s3://bucket/t/a%20b.parquet",
        "s3://bucket/t/part-1.parquet",
        "sub/x%.parquet",
    ]


def test_column_mapping_partition_values_are_keyed_by_physical_name(tmp_path):
    t = str(tmp_path)
    meta = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-x"}
    meta2 = {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-y"}
    write_commit(
        t,
        0,
        protocol(2, 5),
        metadata(
            schema(("Region", "string"), ("n", "integer"), Region=meta, n=meta2),
            ["Region"],
            {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
        ),
        add("a", partition_values={"col-x": "eu"}),
    )
    snap = DeltaLog(t).snapshot()
    assert snap.files[0].partition_values == {"Region": "eu"}
    assert snap.column_mapping.mode == "name"
    assert snap.physical_schema().names == ["col-y"]
    # the same table on reader version 1: the mode must not take effect
    write_commit(t, 1, protocol(1, 2))
    assert DeltaLog(t).snapshot().column_mapping.mode == "none"


def test_log_compaction_file_replaces_its_commits(tmp_path):
    t = str(tmp_path)
    basic_table(t, 6)
    plain = DeltaLog(t).snapshot()
    compacted = os.path.join(t, "_delta_log", f"{1:020d}.{4:020d}.compacted.json")
    with open(compacted, "w") as f:  # the reconciled actions of commits 1..4
        for action in (
            add("p=1/f4", 104, {"p": "1"}),
            remove("p=1/f1", 101, {"p": "1"}),
            remove("p=1/f2", 102, {"p": "1"}),
            remove("p=1/f3", 103, {"p": "1"}),
        ):
            f.write(json.dumps(action) + "\n")
    snap = DeltaLog(t).snapshot()
    assert "_delta_log/00000000000000000001.00000000000000000004.compacted.json" in snap.log_files
    assert "_delta_log/00000000000000000002.json" not in snap.log_files
    assert snap.files == plain.files
    assert DeltaLog(t).snapshot(3).files == DeltaLog(t).snapshot(3).files  # not used past 3
    assert all("compacted" not in f for f in DeltaLog(t).snapshot(3).log_files)


def test_reader_features_outside_the_list_are_refused_by_name(tmp_path):
    t = str(tmp_path)
    write_commit(
        t,
        0,
        protocol(
            3, 7, ["deletionVectors", "catalogManaged"], ["deletionVectors", "catalogManaged"]
        ),
        metadata(schema(("id", "long"))),
        add("a"),
    )
    with pytest.raises(UnsupportedDeltaFeatureError, match="catalogManaged") as info:
        DeltaLog(t).snapshot()
    assert info.value.features == ("catalogManaged",)
    write_commit(t, 1, protocol(4, 7, [], []))
    with pytest.raises(UnsupportedDeltaFeatureError, match="reader version 4"):
        DeltaLog(t).snapshot()
    with pytest.raises(UnsupportedDeltaFeatureError, match="catalogManaged"):
        DeltaLog(t).snapshot(0)
    with pytest.raises(UnsupportedDeltaFeatureError):
        DeltaLog(t).changes(0)


def test_type_changes_delta_does_not_allow_are_refused(tmp_path):
    t = str(tmp_path)
    widened = {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    write_commit(
        t,
        0,
        protocol(3, 7, ["typeWidening"], ["typeWidening"]),
        metadata(schema(("id", "long"), id=widened)),
        add("a"),
    )
    snap = DeltaLog(t).snapshot()
    assert [(c.path, c.from_type, c.to_type) for c in snap.type_changes] == [
        (("id",), "integer", "long")
    ]
    narrowed = {"delta.typeChanges": [{"fromType": "long", "toType": "integer"}]}
    write_commit(t, 1, metadata(schema(("id", "integer"), id=narrowed)))
    with pytest.raises(UnsupportedDeltaFeatureError, match="long to integer"):
        DeltaLog(t).snapshot()


def test_not_a_delta_table(tmp_path):
    assert not is_delta_table(str(tmp_path))
    with pytest.raises(DeltaTableNotFoundError):
        DeltaLog(str(tmp_path)).snapshot()
    os.makedirs(tmp_path / "_delta_log")
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text("{}")
    with pytest.raises(DeltaTableNotFoundError):
        DeltaLog(str(tmp_path)).latest_version()


def test_a_file_live_twice_is_damage(tmp_path):
    t = str(tmp_path)
    write_commit(
        t,
        0,
        protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
        metadata(schema(("id", "long"))),
        add("a"),
        add("a", dv=dv()),
    )
    with pytest.raises(DeltaLogDamageError, match="live twice"):
        DeltaLog(t).snapshot()


def test_version_checksum_disagreement_is_damage(tmp_path):
    t = str(tmp_path)
    basic_table(t, 2)
    crc = os.path.join(t, "_delta_log", f"{1:020d}.crc")
    with open(crc, "w") as f:
        json.dump({"numFiles": 3, "tableSizeBytes": 131, "numMetadata": 1, "numProtocol": 1}, f)
    assert DeltaLog(t).snapshot().num_files == 3
    with open(crc, "w") as f:
        json.dump({"numFiles": 3, "tableSizeBytes": 130, "numMetadata": 1, "numProtocol": 1}, f)
    with pytest.raises(DeltaLogDamageError, match="version checksum"):
        DeltaLog(t).snapshot()


def test_time_travel_across_in_commit_timestamp_enablement(tmp_path):
    """Commits 0-2 are timed by their files (made increasing), 3 onwards by their in-commit
    timestamps (PROTOCOL.md, "Recommendations for Readers of Tables with In-Commit
    Timestamps")."""
    t = str(tmp_path)
    base = metadata(schema(("id", "long")))
    write_commit(t, 0, commit_info(), protocol(), base, add("a"), mtime_ms=10_000)
    write_commit(t, 1, commit_info(), add("b"), mtime_ms=20_000)
    write_commit(t, 2, commit_info(), add("c"), mtime_ms=15_000)  # older file: taken as 20_001
    enabled = metadata(
        schema(("id", "long")),
        configuration={
            "delta.enableInCommitTimestamps": "true",
            "delta.inCommitTimestampEnablementVersion": "3",
            "delta.inCommitTimestampEnablementTimestamp": "50000",
        },
    )
    write_commit(
        t,
        3,
        commit_info(inCommitTimestamp=50_000),
        protocol(1, 7, None, ["inCommitTimestamp"]),
        enabled,
        add("d"),
        mtime_ms=99_000,
    )
    write_commit(t, 4, commit_info(inCommitTimestamp=60_000), add("e"), mtime_ms=1_000)
    write_commit(t, 5, commit_info(inCommitTimestamp=70_000), add("f"), mtime_ms=2_000)
    log = DeltaLog(t)
    expected = {
        10_000: 0,
        19_999: 0,
        20_000: 1,
        20_001: 2,
        49_999: 2,
        50_000: 3,
        59_999: 3,
        60_000: 4,
        69_999: 4,
        70_000: 5,
    }
    assert {when: log.version_at(when) for when in expected} == expected
    assert [log.snapshot(v).timestamp for v in range(6)] == [
        10_000,
        20_000,
        20_001,
        50_000,
        60_000,
        70_000,
    ]
    from metaindex.errors import DeltaVersionError

    for when in (9_999, 70_001):
        with pytest.raises(DeltaVersionError):
            log.version_at(when)
    assert log.version_at("1970-01-01T00:01:00+00:00") == 4
