"""Column statistics: the min/max kernels against the Python reference, ``compute`` against what
pyarrow writes for the same data, ``decode`` against pyarrow's reading, the trust rules, and
BinaryTruncator-style truncation.
"""

from __future__ import annotations

import decimal
import io
import math
import struct
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import stats as K
from metaindex.errors import EncodeError
from metaindex.parquet import format as fmt
from metaindex.parquet import statistics as S
from metaindex.parquet import values as vals
from tests.reference import stats as R

D = decimal.Decimal
FLOAT_KW = {"allow_nan": True, "allow_infinity": True}


def _binary(items: list[bytes], wide=False, shift=0):
    """Arrow-style (offsets, data); ``shift`` puts junk before the first value."""
    data = b"J" * shift + b"".join(items)
    offsets = np.cumsum([shift] + [len(x) for x in items]).astype(np.int64 if wide else np.int32)
    return offsets, np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)


# ================================================================ kernels vs reference


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40), st.booleans())
def test_int32_matches_reference(values, unsigned):
    got = K.minmax_int32(np.array(values, np.int32), unsigned)
    assert got == R.minmax_int(values, 32, unsigned), f"int32 unsigned={unsigned} {values}"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.booleans())
def test_int64_matches_reference(values, unsigned):
    got = K.minmax_int64(np.array(values, np.int64), unsigned)
    assert got == R.minmax_int(values, 64, unsigned), f"int64 unsigned={unsigned} {values}"


def test_int_kernels_take_buffers_and_unsigned_arrays():
    raw = struct.pack("<3q", 5, -7, 2)
    assert K.minmax_int64(raw) == (-7, 5), "bytes holding int64s"
    assert K.minmax_int64(raw, True) == (2, 2**64 - 7), "-7 is the largest as unsigned"
    assert K.minmax_int32(np.array([1, 2**32 - 1], np.uint32)) == (-1, 1), (
        "a uint32 array is reinterpreted as int32 for the signed order"
    )
    assert K.minmax_int32(np.array([], np.int32)) is None, "no values, no bounds"
    big = np.arange(10_001, dtype=np.int64)[::-1].copy()
    assert K.minmax_int64(big) == (0, 10_000), "the unrolled loop and its tail both count"
    with pytest.raises(TypeError):
        K.minmax_int64(np.zeros(3, np.int32))
    with pytest.raises(TypeError):
        K.minmax_int32(b"\x00" * 5)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(**FLOAT_KW), max_size=40))
def test_float64_matches_reference(values):
    lo, hi, nans = K.minmax_float64(np.array(values, np.float64))
    rlo, rhi, rnans = R.minmax_float(values)
    assert (lo, hi, nans) == (rlo, rhi, rnans), f"float64 {values}"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(width=32, **FLOAT_KW), max_size=40))
def test_float32_matches_reference(values):
    lo, hi, nans = K.minmax_float32(np.array(values, np.float32))
    assert (lo, hi, nans) == R.minmax_float(values), f"float32 {values}"


def test_float_kernels_nan_and_infinities():
    nan = float("nan")
    assert K.minmax_float64(np.array([nan, nan])) == (None, None, 2), "all NaN: no bounds"
    assert K.minmax_float64(np.array([nan, math.inf, nan])) == (math.inf, math.inf, 2), (
        "+inf alone is both bounds"
    )
    assert K.minmax_float32(np.array([-math.inf, nan], np.float32)) == (-math.inf, -math.inf, 1)
    payload = np.array([0x7FF8DEAD00000001], np.uint64).view(np.float64)
    assert K.minmax_float64(np.concatenate([payload, [1.0]])) == (1.0, 1.0, 1), (
        "a NaN with a payload is still NaN"
    )
    assert K.minmax_float64(np.array([], np.float64)) == (None, None, 0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 0xFFFF), max_size=40))
def test_float16_matches_reference(bits):
    lo, hi, nans = K.minmax_float16(np.array(bits, np.uint16).view(np.uint8).reshape(-1, 2))
    rlo, rhi, rnans = R.minmax_float16(bits)
    assert nans == rnans, f"NaN count of {bits}"
    assert (None if lo is None else R.half(lo)) == rlo, f"float16 min of {bits}"
    assert (None if hi is None else R.half(hi)) == rhi, f"float16 max of {bits}"


def test_float16_zero_signs():
    assert K.minmax_float16(np.array([0x0000, 0x8000], np.uint16)) == (0x8000, 0x0000, 0), (
        "-0 ranks below +0 in the half kernel"
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), max_size=20))
def test_bool_matches_reference(values):
    assert K.minmax_bool(np.array(values, np.bool_)) == R.minmax_bool(values), f"{values}"


