"""The PySpark API: index a table (a path or a catalog table), keep the index fresh, inspect it.

::

    from metaindex.spark import MetaIndex, enable

    mi = MetaIndex(spark, "db.events")                 # or "/data/events", "s3://bucket/t"
    mi.index_builder().add_min_max_index("temp") \\
        .add_value_list_index("city").add_bloom_filter_index("user_id", fpp=0.01).build()
    mi.refresh()                                       # after files were added/rewritten/deleted
    mi.describe()                                      # the same Description as the core's
    mi.describe().to_spark().show()                    # as a DataFrame, one row per index

Where the index lives: ``store=`` if given, else the ``metaindex.store`` conf key, else
``_metaindex`` next to the table. Encryption comes from the ``metaindex.encryption.*`` conf
keys (see :mod:`metaindex.spark.config`); an index added with ``key_label=`` (xskipper's
``keyMetadata``) is encrypted with that master key instead of the conf's. The conf is read
when the :class:`MetaIndex` is created.

Builds and refreshes run the per-file work as Spark tasks (:class:`SparkExecutor`) on a
classic session, so executors must reach the data and the store under the same paths or
URIs; under Spark Connect (no SparkContext) Parquet files are collected on a local process
pool, as with ``executor="local"``, and CSV/JSON/ORC files by a job on the Connect server
(:class:`metaindex.spark.reading.ConnectReads`). Either way the driver (or client) makes the
one atomic commit.

xskipper users: :mod:`metaindex.xskipper` has xskipper's whole Python API (its DataFrames,
``Registration``, the ``io.xskipper.*`` conf) over this module. Here, the camelCase names
(``indexBuilder``, ``addMinMaxIndex``, ``addValueListIndex``, ``addBloomFilterIndex``,
``build``, ``refreshIndex``, ``describeIndex``, ``dropIndex``, ``isIndexed``,
``getLatestQueryStats``) behave like the snake_case ones; a ``DataFrameReader`` passed where
xskipper wanted one must read the table as the index does (its format, options and schema;
``metaindex.xskipper`` instead defines the index by it), and ``addBloomFilterIndex``'s ``ndv``
is accepted and not used (each file's filter is sized for its own distinct count).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import TYPE_CHECKING, Any

from metaindex.api import BuildResult, StoreEncryption
from metaindex.description import DESCRIBE_SCHEMA, HISTORY_SCHEMA, Description, History
from metaindex.errors import MetaIndexError
from metaindex.spark import catalog as catalog_mod
from metaindex.spark import config as config_mod

if TYPE_CHECKING:
    from metaindex.index import Index

__all__ = [
    "MetaIndex",
    "IndexBuilder",
    "list_indexes",
    "DESCRIBE_SCHEMA",
    "HISTORY_SCHEMA",
    "LIST_SCHEMA",
]

LIST_SCHEMA = (
    "table string, store string, version bigint, indexes array<string>, "
    "indexed_files bigint, registered boolean"
)
"""Columns of :func:`list_indexes` (``indexes``: ``kind(column)`` strings)."""


class _Hybrid:
    """A method callable on the class with the session (``MetaIndex.getLatestQueryStats(spark)``,
    as in xskipper) or on an instance without it."""

    def __init__(self, fn):
        self._fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self._fn
        return lambda: self._fn(obj._spark)


def _is_reader(value) -> bool:
    try:
        from pyspark.sql import DataFrameReader
    except ImportError:  # pragma: no cover - pyspark is present wherever a session is
        return False
    if isinstance(value, DataFrameReader):
        return True
    try:
        from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader
    except ImportError:
        return False
    return isinstance(value, ConnectReader)


_registered: dict = {}
"""{table URI: core MetaIndex} this module registered with the hook (process-wide, like the
hook's own registry), for :func:`list_indexes`."""


def _register(spark, core) -> None:
    from metaindex.spark import hook

    hook.register(spark, core)
    _registered[core.table_uri] = core


def _unregister(spark, table_uri: str) -> None:
    from metaindex.spark import hook

    hook.unregister(spark, table_uri)
    _registered.pop(table_uri, None)


_PLAINTEXT = object()
"""An index spec's key label when the index is left in plaintext in an encrypted store."""


class IndexBuilder:
    """Index definitions for :meth:`MetaIndex.index_builder`; methods chain, ``build()`` runs.

    Each ``add_*`` takes ``key_label=``: the master key label for that index's column in an
    encrypted store (xskipper's ``keyMetadata``), or ``plaintext=True``: that index's column
    is not encrypted (xskipper's default for an index without ``keyMetadata``). Without
    either, the ``metaindex.encryption.index.keys`` conf decides.
    """

    def __init__(self, owner: MetaIndex):
        self._owner = owner
        self._specs: list = []

    def add_index(
        self,
        kind: str | Index,
        column: str | None = None,
        *,
        key_label: str | None = None,
        plaintext: bool = False,
        **params: Any,
    ) -> IndexBuilder:
        """An index of ``kind`` on ``column``: a built-in kind (``"minmax"``, ``"valuelist"``,
        ``"bloom"``) or one added with ``metaindex.index.register_index_kind``, with its
        parameters (the kind's defaults for those not given); the kind's module must be
        importable by the executors. An ``Index`` object is added as it is.

        Raises:
            IndexDefinitionError: an unknown kind (the message lists the known ones), a
                parameter the kind does not take or a value it does not accept.
            TypeError: no column, or both ``key_label`` and ``plaintext``.
            MetaIndexError: ``key_label`` on a store that is not encrypted.
        """
        from metaindex.index import Index, new_index

        if isinstance(kind, Index):
            if column is not None or params:
                raise TypeError(
                    "add_index(index) takes no column or parameters: the Index object has them"
                )
            index = kind
        elif column is None:
            raise TypeError(f"add_index({kind!r}) needs the column to index")
        else:
            index = new_index(kind, column, **params)
        column = index.column
        if plaintext and key_label is not None:
            raise TypeError(f"index on {column!r}: give key_label or plaintext=True, not both")
        if key_label is not None:
            if not isinstance(key_label, str) or not key_label.strip():
                raise TypeError(f"key_label must be a non-empty str, not {key_label!r}")
            if not isinstance(self._owner._settings.encryption, StoreEncryption):
                raise MetaIndexError(
                    f"key_label {key_label!r} given for {column!r} but the store is not "
                    "encrypted: set metaindex.encryption.kms and "
                    "metaindex.encryption.footer.key before creating the MetaIndex"
                )
            key_label = key_label.strip()
        self._specs.append((index, _PLAINTEXT if plaintext else key_label))
        return self

    def add_min_max_index(
        self, column: str, key_label: str | None = None, *, plaintext: bool = False
    ) -> IndexBuilder:
        """Per file: min, max, null and NaN counts of ``column``."""
        return self.add_index("minmax", column, key_label=key_label, plaintext=plaintext)

    def add_value_list_index(
        self,
        column: str,
        max_values: int = 100,
        key_label: str | None = None,
        *,
        plaintext: bool = False,
    ) -> IndexBuilder:
        """Per file: the distinct values of ``column`` (unknown above ``max_values``)."""
        return self.add_index(
            "valuelist", column, key_label=key_label, plaintext=plaintext, max_values=max_values
        )

    def add_bloom_filter_index(
        self,
        column: str,
        fpp: float = 0.01,
        key_label: str | None = None,
        *,
        plaintext: bool = False,
        **params: Any,
    ) -> IndexBuilder:
        """Per file: a split-block bloom filter of ``column`` at false-positive rate ``fpp``
        (``max_bytes=`` caps a file's filter)."""
        return self.add_index(
            "bloom", column, key_label=key_label, plaintext=plaintext, fpp=fpp, **params
        )

    def addMinMaxIndex(self, col: str, keyMetadata: str | None = None) -> IndexBuilder:
        return self.add_min_max_index(col, key_label=keyMetadata)

    def addValueListIndex(self, col: str, keyMetadata: str | None = None) -> IndexBuilder:
        return self.add_value_list_index(col, key_label=keyMetadata)

    def addBloomFilterIndex(
        self, col: str, fpp: float | None = None, ndv=None, keyMetadata: str | None = None
    ) -> IndexBuilder:
        del ndv  # each file's filter is sized for that file's distinct count
        return self.add_bloom_filter_index(col, 0.01 if fpp is None else fpp, key_label=keyMetadata)

    def build(self, executor=None, progress=None) -> BuildResult:
        """Index every file of the table in one commit, then register the index with the
        skipping hook of this session.

        Args:
            executor: None (Spark tasks on a classic session; under Spark Connect a local
                process pool for Parquet and Connect jobs for CSV/JSON/ORC), ``"spark"``,
                ``"local"``, or a ``metaindex.engine.executors.Executor``. A
                ``DataFrameReader`` (xskipper's argument) counts as None once checked: it
                must read the table as this MetaIndex's ``format=`` and ``options=`` say
                (``MetaIndexError`` otherwise).
            progress: ``callback(done_tasks, total_tasks)``.

        Raises:
            MetaIndexError: already indexed, no data files, no index added.
            SchemaError: a column the table does not have, or a partition column.
            TypeError: a column type the index kind cannot index.
        """
        if not self._specs:
            raise MetaIndexError(
                "add at least one index (add_index, add_min_max_index, "
                "add_value_list_index, add_bloom_filter_index) before build()"
            )
        if _is_reader(executor):
            self._owner._check_reader(executor)
            executor = None
        return self._owner._build(self._specs, executor, progress)


class MetaIndex:
    """The data-skipping index of one Parquet table, from PySpark.

    Args:
        spark: the ``SparkSession`` (classic or Connect).
        table: a directory path or URI, or a catalog table name (``db.t``,
            ``spark_catalog.db.t``) of a Parquet, CSV, JSON, ORC or Delta table, indexed in
            the format and with the reader options Spark reads it with: see
            :mod:`metaindex.spark.catalog`.
        store: where the index lives (a directory or URI, or a
            ``metaindex.store.MetadataStore``); default the ``metaindex.store`` conf key, else
            ``_metaindex`` next to the table.
        conf: ``{"metaindex.<key>": value}`` entries that override the session's conf for
            this index only (the keys of :mod:`metaindex.spark.config`).
        format: the table's data format: ``"parquet"`` (default), ``"csv"``, ``"json"`` or
            ``"orc"`` (:mod:`metaindex.formats.sparkread`: built by Spark jobs with Spark's
            own reader).
            A catalog table's format is the catalog's: another one is a ``MetaIndexError``.
        options: Spark reader options the table is read with (``schema`` as DDL or a
            ``StructType``, ``header``, ``sep``, ``nullValue``, ``dateFormat``,
            ``timestampFormat``, ``multiLine``, ...), recorded with the index: queries use it
            only when they read the table with the same format, schema and options.

    Raises:
        TableNotFoundError: no such table or directory.
        UnsupportedFeatureError: a view, or a catalog table of a format or provider that is
            not indexed (Iceberg, Hive text tables, ...).
        UnsupportedFormatError: an unknown ``format``.
        MetaIndexError: malformed ``metaindex.*`` conf values; an indexed table whose index
            was built with another format or options; a catalog table given another
            ``format`` or a conflicting option.
    """

    def __init__(
        self,
        spark,
        table,
        store=None,
        conf=None,
        *,
        format: str | None = None,
        options: dict | None = None,
    ):
        self._spark = spark
        entries = config_mod.conf_entries(spark)
        if conf:
            entries.update(config_mod.check_entries(conf))
        self._settings = config_mod.settings_from(entries)
        self._resolved = catalog_mod.resolve_table(
            spark, table, storage_options=self._settings.storage_options
        )
        self._store_arg = store
        self._formats = None
        self._core = self._open(self._settings)
        requested = _requested_formats(*_catalog_formats(self._resolved, format, options))
        if requested is not None and self._core.is_indexed():
            _check_recorded(spark, self._core, requested)
        elif requested is not None and requested != _default_formats():
            self._formats = requested
            self._core = self._open(self._settings)
        if self._core.is_indexed():
            _register(spark, self._core)

    def _open(self, settings):
        try:
            return config_mod.open_index(
                self._resolved.location, settings, self._store_arg, formats=self._formats
            )
        except FileNotFoundError as exc:
            raise catalog_mod.TableNotFoundError(
                f"table {self._resolved.name or self._resolved.location!r}: {exc}"
            ) from None

    def __repr__(self) -> str:
        name = f", name={self._resolved.name!r}" if self._resolved.name else ""
        return f"MetaIndex({self.table_uri!r}{name}, store={self.store_path!r})"

    # ---------------------------------------------------------------- properties

    @property
    def core(self):
        """The engine-independent ``metaindex.MetaIndex`` (``prune()`` and friends)."""
        return self._core

    @property
    def table_uri(self) -> str:
        """The normalised URI of the table root (the index's identity)."""
        return self._core.table_uri

    @property
    def table_name(self) -> str | None:
        """The catalog name as resolved (``spark_catalog.db.t``), None for a path."""
        return self._resolved.qualified

    @property
    def partition_columns(self) -> tuple:
        """The catalog's partition columns (``()`` for a path table)."""
        return self._resolved.partition_columns

    @property
    def store_path(self) -> str:
        """The directory holding this table's index."""
        return self._core.store_path

    # ---------------------------------------------------------------- writing

    def index_builder(self) -> IndexBuilder:
        """A builder: add indexes, then ``build()``."""
        return IndexBuilder(self)

    def _executor(self, executor):
        from metaindex.engine.executors import Executor, LocalExecutor
        from metaindex.spark.executor import SparkExecutor

        if executor is None:
            try:
                return SparkExecutor(self._spark)
            except MetaIndexError:  # Spark Connect: no SparkContext
                from metaindex.spark.reading import ConnectReads

                return ConnectReads(self._spark)
        if executor == "spark":
            return SparkExecutor(self._spark)
        if executor == "local":
            return LocalExecutor()
        if isinstance(executor, Executor):
            return executor
        raise TypeError(
            f"executor must be None, 'spark', 'local' or a "
            f"metaindex.engine.executors.Executor, not {executor!r}"
        )

    def _build(self, specs, executor, progress) -> BuildResult:
        executor = self._executor(executor)
        core = self._core
        labels: dict = {}  # column (lower case) -> key label or _PLAINTEXT
        for index, label in specs:
            if label is None:
                continue
            column = index.column
            previous = labels.get(column.lower())
            if previous is not None and previous is not label and previous != label:
                shown = ["plaintext" if x is _PLAINTEXT else repr(x) for x in (previous, label)]
                raise MetaIndexError(
                    f"column {column!r} has two key labels ({shown[0]}, "
                    f"{shown[1]}): an index column has one"
                )
            labels[column.lower()] = label
        enc = self._settings.encryption
        if labels and isinstance(enc, StoreEncryption):
            merged = {}
            for index, _ in specs:
                own = labels.get(index.column.lower())
                merged[index.column] = (
                    None if own is _PLAINTEXT else own or enc.label_for(index.column)
                )
            core = self._open(
                dataclasses.replace(
                    self._settings, encryption=dataclasses.replace(enc, index_keys=merged)
                )
            )
        builder = core.index_builder()
        for index, _ in specs:
            builder.add_index(index)
        result = builder.build(executor=executor, progress=progress)
        _register(self._spark, self._core)
        return result

    def refresh(self, executor=None, progress=None, *, verify: bool = False) -> BuildResult:
        """Index new and rewritten files, forget deleted ones, in one commit (``executor`` and
        ``progress`` as for ``build()``). Returns ``status`` ``"SUCCESS"`` or
        ``"NO_CHANGE"`` with the entries added and removed. ``verify=True`` also finds files
        rewritten with the same size and mtime by their footer's length and CRC-32 (reads
        only each file's tail).

        Raises:
            MetaIndexError: the table has no index.
            CommitConflictError: concurrent writers kept changing the same files.
        """
        result = self._core.refresh(
            executor=self._executor(executor), progress=progress, verify=verify
        )
        _register(self._spark, self._core)
        return result

    def upgrade(self, xskipper_store: str, executor=None, progress=None) -> BuildResult:
        """Write this table's index from the store xskipper wrote for it (the core
        ``MetaIndex.upgrade``; ``executor`` and ``progress`` as for ``build()``)."""
        result = self._core.upgrade(
            xskipper_store, executor=self._executor(executor), progress=progress
        )
        _register(self._spark, self._core)
        return result

    def compact(self, target_file_size: int | None = None) -> int:
        """Rewrite small metadata parts into parts of about ``target_file_size`` bytes in one
        commit; returns the version afterwards."""
        return self._core.compact(target_file_size)

    def vacuum(self, retain=None, *, force: bool = False):
        """Delete store files no version younger than ``retain`` (a ``timedelta`` or seconds,
        default 7 days, at least 1 hour unless ``force``) needs; returns
        ``metaindex.store.VacuumResult`` (the core ``vacuum()``)."""
        return self._core.vacuum(retain, force=force)

    def check(self):
        """Verify the whole index (the core ``check()``): a
        ``metaindex.store.CheckReport``."""
        return self._core.check()

    def drop(self) -> None:
        """Delete the index (every version) and stop skipping with it in this session."""
        self._core.drop()
        _unregister(self._spark, self._core.table_uri)

    # ---------------------------------------------------------------- reading

    def is_indexed(self) -> bool:
        """Whether the table has an index."""
        return self._core.is_indexed()

    def describe(self) -> Description:
        """The core ``describe()`` (a :class:`~metaindex.description.Description`: indexes,
        counts, freshness, version, store size, how well each index skips, damage), plus the
        catalog's ``table_name`` and ``catalog_partition_columns``. ``to_spark()`` renders it
        as a DataFrame with one row per index (:data:`DESCRIBE_SCHEMA`): kind, column, params
        (JSON), key_label, and the table-level version, indexed files and rows, files new /
        changed / deleted since (pending a refresh), up_to_date, store bytes on disk; then how
        well the index skips, estimated from the index: ``point_read_fraction`` (expected
        fraction of files an equality lookup reads), ``range_read_fraction`` (min/max: {range
        width as a fraction of the column's span: fraction read}) and ``verdict``; and
        ``damage`` (null for a whole store); ``type_drift`` (JSON, null when the column's files
        agree on its type): the table's type, what it cannot promise and the effect on the index,
        how many files were left unindexed for the column because their values did not convert
        exactly; ``table_format``, ``data_format``, ``format_options`` (JSON): the formats the
        index was built with. A store whose latest version cannot be read gives one row, with
        the damage and no index.

        Raises:
            MetaIndexError: the table has no index.
        """
        return self._core.describe().with_spark(
            self._spark, self._resolved.qualified, self._resolved.partition_columns
        )

    def describe_dict(self) -> dict:
        """Deprecated: ``describe().to_dict()``."""
        warnings.warn("describe_dict() is describe().to_dict()", DeprecationWarning, stacklevel=2)
        return self.describe().to_dict()

    def plot(self, path, *, columns=None, title: str | None = None) -> str:
        """Draw each min/max index's file ranges into an image file: the core ``plot()``
        (needs ``pip install metaindex[plot]``)."""
        return self._core.plot(path, columns=columns, title=title)

    def advise(self, *, sample_files: int = 64, sample_rows: int = 50_000, seed: int = 0):
        """Which layout would make the min/max indexes selective, with the PySpark code to
        write it (``spark.table(...)`` for a catalog table) and the estimated read fraction
        per column before and after: the core ``advise()``
        (``metaindex.engine.advice.Advice``). Reads a sample of the table with our reader on
        the driver; never rewrites data.

        Raises:
            MetaIndexError: the table has no index.
        """
        name = self._resolved.qualified
        source = f'spark.table("{name}")' if name else None
        return self._core.advise(
            sample_files=sample_files, sample_rows=sample_rows, seed=seed, source=source
        )

    def history(self) -> History:
        """The core ``history()``: a :class:`~metaindex.description.History`, one entry per
        version still in the log, oldest first; ``to_spark()`` renders it as a DataFrame
        (:data:`HISTORY_SCHEMA`)."""
        return self._core.history().with_spark(self._spark)

    # ---------------------------------------------------------------- xskipper names

    def indexBuilder(self) -> IndexBuilder:
        return self.index_builder()

    def refreshIndex(self, reader=None) -> BuildResult:
        """``refresh()``; a ``DataFrameReader`` must read the table as the index was built
        (else ``MetaIndexError``)."""
        if _is_reader(reader):
            self._check_reader(reader)
            reader = None
        return self.refresh(executor=reader)

    def describeIndex(self, reader=None):
        """``describe().to_spark()``; a ``DataFrameReader`` is checked as for
        ``refreshIndex``."""
        if reader is not None:
            self._check_reader(reader)
        return self.describe().to_spark()

    def _check_reader(self, reader) -> None:
        """Refuse a ``DataFrameReader`` (xskipper's argument) that reads the table otherwise
        than its index was built (once indexed) or than this MetaIndex's ``format`` and
        ``options`` (before).

        Raises:
            MetaIndexError: another format, schema or value-changing option.
            UnsupportedFeatureError: reader options an index cannot record.
        """
        from metaindex.spark.reading import reader_settings

        requested = _requested_formats(*reader_settings(reader))
        if self._core.is_indexed():
            _check_recorded(self._spark, self._core, requested)
            return
        why = _formats_mismatch(self._spark, self._formats or _default_formats(), requested)
        if why is not None:
            raise MetaIndexError(
                f"{self.table_uri}: the reader reads the table otherwise than this MetaIndex's "
                f"format= and options=: {why}"
            )

    def dropIndex(self) -> None:
        self.drop()

    def isIndexed(self) -> bool:
        return self.is_indexed()

    @_Hybrid
    def getLatestQueryStats(spark):
        """The stats of the latest query of ``spark`` (``metaindex.spark.stats``)."""
        from metaindex.spark import stats

        return stats.last_query_stats(spark)


def _catalog_formats(resolved, format: str | None, options: dict | None) -> tuple:
    """``(format, options)`` to index with: a catalog table's own (the format and reader
    options Spark reads it with, :mod:`metaindex.spark.catalog`), with the caller's
    ``format`` and ``options`` where they agree; a path's as given.

    Raises:
        MetaIndexError: ``format`` or an option that differs from the catalog table's.
    """
    if resolved.data_format is None:
        return format, options
    name = resolved.qualified or resolved.name
    if format is not None and str(format).lower() != resolved.data_format:
        raise MetaIndexError(
            f"{name} is a {resolved.provider} table, read as {resolved.data_format}: "
            f"format={format!r} would index it as Spark never reads it (leave format out)"
        )
    merged = dict(resolved.options)
    given = _requested_formats(resolved.data_format, options)
    for key, value in (given.options if given is not None else {}).items():
        mine = next((v for k, v in merged.items() if k.lower() == key.lower()), None)
        if mine is not None and mine != value:
            raise MetaIndexError(
                f"{name} is read with the option {key}={mine!r} (the table's own), not "
                f"{value!r}: leave it out, or index the location with format= and options="
            )
        merged.setdefault(key, value)
    return resolved.data_format, merged


def _requested_formats(format: str | None, options: dict | None):
    """The ``metaindex.formats.FormatSpec`` a user asked for (None: the default, Parquet),
    its options as Spark's reader takes them: strings, booleans ``true``/``false``, a
    ``StructType`` schema as its JSON."""
    from metaindex.formats import DEFAULT_DATA_FORMAT, FormatSpec

    if format is None and not options:
        return None
    if format is not None and not isinstance(format, str):
        raise TypeError(f"format is a name such as 'csv', not {format!r}")
    out = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"reader option names are str, not {key!r}")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif hasattr(value, "json") and callable(value.json):  # a pyspark StructType
            value = value.json()
        elif not isinstance(value, str):
            value = str(value)
        out[key] = value
    spec = FormatSpec(data=(format or DEFAULT_DATA_FORMAT).lower(), options=out)
    spec.data_format()  # an unknown format: UnsupportedFormatError now
    return None if format is None and spec == FormatSpec() else spec


