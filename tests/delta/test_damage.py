"""Damaged, incomplete and cleaned-up logs: typed errors from :mod:`metaindex.errors`, never a
crash and never a file list the log does not support. Hypothesis fuzzes the JSON action parser
and commit files; checkpoints are truncated and bit-flipped."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex.delta import DeltaLog
from metaindex.delta.actions import Where, parse_json_actions
from metaindex.errors import (
    DeltaLogDamageError,
    DeltaLogError,
    DeltaLogGapError,
    DeltaVersionError,
    MetaIndexError,
)
from tests.delta.logs import add, basic_table, commit_info, metadata, protocol, remove, schema

WHERE = Where("t", 3, "_delta_log/00000000000000000003.json")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
VALID = [
    add(
        "p=1/a",
        10,
        {"p": "1"},
        {
            "storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
            "offset": 1,
            "sizeInBytes": 4,
            "cardinality": 1,
        },
    ),
    remove("p=1/b", 5, {"p": None}),
    protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"]),
    metadata(schema(("id", "long"))),
    {"txn": {"appId": "a", "version": 1}},
    {"domainMetadata": {"domain": "d", "configuration": "c", "removed": False}},
    commit_info(),
    {"sidecar": {"path": "x.parquet", "sizeInBytes": 3, "modificationTime": 1}},
    {"checkpointMetadata": {"version": 3}},
]


def _paths(action: dict):
    """Every (key path) inside an action, to mutate."""
    out = []

    def walk(obj, path):
        if isinstance(obj, dict):
            for k, v in obj.items():
                out.append(path + (k,))
                walk(v, path + (k,))

    walk(action, ())
    return out


def _mutate(action: dict, path: tuple, value, drop: bool) -> dict:
    copy = json.loads(json.dumps(action))
    obj = copy
    for k in path[:-1]:
        obj = obj[k]
    if drop:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return copy


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_actions_parse_or_raise_damage(data):
    action = data.draw(st.sampled_from(VALID))
    path = data.draw(st.sampled_from(_paths(action)))
    drop = data.draw(st.booleans())
    value = data.draw(json_values)
    line = json.dumps(_mutate(action, path, value, drop)).encode()
    try:
        parse_json_actions(line, WHERE)
    except DeltaLogDamageError as exc:
        assert exc.path == WHERE.path and exc.version == 3 and "line 1" in str(exc)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_parse_or_raise_damage(data):
    try:
        parse_json_actions(data, WHERE)
    except DeltaLogDamageError:
        pass


@pytest.mark.parametrize(
    "action,message",
    [
        (
            {
                "add": {
                    "path": "a",
                    "partitionValues": {},
                    "modificationTime": 1,
                    "dataChange": True,
                }
            },
            "without 'size'",
        ),
        (
            {
                "add": {
                    "path": "a",
                    "partitionValues": {},
                    "size": "10",
                    "modificationTime": 1,
                    "dataChange": True,
                }
            },
            "add.size must be a int",
        ),
        (
            {
                "add": {
                    "path": "a",
                    "partitionValues": {"p": 1},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                }
            },
            "must map strings to strings",
        ),
        (
            {
                "add": {
                    "path": "a",
                    "partitionValues": {},
                    "size": -1,
                    "modificationTime": 1,
                    "dataChange": True,
                }
            },
            "negative",
        ),
        ({"remove": {"path": "a", "dataChange": "yes"}}, "remove.dataChange must be a bool"),
        ({"protocol": {"minReaderVersion": 1}}, "without 'minWriterVersion'"),
        (
            {"metaData": {"id": "x", "schemaString": "{}", "partitionColumns": "p"}},
            "partitionColumns must be a list",
        ),
        (
            {
                "add": {
                    "path": "a",
                    "partitionValues": {},
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                    "deletionVector": {"storageType": "z"},
                }
            },
            "storageType",
        ),
    ],
)
def test_specific_malformed_actions_name_what_is_wrong(action, message):
    with pytest.raises(DeltaLogDamageError, match=message):
        parse_json_actions(json.dumps(action).encode(), WHERE)


def test_two_metadata_actions_in_one_commit_are_damage():
    line = json.dumps(metadata(schema(("id", "long")))) + "\n"
    with pytest.raises(DeltaLogDamageError, match="more than one metaData"):
        parse_json_actions((line * 2).encode(), WHERE)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_damaged_commit_files_give_typed_errors(tmp_path_factory, data):
    t = str(tmp_path_factory.mktemp("fuzz"))
    basic_table(t, 4)
    target = os.path.join(t, "_delta_log", f"{data.draw(st.integers(0, 3)):020d}.json")
    original = open(target, "rb").read()
    cut = data.draw(st.integers(0, len(original)))
    flip = data.draw(
        st.lists(
            st.tuples(st.integers(0, max(len(original) - 1, 0)), st.integers(1, 255)), max_size=3
        )
    )
    damaged = bytearray(original[:cut] if data.draw(st.booleans()) else original)
    for at, bits in flip:
        if at < len(damaged):
            damaged[at] ^= bits
    with open(target, "wb") as f:
        f.write(bytes(damaged))
    try:
        DeltaLog(t).snapshot()
        DeltaLog(t).changes(0)
    except MetaIndexError:
        pass


def test_a_missing_commit_is_a_gap_not_a_shorter_table(tmp_path):
    t = str(tmp_path)
    basic_table(t, 5)
    os.remove(os.path.join(t, "_delta_log", f"{2:020d}.json"))
    log = DeltaLog(t)
    assert log.snapshot(1).num_files == 3
    for version in (2, 3, 4):
        with pytest.raises(DeltaLogGapError, match="commit 2 missing"):
            log.snapshot(version)
    with pytest.raises(DeltaLogGapError):
        log.changes(1, 4)  # falls back to snapshots, which cannot be built either


def _deltalake_table(path: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa

    for i in range(6):
        deltalake.write_deltalake(
            path, pa.table({"id": [i, i + 10]}), mode="append" if i else "error"
        )
        if i in (2, 4):
            deltalake.DeltaTable(path).create_checkpoint()


def test_log_cleanup_makes_old_versions_unavailable_and_changes_fall_back(tmp_path):
    t = str(tmp_path / "t")
    _deltalake_table(t)
    log = DeltaLog(t)
    before = {v: log.snapshot(v) for v in range(6)}
    log_dir = os.path.join(t, "_delta_log")
    for v in range(4):  # as metadata cleanup does: commits before the checkpoint at 4 go
        os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    os.remove(os.path.join(log_dir, f"{2:020d}.checkpoint.parquet"))
    assert log.earliest_version() == 4
    for v in range(4):
        with pytest.raises(DeltaVersionError, match="log cleanup"):
            log.snapshot(v)
    assert log.snapshot(4).files == before[4].files
    assert log.snapshot(5).files == before[5].files
    direct = log.changes(4, 5)
    assert not direct.from_snapshots
    assert direct.log_files == ("_delta_log/00000000000000000005.json",)
    with pytest.raises(DeltaVersionError):
        log.changes(1, 5)
    with pytest.raises(DeltaVersionError, match="after"):
        log.changes(5, 4)


def test_changes_fall_back_to_snapshots_when_commits_are_gone(tmp_path):
    t = str(tmp_path / "t")
    _deltalake_table(t)
    log = DeltaLog(t)
    expected = log.changes(2, 5)
    for v in (0, 1, 3):  # commit 3 gone, checkpoint 2 left: version 2 still reconstructable
        os.remove(os.path.join(t, "_delta_log", f"{v:020d}.json"))
    fallback = log.changes(2, 5)
    assert fallback.from_snapshots and "3" in fallback.reason
    assert {f.key for f in fallback.added} == {f.key for f in expected.added}
    assert fallback.removed == () == expected.removed


def test_checkpoint_damage_is_typed(tmp_path):
    t = str(tmp_path / "t")
    _deltalake_table(t)
    truth = {(f.path, f.size) for f in DeltaLog(t).snapshot().files}
    checkpoint = os.path.join(t, "_delta_log", f"{4:020d}.checkpoint.parquet")
    original = open(checkpoint, "rb").read()
    for cut in sorted({0, 1, 4, 8, len(original) // 2, len(original) - 9, len(original) - 1}):
        with open(checkpoint, "wb") as f:
            f.write(original[:cut])
        with pytest.raises(DeltaLogDamageError, match="checkpoint"):
            DeltaLog(t).snapshot()
    outcomes = {"typed error": 0, "same files": 0}
    for at in range(0, len(original), max(1, len(original) // 150)):
        damaged = bytearray(original)
        damaged[at] ^= 0x5A
        with open(checkpoint, "wb") as f:
            f.write(bytes(damaged))
        try:
            files = {(f.path, f.size) for f in DeltaLog(t).snapshot().files}
        except MetaIndexError:
            outcomes["typed error"] += 1
            continue
        if files == truth:
            outcomes["same files"] += 1
    assert outcomes["typed error"] > 0 and outcomes["same files"] > 0, outcomes


def test_an_incomplete_multi_part_checkpoint_is_ignored(tmp_path):
    t = str(tmp_path)
    basic_table(t, 4)
    truth = DeltaLog(t).snapshot()
    part = os.path.join(t, "_delta_log", f"{2:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
    with open(part, "wb") as f:
        f.write(b"not parquet at all")
    assert DeltaLog(t).snapshot().files == truth.files


def test_a_damaged_last_checkpoint_is_only_a_hint(tmp_path):
    t = str(tmp_path / "t")
    _deltalake_table(t)
    path = os.path.join(t, "_delta_log", "_last_checkpoint")
    hint = json.loads(open(path).read())
    assert DeltaLog(t).last_checkpoint()["version"] == 4
    for text in (
        "{not json",
        json.dumps({**hint, "version": "4"}),
        json.dumps({**hint, "checksum": "0" * 32}),
    ):
        with open(path, "w") as f:
            f.write(text)
        assert DeltaLog(t).last_checkpoint() is None
        assert DeltaLog(t).snapshot().version == 5


def test_errors_name_the_file_and_version(tmp_path):
    t = str(tmp_path)
    basic_table(t, 3)
    with open(os.path.join(t, "_delta_log", f"{1:020d}.json"), "a") as f:
        f.write('{"add": {"path": 7}}\n')
    with pytest.raises(DeltaLogError) as info:
        DeltaLog(t).snapshot()
    assert info.value.version == 1
    assert info.value.path == "_delta_log/00000000000000000001.json"
    assert "line 3" in str(info.value)
    shutil.rmtree(t)


TYPES = [
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "double",
    "float",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "decimal(10,2)",
    "decimal(38,0)",
]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30), st.sampled_from(TYPES))
def test_partition_values_parse_or_raise_schema_format_error(raw, kind):
    from metaindex.delta.schema import SchemaFormatError, partition_value

    try:
        partition_value(raw, kind)
    except SchemaFormatError:
        pass


delta_types = st.recursive(
    st.sampled_from(TYPES + ["variant", "void", "decimal(40,2)", "decimal(5,7)", "nope"]),
    lambda inner: (
        st.builds(lambda e: {"type": "array", "elementType": e}, inner)
        | st.builds(lambda k, v: {"type": "map", "keyType": k, "valueType": v}, inner, inner)
        | st.builds(
            lambda types, meta: {
                "type": "struct",
                "fields": [
                    {"name": f"f{i}", "type": t, "metadata": meta} for i, t in enumerate(types)
                ],
            },
            st.lists(inner, max_size=3),
            st.sampled_from(
                [{}, [], {"delta.typeChanges": "x"}, {"delta.typeChanges": [{"a": 1}]}]
            ),
        )
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(json_values | delta_types)
def test_schemas_parse_or_raise_schema_format_error(value):
    from metaindex.delta.schema import (
        SchemaFormatError,
        column_mapping,
        parse_schema_string,
        to_arrow_schema,
        type_changes,
    )

    schema_json = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "a", "type": value, "nullable": True, "metadata": {}}],
        }
        if not isinstance(value, dict)
        else value
    )
    try:
        parsed = parse_schema_string(schema_json)
        to_arrow_schema(parsed)
        column_mapping(parsed, "none")
        type_changes(parsed)
    except SchemaFormatError:
        pass


def test_deeply_nested_input_is_damage_not_a_recursion_error(tmp_path):
    with pytest.raises(DeltaLogDamageError, match="not JSON"):
        parse_json_actions(b"[" * 100_000, WHERE)
    deep = {"type": "string"}
    for _ in range(300):
        deep = {"type": "array", "elementType": deep}
    t = str(tmp_path)
    from tests.delta.logs import write_commit

    write_commit(
        t,
        0,
        protocol(),
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet"},
                "partitionColumns": [],
                "configuration": {},
                "schemaString": json.dumps(
                    {"type": "struct", "fields": [{"name": "a", "type": deep}]}
                ),
            }
        },
    )
    with pytest.raises(DeltaLogDamageError, match="nests deeper"):
        DeltaLog(t).snapshot()
