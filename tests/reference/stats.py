"""Pure-Python min/max in Parquet's sort orders: the reference for cython_ext/stats.

Each function takes plain Python values (ints, floats, 16-bit patterns, bytes) and returns what
the kernel of the same name returns, using Python's own comparisons on keys that spell the sort
order out: unsigned integers are masked, half floats are decoded with ``struct``, signed byte
strings become ``int.from_bytes(..., signed=True)``.
"""

from __future__ import annotations

import math
import struct


def minmax_int(values: list[int], bits: int, unsigned: bool):
    """(min, max) of two's complement ``bits``-bit integers; None for no values."""
    if not values:
        return None
    if unsigned:
        mask = (1 << bits) - 1
        keys = [v & mask for v in values]
    else:
        keys = list(values)
    return min(keys), max(keys)


def minmax_float(values: list[float]):
    """(min, max, nan_count) of the non-NaN values; None bounds when all are NaN."""
    finite = [v for v in values if not math.isnan(v)]
    nans = len(values) - len(finite)
    if not finite:
        return None, None, nans
    return min(finite), max(finite), nans


def half(bits: int) -> float:
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def minmax_float16(bits: list[int]):
    """(min, max, nan_count) over 16-bit half patterns; bounds returned as floats."""
    return minmax_float([half(b) for b in bits])


def minmax_bool(values: list[bool]):
    if not values:
        return None
    return all(values), any(values)


def signed_value(raw: bytes) -> int:
    """A big-endian two's complement integer (the empty string is 0)."""
    return int.from_bytes(raw, "big", signed=True)


def minmax_bytes(values: list[bytes], signed: bool):
    """(i_min, i_max): first positions of a smallest and a largest value; None for none."""
    if not values:
        return None
    key = signed_value if signed else bytes
    idx = range(len(values))
    return min(idx, key=lambda i: key(values[i])), max(idx, key=lambda i: (key(values[i]), -i))