_BYTES = st.binary(max_size=20) | st.lists(
    st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), max_size=12
).map(bytes)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 20).flatmap(
        lambda w: st.tuples(
            st.just(w),
            st.lists(
                st.binary(min_size=w, max_size=w)
                | st.lists(st.sampled_from([0, 0x7F, 0x80, 0xFF]), min_size=w, max_size=w).map(
                    bytes
                ),
                max_size=30,
            ),
        )
    ),
    st.booleans(),
)
def test_fixed_matches_reference(case, signed):
    width, items = case
    arr = np.frombuffer(b"".join(items), np.uint8).reshape(-1, width)
    assert K.minmax_fixed(arr, width, signed) == R.minmax_bytes(items, signed), (
        f"FLBA({width}) signed={signed} {items}"
    )


@settings(max_examples=250, deadline=None)
@given(st.lists(_BYTES, max_size=30), st.booleans(), st.booleans(), st.integers(0, 3))
def test_binary_matches_reference(items, signed, wide, shift):
    offsets, data = _binary(items, wide, shift)
    assert K.minmax_binary(offsets, data, signed) == R.minmax_bytes(items, signed), (
        f"BYTE_ARRAY signed={signed} {items}"
    )


@settings(max_examples=250, deadline=None)
@given(
    st.lists(st.tuples(_BYTES, st.booleans()), max_size=30),
    st.booleans(),
    st.booleans(),
    st.integers(0, 11),
)
def test_binary_with_validity_matches_reference_over_the_valid_slots(slots, signed, wide, bit0):
    items = [value for value, _ in slots]
    offsets, data = _binary(items, wide, 0)
    bits = np.zeros(bit0 + len(slots), bool)
    bits[bit0:] = [valid for _, valid in slots]
    validity = np.packbits(bits, bitorder="little")
    kept = [i for i, (_, valid) in enumerate(slots) if valid]
    expected = R.minmax_bytes([items[i] for i in kept], signed)
    got = K.minmax_binary(offsets, data, signed, validity, bit0)
    assert got == (None if expected is None else (kept[expected[0]], kept[expected[1]]))


def test_binary_with_validity_skips_null_slots():
    # the null slot holds the smallest and the largest bytes: they do not count
    data = np.frombuffer(b"ma\xffz", np.uint8)
    offsets = np.array([0, 1, 3, 4], np.int32)
    assert K.minmax_binary(offsets, data, False, np.array([0b101], np.uint8), 0) == (0, 2)
    assert K.minmax_binary(offsets, data, False, np.array([0b1010], np.uint8), 1) == (0, 2)
    assert K.minmax_binary(offsets, data, False, np.array([0], np.uint8), 0) is None
    with pytest.raises(TypeError):  # a bitmap too short for the slots
        K.minmax_binary(
            np.array([0, 2, 2, 6], np.int32), data, False, np.array([0b101], np.uint8), 6
        )


def test_binary_orders_on_known_cases():
    items = [b"b", b"a\xff", b"a", b"", b"ab", b"\x80"]
    assert K.minmax_binary(*_binary(items)) == (3, 5), "empty is smallest, 0x80 above ASCII"
    # two's complement, different lengths: 0xFF = -1, 0x00FF = 255, 0x80 = -128, b"" = 0
    dec = [b"\xff", b"\x00\xff", b"\x80", b"", b"\x7f"]
    assert K.minmax_binary(*_binary(dec), signed=True) == (2, 1), "-128 smallest, 255 largest"
    assert K.minmax_binary(*_binary([b"\xff\xff", b"\xff"]), signed=True) == (0, 0), (
        "sign extension: 0xFFFF == 0xFF == -1, first one wins"
    )
    long = [b"prefix-" + bytes([i]) * 30 for i in (5, 9, 1, 9)]
    assert K.minmax_binary(*_binary(long)) == (2, 1), "ties in the 8-byte key fall to memcmp"


def test_binary_rejects_bad_offsets():
    data = np.frombuffer(b"abcdef", np.uint8)
    with pytest.raises(EncodeError):
        K.minmax_binary(np.array([0, 3, 2], np.int32), data)
    with pytest.raises(EncodeError):
        K.minmax_binary(np.array([0, 3, 7], np.int64), data)
    with pytest.raises(EncodeError):
        K.minmax_binary(np.array([-1, 3], np.int32), data)
    with pytest.raises(TypeError):
        K.minmax_binary(np.array([0, 3], np.float64), data)
    assert K.minmax_binary(np.array([4], np.int32), data) is None, "no values"
    assert K.minmax_binary(np.array([0, 0, 0], np.int32), np.zeros(0, np.uint8)) == (0, 0), (
        "empty values in empty data"
    )


