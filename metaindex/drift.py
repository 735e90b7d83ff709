"""Types that drift: one table type per column from files that disagree, and exact conversion.

A column's files may store it in different types (int32 from one writer, int64 from another;
float then double after a schema change; timestamps in milliseconds and microseconds). The
table records one type per column, the **join** of the files' types (:func:`join_fields`), in
which every file's values are compared (specs/metadata-store.md, "Types that drift"):

* integers: the narrowest integer holding both ranges (signed with unsigned: the next wider
  signed type; with uint64: ``decimal(20, 0)``); with a decimal: the decimal holding both;
* floats: float64 (float32 with 8/16-bit integers stays float32: exact); integers of 32 bits
  with floats: float64 (exact); 64-bit integers or decimals with floats: float64, *lossy*;
* decimals: the integer digits and the scale of the wider, if that fits 38 digits, else
  float64 (*lossy*);
* timestamps: the finer unit; a date with a timestamp: the timestamp; time zone or not: the
  first one's, and the column is marked *tz* (engines read the two kinds differently);
* strings and binaries: binary if either is, large if either is;
* structs: field by field (by name); lists: by value type;
* anything else: the first type, the other marked a *conflict*.

The notes (:class:`Drift`) travel with the table schema as field metadata (key
:data:`DRIFT_KEY`, JSON) and tell the index kinds what they may not trust: a *conflict* or
*tz* column is not pruned by value comparisons; a *lossy* column's bloom filters are not used
(equal values may have been hashed from different roundings); *wrap* = 8 or 16 says that Spark
may read a file's INT32 values wrapped into a byte / short (it does, when another file made the
column TINYINT / SMALLINT), so a file whose values leave that range is kept.

Every value an index records is converted into the table's type exactly or not at all
(:func:`conform_array`): an entry with one value that does not convert exactly (overflow,
rounding, a lost digit or unit, invalid UTF-8) becomes null, which pruning always keeps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import SchemaError

__all__ = [
    "DRIFT_KEY",
    "Drift",
    "drift_of",
    "join_fields",
    "join_types",
    "common_type",
    "conform",
    "conform_array",
    "spark_int_width",
]

DRIFT_KEY = b"metaindex.drift"
"""Field metadata key of a column's :class:`Drift` notes (JSON) in the recorded schema."""

_MAX_DECIMAL = 38  # Spark's largest decimal precision


@dataclass(frozen=True)
class Drift:
    """What a column's table type cannot promise about its files.

    Attributes:
        lossy: file types whose values do not always convert exactly into the table type.
        conflict: file types that do not convert into it at all.
        wrap: 8 / 16 when Spark may read the column as TINYINT / SMALLINT and wrap the INT32
            values of another file (0: it cannot).
        tz: timestamps with and without a time zone (or dates with zoned timestamps) mixed.
    """

    lossy: tuple = ()
    conflict: tuple = ()
    wrap: int = 0
    tz: bool = False

    def __bool__(self) -> bool:
        return bool(self.lossy or self.conflict or self.wrap or self.tz)

    def __or__(self, other: Drift) -> Drift:
        wraps = [w for w in (self.wrap, other.wrap) if w]
        return Drift(
            tuple(sorted({*self.lossy, *other.lossy})),
            tuple(sorted({*self.conflict, *other.conflict})),
            min(wraps) if wraps else 0,
            self.tz or other.tz,
        )

    @property
    def values_unreliable(self) -> bool:
        """Value comparisons cannot be trusted for any file (a conflict, or zones mixed)."""
        return bool(self.conflict or self.tz)

    def to_json(self) -> dict:
        out: dict = {}
        if self.lossy:
            out["lossy"] = list(self.lossy)
        if self.conflict:
            out["conflict"] = list(self.conflict)
        if self.wrap:
            out["wrap"] = self.wrap
        if self.tz:
            out["tz"] = True
        return out

    @classmethod
    def from_json(cls, data) -> Drift:
        """The notes of :meth:`to_json` (unknown keys ignored; a malformed record is treated
        as a conflict, which keeps every file).
        """
        if not isinstance(data, dict):
            return cls(conflict=("unreadable drift record",))
        try:
            wrap = int(data.get("wrap", 0))
            return cls(
                tuple(str(t) for t in data.get("lossy", ())),
                tuple(str(t) for t in data.get("conflict", ())),
                wrap if wrap in (0, 8, 16) else 8,
                bool(data.get("tz", False)),
            )
        except (TypeError, ValueError):
            return cls(conflict=("unreadable drift record",))

    def describe(self) -> str:
        """One line for ``describe()``."""
        parts = []
        if self.conflict:
            parts.append(
                f"files of type {', '.join(self.conflict)} do not convert to the "
                "table's type: value comparisons keep every file"
            )
        if self.tz:
            parts.append(
                "timestamps with and without a time zone are mixed: value "
                "comparisons keep every file"
            )
        if self.lossy:
            parts.append(
                f"values of type {', '.join(self.lossy)} may not convert exactly: "
                "their entries are kept where they do not, bloom filters are not used"
            )
        if self.wrap:
            parts.append(
                f"Spark may read INT32 values as {self.wrap}-bit integers "
                "(wrapped): files with values beyond that range are kept, bloom "
                "filters are not used"
            )
        return "; ".join(parts)


