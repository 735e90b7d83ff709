"""Parquet schemas and their Arrow types.

Leaf (primitive) columns: `leaf_for_arrow` decides how an Arrow type is stored (physical type,
type length, logical and converted type) the way pyarrow stores it, so files we write read back as
the same Arrow types in pyarrow and Spark; `arrow_for_leaf` is the inverse used by the reader.

A file's whole schema (`FileSchema`): the footer's flattened schema elements as trees of top-level
columns (`schema_tree`, struct / list / map at any depth, legacy list and map layouts), each
column's leaves as the page layer sees them (`Column`), the Arrow schema pyarrow stores under
``ARROW:schema``, and the Arrow schema the file reads as (`arrow_schema_of`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa

from metaindex.errors import DecodeError, EncodeError, SchemaError, UnsupportedFeatureError
from metaindex.parquet import format as fmt
from metaindex.parquet.format import ARROW_SCHEMA_KEY
from metaindex.parquet.pages import ColumnSpec
from metaindex.parquet.shred import LevelNode, leaf_specs

__all__ = [
    "Leaf",
    "leaf_for_arrow",
    "arrow_for_leaf",
    "decimal_byte_width",
    "schema_tree",
    "Column",
    "FileSchema",
    "arrow_schema_of",
]

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)

# ConvertedType ids (parquet.thrift)
_UTF8, _ENUM, _DECIMAL, _DATE = 0, 4, 5, 6
_JSON, _BSON = 19, 20
_TIME_MILLIS, _TIME_MICROS, _TIMESTAMP_MILLIS, _TIMESTAMP_MICROS = 7, 8, 9, 10
_UINT = {8: 11, 16: 12, 32: 13, 64: 14}
_INT = {8: 15, 16: 16, 32: 17, 64: 18}
_MAP, _MAP_KEY_VALUE, _LIST = 1, 2, 3
_MAX_SCHEMA_DEPTH = 200


@dataclass(frozen=True)
class Leaf:
    """How one primitive column is stored."""

    physical_type: int
    type_length: int = 0
    logical_type: fmt.LogicalType | None = None
    converted_type: int | None = None
    scale: int | None = None
    precision: int | None = None


def decimal_byte_width(precision: int) -> int:
    """Smallest FIXED_LEN_BYTE_ARRAY width holding a signed decimal of ``precision`` digits."""
    width = 1
    while 10**precision > 2 ** (8 * width - 1):
        width += 1
    return width


def _unit(unit: str):
    if unit == "ms":
        return fmt.TimeUnit(MILLIS=fmt.MilliSeconds())
    if unit == "us":
        return fmt.TimeUnit(MICROS=fmt.MicroSeconds())
    return fmt.TimeUnit(NANOS=fmt.NanoSeconds())


def leaf_for_arrow(t: pa.DataType) -> Leaf:
    """The Parquet storage of a primitive Arrow type (as pyarrow writes it)."""
    if pa.types.is_dictionary(t):
        t = t.value_type  # dictionary arrays are stored as their values (dictionary pages)
    extension = getattr(t, "extension_name", None)
    if extension == "arrow.uuid":
        return Leaf(FIXED_LEN_BYTE_ARRAY, 16, fmt.LogicalType(UUID=fmt.UUIDType()))
    if extension == "arrow.json":
        return Leaf(
            BYTE_ARRAY, logical_type=fmt.LogicalType(JSON=fmt.JsonType()), converted_type=_JSON
        )
    if extension is not None:  # other extension types are stored as their storage type
        return leaf_for_arrow(t.storage_type)
    if pa.types.is_null(t):
        return Leaf(INT32, logical_type=fmt.LogicalType(UNKNOWN=fmt.NullType()))
    if pa.types.is_boolean(t):
        return Leaf(BOOLEAN)
    if pa.types.is_integer(t):
        bits, signed = t.bit_width, pa.types.is_signed_integer(t)
        physical = INT64 if bits == 64 else INT32
        logical = fmt.LogicalType(INTEGER=fmt.IntType(bitWidth=bits, isSigned=signed))
        converted: int | None = (_INT if signed else _UINT)[bits]
        if bits == 32 and signed:
            return Leaf(INT32)
        if bits == 64 and signed:
            return Leaf(INT64)
        return Leaf(physical, logical_type=logical, converted_type=converted)
    if pa.types.is_float16(t):
        return Leaf(FIXED_LEN_BYTE_ARRAY, 2, fmt.LogicalType(FLOAT16=fmt.Float16Type()))
    if pa.types.is_float32(t):
        return Leaf(FLOAT)
    if pa.types.is_float64(t):
        return Leaf(DOUBLE)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return Leaf(
            BYTE_ARRAY, logical_type=fmt.LogicalType(STRING=fmt.StringType()), converted_type=_UTF8
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return Leaf(BYTE_ARRAY)
    if pa.types.is_fixed_size_binary(t):
        return Leaf(FIXED_LEN_BYTE_ARRAY, t.byte_width)
    if pa.types.is_date32(t):
        return Leaf(INT32, logical_type=fmt.LogicalType(DATE=fmt.DateType()), converted_type=_DATE)
    if pa.types.is_timestamp(t):
        if t.unit == "s":
            raise UnsupportedFeatureError("timestamp[s] has no Parquet unit; cast to timestamp[ms]")
        logical = fmt.LogicalType(
            TIMESTAMP=fmt.TimestampType(isAdjustedToUTC=t.tz is not None, unit=_unit(t.unit))
        )
        converted = (
            {"ms": _TIMESTAMP_MILLIS, "us": _TIMESTAMP_MICROS}.get(t.unit)
            if t.tz is not None
            else None
        )
        return Leaf(INT64, logical_type=logical, converted_type=converted)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        if t.unit == "s":
            raise UnsupportedFeatureError("time32[s] has no Parquet unit; cast to time32[ms]")
        logical = fmt.LogicalType(TIME=fmt.TimeType(isAdjustedToUTC=False, unit=_unit(t.unit)))
        converted = {"ms": _TIME_MILLIS, "us": _TIME_MICROS}.get(t.unit)
        return Leaf(
            INT32 if t.unit == "ms" else INT64, logical_type=logical, converted_type=converted
        )
    if pa.types.is_decimal(t):
        logical = fmt.LogicalType(DECIMAL=fmt.DecimalType(scale=t.scale, precision=t.precision))
        return Leaf(
            FIXED_LEN_BYTE_ARRAY,
            decimal_byte_width(t.precision),
            logical,
            _DECIMAL,
            t.scale,
            t.precision,
        )
    raise SchemaError(f"no Parquet storage for Arrow type {t} in a leaf column")


def arrow_for_leaf(element) -> pa.DataType:
    """The Arrow type of a primitive Parquet schema element (a fmt.SchemaElement).

    Raises:
        DecodeError: a physical type, type length or logical type a valid file cannot hold
            (unknown type, INT(9), DECIMAL(0, 5), TIMESTAMP on a BYTE_ARRAY, FLBA of length 0...).
    """
    name = element.name
    physical = element.type
    if physical not in range(8):
        raise DecodeError(f"column {name!r}: unknown physical type {physical}")
    if physical == FIXED_LEN_BYTE_ARRAY and not (element.type_length or 0) > 0:
        raise DecodeError(
            f"column {name!r}: FIXED_LEN_BYTE_ARRAY needs a positive type_length, "
            f"not {element.type_length}"
        )
    try:
        t = _arrow_for_leaf(element)
    except (KeyError, ValueError, TypeError, AttributeError, pa.ArrowException) as exc:
        raise DecodeError(f"column {name!r}: invalid logical type ({exc})") from None
    if not _fits(t, physical, element.type_length or 0):
        raise DecodeError(
            f"column {name!r}: Arrow type {t} (from its logical type) cannot be "
            f"stored as physical type {physical}"
        )
    return t


def _fits(t: pa.DataType, physical: int, type_length: int) -> bool:
    """Whether values of ``physical`` type can hold the logical type ``t`` (as writers store it)."""
    if pa.types.is_decimal(t):
        if physical == INT32:
            return t.precision <= 9
        if physical == INT64:
            return t.precision <= 18
        if physical == FIXED_LEN_BYTE_ARRAY:
            return decimal_byte_width(t.precision) <= type_length <= t.byte_width
        return physical == BYTE_ARRAY
    if pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_time(t):
        return physical == (INT64 if t.bit_width == 64 else INT32)
    if pa.types.is_timestamp(t):
        return physical in (INT64, INT96)
    if pa.types.is_float16(t):
        return physical == FIXED_LEN_BYTE_ARRAY and type_length == 2
    if pa.types.is_fixed_size_binary(t):
        return physical == FIXED_LEN_BYTE_ARRAY and type_length == t.byte_width
    extension = getattr(t, "extension_name", None)
    if extension is not None:
        return _fits(t.storage_type, physical, type_length)
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return physical == BYTE_ARRAY
    if pa.types.is_null(t):
        return True
    return True  # plain physical types map to themselves


def _arrow_for_leaf(element) -> pa.DataType:
    physical, logical, conv = element.type, element.logicalType, element.converted_type
    if logical is not None:
        if logical.STRING is not None or logical.ENUM is not None:
            return pa.string()
        if logical.JSON is not None:
            return pa.json_() if hasattr(pa, "json_") else pa.string()
        if logical.BSON is not None:
            return pa.binary()
        if logical.INTEGER is not None:
            it = logical.INTEGER
            return {
                (8, True): pa.int8(),
                (16, True): pa.int16(),
                (32, True): pa.int32(),
                (64, True): pa.int64(),
                (8, False): pa.uint8(),
                (16, False): pa.uint16(),
                (32, False): pa.uint32(),
                (64, False): pa.uint64(),
            }[(it.bitWidth, bool(it.isSigned))]
        if logical.DATE is not None:
            return pa.date32()
        if logical.TIMESTAMP is not None:
            ts = logical.TIMESTAMP
            return pa.timestamp(_unit_name(ts.unit), tz="UTC" if ts.isAdjustedToUTC else None)
        if logical.TIME is not None:
            unit = _unit_name(logical.TIME.unit)
            return pa.time32(unit) if unit == "ms" else pa.time64(unit)
        if logical.DECIMAL is not None:
            d = logical.DECIMAL
            return _decimal(d.precision, d.scale)
        if logical.FLOAT16 is not None:
            return pa.float16()
        if logical.UUID is not None:
            return pa.uuid() if hasattr(pa, "uuid") else pa.binary(16)
        if logical.UNKNOWN is not None:
            return pa.null()
    if conv is not None:
        if conv in (_UTF8, _ENUM):
            return pa.string()
        if conv == _JSON:
            return pa.json_() if hasattr(pa, "json_") else pa.string()
        if conv == _DECIMAL:
            return _decimal(element.precision, element.scale or 0)
        if conv == _DATE:
            return pa.date32()
        if conv in (_TIMESTAMP_MILLIS, _TIMESTAMP_MICROS):
            return pa.timestamp("ms" if conv == _TIMESTAMP_MILLIS else "us", tz="UTC")
        if conv in (_TIME_MILLIS, _TIME_MICROS):
            return pa.time32("ms") if conv == _TIME_MILLIS else pa.time64("us")
        for bits, cid in _INT.items():
            if conv == cid:
                return getattr(pa, f"int{bits}")()
        for bits, cid in _UINT.items():
            if conv == cid:
                return getattr(pa, f"uint{bits}")()
    return {
        BOOLEAN: pa.bool_(),
        INT32: pa.int32(),
        INT64: pa.int64(),
        INT96: pa.timestamp("ns"),
        FLOAT: pa.float32(),
        DOUBLE: pa.float64(),
        BYTE_ARRAY: pa.binary(),
    }.get(physical) or pa.binary(element.type_length or 0)


def _decimal(precision, scale) -> pa.DataType:
    if precision is None or not 0 < precision <= 76 or scale is None or not 0 <= scale <= precision:
        raise ValueError(f"DECIMAL({precision}, {scale}) is out of range")
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def _unit_name(unit) -> str:
    if unit is None:
        raise ValueError("time unit missing")
    if unit.MILLIS is not None:
        return "ms"
    if unit.MICROS is not None:
        return "us"
    return "ns"


# ---------------------------------------------------------------------------- file schemas


def schema_tree(schema: list, max_depth: int | None = None) -> list[LevelNode]:
    """The top-level columns of a flattened Parquet schema as LevelNode trees.

    ``max_depth``: the deepest schema accepted, the root counting as one level (pyarrow's
    ``schema_depth_limit``); None: 200.
    """
    limit = _MAX_SCHEMA_DEPTH if max_depth is None else max_depth - 1
    if not schema:
        raise DecodeError("footer has an empty schema")
    pos = 1

    def node(depth: int) -> LevelNode:
        nonlocal pos
        if pos >= len(schema):
            raise DecodeError("schema ends inside a group (num_children too large)")
        if depth > limit:
            raise DecodeError(
                f"Parquet schema too deeply nested (deeper than {limit + 1} "
                "levels, the root included)"
            )
        e = schema[pos]
        pos += 1
        try:
            e.name.encode("utf-8")
        except UnicodeEncodeError:
            raise DecodeError(f"schema element {pos - 1} has a name that is not UTF-8") from None
        rep = e.repetition_type if e.repetition_type is not None else 0
        if rep not in (0, 1, 2):
            raise UnsupportedFeatureError(f"column {e.name!r}: repetition {rep} is not supported")
        if not e.num_children:
            if e.type is None:
                raise DecodeError(f"leaf column {e.name!r} has no physical type")
            return LevelNode(e.name, rep, "leaf", (), arrow_for_leaf(e))
        if e.num_children < 0:
            raise DecodeError(f"group {e.name!r} has a negative child count")
        children = tuple(node(depth + 1) for _ in range(e.num_children))
        logical = e.logicalType
        if e.converted_type == _LIST or (logical is not None and logical.LIST is not None):
            kind = "list"
        elif (
            e.converted_type == _MAP
            or (logical is not None and logical.MAP is not None)
            or (e.converted_type == _MAP_KEY_VALUE and rep != 2)
        ):
            # parquet-java's legacy format also marks the inner repeated key_value group
            # MAP_KEY_VALUE: that one is the map's entries, not a second map
            kind = "map"
        else:
            kind = "group"
        try:
            return LevelNode(e.name, rep, kind, children)
        except SchemaError as exc:
            raise DecodeError(f"invalid schema at {e.name!r}: {exc}") from exc

    root = schema[0]
    count = root.num_children or 0
    if count < 0:
        raise DecodeError("schema root has a negative child count")
    tops = [node(1) for _ in range(count)]
    if pos != len(schema):
        raise DecodeError(f"schema has {len(schema) - pos} elements after its last column")
    return tops


class Column:
    """A top-level column: its tree, its leaves' specs and schema elements, its Arrow field."""

    def __init__(self, node: LevelNode, first_leaf: int, elements: list):
        self.node = node
        self.specs = []
        self.elements = []
        self.leaf_types = []
        for i, spec in enumerate(leaf_specs(node)):
            self.leaf_types.append(spec.node.arrow_type)
            e = elements[first_leaf + i]
            self.specs.append(
                ColumnSpec(spec.path, e.type, e.type_length or 0, spec.max_def, spec.max_rep)
            )
            self.elements.append(e)
        self.first_leaf = first_leaf
        self.field = node.to_arrow_field()


