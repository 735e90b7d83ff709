"""Resolve the ``table`` argument of :class:`metaindex.spark.MetaIndex`: a path or URI, or a
catalog table name.

* ``os.PathLike``, or a str with ``/``, ``\\`` or ``://`` in it: a directory (of Parquet files
  unless ``format=`` says otherwise; a Delta table when it holds ``_delta_log/``).
* ``parquet.`<path>``` (Spark's path-based table syntax): that path.
* Otherwise a table name (``t``, ``db.t``, ``spark_catalog.db.t``, backquoted parts allowed),
  looked up in the session catalog: its location, provider, reader options and partition
  columns come from ``spark.catalog.getTable``, ``DESCRIBE TABLE EXTENDED`` (and its ``AS
  JSON`` form where Spark has it, for the exact reader options) and ``spark.table(name)``'s
  schema, which work under classic PySpark and Spark Connect alike (no JVM access). A bare name
  that is no table but is an existing local directory is taken as that directory.

Which catalog tables are indexed, and how (:class:`ResolvedTable`: ``data_format`` and
``options`` are what ``MetaIndex`` records, so the index's formats equal the ones Spark reads
the table with and the Spark rule's format and options check matches ``spark.table(name)``):

* ``parquet`` data source tables, and Hive tables whose input format is Parquet: Parquet.
* ``csv``, ``json``, ``orc`` data source tables (``CREATE TABLE ... USING csv OPTIONS (...)``,
  external or managed): that format, with the table's OPTIONS (DESCRIBE's "Storage
  Properties") and its data schema (``spark.table(name)``'s, partition columns left out) as
  the reader's ``schema`` option. Hive tables stored as ORC (which Spark reads with its own
  ORC source, ``spark.sql.hive.convertMetastoreOrc``): ``orc``, with the serde properties.
* ``delta``: the table's location; the core reads the files of the snapshot from its
  ``_delta_log`` (:mod:`metaindex.formats.delta`), and the partition columns come from the log,
  not the catalog. Works with delta-spark's ``DeltaCatalog`` as ``spark_catalog``.

Refused with :class:`~metaindex.errors.UnsupportedFeatureError` naming why: views (permanent or
temporary); Hive text tables (``LazySimpleSerDe``: Spark reads them through Hive's SerDe, whose
delimited-text parsing no Spark file source reproduces and which the Spark rule never sees)
and Hive tables of other storage formats (Avro, RCFile, SequenceFile); tables of other
providers (Iceberg, Hudi, JDBC, ...: Iceberg and Hudi keep files of older versions in their
directory, so a listing is not their set of live files); a table whose reader options Spark
prints redacted (a credential among the OPTIONS).

Partitions with custom locations outside the table directory (``ALTER TABLE ... ADD PARTITION
... LOCATION``) are not listed, so their files are never indexed — and never skipped.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from metaindex.errors import MetaIndexError, UnsupportedFeatureError
from metaindex.formats.sparkread import SCHEMA_OPTION

__all__ = [
    "ResolvedTable",
    "TableNotFoundError",
    "location_to_path",
    "parse_storage_properties",
    "resolve_table",
    "table_data_format",
]

_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_NAME = re.compile(rf"^{_PART}(?:\.{_PART})*$")
_PATH_TABLE = re.compile(r"^parquet\.`(.+)`$", re.IGNORECASE | re.DOTALL)


class TableNotFoundError(MetaIndexError, FileNotFoundError):
    """No catalog table of that name and no directory at that path."""


@dataclass(frozen=True)
class ResolvedTable:
    """Where a table's files are, and how Spark reads them.

    Attributes:
        location: the table root for the core API: a local path or a URI.
        name: the catalog name as given (None for a path).
        qualified: ``catalog.db.table`` from the catalog (None for a path).
        partition_columns: the catalog's partition columns (a Delta table's: its log's; ``()``
            for a path: the core reads them from ``key=value`` directories).
        provider: ``parquet``, ``csv``, ``json``, ``orc``, ``delta`` or ``hive`` (None for a
            path).
        data_format: the data format the files are read with (``parquet``, ``csv``, ``json``,
            ``orc``; None for a path: the caller's ``format=``).
        options: the reader options Spark reads the table with (the table's OPTIONS, and for
            CSV/JSON/ORC its data schema as Spark's JSON under ``schema``).
    """

    location: str
    name: str | None = None
    qualified: str | None = None
    partition_columns: tuple = ()
    provider: str | None = None
    data_format: str | None = None
    options: dict = field(default_factory=dict)


def location_to_path(location: str) -> str:
    """A catalog location as the core takes it: ``file:`` URIs become local paths (Spark prints
    them decoded, so nothing is unquoted); other URIs stay as they are."""
    if location.startswith("file:"):
        rest = location[len("file:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):  # file://host/path: the host is local by definition
                rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return rest or "/"
    return location


def _is_path(table: str) -> bool:
    return "/" in table or "\\" in table or "://" in table


def resolve_table(spark, table, storage_options=None) -> ResolvedTable:
    """Resolve ``table`` (see the module docstring); ``storage_options`` reach a Delta
    table's log on an object store.

    Raises:
        TypeError: ``table`` is not a str or os.PathLike.
        TableNotFoundError: no such catalog table (and no such directory).
        UnsupportedFeatureError: a view, or a table of a format or provider that is not
            indexed (see the module docstring).
        DeltaLogError: (a Delta table) a log that cannot give the snapshot.
    """
    if isinstance(table, os.PathLike):
        return ResolvedTable(os.fspath(table))
    if not isinstance(table, str) or not table.strip():
        raise TypeError(
            f"table must be a path, a URI or a catalog table name (a non-empty "
            f"str or os.PathLike), not {table!r}"
        )
    table = table.strip()
    found = _PATH_TABLE.match(table)
    if found:
        return ResolvedTable(location_to_path(found.group(1)))
    if _is_path(table):
        return ResolvedTable(table)
    if not _NAME.match(table):
        raise TypeError(
            f"{table!r} is neither a path nor a table name (name parts are "
            "identifiers or `backquoted`, joined by '.')"
        )
    return _from_catalog(spark, table, storage_options)


def _from_catalog(spark, name: str, storage_options=None) -> ResolvedTable:
    from pyspark.errors import AnalysisException

    try:
        info = spark.catalog.getTable(name)
    except AnalysisException as exc:
        if os.path.isdir(name):
            return ResolvedTable(name)
        raise TableNotFoundError(
            f"table {name!r} not found in the catalog, and no directory "
            f"of that name exists ({_first_line(exc)})"
        ) from None
    kind = (info.tableType or "").upper()
    if info.isTemporary or kind in ("VIEW", "TEMPORARY", "MATERIALIZED_VIEW"):
        raise UnsupportedFeatureError(
            f"{name!r} is a {'temporary ' if info.isTemporary else ''}view: index the table(s) "
            "it reads instead (queries through the view skip files of indexed tables)"
        )
    details = _describe(spark, name)
    provider = details.get("Provider", "").lower()
    data_format = table_data_format(name, provider, details)
    location = details.get("Location")
    if not location:
        raise UnsupportedFeatureError(f"{name!r} has no location in the catalog")
    location = location_to_path(location)
    parts = [p for p in (info.catalog, *(info.namespace or ()), info.name) if p]
    partitions = tuple(details.get("# partition columns", ()))
    options: dict = {}
    if provider == "delta":
        partitions = _delta_partition_columns(location, storage_options)
    elif data_format != "parquet":
        options = _reader_options(spark, name, details)
        options[SCHEMA_OPTION] = _data_schema(spark, name, partitions)
    return ResolvedTable(
        location, name, ".".join(parts), partitions, provider, data_format, options
    )


_SPARK_READ = ("csv", "json", "orc")
_REDACTED = "*********(redacted)"


def table_data_format(name: str, provider: str, details: dict) -> str:
    """The data format a catalog table's files are indexed with, from its provider and (Hive
    tables) its DESCRIBE rows ``InputFormat`` and ``Serde Library``.

    Raises:
        UnsupportedFeatureError: a provider or Hive storage format that is not indexed, with
            the reason (see the module docstring).
    """
    if provider in ("parquet", *_SPARK_READ):
        return provider
    if provider == "delta":
        return "parquet"
    if provider == "hive":
        stored = details.get("InputFormat", "")
        serde = details.get("Serde Library", "")
        if "parquet" in stored.lower():
            return "parquet"
        if "orc" in stored.lower():
            return "orc"
        if "lazysimpleserde" in serde.lower() or "textinputformat" in stored.lower():
            raise UnsupportedFeatureError(
                f"{name!r} is a Hive text table ({serde or stored}): Spark reads it through "
                "Hive's LazySimpleSerDe, whose delimited-text parsing (field, collection and "
                "map delimiters, \\N nulls, escapes) no Spark file source reproduces, and "
                "its scans are Hive scans the skipping rule never sees; store it as Parquet "
                "or ORC, or define it with USING csv"
            )
        raise UnsupportedFeatureError(
            f"{name!r} is a Hive table stored as {stored or 'unknown'}: metaindex indexes Hive "
            "tables stored as Parquet or ORC"
        )
    raise UnsupportedFeatureError(
        f"{name!r} is a {provider or 'non-file'} table: metaindex indexes Parquet, CSV, JSON, "
        "ORC and Delta tables (Iceberg and Hudi tables keep files of older versions in their "
        "directory, so a listing is not their set of live files)"
    )


def _reader_options(spark, name: str, details: dict) -> dict:
    """The table's OPTIONS (its storage properties) as Spark hands them to the reader: from
    ``DESCRIBE TABLE EXTENDED ... AS JSON`` (Spark 4), else parsed from DESCRIBE's
    ``Storage Properties`` row, ``[k1=v1, k2=v2]`` (a value holding ``", k="`` cannot be told
    apart there: the options recorded then differ from the scan's, so the index is not used —
    never a wrong skip). ``path`` (the location) is left out.

    Raises:
        UnsupportedFeatureError: Spark prints a value redacted (a credential).
    """
    from pyspark.errors import AnalysisException, ParseException

    options = None
    try:
        row = spark.sql(f"DESCRIBE TABLE EXTENDED {name} AS JSON").collect()[0]
        found = json.loads(row[0]).get("storage_properties")
        if isinstance(found, dict):
            options = {str(k): str(v) for k, v in found.items()}
        else:
            options = {}
    except (AnalysisException, ParseException, ValueError, IndexError):
        options = None  # Spark 3.5 has no AS JSON
    if options is None:
        options = parse_storage_properties(details.get("Storage Properties", ""))
    options = {k: v for k, v in options.items() if k.lower() != "path"}
    hidden = sorted(k for k, v in options.items() if v == _REDACTED)
    if hidden:
        raise UnsupportedFeatureError(
            f"{name!r}: Spark shows the reader option(s) {hidden} redacted, so the index "
            "cannot read the table as Spark does; index the location with "
            "MetaIndex(spark, path, format=..., options=...)"
        )
    return options


def parse_storage_properties(text: str) -> dict:
    """DESCRIBE's ``Storage Properties`` value, ``[k1=v1, k2=v2]``, as a dict (a piece without
    ``=`` continues the previous value: ``sep=,`` prints as ``sep=,, next=...``)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text:
        return {}
    pairs: list = []
    for piece in text.split(", "):
        if "=" in piece or not pairs:
            key, _, value = piece.partition("=")
            pairs.append([key, value])
        else:
            pairs[-1][1] += ", " + piece
    return dict(pairs)


