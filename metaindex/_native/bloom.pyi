"""XXH64 and split-block bloom filter batch kernels (cython_ext/bloom.pyx).

Buffers are any C-contiguous buffer-protocol objects (numpy arrays, bytes, Arrow Buffers).
A bitset is a power of two >= 32 bytes; inserts need it writable (numpy uint8 array).
Filter operations always hash with seed 0, as Parquet does.
"""

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

# numpy's stubs give ndarray the buffer protocol (``__buffer__``) only for Python >= 3.12
_Bytes = Buffer | NDArray[Any]

def select_block_ops(name: Literal["auto", "avx2", "portable"] = "auto") -> str:
    """Choose the block insert/check implementation; returns the one now in use."""

def xxh64_bytes(data: Buffer, seed: int = 0) -> int:
    """XXH64 of one buffer."""

def hash_fixed(values: Buffer, width: int, seed: int = 0) -> NDArray[np.uint64]:
    """XXH64 of every ``width``-byte value (int32/float32: 4, int64/float64: 8, (n, k) uint8: k)."""

def hash_byte_array(
    offsets: NDArray[np.int32] | NDArray[np.int64], data: Buffer, seed: int = 0
) -> NDArray[np.uint64]:
    """XXH64 of every value of an Arrow-layout BYTE_ARRAY column (n + 1 offsets)."""

def insert_hashes(bitset: _Bytes, hashes: _Bytes) -> None:
    """Insert uint64 hashes into a bitset."""

def check_hashes(bitset: _Bytes, hashes: _Bytes) -> NDArray[np.bool_]:
    """Check uint64 hashes against a bitset (False = certainly absent)."""

def insert_fixed(bitset: _Bytes, values: _Bytes, width: int) -> None:
    """Hash (seed 0) and insert fixed-width values in one pass."""

def check_fixed(bitset: _Bytes, values: _Bytes, width: int) -> NDArray[np.bool_]:
    """Hash (seed 0) and check fixed-width values in one pass."""

def insert_byte_array(
    bitset: _Bytes, offsets: NDArray[np.int32] | NDArray[np.int64], data: _Bytes
) -> None:
    """Hash (seed 0) and insert BYTE_ARRAY values in one pass."""

def check_byte_array(
    bitset: _Bytes, offsets: NDArray[np.int32] | NDArray[np.int64], data: _Bytes
) -> NDArray[np.bool_]:
    """Hash (seed 0) and check BYTE_ARRAY values in one pass."""
