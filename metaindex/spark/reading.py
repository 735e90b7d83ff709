"""Collecting CSV, JSON and ORC files with Spark's own readers (formats that ``needs_spark``,
:mod:`metaindex.formats.sparkread`).

The index's values must be exactly the values Spark reads with the index's reader options, so
Spark reads them: one job reads the tasks' files (their paths, the table root as
``basePath`` for the partition values; the table root itself beyond
:data:`MAX_LISTED_PATHS` files or for a path Spark would take for a glob pattern) with
``spark.read.format(name).options(...).schema(recorded schema)``, so that a refresh reads
only the new and changed files; it keeps the indexed top-level columns and each row's
``_metadata.file_path`` / ``file_size`` / ``file_modification_time``, shuffles the rows by file
into the collection tasks' number of partitions, sorts each partition by file, and in each
partition (``mapInArrow``) hands the files' Arrow batches to the engine's collection task
(:func:`metaindex.engine.collect.run_task`, through
:class:`~metaindex.formats.sparkread.ArrowTablesFormat`): the same index kinds, type drift
and part writing as for Parquet; each Spark task writes its part file(s) into the store and
returns their receipts. The driver makes the one commit.

A listed file Spark read with another size or modification time changed meanwhile: it is not
indexed (always read). A listed file of which Spark read no row (empty, or a header only) is
indexed as holding no row. A row of a file not in the listing (added since) is ignored.
Timestamps come from Spark as instants; they are taken in UTC, as the table schema records
them.

Under Spark Connect (no SparkContext) the same job runs on the Connect server:
:class:`ConnectReads` is the executor a Connect session's builds use (Parquet files on a local
process pool, the other formats through this job). :func:`reader_settings` reads the format,
options and schema a user set on a ``DataFrameReader`` (xskipper's ``build(reader)``).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from metaindex.engine.collect import CollectTask, TaskResult, run_task
from metaindex.engine.executors import LocalExecutor, Progress
from metaindex.errors import SchemaError, UnsupportedFeatureError
from metaindex.formats import FormatSpec
from metaindex.formats.sparkread import (
    SCHEMA_OPTION,
    TIME_ZONE_OPTION,
    ArrowTableReader,
    ArrowTablesFormat,
)

__all__ = [
    "MAX_LISTED_PATHS",
    "MAX_TASK_BYTES",
    "ConnectReads",
    "collect_read",
    "read_schema",
    "reader",
    "read_paths",
    "reader_settings",
    "spark_path",
]

MAX_TASK_BYTES = 256 << 20
"""Arrow bytes of read columns a Spark task holds before it collects them into a part."""

MAX_LISTED_PATHS = 10_000
"""Up to this many files, a collection job gives Spark their paths; beyond, the table root
(Spark checks each path it is given; a build of many files reads them all anyway)."""

_PATH, _SIZE, _MTIME = "__metaindex_path", "__metaindex_size", "__metaindex_mtime"
_GLOB = frozenset("*?[]{}\\")


def spark_path(location) -> str:
    """The table root as Spark's readers take it (``s3://`` as ``s3a://``)."""
    uri = location.uri
    return "s3a://" + uri[len("s3://") :] if uri.startswith("s3://") else uri


def read_paths(location, files, options) -> tuple:
    """``(paths, extra options)`` a collection job loads to read ``files`` (``DataFile``s of
    the table at ``location``): their paths under the table root with the root as
    ``basePath`` (unless ``options`` set one), or the root alone for more than
    :data:`MAX_LISTED_PATHS` files or when a path holds a glob character."""
    root = spark_path(location)
    if len(files) > MAX_LISTED_PATHS or any(_GLOB.intersection(f.path) for f in files):
        return [root], {}
    extra = {} if any(k.lower() == "basepath" for k in options) else {"basePath": root}
    return [f"{root.rstrip('/')}/{f.path}" for f in files], extra


