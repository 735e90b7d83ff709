"""The table schema an index is built and queried against.

The data schema is the union of the data files' Arrow schemas (``pyarrow.unify_schemas``,
permissive promotion), plus one field per partition column with a type inferred from the
directory values the way Spark does (integers, then doubles, then dates, else strings). It is
recorded with the index (the table identity at creation, and every build and refresh entry's
details) as base64 Arrow IPC, so predicates bind without reading a data file; the snapshot
carries the union of those records (:attr:`metaindex.store.Snapshot.recorded_schema`).
"""

from __future__ import annotations

import datetime
import re

import pyarrow as pa

from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr.resolve import matches, resolve
from metaindex.formats.parquet import INT96_TYPE, file_schema, int96_paths
from metaindex.store.tableschema import decode_schema, encode_schema, unify

__all__ = [
    "encode_schema",
    "decode_schema",
    "unify",
    "resolve_column",
    "has_column",
    "locate",
    "file_schema",
    "int96_paths",
    "INT96_TYPE",
    "infer_partition_types",
    "with_partitions",
    "partition_type",
    "convert_partition_value",
    "spark_partition_types",
    "partition_value",
    "PARTITION_TYPES",
    "record",
    "recorded",
]

PARTITION_TYPES = {
    "int64": pa.int64(),
    "double": pa.float64(),
    "date32": pa.date32(),
    "string": pa.string(),
}
_INT = re.compile(r"^[+-]?\d{1,18}$")
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def resolve_column(schema: pa.Schema, name: str, *, case_sensitive: bool = False):
    """``(canonical dotted path, field)`` of the column a user names to index (dotted paths
    into structs, backquotes). The exact name wins; otherwise a case-insensitive match, as
    Spark resolves names, unless ``case_sensitive``. A table whose columns differ only in case
    (``Id`` and ``id``) can index each of them by its exact name.

    Raises:
        SchemaError: no such column, or a name that matches several columns only
            case-insensitively (it says which).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a column name is a non-empty str, not {name!r}")
    exact = matches(schema, name, True)
    if len(exact) == 1 or case_sensitive:
        ref = exact[0] if len(exact) == 1 else resolve(schema, name, True)
        return ref.name, ref.field
    found = matches(schema, name, False)
    if len(found) > 1:
        raise SchemaError(
            f"column name {name!r} is ambiguous: the table has "
            f"{' and '.join(repr(r.name) for r in found)}, which differ only in "
            "case; name the one to index exactly"
        )
    ref = resolve(schema, name, False)
    return ref.name, ref.field


def has_column(schema: pa.Schema, name: str) -> bool:
    """Whether ``name`` designates at least one column (in any case)."""
    return bool(matches(schema, name, False))


def locate(schema: pa.Schema, path: str):
    """``(top-level name, [nested names], field)`` of a canonical path in a file's schema, or
    None when the file does not have the column (exact names first; a file written with other
    case is matched case-insensitively)."""
    for case_sensitive in (True, False):
        try:
            ref = resolve(schema, path, case_sensitive)
        except (SchemaError, ExpressionError):
            continue
        return ref.path[0], list(ref.path[1:]), ref.field
    return None


def _infer(values) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "string"
    if all(_INT.match(v) for v in present):
        return "int64"
    if all(_FLOAT.match(v) for v in present):
        return "double"
    if all(_DATE.match(v) for v in present):
        try:
            for v in present:
                datetime.date.fromisoformat(v)
            return "date32"
        except ValueError:
            pass
    return "string"


def infer_partition_types(listing) -> dict:
    """``{partition column: type name}`` (a key of :data:`PARTITION_TYPES`) from a listing."""
    values: dict = {c: set() for c in listing.partition_columns}
    for f in listing:
        for k, v in f.partition:
            values[k].add(v)
    return {c: _infer(vs) for c, vs in values.items()}


def spark_partition_types(listing) -> dict:
    """``{partition column: (type name, Arrow type)}`` as Spark types the columns when it
    reads the table: :func:`infer_partition_types`, with integers as ``int32`` when every value
    fits, as Spark's partition inference does (the index records them as ``int64``, which
    holds the same values)."""
    out = {}
    for column, name in infer_partition_types(listing).items():
        t = partition_type(name)
        if name == "int64":
            values = [
                int(v) for f in listing for k, v in f.partition if k == column and v is not None
            ]
            if all(-(2**31) <= v < 2**31 for v in values):
                t = pa.int32()
        out[column] = (name, t)
    return out


def partition_type(name: str) -> pa.DataType:
    try:
        return PARTITION_TYPES[name]
    except KeyError:
        raise SchemaError(
            f"unknown partition column type {name!r}; known: {sorted(PARTITION_TYPES)}"
        ) from None


def with_partitions(data_schema: pa.Schema, partition_types: dict) -> pa.Schema:
    """The data schema with partition columns (replacing a data column of the same name, as
    Spark does: the value in the path wins)."""
    fields = [f for f in data_schema if f.name not in partition_types]
    fields += [pa.field(c, partition_type(t)) for c, t in partition_types.items()]
    return pa.schema(fields)


def convert_partition_value(value: str | None, type_name: str):
    """A partition directory value as a Python value of its inferred type (ValueError if it
    does not parse)."""
    if value is None:
        return None
    if type_name == "int64":
        if not _INT.match(value):
            raise ValueError(value)
        return int(value)
    if type_name == "double":
        if not _FLOAT.match(value):
            raise ValueError(value)
        return float(value) + 0.0  # -0.0 -> 0.0, as value lists store floats
    if type_name == "date32":
        return datetime.date.fromisoformat(value)
    return value


def partition_value(value: str | None, t: pa.DataType):
    """A partition directory value as a Python value of the Arrow type its column has (a
    :data:`PARTITION_TYPES` type, or ``int32`` from :func:`spark_partition_types`).

    Raises:
        ValueError: the value does not parse as that type.
    """
    name = (
        "int64"
        if pa.types.is_integer(t)
        else "double"
        if pa.types.is_floating(t)
        else "date32"
        if pa.types.is_date(t)
        else "string"
    )
    return convert_partition_value(value, name)


def record(data_schema: pa.Schema, partitions: dict) -> dict:
    """The JSON attributes that record a table schema (identity extra / entry details)."""
    return {"schema": encode_schema(data_schema), "partitions": dict(partitions)}


def recorded(snapshot) -> tuple:
    """``(data schema, {partition column: type name})`` as of ``snapshot``
    (:attr:`metaindex.store.Snapshot.recorded_schema`), partition types checked.

    Raises:
        SchemaError: no schema recorded, or a partition type this version does not know.
    """
    data_schema, partitions = snapshot.recorded_schema
    for column, type_name in partitions.items():
        if type_name not in PARTITION_TYPES:
            raise SchemaError(
                f"partition column {column!r} has unknown recorded type "
                f"{type_name!r}; known: {sorted(PARTITION_TYPES)}"
            )
    return data_schema, partitions


def type_drift(snapshot, unconverted=None) -> dict:
    """Per index definition (keyed by its metadata column, ``IndexDef.storage_name``), what the
    column's drift (:mod:`metaindex.drift`) means for it, or None where nothing drifted:
    ``{"table_type", "notes" (the recorded :class:`~metaindex.drift.Drift`, as JSON),
    "effect" (one line), "unconverted_files" (files whose values did not convert exactly to
    the table's type: unindexed for the column, always kept), "file_types" ({their type:
    count})}``.

    Args:
        snapshot: the :class:`metaindex.store.Snapshot`.
        unconverted: the snapshot's ``obj_type_drift`` column (strings or nulls, one per
            indexed file); None when it cannot be read (no key): the counts are then None.
    """
    import json

    from metaindex.drift import drift_of
    from metaindex.errors import ExpressionError

    data_schema, _ = recorded(snapshot)
    counts: dict = {}
    for text in unconverted or ():
        if text is None:
            continue
        try:
            found = json.loads(text)
        except ValueError:
            continue
        for column, file_type in found.items() if isinstance(found, dict) else ():
            per = counts.setdefault(column, {})
            per[str(file_type)] = per.get(str(file_type), 0) + 1
    out: dict[str, dict | None] = {}
    for d in snapshot.index_defs:
        try:
            _, fld = resolve_column(data_schema, d.cols[0], case_sensitive=True)
        except (SchemaError, ExpressionError):
            out[d.storage_name] = None
            continue
        notes = drift_of(fld)
        per = counts.get(d.storage_name, {})
        effect = [notes.describe()] if notes else []
        legacy = _kind_note(d, fld.type)
        if legacy:
            effect.append(legacy)
        if not effect and not per:
            out[d.storage_name] = None
            continue
        out[d.storage_name] = {
            "table_type": str(fld.type),
            "notes": notes.to_json(),
            "effect": "; ".join(effect) or None,
            "unconverted_files": None if unconverted is None else sum(per.values()),
            "file_types": None if unconverted is None else per,
        }
    return out


def _kind_note(d, column_type: pa.DataType) -> str | None:
    """What the index's kind says it cannot do on a column of ``column_type``
    (``Index.type_note``: a scheme-1 bloom filter on a type whose widths hashed apart)."""
    from metaindex.store.summary import index_for

    ix = index_for(d)
    return None if ix is None else ix.type_note(column_type)
