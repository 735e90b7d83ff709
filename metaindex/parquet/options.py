"""pyarrow.parquet's keyword arguments, with pyarrow's meanings, checked at the API edge.

The writer and reader cores take a few normalised options; this module turns the keywords
``pyarrow.parquet.write_table`` / ``ParquetWriter`` / ``read_table`` / ``ParquetFile`` accept into
them: which Arrow types are stored how (``version``, ``coerce_timestamps``,
``store_decimal_as_integer``, ``duration`` / ``date64`` / seconds), which columns get which
encoding (``use_byte_stream_split``, ``column_encoding`` and their conflicts), the per-column
codec level, bloom filter options, sorting columns, filesystems given as URIs or fsspec objects,
and the read-side type choices (``read_dictionary``, ``binary_type``, ``list_type``,
``arrow_extensions_enabled``) and limits (``thrift_*_size_limit``, ``schema_depth_limit``).
A value we do not support raises :class:`metaindex.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from metaindex.errors import DecodeError, EncodeError, UnsupportedFeatureError
from metaindex.parquet import format as fmt

__all__ = [
    "WriteOptions",
    "write_options",
    "resolve_filesystem",
    "ReadOptions",
    "read_options",
    "check_thrift_limits",
]

FORMAT_VERSIONS = ("1.0", "2.4", "2.6")
_BSS_TYPES = {
    fmt.Type.INT32,
    fmt.Type.INT64,
    fmt.Type.FLOAT,
    fmt.Type.DOUBLE,
    fmt.Type.FIXED_LEN_BYTE_ARRAY,
}
_ENCODING_TYPES = {
    "BYTE_STREAM_SPLIT": (
        _BSS_TYPES,
        "BYTE_STREAM_SPLIT only supports FLOAT, DOUBLE, INT32, INT64 and FIXED_LEN_BYTE_ARRAY",
    ),
    "DELTA_BINARY_PACKED": (
        {fmt.Type.INT32, fmt.Type.INT64},
        "DELTA_BINARY_PACKED encoder only supports INT32 and INT64",
    ),
    "DELTA_LENGTH_BYTE_ARRAY": (
        {fmt.Type.BYTE_ARRAY},
        "DELTA_LENGTH_BYTE_ARRAY only supports BYTE_ARRAY",
    ),
    "DELTA_BYTE_ARRAY": (
        {fmt.Type.BYTE_ARRAY, fmt.Type.FIXED_LEN_BYTE_ARRAY},
        "DELTA_BYTE_ARRAY only supports BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY",
    ),
    "RLE": ({fmt.Type.BOOLEAN}, "RLE only supports BOOLEAN values"),
}
_SPARK_UNSAFE = re.compile(r"[ ,;{}()\n\t=]")
_CDC_OPTIONS = {"min_chunk_size", "max_chunk_size", "norm_level"}


@dataclass
class WriteOptions:
    """The pyarrow keywords the writer core has no parameter for, normalised."""

    version: str = "2.6"
    flavor: str | None = None
    coerce_timestamps: str | None = None
    allow_truncated_timestamps: bool = False
    store_schema: bool = True
    store_decimal_as_integer: bool = False
    time_adjusted_to_utc: bool = False
    compliant_nested_type: bool = True
    max_rows_per_page: int | None = None
    sorting_columns: tuple = ()
    metadata_collector: list | None = None
    cdc: tuple | None = None  # (min_chunk_size, max_chunk_size, norm_level)

    # -------------------------------------------------------------- storage types

    def sanitize(self, schema: pa.Schema) -> pa.Schema:
        """The schema with Spark-safe names when ``flavor='spark'`` (as pyarrow renames)."""
        if self.flavor != "spark":
            return schema
        return pa.schema(
            [f.with_name(_SPARK_UNSAFE.sub("_", f.name)) for f in schema], metadata=schema.metadata
        )

    def storage_type(self, t: pa.DataType, top: bool = True) -> pa.DataType:
        """The Arrow type a column of type ``t`` is cast to before its Parquet layout is chosen.

        ``ARROW:schema`` keeps ``t`` itself, so readers restore it.
        """
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(self.storage_type(f.type, False)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(
                t.key_field.with_type(self.storage_type(t.key_type, False)),
                t.item_field.with_type(self.storage_type(t.item_type, False)),
                keys_sorted=t.keys_sorted,
            )
        if pa.types.is_large_list(t):
            return pa.large_list(t.value_field.with_type(self.storage_type(t.value_type, False)))
        if pa.types.is_list(t):
            return pa.list_(t.value_field.with_type(self.storage_type(t.value_type, False)))
        if pa.types.is_fixed_size_list(t):
            return pa.list_(
                t.value_field.with_type(self.storage_type(t.value_type, False)), t.list_size
            )
        if pa.types.is_dictionary(t):
            value = self.storage_type(t.value_type, top)
            return t if value == t.value_type else value
        if pa.types.is_timestamp(t):
            unit = t.unit
            if self.coerce_timestamps is not None:
                unit = self.coerce_timestamps
            elif unit == "s":
                unit = "ms"
            elif unit == "ns" and self.version != "2.6":
                unit = "us"
            return t if unit == t.unit else pa.timestamp(unit, t.tz)
        if pa.types.is_binary_view(t):
            return pa.large_binary()
        if pa.types.is_string_view(t):
            return pa.large_string()
        if pa.types.is_time32(t) and t.unit == "s":
            return pa.time32("ms")
        if pa.types.is_date64(t):
            return pa.date32()
        if pa.types.is_duration(t):
            return pa.int64()
        if pa.types.is_uint32(t) and self.version == "1.0":
            return pa.int64()
        if top and pa.types.is_decimal(t) and self.store_decimal_as_integer and t.precision <= 18:
            return pa.int32() if t.precision <= 9 else pa.int64()
        return t

    def storage_schema(self, schema: pa.Schema) -> pa.Schema:
        return pa.schema(
            [f.with_type(self.storage_type(f.type)) for f in schema], metadata=schema.metadata
        )

    def to_storage(self, table: pa.Table, storage: pa.Schema) -> pa.Table:
        """Cast ``table`` to ``storage`` (timestamps cast safely unless truncation is allowed)."""
        if table.schema.equals(storage, check_metadata=False):
            return table
        columns = []
        for column, target in zip(table.columns, storage, strict=True):
            if column.type == target.type:
                columns.append(column)
            elif pa.types.is_decimal(column.type) and pa.types.is_integer(target.type):
                columns.append(_unscaled(column, target.type))
            else:
                columns.append(_cast(column, target.type, self.allow_truncated_timestamps))
        return pa.Table.from_arrays(columns, schema=storage)

    def annotate(self, elements: list, field: pa.Field) -> list:
        """Mark the written schema elements of ``field`` as pyarrow would."""
        for e in elements:
            logical = e.logicalType
            if self.time_adjusted_to_utc and logical is not None and logical.TIME is not None:
                logical.TIME.isAdjustedToUTC = True
        t = field.type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if (
            pa.types.is_decimal(t)
            and self.store_decimal_as_integer
            and t.precision <= 18
            and len(elements) == 1
        ):
            e = elements[0]
            e.logicalType = fmt.LogicalType(
                DECIMAL=fmt.DecimalType(scale=t.scale, precision=t.precision)
            )
            e.converted_type = fmt.ConvertedType.DECIMAL
            e.scale, e.precision = t.scale, t.precision
        return elements


def _cast(column, target: pa.DataType, allow_truncated: bool):
    import pyarrow.compute as pc

    return pc.cast(column, target, safe=not allow_truncated)


def _unscaled(column, target: pa.DataType):
    """A decimal column's unscaled values as int32/int64 (precision <= 18 fits)."""
    chunks = []
    for chunk in column.chunks:
        if pa.types.is_decimal256(chunk.type):
            chunk = chunk.cast(pa.decimal128(chunk.type.precision, chunk.type.scale))
        words = np.frombuffer(chunk.buffers()[1], dtype="<i8")
        low = words[2 * chunk.offset : 2 * (chunk.offset + len(chunk)) : 2]
        mask = chunk.is_null().to_numpy(zero_copy_only=False) if chunk.null_count else None
        chunks.append(pa.array(low, type=pa.int64(), mask=mask).cast(target))
    return pa.chunked_array(chunks, type=target)


