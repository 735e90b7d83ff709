"""The ``metaindex`` Python data source: read an indexed Parquet table, scanning only kept files.

The way to skip files under Spark Connect, where Python has no JVM to install the
automatic-skipping hook into::

    from metaindex.spark.datasource import read, register
    register(spark)                                       # classic or Connect session
    read(spark, "/data/events", "temp > 30").count()      # reads only the files kept for temp > 30
    spark.read.format("metaindex").option("where", "temp > 30").load("/data/events") \
        .where("temp > 30")                               # the same, spelled out
    spark.sql("CREATE TEMPORARY VIEW hot USING metaindex "
              "OPTIONS (path '/data/events', where 'temp > 30')")

How it works: while Spark plans the scan (in a Python worker on the driver) the reader asks the
table's index which files might hold rows matching its predicate (``metaindex.MetaIndex.prune``)
and plans one input partition per group of kept files; ``read()`` yields Arrow record batches
of each file (pyarrow) with the partition columns of its ``key=value`` directories appended.
The predicate is the ``where`` option (Spark SQL, parsed by ``metaindex.expr.parse_sql``) and,
where it is safe (below), the filters Spark pushes into the scan (``pushFilters``, converted by
:func:`metaindex.spark.filters.datasource_conjuncts`). Every pushed filter is handed back to
Spark, which evaluates all of them on the rows read.

What a relation holds: without ``where``, every row of the table (``spark.read.parquet``); with
``where``, every row of the files that may hold a row matching it - a superset of the matching
rows, so apply the same predicate in the query (:func:`read` does; for a view, make it from
``read(...)``: ``read(spark, path, where).createOrReplaceTempView("v")``). The source does not
filter rows itself: no evaluator of ours reproduces Spark SQL for every ``where``.

Why ``where``: Spark 4.1 - 4.3 (Python sources get no filters before 4.1) keep the partitions a
Python data source plans during filter pushdown on the *relation*, not on the scan. A DataFrame
or view queried once with pushable filters and then without any reuses the first, pruned, plan
(too few rows), and two scans of one DataFrame in a query share the last plan. So pruning with
pushed filters is enabled only where
:func:`pushdown_pruning_safe` shows Spark plans per scan (not on 4.1 - 4.3); a ``where`` option
belongs to the relation, so any reuse of it is pruned for the same predicate.

Options (``.option(key, value)`` or ``OPTIONS (...)``; keys are case-insensitive):

==============================  ==============================================================
``path``                        the table root (a directory or a ``pyarrow.fs`` URI); required
``where``                       a Spark SQL predicate: read only files that may match it
``timeZone``                    time zone for ``TIMESTAMP '...'`` in ``where`` (default: the
                                session's ``spark.sql.session.timeZone`` at :func:`register`)
``store``                       the index store (default: as ``metaindex.MetaIndex``)
``metaindex.store``,            as the Spark conf keys of :mod:`metaindex.spark.config`
``metaindex.encryption.*``      (KMS spec, key labels...) to read an encrypted store
``mergeSchema``                 ``true``: the data schema is the union of every file's schema
                                (default: the first file's, as Spark reads Parquet)
``maxPartitionBytes``           bytes per input partition, counting each file as its size plus
                                ``openCostInBytes`` (defaults 128 MiB and 4 MiB, as Spark's
                                ``spark.sql.files.*``); ``1`` plans one partition per file
==============================  ==============================================================

Python workers cannot read the session's conf, so :func:`register` captures the session's
``metaindex.*`` conf, its time zone, case sensitivity and Parquet rebase read modes when it runs
(options override them); later conf changes need another ``register``. Pruning decides through
the one engine path (``metaindex.engine.prune.Pruner``): a conjunct of ``where`` (or a pushed
filter) it cannot use, such as ``cast(s AS INT) = 5``, is left out with the reason in the scan
stats, and a ``where`` that does not parse, or an index that cannot be used, reads every file.

Limits:

- Spark pushes only top-level AND-ed conjuncts of simple comparisons to a Python data source
  (``=``, ``<=>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS [NOT] NULL``, ``LIKE 'a%'`` /
  ``'%a'`` / ``'%a%'``, and ``NOT`` of one of those) between a column and a literal; an ``OR``,
  a function of a column (``lower(c) = 'x'``, ``isnan(c)``) or a cast column are never pushed
  (``where`` takes all of ``parse_sql``, OR and NOT included). Pushdown needs
  ``spark.sql.python.filterPushdown.enabled=true`` (set by :func:`register`).
- Pruning needs an index (``metaindex.spark.MetaIndex(...).index_builder()...build()``); a
  table without one, or whose index is missing, corrupt or cannot be decrypted, is read whole
  (with a logged warning and the reason in the scan stats). Files added or rewritten since the
  index was built are always read.
- The schema is Spark's Parquet schema for the common types, through the store's one Arrow ->
  Spark type map (``metaindex.store.sparkschema``, read as Arrow batches): integers, unsigned
  ones widened as Spark does, floats (``float16`` widened to ``float``), decimals up to 38
  digits, strings, binary, booleans, dates, timestamps with and without time zone, INT96 as
  timestamps with time zone (the index's rule, ``metaindex.engine.schema.file_schema``),
  lists, maps, structs; nanosecond timestamps are read as microseconds (Spark refuses them by
  default); other Arrow types (time, duration, interval, decimals over 38 digits) raise
  ``UnsupportedFeatureError``. Partition column types are inferred from the directory values
  as Spark does (``metaindex.engine.schema.spark_partition_types``: int, bigint, double, date,
  else string; timestamp- and decimal-looking values stay strings), a partition column replaces a
  data column of the same name, and a file missing a data column reads it as NULL. Columns
  match by exact name (Spark's Parquet reader matches case-insensitively).
- No column pruning: every column of each kept file is read.
- Planning happens in a Spark-managed Python worker, not in the calling process, so
  ``metaindex.spark.last_query_stats`` does not see these scans: each planned scan is logged by
  the ``metaindex.spark.datasource`` logger, readable with :func:`scan_stats` (Spark 4.1+,
  ``spark.sql.pyspark.worker.logging.enabled=true``).
"""

