"""The ``csv``, ``json`` and ``orc`` data formats: files only Spark's own readers read as Spark
queries see them.

A CSV or JSON value is whatever Spark's parser makes of the text under the reader options
(``schema``, ``header``, ``sep``, ``nullValue``, ``dateFormat``, ``timestampFormat``,
``multiLine``, the time zone, ...); a second parser would disagree on some value, and an index
of values Spark does not read skips files that hold matching rows. So these formats are never
opened here (:meth:`SparkReadFormat.open` raises): their files are collected by Spark jobs
that read them with Spark's reader and those options (``metaindex.spark.reading``), and a
build without Spark raises :class:`~metaindex.errors.UnsupportedFeatureError`. ORC is read
the same way (a core build through ``pyarrow.orc`` is not proven to agree with Spark's ORC
reader on every type, so it is refused too).

The options are Spark's reader options as strings, recorded with the index
(:class:`~metaindex.formats.FormatSpec`). Two are set by the Spark face when the index is
defined: ``schema`` (the table's data schema as Spark's JSON, the one given or the one Spark
inferred, so that refresh reads new files the same way) and, when that schema holds a
TIMESTAMP, ``timeZone`` (the session's, which parses timestamps written without an offset).
A scan uses the index only when it reads the table the same way (:func:`read_mismatch`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa

from metaindex.errors import UnsupportedFeatureError
from metaindex.formats.base import DataFormat, FileReader

__all__ = [
    "NEUTRAL_OPTIONS",
    "SCHEMA_OPTION",
    "SPARK_BUILD_MESSAGE",
    "SPARK_READ_FORMATS",
    "TIME_ZONE_OPTION",
    "ArrowTableReader",
    "ArrowTablesFormat",
    "CsvFormat",
    "JsonFormat",
    "OrcFormat",
    "SparkReadFormat",
    "read_mismatch",
    "schema_shape",
    "value_options",
]

SPARK_BUILD_MESSAGE = (
    "CSV/JSON/ORC indexes are built with Spark: use MetaIndex(spark, ...) "
    "(metaindex.spark), whose Spark jobs read the files with Spark's own "
    "reader and the index's reader options"
)
SCHEMA_OPTION = "schema"
"""The recorded option holding the table's data schema (Spark's StructType JSON)."""
TIME_ZONE_OPTION = "timeZone"
"""The reader option (and session conf ``spark.sql.session.timeZone``) that parses
timestamps written without an offset."""
NEUTRAL_OPTIONS = frozenset(
    {"path", "paths", "basepath", "inferschema", "samplingratio", "mergeschema", "prefersdecimal"}
)
"""Reader options (lower case) that change no value read once the schema is fixed: where the
files are, and how a schema is inferred (the schema itself is compared)."""


class SparkReadFormat(DataFormat):
    """A format whose files are read by Spark's reader of the same name (any Spark reader
    option is taken); :attr:`needs_spark`."""

    needs_spark = True
    known_options = None

    def open(self, path: str, filesystem, *, decryption_properties=None) -> FileReader:
        raise UnsupportedFeatureError(SPARK_BUILD_MESSAGE)

    def fingerprint(self, path: str, filesystem) -> tuple:
        """None: these files have no metadata region (``refresh(verify=True)`` re-indexes
        every file whose entry has no fingerprint)."""
        return None, None


class CsvFormat(SparkReadFormat):
    """CSV files, read by Spark's ``csv`` reader."""

    name = "csv"


class JsonFormat(SparkReadFormat):
    """JSON files (one document per line, or ``multiLine``), read by Spark's ``json``
    reader."""

    name = "json"


class OrcFormat(SparkReadFormat):
    """ORC files, read by Spark's ``orc`` reader."""

    name = "orc"


class ArrowTableReader(FileReader):
    """A file's columns already read (by Spark), as Arrow record batches: one row group per
    batch."""

    def __init__(self, schema: pa.Schema, batches: list):
        self._schema = schema
        self._batches = batches
        self.num_rows = sum(b.num_rows for b in batches)
        self.num_row_groups = max(1, len(batches))

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def read_row_groups(
        self, groups: range, columns: list, *, use_threads: bool = False
    ) -> pa.Table:
        chosen = self._batches[groups.start : groups.stop]
        table = (
            pa.Table.from_batches(chosen, self._schema) if chosen else self._schema.empty_table()
        )
        return table.select(columns)


