"""Writing Parquet files on our kernels.

Option names mirror ``pyarrow.parquet.write_table`` / ``ParquetWriter``. Every Arrow column type
with a Parquet layout is written: primitives with their logical types, and struct / list / map at
any depth (levels from ``metaindex.parquet.shred``). Each column chunk gets statistics in its sort
order and, on request, a page index and page CRCs; the Arrow schema is stored under
``ARROW:schema`` as pyarrow does, so pyarrow restores exact types.
"""

from __future__ import annotations

import base64
import os

import pyarrow as pa

import metaindex
from metaindex.errors import SchemaError
from metaindex.parquet import bloom_pages
from metaindex.parquet import compression as codecs
from metaindex.parquet import format as fmt
from metaindex.parquet.format import ARROW_SCHEMA_KEY, MAGIC
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.pages import ChunkOptions, ColumnData, ColumnSpec, write_chunk
from metaindex.parquet.schema import leaf_for_arrow
from metaindex.parquet.shred import LevelNode, leaf_specs, level_tree, shred

__all__ = ["ParquetWriter", "write_table", "CREATED_BY", "ENCODINGS"]

CREATED_BY = f"metaindex version {metaindex.__version__}"
_LIST, _MAP = 3, 1  # ConvertedType

ENCODINGS = {
    "PLAIN": 0, "RLE": 3, "DELTA_BINARY_PACKED": 5, "DELTA_LENGTH_BYTE_ARRAY": 6,
    "DELTA_BYTE_ARRAY": 7, "BYTE_STREAM_SPLIT": 9,
}


def _per_column(option, path: tuple, default):
    """Resolve a per-column option given as one value, a list of columns, or a dict."""
    dotted, top = ".".join(path), path[0]
    if isinstance(option, dict):
        return option.get(dotted, option.get(top, default))
    if isinstance(option, (list, tuple, set, frozenset)):
        return dotted in option or top in option
    return default if option is None else option


def _encoding_for(column_encoding, path: tuple):
    value = _per_column(column_encoding, path, None)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return ENCODINGS[value.upper()]
        except KeyError:
            raise ValueError(f"unknown column encoding {value!r} for column {'.'.join(path)!r}; "
                             "expected one of " + ", ".join(ENCODINGS)) from None
    raise TypeError(f"column_encoding for {'.'.join(path)!r} must be a str, "
                    f"not {type(value).__name__}")


def schema_elements(node: LevelNode) -> list:
    """The depth-first Parquet schema elements of one column tree."""
    if node.kind == "leaf":
        leaf = leaf_for_arrow(node.arrow_type)
        return [fmt.SchemaElement(
            type=leaf.physical_type, type_length=leaf.type_length or None,
            repetition_type=node.repetition, name=node.name, converted_type=leaf.converted_type,
            scale=leaf.scale, precision=leaf.precision, logicalType=leaf.logical_type)]
    element = fmt.SchemaElement(repetition_type=node.repetition, name=node.name,
                                num_children=len(node.children))
    if node.kind == "list":
        element.converted_type = _LIST
        element.logicalType = fmt.LogicalType(LIST=fmt.ListType())
    elif node.kind == "map":
        element.converted_type = _MAP
        element.logicalType = fmt.LogicalType(MAP=fmt.MapType())
    out = [element]
    for child in node.children:
        out.extend(schema_elements(child))
    return out


class _Column:
    """A top-level column: its level tree and, per leaf, how it is stored and written."""

    def __init__(self, field: pa.Field):
        self.field = field
        self.node = level_tree(field)
        self.leaves = []
        for spec in leaf_specs(self.node):
            element = schema_elements(spec.node)[0]
            leaf = leaf_for_arrow(spec.node.arrow_type)
            self.leaves.append((
                ColumnSpec(spec.path, leaf.physical_type, leaf.type_length, spec.max_def,
                           spec.max_rep),
                stats_mod.sort_order(element), stats_mod.is_float16(element)))


class _CountingSink:
    """The output stream plus the file offset of the next byte (page offsets need it)."""

    def __init__(self, stream):
        self.stream = stream
        self.offset = 0

    def write(self, data) -> None:
        self.stream.write(data)
        self.offset += len(data)


