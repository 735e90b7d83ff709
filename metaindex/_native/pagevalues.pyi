"""Page values straight into a column chunk's buffers (cython_ext/pagevalues.pyx)."""

from typing import Any

from numpy.typing import NDArray
from typing_extensions import Buffer

# numpy's stubs give ndarray the buffer protocol (``__buffer__``) only for Python >= 3.12
_Bytes = Buffer | NDArray[Any]

def decode_levels_bitmap(
    data: Buffer, num_values: int, prefixed: bool, bitmap: Any, bit_offset: int
) -> tuple[int, int]:
    """Width-1 levels ORed into a zeroed validity bitmap at ``bit_offset``;
    ``(present, consumed)``."""

def decode_dictionary_into(
    data: Buffer,
    num_values: int,
    dictionary: _Bytes,
    width: int,
    out: Any,
    release_gil: bool = False,
) -> int:
    """A dictionary-encoded page's fixed-width values gathered into ``out``; bytes read.
    ``release_gil``: decode without the GIL."""

def decode_dictionary_pages(
    pages: list[tuple[Buffer, int]],
    dictionary: _Bytes,
    width: int,
    out: Any,
    release_gil: bool = False,
) -> None:
    """Every dictionary-encoded page's ``(values section, count)`` gathered into ``out`` in one
    call; DecodeError names the first bad page (pages before it are decoded)."""

def copy_plain_pages(pages: list[tuple[Buffer, int]], width: int, out: Any) -> None:
    """Consecutive PLAIN pages' ``(values section, count)`` copied into ``out`` in order
    (memmoves: ``out`` may be the start of the buffer the pages lie in); DecodeError names a
    short page."""

def decode_flat_pages(
    pages: list[tuple[Buffer, int]],
    dictionary: _Bytes | None,
    width: int,
    out: Any,
    bitmap: Any,
    bit_offset: int,
    release_gil: bool = False,
) -> int:
    """A flat nullable column's v1 pages ``(body, count)``: levels ORed into ``bitmap`` from
    ``bit_offset``, values (PLAIN, or gathered from ``dictionary``) straight into their slots
    of ``out``, null slots zeroed; returns the present values. DecodeError names a bad page."""

def _vector_spread(on: bool) -> bool:
    """Use the AVX2 spread where the CPU has it, or the portable loop (for tests); returns
    whether it was in use."""
