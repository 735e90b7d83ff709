"""The ``directory`` table format: a table is the data files below a root directory.

The root is a local directory, an object store prefix, or anything ``pyarrow.fs`` opens
(:func:`metaindex.engine.listing.locate_table`), with data files possibly under Hive-style
``key=value`` partition directories. Listing follows Spark's rules for what is data: every
regular file below the root, except those under a component that starts with ``.``, or with
``_`` and holds no ``=`` (``_SUCCESS``, ``_metadata``, ``_delta_log/``, a ``_metaindex`` store
next to the data), or ends with ``._COPYING_``. Each file is identified by its path relative to
the root (POSIX separators), its size and its modification time in milliseconds, which is what
the metadata store records (``obj_name``, ``obj_size``, ``obj_mtime``).

Listing is the table storage's one recursive walk
(:meth:`~metaindex.store.storage.Storage.walk`: a recursive ``FileSelector``, or one paged LIST
of an object store prefix, which also reports each object's ETag); never a request per file.
"""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from metaindex.arrays import ONE, ZERO, numeric_array, to_numpy
from metaindex.errors import UnsupportedFeatureError
from metaindex.formats.base import DataFile, Listing, TableFormat
from metaindex.store.storage import hidden_paths, is_hidden

__all__ = [
    "DirectoryFormat",
    "list_files",
    "parse_partition",
    "is_hidden",
    "refuse_table_formats",
    "HIVE_NULL",
    "hidden_paths",
    "parse_partitions",
]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value Hive and Spark write for a NULL partition value."""


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


def refuse_table_formats(location) -> None:
    """Refuse a Delta Lake or Apache Iceberg table: its directory also holds the files of old
    versions (removed from the table by its log, not from storage), which a listing reads as
    data, so an index of them would keep rows the table no longer has. One ``get_file_info``
    call for the two markers (a listing of ``metadata/`` only when it exists).

    Raises:
        UnsupportedFeatureError: ``_delta_log/`` or an Iceberg ``metadata/`` directory
            (holding ``*.metadata.json`` or ``version-hint.text``) at the table root.
    """
    root = location.root.rstrip("/")
    try:
        delta, meta = location.filesystem.get_file_info([f"{root}/_delta_log", f"{root}/metadata"])
    except OSError:
        return  # the listing that follows reports what is wrong with the table root
    if delta.type == pafs.FileType.Directory:
        raise UnsupportedFeatureError(
            f"{location.uri} is a Delta Lake table (it has _delta_log/): its directory holds "
            "files of old versions too; metaindex indexes plain Parquet directories only"
        )
    if meta.type == pafs.FileType.Directory:
        names = [
            info.base_name
            for info in location.filesystem.get_file_info(pafs.FileSelector(meta.path))
        ]
        if any(n.endswith(".metadata.json") or n == "version-hint.text" for n in names):
            raise UnsupportedFeatureError(
                f"{location.uri} is an Apache Iceberg table (metadata/ holds its table "
                "metadata): its directory holds files of old versions too; metaindex indexes "
                "plain Parquet directories only"
            )


def parse_partitions(directories: pa.Array) -> list:
    """:func:`parse_partition` of each of ``directories`` (relative directories ending in
    ``/``, or ``""``), vectorised over their components: the split at ``/`` and the first
    ``=`` in Arrow, and Python's percent-decoding only for the keys and values holding a
    ``%``. Returns one ``((key, value), ...)`` per directory."""
    n = len(directories)
    if not n:
        return []
    components = pc.split_pattern(directories, "/")
    owner = to_numpy(pc.list_parent_indices(components))
    flat = pc.list_flatten(components)
    pairs = pc.split_pattern(flat, "=", max_splits=1)
    # numpy comparisons and Arrow scalar indices: a Python int argument to a compute call
    # goes through pa.scalar, which imports pandas (issue 32: none on the build path)
    has_eq = to_numpy(pc.list_value_length(pairs)) == 2
    keys = pc.list_element(pairs, ZERO)
    keep = has_eq & (to_numpy(pc.utf8_length(keys)) > 0)
    if not keep.any():
        return [()] * n
    at = numeric_array(np.flatnonzero(keep))
    keys = _unquoted(keys.take(at))
    values = _unquoted(pc.list_element(pairs.take(at), ONE))
    out: list = [[] for _ in range(n)]
    for d, key, value in zip(owner[keep].tolist(), keys, values, strict=True):
        out[d].append((key, None if value == HIVE_NULL else value))
    return [tuple(p) for p in out]


def _unquoted(texts: pa.Array) -> list:
    """``texts`` as a list of str, :func:`urllib.parse.unquote` applied to those with a
    ``%`` (the others are their own decoding)."""
    out = texts.to_pylist()
    for i in np.flatnonzero(to_numpy(pc.match_substring(texts, "%"))).tolist():
        out[i] = unquote(out[i])
    return out


def list_files(location) -> Listing:
    """Every data file below the table root (hidden files and directories excluded): the
    storage's one listing as Arrow with Spark's hidden-file rule applied
    (:meth:`~metaindex.store.storage.Storage.walk_data_table`: a native walk that does not
    enter hidden directories on a local disk, elsewhere :func:`hidden_paths` over the path
    column of the backend's listing), partition values parsed per distinct directory when
    asked for (:func:`parse_partitions`)."""
    return Listing.from_table(
        location.storage.walk_data_table(location.storage_root), parse_partitions
    )


class DirectoryFormat(TableFormat):
    """A table is the data files below its root (see the module docstring); a file's
    identity is its relative path, size and modification time."""

    name = "directory"

    def check(self, location) -> None:
        refuse_table_formats(location)

    def list_files(self, location) -> Listing:
        return list_files(location)

    def still_listed(self, filesystem, path: str, file: DataFile) -> bool:
        info = filesystem.get_file_info(path)
        return (
            info.type == pafs.FileType.File
            and info.size == file.size
            and info.mtime_ns is not None
            and info.mtime_ns // 1_000_000 == file.mtime
        )