def drift_of(field: pa.Field) -> Drift:
    """The :class:`Drift` notes recorded on a table schema field (empty when none)."""
    raw = (field.metadata or {}).get(DRIFT_KEY)
    if raw is None:
        return Drift()
    try:
        return Drift.from_json(json.loads(raw))
    except ValueError:
        return Drift(conflict=("unreadable drift record",))


def _with_drift(field: pa.Field, drift: Drift) -> pa.Field:
    meta = {k: v for k, v in (field.metadata or {}).items() if k != DRIFT_KEY}
    if drift:
        meta[DRIFT_KEY] = json.dumps(drift.to_json(), sort_keys=True).encode()
    return field.with_metadata(meta) if meta else field.remove_metadata()


# ------------------------------------------------------------------------------ the join

_INT_DIGITS = {
    (8, True): 3,
    (16, True): 5,
    (32, True): 10,
    (64, True): 19,
    (8, False): 3,
    (16, False): 5,
    (32, False): 10,
    (64, False): 20,
}


def spark_int_width(t: pa.DataType) -> int:
    """The width of the integer type Spark reads an Arrow integer column as (8: TINYINT,
    16: SMALLINT, 32: INT, 64: BIGINT, 128: DECIMAL(20, 0) for uint64); 0 for others."""
    if not pa.types.is_integer(t):
        return 0
    if pa.types.is_signed_integer(t):
        return t.bit_width
    return t.bit_width * 2


def _plain(t: pa.DataType) -> pa.DataType:
    """Dictionary types by their value type; views and float16 by their plain forms."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_date64(t):
        return pa.date32()
    return t


def _is_text(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _join_ints(a: pa.DataType, b: pa.DataType) -> tuple:
    sa, sb = pa.types.is_signed_integer(a), pa.types.is_signed_integer(b)
    drift = Drift()
    narrow = [w for w in (spark_int_width(a), spark_int_width(b)) if w in (8, 16)]
    if narrow and spark_int_width(a) != spark_int_width(b):
        drift = Drift(wrap=min(narrow))
    if sa == sb:
        return (a if a.bit_width >= b.bit_width else b), drift
    s, u = (a, b) if sa else (b, a)
    if u.bit_width == 64:
        return pa.decimal128(20, 0), drift
    return pa.type_for_alias(f"int{max(s.bit_width, 2 * u.bit_width)}"), drift


def _digits(t: pa.DataType) -> tuple:
    """(integer digits, scale) of an integer or decimal type."""
    if pa.types.is_integer(t):
        return _INT_DIGITS[t.bit_width, pa.types.is_signed_integer(t)], 0
    return t.precision - t.scale, t.scale


def _join_decimals(a: pa.DataType, b: pa.DataType) -> tuple:
    (ia, sa), (ib, sb) = _digits(a), _digits(b)
    digits, scale = max(ia, ib), max(sa, sb)
    drift = Drift()
    for t in (a, b):
        if pa.types.is_integer(t) and spark_int_width(t) in (8, 16):
            drift = Drift(wrap=spark_int_width(t))  # Spark may read the decimals as it
    if digits + scale <= _MAX_DECIMAL:
        return pa.decimal128(digits + scale, scale), drift
    return pa.float64(), drift | Drift(lossy=tuple(sorted({str(a), str(b)})))


def _join_numbers(a: pa.DataType, b: pa.DataType) -> tuple:
    """Two numeric types, at least one a float."""
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return (pa.float64() if pa.float64() in (a, b) else pa.float32()), Drift()
    f, other = (a, b) if pa.types.is_floating(a) else (b, a)
    if pa.types.is_decimal(other):
        return pa.float64(), Drift(lossy=(str(other),))
    bits = other.bit_width
    if bits <= 16 and f == pa.float32():
        return pa.float32(), Drift()
    if bits <= 32:
        return pa.float64(), Drift()
    return pa.float64(), Drift(lossy=(str(other),))


def _join_temporal(a: pa.DataType, b: pa.DataType) -> tuple:
    if pa.types.is_date(a) and pa.types.is_date(b):
        return pa.date32(), Drift()
    if pa.types.is_date(a) or pa.types.is_date(b):
        ts = b if pa.types.is_date(a) else a
        return ts, Drift(tz=ts.tz is not None)
    units = ("s", "ms", "us", "ns")
    unit = units[max(units.index(a.unit), units.index(b.unit))]
    if (a.tz is None) != (b.tz is None):
        return pa.timestamp(unit, a.tz), Drift(tz=True)
    return pa.timestamp(unit, a.tz), Drift()


def _join_text(a: pa.DataType, b: pa.DataType) -> tuple:
    binary = not all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in (a, b))
    large = any(pa.types.is_large_string(t) or pa.types.is_large_binary(t) for t in (a, b))
    if binary:
        return (pa.large_binary() if large else pa.binary()), Drift()
    return (pa.large_string() if large else pa.string()), Drift()


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def join_types(a: pa.DataType, b: pa.DataType) -> tuple:
    """``(type, Drift)``: the type of a column holding values of ``a`` and of ``b`` (``a``
    first: it wins a conflict and gives the time zone), and what it cannot promise. Nested
    notes are on the struct's child fields."""
    a, b = _plain(a), _plain(b)
    if a.equals(b):
        if pa.types.is_struct(a):  # the children's notes
            return _join_structs(a, b), Drift()
        return a, Drift()
    if pa.types.is_null(b):
        return a, Drift()
    if pa.types.is_null(a):
        return b, Drift()
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return _join_structs(a, b), Drift()
    lists = (pa.types.is_list, pa.types.is_large_list)
    for is_list in lists:
        if is_list(a) and is_list(b):
            inner = join_fields(a.value_field, b.value_field)
            return (
                pa.list_(inner) if is_list is pa.types.is_list else pa.large_list(inner)
            ), Drift()
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return _join_ints(a, b)
    if _is_number(a) and _is_number(b):
        if pa.types.is_floating(a) or pa.types.is_floating(b):
            return _join_numbers(a, b)
        return _join_decimals(a, b)
    if _is_temporal(a) and _is_temporal(b):
        return _join_temporal(a, b)
    if _is_text(a) and _is_text(b):
        return _join_text(a, b)
    return a, Drift(conflict=(str(b),))


