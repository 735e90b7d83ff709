"""Column statistics: computing them for the writer, and deciding whether a footer's can be trusted.

Write side: :func:`compute` turns a page's or a chunk's non-null values into a
``fmt.Statistics`` in the column's sort order (:func:`sort_order`), with the rules of
parquet.thrift's ``ColumnOrder`` for floats (NaN is never a bound, a zero min is written as
``-0.0`` and a zero max as ``+0.0``, all-NaN leaves no bounds, ``nan_count`` is always set) and
long BYTE_ARRAY bounds truncated the way parquet-java's ``BinaryTruncator`` does it.

Read side: :func:`decode` turns a footer's ``fmt.Statistics`` into a :class:`ChunkStatistics`
whose ``trusted`` flag says whether its min/max may be used to skip data without scanning. The
rules combine parquet.thrift, parquet-java's ``CorruptStatistics.shouldIgnoreStatistics`` and
Arrow's ``ApplicationVersion::HasCorrectStatistics``; wherever they leave doubt we do not trust.
"""

from __future__ import annotations

import enum
import math
import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

import numpy as np

from metaindex._native import stats as _kernel
from metaindex.parquet import format as fmt

__all__ = [
    "SortOrder",
    "SIGNED",
    "UNSIGNED",
    "UNKNOWN",
    "sort_order",
    "is_float16",
    "compute",
    "truncate_min",
    "truncate_max",
    "order_key",
    "ChunkStatistics",
    "decode",
    "decoder",
    "WriterVersion",
    "parse_created_by",
]

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)
_C = fmt.ConvertedType


class SortOrder(enum.IntEnum):
    """How a column's values are ordered for min/max (Arrow's numbering)."""

    SIGNED = 0
    UNSIGNED = 1
    UNKNOWN = 2


SIGNED, UNSIGNED, UNKNOWN = SortOrder.SIGNED, SortOrder.UNSIGNED, SortOrder.UNKNOWN

_UNSIGNED_CONVERTED = {
    _C.UTF8,
    _C.ENUM,
    _C.JSON,
    _C.BSON,
    _C.UINT_8,
    _C.UINT_16,
    _C.UINT_32,
    _C.UINT_64,
}
_SIGNED_CONVERTED = {
    _C.INT_8,
    _C.INT_16,
    _C.INT_32,
    _C.INT_64,
    _C.DATE,
    _C.TIME_MILLIS,
    _C.TIME_MICROS,
    _C.TIMESTAMP_MILLIS,
    _C.TIMESTAMP_MICROS,
    _C.DECIMAL,
}
_TEXT_CONVERTED = {_C.UTF8, _C.ENUM, _C.JSON}


def sort_order(element) -> SortOrder:
    """The sort order of a leaf column (a ``fmt.SchemaElement``).

    The logical type decides when there is one, else the converted type, else the physical
    type: unsigned integers and strings/binary/enum/json/bson/uuid sort UNSIGNED; signed
    integers, dates, times, timestamps, decimals, floats (FLOAT16 too) and booleans SIGNED;
    INT96, INTERVAL, and every other annotation (lists, maps, variants, geometry) UNKNOWN.
    """
    logical = getattr(element, "logicalType", None)
    ptype = element.type
    if ptype == INT96:
        return UNKNOWN
    if logical is not None and logical.which is not None:
        if logical.INTEGER is not None:
            return SIGNED if logical.INTEGER.isSigned else UNSIGNED
        if any(
            getattr(logical, name) is not None
            for name in ("STRING", "ENUM", "JSON", "BSON", "UUID")
        ):
            return UNSIGNED
        if any(
            getattr(logical, name) is not None
            for name in ("DECIMAL", "DATE", "TIME", "TIMESTAMP", "FLOAT16")
        ):
            return SIGNED
        return UNKNOWN
    conv = element.converted_type
    if conv is not None:
        if conv in _UNSIGNED_CONVERTED:
            return UNSIGNED
        if conv in _SIGNED_CONVERTED:
            return SIGNED
        return UNKNOWN
    if ptype in (BOOLEAN, INT32, INT64, FLOAT, DOUBLE):
        return SIGNED
    if ptype in (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY):
        return UNSIGNED
    return UNKNOWN


