"""Building an index: list, collect on an executor, create the store entry, one commit.

The table's formats (a :class:`metaindex.formats.FormatSpec`: directory listing and Parquet
unless the caller names others) say which files it has and how each is read; the build
records them with the table identity, so refresh reads the table the same way.

Order of events: list the table; resolve the index columns against the schema of the first
file(s) that have them; run the collection tasks (each writes its own part file); create the
index (version 0, recording the table schema) and commit every part as version 1. A crash
before the commit leaves only unreferenced part files, which ``vacuum`` removes; a crash between
create and commit leaves an empty index that ``refresh`` fills.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from metaindex.engine import schema as schema_mod
from metaindex.engine.collect import CollectTask, TaskResult, run_task, split_tasks
from metaindex.engine.executors import default_executor, prepared
from metaindex.errors import MetaIndexError, SchemaError, UnsupportedFeatureError
from metaindex.formats import FormatSpec
from metaindex.formats.sparkread import SPARK_BUILD_MESSAGE
from metaindex.store import IndexDef

__all__ = ["BuildResult", "Collected", "build", "collect", "resolve_indexes", "table_state"]

_FAILED_IN_DETAILS = 20


@dataclass(frozen=True)
class BuildResult:
    """What a build or refresh did (xskipper reports status and entry counts the same way).

    Attributes:
        status: "SUCCESS" (a new version was committed) or "NO_CHANGE" (nothing to do).
        version: the index version afterwards.
        entries_added: files indexed by this operation (new and rewritten ones).
        entries_removed: entries dropped: deleted files plus superseded entries of rewritten
            files.
        failed: {file: reason} for files that could not be indexed (they stay unindexed and
            are always kept by pruning).
        footer_minmax / scanned_minmax: min/max values from footer statistics / from a scan.
        seconds: wall time.
    """

    status: str
    version: int
    entries_added: int
    entries_removed: int
    failed: dict = field(default_factory=dict)
    footer_minmax: int = 0
    scanned_minmax: int = 0
    seconds: float = 0.0


@dataclass
class Collected:
    """The merged results of a collection run."""

    parts: list = field(default_factory=list)
    indexed: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    footer_minmax: int = 0
    scanned_minmax: int = 0
    schemas: list = field(default_factory=list)


def collect(
    location,
    table_store,
    files,
    index_defs,
    indexes,
    column_types,
    partitions,
    *,
    encryption=None,
    executor=None,
    progress=None,
    footer_statistics=True,
    decryption_properties=None,
    formats: FormatSpec | None = None,
    data_format=None,
) -> Collected:
    """Run collection tasks over ``files`` and merge what they report (``formats``: the
    table's, default directory / Parquet; ``data_format``: the one to read the files with,
    default the formats' own, see :meth:`metaindex.formats.TableFormat.reading`)."""
    formats = formats or FormatSpec()
    table_format = formats.table_format()
    data_format = data_format or formats.data_format()
    executor = executor or default_executor()
    chunks = split_tasks(files, executor.parallelism)
    tasks = [
        CollectTask(
            table_store,
            location.filesystem,
            location.root,
            chunk,
            tuple(index_defs),
            tuple(indexes),
            dict(column_types),
            tuple(partitions),
            encryption,
            footer_statistics,
            decryption_properties,
            executor.task_threads(len(chunks)),
            table_format,
            data_format,
        )
        for chunk in chunks
    ]
    if data_format.needs_spark:  # CSV/JSON/ORC: one Spark job reads them with Spark's reader
        results: list[TaskResult] = _spark_reader(executor).collect_read(
            location, tasks, progress=progress
        )
    else:
        results = executor.map(run_task, tasks, progress=progress)
    out = Collected()
    for r in results:
        if r.part is not None:
            out.parts.append(r.part)
            if r.receipt is not None:  # the commit checks the part's bytes, not decodes it
                table_store.expect_part(r.receipt)
        out.indexed.extend(r.indexed)
        out.failed.update(r.failed)
        out.footer_minmax += r.footer_minmax
        out.scanned_minmax += r.scanned_minmax
        out.schemas.extend(s for s in r.schemas if s not in out.schemas)
    return out


def details(collected: Collected, data_schema, partitions, files=(), **extra) -> dict:
    """The JSON details a build/refresh entry records; ``files``: the DataFiles collected, so
    that the ones that could not be read are recorded with their size, mtime and reason
    (``unreadable``: the snapshot keeps them until they change)."""
    failed = sorted(collected.failed)
    tried = {f.path: f for f in files}
    unreadable = {
        path: [tried[path].size, tried[path].mtime, collected.failed[path]]
        for path in failed
        if path in tried
    }
    if unreadable:
        extra["unreadable"] = unreadable
    return {
        **schema_mod.record(data_schema, partitions),
        **extra,
        "files_indexed": len(collected.indexed),
        "files_failed": len(failed),
        "failed_sample": failed[:_FAILED_IN_DETAILS],
        "footer_minmax": collected.footer_minmax,
        "scanned_minmax": collected.scanned_minmax,
    }


def table_state(listing) -> dict:
    """The details keys recording where the table's history stood (``Listing.state``)."""
    return {"table_state": dict(listing.state)} if listing.state else {}


def _spark_reader(executor):
    """``executor`` when it reads files with Spark's readers (``reads_with_spark``: the
    ``metaindex.spark`` executor), for a data format that ``needs_spark``.

    Raises:
        UnsupportedFeatureError: any other executor.
    """
    if not getattr(executor, "reads_with_spark", False):
        raise UnsupportedFeatureError(SPARK_BUILD_MESSAGE)
    return executor


def _probe_schema(location, listing, names, decryption_properties, data_format):
    """The schema of the first file(s), read until every name resolves."""
    schemas = []
    missing = list(names)
    first_error = None
    for f in listing:
        try:
            with data_format.open(
                location.full_path(f.path),
                location.filesystem,
                decryption_properties=decryption_properties,
            ) as reader:
                schemas.append(reader.schema)
        except (MetaIndexError, OSError) as exc:  # collection reports it; try the next file
            first_error = first_error or exc
            continue
        merged = schema_mod.unify(schemas)
        missing = [name for name in missing if not schema_mod.has_column(merged, name)]
        if not missing:
            return merged
    if not schemas and first_error is not None:
        raise first_error
    raise SchemaError(f"no data file of {location.uri} has column(s) {missing}")


def _reject_partition_columns(indexes, partitions) -> None:
    for ix in indexes:
        if any(ix.column.lower() == p.lower() for p in partitions):
            raise SchemaError(
                f"{ix.column!r} is a partition column: pruning on it needs no "
                "index (its value is in each file's path)"
            )


def resolve_indexes(indexes, schema, partitions):
    """``(indexes with canonical columns, {column: type})``, checking each kind can index its
    column's type.

    Raises:
        SchemaError: a missing, ambiguous or partition column; two identical indexes.
        TypeError: a type the kind cannot index.
    """
    from metaindex.index import make_index

    _reject_partition_columns(indexes, partitions)
    out, types, seen = [], {}, set()
    for ix in indexes:
        name, fld = schema_mod.resolve_column(schema, ix.column)
        canonical = make_index(ix.name, [name], ix.params)
        canonical.metadata_type(fld.type)  # TypeError for types the kind cannot index
        if canonical.key in seen:
            raise SchemaError(f"{canonical!r} is defined twice")
        seen.add(canonical.key)
        out.append(canonical)
        types[name] = fld.type
    return out, types


PREPARE_DELAY = 0.1
"""Seconds into a build after which its executor starts its workers, if the collection has
not begun by then (listing 100,000 local files takes about 0.4 s; a few files, milliseconds)."""


def build(
    location,
    table_store,
    indexes,
    *,
    index_keys=None,
    encryption=None,
    executor=None,
    progress=None,
    footer_statistics=True,
    decryption_properties=None,
    formats: FormatSpec | None = None,
) -> BuildResult:
    """Index every file of the table.

    Args:
        location: the ``TableLocation``.
        table_store: the ``TableStore`` (must not hold an index yet).
        indexes: ``metaindex.index`` kinds (column names as the user wrote them).
        index_keys: {canonical column: key label} for an encrypted store (None: plaintext
            indexes).
        encryption: the store's ``EncryptionLabels`` (None: plaintext).
        formats: the table's formats (default: a directory of Parquet files), recorded with
            the index.

    Raises:
        MetaIndexError: the table is already indexed, or has no data files.
        UnsupportedFormatError: a format name that is not registered.
        UnsupportedFeatureError: a table its table format refuses (the directory format: a
            Delta Lake or Iceberg table directory); a data format that ``needs_spark``
            (CSV, JSON, ORC) without an executor that reads with Spark.
        CommitConflictError: another build created the index first.
    """
    started = time.monotonic()
    if not indexes:
        raise ValueError("add at least one index before build()")
    if table_store.exists():
        raise MetaIndexError(
            f"{location.uri} is already indexed (store {table_store.path}); "
            "use refresh(), or drop() first"
        )
    formats = formats or FormatSpec()
    # (an unregistered format name raises here, before a worker starts)
    table_format, data_format = formats.table_format(), formats.data_format()
    executor = executor or default_executor()
    # the workers start beside the listing, their interpreter start and imports overlapping
    # it (a local pool; other executors ignore it), unless the collection starts within
    # PREPARE_DELAY (a small table: none started for nothing); stopped at the end if no
    # collection took them
    with prepared(executor, PREPARE_DELAY, not data_format.needs_spark):
        table_format.check(location)
        listing = table_format.list_files(location)
        if not len(listing):
            raise MetaIndexError(f"{location.uri} has no data files to index")
        data_format = table_format.reading(listing, listing.files, data_format)
        partitions = schema_mod.infer_partition_types(listing)
        _reject_partition_columns(indexes, partitions)
        if data_format.needs_spark:  # the schema Spark reads (recorded with the options)
            executor = _spark_reader(executor)
            probe, formats = executor.read_schema(location, formats, partitions)
            data_format = formats.data_format()  # the completed options: the ones collected with
        else:
            probe = _probe_schema(
                location, listing, [ix.column for ix in indexes], decryption_properties, data_format
            )
        indexes, column_types = resolve_indexes(indexes, probe, partitions)
        keys = index_keys or {}
        defs = [IndexDef(ix.name, ix.cols, ix.params, keys.get(ix.column)) for ix in indexes]
        collected = collect(
            location,
            table_store,
            listing.files,
            defs,
            indexes,
            column_types,
            partitions,
            encryption=encryption,
            executor=executor,
            progress=progress,
            footer_statistics=footer_statistics,
            decryption_properties=decryption_properties,
            formats=formats,
            data_format=data_format,
        )
        data_schema = schema_mod.unify([probe, *collected.schemas])
        table_store.create(
            defs,
            {**schema_mod.record(data_schema, partitions), **formats.to_record()},
            encryption=encryption,
        )
        version = table_store.commit(
            0,
            add_parts=collected.parts,
            operation="build",
            details=details(
                collected, data_schema, partitions, listing.files, **table_state(listing)
            ),
        )
        return BuildResult(
            "SUCCESS",
            version,
            len(collected.indexed),
            0,
            dict(collected.failed),
            collected.footer_minmax,
            collected.scanned_minmax,
            time.monotonic() - started,
        )
