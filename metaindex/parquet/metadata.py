"""pyarrow.parquet's metadata objects on top of our typed Thrift footer.

``FileMetaData``, ``RowGroupMetaData``, ``ColumnChunkMetaData``, ``Statistics``,
``ParquetSchema``, ``ColumnSchema``, ``ParquetLogicalType`` and ``SortingColumn`` have
pyarrow's names, attributes and string values ("INT32", "SNAPPY", "PLAIN"...). They are views:
built on first access from the decoded footer (``metaindex.parquet.format.FileMetaData``, kept
as ``FileMetaData.thrift``), so reading data never pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa

from metaindex.errors import DecodeError, SchemaError
from metaindex.parquet import format as fmt
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet.format import MAGIC
from metaindex.parquet.schema import arrow_for_leaf, arrow_schema_of

__all__ = [
    "FileMetaData",
    "RowGroupMetaData",
    "ColumnChunkMetaData",
    "Statistics",
    "ParquetSchema",
    "ColumnSchema",
    "ParquetLogicalType",
    "SortingColumn",
    "write_metadata_file",
]

_INTERNAL = "Do not call {}'s constructor directly"


def _new(cls, **attrs):
    obj = object.__new__(cls)
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


def _name(enum_cls, value) -> str:
    try:
        return enum_cls(value).name
    except ValueError:
        return f"UNKNOWN({value})"


# ---------------------------------------------------------------------------- schema


class _Compared:
    """pyarrow's ``equals()`` / ``==`` for a metadata object: equal when both are of the same
    class and their :meth:`_identity` is equal; ``equals`` refuses another class as pyarrow
    does. Unhashable unless a class says otherwise (defining ``__eq__`` sets ``__hash__`` to
    None)."""

    def _identity(self):
        raise NotImplementedError

    def equals(self, other) -> bool:
        if not isinstance(other, type(self)):
            raise TypeError(
                f"Argument 'other' has incorrect type (expected "
                f"{type(self).__name__}, got {type(other).__name__})"
            )
        return self._identity() == other._identity()

    def __eq__(self, other):
        return isinstance(other, type(self)) and self.equals(other)


class ParquetLogicalType:
    """A leaf's logical type; ``type`` is pyarrow's name ("STRING", "TIMESTAMP", "NONE"...)."""

    _logical: fmt.LogicalType | None

    def __init__(self):
        raise TypeError(_INTERNAL.format("ParquetLogicalType"))

    @property
    def type(self) -> str:
        which = None if self._logical is None else self._logical.which
        if which is None:
            return "NONE"
        return {"INTEGER": "INT"}.get(which, which)

    def __str__(self) -> str:
        return self.type if self._logical is None else repr(self._logical)

    def __repr__(self) -> str:
        return f"<ParquetLogicalType {self.type}>"

    def to_json(self) -> str:
        import json

        return json.dumps({"Type": self.type})


class ColumnSchema(_Compared):
    """One leaf column of a Parquet schema."""

    _element: fmt.SchemaElement
    _path: tuple[str, ...]
    max_definition_level: int
    max_repetition_level: int

    def __init__(self):
        raise TypeError(_INTERNAL.format("ColumnSchema"))

    @property
    def name(self) -> str:
        return self._element.name

    @property
    def path(self) -> str:
        return ".".join(self._path)

    @property
    def physical_type(self) -> str:
        return _name(fmt.Type, self._element.type)

    @property
    def logical_type(self) -> ParquetLogicalType:
        return _new(ParquetLogicalType, _logical=self._element.logicalType)

    @property
    def converted_type(self) -> str:
        c = self._element.converted_type
        return "NONE" if c is None else _name(fmt.ConvertedType, c)

    @property
    def length(self):
        return (
            self._element.type_length
            if self._element.type == fmt.Type.FIXED_LEN_BYTE_ARRAY
            else None
        )

    @property
    def precision(self):
        d = self._decimal()
        return None if d is None else d[0]

    @property
    def scale(self):
        d = self._decimal()
        return None if d is None else d[1]

    def _decimal(self):
        e = self._element
        if e.logicalType is not None and e.logicalType.DECIMAL is not None:
            return e.logicalType.DECIMAL.precision, e.logicalType.DECIMAL.scale
        if e.converted_type == fmt.ConvertedType.DECIMAL:
            return e.precision, e.scale or 0
        return None

    def _key(self):
        return (self._path, self._element, self.max_definition_level, self.max_repetition_level)

    def _identity(self):
        return self._key()

    def __repr__(self) -> str:
        return (
            f"<ParquetColumnSchema>\n  name: {self.name}\n  path: {self.path}\n"
            f"  max_definition_level: {self.max_definition_level}\n"
            f"  max_repetition_level: {self.max_repetition_level}\n"
            f"  physical_type: {self.physical_type}\n"
            f"  logical_type: {self.logical_type.type}\n"
            f"  converted_type (legacy): {self.converted_type}"
        )


def _leaves(elements: list) -> list[ColumnSchema]:
    """Every leaf of a flattened schema with its dotted path and max levels."""
    out = []
    pos = 1

    def walk(path, d, r, depth):
        nonlocal pos
        if pos >= len(elements) or depth > 1000:
            raise SchemaError("schema ends inside a group")
        e = elements[pos]
        pos += 1
        rep = e.repetition_type or 0
        d2 = d + (1 if rep in (1, 2) else 0)
        r2 = r + (1 if rep == 2 else 0)
        if not e.num_children:
            out.append(
                _new(
                    ColumnSchema,
                    _element=e,
                    _path=tuple(path + [e.name]),
                    max_definition_level=d2,
                    max_repetition_level=r2,
                )
            )
            return
        for _ in range(e.num_children):
            walk(path + [e.name], d2, r2, depth + 1)

    root = elements[0] if elements else None
    for _ in range((root.num_children or 0) if root is not None else 0):
        walk([], 0, 0, 1)
    return out


class ParquetSchema(_Compared):
    """The leaf columns of a Parquet file's schema (``schema[i]``, ``len(schema)``)."""

    _elements: list[fmt.SchemaElement]
    _arrow: Callable[[], pa.Schema]

    def __init__(self):
        raise TypeError(_INTERNAL.format("ParquetSchema"))

    @property
    def _columns(self) -> list[ColumnSchema]:
        cols = self.__dict__.get("_cols")
        if cols is None:
            cols = self.__dict__["_cols"] = _leaves(self._elements)
        return cols

    def __len__(self) -> int:
        return len(self._columns)

    def __getitem__(self, i: int) -> ColumnSchema:
        return self.column(i)

    def column(self, i: int) -> ColumnSchema:
        if not isinstance(i, int) or not 0 <= i < len(self._columns):
            raise IndexError(
                f"column index {i} out of range (the schema has {len(self._columns)} leaf columns)"
            )
        return self._columns[i]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self._columns]

    def to_arrow_schema(self) -> pa.Schema:
        return self._arrow()

    def _identity(self):
        return self._elements

    def __repr__(self) -> str:
        lines = [f"{c.path}: {c.physical_type}" for c in self._columns]
        return "<pyarrow-compatible ParquetSchema>\n" + "\n".join(lines)


