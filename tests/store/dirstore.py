"""A storage scheme added the way a new one is: this module plus one registry line (the last line).

``dirstore://bucket/key...`` is a small object store kept in a local directory: the object
``bucket/key`` is the file ``<base>/bucket/key``, where ``base`` is the ``storage_options``
entry of that name. Like an object store it has no directories of its own (a prefix exists
while an object is under it), paths are URIs, and commits use its create-if-absent (a hard link
of a fully written temporary file, which fails when the name is taken). It implements the whole
:class:`~metaindex.store.storage.Storage` interface on its own (it does not reuse ``localfs``), so
the store suite (``tests/store/backends.py``) and table listing running on it show that the
registry is the only place a scheme is named.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from metaindex.store.schemes import register_scheme
from metaindex.store.storage import FileStat, Storage

SCHEME = "dirstore"


class DirStorage(Storage):
    """The objects of ``dirstore://`` URIs, kept under ``base``."""

    uri_paths = True

    def __init__(self, base: str):
        self.base = os.path.abspath(base)
        self.key = (SCHEME, self.base)

    def file(self, path: str) -> str:
        """The local file holding the object at ``path`` (a ``dirstore://`` URI)."""
        parts = urlsplit(path)
        if parts.scheme != SCHEME or not parts.netloc:
            raise ValueError(f"{path} is not a {SCHEME}://bucket/... URI")
        return os.path.join(self.base, parts.netloc, *[p for p in parts.path.split("/") if p])

    def read(self, path: str) -> bytes:
        with open(self.file(path), "rb") as f:
            return f.read()

    def write(self, path: str, data) -> None:
        target = self.file(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:  # a PUT: replaces what was there
            for piece in data if isinstance(data, list) else [data]:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())

    def create_if_absent(self, path: str, data, temp_path: str) -> bool:
        """A hard link of a whole temporary file (kept in ``<base>/.tmp``, as an object
        store needs none of the caller's), which fails when the name is taken."""
        temp = os.path.join(self.base, ".tmp", uuid.uuid4().hex)
        os.makedirs(os.path.dirname(temp), exist_ok=True)
        with open(temp, "wb") as f:
            f.write(bytes(data))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.makedirs(os.path.dirname(self.file(path)), exist_ok=True)
            os.link(temp, self.file(path))
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(temp)

    def list(self, directory: str) -> list[FileStat]:
        try:
            entries = list(os.scandir(self.file(directory)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [s for s in (_stat(e.name, e.path) for e in entries if e.is_file()) if s]

    def walk(self, directory: str) -> list[FileStat]:
        top = self.file(directory)
        out = []
        for here, _, names in os.walk(top):
            relative = os.path.relpath(here, top).replace(os.sep, "/")
            for name in names:
                stat = _stat(
                    name if relative == "." else f"{relative}/{name}", os.path.join(here, name)
                )
                if stat is not None:
                    out.append(stat)
        return out

    def is_dir(self, path: str) -> bool:
        return any(names for _, _, names in os.walk(self.file(path)))

    def arrow_filesystem(self, path: str) -> tuple:
        parts = urlsplit(path)
        return (
            pafs.SubTreeFileSystem(self.base, pafs.LocalFileSystem()),
            f"{parts.netloc}{parts.path}".rstrip("/"),
        )

    def exists(self, path: str) -> bool:
        return os.path.isfile(self.file(path))

    def delete(self, path: str) -> None:
        try:
            os.unlink(self.file(path))
        except FileNotFoundError:
            pass

    def remove_dir(self, path: str) -> None:
        for stat in self.walk(path):
            self.delete(self.join(path, stat.name))

    def makedirs(self, path: str) -> None:
        """No directories: a prefix exists while an object is under it."""


def _stat(name: str, file: str) -> FileStat | None:
    """The listing entry of ``file`` (None: deleted while listing)."""
    try:
        st = os.stat(file)
    except FileNotFoundError:
        return None
    return FileStat(name, st.st_size, st.st_mtime_ns // 1_000_000, f"{st.st_size}-{st.st_mtime_ns}")


def open_uri(uri: str, storage_options: dict) -> tuple:
    """``(DirStorage, uri as its path)``; ``storage_options["base"]`` is the directory."""
    base = storage_options.get("base")
    if not isinstance(base, str) or not base:
        raise TypeError(f"{SCHEME}:// needs storage_options={{'base': <directory>}}")
    parts = urlsplit(uri)
    if not parts.netloc:
        raise ValueError(f"{uri}: no bucket")
    return DirStorage(base), f"{SCHEME}://{parts.netloc}/{parts.path.strip('/')}".rstrip("/")


register_scheme(SCHEME, __name__)