def _default_formats():
    from metaindex.formats import FormatSpec

    return FormatSpec()


def _json_schema(spark, schema: str | None) -> str | None:
    """A ``schema`` option as Spark's JSON (a DDL string parsed by Spark), None when absent
    or when Spark does not parse it."""
    from metaindex.formats.sparkread import schema_shape

    if schema is None or schema_shape(schema) is not None:
        return schema
    try:
        return spark.createDataFrame([], schema).schema.json()
    except Exception:  # noqa: BLE001 - not a schema Spark parses: compared as no schema
        return None


def _formats_mismatch(spark, recorded, requested) -> str | None:
    """Why ``requested`` (a FormatSpec) reads the table otherwise than ``recorded``."""
    from metaindex.formats.sparkread import SCHEMA_OPTION, read_mismatch

    recorded_options = dict(recorded.options)
    if SCHEMA_OPTION in recorded_options:
        recorded_options[SCHEMA_OPTION] = _json_schema(spark, recorded_options[SCHEMA_OPTION])
    return read_mismatch(
        recorded.data,
        {k: v for k, v in recorded_options.items() if v is not None},
        requested.data,
        requested.options,
        _json_schema(spark, requested.options.get(SCHEMA_OPTION)),
        spark.conf.get("spark.sql.session.timeZone"),
    )


