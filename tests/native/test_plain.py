"""PLAIN kernel (cython_ext/plain) against the Python reference and pyarrow."""

import io
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.plain import decode_plain, encode_plain
from metaindex.errors import DecodeError, EncodeError
from tests.reference import plain as ref
from tests.reference.pages import DATA_PAGE, column_pages

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FLBA = range(8)
I32, I64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)

# ------------------------------------------------------------------------------ conversions


def to_array(ptype, values, type_length=0):
    """Reference values (see tests/reference/plain.py) -> the kernel's value convention."""
    if ptype == BOOLEAN:
        return np.array(values, dtype=np.bool_)
    if ptype == INT32:
        return np.array(values, dtype=np.int32)
    if ptype == INT64:
        return np.array(values, dtype=np.int64)
    if ptype == FLOAT:
        return np.array(values, dtype=np.uint32).view(np.float32)
    if ptype == DOUBLE:
        return np.array(values, dtype=np.uint64).view(np.float64)
    if ptype == BYTE_ARRAY:
        offsets = np.zeros(len(values) + 1, np.int64)
        offsets[1:] = np.cumsum([len(v) for v in values])
        return offsets, np.frombuffer(b"".join(values), np.uint8)
    width = 12 if ptype == INT96 else type_length
    return np.frombuffer(b"".join(values), np.uint8).reshape(len(values), width)


def to_ref(ptype, decoded):
    """The kernel's decoded values -> reference values (floats as bit patterns)."""
    if ptype == BOOLEAN:
        return [bool(v) for v in decoded]
    if ptype == FLOAT:
        return decoded.view(np.uint32).tolist()
    if ptype == DOUBLE:
        return decoded.view(np.uint64).tolist()
    if ptype in (INT32, INT64):
        return decoded.tolist()
    if ptype == BYTE_ARRAY:
        offsets, data = decoded
        return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]
    return [bytes(row) for row in decoded]


# ------------------------------------------------------------------------------ strategies

f32_bits = st.one_of(
    st.integers(0, 2**32 - 1),
    st.sampled_from(
        [0x7FC00000, 0x7F800001, 0xFFC01234, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001]
    ),
)
f64_bits = st.one_of(
    st.integers(0, 2**64 - 1),
    st.sampled_from(
        [
            0x7FF8000000000000,
            0x7FF0000000000001,
            0xFFF8DEADBEEF0001,
            0x7FF0000000000000,
            0xFFF0000000000000,
            0x8000000000000000,
        ]
    ),
)
strings = st.one_of(
    st.binary(max_size=24), st.just(b""), st.binary(min_size=10_000, max_size=10_000)
)

VALUE_STRATEGIES = {
    BOOLEAN: st.booleans(),
    INT32: st.one_of(st.integers(*I32), st.sampled_from(I32)),
    INT64: st.one_of(st.integers(*I64), st.sampled_from(I64)),
    INT96: st.binary(min_size=12, max_size=12),
    FLOAT: f32_bits,
    DOUBLE: f64_bits,
    BYTE_ARRAY: strings,
}


def value_lists(ptype):
    elem = VALUE_STRATEGIES[ptype]
    return st.one_of(
        st.lists(elem, max_size=40), st.builds(lambda v, n: [v] * n, elem, st.integers(0, 40))
    )  # all equal


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("ptype", sorted(VALUE_STRATEGIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_roundtrip_matches_reference(ptype, data):
    values = data.draw(value_lists(ptype))
    encoded = encode_plain(to_array(ptype, values), ptype)
    assert encoded == ref.encode(values, ptype), "kernel encoding must equal the reference"
    decoded, consumed = decode_plain(encoded + b"\xab\xcd", len(values), ptype)
    assert consumed == len(encoded), "trailing bytes must not be consumed"
    assert to_ref(ptype, decoded) == values, "decode(encode(v)) must give v back bit-exactly"
    assert ref.decode(encoded, len(values), ptype) == (values, len(encoded))


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 40), data=st.data())
def test_fixed_len_byte_array_roundtrip(width, data):
    values = data.draw(st.lists(st.binary(min_size=width, max_size=width), max_size=30))
    encoded = encode_plain(to_array(FLBA, values, width), FLBA, width)
    assert encoded == ref.encode(values, FLBA, width)
    decoded, consumed = decode_plain(encoded, len(values), FLBA, width)
    assert decoded.shape == (len(values), width) and decoded.dtype == np.uint8
    assert (to_ref(FLBA, decoded), consumed) == (values, len(encoded))


