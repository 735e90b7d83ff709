"""Decoding into a caller's buffer (``out=``): the same values as a fresh array, sizes checked,
truncated input still the typed error (the reader decodes a chunk's pages into one buffer)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import bss, delta, dictionary, plain
from metaindex.errors import DecodeError

INT32, INT64, FLOAT, DOUBLE, FLBA = 1, 2, 4, 5, 7
DTYPES = {INT32: np.int32, INT64: np.int64, FLOAT: np.float32, DOUBLE: np.float64}


def _values(ptype, raw: bytes):
    dtype = DTYPES[ptype]
    width = np.dtype(dtype).itemsize
    return np.frombuffer(raw[: len(raw) // width * width], dtype)


def _into(decode, *args, nbytes):
    """Decode into the middle of a larger buffer; the bytes around it must stay untouched."""
    big = np.full(nbytes + 16, 0xAB, np.uint8)
    out = big[8 : 8 + nbytes]
    got, used = decode(*args, out=out)
    assert got is out, "decoding into out returns out itself"
    assert (big[:8] == 0xAB).all() and (big[8 + nbytes :] == 0xAB).all(), "wrote outside out"
    return out, used


@pytest.mark.parametrize("ptype", sorted(DTYPES))
@settings(max_examples=40, deadline=None)
@given(raw=st.binary(max_size=400))
def test_plain_bss_delta_into_match_fresh(ptype, raw):
    values = _values(ptype, raw)
    width = values.dtype.itemsize
    encoded = plain.encode_plain(values, ptype)
    fresh, used = plain.decode_plain(encoded, len(values), ptype)
    out, used_into = _into(
        plain.decode_plain, encoded, len(values), ptype, 0, nbytes=len(values) * width
    )
    assert used == used_into and out.tobytes() == fresh.tobytes()
    encoded = bss.encode_byte_stream_split(values, ptype)
    out, _ = _into(
        bss.decode_byte_stream_split, encoded, len(values), ptype, 0, nbytes=len(values) * width
    )
    assert out.tobytes() == values.tobytes()
    if ptype in (INT32, INT64):
        encoded = delta.encode_delta_binary_packed(values, ptype)
        out, used = _into(
            delta.decode_delta_binary_packed,
            encoded,
            len(values),
            ptype,
            nbytes=len(values) * width,
        )
        assert out.tobytes() == values.tobytes() and used == len(encoded)


@settings(max_examples=40, deadline=None)
@given(
    dic=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20),
    idx=st.lists(st.integers(0, 19), max_size=50),
)
def test_take_into_matches_fresh(dic, idx):
    d = np.array(dic, np.int64)
    i = np.array([k % len(dic) for k in idx], np.uint32)
    out, _ = _into(
        lambda *a, out: (dictionary.take(*a, out=out), 0), d, i, INT64, nbytes=8 * len(i)
    )
    assert out.view(np.int64).tolist() == d[i].tolist()


def test_into_checks_size_and_writability():
    encoded = plain.encode_plain(np.arange(4, dtype=np.int64), INT64)
    with pytest.raises(ValueError):
        plain.decode_plain(encoded, 4, INT64, out=np.empty(31, np.uint8))
    with pytest.raises(TypeError):
        plain.decode_plain(encoded, 4, INT64, out=bytes(32))
    with pytest.raises(TypeError):
        plain.decode_plain(encoded, 4, 6, out=np.empty(32, np.uint8))  # BYTE_ARRAY
    with pytest.raises(DecodeError):
        dictionary.take(
            np.arange(3, dtype=np.int64),
            np.array([0, 3], np.uint32),
            INT64,
            out=np.empty(16, np.uint8),
        )


@pytest.mark.hostile
@pytest.mark.parametrize("ptype", [INT32, INT64])
def test_into_truncations_raise(ptype):
    values = np.arange(-50, 150, 7, dtype=DTYPES[ptype])
    width = values.dtype.itemsize
    n = len(values)
    for encoded, decode in (
        (plain.encode_plain(values, ptype), plain.decode_plain),
        (delta.encode_delta_binary_packed(values, ptype), delta.decode_delta_binary_packed),
    ):
        for cut in range(len(encoded)):
            with pytest.raises(DecodeError):
                args = (encoded[:cut], n, ptype) + ((0,) if decode is plain.decode_plain else ())
                decode(*args, out=np.empty(n * width, np.uint8))


# ------------------------------------------------- nullable flat columns: levels as a bitmap

from metaindex._native import pagevalues, rle  # noqa: E402
from metaindex._native.levels_assemble import (  # noqa: E402
    spread_fixed,
    spread_fixed_from,
    spread_offsets,
)


@settings(max_examples=150, deadline=None)
@given(
    levels=st.lists(st.integers(0, 1), max_size=300),
    offset=st.integers(0, 20),
    prefixed=st.booleans(),
    slack=st.integers(0, 2),
    width=st.sampled_from([4, 8, 12, 16]),
    data=st.data(),
)
def test_levels_bitmap_and_spread_match_numpy(levels, offset, prefixed, slack, width, data):
    lv = np.array(levels, np.uint32)
    m = len(lv)
    encoded = (rle.encode_rle_prefixed if prefixed else rle.encode_rle)(lv, 1)
    bitmap = np.zeros((offset + m + 7) // 8 + slack, np.uint8)
    present, used = pagevalues.decode_levels_bitmap(encoded, m, prefixed, bitmap, offset)
    bits = np.unpackbits(bitmap, bitorder="little")
    assert present == int(lv.sum()) and used == len(encoded)
    assert (bits[offset : offset + m] == lv).all(), "levels land at their bits"
    assert bits[:offset].sum() == 0 and bits[offset + m :].sum() == 0, "no bit outside the range"
    raw = np.frombuffer(data.draw(st.binary(min_size=m * width, max_size=m * width)), np.uint8)
    buf = raw.copy()
    spread_fixed(buf, width, bitmap, offset, m, present)
    expect = np.zeros((m, width), np.uint8)
    expect[lv.astype(bool)] = raw.reshape(m, width)[:present]
    assert (buf.reshape(m, width) == expect).all(), "value k in the k-th set slot, nulls zero"
    big = np.full((m + 2) * width, 0xAB, np.uint8)
    spread_fixed_from(
        raw[: present * width].tobytes(),
        big[width : width + m * width],
        width,
        bitmap,
        offset,
        m,
        present,
    )
    assert (big[width : width + m * width] == buf).all(), "spread from the page: the same slots"
    assert (big[:width] == 0xAB).all() and (big[width + m * width :] == 0xAB).all()


@settings(max_examples=150, deadline=None)
@given(
    levels=st.lists(st.integers(0, 1), max_size=300),
    bit_offset=st.integers(0, 20),
    first=st.integers(0, 5),
    wide=st.booleans(),
    data=st.data(),
)
def test_spread_offsets_match_numpy(levels, bit_offset, first, wide, data):
    """A page's packed end offsets spread over its slots: slot i ends where its value ends
    (a null slot where the slot before ends), entries outside the page untouched."""
    lv = np.array(levels, bool)
    m, present = len(lv), int(lv.sum())
    dtype = np.int64 if wide else np.int32
    lengths = np.array(data.draw(st.lists(st.integers(0, 40), min_size=present, max_size=present)))
    start = data.draw(st.integers(0, 1000))
    bitmap = np.packbits(np.concatenate([np.zeros(bit_offset, bool), lv]), bitorder="little")
    offsets = np.full(first + m + 3, -7, dtype)
    offsets[first] = start
    offsets[first + 1 : first + 1 + present] = start + np.cumsum(lengths)
    spread_offsets(offsets, bitmap, bit_offset, first, m, present)
    ends = np.full(m, start, np.int64)
    ends[lv] = start + np.cumsum(lengths)
    ends = np.maximum.accumulate(ends) if m else ends
    assert offsets[first + 1 : first + 1 + m].tolist() == ends.tolist()
    assert (offsets[:first] == -7).all() and (offsets[first + 1 + m :] == -7).all()
    assert offsets[first] == start


def test_spread_offsets_checks_counts():
    bitmap = np.array([0b1011], np.uint8)
    with pytest.raises(DecodeError):
        spread_offsets(np.zeros(5, np.int32), bitmap, 0, 0, 4, 2)  # the bitmap says 3
    with pytest.raises(ValueError):
        spread_offsets(np.zeros(4, np.int32), bitmap, 0, 0, 4, 3)  # 3 slots of room, 4 asked
    with pytest.raises(ValueError):
        spread_offsets(np.zeros(9, np.int64), bitmap, 0, 0, 9, 3)  # bits past the bitmap


def test_spread_checks_counts():
    bitmap = np.array([0b1011], np.uint8)
    with pytest.raises(DecodeError):
        spread_fixed(np.zeros(32, np.uint8), 8, bitmap, 0, 4, 2)  # the bitmap says 3
    with pytest.raises(ValueError):
        spread_fixed(np.zeros(24, np.uint8), 8, bitmap, 0, 4, 3)  # 3 slots of room, 4 asked
    with pytest.raises(DecodeError):
        spread_fixed_from(bytes(16), np.zeros(32, np.uint8), 8, bitmap, 0, 4, 2)
    with pytest.raises(ValueError):  # the source holds 2 of the 3 values
        spread_fixed_from(bytes(16), np.zeros(32, np.uint8), 8, bitmap, 0, 4, 3)
    with pytest.raises(ValueError):
        pagevalues.decode_levels_bitmap(
            rle.encode_rle(np.ones(9, np.uint32), 1), 9, False, np.zeros(1, np.uint8), 0
        )


@pytest.mark.hostile
def test_levels_bitmap_truncations_raise():
    lv = (np.arange(200) % 7 != 0).astype(np.uint32)
    for prefixed in (True, False):
        encoded = (rle.encode_rle_prefixed if prefixed else rle.encode_rle)(lv, 1)
        for cut in range(len(encoded)):
            with pytest.raises(DecodeError):
                pagevalues.decode_levels_bitmap(
                    encoded[:cut], 200, prefixed, np.zeros(25, np.uint8), 0
                )


# ---------------------------------------------- dictionary pages gathered straight to values

from metaindex.parquet import encoding as enc  # noqa: E402

WIDTHS = [1, 2, 3, 4, 8, 12, 16]  # the gather has a loop per width 1, 2, 4, 8, 16; others


@settings(max_examples=100, deadline=None)
@given(
    dic=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=300),
    picks=st.lists(st.integers(0, 10**6), max_size=1200),
    width=st.sampled_from(WIDTHS),
)
def test_dictionary_into_matches_take(dic, picks, width):
    d = np.array(dic, np.int64).view(np.uint8)[: len(dic) * 8].reshape(len(dic), 8)
    d = np.ascontiguousarray(np.resize(d, (len(dic), width)))
    idx = np.array([p % len(dic) for p in picks], np.uint32)
    page = enc.encode_indices(idx, len(dic))
    out = np.empty(len(idx) * width, np.uint8)
    used = pagevalues.decode_dictionary_into(page, len(idx), d.reshape(-1), width, out)
    assert used == (len(page) if len(idx) else 0)
    assert (out.reshape(-1, width) == d[idx]).all() if len(idx) else True


def _check_against_reference(idx: list, bits: int, entries: list, release: bool) -> None:
    """A page of indices ``idx`` (``bits`` wide) over the dictionary ``entries`` decodes, one
    page and as the second page of a run, to tests/reference's values, or raises where the
    reference finds an index past the dictionary, naming the first one."""
    from tests.reference import dictionary as ref_dict
    from tests.reference import rle as ref_rle

    n, size, width = len(idx), len(entries), len(entries[0])
    page = bytes([bits]) + ref_rle.encode_hybrid(idx, bits)
    raw = np.frombuffer(b"".join(entries), np.uint8)
    out = np.zeros(n * width, np.uint8)
    if max(idx) >= size:
        bad = next(i for i in idx if i >= size)  # the first one in page order
        with pytest.raises(DecodeError, match=f"index {bad} is out of range"):
            pagevalues.decode_dictionary_into(page, n, raw, width, out, release)
        with pytest.raises(DecodeError, match="page 1 of 2.*out of range"):
            pagevalues.decode_dictionary_pages([(page[:1], 0), (page, n)], raw, width, out, release)
        return
    want = b"".join(ref_dict.take(entries, idx))
    pagevalues.decode_dictionary_into(page, n, raw, width, out, release)
    assert out.tobytes() == want
    out[:] = 0
    pagevalues.decode_dictionary_pages([(page[:1], 0), (page, n)], raw, width, out, release)
    assert out.tobytes() == want


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    size=st.integers(1, 300),
    n=st.integers(1, 1500),
    width=st.sampled_from(WIDTHS),
    release=st.booleans(),
)
def test_dictionary_decoders_agree_with_the_reference_on_any_index(data, size, n, width, release):
    """Indices of a page's bit width, some possibly past the dictionary's end: the gather
    (every width, with and without the GIL, one page or a run) gives the reference's values,
    or a DecodeError exactly where the reference finds an index out of range."""
    bits = int(size - 1).bit_length() + data.draw(st.integers(0, 2), label="extra bits")
    idx = data.draw(
        st.lists(st.integers(0, (1 << bits) - 1), min_size=n, max_size=n), label="indices"
    )
    entries = [bytes((i * 7 + k) % 256 for k in range(width)) for i in range(size)]
    _check_against_reference(idx, bits, entries, release)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    size=st.integers(1, 4096),
    n=st.integers(1024, 9000),
    width=st.sampled_from([4, 8]),
    release=st.booleans(),
    runs=st.booleans(),
)
def test_fused_unpack_gather_agrees_with_the_reference(data, size, n, width, release, runs):
    """Pages of 1,024 values or more, 4- and 8-byte values, dictionaries of up to 4,096
    entries: bit-packed indices of up to 12 bits are unpacked and gathered at once from a
    padded dictionary (gather.pxd). Same values as the reference, or the reference's error
    for an index past the dictionary, wherever it lies (in a fused group or a tail)."""
    bits = max(1, min(12, int(size - 1).bit_length() + data.draw(st.integers(0, 1))))
    idx = np.random.default_rng(data.draw(st.integers(0, 999))).integers(0, size, n).tolist()
    if runs:  # RLE runs before the bit-packed ones
        idx = sorted(idx[: n // 2]) + idx[n // 2 :]
    if data.draw(st.booleans(), label="one index past the dictionary") and (1 << bits) > size:
        idx[data.draw(st.integers(0, n - 1))] = data.draw(st.integers(size, (1 << bits) - 1))
    entries = [
        int(i * 2654435761 % (1 << 8 * width)).to_bytes(width, "little") for i in range(size)
    ]
    _check_against_reference(idx, bits, entries, release)


def test_dictionary_into_rejects_bad_indices():
    page = enc.encode_indices(np.array([0, 1, 2, 3] * 20, np.uint32), 4)
    with pytest.raises(DecodeError):  # a dictionary of 3 entries: index 3 is out of range
        pagevalues.decode_dictionary_into(
            page, 80, np.zeros(24, np.uint8), 8, np.empty(640, np.uint8)
        )
    with pytest.raises(DecodeError):
        pagevalues.decode_dictionary_into(
            bytes([33]) + page[1:], 80, np.zeros(32, np.uint8), 8, np.empty(640, np.uint8)
        )


@pytest.mark.hostile
def test_dictionary_into_truncations_raise():
    idx = (np.arange(300) * 7 % 50).astype(np.uint32)
    page = enc.encode_indices(idx, 50)
    for cut in range(len(page)):
        with pytest.raises(DecodeError):
            pagevalues.decode_dictionary_into(
                page[:cut], 300, np.zeros(400, np.uint8), 8, np.empty(2400, np.uint8)
            )


# ------------------------------------- a run of a chunk's pages decoded in one kernel call


@settings(max_examples=60, deadline=None)
@given(
    dic=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=200),
    pages=st.lists(st.lists(st.integers(0, 10**6), max_size=600), max_size=6),
    width=st.sampled_from(WIDTHS),
    release=st.booleans(),
)
def test_dictionary_pages_match_page_by_page(dic, pages, width, release):
    d = np.array(dic, np.int64).view(np.uint8)[: len(dic) * 8].reshape(len(dic), 8)
    d = np.ascontiguousarray(np.resize(d, (len(dic), width)))
    idx = [np.array([p % len(dic) for p in page], np.uint32) for page in pages]
    batch = [(enc.encode_indices(i, len(dic)) if len(i) else b"", len(i)) for i in idx]
    total = sum(len(i) for i in idx)
    out = np.full(total * width, 0xAB, np.uint8)
    pagevalues.decode_dictionary_pages(batch, d.reshape(-1), width, out, release)
    want = d[np.concatenate(idx)] if total else np.zeros((0, width), np.uint8)
    assert (out.reshape(-1, width) == want).all()


@pytest.mark.parametrize("release", [False, True])
def test_dictionary_pages_name_the_bad_page_and_keep_the_ones_before(release):
    d = np.arange(10, dtype=np.int64)
    good = enc.encode_indices(np.arange(5000, dtype=np.uint32) % 10, 10)
    bad_index = enc.encode_indices(np.arange(5000, dtype=np.uint32) % 11, 11)
    out = np.zeros(15000 * 8, np.uint8)
    with pytest.raises(DecodeError, match="page 1 of 3.*index 10"):
        pagevalues.decode_dictionary_pages(
            [(good, 5000), (bad_index, 5000), (good, 5000)], d.view(np.uint8), 8, out, release
        )
    assert (out.view(np.int64)[:5000] == np.arange(5000) % 10).all()
    for bad in (bytes([33]) + good[1:], good[: len(good) // 2], b""):
        with pytest.raises(DecodeError, match="page 1 of 3"):
            pagevalues.decode_dictionary_pages(
                [(good, 5000), (bad, 5000), (good, 5000)], d.view(np.uint8), 8, out, release
            )
    with pytest.raises(DecodeError):
        pagevalues.decode_dictionary_pages([(good, -1)], d.view(np.uint8), 8, out[:0])
    with pytest.raises(ValueError):  # out must hold exactly the pages' values
        pagevalues.decode_dictionary_pages([(good, 5000)], d.view(np.uint8), 8, out)


@settings(max_examples=60, deadline=None)
@given(
    ptype=st.sampled_from([1, 2, 4, 5]),
    sizes=st.lists(st.integers(0, 700), max_size=6),
    data=st.data(),
)
def test_bss_pages_match_page_by_page(ptype, sizes, data):
    width = {1: 4, 2: 8, 4: 4, 5: 8}[ptype]
    dtype = {1: np.int32, 2: np.int64, 4: np.float32, 5: np.float64}[ptype]
    raws = [data.draw(st.binary(min_size=n * width, max_size=n * width)) for n in sizes]
    batch = [
        (
            bss.encode_byte_stream_split(
                np.frombuffer(r, np.uint8).reshape(-1, width).view(dtype).reshape(-1), ptype
            ),
            n,
        )
        for r, n in zip(raws, sizes, strict=True)
    ]
    out = np.empty(sum(sizes) * width, np.uint8)
    bss.decode_byte_stream_split_pages(batch, ptype, 0, out)
    assert out.tobytes() == b"".join(raws)


def test_bss_pages_check_every_page():
    page = bss.encode_byte_stream_split(np.arange(100, dtype=np.int32), 1)
    out = np.empty(300 * 4, np.uint8)
    with pytest.raises(DecodeError, match="page 1 of 3.*multiple"):
        bss.decode_byte_stream_split_pages([(page, 100), (page[:-1], 100), (page, 100)], 1, 0, out)
    with pytest.raises(DecodeError, match="page 2 of 3.*holds 100 values"):
        bss.decode_byte_stream_split_pages(
            [(page, 100), (page, 100), (page, 101)], 1, 0, np.empty(301 * 4, np.uint8)
        )
    with pytest.raises(DecodeError, match="does not apply"):
        bss.decode_byte_stream_split_pages([(page, 100)], 0, 0, out[: 100 * 4])


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), max_size=6),
    width=st.sampled_from([4, 8, 12]),
    tail=st.integers(0, 5),
    data=st.data(),
)
def test_plain_pages_copied_in_order(sizes, width, tail, data):
    raws = [data.draw(st.binary(min_size=n * width, max_size=n * width)) for n in sizes]
    batch = [
        (r + b"\x01" * tail, n) for r, n in zip(raws, sizes, strict=True)
    ]  # bytes after are left
    out = np.full(sum(sizes) * width, 0xAB, np.uint8)
    pagevalues.copy_plain_pages(batch, width, out)
    assert out.tobytes() == b"".join(raws)


def test_plain_pages_check_every_page():
    page = np.arange(100, dtype=np.int64).tobytes()
    out = np.zeros(300 * 8, np.uint8)
    with pytest.raises(DecodeError, match="page 1 of 3: truncated PLAIN") as info:
        pagevalues.copy_plain_pages([(page, 100), (page[:-1], 100), (page, 100)], 8, out)
    assert info.value.needed == 800 and info.value.remaining == 799
    assert (out.view(np.int64)[:100] == np.arange(100)).all(), "pages before it are copied"
    with pytest.raises(DecodeError, match="negative"):
        pagevalues.copy_plain_pages([(page, -1)], 8, out[:0])
    with pytest.raises(ValueError):  # out must hold exactly the pages' values
        pagevalues.copy_plain_pages([(page, 100)], 8, out)
