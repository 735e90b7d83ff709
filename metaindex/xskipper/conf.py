"""xskipper's ``io.xskipper.*`` configuration, mapped onto metaindex's.

xskipper keeps one JVM-wide configuration (``Xskipper.setConf``) and per-instance overrides
(``xskipper.setParams``). Here the JVM-wide one is process-wide (:data:`_conf`), and every key
is checked when it is set: a key is either mapped onto a ``metaindex.*`` setting, accepted
because metaindex already behaves the way it asks, accepted with a :class:`XskipperConfWarning`
(a tuning knob of xskipper's own engine that metaindex has no use for), or refused with an
``UnsupportedFeatureError`` naming the key. ``spark.ibm.metaindex.*`` (xskipper's legacy
prefix) is read as ``io.xskipper.*``.

The mapped settings reach Spark through the session conf (``metaindex.store``,
``metaindex.encryption.*``) of each session handed to the xskipper face, so queries planned by
the skipping hook find the index the same way.
"""

from __future__ import annotations

import re
import threading
import warnings

from metaindex.errors import MetaIndexError, UnsupportedFeatureError

__all__ = [
    "XskipperConfWarning",
    "KEY_PREFIX",
    "MD_LOCATION",
    "MD_LOCATION_TYPE",
    "FOOTER_KEY",
    "PLAINTEXT_FOOTER",
    "BLOOM_FPP",
    "LOCATION_TYPES",
    "normalize_key",
    "check",
    "set_entries",
    "unset",
    "get",
    "get_all",
    "clear",
    "effective",
    "metaindex_conf",
    "apply_to_session",
    "resolve_store",
    "bloom_fpp",
    "xskipper_store",
]

KEY_PREFIX = "io.xskipper."
_LEGACY_PREFIX = "spark.ibm.metaindex."
MD_LOCATION = "io.xskipper.parquet.mdlocation"
MD_LOCATION_TYPE = "io.xskipper.parquet.mdlocation.type"
FOOTER_KEY = "io.xskipper.parquet.encryption.footer.key"
PLAINTEXT_FOOTER = "io.xskipper.parquet.encryption.plaintext.footer"
BLOOM_FPP = "io.xskipper.index.bloom.fpp"
BLOOM_NDV = "io.xskipper.index.bloom.ndv"
IDENTIFIER_CLASS = "io.xskipper.identifierclass"
EVALUATION = "io.xskipper.evaluation.enabled"

EXPLICIT_BASE_PATH = "EXPLICIT_BASE_PATH_LOCATION"
EXPLICIT = "EXPLICIT_LOCATION"
HIVE_TABLE = "HIVE_TABLE_NAME"
HIVE_DB = "HIVE_DB_NAME"
LOCATION_TYPES = (EXPLICIT_BASE_PATH, EXPLICIT, HIVE_TABLE, HIVE_DB)

_IDENTIFIERS = ("io.xskipper.utils.identifier.Identifier",)
"""Identifier classes whose rule metaindex applies: a table is its URI without a trailing /."""

# Keys that need no counterpart: metaindex already does what they ask.
_INHERENT = {
    "io.xskipper.parquet.filter.dedup": "a metaindex snapshot holds each file once",
    "io.xskipper.parquet.refresh.dedup": "a metaindex snapshot holds each file once",
}

# Tuning knobs of xskipper's engine: accepted (validated), with a warning that they do nothing.
_TUNING = {
    "io.xskipper.timeout": "pruning reads the cached snapshot arrays, no metadata query",
    "io.xskipper.index.parallelism": "builds split files into Spark tasks by defaultParallelism",
    "io.xskipper.index.minchunksize": "builds split files into Spark tasks by defaultParallelism",
    "io.xskipper.index.memoryFraction": "tasks write their own metadata parts",
    "io.xskipper.index.minmax.readoptimized.parquet": (
        "min/max come from footer statistics whenever they are trustworthy, else a scan"
    ),
    "io.xskipper.index.minmax.readoptimized.parquet.parallelism": (
        "builds split files into Spark tasks by defaultParallelism"
    ),
    "io.xskipper.index.minmax.inFilterThreshold": (
        "IN lists up to metaindex.index.IN_LIMIT values are checked value by value"
    ),
    "io.xskipper.parquet.index.chunksize": "each Spark task writes one metadata part",
    "io.xskipper.parquet.maxRecordsPerMetadataFile": "use MetaIndex.compact(target_file_size)",
    "io.xskipper.parquet.maxMetadataFileSize": "use MetaIndex.compact(target_file_size)",
    BLOOM_NDV: "each file's bloom filter is sized for that file's distinct values",
}

