"""The small-file fast path's chunk kernel (compiled from cython_ext/smallfiles.pyx): one
flat column chunk of a small Parquet file decoded into its non-null values."""

from collections.abc import Callable
from typing import Any

from _typeshed import ReadableBuffer

__all__ = ["flat_chunk"]

def flat_chunk(
    data: ReadableBuffer,
    num_rows: int,
    physical: int,
    max_def: int,
    codec: int,
    decompress: Callable[[int, Any, int], Any],
) -> tuple[bytes, bytes | None, int, bool] | None:
    """The non-null values of one flat column chunk: ``(values, ends, count, has_null)``, or
    None for a chunk outside the kernel's shape or not consistent."""
