"""Reading Parquet files on our kernels.

Reads what we, pyarrow (parquet-cpp) and Spark (parquet-java) write: every physical and logical
type, struct / list / map at any depth (3-level lists, legacy 2-level lists and bare repeated
fields), dictionary pages, data pages v1 and v2, every codec; and exposes the footer, statistics
with a trust verdict, the page index and key/value metadata. Only the byte ranges a read needs are
fetched from the source: the footer, then the column chunks asked for.
"""

from __future__ import annotations

import base64
import os

import pyarrow as pa

from metaindex.errors import (DecodeError, IntegrityError, KeyAccessError, SchemaError,
                              UnsupportedFeatureError)
from metaindex.parquet import format as fmt
from metaindex.parquet.format import ARROW_SCHEMA_KEY, ENCRYPTED_MAGIC, MAGIC
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.pages import ColumnSpec, read_chunk
from metaindex.parquet.schema import arrow_for_leaf
from metaindex.parquet.shred import LevelNode, assemble, leaf_specs

__all__ = ["ParquetFile", "read_table", "read_footer", "footer_region", "schema_tree"]

_LIST, _MAP, _MAP_KEY_VALUE = 3, 1, 2  # ConvertedType
_FOOTER_GUESS = 64 * 1024
_MAX_SCHEMA_DEPTH = 200


