"""XXH64 of an Arrow array's non-null values from its buffers (cython_ext/colhash.pyx).

Parquet's bloom hash (seed 0 over the PLAIN value), floats canonical when ``canon`` is 4 / 8
(-0.0 as 0.0, one NaN); null rows skipped by the validity bitmap; hashes written packed at
``out[pos:]``.
"""

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

def fixed_hashes(
    validity: Buffer | None,
    values: Buffer,
    offset: int,
    length: int,
    width: int,
    canon: int,
    null_count: int,
    out: NDArray[np.uint64],
    pos: int = ...,
) -> int:
    """Hash a fixed-width array's non-null values; returns how many were written."""

def binary_hashes(
    validity: Buffer | None,
    offsets: Buffer,
    offset_width: int,
    data: Buffer,
    offset: int,
    length: int,
    null_count: int,
    out: NDArray[np.uint64],
    pos: int = ...,
) -> int:
    """Hash a binary / string array's non-null values; returns how many were written."""
