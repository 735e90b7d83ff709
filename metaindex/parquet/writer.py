"""Writing Parquet files on our kernels.

Option names mirror ``pyarrow.parquet.write_table``. This first cut writes flat tables (every
primitive type, nullable or not, any encoding, codec and page version); nested columns, statistics,
page indexes, bloom filters and encryption are added by the Parquet files, bloom and PME issues.
"""

from __future__ import annotations

import base64
import os

import numpy as np
import pyarrow as pa

import metaindex
from metaindex.errors import EncodeError, SchemaError, UnsupportedFeatureError
from metaindex.parquet import compression as codecs
from metaindex.parquet import format as fmt
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.pages import ChunkOptions, ColumnData, ColumnSpec, write_chunk
from metaindex.parquet.schema import leaf_for_arrow

__all__ = ["write_table", "CREATED_BY", "ENCODINGS"]

CREATED_BY = f"metaindex version {metaindex.__version__}"
MAGIC = b"PAR1"
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2

ENCODINGS = {
    "PLAIN": 0, "RLE": 3, "DELTA_BINARY_PACKED": 5, "DELTA_LENGTH_BYTE_ARRAY": 6,
    "DELTA_BYTE_ARRAY": 7, "BYTE_STREAM_SPLIT": 9,
}


def _per_column(option, name: str, default):
    if isinstance(option, dict):
        return option.get(name, default)
    if isinstance(option, (list, tuple, set)):
        return name in option
    return option if option is not None else default


def _encoding_for(column_encoding, name: str):
    value = _per_column(column_encoding, name, None)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return ENCODINGS[value.upper()]
        except KeyError:
            raise ValueError(f"unknown column encoding {value!r} for column {name!r}; expected "
                             + ", ".join(ENCODINGS)) from None
    raise TypeError(f"column_encoding for {name!r} must be a str, not {type(value).__name__}")


def _flat_column(arr: pa.ChunkedArray | pa.Array, ptype: int, type_length: int):
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        def_levels = valid.astype(np.int16)
        arr = arr.drop_null()
    else:
        def_levels = None
    return vals.from_arrow(arr, ptype, type_length), n, def_levels