def write_options(
    *,
    version="2.6",
    flavor=None,
    coerce_timestamps=None,
    allow_truncated_timestamps=False,
    use_deprecated_int96_timestamps=None,
    store_schema=True,
    store_decimal_as_integer=False,
    write_time_adjusted_to_utc=False,
    use_compliant_nested_type=True,
    max_rows_per_page=None,
    sorting_columns=None,
    metadata_collector=None,
    write_batch_size=None,
    use_content_defined_chunking=False,
    writer_engine_version=None,
) -> WriteOptions:
    """Check pyarrow's writer keywords and keep what the writer needs."""
    if version not in FORMAT_VERSIONS:
        raise ValueError(
            f"Unsupported Parquet format version: {version!r} (expected one of "
            f"{', '.join(FORMAT_VERSIONS)})"
        )
    if flavor not in (None, "spark"):
        raise ValueError(f"Unsupported flavor: {flavor!r} (None or 'spark')")
    if coerce_timestamps not in (None, "ms", "us"):
        raise ValueError(
            f"Invalid value for coerce_timestamps: {coerce_timestamps!r} (None, 'ms' or 'us')"
        )
    if use_deprecated_int96_timestamps:
        raise UnsupportedFeatureError(
            "writing INT96 timestamps is not supported; timestamps "
            "are written as INT64 with a TIMESTAMP logical type"
        )
    if max_rows_per_page is not None and (
        not isinstance(max_rows_per_page, int) or max_rows_per_page <= 0
    ):
        raise ValueError(f"max_rows_per_page must be a positive int, not {max_rows_per_page!r}")
    if write_batch_size is not None and (
        not isinstance(write_batch_size, int) or write_batch_size <= 0
    ):
        raise ValueError(f"write_batch_size must be a positive int, not {write_batch_size!r}")
    if isinstance(use_content_defined_chunking, dict):
        keys = set(use_content_defined_chunking)
        if keys - _CDC_OPTIONS:
            raise ValueError(
                f"Unknown options in 'use_content_defined_chunking': {keys - _CDC_OPTIONS}"
            )
        missing = {"min_chunk_size", "max_chunk_size"} - keys
        if missing:
            raise ValueError(f"Missing options in 'use_content_defined_chunking': {missing}")
    from metaindex.parquet.cdc import cdc_options

    cdc = cdc_options(use_content_defined_chunking)
    sorting = tuple(sorting_columns or ())
    for s in sorting:
        if not hasattr(s, "to_thrift"):
            raise TypeError(
                "sorting_columns must be metaindex.parquet.SortingColumn objects, "
                f"not {type(s).__name__}"
            )
    if metadata_collector is not None and not isinstance(metadata_collector, list):
        raise TypeError("metadata_collector must be a list")
    return WriteOptions(
        version=version,
        flavor=flavor,
        coerce_timestamps=coerce_timestamps,
        allow_truncated_timestamps=bool(allow_truncated_timestamps),
        store_schema=bool(store_schema),
        store_decimal_as_integer=bool(store_decimal_as_integer),
        time_adjusted_to_utc=bool(write_time_adjusted_to_utc),
        compliant_nested_type=bool(use_compliant_nested_type),
        max_rows_per_page=max_rows_per_page,
        sorting_columns=sorting,
        metadata_collector=metadata_collector,
        cdc=cdc,
    )


