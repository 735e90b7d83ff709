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

import os
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from metaindex._native.footerwalk import schema_spans
from metaindex.errors import DecodeError
from metaindex.formats.base import DataFormat, FileReader, Statistics
from metaindex.parquet import ParquetFile, footer_fingerprint
from metaindex.parquet.footer import fingerprint
from metaindex.parquet.format import MAGIC, FileMetaData
from metaindex.parquet.schema import INT96, FileSchema, arrow_for_leaf
from metaindex.parquet.statistics import decoder as stats_decoder
from metaindex.parquet.statistics import parse_created_by

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
        self.footer = pf.footer
        self.footer_schema = pf.footer_schema
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

    def _leaves(self) -> dict:
        """{dotted path: (leaf index, leaf schema element)}, the first leaf of a path."""
        leaves = self._derived.get("leaves")
        if leaves is None:
            leaves = {}
            paths = [".".join(s.path) for c in self.footer_schema.columns for s in c.specs]
            elements = self.footer_schema.leaf_elements
            for k, (p, e) in enumerate(zip(paths, elements, strict=True)):
                leaves.setdefault(p, (k, e))
            self._derived["leaves"] = leaves
        return leaves

    def _leaf(self, path: str):
        found = self._leaves().get(path)
        return None if found is None else found[1]

    def statistics(self, path: str) -> Statistics | None:
        column = self._derived.get(("column", path))
        if column is None:  # (index, stored type) of the path's leaf, (-1, None): no leaf
            found = self._leaves().get(path)
            column = self._derived[("column", path)] = (
                (-1, None) if found is None else (found[0], arrow_for_leaf(found[1]))
            )
        index, stored = column
        if index < 0:
            return None
        footer = self.footer
        orders = footer.column_orders
        order = orders[index] if orders and index < len(orders) else None
        # what decides a chunk's verdict besides its statistics, decided once per schema
        key = ("decoder", index, footer.created_by, None if order is None else order.which)
        decode = self._derived.get(key)
        if decode is None:
            leaf = self.footer_schema.leaf_elements[index]
            decode = self._derived[key] = stats_decoder(leaf, footer.created_by, order)
        out = []
        for rg, group in enumerate(footer.row_groups or ()):
            chunks = group.columns or ()
            if index >= len(chunks) or chunks[index].crypto_metadata is not None:
                # the reader's error, or the chunk's own (decrypted) metadata
                out.append(self.file.statistics(rg, path))
                continue
            meta = chunks[index].meta_data
            stats = None if meta is None else meta.statistics
            out.append(None if stats is None else decode(stats))
        return Statistics(stored, out)

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
        modes = self._derived.get("modes")
        if modes is None:  # (the key/value metadata is part of the footer schema)
            modes = self._derived["modes"] = writer_modes(self.footer_schema.key_value_metadata)
        return modes

    def fingerprint(self) -> tuple:
        return self.file.footer_fingerprint

    def small_file(self, limit: int):
        """The whole file's bytes (a memoryview) for the small-file scan
        (``collect._scan_small``), or None when it is not a small, plain file: encrypted,
        checksums verified, written by PARQUET-816's writers, or larger than ``limit``."""
        pf = self.file
        source = pf._source
        if (
            pf._decryptor is not None
            or pf._verify
            or pf._parquet_816
            or not 0 < source.size <= limit
        ):
            return None
        return memoryview(source.read_at(0, source.size)).cast("B")

    def close(self) -> None:
        self.file.close()


SMALL_OPEN = os.environ.get("METAINDEX_SMALL_FILES", "1") != "0"
"""Whether :meth:`ParquetFormat.open` opens a small local file with :class:`_SmallReader`
(``METAINDEX_SMALL_FILES=0`` turns it off, as it does ``collect``'s small-file scan)."""


