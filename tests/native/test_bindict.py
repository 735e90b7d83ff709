"""Dictionary-encoded BYTE_ARRAY pages gathered straight into a chunk's sink
(``metaindex._native.bindict``): pages built run by run (RLE and bit-packed runs of every bit
width 0..32) decode to what the pure-Python hybrid decoder and a list lookup give; nullable
pages spread as the page decoders' output does; out-of-range indices, bad entries, truncated
and damaged pages are DecodeErrors that leave the sink as it was."""

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from metaindex._native.bindict import BinaryDictionary, decode_into, decode_spread_into
from metaindex.errors import DecodeError
from metaindex.parquet import encoding as enc
from metaindex.parquet import sinks
from metaindex.parquet import values as vals
from tests.reference.rle import decode_hybrid, pack_lsb
from tests.reference.varint import uleb_encode

value = st.binary(max_size=40) | st.sampled_from([b"", b"user-1", b"x" * 16, b"y" * 17])


def _pair(items):
    offsets = np.zeros(len(items) + 1, np.int32)
    np.cumsum([len(v) for v in items], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(items), np.uint8).copy()


def _items(values):
    offsets, data = values
    return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]


def _sink(total):
    sink = sinks.BinarySink.make(vals.BYTE_ARRAY, total, 1 << 20, 0)
    assert sink is not None
    return sink


def _page(width, runs):
    """A values section: the bit-width byte, then ``runs`` ((rle, indices) each) as written."""
    out = bytearray([width])
    for rle, indices in runs:
        if rle:
            out += uleb_encode(len(indices) << 1)
            out += indices[0].to_bytes((width + 7) // 8, "little")
        else:
            groups = (len(indices) + 7) // 8
            out += uleb_encode(groups << 1 | 1)
            out += pack_lsb(indices + [0] * (8 * groups - len(indices)), width)
    return bytes(out)


@st.composite
def pages(draw, size, longest=1100):
    """``(bit width, runs, indices)``: a page of RLE and bit-packed runs of indices < ``size``
    (the last bit-packed run may hold padding past the page's values)."""
    width = draw(st.integers(max(0, (size - 1).bit_length()), 32))
    pick = st.integers(0, size - 1)
    runs, indices = [], []
    for rle in draw(st.lists(st.booleans(), max_size=6)):
        if rle:
            run = [draw(pick)] * draw(st.integers(1, 70))
        else:
            run = draw(st.lists(pick, min_size=1, max_size=longest))
            if len(run) % 8:  # only the page's last run may end inside its last group
                run += [0] * (8 - len(run) % 8)
        runs.append((rle, run))
        indices += run
    n = len(indices)
    if runs and not runs[-1][0]:
        n -= draw(st.integers(0, min(7, len(runs[-1][1]) - 1)))
    return width, runs, indices[:n]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), before=st.lists(value, max_size=3))
def test_pages_of_any_runs_and_width_decode_as_the_reference(data, before):
    dictionary = data.draw(st.lists(value, min_size=1, max_size=300, unique=True))
    width, runs, indices = data.draw(pages(len(dictionary)))
    raw = _page(width, runs)
    assert decode_hybrid(raw[1:], len(indices), width)[0] == indices
    sink = _sink(len(before) + len(indices))
    sink.dictionary(_pair(dictionary))
    enc.decode_binary_into(
        enc.encode_values(_pair(before), vals.BYTE_ARRAY, enc.PLAIN), len(before), enc.PLAIN, sink
    )
    assert decode_into(raw, len(indices), sink.entries, sink) == (len(raw) if indices else 0)
    assert _items(sink.values()) == before + [dictionary[i] for i in indices]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), fused=st.booleans(), two_pass=st.booleans())