from __future__ import annotations

import json
import logging
import time

__all__ = [
    "MetaIndexDataSource",
    "MetaIndexReader",
    "FileGroup",
    "register",
    "read",
    "scan_stats",
    "pushdown_pruning_safe",
    "spark_schema",
    "STATS_PREFIX",
]

_log = logging.getLogger(__name__)

STATS_PREFIX = "metaindex scan: "
"""Start of the log message each planned scan writes, followed by its stats as JSON."""

_DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
_DEFAULT_OPEN_COST = 4 * 1024 * 1024
_BATCH_ROWS = 65536


# ------------------------------------------------------------------------------ schema


def _spark_fields(schema, start: str = "") -> list:
    """``StructField`` s (all nullable) of an Arrow schema: the store's Arrow -> Spark type map
    (``metaindex.store.sparkschema.spark_type``) as Spark gets Arrow batches.

    Raises:
        UnsupportedFeatureError: a column of a type Spark cannot be handed.
    """
    from pyspark.sql import types as T

    from metaindex.errors import SchemaError, UnsupportedFeatureError
    from metaindex.store.sparkschema import ARROW, spark_schema_json

    fields = []
    for f in schema:
        try:
            fields.append(
                T.StructType.fromJson(json.loads(spark_schema_json([f], reading=ARROW))).fields[0]
            )
        except SchemaError as exc:
            raise UnsupportedFeatureError(
                f"column {f.name!r} has Arrow type {f.type}, which the "
                f"metaindex data source cannot hand to Spark ({exc})"
            ) from None
    return fields


def _data_schema(location, files: list, merge: bool):
    """The Arrow schema of the table's data files as the index records it
    (``metaindex.engine.schema.file_schema``: INT96 columns as timestamps with a zone)."""
    from metaindex.drift import drift_of
    from metaindex.engine.schema import file_schema, unify
    from metaindex.errors import SchemaError
    from metaindex.parquet import ParquetFile

    schemas = []
    for f in files if merge else files[:1]:
        with ParquetFile(location.full_path(f.path), filesystem=location.filesystem) as pf:
            schemas.append(file_schema(pf))
    merged = unify(schemas)
    clashes = {f.name: drift_of(f).conflict for f in merged if drift_of(f).conflict}
    if clashes:  # the files' values cannot be read in one type
        raise SchemaError(
            f"the data files of {location.uri} have incompatible types: "
            + "; ".join(
                f"{name}: {merged.field(name).type} and {', '.join(types)}"
                for name, types in clashes.items()
            )
        )
    return merged