# ================================================================ sort orders


def _el(ptype, **kw):
    return fmt.SchemaElement(name="c", type=ptype, **kw)


@pytest.mark.parametrize(
    "element, order",
    [
        (_el(1), S.SIGNED),
        (_el(2), S.SIGNED),
        (_el(0), S.SIGNED),
        (_el(4), S.SIGNED),
        (_el(6), S.UNSIGNED),
        (_el(7, type_length=3), S.UNSIGNED),
        (_el(3), S.UNKNOWN),
        (_el(1, converted_type=fmt.ConvertedType.UINT_8), S.UNSIGNED),
        (
            _el(2, logicalType=fmt.LogicalType(INTEGER=fmt.IntType(bitWidth=64, isSigned=False))),
            S.UNSIGNED,
        ),
        (
            _el(1, logicalType=fmt.LogicalType(INTEGER=fmt.IntType(bitWidth=16, isSigned=True))),
            S.SIGNED,
        ),
        (_el(6, converted_type=fmt.ConvertedType.UTF8), S.UNSIGNED),
        (_el(6, logicalType=fmt.LogicalType(JSON=fmt.JsonType())), S.UNSIGNED),
        (_el(6, converted_type=fmt.ConvertedType.BSON), S.UNSIGNED),
        (_el(6, converted_type=fmt.ConvertedType.ENUM), S.UNSIGNED),
        (_el(7, type_length=16, logicalType=fmt.LogicalType(UUID=fmt.UUIDType())), S.UNSIGNED),
        (
            _el(7, type_length=5, converted_type=fmt.ConvertedType.DECIMAL, precision=10, scale=2),
            S.SIGNED,
        ),
        (
            _el(6, logicalType=fmt.LogicalType(DECIMAL=fmt.DecimalType(scale=1, precision=30))),
            S.SIGNED,
        ),
        (_el(7, type_length=2, logicalType=fmt.LogicalType(FLOAT16=fmt.Float16Type())), S.SIGNED),
        (_el(1, logicalType=fmt.LogicalType(DATE=fmt.DateType())), S.SIGNED),
        (_el(7, type_length=12, converted_type=fmt.ConvertedType.INTERVAL), S.UNKNOWN),
        (_el(6, logicalType=fmt.LogicalType(UNKNOWN=fmt.NullType())), S.UNKNOWN),
    ],
)
def test_sort_order(element, order):
    assert S.sort_order(element) == order, f"{element} should sort {order.name}"


# ================================================================ compute vs pyarrow


def _pyarrow_footer(table, **kw):
    sink = io.BytesIO()
    pq.write_table(table, sink, **kw)
    data = sink.getvalue()
    n = int.from_bytes(data[-8:-4], "little")
    return fmt.FileMetaData.from_bytes(data[-8 - n : -8]), data


def _ours_for(arr: pa.Array, element, truncate_length=None):
    ptype = element.type
    values = vals.from_arrow(arr.drop_null(), ptype, element.type_length or 0)
    return S.compute(
        values,
        ptype,
        element.type_length or 0,
        S.sort_order(element),
        arr.null_count,
        truncate_length,
        float16=S.is_float16(element),
    )