def is_float16(element) -> bool:
    """True for a FLOAT16 column (FIXED_LEN_BYTE_ARRAY(2) half floats)."""
    logical = getattr(element, "logicalType", None)
    return (
        element.type == FIXED_LEN_BYTE_ARRAY and logical is not None and logical.FLOAT16 is not None
    )


# ------------------------------------------------------------------------------ writing

_NEG_ZERO = {FLOAT: struct.pack("<f", -0.0), DOUBLE: struct.pack("<d", -0.0)}
_POS_ZERO = {FLOAT: struct.pack("<f", 0.0), DOUBLE: struct.pack("<d", 0.0)}


def _row(values, i: int, width: int) -> bytes:
    flat = (
        memoryview(values).cast("B")
        if not isinstance(values, np.ndarray)
        else np.ascontiguousarray(values).data.cast("B")
    )
    return bytes(flat[i * width : (i + 1) * width])


def _bounds(
    values,
    ptype: int,
    type_length: int,
    order: SortOrder,
    float16: bool,
    validity=None,
    validity_offset: int = 0,
):
    """PLAIN ``(min, max, nan_count)`` of non-null values (bounds None when there are none);
    with ``validity`` (BYTE_ARRAY only), of the valid slots of ``values``."""
    if ptype == BOOLEAN:
        rb = _kernel.minmax_bool(values)
        return (None, None, None) if rb is None else (bytes([rb[0]]), bytes([rb[1]]), None)
    if ptype in (INT32, INT64):
        unsigned = order == UNSIGNED
        r = (_kernel.minmax_int32 if ptype == INT32 else _kernel.minmax_int64)(values, unsigned)
        if r is None:
            return None, None, None
        code = ("<I" if unsigned else "<i") if ptype == INT32 else ("<Q" if unsigned else "<q")
        return struct.pack(code, r[0]), struct.pack(code, r[1]), None
    if ptype in (FLOAT, DOUBLE):
        flo, fhi, nans = (_kernel.minmax_float32 if ptype == FLOAT else _kernel.minmax_float64)(
            values
        )
        if flo is None or fhi is None:  # both or neither
            return None, None, nans
        code = "<f" if ptype == FLOAT else "<d"
        return (
            _NEG_ZERO[ptype] if flo == 0 else struct.pack(code, flo),
            _POS_ZERO[ptype] if fhi == 0 else struct.pack(code, fhi),
            nans,
        )
    if ptype == FIXED_LEN_BYTE_ARRAY and float16:
        lo, hi, nans = _kernel.minmax_float16(values)
        if lo is None or hi is None:  # both or neither
            return None, None, nans
        lo = 0x8000 if lo & 0x7FFF == 0 else lo
        hi = 0x0000 if hi & 0x7FFF == 0 else hi
        return struct.pack("<H", lo), struct.pack("<H", hi), nans
    if ptype == FIXED_LEN_BYTE_ARRAY:
        r = _kernel.minmax_fixed(values, type_length, order == SIGNED)
        if r is None:
            return None, None, None
        return _row(values, r[0], type_length), _row(values, r[1], type_length), None
    if ptype == BYTE_ARRAY:
        offsets, data = values
        r = _kernel.minmax_binary(offsets, data, order == SIGNED, validity, validity_offset)
        if r is None:
            return None, None, None
        flat = memoryview(data).cast("B") if not isinstance(data, np.ndarray) else data
        return (
            bytes(flat[int(offsets[r[0]]) : int(offsets[r[0] + 1])]),
            bytes(flat[int(offsets[r[1]]) : int(offsets[r[1] + 1])]),
            None,
        )
    raise TypeError(f"no statistics for physical type {ptype}")


