"""ZSTD page bodies decompressed by the system's libzstd (compiled from cython_ext/zstd.pyx)."""

from _typeshed import ReadableBuffer, WriteableBuffer

available: bool
"""The system's libzstd (libzstd.so.1, >= 1.4) was found; else use ``zstandard``."""

version: int | None
"""Its ``ZSTD_versionNumber()`` (e.g. 10504 for 1.5.4), None when not available."""

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