def test_decoded_dtypes_and_special_floats():
    f = np.array([np.nan, -0.0, np.inf, -np.inf, 1.5], np.float32)
    f.view(np.uint32)[0] = 0x7FC0BEEF  # a NaN payload must survive
    out, _ = decode_plain(encode_plain(f, FLOAT), 5, FLOAT)
    assert out.dtype == np.float32 and out.view(np.uint32).tolist() == f.view(np.uint32).tolist()
    d = np.array([np.nan, -0.0, np.inf], np.float64)
    d.view(np.uint64)[0] = 0xFFF0000000000001  # signalling NaN with a payload
    out, _ = decode_plain(encode_plain(d, DOUBLE), 3, DOUBLE)
    assert out.dtype == np.float64 and out.view(np.uint64).tolist() == d.view(np.uint64).tolist()
    for ptype, dtype in ((BOOLEAN, np.bool_), (INT32, np.int32), (INT64, np.int64)):
        out, consumed = decode_plain(b"", 0, ptype)
        assert out.dtype == dtype and out.shape == (0,) and consumed == 0
    (offsets, data), consumed = decode_plain(b"", 0, BYTE_ARRAY)
    assert offsets.tolist() == [0] and offsets.dtype == np.int32 and data.dtype == np.uint8
    out, _ = decode_plain(b"", 0, INT96)
    assert out.shape == (0, 12)


def test_booleans_are_lsb_first():
    values = [True, False, False, False, False, False, False, False, True, True]
    assert encode_plain(np.array(values), BOOLEAN) == b"\x01\x03"
    out, consumed = decode_plain(b"\x01\x03\xff", 10, BOOLEAN)
    assert out.tolist() == values and consumed == 2


def test_byte_array_offsets_dtypes_and_slices():
    arr = pa.array([b"skip", b"", b"hello", b"x" * 10_000, b"", b"tail"])
    part = arr.slice(1, 4)  # offsets no longer start at 0
    _, offsets, data = part.buffers()
    off32 = np.frombuffer(offsets, np.int32)[part.offset : part.offset + len(part) + 1]
    expected = ref.encode([b"", b"hello", b"x" * 10_000, b""], BYTE_ARRAY)
    assert off32[0] != 0
    assert encode_plain((off32, data), BYTE_ARRAY) == expected, "sliced int32 offsets"
    assert (
        encode_plain((off32.astype(np.int64), np.frombuffer(data, np.uint8)), BYTE_ARRAY)
        == expected
    )
    large = pa.array([b"", b"hello", b"x" * 10_000, b""], pa.large_binary())
    _, loff, ldata = large.buffers()
    assert encode_plain((np.frombuffer(loff, np.int64), ldata), BYTE_ARRAY) == expected


@pytest.mark.parametrize(
    "wrap", [bytes, bytearray, memoryview, pa.py_buffer, lambda b: np.frombuffer(b, np.uint8)]
)
def test_accepts_any_contiguous_buffer(wrap):
    enc = ref.encode([1, -2, 3], INT32)
    out, consumed = decode_plain(wrap(enc), 3, INT32)
    assert out.tolist() == [1, -2, 3] and consumed == 12
    (offsets, data), _ = decode_plain(wrap(ref.encode([b"ab", b"c"], BYTE_ARRAY)), 2, BYTE_ARRAY)
    assert offsets.tolist() == [0, 2, 3] and bytes(data) == b"abc"


def test_encoder_input_normalisation():
    assert encode_plain([1, 2], INT32) == ref.encode([1, 2], INT32), "sequences are accepted"
    assert encode_plain(np.array([1, 2], np.int16), INT64) == ref.encode([1, 2], INT64)
    assert encode_plain(np.array([2**32 - 1], np.uint32), INT32) == ref.encode([-1], INT32), (
        "UINT_32 values are stored as their bit pattern"
    )
    s12 = np.array([b"a" * 12, b"b" * 12], "S12")
    assert encode_plain(s12, INT96) == b"a" * 12 + b"b" * 12


def test_encoder_takes_other_buffers_as_raw_values():
    vals = np.array([1, -2, 2**31 - 1], np.int32)
    want = ref.encode(vals.tolist(), INT32)
    for wrap in (bytes, memoryview, lambda a: pa.array(a).buffers()[1]):
        assert encode_plain(wrap(vals), INT32) == want, (
            f"a {type(wrap(vals)).__name__} holds raw little-endian values, not one value per byte"
        )
    with pytest.raises(TypeError):  # 8-byte items for INT32: never narrowed silently
        encode_plain(memoryview(np.array([1, 2**40], np.int64)), INT32)
    with pytest.raises(TypeError):
        encode_plain(memoryview(vals.astype(">i4")), INT32)
    with pytest.raises(TypeError):  # BYTE_ARRAY data must be bytes, not 4-byte items
        encode_plain((np.array([0, 1]), np.zeros(1, np.int32)), BYTE_ARRAY)


