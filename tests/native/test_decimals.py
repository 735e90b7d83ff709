"""FIXED_LEN_BYTE_ARRAY decimals to Arrow decimal128 (``metaindex._native.decimals``): every
width 1..16 and every sign gives the big-endian two's-complement integer, as Arrow reads it."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.decimals import to_decimal128


@settings(max_examples=100, deadline=None)
@given(width=st.integers(1, 16), data=st.data())
def test_every_width_and_sign_is_the_big_endian_integer(width, data):
    raw = data.draw(st.lists(st.binary(min_size=width, max_size=width), max_size=40))
    edges = [b"\x80" + b"\x00" * (width - 1), b"\x7f" + b"\xff" * (width - 1), b"\xff" * width]
    raw += data.draw(st.lists(st.sampled_from(edges), max_size=3))
    out = np.zeros(2 * len(raw), "<i8")
    to_decimal128(np.frombuffer(b"".join(raw), np.uint8), width, out)
    got = pa.Array.from_buffers(pa.decimal128(38, 0), len(raw), [None, pa.py_buffer(out)])
    assert [int(v) for v in got.to_pylist()] == [int.from_bytes(v, "big", signed=True) for v in raw]


def test_bad_widths_and_sizes_are_value_errors():
    with pytest.raises(ValueError, match="outside 1..16"):
        to_decimal128(b"", 17, np.zeros(0, np.uint8))
    with pytest.raises(ValueError, match="whole 3-byte values"):
        to_decimal128(b"\x00" * 4, 3, np.zeros(16, np.uint8))
    with pytest.raises(ValueError, match="out holds"):
        to_decimal128(b"\x00" * 3, 3, np.zeros(8, np.uint8))
    with pytest.raises(TypeError, match="writable"):
        to_decimal128(b"\x00" * 3, 3, bytes(16))
