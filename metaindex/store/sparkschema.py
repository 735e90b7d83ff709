"""Arrow types as Spark SQL types (one map), and Spark's view of a part file.

:func:`spark_type` is the one Arrow -> Spark type map. Who hands Spark the values decides two
rules, named by a :class:`SparkReading`:

- :data:`PARQUET`: Spark's own Parquet reader reads a file written from the Arrow schema (the
  metadata store's part files). ``float16`` and Arrow's ``null`` type have no Spark type (an
  error: Spark refuses ``FLOAT16`` columns and reads a written null column as whatever
  physical type carries it); a nanosecond timestamp is read as ``long`` (Spark reads
  ``TIMESTAMP(NANOS)`` only with ``nanosAsLong``); nullability is the Arrow field's.
- :data:`ARROW`: Arrow record batches handed to Spark as they are read (the ``metaindex`` data
  source reading data files with pyarrow). ``float16`` widens exactly to ``float``, ``null``
  is ``void``; a nanosecond timestamp is truncated to microseconds, Spark's unit; every field,
  element and map value is nullable (a file without a column reads it as NULL).

Everything else is the same for both: unsigned integers read as the next wider signed type
(``uint64`` as ``decimal(20,0)``), decimals up to 38 digits, timestamps with a time zone as
``timestamp`` and without one as ``timestamp_ntz`` (INT96 columns are typed with a zone before
they get here: ``metaindex.engine.schema.file_schema``), dictionaries as their values.

The part files carry the ``org.apache.spark.sql.parquet.row.metadata`` entry: Spark
(``ParquetFileFormat``) takes a file's Catalyst schema, field metadata included, from it when
present. We write it so that ``spark.read.parquet(part)`` shows ``obj_name`` with its metadata
and the index columns as struct / array / binary. The same metadata is put on the Arrow fields
(stored in ``ARROW:schema``) for pyarrow readers: a string value as is, any other value as its
JSON text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa

from metaindex.errors import SchemaError

__all__ = [
    "SPARK_ROW_METADATA",
    "SparkReading",
    "PARQUET",
    "ARROW",
    "spark_type",
    "spark_schema_json",
    "arrow_field_metadata",
]

SPARK_ROW_METADATA = "org.apache.spark.sql.parquet.row.metadata"


@dataclass(frozen=True)
class SparkReading:
    """How Spark gets the values of Arrow data: the rules of :func:`spark_type` that differ.

    Attributes:
        name: ``"parquet"`` or ``"arrow"``.
        half_float: ``float16`` is read as ``float`` (else it has no Spark type).
        void: Arrow's ``null`` type is ``void`` (else it has no Spark type).
        nanos_as_long: a nanosecond timestamp is read as ``long`` (else as a timestamp,
            truncated to microseconds).
        always_nullable: every field, array element and map value is nullable (else as the
            Arrow field says).
    """

    name: str
    half_float: bool
    void: bool
    nanos_as_long: bool
    always_nullable: bool


PARQUET = SparkReading(
    "parquet", half_float=False, void=False, nanos_as_long=True, always_nullable=False
)
"""Spark's Parquet reader on a file written from the Arrow schema."""
ARROW = SparkReading("arrow", half_float=True, void=True, nanos_as_long=False, always_nullable=True)
"""Arrow batches handed to Spark (a Python data source)."""

_SIMPLE = [
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_int8, "byte"),
    (pa.types.is_int16, "short"),
    (pa.types.is_int32, "integer"),
    (pa.types.is_int64, "long"),
    # Spark reads Parquet's unsigned annotations as the next wider signed type
    (pa.types.is_uint8, "short"),
    (pa.types.is_uint16, "integer"),
    (pa.types.is_uint32, "long"),
    (pa.types.is_uint64, "decimal(20,0)"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
    (pa.types.is_date32, "date"),
    (pa.types.is_date64, "date"),
    (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"),
    (pa.types.is_string_view, "string"),
    (pa.types.is_binary, "binary"),
    (pa.types.is_large_binary, "binary"),
    (pa.types.is_fixed_size_binary, "binary"),
    (pa.types.is_binary_view, "binary"),
]


def spark_type(t: pa.DataType, reading: SparkReading = PARQUET):
    """The Spark SQL type JSON (a name such as ``"long"``, or a dict for nested types) Spark
    gives values of Arrow type ``t``, read as ``reading`` says.

    Raises:
        SchemaError: Spark has no type for ``t`` (time, duration, interval, decimals over 38
            digits, ``float16`` read by Parquet).
    """
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type, reading)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"Spark has no decimal wider than 38 digits ({t})")
        return f"decimal({t.precision},{t.scale})"
    for test, name in _SIMPLE:
        if test(t):
            return name
    if pa.types.is_float16(t) and reading.half_float:
        return "float"
    if pa.types.is_null(t) and reading.void:
        return "void"
    if pa.types.is_timestamp(t):
        if t.unit == "ns" and reading.nanos_as_long:
            return "long"
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_struct(t):
        return {
            "type": "struct",
            "fields": [_spark_field(t.field(i), {}, reading) for i in range(t.num_fields)],
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {
            "type": "array",
            "elementType": spark_type(t.value_type, reading),
            "containsNull": reading.always_nullable or t.value_field.nullable,
        }
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": spark_type(t.key_type, reading),
            "valueType": spark_type(t.item_type, reading),
            "valueContainsNull": reading.always_nullable or t.item_field.nullable,
        }
    raise SchemaError(
        f"Spark has no type for Arrow type {t}"
        + (f" read by {reading.name}" if pa.types.is_float16(t) or pa.types.is_null(t) else "")
    )


def _spark_field(f: pa.Field, metadata: dict, reading: SparkReading) -> dict:
    return {
        "name": f.name,
        "type": spark_type(f.type, reading),
        "nullable": reading.always_nullable or f.nullable,
        "metadata": metadata,
    }


def spark_schema_json(
    schema: pa.Schema, metadata: dict | None = None, reading: SparkReading = PARQUET
) -> str:
    """Spark's StructType JSON for ``schema``; ``metadata``: {field name: Spark metadata}.

    Raises:
        SchemaError: a field of a type Spark has none for (:func:`spark_type`).
    """
    metadata = metadata or {}
    return json.dumps(
        {
            "type": "struct",
            "fields": [_spark_field(f, metadata.get(f.name, {}), reading) for f in schema],
        },
        separators=(",", ":"),
        allow_nan=False,
    )


def arrow_field_metadata(spark_metadata: dict) -> dict:
    """The Arrow field metadata mirroring one field's Spark metadata."""
    return {
        k: v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"))
        for k, v in spark_metadata.items()
    }
