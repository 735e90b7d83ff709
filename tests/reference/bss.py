"""Pure-Python BYTE_STREAM_SPLIT over raw value bytes: the reference for cython_ext/bss."""

from __future__ import annotations


def encode(raw: bytes, width: int) -> bytes:
    """``raw``: the values' little-endian bytes back to back (n * width bytes)."""
    n = len(raw) // width
    return bytes(raw[i * width + k] for k in range(width) for i in range(n))


def decode(data: bytes, num_values: int, width: int) -> bytes:
    """Return the first ``num_values`` values' bytes; raise ValueError on a bad length."""
    if len(data) % width:
        raise ValueError("length is not a multiple of the width")
    stride = len(data) // width
    if num_values > stride:
        raise ValueError("too few values")
    return bytes(data[k * stride + i] for i in range(num_values) for k in range(width))