@pytest.mark.parametrize(
    "values, ptype, kw, error",
    [
        (np.array([1.5]), INT32, {}, TypeError),  # float -> int is not safe
        (np.array([1], np.int64), INT32, {}, TypeError),  # narrowing
        (np.array([1.0]), FLOAT, {}, TypeError),  # float64 -> float32 loses bits
        (np.array([[1, 2]], np.int32), INT32, {}, TypeError),  # not 1-D
        ([2**40], INT32, {}, EncodeError),  # out of range
        (np.zeros((2, 11), np.uint8), INT96, {}, TypeError),  # wrong width
        (np.zeros((2, 4), np.uint8), FLBA, {"type_length": 3}, TypeError),
        (np.zeros((2, 4), np.uint8), FLBA, {}, EncodeError),  # no type_length
        (np.array([1, 0]), BOOLEAN, {}, TypeError),
        (np.array([1]), 9, {}, EncodeError),
        ((np.array([0, 3, 2]), b"abc"), BYTE_ARRAY, {}, EncodeError),  # decreasing offsets
        ((np.array([0, 4]), b"abc"), BYTE_ARRAY, {}, EncodeError),  # past the data
        ((np.array([-1, 2]), b"abc"), BYTE_ARRAY, {}, EncodeError),
        ((np.array([0.0, 1.0]), b"abc"), BYTE_ARRAY, {}, TypeError),
        (b"abc", BYTE_ARRAY, {}, TypeError),
    ],
)
def test_encoder_rejects_bad_input(values, ptype, kw, error):
    with pytest.raises(error):
        encode_plain(values, ptype, **kw)


@pytest.mark.parametrize("ptype, kw", [(9, {}), (-1, {}), (FLBA, {}), (FLBA, {"type_length": -3})])
def test_decoder_rejects_bad_arguments(ptype, kw):
    with pytest.raises(DecodeError):
        decode_plain(b"\x00" * 16, 1, ptype, **kw)
    with pytest.raises(DecodeError, match="negative"):
        decode_plain(b"", -1, INT32)


# ------------------------------------------------------------------------------ hostile input

SAMPLES = {
    BOOLEAN: [True, False, True] * 5,
    INT32: [1, -1, 2**31 - 1, -(2**31)],
    INT64: [0, 2**63 - 1, -(2**63)],
    INT96: [bytes(range(12)), bytes(range(12, 24))],
    FLOAT: [0x7FC00001, 0x80000000],
    DOUBLE: [0x7FF0000000000001, 1],
    BYTE_ARRAY: [b"abc", b"", b"\x00" * 300, b""],
}


@pytest.mark.hostile
@pytest.mark.parametrize("ptype", sorted(SAMPLES))
def test_every_strict_prefix_raises(ptype):
    values = SAMPLES[ptype]
    encoded = ref.encode(values, ptype)
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            decode_plain(encoded[:cut], len(values), ptype)
            pytest.fail(f"a {cut}-byte prefix of {len(encoded)} bytes must not decode")


@pytest.mark.hostile
def test_every_strict_prefix_raises_fixed_len_byte_array():
    encoded = bytes(range(7 * 5))
    assert decode_plain(encoded, 5, FLBA, 7)[1] == len(encoded)
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            decode_plain(encoded[:cut], 5, FLBA, 7)


@pytest.mark.hostile
@pytest.mark.parametrize("ptype", [BOOLEAN, INT32, INT64, INT96, DOUBLE, BYTE_ARRAY])
def test_huge_counts_fail_before_allocating(ptype):
    for n in (2**31, 2**40, 2**62, 2**63 - 1):
        with pytest.raises(DecodeError):
            decode_plain(b"\x01" * 64, n, ptype)


@pytest.mark.hostile
def test_byte_array_length_past_the_end():
    with pytest.raises(DecodeError, match="exceeds") as info:
        decode_plain(b"\x01\x00\x00\x00a" + b"\xff\xff\xff\xffbcd", 2, BYTE_ARRAY)
    assert info.value.offset == 5, "the error points at the bad length prefix"


