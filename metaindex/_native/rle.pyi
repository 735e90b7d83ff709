"""RLE / bit-packing hybrid and deprecated BIT_PACKED (cython_ext/rle.pyx).

Decoders return ``(uint32 values, consumed_bytes)`` (bool_ for ``decode_rle_bool``) and raise
DecodeError on any truncated or malformed run. Bit widths are 0..32. Encoders choose runs like
Arrow's RleEncoder, so their output is byte-identical to pyarrow's levels / indices.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

def decode_rle(data: Buffer, num_values: int, bit_width: int) -> tuple[NDArray[np.uint32], int]:
    """Runs without a length prefix (dictionary indices, v2 levels); consumed = end of last run."""

def decode_rle_prefixed(
    data: Buffer, num_values: int, bit_width: int
) -> tuple[NDArray[np.uint32], int]:
    """Runs after a 4-byte LE length (v1 levels); consumed = 4 + length."""

def decode_rle_bool(data: Buffer, num_values: int) -> tuple[NDArray[np.bool_], int]:
    """RLE BOOLEAN page values: width 1 with the 4-byte length prefix."""

def encode_rle(values: Any, bit_width: int) -> bytes:
    """Encode a 1-D bool / integer array without a length prefix."""

def encode_rle_prefixed(values: Any, bit_width: int) -> bytes:
    """Encode with the 4-byte LE length prefix."""

def encode_rle_bool(values: Any) -> bytes:
    """Encode BOOLEAN page values (width 1, with the length prefix)."""

def decode_bit_packed(
    data: Buffer, num_values: int, bit_width: int
) -> tuple[NDArray[np.uint32], int]:
    """Deprecated BIT_PACKED levels (MSB first); consumed = ceil(num_values * bit_width / 8)."""
