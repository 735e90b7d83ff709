"""The table schema a store records, and how the records of a log add up.

Builds and refreshes record the data schema they saw (base64 Arrow IPC) and the partition
columns' type names (``{"schema": ..., "partitions": {...}}``): the table identity at creation,
and each build / refresh entry's details. A state (:class:`metaindex.store.log.State`) keeps the
records of its log in order and a snapshot merges them (:func:`merge_records`: the union of the
schemas, permissive promotion; a later partition type wins), so that a refresh rebased past a
concurrent one does not hide the columns the other one saw. Checkpoints store the merged
record, so nothing depends on entries that vacuum deletes.
"""

from __future__ import annotations

import base64

import pyarrow as pa

from metaindex.errors import SchemaError

__all__ = ["encode_schema", "decode_schema", "unify", "schema_record", "merge_records",
           "SCHEMA_DETAILS"]

SCHEMA_DETAILS = ("schema", "partitions")
"""The keys of a schema record in an entry's details (kept in clear in an encrypted store:
column names and types, no data file name or value)."""


def encode_schema(schema: pa.Schema) -> str:
    """A schema as base64 Arrow IPC text."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str) -> pa.Schema:
    """:func:`encode_schema` reversed.

    Raises:
        SchemaError: the text is not an encoded schema.
    """
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (ValueError, TypeError, pa.ArrowException) as exc:
        raise SchemaError(f"the recorded table schema cannot be read: {exc}") from None


def unify(schemas) -> pa.Schema:
    """The union of data file schemas (dictionary types by their value type).

    Raises:
        SchemaError: two schemas with incompatible types for one column.
    """
    schemas = [pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type)
                          else f for f in s]) for s in schemas]
    if not schemas:
        return pa.schema([])
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"the data files have incompatible schemas: {exc}") from None


def schema_record(source: dict) -> dict | None:
    """The schema record held by a table identity's extra or an entry's details (None: none)."""
    if not isinstance(source, dict) or "schema" not in source:
        return None
    partitions = source.get("partitions") or {}
    return {"schema": source["schema"],
            "partitions": dict(partitions) if isinstance(partitions, dict) else partitions}


def merge_records(records) -> tuple:
    """``(data schema, {partition column: type name})`` of schema records, oldest first.

    Raises:
        SchemaError: a record that cannot be read, or records with incompatible types.
    """
    schema, partitions = None, {}
    for record in records:
        found = record.get("partitions") or {}
        if not isinstance(found, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
            raise SchemaError(f"bad recorded partition columns {found!r}")
        own = decode_schema(record["schema"])
        schema = own if schema is None else unify([own, schema])
        partitions = {**partitions, **found}
    if schema is None:
        raise SchemaError("the index records no table schema (not built by "
                          "metaindex.MetaIndex); drop and rebuild it")
    return schema, partitions