def compute(
    values,
    ptype: int,
    type_length: int,
    sort_order: SortOrder,
    null_count: int,
    truncate_length: int | None = 64,
    *,
    float16: bool = False,
    validity=None,
    validity_offset: int = 0,
) -> fmt.Statistics:
    """Statistics of one page or column chunk, ready for the footer / page index.

    Args:
        values: the non-null values in the kernel conventions (see ``metaindex.parquet.values``).
        ptype: physical type code.
        type_length: bytes per FIXED_LEN_BYTE_ARRAY value (ignored for other types).
        sort_order: the column's order (:func:`sort_order`); UNKNOWN writes no bounds.
        null_count: nulls in the same page / chunk (always written, even 0).
        truncate_length: longest BYTE_ARRAY bound written in unsigned order; longer bounds are
            truncated (min) or truncated and rounded up (max) and marked inexact. None keeps
            them whole. Fixed-length and DECIMAL bounds are never truncated.
        float16: the column is FLOAT16 (FIXED_LEN_BYTE_ARRAY(2) halves).
        validity, validity_offset: BYTE_ARRAY only: ``values`` hold every slot of an Arrow
            column and this bitmap (from bit ``validity_offset``) says which are present.

    Returns:
        ``fmt.Statistics`` with ``min_value``/``max_value`` (PLAIN bytes, byte arrays without
        their length prefix), the exactness flags, ``null_count``, ``nan_count`` for float
        columns, and — for SIGNED orders only, as pyarrow does — the deprecated ``min``/``max``
        so older readers keep working.
    """
    if null_count is None or int(null_count) < 0:
        raise ValueError(f"null_count must be a non-negative int, got {null_count!r}")
    stats = fmt.Statistics(null_count=int(null_count))
    order = SortOrder(sort_order)
    if order == UNKNOWN or ptype == INT96:
        return stats
    if validity is not None and ptype != BYTE_ARRAY:
        raise TypeError("statistics over a validity bitmap are for BYTE_ARRAY values")
    lo, hi, nans = _bounds(values, ptype, type_length, order, float16, validity, validity_offset)
    if ptype in (FLOAT, DOUBLE) or float16:
        stats.nan_count = int(nans)
    if lo is None:
        return stats
    lo_exact = hi_exact = True
    if ptype == BYTE_ARRAY and order == UNSIGNED and truncate_length is not None:
        lo, lo_exact = truncate_min(lo, truncate_length)
        hi, hi_exact = truncate_max(hi, truncate_length)
    stats.min_value, stats.max_value = lo, hi
    stats.is_min_value_exact, stats.is_max_value_exact = lo_exact, hi_exact
    if order == SIGNED:
        stats.min, stats.max = lo, hi
    return stats


def _valid_utf8(raw: bytes | bytearray) -> bool:
    try:
        bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_prefix(raw: bytes, length: int) -> bytes | None:
    """The longest prefix of at most ``length`` bytes that is valid UTF-8 (None if empty)."""
    for end in range(length, 0, -1):
        if _valid_utf8(raw[:end]):
            return raw[:end]
    return None


def truncate_min(value: bytes, length: int) -> tuple[bytes, bool]:
    """A lower bound of at most ``length`` bytes for ``value``; returns ``(bound, exact)``.

    Valid UTF-8 is cut at a character boundary, anything else at ``length`` bytes. A value that
    cannot be cut (its first character is longer than ``length``) is kept whole and exact.
    """
    if length < 1:
        raise ValueError(f"truncate_length must be at least 1, got {length}")
    if len(value) <= length:
        return value, True
    cut = _utf8_prefix(value, length) if _valid_utf8(value) else value[:length]
    return (value, True) if cut is None else (cut, False)


