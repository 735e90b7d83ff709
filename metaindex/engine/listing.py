"""Where a table lives and which data files it has.

A table is a directory (local, an object store prefix, or anything ``pyarrow.fs`` opens) of data
files, possibly under
Hive-style ``key=value`` partition directories. Listing follows Spark's rules for what is data:
every regular file below the root, except those under a component that starts with ``.``, or
with ``_`` and holds no ``=`` (``_SUCCESS``, ``_metadata``, ``_delta_log/``, a ``_metaindex``
store next to the data), or ends with ``._COPYING_``. Each file is identified by its path
relative to the root (POSIX separators), its size and its modification time in milliseconds,
which is what the metadata store records (``obj_name``, ``obj_size``, ``obj_mtime``).

The table's storage comes from the scheme registry the metadata store uses too
(:func:`metaindex.store.schemes.open_storage`): a local directory, an object store (``s3://``,
``s3a://``, ``gs://``, ``az://``, ``abfs[s]://``, configured from the environment and
``storage_options``), any other ``pyarrow.fs`` filesystem, or a scheme registered there.
Listing is that storage's one recursive walk (:meth:`~metaindex.store.storage.Storage.walk`: a
recursive ``FileSelector``, or one paged LIST of an object store prefix, which also reports
each object's ETag); never a request per file. Data files are read through the
``pyarrow.fs`` filesystem the storage gives
(:meth:`~metaindex.store.storage.Storage.arrow_filesystem`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np
import pyarrow.fs as pafs

from metaindex.store import canonical_scheme, normalize_table_uri
from metaindex.store.schemes import open_storage

__all__ = ["TableLocation", "DataFile", "Listing", "locate_table", "list_files",
           "parse_partition", "is_hidden", "refuse_table_formats", "HIVE_NULL"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value Hive and Spark write for a NULL partition value."""


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


def locate_table(table, filesystem: pafs.FileSystem | None = None,
                 storage_options: dict | None = None) -> TableLocation:
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
        raise TypeError(f"table must be a non-empty str or os.PathLike (a directory or a URI), "
                        f"not {table!r}")
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, not "
                        f"{type(filesystem).__name__}")
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


def is_hidden(component: str) -> bool:
    """Spark's rule for path components that are not data (see the module docstring)."""
    return (component.startswith(".") or (component.startswith("_") and "=" not in component)
            or component.endswith("._COPYING_"))


def parse_partition(relative: str) -> tuple:
    """``((key, value), ...)`` from the ``key=value`` directories of a relative path.

    Keys and values are percent-decoded (Hive/Spark escape special characters that way);
    :data:`HIVE_NULL` becomes None.
    """
    out = []
    for component in relative.split("/")[:-1]:
        key, eq, value = component.partition("=")
        if not eq or not key:
            continue
        value = unquote(value)
        out.append((unquote(key), None if value == HIVE_NULL else value))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DataFile:
    """One data file: ``path`` relative to the table root, ``size`` in bytes, ``mtime`` in ms
    since the epoch, ``partition`` the ``((key, value), ...)`` of its directories, ``etag``
    the object store's ETag from the listing (None on filesystems)."""

    path: str
    size: int
    mtime: int
    partition: tuple = ()
    etag: str | None = None


class Listing:
    """The data files of a table at one moment, sorted by path.

    Attributes:
        files: list of :class:`DataFile`.
        partition_columns: partition keys in the order they first appear in paths.
    """

    def __init__(self, files: list):
        self.files = sorted(files, key=lambda f: f.path)
        keys: dict = {}
        for f in self.files:
            for k, _ in f.partition:
                keys.setdefault(k, None)
        self.partition_columns = tuple(keys)

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self):
        return iter(self.files)

    @property
    def paths(self) -> list:
        return [f.path for f in self.files]

    @property
    def sizes(self) -> np.ndarray:
        return np.fromiter((f.size for f in self.files), np.int64, len(self.files))

    @property
    def mtimes(self) -> np.ndarray:
        return np.fromiter((f.mtime for f in self.files), np.int64, len(self.files))

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def refuse_table_formats(location: TableLocation) -> None:
    """Refuse a Delta Lake or Apache Iceberg table: its directory also holds the files of old
    versions (removed from the table by its log, not from storage), which a listing reads as
    data, so an index of them would keep rows the table no longer has. One ``get_file_info``
    call for the two markers (a listing of ``metadata/`` only when it exists).

    Raises:
        UnsupportedFeatureError: ``_delta_log/`` or an Iceberg ``metadata/`` directory
            (holding ``*.metadata.json`` or ``version-hint.text``) at the table root.
    """
    from metaindex.errors import UnsupportedFeatureError

    root = location.root.rstrip("/")
    try:
        delta, meta = location.filesystem.get_file_info([f"{root}/_delta_log",
                                                         f"{root}/metadata"])
    except OSError:
        return  # the listing that follows reports what is wrong with the table root
    if delta.type == pafs.FileType.Directory:
        raise UnsupportedFeatureError(
            f"{location.uri} is a Delta Lake table (it has _delta_log/): its directory holds "
            "files of old versions too; metaindex indexes plain Parquet directories only")
    if meta.type == pafs.FileType.Directory:
        names = [info.base_name for info in location.filesystem.get_file_info(
            pafs.FileSelector(meta.path))]
        if any(n.endswith(".metadata.json") or n == "version-hint.text" for n in names):
            raise UnsupportedFeatureError(
                f"{location.uri} is an Apache Iceberg table (metadata/ holds its table "
                "metadata): its directory holds files of old versions too; metaindex indexes "
                "plain Parquet directories only")


def list_files(location: TableLocation) -> Listing:
    """Every data file below the table root (hidden files and directories excluded)."""
    entries = location.storage.walk(location.storage_root)
    directories: dict = {"": (False, ())}  # relative dir -> (hidden, partition values)
    files = []
    for relative, size, mtime, etag in entries:
        directory, _, name = relative.rpartition("/")
        seen = directories.get(directory)
        if seen is None:
            seen = directories[directory] = (
                any(is_hidden(c) for c in directory.split("/")),
                parse_partition(relative))
        if seen[0] or is_hidden(name):
            continue
        files.append(DataFile(relative, size, mtime, seen[1], etag))
    return Listing(files)
