"""FIXED_LEN_BYTE_ARRAY decimals to Arrow decimal128 in one pass (cython_ext/decimals.pyx)."""

from typing import Any

def to_decimal128(values: Any, width: int, out: Any) -> None:
    """``n * width`` big-endian two's-complement bytes (width 1..16) into ``out``: ``16 * n``
    bytes, two little-endian int64 limbs per value, low first, sign-extended. ValueError for
    a width outside 1..16, values not whole widths, or ``out`` of another size."""

def decode_plain_decimal128(data: Any, num_values: int, width: int, out: Any) -> None:
    """The first ``num_values`` PLAIN decimals of ``data`` (``width`` bytes each) as
    decimal128 into ``out`` (``16 * num_values`` bytes). DecodeError: a negative count or
    ``data`` too short; ValueError: a width outside 1..16 or ``out`` of another size."""

def plain_pages_to_decimal128(pages: list[tuple[Any, int]], width: int, out: Any) -> None:
    """A run of PLAIN pages' decimals (``(data, num_values)`` each) as decimal128 into
    ``out``, one after the other. DecodeError names the page that is too short or has a
    negative count; ValueError: a width outside 1..16 or ``out`` of another size."""

def spread_plain_decimal128(
    data: Any, width: int, bitmap: Any, bit_offset: int, n: int, present: int, out: Any
) -> None:
    """``present`` PLAIN decimals of ``data`` as decimal128 straight into their slots of
    ``out`` (``16 * n`` bytes; bit ``bit_offset + i`` of ``bitmap`` set: slot ``i`` takes the
    next value; null slots zero). DecodeError: ``data`` too short or the bitmap's set bits
    are not ``present``; ValueError: a width outside 1..16, counts out of range, ``out`` of
    another size."""

def gather_spread_decimal128(
    indices: Any, dictionary: Any, bitmap: Any, bit_offset: int, n: int, present: int, out: Any
) -> None:
    """The first ``present`` uint32 ``indices`` into ``dictionary`` (16-byte decimal128
    values) gathered straight into their slots of ``out`` (``16 * n`` bytes; null slots zero).
    DecodeError: too few indices, an index past the dictionary, or the bitmap's set bits not
    ``present``; ValueError: a dictionary not of whole 16-byte values, counts out of range,
    ``out`` of another size."""
