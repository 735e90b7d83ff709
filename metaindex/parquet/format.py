"""Parquet's Thrift metadata (``parquet.thrift``) as plain Python objects.

Every struct and union of apache/parquet-format's ``parquet.thrift`` is a class here whose
``FIELDS`` table is data: one ``(id, name, type, spec, required)`` tuple per field, ids and names
exactly as in the IDL, in IDL order (the order parquet-cpp and parquet-java write them). The
Thrift compact protocol kernel (``metaindex._native.thrift``) reads and writes every class from
its table; nothing here is hand-written per struct.

The model:

* Instances have ``__slots__``, a keyword constructor (every field defaults to None), value
  ``__eq__`` and a ``__repr__`` that lists the fields that are set (enum values by name).
  None means "absent": an empty list is a present, empty list, so re-encoding is identical.
* Enum-typed fields (``Type``, ``Encoding``...) hold plain ints, so a value from a newer
  writer decodes; the ``IntEnum`` classes name the known values.
* A union is a struct with exactly one member set (``.which`` names it); ``to_bytes``
  refuses anything else. ``LogicalType(TIMESTAMP=TimestampType(...))``.
* ``to_bytes()``; ``Cls.from_bytes(data)`` (the whole buffer must be one struct, trailing bytes
  raise ``DecodeError``); ``Cls.decode_prefix(data, offset=0) -> (obj, end_offset)`` for
  structs followed by other data (page headers, bloom filter headers, the page index).
* Fields this model does not know, or that arrive with another wire type, are kept raw in
  ``_unknown`` and written back in place, so ``Cls.from_bytes(b).to_bytes() == b`` for what
  parquet-cpp and parquet-java write. ``obj.extension`` is the payload of the field-32767
  binary extension (``08 FF FF 01``, see "Binary Protocol Extensions" in the format docs), or
  None; assigning it adds, replaces (None: removes) the extension after the last field.
* Defaults the IDL gives (``DataPageHeaderV2.is_compressed = true``, ``ColumnChunk.file_offset
  = 0``) are not applied on decode: an absent field stays None, so readers apply them.
"""

from __future__ import annotations

import enum

from metaindex._native import thrift as _thrift
from metaindex._native.buffer import Reader, Writer
from metaindex._native.thrift import BINARY, BOOL, BYTE, DOUBLE, I16, I32, I64, LIST, STRING, STRUCT

MAGIC = b"PAR1"
"""The four bytes at both ends of a Parquet file (and at the end of one with a signed plaintext
footer)."""
ENCRYPTED_MAGIC = b"PARE"
"""The magic of a file whose footer is encrypted (Parquet Modular Encryption)."""
ARROW_SCHEMA_KEY = "ARROW:schema"
"""The key-value metadata key under which Arrow writers store the serialized Arrow schema."""

__all__ = [
    "MAGIC",
    "ENCRYPTED_MAGIC",
    "ARROW_SCHEMA_KEY",
    # model
    "Struct",
    "Union",
    # enums
    "Type",
    "ConvertedType",
    "FieldRepetitionType",
    "EdgeInterpolationAlgorithm",
    "Encoding",
    "CompressionCodec",
    "PageType",
    "BoundaryOrder",
    # statistics
    "SizeStatistics",
    "BoundingBox",
    "GeospatialStatistics",
    "Statistics",
    # logical types
    "StringType",
    "UUIDType",
    "MapType",
    "ListType",
    "VectorType",
    "EnumType",
    "DateType",
    "Float16Type",
    "NullType",
    "DecimalType",
    "MilliSeconds",
    "MicroSeconds",
    "NanoSeconds",
    "TimeUnit",
    "TimestampType",
    "TimeType",
    "IntType",
    "JsonType",
    "BsonType",
    "VariantType",
    "GeometryType",
    "GeographyType",
    "LogicalType",
    "SchemaElement",
    # pages
    "DataPageHeader",
    "IndexPageHeader",
    "DictionaryPageHeader",
    "DataPageHeaderV2",
    "SplitBlockAlgorithm",
    "BloomFilterAlgorithm",
    "XxHash",
    "BloomFilterHash",
    "Uncompressed",
    "BloomFilterCompression",
    "BloomFilterHeader",
    "PageHeader",
    # footer
    "KeyValue",
    "SortingColumn",
    "PageEncodingStats",
    "ColumnMetaData",
    "EncryptionWithFooterKey",
    "EncryptionWithColumnKey",
    "ColumnCryptoMetaData",
    "ColumnChunk",
    "RowGroup",
    "TypeDefinedOrder",
    "IEEE754TotalOrder",
    "Int96TimestampOrder",
    "ColumnOrder",
    "PageLocation",
    "OffsetIndex",
    "ColumnIndex",
    "AesGcmV1",
    "AesGcmCtrV1",
    "EncryptionAlgorithm",
    "FileMetaData",
    "FileCryptoMetaData",
]

