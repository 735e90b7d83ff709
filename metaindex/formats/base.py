"""The two halves of the format seam, and the data files a table format lists.

* :class:`TableFormat`: where a table's data files and their identities come from (a directory
  listing; next, a Delta transaction log), given the table's ``TableLocation``
  (:func:`metaindex.engine.listing.locate_table`): the files as a :class:`Listing`
  (path, size, mtime, partition values), and for refresh what changed since a snapshot.
* :class:`DataFormat`: how one data file is read (our Parquet reader; next, Spark's readers for
  CSV, JSON and ORC): :meth:`DataFormat.open` gives a :class:`FileReader` with the file's
  schema, its columns in row groups, and the statistics its metadata holds.

Both take ``options`` (``{str: str}``, the reader options a user reads the table with, e.g.
CSV's ``header``); the built-in ones take none. Instances are picklable: collection tasks carry
them to worker processes and Spark executors. Implementations register by name
(:func:`metaindex.formats.register_table_format` / ``register_data_format``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import numeric_array, string_array, to_numpy
from metaindex.errors import UnsupportedFormatError

if TYPE_CHECKING:  # annotations only: formats/ sits below engine/
    from metaindex.engine.listing import TableLocation

__all__ = ["DataFile", "Listing", "TableFormat", "DataFormat", "FileReader", "Statistics"]


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

    def __reduce__(self):
        # its fields in one tuple: pickles (a task's thousands of files, sent to a worker)
        # in half the time of the slots dataclass's state-dict default
        return (DataFile, (self.path, self.size, self.mtime, self.partition, self.etag))


class Listing:
    """The data files of a table at one moment, sorted by path.

    Held as one Arrow table (:attr:`table`); :class:`DataFile` objects are made only when
    someone asks for them (:attr:`files`, iteration, :meth:`files_at`), so a listing of many
    files costs no Python object per file on the way to a prune.

    Made from :class:`DataFile` objects (``Listing(files)``), or from Arrow
    (:meth:`from_table`) with the partition values parsed from the paths' directories when
    asked for.

    Attributes:
        files: list of :class:`DataFile`.
        partition_columns: partition keys in the order they first appear in paths.
        state: where in the table's history the listing stands, as its table format says it
            (``{str: JSON}``; a Delta table: ``{"delta_version": 12, ...}``; a directory: ``{}``).
            A build or refresh records it with the index (the entry's ``table_state``,
            specs/metadata-store.md) and the table format reads it back in
            :meth:`TableFormat.changes`.
    """

    def __init__(self, files: Iterable[DataFile] = (), state: Mapping | None = None):
        self.state = dict(state or {})
        self._files: list | None = sorted(files, key=lambda f: f.path)
        self._table: pa.Table | None = None
        self._partitions: Callable[[pa.Array], list] | None = None
        self._partition_of: list | None = None

    @classmethod
    def from_table(
        cls,
        table: pa.Table,
        partitions: Callable[[pa.Array], list] | None = None,
        state: Mapping | None = None,
    ) -> Listing:
        """A listing of the files of ``table`` (columns ``path``, ``size``, ``mtime`` in ms,
        optionally ``etag``; any order: it is sorted here by path, UTF-8 byte order, which is
        ``sorted``'s order of the str).

        Args:
            partitions: given the distinct directories of the paths (``a=1/b=2/``, ``""``
                for the root) as a string array, their ``((key, value), ...)`` partition
                values, a list in the same order; called on first need. Default: none.
            state: as for the constructor.
        """
        columns = [
            table.column(name).cast(t)
            if name in table.column_names
            else pa.nulls(table.num_rows, t)
            for name, t in (
                ("path", pa.string()),
                ("size", pa.int64()),
                ("mtime", pa.int64()),
                ("etag", pa.string()),
            )
        ]
        table = pa.Table.from_arrays(columns, names=list(_LISTING_COLUMNS)).combine_chunks()
        paths = table.column("path")
        if (
            len(paths) > 1
            and not pc.all(pc.less_equal(paths.slice(0, len(paths) - 1), paths.slice(1))).as_py()
        ):
            table = table.take(pc.sort_indices(paths))
        out = cls.__new__(cls)
        out.state = dict(state or {})
        out._files, out._table = None, table
        out._partitions, out._partition_of = partitions, None
        return out

    @property
    def table(self) -> pa.Table:
        """The files as Arrow, sorted by path: ``path`` (relative to the table root),
        ``size``, ``mtime`` (ms), ``etag`` (null where the listing has none)."""
        if self._table is None:
            files = self._files or []
            etags = [f.etag for f in files]
            self._table = pa.Table.from_arrays(
                [
                    string_array([f.path for f in files]),
                    numeric_array(np.fromiter((f.size for f in files), np.int64, len(files))),
                    numeric_array(np.fromiter((f.mtime for f in files), np.int64, len(files))),
                    pa.nulls(len(files), pa.string())
                    if all(e is None for e in etags)
                    else pa.array(etags, pa.string()),
                ],
                names=list(_LISTING_COLUMNS),
            )
        return self._table

    def _partition_values(self) -> list:
        """The partition tuple of every file (from the parser given to :meth:`from_table`,
        once per distinct directory)."""
        if self._partition_of is None:
            paths = self.table.column("path")
            if self._partitions is None or not len(paths):
                self._partition_of = [()] * len(paths)
            elif not pc.any(pc.match_substring(paths, "/")).as_py():  # all at the root
                self._partition_of = [self._partitions(string_array([""]))[0]] * len(paths)
            else:
                directories = pc.dictionary_encode(
                    pc.replace_substring_regex(paths, r"[^/]*$", "")
                ).combine_chunks()
                parsed = self._partitions(directories.dictionary)
                self._partition_of = [parsed[i] for i in to_numpy(directories.indices)]
        return self._partition_of

    def files_at(self, rows) -> list:
        """The :class:`DataFile` s of rows ``rows`` (positions in path order)."""
        if self._files is not None:
            return [self._files[i] for i in rows]
        rows = np.asarray(rows, np.int64)
        picked = self.table.take(numeric_array(rows)).to_pydict()
        partitions = self._partition_values()
        return [
            DataFile(path, size, mtime, partitions[i], etag)
            for i, path, size, mtime, etag in zip(
                rows.tolist(),
                picked["path"],
                picked["size"],
                picked["mtime"],
                picked["etag"],
                strict=True,
            )
        ]

    @property
    def files(self) -> list:
        if self._files is None:
            self._files = self.files_at(np.arange(len(self)))
        return self._files

    @property
    def partition_columns(self) -> tuple:
        keys: dict = {}
        for partition in (
            self._partition_values() if self._files is None else (f.partition for f in self._files)
        ):
            for k, _ in partition:
                keys.setdefault(k, None)
        return tuple(keys)

    def __len__(self) -> int:
        return len(self._files) if self._files is not None else self.table.num_rows

    def __iter__(self) -> Iterator[DataFile]:
        return iter(self.files)

    @property
    def paths(self) -> list:
        return self.table.column("path").to_pylist()

    @property
    def sizes(self) -> np.ndarray:
        return to_numpy(self.table.column("size"))

    @property
    def mtimes(self) -> np.ndarray:
        return to_numpy(self.table.column("mtime"))

    @property
    def total_bytes(self) -> int:
        return int(self.sizes.sum())


_LISTING_COLUMNS = ("path", "size", "mtime", "etag")


class _Named:
    """A format registered by ``name``, configured by string ``options``."""

    name: ClassVar[str]
    known_options: ClassVar[frozenset | None] = frozenset()
    """The option names this format takes (others raise :class:`UnsupportedFormatError`);
    None: any (a format whose options go to another reader, e.g. Spark's)."""

    def __init__(self, options: Mapping[str, str] | None = None):
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"format options are a dict of str to str, not {options!r}")
        options = dict(options or {})
        for key, value in options.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"format options are str to str, not {key!r}: {value!r}")
        unknown = [] if self.known_options is None else sorted(set(options) - self.known_options)
        if unknown:
            raise UnsupportedFormatError(
                f"format {self.name!r} takes no option(s) {unknown}"
                + (f"; it takes {sorted(self.known_options)}" if self.known_options else ""),
                self.name,
            )
        self.options = options

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.options == other.options

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(self.options.items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options!r})"


