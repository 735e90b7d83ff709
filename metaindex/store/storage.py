"""What a storage backend does: the byte-level access the metadata store and table listing need.

One interface, :class:`Storage`, implemented once per backend module (``localfs``: a local
directory; ``objectstore``: S3, GCS and Azure through obstore; ``arrowfs``: any other
``pyarrow.fs`` filesystem, read-only) and chosen by URI scheme in
:mod:`metaindex.store.schemes`. This module names no backend.

Commits need one primitive beyond plain files: **create-if-absent** (write a whole file under a
name only if nothing has that name; never overwrite, never expose a partial file). On a local
filesystem that is a temporary file, fsync, ``os.link(temp, final)`` (fails if ``final``
exists), fsync of the directory. ``pyarrow.fs`` has no such operation: object stores offer it as
a conditional PUT (S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure
``If-None-Match: *``). A backend without it refuses to commit
(:class:`~metaindex.errors.UnsupportedFeatureError`) and still reads.

Table listing needs two more things of a backend: :meth:`Storage.walk` (every file below a
directory, in one listing, never a request per file; :meth:`Storage.walk_table` gives the same
files as one Arrow table, with no Python object per file where the backend's listing allows)
and :meth:`Storage.arrow_filesystem` (a ``pyarrow.fs`` filesystem the data files are read
through).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from metaindex.arrays import numeric_array, string_array

__all__ = [
    "Storage",
    "FileStat",
    "check_storage_options",
    "WALK_SCHEMA",
    "walk_table_of",
    "is_hidden",
    "hidden_paths",
]

WALK_SCHEMA = pa.schema(
    [("path", pa.string()), ("size", pa.int64()), ("mtime", pa.int64()), ("etag", pa.string())]
)
"""The columns of :meth:`Storage.walk_table`: the path relative to the directory walked
(``/``-separated), size in bytes, modification time in ms since the epoch, the object store's
ETag (null elsewhere)."""


class FileStat(NamedTuple):
    """One file of a listing: name (base name; for :meth:`Storage.walk`, the path relative to
    the directory walked), size, modification time (ms) and, on object stores, the ETag the
    listing reported (None elsewhere)."""

    name: str
    size: int
    mtime_ms: int
    etag: str | None = None


def walk_table_of(stats: Iterable[FileStat]) -> pa.Table:
    """:class:`FileStat` s (a :meth:`Storage.walk`) as a table of :data:`WALK_SCHEMA`."""
    stats = list(stats)
    etags = [s.etag for s in stats]
    etag = (
        pa.nulls(len(stats), pa.string())
        if all(e is None for e in etags)
        else pa.array(etags, pa.string())
    )
    return pa.Table.from_arrays(
        [
            string_array([s.name for s in stats]),
            numeric_array(np.fromiter((s.size for s in stats), np.int64, len(stats))),
            numeric_array(np.fromiter((s.mtime_ms for s in stats), np.int64, len(stats))),
            etag,
        ],
        schema=WALK_SCHEMA,
    )


def is_hidden(component: str) -> bool:
    """Spark's rule for path components that are not data: a name that starts with ``.``,
    or with ``_`` and holds no ``=`` (``_SUCCESS``, ``_metadata``, ``_delta_log``; a ``_k=v``
    name is a partition), or ends with ``._COPYING_``. A file is data when no component of
    its path relative to the table root is hidden."""
    return (
        component.startswith(".")
        or (component.startswith("_") and "=" not in component)
        or component.endswith("._COPYING_")
    )


_HIDDEN = r"(^|/)(\.|_[^/=]*(/|$))|\._COPYING_(/|$)"
"""A relative path with a component :func:`is_hidden` calls hidden (RE2 syntax): one that
starts with ``.``; starts with ``_`` and holds no ``=``; or ends with ``._COPYING_``."""


def hidden_paths(paths: pa.Array) -> pa.Array:
    """For each relative path (``/``-separated), whether any of its components
    :func:`is_hidden` (vectorised: one regular expression over the array)."""
    import pyarrow.compute as pc

    return pc.match_substring_regex(paths, _HIDDEN)


def check_storage_options(options) -> dict:
    """``storage_options`` as a plain dict of str keys (None: empty); TypeError otherwise."""
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise TypeError(f"storage_options must be a dict with str keys, not {options!r}")
    return dict(options)


class Storage:
    """What the store and table listing need from a filesystem; paths are full paths on it.

    Attributes:
        key: identifies the filesystem + root for in-process caches.
        is_local: paths are local filesystem paths (reported to users as they are; a
            table's identity is their ``file://`` URI).
        uri_paths: paths are URIs the scheme registry opens again (a default store next to
            a table is then named by URI).
    """

    key: tuple
    is_local = False
    uri_paths = False

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
        """Atomically create ``path`` with ``data`` unless it exists; True if we created it.

        Raises:
            UnsupportedFeatureError: the backend has no atomic create-if-absent (read-only
                for commits).
        """
        raise NotImplementedError

    def list(self, directory: str) -> list[FileStat]:
        """Files directly in ``directory`` (empty when it does not exist)."""
        raise NotImplementedError

    def walk(self, directory: str):
        """Every file below ``directory`` that can hold data, at any depth, as
        :class:`FileStat` s named by their path relative to it (``/``-separated); in one
        listing where the backend can.

        Raises:
            FileNotFoundError: ``directory`` does not exist, where the backend can tell (an
                object store prefix without objects just lists nothing).
            OSError: the backend reports no modification time (metaindex needs one to tell
                rewritten files from indexed ones).
        """
        raise NotImplementedError

    def walk_table(self, directory: str) -> pa.Table:
        """:meth:`walk` as one Arrow table of :data:`WALK_SCHEMA` (same files, same errors).
        Backends override it to fill the columns from their native listing; this default
        builds them from :meth:`walk`."""
        return walk_table_of(self.walk(directory))

    def walk_data_table(self, directory: str) -> pa.Table:
        """:meth:`walk_table` without the files Spark does not read as data: those with a
        hidden component (:func:`is_hidden`) in their path relative to ``directory`` (same
        errors). Backends whose listing can skip hidden directories while walking override
        it; this default filters the whole listing with :func:`hidden_paths`."""
        table = self.walk_table(directory)
        if table.num_rows:
            import pyarrow.compute as pc

            hidden = hidden_paths(table.column("path"))
            if pc.any(hidden).as_py():
                table = table.filter(pc.invert(hidden))
        return table

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (on an object store: a prefix with objects)."""
        raise NotImplementedError

    def arrow_filesystem(self, path: str) -> tuple:
        """``(pyarrow.fs.FileSystem, path on it)`` reading the files below ``path`` (a table's
        data files are read through it).

        Raises:
            StorageError / StorageAccessError / StorageNotFoundError: the backend cannot make
                one (bad settings, refused credentials, missing bucket).
        """
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