_BOOLEAN = {
    PLAINTEXT_FOOTER,
    EVALUATION,
    "io.xskipper.parquet.filter.dedup",
    "io.xskipper.parquet.refresh.dedup",
    "io.xskipper.index.minmax.readoptimized.parquet",
}
_POSITIVE_INT = {
    "io.xskipper.timeout",
    "io.xskipper.index.parallelism",
    "io.xskipper.index.minchunksize",
    "io.xskipper.index.minmax.readoptimized.parquet.parallelism",
    "io.xskipper.index.minmax.inFilterThreshold",
    "io.xskipper.parquet.index.chunksize",
    "io.xskipper.parquet.maxRecordsPerMetadataFile",
    "io.xskipper.parquet.maxMetadataFileSize",
    BLOOM_NDV,
}
_FRACTION = {BLOOM_FPP, "io.xskipper.index.memoryFraction"}

_lock = threading.Lock()
_conf: dict = {}
"""The process-wide (xskipper: JVM-wide) io.xskipper.* configuration."""

_SESSION_KEYS = (
    "metaindex.store",
    "metaindex.encryption.footer.key",
    "metaindex.encryption.plaintext.footer",
)


class XskipperConfWarning(UserWarning):
    """An ``io.xskipper.*`` key was accepted but has no effect in metaindex (it says why)."""


def normalize_key(key) -> str:
    """``key`` with xskipper's legacy ``spark.ibm.metaindex.`` prefix read as ``io.xskipper.``.

    Raises:
        TypeError: not a str.
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"an xskipper configuration key is a non-empty str, not {key!r}")
    if key.startswith(_LEGACY_PREFIX):
        return KEY_PREFIX + key[len(_LEGACY_PREFIX) :]
    return key


_SUPPORTED = frozenset(
    {
        *_INHERENT,
        *_TUNING,
        *_BOOLEAN,
        *_FRACTION,
        MD_LOCATION,
        MD_LOCATION_TYPE,
        FOOTER_KEY,
        IDENTIFIER_CLASS,
    }
)
"""Every io.xskipper.* key :func:`check` accepts (with a value it supports)."""


def check(key, value) -> tuple:
    """``(key, value)`` normalised and validated; warns for keys that have no effect.

    Raises:
        UnsupportedFeatureError: a key metaindex does not support, or a value of a supported
            key asking for a feature it does not have (the message names the key).
        MetaIndexError: a malformed value.
    """
    key = normalize_key(key)
    if value is None:
        raise MetaIndexError(f"{key}: a value is required (use unset to remove a key)")
    value = str(value)
    if key not in _SUPPORTED:
        raise UnsupportedFeatureError(
            f"{key!r} is not an xskipper configuration key metaindex supports; supported: "
            f"{sorted(_SUPPORTED)}"
        )
    text = value.strip()
    if key in _BOOLEAN and text.lower() not in ("true", "false"):
        raise MetaIndexError(f"{key}={value!r}: expected true or false")
    if key in _POSITIVE_INT:
        if not re.fullmatch(r"[0-9]+", text) or int(text) <= 0:
            raise MetaIndexError(f"{key}={value!r}: expected a whole number > 0")
    if key in _FRACTION:
        try:
            number = float(text)
        except ValueError:
            number = -1.0
        if not 0.0 < number < 1.0:
            raise MetaIndexError(f"{key}={value!r}: expected a number between 0 and 1")
    if key == MD_LOCATION_TYPE and text not in LOCATION_TYPES:
        raise MetaIndexError(f"{key}={value!r}: expected one of {list(LOCATION_TYPES)}")
    if key == EVALUATION and text.lower() == "true":
        raise UnsupportedFeatureError(
            f"{key}=true (evaluation mode: compute skipping stats without reading data) is "
            "not supported; run the query, or use MetaIndex(...).core.prune(where) to see "
            "which files a predicate keeps without Spark"
        )
    if key == IDENTIFIER_CLASS and text not in _IDENTIFIERS:
        raise UnsupportedFeatureError(
            f"{key}={value!r} is not supported: metaindex identifies a table by its URI "
            f"without a trailing '/' ({_IDENTIFIERS[0]}'s rule); IBM COS (cos://, Stocator) "
            "paths and custom identifier classes are not"
        )
    if key in _TUNING:
        warnings.warn(
            f"{key} has no effect in metaindex: {_TUNING[key]}", XskipperConfWarning, stacklevel=3
        )
    return key, value


def set_entries(params) -> None:
    """Check every entry of ``params`` first, then set them all (process-wide)."""
    if not hasattr(params, "items"):
        raise TypeError(f"params is a dict of xskipper configuration keys, not {params!r}")
    checked = [check(k, v) for k, v in params.items()]
    with _lock:
        _conf.update(checked)


def unset(key) -> None:
    key = normalize_key(key)
    with _lock:
        _conf.pop(key, None)


def get(key):
    """The value set for ``key``, or None."""
    with _lock:
        return _conf.get(normalize_key(key))


def get_all() -> dict:
    with _lock:
        return dict(_conf)


def clear() -> None:
    with _lock:
        _conf.clear()


def effective(params: dict | None = None) -> dict:
    """The process-wide conf overlaid with an instance's ``setParams`` entries."""
    out = get_all()
    out.update(params or {})
    return out


