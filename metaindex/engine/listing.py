"""Where a table lives: its root resolved to a filesystem (:class:`TableLocation`).

A table root is a local directory, an object store prefix (``s3://``, ``s3a://``, ``gs://``,
``az://``, ``abfs[s]://``, listed through :class:`metaindex.store.objectstore.ObjectStorage`),
or anything ``pyarrow.fs`` opens. Data files are read through ``pyarrow.fs`` configured from
the environment and ``storage_options`` (:func:`metaindex.store.objectstore.arrow_filesystem`:
S3, GCS and Azure).

Which files a table has is its table format's answer (:mod:`metaindex.formats`); the
directory format's listing (:mod:`metaindex.formats.directory`) and the file records
(:class:`DataFile`, :class:`Listing`) are re-exported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from metaindex.errors import StorageAccessError, StorageError, StorageNotFoundError
from metaindex.formats.base import DataFile, Listing
from metaindex.formats.directory import (HIVE_NULL, is_hidden, list_files, parse_partition,
                                         refuse_table_formats)
from metaindex.store import canonical_scheme, normalize_table_uri

__all__ = ["TableLocation", "DataFile", "Listing", "locate_table", "list_files",
           "parse_partition", "is_hidden", "refuse_table_formats", "HIVE_NULL"]

@dataclass(frozen=True)
class TableLocation:
    """A table root resolved to a filesystem.

    Attributes:
        uri: the normalised table URI (``file:///data/t``, ``s3://bucket/t``): the identity the
            metadata store keys the index by.
        filesystem: the ``pyarrow.fs.FileSystem`` holding the files.
        root: the root directory as a path on ``filesystem`` (no trailing slash).
        display: the prefix paths are reported under (``root`` for local tables, else the URI),
            so a reported path opens with pyarrow, DuckDB or Spark as it is.
        storage: the ``ObjectStorage`` that lists an object store table (None elsewhere).
    """

    uri: str
    filesystem: pafs.FileSystem
    root: str
    display: str
    storage: object = None

    def full_path(self, relative: str) -> str:
        """The filesystem path of a file given relative to the root."""
        return f"{self.root}/{relative}"

    def display_path(self, relative: str) -> str:
        return f"{self.display}/{relative}"


def locate_table(table, filesystem: pafs.FileSystem | None = None,
                 storage_options: dict | None = None) -> TableLocation:
    """Resolve a table given as a local path, a ``pyarrow.fs`` URI, or a path on ``filesystem``.

    Object store URIs (``s3://``, with Hadoop's ``s3a://``/``s3n://`` spellings, ``gs://``,
    ``az://``, ``abfs[s]://``) are configured from the environment plus ``storage_options``
    (see :mod:`metaindex.store.objectstore`).

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
        raise TypeError(f"table must be a non-empty str or os.PathLike (a directory or a URI), "
                        f"not {table!r}")
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, not "
                        f"{type(filesystem).__name__}")
    from metaindex.store.objectstore import (ObjectStorage, check_storage_options,
                                             is_object_store_uri)

    options = check_storage_options(storage_options)
    if "://" in table:
        scheme, _, rest = table.partition("://")
        table = f"{canonical_scheme(scheme)}://{rest}"
    if filesystem is None and is_object_store_uri(table):
        return _locate_object_table(table, ObjectStorage(table, options), options)
    if filesystem is None:
        if "://" in table:
            filesystem, root = pafs.FileSystem.from_uri(table)
            uri = normalize_table_uri(table)
        else:
            filesystem, root = pafs.LocalFileSystem(), os.path.abspath(table)
            uri = normalize_table_uri(root)
    else:
        root = table
        if "://" in table:
            root = pafs.FileSystem.from_uri(table)[1]
        if filesystem.type_name == "local":
            root = os.path.abspath(root)
            uri = normalize_table_uri(root)
        else:
            uri = normalize_table_uri(f"{filesystem.type_name}://{root.lstrip('/')}")
    root = root.rstrip("/") or "/"
    info = filesystem.get_file_info(root)
    if info.type != pafs.FileType.Directory:
        raise FileNotFoundError(f"table root {table!r} is not a directory ({info.type.name})")
    local = filesystem.type_name == "local"
    display = root if local else uri
    return TableLocation(uri, filesystem, root, display)


def _locate_object_table(table: str, storage, options: dict) -> TableLocation:
    uri = normalize_table_uri(table)
    root = storage.root_path(uri)
    if not storage.walk(root, limit=1):
        raise FileNotFoundError(f"table root {table!r} is not a directory (no object under it)")
    from metaindex.store.objectstore import arrow_filesystem

    try:
        filesystem, path = arrow_filesystem(uri, options)
    except (OSError, pa.ArrowException) as exc:
        raise arrow_error(exc, uri) from None
    return TableLocation(uri, filesystem, path, uri, storage)


def arrow_error(exc: BaseException, where: str) -> BaseException:
    """A ``pyarrow.fs`` object store failure as the typed error metaindex raises."""
    text = str(exc)
    if any(s in text for s in ("NoSuchBucket", "NO_SUCH_BUCKET", "bucket does not exist")) or \
            ("Bucket" in text and "not found" in text):
        return StorageNotFoundError(f"{where}: the bucket or container does not exist ({text})")
    if any(s in text for s in ("ACCESS_DENIED", "AccessDenied", "INVALID_ACCESS_KEY_ID",
                               "SignatureDoesNotMatch", "SIGNATURE_DOES_NOT_MATCH", "403")):
        return StorageAccessError(f"{where}: the object store refused the credentials or "
                                  f"denied access ({text})")
    return StorageError(f"{where}: {text}")
