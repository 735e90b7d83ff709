"""Any ``pyarrow.fs`` filesystem as storage: reads, listings, part writes and deletes; no commits.

The backend of URI schemes the registry (:mod:`metaindex.store.schemes`) has no module for
(``hdfs://``, ``mock://``, ...: whatever ``pyarrow.fs.FileSystem.from_uri`` opens), and of a
``pyarrow.fs.FileSystem`` given directly. Committing needs an atomic create-if-absent, which
``pyarrow.fs`` does not offer: a commit raises :class:`~metaindex.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

from metaindex.errors import UnsupportedFeatureError
from metaindex.store.storage import FileStat, Storage

__all__ = ["ArrowStorage", "open_uri", "walk_arrow"]


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
            raise OSError(f"{info.path}: the filesystem reports no modification time; metaindex "
                          "needs one to tell rewritten files from indexed ones")
        yield FileStat(info.path[prefix:].replace("\\", "/"), info.size, mtime_ns // 1_000_000)


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
            "to it (see specs/metadata-store.md, 'Object stores')")

    def list(self, directory: str) -> list[FileStat]:
        from pyarrow import fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        return [FileStat(i.base_name, i.size or 0,
                         int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0)
                for i in infos if i.type == pafs.FileType.File]

    def walk(self, directory: str):
        return walk_arrow(self.fs, directory)

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
