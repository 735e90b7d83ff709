"""Page codecs: round trips, exact sizes, multi-member gzip, and hostile input."""

import gzip
import os
import struct

import lz4.block
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError, UnsupportedFeatureError
from metaindex.parquet import compression as c

WRITABLE = [c.UNCOMPRESSED, c.SNAPPY, c.GZIP, c.BROTLI, c.ZSTD, c.LZ4_RAW]
PAYLOADS = [b"", b"x", b"hello world " * 1000, os.urandom(5000), bytes(range(256)) * 64]


@pytest.mark.parametrize("codec", WRITABLE, ids=lambda x: c.CODEC_NAMES[x])
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: f"{len(p)}B")
def test_round_trip(codec, payload):
    packed = c.compress(codec, payload)
    assert c.decompress(codec, packed, len(payload)) == payload


@pytest.mark.parametrize("codec", WRITABLE[1:], ids=lambda x: c.CODEC_NAMES[x])
def test_size_that_lies_is_an_error(codec):
    payload = b"abc" * 500
    packed = c.compress(codec, payload)
    for wrong in (len(payload) - 1, len(payload) + 1, len(payload) + 4096):
        with pytest.raises(DecodeError):
            c.decompress(codec, packed, wrong)


def test_gzip_multi_member_pages_are_read_whole():
    data = gzip.compress(b"first-") + gzip.compress(b"second")
    assert c.decompress(c.GZIP, data, 12) == b"first-second"


def test_pyarrow_codecs_interoperate():
    import pyarrow as pa

    payload = b"parquet page " * 777
    for codec in (c.SNAPPY, c.GZIP, c.BROTLI, c.ZSTD, c.LZ4_RAW):
        theirs = pa.Codec(c.CODEC_NAMES[codec].lower()).compress(payload, asbytes=True)
        assert c.decompress(codec, theirs, len(payload)) == payload
        ours = c.compress(codec, payload)
        back = pa.Codec(c.CODEC_NAMES[codec].lower()).decompress(
            ours, decompressed_size=len(payload), asbytes=True
        )
        assert back == payload


def test_legacy_lz4_hadoop_framing_and_raw_fallback():
    payload = b"legacy lz4 " * 300
    block = lz4.block.compress(payload, store_size=False)
    framed = struct.pack(">II", len(payload), len(block)) + block
    assert c.decompress(c.LZ4, framed, len(payload)) == payload
    assert c.decompress(c.LZ4, block, len(payload)) == payload


def test_codec_names_and_unsupported():
    assert c.codec_id("zstd") == c.ZSTD
    assert c.codec_id("NONE") == c.UNCOMPRESSED
    assert c.codec_id(None) == c.UNCOMPRESSED
    with pytest.raises(ValueError, match="unknown compression"):
        c.codec_id("zip")
    with pytest.raises(TypeError):
        c.codec_id(1.5)
    with pytest.raises(UnsupportedFeatureError):
        c.compress(c.LZO, b"x")
    with pytest.raises(UnsupportedFeatureError):
        c.decompress(c.LZO, b"x", 1)
    with pytest.raises(DecodeError):
        c.decompress(99, b"x", 1)


@pytest.mark.hostile
@pytest.mark.parametrize("codec", WRITABLE[1:] + [c.LZ4], ids=lambda x: c.CODEC_NAMES[x])
def test_truncated_pages_raise(codec):
    payload = b"some page body " * 200
    packed = c.compress(codec if codec != c.LZ4 else c.LZ4_RAW, payload)
    for cut in range(0, len(packed), max(1, len(packed) // 40)):
        with pytest.raises(DecodeError):
            c.decompress(codec, packed[:cut], len(payload))


@pytest.mark.hostile
@settings(max_examples=150, deadline=None)
@given(
    codec=st.sampled_from(WRITABLE[1:] + [c.LZ4]),
    junk=st.binary(max_size=300),
    size=st.integers(0, 5000),
)
def test_garbage_never_escapes_as_anything_but_decode_error(codec, junk, size):
    try:
        out = c.decompress(codec, junk, size)
    except DecodeError:
        return
    assert len(out) == size


def test_zstd_decompress_into_exact_size_or_decode_error():
    import numpy as np
    import zstandard

    from metaindex.errors import DecodeError
    from metaindex.parquet.compression import ZSTD, decompress_into

    raw = np.arange(50_000, dtype=np.int64).tobytes()
    frame = zstandard.ZstdCompressor(level=1).compress(raw)
    out = np.empty(len(raw), np.uint8)
    decompress_into(ZSTD, frame, out)
    assert out.tobytes() == raw
    for bad_out, bad_frame in (
        (np.empty(len(raw) - 8, np.uint8), frame),  # frame too long
        (np.empty(len(raw) + 8, np.uint8), frame),  # frame too short
        (out, frame[: len(frame) // 2]),  # truncated
        (out, b"\x00" * 64),
    ):  # not a frame
        with pytest.raises(DecodeError):
            decompress_into(ZSTD, bad_frame, bad_out)


def test_zstd_transient_pages_checked_like_the_others():
    """A page decoded at once (``transient``) decompresses with zstandard: the frame's stated
    content size must be the header's (nothing is allocated from a lying frame)."""
    import numpy as np
    import zstandard

    from metaindex.errors import DecodeError

    raw = np.arange(50_000, dtype=np.int64).tobytes()
    frame = zstandard.ZstdCompressor(level=1).compress(raw)
    unsized = zstandard.ZstdCompressor(level=1, write_content_size=False).compress(raw)
    assert c.decompress(c.ZSTD, frame, len(raw), True) == raw
    assert c.decompress(c.ZSTD, unsized, len(raw), True) == raw
    for bad_frame, size in (
        (frame, len(raw) - 8),
        (frame, len(raw) + 8),
        (unsized, len(raw) - 8),
        (unsized, len(raw) + 8),
        (frame[: len(frame) // 2], len(raw)),
        (b"\x00" * 64, len(raw)),
        (frame, 10**12),
    ):
        with pytest.raises(DecodeError):
            c.decompress(c.ZSTD, bad_frame, size, True)


def test_snappy_decompress_into_exact_size_or_decode_error():
    import numpy as np
    import pyarrow as pa

    raw = np.arange(50_000, dtype=np.int64).tobytes()
    block = pa.Codec("snappy").compress(raw, asbytes=True)  # Arrow C++ wrote it
    out = np.empty(len(raw), np.uint8)
    c.decompress_into(c.SNAPPY, block, out)
    assert out.tobytes() == raw
    for bad_out, bad_block in (
        (np.empty(len(raw) - 8, np.uint8), block),  # preamble too long
        (np.empty(len(raw) + 8, np.uint8), block),  # preamble too short
        (out, block[: len(block) // 2]),  # truncated
        (out, block[:-1]),  # one byte short
        (out, b"\xff" * 6),
    ):  # no preamble
        with pytest.raises(DecodeError):
            c.decompress_into(c.SNAPPY, bad_block, bad_out)


def test_snappy_every_strict_prefix_is_a_decode_error():
    payload = os.urandom(300) + b"abc" * 300
    block = c.compress(c.SNAPPY, payload)
    for cut in range(len(block)):
        with pytest.raises(DecodeError):
            c.decompress(c.SNAPPY, block[:cut], len(payload))