REQ, OPT = True, False


# ------------------------------------------------------------------ the model


class _StructMeta(type):
    """Turns a class's ``FIELDS`` into ``__slots__`` and a compiled kernel spec."""

    def __new__(mcs, name, bases, ns):
        fields = ns.get("FIELDS")
        if fields is None:
            ns.setdefault("__slots__", ())
            return super().__new__(mcs, name, bases, ns)
        names = tuple(f[1] for f in fields)
        taken = [n for n in names if any(hasattr(b, n) for b in bases)]
        if taken:
            raise TypeError(f"{name}: field names {taken} clash with Struct attributes")
        ns["__slots__"] = names
        cls = super().__new__(mcs, name, bases, ns)
        cls._thrift_spec = _thrift.compile_struct(cls, fields, union=issubclass(cls, Union))
        cls._enums = {
            f[1]: f[3] for f in fields if isinstance(f[3], type) and issubclass(f[3], enum.IntEnum)
        }
        return cls


def _restore(cls, values, unknown):
    obj = object.__new__(cls)
    for name, value in zip(cls._thrift_spec.field_names, values, strict=True):
        setattr(obj, name, value)
    obj._unknown = unknown
    return obj


def _enum_repr(enum_cls, value):
    if isinstance(value, list):
        return "[" + ", ".join(_enum_repr(enum_cls, v) for v in value) + "]"
    try:
        return f"{enum_cls.__name__}.{enum_cls(value).name}"
    except ValueError:
        return repr(value)