def column_encodings(column_encoding, use_dictionary, use_byte_stream_split):
    """``(column_encoding, use_dictionary)`` for the writer core, with pyarrow's conflict rules.

    ``use_byte_stream_split`` (True or columns) becomes BYTE_STREAM_SPLIT for the columns that
    are not dictionary-encoded; an explicit ``column_encoding`` needs the dictionary off for its
    columns and may not name a column ``use_byte_stream_split`` also names.
    """
    if column_encoding is not None and not isinstance(column_encoding, (str, dict)):
        raise TypeError(
            "column_encoding must be a str or a dict of column -> encoding, not "
            f"{type(column_encoding).__name__}"
        )
    names = (
        [column_encoding]
        if isinstance(column_encoding, str)
        else list((column_encoding or {}).values())
    )
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"column encodings must be str, not {type(name).__name__}")
        if name.upper() in ("RLE_DICTIONARY", "PLAIN_DICTIONARY"):
            raise ValueError(f"'{name.upper()}' is already used by default.")
        if name.upper() not in (
            "PLAIN",
            "RLE",
            "BIT_PACKED",
            "DELTA_BINARY_PACKED",
            "DELTA_LENGTH_BYTE_ARRAY",
            "DELTA_BYTE_ARRAY",
            "BYTE_STREAM_SPLIT",
        ):
            raise ValueError(f"Unsupported column encoding: {name!r}")
    if column_encoding is not None:
        if use_dictionary is True or (isinstance(column_encoding, str) and use_dictionary):
            raise ValueError(
                "use_dictionary cannot be True when column_encoding is given "
                "(the dictionary is the default encoding); set "
                "use_dictionary=False or list the dictionary columns"
            )
        if isinstance(use_dictionary, (list, tuple, set)) and set(use_dictionary) & set(
            column_encoding
        ):
            raise ValueError(
                "columns in use_dictionary cannot also be in column_encoding: "
                f"{sorted(set(use_dictionary) & set(column_encoding))}"
            )
        if use_byte_stream_split:
            if (
                use_byte_stream_split is True
                or isinstance(column_encoding, str)
                or set(use_byte_stream_split) & set(column_encoding)
            ):
                raise ValueError(
                    "use_byte_stream_split cannot be combined with column_encoding "
                    "for the same columns"
                )
    return column_encoding, use_dictionary