# ---------------------------------------------------------------------------- statistics


class Statistics(_Compared):
    """A column chunk's statistics, with min/max as Python values of the column's type."""

    _stats: fmt.Statistics
    _element: fmt.SchemaElement
    _created_by: str | None
    _order: fmt.ColumnOrder | None
    _num_values: int

    def __init__(self):
        raise TypeError(_INTERNAL.format("Statistics"))

    @property
    def _decoded(self):
        d = self.__dict__.get("_dec")
        if d is None:
            d = self.__dict__["_dec"] = stats_mod.decode(
                self._stats, self._element, self._created_by, self._order
            )
        return d

    @property
    def has_min_max(self) -> bool:
        return self._decoded.min is not None

    @property
    def min(self):
        return self._convert(self._decoded.min)

    @property
    def max(self):
        return self._convert(self._decoded.max)

    @property
    def min_raw(self):
        return self._decoded.min

    @property
    def max_raw(self):
        return self._decoded.max

    def _convert(self, value):
        if value is None:
            return None
        t = arrow_for_leaf(self._element)
        if pa.types.is_temporal(t) and isinstance(value, int):
            return (
                pa.scalar(value, type=pa.int64() if t.bit_width == 64 else pa.int32())
                .cast(t)
                .as_py()
            )
        return value

    @property
    def has_null_count(self) -> bool:
        return self._stats.null_count is not None

    @property
    def null_count(self):
        return self._decoded.null_count

    @property
    def has_distinct_count(self) -> bool:
        return self._stats.distinct_count is not None

    @property
    def distinct_count(self):
        return self._decoded.distinct_count

    @property
    def num_values(self) -> int:
        return self._num_values - (self._decoded.null_count or 0)

    @property
    def physical_type(self) -> str:
        return _name(fmt.Type, self._element.type)

    @property
    def logical_type(self) -> ParquetLogicalType:
        return _new(ParquetLogicalType, _logical=self._element.logicalType)

    @property
    def converted_type(self):
        c = self._element.converted_type
        return None if c is None else _name(fmt.ConvertedType, c)

    @property
    def is_min_exact(self) -> bool:
        return self._stats.is_min_value_exact is not False

    @property
    def is_max_exact(self) -> bool:
        return self._stats.is_max_value_exact is not False

    def to_dict(self) -> dict:
        return {
            "has_min_max": self.has_min_max,
            "min": self.min,
            "max": self.max,
            "null_count": self.null_count,
            "distinct_count": self.distinct_count,
            "num_values": self.num_values,
            "physical_type": self.physical_type,
        }

    def _identity(self):
        return self.to_dict()

    def __repr__(self) -> str:
        return "<Statistics>\n" + "\n".join(f"  {k}: {v}" for k, v in self.to_dict().items())