def spark_schema(location, listing, merge: bool = False):
    """The Spark schema (``StructType``) of a table: data columns, then partition columns
    (typed from the directory values as Spark types them:
    ``metaindex.engine.schema.spark_partition_types``).

    Raises:
        MetaIndexError: the table has no data file.
        UnsupportedFeatureError: a column type Spark cannot be handed.
    """
    import pyarrow as pa
    from pyspark.sql import types as T

    from metaindex.engine.schema import spark_partition_types
    from metaindex.errors import MetaIndexError

    if not len(listing):
        raise MetaIndexError(
            f"{location.uri} has no data files: cannot infer a schema (give one with .schema(...))"
        )
    data = _data_schema(location, listing.files, merge)
    partitions = spark_partition_types(listing)
    arrow = [f for f in data if f.name not in partitions]
    arrow += [pa.field(name, t) for name, (_, t) in partitions.items()]
    return T.StructType(_spark_fields(arrow))


# ------------------------------------------------------------------------------ options


def _options(options) -> dict:
    return {str(k).lower(): v for k, v in dict(options).items()}


def _bool_option(options: dict, key: str, default: bool) -> bool:
    from metaindex.errors import MetaIndexError

    text = options.get(key.lower())
    if text is None:
        return default
    low = str(text).strip().lower()
    if low not in ("true", "false"):
        raise MetaIndexError(f"option {key}={text!r}: expected true or false")
    return low == "true"


def _int_option(options: dict, key: str, default: int, minimum: int) -> int:
    from metaindex.errors import MetaIndexError

    text = options.get(key.lower())
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise MetaIndexError(f"option {key}={text!r}: expected a number of bytes >= {minimum}")
    return value


def _path(options: dict) -> str:
    from metaindex.errors import MetaIndexError

    path = options.get("path")
    if not path:
        raise MetaIndexError(
            "the metaindex data source needs a path: "
            "spark.read.format('metaindex').load('/the/table')"
        )
    return path


# ------------------------------------------------------------------------------ data source


try:  # the classes below subclass pyspark's; without pyspark this module still imports
    from pyspark.sql.datasource import DataSource as _DataSource
    from pyspark.sql.datasource import DataSourceReader as _DataSourceReader
    from pyspark.sql.datasource import InputPartition as _InputPartition
except ImportError:  # pragma: no cover - exercised only without pyspark
    _DataSource = _DataSourceReader = _InputPartition = object  # type: ignore[misc, assignment]  # no pyspark: plain classes


class FileGroup(_InputPartition):
    """One input partition: ``files`` to read, each ``(path on the filesystem, partition
    values)``, the values as strings (None for NULL) in the order of ``partition_names``."""

    def __init__(self, files: list, partition_names: list) -> None:
        self.files = files
        self.partition_names = partition_names

    def __repr__(self) -> str:
        return f"FileGroup({len(self.files)} files)"


class MetaIndexDataSource(_DataSource):
    """``spark.read.format("metaindex")``: see the module docstring."""

    session_conf: dict = {}  # the session's metaindex.* conf, set on the class register() makes
    session_settings: dict = {}  # the session's time zone, case and rebase confs (register())
    pushdown_pruning: bool = False  # prune with pushed filters: only where Spark plans per scan

    @classmethod
    def name(cls) -> str:
        return "metaindex"

    def schema(self):
        from metaindex.engine.listing import list_files, locate_table

        options = _options(self.options)
        location = locate_table(_path(options))
        return spark_schema(
            location, list_files(location), _bool_option(options, "mergeSchema", False)
        )

    def reader(self, schema) -> MetaIndexReader:
        options = _options(self.options)
        conf = dict(self.session_conf)
        conf.update({k: v for k, v in options.items() if k.startswith("metaindex.")})
        settings = dict(self.session_settings)
        if options.get("timezone"):
            settings["spark.sql.session.timeZone"] = options["timezone"]
        return MetaIndexReader(options, conf, schema, self.pushdown_pruning, settings)


