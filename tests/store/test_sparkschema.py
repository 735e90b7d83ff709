"""The one Arrow -> Spark type map (metaindex.store.sparkschema.spark_type) and the two ways
Spark gets values: its Parquet reader (the store's part files) and Arrow batches (the data
source). The rules that differ are the ones Spark itself forces (checked against Spark in
tests/spark/test_datasource_spark.py and the store's Spark tests)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from metaindex.errors import SchemaError
from metaindex.store.sparkschema import ARROW, PARQUET, spark_schema_json, spark_type

SAME = [
    (pa.int8(), "byte"),
    (pa.uint8(), "short"),
    (pa.uint16(), "integer"),
    (pa.uint32(), "long"),
    (pa.uint64(), "decimal(20,0)"),
    (pa.float32(), "float"),
    (pa.float64(), "double"),
    (pa.decimal128(38, 10), "decimal(38,10)"),
    (pa.date64(), "date"),
    (pa.dictionary(pa.int32(), pa.string()), "string"),
    (pa.large_string(), "string"),
    (pa.string_view(), "string"),
    (pa.binary(16), "binary"),
    (pa.binary_view(), "binary"),
    (pa.timestamp("us", "UTC"), "timestamp"),
    (pa.timestamp("ms"), "timestamp_ntz"),
]


@pytest.mark.parametrize("arrow, spark", SAME, ids=[str(a) for a, _ in SAME])
def test_both_readings_agree_on_every_plain_type(arrow, spark):
    assert spark_type(arrow, PARQUET) == spark_type(arrow, ARROW) == spark


def test_the_rules_that_differ_by_reader():
    with pytest.raises(SchemaError, match="halffloat"):
        spark_type(pa.float16(), PARQUET)  # Spark: "Illegal Parquet type: ... (FLOAT16)"
    assert spark_type(pa.float16(), ARROW) == "float", "widened exactly"
    with pytest.raises(SchemaError):
        spark_type(pa.null(), PARQUET)
    assert spark_type(pa.null(), ARROW) == "void"
    assert spark_type(pa.timestamp("ns"), PARQUET) == "long", "TIMESTAMP(NANOS): nanosAsLong"
    assert spark_type(pa.timestamp("ns"), ARROW) == "timestamp_ntz", "truncated to micros"
    assert spark_type(pa.timestamp("ns", "UTC"), ARROW) == "timestamp"
    strict = pa.list_(pa.field("item", pa.int64(), nullable=False))
    assert spark_type(strict, PARQUET)["containsNull"] is False
    assert spark_type(strict, ARROW)["containsNull"] is True, "a batch may hold NULLs anywhere"
    schema = pa.schema([pa.field("x", pa.int32(), nullable=False)])
    assert json.loads(spark_schema_json(schema))["fields"][0]["nullable"] is False
    assert json.loads(spark_schema_json(schema, reading=ARROW))["fields"][0]["nullable"] is True


@pytest.mark.parametrize(
    "arrow", [pa.time64("us"), pa.duration("s"), pa.decimal256(50, 2), pa.month_day_nano_interval()]
)
def test_types_spark_has_none_for(arrow):
    for reading in (PARQUET, ARROW):
        with pytest.raises(SchemaError):
            spark_type(arrow, reading)
