"""xskipper's stores in the engine: use one for pruning as it is, or upgrade it to metaindex's
format (``MetaIndex.refresh`` on such a table, ``metaindex upgrade``).

:func:`open_snapshot` lists the table, reads its data schema from the first readable file's
footer and returns an :class:`~metaindex.store.xskipper_snapshot.XskipperSnapshot` that
``metaindex.engine.prune.PruneContext`` takes like any snapshot.

:func:`upgrade` writes a metaindex store from an xskipper one, as xskipper upgrades older
versions on refresh: every entry whose file is still there with the same path and mtime
(xskipper's identity) is carried over with its metadata, without reading the file's data.
Files that are new or changed since, or whose entry was not understood, are then indexed by
the ordinary refresh. Each index keeps its kind, columns, parameters and key label (an
xskipper bloom filter stays Spark's sketch filter: ``sketchbloom``). The xskipper store is
left as it was.

The table's data format is not in an xskipper store (xskipper took it from the
``DataFrameReader`` given to ``build``), so the upgrade records the one its caller names
(``formats``; default: Parquet), never a guess. For Parquet the footer of each carried file
is read (its row count, footer fingerprint and the writer's rebase modes, which xskipper did
not record); a Parquet upgrade over files that do not read as Parquet raises
:class:`~metaindex.errors.DecodeError` saying how to name the format. A CSV/JSON/ORC upgrade
needs an executor that reads with Spark (else
:class:`~metaindex.errors.UnsupportedFeatureError`, as for a build): the schema Spark reads
is recorded with the reader options (given a ``schema`` option Spark reads no file for it),
and the carried entries open no file at all: their row count and footer fingerprint are
unknown (null), which every reader of them takes as unknown (``describe`` shows no row
total, ``effectiveness`` weighs such a file as an average one).
"""

from __future__ import annotations

import time

import pyarrow as pa

from metaindex.engine import calendar
from metaindex.engine import schema as schema_mod
from metaindex.engine.build import BuildResult, _spark_reader
from metaindex.engine.executors import default_executor
from metaindex.engine.listing import list_files, refuse_table_formats
from metaindex.errors import DecodeError, MetaIndexError, SchemaError
from metaindex.formats import FormatSpec
from metaindex.parquet import ParquetFile
from metaindex.store import (
    OBJ_DATETIME_REBASE,
    OBJ_FOOTER_CRC,
    OBJ_FOOTER_LEN,
    OBJ_INT96_REBASE,
    OBJ_NAME,
    OBJ_ROWS,
)
from metaindex.store.xskipper_format import XskipperStore, read_store
from metaindex.store.xskipper_snapshot import XskipperSnapshot, entries
from metaindex.threads import run_all

__all__ = ["open_snapshot", "upgrade", "listing_table", "data_schema"]


def listing_table(listing) -> pa.Table:
    """A ``Listing`` as the ``path``, ``size``, ``mtime`` table the xskipper view matches."""
    return pa.table(
        {
            "path": pa.array(listing.paths, pa.string()),
            "size": pa.array(listing.sizes, pa.int64()),
            "mtime": pa.array(listing.mtimes, pa.int64()),
        }
    )


def data_schema(location, listing, decryption_properties=None) -> pa.Schema:
    """The data schema of the table: the first file whose footer reads."""
    first_error = None
    for f in listing:
        try:
            with ParquetFile(
                location.full_path(f.path),
                filesystem=location.filesystem,
                decryption_properties=decryption_properties,
            ) as pf:
                return schema_mod.file_schema(pf)
        except (MetaIndexError, OSError) as exc:
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    raise SchemaError(f"{location.uri} has no data files")


def open_snapshot(
    location,
    store_path: str,
    *,
    key_access=None,
    storage_options=None,
    decryption_properties=None,
    store: XskipperStore | None = None,
    schema: pa.Schema | None = None,
):
    """The xskipper store at ``store_path`` as a snapshot of ``location``'s current files.

    Args:
        schema: the table's data schema as Spark reads it: required for a table of CSV, JSON
            or ORC files (xskipper indexed them through a ``DataFrameReader`` whose schema
            and options are not in its store); None: read from the first Parquet footer.

    Raises:
        MetaIndexError: no store there, or no data files; no ``schema`` for a table whose
            files are not Parquet (``DecodeError``).
        UnsupportedVersionError: a store newer than version 4.
    """
    store = store or read_store(store_path, key_access=key_access, storage_options=storage_options)
    listing = list_files(location)
    if schema is None:
        schema = data_schema(location, listing, decryption_properties)
    return XskipperSnapshot(
        store,
        location.uri,
        listing_table(listing),
        schema,
        schema_mod.infer_partition_types(listing),
    )


def _footer_facts(location, name: str, decryption_properties) -> tuple | None:
    """(rows, footer length, footer CRC, datetime mode, INT96 mode) of one file, or None."""
    try:
        with ParquetFile(
            location.full_path(name),
            filesystem=location.filesystem,
            decryption_properties=decryption_properties,
        ) as pf:
            return (
                pf.num_rows,
                *pf.footer_fingerprint,
                *calendar.writer_modes(pf.key_value_metadata),
            )
    except (MetaIndexError, OSError):
        return None


