"""Reading Parquet files on our kernels: :class:`ParquetFile` and :func:`read_table`.

Reads what we, pyarrow (parquet-cpp) and Spark (parquet-java) write: every physical and logical
type, struct / list / map at any depth (3-level lists, legacy 2-level lists and bare repeated
fields), dictionary pages, data pages v1 and v2, every codec; and exposes the footer, statistics
with a trust verdict, the page index and key/value metadata. Only the byte ranges a read needs are
fetched from the source (``parquet/source.py``): the footer (``parquet/footer.py``), then the
column chunks asked for, each decoded by the page layer (``parquet/page_reader.py``) and
assembled into Arrow arrays of the file's schema (``parquet/schema.py``,
``parquet/readtypes.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from metaindex.errors import DecodeError, KeyAccessError, SchemaError, UnsupportedFeatureError
from metaindex.parquet import compression as codecs
from metaindex.parquet import encoding as enc
from metaindex.parquet import format as fmt
from metaindex.parquet import metadata as md
from metaindex.parquet import options as opts_mod
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.footer import (
    decode_footer,
    fingerprint,
    footer_bytes,
    footer_fingerprint,
    footer_region,
    read_footer,
)
from metaindex.parquet.format import ENCRYPTED_MAGIC  # noqa: F401 - cli/parquet_info imports it here
from metaindex.parquet.page_reader import read_chunk
from metaindex.parquet.pages import DICTIONARY_PAGE, ColumnSpec, iter_pages
from metaindex.parquet.readtypes import (
    byte_array_decimals,
    read_as_dictionary,
    read_types_schema,
    restore,
)
from metaindex.parquet.schema import Column, FileSchema, arrow_schema_of, schema_tree
from metaindex.parquet.shred import assemble
from metaindex.parquet.source import Source, dataset_paths
from metaindex.threads import run_all as _run_all

# the footer and schema functions are re-exported: this module was their home
__all__ = [
    "ParquetFile",
    "read_table",
    "read_footer",
    "footer_region",
    "footer_fingerprint",
    "schema_tree",
    "arrow_schema_of",
]


class ParquetFile:
    """A Parquet file opened for reading, with ``pyarrow.parquet.ParquetFile``'s API.

    Args:
        source: a path, a ``pyarrow.fs`` URI, bytes, a ``pyarrow.Buffer`` or ``NativeFile``, or
            a seekable binary file object (left open on close).
        metadata: a :class:`metaindex.parquet.FileMetaData` read before (the footer is then
            not read again).
        read_dictionary: columns (top-level names or dotted leaf paths) to read as dictionary
            arrays, one dictionary per column.
        binary_type, list_type: the Arrow types for BYTE_ARRAY and list columns the file's
            stored Arrow schema does not type (``pa.binary()``/``pa.large_binary()``/
            ``pa.binary_view()``; ``pa.ListType``/``pa.LargeListType``).
        arrow_extensions_enabled: read UUID / JSON columns as Arrow extension types.
        memory_map: True: a local file is memory-mapped (read in place, no copy; a file
            truncated by another process while it or a table read from it is in use faults
            the process, as with pyarrow's ``memory_map=True``); None (default) or False:
            read with pread, one request per column chunk (safe against such truncation).
        buffer_size, pre_buffer, common_metadata: accepted for pyarrow compatibility; chunks
            are always read whole, in one request each.
        coerce_int96_timestamp_unit: unit of INT96 timestamps ("ns" by default).
        thrift_string_size_limit, thrift_container_size_limit: refuse footers holding longer
            strings / lists (DecodeError, also an OSError).
        schema_depth_limit: refuse schemas nested deeper (the root counts as one level).
        filesystem: a ``pyarrow.fs.FileSystem``, a URI, or an fsspec filesystem.
        page_checksum_verification (or verify_checksums): check page CRC32s where stored.
        decryption_properties: a ``metaindex.crypto.FileDecryptionProperties`` for files
            written with Parquet Modular Encryption. Without it, a plaintext-footer encrypted
            file still reads its plaintext columns; its encrypted ones raise KeyAccessError.

    Attributes:
        footer: the decoded (decrypted) footer, our Thrift model
            (:class:`metaindex.parquet.format.FileMetaData`); an encrypted column's own
            metadata is in :meth:`column_chunk_metadata`.
        metadata: the same footer with pyarrow's ``FileMetaData`` API, built on first use.
    """

    def __init__(
        self,
        source,
        *,
        metadata=None,
        common_metadata=None,
        read_dictionary=None,
        binary_type=None,
        list_type=None,
        memory_map: bool | None = None,
        buffer_size=0,
        pre_buffer=False,
        coerce_int96_timestamp_unit=None,
        decryption_properties=None,
        thrift_string_size_limit=None,
        thrift_container_size_limit=None,
        filesystem=None,
        page_checksum_verification: bool = False,
        arrow_extensions_enabled: bool = True,
        verify_checksums: bool = False,
        schema_depth_limit=None,
    ):
        if isinstance(source, (list, tuple)):
            raise TypeError("ParquetFile opens one file; use read_table for a list of paths")
        self._read_options = opts_mod.read_options(
            read_dictionary=read_dictionary,
            binary_type=binary_type,
            list_type=list_type,
            arrow_extensions_enabled=arrow_extensions_enabled,
            thrift_string_size_limit=thrift_string_size_limit,
            thrift_container_size_limit=thrift_container_size_limit,
            schema_depth_limit=schema_depth_limit,
            coerce_int96_timestamp_unit=coerce_int96_timestamp_unit,
            memory_map=memory_map,
            buffer_size=buffer_size,
            pre_buffer=pre_buffer,
            common_metadata=common_metadata,
        )
        self._source = Source(source, opts_mod.resolve_filesystem(filesystem), memory_map)
        self._verify = bool(verify_checksums or page_checksum_verification)
        self._metadata: md.FileMetaData | None = None
        self._schema_arrow = None
        try:
            if metadata is not None:
                if not isinstance(metadata, md.FileMetaData):
                    raise TypeError(
                        "metadata must be a metaindex.parquet.FileMetaData, not "
                        f"{type(metadata).__name__}"
                    )
                self.footer, self._decryptor = metadata.thrift, None
                self._serialized_size = metadata.serialized_size
            else:
                self.footer, self._decryptor, self._serialized_size = decode_footer(
                    self._source, decryption_properties
                )
            opts_mod.check_thrift_limits(self.footer, self._read_options)
            self._schema = FileSchema.of(self.footer, self._read_options.schema_depth_limit)
        except BaseException:
            self._source.close()
            raise
        self._leaf_elements = self._schema.leaf_elements
        self._columns = self._schema.columns
        self._stored = self._schema.stored
        writer = stats_mod.parse_created_by(self.footer.created_by)
        self._parquet_816 = (
            writer is None and (self.footer.created_by or "").startswith("parquet-mr")
        ) or (
            writer is not None and writer.application == "parquet-mr" and writer.version < (1, 2, 9)
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self, force: bool = False) -> None:
        """Close the file if this object opened it (a file object passed in stays open)."""
        self._source.close()

    @property
    def closed(self) -> bool:
        return self._source.closed

    # ------------------------------------------------------------------ metadata

    @property
    def metadata(self) -> md.FileMetaData:
        if self._metadata is None:
            self._metadata = md.FileMetaData._of(
                self.footer, self._serialized_size, lambda: self.schema_arrow
            )
        return self._metadata

    @property
    def schema(self) -> md.ParquetSchema:
        """The Parquet schema (leaf columns) with pyarrow's ``ParquetSchema`` API."""
        return self.metadata.schema

    @property
    def num_row_groups(self) -> int:
        return len(self.footer.row_groups or [])

    @property
    def footer_fingerprint(self) -> tuple[int, int]:
        """``(length, CRC-32)`` of the footer region: a rewrite that keeps the file's size and
        mtime almost always changes it (see :func:`footer_fingerprint`)."""
        if self._source.fingerprint is None:  # opened with metadata= given: read it now
            self._source.fingerprint = fingerprint(footer_bytes(self._source)[0])
        return self._source.fingerprint

    def int96_julian_day_range(self, column: str) -> tuple[int, int] | None:
        """The smallest and largest Julian day numbers stored in INT96 leaf ``column`` (None:
        no value).

        Read from the raw 12-byte values, so timestamps outside the nanosecond range (before
        1677, after 2262), which the Arrow conversion wraps, are still seen as they are.
        """
        leaf = self._leaf_index(column)
        spec = next(
            c.specs[leaf - c.first_leaf]
            for c in self._columns
            if c.first_leaf <= leaf < c.first_leaf + len(c.specs)
        )
        if spec.physical_type != vals.INT96:
            raise SchemaError(f"{column!r} is not an INT96 column")
        low: int | None = None
        high: int | None = None
        for rg_index, rg in enumerate(self.footer.row_groups or []):
            data = self._read_chunk(rg, rg_index, leaf, spec)
            values = np.asarray(data.values)
            if values.ndim != 2 or values.shape[1] != 12 or not len(values):
                continue
            days = np.ascontiguousarray(values[:, 8:12]).view("<i4").reshape(-1)
            low = int(days.min()) if low is None else min(low, int(days.min()))
            high = int(days.max()) if high is None else max(high, int(days.max()))
        return None if low is None or high is None else (low, high)

    @property
    def num_rows(self) -> int:
        return self.footer.num_rows or 0

    @property
    def footer_schema(self) -> FileSchema:
        """The footer's schema as the reader sees it, one object shared by the files whose
        footers have the same schema elements and key/value metadata
        (:meth:`~metaindex.parquet.schema.FileSchema.of`): what a caller may key values it
        derives from the schema on."""
        return self._schema

    @property
    def key_value_metadata(self) -> dict:
        return dict(self._schema.key_value_metadata)

    @property
    def schema_arrow(self) -> pa.Schema:
        """The Arrow schema the file reads as (built once)."""
        if self._schema_arrow is None:
            self._schema_arrow = read_types_schema(
                self._schema.arrow_schema(), self._stored, self._read_options
            )
        return self._schema_arrow

    @property
    def column_paths(self) -> list[str]:
        """Dotted Parquet paths of every leaf column, in file order."""
        return [".".join(s.path) for c in self._columns for s in c.specs]

    def _field(self, column: Column) -> pa.Field:
        return self._schema.field(column)

    def _leaf_index(self, path: str) -> int:
        paths = self.column_paths
        if path in paths:
            return paths.index(path)
        raise SchemaError(f"no leaf column {path!r}; the file has {paths}")

    def statistics(self, row_group: int, column: str) -> stats_mod.ChunkStatistics | None:
        """Statistics of one column chunk with a trust verdict (None when absent)."""
        index = self._leaf_index(column)
        meta, _ = self._chunk_meta(row_group, index)
        if meta is None or meta.statistics is None:
            return None
        element = self._leaf_elements[index]
        orders = self.footer.column_orders
        order = orders[index] if orders and index < len(orders) else None
        return stats_mod.decode(meta.statistics, element, self.footer.created_by, order)

    def _chunk(self, row_group: int, leaf: int):
        if not 0 <= row_group < self.num_row_groups:
            raise IndexError(f"row group {row_group} out of range (file has {self.num_row_groups})")
        columns = self.footer.row_groups[row_group].columns or []
        if leaf >= len(columns):
            raise DecodeError(
                f"row group {row_group} has {len(columns)} column chunks, the "
                f"schema {len(self.column_paths)}"
            )
        return columns[leaf]

    def column_chunk_metadata(self, row_group: int, column: str) -> fmt.ColumnMetaData | None:
        """One chunk's ColumnMetaData (``column``: dotted leaf path), decrypted if encrypted.

        Raises:
            KeyAccessError: the column is encrypted and its key is not available.
        """
        return self._chunk_meta(row_group, self._leaf_index(column))[0]

    def _chunk_meta(self, row_group: int, leaf: int):
        """``(ColumnMetaData, ChunkDecryptor or None)`` of one chunk."""
        chunk = self._chunk(row_group, leaf)
        if chunk.crypto_metadata is None:
            return chunk.meta_data, None
        path = [s.path for c in self._columns for s in c.specs][leaf]
        if self._decryptor is None:
            raise KeyAccessError(
                f"{self._source.name}: row group {row_group}, column "
                f"{'.'.join(path)} is encrypted; pass decryption_properties "
                "with its key"
            )
        return self._decryptor.column(chunk, row_group, leaf, path)

    def _index_bytes(self, chunk, kind: str):
        offset = getattr(chunk, f"{kind}_offset")
        length = getattr(chunk, f"{kind}_length")
        if offset is None and length is None:
            return None
        if offset is None or length is None or offset < 0 or length <= 0:
            raise DecodeError(
                f"{self._source.name}: invalid {kind} location ({offset!r}, {length!r})"
            )
        return self._source.read_at(offset, length), offset

    def column_index(self, row_group: int, column: str) -> fmt.ColumnIndex | None:
        """The ColumnIndex of one chunk (``column``: dotted leaf path), or None."""
        found = self._page_index_bytes(row_group, column, "column_index")
        return None if found is None else pidx.decode_column_index(*found)

    def offset_index(self, row_group: int, column: str) -> fmt.OffsetIndex | None:
        """The OffsetIndex of one chunk (``column``: dotted leaf path), or None."""
        found = self._page_index_bytes(row_group, column, "offset_index")
        return None if found is None else pidx.decode_offset_index(*found, self._source.size)

    def _page_index_bytes(self, row_group: int, column: str, kind: str) -> tuple[Any, int] | None:
        leaf = self._leaf_index(column)
        found = self._index_bytes(self._chunk(row_group, leaf), kind)
        if found is None:
            return None
        _, decryptor = self._chunk_meta(row_group, leaf)
        if decryptor is None:
            return found
        return decryptor.module(kind, found[0])[0], found[1]

    def bloom_filter(self, row_group: int, column: str):
        """The column chunk's split-block bloom filter, or None (see the bloom issue)."""
        meta, decryptor = self._chunk_meta(row_group, self._leaf_index(column))
        if meta is None or meta.bloom_filter_offset is None:
            return None
        from metaindex.parquet.bloom_pages import read_bloom_filter

        return read_bloom_filter(self._source, meta, decryptor=decryptor)

    # ------------------------------------------------------------------ data

    @property
    def reader(self) -> _ColumnReader:
        """pyarrow's low-level reader: ``read_column(i)`` reads top-level column ``i``."""
        return _ColumnReader(self)

    def _select(self, columns, use_pandas_metadata: bool = False) -> list[Column]:
        if columns is None:
            return list(self._columns)
        if isinstance(columns, str):
            raise TypeError("columns must be a list of column names, not a str")
        columns = list(columns)
        if use_pandas_metadata:
            columns += [c for c in _pandas_index_columns(self._stored) if c not in columns]
        names = [c.node.name for c in self._columns]
        out = []
        for name in columns:
            if name not in names:
                raise SchemaError(f"no column {name!r} in the file; it has {names}")
            column = self._columns[names.index(name)]
            if column not in out:  # a column named twice is read once, like pyarrow
                out.append(column)
        return out

    def read_row_group(
        self, i: int, columns=None, use_threads: bool = True, use_pandas_metadata: bool = False
    ) -> pa.Table:
        """Read one row group (``columns``: top-level column names, None for all)."""
        return self._finish(
            self._row_group(i, self._select(columns, use_pandas_metadata), use_threads)
        )

    def _row_group(self, i: int, selected: list[Column], use_threads: bool = False) -> pa.Table:
        self._check_row_group(i)
        return self._assemble_row_group(
            i,
            selected,
            _run_all([(self._read_column, i, column) for column in selected], use_threads),
        )

    def _check_row_group(self, i: int) -> None:
        if not 0 <= i < self.num_row_groups:
            raise IndexError(f"row group {i} out of range (file has {self.num_row_groups})")

    def _assemble_row_group(self, i: int, selected: list[Column], read: list) -> pa.Table:
        """The row group's table from its columns' ``(array, field)`` pairs."""
        arrays = [array for array, _ in read]
        fields = [field for _, field in read]
        n = self.footer.row_groups[i].num_rows
        for array, field in read:  # every column, not only the first: a damaged chunk
            if len(array) != n:  # can decode to another length than its neighbours
                raise DecodeError(
                    f"row group {i}: column {field.name} holds {len(array)} "
                    f"rows, the footer says {n}"
                )
        if not arrays:  # no columns asked for: keep the row count, like pyarrow
            return pa.table({"_": pa.nulls(n or 0)}).drop(["_"])
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _read_column(self, i: int, column: Column) -> tuple[pa.Array, pa.Field]:
        """One top-level column of row group ``i``: its array and its field."""
        rg = self.footer.row_groups[i]
        leaves = []
        # a flat leaf comes with a validity bitmap and a value in every slot (BYTE_ARRAY: an
        # empty one under a null, which a BYTE_ARRAY decimal cannot hold: it takes levels)
        flat = (
            column.node.kind == "leaf"
            and not pa.types.is_null(column.leaf_types[0])
            and not (
                column.specs[0].physical_type == fmt.Type.BYTE_ARRAY
                and pa.types.is_decimal(column.leaf_types[0])
            )
        )
        for k, (spec, leaf_type) in enumerate(zip(column.specs, column.leaf_types, strict=True)):
            data = self._read_chunk(
                rg,
                i,
                column.first_leaf + k,
                spec,
                flat,
                vals.decimal128_limbs(spec.physical_type, spec.type_length, leaf_type),
            )
            if spec.physical_type == fmt.Type.BYTE_ARRAY and pa.types.is_decimal(leaf_type):
                values = byte_array_decimals(
                    vals.to_arrow(data.values, spec.physical_type, pa.binary()), leaf_type
                )
            else:
                values = vals.to_arrow(data.values, spec.physical_type, leaf_type)
            leaves.append((data.def_levels, data.rep_levels, values))
        if flat and data.validity is not None:
            array = vals.with_validity(values, data.validity, data.null_count)
        else:
            array = assemble(column.node, leaves)
        field = self._field(column)
        if pa.types.is_dictionary(field.type) and column.node.kind == "leaf":
            array = self._with_file_dictionary(array, rg, i, column, field.type)
        array = restore(array, field.type)
        return array, pa.field(
            column.node.name, array.type, nullable=field.nullable, metadata=field.metadata
        )

    def _read_chunk(
        self,
        rg,
        rg_index: int,
        leaf: int,
        spec: ColumnSpec,
        flat: bool = False,
        decimal128: bool = False,
    ):
        columns = rg.columns or []
        if leaf >= len(columns):
            raise DecodeError(
                f"row group {rg_index} has {len(columns)} column chunks, the "
                f"schema {len(self.column_paths)}"
            )
        meta, decryptor = self._chunk_meta(rg_index, leaf)
        where = f"{self._source.name}: row group {rg_index}, column {'.'.join(spec.path)}"
        if meta is None:
            raise DecodeError(f"{where}: chunk has no metadata")
        if meta.type != spec.physical_type:
            raise DecodeError(
                f"{where}: chunk type {meta.type} disagrees with the schema's {spec.physical_type}"
            )
        # The chunk starts at its first page: the dictionary page when there is one. Writers
        # disagree on unused offsets (pyarrow writes data_page_offset 0 for an empty chunk
        # after a dictionary page; others write dictionary_page_offset 0 for "none"), so take
        # the smallest offset that can be a page.
        for name in ("dictionary_page_offset", "data_page_offset"):
            value = getattr(meta, name)
            if value is not None and value != 0 and not 4 <= value < self._source.size - 8:
                raise DecodeError(f"{where}: {name} {value} lies outside the file")
        offsets = [
            o
            for o in (meta.dictionary_page_offset, meta.data_page_offset)
            if o is not None and o >= 4
        ]
        size = meta.total_compressed_size
        if meta.num_values == 0 and size == 0:
            return read_chunk(memoryview(b""), 0, spec, meta)
        if not offsets or size is None or size < 0:
            raise DecodeError(f"{where}: chunk has no valid page offset or size")
        start = min(offsets)
        if start + size > self._source.size - 8:
            raise DecodeError(f"{where}: chunk bytes {start}+{size} lie outside the file")
        if (
            spec.physical_type == fmt.Type.BYTE_ARRAY
            and (meta.total_uncompressed_size or 0) >= 1 << 31
        ):
            raise UnsupportedFeatureError(
                f"{where}: a BYTE_ARRAY chunk of {meta.total_uncompressed_size} bytes does not "
                "fit one Arrow array (2 GiB); pyarrow refuses it too"
            )
        if meta.dictionary_page_offset is None and self._parquet_816:
            # parquet-mr <= 1.2.8 left the dictionary page header out of the chunk's size
            # (PARQUET-816 / IMPALA-694): allow up to 100 more bytes, as parquet-cpp does
            size += min(100, self._source.size - 8 - (start + size))
        try:
            data = self._source.read_at(start, size)
            return read_chunk(
                data,
                start,
                spec,
                meta,
                self._verify,
                decryptor,
                flat,
                owned=self._source.owns_reads and not data.readonly,
                decimal128=decimal128,
            )
        except DecodeError as exc:
            raise DecodeError(f"{where}: {exc}") from exc

    def _with_file_dictionary(
        self, array: pa.Array, rg, rg_index: int, column: Column, stored: pa.DictionaryType
    ) -> pa.Array:
        """A dictionary-typed column read back with the chunk's dictionary page as its
        dictionary (what pyarrow writes from an Arrow dictionary array), where every value is
        in it; else ``array`` unchanged (``_restore`` then encodes it)."""
        spec, leaf_type = column.specs[0], column.leaf_types[0]
        meta, decryptor = self._chunk_meta(rg_index, column.first_leaf)
        offset = None if meta is None else meta.dictionary_page_offset
        if not offset or meta.data_page_offset is None or meta.data_page_offset <= offset:
            return array
        try:
            blob = self._source.read_at(offset, meta.data_page_offset - offset)
            header, body = next(iter_pages(blob, offset, decryptor))
            dph = header.dictionary_page_header
            if header.type != DICTIONARY_PAGE or dph is None or dph.num_values is None:
                return array
            if decryptor is not None:
                body = decryptor.page(body)
            raw = codecs.decompress(meta.codec, body, header.uncompressed_page_size)
            values, _ = enc.decode_values(
                raw, dph.num_values, spec.physical_type, 0, spec.type_length
            )
            dictionary = restore(
                vals.to_arrow(values, spec.physical_type, leaf_type), stored.value_type
            )
        except (DecodeError, StopIteration):
            return array
        if dictionary.type != stored.value_type or dictionary.null_count:
            return array
        import pyarrow.compute as pc

        plain = array.cast(stored.value_type) if array.type != stored.value_type else array
        indices = pc.index_in(plain, value_set=dictionary)
        if indices.null_count != plain.null_count:
            return array
        return pa.DictionaryArray.from_arrays(indices.cast(stored.index_type), dictionary)

    def read(
        self,
        columns=None,
        use_threads: bool = True,
        use_pandas_metadata: bool = False,
        *,
        row_groups=None,
    ) -> pa.Table:
        """Read the file (or the given ``row_groups``) into one table."""
        groups = range(self.num_row_groups) if row_groups is None else list(row_groups)
        selected = self._select(columns, use_pandas_metadata)
        if columns is not None and len(selected) == 0:  # rows without columns
            rows = sum(self._row_group(i, selected).num_rows for i in groups)
            return pa.table({"_": pa.nulls(rows)}).drop(["_"])
        for i in groups:
            self._check_row_group(i)
        # every (row group, column) is one task: with threads they run in parallel, the
        # kernels releasing the GIL
        read = _run_all(
            [(self._read_column, i, column) for i in groups for column in selected], use_threads
        )
        k = len(selected)
        tables = [
            self._assemble_row_group(i, selected, read[j * k : (j + 1) * k])
            for j, i in enumerate(groups)
        ]
        if not tables:
            fields = [self._field(c) for c in selected]
            return self._finish(pa.schema(fields).empty_table())
        return self._finish(pa.concat_tables(tables) if len(tables) > 1 else tables[0])

    def read_row_groups(
        self, row_groups, columns=None, use_threads: bool = True, use_pandas_metadata: bool = False
    ) -> pa.Table:
        """Read the given row groups into one table."""
        return self.read(
            columns, use_threads, use_pandas_metadata=use_pandas_metadata, row_groups=row_groups
        )

    def _finish(self, table: pa.Table) -> pa.Table:
        """Schema metadata, read_dictionary and the requested read types on a read table."""
        meta = self.schema_arrow.metadata
        if meta:
            table = table.replace_schema_metadata(meta)
        options = self._read_options
        if options.read_dictionary:
            table = read_as_dictionary(table, options.read_dictionary)
        if options.coerce_int96_timestamp_unit not in (None, "ns"):
            table = self._coerce_int96(table, options.coerce_int96_timestamp_unit)
        return opts_mod.apply_read_types(table, self._stored, options)

    def _coerce_int96(self, table: pa.Table, unit: str) -> pa.Table:
        for column in self._columns:
            name = column.node.name
            if (
                column.node.kind == "leaf"
                and column.specs[0].physical_type == 3
                and name in table.column_names
            ):
                t = table.schema.field(name).type
                table = table.set_column(
                    table.column_names.index(name),
                    name,
                    table[name].cast(pa.timestamp(unit, t.tz), safe=False),
                )
        return table

    def iter_batches(
        self,
        batch_size: int = 65536,
        row_groups=None,
        columns=None,
        use_threads: bool = True,
        use_pandas_metadata: bool = False,
    ):
        """Record batches of at most ``batch_size`` rows, one row group at a time."""
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, not {batch_size!r}")
        groups = range(self.num_row_groups) if row_groups is None else list(row_groups)
        selected = self._select(columns, use_pandas_metadata)

        def batches():  # exactly batch_size rows each (the last fewer), across row groups
            pending, rows = [], 0
            for i in groups:
                table = self._finish(self._row_group(i, selected, use_threads))
                pending.append(table)
                rows += table.num_rows
                while rows >= batch_size:
                    joined = pa.concat_tables(pending) if len(pending) > 1 else pending[0]
                    yield from joined.slice(0, batch_size).combine_chunks().to_batches()
                    rest = joined.slice(batch_size)
                    pending, rows = [rest], rest.num_rows
            if rows:
                joined = pa.concat_tables(pending) if len(pending) > 1 else pending[0]
                yield from joined.combine_chunks().to_batches()

        return batches()

    def scan_contents(self, columns=None, batch_size: int = 65536) -> int:
        """Read the given columns (all by default) and return the number of rows."""
        return sum(
            self._row_group(i, self._select(columns)).num_rows for i in range(self.num_row_groups)
        )


class _ColumnReader:
    """``ParquetFile.reader``: pyarrow's ``read_column(i)`` by top-level column index."""

    def __init__(self, pf: ParquetFile):
        self._pf = pf

    def read_column(self, index: int) -> pa.ChunkedArray:
        columns = self._pf._columns
        if not isinstance(index, int) or not 0 <= index < len(columns):
            raise IndexError(
                f"column index {index} out of range (the file has {len(columns)} columns)"
            )
        return self._pf.read([columns[index].node.name]).column(0)


def _pandas_index_columns(stored: pa.Schema | None) -> list[str]:
    if stored is None or not stored.metadata or b"pandas" not in stored.metadata:
        return []
    import json

    try:
        index = json.loads(stored.metadata[b"pandas"]).get("index_columns", [])
    except ValueError:
        return []
    return [c for c in index if isinstance(c, str)]


def read_table(
    source,
    *,
    columns=None,
    use_threads: bool = True,
    schema=None,
    use_pandas_metadata: bool = False,
    read_dictionary=None,
    binary_type=None,
    list_type=None,
    memory_map: bool | None = None,
    buffer_size=0,
    partitioning="hive",
    filesystem=None,
    filters=None,
    ignore_prefixes=None,
    pre_buffer=True,
    coerce_int96_timestamp_unit=None,
    decryption_properties=None,
    thrift_string_size_limit=None,
    thrift_container_size_limit=None,
    page_checksum_verification: bool = False,
    arrow_extensions_enabled: bool = True,
    row_groups=None,
    verify_checksums: bool = False,
    schema_depth_limit=None,
) -> pa.Table:
    """Read a Parquet file (or a list of files, or a directory of them) into a table.

    Args:
        source: a path, a ``pyarrow.fs`` URI, bytes, a ``pyarrow.Buffer`` or ``NativeFile``, a
            seekable binary file object; or a list of paths, or a directory (its files not
            starting with ``_`` or ``.``, in name order; columns in the first file's order).
        columns: top-level column names to read (None: all).
        schema: cast the result to this Arrow schema (its columns, in its order).
        use_pandas_metadata: with ``columns``, also read the pandas index columns.
        filters: pyarrow's DNF filters or a ``pyarrow.compute.Expression``; rows that do not
            match are dropped after reading.
        row_groups: row group ordinals to read (None: all; one file only).
        partitioning: accepted; directory partition values are not added as columns.
        Other keywords: as :class:`ParquetFile` takes them (``verify_checksums`` is our name
            for ``page_checksum_verification``).
    """
    file_options = {
        "read_dictionary": read_dictionary,
        "binary_type": binary_type,
        "list_type": list_type,
        "memory_map": memory_map,
        "buffer_size": buffer_size,
        "pre_buffer": pre_buffer,
        "coerce_int96_timestamp_unit": coerce_int96_timestamp_unit,
        "decryption_properties": decryption_properties,
        "thrift_string_size_limit": thrift_string_size_limit,
        "thrift_container_size_limit": thrift_container_size_limit,
        "page_checksum_verification": page_checksum_verification or verify_checksums,
        "arrow_extensions_enabled": arrow_extensions_enabled,
        "schema_depth_limit": schema_depth_limit,
    }
    fs = opts_mod.resolve_filesystem(filesystem)
    paths = dataset_paths(source, fs, ignore_prefixes)
    if paths is None:
        with ParquetFile(source, filesystem=fs, **file_options) as pf:
            table = pf.read(
                columns, use_threads, use_pandas_metadata=use_pandas_metadata, row_groups=row_groups
            )
    else:
        if row_groups is not None:
            raise ValueError("row_groups applies to one file, not a list or directory")
        tables = []
        for path in paths:
            with ParquetFile(path, filesystem=fs, **file_options) as pf:
                tables.append(
                    pf.read(columns, use_threads, use_pandas_metadata=use_pandas_metadata)
                )
        if not tables:
            raise FileNotFoundError(f"no Parquet files in {source!r}")
        names = tables[0].column_names
        table = pa.concat_tables([t.select(names) for t in tables], promote_options="default")
    if filters is not None:
        table = table.filter(_filter_expression(filters))
    if schema is not None:
        table = table.select(list(schema.names)).cast(schema)
    return table


def _filter_expression(filters):
    import pyarrow.compute as pc

    if isinstance(filters, pc.Expression):
        return filters
    from pyarrow.parquet import filters_to_expression

    return filters_to_expression(filters)