class MetaIndexReader(_DataSourceReader):
    """Plans the kept files of one scan and reads them as Arrow record batches."""

    def __init__(
        self,
        options: dict,
        conf: dict,
        schema,
        pushdown_pruning: bool,
        session_conf: dict | None = None,
    ) -> None:
        self.options = options
        self.conf = conf
        self.session_conf = dict(session_conf or {})
        self.schema = schema
        self.pushdown_pruning = pushdown_pruning
        self.filters: list = []  # pushed by Spark

    def pushFilters(self, filters):
        """Record the filters; hand every one back (Spark evaluates them all on the rows)."""
        filters = list(filters)
        self.filters = filters
        return filters

    # -------------------------------------------------------------- planning

    def partitions(self) -> list:
        """One :class:`FileGroup` per group of kept files; logs the scan's stats."""
        from metaindex.engine.listing import list_files, locate_table

        started = time.perf_counter()
        location = locate_table(_path(self.options))
        listing = list_files(location)
        keep, stats = self._prune(location, listing)
        names = [f.name for f in self.schema.fields]
        partition_columns = [c for c in listing.partition_columns if c in names]
        files = []
        for f, kept in zip(listing.files, keep, strict=True):
            if kept:
                values = dict(f.partition)
                files.append(
                    (
                        location.full_path(f.path),
                        f.size,
                        tuple(values.get(c) for c in partition_columns),
                    )
                )
        groups = _pack(
            files,
            _int_option(self.options, "maxPartitionBytes", _DEFAULT_MAX_PARTITION_BYTES, 1),
            _int_option(self.options, "openCostInBytes", _DEFAULT_OPEN_COST, 0),
        )
        stats.update(
            table=location.uri,
            partitions=len(groups),
            where=self.options.get("where"),
            pushed=[repr(f) for f in self.filters],
            pushdown_pruning=self.pushdown_pruning,
            seconds=round(time.perf_counter() - started, 6),
        )
        if _log.level == logging.NOTSET:
            _log.setLevel(logging.INFO)  # planner workers log at WARNING otherwise
        _log.info("%s%s", STATS_PREFIX, json.dumps(stats, sort_keys=True, default=str))
        return [FileGroup([(p, v) for p, _, v in g], partition_columns) for g in groups] or [
            FileGroup([], partition_columns)
        ]

    def _conjuncts(self) -> list:
        """What pruning decides with: the ``where`` option (SQL, split into its conjuncts by
        the Pruner), and the pushed filters when pushdown pruning is on."""
        from metaindex.spark.filters import datasource_conjuncts

        out = []
        where = self.options.get("where")
        if where:
            out.append(where)
        if self.pushdown_pruning:
            out.extend(datasource_conjuncts(self.filters))
        return out

    def _prune(self, location, listing):
        """(keep mask as a list of bools, stats dict). Never raises: an index that cannot be
        used, or a ``where`` that does not parse, reads every file with the reason."""
        from metaindex.engine.prune import SessionSettings, candidates, unused_summary
        from metaindex.formats import FormatSpec

        n = len(listing)
        sizes = [f.size for f in listing.files]
        stats = {
            "files_total": n,
            "files_skipped": 0,
            "bytes_total": sum(sizes),
            "bytes_skipped": 0,
            "version": None,
            "skipped_by_index": {},
            "reason": None,
            "conjuncts": [],
        }
        keep = [True] * n
        conjuncts = self._conjuncts()
        if not conjuncts:
            stats["reason"] = "no filter to prune with"
            return keep, stats
        try:
            index = self._open_index(location)
            if not index.is_indexed():
                stats["reason"] = "table not indexed"
                return keep, stats
            recorded = FormatSpec.from_record(index.snapshot().table.extra).data
            if recorded != "parquet":  # this source reads Parquet files: other values
                stats["reason"] = (
                    f"index not used: it was built for {recorded} files, this source reads Parquet"
                )
                return keep, stats
            result = index.pruner().decide(
                conjuncts,
                candidates(location, listing),
                session=SessionSettings.from_spark_conf(self.session_conf),
            )
        except Exception as exc:  # a bad index never breaks a query: read every file
            reason = f"index unusable ({type(exc).__name__}: {exc})"
            _log.warning("metaindex: reading every file of %s: %s", location.uri, reason)
            stats["reason"] = reason
            return keep, stats
        s = result.stats
        unused = unused_summary(s.conjuncts)
        if unused:
            _log.warning("metaindex: %s: %s", location.uri, unused)
        keep = result.kept_mask.tolist()
        stats.update(
            files_skipped=s.skipped_files,
            bytes_skipped=s.skipped_bytes,
            version=s.version,
            skipped_by_index=dict(s.skipped_by_index),
            reason=unused,
            conjuncts=[c.as_dict() for c in s.conjuncts],
        )
        return keep, stats

    def _open_index(self, location):
        from metaindex.spark.config import open_index, settings_from

        root = location.uri if "://" in _path(self.options) else location.root
        return open_index(root, settings_from(self.conf), store=self.options.get("store"))

    # -------------------------------------------------------------- reading

    def read(self, partition):
        """Arrow record batches of the partition's files, in the scan's schema."""
        from pyspark.sql.pandas.types import to_arrow_schema

        files = getattr(partition, "files", None) or []
        if not files:
            return iter(())
        target = to_arrow_schema(self.schema, timezone="UTC")
        return _read_files(_path(self.options), files, target, partition.partition_names)