def truncate_max(value: bytes, length: int) -> tuple[bytes, bool]:
    """An upper bound of at most ``length`` bytes for ``value``; returns ``(bound, exact)``.

    The cut prefix is rounded up: for UTF-8, the last byte that can be raised by one while the
    whole stays valid UTF-8 is raised (parquet-java's ``incrementUtf8``); otherwise the bytes
    are incremented with carry. When nothing can be raised (all 0xFF, or only the largest
    characters) the value is kept whole and exact, so it stays an upper bound.
    """
    if length < 1:
        raise ValueError(f"truncate_length must be at least 1, got {length}")
    if len(value) <= length:
        return value, True
    if _valid_utf8(value):
        cut = _utf8_prefix(value, length)
        bumped = None if cut is None else _increment_utf8(cut)
    else:
        bumped = _increment(value[:length])
    return (value, True) if bumped is None else (bumped, False)


def _increment(raw: bytes) -> bytes | None:
    out = bytearray(raw)
    for i in range(len(out) - 1, -1, -1):
        out[i] = (out[i] + 1) & 0xFF
        if out[i]:
            return bytes(out)
    return None


def _increment_utf8(raw: bytes) -> bytes | None:
    out = bytearray(raw)
    for i in range(len(out) - 1, -1, -1):
        prev = out[i]
        if prev < 0xFF:
            out[i] = prev + 1
            if _valid_utf8(out):
                return bytes(out)
        out[i] = prev
    return None


# ------------------------------------------------------------------------------ reading

_FIXED_SIZE = {BOOLEAN: 1, INT32: 4, INT64: 8, FLOAT: 4, DOUBLE: 8}


def order_key(
    raw: bytes,
    ptype: int,
    sort_order: SortOrder,
    *,
    float16: bool = False,
    type_length: int | None = None,
):
    """A Python value whose natural order is the column's order, from a PLAIN bound.

    Integers (signed or unsigned by ``sort_order``), floats (FLOAT16 too), bools, ``bytes`` for
    unsigned byte arrays, ints for signed (two's complement big-endian) byte arrays.

    Raises:
        ValueError: ``raw`` has the wrong size for the type, or the order is UNKNOWN.
    """
    order = SortOrder(sort_order)
    if order == UNKNOWN:
        raise ValueError("values of an UNKNOWN sort order cannot be compared")
    return _key_reader(ptype, order, float16, type_length)(bytes(raw))


def _key_reader(ptype: int, order: SortOrder, float16: bool, type_length):
    """:func:`order_key` of a column worked out once: a function of a bound's bytes (raising
    its ValueError) for an order other than UNKNOWN."""
    size = _FIXED_SIZE.get(ptype)
    if ptype == FIXED_LEN_BYTE_ARRAY:
        size = 2 if float16 else type_length
    signed = order == SIGNED

    def sized(raw: bytes) -> bytes:
        if size is not None and len(raw) != size:
            raise ValueError(f"a bound of {len(raw)} bytes for a {size}-byte type")
        return raw

    if ptype == BOOLEAN:

        def boolean(raw: bytes):
            raw = sized(raw)
            if raw[0] > 1:
                raise ValueError(f"boolean bound {raw[0]} is neither 0 nor 1")
            return bool(raw[0])

        return boolean
    if ptype in (INT32, INT64):
        return lambda raw: int.from_bytes(sized(raw), "little", signed=signed)
    if ptype == FLOAT:
        return lambda raw: struct.unpack("<f", sized(raw))[0]
    if ptype == DOUBLE:
        return lambda raw: struct.unpack("<d", sized(raw))[0]
    if float16:
        return lambda raw: struct.unpack("<e", sized(raw))[0]
    if ptype in (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY):
        if signed:
            return lambda raw: int.from_bytes(sized(raw), "big", signed=True)
        return sized

    def unordered(raw: bytes):
        sized(raw)
        raise ValueError(f"no order for physical type {ptype}")

    return unordered