def bloom_fpp(conf: dict) -> float:
    """The default bloom filter false-positive rate (``io.xskipper.index.bloom.fpp``)."""
    value = conf.get(BLOOM_FPP)
    return 0.01 if value is None else float(value)


def metaindex_conf(conf: dict) -> dict:
    """The ``metaindex.encryption.*`` entries an xskipper conf maps to."""
    out = {}
    if conf.get(FOOTER_KEY):
        out["metaindex.encryption.footer.key"] = conf[FOOTER_KEY].strip()
    if conf.get(PLAINTEXT_FOOTER):
        out["metaindex.encryption.plaintext.footer"] = conf[PLAINTEXT_FOOTER].strip().lower()
    return out


def _session_store(spark, conf: dict) -> str | None:
    """The store every dataset shares under ``conf`` (None: none, or per table)."""
    location = (conf.get(MD_LOCATION) or "").strip()
    kind = conf.get(MD_LOCATION_TYPE, EXPLICIT_BASE_PATH).strip()
    if not location or kind == HIVE_TABLE:
        return None
    if kind == HIVE_DB:
        return _database_location(spark, location)
    return location


def apply_to_session(spark) -> None:
    """Set the ``metaindex.*`` session conf the process-wide xskipper conf maps to (and unset
    the ones it no longer maps to), so the skipping hook of ``spark`` finds indexes the same
    way the xskipper face does."""
    conf = get_all()
    wanted = dict(metaindex_conf(conf))
    store = _session_store(spark, conf)
    if store is not None:
        wanted["metaindex.store"] = store
    with _lock:
        owned = _owned.setdefault(_session_id(spark), set())
        for key in _SESSION_KEYS:
            if key in wanted:
                spark.conf.set(key, wanted[key])
                owned.add(key)
            elif key in owned:
                spark.conf.unset(key)
                owned.discard(key)


_owned: dict = {}
"""{session id: metaindex.* keys this module set in that session's conf}."""


def _session_id(spark) -> str:
    from metaindex.spark.stats import session_key

    return session_key(spark)


def _quote(name: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in name.split("."))


def _catalog_rows(spark, sql: str, what: str) -> list:
    """The rows of a catalog query about ``what`` (a table or database the conf names);
    ``MetaIndexError`` when the catalog has no such object (Spark's AnalysisException)."""
    from pyspark.errors import AnalysisException

    try:
        return spark.sql(sql).collect()
    except AnalysisException as exc:
        raise MetaIndexError(f"{what}: not in the catalog ({str(exc).splitlines()[0]})") from None


def _table_property(spark, table: str) -> str | None:
    """``io.xskipper.parquet.mdlocation`` (or its legacy key) in ``table``'s properties.

    Raises:
        MetaIndexError: no such table.
    """
    for key in (MD_LOCATION, _LEGACY_PREFIX + "parquet.mdlocation"):
        rows = _catalog_rows(
            spark, f"SHOW TBLPROPERTIES {_quote(table)} ('{key}')", f"table {table!r}"
        )
        for row in rows:
            value = row[-1]
            if row[0] == key and value and value.strip() and "does not have property" not in value:
                return value.strip()
    return None


