"""The ``parquet`` data format: our own Parquet reader (:mod:`metaindex.parquet`).

A file's schema is the reader's Arrow schema with INT96 columns typed as Spark reads them
(:func:`file_schema`); its columns are read row group by row group; its footer statistics are
offered for min/max (:meth:`ParquetReader.statistics`: the collection decides whether to trust
them); INT96 values are given as Spark reads them (microseconds, rounded down) and their raw
Julian day range for the calendar facts; the writer's calendar rebase modes come from the
footer's key/value metadata (:func:`writer_modes`, see :mod:`metaindex.engine.calendar`); the
footer's length and CRC-32 are the file's fingerprint for ``refresh(verify=True)``.
"""

from __future__ import annotations

import weakref

import numpy as np
import pyarrow as pa

from metaindex.formats.base import DataFormat, FileReader, Statistics
from metaindex.parquet import ParquetFile, footer_fingerprint
from metaindex.parquet.schema import INT96, arrow_for_leaf

__all__ = [
    "ParquetFormat",
    "ParquetReader",
    "file_schema",
    "int96_paths",
    "INT96_TYPE",
    "writer_modes",
    "SPARK_VERSION_KEY",
    "SPARK_LEGACY_DATETIME_KEY",
    "SPARK_LEGACY_INT96_KEY",
]

INT96_TYPE = pa.timestamp("us", tz="UTC")
"""The type of an INT96 column in the table schema: Spark (and DuckDB) read INT96 as
microseconds (the nanoseconds within the microsecond dropped, rounding down) of an instant."""


def file_schema(pf) -> pa.Schema:
    """A data file's Arrow schema as the table schema records it: the reader's
    (``pf.schema_arrow``), with INT96 columns (at any depth in structs) as
    :data:`INT96_TYPE`. Spark reads INT96 as TIMESTAMP (an instant) in microseconds, so a
    ``TIMESTAMP '...'`` literal compares with it exactly; recorded naive, every comparison
    would be widened by a day and value lists and bloom filters could never rule a file out.
    """
    schema = pf.schema_arrow
    paths = int96_paths(pf)
    if not paths:
        return schema
    fields = list(schema)
    for path in paths:
        for k, f in enumerate(fields):
            if f.name == path[0]:
                fields[k] = _retyped(f, path[1:])
    return pa.schema(fields, metadata=schema.metadata)


def int96_paths(pf) -> list:
    """The name paths (tuples) of a file's INT96 leaf columns."""
    elements = list(pf.footer.schema or [])[1:]
    found: list = []

    def walk(i: int, prefix: tuple) -> int:
        e = elements[i]
        path = prefix + (e.name,)
        if not e.num_children:
            if e.type == INT96:
                found.append(path)
            return i + 1
        j = i + 1
        for _ in range(e.num_children):
            if j >= len(elements):
                break
            j = walk(j, path)
        return j

    i = 0
    while i < len(elements):
        i = walk(i, ())
    return found


def _retyped(f: pa.Field, rest: tuple) -> pa.Field:
    if not rest:
        return f.with_type(INT96_TYPE) if pa.types.is_timestamp(f.type) else f
    if not pa.types.is_struct(f.type):
        return f  # INT96 inside a list or map: left as the reader types it
    children = [_retyped(c, rest[1:]) if c.name == rest[0] else c for c in f.type]
    return f.with_type(pa.struct(children))


SPARK_VERSION_KEY = "org.apache.spark.version"
SPARK_LEGACY_DATETIME_KEY = "org.apache.spark.legacyDateTime"
SPARK_LEGACY_INT96_KEY = "org.apache.spark.legacyINT96"


def writer_modes(key_value_metadata: dict) -> tuple:
    """``(datetime mode, INT96 mode)`` a Parquet footer's key-value metadata decides:
    ``"LEGACY"``, ``"CORRECTED"``, or ``"SESSION"`` when no Spark version is recorded."""
    version = key_value_metadata.get(SPARK_VERSION_KEY)
    if version is None:
        return "SESSION", "SESSION"

    def mode(minimum, key):
        return "LEGACY" if version < minimum or key in key_value_metadata else "CORRECTED"

    return mode("3.0.0", SPARK_LEGACY_DATETIME_KEY), mode("3.1.0", SPARK_LEGACY_INT96_KEY)


