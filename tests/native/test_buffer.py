"""The shared read cursor and write buffer (cython_ext/buffer), against the Python reference."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.buffer import Reader, Writer
from metaindex.errors import DecodeError
from tests.reference import varint as ref

u64 = st.integers(0, 2**64 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(u64, max_size=50))
def test_uleb_matches_reference(values):
    w = Writer(1)
    for v in values:
        w.uleb(v)
    data = w.getvalue()
    assert data == b"".join(ref.uleb_encode(v) for v in values)
    r = Reader(data)
    assert [r.uleb() for _ in values] == values
    assert r.remaining == 0


@given(st.lists(i64, max_size=50))
def test_zigzag_matches_reference(values):
    w = Writer()
    for v in values:
        w.zigzag(v)
    data = w.getvalue()
    assert data == b"".join(ref.uleb_encode(ref.zigzag_encode(v)) for v in values)
    r = Reader(data)
    assert [r.zigzag() for _ in values] == values


def test_fixed_width_little_endian_and_growth():
    w = Writer(1)
    w.u32le(0x01020304).u64le(0x0102030405060708).write(b"x" * 100_000)
    data = w.getvalue()
    assert data[:12] == bytes([4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1])
    assert len(data) == 100_012, "the write buffer must never drop bytes while growing"
    r = Reader(memoryview(data))
    assert (r.u32le(), r.u64le()) == (0x01020304, 0x0102030405060708)
    assert r.read(100_000) == b"x" * 100_000


def test_empty_buffer_reads_nothing_without_error():
    r = Reader(b"")
    assert r.read(0) == b""
    with pytest.raises(DecodeError):
        r.read(1)


def test_short_read_reports_offset_needed_remaining():
    r = Reader(b"abcde", base=100)
    r.read(2)
    with pytest.raises(DecodeError) as info:
        r.read(4)
    assert (info.value.offset, info.value.needed, info.value.remaining) == (102, 4, 3)
    with pytest.raises(DecodeError):
        r.read(-1)


@pytest.mark.hostile
def test_varint_limits():
    with pytest.raises(DecodeError, match="longer than 10|overflows"):
        Reader(b"\x80" * 10 + b"\x01").uleb()
    with pytest.raises(DecodeError, match="overflows 64 bits"):
        Reader(b"\xff" * 9 + b"\x02").uleb()
    assert Reader(b"\xff" * 9 + b"\x01").uleb() == 2**64 - 1
    for cut in range(10):
        with pytest.raises(DecodeError, match="truncated"):
            Reader((b"\xff" * 9 + b"\x01")[:cut]).uleb()


@pytest.mark.hostile
def test_size_prefix_past_the_end():
    with pytest.raises(DecodeError, match="exceeds"):
        Reader(b"\x05abc").size_prefixed()
    assert Reader(b"\x03abc").size_prefixed() == b"abc"


@pytest.mark.hostile
@settings(max_examples=300)
@given(st.binary(max_size=24))
def test_random_bytes_decode_like_the_reference(data):
    r = Reader(data)
    pos = 0
    while pos < len(data):
        try:
            expected, pos = ref.uleb_decode(data, pos)
        except ValueError:
            with pytest.raises(DecodeError):
                r.uleb()
            return
        assert r.uleb() == expected
