"""Reading Parquet files on our kernels.

This first cut reads flat schemas (every primitive type, any encoding, codec and page version)
written by us, pyarrow or parquet-java; nested columns, page indexes, bloom filters and decryption
are added by the Parquet files, bloom and PME issues.
"""

from __future__ import annotations

import base64
import os

import numpy as np
import pyarrow as pa

from metaindex.errors import DecodeError, SchemaError, UnsupportedFeatureError
from metaindex.parquet import format as fmt
from metaindex.parquet import values as vals
from metaindex.parquet.pages import ColumnSpec, read_chunk
from metaindex.parquet.schema import arrow_for_leaf

__all__ = ["ParquetFile", "read_table", "read_footer"]

MAGIC = b"PAR1"
ARROW_SCHEMA_KEY = "ARROW:schema"
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2


def read_footer(data) -> fmt.FileMetaData:
    """Decode the footer of a whole Parquet file held in ``data`` (bytes-like)."""
    view = memoryview(data)
    size = len(view)
    if size < 12:
        raise DecodeError(f"not a Parquet file: {size} bytes is shorter than the 12-byte frame")
    if bytes(view[:4]) != MAGIC:
        raise DecodeError(f"not a Parquet file: starts with {bytes(view[:4])!r}, not b'PAR1'", offset=0)
    tail = bytes(view[-4:])
    if tail == b"PARE":
        raise UnsupportedFeatureError("encrypted-footer Parquet file (PARE): decryption "
                                      "arrives with the PME issue")
    if tail != MAGIC:
        raise DecodeError(f"not a Parquet file: ends with {tail!r}, not b'PAR1'", offset=size - 4)
    length = int.from_bytes(view[-8:-4], "little")
    if length > size - 12:
        raise DecodeError("footer length runs past the start of the file",
                          offset=size - 8, needed=length, remaining=size - 12)
    return fmt.FileMetaData.from_bytes(view[size - 8 - length:size - 8])