NAN = float("nan")
STRINGS = ["héllo", "", "zz", "a\x00b", "🦆", "Z", "é" * 5, None]
PYARROW_CASES = [
    pa.array([-128, 127, 0, None], pa.int8()),
    pa.array([-300, 300, None], pa.int16()),
    pa.array([-(2**31), 2**31 - 1, 5], pa.int32()),
    pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
    pa.array([0, 255, 7], pa.uint8()),
    pa.array([0, 65535, None], pa.uint16()),
    pa.array([1, 2**32 - 1, 2**31], pa.uint32()),
    pa.array([3, 2**64 - 1, 2**63, None], pa.uint64()),
    pa.array([1.5, NAN, -0.0, -2.0, None], pa.float64()),
    pa.array([0.0, -0.0, 0.0], pa.float64()),
    pa.array([-0.0, 2.0], pa.float32()),
    pa.array([NAN, NAN, None], pa.float64()),
    pa.array([math.inf, -math.inf, NAN], pa.float32()),
    pa.array(STRINGS, pa.string()),
    pa.array(STRINGS, pa.large_string()),
    pa.array([b"\xff\x00", b"", b"\x00", b"\x7f\xff", None], pa.binary()),
    pa.array([b"ab", b"\xff\xfe", b"\x00\x01"], pa.binary(2)),
    pa.array([D("-1.50"), D("2.25"), D("0.00"), None], pa.decimal128(5, 2)),
    pa.array([D("-99999999999999.99"), D("12.34")], pa.decimal128(16, 2)),
    pa.array([D("-1"), D("-2"), D("-3")], pa.decimal128(38, 0)),
    pa.array([D("1" * 37), D("-" + "9" * 38)], pa.decimal128(38, 0)),
    pa.array([D("-0.001"), D("0.002")], pa.decimal256(50, 3)),
    pa.array([-5, 19000, None], pa.date32()),
    pa.array([-(10**15), 10**15], pa.timestamp("us", tz="UTC")),
    pa.array([1, 2], pa.timestamp("ns")),
    pa.array([1000, 86_399_000], pa.time32("ms")),
    pa.array([True, False, None], pa.bool_()),
    pa.array([True, True], pa.bool_()),
    pa.array([None, None], pa.int32()),
    pa.array(np.array([1.5, NAN, -0.0, -65504], np.float16)),
    pa.array(np.array([0.0, 2.0], np.float16)),
]


@pytest.mark.parametrize("arr", PYARROW_CASES, ids=lambda a: str(a.type))
def test_compute_matches_pyarrow(arr):
    meta, _ = _pyarrow_footer(pa.table({"c": arr}), use_dictionary=False)
    theirs = meta.row_groups[0].columns[0].meta_data.statistics
    ours = _ours_for(arr, meta.schema[1])
    for name in (
        "min_value",
        "max_value",
        "min",
        "max",
        "null_count",
        "is_min_value_exact",
        "is_max_value_exact",
        "distinct_count",
    ):
        assert getattr(ours, name) == getattr(theirs, name), (
            f"{arr.type}: {name} {getattr(ours, name)!r} != pyarrow's {getattr(theirs, name)!r}"
        )
    floating = arr.type in (pa.float32(), pa.float64(), pa.float16())
    if floating:
        assert ours.nan_count == sum(1 for v in arr.to_pylist() if v is not None and v != v), (
            "nan_count counts NaNs"
        )
    else:
        assert ours.nan_count is None, "nan_count only for floats"


def test_compute_decimal_as_integers_matches_pyarrow():
    arr = pa.array([D("-1.5"), D("3.25"), None], pa.decimal128(9, 2))
    for wide in (False, True):
        a = arr.cast(pa.decimal128(18, 2)) if wide else arr
        meta, _ = _pyarrow_footer(pa.table({"c": a}), store_decimal_as_integer=True)
        element = meta.schema[1]
        assert element.type == (fmt.Type.INT64 if wide else fmt.Type.INT32)
        unscaled = np.array([-150, 325], np.int64 if wide else np.int32)
        ours = S.compute(unscaled, element.type, 0, S.sort_order(element), 1)
        theirs = meta.row_groups[0].columns[0].meta_data.statistics
        assert (ours.min_value, ours.max_value, ours.min, ours.max) == (
            theirs.min_value,
            theirs.max_value,
            theirs.min,
            theirs.max,
        ), f"decimal as {element.type}"


def test_compute_float_zero_and_nan_rules():
    st_ = S.compute(np.array([0.0, 0.0, NAN]), 5, 0, S.SIGNED, 0)
    assert st_.min_value == struct.pack("<d", -0.0), "a zero min is written as -0.0"
    assert st_.max_value == struct.pack("<d", 0.0), "a zero max is written as +0.0"
    assert st_.nan_count == 1
    st_ = S.compute(np.array([-0.0], np.float32), 4, 0, S.SIGNED, 3)
    assert (st_.min_value, st_.max_value) == (struct.pack("<f", -0.0), struct.pack("<f", 0.0))
    st_ = S.compute(np.array([NAN, NAN]), 5, 0, S.SIGNED, 4)
    assert (
        st_.min_value is None and st_.min is None and st_.null_count == 4 and st_.nan_count == 2
    ), "all NaN: counts only"
    st_ = S.compute(
        np.array([0x0000, 0x7E00], np.uint16).view(np.uint8).reshape(-1, 2),
        7,
        2,
        S.SIGNED,
        0,
        float16=True,
    )
    assert (st_.min_value, st_.max_value) == (b"\x00\x80", b"\x00\x00"), "float16 zeros"