def _pack(files: list, max_bytes: int, open_cost: int) -> list:
    """Files into groups of at most ``max_bytes`` (each file costs its size + ``open_cost``),
    largest first, next-fit, as Spark packs file splits."""
    groups: list[list] = []
    current: list = []
    used = 0
    for f in sorted(files, key=lambda f: -f[1]):
        cost = f[1] + open_cost
        if current and used + cost > max_bytes:
            groups.append(current)
            current, used = [], 0
        current.append(f)
        used += cost
    if current:
        groups.append(current)
    return groups


def _read_files(root: str, files: list, target, partition_names: list):
    """Yield record batches of the ``target`` schema from each ``(path, partition values)``:
    data columns by name (NULL where a file lacks one), partition columns from the values."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from metaindex.engine.listing import locate_table

    location = locate_table(root)
    position = {name: i for i, name in enumerate(partition_names)}
    for path, values in files:
        with location.filesystem.open_input_file(path) as handle:
            pf = pq.ParquetFile(handle)
            names = set(pf.schema_arrow.names)
            columns = [f.name for f in target if f.name not in position and f.name in names]
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
                n = batch.num_rows
                arrays = []
                for field in target:
                    if field.name in position:
                        arrays.append(_partition_array(values[position[field.name]], field.type, n))
                    elif field.name in names:
                        arrays.append(_cast(batch.column(field.name), field.type))
                    else:
                        arrays.append(pa.nulls(n, field.type))
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def _cast(array, t):
    import pyarrow as pa

    if array.type.equals(t):
        return array
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_timestamp(array.type) and pa.types.is_timestamp(t) and array.type.unit == "ns":
        return array.cast(t, safe=False)  # nanoseconds truncated to microseconds
    return array.cast(t)


def _partition_array(value, t, n: int):
    import pyarrow as pa

    from metaindex.engine.schema import partition_value

    if value is None:
        return pa.nulls(n, t)
    return pa.array([partition_value(value, t)] * n, t)


# ------------------------------------------------------------------------------ registration


class _ProbeSource(_DataSource):
    """A two-row source whose planned partitions depend on the pushed filters (see
    :func:`pushdown_pruning_safe`)."""

    @classmethod
    def name(cls) -> str:
        return "metaindex_probe"

    def schema(self):
        return "x int"

    def reader(self, schema):
        return _ProbeReader()


class _ProbeReader(_DataSourceReader):
    def __init__(self) -> None:
        self.filtered = False

    def pushFilters(self, filters):
        filters = list(filters)
        self.filtered = bool(filters)
        return filters

    def partitions(self):
        return [_InputPartition(1)] if self.filtered else [_InputPartition(0), _InputPartition(1)]

    def read(self, partition):
        yield (partition.value,)


_probed: dict = {}


def _session_key(spark) -> object:
    return getattr(spark, "session_id", None) or id(spark)


def pushdown_pruning_safe(spark) -> bool:
    """Whether Spark plans a Python data source's partitions per scan, so that partitions
    pruned with one query's pushed filters never serve another query.

    Spark 4.1 - 4.3 keep the partitions planned during filter pushdown on the data source
    relation: a DataFrame (or view) queried with pushable filters and then without any reuses
    the first plan, and two scans of one DataFrame in a query share the last one. Pruning with
    pushed filters would then lose rows. The answer comes from running exactly that sequence on
    a two-row probe source (once per session; needs
    ``spark.sql.python.filterPushdown.enabled=true``).
    """
    key = _session_key(spark)
    if key not in _probed:
        spark.dataSource.register(_ProbeSource)
        df = spark.read.format(_ProbeSource.name()).load()
        first = df.where("x = 1").count()
        second = df.count()
        _probed[key] = (first, second) == (1, 2)
        if not _probed[key]:
            _log.info(
                "metaindex: this Spark reuses a Python data source's planned partitions "
                "across scans; the metaindex data source prunes only with its 'where' "
                "option"
            )
    return _probed[key]


def _plans_shared_per_relation(version: str) -> bool:
    """Spark versions known to fail :func:`pushdown_pruning_safe` (4.1 - 4.3 share planned
    partitions across scans; 4.0 pushes no filters to Python sources)."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return major == 4 and minor <= 3