def byte_stream_split_for(use_byte_stream_split, path: tuple, physical_type: int) -> bool:
    """Whether ``use_byte_stream_split`` (True or column names) selects this leaf."""
    if not use_byte_stream_split:
        return False
    if use_byte_stream_split is True:
        return physical_type in _BSS_TYPES or physical_type == fmt.Type.BOOLEAN
    if isinstance(use_byte_stream_split, str):
        use_byte_stream_split = [use_byte_stream_split]
    return ".".join(path) in use_byte_stream_split or path[0] in use_byte_stream_split


def check_encoding(path: tuple, physical_type: int, encoding: int | None, dictionary: bool) -> None:
    """Refuse an encoding the column's physical type cannot have, as pyarrow does (OSError)."""
    if encoding is None or dictionary:
        return
    name = fmt.Encoding(encoding).name
    allowed = _ENCODING_TYPES.get(name)
    if allowed is not None and physical_type not in allowed[0]:
        raise EncodeError(
            f"{allowed[1]} (column {'.'.join(path)!r} is {fmt.Type(physical_type).name})"
        )


def codec_name(codec):
    """pyarrow's codec names: "lz4" is LZ4_RAW (the Hadoop framing is "lz4_hadoop")."""
    if isinstance(codec, str):
        lowered = codec.lower()
        if lowered == "lz4":
            return "lz4_raw"
        if lowered == "lz4_hadoop":
            return "lz4"
    return codec


