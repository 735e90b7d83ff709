"""The table schema an index is built and queried against.

The data schema is the union of the data files' Arrow schemas (``pyarrow.unify_schemas``,
permissive promotion), plus one field per partition column with a type inferred from the
directory values the way Spark does (integers, then doubles, then dates, else strings). It is
recorded with the index (the table identity at creation, and every build and refresh entry's
details) as base64 Arrow IPC, so predicates bind without reading a data file.
"""

from __future__ import annotations

import base64
import datetime
import re
from collections import OrderedDict

import pyarrow as pa

from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr.resolve import resolve

__all__ = ["encode_schema", "decode_schema", "unify", "resolve_column", "locate",
           "infer_partition_types", "with_partitions", "partition_type", "convert_partition_value",
           "PARTITION_TYPES"]

PARTITION_TYPES = {"int64": pa.int64(), "double": pa.float64(), "date32": pa.date32(),
                   "string": pa.string()}
_INT = re.compile(r"^[+-]?\d{1,18}$")
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def encode_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str) -> pa.Schema:
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (ValueError, pa.ArrowException) as exc:
        raise SchemaError(f"the recorded table schema cannot be read: {exc}") from None


def unify(schemas) -> pa.Schema:
    """The union of data file schemas (dictionary types by their value type)."""
    schemas = [pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type)
                          else f for f in s]) for s in schemas]
    if not schemas:
        return pa.schema([])
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"the data files have incompatible schemas: {exc}") from None


def resolve_column(schema: pa.Schema, name: str, *, case_sensitive: bool = False):
    """``(canonical dotted path, field)`` of a column, resolved like predicates resolve it
    (``metaindex.expr``: dotted paths into structs, backquotes, Spark's case rules).

    Raises:
        SchemaError: no such column, or an ambiguous name.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a column name is a non-empty str, not {name!r}")
    ref = resolve(schema, name, case_sensitive)
    return ref.name, ref.field


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


def partition_type(name: str) -> pa.DataType:
    try:
        return PARTITION_TYPES[name]
    except KeyError:
        raise SchemaError(f"unknown partition column type {name!r}; known: "
                          f"{sorted(PARTITION_TYPES)}") from None


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


_recorded: OrderedDict = OrderedDict()
_RECORDED_CACHE = 256


def record(data_schema: pa.Schema, partitions: dict) -> dict:
    """The JSON attributes that record a table schema (identity extra / entry details)."""
    return {"schema": encode_schema(data_schema), "partitions": dict(partitions)}


def _decode(source: dict, where: str) -> tuple:
    partitions = source.get("partitions") or {}
    if not isinstance(partitions, dict) or not all(
            isinstance(v, str) and v in PARTITION_TYPES for v in partitions.values()):
        raise SchemaError(f"{where}: bad recorded partition columns {partitions!r}")
    return decode_schema(source["schema"]), dict(partitions)


def _merge(newer: tuple, older: tuple) -> tuple:
    schema = unify([newer[0], older[0]])
    return schema, {**older[1], **newer[1]}


def recorded(storage, table_store, snapshot) -> tuple:
    """``(data schema, {partition column: type name})`` as of ``snapshot``.

    The union of what the table identity and every build / refresh entry up to the snapshot
    recorded (a refresh rebased past a concurrent one must not hide the columns the other one
    saw). Entries are read newest first until one whose result is already known; results are
    cached per (store directory, version, commit time), so each new version reads one entry.
    Entries removed by vacuum are skipped (their schema lives on in later entries).
    """
    from metaindex.store.log import read_entry

    where = table_store.path
    found = None
    pending = []  # (key, schema record) of entries read, newest first
    for version in range(snapshot.version, -1, -1):
        try:
            entry = read_entry(storage, where, version)
        except FileNotFoundError:
            break
        key = (where, entry.version, entry.timestamp)
        found = _recorded.get(key)
        if found is not None:
            break
        pending.append((key, _decode(entry.details, where) if "schema" in entry.details
                        else None))
    if found is None:
        if "schema" not in snapshot.table.extra:
            raise SchemaError(f"{where}: the index records no table schema (not built by "
                              "metaindex.MetaIndex); drop and rebuild it")
        found = _decode(snapshot.table.extra, where)
    for key, own in reversed(pending):  # oldest first, each on top of the ones before
        if own is not None:
            found = _merge(own, found)
        _recorded[key] = found
        _recorded.move_to_end(key)
    while len(_recorded) > _RECORDED_CACHE:
        _recorded.popitem(last=False)
    return found