def test_compute_unknown_order_and_int96_have_no_bounds():
    int96 = np.zeros((2, 12), np.uint8)
    assert S.compute(int96, 3, 12, S.UNKNOWN, 1) == fmt.Statistics(null_count=1)
    interval = np.zeros((1, 12), np.uint8)
    assert S.compute(interval, 7, 12, S.UNKNOWN, 0) == fmt.Statistics(null_count=0)


def test_compute_never_writes_legacy_fields_for_unsigned_orders():
    st_ = S.compute(np.array([1, -1], np.int64), 2, 0, S.UNSIGNED, 0)
    assert st_.min is None and st_.max is None, "deprecated fields are signed-order only"
    assert st_.max_value == struct.pack("<q", -1), "-1 is the unsigned max"


def test_compute_signed_byte_array_decimals():
    items = [b"\x00\xff", b"\xff", b"\x80\x00", b"\x01"]
    st_ = S.compute(_binary(items), 6, 0, S.SIGNED, 0, truncate_length=1)
    assert (st_.min_value, st_.max_value) == (b"\x80\x00", b"\x00\xff"), (
        "-32768 .. 255, never truncated"
    )
    assert st_.min == st_.min_value and st_.is_max_value_exact is True


# ================================================================ truncation


def test_truncation_known_cases():
    long = "abc" + "x" * 100
    assert S.truncate_min(long.encode(), 4) == (b"abcx", False)
    assert S.truncate_max(long.encode(), 4) == (b"abcy", False), "last byte rounded up"
    assert S.truncate_max(("a" + "é" * 10).encode(), 4) == ("aê".encode(), False), (
        "cut at a character boundary, the last character raised"
    )
    assert S.truncate_max(("aÿ" + "z" * 10).encode(), 3) == ("aĿ".encode(), False), (
        "0xBF cannot be raised inside UTF-8: the lead byte is"
    )
    assert S.truncate_max(b"\xff" * 10, 4) == (b"\xff" * 10, True), "cannot round up: keep"
    assert S.truncate_max(b"\x01\xff\xff\xfe\xfe", 3) == (b"\x02\x00\x00", False), (
        "non-UTF-8 bytes increment with carry"
    )
    assert S.truncate_min("🦆🦆".encode(), 3) == ("🦆🦆".encode(), True), (
        "a first character longer than the limit cannot be cut"
    )
    assert S.truncate_max("\U0010ffff\U0010ffff".encode(), 5) == (
        "\U0010ffff\U0010ffff".encode(),
        True,
    ), "the largest character cannot be raised"
    assert S.truncate_min(b"short", 64) == (b"short", True)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30) | st.binary(max_size=30), st.integers(1, 12))
def test_truncation_gives_bounds(value, limit):
    raw = value.encode() if isinstance(value, str) else value
    lo, lo_exact = S.truncate_min(raw, limit)
    hi, hi_exact = S.truncate_max(raw, limit)
    assert lo <= raw <= hi, f"bounds {lo!r} <= {raw!r} <= {hi!r}"
    assert lo_exact == (lo == raw) and hi_exact == (hi == raw), "exact iff unchanged"
    if not lo_exact:
        assert len(lo) <= limit
    if not hi_exact:
        assert len(hi) <= limit
    if isinstance(value, str):
        lo.decode("utf-8")
        hi.decode("utf-8")


def test_compute_truncates_long_strings():
    items = ["a" * 100, "b" * 70 + "\U0010ffff", "ab"]
    offsets, data = _binary([s.encode() for s in items])
    st_ = S.compute((offsets, data), 6, 0, S.UNSIGNED, 0, 64)
    assert st_.min_value == b"a" * 64 and st_.is_min_value_exact is False
    assert st_.max_value == b"b" * 63 + b"c" and st_.is_max_value_exact is False
    st_ = S.compute((offsets, data), 6, 0, S.UNSIGNED, 0, None)
    assert st_.max_value == items[1].encode() and st_.is_max_value_exact is True


# ================================================================ decode


def _pyarrow_value(stats: pq.Statistics, which: str, element):
    value = getattr(stats, which)
    if isinstance(value, (bytes, int, float, str, bool, D)) and not S.is_float16(element):
        if element.logicalType is not None and (
            element.logicalType.DATE is not None
            or element.logicalType.TIMESTAMP is not None
            or element.logicalType.TIME is not None
        ):
            return getattr(stats, which + "_raw")
        return value
    if S.is_float16(element):
        return struct.unpack("<e", value)[0]
    return getattr(stats, which + "_raw")