@dataclass(frozen=True)
class ChunkStatistics:
    """A column chunk's statistics as Python values, with a verdict on the bounds.

    ``min`` and ``max`` are set only when ``trusted``: then every non-null, non-NaN value ``v``
    of the chunk satisfies ``min <= v <= max`` in the column's order. They are ints (dates,
    times and timestamps stay in their stored unit), floats (FLOAT16 too), bools, ``str`` for
    STRING/ENUM/JSON, ``Decimal`` for DECIMAL, ``bytes`` otherwise. Float bounds never say
    anything about NaN: unless ``nan_count == 0`` a chunk may hold NaNs outside them. Zero
    float bounds are widened (a ``+0.0`` min reads as ``-0.0``, a ``-0.0`` max as ``+0.0``).
    ``null_count`` / ``nan_count`` / ``distinct_count`` are None when the file does not say
    (never assume 0). ``is_min_exact`` / ``is_max_exact`` are None when the file does not say.
    """

    min: object = None
    max: object = None
    null_count: int | None = None
    nan_count: int | None = None
    distinct_count: int | None = None
    is_min_exact: bool | None = None
    is_max_exact: bool | None = None
    trusted: bool = False
    reason: str | None = None

    @property
    def exact(self) -> bool:
        """Both bounds are known to be values that occur in the chunk."""
        return self.trusted and self.is_min_exact is True and self.is_max_exact is True


@dataclass(frozen=True)
class WriterVersion:
    """The application and version parsed from a footer's ``created_by``."""

    application: str
    version: tuple[int, int, int]
    suffix: str = ""  # pre-release / build text after the numbers, e.g. "-cdh5.5.0", "-SNAPSHOT"

    def older_than(self, application: str, version: tuple[int, int, int]) -> bool:
        """True when this is ``application`` at a version before ``version``.

        A pre-release (``1.8.0-SNAPSHOT``) counts as older than its release.
        """
        if self.application != application:
            return False
        if self.version != version:
            return self.version < version
        return self.suffix.startswith("-")


_CREATED_BY = re.compile(
    r"^\s*(.+?)\s+version\s+v?(\d+)(?:\.(\d+))?(?:\.(\d+))?([^\s(]*)", re.IGNORECASE
)


def parse_created_by(created_by: str | None) -> WriterVersion | None:
    """Parse ``"<app> version <x.y.z>[suffix] (build <hash>)"``; None when it does not fit."""
    if not created_by or not isinstance(created_by, str):
        return None
    return _parse_created_by(created_by)


@lru_cache(maxsize=64)
def _parse_created_by(created_by: str) -> WriterVersion | None:
    """:func:`parse_created_by` of a non-empty string, parsed once per distinct string (the
    files of a table mostly name one writer; a :class:`WriterVersion` is immutable)."""
    m = _CREATED_BY.match(created_by)
    if m is None:
        return None
    major, minor, patch = (int(g) if g is not None else 0 for g in m.group(2, 3, 4))
    return WriterVersion(m.group(1).lower(), (major, minor, patch), m.group(5))


def _cdh_251_fixed(writer: WriterVersion) -> bool:
    """parquet-mr 1.5.0-cdh5.5.0 and later CDH 5 builds carry the PARQUET-251 fix."""
    m = re.fullmatch(r"-cdh(\d+)\.(\d+)\.(\d+).*", writer.suffix)
    return (
        writer.application == "parquet-mr"
        and writer.version == (1, 5, 0)
        and m is not None
        and tuple(int(g) for g in m.groups()) >= (5, 5, 0)
    )


def _binary_writer_problem(ptype: int, created_by, writer: WriterVersion | None) -> str | None:
    """Why BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY statistics of this writer may be corrupt."""
    if ptype not in (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY):
        return None
    if not created_by:
        return "created_by is missing: binary statistics may be corrupt (PARQUET-251, PARQUET-297)"
    if writer is None:
        if "parquet-mr" in str(created_by).lower():
            return f"cannot parse the parquet-mr version in {created_by!r} (PARQUET-251)"
        return None
    if writer.older_than("parquet-mr", (1, 8, 0)) and not _cdh_251_fixed(writer):
        return (
            f"written by {created_by!r}: binary statistics before parquet-mr 1.8.0 are "
            "corrupt (PARQUET-251)"
        )
    return None


