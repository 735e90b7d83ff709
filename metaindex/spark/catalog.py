"""Resolve the ``table`` argument of :class:`metaindex.spark.MetaIndex`: a path or URI, or a
catalog table name.

* ``os.PathLike``, or a str with ``/``, ``\\`` or ``://`` in it: a directory of Parquet files.
* ``parquet.`<path>``` (Spark's path-based table syntax): that path.
* Otherwise a table name (``t``, ``db.t``, ``spark_catalog.db.t``, backquoted parts allowed),
  looked up in the session catalog: its location and partition columns come from
  ``spark.catalog.getTable`` and ``DESCRIBE TABLE EXTENDED``, which work under classic PySpark
  and Spark Connect alike (no JVM access). A bare name that is no table but is an existing
  local directory is taken as that directory.

Only Parquet tables are indexed: data source tables with provider ``parquet`` and Hive tables
whose input format is Parquet. Views (permanent or temporary) and tables of other formats
(Delta, Iceberg, JSON, ...) are refused — Delta and Iceberg keep files of old versions in
their directories, so a directory listing is not their set of live files.

Partitions with custom locations outside the table directory (``ALTER TABLE ... ADD PARTITION
... LOCATION``) are not listed, so their files are never indexed — and never skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from metaindex.errors import MetaIndexError, UnsupportedFeatureError

__all__ = ["ResolvedTable", "TableNotFoundError", "resolve_table", "location_to_path"]

_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_NAME = re.compile(rf"^{_PART}(?:\.{_PART})*$")
_PATH_TABLE = re.compile(r"^parquet\.`(.+)`$", re.IGNORECASE | re.DOTALL)


class TableNotFoundError(MetaIndexError, FileNotFoundError):
    """No catalog table of that name and no directory at that path."""


@dataclass(frozen=True)
class ResolvedTable:
    """Where a table's files are.

    Attributes:
        location: the table root for the core API: a local path or a URI.
        name: the catalog name as given (None for a path).
        qualified: ``catalog.db.table`` from the catalog (None for a path).
        partition_columns: the catalog's partition columns (``()`` for a path: the core reads
            them from ``key=value`` directories).
        provider: ``parquet`` or ``hive`` (None for a path).
    """

    location: str
    name: str | None = None
    qualified: str | None = None
    partition_columns: tuple = ()
    provider: str | None = None


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


def resolve_table(spark, table) -> ResolvedTable:
    """Resolve ``table`` (see the module docstring).

    Raises:
        TypeError: ``table`` is not a str or os.PathLike.
        TableNotFoundError: no such catalog table (and no such directory).
        UnsupportedFeatureError: a view, or a table that is not stored as Parquet.
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
    return _from_catalog(spark, table)


def _from_catalog(spark, name: str) -> ResolvedTable:
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
    if provider == "hive":
        if "parquet" not in details.get("InputFormat", "").lower():
            raise UnsupportedFeatureError(
                f"{name!r} is a Hive table stored as {details.get('InputFormat') or 'unknown'}"
                ": metaindex indexes Parquet tables only"
            )
    elif provider != "parquet":
        raise UnsupportedFeatureError(
            f"{name!r} is a {provider or 'non-file'} table: metaindex indexes Parquet tables "
            "only (Delta and Iceberg tables keep files of older versions in their directory)"
        )
    location = details.get("Location")
    if not location:
        raise UnsupportedFeatureError(f"{name!r} has no location in the catalog")
    parts = [p for p in (info.catalog, *(info.namespace or ()), info.name) if p]
    return ResolvedTable(
        location_to_path(location),
        name,
        ".".join(parts),
        tuple(details.get("# partition columns", ())),
        provider,
    )


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