# ---------------------------------------------------------------------------- sorting


class SortingColumn:
    """How a row group is sorted by one leaf column (``column_index`` counts leaves)."""

    def __init__(self, column_index: int, descending: bool = False, nulls_first: bool = False):
        self.column_index = int(column_index)
        self.descending = bool(descending)
        self.nulls_first = bool(nulls_first)

    @classmethod
    def from_ordering(cls, schema: pa.Schema, sort_keys, null_placement: str = "at_end"):
        """Sorting columns from Arrow sort keys (``"name"`` or ``("name", "descending")``)."""
        if null_placement not in ("at_start", "at_end"):
            raise ValueError(
                f"null_placement must be 'at_start' or 'at_end', not {null_placement!r}"
            )
        paths = _leaf_paths(schema)
        if isinstance(sort_keys, str) or (
            isinstance(sort_keys, tuple)
            and len(sort_keys) == 2
            and isinstance(sort_keys[1], str)
            and sort_keys[1] in ("ascending", "descending", "not a valid sort order")
        ):
            sort_keys = (sort_keys,)
        out = []
        for key in sort_keys:
            name, order = (key, "ascending") if isinstance(key, str) else key
            if order not in ("ascending", "descending"):
                raise ValueError(f"sort order must be 'ascending' or 'descending', not {order!r}")
            if name not in paths:
                raise ValueError(f"no leaf column {name!r} in the schema")
            out.append(cls(paths.index(name), order == "descending", null_placement == "at_start"))
        return tuple(out)

    @staticmethod
    def to_ordering(schema: pa.Schema, sorting_columns):
        """``(sort_keys, null_placement)`` for Arrow from sorting columns."""
        paths = _leaf_paths(schema)
        keys, placement = [], None
        for col in sorting_columns:
            here = "at_start" if col.nulls_first else "at_end"
            if placement is not None and here != placement:
                raise ValueError("Sorting columns have inconsistent null placement")
            placement = here
            keys.append((paths[col.column_index], "descending" if col.descending else "ascending"))
        return tuple(keys), placement or "at_end"

    def to_dict(self) -> dict:
        return {
            "column_index": self.column_index,
            "descending": self.descending,
            "nulls_first": self.nulls_first,
        }

    def to_thrift(self) -> fmt.SortingColumn:
        return fmt.SortingColumn(
            column_idx=self.column_index, descending=self.descending, nulls_first=self.nulls_first
        )

    def __eq__(self, other):
        return isinstance(other, SortingColumn) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash((self.column_index, self.descending, self.nulls_first))

    def __repr__(self) -> str:
        return (
            f"SortingColumn(column_index={self.column_index}, "
            f"descending={self.descending}, nulls_first={self.nulls_first})"
        )


