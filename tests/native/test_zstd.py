"""ZSTD through the system's libzstd (cython_ext/zstd, metaindex._native.zstd) against the
``zstandard`` package (the reference: another build of the same library), and the page codec
layer on both paths (``NATIVE_ZSTD`` on and off): same bytes out, exact sizes, and every
corrupt, truncated or mis-sized frame a DecodeError."""

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import zstd
from metaindex.errors import DecodeError
from metaindex.parquet import compression as codecs

needs_libzstd = pytest.mark.skipif(not zstd.available, reason="no system libzstd.so.1")

payloads = st.one_of(
    st.binary(max_size=5000),
    st.builds(lambda b, k: b * k, st.binary(min_size=1, max_size=40), st.integers(1, 400)),
    st.builds(
        lambda n, seed: np.random.default_rng(seed).integers(0, 1 << 40, n).astype("<i8").tobytes(),
        st.integers(0, 3000),
        st.integers(0, 99),
    ),
)


def test_availability_is_reported():
    assert zstd.available in (True, False)
    assert (zstd.version is None) == (not zstd.available)
    if not zstd.available:
        with pytest.raises(RuntimeError, match="libzstd"):
            zstd.Decompressor()


@needs_libzstd
@settings(max_examples=150, deadline=None)
@given(raw=payloads, level=st.integers(-5, 19))
def test_decompress_into_matches_zstandard(raw, level):
    frame = zstandard.ZstdCompressor(level=level).compress(raw)
    out = np.full(len(raw), 0xAB, np.uint8)
    zstd.Decompressor().decompress_into(frame, out)
    assert out.tobytes() == zstandard.ZstdDecompressor().decompress(frame) == raw


@needs_libzstd
@settings(max_examples=60, deadline=None)
@given(raw=payloads, delta=st.sampled_from([-3, -1, 1, 7]))
def test_output_of_another_size_is_a_decode_error(raw, delta):
    frame = zstandard.compress(raw)
    size = len(raw) + delta
    if size < 0:
        return
    big = np.full(size + 16, 0xCD, np.uint8)
    with pytest.raises(DecodeError, match="ZSTD page"):
        zstd.Decompressor().decompress_into(frame, big[8 : 8 + size])
    assert (big[:8] == 0xCD).all() and (big[8 + size :] == 0xCD).all(), "wrote outside out"


