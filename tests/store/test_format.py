"""Version-5 part files: column names, field metadata (Arrow and Spark), identity, versions."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import SchemaError, UnsupportedVersionError
from metaindex.parquet import write_table
from metaindex.store import (
    FILE_INFO_COLUMNS,
    FORMAT_VERSION,
    SPARK_ROW_METADATA,
    IndexDef,
    MetadataStore,
    index_column_name,
    normalize_table_uri,
    table_id_for,
)
from metaindex.store.layout import table_identifier
from metaindex.store.model import check_format_version
from metaindex.store.parts import inspect_part
from metaindex.store.sparkschema import spark_type
from tests.store.helpers import DEFS, MINMAX, part_table


def test_version2_escaping_matches_xskipper_example():
    assert (
        index_column_name("someindex", ["lat#_.$_new", "$_lng.#"])
        == "lat##_$#$$_new_$_lng$#$##_someindex_14-10"
    ), "the spec's worked example"
    assert index_column_name("minmax", ["temp"]) == "temp_minmax_4"
    assert index_column_name("bloom", ["user.id"]) == "user$#$id_bloom_9"


def test_escaping_is_injective_on_tricky_names():
    cases = [
        ("a_b", "c"),
        ("a", "b_c"),
        ("a.b",),
        ("a$#$b",),
        ("a#", "b"),
        ("a", "#b"),
        ("a##",),
        ("a#.",),
        ("a.#",),
    ]
    names = {index_column_name("minmax", c) for c in cases}
    assert len(names) == len(cases), "distinct column lists must give distinct names"


@pytest.mark.parametrize(
    "uri, normal",
    [
        ("/data/t/", "file:///data/t"),
        ("/data//x/../t", "file:///data/t"),
        ("file:///data/t", "file:///data/t"),
        ("file:/data/t/", "file:///data/t"),
        ("S3://bucket/a//b/", "s3://bucket/a/b"),
        ("s3://bucket", "s3://bucket"),
    ],
)
def test_table_uri_normalisation(uri, normal):
    assert normalize_table_uri(uri) == normal


def test_table_id_and_identifier():
    assert table_id_for("file:///data/t") == table_id_for(normalize_table_uri("/data/t/"))
    assert len(table_id_for("file:///data/t")) == 32
    assert table_identifier("file:///data/t") == "data/t"
    assert table_identifier("s3://bucket/a/b") == "bucket/a/b", "xskipper: <bucket>/<object>"


def test_index_def_validation():
    with pytest.raises(ValueError):
        IndexDef("MinMax", ["a"])
    with pytest.raises(ValueError):
        IndexDef("minmax", [])
    with pytest.raises(ValueError):
        IndexDef("bloom", ["a"], {"fpp": float("nan")})
    with pytest.raises(TypeError):
        IndexDef("bloom", ["a"], {"fpp": [0.1]})
    d = IndexDef.of({"name": "bloom", "cols": ["a"], "params": {"fpp": 0.1}})
    assert d == IndexDef("bloom", ("a",), {"fpp": 0.1}) and hash(d) == hash(IndexDef.of(d))

    class Kind:  # what metaindex.index kinds look like
        name, cols, params = "valuelist", ("c",), {"max_values": 3}

    assert IndexDef.of(Kind()).storage_name == "c_valuelist_1"


def test_index_def_storage_name_is_the_recorded_column():
    d = IndexDef("minmax", ["user.id"])
    assert d.storage_name == d.to_json()["column"], "the log's 'column' field is unchanged"
    assert IndexDef.from_json(d.to_json(), "here") == d
    assert d.storage_name == "user$#$id_minmax_9" != d.cols[0]
    assert not hasattr(d, "column"), "column names the table's column, which IndexDef spells cols"


def _store_part(tmp_path, objects=(("f1.parquet", 100, 5, 10),), **kw):
    t = MetadataStore(tmp_path / "store").table(tmp_path / "tbl")
    t.create(DEFS)
    return t, t.write_part(part_table(objects, **kw), DEFS)


def test_part_file_carries_version_identity_and_index_metadata(tmp_path):
    t, path = _store_part(tmp_path, virtual={"city": ["Paris"]})
    schema = pq.read_schema(path)  # pyarrow, an independent reader
    obj = schema.field("obj_name")
    assert not obj.nullable, "obj_name is non-nullable (xskipper)"
    assert obj.metadata[b"version"] == str(FORMAT_VERSION).encode()
    assert obj.metadata[b"tableIdentifier"] == table_identifier(t.identity.uri).encode()
    assert obj.metadata[b"table_id"] == t.identity.id.encode()
    assert b"encryption" not in obj.metadata, "a plaintext store records no encryption"
    for d in DEFS:
        meta = json.loads(schema.field(d.storage_name).metadata[b"index"])
        assert meta["name"] == d.name and meta["cols"] == list(d.cols)
        assert meta.get("params", {}) == d.params
    assert schema.names[:4] == ["obj_name", "obj_size", "obj_mtime", "obj_rows"]
    assert schema.names[4 : 5 + len(FILE_INFO_COLUMNS)] == [*FILE_INFO_COLUMNS, "virtual_city"]
    assert [schema.field(c).type for c in ("obj_size", "obj_mtime", "obj_rows")] == [pa.int64()] * 3


def test_spark_row_metadata_describes_the_file(tmp_path):
    t, path = _store_part(tmp_path, virtual={"day": pa.array([19000], pa.date32())})
    kv = pq.read_metadata(path).metadata
    spark = json.loads(kv[SPARK_ROW_METADATA.encode()])
    fields = {f["name"]: f for f in spark["fields"]}
    assert spark["type"] == "struct"
    assert list(fields) == pq.read_schema(path).names, "same columns, same order"
    assert fields["obj_name"]["metadata"]["version"] == FORMAT_VERSION
    assert isinstance(fields["obj_name"]["metadata"]["version"], int), "a Spark Long"
    assert fields["obj_name"]["nullable"] is False
    assert fields["obj_size"]["type"] == "long" and fields["virtual_day"]["type"] == "date"
    mm = fields[MINMAX.storage_name]
    assert mm["type"]["type"] == "struct"
    assert [f["name"] for f in mm["type"]["fields"]] == ["min", "max", "null_count", "nan_count"]
    assert mm["metadata"] == {"index": {"name": "minmax", "cols": ["temp"]}}
    vl = fields[DEFS[1].storage_name]["type"]["fields"][0]["type"]
    assert vl == {"type": "array", "elementType": "string", "containsNull": True}
    assert fields[DEFS[2].storage_name]["metadata"]["index"]["params"] == {"fpp": 0.01}


@pytest.mark.parametrize(
    "arrow, spark",
    [
        (pa.int8(), "byte"),
        (pa.int16(), "short"),
        (pa.int32(), "integer"),
        (pa.uint32(), "long"),
        (pa.float32(), "float"),
        (pa.float64(), "double"),
        (pa.decimal128(20, 3), "decimal(20,3)"),
        (pa.timestamp("us", "UTC"), "timestamp"),
        (pa.timestamp("us"), "timestamp_ntz"),
        (pa.large_string(), "string"),
        (pa.binary(), "binary"),
        (pa.bool_(), "boolean"),
        (
            pa.map_(pa.string(), pa.int32()),
            {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True},
        ),
    ],
)
def test_spark_types(arrow, spark):
    assert spark_type(arrow) == spark


def test_spark_type_refuses_what_spark_cannot_hold():
    with pytest.raises(SchemaError):
        spark_type(pa.float16())


def test_write_part_validates_its_table(tmp_path):
    t = MetadataStore(tmp_path / "store").table(tmp_path / "tbl")
    t.create(DEFS)
    good = part_table([("a", 1, 1, 1), ("b", 1, 1, 1)])
    with pytest.raises(SchemaError, match="lacks"):
        t.write_part(good.drop_columns([MINMAX.storage_name]), DEFS)
    with pytest.raises(SchemaError, match="unknown columns"):
        t.write_part(good.append_column("extra", pa.array([1, 2])), DEFS)
    with pytest.raises(SchemaError, match="unique"):
        t.write_part(part_table([("a", 1, 1, 1), ("a", 2, 2, 2)]), DEFS)
    with pytest.raises(SchemaError, match="negative"):
        t.write_part(part_table([("a", -1, 1, 1)]), DEFS)
    nulls = good.set_column(0, "obj_name", pa.array(["a", None]))
    with pytest.raises(SchemaError, match="nulls"):
        t.write_part(nulls, DEFS)
    small = good.set_column(1, "obj_size", pa.array([1, 2], pa.int32()))
    assert t.write_part(small, DEFS), "narrower integers are widened to int64"


def test_check_format_version_messages():
    assert check_format_version(5, "x") == 5
    assert check_format_version(6, "x") == 6
    assert check_format_version(7, "x") == 7
    assert check_format_version(8, "x") == 8
    with pytest.raises(UnsupportedVersionError, match="upgrade metaindex"):
        check_format_version(9, "f")
    with pytest.raises(UnsupportedVersionError, match="xskipper"):
        check_format_version(4, "f")


def test_newer_part_version_is_refused_with_upgrade_hint(tmp_path):
    t, path = _store_part(tmp_path)
    pf = pq.ParquetFile(path)
    spark = json.loads(pf.metadata.metadata[SPARK_ROW_METADATA.encode()])
    spark["fields"][0]["metadata"]["version"] = FORMAT_VERSION + 1
    newer = tmp_path / "newer.parquet"
    write_table(pf.read(), str(newer), key_value_metadata={SPARK_ROW_METADATA: json.dumps(spark)})
    with pytest.raises(
        UnsupportedVersionError, match=f"newer.parquet.*version {FORMAT_VERSION + 1}.*upgrade"
    ):
        inspect_part(newer.read_bytes(), str(newer))


def test_pyarrow_reads_a_part_back_exactly(tmp_path):
    objs = [(f"f{i}.parquet", 100 + i, 5, 10) for i in range(50)]
    _, path = _store_part(tmp_path, objects=objs)
    got = pq.read_table(path).select(part_table(objs).column_names)
    assert got.to_pylist() == part_table(objs).to_pylist(), (
        "pyarrow (Arrow C++) reads the part we wrote value for value"
    )
    assert got.schema.field("obj_name").metadata[b"version"] == str(FORMAT_VERSION).encode()


def test_bloom_bitsets_are_stored_uncompressed_everything_else_zstd(tmp_path):
    # random bits do not compress: the store spends no zstd time on them
    _, path = _store_part(tmp_path, objects=[(f"f{i}.parquet", 100 + i, 5, 10) for i in range(5)])
    meta = pq.read_metadata(path)  # pyarrow, an independent reader
    codecs = {
        meta.row_group(0).column(c).path_in_schema: meta.row_group(0).column(c).compression
        for c in range(meta.num_columns)
    }
    bitset = [p for p in codecs if p.endswith(".bitset")]
    assert len(bitset) == 1 and codecs.pop(bitset[0]) == "UNCOMPRESSED"
    assert set(codecs.values()) == {"ZSTD"}