def _legacy_problem(
    ptype: int, order: SortOrder, lo: bytes, hi: bytes, writer: WriterVersion | None
) -> str | None:
    """Why the deprecated ``min``/``max`` fields cannot be used for this column."""
    if lo == hi:
        return None  # one value: every total order agrees
    if order != SIGNED:
        return (
            f"deprecated min/max are in signed order but the column sorts {order.name} "
            "(PARQUET-686)"
        )
    if (
        ptype in (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY)
        and writer is not None
        and (
            writer.older_than("parquet-mr", (1, 10, 0))
            or writer.older_than("parquet-cpp", (1, 3, 0))
        )
    ):
        return (
            "deprecated binary min/max of parquet-mr < 1.10 / parquet-cpp < 1.3 compare "
            "bytes as signed chars (PARQUET-686)"
        )
    return None


def _value(raw: bytes, element, ptype: int, order: SortOrder, float16: bool):
    """A bound as the Python value of the column's type (ValueError when malformed)."""
    return _value_reader(element, ptype, order, float16)(raw)


def _value_reader(element, ptype: int, order: SortOrder, float16: bool):
    """:func:`_value` of a column worked out once: a function of a bound's bytes."""
    logical = getattr(element, "logicalType", None)
    key = _key_reader(ptype, order, float16, element.type_length)
    decimal = (
        logical is not None and logical.DECIMAL is not None
    ) or element.converted_type == _C.DECIMAL
    if decimal and ptype in (INT32, INT64, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY):
        scale = (
            logical.DECIMAL.scale
            if logical is not None and logical.DECIMAL is not None
            else (element.scale or 0)
        )

        def decimal_value(raw: bytes):
            k = key(raw)
            if ptype == BYTE_ARRAY and not raw:
                raise ValueError("an empty DECIMAL bound")
            unscaled = k if isinstance(k, int) else int.from_bytes(raw, "big", signed=True)
            return Decimal(f"{unscaled}E{-int(scale)}")

        return decimal_value
    if ptype == BYTE_ARRAY:
        text = (
            logical is not None
            and (logical.STRING is not None or logical.ENUM is not None or logical.JSON is not None)
        ) or element.converted_type in _TEXT_CONVERTED
        if text:

            def text_value(raw: bytes):
                key(raw)
                try:
                    return raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError("a string bound that is not valid UTF-8") from None

            return text_value
    return key


def _order_kind(column_order) -> str | None:
    if column_order is None:
        return None
    which = column_order.which
    return which if which is not None else "unknown"


def decode(stats, element, created_by: str | None, column_order) -> ChunkStatistics:
    """Read a column chunk's footer statistics and decide whether its bounds can be trusted.

    Args:
        stats: the chunk's ``fmt.Statistics`` (``ColumnMetaData.statistics``) or None.
        element: the leaf's ``fmt.SchemaElement``.
        created_by: ``FileMetaData.created_by`` (None when absent).
        column_order: the leaf's ``fmt.ColumnOrder`` from ``FileMetaData.column_orders``, or
            None when the file has none.

    Returns:
        A :class:`ChunkStatistics`. Bounds come from ``min_value``/``max_value`` under a
        TYPE_ORDER (or, for floats, IEEE_754_TOTAL_ORDER) column order, else from the
        deprecated ``min``/``max`` when the column sorts SIGNED (or min == max) and the writer
        is not known to get them wrong. Never trusted: UNKNOWN sort orders (INT96, INTERVAL...),
        an unrecognised column order, a NaN bound, bounds of the wrong size or not valid UTF-8,
        min > max, binary statistics of parquet-mr before 1.8.0 (PARQUET-251) or without
        ``created_by`` (PARQUET-297). Malformed statistics never raise: they are untrusted.
    """
    if stats is None:
        return ChunkStatistics(reason="no statistics")
    if not isinstance(stats, fmt.Statistics):
        raise TypeError(f"decode takes a fmt.Statistics (or None), not {type(stats).__name__}")
    return decoder(element, created_by, column_order)(stats)