class TableFormat(_Named, ABC):
    """Where a table's data files and their identities come from.

    A file's identity is what the store records for it (``obj_name``, ``obj_size``,
    ``obj_mtime``): the engine indexes a file under that identity and queries trust an entry
    only while the format still lists the file with it.
    """

    def check(self, location: TableLocation) -> None:
        """Refuse, with a typed error, a table this format cannot list soundly (called before
        a build). Default: accept."""

    @abstractmethod
    def list_files(self, location: TableLocation) -> Listing:
        """The table's data files now."""

    def reading(self, listing: Listing, files, data_format: DataFormat) -> DataFormat:
        """The data format ``files`` (of ``listing``, about to be collected) are read with:
        ``data_format`` as it is by default. A table format whose files name or hold columns
        otherwise than the table does (Delta's column mapping and log partition values) wraps
        it, so the collection sees the table's columns. Must stay picklable."""
        return data_format

    def still_listed(self, filesystem, path: str, file: DataFile) -> bool:
        """Whether ``file`` (at ``path`` on ``filesystem``) still has the identity it was
        listed with: asked after it was read, so a file rewritten meanwhile is not indexed.
        Default: True (immutable files, such as those a transaction log names)."""
        return True

    def changes(self, location: TableLocation, snapshot):
        """What changed in the table since ``snapshot`` (a ``metaindex.store.Snapshot``), as
        ``(Listing, metaindex.formats.diff.Diff)``: the files now and their delta against
        the snapshot's entries. Default: a full :meth:`list_files` compared with the
        snapshot's file list (a format with a log of changes overrides it)."""
        from metaindex.formats.diff import diff

        listing = self.list_files(location)
        return listing, diff(listing, snapshot.file_table(), snapshot.unreadable)