def _join_structs(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    fields = {a.field(i).name: a.field(i) for i in range(a.num_fields)}
    for i in range(b.num_fields):
        f = b.field(i)
        fields[f.name] = join_fields(fields[f.name], f) if f.name in fields else f
    return pa.struct(list(fields.values()))


def join_fields(a: pa.Field, b: pa.Field) -> pa.Field:
    """The field of the table type for a column whose files have fields ``a`` and ``b``
    (``a`` first: the table's so far), its :class:`Drift` notes (both fields' and the join's)
    in its metadata."""
    t, drift = join_types(a.type, b.type)
    out = pa.field(a.name, t, nullable=a.nullable or b.nullable, metadata=a.metadata)
    return _with_drift(out, drift_of(a) | drift_of(b) | drift)


def common_type(name: str, types) -> pa.DataType:
    """One type for a metadata column that parts hold in ``types`` (joined in order).

    Raises:
        SchemaError: two of them do not convert into one type.
    """
    types = list(types)
    out = types[0] if types else pa.null()
    for t in types[1:]:
        out, drift = join_types(out, t)
        if drift.conflict:
            raise SchemaError(
                f"column {name!r} has incompatible types in parts: {sorted(map(str, types))}"
            )
    return out


# ------------------------------------------------------------------------------ conversion


def conform_array(values, t: pa.DataType):
    """``values`` (Array or ChunkedArray) as type ``t``, each entry converted exactly or
    replaced by null: an entry is null when one of its leaf values (a struct's fields, a
    list's items) does not convert to ``t`` without changing (overflow, rounding, lost digits
    or units, invalid UTF-8). Same kind of result as given."""
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([conform(c, t)[0] for c in values.chunks], t)
    return conform(values, t)[0]


def conform(arr: pa.Array, t: pa.DataType) -> tuple:
    """``(array of type t, numpy bool: entries nulled because they did not convert)``."""
    if arr.type.equals(t):
        return arr, np.zeros(len(arr), np.bool_)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), t), np.zeros(len(arr), np.bool_)
    if pa.types.is_struct(t) and pa.types.is_struct(arr.type):
        return _conform_struct(arr, t)
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (
        pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)
    ):
        return _conform_list(arr, t)
    out, bad = _exact(arr, t)
    if bad.any():
        out = pc.if_else(pa.array(bad), pa.nulls(len(out), t), out)
    return out, bad