class ParquetFile:
    """A Parquet file opened for reading (flat schemas in this version).

    Args:
        source: a path or a bytes-like object holding the whole file.
    """

    def __init__(self, source):
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data = memoryview(source)
        elif isinstance(source, (str, os.PathLike)):
            with open(os.fspath(source), "rb") as fh:
                self._data = memoryview(fh.read())
        elif hasattr(source, "read"):
            self._data = memoryview(source.read())
        else:
            raise TypeError("ParquetFile takes a path, bytes, or a binary file object, "
                            f"not {type(source).__name__}")
        self.metadata = read_footer(self._data)
        self._leaves = self._flat_leaves()

    def _flat_leaves(self):
        schema = self.metadata.schema or []
        if not schema:
            raise DecodeError("footer has an empty schema")
        root = schema[0]
        children = root.num_children or 0
        if children != len(schema) - 1 or any(e.num_children for e in schema[1:]):
            raise UnsupportedFeatureError("nested Parquet schemas are read by the Parquet files issue")
        leaves = []
        for element in schema[1:]:
            if element.type is None:
                raise DecodeError(f"leaf column {element.name!r} has no physical type")
            rep = element.repetition_type
            if rep == REPEATED:
                raise UnsupportedFeatureError("repeated columns are read by the Parquet files issue")
            max_def = 1 if rep == OPTIONAL else 0
            spec = ColumnSpec((element.name,), element.type, element.type_length or 0, max_def, 0)
            leaves.append((element, spec, arrow_for_leaf(element)))
        stored = self._stored_arrow_schema()
        if stored is not None and stored.names == [e.name for e, _, _ in leaves]:
            leaves = [(e, s, _restore_type(t, stored.field(i).type))
                      for i, (e, s, t) in enumerate(leaves)]
        return leaves

    def _stored_arrow_schema(self) -> pa.Schema | None:
        """The Arrow schema pyarrow (and we) store under ``ARROW:schema``, if readable."""
        for kv in self.metadata.key_value_metadata or []:
            if kv.key == ARROW_SCHEMA_KEY and kv.value:
                try:
                    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(kv.value)))
                except Exception:  # a foreign or damaged entry: fall back to the Parquet types
                    return None
        return None

    @property
    def num_row_groups(self) -> int:
        return len(self.metadata.row_groups or [])

    @property
    def schema_arrow(self) -> pa.Schema:
        return pa.schema([pa.field(e.name, t, nullable=s.max_def > 0) for e, s, t in self._leaves])

    def read_row_group(self, i: int, columns=None) -> pa.Table:
        if not 0 <= i < self.num_row_groups:
            raise IndexError(f"row group {i} out of range (file has {self.num_row_groups})")
        rg = self.metadata.row_groups[i]
        if len(rg.columns or []) != len(self._leaves):
            raise DecodeError(f"row group {i} has {len(rg.columns or [])} columns, "
                              f"the schema {len(self._leaves)}")
        wanted = self._select(columns)
        arrays, fields = [], []
        for index in wanted:
            element, spec, arrow_type = self._leaves[index]
            arrays.append(self._read_column(rg, index, spec, arrow_type))
            fields.append(pa.field(element.name, arrow_type, nullable=spec.max_def > 0))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def read(self, columns=None) -> pa.Table:
        tables = [self.read_row_group(i, columns) for i in range(self.num_row_groups)]
        if not tables:
            schema = self.schema_arrow
            names = [schema.names[i] for i in self._select(columns)]
            return pa.Table.from_pylist([], schema=pa.schema([schema.field(n) for n in names]))
        return pa.concat_tables(tables)

    def _select(self, columns):
        names = [e.name for e, _, _ in self._leaves]
        if columns is None:
            return list(range(len(names)))
        out = []
        for name in columns:
            if name not in names:
                raise SchemaError(f"no column {name!r} in the file; it has {names}")
            out.append(names.index(name))
        return out

    def _read_column(self, rg, index, spec, arrow_type) -> pa.Array:
        meta = rg.columns[index].meta_data
        if meta is None:
            raise DecodeError(f"column chunk {index} has no metadata")
        if meta.type != spec.physical_type:
            raise DecodeError(f"column {spec.path[0]!r}: chunk type {meta.type} "
                              f"disagrees with the schema's {spec.physical_type}")
        # The chunk starts at its first page: the dictionary page when there is one. Writers
        # disagree on unused offsets (pyarrow writes data_page_offset 0 for an empty chunk
        # after a dictionary page; others write dictionary_page_offset 0 for "none"), so take
        # the smallest offset that can be a page.
        offsets = [o for o in (meta.dictionary_page_offset, meta.data_page_offset)
                   if o is not None and o >= 4]
        start = min(offsets) if offsets else None
        size = meta.total_compressed_size
        if meta.num_values == 0 and size == 0:
            start = 4  # an empty chunk with no pages at all
        if start is None or size is None or start < 4 or size < 0 or start + size > len(self._data) - 8:
            raise DecodeError(f"column {spec.path[0]!r}: chunk bytes {start}+{size} lie outside the file")
        data = read_chunk(self._data[start:start + size], start, spec, meta)
        present = vals.to_arrow(data.values, spec.physical_type, arrow_type)
        if data.def_levels is None:
            return present
        return _spread(present, data.def_levels == spec.max_def)


def _spread(present: pa.Array, valid: np.ndarray) -> pa.Array:
    """Place ``present`` values at the True positions of ``valid``; nulls elsewhere."""
    n = len(valid)
    if len(present) == n:
        return present
    # Arrow's `take` with null indices builds the nullable array in C++.
    index = np.cumsum(valid, dtype=np.int64) - 1
    return present.take(pa.array(index, mask=~valid))


def _restore_type(parquet_type: pa.DataType, stored: pa.DataType) -> pa.DataType:
    """Use the stored Arrow type where it is a lossless view of the Parquet one."""
    if stored == parquet_type:
        return parquet_type
    same_family = (
        (pa.types.is_large_string(stored) and pa.types.is_string(parquet_type))
        or (pa.types.is_large_binary(stored) and pa.types.is_binary(parquet_type))
        or (pa.types.is_timestamp(stored) and pa.types.is_timestamp(parquet_type)
            and stored.unit == parquet_type.unit and (stored.tz is None) == (parquet_type.tz is None))
    )
    return stored if same_family else parquet_type


def read_table(source, *, columns=None) -> pa.Table:
    """Read a whole Parquet file into a ``pyarrow.Table``."""
    return ParquetFile(source).read(columns)