def reader(spark, formats: FormatSpec):
    """``spark.read`` for the index's data format with its options (the recorded ``schema``
    as the reader's schema)."""
    from pyspark.sql.types import StructType

    options = {k: v for k, v in formats.options.items() if k != SCHEMA_OPTION}
    out = spark.read.format(formats.data).options(**options)
    schema = formats.options.get(SCHEMA_OPTION)
    if schema is not None:
        try:
            out = out.schema(StructType.fromJson(json.loads(schema)))
        except (TypeError, ValueError, KeyError):  # a DDL string as a user wrote it
            out = out.schema(schema)
    return out


def _has_timestamp(t) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

    if isinstance(t, TimestampType):
        return True
    if isinstance(t, StructType):
        return any(_has_timestamp(f.dataType) for f in t.fields)
    if isinstance(t, ArrayType):
        return _has_timestamp(t.elementType)
    if isinstance(t, MapType):
        return _has_timestamp(t.keyType) or _has_timestamp(t.valueType)
    return False


def read_schema(spark, location, formats: FormatSpec, partitions) -> tuple:
    """``(Arrow data schema, formats completed)``: the data schema Spark reads the table
    with (the ``schema`` option, else the one Spark infers), partition columns left out;
    the formats with that schema recorded as Spark's JSON (nullability dropped) and, when it
    holds a TIMESTAMP and no ``timeZone`` option is set, the session's time zone.

    Raises:
        SchemaError: Spark reads no data column.
    """
    from pyspark.sql.types import StructField, StructType

    schema = reader(spark, formats).load(spark_path(location)).schema
    parts = {p.lower() for p in partitions}
    fields = [
        StructField(f.name, f.dataType, True) for f in schema.fields if f.name.lower() not in parts
    ]
    if not fields:
        raise SchemaError(f"Spark reads no data column from {location.uri}")
    data = StructType(fields)
    options = dict(formats.options)
    options[SCHEMA_OPTION] = data.json()
    if _has_timestamp(data) and not any(k.lower() == TIME_ZONE_OPTION.lower() for k in options):
        options[TIME_ZONE_OPTION] = spark.conf.get("spark.sql.session.timeZone")
    return _arrow_schema(data), replace(formats, options=options)


