"""Dictionary building and gathering (metaindex._native.dictionary) against the pure-Python
reference (tests/reference/dictionary.py) and against pyarrow's dictionary pages."""

from __future__ import annotations

import io
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex._native import dictionary as Dn
from metaindex.errors import DecodeError
from tests.reference import delta as RD
from tests.reference import dictionary as R

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FLBA = range(8)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
rng = np.random.default_rng(7)


def f32(*bits):
    return np.array(bits, np.uint32).view(np.float32)


def f64(*bits):
    return np.array(bits, np.uint64).view(np.float64)


def arrow_pair(items, large=False, slice_from=0):
    arr = pa.array([b"pad"] * slice_from + list(items), pa.large_binary() if large else pa.binary())
    arr = arr.slice(slice_from)
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    data = (
        np.frombuffer(arr.buffers()[2], np.uint8)
        if arr.buffers()[2] is not None
        else np.zeros(0, np.uint8)
    )
    return offsets, data


def sample(pt, n, distinct, type_length=5):
    """``n`` values of ``pt`` drawn from ``distinct`` candidates, in the conventions format."""
    pick = rng.integers(0, distinct, n)
    if pt == INT32:
        return (rng.integers(-(2**31), 2**31, distinct).astype(np.int32))[pick]
    if pt == INT64:
        return rng.integers(-(2**63), 2**63, distinct, dtype=np.int64, endpoint=False)[pick]
    if pt == FLOAT:
        return rng.standard_normal(distinct).astype(np.float32)[pick]
    if pt == DOUBLE:
        return rng.standard_normal(distinct)[pick]
    if pt == INT96:
        return rng.integers(0, 256, (distinct, 12), dtype=np.uint8)[pick]
    if pt == FLBA:
        return rng.integers(0, 256, (distinct, type_length), dtype=np.uint8)[pick]
    words = [
        bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 30, distinct)
    ]
    return arrow_pair([words[i] for i in pick])


ALL_TYPES = [INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FLBA]


def items(values, pt, tl=5):
    return R.to_items(values, pt, tl)


def check_against_reference(values, pt, tl=5, limit=1 << 20):
    built = Dn.build_dictionary(values, pt, tl, limit)
    ref = R.Builder(pt, limit)
    ref_idx = ref.add(items(values, pt, tl))
    if ref_idx is None:
        assert built is None, "kernel should refuse a dictionary past the limit"
        return None
    assert built is not None, "kernel refused a dictionary within the limit"
    dictionary, indices = built
    assert indices.dtype == np.uint32, "indices are uint32"
    assert items(dictionary, pt, tl) == ref.dictionary(), "same entries in first-occurrence order"
    assert indices.tolist() == ref_idx, "same indices as the reference"
    back = Dn.take(dictionary, indices, pt, tl if pt == FLBA else 0)
    assert items(back, pt, tl) == items(values, pt, tl), (
        "take(build(values)) gives the values back bit-exactly"
    )
    return dictionary, indices


@pytest.mark.parametrize("pt", ALL_TYPES)
@pytest.mark.parametrize("n, distinct", [(0, 1), (1, 1), (50, 1), (1000, 10), (5000, 3000)])
def test_build_matches_reference(pt, n, distinct):
    check_against_reference(sample(pt, n, distinct), pt)


def test_float_bit_patterns_are_distinct_entries():
    vals = f32(
        0x00000000,
        0x80000000,
        0x7FC00000,
        0x7FC00001,
        0xFFC00000,
        0x7F800000,
        0xFF800000,
        0x00000000,
        0x7FC00001,
        0x80000000,
    )
    dictionary, indices = check_against_reference(vals, FLOAT)
    assert len(dictionary) == 7, "0.0, -0.0, three NaN payloads, +inf, -inf are 7 entries"
    assert dictionary.view(np.uint32).tolist() == [
        0,
        0x80000000,
        0x7FC00000,
        0x7FC00001,
        0xFFC00000,
        0x7F800000,
        0xFF800000,
    ]
    assert indices.tolist() == [0, 1, 2, 3, 4, 5, 6, 0, 3, 1]
    vals = f64(0, 1 << 63, 0x7FF8000000000000, 0x7FF8000000000001, 0, 1 << 63)
    dictionary, indices = check_against_reference(vals, DOUBLE)
    assert dictionary.view(np.uint64).tolist() == [
        0,
        1 << 63,
        0x7FF8000000000000,
        0x7FF8000000000001,
    ]
    back = Dn.take(dictionary, indices, DOUBLE)
    assert back.view(np.uint64).tolist() == vals.view(np.uint64).tolist(), "NaN payloads round-trip"