def _leaf_paths(schema: pa.Schema) -> list[str]:
    out = []

    def walk(prefix, t):
        if pa.types.is_struct(t):
            for f in t:
                walk(f"{prefix}.{f.name}", f.type)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(f"{prefix}.list.{t.value_field.name}", t.value_type)
        elif pa.types.is_map(t):
            walk(f"{prefix}.key_value.key", t.key_type)
            walk(f"{prefix}.key_value.value", t.item_type)
        else:
            out.append(prefix)

    for f in schema:
        walk(f.name, f.type)
    return out


# ---------------------------------------------------------------------------- chunks / groups


class ColumnChunkMetaData(_Compared):
    """One column chunk of a row group."""

    _chunk: fmt.ColumnChunk
    _column: ColumnSchema
    _created_by: str | None
    _order: fmt.ColumnOrder | None

    def __init__(self):
        raise TypeError(_INTERNAL.format("ColumnChunkMetaData"))

    @property
    def _meta(self) -> fmt.ColumnMetaData:
        meta = self._chunk.meta_data
        if meta is None:
            raise DecodeError(
                "a column chunk without column metadata (an encrypted footer "
                "read without its key, or a corrupt file)"
            )
        return meta

    @property
    def file_offset(self) -> int:
        return self._chunk.file_offset or 0

    @property
    def file_path(self) -> str:
        return self._chunk.file_path or ""

    @property
    def physical_type(self) -> str:
        return _name(fmt.Type, self._meta.type)

    @property
    def num_values(self) -> int:
        return self._meta.num_values

    @property
    def path_in_schema(self) -> str:
        return ".".join(self._meta.path_in_schema or [])

    @property
    def is_stats_set(self) -> bool:
        return self._meta.statistics is not None

    @property
    def statistics(self) -> Statistics | None:
        if self._meta.statistics is None:
            return None
        return _new(
            Statistics,
            _stats=self._meta.statistics,
            _element=self._column._element,
            _created_by=self._created_by,
            _order=self._order,
            _num_values=self._meta.num_values,
        )

    @property
    def compression(self) -> str:
        name = _name(fmt.CompressionCodec, self._meta.codec)
        return {"LZ4": "LZ4_HADOOP", "LZ4_RAW": "LZ4"}.get(name, name)

    @property
    def encodings(self) -> tuple:
        return tuple(_name(fmt.Encoding, e) for e in self._meta.encodings or [])

    @property
    def has_dictionary_page(self) -> bool:
        return bool(self._meta.dictionary_page_offset)

    @property
    def dictionary_page_offset(self):
        return self._meta.dictionary_page_offset if self.has_dictionary_page else None

    @property
    def data_page_offset(self) -> int:
        return self._meta.data_page_offset

    @property
    def has_index_page(self):
        raise NotImplementedError("not supported in parquet-format (index pages are unused)")

    @property
    def index_page_offset(self):
        raise NotImplementedError("not supported in parquet-format (index pages are unused)")

    @property
    def total_compressed_size(self) -> int:
        return self._meta.total_compressed_size

    @property
    def total_uncompressed_size(self) -> int:
        return self._meta.total_uncompressed_size

    @property
    def has_offset_index(self) -> bool:
        return self._chunk.offset_index_offset is not None

    @property
    def has_column_index(self) -> bool:
        return self._chunk.column_index_offset is not None

    @property
    def bloom_filter_offset(self):
        return self._meta.bloom_filter_offset

    @property
    def bloom_filter_length(self):
        return self._meta.bloom_filter_length

    @property
    def metadata(self) -> dict | None:
        kv = self._meta.key_value_metadata
        if not kv:
            return None
        return {_b(e.key): _b(e.value or "") for e in kv}

    @property
    def is_geo_stats_set(self) -> bool:
        return self._meta.geospatial_statistics is not None

    def to_dict(self) -> dict:
        stats = self.statistics
        return {
            "file_offset": self.file_offset,
            "file_path": self.file_path,
            "physical_type": self.physical_type,
            "num_values": self.num_values,
            "path_in_schema": self.path_in_schema,
            "is_stats_set": self.is_stats_set,
            "statistics": None if stats is None else stats.to_dict(),
            "geo_statistics": None,
            "compression": self.compression,
            "encodings": self.encodings,
            "has_dictionary_page": self.has_dictionary_page,
            "dictionary_page_offset": self.dictionary_page_offset,
            "data_page_offset": self.data_page_offset,
            "total_compressed_size": self.total_compressed_size,
            "total_uncompressed_size": self.total_uncompressed_size,
            "bloom_filter_offset": self.bloom_filter_offset,
            "bloom_filter_length": self.bloom_filter_length,
        }

    def _identity(self):
        return self._chunk

    def __repr__(self) -> str:
        return "<ColumnChunkMetaData>\n" + "\n".join(
            f"  {k}: {v}" for k, v in self.to_dict().items()
        )


