"""DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (cython_ext/delta.pyx).

Physical types: 1 INT32, 2 INT64, 6 BYTE_ARRAY, 7 FIXED_LEN_BYTE_ARRAY. BYTE_ARRAY values are
``(offsets, data)`` pairs (Arrow binary layout); FIXED_LEN_BYTE_ARRAY values ``(n, type_length)``
uint8 arrays. Decoders return ``(values, consumed_bytes)`` and raise ``DecodeError``.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

_BinaryValues = tuple[NDArray[np.int32], NDArray[np.uint8]]
_ByteArrayValues = _BinaryValues | NDArray[np.uint8]

def decode_delta_binary_packed(
    data: Buffer, num_values: int, physical_type: int, out: Any = None
) -> tuple[Any, int]: ...
def encode_delta_binary_packed(values: Buffer, physical_type: int) -> bytes: ...
def decode_delta_length_byte_array(
    data: Buffer, num_values: int, physical_type: int = 6, type_length: int = 0
) -> tuple[_ByteArrayValues, int]: ...
def encode_delta_length_byte_array(
    values: tuple[Buffer, Buffer] | Buffer, physical_type: int = 6, type_length: int = 0
) -> bytes: ...
def decode_delta_byte_array(
    data: Buffer, num_values: int, physical_type: int = 6, type_length: int = 0
) -> tuple[_ByteArrayValues, int]: ...
def encode_delta_byte_array(
    values: tuple[Buffer, Buffer] | Buffer, physical_type: int = 6, type_length: int = 0
) -> bytes: ...
def decode_delta_length_byte_array_into(data: Buffer, num_values: int, sink: Any) -> int:
    """BYTE_ARRAY DELTA_LENGTH_BYTE_ARRAY values straight into a chunk's sink
    (``sinks.BinarySink``); the bytes read. Checked whole before anything is written."""

def decode_delta_byte_array_into(data: Buffer, num_values: int, sink: Any) -> int:
    """BYTE_ARRAY DELTA_BYTE_ARRAY values straight into a chunk's sink; the bytes read.
    Checked whole before anything is written."""