class FileSchema:
    """A footer's schema as a read sees it.

    Attributes:
        columns: the top-level :class:`Column` s, in file order.
        leaf_elements: the schema elements of the leaf columns, in file order.
        key_value_metadata: the footer's key/value metadata as a dict.
        stored: the Arrow schema stored under ``ARROW:schema`` (None: absent or unreadable).

    Raises:
        DecodeError: a schema a valid file cannot have (see :func:`schema_tree`).
    """

    def __init__(self, footer: fmt.FileMetaData, max_depth: int | None = None):
        tops = schema_tree(footer.schema, max_depth)
        self.leaf_elements = [e for e in footer.schema[1:] if not e.num_children]
        self.columns = []
        first = 0
        for node in tops:
            column = Column(node, first, self.leaf_elements)
            self.columns.append(column)
            first += len(column.specs)
        self.key_value_metadata = {kv.key: kv.value for kv in footer.key_value_metadata or []}
        self.stored = _stored_arrow_schema(self.key_value_metadata.get(ARROW_SCHEMA_KEY))
        self._stored_fields = {} if self.stored is None else {f.name: f for f in self.stored}

    @classmethod
    def of(cls, footer: fmt.FileMetaData, max_depth: int | None = None) -> FileSchema:
        """``FileSchema(footer, max_depth)``, shared by the footers whose schema elements and
        key/value metadata are the same (the files of a table mostly are): a footer's schema
        is keyed by its elements' Thrift bytes, which cost a few microseconds where building
        the trees and Arrow fields costs a hundred. A FileSchema is never changed after it is
        made, so the readers of those files may share it.

        Raises:
            DecodeError: as :class:`FileSchema` (an invalid schema is never kept).
        """
        try:
            key = (
                max_depth,
                tuple([e.to_bytes() for e in footer.schema or ()]),
                tuple([(kv.key, kv.value) for kv in footer.key_value_metadata or ()]),
            )
        except (EncodeError, TypeError):  # not encodable as decoded: made, not kept
            return cls(footer, max_depth)
        made = _FILE_SCHEMAS.get(key)
        if made is None:
            made = cls(footer, max_depth)
            if len(_FILE_SCHEMAS) >= _FILE_SCHEMAS_KEPT:
                del _FILE_SCHEMAS[next(iter(_FILE_SCHEMAS))]  # the oldest
            _FILE_SCHEMAS[key] = made
        return made

    def field(self, column: Column) -> pa.Field:
        """The column's Arrow field: the stored one where there is one, else from its types."""
        stored = self._stored_fields.get(column.node.name)
        return stored if stored is not None else column.field

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema the file reads as without read options: its fields, and the
        stored schema's metadata (else the footer's key/value metadata)."""
        fields = [self.field(c) for c in self.columns]
        meta = self.stored.metadata if self.stored is not None else None
        if meta is None:
            meta = {
                k.encode("utf-8", "surrogateescape"): (v or "").encode("utf-8", "surrogateescape")
                for k, v in self.key_value_metadata.items()
                if k != ARROW_SCHEMA_KEY
            }
        return pa.schema(fields, metadata=meta or None)


_FILE_SCHEMAS: dict = {}
"""The :class:`FileSchema` s :meth:`FileSchema.of` made, by footer schema (oldest first)."""

_FILE_SCHEMAS_KEPT = 64


@lru_cache(maxsize=64)
def _stored_arrow_schema(value) -> pa.Schema | None:
    """The Arrow schema pyarrow (and we) store under ``ARROW:schema``, if readable (decoded
    once per distinct entry: the files of a table mostly carry the same one)."""
    if not value:
        return None
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(value)))
        schema.names, str(schema)  # names and types must decode too  # noqa: B018
        return schema
    except Exception:  # a foreign or damaged entry: fall back to the Parquet types
        return None


def arrow_schema_of(footer: fmt.FileMetaData) -> pa.Schema:
    """The Arrow schema a file with this footer reads as (its stored ``ARROW:schema`` types
    where present)."""
    return FileSchema(footer).arrow_schema()