def assert_decodes_like_reference(data, n, ptype):
    """Either both decoders give the same values, or ours raises DecodeError where it fails."""
    try:
        expected = ref.decode(data, n, ptype)
    except ValueError:
        with pytest.raises(DecodeError):
            decode_plain(data, n, ptype)
        return
    decoded, consumed = decode_plain(data, n, ptype)
    assert (to_ref(ptype, decoded), consumed) == expected


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=64),
    n=st.integers(0, 20),
    ptype=st.sampled_from([BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY]),
)
def test_random_bytes_decode_like_the_reference(data, n, ptype):
    assert_decodes_like_reference(data, n, ptype)


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.binary(max_size=8), min_size=1, max_size=10), data=st.data())
def test_byte_flips_in_byte_arrays(values, data):
    encoded = bytearray(ref.encode(values, BYTE_ARRAY))
    pos = data.draw(st.integers(0, len(encoded) - 1))
    encoded[pos] ^= data.draw(st.integers(1, 255))
    assert_decodes_like_reference(bytes(encoded), len(values), BYTE_ARRAY)


# ------------------------------------------------------------------------------ pyarrow


def plain_page(table):
    """The one data page body of a one-column, non-nullable, PLAIN, uncompressed v1 file."""
    buf = io.BytesIO()
    pq.write_table(
        table,
        buf,
        use_dictionary=False,
        compression="NONE",
        data_page_version="1.0",
        use_deprecated_int96_timestamps=True,
        write_statistics=False,
    )
    raw = buf.getvalue()
    pages = column_pages(raw, pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0))
    assert [p.type for p in pages] == [DATA_PAGE] and pages[0].header[5][2] == 0, "one PLAIN page"
    return pages[0].body, pq.read_table(io.BytesIO(raw))


def required(name, array):
    return pa.table([array], schema=pa.schema([pa.field(name, array.type, nullable=False)]))


def test_pyarrow_plain_pages_fixed_width():
    rng = np.random.default_rng(7)
    f32 = rng.standard_normal(1000).astype(np.float32)
    f32[:4] = [np.nan, -0.0, np.inf, -np.inf]
    cases = [
        (BOOLEAN, pa.array(rng.random(1001) < 0.3)),
        (INT32, pa.array(rng.integers(*I32, 1000, dtype=np.int32, endpoint=True))),
        (INT64, pa.array(rng.integers(*I64, 1000, dtype=np.int64, endpoint=True))),
        (FLOAT, pa.array(f32)),
        (DOUBLE, pa.array(rng.standard_normal(1000))),
    ]
    for ptype, array in cases:
        body, table = plain_page(required("c", array))
        decoded, consumed = decode_plain(body, len(array), ptype)
        expected = table.column(0).to_numpy()
        assert consumed == len(body), f"type {ptype}: the PLAIN values fill the page"
        assert decoded.tobytes() == expected.tobytes(), f"type {ptype}: values differ from pyarrow"
        assert encode_plain(expected, ptype) == body, f"type {ptype}: our encoding differs"


def test_pyarrow_plain_pages_binary_int96_flba():
    strs = [b"", b"a", "é".encode(), b"x" * 10_000] + [
        bytes([i % 256]) * (i % 20) for i in range(500)
    ]
    body, table = plain_page(required("s", pa.array(strs, pa.binary())))
    (offsets, data), consumed = decode_plain(body, len(strs), BYTE_ARRAY)
    assert consumed == len(body)
    assert to_ref(BYTE_ARRAY, (offsets, data)) == table.column(0).to_pylist()
    assert encode_plain((offsets, data), BYTE_ARRAY) == body

    ts = pa.array(
        np.array(["2024-01-01T00:00:00.123456789", "1900-01-01", "2262-04-11"], "datetime64[ns]")
    )
    body, _ = plain_page(required("t", ts))
    decoded, consumed = decode_plain(body, 3, INT96)
    assert consumed == 36 and decoded.shape == (3, 12)
    for row, ns in zip(decoded, ts.cast(pa.int64()).to_pylist(), strict=True):
        nanos, julian = struct.unpack("<qi", bytes(row))
        assert (julian - 2440588) * 86_400_000_000_000 + nanos == ns, (
            "INT96 = nanos of day + Julian day"
        )

    fixed = pa.array([bytes([i]) * 5 for i in range(200)], pa.binary(5))
    body, table = plain_page(required("f", fixed))
    decoded, consumed = decode_plain(body, 200, FLBA, 5)
    assert consumed == 1000 and to_ref(FLBA, decoded) == table.column(0).to_pylist()
    assert encode_plain(decoded, FLBA, 5) == body


