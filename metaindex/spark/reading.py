"""Collecting CSV, JSON and ORC files with Spark's own readers (formats that ``needs_spark``,
:mod:`metaindex.formats.sparkread`).

The index's values must be exactly the values Spark reads with the index's reader options, so
Spark reads them: one job reads the table root with ``spark.read.format(name).options(...)
.schema(recorded schema)``, keeps the indexed top-level columns and each row's
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
"""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from metaindex.engine.collect import CollectTask, TaskResult, run_task
from metaindex.errors import SchemaError
from metaindex.formats import FormatSpec
from metaindex.formats.sparkread import (
    SCHEMA_OPTION,
    TIME_ZONE_OPTION,
    ArrowTableReader,
    ArrowTablesFormat,
)

__all__ = ["MAX_TASK_BYTES", "collect_read", "read_schema", "reader", "spark_path"]

MAX_TASK_BYTES = 256 << 20
"""Arrow bytes of read columns a Spark task holds before it collects them into a part."""

_PATH, _SIZE, _MTIME = "__metaindex_path", "__metaindex_size", "__metaindex_mtime"


def spark_path(location) -> str:
    """The table root as Spark's readers take it (``s3://`` as ``s3a://``)."""
    uri = location.uri
    return "s3a://" + uri[len("s3://") :] if uri.startswith("s3://") else uri


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
    from pyspark.sql import functions as F

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
    df = (
        reader(spark, formats)
        .load(spark_path(location))
        .select(
            F.col("_metadata.file_path").alias(_PATH),
            F.col("_metadata.file_size").alias(_SIZE),
            F.col("_metadata.file_modification_time").alias(_MTIME),
            *[F.col(f"`{c.replace('`', '``')}`") for c in chosen],
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
