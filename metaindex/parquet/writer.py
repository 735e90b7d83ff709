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
from typing import Any

import numpy as np
import pyarrow as pa

import metaindex
from metaindex.errors import SchemaError
from metaindex.parquet import bloom_pages
from metaindex.parquet import compression as codecs
from metaindex.parquet import format as fmt
from metaindex.parquet import metadata as md
from metaindex.parquet import options as opts_mod
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.format import ARROW_SCHEMA_KEY, MAGIC
from metaindex.parquet.page_writer import ChunkOptions, flat_binary_ok, write_chunk
from metaindex.parquet.pages import ColumnData, ColumnSpec
from metaindex.parquet.schema import leaf_for_arrow
from metaindex.parquet.shred import LevelNode, leaf_specs, level_tree, shred
from metaindex.threads import run_all

__all__ = ["ParquetWriter", "write_table", "CREATED_BY", "ENCODINGS"]

CREATED_BY = f"metaindex version {metaindex.__version__}"
_LIST, _MAP = 3, 1  # ConvertedType

ENCODINGS = {
    "PLAIN": 0,
    "RLE": 3,
    "DELTA_BINARY_PACKED": 5,
    "DELTA_LENGTH_BYTE_ARRAY": 6,
    "DELTA_BYTE_ARRAY": 7,
    "BYTE_STREAM_SPLIT": 9,
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
            raise ValueError(
                f"unknown column encoding {value!r} for column {'.'.join(path)!r}; "
                "expected one of " + ", ".join(ENCODINGS)
            ) from None
    raise TypeError(
        f"column_encoding for {'.'.join(path)!r} must be a str, not {type(value).__name__}"
    )


def schema_elements(node: LevelNode) -> list:
    """The depth-first Parquet schema elements of one column tree."""
    if node.kind == "leaf":
        leaf = leaf_for_arrow(node.arrow_type)
        return [
            fmt.SchemaElement(
                type=leaf.physical_type,
                type_length=leaf.type_length or None,
                repetition_type=node.repetition,
                name=node.name,
                converted_type=leaf.converted_type,
                scale=leaf.scale,
                precision=leaf.precision,
                logicalType=leaf.logical_type,
            )
        ]
    element = fmt.SchemaElement(
        repetition_type=node.repetition, name=node.name, num_children=len(node.children)
    )
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

    def __init__(self, field: pa.Field, original: pa.Field, options: opts_mod.WriteOptions):
        self.field = field
        self.node = level_tree(field)
        if not options.compliant_nested_type:
            self.node = _legacy_list_names(self.node, field.type)
        self.elements = options.annotate(schema_elements(self.node), original)
        leaf_elements = [e for e in self.elements if not e.num_children]
        self.leaves = []
        for spec, element in zip(leaf_specs(self.node), leaf_elements, strict=True):
            leaf = leaf_for_arrow(spec.node.arrow_type)
            self.leaves.append(
                (
                    ColumnSpec(
                        spec.path, leaf.physical_type, leaf.type_length, spec.max_def, spec.max_rep
                    ),
                    stats_mod.sort_order(element),
                    stats_mod.is_float16(element),
                )
            )


def _legacy_list_names(node: LevelNode, t: pa.DataType) -> LevelNode:
    """``use_compliant_nested_type=False``: list elements keep the Arrow field name ("item")."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if node.kind == "list":
        repeated = node.children[0]
        element = repeated.children[0]
        vf = t.value_field
        inner = _legacy_list_names(element, vf.type)
        inner = LevelNode(vf.name, inner.repetition, inner.kind, inner.children, inner.arrow_type)
        return LevelNode(
            node.name,
            node.repetition,
            node.kind,
            (LevelNode(repeated.name, repeated.repetition, repeated.kind, (inner,)),),
            node.arrow_type,
        )
    if node.kind == "group" and pa.types.is_struct(t):
        kids = tuple(_legacy_list_names(c, f.type) for c, f in zip(node.children, t, strict=True))
        return LevelNode(node.name, node.repetition, node.kind, kids, node.arrow_type)
    if node.kind == "map":
        kv = node.children[0]
        kids = (
            _legacy_list_names(kv.children[0], t.key_type),
            _legacy_list_names(kv.children[1], t.item_type),
        )
        return LevelNode(
            node.name,
            node.repetition,
            node.kind,
            (LevelNode(kv.name, kv.repetition, kv.kind, kids),),
            node.arrow_type,
        )
    return node


_FLUSH_BYTES = 8 << 20  # bytes objects held back before one write to the stream
_HOLD_MAX = 64 << 10  # larger writes go to the stream as they are


class _CountingSink:
    """The output stream plus the file offset of the next byte (page offsets need it).

    Small ``bytes`` writes (immutable: safe to hold) are gathered and written joined, at most
    ``_FLUSH_BYTES`` at a time: a small page header no longer makes an ``io.BytesIO``
    grow (and copy) its whole buffer, which cost writing a part of large pages several
    copies of itself. Anything else (a page body: a view of the column's values, the
    codec's buffer) flushes what is held and is written at once, without another copy.
    """

    def __init__(self, stream):
        self.stream = stream
        self.offset = 0
        self._held: list = []
        self._held_bytes = 0

    def write(self, data) -> None:
        size = len(data)
        if type(data) is bytes and size < _HOLD_MAX:
            self._held.append(data)
            self._held_bytes += size
            if self._held_bytes >= _FLUSH_BYTES:
                self.flush()
        else:
            self.flush()
            self.stream.write(data)
        self.offset += size

    def flush(self) -> None:
        """Write what is held to the stream."""
        if self._held:
            held, self._held, self._held_bytes = self._held, [], 0
            self.stream.write(held[0] if len(held) == 1 else b"".join(held))


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
    raise TypeError(
        "where must be a path, a pyarrow.fs URI, or a writable binary file object, "
        f"not {type(where).__name__}"
    )


class ParquetWriter:
    """Stream tables or record batches into one Parquet file.

    Keywords and defaults are ``pyarrow.parquet.ParquetWriter``'s (checked and normalised by
    ``metaindex.parquet.options``).

    Args:
        where: a path, a URI that ``pyarrow.fs`` understands ("s3://...", "file:///..."), or a
            writable binary file object (left open on close).
        schema: the Arrow schema every written table must have.
        filesystem: a ``pyarrow.fs.FileSystem``, a URI, or an fsspec filesystem to open
            ``where`` on.
        flavor: "spark" renames columns Spark cannot read (" ,;{}()\\n\\t=" become "_").
        version: Parquet format version "1.0", "2.4" or "2.6" (what logical types are used:
            1.0 stores uint32 as INT64; before 2.6 nanosecond timestamps become microseconds).
        compression: codec name ("none", "snappy", "gzip", "brotli", "zstd", "lz4" = "lz4_raw")
            for every column, or {column: codec}. Default snappy, as pyarrow.
        compression_level: codec level, or {column: level} (None = the library's default);
            a level the codec does not have raises ValueError.
        use_dictionary: True, False, or the columns to dictionary-encode. Dictionary-typed
            Arrow columns are written with their own dictionary.
        use_byte_stream_split: True or the columns to write BYTE_STREAM_SPLIT where they are
            not dictionary-encoded.
        column_encoding: an encoding name for every column or {column: name} (PLAIN, RLE,
            DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT)
            for columns that are not dictionary-encoded (ValueError when use_dictionary or
            use_byte_stream_split also names them).
        use_compliant_nested_type: name list elements "element" (False: the Arrow name).
        coerce_timestamps, allow_truncated_timestamps: store timestamps in "ms" or "us"
            (losing precision raises unless allowed).
        store_schema: store the Arrow schema under ``ARROW:schema`` (restores exact types).
        store_decimal_as_integer: decimals of precision <= 18 as INT32 / INT64.
        write_time_adjusted_to_utc: mark TIME columns as adjusted to UTC.
        max_rows_per_page: at most this many values per data page.
        sorting_columns: ``SortingColumn``s recorded in every row group.
        write_batch_size: accepted (pages are cut by size and rows).
        use_threads: encode a row group's columns in parallel, one thread per core (the
            kernels release the GIL); the file is the same byte for byte.
        use_content_defined_chunking: True or {"min_chunk_size", "max_chunk_size",
            "norm_level"}: content-defined data page boundaries (``metaindex.parquet.cdc``).
        use_deprecated_int96_timestamps: not supported (UnsupportedFeatureError).
        metadata_collector: a list the written ``FileMetaData`` is appended to on close.
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

    def __init__(
        self,
        where,
        schema: pa.Schema,
        filesystem=None,
        flavor=None,
        version="2.6",
        use_dictionary=True,
        compression="snappy",
        write_statistics=True,
        use_deprecated_int96_timestamps=None,
        compression_level=None,
        use_byte_stream_split=False,
        column_encoding=None,
        writer_engine_version=None,
        data_page_version="1.0",
        use_compliant_nested_type=True,
        encryption_properties=None,
        write_batch_size=None,
        dictionary_pagesize_limit=1024 * 1024,
        store_schema=True,
        write_page_index=False,
        write_page_checksum=False,
        sorting_columns=None,
        store_decimal_as_integer=False,
        write_time_adjusted_to_utc=False,
        max_rows_per_page=None,
        *,
        data_page_size=1024 * 1024,
        statistics_truncate_length=64,
        key_value_metadata=None,
        bloom_filter_options=None,
        coerce_timestamps=None,
        allow_truncated_timestamps=False,
        use_content_defined_chunking=False,
        metadata_collector=None,
        use_threads: bool = True,
    ):
        if where is None:
            raise TypeError(
                "where must be a path, a pyarrow.fs URI, or a writable binary file object, not None"
            )
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
        if data_page_version not in ("1.0", "2.0"):
            raise ValueError(
                f"Unsupported Parquet data page version: {data_page_version!r} "
                "(expected '1.0' or '2.0')"
            )
        if not isinstance(data_page_size, int) or data_page_size <= 0:
            raise ValueError("data_page_size must be a positive int")
        if dictionary_pagesize_limit is None:
            dictionary_pagesize_limit = 1024 * 1024
        if not isinstance(dictionary_pagesize_limit, int):
            raise TypeError(
                "dictionary_pagesize_limit must be an int, not "
                f"{type(dictionary_pagesize_limit).__name__}"
            )
        self._write_options = opts_mod.write_options(
            version=version,
            flavor=flavor,
            coerce_timestamps=coerce_timestamps,
            allow_truncated_timestamps=allow_truncated_timestamps,
            use_deprecated_int96_timestamps=use_deprecated_int96_timestamps,
            store_schema=store_schema,
            store_decimal_as_integer=store_decimal_as_integer,
            write_time_adjusted_to_utc=write_time_adjusted_to_utc,
            use_compliant_nested_type=use_compliant_nested_type,
            max_rows_per_page=max_rows_per_page,
            sorting_columns=sorting_columns,
            metadata_collector=metadata_collector,
            write_batch_size=write_batch_size,
            use_content_defined_chunking=use_content_defined_chunking,
            writer_engine_version=writer_engine_version,
        )
        column_encoding, use_dictionary = opts_mod.column_encodings(
            column_encoding, use_dictionary, use_byte_stream_split
        )
        bloom_filter_options = opts_mod.bloom_filter_options(bloom_filter_options)
        self.schema = self._write_options.sanitize(schema)
        self._storage = self._write_options.storage_schema(self.schema)
        self._columns = [
            _Column(f, original, self._write_options)
            for f, original in zip(self._storage, self.schema, strict=True)
        ]
        self._options = {
            "compression": compression,
            "compression_level": compression_level,
            "use_dictionary": use_dictionary,
            "column_encoding": column_encoding,
            "use_byte_stream_split": use_byte_stream_split,
            "data_page_version": 1 if data_page_version == "1.0" else 2,
            "data_page_size": int(data_page_size),
            "dictionary_pagesize_limit": dictionary_pagesize_limit,
            "write_statistics": write_statistics,
            "write_page_checksum": write_page_checksum,
            "statistics_truncate_length": statistics_truncate_length,
        }
        self._page_index = bool(write_page_index)
        self._blooms = [
            [
                bloom_pages.bloom_options(_per_column(bloom_filter_options or {}, spec.path, None))
                for spec, _, _ in column.leaves
            ]
            for column in self._columns
        ]
        known = {".".join(s.path) for c in self._columns for s, _, _ in c.leaves}
        known |= {c.field.name for c in self._columns}
        unknown = set(bloom_filter_options or {}) - known
        if unknown:
            raise SchemaError(f"bloom_filter_options names unknown columns {sorted(unknown)}")
        self._chunk_options = [
            [self._chunk_options_for(spec, order, f16) for spec, order, f16 in column.leaves]
            for column in self._columns
        ]
        self._kv = dict(key_value_metadata or {})
        self._row_groups: list = []
        self._column_indexes: list = []
        self._offset_indexes: list = []
        self._num_rows = 0
        self.footer: fmt.FileMetaData | None = None
        self._encryptor = (
            None
            if encryption_properties is None
            else encryption_properties.file_encryptor(
                [spec.path for column in self._columns for spec, _, _ in column.leaves]
            )
        )
        self._chunk_encryptors: list = []
        if filesystem is not None and hasattr(where, "write"):
            raise ValueError(
                "filesystem was given but the specified path is file-like "
                f"({type(where).__name__}); pass a path with a filesystem"
            )
        stream, self._own = _open_sink(where, opts_mod.resolve_filesystem(filesystem))
        self._sink = _CountingSink(stream)
        self._closed = False
        self._use_threads = bool(use_threads)
        self._sink.write(MAGIC if self._encryptor is None else self._encryptor.magic)

    @property
    def metadata(self) -> md.FileMetaData | None:
        """The written footer with pyarrow's ``FileMetaData`` API (None until closed)."""
        return None if self.footer is None else md.FileMetaData._of(self.footer)

    @property
    def closed(self) -> bool:
        return self._closed

    def add_key_value_metadata(self, key_value_metadata: dict) -> None:
        """Add (or replace) footer key/value entries; written on close."""
        if self._closed:
            raise ValueError("the writer is closed")
        self._kv.update(key_value_metadata)

    def _chunk_options_for(self, spec: ColumnSpec, order, float16) -> ChunkOptions:
        o = self._options
        encoding = _encoding_for(o["column_encoding"], spec.path)
        dictionary = (
            bool(_per_column(o["use_dictionary"], spec.path, True)) and spec.physical_type != 0
        )
        if encoding is None and opts_mod.byte_stream_split_for(
            o["use_byte_stream_split"], spec.path, spec.physical_type
        ):
            encoding = ENCODINGS["BYTE_STREAM_SPLIT"]
        opts_mod.check_encoding(spec.path, spec.physical_type, encoding, dictionary)
        codec = codecs.codec_id(
            opts_mod.codec_name(_per_column(o["compression"], spec.path, "none"))
        )
        level = opts_mod.compression_level_for(o["compression_level"], spec.path)
        opts_mod.check_compression_level(codecs.CODEC_NAMES[codec], level)
        options = ChunkOptions(
            codec=codec,
            compression_level=level,
            encoding=encoding,
            use_dictionary=bool(_per_column(o["use_dictionary"], spec.path, True)),
            dictionary_page_size_limit=o["dictionary_pagesize_limit"],
            data_page_size=o["data_page_size"],
            data_page_version=o["data_page_version"],
            write_page_checksum=o["write_page_checksum"],
            statistics=bool(_per_column(o["write_statistics"], spec.path, True)),
            page_index=self._page_index,
            sort_order=order,
            float16=float16,
            truncate_length=o["statistics_truncate_length"],
        )
        if self._write_options.max_rows_per_page is not None:
            options.max_rows_per_page = self._write_options.max_rows_per_page
        options.content_defined_chunking = self._write_options.cdc
        return options

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
        if self._write_options.flavor is not None:
            table = (
                table.rename_columns(self.schema.names)
                if table.num_columns == len(self.schema)
                else table
            )
        if not table.schema.equals(self.schema, check_metadata=False):
            raise SchemaError(
                f"table schema does not match the writer's:\n{table.schema}\nvs\n{self.schema}"
            )
        table = self._write_options.to_storage(table, self._storage)
        n = table.num_rows
        if row_group_size is not None and row_group_size != -1 and row_group_size <= 0:
            raise ValueError("row_group_size must be positive")
        step = n if not row_group_size or row_group_size == -1 else int(row_group_size)
        if n == 0:
            self._write_row_group(table)
            return
        for start in range(0, n, step):
            self._write_row_group(table.slice(start, step))

    def _write_row_group(self, part: pa.Table) -> None:
        sink = self._sink
        rg_start = sink.offset
        columns, cis, ois, blooms, encryptors = [], [], [], [], []
        uncompressed = 0
        rg_index = len(self._row_groups)
        tasks: list[tuple[Any, ...]] = []
        first_leaf = 0
        for column, options, bloom_opts in zip(
            self._columns, self._chunk_options, self._blooms, strict=True
        ):
            leaf_encryptors = [
                None if self._encryptor is None else self._encryptor.chunk(rg_index, first_leaf + k)
                for k in range(len(column.leaves))
            ]
            encryptors.extend(leaf_encryptors)
            tasks.append(
                (
                    _encode_column,
                    part.column(column.field.name),
                    column,
                    options,
                    leaf_encryptors,
                    bloom_opts,
                )
            )
            first_leaf += len(column.leaves)
        if self._use_threads and first_leaf > 1 and part.num_rows >= _THREADED_MIN_ROWS:
            # columns encode in parallel, each chunk's writes held; written here in order
            encoded = run_all(tasks, True)
        else:  # straight into the sink, one chunk after the other
            encoded = [_encode_column(*args, sink=sink) for _, *args in tasks]
        for bloom_opts, leaves in zip(self._blooms, encoded, strict=True):
            for bopt, (blob, meta, ci, oi, values) in zip(bloom_opts, leaves, strict=True):
                if blob is not None:
                    _relocate(meta, oi, sink.offset)
                    for piece in blob:
                        sink.write(piece)
                cis.append(ci)
                ois.append(oi)
                uncompressed += meta.total_uncompressed_size
                columns.append(fmt.ColumnChunk(file_offset=0, meta_data=meta))
                if bopt is not None:
                    blooms.append(
                        (
                            meta,
                            bloom_pages.build_filter(values, meta.type, bopt),
                            encryptors[len(columns) - 1],
                        )
                    )
        self._row_groups.append(
            fmt.RowGroup(
                columns=columns,
                total_byte_size=uncompressed,
                num_rows=part.num_rows,
                file_offset=rg_start,
                total_compressed_size=sink.offset - rg_start,
                ordinal=len(self._row_groups),
                sorting_columns=[s.to_thrift() for s in self._write_options.sorting_columns]
                or None,
            )
        )
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
            sink = self._sink
            if self._page_index:
                sink.write(
                    pidx.serialize_page_indexes(
                        sink.offset,
                        self._row_groups,
                        self._column_indexes,
                        self._offset_indexes,
                        None if self._encryptor is None else self._chunk_encryptors,
                    )
                )
            self.footer = self._footer()
            if self._write_options.metadata_collector is not None:
                self._write_options.metadata_collector.append(self.metadata)
            if self._encryptor is not None:
                sink.write(self._encryptor.footer(self.footer))
                return
            blob = self.footer.to_bytes()
            sink.write(blob)
            sink.write(len(blob).to_bytes(4, "little"))
            sink.write(MAGIC)
        finally:
            try:
                self._sink.flush()
            finally:
                if self._own:
                    self._sink.stream.close()

    def _footer(self) -> fmt.FileMetaData:
        schema = [fmt.SchemaElement(name="schema", num_children=len(self._columns))]
        for column in self._columns:
            schema.extend(column.elements)
        user = {_text(k): None if v is None else _text(v) for k, v in self._kv.items()}
        arrow_schema = self.schema
        if user:
            arrow_schema = arrow_schema.with_metadata(
                {**(arrow_schema.metadata or {}), **{k: v or "" for k, v in user.items()}}
            )
        kv = [fmt.KeyValue(key=k, value=v) for k, v in user.items()]
        if self._write_options.store_schema:
            kv.append(
                fmt.KeyValue(
                    key=ARROW_SCHEMA_KEY,
                    value=base64.b64encode(arrow_schema.serialize().to_pybytes()).decode(),
                )
            )
        n_leaves = sum(len(c.leaves) for c in self._columns)
        return fmt.FileMetaData(
            version=1 if self._write_options.version == "1.0" else 2,
            schema=schema,
            num_rows=self._num_rows,
            row_groups=self._row_groups,
            key_value_metadata=kv or None,
            created_by=CREATED_BY,
            column_orders=[
                fmt.ColumnOrder(TYPE_ORDER=fmt.TypeDefinedOrder()) for _ in range(n_leaves)
            ],
        )


_THREADED_MIN_ROWS = 16 * 1024  # smaller row groups encode faster on one thread


def _encode_column(
    chunked: pa.ChunkedArray,
    column: _Column,
    options: list,
    encryptors: list,
    blooms: list,
    *,
    sink=None,
) -> list:
    """Encode one top-level column's chunks: into ``sink`` at its offset (one thread), or each
    into a :class:`_HeldChunk` at offset 0 (threads: :func:`_relocate` moves it). Returns per
    leaf ``(the chunk's writes or None, ColumnMetaData, ColumnIndex, OffsetIndex, values)``."""
    arr = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
    out = []
    for (spec, _, _), opts, enc, (data, arrow_values) in zip(
        column.leaves, options, encryptors, _leaf_data(arr, column, options, blooms), strict=True
    ):
        own = sink if sink is not None else _HeldChunk()
        meta, ci, oi = write_chunk(
            own, own.offset, spec, data, opts, enc, _arrow_dictionary(arrow_values, spec, opts)
        )
        if data.num_levels == 0:  # an empty chunk has no statistics (as pyarrow)
            meta.statistics = None
        blob = None if sink is not None else own.parts
        out.append((blob, meta, ci, oi, data.values))
    return out


class _HeldChunk:
    """The sink of a chunk encoded on a worker thread at offset 0: it keeps the chunk's
    writes (page headers and bodies, uncopied) until the writer writes them in order."""

    def __init__(self):
        self.parts: list = []
        self.offset = 0

    def write(self, data) -> None:
        self.parts.append(data)
        self.offset += len(data)


def _relocate(meta: fmt.ColumnMetaData, offset_index, base: int) -> None:
    """Move a chunk encoded at offset 0 to file offset ``base``."""
    meta.data_page_offset += base
    if meta.dictionary_page_offset is not None:
        meta.dictionary_page_offset += base
    if offset_index is not None:
        for page in offset_index.page_locations:
            page.offset += base


_FLAT_BINARY = (
    pa.types.is_string,
    pa.types.is_binary,
    pa.types.is_large_string,
    pa.types.is_large_binary,
)


def _leaf_data(arr: pa.Array, column: _Column, options: list, blooms: list):
    """The column's leaves as ``(ColumnData, Arrow values)``: a top-level leaf without nulls
    straight from its Arrow buffers (no level arrays: every level is present), a nullable
    top-level string / binary column written PLAIN as its Arrow buffers and validity bitmap
    (``page_writer.flat_binary_ok``; not with a bloom filter, which takes the present values),
    anything else shredded."""
    if column.node.kind == "leaf" and arr.null_count == 0:
        spec = column.leaves[0][0]
        data = ColumnData(vals.from_arrow(arr, spec.physical_type, spec.type_length), len(arr))
        return [(data, arr)]
    if (
        column.node.kind == "leaf"
        and blooms[0] is None
        and flat_binary_ok(column.leaves[0][0], options[0])
        and any(test(arr.type) for test in _FLAT_BINARY)
    ):
        wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        validity, offsets, raw = arr.buffers()
        offsets = np.frombuffer(offsets, np.int64 if wide else np.int32, len(arr) + 1 + arr.offset)
        raw = np.zeros(0, np.uint8) if raw is None else np.frombuffer(raw, np.uint8)
        data = ColumnData(
            (offsets[arr.offset :], raw),
            len(arr),
            validity=np.frombuffer(validity, np.uint8),
            null_count=arr.null_count,
            validity_offset=arr.offset,
        )
        return [(data, arr)]
    out = []
    for (spec, _, _), leaf in zip(column.leaves, shred(arr, column.node), strict=True):
        out.append(
            (
                ColumnData(
                    vals.from_arrow(leaf.values, spec.physical_type, spec.type_length),
                    len(leaf.def_levels),
                    leaf.def_levels if spec.max_def > 0 else None,
                    leaf.rep_levels if spec.max_rep > 0 else None,
                ),
                leaf.values,
            )
        )
    return out


def _arrow_dictionary(values, spec: ColumnSpec, opts: ChunkOptions):
    """``(dictionary, indices)`` of a dictionary-typed leaf, written as its Arrow dictionary
    (so readers get that dictionary back, as from pyarrow); None for other leaves."""
    if (
        not isinstance(values, pa.DictionaryArray)
        or not opts.use_dictionary
        or values.dictionary.null_count
    ):
        return None
    dictionary = vals.from_arrow(values.dictionary, spec.physical_type, spec.type_length)
    indices = values.indices.to_numpy(zero_copy_only=False).astype(np.uint32)
    return dictionary, indices


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def write_table(
    table: pa.Table,
    where,
    row_group_size: int | None = None,
    *,
    chunk_size: int | None = None,
    filesystem=None,
    **options,
) -> None:
    """Write ``table`` to ``where`` in one call; options as :class:`ParquetWriter` takes them.

    Args:
        table: the data.
        where: a path, a ``pyarrow.fs`` URI, or a writable binary file object.
        row_group_size: rows per row group (None: one row group); ``chunk_size`` is its old
            pyarrow name.
        filesystem: a ``pyarrow.fs.FileSystem``, a URI, or an fsspec filesystem.
        **options: every keyword :class:`ParquetWriter` accepts.

    A file this call created is removed again when writing fails (as pyarrow does).
    """
    if not isinstance(table, pa.Table):
        raise TypeError(f"write_table takes a pyarrow.Table, not {type(table).__name__}")
    if row_group_size is None:
        row_group_size = chunk_size
    if row_group_size is not None and row_group_size != -1 and row_group_size <= 0:
        raise ValueError("row_group_size must be positive (or -1 for one row group)")
    with ParquetWriter(where, table.schema, filesystem=filesystem, **options) as writer:
        try:
            writer.write_table(table, row_group_size)
        except BaseException:
            writer._closed = True
            if writer._own:
                writer._sink.stream.close()
                _remove(where, filesystem)
            raise


def _remove(where, filesystem) -> None:
    try:
        if (
            filesystem is None
            and isinstance(where, (str, os.PathLike))
            and "://" not in os.fspath(where)
        ):
            os.remove(os.fspath(where))
    except OSError:
        pass