# Julian days strictly inside which INT96 timestamps fit int64 nanoseconds (1677-09-22 to
# 2262-04-10): outside it the reader's nanosecond values wrap
_INT96_NS_DAYS = (2333837, 2547338)


def _int96_as_spark(values):
    """INT96 values read as nanoseconds -> :data:`INT96_TYPE` (floored to microseconds)."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    out = []
    for c in chunks:
        if pa.types.is_dictionary(c.type):
            c = c.dictionary_decode()
        if not pa.types.is_timestamp(c.type) or c.type.unit != "ns":
            out.append(c.cast(INT96_TYPE))
            continue
        ns = c.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        micros = np.floor_divide(ns, 1000)
        valid = c.is_valid().to_numpy(zero_copy_only=False)
        out.append(pa.array(micros, pa.int64(), mask=~valid).cast(INT96_TYPE))
    return pa.chunked_array(out, INT96_TYPE)


_DERIVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""{footer schema (``ParquetFile.footer_schema``): what the readers of its files derived from
it}: the files of a table mostly share one schema, so its Arrow schema, leaf map and stored
types are worked out once, not once per file."""


class ParquetReader(FileReader):
    """An open Parquet file (:class:`metaindex.parquet.ParquetFile` underneath, as
    :attr:`file`).

    ``derived``: a dict shared by the readers of files with the same footer schema, opened
    with the same read options, that holds what they derive from it (None: this reader's
    own).
    """

    def __init__(self, pf: ParquetFile, derived: dict | None = None):
        self.file = pf
        self.num_rows = pf.num_rows
        self.num_row_groups = pf.num_row_groups
        self._derived: dict = {} if derived is None else derived
        self._days: dict = {}

    @property
    def schema(self) -> pa.Schema:
        schema = self._derived.get("schema")
        if schema is None:
            schema = self._derived["schema"] = file_schema(self.file)
        return schema

    def read_row_groups(
        self, groups: range, columns: list, *, use_threads: bool = False
    ) -> pa.Table:
        return self.file.read_row_groups(groups, columns=columns, use_threads=use_threads)

    def _leaf(self, path: str):
        leaves = self._derived.get("leaves")
        if leaves is None:  # {dotted path: leaf schema element}, the first of a path
            leaves = {}
            elements = [e for e in self.file.footer.schema[1:] if not e.num_children]
            for p, e in zip(self.file.column_paths, elements, strict=True):
                leaves.setdefault(p, e)
            self._derived["leaves"] = leaves
        return leaves.get(path)

    def statistics(self, path: str) -> Statistics | None:
        leaf = self._leaf(path)
        if leaf is None:
            return None
        stored = self._derived.get(("stored", path))
        if stored is None:
            stored = self._derived[("stored", path)] = arrow_for_leaf(leaf)
        return Statistics(
            stored, [self.file.statistics(rg, path) for rg in range(self.num_row_groups)]
        )

    def raw_day_range(self, path: str):
        if path not in self._days:
            leaf = self._leaf(path)
            self._days[path] = (
                self.file.int96_julian_day_range(path)
                if leaf is not None and leaf.type == INT96
                else False
            )
        return self._days[path]

    def as_read(self, path: str, values):
        return values if self.raw_day_range(path) is False else _int96_as_spark(values)

    def exact(self, path: str) -> bool:
        days = self.raw_day_range(path)
        return not days or _INT96_NS_DAYS[0] < days[0] <= days[1] < _INT96_NS_DAYS[1]

    def rebase_modes(self) -> tuple:
        return writer_modes(self.file.key_value_metadata)

    def fingerprint(self) -> tuple:
        return self.file.footer_fingerprint

    def close(self) -> None:
        self.file.close()


class ParquetFormat(DataFormat):
    """Parquet files, read with our reader (PME-encrypted ones with
    ``decryption_properties``)."""

    name = "parquet"

    def open(self, path: str, filesystem, *, decryption_properties=None) -> ParquetReader:
        pf = ParquetFile(path, filesystem=filesystem, decryption_properties=decryption_properties)
        return ParquetReader(pf, _DERIVED.setdefault(pf.footer_schema, {}))

    def fingerprint(self, path: str, filesystem) -> tuple:
        return footer_fingerprint(path, filesystem)  # the file's tail only
