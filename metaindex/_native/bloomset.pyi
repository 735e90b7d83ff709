"""Probe many split-block bloom filters stored back to back; build one file's filter counting
the hashes that set a bit (cython_ext/bloomset.pyx).

One bitset per indexed file, as an Arrow binary column lays them out: ``offsets`` (n + 1
absolute positions) into one ``data`` buffer. Ranges are validated before any read; an entry
that is not a valid bitset answers True (proves nothing), a null entry False.
"""

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

DEF_MAX_BYTES: int
"""Default ``max_bytes`` of ``probe``: the largest bitset it reads (128 MiB)."""

def hash_masks(hashes: NDArray[np.uint64]) -> NDArray[np.uint32]:
    """The eight 32-bit mask words of each hash, shape ``(k, 8)``."""

def probe(
    offsets: NDArray[np.int64],
    data: Buffer,
    present: NDArray[np.bool_],
    hashes: NDArray[np.uint64],
    max_bytes: int = ...,
) -> NDArray[np.bool_]:
    """Per bitset: might it hold one of ``hashes``? (False also for null entries.)"""

def insert_new(bitset: NDArray[np.uint8], hashes: NDArray[np.uint64], portable: bool = ...) -> int:
    """Insert hashes into one filter; the number of inserts that set a bit (a lower bound of
    the distinct hashes)."""

def insert_fixed_new(
    bitset: NDArray[np.uint8],
    validity: Buffer | None,
    values: Buffer,
    offset: int,
    length: int,
    width: int,
    canon: int,
    portable: bool = ...,
) -> int:
    """``insert_new`` of the bloom hashes of a fixed-width Arrow array's non-null values."""

def insert_binary_new(
    bitset: NDArray[np.uint8],
    validity: Buffer | None,
    offsets: Buffer,
    offset_width: int,
    data: Buffer,
    offset: int,
    length: int,
    portable: bool = ...,
) -> int:
    """``insert_new`` of the bloom hashes of a binary / string Arrow array's non-null values."""
