"""The ``delta`` table format: a Delta Lake table's data files from its transaction log.

A Delta table's directory also holds the files of older versions (until VACUUM) and files of
failed writes, so its files are never listed: they are the add actions of a snapshot read from
``_delta_log/`` (:mod:`metaindex.delta`: every checkpoint form, column mapping, the reader
features an index stays sound under; others raise
:class:`~metaindex.errors.UnsupportedDeltaFeatureError`).

* **Identity.** A file is its path relative to the table root, its size and modification time
  as the add action records them. Delta data files are immutable, so a file is never rewritten
  under the same identity (:meth:`TableFormat.still_listed` stays True). A deletion vector
  hides rows of a file and never adds any: the file keeps its identity and its index (built
  from every physical row, a superset of the live rows) stays sound. Files outside the table
  root (shallow clones) are refused.
* **Position.** Every build and refresh records the Delta version it indexed as the listing's
  state ``{"delta_version": v}`` (with, under column mapping, ``physical_columns``: each
  top-level logical column's physical name), kept by the store as ``table_state``
  (specs/metadata-store.md). A refresh reads only the JSON commits after that version
  (:meth:`metaindex.delta.DeltaLog.changes`): the files the commits added are collected, those
  they removed forgotten; no listing of the data directory, no footer of an unchanged file read.
  Without a recorded version (or once the log can no longer reach it) the snapshot's files are
  compared with the index's entries instead, which is exact too.
* **Columns.** Indexes are defined and queried by logical column names. Under column mapping
  (``name`` and ``id`` modes) the data files hold physical names; :meth:`DeltaTableFormat.reading`
  wraps the data format in :class:`DeltaColumns`, whose readers show each file with the logical
  names of the snapshot's mapping (nested fields too, matched by physical name; a physical
  column the mapping no longer names, a dropped one, is not shown, so a column added again
  later reads as NULL as Delta reads it). A refresh refuses (``UnsupportedFeatureError``) when
  an indexed column was renamed or dropped (or dropped and added again) since the indexed
  version: its entries would describe other data, or data no query can name.
* **Partition columns** are not in the data files; the wrapped readers show each file's value
  from the log as a constant column (typed per the table schema), so predicates on them bind,
  and an index on one is exact. A ``timestamp`` value written without a UTC offset is in the
  writer's time zone (PROTOCOL.md), which the log does not record: such a file's entry for that
  column is unknown (always kept). Partition columns are not recorded as directory partitions
  (``Description.partition_columns`` is empty): directory names are not the log's values.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from metaindex.errors import (
    DeltaVersionError,
    UnsupportedDeltaFeatureError,
    UnsupportedFeatureError,
)
from metaindex.formats.base import (
    DataFile,
    DataFormat,
    FileReader,
    Listing,
    Statistics,
    TableFormat,
)
from metaindex.store import OBJ_MTIME, OBJ_NAME, OBJ_SIZE

if TYPE_CHECKING:  # metaindex.delta loads with the first Delta table, not with every prune
    from metaindex.delta import DeltaLog
    from metaindex.delta.schema import ColumnMapping

__all__ = [
    "DELTA_VERSION",
    "PHYSICAL_COLUMNS",
    "DeltaColumns",
    "DeltaListing",
    "DeltaTableFormat",
    "is_delta_location",
]

DELTA_VERSION = "delta_version"
"""The key of the Delta version indexed in a listing's state (the store's ``table_state``)."""
PHYSICAL_COLUMNS = "physical_columns"
"""The key of ``{logical top-level column: physical name}`` in the state (column mapping)."""

_LOG_DIR = "_delta_log"


def is_delta_location(location) -> bool:
    """Whether a located table (``metaindex.engine.listing.TableLocation``) has a
    ``_delta_log/`` directory (what makes ``MetaIndex`` pick this format)."""
    storage, root = location.storage, location.storage_root
    return storage is not None and storage.is_dir(storage.join(root, _LOG_DIR))


class _Columns:
    """What reading a table's files needs from one (protocol, metaData): the logical Arrow
    schema, the column mapping and the partition columns."""

    def __init__(self, schema: pa.Schema, mapping: ColumnMapping, partition_columns: tuple):
        self.schema = schema
        self.mapping = mapping
        self.partition_columns = tuple(partition_columns)

    @classmethod
    def of(cls, protocol, metadata) -> _Columns:
        from metaindex.delta.features import column_mapping_supported
        from metaindex.delta.schema import column_mapping, parse_schema_string, to_arrow_schema

        parsed = parse_schema_string(metadata.schema_string)
        mode = (
            metadata.configuration.get("delta.columnMapping.mode", "none")
            if column_mapping_supported(protocol)
            else "none"
        )
        return cls(
            to_arrow_schema(parsed),
            column_mapping(parsed, mode.lower()),
            metadata.partition_columns,
        )

    def physical_columns(self) -> dict:
        """{logical top-level column: physical name} under column mapping (else {})."""
        if self.mapping.mode == "none":
            return {}
        return {path[0]: phys[0] for path, phys in self.mapping.physical.items() if len(path) == 1}


class DeltaListing(Listing):
    """A Delta snapshot's files (or a refresh's view of them) with what reading them needs.

    Attributes:
        version: the Delta version.
        columns: schema, column mapping and partition columns at that version.
        partition_values: {path: {logical partition column: typed value}} of the files whose
            values were read from the log (every file of a snapshot; a refresh: the added ones).
    """

    def __init__(self, files: list, version: int, columns: _Columns, partition_values: dict):
        state: dict = {DELTA_VERSION: version}
        physical = columns.physical_columns()
        if physical:
            state[PHYSICAL_COLUMNS] = physical
        super().__init__(files, state)
        self.moved: tuple = ()  # indexed columns whose physical column changed (refresh)
        self.recorded_version: int | None = None
        self.version = version
        self.columns = columns
        self.partition_values = partition_values


def _data_file(f) -> DataFile:
    return DataFile(f.path, f.size, f.modification_time)


class DeltaTableFormat(TableFormat):
    """A Delta Lake table: its files from the transaction log (see the module docstring)."""

    name = "delta"

    @staticmethod
    def log(location) -> DeltaLog:
        """The table's :class:`metaindex.delta.DeltaLog`, on the located table's storage."""
        from metaindex.delta import DeltaLog

        return DeltaLog.on_storage(location.uri, location.storage, location.storage_root)

    def check(self, location) -> None:
        self.log(location).latest_version()  # DeltaTableNotFoundError without a log

    def list_files(self, location, version: int | None = None) -> DeltaListing:
        """The files of the snapshot at ``version`` (default: the latest).

        Raises:
            DeltaLogError and children: a log that cannot give the snapshot.
            UnsupportedDeltaFeatureError: a reader feature that is not supported, or data
                files outside the table root (a shallow clone).
        """
        snap = self.log(location).snapshot(version)
        outside = [f.path for f in snap.files if "://" in f.path]
        if outside:
            raise UnsupportedDeltaFeatureError(
                f"{location.uri} version {snap.version} has data files outside the table "
                f"root (e.g. {outside[0]}: a shallow clone); metaindex indexes tables whose "
                "files lie under their root",
                ["files outside the table root"],
            )
        return DeltaListing(
            [_data_file(f) for f in snap.files],
            snap.version,
            _Columns(snap.schema, snap.column_mapping, snap.partition_columns),
            {f.path: f.partition_values or {} for f in snap.files},
        )

    def changes(self, location, snapshot):
        """The files added and removed since the Delta version ``snapshot`` recorded, from
        the log's commits after it (see the module docstring); the whole snapshot compared
        with the entries when no version is recorded or the log cannot reach it.

        An indexed column renamed or dropped since (column mapping) is noted on the listing:
        :meth:`reading` (the refresh) refuses it; ``describe()`` still works.
        """
        from metaindex.formats.diff import diff

        recorded = snapshot.table_state
        indexed = recorded.get(DELTA_VERSION)
        log = self.log(location)
        changes = None
        if isinstance(indexed, int) and not isinstance(indexed, bool):
            try:
                changes = log.changes(indexed)
            except DeltaVersionError:
                changes = None  # the table was replaced, or its log cleaned past the version
        if changes is None:
            listing = self.list_files(location)
        else:
            listing = self._listing_after(location, snapshot, changes)
        listing.moved = _moved_columns(recorded, listing.columns, snapshot.index_defs)
        listing.recorded_version = indexed
        return listing, diff(listing, snapshot.file_table(), snapshot.unreadable)

    def _listing_after(self, location, snapshot, changes) -> DeltaListing:
        """The files now: the index's entries and unreadable records (the files at the indexed
        version), less the paths the commits removed, plus the files they added."""
        added = list(changes.added)
        outside = [f.path for f in added if "://" in f.path]
        if outside:
            raise UnsupportedDeltaFeatureError(
                f"{location.uri} version {changes.to_version} added a data file outside the "
                f"table root ({outside[0]})",
                ["files outside the table root"],
            )
        live = {f.path for f in added}
        gone = {f.path for f in changes.removed} - live
        table = snapshot.file_table((OBJ_NAME, OBJ_SIZE, OBJ_MTIME))
        known = zip(
            table.column(OBJ_NAME).to_pylist(),
            table.column(OBJ_SIZE).to_pylist(),
            table.column(OBJ_MTIME).to_pylist(),
            strict=True,
        )
        files = [
            DataFile(name, size, mtime)
            for name, size, mtime in known
            if name not in gone and name not in live
        ]
        seen = {f.path for f in files}
        files += [
            DataFile(name, record[0], record[1])
            for name, record in snapshot.unreadable.items()
            if name not in gone and name not in live and name not in seen
        ]
        files += [_data_file(f) for f in added]
        return DeltaListing(
            files,
            changes.to_version,
            _Columns.of(changes.protocol, changes.metadata),
            {f.path: f.partition_values or {} for f in added},
        )

    def reading(self, listing: Listing, files, data_format: DataFormat) -> DataFormat:
        """:class:`DeltaColumns` over ``data_format`` under column mapping or partition
        columns.

        Raises:
            UnsupportedFeatureError: (refresh) an indexed column names another physical
                column than at the indexed version: its entries describe other data.
        """
        if not isinstance(listing, DeltaListing):
            return data_format
        if listing.moved:
            moved = listing.moved
            raise UnsupportedFeatureError(
                f"indexed column{'s' if len(moved) > 1 else ''} {', '.join(moved)} of the "
                f"Delta table no longer name{'' if len(moved) > 1 else 's'} the data indexed "
                f"at its version {listing.recorded_version} (renamed, dropped, or dropped and "
                "added again under column mapping): drop() the index and build it again"
            )
        columns = listing.columns
        if columns.mapping.mode == "none" and not columns.partition_columns:
            return data_format
        # a file whose values were not read from the log: None, every partition value unknown
        values = {f.path: listing.partition_values.get(f.path) for f in files}
        return DeltaColumns(data_format, columns, values)


def _moved_columns(recorded: Mapping, columns: _Columns, index_defs) -> tuple:
    """The indexed top-level columns whose physical column is not the one recorded at the
    indexed version (renamed, dropped, or dropped and added again under column mapping)."""
    before = recorded.get(PHYSICAL_COLUMNS) or {}
    if not isinstance(before, dict):
        return ()
    now = columns.physical_columns()
    indexed = {d.cols[0].split(".")[0] for d in index_defs}
    return tuple(sorted(c for c, p in before.items() if c in indexed and now.get(c) != p))


# ------------------------------------------------------------------------ reading the files


def _names(mapping: ColumnMapping) -> tuple:
    """``(logical path -> physical path, physical path -> logical path)`` as tuples."""
    return dict(mapping.physical), {p: path for path, p in mapping.physical.items()}


class DeltaColumns(DataFormat):
    """A data format whose readers show a Delta table's files by logical column names, with
    the partition columns' values from the log (see the module docstring). Made by
    :meth:`DeltaTableFormat.reading`; not registered (the index records the inner format).

    Args:
        inner: the data format the files are read with.
        columns: the table's schema, column mapping and partition columns.
        partition_values: {path relative to the table root: {logical column: value} or None
            (unknown)} of the files to be read.
    """

    name = "delta-columns"

    def __init__(self, inner: DataFormat, columns: _Columns, partition_values: dict):
        super().__init__(None)
        self.inner = inner
        self.mapped = columns.mapping.mode != "none"
        self.to_physical, self.to_logical = _names(columns.mapping)
        self.partition_fields = [
            pa.field(c, columns.schema.field(c).type)
            for c in columns.partition_columns
            if c in columns.schema.names
        ]
        self.partition_values = partition_values

    def __eq__(self, other: object) -> bool:  # identity: the wrapper holds one listing's view
        return self is other

    def __hash__(self) -> int:
        return object.__hash__(self)

    def __repr__(self) -> str:
        return f"DeltaColumns({self.inner!r})"

    def _relative(self, path: str) -> str | None:
        """The relative name ``path`` (the table root joined with it) was listed under."""
        parts = path.split("/")
        for k in range(len(parts)):
            name = "/".join(parts[k:])
            if name in self.partition_values:
                return name
        return None

    def open(self, path: str, filesystem, *, decryption_properties=None) -> FileReader:
        reader = self.inner.open(path, filesystem, decryption_properties=decryption_properties)
        values = self.partition_values.get(self._relative(path) or "", None)
        return _DeltaReader(reader, self, values)

    def fingerprint(self, path: str, filesystem) -> tuple:
        return self.inner.fingerprint(path, filesystem)


def _constant(value, t: pa.DataType, n: int):
    if value is None:
        return pa.nulls(n, t)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return pa.repeat(pa.scalar(value, t), n)


class _DeltaReader(FileReader):
    """One data file seen with the table's logical names and partition values."""

    def __init__(self, inner: FileReader, fmt: DeltaColumns, values: dict | None):
        self.inner = inner
        self.fmt = fmt
        self.values = values
        self.num_rows = inner.num_rows
        self.num_row_groups = inner.num_row_groups
        self._schema: pa.Schema | None = None
        self._top: dict = {}  # logical top-level name -> physical name in this file
        self._paths: dict = {}  # logical dotted path -> physical dotted path

    @property
    def schema(self) -> pa.Schema:
        if self._schema is None:
            self._schema = self._logical_schema()
        return self._schema

    def _logical_schema(self) -> pa.Schema:
        fields = []
        partitions = {f.name for f in self.fmt.partition_fields}
        for f in self.inner.schema:
            if not self.fmt.mapped:
                if f.name not in partitions:
                    fields.append(f)
                    self._top[f.name] = f.name
                continue
            relabelled = self._field((f.name,), f)
            if relabelled is not None and relabelled.name not in partitions:
                fields.append(relabelled)
                self._top[relabelled.name] = f.name
        fields += self.fmt.partition_fields
        return pa.schema(fields, metadata=self.inner.schema.metadata)

    def _field(self, physical: tuple, f: pa.Field) -> pa.Field | None:
        logical = self.fmt.to_logical.get(physical)
        if logical is None:
            return None  # a column the table no longer has (dropped)
        self._paths[".".join(logical)] = ".".join(physical)
        return pa.field(logical[-1], self._type(physical, f.type), f.nullable, f.metadata)

    def _type(self, physical: tuple, t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            children = [
                self._field(physical + (t.field(i).name,), t.field(i)) for i in range(t.num_fields)
            ]
            return pa.struct([c for c in children if c is not None])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            item = t.value_field
            inner = item.with_type(self._type(physical + ("element",), item.type))
            return pa.list_(inner) if pa.types.is_list(t) else pa.large_list(inner)
        return t

    def _physical_path(self, path: str) -> str:
        self.schema  # noqa: B018 (fills the path maps)
        return self._paths.get(path, path) if self.fmt.mapped else path

    def _partition(self, name: str) -> pa.Field | None:
        return next((f for f in self.fmt.partition_fields if f.name == name), None)

    def read_row_groups(
        self, groups: range, columns: list, *, use_threads: bool = False
    ) -> pa.Table:
        schema = self.schema
        stored = [c for c in columns if self._partition(c) is None]
        table = self.inner.read_row_groups(
            groups, [self._top.get(c, c) for c in stored], use_threads=use_threads
        )
        out = {}
        for c in columns:
            f = self._partition(c)
            if f is not None:
                value = None if self.values is None else self.values.get(c)
                out[c] = _constant(value, f.type, table.num_rows)
                continue
            values = table.column(self._top.get(c, c))
            out[c] = (
                self._relabel(values, (self._top.get(c, c),))
                if self.fmt.mapped and pa.types.is_nested(values.type)
                else values
            )
            if not out[c].type.equals(schema.field(c).type):
                out[c] = out[c].cast(schema.field(c).type)
        return pa.table(out) if out else table

    def _relabel(self, values, physical: tuple):
        """Values read under physical field names, rebuilt with the logical ones (fields
        the mapping no longer names left out, as in :attr:`schema`)."""
        if isinstance(values, pa.ChunkedArray):
            chunks = [self._relabel(c, physical) for c in values.chunks]
            return (
                pa.chunked_array(chunks, chunks[0].type)
                if chunks
                else pa.chunked_array([], self._type(physical, values.type))
            )
        t = values.type
        if pa.types.is_struct(t):
            children, fields = [], []
            for i in range(t.num_fields):
                child = t.field(i)
                logical = self.fmt.to_logical.get(physical + (child.name,))
                if logical is None:
                    continue
                children.append(self._relabel(values.field(i), physical + (child.name,)))
                fields.append(
                    pa.field(logical[-1], children[-1].type, child.nullable, child.metadata)
                )
            mask = values.is_null() if values.null_count else None
            return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            flat = self._relabel(values.values, physical + ("element",))
            item = t.value_field.with_type(flat.type)
            kind = pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
            return type(values).from_arrays(
                values.offsets,
                flat,
                type=kind,
                mask=values.is_null() if values.null_count else None,
            )
        return values

    def statistics(self, path: str) -> Statistics | None:
        if self._partition(path) is not None:
            return None
        return self.inner.statistics(self._physical_path(path))

    def as_read(self, path: str, values):
        if self._partition(path) is not None:
            return values
        return self.inner.as_read(self._physical_path(path), values)

    def exact(self, path: str) -> bool:
        f = self._partition(path)
        if f is not None:  # a value the log holds exactly, unless its time zone is unknown
            if self.values is None:
                return False
            value = self.values.get(path)
            return not (
                pa.types.is_timestamp(f.type)
                and f.type.tz is not None
                and isinstance(value, dt.datetime)
                and value.tzinfo is None
            )
        return self.inner.exact(self._physical_path(path))

    def raw_day_range(self, path: str):
        if self._partition(path) is not None:
            return False
        return self.inner.raw_day_range(self._physical_path(path))

    def rebase_modes(self) -> tuple:
        return self.inner.rebase_modes()

    def fingerprint(self) -> tuple:
        return self.inner.fingerprint()

    def close(self) -> None:
        self.inner.close()