@pytest.mark.parametrize("large, slice_from", [(False, 0), (True, 0), (False, 4), (True, 1)])
def test_byte_array_inputs(large, slice_from):
    words = [b"", b"a", b"ab", b"", b"abcdefghijklmnopq", b"a", b"abcdefghijklmnopq", b"ab" * 40]
    dictionary, indices = check_against_reference(arrow_pair(words, large, slice_from), BYTE_ARRAY)
    offsets, data = dictionary
    assert offsets.dtype == np.int32 and offsets[0] == 0, "dictionary offsets are int32 from 0"
    assert indices.tolist() == [0, 1, 2, 0, 3, 1, 3, 4]


def test_byte_array_short_values_inline_keys():
    # values of <= 8 bytes are compared inside the slot as zero-padded words plus their length:
    # values that differ only by trailing zero bytes must stay distinct entries
    words = [
        b"",
        b"\0",
        b"\0\0",
        b"a",
        b"a\0",
        b"a\0\0",
        b"\0" * 8,
        b"\0" * 9,
        b"abcdefgh",
        b"abcdefgh\0",
        b"abcdefghi",
        b"\0a",
        b"a",
        b"",
        b"\0" * 8,
        b"abcdefgh\0",
    ]
    for slice_from in (0, 3):
        dictionary, indices = check_against_reference(
            arrow_pair(words, False, slice_from), BYTE_ARRAY
        )
        assert indices.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 3, 0, 6, 9], (
            "trailing zero bytes make distinct values"
        )
    # the last values sit at the very end of the data buffer (fewer than 8 bytes readable)
    for tail in ([b"xy"], [b"x", b"xy", b"xyz"], [b"longer than eight", b"q"]):
        check_against_reference(arrow_pair([b"q", b"xy", b"x"] + tail), BYTE_ARRAY)


@SETTINGS
@given(
    st.lists(st.lists(st.sampled_from([0, 97]), max_size=11).map(bytes), max_size=200),
    st.integers(0, 3),
    st.integers(0, 600),
)
def test_hypothesis_byte_array_near_collisions(words, slice_from, limit):
    # few byte values and lengths around the 8-byte inline bound: many look-alike keys
    check_against_reference(arrow_pair(words, False, slice_from), BYTE_ARRAY, limit=limit)


def test_fixed_width_inputs_accepted():
    vals = np.array([3, 1, 3], np.int64)
    assert Dn.build_dictionary(vals.tobytes(), INT64)[1].tolist() == [0, 1, 0], "raw bytes"
    assert Dn.build_dictionary(memoryview(vals), INT64)[1].tolist() == [0, 1, 0], "memoryview"
    assert Dn.build_dictionary(pa.array(vals).buffers()[1], INT64)[1].tolist() == [0, 1, 0], (
        "pyarrow Buffer"
    )
    with pytest.raises(TypeError):
        Dn.build_dictionary(vals.astype(np.int32), INT64)
    with pytest.raises(TypeError):
        Dn.build_dictionary(vals[::2], INT64)
    with pytest.raises(TypeError):
        Dn.build_dictionary(np.array([True]), BOOLEAN)
    with pytest.raises(TypeError):
        Dn.build_dictionary(np.zeros((2, 4), np.uint8), FLBA, 0)


def test_size_limit_is_the_plain_page_size():
    vals = np.arange(100, dtype=np.int32)
    assert Dn.build_dictionary(vals, INT32, 0, 400) is not None, "100 INT32 entries are 400 bytes"
    assert Dn.build_dictionary(vals, INT32, 0, 399) is None, "one byte less is past the limit"
    words = [b"abc", b"de", b"abc"]
    assert Dn.build_dictionary(arrow_pair(words), BYTE_ARRAY, 0, 13) is not None, "(4+3)+(4+2) = 13"
    assert Dn.build_dictionary(arrow_pair(words), BYTE_ARRAY, 0, 12) is None
    assert Dn.build_dictionary(np.zeros((3, 12), np.uint8), INT96, 0, 12) is not None
    assert Dn.build_dictionary(np.zeros(0, np.int64), INT64, 0, 0) is not None, (
        "empty fits in 0 bytes"
    )