def _with_footer_facts(location, carried: pa.Table, decryption_properties) -> pa.Table:
    """The carried entries of Parquet files with their footers' facts (row count, footer
    length and CRC, the writer's rebase modes); an entry whose footer does not read is left
    out (the refresh indexes its file)."""
    facts = run_all(
        [
            (_footer_facts, location, name, decryption_properties)
            for name in carried.column(OBJ_NAME).to_pylist()
        ],
        True,
    )
    carried = carried.filter(pa.array([f is not None for f in facts], pa.bool_()))
    facts = [f for f in facts if f is not None]
    for i, name in enumerate(
        (OBJ_ROWS, OBJ_FOOTER_LEN, OBJ_FOOTER_CRC, OBJ_DATETIME_REBASE, OBJ_INT96_REBASE)
    ):
        column = pa.array([f[i] for f in facts], carried.schema.field(name).type)
        carried = carried.set_column(carried.schema.get_field_index(name), name, column)
    return carried


def upgrade(
    location,
    table_store,
    store_path: str,
    *,
    encryption=None,
    key_access=None,
    storage_options=None,
    decryption_properties=None,
    executor=None,
    progress=None,
    footer_statistics: bool = True,
    formats: FormatSpec | None = None,
) -> BuildResult:
    """Write ``table_store`` (which must not hold an index) from the xskipper store at
    ``store_path``, then index what it did not cover (``refresh``).

    Args:
        encryption: the new store's ``EncryptionLabels`` when the xskipper store is plaintext
            (an encrypted one keeps its own: footer key label and footer mode; each index
            keeps its key label).
        key_access: reaches the KMS holding the xskipper store's keys (and the new store's).
        formats: the table's formats, recorded with the index (default: a directory of
            Parquet files); see the module docstring for CSV, JSON and ORC (whose carried
            entries read no data file).

    Raises:
        MetaIndexError: the table is already indexed by metaindex; no xskipper store there.
        DecodeError: a Parquet upgrade (the default) over files none of which reads as
            Parquet (a CSV/JSON/ORC table: name its format).
        UnsupportedFeatureError: a CSV/JSON/ORC table without an executor reading with Spark.
        UnsupportedVersionError: an xskipper store newer than version 4.
    """
    from metaindex.engine.refresh import refresh

    started = time.monotonic()
    if table_store.exists():
        raise MetaIndexError(
            f"{location.uri} is already indexed by metaindex (store {table_store.path})"
        )
    refuse_table_formats(location)
    store = read_store(store_path, key_access=key_access, storage_options=storage_options)
    defs = store.index_defs
    if not defs:
        raise MetaIndexError(
            f"{store_path}: no index of this xskipper store is one metaindex "
            f"reads ({', '.join(sorted({i.name for i in store.indexes}))})"
        )
    formats = formats or FormatSpec()
    listing = list_files(location)
    partitions = schema_mod.infer_partition_types(listing)
    carried = entries(store, location.uri, listing_table(listing))
    if formats.data_format().needs_spark:  # the schema Spark reads; no footer: rows unknown
        executor = _spark_reader(executor or default_executor())
        schema, formats = executor.read_schema(location, formats, partitions)
    else:
        try:
            schema = data_schema(location, listing, decryption_properties)
        except DecodeError as exc:
            raise DecodeError(
                f"{location.uri}: no data file reads as {formats.data} ({exc}); xskipper's "
                "store does not record the table's format: to upgrade the store of a CSV, "
                "JSON or ORC table, name it (MetaIndex(spark, table, format=..., "
                "options=...).upgrade(...), or the xskipper face's refreshIndex(reader))"
            ) from exc
        carried = _with_footer_facts(location, carried, decryption_properties)
    for col in store.partitions:
        name = f"virtual_{col}"
        carried = carried.set_column(
            carried.schema.get_field_index(name), name, carried.column(name).cast(pa.string())
        )
    labels = store.encryption if store.encryption is not None else encryption
    parts = table_store.write_parts(carried, defs, encryption=labels) if carried.num_rows else []
    table_store.create(
        defs, {**schema_mod.record(schema, partitions), **formats.to_record()}, encryption=labels
    )
    version = table_store.commit(
        0,
        add_parts=parts,
        operation="build",
        details={
            **schema_mod.record(schema, partitions),
            "files_indexed": carried.num_rows,
            "upgraded_from": {
                "xskipper_version": store.version,
                "store": store.path,
                "entries": store.objects.num_rows,
                "carried": carried.num_rows,
            },
        },
    )
    result = refresh(
        location,
        table_store,
        executor=executor,
        progress=progress,
        footer_statistics=footer_statistics,
        decryption_properties=decryption_properties,
    )
    return BuildResult(
        "SUCCESS",
        max(version, result.version),
        carried.num_rows + result.entries_added,
        result.entries_removed,
        dict(result.failed),
        result.footer_minmax,
        result.scanned_minmax,
        time.monotonic() - started,
    )
