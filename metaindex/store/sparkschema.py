"""Spark's view of a part file: the ``org.apache.spark.sql.parquet.row.metadata`` entry.

Spark (``ParquetFileFormat``) takes a file's Catalyst schema, field metadata included, from this
key/value entry when present. We write it so that ``spark.read.parquet(part)`` shows
``obj_name`` with its metadata and the index columns as struct / array / binary. The same
metadata is put on the Arrow fields (stored in ``ARROW:schema``) for pyarrow readers: a string
value as is, any other value as its JSON text.
"""

from __future__ import annotations

import json

import pyarrow as pa

from metaindex.errors import SchemaError

__all__ = ["SPARK_ROW_METADATA", "spark_type", "spark_schema_json", "arrow_field_metadata"]

SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"

_SIMPLE = [
    (pa.types.is_boolean, "boolean"), (pa.types.is_int8, "byte"), (pa.types.is_int16, "short"),
    (pa.types.is_int32, "integer"), (pa.types.is_int64, "long"),
    # Spark reads Parquet's unsigned annotations as the next wider signed type
    (pa.types.is_uint8, "short"), (pa.types.is_uint16, "integer"), (pa.types.is_uint32, "long"),
    (pa.types.is_uint64, "decimal(20,0)"),
    (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
    (pa.types.is_date32, "date"), (pa.types.is_date64, "date"),
    (pa.types.is_string, "string"), (pa.types.is_large_string, "string"),
    (pa.types.is_binary, "binary"), (pa.types.is_large_binary, "binary"),
    (pa.types.is_fixed_size_binary, "binary"),
]


def spark_type(t: pa.DataType):
    """The Spark SQL type JSON of an Arrow type as Spark reads the Parquet we write for it."""
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"Spark has no decimal wider than 38 digits ({t})")
        return f"decimal({t.precision},{t.scale})"
    for test, name in _SIMPLE:
        if test(t):
            return name
    if pa.types.is_timestamp(t):
        if t.unit == "ns":  # Spark reads TIMESTAMP(NANOS) only as long (nanosAsLong)
            return "long"
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_spark_field(t.field(i), {})
                                             for i in range(t.num_fields)]}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "elementType": spark_type(t.value_type),
                "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": spark_type(t.key_type),
                "valueType": spark_type(t.item_type), "valueContainsNull": t.item_field.nullable}
    raise SchemaError(f"the metadata store cannot hold Arrow type {t}: Spark has no type for it")


def _spark_field(f: pa.Field, metadata: dict) -> dict:
    return {"name": f.name, "type": spark_type(f.type), "nullable": f.nullable,
            "metadata": metadata}


def spark_schema_json(schema: pa.Schema, metadata: dict) -> str:
    """Spark's StructType JSON for ``schema``; ``metadata``: {field name: Spark metadata}."""
    return json.dumps({"type": "struct", "fields": [
        _spark_field(f, metadata.get(f.name, {})) for f in schema]},
        separators=(",", ":"), allow_nan=False)


def arrow_field_metadata(spark_metadata: dict) -> dict:
    """The Arrow field metadata mirroring one field's Spark metadata."""
    return {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"))
            for k, v in spark_metadata.items()}