def _database_property(spark, database: str) -> str | None:
    """``io.xskipper.parquet.mdlocation`` (or its legacy key) in ``database``'s properties.

    Raises:
        MetaIndexError: no such database.
    """
    rows = _catalog_rows(
        spark, f"DESCRIBE DATABASE EXTENDED {_quote(database)}", f"database {database!r}"
    )
    text = " ".join(str(r[1]) for r in rows if str(r[0]).strip().lower() == "properties")
    for key in (MD_LOCATION, _LEGACY_PREFIX + "parquet.mdlocation"):
        found = re.search(r"\(" + re.escape(key) + r",([^()]*)\)", text)
        if found and found.group(1).strip():
            return found.group(1).strip()
    return None


def _database_location(spark, database: str) -> str:
    found = _database_property(spark, database)
    if found is None:
        raise MetaIndexError(
            f"{MD_LOCATION_TYPE}={HIVE_DB}: database {database!r} has no "
            f"'{MD_LOCATION}' property (ALTER DATABASE {database} SET "
            f"DBPROPERTIES ('{MD_LOCATION}'='/base/path'))"
        )
    return found


def resolve_store(spark, resolved_table, conf: dict) -> str | None:
    """The store (directory or URI) of one table's index under an xskipper conf.

    For a catalog table: its ``io.xskipper.parquet.mdlocation`` table property, else its
    database's, else the conf. The conf's location by its type: ``EXPLICIT_BASE_PATH_LOCATION``
    and ``EXPLICIT_LOCATION`` name the store directory (the index sits in its own
    ``<table id>/`` under it either way), ``HIVE_DB_NAME`` a database whose property names it,
    ``HIVE_TABLE_NAME`` a table whose property (else its database's) names it. None: no
    location configured (metaindex's default store).

    Args:
        resolved_table: ``metaindex.spark.catalog.resolve_table``'s result.
    """
    if resolved_table.qualified:
        parts = resolved_table.qualified.split(".")
        found = _table_property(spark, ".".join(parts[-2:]))
        if found is None and len(parts) >= 2:
            found = _database_property(spark, parts[-2])
        if found is not None:
            return found
    location = (conf.get(MD_LOCATION) or "").strip()
    kind = conf.get(MD_LOCATION_TYPE, EXPLICIT_BASE_PATH).strip()
    if not location:
        return None
    if kind == HIVE_TABLE:
        found = _table_property(spark, location)
        if found is None:
            database = (
                location.split(".")[0] if "." in location else spark.catalog.currentDatabase()
            )
            return _database_location(spark, database)
        return found
    if kind == HIVE_DB:
        return _database_location(spark, location)
    return location


def xskipper_store(spark, resolved_table, conf: dict, table_uri: str) -> str | None:
    """The directory of the store xskipper itself would use for this table, when one is
    there (None otherwise): where ``io.xskipper.parquet.mdlocation`` points by its type, as
    xskipper resolves it (``ParquetMetadataPath``):

    * ``EXPLICIT_BASE_PATH_LOCATION`` (the default) and ``HIVE_DB_NAME`` (the database
      property's base path): ``<base>/<sha256 hex of the table identifier>``, the identifier
      being the path of the table URI without a trailing ``/``, or for a catalog table also
      the name it was indexed by;
    * ``EXPLICIT_LOCATION``: the location is the store directory itself;
    * ``HIVE_TABLE_NAME`` and a catalog table's own ``mdlocation`` property: the property is
      the store directory itself.

    A candidate counts only when it holds xskipper metadata files
    (``metaindex.store.xskipper_format.is_store``).
    """
    from metaindex.store.xskipper_format import is_store, store_directory, table_identifier

    identifiers = [table_identifier(table_uri)]
    candidates = []
    if resolved_table.qualified:
        parts = resolved_table.qualified.split(".")
        identifiers += [".".join(parts[-2:]), parts[-1]]
        found = _table_property(spark, ".".join(parts[-2:]))
        if found:
            candidates.append(found)
        base = _database_property(spark, parts[-2]) if len(parts) >= 2 else None
        if base:
            candidates += [store_directory(base, i) for i in identifiers]
    location = (conf.get(MD_LOCATION) or "").strip()
    kind = conf.get(MD_LOCATION_TYPE, EXPLICIT_BASE_PATH).strip()
    if location:
        if kind == EXPLICIT:
            candidates.append(location)
        elif kind == HIVE_TABLE:
            found = _table_property(spark, location)
            if found:
                candidates.append(found)
        else:
            base = _database_property(spark, location) if kind == HIVE_DB else location
            if base:
                candidates += [store_directory(base, i) for i in identifiers]
    for candidate in dict.fromkeys(candidates):
        if is_store(candidate):
            return candidate
    return None