@dataclass(frozen=True)
class Statistics:
    """What a file's metadata says about one column, per row group.

    Attributes:
        stored_type: the Arrow type the bounds are in (a Parquet leaf's logical type).
        row_groups: one ``metaindex.parquet.statistics.ChunkStatistics`` (or None: none
            recorded) per row group, as ``Index.collect_from_statistics`` takes them.
    """

    stored_type: pa.DataType
    row_groups: list


class FileReader(ABC):
    """One open data file (a context manager).

    The column paths methods take are canonical dotted paths (``user.id``) of the file's
    schema. Only :attr:`schema`, :attr:`num_rows`, :attr:`num_row_groups` and
    :meth:`read_row_groups` must be implemented; the rest say "nothing known" by default.
    """

    num_rows: int
    num_row_groups: int

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The file's Arrow schema as the table schema records it."""

    @abstractmethod
    def read_row_groups(
        self, groups: range, columns: list, *, use_threads: bool = False
    ) -> pa.Table:
        """The top-level ``columns`` of row groups ``groups`` (a format without row groups
        has one)."""

    def statistics(self, path: str) -> Statistics | None:
        """Per-row-group statistics of a leaf column from the file's metadata; None when it
        has none (min/max then scans the column)."""
        return None

    def as_read(self, path: str, values):
        """``values`` of column ``path`` as the query engine reads them (Parquet INT96:
        microseconds). Default: unchanged."""
        return values

    def exact(self, path: str) -> bool:
        """False when values read for ``path`` may not be the ones the query engine reads
        (the file's entry for it is then unknown: every query keeps the file)."""
        return True

    def raw_day_range(self, path: str):
        """Parquet INT96 only: ``(first, last)`` Julian day the column's raw values hold
        (None: no value); False for a column of any other storage (the default)."""
        return False

    def rebase_modes(self) -> tuple:
        """``(datetime mode, INT96 mode)`` the writer decided for Spark's calendar rebase
        (:func:`metaindex.engine.calendar.writer_modes`): ``"CORRECTED"`` for formats Spark
        never rebases (the default)."""
        return "CORRECTED", "CORRECTED"

    def fingerprint(self) -> tuple:
        """``(length, CRC-32)`` of the file's metadata region, the cheap fingerprint
        ``refresh(verify=True)`` compares; ``(None, None)`` when the format has none (verify
        then re-indexes the file)."""
        return None, None

    def close(self) -> None:  # noqa: B027 (optional: a reader holding nothing open)
        """Release the file."""

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DataFormat(_Named, ABC):
    """How one data file's columns are read."""

    needs_spark: ClassVar[bool] = False
    """True for a format only Spark's own reader reads as Spark queries see it (CSV, JSON,
    ORC: :mod:`metaindex.formats.sparkread`): its files are collected by Spark jobs
    (``metaindex.spark``), never opened with :meth:`open`."""

    @abstractmethod
    def open(self, path: str, filesystem, *, decryption_properties=None) -> FileReader:
        """Open the file ``path`` on ``filesystem`` (a ``pyarrow.fs.FileSystem``).

        Raises:
            MetaIndexError / OSError / pyarrow.ArrowException: the file cannot be read (the
                engine then leaves it unindexed, with the reason).
        """

    def fingerprint(self, path: str, filesystem) -> tuple:
        """:meth:`FileReader.fingerprint` of a file without opening all of it (refresh's
        ``verify``). Default: open it."""
        with self.open(path, filesystem) as reader:
            return reader.fingerprint()
