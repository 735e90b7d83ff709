"""A Delta table's schema: its JSON form (PROTOCOL.md, "Schema Serialization Format") as an
Arrow schema by logical column name, the column mapping between logical and physical names
and field ids ("Column Mapping"), recorded type changes ("Type Widening"), and partition values
typed from their string form ("Partition Value Serialization").

Types map as Spark reads them: ``byte``/``short``/``integer``/``long`` to int8..int64,
``float``/``double``, ``boolean``, ``string``, ``binary``, ``date`` to date32, ``timestamp`` to
``timestamp[us, tz=UTC]``, ``timestamp_ntz`` to ``timestamp[us]``, ``decimal(p,s)`` to
decimal128, ``void`` to null, ``variant`` to ``struct<value: binary, metadata: binary>``
(field metadata ``delta.type: variant``), arrays, maps and structs recursively. Every field
keeps its Delta metadata as Arrow field metadata (JSON-encoded values); under column mapping a
field also carries ``PARQUET:field_id`` (its ``delta.columnMapping.id``), which is how pyarrow
and our reader name a Parquet field id.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import pyarrow as pa

__all__ = [
    "ColumnMapping",
    "TypeChange",
    "SchemaFormatError",
    "parse_schema_string",
    "to_arrow_schema",
    "column_mapping",
    "type_changes",
    "is_supported_widening",
    "field_types",
    "partition_value",
    "PHYSICAL_NAME",
    "FIELD_ID",
    "PARQUET_FIELD_ID",
]

PHYSICAL_NAME = "delta.columnMapping.physicalName"
FIELD_ID = "delta.columnMapping.id"
PARQUET_FIELD_ID = b"PARQUET:field_id"
_TYPE_CHANGES = "delta.typeChanges"

_PRIMITIVES = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}
_INT_RANGES = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|[+-]\d{2}:?\d{2})?$"
)


class SchemaFormatError(ValueError):
    """A schema or partition value that does not follow the protocol (the caller turns it
    into a :class:`metaindex.errors.DeltaLogDamageError` naming the log file)."""


def _decimal(name: str) -> tuple | None:
    m = _DECIMAL.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _arrow_type(delta_type) -> pa.DataType:
    if isinstance(delta_type, str):
        if delta_type in _PRIMITIVES:
            return _PRIMITIVES[delta_type]
        if delta_type == "variant":
            return pa.struct(
                [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
            )
        if (ps := _decimal(delta_type)) is not None:
            precision, scale = ps
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise SchemaFormatError(f"decimal({precision},{scale}) is out of range")
            return pa.decimal128(precision, scale)
        raise SchemaFormatError(f"unknown type {delta_type!r}")
    if not isinstance(delta_type, dict):
        raise SchemaFormatError(f"a type is a name or an object, not {delta_type!r}")
    kind = delta_type.get("type")
    if kind == "struct":
        return pa.struct([_arrow_field(f) for f in _fields(delta_type)])
    if kind == "array":
        element = _arrow_type(_required(delta_type, "elementType"))
        return pa.list_(pa.field("element", element, bool(delta_type.get("containsNull", True))))
    if kind == "map":
        key = _arrow_type(_required(delta_type, "keyType"))
        value = _arrow_type(_required(delta_type, "valueType"))
        return pa.map_(
            pa.field("key", key, False),
            pa.field("value", value, bool(delta_type.get("valueContainsNull", True))),
        )
    raise SchemaFormatError(f"unknown type {kind!r}")


def _required(obj: dict, key: str):
    if key not in obj:
        raise SchemaFormatError(f"{obj.get('type')!r} type without {key!r}")
    return obj[key]


def _fields(struct: dict) -> list:
    fields = struct.get("fields")
    if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
        raise SchemaFormatError("a struct's 'fields' must be a list of objects")
    for f in fields:
        if not isinstance(f.get("name"), str) or "type" not in f:
            raise SchemaFormatError(f"a struct field needs a string 'name' and a 'type': {f!r}")
        if not isinstance(f.get("metadata", {}), dict):
            raise SchemaFormatError(f"field {f['name']!r}: 'metadata' must be an object")
    return fields


def _arrow_field(f: dict) -> pa.Field:
    meta = {
        k.encode(): json.dumps(v).encode() if not isinstance(v, str) else v.encode()
        for k, v in f.get("metadata", {}).items()
    }
    if FIELD_ID in f.get("metadata", {}):
        meta[PARQUET_FIELD_ID] = str(f["metadata"][FIELD_ID]).encode()
    if f["type"] == "variant":
        meta[b"delta.type"] = b"variant"
    return pa.field(
        f["name"], _arrow_type(f["type"]), bool(f.get("nullable", True)), metadata=meta or None
    )


MAX_SCHEMA_DEPTH = 64
"""Schemas nested deeper are refused (the walks over them are recursive)."""


def parse_schema_string(schema_string: str) -> dict:
    """A ``schemaString`` parsed and checked to be a struct no deeper than
    :data:`MAX_SCHEMA_DEPTH`."""
    try:
        schema = json.loads(schema_string)
    except (TypeError, ValueError, RecursionError) as exc:
        raise SchemaFormatError(f"schemaString is not JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise SchemaFormatError("schemaString must be a JSON struct type")
    _fields(schema)
    stack = [(schema, 0)]
    while stack:  # iterative: the depth check must not itself recurse
        value, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaFormatError(f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        children = (
            value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        )
        stack.extend((child, depth + 1) for child in children)
    return schema


def to_arrow_schema(schema: dict) -> pa.Schema:
    """The Arrow schema (logical names) of a parsed Delta schema (a ``struct`` object).

    Raises:
        SchemaFormatError: a type the protocol does not define, or one Arrow cannot hold
            (e.g. a map keyed by ``void``).
    """
    try:
        return pa.schema([_arrow_field(f) for f in _fields(schema)])
    except SchemaFormatError:
        raise
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise SchemaFormatError(f"the schema cannot be represented: {exc}") from None


@dataclass(frozen=True)
class ColumnMapping:
    """How logical columns map to the columns in the data files.

    Attributes:
        mode: ``"none"``, ``"name"`` or ``"id"`` (``delta.columnMapping.mode``, honoured only
            when the protocol supports column mapping).
        physical: logical field path -> physical field path, for every field (nested ones
            too: a path goes through ``element``, ``key`` and ``value`` for arrays and maps,
            as PROTOCOL.md's "Field Path"). Under mode ``none`` every path maps to itself.
        ids: logical field path -> field id (``delta.columnMapping.id``), for the fields that
            have one (every field under ``id`` and ``name`` modes).
    """

    mode: str
    physical: dict
    ids: dict

    def physical_name(self, column: str) -> str:
        """The physical name of a top-level column (the name its data files and partition
        values use)."""
        return self.physical[(column,)][0]

    def logical_by_physical(self) -> dict:
        """Physical top-level name -> logical name."""
        return {p[0]: path[0] for path, p in self.physical.items() if len(path) == 1}


def column_mapping(schema: dict, mode: str) -> ColumnMapping:
    """The column mapping of a parsed schema under ``mode`` (``none``, ``name`` or ``id``).

    Raises:
        SchemaFormatError: under ``name`` or ``id`` mode, a field without a physical name or
            id, or two fields with the same id.
    """
    physical: dict = {}
    ids: dict = {}

    def walk(delta_type, logical: tuple, phys: tuple) -> None:
        if isinstance(delta_type, dict):
            kind = delta_type.get("type")
            if kind == "struct":
                for f in _fields(delta_type):
                    meta = f.get("metadata", {})
                    name = f["name"]
                    if mode != "none":
                        name = meta.get(PHYSICAL_NAME)
                        if not isinstance(name, str) or not name:
                            raise SchemaFormatError(
                                f"column mapping mode {mode!r}: field "
                                f"{'.'.join(logical + (f['name'],))!r} "
                                "has no physical name"
                            )
                        fid = meta.get(FIELD_ID)
                        if not isinstance(fid, int) or isinstance(fid, bool):
                            raise SchemaFormatError(
                                f"column mapping mode {mode!r}: field "
                                f"{'.'.join(logical + (f['name'],))!r} "
                                "has no integer id"
                            )
                        if fid in ids.values():
                            raise SchemaFormatError(f"column mapping id {fid} is used twice")
                        ids[logical + (f["name"],)] = fid
                    physical[logical + (f["name"],)] = phys + (name,)
                    walk(f["type"], logical + (f["name"],), phys + (name,))
            elif kind == "array":
                walk(delta_type.get("elementType"), logical + ("element",), phys + ("element",))
            elif kind == "map":
                walk(delta_type.get("keyType"), logical + ("key",), phys + ("key",))
                walk(delta_type.get("valueType"), logical + ("value",), phys + ("value",))

    if mode not in ("none", "name", "id"):
        raise SchemaFormatError(f"unknown column mapping mode {mode!r}")
    walk(schema, (), ())
    return ColumnMapping(mode, physical, ids)


@dataclass(frozen=True)
class TypeChange:
    """One recorded type change (``delta.typeChanges``) of a field: from ``from_type`` to
    ``to_type`` (Delta type names), on ``path`` (logical field path, through ``element`` /
    ``key`` / ``value`` where the change was to an array element or map key/value)."""

    path: tuple
    from_type: str
    to_type: str


_WIDER_INT = {"byte": 0, "short": 1, "integer": 2, "long": 3}


def is_supported_widening(from_type: str, to_type: str) -> bool:
    """Whether Delta's type widening allows ``from_type`` -> ``to_type`` (PROTOCOL.md,
    "Type Widening"): each of these converts every value exactly."""
    if from_type in _WIDER_INT and to_type in _WIDER_INT:
        return _WIDER_INT[from_type] < _WIDER_INT[to_type]
    if from_type == "float" and to_type == "double":
        return True
    if from_type in ("byte", "short", "integer") and to_type == "double":
        return True
    if from_type == "date" and to_type == "timestamp_ntz":
        return True
    to_dec = _decimal(to_type)
    if to_dec is None:
        return False
    p2, s2 = to_dec
    from_dec = _decimal(from_type)
    if from_dec is not None:
        p1, s1 = from_dec
        return p2 - p1 >= s2 - s1 >= 0 and (p2, s2) != (p1, s1)
    base = {"byte": 10, "short": 10, "integer": 10, "long": 20}.get(from_type)
    return base is not None and p2 - base >= s2 >= 0


def type_changes(schema: dict) -> list:
    """Every recorded type change of the schema, in the order recorded per field.

    Raises:
        SchemaFormatError: a ``delta.typeChanges`` value that is not a list of
            ``{fromType, toType[, fieldPath]}`` objects.
    """
    out: list = []

    def walk(delta_type, logical: tuple) -> None:
        if not isinstance(delta_type, dict):
            return
        kind = delta_type.get("type")
        if kind == "struct":
            for f in _fields(delta_type):
                path = logical + (f["name"],)
                changes = f.get("metadata", {}).get(_TYPE_CHANGES)
                if isinstance(changes, str):  # some writers store the JSON list as a string
                    try:
                        changes = json.loads(changes)
                    except (ValueError, RecursionError):
                        raise SchemaFormatError(f"{path}: {_TYPE_CHANGES} is not JSON") from None
                for change in changes or ():
                    if (
                        not isinstance(change, dict)
                        or not isinstance(change.get("fromType"), str)
                        or not isinstance(change.get("toType"), str)
                    ):
                        raise SchemaFormatError(
                            f"{'.'.join(path)}: malformed {_TYPE_CHANGES} entry {change!r}"
                        )
                    sub = change.get("fieldPath")
                    where = path + tuple(sub.split(".")) if isinstance(sub, str) and sub else path
                    out.append(TypeChange(where, change["fromType"], change["toType"]))
                walk(f["type"], path)
        elif kind == "array":
            walk(delta_type.get("elementType"), logical + ("element",))
        elif kind == "map":
            walk(delta_type.get("keyType"), logical + ("key",))
            walk(delta_type.get("valueType"), logical + ("value",))

    walk(schema, ())
    return out


def field_types(schema: dict) -> dict:
    """Top-level logical column name -> its Delta type (name or object)."""
    return {f["name"]: f["type"] for f in _fields(schema)}


def partition_value(raw, delta_type):
    """A partition value from its serialised string: None (JSON null or empty string) or the
    value Spark reads: int, float, bool, str, bytes, :class:`decimal.Decimal`,
    :class:`datetime.date`, or :class:`datetime.datetime` — timezone-aware UTC for a
    ``timestamp`` written in ISO 8601 with an offset, naive for ``timestamp_ntz`` and for a
    ``timestamp`` written without one (PROTOCOL.md: then in the writer's time zone).

    Raises:
        SchemaFormatError: a value that does not parse as its type, or a type that cannot
            be a partition column.
    """
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise SchemaFormatError(f"partition value {raw!r} is not a string")
    try:
        return _typed(raw, delta_type)
    except (ValueError, InvalidOperation, OverflowError) as exc:
        if isinstance(exc, SchemaFormatError):
            raise
        raise SchemaFormatError(f"partition value {raw!r} is not a {delta_type}") from None


def _typed(raw: str, delta_type):
    if delta_type == "string":
        return raw
    if delta_type in _INT_RANGES:
        if not re.fullmatch(r"[+-]?\d+", raw.strip()):
            raise ValueError(raw)
        value = int(raw)
        bits = _INT_RANGES[delta_type]
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise SchemaFormatError(f"partition value {raw!r} is out of the {delta_type} range")
        return value
    if delta_type in ("float", "double"):
        return float(raw)
    if delta_type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise ValueError(raw)
        return raw.lower() == "true"
    if delta_type == "binary":
        return raw.encode("utf-8", "surrogateescape")
    if delta_type == "date":
        m = _DATE.match(raw.strip())
        if not m:
            raise ValueError(raw)
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if delta_type in ("timestamp", "timestamp_ntz"):
        m = _TIMESTAMP.match(raw.strip())
        if not m:
            raise ValueError(raw)
        y, mo, d, h, mi, s, frac, zone = m.groups()
        micros = int((frac or "").ljust(6, "0")[:6])
        stamp = dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micros)
        if zone and delta_type == "timestamp":
            offset = (
                dt.timedelta(0)
                if zone == "Z"
                else dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:]))
                * (1 if zone[0] == "+" else -1)
            )
            stamp = (stamp - offset).replace(tzinfo=dt.timezone.utc)
        return stamp
    if isinstance(delta_type, str) and _decimal(delta_type) is not None:
        number = Decimal(raw.strip())
        if not number.is_finite():
            raise ValueError(raw)
        return number
    raise SchemaFormatError(f"type {delta_type!r} cannot be a partition column")