def _arrow_schema(schema):
    """pyspark's Arrow schema of ``schema``, TIMESTAMP as UTC microseconds: pyspark 4 takes the
    time zone as an argument, pyspark 3.5 has no such parameter and always writes UTC."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


def _relative(uri: str, root: str) -> str | None:
    """A Spark file URI as a path relative to the table's filesystem ``root`` (None when
    it is not below it)."""
    parts = urlsplit(uri)
    prefix = root.rstrip("/") + "/"
    for candidate in (unquote(parts.path), unquote(parts.netloc + parts.path)):
        if candidate.startswith(prefix):
            return candidate[len(prefix) :]
    return None


def _as_table_type(values: pa.Array, t: pa.DataType) -> pa.Array:
    """Spark's Arrow column in the table schema's type where only the spelling differs
    (a timestamp's zone label, large strings); unchanged when it does not cast."""
    if values.type.equals(t):
        return values
    try:
        return values.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return values


def _partition_fn(template: CollectTask, table_schema: pa.Schema, columns: list):
    """The ``mapInArrow`` function of one Spark partition (files sorted by path)."""
    listed = {f.path: f for f in template.files}
    piece_schema = pa.schema([table_schema.field(c) for c in columns])

    def run(batches):
        from metaindex.spark.executor import _encode_error, _WorkerError

        try:
            yield from collect_partition(batches)
        except Exception as exc:  # noqa: BLE001 - the driver re-raises it as itself
            raise _WorkerError(_encode_error(exc)) from None

    def collect_partition(batches):
        readers: dict = {}
        held = 0
        results = []
        current = None
        pieces: list = []
        changed: dict = {}

        def finish_file():
            if current is not None and current not in changed:
                readers[current] = ArrowTableReader(piece_schema, pieces)

        def flush():
            nonlocal held
            if readers or changed:
                files = tuple(listed[p] for p in sorted(readers))
                task = replace(
                    template,
                    files=files,
                    data_format=ArrowTablesFormat(
                        {f"{template.root}/{p}": r for p, r in readers.items()}
                    ),
                )
                result = run_task(task) if files else TaskResult()
                result.failed.update(changed)
                results.append(result)
            readers.clear()
            changed.clear()
            held = 0

        for batch in batches:
            paths = batch.column(_PATH).to_pylist()
            start = 0
            while start < len(paths):
                end = start
                while end < len(paths) and paths[end] == paths[start]:
                    end += 1
                rel = _relative(paths[start], template.root)
                piece = batch.slice(start, end - start)
                start = end
                f = listed.get(rel)
                if f is None:
                    continue  # a file added after the listing: not indexed
                if rel != current:
                    finish_file()
                    if held > MAX_TASK_BYTES:
                        flush()
                    current, pieces = rel, []
                size = piece.column(_SIZE)[0].as_py()
                mtime = piece.column(_MTIME).cast(pa.int64())[0].as_py() // 1000
                if (size, mtime) != (f.size, f.mtime):
                    changed[rel] = "changed while it was being indexed"
                    continue
                arrays = [
                    _as_table_type(piece.column(c), piece_schema.field(c).type) for c in columns
                ]
                pieces.append(pa.RecordBatch.from_arrays(arrays, schema=piece_schema))
                held += piece.nbytes
        finish_file()
        flush()
        yield pa.RecordBatch.from_arrays(
            [pa.array([pickle.dumps(r) for r in results], pa.binary())], names=["result"]
        )

    return run


def collect_read(spark, location, tasks: list, progress=None) -> list:
    """Run the collection ``tasks`` of the table at ``location`` (one data format that
    ``needs_spark``) as one Spark job (see the module docstring); their
    :class:`TaskResult`, one or more per task's worth of files."""
    if not tasks:
        return []
    first = tasks[0]
    files = tuple(f for t in tasks for f in t.files)
    template = replace(first, files=files)
    formats = FormatSpec(data=first.data_format.name, options=first.data_format.options)
    spec_schema = reader(spark, formats).load(spark_path(location)).schema
    columns = sorted({ix.column.split(".")[0] for ix in first.indexes})
    names = {f.name.lower(): f.name for f in spec_schema.fields}
    missing = [c for c in columns if c.lower() not in names]
    if missing:
        raise SchemaError(f"Spark reads no column(s) {missing} from {first.root}")
    from pyspark.sql.types import StructType

    chosen = [names[c.lower()] for c in columns]
    table_schema = _arrow_schema(StructType([spec_schema[c] for c in chosen]))
    paths, extra = read_paths(location, files, formats.options)
    df = (
        reader(spark, formats)
        .options(**extra)
        .load(paths)
        .selectExpr(  # SQL text, not pyspark.sql.functions: a process holding a classic
            # session makes classic Columns, which a Connect DataFrame refuses
            f"_metadata.file_path AS {_PATH}",
            f"_metadata.file_size AS {_SIZE}",
            f"_metadata.file_modification_time AS {_MTIME}",
            *[f"`{c.replace('`', '``')}`" for c in chosen],
        )
    )
    out = (
        df.repartition(len(tasks), _PATH)
        .sortWithinPartitions(_PATH)
        .mapInArrow(_partition_fn(template, table_schema, chosen), "result binary")
    )
    results = [pickle.loads(row["result"]) for row in out.collect()]
    seen = {p for r in results for p in (*r.indexed, *r.failed)}
    empty = tuple(f for f in files if f.path not in seen)
    if empty:  # files Spark read no row of: indexed as holding none
        readers = {f"{template.root}/{f.path}": ArrowTableReader(table_schema, []) for f in empty}
        results.append(
            run_task(replace(template, files=empty, data_format=ArrowTablesFormat(readers)))
        )
    if progress is not None:
        progress(len(tasks), len(tasks))
    return results


class ConnectReads(LocalExecutor):
    """The executor of builds and refreshes on a Spark Connect session: Parquet files are
    collected by a local process pool (:class:`~metaindex.engine.executors.LocalExecutor`),
    CSV/JSON/ORC ones by :func:`collect_read` as a job on the Connect server (whose Python
    workers must import metaindex, as a classic cluster's do).

    Args:
        spark: the Connect ``SparkSession``.
        max_workers: local worker processes for Parquet files (default: the CPUs).
    """

    reads_with_spark = True

    def __init__(self, spark, max_workers: int | None = None):
        super().__init__(max_workers)
        self._session = spark

    def read_schema(self, location, formats: FormatSpec, partitions) -> tuple:
        """:func:`read_schema` through the Connect session."""
        return read_schema(self._session, location, formats, partitions)

    def collect_read(self, location, tasks, *, progress: Progress | None = None) -> list:
        """:func:`collect_read` through the Connect session; a task's own error is raised
        as itself."""
        from metaindex.spark.executor import _task_error

        try:
            return collect_read(self._session, location, list(tasks), progress)
        except Exception as exc:
            if type(exc).__module__.startswith("metaindex"):
                raise
            raise _task_error(exc) from None

    def __repr__(self) -> str:
        return f"ConnectReads(max_workers={self.max_workers})"


_PATH_OPTIONS = ("path", "paths")


def reader_settings(reader) -> tuple:
    """``(format, options)`` a ``pyspark.sql.DataFrameReader`` (classic, through its JVM
    reader's ``source``, ``extraOptions`` and ``userSpecifiedSchema``) or a Spark Connect
    ``DataFrameReader`` (``_format``, ``_options``, ``_schema``) was given: the format name
    (Spark's default source when none was set), the options as the user spelled them, the
    user's schema as the ``schema`` option (Spark's JSON, or the DDL a Connect user wrote).

    Raises:
        TypeError: not a DataFrameReader.
        UnsupportedFeatureError: options an index cannot record: a ``path``/``paths`` option
            (the index's table is its path) or an option without a value.
    """
    jreader = getattr(reader, "_jreader", None)
    if jreader is not None:
        fmt, options, schema = _jvm_reader_settings(jreader)
    elif hasattr(reader, "_options") and hasattr(reader, "_format"):  # Spark Connect
        fmt = reader._format or reader._client.conf.get("spark.sql.sources.default")
        options = dict(reader._options)
        schema = reader._schema or None
    else:
        raise TypeError(f"reader must be a pyspark.sql.DataFrameReader, not {reader!r}")
    for key, value in options.items():
        if key.lower() in _PATH_OPTIONS:
            raise UnsupportedFeatureError(
                f"the reader has a {key!r} option ({value!r}): the index's table is the path "
                "it was opened with; leave the path out of the reader"
            )
        if value is None:
            raise UnsupportedFeatureError(
                f"the reader's option {key!r} has no value: an index records its reader "
                "options as strings"
            )
    if schema is not None:
        if any(k.lower() == SCHEMA_OPTION for k in options):
            raise UnsupportedFeatureError(
                "the reader has both a schema and a 'schema' option: give one"
            )
        options[SCHEMA_OPTION] = schema
    return fmt, options


def _jvm_field(obj, name: str):
    """The value of JVM field ``name`` of ``obj`` or a superclass (Spark's DataFrameReader
    keeps its settings in non-public fields on every Spark line)."""
    cls = obj.getClass()
    while cls is not None:
        for field in cls.getDeclaredFields():
            if field.getName() == name:
                field.setAccessible(True)
                return field.get(obj)
        cls = cls.getSuperclass()
    raise UnsupportedFeatureError(
        f"this Spark's DataFrameReader has no {name!r} field: pass format= and options= to "
        "metaindex.spark.MetaIndex instead"
    )


def _jvm_reader_settings(jreader) -> tuple:
    source = _jvm_field(jreader, "source")
    extra = _jvm_field(jreader, "extraOptions").originalMap()
    options = {}
    entries = extra.iterator()
    while entries.hasNext():
        pair = entries.next()
        options[pair._1()] = pair._2()
    schema = _jvm_field(jreader, "userSpecifiedSchema")
    return source, options, schema.get().json() if schema.isDefined() else None
