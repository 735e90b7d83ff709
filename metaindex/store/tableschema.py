"""The table schema a store records, and how the records of a log add up.

Builds and refreshes record the data schema they saw (base64 Arrow IPC) and the partition
columns' type names (``{"schema": ..., "partitions": {...}}``): the table identity at creation,
and each build / refresh entry's details. A state (:class:`metaindex.store.log.State`) keeps the
records of its log in order and a snapshot merges them (:func:`merge_records`: the union of the
schemas, oldest first, each column's types joined as :func:`unify` does; a later partition
type wins), so that a refresh rebased past a
concurrent one does not hide the columns the other one saw. Checkpoints store the merged
record, so nothing depends on entries that vacuum deletes.
"""

from __future__ import annotations

import base64

import pyarrow as pa

from metaindex.drift import DRIFT_KEY, join_fields
from metaindex.errors import SchemaError

__all__ = [
    "encode_schema",
    "decode_schema",
    "unify",
    "schema_record",
    "merge_records",
    "latest_table_state",
    "SCHEMA_DETAILS",
]

SCHEMA_DETAILS = ("schema", "partitions", "table_state")
"""The keys of a schema record in an entry's details (kept in clear in an encrypted store:
column names and types, and the table format's position such as a Delta version; no data file
name or value)."""


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
    """The table schema of data file schemas: each column's type the join of its files'
    types (:func:`metaindex.drift.join_fields`: integers widen, float32 and float64 give
    float64, decimals keep every digit, timestamps the finer unit, ...), in the order the
    columns first appear, what the join cannot promise recorded on the field
    (:data:`metaindex.drift.DRIFT_KEY`). Files that disagree never make it fail: a type
    that does not convert is a *conflict* noted on the column, whose first type stays.
    """
    fields: dict = {}
    metadata = None
    seen: list = []
    for schema in schemas:
        if metadata is None:
            metadata = schema.metadata
        if any(schema.equals(s, check_metadata=True) for s in seen):
            continue  # a record seen already adds nothing (most of a log's records)
        seen.append(schema)
        for f in schema:
            known = fields.get(f.name)
            if known is None:
                fields[f.name] = f if _plain_leaf(f) else join_fields(f, f)
            elif not (
                _plain_leaf(f) and known.type.equals(f.type) and DRIFT_KEY not in (f.metadata or {})
            ):
                fields[f.name] = join_fields(known, f)
    return pa.schema(list(fields.values()), metadata=metadata)


def _plain_leaf(f: pa.Field) -> bool:
    """A field the join would leave as it is when it meets itself: not nested, and of a type
    the join does not normalise (dictionary, view, float16, date64)."""
    t = f.type
    return not (
        pa.types.is_nested(t)
        or pa.types.is_dictionary(t)
        or pa.types.is_float16(t)
        or pa.types.is_date64(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary_view(t)
    )


def schema_record(source: dict) -> dict | None:
    """The schema record held by a table identity's extra or an entry's details (None: none)."""
    if not isinstance(source, dict) or "schema" not in source:
        return None
    partitions = source.get("partitions") or {}
    out = {
        "schema": source["schema"],
        "partitions": dict(partitions) if isinstance(partitions, dict) else partitions,
    }
    if isinstance(source.get("table_state"), dict) and source["table_state"]:
        out["table_state"] = dict(source["table_state"])
    return out


def latest_table_state(records) -> dict:
    """The table format's position (``Listing.state``, e.g. ``{"delta_version": 12}``) the
    newest build or refresh of ``records`` (oldest first) recorded; ``{}`` when none did (a
    directory table, or a store written before it was recorded)."""
    for record in reversed(tuple(records or ())):
        state = record.get("table_state") if isinstance(record, dict) else None
        if isinstance(state, dict):
            return dict(state)
    return {}


def merge_records(records) -> tuple:
    """``(data schema, {partition column: type name})`` of schema records, oldest first.

    Raises:
        SchemaError: a record that cannot be read (records whose types disagree are joined,
            the disagreement noted on the field: :func:`unify`).
    """
    schemas: list[pa.Schema] = []
    partitions: dict[str, str] = {}
    texts: set[str] = set()
    for record in records:
        found = record.get("partitions") or {}
        if not isinstance(found, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in found.items()
        ):
            raise SchemaError(f"bad recorded partition columns {found!r}")
        if record["schema"] not in texts:  # most records repeat the schema before them
            texts.add(record["schema"])
            schemas.append(decode_schema(record["schema"]))
        partitions = {**partitions, **found}
    if not schemas:
        raise SchemaError(
            "the index records no table schema (not built by "
            "metaindex.MetaIndex); drop and rebuild it"
        )
    return (schemas[0] if len(schemas) == 1 else unify(schemas)), partitions
