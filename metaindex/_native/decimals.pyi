"""FIXED_LEN_BYTE_ARRAY decimals to Arrow decimal128 in one pass (cython_ext/decimals.pyx)."""

from typing import Any

def to_decimal128(values: Any, width: int, out: Any) -> None:
    """``n * width`` big-endian two's-complement bytes (width 1..16) into ``out``: ``16 * n``
    bytes, two little-endian int64 limbs per value, low first, sign-extended. ValueError for
    a width outside 1..16, values not whole widths, or ``out`` of another size."""