class ArrowTablesFormat(DataFormat):
    """Not registered: the files of one Spark collection task, already read, by path
    (``{path: ArrowTableReader}``), so the engine's collection task runs on them unchanged."""

    name = "arrow-tables"

    def __init__(self, readers: Mapping[str, ArrowTableReader]):
        super().__init__()
        self.readers = dict(readers)

    def open(self, path: str, filesystem, *, decryption_properties=None) -> FileReader:
        return self.readers[path]


def value_options(options: Mapping[str, str]) -> dict:
    """The reader options that change values: keys lower-cased (Spark's options are
    case-insensitive), ``true``/``false`` lower-cased, without :data:`NEUTRAL_OPTIONS`,
    ``schema`` and ``timeZone`` (compared on their own)."""
    out = {}
    for key, value in options.items():
        k = key.lower()
        if k in NEUTRAL_OPTIONS or k in (SCHEMA_OPTION, TIME_ZONE_OPTION.lower()):
            continue
        out[k] = value.lower() if value.lower() in ("true", "false") else value
    return out


def schema_shape(schema_json: str):
    """A Spark schema (StructType JSON) without nullability and field metadata, for
    comparison; None when it is not such JSON."""

    def shape(t):
        if isinstance(t, str):
            return t
        if not isinstance(t, dict):
            return None
        kind = t.get("type")
        if kind == "struct":
            return (
                "struct",
                tuple((f.get("name"), shape(f.get("type"))) for f in t.get("fields", ())),
            )
        if kind == "array":
            return ("array", shape(t.get("elementType")))
        if kind == "map":
            return ("map", shape(t.get("keyType")), shape(t.get("valueType")))
        return json.dumps(t, sort_keys=True)

    try:
        return shape(json.loads(schema_json))
    except (TypeError, ValueError):
        return None


def _time_zone(options: Mapping[str, str], session_time_zone: str | None) -> str | None:
    for key, value in options.items():
        if key.lower() == TIME_ZONE_OPTION.lower():
            return value
    return session_time_zone


def read_mismatch(
    recorded_format: str,
    recorded_options: Mapping[str, str],
    scan_format: str,
    scan_options: Mapping[str, str],
    scan_schema: str | None,
    session_time_zone: str | None,
) -> str | None:
    """Why a scan (``scan_format``, its reader ``scan_options`` and data schema as Spark's
    JSON) does not read the table the way its index was built (``recorded_*``), so that the
    index's values are not the ones it reads; None when it does. Parquet is read by its
    footer's types whatever the options; the others must agree on the format, the schema,
    every option that changes a value (:func:`value_options`) and the time zone when one
    was recorded (or is set on the scan)."""
    if scan_format != recorded_format:
        return (
            f"the index was built for {recorded_format} files, this scan reads them as "
            f"{scan_format}"
        )
    if recorded_format == "parquet":
        return None
    recorded_schema = recorded_options.get(SCHEMA_OPTION)
    if (
        scan_schema is not None
        and recorded_schema is not None
        and schema_shape(scan_schema) != schema_shape(recorded_schema)
    ):
        return (
            "this scan's data schema differs from the one the index was built with "
            "(describe() shows it in format_options)"
        )
    mine, theirs = value_options(recorded_options), value_options(scan_options)
    if mine != theirs:
        keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        return (
            f"this scan's reader options differ from the index's on {keys} (index: "
            f"{ {k: mine.get(k) for k in keys} }, scan: "
            f"{ {k: theirs.get(k) for k in keys} })"
        )
    recorded_tz = _time_zone(recorded_options, None)
    scan_tz = _time_zone(scan_options, session_time_zone)
    explicit = any(k.lower() == TIME_ZONE_OPTION.lower() for k in scan_options)
    if (recorded_tz is not None or explicit) and recorded_tz != scan_tz:
        return (
            f"the index parsed timestamps in time zone {recorded_tz or 'of the session'}"
            f", this scan in {scan_tz}"
        )
    return None


SPARK_READ_FORMATS: tuple = (CsvFormat, JsonFormat, OrcFormat)
"""The data formats registered from this module."""