# -------------------------------------- encode_plain_binary_page: a v1 page from Arrow buffers


def _arrow_parts(arr: pa.Array):
    wide = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    validity, offsets, data = arr.buffers()
    offsets = np.frombuffer(offsets, np.int64 if wide else np.int32)[arr.offset :]
    data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    return offsets, data, None if validity is None else np.frombuffer(validity, np.uint8)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_binary_page_from_arrow_buffers_decodes_like_the_reference(data):
    from metaindex._native.plain import encode_plain_binary_page
    from tests.reference import rle as ref_rle

    # runs of nulls / values long enough for RLE runs, and scattered nulls between them
    blocks = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["null", "value", "mixed"]), st.integers(1, 300)), max_size=6
        )
    )
    values = []
    for kind, k in blocks:
        for _ in range(k):
            null = kind == "null" or (kind == "mixed" and data.draw(st.booleans()))
            values.append(None if null else data.draw(st.binary(max_size=20)))
    arrow_type = data.draw(st.sampled_from([pa.binary(), pa.large_binary()]))
    arr = pa.array(values, arrow_type)
    if data.draw(st.booleans()):  # null slots holding bytes must not leak into the page
        arr = pc.if_else(
            pa.array([v is None for v in values], pa.bool_()),
            pa.scalar(None, arrow_type),
            pa.array([v if v is not None else b"junk" for v in values], arrow_type),
        )
    skip = data.draw(st.integers(0, len(arr)))
    arr = arr.slice(skip)
    start = data.draw(st.integers(0, len(arr)))
    stop = data.draw(st.integers(start, len(arr)))
    offsets, raw, validity = _arrow_parts(arr)
    body, present = encode_plain_binary_page(offsets, raw, validity, arr.offset, start, stop, True)
    body = bytes(body)
    expected = arr.slice(start, stop - start).to_pylist()
    levels, used = ref_rle.decode_hybrid_prefixed(body, stop - start, 1)
    assert levels == [0 if v is None else 1 for v in expected]
    kept = [v for v in expected if v is not None]
    assert present == len(kept)
    assert body[used:] == ref.encode(kept, BYTE_ARRAY)
    # without levels: the values alone; without a bitmap every slot is a value
    body, present = encode_plain_binary_page(offsets, raw, validity, arr.offset, start, stop, False)
    assert bytes(body) == ref.encode(kept, BYTE_ARRAY) and present == len(kept)
    if arr.null_count == 0:
        body, present = encode_plain_binary_page(offsets, raw, None, 0, start, stop, True)
        levels, used = ref_rle.decode_hybrid_prefixed(bytes(body), stop - start, 1)
        assert levels == [1] * (stop - start) and bytes(body)[used:] == ref.encode(kept, BYTE_ARRAY)


def test_binary_page_levels_use_rle_runs_for_long_runs():
    from metaindex._native.plain import encode_plain_binary_page

    arr = pa.array([None] * 4000 + [b"x"] * 4000 + [None, b"y"] * 10)
    offsets, raw, validity = _arrow_parts(arr)
    body, present = encode_plain_binary_page(offsets, raw, validity, 0, 0, len(arr), True)
    level_bytes = struct.unpack_from("<I", bytes(body))[0]
    assert present == 4010 and level_bytes < 16  # two RLE runs and 3 bit-packed groups


def test_binary_page_rejects_bad_offsets():
    from metaindex._native.plain import encode_plain_binary_page

    validity = np.array([0b111], np.uint8)
    with pytest.raises(EncodeError):
        encode_plain_binary_page(
            np.array([0, 5, 3, 4], np.int32), np.zeros(8, np.uint8), validity, 0, 0, 3, True
        )
    with pytest.raises(EncodeError):
        encode_plain_binary_page(
            np.array([0, 5, 9, 12], np.int64), np.zeros(8, np.uint8), validity, 0, 0, 3, True
        )
    with pytest.raises(TypeError):  # the bitmap does not cover the slots
        encode_plain_binary_page(
            np.zeros(20, np.int32), np.zeros(8, np.uint8), validity, 0, 0, 19, True
        )
    # a null slot's bytes stay out of the page
    body, present = encode_plain_binary_page(
        np.array([0, 1, 5, 6], np.int32),
        np.arange(8, dtype=np.uint8),
        np.array([0b101], np.uint8),
        0,
        0,
        3,
        False,
    )
    assert present == 2 and bytes(body) == b"\x01\0\0\0\x00\x01\0\0\0\x05"
