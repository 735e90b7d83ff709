"""The Arrow types a read gives, beyond the Parquet schema's own: a leaf's values restored to the
type pyarrow stored under ``ARROW:schema`` (integer widths, dictionaries, extension types),
BYTE_ARRAY decimals, ``read_dictionary``, and the read options applied to a schema.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from metaindex.errors import DecodeError
from metaindex.parquet import options as opts_mod

__all__ = ["byte_array_decimals", "read_types_schema", "read_as_dictionary", "restore"]


def byte_array_decimals(binary: pa.Array, t: pa.DataType) -> pa.Array:
    """DECIMAL values stored as BYTE_ARRAY (big-endian two's complement of any length up to
    the type's width) as an Arrow decimal array."""
    n, width = len(binary), t.byte_width
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int32)[
        binary.offset : binary.offset + n + 1
    ]
    data_buf = binary.buffers()[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    lengths = np.diff(offsets)
    if n and (lengths.min() < 1 or lengths.max() > width):
        raise DecodeError(
            f"a BYTE_ARRAY DECIMAL value of {int(lengths.min())}.."
            f"{int(lengths.max())} bytes does not fit {t}"
        )
    padded = np.zeros((n, width), np.uint8)
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        starts = offsets[:-1][rows]
        padded[rows, width - length :] = data[starts[:, None] + np.arange(length)]
        negative = rows[data[starts] >= 0x80]
        padded[negative, : width - length] = 0xFF
    limbs = padded.view(">u8")[:, ::-1].astype("<u8")
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(limbs)])


def read_types_schema(
    schema: pa.Schema, stored: pa.Schema | None, options: opts_mod.ReadOptions
) -> pa.Schema:
    """``schema`` as a read with ``options`` gives it (``read_dictionary``, ``binary_type``,
    ``list_type``, ``arrow_extensions_enabled``); ``stored``: the file's ``ARROW:schema``."""
    if (
        not options.read_dictionary
        and options.binary_type is None
        and options.list_type is None
        and options.arrow_extensions_enabled
    ):
        return schema
    table = opts_mod.apply_read_types(schema.empty_table(), stored, options)
    if options.read_dictionary:
        table = read_as_dictionary(table, options.read_dictionary)
    return table.schema


def read_as_dictionary(table: pa.Table, paths) -> pa.Table:
    """Dictionary-encode the named leaves (top-level names or dotted leaf paths): one
    dictionary per column, as pyarrow's ``read_dictionary`` gives."""
    for path in paths:
        parts = path.split(".")
        if parts[0] not in table.column_names:
            continue
        i = table.column_names.index(parts[0])
        column = table.column(i)
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        encoded = _dictionary_leaf(array, parts[1:])
        if encoded is not None:
            table = table.set_column(i, table.schema.field(i).with_type(encoded.type), encoded)
    return table


def _dictionary_leaf(array: pa.Array, rest: list):
    t = array.type
    if not rest:
        if (
            pa.types.is_dictionary(t)
            or pa.types.is_struct(t)
            or pa.types.is_list(t)
            or pa.types.is_large_list(t)
            or pa.types.is_map(t)
        ):
            return array if pa.types.is_dictionary(t) else None
        return array.dictionary_encode()
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and len(rest) >= 2 and rest[0] == "list":
        inner = _dictionary_leaf(array.values, rest[2:])
        if inner is None:
            return None
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return cls.from_arrays(
            array.offsets, inner, mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_struct(t) and rest[0] in [f.name for f in t]:
        children, fields = [], []
        for k, f in enumerate(t):
            child = array.field(k)
            if f.name == rest[0]:
                child = _dictionary_leaf(child, rest[1:])
                if child is None:
                    return None
            children.append(child)
            fields.append(f.with_type(child.type))
        return pa.StructArray.from_arrays(
            children, fields=fields, mask=array.is_null() if array.null_count else None
        )
    return None


def restore(array: pa.Array, stored: pa.DataType) -> pa.Array:
    """Give ``array`` the stored Arrow type where that is a lossless view of it.

    Integers keep the width and sign of their Parquet type (a ``version="1.0"`` file stores a
    uint32 column as INT64 and reads back int64), as pyarrow does.
    """
    if array.type == stored and getattr(array.type, "storage_type", None) == getattr(
        stored, "storage_type", None
    ):
        return array
    if pa.types.is_integer(stored) and pa.types.is_integer(array.type):
        return array
    try:
        if pa.types.is_dictionary(stored):
            return array.cast(stored.value_type).dictionary_encode().cast(stored)
        if isinstance(stored, pa.BaseExtensionType):
            storage = array.storage if isinstance(array, pa.ExtensionArray) else array
            return pa.ExtensionArray.from_storage(stored, storage.cast(stored.storage_type))
        return array.cast(stored)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return array
