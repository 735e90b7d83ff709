"""Where a read's bytes come from: one Parquet file's bytes (:class:`Source`), or the files of a
dataset given as a list of paths or a directory (:func:`dataset_paths`).

A :class:`Source` reads byte ranges without copying where the source allows (views of memory it
already holds, ``pread`` into Arrow memory otherwise); the reader asks it only for the ranges a
read needs: the footer, then the column chunks asked for.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pyarrow as pa

from metaindex.errors import DecodeError

__all__ = ["Source", "dataset_paths"]


class Source:
    """Random access to the file's bytes without copying them where the source allows.

    - bytes, bytearray, memoryview, ``pyarrow.Buffer``: read in place (slices are views);
    - a local path: read with ``pread`` per request (``memory_map`` None or False, the
      default as in pyarrow: a file another process truncates while it is read raises
      DecodeError, never SIGBUS), or memory-mapped through Arrow (``memory_map=True``; the
      mapping lives as long as any array still refers to it);
    - ``pyarrow.BufferReader`` and ``pyarrow.MemoryMappedFile``: their whole buffer, in
      place; other ``NativeFile`` objects and ``pyarrow.fs`` files: ``read_buffer`` into
      Arrow memory (no further copy);
    - a seekable Python binary file object: ``readinto`` an Arrow buffer.

    Reads are safe from several threads (seek-based sources take a lock).
    """

    def __init__(self, source, filesystem=None, memory_map=None):
        self._fh: Any = None  # a pyarrow NativeFile or a binary file object; None once closed
        self._view = None
        self.owns_reads = False  # read_at returns new memory of ours (a file read into it)
        self._close = False
        self._closed = False
        self._lock = threading.Lock()
        self.fingerprint = None  # (length, CRC-32) of the footer region, once read
        self._kept: tuple | None = None  # (offset, read-only view) of a read kept by read_at
        if source is None:
            raise TypeError(
                "a Parquet source is a path, a pyarrow.fs URI, bytes, a pyarrow "
                "Buffer or NativeFile, or a seekable binary file object, not None"
            )
        if isinstance(source, (bytes, bytearray, memoryview, pa.Buffer)):
            self._view = memoryview(source).cast("B")
            self.size = len(self._view)
            self.name = "<bytes>"
            return
        if filesystem is not None or (isinstance(source, str) and "://" in source):
            from pyarrow import fs as pafs

            if filesystem is None:
                filesystem, source = pafs.FileSystem.from_uri(source)
            if hasattr(source, "read"):
                raise ValueError("filesystem was given but the source is file-like; pass a path")
            self._fh = filesystem.open_input_file(os.fspath(source))
            self._close = True
            # files of these read into new memory (a mapped local file reads read-only)
            self.owns_reads = isinstance(
                filesystem,
                (pafs.LocalFileSystem, getattr(pafs, "S3FileSystem", pafs.LocalFileSystem)),
            )
            self.size = self._fh.size()
            self.name = os.fspath(source)
            return
        if isinstance(source, (str, os.PathLike)):
            self.name = os.fspath(source)
            if os.path.isdir(self.name):
                raise IsADirectoryError(
                    f"Cannot open for reading: path '{self.name}' is a directory"
                )
            if not os.path.exists(self.name):
                raise FileNotFoundError(f"no such Parquet file: {self.name}")
            self._close = True
            if not memory_map:
                self._fh = pa.OSFile(self.name, "r")
                self.owns_reads = True
                self.size = self._fh.size()
                return
            try:
                self._fh = pa.memory_map(self.name, "r")
            except FileNotFoundError:
                raise FileNotFoundError(f"no such Parquet file: {self.name}") from None
            self.size = self._fh.size()
            self._view = (
                memoryview(self._fh.read_buffer()).cast("B") if self.size else memoryview(b"")
            )
            return
        if isinstance(source, pa.NativeFile):
            self._fh = source
            self.name = getattr(source, "path", None) or "<NativeFile>"
            self.size = source.size()
            if isinstance(source, (pa.BufferReader, pa.MemoryMappedFile)) and self.size:
                # their bytes are already in memory: take the whole buffer, in place
                with self._lock:
                    position = source.tell()
                    source.seek(0)
                    whole = source.read_buffer(self.size)
                    source.seek(position)
                if len(whole) == self.size:
                    self._view = memoryview(whole).cast("B")
            return
        if hasattr(source, "read") and hasattr(source, "seek"):
            self._fh = source
            self.owns_reads = hasattr(source, "readinto")
            self.name = getattr(source, "name", "<file object>")
            source.seek(0, os.SEEK_END)
            self.size = source.tell()
            return
        raise TypeError(
            "a Parquet source is a path, a pyarrow.fs URI, bytes, a pyarrow Buffer "
            "or NativeFile, or a seekable binary file object, not "
            f"{type(source).__name__}"
        )

    @property
    def closed(self) -> bool:
        """Closed by us (when we opened it) or by its owner (a file object passed in)."""
        if self._close:
            return self._closed
        if self._fh is not None:
            return bool(getattr(self._fh, "closed", False))
        return self._closed

    @property
    def in_memory(self) -> bool:
        """Reads are views of memory the source already holds (no copy, no I/O)."""
        return self._view is not None

    def read_at(self, offset: int, size: int, keep: bool = False) -> memoryview:
        """``size`` bytes at ``offset`` (a view where the source holds them in memory).

        ``keep``: hold on to what is read, and serve later reads that lie inside it from it
        (read-only views: not memory of the caller's own) until the source is closed. The
        footer's read keeps the file's tail, which holds the whole of a small file: its
        column chunks are then read without another request.

        Raises:
            DecodeError: the range lies outside the file, or the file shrank under us.
            ValueError: the source was closed.
        """
        if offset < 0 or size < 0 or offset + size > self.size:
            raise DecodeError(
                f"{self.name}: read of {size} bytes at {offset} lies outside the "
                f"{self.size}-byte file",
                offset=offset,
                needed=size,
                remaining=max(0, self.size - offset),
            )
        if self._view is not None:
            return self._view[offset : offset + size]
        if self._closed:
            raise ValueError(f"{self.name}: I/O operation on a closed file")
        kept = self._kept
        if kept is not None and kept[0] <= offset and offset + size <= kept[0] + len(kept[1]):
            return kept[1][offset - kept[0] : offset - kept[0] + size]
        if isinstance(self._fh, pa.NativeFile):
            with self._lock:  # Arrow's buffer, no copy into a bytes object
                self._fh.seek(offset)
                data = self._fh.read_buffer(size)
        elif hasattr(self._fh, "readinto"):
            # into Arrow's pool, which recycles memory: a fresh bytes object of a chunk's size
            # costs a page fault per 4 KiB, about as much as decoding it
            data = memoryview(pa.allocate_buffer(size))
            with self._lock:
                self._fh.seek(offset)
                got = self._fh.readinto(data)
            data = data[: got or 0]
        else:
            with self._lock:
                self._fh.seek(offset)
                data = self._fh.read(size)
        if len(data) != size:
            raise DecodeError(
                f"{self.name}: file shrank while reading",
                offset=offset,
                needed=size,
                remaining=len(data),
            )
        if keep:
            self._kept = (offset, memoryview(data).cast("B").toreadonly())
            return self._kept[1]
        return memoryview(data).cast("B")

    def close(self) -> None:
        """Close the file if we opened it (a file object passed in stays open)."""
        if self._close or self._view is not None and self._fh is None:
            self._closed = True
        self._kept = None
        if self._close and self._fh is not None:
            # a memory map stays mapped while arrays read from it still refer to it
            self._view = None
            self._fh.close()
            self._fh = None


def dataset_paths(source, filesystem, ignore_prefixes) -> list[str] | None:
    """The files of a list of paths or of a directory (its files not starting with one of
    ``ignore_prefixes``, ``_`` and ``.`` by default, in name order); None for a single file
    source."""
    prefixes = tuple(ignore_prefixes or ("_", "."))
    if isinstance(source, (list, tuple)):
        return [os.fspath(p) for p in source]
    if (
        filesystem is None
        and isinstance(source, (str, os.PathLike))
        and "://" not in os.fspath(source)
        and os.path.isdir(source)
    ):
        root = os.fspath(source)
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(prefixes))
            out.extend(
                os.path.join(dirpath, f) for f in sorted(filenames) if not f.startswith(prefixes)
            )
        return out
    return None