@needs_libzstd
@pytest.mark.hostile
def test_every_strict_prefix_and_garbage_raise():
    raw = np.random.default_rng(1).integers(0, 1 << 40, 2000).astype("<i8").tobytes() + b"x" * 900
    frame = zstandard.compress(raw)
    d = zstd.Decompressor()
    out = np.empty(len(raw), np.uint8)
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            d.decompress_into(frame[:cut], out)
    for garbage in (b"\x00" * 64, b"\x28\xb5\x2f\xfd" + b"\xff" * 40, bytes(range(256))):
        with pytest.raises(DecodeError):
            d.decompress_into(garbage, out)
    flipped = bytearray(frame)
    flipped[len(flipped) // 2] ^= 0x55
    try:  # a flipped byte either fails to decode or decodes to other bytes, never past out
        d.decompress_into(bytes(flipped), out)
    except DecodeError:
        pass
    d.decompress_into(frame, out)  # the context is still usable after errors
    assert out.tobytes() == raw


@needs_libzstd
def test_concatenated_frames_and_empty_output():
    d = zstd.Decompressor()
    out = np.empty(6, np.uint8)
    d.decompress_into(zstandard.compress(b"abc") + zstandard.compress(b"def"), out)
    assert out.tobytes() == b"abcdef"
    d.decompress_into(zstandard.compress(b""), np.empty(0, np.uint8))
    d.decompress_into(b"", np.empty(0, np.uint8))  # nothing in, nothing out (an empty v2 page)
    with pytest.raises(DecodeError):
        d.decompress_into(b"", np.empty(1, np.uint8))
    with pytest.raises((BufferError, TypeError, ValueError)):
        d.decompress_into(zstandard.compress(b"abc"), b"...")  # not writable


@needs_libzstd
@settings(max_examples=60, deadline=None)
@given(raws=st.lists(payloads, max_size=6))
def test_decompress_pages_fills_a_run_in_order(raws):
    frames = [(zstandard.compress(r), 1) for r in raws]
    out = np.full(sum(map(len, raws)), 0xAB, np.uint8)
    zstd.Decompressor().decompress_pages(frames, [len(r) for r in raws], out)
    assert out.tobytes() == b"".join(raws)


@needs_libzstd
@pytest.mark.hostile
def test_decompress_pages_names_the_bad_page_and_keeps_the_ones_before():
    good = b"0123456789" * 50
    pages = [
        (zstandard.compress(good), 1),
        (zstandard.compress(good)[:-2], 1),
        (zstandard.compress(good), 1),
    ]
    out = np.zeros(1500, np.uint8)
    d = zstd.Decompressor()
    with pytest.raises(DecodeError, match="page 1 of 3"):
        d.decompress_pages(pages, [500, 500, 500], out)
    assert out[:500].tobytes() == good
    pages[1] = (zstandard.compress(good), 1)
    with pytest.raises(DecodeError, match="page 2 of 3: .*too small"):
        d.decompress_pages(pages, [500, 500, 499], out[:1499])
    with pytest.raises(DecodeError, match="page 2 of 3: .*to 500 bytes, header says 501"):
        d.decompress_pages(pages, [500, 500, 501], np.zeros(1501, np.uint8))
    with pytest.raises(DecodeError, match="negative"):
        d.decompress_pages(pages, [500, -1, 1001], out)
    with pytest.raises(ValueError):
        d.decompress_pages(pages, [500, 500], out)
    with pytest.raises(ValueError):
        d.decompress_pages(pages, [500, 500, 400], out)


# ------------------------------------------------ the page codec layer, on both paths


PATHS = [pytest.param("libzstd", marks=needs_libzstd), "zstandard"]


@pytest.fixture(params=PATHS)
def zstd_path(request, monkeypatch):
    monkeypatch.setattr(codecs, "NATIVE_ZSTD", request.param == "libzstd")
    return request.param


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=40, deadline=None)
@given(raws=st.lists(payloads, min_size=1, max_size=4))
def test_codec_layer_reads_zstd_pages_alike_on_both_paths(path, raws):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(codecs, "NATIVE_ZSTD", path == "libzstd")
        _read_alike(path, raws)


def _read_alike(zstd_path, raws):
    bodies = [codecs.compress(codecs.ZSTD, r) for r in raws]
    for raw, body in zip(raws, bodies, strict=True):
        assert bytes(codecs.decompress(codecs.ZSTD, body, len(raw))) == raw
        assert bytes(codecs.decompress(codecs.ZSTD, body, len(raw), True)) == raw
        assert bytes(codecs.decompress_scratch(codecs.ZSTD, body, len(raw))) == raw
        out = np.empty(len(raw), np.uint8)
        codecs.decompress_into(codecs.ZSTD, body, out)
        assert out.tobytes() == raw
    run = codecs.decompress_run(codecs.ZSTD, [(b, 1) for b in bodies], [len(r) for r in raws])
    if zstd_path == "zstandard":
        assert run is None, "without libzstd a run is read page by page"
    else:
        assert [bytes(page) for page, _ in run] == raws


@pytest.mark.hostile
def test_codec_layer_refuses_bad_zstd_pages_on_both_paths(zstd_path):
    raw = bytes(range(256)) * 40
    body = codecs.compress(codecs.ZSTD, raw)
    for size in (len(raw) - 1, len(raw) + 1):
        with pytest.raises(DecodeError):
            codecs.decompress(codecs.ZSTD, body, size)
        with pytest.raises(DecodeError):
            codecs.decompress_scratch(codecs.ZSTD, body, size)
        with pytest.raises(DecodeError):
            codecs.decompress_into(codecs.ZSTD, body, np.empty(size, np.uint8))
    for cut in range(0, len(body), 7):
        with pytest.raises(DecodeError):
            codecs.decompress(codecs.ZSTD, body[:cut], len(raw))
    # a header claiming far more than any zstd ratio allows goes to zstandard's checked path
    with pytest.raises(DecodeError):
        codecs.decompress(codecs.ZSTD, body[:20], 10**10)
    if zstd_path == "libzstd":
        assert codecs.decompress_run(codecs.ZSTD, [(body[:20], 1)], [10**10]) is None