def _data_schema(spark, name: str, partitions: tuple) -> str:
    """The table's data schema (its columns less the partition columns) as Spark's JSON:
    the schema a scan of the table reads its files with."""
    from pyspark.sql.types import StructType

    parts = {p.lower() for p in partitions}
    schema = spark.table(name).schema
    return StructType([f for f in schema.fields if f.name.lower() not in parts]).json()


def _delta_partition_columns(location: str, storage_options) -> tuple:
    """A Delta table's partition columns, from its log (the catalog may hold none, or stale
    ones)."""
    from metaindex.delta import DeltaLog

    return tuple(DeltaLog(location, storage_options=storage_options).snapshot().partition_columns)


def _describe(spark, name: str) -> dict:
    """``DESCRIBE TABLE EXTENDED``'s detail rows as {name: value}, plus the partition columns
    under ``"# partition columns"``."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    out: dict = {}
    partitions = []
    section = None
    for row in rows:
        key = (row[0] or "").strip()
        value = (row[1] or "").strip() if row[1] is not None else ""
        if key.startswith("#"):
            if key == "# Partition Information":
                section = "partitions"
            elif key == "# Detailed Table Information":
                section = "details"
            elif key != "# col_name":
                section = None
            continue
        if not key:
            if section == "partitions":
                section = None
            continue
        if section == "partitions":
            partitions.append(key)
        elif section == "details":
            out.setdefault(key, value)
    out["# partition columns"] = partitions
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