@pytest.mark.parametrize("arr", PYARROW_CASES, ids=lambda a: str(a.type))
def test_decode_agrees_with_pyarrow(arr):
    meta, data = _pyarrow_footer(pa.table({"c": arr}))
    element = meta.schema[1]
    got = S.decode(
        meta.row_groups[0].columns[0].meta_data.statistics,
        element,
        meta.created_by,
        meta.column_orders[0],
    )
    theirs = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0).statistics
    assert got.null_count == theirs.null_count, "null_count"
    if not theirs.has_min_max:
        assert not got.trusted and got.min is None, f"no bounds: {got}"
        return
    assert got.trusted, f"pyarrow's own statistics should be trusted: {got.reason}"
    lo, hi = _pyarrow_value(theirs, "min", element), _pyarrow_value(theirs, "max", element)
    if isinstance(lo, float) and lo == 0:
        assert math.copysign(1, got.min) == -1, "a zero min reads as -0.0"
    if isinstance(hi, float) and hi == 0:
        assert math.copysign(1, got.max) == 1, "a zero max reads as +0.0"
    assert (got.min, got.max) == (lo, hi), f"{arr.type}: {got} vs pyarrow ({lo!r}, {hi!r})"
    assert type(got.min) is type(lo), f"{arr.type}: min type {type(got.min)} vs {type(lo)}"
    assert got.is_min_exact is True and got.is_max_exact is True and got.exact


TYPE_ORDER = fmt.ColumnOrder(TYPE_ORDER=fmt.TypeDefinedOrder())
INT32_EL = _el(1)
STR_EL = _el(
    6, converted_type=fmt.ConvertedType.UTF8, logicalType=fmt.LogicalType(STRING=fmt.StringType())
)
DEC_EL = _el(7, type_length=2, converted_type=fmt.ConvertedType.DECIMAL, scale=1, precision=4)
DBL_EL = _el(5)
ARROW = "parquet-cpp-arrow version 26.0.1"


def _i32(v):
    return struct.pack("<i", v)


def test_decode_trust_rules():
    good = fmt.Statistics(
        min_value=_i32(-3),
        max_value=_i32(9),
        null_count=2,
        is_min_value_exact=True,
        is_max_value_exact=True,
    )
    ok = S.decode(good, INT32_EL, ARROW, TYPE_ORDER)
    assert ok.trusted and (ok.min, ok.max, ok.null_count) == (-3, 9, 2)
    assert not S.decode(good, INT32_EL, ARROW, None).trusted, (
        "min_value/max_value without a column order are undefined"
    )
    assert not S.decode(
        good, INT32_EL, ARROW, fmt.ColumnOrder(IEEE_754_TOTAL_ORDER=fmt.IEEE754TotalOrder())
    ).trusted, "IEEE 754 total order does not apply to integers"
    legacy = fmt.Statistics(min=_i32(-3), max=_i32(9))
    got = S.decode(legacy, INT32_EL, "parquet-mr version 1.6.0", None)
    assert got.trusted and got.null_count is None, "signed legacy ints are fine; no null_count"
    assert got.is_min_exact is None, "exactness unknown for legacy fields"
    uint = _el(1, converted_type=fmt.ConvertedType.UINT_32)
    assert not S.decode(legacy, uint, "parquet-mr version 1.9.0", None).trusted, (
        "legacy bounds are signed: wrong for an unsigned column"
    )
    same = fmt.Statistics(min=_i32(-1), max=_i32(-1))
    one = S.decode(same, uint, "parquet-mr version 1.9.0", None)
    assert one.trusted and one.min == 2**32 - 1, "min == max is valid in any order"
    assert not S.decode(fmt.Statistics(min=_i32(9), max=_i32(-3)), INT32_EL, ARROW, None).trusted, (
        "min > max is corrupt"
    )
    assert not S.decode(fmt.Statistics(min=b"\x01", max=_i32(1)), INT32_EL, ARROW, None).trusted, (
        "a bound of the wrong size"
    )
    assert S.decode(None, INT32_EL, ARROW, TYPE_ORDER).reason == "no statistics"
    int96 = S.decode(
        fmt.Statistics(min_value=b"\0" * 12, max_value=b"\1" * 12), _el(3), ARROW, TYPE_ORDER
    )
    assert not int96.trusted, "INT96 statistics are never used"
    odd = fmt.ColumnOrder()
    assert not S.decode(good, INT32_EL, ARROW, odd).trusted, "an unknown column order"