def register(spark, *, probe: bool | None = None) -> type:
    """Register the ``metaindex`` data source on ``spark`` (classic or Connect) and turn on
    ``spark.sql.python.filterPushdown.enabled``.

    The registered class carries the session's ``metaindex.*`` conf, time zone, case
    sensitivity and Parquet rebase read modes as they are now (Python data sources cannot read
    the session conf themselves); options given to a read override them.
    Pruning with the filters Spark pushes is on only where :func:`pushdown_pruning_safe` says
    so; ``probe=None`` runs that probe except on Spark versions known to fail it (4.0 - 4.3),
    ``probe=False`` leaves pushdown pruning off. The ``where`` option always prunes.

    Returns:
        The registered data source class.
    """
    from metaindex.spark.config import PUSHDOWN_CONF, SessionConf

    captured = SessionConf.of_spark(spark)
    conf, session = dict(captured.index), dict(captured.session)
    spark.conf.set(PUSHDOWN_CONF, "true")
    if probe is None:
        probe = not _plans_shared_per_relation(spark.version)
    safe = pushdown_pruning_safe(spark) if probe else False
    cls = type(
        "RegisteredMetaIndexDataSource",
        (MetaIndexDataSource,),
        {
            "session_conf": conf,
            "session_settings": session,
            "pushdown_pruning": safe,
            "__module__": __name__,
        },
    )
    spark.dataSource.register(cls)
    return cls


def read(spark, path: str, where: str | None = None, **options):
    """``spark.read.format("metaindex")`` of ``path``, pruned by ``where`` and filtered by it:
    the rows of ``spark.read.parquet(path).where(where)``, reading only the files the index
    keeps. Call :func:`register` first.

    Args:
        spark: a classic or Connect session.
        path: the table root.
        where: a Spark SQL predicate (``"temp > 30 AND city = 'Paris'"``), or None.
        **options: more data source options (``store=...``, ``maxPartitionBytes=...``).
    """
    reader = spark.read.format(MetaIndexDataSource.name())
    for key, value in options.items():
        reader = reader.option(key, str(value))
    if where:
        reader = reader.option("where", where)
    df = reader.load(path)
    return df.where(where) if where else df


def scan_stats(spark) -> list:
    """The scans the data source planned in this session, oldest first, as dicts (table,
    files_total, files_skipped, bytes_total, bytes_skipped, partitions, version,
    skipped_by_index, reason, where, pushed, seconds), read from Spark's Python worker logs.

    Needs ``spark.sql.pyspark.worker.logging.enabled=true`` on the session before the scans.
    """
    rows = (
        spark.tvf.python_worker_logs()
        .where(f"logger = '{__name__}' AND startswith(msg, '{STATS_PREFIX}')")
        .orderBy("ts")
        .select("msg")
        .collect()
    )
    return [json.loads(row.msg[len(STATS_PREFIX) :]) for row in rows]
