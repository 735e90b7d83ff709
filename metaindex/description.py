"""What ``describe()`` and ``history()`` return, on both faces of ``MetaIndex``.

The core ``metaindex.MetaIndex`` and the PySpark ``metaindex.spark.MetaIndex`` return the same
typed results: a :class:`Description` (one :class:`IndexDescription` per index, the counts,
freshness, store size and damage of the table's index) and a :class:`History` (one
:class:`HistoryEntry` per version still in the log). A DataFrame is the Spark face's rendering
of them: ``describe().to_spark()`` (one row per index, :data:`DESCRIBE_SCHEMA`) and
``history().to_spark()`` (:data:`HISTORY_SCHEMA`); from the core face, ``to_spark(spark)``.
``to_dict()`` is the JSON form (``metaindex describe --json``).

Compatibility: the core face returned dicts and the Spark face DataFrames. Reading a result as
a dict (``d["version"]``, ``entry["operation"]``) still works, and a Spark face's result still
answers DataFrame methods (``describe().show()``), each with a ``DeprecationWarning`` naming
the new spelling.

No pyspark import here: ``to_spark`` calls the session's ``createDataFrame``.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "Description",
    "IndexDescription",
    "Counts",
    "Freshness",
    "StoreBytes",
    "Damage",
    "History",
    "HistoryEntry",
    "DESCRIBE_SCHEMA",
    "HISTORY_SCHEMA",
]

DESCRIBE_SCHEMA = (
    "table string, store string, version bigint, timestamp timestamp, kind string, "
    "column string, params string, key_label string, indexed_files bigint, "
    "indexed_rows bigint, new_files bigint, changed_files bigint, deleted_files bigint, "
    "up_to_date boolean, store_bytes bigint, point_read_fraction double, "
    "range_read_fraction map<double,double>, verdict string, damage string, type_drift string, "
    "table_format string, data_format string, format_options string, delta_version bigint, "
    "delta_versions_behind bigint"
)
"""Columns of :meth:`Description.to_spark` (``params``: the index parameters as JSON;
``point_read_fraction``, ``range_read_fraction`` and ``verdict``: how well the index skips, see
``metaindex.engine.effectiveness``; ``damage``: what is wrong with the store and what it does
to queries until ``refresh()`` repairs it, null when nothing is; ``type_drift``: null, or JSON
saying how the column's files disagree on its type and what that does to the index, see
``metaindex.engine.schema.type_drift``; ``table_format`` / ``data_format`` /
``format_options``: the formats the index was built with, the options as JSON;
``delta_version`` / ``delta_versions_behind``: a Delta table's version the index covers and how
many versions the table has moved on since, null for other tables)."""

HISTORY_SCHEMA = (
    "version bigint, timestamp timestamp, operation string, files_added bigint, "
    "files_removed bigint, files_superseded bigint, parts_added bigint, "
    "parts_removed bigint, details string"
)
"""Columns of :meth:`History.to_spark` (``details``: the log entry's details as JSON)."""


def _plain(value):
    """A result as plain JSON-able containers (dataclasses to dicts, tuples to lists)."""
    if dataclasses.is_dataclass(value):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("shown", True)
            and not (f.metadata.get("omit_none") and getattr(value, f.name) is None)
        }
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _DictAccess:
    """``result["name"]``: the dict the face used to return (deprecated)."""

    def __getitem__(self, key):
        warnings.warn(
            f"{type(self).__name__} is a typed result now: read .{key} (or "
            f"to_dict()[{key!r}]) instead of [{key!r}]",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.to_dict()[key]

    def to_dict(self) -> dict:
        """The result as plain JSON-able containers (what the face returned as a dict)."""
        return _plain(self)


class _SparkRendering:
    """``to_spark()``; and, on a Spark face's result, the DataFrame's methods (deprecated)."""

    _spark: object

    def _session(self, spark):
        spark = spark if spark is not None else self._spark
        if spark is None:
            raise TypeError(
                f"{type(self).__name__}.to_spark(spark): pass the SparkSession "
                "(results of the core MetaIndex carry none)"
            )
        return spark

    def __getattr__(self, name):
        spark = self.__dict__.get("_spark")
        if name.startswith("_") or spark is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        frame = self.to_spark()
        if not hasattr(frame, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(
            f"{type(self).__name__} is a typed result now: call to_spark() for the "
            f"DataFrame (to_spark().{name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(frame, name)


@dataclass(frozen=True)
class IndexDescription(_DictAccess):
    """One index of a :class:`Description`.

    Attributes:
        kind: the index kind (``"minmax"``, ``"valuelist"``, ``"bloom"``, a registered one).
        column: the indexed column, as the table names it (nested fields dotted).
        params: the kind's parameters.
        key_label: the master key label encrypting the index (None: plaintext).
        point_read_fraction: expected fraction of files an equality lookup of a value from
            the data reads (None: unknown, e.g. without the keys of an encrypted store).
        range_read_fraction: min/max: {range width as a fraction of the column's span:
            fraction of files read}; None for other kinds.
        unknown_files: files the index cannot rule out for any value (always read).
        verdict: ``"effective"``, ``"weak: ..."``, ``"saturated value list: ..."``, ...
        estimates: kind-specific figures behind the estimate.
        type_drift: None when the column's files agree on its type; else the table's type,
            what it cannot promise, the effect on the index and how many files were left
            unindexed for the column because their values did not convert exactly.
    """

    kind: str
    column: str
    params: dict
    key_label: str | None
    point_read_fraction: float | None = None
    range_read_fraction: dict | None = None
    unknown_files: int | None = None
    verdict: str | None = None
    estimates: dict = field(default_factory=dict)
    type_drift: dict | None = None


@dataclass(frozen=True)
class Counts(_DictAccess):
    """Indexed files (``indexed_files``), their rows (``indexed_rows``; None without the
    footer key, or when an entry's row count is unknown: carried from an xskipper store of
    CSV/JSON/ORC files) and metadata parts (``parts``); all None when the latest version
    cannot be read."""

    indexed_files: int | None
    indexed_rows: int | None
    parts: int | None


@dataclass(frozen=True)
class Freshness(_DictAccess):
    """The table's files now against the index: new / changed / deleted files pending a
    refresh, ``up_to_date``, files a build or refresh could not read (``unreadable_files``;
    ``unreadable``: {path: reason} for up to 20), and ``unknown``: why the counts are None
    (None when they are known)."""

    new_files: int | None
    changed_files: int | None
    deleted_files: int | None
    up_to_date: bool | None
    unreadable_files: int | None
    unreadable: dict
    unknown: str | None = field(default=None, metadata={"omit_none": True})


@dataclass(frozen=True)
class StoreBytes(_DictAccess):
    """Bytes of the live parts (None: unknown) and of every file of the table's store."""

    live_parts: int | None
    total: int


@dataclass(frozen=True)
class Damage(_DictAccess):
    """What is wrong with the store (``problems``: each names a damaged or missing file) and
    what it does to queries until ``refresh()`` repairs it (``effect``)."""

    problems: tuple
    effect: str


def _index_columns(ix: IndexDescription | None, start: int, stop: int) -> tuple:
    """Columns ``start:stop`` of an index's part of a describe() row: kind, column, params
    (JSON), key_label, point_read_fraction, range_read_fraction, verdict, type_drift (JSON);
    all None for the one row of a store whose latest version cannot be read (``ix`` None)."""
    if ix is None:
        return (None,) * (stop - start)
    return (
        ix.kind,
        ix.column,
        json.dumps(ix.params, sort_keys=True),
        ix.key_label,
        ix.point_read_fraction,
        ix.range_read_fraction,
        ix.verdict,
        None if ix.type_drift is None else json.dumps(ix.type_drift, sort_keys=True),
    )[start:stop]


def _format_columns(formats: dict | None) -> tuple:
    """The table_format, data_format and format_options columns of a describe() row."""
    if formats is None:
        return (None, None, None)
    options = formats.get("format_options")
    return (
        formats.get("table_format"),
        formats.get("data_format"),
        None if options is None else json.dumps(options, sort_keys=True),
    )


@dataclass(frozen=True)
class Description(_DictAccess, _SparkRendering):
    """The index of one table at a glance: :meth:`metaindex.MetaIndex.describe`.

    Attributes:
        table: the table URI. store: the table's directory in the store.
        version / timestamp: the latest version and when it was committed (UTC); None when
            it cannot be read.
        indexes: one :class:`IndexDescription` per index.
        partition_columns: {partition column: type} as recorded at build.
        encryption: the store's encryption labels (None: plaintext).
        counts / freshness / store_bytes: :class:`Counts`, :class:`Freshness`,
            :class:`StoreBytes`.
        damage: :class:`Damage` (None for a whole store).
        formats: the table and data formats the index was built with (``table_format``,
            ``data_format``, ``format_options``; see ``metaindex.formats``); None when the
            latest version cannot be read.
        table_name: the catalog name (Spark face, a catalog table; else None).
        catalog_partition_columns: the catalog's partition columns (Spark face).
        delta_version: a Delta table's version the index covers (None for other tables;
            left out of ``to_dict()`` then).
        delta_versions_behind: how many versions the Delta table has moved on since
            (``refresh()`` brings it to 0; None when unknown or not a Delta table).
    """

    table: str
    store: str
    version: int | None
    timestamp: datetime.datetime | None
    indexes: tuple
    partition_columns: dict
    encryption: dict | None
    counts: Counts
    freshness: Freshness
    store_bytes: StoreBytes
    damage: Damage | None
    formats: dict | None = None
    table_name: str | None = None
    catalog_partition_columns: tuple = ()
    delta_version: int | None = field(default=None, metadata={"omit_none": True})
    delta_versions_behind: int | None = field(default=None, metadata={"omit_none": True})
    _spark: object = field(default=None, repr=False, compare=False, metadata={"shown": False})

    def to_dict(self) -> dict:
        """The JSON form (the dict the faces returned): the catalog's ``table_name`` and
        ``catalog_partition_columns`` only from the Spark face, the latter when it has any."""
        out = _plain(self)
        if self._spark is None:
            del out["table_name"]
        if self._spark is None or not self.catalog_partition_columns:
            del out["catalog_partition_columns"]
        return out

    def rows(self) -> list:
        """One tuple per index in :data:`DESCRIBE_SCHEMA`'s columns (a store whose latest
        version cannot be read: one row, with the damage and no index)."""
        damage = (
            None
            if self.damage is None
            else f"{self.damage.effect}: " + "; ".join(self.damage.problems)
        )
        indexes: tuple = self.indexes or (None,)
        return [
            (
                self.table,
                self.store,
                self.version,
                self.timestamp,
                *_index_columns(ix, 0, 4),
                self.counts.indexed_files,
                self.counts.indexed_rows,
                self.freshness.new_files,
                self.freshness.changed_files,
                self.freshness.deleted_files,
                self.freshness.up_to_date,
                self.store_bytes.total,
                *_index_columns(ix, 4, 7),
                damage,
                *_index_columns(ix, 7, 8),
                *_format_columns(self.formats),
                self.delta_version,
                self.delta_versions_behind,
            )
            for ix in indexes
        ]

    def to_spark(self, spark=None):
        """A DataFrame with one row per index (:data:`DESCRIBE_SCHEMA`). ``spark``: the
        session (default: the Spark face's)."""
        return self._session(spark).createDataFrame(self.rows(), DESCRIBE_SCHEMA)

    def with_spark(self, spark, table_name=None, catalog_partition_columns=()) -> Description:
        """This description as the Spark face returns it: rendered with ``spark``, with the
        catalog's name and partition columns."""
        return dataclasses.replace(
            self,
            table_name=table_name,
            catalog_partition_columns=tuple(catalog_partition_columns),
            _spark=spark,
        )


@dataclass(frozen=True)
class HistoryEntry(_DictAccess):
    """One version of the log: :meth:`metaindex.MetaIndex.history`.

    Attributes:
        version / timestamp (UTC) / operation: the entry.
        files_added / files_removed / files_superseded: data files it indexed, forgot, or
            indexed again (their older entry superseded).
        parts_added / parts_removed: metadata parts.
        details: the entry's details (without the recorded schema; an encrypted store's are
            ``{"sealed": True}`` without its keys).
    """

    version: int
    timestamp: datetime.datetime
    operation: str
    files_added: int
    files_removed: int
    files_superseded: int
    parts_added: int
    parts_removed: int
    details: dict


@dataclass(frozen=True)
class History(_SparkRendering):
    """Every version still in the log, oldest first: a sequence of :class:`HistoryEntry`."""

    entries: tuple
    _spark: object = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self.entries)

    def __getitem__(self, index):
        found = self.entries[index]
        return History(found, self._spark) if isinstance(index, slice) else found

    def to_dicts(self) -> list:
        """The entries as dicts (JSON-able but for the timestamps)."""
        return [entry.to_dict() for entry in self.entries]

    def rows(self) -> list:
        """One tuple per version in :data:`HISTORY_SCHEMA`'s columns."""
        return [
            (
                e.version,
                e.timestamp,
                e.operation,
                e.files_added,
                e.files_removed,
                e.files_superseded,
                e.parts_added,
                e.parts_removed,
                json.dumps(e.details, sort_keys=True, default=str),
            )
            for e in self.entries
        ]

    def to_spark(self, spark=None):
        """A DataFrame, one row per version, oldest first (:data:`HISTORY_SCHEMA`)."""
        return self._session(spark).createDataFrame(self.rows(), HISTORY_SCHEMA).orderBy("version")

    def with_spark(self, spark) -> History:
        return dataclasses.replace(self, _spark=spark)