def write_table(table: pa.Table, where, *, compression="none", compression_level=None,
                use_dictionary=True, column_encoding=None, data_page_version="1.0",
                data_page_size=1024 * 1024, row_group_size=None, write_page_checksum=False,
                dictionary_pagesize_limit=1024 * 1024, key_value_metadata=None,
                write_statistics=True, write_page_index=False,
                statistics_truncate_length=64) -> None:
    """Write ``table`` to ``where`` (a path or a binary file-like object).

    Args:
        table: the data; flat schemas for now (nested columns raise UnsupportedFeatureError).
        where: a filesystem path (str or os.PathLike) or a writable binary file object.
        compression: codec name ("none", "snappy", "gzip", "brotli", "zstd", "lz4_raw") or a
            dict of column name -> codec name.
        compression_level: codec level (None = the library's default).
        use_dictionary: True, False, or a list of columns to dictionary-encode.
        column_encoding: one encoding name for every column, or {column: name}; applies to
            columns that are not dictionary-encoded (PLAIN, RLE, DELTA_*, BYTE_STREAM_SPLIT).
        data_page_version: "1.0" or "2.0".
        data_page_size: target bytes per data page.
        row_group_size: rows per row group (None = one row group).
        write_page_checksum: write CRC32 page checksums.
        dictionary_pagesize_limit: the dictionary falls back to the column's encoding past this.
        key_value_metadata: dict of str -> str stored in the footer.
    """
    if not isinstance(table, pa.Table):
        raise TypeError(f"write_table takes a pyarrow.Table, not {type(table).__name__}")
    if data_page_version not in ("1.0", "2.0"):
        raise ValueError(f"data_page_version must be '1.0' or '2.0', not {data_page_version!r}")
    if column_encoding is not None and use_dictionary is True:
        use_dictionary = False  # like pyarrow: an explicit encoding turns the dictionary off
    schema = [fmt.SchemaElement(name="schema", num_children=table.num_columns)]
    specs = []
    orders = []
    for f in table.schema:
        if pa.types.is_nested(f.type):
            raise UnsupportedFeatureError(f"column {f.name!r}: nested types are not written yet")
        leaf = leaf_for_arrow(f.type)
        schema.append(fmt.SchemaElement(
            type=leaf.physical_type, type_length=leaf.type_length or None,
            repetition_type=OPTIONAL if f.nullable else REQUIRED, name=f.name,
            converted_type=leaf.converted_type, scale=leaf.scale, precision=leaf.precision,
            logicalType=leaf.logical_type))
        element = schema[-1]
        orders.append((stats_mod.sort_order(element), stats_mod.is_float16(element)))
        specs.append((f, leaf, ColumnSpec((f.name,), leaf.physical_type, leaf.type_length,
                                          1 if f.nullable else 0, 0)))
    n = table.num_rows
    step = n if not row_group_size else int(row_group_size)
    if step <= 0 and n:
        raise ValueError("row_group_size must be positive")

    own = not hasattr(where, "write")
    sink = open(os.fspath(where), "wb") if own else where
    try:
        sink.write(MAGIC)
        offset = 4
        row_groups = []
        column_indexes, offset_indexes = [], []
        for ordinal, start in enumerate(range(0, max(n, 1), max(step, 1))):
            part = table.slice(start, step)
            columns = []
            rg_start = offset
            rg_uncompressed = 0
            rg_cis, rg_ois = [], []
            for (f, leaf, spec), (order, float16) in zip(specs, orders):
                column = part.column(f.name)
                values, levels, def_levels = _flat_column(column, leaf.physical_type, leaf.type_length)
                if def_levels is None and spec.max_def:
                    def_levels = np.ones(levels, np.int16)
                if not f.nullable and column.null_count:
                    raise EncodeError(f"column {f.name!r} is declared not null but holds nulls")
                opts = ChunkOptions(
                    codec=codecs.codec_id(_per_column(compression, f.name, "none")),
                    compression_level=compression_level,
                    encoding=_encoding_for(column_encoding, f.name),
                    use_dictionary=bool(_per_column(use_dictionary, f.name, True)),
                    dictionary_page_size_limit=dictionary_pagesize_limit,
                    data_page_size=data_page_size,
                    data_page_version=1 if data_page_version == "1.0" else 2,
                    write_page_checksum=write_page_checksum,
                    statistics=bool(_per_column(write_statistics, f.name, True)),
                    page_index=bool(write_page_index), sort_order=order, float16=float16,
                    truncate_length=statistics_truncate_length)
                meta, ci, oi = write_chunk(sink, offset, spec,
                                           ColumnData(values, levels, def_levels), opts)
                rg_cis.append(ci)
                rg_ois.append(oi)
                offset += meta.total_compressed_size
                rg_uncompressed += meta.total_uncompressed_size
                columns.append(fmt.ColumnChunk(file_offset=0, meta_data=meta))
            row_groups.append(fmt.RowGroup(
                columns=columns, total_byte_size=rg_uncompressed, num_rows=part.num_rows,
                file_offset=rg_start, total_compressed_size=offset - rg_start, ordinal=ordinal))
            column_indexes.append(rg_cis)
            offset_indexes.append(rg_ois)
            if n == 0:
                break
        if write_page_index:
            blob = pidx.serialize_page_indexes(offset, row_groups, column_indexes, offset_indexes)
            sink.write(blob)
            offset += len(blob)
        # Like pyarrow, store the Arrow schema so readers restore exact types (large_string,
        # timezone names...); user metadata rides along in it and in the footer.
        user = dict(key_value_metadata or {})
        arrow_schema = table.schema
        if user:
            arrow_schema = arrow_schema.with_metadata(
                {**(arrow_schema.metadata or {}), **{str(k): str(v) for k, v in user.items()}})
        kv = [fmt.KeyValue(key=str(k), value=None if v is None else str(v)) for k, v in user.items()]
        kv.append(fmt.KeyValue(key="ARROW:schema",
                               value=base64.b64encode(arrow_schema.serialize().to_pybytes()).decode()))
        footer = fmt.FileMetaData(
            version=2, schema=schema, num_rows=n, row_groups=row_groups,
            key_value_metadata=kv, created_by=CREATED_BY,
            column_orders=[fmt.ColumnOrder(TYPE_ORDER=fmt.TypeDefinedOrder()) for _ in specs])
        blob = footer.to_bytes()
        sink.write(blob)
        sink.write(len(blob).to_bytes(4, "little"))
        sink.write(MAGIC)
    finally:
        if own:
            sink.close()