def test_nullable_pages_spread_over_their_slots(data, fused, two_pass):
    """Values straight into their slots (``decode_spread_into``, in one pass or, with a long
    unused entry in the dictionary, two) or packed and spread afterwards: the same array. A
    page naming an index past the dictionary first is a DecodeError that writes nothing."""
    dictionary = data.draw(st.lists(value, min_size=1, max_size=20, unique=True))
    items = data.draw(st.lists(st.none() | st.sampled_from(dictionary), max_size=1200))
    index = {v: i for i, v in enumerate(dictionary)}
    present = [v for v in items if v is not None]
    levels = np.array([v is not None for v in items], np.int16)
    raw = enc.encode_indices(np.array([index[v] for v in present], np.uint32), len(dictionary))
    sink = _sink(len(items))
    sink.bitmap = np.zeros((len(items) + 7) // 8, np.uint8)
    sink.dictionary(_pair(dictionary + ([b"z" * 200] if two_pass else [])))
    if present and fused:
        bad = [index[v] for v in present]
        bad[data.draw(st.integers(0, len(bad) - 1))] = len(dictionary) + 1
        bits = np.packbits(levels.astype(np.uint8), bitorder="little")
        with pytest.raises(DecodeError, match="out of range"):
            decode_spread_into(
                enc.encode_indices(np.array(bad, np.uint32), len(dictionary) + 2),
                len(present),
                sink.entries,
                sink,
                bits,
                0,
                len(items),
            )
        assert (sink.count, sink.size) == (0, 0)
    sink.flat_page(
        enc.encode_levels_v1(levels, 1),
        len(items),
        True,
        lambda out, count: enc.decode_binary_into(
            raw, count, enc.RLE_DICTIONARY, sink, sink.entries
        ),
        spread=(
            lambda first, n, present: decode_spread_into(
                raw, present, sink.entries, sink, sink.bitmap, first, n
            )
        )
        if fused
        else None,
    )
    offsets, data_ = sink.values()
    arr = pa.Array.from_buffers(
        pa.binary(),
        len(items),
        [pa.py_buffer(sink.bitmap), pa.py_buffer(offsets), pa.py_buffer(data_)],
        null_count=len(items) - sink.present,
    )
    assert arr.to_pylist() == items


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_out_of_range_indices_are_decode_errors_that_write_nothing(data):
    dictionary = data.draw(st.lists(value, min_size=1, max_size=40, unique=True))
    width, runs, indices = data.draw(pages(len(dictionary)))
    if not runs:
        return
    k = data.draw(st.integers(0, len(runs) - 1))
    rle, run = runs[k]
    width = max(width, len(dictionary).bit_length())
    bad = data.draw(st.integers(len(dictionary), (1 << width) - 1))
    runs[k] = (rle, [bad] * len(run) if rle else run[:-1] + [bad])
    sink = _sink(len(indices) + 8)
    sink.dictionary(_pair(dictionary))
    n = sum(len(r) for _, r in runs)
    with pytest.raises(DecodeError, match=f"index {bad} at position"):
        decode_into(_page(width, runs), n, sink.entries, sink)
    assert (sink.count, sink.size) == (0, 0)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_strict_prefix_and_damaged_pages_are_decode_errors(data):
    dictionary = data.draw(st.lists(value, min_size=1, max_size=40, unique=True))
    width, runs, indices = data.draw(pages(len(dictionary), longest=24))
    raw = _page(width, runs)
    sink = _sink(len(indices))
    sink.dictionary(_pair(dictionary))
    for cut in range(len(raw) if indices else 0):
        with pytest.raises(DecodeError):
            decode_into(raw[:cut], len(indices), sink.entries, sink)
        assert (sink.count, sink.size) == (0, 0)
    damaged = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    try:
        decode_into(bytes(damaged), len(indices), sink.entries, sink)
    except DecodeError:
        assert (sink.count, sink.size) == (0, 0)
    else:  # still a valid page: its values are the reference's
        got = decode_hybrid(bytes(damaged[1:]), len(indices), damaged[0])[0]
        assert _items(sink.values()) == [dictionary[i] for i in got]


def test_bad_entries_header_errors_and_the_page_size_limit():
    sink = _sink(5000)
    offsets, data = _pair([b"a", b"bb"])
    sink.dictionary((offsets, data))
    with pytest.raises(DecodeError, match="no bit-width byte"):
        decode_into(b"", 1, sink.entries, sink)
    with pytest.raises(DecodeError, match="bit width 33 is over 32"):
        decode_into(b"\x21\x02\x00", 1, sink.entries, sink)
    with pytest.raises(DecodeError, match="negative value count"):
        decode_into(b"\x01", -1, sink.entries, sink)
    bad = BinaryDictionary(np.array([0, 5, 3, 3], np.int32), data)
    assert bad.size == 3
    for i in (0, 1):  # entry 0 reaches past the data, entry 1 decreases
        with pytest.raises(DecodeError, match=f"dictionary entry {i} spans bytes"):
            decode_into(_page(2, [(True, [i])]), 1, bad, sink)
        with pytest.raises(DecodeError, match=f"dictionary entry {i} spans bytes"):
            decode_into(_page(2, [(False, [2] * 7 + [i])]), 8, bad, sink)
    decode_into(_page(2, [(True, [2])]), 1, bad, sink)  # entry 2 is fine (empty)
    with pytest.raises(TypeError):
        BinaryDictionary(np.zeros(0, np.int32), data)
    big = BinaryDictionary(np.array([0, 1 << 20], np.int32), np.zeros(1 << 20, np.uint8))
    with pytest.raises(DecodeError, match="exceed 2\\*\\*31 - 1 bytes"):
        decode_into(_page(1, [(True, [0] * 3000)]), 3000, big, sink)
    assert (sink.count, sink.size) == (1, 0)
    decode_into(b"", 0, sink.entries, sink)
    assert _items(sink.values()) == [b""]


def test_spread_checks_the_validity_bits_and_writes_nothing_on_an_error():
    sink = _sink(8)
    sink.dictionary(_pair([b"a", b"bb"]))
    bitmap = np.array([0b0101], np.uint8)  # slots 0 and 2 of 4 valid
    page = _page(1, [(False, [1, 0, 0, 0, 0, 0, 0, 0])])
    with pytest.raises(DecodeError, match="set 2 of 4 slots, its values are 3"):
        decode_spread_into(page, 3, sink.entries, sink, bitmap, 0, 4)
    with pytest.raises(DecodeError, match="index 2 at position 1"):
        decode_spread_into(
            _page(2, [(False, [1, 2] + [0] * 6)]), 2, sink.entries, sink, bitmap, 0, 4
        )
    with pytest.raises(ValueError, match="cannot hold slots"):
        decode_spread_into(page, 2, sink.entries, sink, bitmap, 6, 4)
    assert (sink.count, sink.size) == (0, 0)
    decode_spread_into(page, 2, sink.entries, sink, bitmap, 0, 4)
    decode_spread_into(b"", 0, sink.entries, sink, np.zeros(1, np.uint8), 0, 3)
    assert _items(sink.values()) == [b"bb", b"", b"a", b"", b"", b"", b""]


def _readable_prefix(page, n):
    """The indices the reference reads from ``page`` before it fails (all ``n`` if it
    does not): the most values it decodes, found by bisection."""

    def read(k):
        try:
            return decode_hybrid(page[1:], k, page[0])[0]
        except Exception:  # not a page the reference reads this far
            return None

    if not page:
        return []
    lo, hi = 0, n  # read(lo) succeeds (0 values), find the largest k that does
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if read(mid) is None:
            hi = mid - 1
        else:
            lo = mid
    return read(lo) or []


@settings(max_examples=40, deadline=None)
@given(data=st.data(), before=st.lists(value, min_size=1, max_size=3))
def test_one_pass_and_two_pass_gathers_agree_on_values_and_errors(data, before):
    """A dictionary of even entries gathers a page in one pass (claimed at the longest entry,
    the rest given back); the same entries followed by one long unused entry take the two
    passes. Same values; a bad page is the same DecodeError and sets the sink back to what it
    held, and the next page then decodes as if the bad one had not been offered."""
    dictionary = data.draw(st.lists(st.binary(min_size=3, max_size=6), min_size=1, max_size=60))
    width, runs, indices = data.draw(pages(len(dictionary), longest=300))
    raw = _page(width, runs)
    damaged = bytearray(raw)
    if raw:
        damaged[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    # the long entry must not be named, not even before the damage makes the page unreadable:
    # it would make one index valid on one side only
    assume(len(dictionary) not in _readable_prefix(bytes(damaged), len(indices)))
    outcomes = []
    for extra in ([], [b"z" * 200]):  # one pass, two passes
        sink = _sink(len(before) + 2 * len(indices))
        sink.dictionary(_pair(dictionary + extra))
        enc.decode_binary_into(
            enc.encode_values(_pair(before), vals.BYTE_ARRAY, enc.PLAIN),
            len(before),
            enc.PLAIN,
            sink,
        )
        held = (sink.count, sink.size)
        try:
            decode_into(bytes(damaged), len(indices), sink.entries, sink)
            error = None
        except DecodeError as exc:
            error = re.sub(r"a dictionary of \d+", "", str(exc))  # the sizes differ
            assert (sink.count, sink.size) == held
        decode_into(raw, len(indices), sink.entries, sink)
        outcomes.append((error, _items(sink.values())))
    assert outcomes[0] == outcomes[1]
    got = outcomes[0][1]  # before, the damaged page's values if it was still valid, the page
    assert got[: len(before)] == before
    assert got[len(got) - len(indices) :] == [dictionary[i] for i in indices]


long_value = st.binary(min_size=33, max_size=90)


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(st.none() | value | long_value, max_size=600),
    shared=st.lists(value | long_value, min_size=1, max_size=30),
    picks=st.lists(st.integers(0, 29), max_size=600),
    binary=st.booleans(),
    nullable=st.booleans(),
    version=st.sampled_from(["1.0", "2.0"]),
    codec=st.sampled_from(["none", "zstd"]),
    fallback=st.booleans(),
)
def test_dictionary_chunks_read_as_pyarrow_wrote_them(
    values, shared, picks, binary, nullable, version, codec, fallback
):
    """String and binary chunks pyarrow writes dictionary-encoded (small pages, nulls and
    all-null pages, empty and long values, v1 and v2 pages, falling back to PLAIN part way
    when the dictionary page limit is small) read back as pyarrow's table."""
    import io

    import pyarrow.parquet as pq

    from metaindex.parquet import read_table

    column = values + [shared[p % len(shared)] for p in picks]
    if not nullable:
        column = [b"" if v is None else v for v in column]
    arr = pa.array(column, pa.binary())
    if not binary:
        arr = pa.array([None if v is None else v.hex() for v in column], pa.string())
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, nullable)]))
    buf = io.BytesIO()
    pq.write_table(
        table,
        buf,
        compression=codec,
        use_dictionary=True,
        data_page_version=version,
        data_page_size=256,
        write_batch_size=64,
        dictionary_pagesize_limit=300 if fallback else 1 << 20,
    )
    got = read_table(buf.getvalue())
    assert got.equals(pq.read_table(io.BytesIO(buf.getvalue())))
    assert got.equals(table)


