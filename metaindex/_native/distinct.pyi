"""Distinct hashes and distinct column values (cython_ext/distinct.pyx)."""

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer, Self, final

def count_distinct(hashes: NDArray[np.uint64], limit: int = ...) -> int:
    """The number of distinct values in a 1-D uint64 array; with ``limit >= 0`` at most
    ``limit + 1`` (counting stops once it exceeds ``limit``)."""

@final
class ValueSet:
    """The distinct non-null values of one column (up to ``limit``), fed chunk by chunk
    from Arrow buffers; floats compared canonical when ``canon`` is 4 / 8."""

    def __new__(cls, width: int, canon: int = ..., limit: int = ...) -> Self: ...
    @property
    def overflow(self) -> bool: ...
    def __len__(self) -> int: ...
    def add_fixed(
        self, validity: Buffer | None, values: Buffer, offset: int, length: int
    ) -> bool: ...
    def add_binary(
        self,
        validity: Buffer | None,
        offsets: Buffer,
        offset_width: int,
        data: Buffer,
        offset: int,
        length: int,
    ) -> bool: ...
    def values(self) -> tuple[bytes, NDArray[np.int64] | None]: ...
    def packed(self) -> tuple[bytes, bytes | None]:
        """``values`` with the binary values' ends as int32 little-endian bytes."""
