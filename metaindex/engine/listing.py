"""Where a table lives: its root resolved to a filesystem (:class:`TableLocation`).

The table's storage comes from the scheme registry the metadata store uses too
(:func:`metaindex.store.schemes.open_storage`): a local directory, an object store (``s3://``,
``s3a://``, ``gs://``, ``az://``, ``abfs[s]://``, configured from the environment and
``storage_options``), any other ``pyarrow.fs`` filesystem, or a scheme registered there.
Listing is that storage's one recursive walk (:meth:`~metaindex.store.storage.Storage.walk`: a
recursive ``FileSelector``, or one paged LIST of an object store prefix, which also reports
each object's ETag); never a request per file. The directory format takes it as one Arrow
table (:meth:`~metaindex.store.storage.Storage.walk_table`) and its :class:`Listing` stays
Arrow until someone asks for :class:`DataFile` objects. Data files are read through the
``pyarrow.fs`` filesystem the storage gives
(:meth:`~metaindex.store.storage.Storage.arrow_filesystem`).

Which files a table has is its table format's answer (:mod:`metaindex.formats`); the
directory format's listing (:mod:`metaindex.formats.directory`) and the file records
(:class:`DataFile`, :class:`Listing`) are re-exported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.fs as pafs

from metaindex.formats.base import DataFile, Listing
from metaindex.formats.directory import (
    HIVE_NULL,
    is_hidden,
    list_files,
    parse_partition,
    refuse_table_formats,
)
from metaindex.store import canonical_scheme, normalize_table_uri
from metaindex.store.schemes import open_storage

__all__ = [
    "TableLocation",
    "DataFile",
    "Listing",
    "locate_table",
    "list_files",
    "parse_partition",
    "is_hidden",
    "refuse_table_formats",
    "HIVE_NULL",
]


@dataclass(frozen=True)
class TableLocation:
    """A table root resolved to a filesystem.

    Attributes:
        uri: the normalised table URI (``file:///data/t``, ``s3://bucket/t``): the identity the
            metadata store keys the index by.
        filesystem: the ``pyarrow.fs.FileSystem`` the data files are read through.
        root: the root directory as a path on ``filesystem`` (no trailing slash).
        display: the prefix paths are reported under (``root`` for local tables, else the URI),
            so a reported path opens with pyarrow, DuckDB or Spark as it is.
        storage: the :class:`~metaindex.store.storage.Storage` that lists the table.
        storage_root: the root as a path on ``storage`` (an object store's: the URI).
    """

    uri: str
    filesystem: pafs.FileSystem
    root: str
    display: str
    storage: object = None
    storage_root: str | None = None

    def full_path(self, relative: str) -> str:
        """The filesystem path of a file given relative to the root."""
        return f"{self.root}/{relative}"

    def display_path(self, relative: str) -> str:
        return f"{self.display}/{relative}"


def locate_table(
    table, filesystem: pafs.FileSystem | None = None, storage_options: dict | None = None
) -> TableLocation:
    """Resolve a table given as a local path, a URI, or a path on ``filesystem``.

    The storage is the one :func:`metaindex.store.schemes.open_storage` opens: object store
    URIs (``s3://``, with Hadoop's ``s3a://``/``s3n://`` spellings, ``gs://``, ``az://``,
    ``abfs[s]://``) are configured from the environment plus ``storage_options`` (see
    :mod:`metaindex.store.objectstore`).

    Raises:
        TypeError: ``table`` is not a str or os.PathLike, ``filesystem`` not a FileSystem, or
            ``storage_options`` not a dict.
        FileNotFoundError: the root is not a directory (on an object store: no object under it).
        StorageNotFoundError / StorageAccessError / StorageError: the bucket does not exist,
            the credentials were refused, the service failed.
    """
    if isinstance(table, os.PathLike):
        table = os.fspath(table)
    if not isinstance(table, str) or not table:
        raise TypeError(
            f"table must be a non-empty str or os.PathLike (a directory or a URI), not {table!r}"
        )
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(
            f"filesystem must be a pyarrow.fs.FileSystem, not {type(filesystem).__name__}"
        )
    if "://" in table:
        scheme, _, rest = table.partition("://")
        table = f"{canonical_scheme(scheme)}://{rest}"
        if filesystem is None and canonical_scheme(scheme) != "file":
            table = normalize_table_uri(table)
    storage, path = open_storage(table, filesystem, storage_options)
    path = path.rstrip("/") or "/"
    if not storage.is_dir(path):
        raise FileNotFoundError(f"table root {table!r} is not a directory")
    if storage.is_local:
        uri = normalize_table_uri(path)
    elif filesystem is not None:
        uri = normalize_table_uri(f"{filesystem.type_name}://{path.lstrip('/')}")
    else:
        uri = table
    data_fs, root = storage.arrow_filesystem(path)
    root = root.rstrip("/") or "/"
    return TableLocation(uri, data_fs, root, root if storage.is_local else uri, storage, path)
