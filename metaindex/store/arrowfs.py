"""Any ``pyarrow.fs`` filesystem as storage: reads, listings, part writes and deletes; no commits.

The backend of URI schemes the registry (:mod:`metaindex.store.schemes`) has no module for
(``hdfs://``, ``mock://``, ...: whatever ``pyarrow.fs.FileSystem.from_uri`` opens), and of a
``pyarrow.fs.FileSystem`` given directly. Committing needs an atomic create-if-absent, which
``pyarrow.fs`` does not offer: a commit raises :class:`~metaindex.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

import os
from operator import attrgetter

import numpy as np
import pyarrow as pa

from metaindex.arrays import numeric_array
from metaindex.errors import UnsupportedFeatureError
from metaindex.store.storage import WALK_SCHEMA, FileStat, Storage

__all__ = ["ArrowStorage", "open_uri", "walk_arrow", "walk_arrow_table"]


def walk_arrow(filesystem, directory: str):
    """:meth:`Storage.walk` over a ``pyarrow.fs`` filesystem: one recursive ``FileSelector``."""
    from pyarrow import fs as pafs

    selector = pafs.FileSelector(directory, recursive=True)
    prefix = len(directory.rstrip("/")) + 1
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        mtime_ns = info.mtime_ns
        if mtime_ns is None:
            raise OSError(
                f"{info.path}: the filesystem reports no modification time; metaindex "
                "needs one to tell rewritten files from indexed ones"
            )
        path = info.path[prefix:]
        yield FileStat(
            path.replace("\\", "/") if os.sep == "\\" else path, info.size, mtime_ns // 1_000_000
        )


def walk_arrow_table(filesystem, directory: str) -> pa.Table:
    """:func:`walk_arrow` as one table of :data:`~metaindex.store.storage.WALK_SCHEMA`: the
    one recursive ``FileSelector``, each ``FileInfo`` read for three attributes by C-level
    ``map`` (``FileInfo.type`` makes a Python enum per entry: it is asked only of entries
    that have a size, and not at all on a ``LocalFileSystem``, which gives a size to regular
    files only), the paths joined into one buffer and split and cut in Arrow."""
    from pyarrow import fs as pafs

    infos = filesystem.get_file_info(pafs.FileSelector(directory, recursive=True))
    sizes = list(map(_SIZE, infos))
    if None in sizes:
        infos = [info for info, size in zip(infos, sizes, strict=True) if size is not None]
        sizes = [size for size in sizes if size is not None]
    if not isinstance(filesystem, pafs.LocalFileSystem):
        keep = [info.type == pafs.FileType.File for info in infos]
        infos = [info for info, ok in zip(infos, keep, strict=True) if ok]
        sizes = [size for size, ok in zip(sizes, keep, strict=True) if ok]
    n = len(infos)
    if not n:
        return WALK_SCHEMA.empty_table()
    mtimes = list(map(_MTIME, infos))
    if None in mtimes:
        missing = infos[mtimes.index(None)].path
        raise OSError(
            f"{missing}: the filesystem reports no modification time; metaindex "
            "needs one to tell rewritten files from indexed ones"
        )
    paths = _joined_strings(list(map(_PATH, infos)))
    paths = _relative(paths, len(directory.rstrip("/")) + 1)
    mtime = np.array(mtimes, np.int64) // 1_000_000
    return pa.Table.from_arrays(
        [
            paths,
            numeric_array(np.array(sizes, np.int64)),
            numeric_array(mtime),
            pa.nulls(n, pa.string()),
        ],
        schema=WALK_SCHEMA,
    )


_PATH, _SIZE, _MTIME = (attrgetter(name) for name in ("path", "size", "mtime_ns"))


def _relative(paths: pa.Array, start: int) -> pa.Array:
    """``paths`` from code point ``start`` on (``\\`` made ``/`` on Windows)."""
    import pyarrow.compute as pc

    paths = pc.utf8_slice_codeunits(paths, start)
    return pc.replace_substring(paths, "\\", "/") if os.sep == "\\" else paths


def _joined_strings(texts: list) -> pa.Array:
    """A list of str as a string array: one join and one encode, split again at NULs in
    Arrow (the per-string encode of ``string_array`` costs more); a str holding a NUL itself
    (no filesystem path does) takes ``string_array``."""
    import pyarrow.compute as pc

    from metaindex.arrays import string_array

    data = "\x00".join(texts).encode()
    large = len(data) > 2**31 - 1
    offsets = np.array([0, len(data)], np.int64 if large else np.int32)
    whole = pa.Array.from_buffers(
        pa.large_string() if large else pa.string(),
        1,
        [None, pa.py_buffer(offsets), pa.py_buffer(data)],
    )
    out = pc.list_flatten(pc.split_pattern(whole, "\x00")).cast(pa.string())
    return out if len(out) == len(texts) else string_array(texts)


class ArrowStorage(Storage):
    """A ``pyarrow.fs.FileSystem``: reads, lists, part writes and deletes; no commits."""

    def __init__(self, filesystem, root: str):
        self.fs = filesystem
        self.key = (type(filesystem).__name__, id(filesystem), root)

    def read(self, path: str) -> bytes:
        from pyarrow import ArrowIOError

        try:
            with self.fs.open_input_file(path) as f:
                return f.readall()
        except FileNotFoundError:
            raise
        except ArrowIOError as exc:
            if not self.exists(path):
                raise FileNotFoundError(path) from exc
            raise

    def write(self, path: str, data) -> None:
        with self.fs.open_output_stream(path) as f:
            for piece in data if isinstance(data, list) else [data]:
                f.write(piece)

    def create_if_absent(self, path: str, data, temp_path: str) -> bool:
        raise UnsupportedFeatureError(
            f"{type(self.fs).__name__}: committing needs an atomic create-if-absent (a "
            "conditional PUT such as S3 If-None-Match: *), which pyarrow.fs does not offer; "
            "this store is read-only through pyarrow.fs. Give an object store as a URI "
            "(s3://bucket/prefix, gs://..., az://...; settings in storage_options) to commit "
            "to it (see specs/metadata-store.md, 'Object stores')"
        )

    def list(self, directory: str) -> list[FileStat]:
        from pyarrow import fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        return [
            FileStat(
                i.base_name,
                i.size or 0,
                int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0,
            )
            for i in infos
            if i.type == pafs.FileType.File
        ]

    def walk(self, directory: str):
        return walk_arrow(self.fs, directory)

    def walk_table(self, directory: str) -> pa.Table:
        return walk_arrow_table(self.fs, directory)

    def is_dir(self, path: str) -> bool:
        from pyarrow import fs as pafs

        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def arrow_filesystem(self, path: str) -> tuple:
        return self.fs, path

    def exists(self, path: str) -> bool:
        from pyarrow import fs as pafs

        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def delete(self, path: str) -> None:
        if self.exists(path):
            self.fs.delete_file(path)

    def remove_dir(self, path: str) -> None:
        if self.exists(path):
            self.fs.delete_dir(path)

    def makedirs(self, path: str) -> None:
        self.fs.create_dir(path, recursive=True)


def open_uri(uri: str, storage_options: dict) -> tuple:
    """``(ArrowStorage, path)`` of ``uri`` through ``pyarrow.fs.FileSystem.from_uri``
    (``storage_options`` are not used: pyarrow takes its settings from the URI)."""
    from pyarrow import fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(uri)
    return ArrowStorage(filesystem, path.rstrip("/")), path.rstrip("/")
