"""PLAIN encoding for every Parquet physical type (cython_ext/plain.pyx).

Physical types are parquet.thrift Type codes (BOOLEAN=0, INT32=1, INT64=2, INT96=3, FLOAT=4,
DOUBLE=5, BYTE_ARRAY=6, FIXED_LEN_BYTE_ARRAY=7). Values follow the common convention: bool_,
int32, int64, uint8 (n, 12), float32, float64, ``(offsets, data)``, uint8 (n, type_length).
Floats move as bit patterns. Decoders take any C-contiguous buffer and return
``(values, consumed_bytes)``; bytes after the encoding are left alone.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

_ByteArrays = tuple[NDArray[np.int32], NDArray[np.uint8]]

def decode_plain(
    data: Buffer, num_values: int, physical_type: int, type_length: int = 0, out: Any = None
) -> tuple[Any, int]:
    """Decode ``num_values`` PLAIN values; BYTE_ARRAY gives int32 offsets from 0 and uint8 data.

    Raises DecodeError on truncated input, a length past the end, a negative count or a
    physical type / type_length that cannot be decoded.
    """

def decode_byte_array_into(data: Buffer, num_values: int, sink: Any) -> int:
    """Decode ``num_values`` PLAIN BYTE_ARRAY values straight into a chunk's sink
    (``sinks.BinarySink``; protocol in cython_ext/binsink.pxd). Returns the bytes read.

    Raises DecodeError as decode_plain does (every length checked before anything is
    written: a failed page leaves the sink as it was), or for values past the chunk's count.
    """

def encode_plain(values: Any, physical_type: int, type_length: int = 0) -> bytes:
    """PLAIN-encode values; BYTE_ARRAY takes ``(offsets, data)`` with int32 or int64 offsets.

    Raises TypeError for values of the wrong kind / dtype / shape, EncodeError for an unknown
    type, invalid offsets or out-of-range sequence values.
    """

def encode_plain_binary_page(
    offsets: NDArray[Any],
    data: Buffer,
    validity: Any,
    bit_offset: int,
    start: int,
    stop: int,
    levels: bool,
) -> tuple[memoryview, int]:
    """A data page v1 body of BYTE_ARRAY slots ``start:stop`` straight from Arrow's offsets,
    data and validity bitmap (None: every slot valid; ``bit_offset``: the bitmap's bit of slot
    0): with ``levels``, the definition levels (4-byte length, RLE / bit-packed hybrid of the
    validity bits) first, then PLAIN values of the valid slots. Returns ``(body, valid slots)``,
    the body a byte memoryview of a buffer in Arrow's pool.

    Raises TypeError for offsets or a bitmap that do not cover the slots, EncodeError for
    decreasing offsets, offsets outside data or a value of 4 GiB or more.
    """