def _open_sink(where, filesystem):
    """A binary writable stream for ``where`` and whether we must close it."""
    if hasattr(where, "write"):
        return where, False
    if filesystem is not None:
        return filesystem.open_output_stream(os.fspath(where)), True
    if isinstance(where, (str, os.PathLike)):
        path = os.fspath(where)
        if "://" in path:
            from pyarrow import fs as pafs

            fs, inner = pafs.FileSystem.from_uri(path)
            return fs.open_output_stream(inner), True
        return open(path, "wb"), True
    raise TypeError("where must be a path, a pyarrow.fs URI, or a writable binary file object, "
                    f"not {type(where).__name__}")


class ParquetWriter:
    """Stream tables or record batches into one Parquet file.

    Args:
        where: a path, a URI that ``pyarrow.fs`` understands ("s3://...", "file:///..."), or a
            writable binary file object (left open on close).
        schema: the Arrow schema every written table must have.
        filesystem: a ``pyarrow.fs.FileSystem`` to open ``where`` on.
        compression: codec name ("none", "snappy", "gzip", "brotli", "zstd", "lz4_raw") for
            every column, or {column: codec}.
        compression_level: codec level (None = the library's default).
        use_dictionary: True, False, or the columns to dictionary-encode.
        column_encoding: an encoding name for every column or {column: name} (PLAIN, RLE,
            DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT);
            applies to columns that are not dictionary-encoded.
        data_page_version: "1.0" or "2.0".
        data_page_size: target bytes per data page.
        dictionary_pagesize_limit: a dictionary larger than this falls back to the column's
            encoding for that chunk.
        write_statistics: True, False, or the columns to write statistics for.
        write_page_index: write ColumnIndex and OffsetIndex for every chunk.
        write_page_checksum: write a CRC32 in every page header.
        statistics_truncate_length: longest byte-array statistic bound (longer ones truncated,
            with the exact flags cleared); None never truncates.
        key_value_metadata: {str: str} stored in the footer (and in the stored Arrow schema).
        bloom_filter_options: {column: {"ndv": int, "fpp": float}} (or {column: True} for
            defaults): a split-block bloom filter per row group for each listed column,
            sized for min(ndv, the distinct values in the row group).
        encryption_properties: a ``metaindex.crypto.FileEncryptionProperties`` to write the
            file with Parquet Modular Encryption (pages, headers, page indexes, bloom filters,
            column metadata and footer of the encrypted columns).

    Columns are named for options by their top-level name or dotted Parquet path.
    """

    def __init__(self, where, schema: pa.Schema, *, filesystem=None, compression="none",
                 compression_level=None, use_dictionary=True, column_encoding=None,
                 data_page_version="1.0", data_page_size=1024 * 1024,
                 dictionary_pagesize_limit=1024 * 1024, write_statistics=True,
                 write_page_index=False, write_page_checksum=False,
                 statistics_truncate_length=64, key_value_metadata=None,
                 bloom_filter_options=None, encryption_properties=None):
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
        if data_page_version not in ("1.0", "2.0"):
            raise ValueError(f"data_page_version must be '1.0' or '2.0', not {data_page_version!r}")
        if data_page_size <= 0:
            raise ValueError("data_page_size must be positive")
        if column_encoding is not None and use_dictionary is True:
            use_dictionary = False  # like pyarrow: an explicit encoding turns the dictionary off
        self.schema = schema
        self._columns = [_Column(f) for f in schema]
        self._options = dict(
            compression=compression, compression_level=compression_level,
            use_dictionary=use_dictionary, column_encoding=column_encoding,
            data_page_version=1 if data_page_version == "1.0" else 2,
            data_page_size=int(data_page_size), dictionary_pagesize_limit=dictionary_pagesize_limit,
            write_statistics=write_statistics, write_page_checksum=write_page_checksum,
            statistics_truncate_length=statistics_truncate_length)
        self._page_index = bool(write_page_index)
        if bloom_filter_options is not None and not isinstance(bloom_filter_options, dict):
            raise TypeError("bloom_filter_options must be a dict of column -> {ndv, fpp}")
        self._blooms = [[bloom_pages.bloom_options(_per_column(bloom_filter_options or {}, spec.path,
                                                               None))
                         for spec, _, _ in column.leaves] for column in self._columns]
        known = {".".join(s.path) for c in self._columns for s, _, _ in c.leaves}
        known |= {c.field.name for c in self._columns}
        unknown = set(bloom_filter_options or {}) - known
        if unknown:
            raise SchemaError(f"bloom_filter_options names unknown columns {sorted(unknown)}")
        self._chunk_options = [[self._chunk_options_for(spec, order, f16)
                                for spec, order, f16 in column.leaves] for column in self._columns]
        self._kv = dict(key_value_metadata or {})
        self._row_groups: list = []
        self._column_indexes: list = []
        self._offset_indexes: list = []
        self._num_rows = 0
        self.metadata = None
        self._encryptor = None if encryption_properties is None else \
            encryption_properties.file_encryptor(
                [spec.path for column in self._columns for spec, _, _ in column.leaves])
        self._chunk_encryptors: list = []
        stream, self._own = _open_sink(where, filesystem)
        self._sink = _CountingSink(stream)
        self._closed = False
        self._sink.write(MAGIC if self._encryptor is None else self._encryptor.magic)

    def _chunk_options_for(self, spec: ColumnSpec, order, float16) -> ChunkOptions:
        o = self._options
        return ChunkOptions(
            codec=codecs.codec_id(_per_column(o["compression"], spec.path, "none")),
            compression_level=o["compression_level"],
            encoding=_encoding_for(o["column_encoding"], spec.path),
            use_dictionary=bool(_per_column(o["use_dictionary"], spec.path, True)),
            dictionary_page_size_limit=o["dictionary_pagesize_limit"],
            data_page_size=o["data_page_size"], data_page_version=o["data_page_version"],
            write_page_checksum=o["write_page_checksum"],
            statistics=bool(_per_column(o["write_statistics"], spec.path, True)),
            page_index=self._page_index, sort_order=order, float16=float16,
            truncate_length=o["statistics_truncate_length"])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def write(self, data, row_group_size: int | None = None) -> None:
        """Write a ``pyarrow.Table`` or ``RecordBatch``."""
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        self.write_table(data, row_group_size)

    def write_batch(self, batch: pa.RecordBatch, row_group_size: int | None = None) -> None:
        self.write(batch, row_group_size)

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        """Write ``table`` as one or more row groups of at most ``row_group_size`` rows."""
        if self._closed:
            raise ValueError("the writer is closed")
        if not isinstance(table, pa.Table):
            raise TypeError(f"write_table takes a pyarrow.Table, not {type(table).__name__}")
        if not table.schema.equals(self.schema, check_metadata=False):
            raise SchemaError(f"table schema does not match the writer's:\n{table.schema}\n"
                              f"vs\n{self.schema}")
        n = table.num_rows
        step = n if not row_group_size else int(row_group_size)
        if row_group_size is not None and step <= 0:
            raise ValueError("row_group_size must be positive")
        if n == 0:
            if not self._row_groups:
                self._write_row_group(table)
            return
        for start in range(0, n, step):
            self._write_row_group(table.slice(start, step))

    def _write_row_group(self, part: pa.Table) -> None:
        sink = self._sink
        rg_start = sink.offset
        columns, cis, ois, blooms, encryptors = [], [], [], [], []
        uncompressed = 0
        for column, options, bloom_opts in zip(self._columns, self._chunk_options, self._blooms):
            chunked = part.column(column.field.name)
            arr = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
            for (spec, _, _), opts, bopt, data in zip(column.leaves, options, bloom_opts,
                                                      _leaf_data(arr, column)):
                values = data.values
                enc = None if self._encryptor is None else \
                    self._encryptor.chunk(len(self._row_groups), len(columns))
                encryptors.append(enc)
                meta, ci, oi = write_chunk(sink, sink.offset, spec, data, opts, enc)
                cis.append(ci)
                ois.append(oi)
                uncompressed += meta.total_uncompressed_size
                columns.append(fmt.ColumnChunk(file_offset=0, meta_data=meta))
                if bopt is not None:
                    blooms.append((meta, bloom_pages.build_filter(values, spec.physical_type, bopt),
                                   enc))
        self._row_groups.append(fmt.RowGroup(
            columns=columns, total_byte_size=uncompressed, num_rows=part.num_rows,
            file_offset=rg_start, total_compressed_size=sink.offset - rg_start,
            ordinal=len(self._row_groups)))
        self._chunk_encryptors.append(encryptors)
        for meta, bloom, enc in blooms:  # after the row group's chunks, as parquet-java does
            blob = bloom_pages.serialize(bloom, enc)
            meta.bloom_filter_offset = sink.offset
            meta.bloom_filter_length = len(blob)
            sink.write(blob)
        self._column_indexes.append(cis)
        self._offset_indexes.append(ois)
        self._num_rows += part.num_rows

    def close(self) -> None:
        """Write the page indexes and the footer; close the sink if we opened it."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._row_groups:
                self._write_row_group(self.schema.empty_table())
            sink = self._sink
            if self._page_index:
                sink.write(pidx.serialize_page_indexes(
                    sink.offset, self._row_groups, self._column_indexes, self._offset_indexes,
                    None if self._encryptor is None else self._chunk_encryptors))
            self.metadata = self._footer()
            if self._encryptor is not None:
                sink.write(self._encryptor.footer(self.metadata))
                return
            blob = self.metadata.to_bytes()
            sink.write(blob)
            sink.write(len(blob).to_bytes(4, "little"))
            sink.write(MAGIC)
        finally:
            if self._own:
                self._sink.stream.close()

    def _footer(self) -> fmt.FileMetaData:
        schema = [fmt.SchemaElement(name="schema", num_children=len(self._columns))]
        for column in self._columns:
            schema.extend(schema_elements(column.node))
        user = {str(k): None if v is None else str(v) for k, v in self._kv.items()}
        arrow_schema = self.schema
        if user:
            arrow_schema = arrow_schema.with_metadata({**(arrow_schema.metadata or {}),
                                                       **{k: v or "" for k, v in user.items()}})
        kv = [fmt.KeyValue(key=k, value=v) for k, v in user.items()]
        kv.append(fmt.KeyValue(key=ARROW_SCHEMA_KEY, value=base64.b64encode(
            arrow_schema.serialize().to_pybytes()).decode()))
        n_leaves = sum(len(c.leaves) for c in self._columns)
        return fmt.FileMetaData(
            version=2, schema=schema, num_rows=self._num_rows, row_groups=self._row_groups,
            key_value_metadata=kv, created_by=CREATED_BY,
            column_orders=[fmt.ColumnOrder(TYPE_ORDER=fmt.TypeDefinedOrder())
                           for _ in range(n_leaves)])


def _leaf_data(arr: pa.Array, column: _Column):
    """The column's leaves as ColumnData: a top-level leaf without nulls straight from its
    Arrow buffers (no level arrays: every level is present), anything else shredded."""
    if column.node.kind == "leaf" and arr.null_count == 0:
        spec = column.leaves[0][0]
        return [ColumnData(vals.from_arrow(arr, spec.physical_type, spec.type_length), len(arr))]
    out = []
    for (spec, _, _), leaf in zip(column.leaves, shred(arr, column.node)):
        out.append(ColumnData(vals.from_arrow(leaf.values, spec.physical_type, spec.type_length),
                              len(leaf.def_levels),
                              leaf.def_levels if spec.max_def > 0 else None,
                              leaf.rep_levels if spec.max_rep > 0 else None))
    return out


def write_table(table: pa.Table, where, *, row_group_size: int | None = None, **options) -> None:
    """Write ``table`` to ``where`` in one call; options as :class:`ParquetWriter` takes them.

    Args:
        table: the data.
        where: a path, a ``pyarrow.fs`` URI, or a writable binary file object.
        row_group_size: rows per row group (None: one row group).
        **options: every keyword :class:`ParquetWriter` accepts.
    """
    if not isinstance(table, pa.Table):
        raise TypeError(f"write_table takes a pyarrow.Table, not {type(table).__name__}")
    with ParquetWriter(where, table.schema, **options) as writer:
        writer.write_table(table, row_group_size)