def _b(s) -> bytes:
    return s if isinstance(s, bytes) else str(s).encode("utf-8", "surrogateescape")


class RowGroupMetaData(_Compared):
    """One row group of a file."""

    _rg: fmt.RowGroup
    _file: FileMetaData

    def __init__(self):
        raise TypeError(_INTERNAL.format("RowGroupMetaData"))

    @property
    def num_columns(self) -> int:
        return len(self._rg.columns or [])

    @property
    def num_rows(self) -> int:
        return self._rg.num_rows

    @property
    def total_byte_size(self) -> int:
        return self._rg.total_byte_size

    @property
    def sorting_columns(self) -> tuple:
        return tuple(
            SortingColumn(s.column_idx, s.descending, s.nulls_first)
            for s in self._rg.sorting_columns or []
        )

    def column(self, i: int) -> ColumnChunkMetaData:
        if not isinstance(i, int) or not 0 <= i < self.num_columns:
            raise IndexError(
                f"column index {i} out of range (the row group has {self.num_columns} columns)"
            )
        file = self._file
        orders = file.thrift.column_orders
        return _new(
            ColumnChunkMetaData,
            _chunk=self._rg.columns[i],
            _column=file.schema.column(i),
            _created_by=file.thrift.created_by,
            _order=orders[i] if orders and i < len(orders) else None,
        )

    def to_dict(self) -> dict:
        return {
            "num_columns": self.num_columns,
            "num_rows": self.num_rows,
            "total_byte_size": self.total_byte_size,
            "columns": [self.column(i).to_dict() for i in range(self.num_columns)],
            "sorting_columns": [c.to_dict() for c in self.sorting_columns],
        }

    def _identity(self):
        return self._rg

    def __repr__(self) -> str:
        return (
            f"<RowGroupMetaData>\n  num_columns: {self.num_columns}\n"
            f"  num_rows: {self.num_rows}\n  total_byte_size: {self.total_byte_size}"
        )


# ---------------------------------------------------------------------------- file


