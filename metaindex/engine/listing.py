"""Where a table lives and which data files it has.

A table is a directory (local, or anything ``pyarrow.fs`` opens) of data files, possibly under
Hive-style ``key=value`` partition directories. Listing follows Spark's rules for what is data:
every regular file below the root, except those under a component that starts with ``.``, or
with ``_`` and holds no ``=`` (``_SUCCESS``, ``_metadata``, ``_delta_log/``, a ``_metaindex``
store next to the data), or ends with ``._COPYING_``. Each file is identified by its path
relative to the root (POSIX separators), its size and its modification time in milliseconds,
which is what the metadata store records (``obj_name``, ``obj_size``, ``obj_mtime``).

Listing uses one recursive ``FileSelector`` call, so on an object store it is one paged LIST of
the prefix, not a walk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np
import pyarrow.fs as pafs

from metaindex.store import normalize_table_uri

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
        filesystem: the ``pyarrow.fs.FileSystem`` holding the files.
        root: the root directory as a path on ``filesystem`` (no trailing slash).
        display: the prefix paths are reported under (``root`` for local tables, else the URI),
            so a reported path opens with pyarrow, DuckDB or Spark as it is.
    """

    uri: str
    filesystem: pafs.FileSystem
    root: str
    display: str

    def full_path(self, relative: str) -> str:
        """The filesystem path of a file given relative to the root."""
        return f"{self.root}/{relative}"

    def display_path(self, relative: str) -> str:
        return f"{self.display}/{relative}"


def locate_table(table, filesystem: pafs.FileSystem | None = None) -> TableLocation:
    """Resolve a table given as a local path, a ``pyarrow.fs`` URI, or a path on ``filesystem``.

    Raises:
        TypeError: ``table`` is not a str or os.PathLike, or ``filesystem`` not a FileSystem.
        FileNotFoundError: the root is not a directory.
    """
    if isinstance(table, os.PathLike):
        table = os.fspath(table)
    if not isinstance(table, str) or not table:
        raise TypeError(f"table must be a non-empty str or os.PathLike (a directory or a URI), "
                        f"not {table!r}")
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, not "
                        f"{type(filesystem).__name__}")
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
    since the epoch, ``partition`` the ``((key, value), ...)`` of its directories."""

    path: str
    size: int
    mtime: int
    partition: tuple = ()


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
    delta, meta = location.filesystem.get_file_info([f"{root}/_delta_log", f"{root}/metadata"])
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
    selector = pafs.FileSelector(location.root, recursive=True)
    prefix = len(location.root.rstrip("/")) + 1
    directories: dict = {"": (False, ())}  # relative dir -> (hidden, partition values)
    files = []
    for info in location.filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[prefix:].replace("\\", "/")
        directory, _, name = relative.rpartition("/")
        seen = directories.get(directory)
        if seen is None:
            seen = directories[directory] = (
                any(is_hidden(c) for c in directory.split("/")),
                parse_partition(relative))
        if seen[0] or is_hidden(name):
            continue
        mtime_ns = info.mtime_ns
        if mtime_ns is None:
            raise OSError(f"{info.path}: the filesystem reports no modification time; metaindex "
                          "needs one to tell rewritten files from indexed ones")
        files.append(DataFile(relative, info.size, mtime_ns // 1_000_000, seen[1]))
    return Listing(files)
