"""Decoding into a caller's buffer (``out=``): the same values as a fresh array, sizes checked,
truncated input still the typed error (the reader decodes a chunk's pages into one buffer)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from metaindex._native import bss, delta, dictionary, plain
from metaindex.errors import DecodeError

INT32, INT64, FLOAT, DOUBLE, FLBA = 1, 2, 4, 5, 7
DTYPES = {INT32: np.int32, INT64: np.int64, FLOAT: np.float32, DOUBLE: np.float64}


def _values(ptype, raw: bytes):
    dtype = DTYPES[ptype]
    width = np.dtype(dtype).itemsize
    return np.frombuffer(raw[:len(raw) // width * width], dtype)


def _into(decode, *args, nbytes):
    """Decode into the middle of a larger buffer; the bytes around it must stay untouched."""
    big = np.full(nbytes + 16, 0xAB, np.uint8)
    out = big[8:8 + nbytes]
    got, used = decode(*args, out=out)
    assert got is out, "decoding into out returns out itself"
    assert (big[:8] == 0xAB).all() and (big[8 + nbytes:] == 0xAB).all(), "wrote outside out"
    return out, used


@pytest.mark.parametrize("ptype", sorted(DTYPES))
@settings(max_examples=40, deadline=None)
@given(raw=st.binary(max_size=400))
def test_plain_bss_delta_into_match_fresh(ptype, raw):
    values = _values(ptype, raw)
    width = values.dtype.itemsize
    encoded = plain.encode_plain(values, ptype)
    fresh, used = plain.decode_plain(encoded, len(values), ptype)
    out, used_into = _into(plain.decode_plain, encoded, len(values), ptype, 0,
                           nbytes=len(values) * width)
    assert used == used_into and out.tobytes() == fresh.tobytes()
    encoded = bss.encode_byte_stream_split(values, ptype)
    out, _ = _into(bss.decode_byte_stream_split, encoded, len(values), ptype, 0,
                   nbytes=len(values) * width)
    assert out.tobytes() == values.tobytes()
    if ptype in (INT32, INT64):
        encoded = delta.encode_delta_binary_packed(values, ptype)
        out, used = _into(delta.decode_delta_binary_packed, encoded, len(values), ptype,
                          nbytes=len(values) * width)
        assert out.tobytes() == values.tobytes() and used == len(encoded)


@settings(max_examples=40, deadline=None)
@given(dic=st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=20),
       idx=st.lists(st.integers(0, 19), max_size=50))
def test_take_into_matches_fresh(dic, idx):
    d = np.array(dic, np.int64)
    i = np.array([k % len(dic) for k in idx], np.uint32)
    out, _ = _into(lambda *a, out: (dictionary.take(*a, out=out), 0), d, i, INT64, nbytes=8 * len(i))
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
        dictionary.take(np.arange(3, dtype=np.int64), np.array([0, 3], np.uint32), INT64,
                        out=np.empty(16, np.uint8))


@pytest.mark.hostile
@pytest.mark.parametrize("ptype", [INT32, INT64])
def test_into_truncations_raise(ptype):
    values = np.arange(-50, 150, 7, dtype=DTYPES[ptype])
    width = values.dtype.itemsize
    n = len(values)
    for encoded, decode in ((plain.encode_plain(values, ptype), plain.decode_plain),
                            (delta.encode_delta_binary_packed(values, ptype),
                             delta.decode_delta_binary_packed)):
        for cut in range(len(encoded)):
            with pytest.raises(DecodeError):
                args = (encoded[:cut], n, ptype) + ((0,) if decode is plain.decode_plain else ())
                decode(*args, out=np.empty(n * width, np.uint8))