@pytest.mark.parametrize("entries", [1, 3, 5, 1000])
def test_indices_past_the_dictionary_within_its_bit_width_are_decode_errors(entries):
    """The entry table is padded to a power of two of FLAGged entries: an index of the page's
    bit width past the dictionary (just past it, the widest, or past the padding when the
    width is larger) is a DecodeError on every path (one or two passes, packed or spread),
    and the sink is left as it was."""
    dictionary = [b"v%d" % i for i in range(entries)]
    for extra in ([], [b"z" * 200] + [b""] * 8):  # one pass, then two (a long unused entry)
        size = entries + len(extra)
        width = max(1, (size - 1).bit_length())
        for bad, w in ((size, width), ((1 << width) - 1, width), (1 << width, width + 2)):
            if bad < size:
                continue
            sink = _sink(64)
            sink.dictionary(_pair(dictionary + extra))
            indices = [0, 1 % entries, bad] + [0] * 5
            for rle, run in ((False, indices), (True, [bad] * 8)):
                page = _page(w, [(False, [0] * 8), (rle, run)])
                with pytest.raises(DecodeError, match=f"index {bad} at position"):
                    decode_into(page, 16, sink.entries, sink)
                assert (sink.count, sink.size) == (0, 0)
                bits = np.full(4, 0xFF, np.uint8)
                bits[0] = 0b1011_1111  # slot 6 null
                with pytest.raises(DecodeError, match=f"index {bad} at position"):
                    decode_spread_into(page, 16, sink.entries, sink, bits, 0, 17)
                assert (sink.count, sink.size) == (0, 0)
            decode_into(_page(w, [(False, [0] * 7 + [entries - 1])]), 8, sink.entries, sink)
            assert _items(sink.values()) == [dictionary[0]] * 7 + [dictionary[-1]]


