"""BYTE_STREAM_SPLIT for FLOAT, DOUBLE, INT32, INT64, FIXED_LEN_BYTE_ARRAY (cython_ext/bss.pyx).

The encoding has no header: ``data`` must be exactly the encoded streams (length a multiple
of the value width K, stream length N = len / K).
"""

from typing import Any

from typing_extensions import Buffer

def decode_byte_stream_split(
    data: Buffer, num_values: int, physical_type: int, type_length: int = 0, out: Any = None
) -> tuple[Any, int]:
    """Decode the first ``num_values`` (<= N) values; consumed = len(data)."""

def decode_byte_stream_split_pages(
    pages: list[tuple[Buffer, int]], physical_type: int, type_length: int, out: Any
) -> None:
    """Every page's ``(data, num_values)`` decoded into ``out`` (exactly ``sum(num_values) * K``
    bytes) in one call without the GIL; every page is checked first (DecodeError names it)."""

def encode_byte_stream_split(values: Any, physical_type: int, type_length: int = 0) -> bytes:
    """Encode values in the common convention for ``physical_type``."""
