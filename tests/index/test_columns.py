"""The collection kernels (cython_ext/colhash.pyx, distinct.pyx via metaindex.index.columns)
against the reference path (tests/reference/collect.py): same hashes in row order, same
distinct values, same bloom bits, for chunked, sliced, dictionary, null, NaN / -0.0 and
empty columns; and the kernels' argument checks."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import bloomset, colhash
from metaindex._native.distinct import ValueSet, count_distinct
from metaindex.bloom import SplitBlockBloomFilter
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex, columns
from metaindex.index.bloom import filter_bits
from tests.reference import collect as ref

# float bit patterns Spark holds equal: zeros of both signs, NaNs with any sign / payload
_DOUBLE_SPECIALS = [
    struct.unpack("<d", struct.pack("<Q", b))[0]
    for b in (
        0x0,
        0x8000000000000000,
        0x7FF8000000000000,
        0xFFF8000000000000,
        0x7FF0000000000001,
        0x7FFFFFFFFFFFFFFF,
    )
] + [1.5, -2.25, float("inf")]
_FLOAT_SPECIALS = [
    np.frombuffer(struct.pack("<I", b), np.float32)[0]
    for b in (0x0, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7F800001)
] + [np.float32(1.5), np.float32(-3.0)]

_TYPES = {
    "int64": (pa.int64(), st.integers(-5, 5)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "int8": (pa.int8(), st.integers(-3, 3)),
    "double": (pa.float64(), st.sampled_from(_DOUBLE_SPECIALS)),
    "float": (pa.float32(), st.sampled_from(_FLOAT_SPECIALS)),
    "string": (pa.string(), st.text(alphabet="abé\x00", max_size=12)),
    "large_binary": (pa.large_binary(), st.binary(max_size=20)),
    "fixed3": (pa.binary(3), st.binary(min_size=3, max_size=3)),
    "decimal": (pa.decimal128(12, 2), st.decimals(-(10**9), 10**9, places=2)),
    "timestamp_s": (pa.timestamp("s"), st.integers(-(10**6), 10**6)),
    "timestamp_us": (pa.timestamp("us", "UTC"), st.integers(-(10**6), 10**6)),
    "date32": (pa.date32(), st.integers(-1000, 1000)),
}


def _array(t, values):
    if pa.types.is_float32(t):
        return pa.array(
            np.array([0 if v is None else v for v in values], np.float32),
            mask=np.array([v is None for v in values], np.bool_),
        )
    return pa.array(values, t)


@st.composite
def columns_of(draw, name=None):
    """A column as the reader or pyarrow may hand it over: an Array or ChunkedArray, chunks
    sliced, some dictionary-encoded, with nulls."""
    name = name or draw(st.sampled_from(sorted(_TYPES)))
    t, values = _TYPES[name]
    chunks = []
    for _ in range(draw(st.integers(1, 3))):
        items = draw(
            st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values, max_size=40)
        )
        arr = _array(t, items)
        if len(arr) > 2 and draw(st.booleans()):
            a = draw(st.integers(0, len(arr) - 1))
            arr = arr.slice(a, draw(st.integers(0, len(arr) - a)))
        if draw(st.booleans()) and not pa.types.is_float32(t):
            arr = arr.dictionary_encode()
        chunks.append(arr)
    if all(pa.types.is_dictionary(c.type) for c in chunks) and len(chunks) == 1:
        return chunks[0]
    chunks = (
        [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
        if len({c.type for c in chunks}) > 1
        else chunks
    )
    return (
        pa.chunked_array(chunks, chunks[0].type)
        if draw(st.booleans()) or len(chunks) > 1
        else chunks[0]
    )


@settings(max_examples=300, deadline=None)
@given(columns_of(), st.sampled_from(columns.SCHEMES))
def test_hashes_match_the_reference_in_row_order(column, scheme):
    hashes, has_null = columns.value_hashes(column, scheme)
    want, want_null = ref.value_hashes(column, scheme)
    if pa.types.is_dictionary(column.type):  # each used dictionary entry once
        assert sorted(set(hashes.tolist())) == sorted(set(want))
    else:
        assert hashes.tolist() == want, "one canonical XXH64 per non-null value, in row order"
    assert has_null == want_null


@settings(max_examples=300, deadline=None)
@given(columns_of(), st.integers(0, 12))
def test_distinct_values_match_the_reference(column, limit):
    got, has_null = columns.distinct_values(column, limit)
    want, want_null = ref.distinct_values(column, limit)
    if want is None:
        assert got is None, f"more than {limit} distinct values must give None"
        return
    assert has_null == want_null
    assert got is not None and got.type == want.type
    assert _keys(got) == _keys(want), "the same distinct values"


def _keys(arr: pa.Array) -> list:
    """Distinct values as comparable keys: floats by bit pattern (NaN is not == NaN)."""
    if pa.types.is_floating(arr.type):
        width = arr.type.bit_width // 8
        raw = np.frombuffer(arr.buffers()[1], f"u{width}", len(arr), arr.offset * width)
        return sorted(raw.tolist())
    return sorted(arr.to_pylist(), key=repr)


@settings(max_examples=150, deadline=None)
@given(columns_of(), st.sampled_from([0.01, 0.3]), st.sampled_from(columns.SCHEMES))
def test_bloom_collect_has_the_reference_bits(column, fpp, scheme):
    if pa.types.is_boolean(column.type):
        return
    ix = BloomFilterIndex("c", fpp=fpp, max_bytes=1024, hash_scheme=scheme)
    got = ix.collect(column)
    assert got["bitset"].as_py() == ref.bloom_bitset(column, fpp, 1024, scheme), (
        "same size, same bits"
    )


@settings(max_examples=150, deadline=None)
@given(columns_of(), st.integers(1, 12))
def test_value_list_collect_matches_the_reference(column, limit):
    got = ValueListIndex("c", max_values=limit).collect(column)
    want, has_null = ref.distinct_values(column, limit)
    if want is None:
        assert not got.is_valid
        return
    assert got["has_null"].as_py() == has_null
    values = got["values"].values
    assert _bits_or_values(values) == _bits_or_values(want), "sorted, canonical, once each"


def _bits_or_values(arr: pa.Array) -> list:
    if pa.types.is_floating(arr.type):
        width = arr.type.bit_width // 8
        return np.frombuffer(arr.buffers()[1], f"u{width}", len(arr), arr.offset * width).tolist()
    return arr.to_pylist()


def test_floats_are_canonical_in_both_kernels():
    col = pa.array(_DOUBLE_SPECIALS[:6] + [None])
    got, has_null = columns.distinct_values(col, 10)
    bits = sorted(np.frombuffer(got.buffers()[1], np.uint64, len(got)).tolist())
    assert bits == [0, 0x7FF8000000000000], "-0.0 is 0.0; every NaN is the one quiet NaN"
    assert has_null
    hashes, _ = columns.value_hashes(col)
    assert len(set(hashes.tolist())) == 2, "zeros hash alike, NaNs hash alike"


def test_value_set_stops_at_the_limit_and_reads_no_further():
    s = ValueSet(8, 0, 3)
    assert s.add_fixed(None, np.array([1, 2, 2, 3], np.int64), 0, 4) is True
    assert s.add_fixed(None, np.array([4], np.int64), 0, 1) is False and s.overflow
    assert len(s) == 3


def test_long_and_short_strings_dedupe_by_bytes():
    words = ["", "a", "a\x00", "abcdefgh", "abcdefghi", "x" * 40, "x" * 40 + "y", "a"]
    arr = pa.array(words * 3)
    got, _ = columns.distinct_values(arr, 100)
    assert sorted(got.to_pylist()) == sorted(set(words)), (
        "a zero byte or a longer tail is another value"
    )
    # the last value of the data buffer: its 8-byte load must not run past the buffer
    tail = pa.array(["abc"]).slice(0)
    assert columns.distinct_values(tail, 5)[0].to_pylist() == ["abc"]


def test_dictionary_chunks_use_only_the_entries_indexed():
    dictionary = pa.array(["unused", "b", "a", None])
    indices = pa.array([1, 2, None, 1], pa.int8())
    col = pa.DictionaryArray.from_arrays(indices, dictionary)
    got, has_null = columns.distinct_values(col, 10)
    assert sorted(got.to_pylist()) == ["a", "b"] and has_null
    hashes, _ = columns.value_hashes(col)
    assert len(hashes) == 2, "a dictionary column hashes its used entries (each once)"
    via_null = pa.DictionaryArray.from_arrays(pa.array([3, 1], pa.int8()), dictionary)
    assert columns.distinct_values(via_null, 10)[1] is True, "an index to a null entry is null"


@pytest.mark.parametrize("n", [0, 1, 5000, 54_000, 100_000])
def test_count_distinct_with_a_limit(n):
    rng = np.random.default_rng(n)
    hashes = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2)
    hashes[: n // 3] = 0 if n else hashes[: n // 3]  # zero is counted apart from the slots
    exact = len(np.unique(hashes))
    assert count_distinct(hashes) == exact
    for limit in (0, 1, exact - 1, exact, exact + 5):
        if limit >= 0:
            assert count_distinct(hashes, limit) == min(exact, limit + 1)


@pytest.mark.parametrize(
    "n,distinct",
    [
        (1, 1),
        (3000, 2800),
        (3000, 2900),
        (100_000, 99_000),
        (100_000, 60_000),
        (100_000, 40_000),
        (100_000, 1000),
        (50_000, 7),
        (10, 3),
    ],
)
@pytest.mark.parametrize("fpp", [0.01, 0.001])
def test_filter_bits_are_for_ndv_of_the_exact_count(n, distinct, fpp):
    rng = np.random.default_rng(distinct)
    pool = rng.integers(1, 2**63, distinct, dtype=np.uint64)
    hashes = np.concatenate([pool, rng.choice(pool, n - distinct)])
    want = SplitBlockBloomFilter.for_ndv(distinct, fpp, 1 << 20)
    want.insert_hashes(hashes)
    bits = filter_bits(hashes, fpp, 1 << 20)
    assert len(bits) == want.num_bytes, "sized for the distinct count"
    assert np.array_equal(bits, want.bitset), "a folded filter has the smaller filter's bits"


@pytest.mark.parametrize("portable", [False, True])
def test_insert_new_sets_the_filter_bits_and_counts_a_lower_bound(portable):
    rng = np.random.default_rng(3)
    pool = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    hashes = np.concatenate([pool, pool[:500], rng.choice(pool, 700)])
    for size in (32, 1024, 65536):
        want = SplitBlockBloomFilter(size)
        want.insert_hashes(hashes)
        bits = np.zeros(size, np.uint8)
        fresh = bloomset.insert_new(bits, hashes, portable)
        assert np.array_equal(bits, want.bitset)
        assert fresh <= 3000, "a repeated hash never sets a bit"
    assert fresh >= 2990, "in a roomy filter nearly every new hash sets a bit"
    with pytest.raises(ValueError, match="power of two"):
        bloomset.insert_new(np.zeros(48, np.uint8), hashes)
    with pytest.raises(TypeError):
        bloomset.insert_new(b"\0" * 32, hashes)


def test_kernels_check_their_buffers():
    out = np.empty(4, np.uint64)
    with pytest.raises(ValueError, match="values holds"):
        colhash.fixed_hashes(None, np.zeros(3, np.int64), 0, 4, 8, 0, 0, out)
    with pytest.raises(ValueError, match="validity holds"):
        colhash.fixed_hashes(b"", np.zeros(4, np.int64), 0, 4, 8, 0, 1, out)
    with pytest.raises(ValueError, match="disagrees"):
        colhash.fixed_hashes(b"\x0f", np.zeros(4, np.int64), 0, 4, 8, 0, 1, out)
    with pytest.raises(ValueError, match="no room"):
        colhash.fixed_hashes(None, np.zeros(8, np.int64), 0, 8, 8, 0, 0, out)
    with pytest.raises(ValueError, match="offsets decrease"):
        colhash.binary_hashes(None, np.array([0, 3, 2], np.int32), 4, b"abc", 0, 2, 0, out)
    with pytest.raises(ValueError, match="outside data"):
        colhash.binary_hashes(None, np.array([5, 6], np.int32), 4, b"abc", 0, 1, 0, out)
    with pytest.raises(ValueError, match="offsets holds"):
        ValueSet(0).add_binary(None, np.array([0, 1], np.int32), 4, b"ab", 1, 1)
    with pytest.raises(TypeError, match="add_binary"):
        ValueSet(0).add_fixed(None, b"", 0, 0)
    with pytest.raises(ValueError, match="canon"):
        ValueSet(8, 4)


def test_collectors_agree_with_collect_over_the_whole_column():
    parts = [pa.array([3, None, 1]), pa.array([2, 2]), pa.array([7])]
    whole = pa.chunked_array(parts)
    for ix in (MinMaxIndex("c"), BloomFilterIndex("c"), ValueListIndex("c", max_values=10)):
        c = ix.collector(pa.int64())
        assert all(c.add(p) for p in parts), f"{ix!r} wants every part below its limit"
        assert c.result().equals(ix.collect(whole)), f"{ix!r}: parts give what collect gives"
    c = ValueListIndex("c", max_values=3).collector(pa.int64())
    assert c.add(parts[0]) and c.add(parts[1])
    assert c.add(parts[2]) is False, "a fourth distinct value: later parts cannot matter"
    assert not c.result().is_valid
    empty = ValueListIndex("c").collector(pa.string()).result().as_py()
    assert empty == {"values": [], "has_null": False}, "a file without row groups"


@pytest.mark.parametrize("portable", [False, True])
def test_insert_from_buffers_sets_the_bits_of_the_hashes(portable):
    rng = np.random.default_rng(5)
    ints = pa.array(rng.integers(0, 1000, 700), mask=rng.random(700) < 0.2).slice(3, 600)
    words = pa.array(
        [f"w{k}" * (k % 5) for k in rng.integers(0, 300, 500)], pa.large_string()
    ).slice(1)
    for arr, fn in ((ints, "fixed"), (words, "binary")):
        want = SplitBlockBloomFilter(2048)
        want.insert_hashes(columns.value_hashes(arr)[0])
        bits = np.zeros(2048, np.uint8)
        validity = arr.buffers()[0] if arr.null_count else None
        if fn == "fixed":
            fresh = bloomset.insert_fixed_new(
                bits, validity, arr.buffers()[1], arr.offset, len(arr), 8, 0, portable
            )
        else:
            fresh = bloomset.insert_binary_new(
                bits,
                validity,
                arr.buffers()[1],
                8,
                arr.buffers()[2],
                arr.offset,
                len(arr),
                portable,
            )
        assert np.array_equal(bits, want.bitset), f"{fn}: the bits of the value hashes"
        assert fresh <= len(pc.unique(arr.drop_null())), "one new insert per distinct value"


def test_empty_arrays_read_no_buffer():
    s = ValueSet(0)
    assert s.add_binary(None, b"", 4, b"", 0, 0) and len(s) == 0
    assert bloomset.insert_binary_new(np.zeros(32, np.uint8), None, b"", 4, b"", 0, 0) == 0
    assert colhash.binary_hashes(None, b"", 4, b"", 0, 0, 0, np.empty(0, np.uint64)) == 0
