"""BYTE_ARRAY pages decoded straight into one chunk's output (``sinks.BinarySink`` and the
``*_into`` kernels): page after page, in any mix of encodings, the sink holds what the page
decoders return joined; a damaged page is a DecodeError that leaves the sink as it was; the
buffer grows from any first guess, and offsets turn int64 when the values pass the int32
limit."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError
from metaindex.parquet import encoding as enc
from metaindex.parquet import sinks
from metaindex.parquet import values as vals

BYTE_ARRAY = vals.BYTE_ARRAY
ENCODINGS = [enc.PLAIN, enc.DELTA_LENGTH_BYTE_ARRAY, enc.DELTA_BYTE_ARRAY, enc.RLE_DICTIONARY]


def _pair(items):
    lengths = np.array([len(v) for v in items], np.int64)
    offsets = np.zeros(len(items) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.frombuffer(b"".join(items), np.uint8).copy()


def _encode(items, encoding, dictionary):
    """A page's values section; dictionary pages index ``dictionary`` (a list of values)."""
    if encoding == enc.RLE_DICTIONARY:
        index = {v: i for i, v in enumerate(dictionary)}
        return enc.encode_indices(np.array([index[v] for v in items], np.uint32), len(dictionary))
    return enc.encode_values(_pair(items), BYTE_ARRAY, encoding)


def _items(values):
    offsets, data = values
    return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]


def _sink(total, guess):
    sink = sinks.BinarySink.make(BYTE_ARRAY, total, 1 << 20, guess)
    assert sink is not None
    return sink


value = st.binary(max_size=40) | st.sampled_from([b"", b"user-1", b"user-12", b"x" * 20])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), guess=st.sampled_from([0, 1, 64, 1 << 16]), wide=st.booleans())
def test_pages_into_one_sink_equal_the_page_decoders_joined(data, guess, wide):
    dictionary = data.draw(st.lists(value, min_size=1, max_size=8, unique=True))
    page_list = []
    for encoding in data.draw(st.lists(st.sampled_from(ENCODINGS), max_size=6)):
        pick = st.sampled_from(dictionary) if encoding == enc.RLE_DICTIONARY else value
        page_list.append((encoding, data.draw(st.lists(pick, max_size=30))))
    total = sum(len(items) for _, items in page_list) + data.draw(st.integers(0, 3))
    limit = sinks._INT32_MAX
    if wide:  # offsets turn int64 as soon as the values pass this many bytes
        sinks._INT32_MAX = data.draw(st.integers(0, 200))
    try:
        sink = _sink(total, guess)
        sink.dictionary(_pair(dictionary))
        expected = []
        for encoding, items in page_list:
            raw = _encode(items, encoding, dictionary)
            if encoding != enc.RLE_DICTIONARY:  # the page decoders agree with the sink
                decoded, _ = enc.decode_values(raw, len(items), BYTE_ARRAY, encoding)
                assert _items(decoded) == items
            enc.decode_binary_into(raw, len(items), encoding, sink, sink.entries)
            expected += items
        offsets, _ = sink.values()
        assert offsets.dtype == (np.int64 if sink.size > sinks._INT32_MAX else np.int32)
    finally:
        sinks._INT32_MAX = limit
    assert offsets[0] == 0 and len(offsets) == len(expected) + 1
    assert _items(sink.values()) == expected
    assert vals.to_arrow(sink.values(), BYTE_ARRAY, pa.binary()).to_pylist() == expected


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_damaged_page_is_a_decode_error_and_leaves_the_sink_as_it_was(data):
    dictionary = data.draw(st.lists(value, min_size=1, max_size=5, unique=True))
    first = data.draw(st.lists(st.sampled_from(dictionary), max_size=10))
    items = data.draw(st.lists(st.sampled_from(dictionary), min_size=1, max_size=20))
    encoding = data.draw(st.sampled_from(ENCODINGS))
    sink = _sink(len(first) + len(items), 0)
    sink.dictionary(_pair(dictionary))
    enc.decode_binary_into(
        _encode(first, enc.PLAIN, dictionary), len(first), enc.PLAIN, sink, sink.entries
    )
    raw = bytearray(_encode(items, encoding, dictionary))
    cut = data.draw(st.integers(0, len(raw)))
    damaged = raw[:cut]
    for _ in range(data.draw(st.integers(0, 3))):
        if damaged:
            damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    before = (sink.count, sink.size)
    try:
        enc.decode_binary_into(bytes(damaged), len(items), encoding, sink, sink.entries)
    except DecodeError:
        assert (sink.count, sink.size) == before
    else:  # the damage left a valid page of as many values
        assert sink.count == before[0] + len(items)
    assert _items(sink.values())[: len(first)] == first


def test_values_past_the_chunk_and_pages_without_a_dictionary_are_decode_errors():
    items = [b"a", b"bc"]
    sink = _sink(1, 0)
    with pytest.raises(DecodeError, match="more values than the 1"):
        enc.decode_binary_into(_encode(items, enc.PLAIN, None), 2, enc.PLAIN, sink)
    assert (sink.count, sink.size) == (0, 0)
    with pytest.raises(DecodeError, match="no dictionary page"):
        enc.decode_binary_into(b"\x01\x02\x00", 1, enc.RLE_DICTIONARY, sink)
    with pytest.raises(DecodeError, match="BYTE_STREAM_SPLIT does not apply"):
        enc.decode_binary_into(b"", 0, enc.BYTE_STREAM_SPLIT, sink)


def test_a_hostile_value_count_gets_no_sink():
    """As for fixed-width chunks: a footer's value count out of proportion to the chunk's
    bytes takes the page-by-page path, which allocates only what pages prove they hold."""
    assert sinks.BinarySink.make(BYTE_ARRAY, 10**12, 100, 10**15) is None
    assert sinks.BinarySink.make(vals.INT64, 10, 100, 100) is None
    sink = sinks.BinarySink.make(BYTE_ARRAY, 10, 100, 10**15)
    assert len(sink.data) <= 64 * 100 + (1 << 20)  # the footer's guess is capped too