def test_a_dictionary_with_a_bad_entry_gathers_pages_that_do_not_name_it():
    """A bad entry (offsets past the data) fails only the pages that name it; the others
    gather (in one pass) into the sink, packed or spread over their slots."""
    offsets, data = _pair([b"aa", b"bbb", b"c"])
    offsets[3] = 99  # entry 2 spans past the data
    entries = BinaryDictionary(offsets, data)
    sink = _sink(40)
    sink.bitmap = np.zeros(5, np.uint8)
    bits = np.array([0b0000_0101], np.uint8)  # slots 0 and 2 valid
    with pytest.raises(DecodeError, match="dictionary entry 2 spans bytes"):
        decode_into(_page(2, [(False, [0, 1, 2, 0, 0, 0, 0, 0])]), 8, entries, sink)
    with pytest.raises(DecodeError, match="dictionary entry 2 spans bytes"):
        decode_spread_into(_page(2, [(True, [2, 2])]), 2, entries, sink, bits, 0, 3)
    assert (sink.count, sink.size) == (0, 0)
    decode_into(_page(2, [(False, [1, 0, 1, 1, 0, 0, 0, 0])]), 5, entries, sink)
    decode_spread_into(_page(2, [(True, [1, 1])]), 2, entries, sink, bits, 0, 3)
    assert _items(sink.values()) == [b"bbb", b"aa", b"bbb", b"bbb", b"aa", b"bbb", b"", b"bbb"]


