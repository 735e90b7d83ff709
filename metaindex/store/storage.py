"""Byte-level access to a store: a local directory, an object store
(:mod:`metaindex.store.objectstore`), or any other ``pyarrow.fs`` filesystem for reads.

Commits need one primitive beyond plain files: **create-if-absent** (write a whole file under a
name only if nothing has that name; never overwrite, never expose a partial file). On a local
filesystem that is a temporary file, fsync, ``os.link(temp, final)`` (fails if ``final``
exists), fsync of the directory. ``pyarrow.fs`` has no such operation: object stores offer it as
a conditional PUT (S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure
``If-None-Match: *``), which :class:`metaindex.store.objectstore.ObjectStorage` uses.
:class:`ArrowStorage` reads and lists any other ``pyarrow.fs`` filesystem but refuses to commit.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass

from metaindex.errors import UnsupportedFeatureError

__all__ = ["Storage", "LocalStorage", "ArrowStorage", "FileStat", "make_storage"]


@dataclass(frozen=True)
class FileStat:
    """One file of a listing: base name, size, modification time (ms) and, on object stores,
    the ETag the listing reported (None elsewhere)."""

    name: str
    size: int
    mtime_ms: int
    etag: str | None = None


class Storage:
    """What the store needs from a filesystem; paths are full paths on that filesystem."""

    key: tuple  # identifies the filesystem + root for in-process caches

    def join(self, *parts: str) -> str:
        return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts))

    def read(self, path: str) -> bytes:
        raise NotImplementedError

    def write(self, path: str, data) -> None:
        """Write a new file (the name must not exist) durably: ``data`` is a bytes-like
        object, or a list of them written one after the other (a part as its writer made it,
        not joined into one more copy)."""
        raise NotImplementedError

    def create_if_absent(self, path: str, data, temp_path: str) -> bool:
        """Atomically create ``path`` with ``data`` unless it exists; True if we created it."""
        raise NotImplementedError

    def list(self, directory: str) -> list[FileStat]:
        """Files directly in ``directory`` (empty when it does not exist)."""
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        raise NotImplementedError

    def remove_dir(self, path: str) -> None:
        """Remove a directory tree; a missing one is not an error."""
        raise NotImplementedError

    def makedirs(self, path: str) -> None:
        raise NotImplementedError

    def sync_dir(self, path: str) -> None:
        """Make the directory's entries durable (no-op where not applicable)."""


class LocalStorage(Storage):
    """A local directory, with fsync and hard-link based create-if-absent."""

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
                    view = view[os.write(fd, view):]
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
                    f"for atomic create-if-absent ({exc.strerror})") from exc
            raise
        finally:
            try:
                os.unlink(temp_path)
            except FileNotFoundError:
                pass
        self.sync_dir(os.path.dirname(path))
        return True

    def list(self, directory: str) -> list[FileStat]:
        out = []
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


class ArrowStorage(Storage):
    """Any ``pyarrow.fs.FileSystem``: reads, lists, part writes and deletes; no commits."""

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


def make_storage(root, filesystem=None, storage_options=None) -> tuple[Storage, str]:
    """``(storage, root path on it)`` for a store root given as a path or URI.

    Local directories (plain paths, ``file://`` URIs, ``pyarrow.fs.LocalFileSystem`` or a
    ``SubTreeFileSystem`` over it) get :class:`LocalStorage`; object store URIs (``s3://``,
    ``s3a://``, ``gs://``, ``az://``, ``abfs[s]://``) without a ``filesystem`` get
    :class:`~metaindex.store.objectstore.ObjectStorage` configured by ``storage_options``;
    anything else :class:`ArrowStorage`.
    """
    if isinstance(root, os.PathLike):
        root = os.fspath(root)
    if not isinstance(root, str) or not root:
        raise TypeError(f"root must be a non-empty path or URI, not {root!r}")
    from pyarrow import fs as pafs

    from metaindex.store.objectstore import ObjectStorage, check_storage_options, \
        is_object_store_uri

    options = check_storage_options(storage_options)
    if filesystem is None:
        if is_object_store_uri(root):
            storage = ObjectStorage(root, options)
            return storage, storage.root_path(root)
        if "://" not in root:
            return LocalStorage(root), os.path.abspath(root)
        filesystem, root = pafs.FileSystem.from_uri(root)
    if not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, not "
                        f"{type(filesystem).__name__}")
    if isinstance(filesystem, pafs.LocalFileSystem):
        return LocalStorage(root), os.path.abspath(root)
    if isinstance(filesystem, pafs.SubTreeFileSystem) and \
            isinstance(filesystem.base_fs, pafs.LocalFileSystem):
        path = os.path.join(filesystem.base_path, root.lstrip("/"))
        return LocalStorage(path), os.path.abspath(path)
    return ArrowStorage(filesystem, root.rstrip("/")), root.rstrip("/")