class _SmallReader(ParquetReader):
    """A :class:`ParquetReader` of a small, plain local file (:func:`_open_small`): the
    file read whole in one request and its footer decoded, without the reader around it;
    the :class:`ParquetFile` (:attr:`file`) is opened when something needs it (a column
    read, INT96 days, a schema not seen before, an encrypted chunk)."""

    def __init__(self, path, filesystem, data: bytes, footer, schema, fingerprint, derived):
        self._path = path
        self._filesystem = filesystem
        self._data = data
        self._file: ParquetFile | None = None
        self._fingerprint = fingerprint
        self.footer = footer
        self.footer_schema = schema
        self.num_rows = footer.num_rows or 0
        self.num_row_groups = len(footer.row_groups or ())
        self._derived = derived
        self._days: dict = {}
        writer = parse_created_by(footer.created_by)
        self._parquet_816 = (  # as ParquetFile decides it
            writer is None and (footer.created_by or "").startswith("parquet-mr")
        ) or (
            writer is not None and writer.application == "parquet-mr" and writer.version < (1, 2, 9)
        )

    @property
    def file(self) -> ParquetFile:  # type: ignore[override]
        if self._file is None:
            self._file = ParquetFile(self._path, filesystem=self._filesystem)
        return self._file

    def fingerprint(self) -> tuple:
        return self._fingerprint

    def small_file(self, limit: int):
        if self._parquet_816 or not 0 < len(self._data) <= limit:
            return None
        return memoryview(self._data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _counted(reader: ParquetReader, path: str) -> ParquetReader:
    """``reader``, unless its footer gives a negative row count (a damaged footer that
    pyarrow still opens): then it is closed and :class:`DecodeError` raised, so the file is
    a failed file to the build, not a negative ``obj_rows`` in a part."""
    if reader.num_rows < 0:
        reader.close()
        raise DecodeError(f"{path}: the footer gives a negative row count ({reader.num_rows})")
    return reader


def _open_small(path: str, filesystem) -> _SmallReader | None:
    """A :class:`_SmallReader` of a local file of at most 64 KiB (what the reader reads in
    its first request, named by an absolute path) with a plaintext footer that decodes and
    is followed by nothing; None for any other file or any doubt (the caller then opens it
    with :class:`ParquetFile`, which gives a damaged file's error)."""
    if not os.path.isabs(path):
        return None
    try:
        # (non-blocking: a FIFO opens at once, and is then refused by its size)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, TypeError, ValueError):
        return None
    try:
        size = os.fstat(fd).st_size
        if not 12 <= size <= _SMALL_OPEN_BYTES:
            return None
        data = os.pread(fd, size, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != size or data[:4] != MAGIC or data[-4:] != MAGIC:
        return None
    length = int.from_bytes(data[-8:-4], "little")
    if length > size - 12:
        return None
    blob = memoryview(data)[size - 8 - length : size - 8]
    try:
        found = _decode_small_footer(blob)
    except Exception:  # (any error: ParquetFile raises it, as it would have)
        return None
    if found is None:
        return None
    footer, schema, derived = found
    return _SmallReader(path, filesystem, data, footer, schema, fingerprint(blob), derived)


def _decode_small_footer(blob):
    """``(FileMetaData, FileSchema, derived dict)`` of a plaintext footer region followed by
    nothing, or None. A footer whose schema and key/value metadata bytes were seen before
    (:data:`_SEEN_SCHEMAS`) is decoded with those two fields' values replaced by empty lists
    (``0x0C``), then given the ones decoded before: the rest of the footer is checked as the
    whole would be (Thrift fields decode independently of each other), those bytes were
    checked when first seen."""
    spans = schema_spans(blob)
    key = seen = None
    if spans is not None:
        s2, e2, s5, e5, _ = spans
        key = (bytes(blob[s2:e2]), None if s5 < 0 else bytes(blob[s5:e5]))
        seen = _SEEN_SCHEMAS.get(key)
    if seen is not None:
        cuts = sorted([(s2, e2), (s5, e5)] if s5 >= 0 else [(s2, e2)])
        pieces, at = [], 0
        for start, end in cuts:
            pieces += [blob[at:start], b"\x0c"]
            at = end
        pieces.append(blob[at:])
        short = b"".join(pieces)
        footer, end = FileMetaData.decode_prefix(short)
        if (
            end != len(short)
            or footer.encryption_algorithm is not None
            or footer.schema != []
            or footer.key_value_metadata != ([] if s5 >= 0 else None)
        ):
            return None
        elements, kv, schema, derived = seen
        footer.schema, footer.key_value_metadata = elements, kv
        return footer, schema, derived
    footer, end = FileMetaData.decode_prefix(blob)
    if end != len(blob) or footer.encryption_algorithm is not None:
        return None
    schema = FileSchema.of(footer)
    derived = _DERIVED.setdefault(schema, {})
    if key is not None:
        if len(_SEEN_SCHEMAS) >= _SEEN_SCHEMAS_KEPT:
            del _SEEN_SCHEMAS[next(iter(_SEEN_SCHEMAS))]  # the oldest
        _SEEN_SCHEMAS[key] = (footer.schema, footer.key_value_metadata, schema, derived)
    return footer, schema, derived


_SEEN_SCHEMAS: dict = {}
"""{(schema bytes, key/value metadata bytes or None): (the decoded schema elements, key/value
list, FileSchema, derived dict)} of the footers :func:`_decode_small_footer` decoded whole
(oldest first; shared, never changed)."""

_SEEN_SCHEMAS_KEPT = 64

_SMALL_OPEN_BYTES = 64 * 1024


class ParquetFormat(DataFormat):
    """Parquet files, read with our reader (PME-encrypted ones with
    ``decryption_properties``)."""

    name = "parquet"

    def open(self, path: str, filesystem, *, decryption_properties=None) -> ParquetReader:
        if (
            SMALL_OPEN
            and decryption_properties is None
            and type(filesystem) is pafs.LocalFileSystem
            and isinstance(path, str)
        ):
            reader = _open_small(path, filesystem)
            if reader is not None:
                return _counted(reader, path)
        pf = ParquetFile(path, filesystem=filesystem, decryption_properties=decryption_properties)
        return _counted(ParquetReader(pf, _DERIVED.setdefault(pf.footer_schema, {})), path)

    def fingerprint(self, path: str, filesystem) -> tuple:
        return footer_fingerprint(path, filesystem)  # the file's tail only