class Struct(metaclass=_StructMeta):
    """Base of the Thrift structs: subclasses define ``FIELDS`` (see the module docstring)."""

    __slots__ = ("_unknown",)

    def __init__(self, **fields):
        names = self._thrift_spec.field_names
        for name in names:
            setattr(self, name, fields.pop(name, None))
        if fields:
            raise TypeError(
                f"{type(self).__name__} has no field(s) {sorted(fields)}; "
                f"its fields are {list(names)}"
            )
        self._unknown = None

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(
            getattr(self, n) == getattr(other, n) for n in self._thrift_spec.field_names
        ) and (self._unknown or []) == (other._unknown or [])

    __hash__ = None

    def __repr__(self):
        parts = []
        for name in self._thrift_spec.field_names:
            value = getattr(self, name, None)
            if value is not None:
                enum_cls = self._enums.get(name)
                parts.append(f"{name}={_enum_repr(enum_cls, value) if enum_cls else repr(value)}")
        if getattr(self, "_unknown", None):
            parts.append(f"_unknown={self._unknown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self):
        values = tuple(getattr(self, n) for n in self._thrift_spec.field_names)
        return _restore, (type(self), values, self._unknown)

    def to_bytes(self) -> bytes:
        """This struct in the Thrift compact protocol.

        Raises:
            EncodeError: a required field is None, a value is out of range, a union does not
                have exactly one member set.
            TypeError: a field holds a value of the wrong Python type.
        """
        return _thrift.encode(self)

    @classmethod
    def from_bytes(cls, data):
        """Decode ``data`` (any contiguous buffer) that holds exactly one struct.

        Raises:
            DecodeError: truncated, corrupt or hostile input, or trailing bytes.
        """
        return _thrift.decode(data, cls)

    @classmethod
    def decode_prefix(cls, data, offset: int = 0):
        """Decode the struct at ``data[offset]``; returns ``(obj, end_offset)``.

        Raises:
            DecodeError: truncated, corrupt or hostile input.
        """
        return _thrift.decode_prefix(data, cls, offset)

    @property
    def extension(self) -> bytes | None:
        """Payload of the field-32767 binary extension, or None (settable)."""
        for fid, wire_type, raw, _ in self._unknown or ():
            if fid == _thrift.EXTENSION_FIELD_ID and wire_type == BINARY:
                return Reader(raw).size_prefixed()
        return None

    @extension.setter
    def extension(self, payload: bytes | None) -> None:
        kept = [
            u
            for u in self._unknown or ()
            if not (u[0] == _thrift.EXTENSION_FIELD_ID and u[1] == BINARY)
        ]
        if payload is not None:
            payload = bytes(payload)
            raw = Writer().uleb(len(payload)).write(payload).getvalue()
            kept.append((_thrift.EXTENSION_FIELD_ID, BINARY, raw, self._thrift_spec.last_field_id))
        self._unknown = kept or None


class Union(Struct):
    """A Thrift union: exactly one member set when encoded."""

    __slots__ = ()

    @property
    def which(self) -> str | None:
        """Name of the member that is set (None when no known member is)."""
        for name in self._thrift_spec.field_names:
            if getattr(self, name) is not None:
                return name
        return None


# ------------------------------------------------------------------ enums


class Type(enum.IntEnum):
    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7


class ConvertedType(enum.IntEnum):
    UTF8 = 0
    MAP = 1
    MAP_KEY_VALUE = 2
    LIST = 3
    ENUM = 4
    DECIMAL = 5
    DATE = 6
    TIME_MILLIS = 7
    TIME_MICROS = 8
    TIMESTAMP_MILLIS = 9
    TIMESTAMP_MICROS = 10
    UINT_8 = 11
    UINT_16 = 12
    UINT_32 = 13
    UINT_64 = 14
    INT_8 = 15
    INT_16 = 16
    INT_32 = 17
    INT_64 = 18
    JSON = 19
    BSON = 20
    INTERVAL = 21


class FieldRepetitionType(enum.IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    REPEATED = 2
    VECTOR = 3


class EdgeInterpolationAlgorithm(enum.IntEnum):
    SPHERICAL = 0
    VINCENTY = 1
    THOMAS = 2
    ANDOYER = 3
    KARNEY = 4


class Encoding(enum.IntEnum):
    PLAIN = 0
    PLAIN_DICTIONARY = 2
    RLE = 3
    BIT_PACKED = 4
    DELTA_BINARY_PACKED = 5
    DELTA_LENGTH_BYTE_ARRAY = 6
    DELTA_BYTE_ARRAY = 7
    RLE_DICTIONARY = 8
    BYTE_STREAM_SPLIT = 9


class CompressionCodec(enum.IntEnum):
    UNCOMPRESSED = 0
    SNAPPY = 1
    GZIP = 2
    LZO = 3
    BROTLI = 4
    LZ4 = 5
    ZSTD = 6
    LZ4_RAW = 7


class PageType(enum.IntEnum):
    DATA_PAGE = 0
    INDEX_PAGE = 1
    DICTIONARY_PAGE = 2
    DATA_PAGE_V2 = 3


class BoundaryOrder(enum.IntEnum):
    UNORDERED = 0
    ASCENDING = 1
    DESCENDING = 2


# ------------------------------------------------------------------ statistics


class SizeStatistics(Struct):
    FIELDS = (
        (1, "unencoded_byte_array_data_bytes", I64, None, OPT),
        (2, "repetition_level_histogram", LIST, I64, OPT),
        (3, "definition_level_histogram", LIST, I64, OPT),
    )


class BoundingBox(Struct):
    FIELDS = (
        (1, "xmin", DOUBLE, None, REQ),
        (2, "xmax", DOUBLE, None, REQ),
        (3, "ymin", DOUBLE, None, REQ),
        (4, "ymax", DOUBLE, None, REQ),
        (5, "zmin", DOUBLE, None, OPT),
        (6, "zmax", DOUBLE, None, OPT),
        (7, "mmin", DOUBLE, None, OPT),
        (8, "mmax", DOUBLE, None, OPT),
    )


class GeospatialStatistics(Struct):
    FIELDS = ((1, "bbox", STRUCT, BoundingBox, OPT), (2, "geospatial_types", LIST, I32, OPT))


class Statistics(Struct):
    """Column chunk / page statistics; min/max values are PLAIN bytes (no length prefix)."""

    FIELDS = (
        (1, "max", BINARY, None, OPT),
        (2, "min", BINARY, None, OPT),
        (3, "null_count", I64, None, OPT),
        (4, "distinct_count", I64, None, OPT),
        (5, "max_value", BINARY, None, OPT),
        (6, "min_value", BINARY, None, OPT),
        (7, "is_max_value_exact", BOOL, None, OPT),
        (8, "is_min_value_exact", BOOL, None, OPT),
        (9, "nan_count", I64, None, OPT),
    )


# ------------------------------------------------------------------ logical types


class StringType(Struct):
    FIELDS = ()


class UUIDType(Struct):
    FIELDS = ()


class MapType(Struct):
    FIELDS = ()


class ListType(Struct):
    FIELDS = ()


class VectorType(Struct):
    FIELDS = ()


class EnumType(Struct):
    FIELDS = ()


class DateType(Struct):
    FIELDS = ()


class Float16Type(Struct):
    FIELDS = ()


class NullType(Struct):
    FIELDS = ()


class DecimalType(Struct):
    FIELDS = ((1, "scale", I32, None, REQ), (2, "precision", I32, None, REQ))


class MilliSeconds(Struct):
    FIELDS = ()


class MicroSeconds(Struct):
    FIELDS = ()


class NanoSeconds(Struct):
    FIELDS = ()


class TimeUnit(Union):
    FIELDS = (
        (1, "MILLIS", STRUCT, MilliSeconds, OPT),
        (2, "MICROS", STRUCT, MicroSeconds, OPT),
        (3, "NANOS", STRUCT, NanoSeconds, OPT),
    )


class TimestampType(Struct):
    FIELDS = ((1, "isAdjustedToUTC", BOOL, None, REQ), (2, "unit", STRUCT, TimeUnit, REQ))


class TimeType(Struct):
    FIELDS = ((1, "isAdjustedToUTC", BOOL, None, REQ), (2, "unit", STRUCT, TimeUnit, REQ))


class IntType(Struct):
    FIELDS = ((1, "bitWidth", BYTE, None, REQ), (2, "isSigned", BOOL, None, REQ))


class JsonType(Struct):
    FIELDS = ()


class BsonType(Struct):
    FIELDS = ()


class VariantType(Struct):
    FIELDS = ((1, "specification_version", BYTE, None, OPT),)


class GeometryType(Struct):
    FIELDS = ((1, "crs", STRING, None, OPT),)


class GeographyType(Struct):
    FIELDS = ((1, "crs", STRING, None, OPT), (2, "algorithm", I32, EdgeInterpolationAlgorithm, OPT))


class LogicalType(Union):
    FIELDS = (
        (1, "STRING", STRUCT, StringType, OPT),
        (2, "MAP", STRUCT, MapType, OPT),
        (3, "LIST", STRUCT, ListType, OPT),
        (4, "ENUM", STRUCT, EnumType, OPT),
        (5, "DECIMAL", STRUCT, DecimalType, OPT),
        (6, "DATE", STRUCT, DateType, OPT),
        (7, "TIME", STRUCT, TimeType, OPT),
        (8, "TIMESTAMP", STRUCT, TimestampType, OPT),
        (10, "INTEGER", STRUCT, IntType, OPT),
        (11, "UNKNOWN", STRUCT, NullType, OPT),
        (12, "JSON", STRUCT, JsonType, OPT),
        (13, "BSON", STRUCT, BsonType, OPT),
        (14, "UUID", STRUCT, UUIDType, OPT),
        (15, "FLOAT16", STRUCT, Float16Type, OPT),
        (16, "VARIANT", STRUCT, VariantType, OPT),
        (17, "GEOMETRY", STRUCT, GeometryType, OPT),
        (18, "GEOGRAPHY", STRUCT, GeographyType, OPT),
        (19, "VECTOR", STRUCT, VectorType, OPT),
    )


class SchemaElement(Struct):
    """One node of the flattened (depth-first) schema tree."""

    FIELDS = (
        (1, "type", I32, Type, OPT),
        (2, "type_length", I32, None, OPT),
        (3, "repetition_type", I32, FieldRepetitionType, OPT),
        (4, "name", STRING, None, REQ),
        (5, "num_children", I32, None, OPT),
        (6, "converted_type", I32, ConvertedType, OPT),
        (7, "scale", I32, None, OPT),
        (8, "precision", I32, None, OPT),
        (9, "field_id", I32, None, OPT),
        (10, "logicalType", STRUCT, LogicalType, OPT),
        (11, "vector_length", I32, None, OPT),
    )


# ------------------------------------------------------------------ pages and bloom filters


class DataPageHeader(Struct):
    FIELDS = (
        (1, "num_values", I32, None, REQ),
        (2, "encoding", I32, Encoding, REQ),
        (3, "definition_level_encoding", I32, Encoding, REQ),
        (4, "repetition_level_encoding", I32, Encoding, REQ),
        (5, "statistics", STRUCT, Statistics, OPT),
    )


class IndexPageHeader(Struct):
    FIELDS = ()


class DictionaryPageHeader(Struct):
    FIELDS = (
        (1, "num_values", I32, None, REQ),
        (2, "encoding", I32, Encoding, REQ),
        (3, "is_sorted", BOOL, None, OPT),
    )


class DataPageHeaderV2(Struct):
    """V2 data page; an absent ``is_compressed`` means compressed (IDL default true)."""

    FIELDS = (
        (1, "num_values", I32, None, REQ),
        (2, "num_nulls", I32, None, REQ),
        (3, "num_rows", I32, None, REQ),
        (4, "encoding", I32, Encoding, REQ),
        (5, "definition_levels_byte_length", I32, None, REQ),
        (6, "repetition_levels_byte_length", I32, None, REQ),
        (7, "is_compressed", BOOL, None, OPT),
        (8, "statistics", STRUCT, Statistics, OPT),
    )


class SplitBlockAlgorithm(Struct):
    FIELDS = ()


class BloomFilterAlgorithm(Union):
    FIELDS = ((1, "BLOCK", STRUCT, SplitBlockAlgorithm, OPT),)


class XxHash(Struct):
    FIELDS = ()


class BloomFilterHash(Union):
    FIELDS = ((1, "XXHASH", STRUCT, XxHash, OPT),)


class Uncompressed(Struct):
    FIELDS = ()


class BloomFilterCompression(Union):
    FIELDS = ((1, "UNCOMPRESSED", STRUCT, Uncompressed, OPT),)


class BloomFilterHeader(Struct):
    """Header in front of a bloom filter bitset of ``numBytes`` bytes."""

    FIELDS = (
        (1, "numBytes", I32, None, REQ),
        (2, "algorithm", STRUCT, BloomFilterAlgorithm, REQ),
        (3, "hash", STRUCT, BloomFilterHash, REQ),
        (4, "compression", STRUCT, BloomFilterCompression, REQ),
    )


class PageHeader(Struct):
    """Header in front of every page; exactly one ``*_header`` matches ``type``."""

    FIELDS = (
        (1, "type", I32, PageType, REQ),
        (2, "uncompressed_page_size", I32, None, REQ),
        (3, "compressed_page_size", I32, None, REQ),
        (4, "crc", I32, None, OPT),
        (5, "data_page_header", STRUCT, DataPageHeader, OPT),
        (6, "index_page_header", STRUCT, IndexPageHeader, OPT),
        (7, "dictionary_page_header", STRUCT, DictionaryPageHeader, OPT),
        (8, "data_page_header_v2", STRUCT, DataPageHeaderV2, OPT),
    )


# ------------------------------------------------------------------ footer


class KeyValue(Struct):
    FIELDS = ((1, "key", STRING, None, REQ), (2, "value", STRING, None, OPT))


class SortingColumn(Struct):
    FIELDS = (
        (1, "column_idx", I32, None, REQ),
        (2, "descending", BOOL, None, REQ),
        (3, "nulls_first", BOOL, None, REQ),
    )


class PageEncodingStats(Struct):
    FIELDS = (
        (1, "page_type", I32, PageType, REQ),
        (2, "encoding", I32, Encoding, REQ),
        (3, "count", I32, None, REQ),
    )


class ColumnMetaData(Struct):
    FIELDS = (
        (1, "type", I32, Type, REQ),
        (2, "encodings", LIST, Encoding, REQ),
        (3, "path_in_schema", LIST, STRING, REQ),
        (4, "codec", I32, CompressionCodec, REQ),
        (5, "num_values", I64, None, REQ),
        (6, "total_uncompressed_size", I64, None, REQ),
        (7, "total_compressed_size", I64, None, REQ),
        (8, "key_value_metadata", LIST, KeyValue, OPT),
        (9, "data_page_offset", I64, None, REQ),
        (10, "index_page_offset", I64, None, OPT),
        (11, "dictionary_page_offset", I64, None, OPT),
        (12, "statistics", STRUCT, Statistics, OPT),
        (13, "encoding_stats", LIST, PageEncodingStats, OPT),
        (14, "bloom_filter_offset", I64, None, OPT),
        (15, "bloom_filter_length", I32, None, OPT),
        (16, "size_statistics", STRUCT, SizeStatistics, OPT),
        (17, "geospatial_statistics", STRUCT, GeospatialStatistics, OPT),
    )


class EncryptionWithFooterKey(Struct):
    FIELDS = ()


class EncryptionWithColumnKey(Struct):
    FIELDS = ((1, "path_in_schema", LIST, STRING, REQ), (2, "key_metadata", BINARY, None, OPT))


class ColumnCryptoMetaData(Union):
    FIELDS = (
        (1, "ENCRYPTION_WITH_FOOTER_KEY", STRUCT, EncryptionWithFooterKey, OPT),
        (2, "ENCRYPTION_WITH_COLUMN_KEY", STRUCT, EncryptionWithColumnKey, OPT),
    )


class ColumnChunk(Struct):
    """A column chunk; ``file_offset`` is deprecated and written as 0 (IDL default)."""

    FIELDS = (
        (1, "file_path", STRING, None, OPT),
        (2, "file_offset", I64, None, REQ),
        (3, "meta_data", STRUCT, ColumnMetaData, OPT),
        (4, "offset_index_offset", I64, None, OPT),
        (5, "offset_index_length", I32, None, OPT),
        (6, "column_index_offset", I64, None, OPT),
        (7, "column_index_length", I32, None, OPT),
        (8, "crypto_metadata", STRUCT, ColumnCryptoMetaData, OPT),
        (9, "encrypted_column_metadata", BINARY, None, OPT),
    )


class RowGroup(Struct):
    FIELDS = (
        (1, "columns", LIST, ColumnChunk, REQ),
        (2, "total_byte_size", I64, None, REQ),
        (3, "num_rows", I64, None, REQ),
        (4, "sorting_columns", LIST, SortingColumn, OPT),
        (5, "file_offset", I64, None, OPT),
        (6, "total_compressed_size", I64, None, OPT),
        (7, "ordinal", I16, None, OPT),
    )


class TypeDefinedOrder(Struct):
    FIELDS = ()


class IEEE754TotalOrder(Struct):
    FIELDS = ()


class Int96TimestampOrder(Struct):
    FIELDS = ()


class ColumnOrder(Union):
    FIELDS = (
        (1, "TYPE_ORDER", STRUCT, TypeDefinedOrder, OPT),
        (2, "IEEE_754_TOTAL_ORDER", STRUCT, IEEE754TotalOrder, OPT),
        (3, "INT96_TIMESTAMP_ORDER", STRUCT, Int96TimestampOrder, OPT),
    )


class PageLocation(Struct):
    FIELDS = (
        (1, "offset", I64, None, REQ),
        (2, "compressed_page_size", I32, None, REQ),
        (3, "first_row_index", I64, None, REQ),
    )


class OffsetIndex(Struct):
    FIELDS = (
        (1, "page_locations", LIST, PageLocation, REQ),
        (2, "unencoded_byte_array_data_bytes", LIST, I64, OPT),
    )


class ColumnIndex(Struct):
    FIELDS = (
        (1, "null_pages", LIST, BOOL, REQ),
        (2, "min_values", LIST, BINARY, REQ),
        (3, "max_values", LIST, BINARY, REQ),
        (4, "boundary_order", I32, BoundaryOrder, REQ),
        (5, "null_counts", LIST, I64, OPT),
        (6, "repetition_level_histograms", LIST, I64, OPT),
        (7, "definition_level_histograms", LIST, I64, OPT),
        (8, "nan_counts", LIST, I64, OPT),
    )


class AesGcmV1(Struct):
    FIELDS = (
        (1, "aad_prefix", BINARY, None, OPT),
        (2, "aad_file_unique", BINARY, None, OPT),
        (3, "supply_aad_prefix", BOOL, None, OPT),
    )


class AesGcmCtrV1(Struct):
    FIELDS = (
        (1, "aad_prefix", BINARY, None, OPT),
        (2, "aad_file_unique", BINARY, None, OPT),
        (3, "supply_aad_prefix", BOOL, None, OPT),
    )


class EncryptionAlgorithm(Union):
    FIELDS = (
        (1, "AES_GCM_V1", STRUCT, AesGcmV1, OPT),
        (2, "AES_GCM_CTR_V1", STRUCT, AesGcmCtrV1, OPT),
    )


class FileMetaData(Struct):
    """The footer: schema, row groups and their column chunks, key/value metadata."""

    FIELDS = (
        (1, "version", I32, None, REQ),
        (2, "schema", LIST, SchemaElement, REQ),
        (3, "num_rows", I64, None, REQ),
        (4, "row_groups", LIST, RowGroup, REQ),
        (5, "key_value_metadata", LIST, KeyValue, OPT),
        (6, "created_by", STRING, None, OPT),
        (7, "column_orders", LIST, ColumnOrder, OPT),
        (8, "encryption_algorithm", STRUCT, EncryptionAlgorithm, OPT),
        (9, "footer_signing_key_metadata", BINARY, None, OPT),
    )


class FileCryptoMetaData(Struct):
    """Crypto metadata in front of an encrypted footer."""

    FIELDS = (
        (1, "encryption_algorithm", STRUCT, EncryptionAlgorithm, REQ),
        (2, "key_metadata", BINARY, None, OPT),
    )