def test_decode_binary_writer_rules():
    strs = fmt.Statistics(min_value=b"a", max_value=b"z", null_count=0)
    assert S.decode(strs, STR_EL, ARROW, TYPE_ORDER).min == "a"
    assert not S.decode(strs, STR_EL, None, TYPE_ORDER).trusted, "no created_by (PARQUET-297)"
    legacy = fmt.Statistics(min=b"a", max=b"z")
    assert not S.decode(legacy, STR_EL, "parquet-mr version 1.9.0 (build x)", None).trusted, (
        "legacy string bounds are signed-byte ordered"
    )
    eq = fmt.Statistics(min=b"k", max=b"k")
    assert S.decode(eq, STR_EL, "parquet-mr version 1.9.0 (build x)", None).trusted
    assert not S.decode(eq, STR_EL, "parquet-mr version 1.7.0 (build x)", None).trusted, (
        "PARQUET-251: binary stats before 1.8.0 are corrupt even when equal"
    )
    assert not S.decode(eq, STR_EL, "parquet-mr version 1.8.0-SNAPSHOT", None).trusted, (
        "a pre-release of 1.8.0 predates the fix"
    )
    assert S.decode(eq, STR_EL, "parquet-mr version 1.5.0-cdh5.5.0 (build x)", None).trusted, (
        "CDH 5.5 backported the fix"
    )
    assert not S.decode(eq, STR_EL, "parquet-mr version 1.5.0-cdh5.4.0 (build x)", None).trusted
    assert not S.decode(eq, STR_EL, "parquet-mr version unknown", None).trusted, (
        "an unparseable parquet-mr version"
    )
    dec = fmt.Statistics(min=b"\xff\x00", max=b"\x00\x10")
    assert not S.decode(dec, DEC_EL, "parquet-mr version 1.9.0", None).trusted, (
        "PARQUET-686: legacy decimal bounds of parquet-mr < 1.10"
    )
    ok = S.decode(dec, DEC_EL, ARROW, None)
    assert ok.trusted and (ok.min, ok.max) == (D("-25.6"), D("1.6")), "arrow's signed legacy"
    bad = fmt.Statistics(min_value=b"\xff", max_value=b"z")
    assert "UTF-8" in S.decode(bad, STR_EL, ARROW, TYPE_ORDER).reason


def test_decode_float_rules():
    def d(lo, hi, **kw):
        return S.decode(
            fmt.Statistics(min_value=struct.pack("<d", lo), max_value=struct.pack("<d", hi), **kw),
            DBL_EL,
            ARROW,
            TYPE_ORDER,
        )

    z = d(0.0, -0.0)
    assert z.trusted and math.copysign(1, z.min) == -1 and math.copysign(1, z.max) == 1, (
        "PARQUET-1222: +0.0 min and -0.0 max are widened"
    )
    assert not d(NAN, 1.0).trusted and not d(1.0, NAN).trusted, "a NaN bound is not a bound"
    assert d(1.0, 2.0, nan_count=0).nan_count == 0
    assert d(1.0, 2.0).nan_count is None, "no nan_count: NaNs may be present"
    total = S.decode(
        fmt.Statistics(
            min_value=struct.pack("<d", -1.0), max_value=struct.pack("<d", 2.0), nan_count=3
        ),
        DBL_EL,
        ARROW,
        fmt.ColumnOrder(IEEE_754_TOTAL_ORDER=fmt.IEEE754TotalOrder()),
    )
    assert total.trusted and total.nan_count == 3, "IEEE 754 total order for floats"
    legacy = S.decode(
        fmt.Statistics(min=struct.pack("<d", NAN), max=struct.pack("<d", 1.0)),
        DBL_EL,
        "parquet-mr version 1.8.0",
        None,
    )
    assert not legacy.trusted, "PARQUET-1246: NaN in legacy float stats"