def test_a_required_chunk_with_a_damaged_index_is_a_decode_error():
    """A required string chunk whose third data page names indices past its dictionary (the
    page's packed indices overwritten with ones): a DecodeError naming the index, from the
    run of pages whose headers are read in C as from any other path."""
    import io

    import pyarrow.parquet as pq

    from metaindex.parquet import read_table
    from metaindex.parquet.pages import page_at

    rng = np.random.default_rng(5)
    words = pa.array([f"w{i}" for i in rng.integers(0, 1000, 20000)])
    table = pa.table([words], schema=pa.schema([pa.field("c", pa.string(), False)]))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", data_page_size=4096)
    raw = bytearray(buf.getvalue())
    assert read_table(bytes(raw)).equals(table)
    meta = pq.ParquetFile(io.BytesIO(bytes(raw))).metadata.row_group(0).column(0)
    start = meta.dictionary_page_offset
    chunk = bytes(raw[start : start + meta.total_compressed_size])
    pos, data_pages = 0, 0
    while data_pages < 3:
        header, body, pos = page_at(chunk, pos, start)
        data_pages += header.type == 0
    at = start + pos - len(body)  # the third data page's values section
    assert raw[at] == 10  # 1000 entries: indices of 10 bits, a bit-packed run first
    raw[at + 4 : at + 40] = b"\xff" * 36  # past the run's header: indices 1023
    with pytest.raises(DecodeError, match="dictionary index 1023 at position"):
        read_table(bytes(raw))