def _check_recorded(spark, core, requested) -> None:
    """Refuse formats other than the ones the table's index was built with."""
    from metaindex.formats import FormatSpec

    recorded = FormatSpec.from_record(core.snapshot().table.extra)
    why = _formats_mismatch(spark, recorded, requested)
    if why is not None:
        raise MetaIndexError(
            f"{core.table_uri} is indexed as {recorded.data} with options "
            f"{recorded.options}: {why}; drop() the index to index it "
            "another way"
        )


def _store_tables(root: str) -> list:
    """(table uri, table store dir) of every index in the store at ``root``."""
    import pyarrow.fs as pafs

    from metaindex.store.schemes import open_storage

    storage, path = open_storage(root)
    if "://" in root:
        fs, base = pafs.FileSystem.from_uri(path)  # the canonical spelling (s3a:// -> s3://)
    else:
        fs, base = pafs.LocalFileSystem(), os.path.abspath(root)
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except OSError:
        return []
    out = []
    for info in infos:
        if info.type != pafs.FileType.Directory:
            continue
        try:
            record = json.loads(storage.read(storage.join(path, info.base_name, "table.json")))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("uri"), str):
            out.append(record["uri"])
    return sorted(out)


def list_indexes(spark):
    """A DataFrame (:data:`LIST_SCHEMA`) of the indexes this process knows: those a
    :class:`MetaIndex` registered with the skipping hook (built, refreshed or opened here; the
    registry is process-wide) and those in the store named by the ``metaindex.store`` conf
    key. ``registered``: whether the hook uses that exact index object for its table's
    scans (others are found through the conf when queried)."""
    settings = config_mod.settings(spark)
    found: dict = {}
    for uri, core in list(_registered.items()):
        found[uri] = (core, True)
    if settings.store:
        for uri in _store_tables(settings.store):
            if uri not in found:
                try:
                    found[uri] = (config_mod.open_index(uri, settings), False)
                except (FileNotFoundError, MetaIndexError):
                    continue  # the table directory is gone: its index is listed nowhere
    rows = []
    for uri, (core, registered) in sorted(found.items()):
        try:
            snap = core.snapshot()
        except (MetaIndexError, OSError):  # dropped or gone since: nothing to list
            continue
        rows.append(
            (
                uri,
                core.store_path,
                snap.version,
                [f"{d.name}({d.cols[0]})" for d in snap.index_defs],
                snap.object_count,
                registered,
            )
        )
    return spark.createDataFrame(rows, LIST_SCHEMA)
