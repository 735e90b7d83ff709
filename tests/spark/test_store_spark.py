"""Spark (parquet-java) reads a version-5 part file and sees what the spec promises: obj_name
with its field metadata (version, table identifier), the index columns as struct / array /
binary with their {index: {name, cols, params}} metadata, the virtual partition column.

Uses the one Spark session of tests/spark/conftest.py."""

from __future__ import annotations

import pytest

from metaindex.store import FORMAT_VERSION, MetadataStore
from tests.store.helpers import BLOOM, DEFS, MINMAX, VALUES, part_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_spark_reads_a_part_with_its_field_metadata(spark, tmp_path):
    t = MetadataStore(tmp_path / "store").table(tmp_path / "data")
    t.create(DEFS)
    objs = [("city=Paris/f1.parquet", 100, 7, 10), ("city=Rome/f2.parquet", 200, 8, 20)]
    path = t.write_part(part_table(objs, virtual={"city": ["Paris", "Rome"]}), DEFS)
    df = spark.read.parquet(path)
    schema = {f.name: f for f in df.schema.fields}
    obj = schema["obj_name"]
    assert obj.metadata["version"] == FORMAT_VERSION, obj.metadata
    assert obj.metadata["tableIdentifier"] == t.identity.identifier
    assert obj.metadata["table_id"] == t.identity.id
    # (Spark marks every column of a file source nullable on read, whatever the file says)
    assert schema["obj_size"].dataType.simpleString() == "bigint"
    assert schema["virtual_city"].dataType.simpleString() == "string"
    assert (
        schema[MINMAX.storage_name].dataType.simpleString()
        == "struct<min:bigint,max:bigint,null_count:bigint,nan_count:bigint>"
    )
    assert (
        schema[VALUES.storage_name].dataType.simpleString()
        == "struct<values:array<string>,has_null:boolean>"
    )
    assert (
        schema[BLOOM.storage_name].dataType.simpleString()
        == "struct<bitset:binary,has_null:boolean>"
    )
    assert schema[MINMAX.storage_name].metadata == {"index": {"name": "minmax", "cols": ["temp"]}}
    assert schema[BLOOM.storage_name].metadata["index"]["params"] == {"fpp": 0.01}
    rows = {r["obj_name"]: r for r in df.collect()}
    assert rows["city=Rome/f2.parquet"]["obj_mtime"] == 8
    assert rows["city=Paris/f1.parquet"]["virtual_city"] == "Paris"
    assert (
        bytes(rows["city=Paris/f1.parquet"][BLOOM.storage_name]["bitset"])
        == part_table(objs[:1]).column(BLOOM.storage_name)[0]["bitset"].as_py()
    )