class FileMetaData(_Compared):
    """A Parquet file's footer with pyarrow's ``FileMetaData`` API.

    Attributes:
        thrift: our decoded footer (:class:`metaindex.parquet.format.FileMetaData`), the
            source of every value here; changes made through ``append_row_groups`` and
            ``set_file_path`` are made to it.
    """

    thrift: fmt.FileMetaData
    serialized_size: int
    _arrow: Callable[[], pa.Schema] | None

    def __init__(self):
        raise TypeError(_INTERNAL.format("FileMetaData"))

    @classmethod
    def _of(
        cls, footer: fmt.FileMetaData, serialized_size: int = 0, arrow_schema=None
    ) -> FileMetaData:
        """A view of ``footer`` (``arrow_schema``: a callable giving the file's Arrow schema)."""
        return _new(cls, thrift=footer, serialized_size=serialized_size, _arrow=arrow_schema)

    @property
    def created_by(self) -> str | None:
        return self.thrift.created_by

    @property
    def num_columns(self) -> int:
        return len(self.schema)

    @property
    def num_rows(self) -> int:
        return self.thrift.num_rows or 0

    @property
    def num_row_groups(self) -> int:
        return len(self.thrift.row_groups or [])

    @property
    def format_version(self) -> str:
        return "1.0" if self.thrift.version == 1 else "2.6"

    @property
    def metadata(self) -> dict | None:
        kv = self.thrift.key_value_metadata
        if not kv:
            return None
        return {_b(e.key): _b(e.value or "") for e in kv}

    @property
    def schema(self) -> ParquetSchema:
        s = self.__dict__.get("_schema")
        if s is None:
            s = self.__dict__["_schema"] = _new(
                ParquetSchema, _elements=self.thrift.schema, _arrow=self._arrow_schema
            )
        return s

    def _arrow_schema(self) -> pa.Schema:
        if self._arrow is not None:
            return self._arrow()
        return arrow_schema_of(self.thrift)

    def row_group(self, i: int) -> RowGroupMetaData:
        if not isinstance(i, int) or not 0 <= i < self.num_row_groups:
            raise IndexError(f"row group {i} out of range (the file has {self.num_row_groups})")
        return _new(RowGroupMetaData, _rg=self.thrift.row_groups[i], _file=self)

    def to_dict(self) -> dict:
        return {
            "created_by": self.created_by,
            "num_columns": self.num_columns,
            "num_rows": self.num_rows,
            "num_row_groups": self.num_row_groups,
            "row_groups": [self.row_group(i).to_dict() for i in range(self.num_row_groups)],
            "format_version": self.format_version,
            "serialized_size": self.serialized_size,
        }

    def _identity(self):
        return self.thrift

    def __hash__(self):
        return hash(
            (
                tuple((e.name, e.type, e.num_children) for e in self.thrift.schema),
                self.num_rows,
                self.num_row_groups,
            )
        )

    def __repr__(self) -> str:
        return (
            f"<FileMetaData>\n  created_by: {self.created_by}\n"
            f"  num_columns: {self.num_columns}\n  num_rows: {self.num_rows}\n"
            f"  num_row_groups: {self.num_row_groups}\n"
            f"  format_version: {self.format_version}\n"
            f"  serialized_size: {self.serialized_size}"
        )

    def set_file_path(self, path: str) -> None:
        """Set ``file_path`` of every column chunk (for a ``_metadata`` summary file)."""
        for rg in self.thrift.row_groups or []:
            for chunk in rg.columns or []:
                chunk.file_path = path

    def append_row_groups(self, other: FileMetaData) -> None:
        """Append the row groups of ``other``, which must have the same schema.

        Raises:
            RuntimeError: the schemas differ (pyarrow's error, message included).
        """
        if not isinstance(other, FileMetaData):
            raise TypeError(
                "Argument 'other' has incorrect type (expected FileMetaData, got "
                f"{type(other).__name__})"
            )
        mine, theirs = self.schema, other.schema
        if len(mine) != len(theirs):
            raise RuntimeError(
                f"AppendRowGroups requires equal schemas.\nThis schema has "
                f"{len(mine)} columns, other has {len(theirs)}"
            )
        for i in range(len(mine)):
            if not mine[i].equals(theirs[i]):
                raise RuntimeError(
                    "AppendRowGroups requires equal schemas.\nThe two columns "
                    f"with index {i} differ."
                )
        groups = list(self.thrift.row_groups or [])
        for rg in other.thrift.row_groups or []:
            groups.append(fmt.RowGroup.from_bytes(rg.to_bytes()))
        self.thrift.row_groups = groups
        self.thrift.num_rows = sum(rg.num_rows for rg in groups)

    def write_metadata_file(self, where) -> None:
        """Write a metadata-only Parquet file (``PAR1``, this footer, ``PAR1``) to ``where``."""
        write_metadata_file(self.thrift, where)

    def __reduce__(self):
        return (_rebuild, (self.thrift.to_bytes(), self.serialized_size))


def _rebuild(blob: bytes, serialized_size: int) -> FileMetaData:
    return FileMetaData._of(fmt.FileMetaData.from_bytes(blob), serialized_size)


def write_metadata_file(footer: fmt.FileMetaData, where) -> None:
    """Write ``footer`` as a metadata-only Parquet file to a path or writable file object."""
    blob = footer.to_bytes()
    data = MAGIC + blob + len(blob).to_bytes(4, "little") + MAGIC
    if hasattr(where, "write"):
        where.write(data)
        return
    with open(os.fspath(where), "wb") as f:
        f.write(data)