def decoder(element, created_by: str | None, column_order):
    """:func:`decode` of one column of one writer: a function of the chunk's
    ``fmt.Statistics`` (or None) that returns what ``decode(stats, element, created_by,
    column_order)`` returns. What depends on the column and the writer only (sort order,
    column order, the writer's known bugs, how a bound's bytes read) is decided once, so a
    caller decoding many chunks of one schema and writer may keep it (``column_order`` counts
    only by ``column_order.which``)."""
    ptype = element.type
    float16 = is_float16(element)
    floating = ptype in (FLOAT, DOUBLE) or float16
    order = sort_order(element)
    kind = _order_kind(column_order)
    writer = parse_created_by(created_by)
    refused = None
    if order == UNKNOWN:
        refused = (
            "the column's sort order is undefined (INT96, INTERVAL or an "
            "annotation without an order)"
        )
    elif kind not in (None, "TYPE_ORDER") and not (kind == "IEEE_754_TOTAL_ORDER" and floating):
        refused = (
            f"column order {kind} is not supported for this column: its statistics must be ignored"
        )
    else:
        refused = _binary_writer_problem(ptype, created_by, writer)
    typed = kind is not None
    value = None if refused else _value_reader(element, ptype, order, float16)

    def count(v):
        return int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    def decode_one(stats) -> ChunkStatistics:
        if stats is None:
            return ChunkStatistics(reason="no statistics")
        if not isinstance(stats, fmt.Statistics):
            raise TypeError(f"decode takes a fmt.Statistics (or None), not {type(stats).__name__}")
        null_count = count(stats.null_count)
        distinct_count = count(stats.distinct_count)
        nan_count = count(stats.nan_count) if floating else None

        def untrusted(reason: str) -> ChunkStatistics:
            return ChunkStatistics(
                trusted=False,
                reason=reason,
                null_count=null_count,
                distinct_count=distinct_count,
                nan_count=nan_count,
            )

        if refused is not None or value is None:
            return untrusted(refused or "")
        exact_lo = exact_hi = None
        if typed and stats.min_value is not None and stats.max_value is not None:
            lo, hi = stats.min_value, stats.max_value
            exact_lo, exact_hi = stats.is_min_value_exact, stats.is_max_value_exact
        elif stats.min is not None and stats.max is not None:
            lo, hi = stats.min, stats.max
            problem = _legacy_problem(ptype, order, lo, hi, writer)
            if problem:
                return untrusted(problem)
        elif stats.min_value is not None or stats.max_value is not None:
            if kind is None:
                return untrusted("min_value/max_value without column_orders are undefined")
            return untrusted("only one of min_value/max_value is present")
        else:
            return untrusted("no min/max")

        try:
            lo_v = value(bytes(lo))
            hi_v = value(bytes(hi))
        except ValueError as exc:
            return untrusted(f"malformed bound: {exc}")
        if floating:
            if math.isnan(lo_v) or math.isnan(hi_v):
                return untrusted("a float bound is NaN")
            if lo_v == 0:
                lo_v = -0.0  # PARQUET-1222: a +0.0 min may hide -0.0 values
            if hi_v == 0:
                hi_v = 0.0
        if lo_v > hi_v:
            return untrusted("min is greater than max")
        return ChunkStatistics(
            min=lo_v,
            max=hi_v,
            null_count=null_count,
            nan_count=nan_count,
            distinct_count=distinct_count,
            is_min_exact=_flag(exact_lo),
            is_max_exact=_flag(exact_hi),
            trusted=True,
        )

    return decode_one


def _flag(v) -> bool | None:
    return v if isinstance(v, bool) else None