def test_builder_across_pages_and_rollback():
    b = Dn.DictionaryBuilder(BYTE_ARRAY, 0, 40)
    ref = R.Builder(BYTE_ARRAY, 40)
    pages = [
        [b"aa", b"bb", b"aa"],
        [b"cc", b"bb"],
        [b"dddddddddd", b"eeeeeeeeee", b"aa"],
        [b"aa", b"ff"],
        [b"x" * 30],
    ]
    for page in pages:
        got = b.add(arrow_pair(page))
        want = ref.add(page)
        assert (got is None) == (want is None), f"limit decision for page {page}"
        if got is not None:
            assert got.tolist() == want, f"indices for page {page}"
        assert items(b.dictionary(), BYTE_ARRAY) == ref.dictionary(), "dictionary after the page"
        assert b.num_entries == len(ref.dictionary())
        assert b.plain_size == R.plain_size(ref.dictionary(), BYTE_ARRAY), (
            "plain size tracks entries"
        )
    assert items(b.dictionary(), BYTE_ARRAY) == [b"aa", b"bb", b"cc", b"ff"], (
        "the refused page left no entries behind"
    )


@pytest.mark.parametrize("pt", [INT32, INT64, DOUBLE, INT96, BYTE_ARRAY])
def test_rollback_after_rehash_keeps_lookups_working(pt):
    # a first page of 10 entries, then a page that grows the table several times and passes
    # the limit: the old entries must still be found afterwards, the new ones gone
    first = sample(pt, 10, 10)
    width = 4 + 29 if pt == BYTE_ARRAY else {INT32: 4, INT64: 8, DOUBLE: 8, INT96: 12}[pt]
    limit = width * 2000
    b = Dn.DictionaryBuilder(pt, 0, limit)
    idx1 = b.add(first)
    n1, size1 = b.num_entries, b.plain_size
    big = sample(pt, 20000, 20000)
    assert b.add(big) is None, "a page of 20000 distinct values passes the limit"
    assert (b.num_entries, b.plain_size) == (n1, size1), "refused page rolled back"
    assert b.add(first).tolist() == idx1.tolist(), "old entries are still found after rollback"
    assert b.num_entries == n1, "no duplicate entries after rollback"


def test_take_validates_indices():
    d = np.array([10, 20, 30], np.int64)
    assert Dn.take(d, np.array([2, 0, 1], np.uint32), INT64).tolist() == [30, 10, 20]
    with pytest.raises(DecodeError, match=r"index 3 at position 1 .* 3 entries"):
        Dn.take(d, np.array([0, 3, 1], np.uint32), INT64)
    with pytest.raises(DecodeError, match=r"index -1 at position 2"):
        Dn.take(d, np.array([0, 1, -1], np.int32), INT64)
    with pytest.raises(DecodeError, match=r"index 4294967295"):
        Dn.take(d, np.array([0xFFFFFFFF], np.uint32), INT64)
    with pytest.raises(DecodeError):
        Dn.take(np.zeros(0, np.int64), np.array([0], np.uint32), INT64)
    assert Dn.take(np.zeros(0, np.int64), np.zeros(0, np.uint32), INT64).shape == (0,)
    with pytest.raises(DecodeError, match="index 2"):
        Dn.take(arrow_pair([b"a", b"b"]), np.array([1, 2], np.uint32), BYTE_ARRAY)
    with pytest.raises(DecodeError, match="index 1"):
        Dn.take(np.zeros((1, 12), np.uint8), np.array([1], np.uint32), INT96)
    with pytest.raises(TypeError):
        Dn.take(d, np.array([0], np.int64), INT64)
    with pytest.raises(TypeError):
        Dn.take(np.array([True]), np.array([0], np.uint32), BOOLEAN)


@pytest.mark.parametrize("pt", ALL_TYPES)
def test_take_types_and_shapes(pt):
    vals = sample(pt, 300, 40)
    dictionary, indices = Dn.build_dictionary(vals, pt, 5)
    back = Dn.take(dictionary, indices, pt)  # FLBA width taken from the dictionary shape
    if pt == BYTE_ARRAY:
        assert back[0].dtype == np.int32 and back[0][0] == 0 and back[1].dtype == np.uint8
    else:
        assert back.dtype == vals.dtype and back.shape == vals.shape, "conventions dtype / shape"
    assert items(back, pt) == items(vals, pt)


@SETTINGS
@given(st.sampled_from(ALL_TYPES), st.lists(st.integers(0, 15), max_size=300), st.integers(0, 400))
def test_hypothesis_build_roundtrip(pt, picks, limit):
    pool = sample(pt, 16, 16)
    pool_items = items(pool, pt)
    chosen = [pool_items[i] for i in picks]
    values = R.from_items(chosen, pt, 5)
    check_against_reference(values, pt, 5, limit)


