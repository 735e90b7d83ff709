"""A local directory as storage: fsync, and hard-link based create-if-absent.

The backend of plain paths and ``file://`` URIs in :mod:`metaindex.store.schemes` (and of a
``pyarrow.fs.LocalFileSystem``, or a ``SubTreeFileSystem`` over one, given directly).
"""

from __future__ import annotations

import errno
import os
import shutil

import numpy as np
import pyarrow as pa

from metaindex.arrays import numeric_array
from metaindex.errors import UnsupportedFeatureError
from metaindex.store.arrowfs import walk_arrow, walk_arrow_table
from metaindex.store.storage import WALK_SCHEMA, FileStat, Storage

__all__ = ["LocalStorage", "open_uri"]


class LocalStorage(Storage):
    """A local directory, with fsync and hard-link based create-if-absent."""

    is_local = True

    def __init__(self, root: str):
        self.key = ("local", os.path.abspath(root))

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write(self, path: str, data) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for piece in data if isinstance(data, list) else [data]:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def create_if_absent(self, path: str, data, temp_path: str) -> bool:
        self.write(temp_path, data)
        try:
            os.link(temp_path, path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise UnsupportedFeatureError(
                    f"{path}: the filesystem does not support hard links, which commits use "
                    f"for atomic create-if-absent ({exc.strerror})"
                ) from exc
            raise
        finally:
            try:
                os.unlink(temp_path)
            except FileNotFoundError:
                pass
        self.sync_dir(os.path.dirname(path))
        return True

    def list(self, directory: str) -> list[FileStat]:
        out: list[FileStat] = []
        try:
            entries = os.scandir(directory)
        except FileNotFoundError:
            return out
        with entries:
            for e in entries:
                try:
                    if not e.is_file(follow_symlinks=False):
                        continue
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:  # deleted while listing
                    continue
                out.append(FileStat(e.name, st.st_size, st.st_mtime_ns // 1_000_000))
        return out

    def walk(self, directory: str):
        """One recursive listing through ``pyarrow.fs.LocalFileSystem`` (C++)."""
        from pyarrow import fs as pafs

        return walk_arrow(pafs.LocalFileSystem(), directory)

    def walk_table(self, directory: str):
        """:meth:`walk` as Arrow: the same one recursive listing."""
        from pyarrow import fs as pafs

        return walk_arrow_table(pafs.LocalFileSystem(), directory)

    def walk_data_table(self, directory: str) -> pa.Table:
        """The data files below ``directory`` by the native listing kernel
        (:func:`metaindex._native.listing.walk_data_files`: ``openat``/``readdir``/``fstatat``
        straight into Arrow buffers, sorted by path, hidden directories not entered); the same
        files as :meth:`walk_table` less the hidden ones (symbolic links followed, a
        directory cycle walked once).

        Raises:
            FileNotFoundError / NotADirectoryError: ``directory`` is not a directory.
            StorageAccessError: a directory or entry below it may not be read.
            StorageError: another failure of the listing's system calls.
            DecodeError: a file name that is not UTF-8.
        """
        from metaindex._native.listing import walk_data_files

        offsets, data, sizes, mtimes = walk_data_files(directory)
        n = len(sizes)
        if len(data) <= 2**31 - 1:
            kind, offsets = pa.string(), offsets.astype(np.int32)
        else:
            kind = pa.large_string()
        paths = pa.Array.from_buffers(kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        return pa.Table.from_arrays(
            [paths, numeric_array(sizes), numeric_array(mtimes), pa.nulls(n, pa.string())],
            schema=WALK_SCHEMA,
        )

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def arrow_filesystem(self, path: str) -> tuple:
        from pyarrow import fs as pafs

        return pafs.LocalFileSystem(), path

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def delete(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def remove_dir(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):  # what is left failed for a real reason: raise it
            shutil.rmtree(path)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def sync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        except OSError as exc:  # some filesystems refuse fsync on directories
            if exc.errno not in (errno.EINVAL, errno.EBADF):
                raise
        finally:
            os.close(fd)


def open_uri(uri: str, storage_options: dict) -> tuple:
    """``(LocalStorage, absolute path)`` of a plain path or a ``file://`` URI
    (``storage_options`` are not used)."""
    if "://" in uri:
        from pyarrow import fs as pafs

        uri = pafs.FileSystem.from_uri(uri)[1]
    path = os.path.abspath(uri)
    return LocalStorage(path), path
