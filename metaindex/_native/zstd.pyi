"""ZSTD page bodies decompressed by the system's libzstd (compiled from cython_ext/zstd.pyx)."""

from typing import Any

from _typeshed import ReadableBuffer, WriteableBuffer
from typing_extensions import disjoint_base

__all__ = ["available", "version", "Decompressor"]

available: bool
"""The system's libzstd (libzstd.so.1, >= 1.4) was found; else use ``zstandard``."""

version: int | None
"""Its ``ZSTD_versionNumber()`` (e.g. 10504 for 1.5.4), None when not available."""

@disjoint_base
class Decompressor:
    """One libzstd decompression context (not thread-safe: one per thread).

    Raises:
        RuntimeError: the system's libzstd is not available.
        MemoryError: the context could not be allocated.
    """

    def __init__(self) -> None: ...
    def decompress_into(self, data: ReadableBuffer, out: WriteableBuffer) -> None:
        """Decompress ``data`` into ``out``, a writable buffer of exactly the uncompressed
        size, without the GIL.

        Raises:
            DecodeError: a frame the library refuses, or one of another size than ``out``.
        """
    def decompress_pages(
        self, pages: list[tuple[ReadableBuffer, Any]], sizes: list[int], out: WriteableBuffer
    ) -> None:
        """Page ``i``'s body (``pages[i][0]``) decompressed into the next ``sizes[i]`` bytes of
        ``out`` (exactly ``sum(sizes)`` bytes), in one call.

        Raises:
            DecodeError: the first page that does not decompress to its size.
            ValueError: ``out`` is not the pages' size, or the lists' lengths differ.
        """