@pytest.mark.hostile
@SETTINGS
@given(
    st.sampled_from(ALL_TYPES),
    st.integers(0, 20),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=100),
)
def test_take_random_indices_value_or_decode_error(pt, size, raw):
    dictionary = sample(pt, size, max(size, 1)) if size else R.from_items([], pt, 5)
    entries = items(dictionary, pt)
    indices = np.array(raw, np.int32)
    try:
        want = R.take(entries, indices)
    except DecodeError:
        with pytest.raises(DecodeError, match="out of range"):
            Dn.take(dictionary, indices, pt, 5)
        with pytest.raises(DecodeError, match="out of range"):
            Dn.take(dictionary, indices.view(np.uint32), pt, 5)
    else:
        assert items(Dn.take(dictionary, indices, pt, 5), pt) == want, "valid indices gather"


# ------------------------------------------------------------------ pyarrow interop

ARROW_CASES = {
    "int32": (INT32, pa.int32(), lambda: rng.integers(-50, 50, 5000).astype(np.int32)),
    "int64": (
        INT64,
        pa.int64(),
        lambda: rng.integers(-(2**62), 2**62, 100)[rng.integers(0, 100, 5000)],
    ),
    "float": (
        FLOAT,
        pa.float32(),
        lambda: rng.standard_normal(300).astype(np.float32)[rng.integers(0, 300, 5000)],
    ),
    "double": (DOUBLE, pa.float64(), lambda: np.round(rng.standard_normal(5000), 1)),
    "string": (
        BYTE_ARRAY,
        pa.string(),
        lambda: [f"s{k}" * (k % 7) for k in rng.integers(0, 500, 5000)],
    ),
    "binary": (
        BYTE_ARRAY,
        pa.binary(),
        lambda: [bytes([k % 256]) * (k % 5) for k in rng.integers(0, 900, 5000)],
    ),
    "fixed": (
        FLBA,
        pa.binary(3),
        lambda: [struct.pack("<I", k)[:3] for k in rng.integers(0, 200, 5000)],
    ),
}


def arrow_values(arr, pt):
    if pt == BYTE_ARRAY:
        return (
            np.frombuffer(arr.buffers()[1], np.int32)[arr.offset : arr.offset + len(arr) + 1],
            np.frombuffer(arr.buffers()[2], np.uint8),
        )
    if pt == FLBA:
        return np.frombuffer(arr.buffers()[1], np.uint8).reshape(-1, arr.type.byte_width)
    return arr.to_numpy()


def pyarrow_dictionary(raw: bytes, pt: int, type_length: int) -> list[bytes]:
    """The entries of pyarrow's dictionary page, in page order."""
    meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    assert meta.has_dictionary_page, "pyarrow wrote a dictionary page"
    header, body = RD.dictionary_page_values(raw, meta.dictionary_page_offset)
    n = header["dictionary_page_header"]["num_values"]
    if pt == BYTE_ARRAY:  # PLAIN: 4-byte length + bytes
        out, pos = [], 0
        for _ in range(n):
            k = struct.unpack_from("<i", body, pos)[0]
            out.append(body[pos + 4 : pos + 4 + k])
            pos += 4 + k
        return out
    w = R.width_of(pt, type_length)
    assert len(body) == n * w, "PLAIN fixed-width dictionary page"
    return [body[i * w : (i + 1) * w] for i in range(n)]


@pytest.mark.parametrize("case", ARROW_CASES)
def test_pyarrow_dictionary_equals_ours(case):
    pt, typ, make = ARROW_CASES[case]
    arr = pa.array(make(), typ)
    buf = io.BytesIO()
    pq.write_table(pa.table({"c": arr}), buf, compression="NONE")
    raw = buf.getvalue()
    theirs = pyarrow_dictionary(raw, pt, 3)
    values = arrow_values(arr, pt)
    dictionary, indices = Dn.build_dictionary(values, pt, 3)
    ours = items(dictionary, pt, 3)
    assert set(ours) == set(theirs), "same distinct values as pyarrow's dictionary page"
    assert ours == theirs, "pyarrow orders its dictionary by first occurrence too"
    back = Dn.take(dictionary, indices, pt, 3)
    assert items(back, pt, 3) == items(values, pt, 3), "take reproduces the column"
    if pt == BYTE_ARRAY:
        col = pq.read_table(io.BytesIO(raw), read_dictionary=["c"]).column("c").combine_chunks()
        assert col.indices.to_numpy().tolist() == indices.tolist(), (
            "same indices as pyarrow's pages"
        )
        their_dict = arrow_values(col.dictionary.cast(pa.binary()), BYTE_ARRAY)
        assert items(Dn.take(their_dict, indices, pt), pt) == items(values, pt), (
            "our take over pyarrow's dictionary and indices reproduces the column"
        )