class _Source:
    """Random access to the file's bytes: an in-memory buffer, a local file, or pyarrow.fs."""

    def __init__(self, source, filesystem=None):
        self._fh = None
        self._view = None
        self._close = False
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._view = memoryview(source).cast("B")
            self.size = len(self._view)
            self.name = "<bytes>"
            return
        if filesystem is not None or (isinstance(source, str) and "://" in source):
            from pyarrow import fs as pafs

            if filesystem is None:
                filesystem, source = pafs.FileSystem.from_uri(source)
            self._fh = filesystem.open_input_file(os.fspath(source))
            self._close = True
            self.size = self._fh.size()
            self.name = os.fspath(source)
            return
        if isinstance(source, (str, os.PathLike)):
            self.name = os.fspath(source)
            try:
                self._fh = open(self.name, "rb")
            except FileNotFoundError:
                raise FileNotFoundError(f"no such Parquet file: {self.name}") from None
            self._close = True
            self.size = os.fstat(self._fh.fileno()).st_size
            return
        if hasattr(source, "read") and hasattr(source, "seek"):
            self._fh = source
            self.name = getattr(source, "name", "<file object>")
            source.seek(0, os.SEEK_END)
            self.size = source.tell()
            return
        raise TypeError("a Parquet source is a path, a pyarrow.fs URI, bytes, or a seekable "
                        f"binary file object, not {type(source).__name__}")

    def read_at(self, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise DecodeError(f"{self.name}: read of {size} bytes at {offset} lies outside the "
                              f"{self.size}-byte file", offset=offset, needed=size,
                              remaining=max(0, self.size - offset))
        if self._view is not None:
            return self._view[offset:offset + size]
        if hasattr(self._fh, "read_at"):
            data = self._fh.read_at(size, offset)
        elif hasattr(self._fh, "readinto"):
            # into Arrow's pool, which recycles memory: a fresh bytes object of a chunk's size
            # costs a page fault per 4 KiB, about as much as decoding it
            data = memoryview(pa.allocate_buffer(size))
            self._fh.seek(offset)
            got = self._fh.readinto(data)
            data = data[:got or 0]
        else:
            self._fh.seek(offset)
            data = self._fh.read(size)
        if len(data) != size:
            raise DecodeError(f"{self.name}: file shrank while reading", offset=offset,
                              needed=size, remaining=len(data))
        return memoryview(data).cast("B")

    def close(self) -> None:
        if self._close and self._fh is not None:
            self._fh.close()
            self._fh = None


def _footer_bytes(source: _Source) -> tuple[memoryview, bytes]:
    """The footer region (everything before its length field) and the magic, PAR1 or PARE."""
    size = source.size
    if size < 12:
        raise DecodeError(f"{source.name}: not a Parquet file ({size} bytes is shorter than "
                          "the 12-byte frame)")
    head = bytes(source.read_at(0, 4))
    if head not in (MAGIC, ENCRYPTED_MAGIC):
        raise DecodeError(f"{source.name}: not a Parquet file (bad leading magic)", offset=0)
    tail_len = min(size, _FOOTER_GUESS)
    tail = source.read_at(size - tail_len, tail_len)
    magic = bytes(tail[-4:])
    if magic != head:
        raise DecodeError(f"{source.name}: not a Parquet file (ends with {magic!r}, "
                          f"not {head!r})", offset=size - 4)
    length = int.from_bytes(tail[-8:-4], "little")
    if length > size - 12:
        raise DecodeError(f"{source.name}: footer length {length} runs past the start of the "
                          "file", offset=size - 8, needed=length, remaining=size - 12)
    if length + 8 <= tail_len:
        return tail[tail_len - 8 - length:tail_len - 8], head
    return source.read_at(size - 8 - length, length), head


def _decode_footer(source: _Source, decryption_properties):
    """``(FileMetaData, FileDecryptor or None)``.

    PARE: the footer is decrypted with ``decryption_properties``. PAR1 with an encryption
    algorithm: a signed plaintext footer, verified when properties are given (without them the
    plaintext columns stay readable, as for a legacy reader).
    """
    blob, magic = _footer_bytes(source)
    if magic == ENCRYPTED_MAGIC:
        if decryption_properties is None:
            raise KeyAccessError(f"{source.name}: the footer is encrypted (PARE); pass "
                                 "decryption_properties with its key or a key retriever")
        return decryption_properties.open_encrypted_footer(blob, source.name)
    metadata, end = fmt.FileMetaData.decode_prefix(blob)
    if metadata.encryption_algorithm is None:
        if end != len(blob):
            raise DecodeError(f"{source.name}: {len(blob) - end} bytes after the footer's "
                              "FileMetaData", offset=source.size - 8 - len(blob) + end)
        if decryption_properties is not None and \
                not decryption_properties.plaintext_files_allowed:
            raise IntegrityError(f"{source.name}: the file is not encrypted, but decryption "
                                 "properties were given (a plaintext file where an encrypted "
                                 "one is expected; set plaintext_files_allowed to accept it)")
        return metadata, None
    if len(blob) - end != 28:
        raise DecodeError(f"{source.name}: a plaintext footer of an encrypted file is followed "
                          f"by a 28-byte signature, not {len(blob) - end} bytes")
    if decryption_properties is None:
        return metadata, None
    return metadata, decryption_properties.open_plaintext_footer(
        metadata, blob[:end], blob[end:], source.name)


def footer_region(path, filesystem=None) -> tuple[memoryview, bytes, int]:
    """The raw footer region of a Parquet file (everything between the data and the footer
    length), its magic (``b"PAR1"`` or ``b"PARE"``) and the file size, without decoding or
    decrypting anything: what tools inspecting an encrypted file without keys start from.

    Raises:
        FileNotFoundError: no such file.
        DecodeError: not a Parquet file (size, magic or footer length).
    """
    source = _Source(path, filesystem)
    try:
        blob, magic = _footer_bytes(source)
        return blob, magic, source.size
    finally:
        source.close()


def read_footer(data, decryption_properties=None) -> fmt.FileMetaData:
    """Decode the footer of a whole Parquet file held in ``data`` (bytes-like)."""
    return _decode_footer(_Source(data), decryption_properties)[0]


# ---------------------------------------------------------------------------- schema


def schema_tree(schema: list) -> list[LevelNode]:
    """The top-level columns of a flattened Parquet schema as LevelNode trees."""
    if not schema:
        raise DecodeError("footer has an empty schema")
    pos = 1

    def node(depth: int) -> LevelNode:
        nonlocal pos
        if pos >= len(schema):
            raise DecodeError("schema ends inside a group (num_children too large)")
        if depth > _MAX_SCHEMA_DEPTH:
            raise DecodeError(f"schema nested deeper than {_MAX_SCHEMA_DEPTH}")
        e = schema[pos]
        pos += 1
        try:
            e.name.encode("utf-8")
        except UnicodeEncodeError:
            raise DecodeError(f"schema element {pos - 1} has a name that is not UTF-8") from None
        rep = e.repetition_type if e.repetition_type is not None else 0
        if rep not in (0, 1, 2):
            raise UnsupportedFeatureError(f"column {e.name!r}: repetition {rep} is not supported")
        if not e.num_children:
            if e.type is None:
                raise DecodeError(f"leaf column {e.name!r} has no physical type")
            return LevelNode(e.name, rep, "leaf", (), arrow_for_leaf(e))
        if e.num_children < 0:
            raise DecodeError(f"group {e.name!r} has a negative child count")
        children = tuple(node(depth + 1) for _ in range(e.num_children))
        logical = e.logicalType
        if e.converted_type == _LIST or (logical is not None and logical.LIST is not None):
            kind = "list"
        elif (e.converted_type == _MAP or (logical is not None and logical.MAP is not None)
              or (e.converted_type == _MAP_KEY_VALUE and rep != 2)):
            # parquet-java's legacy format also marks the inner repeated key_value group
            # MAP_KEY_VALUE: that one is the map's entries, not a second map
            kind = "map"
        else:
            kind = "group"
        try:
            return LevelNode(e.name, rep, kind, children)
        except SchemaError as exc:
            raise DecodeError(f"invalid schema at {e.name!r}: {exc}") from exc

    root = schema[0]
    count = root.num_children or 0
    if count < 0:
        raise DecodeError("schema root has a negative child count")
    tops = [node(1) for _ in range(count)]
    if pos != len(schema):
        raise DecodeError(f"schema has {len(schema) - pos} elements after its last column")
    return tops


class _Column:
    """A top-level column: its tree, its leaves' specs and schema elements, its Arrow field."""

    def __init__(self, node: LevelNode, first_leaf: int, elements: list):
        self.node = node
        self.specs = []
        self.elements = []
        self.leaf_types = []
        for i, spec in enumerate(leaf_specs(node)):
            self.leaf_types.append(spec.node.arrow_type)
            e = elements[first_leaf + i]
            self.specs.append(ColumnSpec(spec.path, e.type, e.type_length or 0, spec.max_def,
                                         spec.max_rep))
            self.elements.append(e)
        self.first_leaf = first_leaf
        self.field = node.to_arrow_field()


def _leaf_elements(schema: list) -> list:
    return [e for e in schema[1:] if not e.num_children]


class ParquetFile:
    """A Parquet file opened for reading.

    Args:
        source: a path, a ``pyarrow.fs`` URI, bytes, or a seekable binary file object.
        filesystem: a ``pyarrow.fs.FileSystem`` to open ``source`` on.
        verify_checksums: check page CRC32s where the writer stored them.
        decryption_properties: a ``metaindex.crypto.FileDecryptionProperties`` for files
            written with Parquet Modular Encryption. Without it, a plaintext-footer encrypted
            file still reads its plaintext columns; its encrypted ones raise KeyAccessError.

    Attributes:
        metadata: the decoded (decrypted) footer (:class:`metaindex.parquet.format.FileMetaData`);
            an encrypted column's own metadata is in :meth:`column_chunk_metadata`.
    """

    def __init__(self, source, *, filesystem=None, verify_checksums: bool = False,
                 decryption_properties=None):
        self._source = _Source(source, filesystem)
        self._verify = verify_checksums
        self.metadata, self._decryptor = _decode_footer(self._source, decryption_properties)
        tops = schema_tree(self.metadata.schema)
        self._leaf_elements = _leaf_elements(self.metadata.schema)
        self._columns = []
        first = 0
        for node in tops:
            column = _Column(node, first, self._leaf_elements)
            self._columns.append(column)
            first += len(column.specs)
        self._stored = self._stored_arrow_schema()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._source.close()

    # ------------------------------------------------------------------ metadata

    @property
    def num_row_groups(self) -> int:
        return len(self.metadata.row_groups or [])

    @property
    def num_rows(self) -> int:
        return self.metadata.num_rows or 0

    @property
    def key_value_metadata(self) -> dict:
        return {kv.key: kv.value for kv in self.metadata.key_value_metadata or []}

    @property
    def schema_arrow(self) -> pa.Schema:
        return pa.schema([self._field(c) for c in self._columns])

    @property
    def column_paths(self) -> list[str]:
        """Dotted Parquet paths of every leaf column, in file order."""
        return [".".join(s.path) for c in self._columns for s in c.specs]

    def _field(self, column: _Column) -> pa.Field:
        stored = self._stored_field(column)
        return stored if stored is not None else column.field

    def _stored_arrow_schema(self) -> pa.Schema | None:
        """The Arrow schema pyarrow (and we) store under ``ARROW:schema``, if readable."""
        value = self.key_value_metadata.get(ARROW_SCHEMA_KEY)
        if not value:
            return None
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(value)))
            schema.names, str(schema)  # names and types must decode too  # noqa: B018
            return schema
        except Exception:  # a foreign or damaged entry: fall back to the Parquet types
            return None

    def _stored_field(self, column: _Column) -> pa.Field | None:
        if self._stored is None or column.node.name not in self._stored.names:
            return None
        return self._stored.field(column.node.name)

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
        orders = self.metadata.column_orders
        order = orders[index] if orders and index < len(orders) else None
        return stats_mod.decode(meta.statistics, element, self.metadata.created_by, order)

    def _chunk(self, row_group: int, leaf: int):
        if not 0 <= row_group < self.num_row_groups:
            raise IndexError(f"row group {row_group} out of range (file has {self.num_row_groups})")
        columns = self.metadata.row_groups[row_group].columns or []
        if leaf >= len(columns):
            raise DecodeError(f"row group {row_group} has {len(columns)} column chunks, the "
                              f"schema {len(self.column_paths)}")
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
            raise KeyAccessError(f"{self._source.name}: row group {row_group}, column "
                                 f"{'.'.join(path)} is encrypted; pass decryption_properties "
                                 "with its key")
        return self._decryptor.column(chunk, row_group, leaf, path)

    def _index_bytes(self, chunk, kind: str):
        offset = getattr(chunk, f"{kind}_offset")
        length = getattr(chunk, f"{kind}_length")
        if offset is None and length is None:
            return None
        if offset is None or length is None or offset < 0 or length <= 0:
            raise DecodeError(f"{self._source.name}: invalid {kind} location "
                              f"({offset!r}, {length!r})")
        return self._source.read_at(offset, length), offset

    def column_index(self, row_group: int, column: str) -> fmt.ColumnIndex | None:
        """The ColumnIndex of one chunk (``column``: dotted leaf path), or None."""
        found = self._page_index_bytes(row_group, column, "column_index")
        return None if found is None else pidx.decode_column_index(*found)

    def offset_index(self, row_group: int, column: str) -> fmt.OffsetIndex | None:
        """The OffsetIndex of one chunk (``column``: dotted leaf path), or None."""
        found = self._page_index_bytes(row_group, column, "offset_index")
        return None if found is None else pidx.decode_offset_index(*found, self._source.size)

    def _page_index_bytes(self, row_group: int, column: str, kind: str):
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

    def _select(self, columns) -> list[_Column]:
        if columns is None:
            return list(self._columns)
        if isinstance(columns, str):
            raise TypeError("columns must be a list of column names, not a str")
        names = [c.node.name for c in self._columns]
        out = []
        for name in columns:
            if name not in names:
                raise SchemaError(f"no column {name!r} in the file; it has {names}")
            out.append(self._columns[names.index(name)])
        return out

    def read_row_group(self, i: int, columns=None) -> pa.Table:
        """Read one row group (``columns``: top-level column names, None for all)."""
        if not 0 <= i < self.num_row_groups:
            raise IndexError(f"row group {i} out of range (file has {self.num_row_groups})")
        rg = self.metadata.row_groups[i]
        selected = self._select(columns)
        arrays, fields = [], []
        for column in selected:
            leaves = []
            flat = column.node.kind == "leaf" and not pa.types.is_null(column.leaf_types[0])
            for k, (spec, leaf_type) in enumerate(zip(column.specs, column.leaf_types)):
                data = self._read_chunk(rg, i, column.first_leaf + k, spec, flat)
                values = vals.to_arrow(data.values, spec.physical_type, leaf_type)
                leaves.append((data.def_levels, data.rep_levels, values))
            if flat and data.validity is not None:
                array = vals.with_validity(values, data.validity, data.null_count)
            else:
                array = assemble(column.node, leaves)
            field = self._field(column)
            arrays.append(_restore(array, field.type))
            fields.append(pa.field(column.node.name, arrays[-1].type, nullable=field.nullable))
        n = rg.num_rows
        if arrays and len(arrays[0]) != n:
            raise DecodeError(f"row group {i}: columns hold {len(arrays[0])} rows, the footer "
                              f"says {n}")
        if not arrays:  # no columns asked for: keep the row count, like pyarrow
            return pa.table({"_": pa.nulls(n or 0)}).drop(["_"])
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _read_chunk(self, rg, rg_index: int, leaf: int, spec: ColumnSpec, flat: bool = False):
        columns = rg.columns or []
        if leaf >= len(columns):
            raise DecodeError(f"row group {rg_index} has {len(columns)} column chunks, the "
                              f"schema {len(self.column_paths)}")
        meta, decryptor = self._chunk_meta(rg_index, leaf)
        where = f"{self._source.name}: row group {rg_index}, column {'.'.join(spec.path)}"
        if meta is None:
            raise DecodeError(f"{where}: chunk has no metadata")
        if meta.type != spec.physical_type:
            raise DecodeError(f"{where}: chunk type {meta.type} disagrees with the schema's "
                              f"{spec.physical_type}")
        # The chunk starts at its first page: the dictionary page when there is one. Writers
        # disagree on unused offsets (pyarrow writes data_page_offset 0 for an empty chunk
        # after a dictionary page; others write dictionary_page_offset 0 for "none"), so take
        # the smallest offset that can be a page.
        for name in ("dictionary_page_offset", "data_page_offset"):
            value = getattr(meta, name)
            if value is not None and value != 0 and not 4 <= value < self._source.size - 8:
                raise DecodeError(f"{where}: {name} {value} lies outside the file")
        offsets = [o for o in (meta.dictionary_page_offset, meta.data_page_offset)
                   if o is not None and o >= 4]
        size = meta.total_compressed_size
        if meta.num_values == 0 and size == 0:
            return read_chunk(memoryview(b""), 0, spec, meta)
        if not offsets or size is None or size < 0:
            raise DecodeError(f"{where}: chunk has no valid page offset or size")
        start = min(offsets)
        if start + size > self._source.size - 8:
            raise DecodeError(f"{where}: chunk bytes {start}+{size} lie outside the file")
        try:
            return read_chunk(self._source.read_at(start, size), start, spec, meta, self._verify,
                              decryptor, flat)
        except DecodeError as exc:
            raise DecodeError(f"{where}: {exc}") from exc

    def read(self, columns=None, row_groups=None) -> pa.Table:
        """Read the file (or the given ``row_groups``) into one table."""
        groups = range(self.num_row_groups) if row_groups is None else list(row_groups)
        if columns is not None and len(columns) == 0:  # rows without columns (concat drops them)
            rows = sum(self.read_row_group(i, columns).num_rows for i in groups)
            return pa.table({"_": pa.nulls(rows)}).drop(["_"])
        tables = [self.read_row_group(i, columns) for i in groups]
        if not tables:
            fields = [self._field(c) for c in self._select(columns)]
            return pa.schema(fields).empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def iter_batches(self, batch_size: int = 65536, row_groups=None, columns=None):
        """Yield record batches of at most ``batch_size`` rows, one row group at a time."""
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        groups = range(self.num_row_groups) if row_groups is None else list(row_groups)
        for i in groups:
            yield from self.read_row_group(i, columns).to_batches(max_chunksize=batch_size)


def _restore(array: pa.Array, stored: pa.DataType) -> pa.Array:
    """Give ``array`` the stored Arrow type where that is a lossless view of it."""
    if array.type == stored:
        return array
    try:
        if pa.types.is_dictionary(stored):
            return array.cast(stored.value_type).dictionary_encode().cast(stored)
        return array.cast(stored)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return array


def read_table(source, *, columns=None, row_groups=None, filesystem=None,
               verify_checksums: bool = False, decryption_properties=None) -> pa.Table:
    """Read a Parquet file into a ``pyarrow.Table``.

    Args:
        source: a path, a ``pyarrow.fs`` URI, bytes, or a seekable binary file object.
        columns: top-level column names to read (None: all).
        row_groups: row group ordinals to read (None: all).
        filesystem: a ``pyarrow.fs.FileSystem`` to open ``source`` on.
        verify_checksums: check page CRC32s where present.
        decryption_properties: ``metaindex.crypto.FileDecryptionProperties`` for encrypted files.
    """
    with ParquetFile(source, filesystem=filesystem, verify_checksums=verify_checksums,
                     decryption_properties=decryption_properties) as pf:
        return pf.read(columns, row_groups)