def _conform_struct(arr: pa.StructArray, t: pa.StructType) -> tuple:
    bad = np.zeros(len(arr), np.bool_)
    children = []
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    for i in range(t.num_fields):
        f = t.field(i)
        if f.name in names:
            child, failed = conform(arr.field(f.name), f.type)
            bad |= failed
        else:
            child = pa.nulls(len(arr), f.type)
        children.append(child)
    invalid = ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    mask = pa.array(invalid | bad)
    out = pa.StructArray.from_arrays(
        children, fields=[t.field(i) for i in range(t.num_fields)], mask=mask
    )
    return out, bad & ~invalid


def _conform_list(arr: pa.Array, t: pa.DataType) -> tuple:
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    values = arr.values.slice(start, int(offsets[-1]) - start if len(offsets) else 0)
    inner, failed = conform(values, t.value_type)
    bad = np.zeros(len(arr), np.bool_)
    if failed.any():  # the ranges of null lists included, as in ``values``
        parents = np.asarray(pc.list_parent_indices(arr).to_numpy(zero_copy_only=False), np.int64)
        bad[parents[failed]] = True
    offsets = offsets - start
    invalid = ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    make = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    kind = np.int64 if pa.types.is_large_list(t) else np.int32
    out = make.from_arrays(
        pa.array(offsets.astype(kind)), inner, type=t, mask=pa.array(invalid | bad)
    )
    return out, bad & ~invalid


def _cast_or_null(arr: pa.Array, t: pa.DataType) -> tuple:
    """A safe cast, with the entries that make it fail (found by halving) as nulls."""
    try:
        return arr.cast(t, safe=True), np.zeros(len(arr), np.bool_)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        if len(arr) == 1:
            return pa.nulls(1, t), np.ones(1, np.bool_)
    half = len(arr) // 2
    left, lbad = _cast_or_null(arr.slice(0, half), t)
    right, rbad = _cast_or_null(arr.slice(half), t)
    return pa.concat_arrays([left, right]), np.concatenate([lbad, rbad])


def _exact(arr: pa.Array, t: pa.DataType) -> tuple:
    """A flat array as ``t``: (converted, bool mask of the entries that do not convert
    exactly, null in the result)."""
    s = arr.type
    if pa.types.is_integer(s) and pa.types.is_decimal(t):
        need = _INT_DIGITS[s.bit_width, pa.types.is_signed_integer(s)]
        if t.precision - t.scale < need:  # Arrow wants room for any value of s: go wider
            arr = arr.cast(pa.decimal128(need, 0))
    if pa.types.is_timestamp(s) and pa.types.is_timestamp(t) and (s.tz is None) != (t.tz is None):
        arr = arr.cast(pa.timestamp(s.unit, t.tz))  # the stored instants, as Spark reads them
    if not (
        _is_number(arr.type) == _is_number(t)
        and _is_temporal(arr.type) == _is_temporal(t)
        and _is_text(arr.type) == _is_text(t)
    ) or (pa.types.is_boolean(arr.type) != pa.types.is_boolean(t)):
        return pa.nulls(len(arr), t), np.asarray(
            arr.is_valid().to_numpy(zero_copy_only=False), np.bool_
        )
    out, bad = _cast_or_null(arr, t)
    if pa.types.is_floating(t) and pa.types.is_floating(s) and t.bit_width < s.bit_width:
        bad |= _differs(out.cast(s), arr)  # float64 -> float32 rounds without complaint
    elif pa.types.is_floating(t) != pa.types.is_floating(s) and (
        pa.types.is_decimal(s) or pa.types.is_decimal(t)
    ):
        bad |= _inexact_decimal_float(arr, out)
    if bad.any():
        out = pc.if_else(pa.array(bad), pa.nulls(len(out), t), out)
    return out, bad


def _differs(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Per entry: both non-null and different (NaN equal to NaN)."""
    eq = pc.equal(a, b)
    if pa.types.is_floating(a.type):
        eq = pc.or_(eq, pc.and_(pc.is_nan(a), pc.is_nan(b)))
    return np.asarray(pc.invert(eq).fill_null(False).to_numpy(zero_copy_only=False), np.bool_)


def _inexact_decimal_float(source: pa.Array, out: pa.Array) -> np.ndarray:
    """Per entry of a decimal <-> float conversion: is the result not the same number?"""
    bad = np.zeros(len(source), np.bool_)
    for i, (x, y) in enumerate(zip(source.to_pylist(), out.to_pylist(), strict=True)):
        if x is None or y is None:
            continue
        if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            bad[i] = True
            continue
        bad[i] = Decimal(x) != Decimal(y)
    return bad