def compression_level_for(level, path: tuple):
    """One column's level from a level or a {column: level} dict (None: the codec default)."""
    if isinstance(level, dict):
        dotted, top = ".".join(path), path[0]
        return level.get(dotted, level.get(top))
    if level is not None and not isinstance(level, int):
        raise TypeError(f"compression_level must be an int or a dict, not {type(level).__name__}")
    return level


def check_compression_level(codec_name: str, level) -> None:
    """pyarrow's rule: a level only for codecs that have levels, and in their range."""
    if level is None:
        return
    ranges = {
        "GZIP": (-1, 9),
        "BROTLI": (0, 11),
        "ZSTD": (-131072, 22),
        "LZ4": (1, 12),
        "LZ4_RAW": (1, 12),
    }
    if codec_name not in ranges:
        raise ValueError(
            f"compression {codec_name} does not take a compression level (got {level})"
        )
    lo, hi = ranges[codec_name]
    if not lo <= level <= hi:
        raise ValueError(f"compression level {level} is out of range for {codec_name} [{lo}, {hi}]")


def bloom_filter_options(options) -> dict | None:
    """Check ``bloom_filter_options`` with pyarrow's messages."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError("'bloom_filter_options' must be a dictionary")
    for column, opt in options.items():
        if not isinstance(opt, dict):
            continue
        ndv, fpp = opt.get("ndv"), opt.get("fpp")
        if ndv is not None:
            if not isinstance(ndv, int) or isinstance(ndv, bool):
                raise TypeError(f"'bloom_filter_options:ndv' for column '{column}' must be an int")
            if ndv <= 0:
                raise ValueError(
                    f"'bloom_filter_options:ndv' for column '{column}' must be "
                    f"greater than zero, got {ndv}"
                )
        if fpp is not None:
            if not isinstance(fpp, (int, float)) or isinstance(fpp, bool):
                raise TypeError(f"'bloom_filter_options:fpp' for column '{column}' must be a float")
            if not 0.0 < fpp < 1.0:
                raise ValueError(
                    f"'bloom_filter_options:fpp' for column '{column}' must be in "
                    f"(0.0, 1.0), got {fpp}"
                )
    return options


def resolve_filesystem(filesystem):
    """A ``pyarrow.fs.FileSystem`` from one, a URI string, or an fsspec filesystem."""
    if filesystem is None:
        return None
    from pyarrow import fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    if isinstance(filesystem, str):
        fs, prefix = pafs.FileSystem.from_uri(filesystem)
        return pafs.SubTreeFileSystem(prefix, fs) if prefix not in ("", "/") else fs
    try:
        import fsspec
    except ImportError:
        fsspec = None
    if fsspec is not None and isinstance(filesystem, fsspec.AbstractFileSystem):
        return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    raise TypeError(
        "filesystem must be a pyarrow.fs.FileSystem, a URI, or an fsspec "
        f"filesystem, not {type(filesystem).__name__}"
    )


# ---------------------------------------------------------------------------- reading


@dataclass
class ReadOptions:
    """pyarrow's read keywords the reader core has no parameter for."""

    read_dictionary: tuple = ()
    binary_type: pa.DataType | None = None
    list_type: type | None = None
    arrow_extensions_enabled: bool = True
    thrift_string_size_limit: int | None = None
    thrift_container_size_limit: int | None = None
    schema_depth_limit: int | None = None
    coerce_int96_timestamp_unit: str | None = None
    memory_map: bool | None = None