@pytest.mark.parametrize(
    "created_by, expected",
    [
        (
            "parquet-mr version 1.8.1 (build 4aba4dae7bb0d4edbcf7923ae1339f28fd3f7fcf)",
            ("parquet-mr", (1, 8, 1), ""),
        ),
        ("parquet-cpp-arrow version 26.0.1", ("parquet-cpp-arrow", (26, 0, 1), "")),
        ("parquet-cpp version 1.5.1-SNAPSHOT", ("parquet-cpp", (1, 5, 1), "-SNAPSHOT")),
        (
            "impala version 1.0 (build 6cf94d29b2b7115df4de2c06e2ab4326d721eb55)",
            ("impala", (1, 0, 0), ""),
        ),
        ("DuckDB version v1.1.3 (build x)", ("duckdb", (1, 1, 3), "")),
        ("Polars", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_created_by(created_by, expected):
    got = S.parse_created_by(created_by)
    assert (None if got is None else (got.application, got.version, got.suffix)) == expected


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(
    st.builds(
        fmt.Statistics,
        max=st.none() | st.binary(max_size=10),
        min=st.none() | st.binary(max_size=10),
        null_count=st.none() | st.integers(-5, 5),
        max_value=st.none() | st.binary(max_size=10),
        min_value=st.none() | st.binary(max_size=10),
        is_max_value_exact=st.none() | st.booleans(),
        nan_count=st.none() | st.integers(-2, 2),
    ),
    st.sampled_from(
        [
            INT32_EL,
            STR_EL,
            DEC_EL,
            DBL_EL,
            _el(0),
            _el(6),
            _el(4),
            _el(7, type_length=2, logicalType=fmt.LogicalType(FLOAT16=fmt.Float16Type())),
            _el(2, converted_type=fmt.ConvertedType.UINT_64),
        ]
    ),
    st.sampled_from([None, ARROW, "parquet-mr version 1.9.0", "x"]),
    st.sampled_from([None, TYPE_ORDER]),
)
def test_decode_never_raises_on_hostile_statistics(stats, element, created_by, order):
    got = S.decode(stats, element, created_by, order)
    assert got.trusted == (got.min is not None), "bounds are set exactly when trusted"
    if got.trusted:
        assert got.min <= got.max, "trusted bounds are ordered"
        assert got.reason is None
    else:
        assert got.reason, "an untrusted verdict says why"
    assert got.null_count is None or got.null_count >= 0, "negative counts are dropped"


# ================================================================ pyarrow reads ours


def _inject(data: bytes, meta, stats) -> bytes:
    """The same file with ``stats`` as the first chunk's statistics (footer re-encoded)."""
    n = int.from_bytes(data[-8:-4], "little")
    meta.row_groups[0].columns[0].meta_data.statistics = stats
    footer = meta.to_bytes()
    return data[: -8 - n] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


@pytest.mark.parametrize("arr", PYARROW_CASES, ids=lambda a: str(a.type))
def test_pyarrow_reads_what_compute_writes(arr):
    """A footer carrying our statistics reads in pyarrow like pyarrow's own."""
    table = pa.table({"c": arr})
    meta, data = _pyarrow_footer(table, write_statistics=False)
    assert meta.row_groups[0].columns[0].meta_data.statistics is None
    ours = _ours_for(arr, meta.schema[1], truncate_length=64)
    got = pq.ParquetFile(io.BytesIO(_inject(data, meta, ours))).metadata.row_group(0).column(0)
    _, ref_data = _pyarrow_footer(table)
    want = pq.ParquetFile(io.BytesIO(ref_data)).metadata.row_group(0).column(0).statistics
    assert got.statistics.has_min_max == want.has_min_max, f"{arr.type}: has_min_max"
    assert got.statistics.null_count == want.null_count
    if want.has_min_max:
        assert (got.statistics.min_raw, got.statistics.max_raw) == (want.min_raw, want.max_raw), (
            f"{arr.type}: bounds as pyarrow reads them"
        )


def test_pyarrow_reads_truncated_bounds():
    arr = pa.array(["a" * 200, "é" * 100, None])
    meta, data = _pyarrow_footer(pa.table({"c": arr}), write_statistics=False)
    ours = _ours_for(arr, meta.schema[1], truncate_length=16)
    stats = (
        pq.ParquetFile(io.BytesIO(_inject(data, meta, ours)))
        .metadata.row_group(0)
        .column(0)
        .statistics
    )
    assert stats.min == "a" * 16 and stats.max == "é" * 7 + "ê", (
        f"truncated bounds read back: {stats.min!r} {stats.max!r}"
    )
    assert stats.null_count == 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3, 12), min_size=1, max_size=8), st.binary(max_size=10), st.booleans())
def test_binary_kernel_random_offsets(offsets, data, signed):
    """Arbitrary offsets either bound valid values or raise EncodeError, never read outside."""
    off = np.array(offsets, np.int64)
    buf = np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)
    if len(off) == 1:
        assert K.minmax_binary(off, buf, signed) is None, "no values: nothing is read"
        return
    valid = off[0] >= 0 and off[-1] <= len(data) and bool(np.all(np.diff(off) >= 0))
    if not valid:
        with pytest.raises(EncodeError):
            K.minmax_binary(off, buf, signed)
        return
    items = [data[a:b] for a, b in pairwise(offsets)]
    assert K.minmax_binary(off, buf, signed) == R.minmax_bytes(items, signed)