def read_options(
    *,
    read_dictionary=None,
    binary_type=None,
    list_type=None,
    arrow_extensions_enabled=True,
    thrift_string_size_limit=None,
    thrift_container_size_limit=None,
    schema_depth_limit=None,
    coerce_int96_timestamp_unit=None,
    memory_map=None,
    buffer_size=0,
    pre_buffer=None,
    use_threads=True,
    common_metadata=None,
) -> ReadOptions:
    """Check pyarrow's reader keywords (I/O hints are accepted: reads fetch whole chunks)."""
    if isinstance(read_dictionary, str):
        raise TypeError("read_dictionary must be a list of column names, not a str")
    if list_type not in (None, pa.ListType, pa.LargeListType):
        raise ValueError(
            f"list_type must be pyarrow.ListType or pyarrow.LargeListType, not {list_type!r}"
        )
    if binary_type is not None and not isinstance(binary_type, pa.DataType):
        raise TypeError(f"binary_type must be a pyarrow DataType, not {binary_type!r}")
    if coerce_int96_timestamp_unit not in (None, "s", "ms", "us", "ns"):
        raise ValueError(
            f"Invalid value for coerce_int96_timestamp_unit: {coerce_int96_timestamp_unit!r}"
        )
    for name, limit in (
        ("thrift_string_size_limit", thrift_string_size_limit),
        ("thrift_container_size_limit", thrift_container_size_limit),
        ("schema_depth_limit", schema_depth_limit),
    ):
        if limit is not None and (not isinstance(limit, int) or limit <= 0):
            raise ValueError(f"{name} must be a positive int, not {limit!r}")
    return ReadOptions(
        tuple(read_dictionary or ()),
        binary_type,
        list_type,
        bool(arrow_extensions_enabled),
        thrift_string_size_limit,
        thrift_container_size_limit,
        schema_depth_limit,
        coerce_int96_timestamp_unit,
        None if memory_map is None else bool(memory_map),
    )


def check_thrift_limits(footer: fmt.FileMetaData, options: ReadOptions) -> None:
    """Refuse a footer whose strings or lists exceed the given Thrift limits (as pyarrow)."""
    strings, containers = options.thrift_string_size_limit, options.thrift_container_size_limit
    if strings is None and containers is None:
        return

    def walk(value):
        if isinstance(value, (str, bytes, bytearray)):
            if strings is not None and len(value) > strings:
                raise DecodeError(
                    "Couldn't deserialize thrift: TProtocolException: Exceeded "
                    f"size limit (a {len(value)}-byte string, "
                    f"thrift_string_size_limit={strings})"
                )
        elif isinstance(value, list):
            if containers is not None and len(value) > containers:
                raise DecodeError(
                    "Couldn't deserialize thrift: TProtocolException: Exceeded "
                    f"size limit (a {len(value)}-element list, "
                    f"thrift_container_size_limit={containers})"
                )
            for item in value:
                walk(item)
        elif isinstance(value, fmt.Struct):
            for _, name, *_ in type(value).FIELDS:
                walk(getattr(value, name))

    walk(footer)


def apply_read_types(table: pa.Table, stored: pa.Schema | None, options: ReadOptions) -> pa.Table:
    """Give columns without a stored Arrow type the requested binary / list / extension types."""
    if (
        options.binary_type is None
        and options.list_type is None
        and options.arrow_extensions_enabled
    ):
        return table
    fields = []
    changed = False
    for f in table.schema:
        if stored is not None and f.name in stored.names:
            fields.append(f)
            continue
        t = _read_type(f.type, options)
        changed |= t != f.type
        fields.append(f.with_type(t))
    return table.cast(pa.schema(fields, metadata=table.schema.metadata)) if changed else table


def _read_type(t: pa.DataType, options: ReadOptions) -> pa.DataType:
    extension = getattr(t, "extension_name", None)
    if extension is not None and not options.arrow_extensions_enabled:
        return t.storage_type
    if pa.types.is_binary(t) and options.binary_type is not None:
        return options.binary_type
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_read_type(f.type, options)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        value = t.value_field.with_type(_read_type(t.value_type, options))
        if options.list_type is pa.LargeListType or (
            options.list_type is None and pa.types.is_large_list(t)
        ):
            return pa.large_list(value)
        return pa.list_(value)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_read_type(t.key_type, options)),
            t.item_field.with_type(_read_type(t.item_type, options)),
        )
    return t
