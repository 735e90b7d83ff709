"""Leaf values in the kernel conventions, and their conversion to and from Arrow.

The kernels (``metaindex._native.*``) move values per physical type as:

=====================  ==================================================================
physical type          representation
=====================  ==================================================================
BOOLEAN                numpy ``bool_``
INT32 / INT64          numpy ``int32`` / ``int64``
FLOAT / DOUBLE         numpy ``float32`` / ``float64`` (bit patterns preserved)
INT96                  numpy ``uint8`` of shape (n, 12)
FIXED_LEN_BYTE_ARRAY   numpy ``uint8`` of shape (n, type_length)
BYTE_ARRAY             ``(offsets, data)``: Arrow's binary layout, int32 or int64 offsets
=====================  ==================================================================

Only non-null values travel; nulls live in the definition levels.

A FIXED_LEN_BYTE_ARRAY decimal read for a decimal128 Arrow type (``read_chunk(decimal128=
True)``, see :func:`decimal128_limbs`) may instead come already converted: numpy ``int64`` of
shape (n, 2), Arrow's decimal128 limbs (low first, little-endian, sign-extended).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from metaindex._native import decimals
from metaindex.arrays import numeric_array
from metaindex.errors import DecodeError, SchemaError

__all__ = [
    "BOOLEAN",
    "INT32",
    "INT64",
    "INT96",
    "FLOAT",
    "DOUBLE",
    "BYTE_ARRAY",
    "FIXED_LEN_BYTE_ARRAY",
    "count",
    "slice",
    "concat",
    "average_width",
    "from_arrow",
    "to_arrow",
    "decimal128_limbs",
    "with_validity",
]

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)

_NUMPY = {
    BOOLEAN: np.bool_,
    INT32: np.int32,
    INT64: np.int64,
    FLOAT: np.float32,
    DOUBLE: np.float64,
}
_JULIAN_EPOCH = 2440588  # Julian day of 1970-01-01
_NS_PER_DAY = 86_400_000_000_000


def count(values, ptype: int) -> int:
    if ptype == BYTE_ARRAY:
        return len(values[0]) - 1
    return len(values)


def slice(values, ptype: int, a: int, b: int):  # noqa: A001 - mirrors list slicing
    """Values ``a:b`` without copying (BYTE_ARRAY keeps the shared data buffer)."""
    if ptype == BYTE_ARRAY:
        return values[0][a : b + 1], values[1]
    return values[a:b]


def pool_empty(n: int, dtype) -> np.ndarray:
    """An uninitialised array from Arrow's memory pool, for a chunk's joined output: the pool
    keeps freed memory for the next read, where a large numpy array from the C heap may be
    handed back to the system when it is freed (glibc trims the heap's top) and cost a page
    fault per 4 KiB on every read. Only for the few large arrays of a chunk: page-sized
    arrays stay numpy's, as dozens of pool allocations per read let mimalloc's delayed purge
    of freed memory land inside the read (a string zstd read measured 16 or 23 ms by turns)."""
    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype, n)


def concat(parts: list, ptype: int, type_length: int = 0):
    """Join decoded pages into one value set."""
    if ptype == BYTE_ARRAY:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return np.zeros(1, np.int32), np.zeros(0, np.uint8)
        sizes = [int(o[-1] - o[0]) for o, _ in parts]
        total = sum(sizes)
        dtype = np.int32 if total < 2**31 else np.int64
        offsets = pool_empty(sum(len(o) - 1 for o, _ in parts) + 1, dtype)
        offsets[0] = 0
        data = pool_empty(total, np.uint8)
        pos = vpos = 0
        for (o, d), size in zip(parts, sizes, strict=True):
            n = len(o) - 1
            offsets[pos + 1 : pos + n + 1] = (o[1:] - o[0]) + vpos
            data[vpos : vpos + size] = d[o[0] : o[-1]]
            pos += n
            vpos += size
        return offsets, data
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _empty(ptype, type_length)
    return np.concatenate(parts)


def _empty(ptype: int, type_length: int):
    if ptype == INT96:
        return np.zeros((0, 12), np.uint8)
    if ptype == FIXED_LEN_BYTE_ARRAY:
        return np.zeros((0, type_length), np.uint8)
    if ptype == BYTE_ARRAY:
        return np.zeros(1, np.int32), np.zeros(0, np.uint8)
    return np.zeros(0, _NUMPY[ptype])


def average_width(values, ptype: int, type_length: int = 0) -> int:
    """Bytes per value in PLAIN, for sizing pages."""
    if ptype == BYTE_ARRAY:
        offsets = values[0]
        n = len(offsets) - 1
        return 4 + (int(offsets[-1] - offsets[0]) // n if n else 0)
    if ptype == BOOLEAN:
        return 1
    if ptype in (INT96, FIXED_LEN_BYTE_ARRAY):
        return values.shape[1] if values.ndim == 2 else type_length
    return values.dtype.itemsize


# ------------------------------------------------------------------------ Arrow bridge


def _buffer(arr: pa.Array, index: int, dtype, n: int, offset: int) -> np.ndarray:
    buf = arr.buffers()[index]
    if buf is None:
        return np.zeros(n, dtype)
    return np.frombuffer(buf, dtype=dtype, count=n + offset)[offset:]


def from_arrow(arr: pa.Array, ptype: int, type_length: int = 0):
    """Non-null Arrow values -> kernel values for ``ptype`` (as pyarrow would store them)."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    t = arr.type
    n = len(arr)
    if arr.null_count:
        raise SchemaError("from_arrow takes the non-null values of a column (drop nulls first)")
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_null(t):  # a null column has no values to store (n == 0 after the check)
        return _empty(ptype, type_length)
    if ptype == BOOLEAN:
        return arr.to_numpy(zero_copy_only=False).astype(np.bool_, copy=False)
    if ptype == BYTE_ARRAY:
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            arr = arr.cast(pa.large_binary())
            t = arr.type
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = _buffer(arr, 1, np.int64 if wide else np.int32, n + 1, arr.offset)
        data = arr.buffers()[2]
        data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        return offsets, data
    if ptype == FIXED_LEN_BYTE_ARRAY:
        if pa.types.is_decimal(t):
            full = t.byte_width
            limbs = _buffer(arr, 1, np.uint8, n * full, arr.offset * full).view("<u8")
            big_endian = limbs.reshape(n, full // 8)[:, ::-1].astype(">u8").view(np.uint8)
            return np.ascontiguousarray(big_endian.reshape(n, full)[:, full - type_length :])
        width = t.byte_width if not pa.types.is_float16(t) else 2
        raw = _buffer(arr, 1, np.uint8, n * width, arr.offset * width)
        return raw.reshape(n, width)
    if ptype == INT96:
        ns = _buffer(arr.cast(pa.int64()), 1, np.int64, n, arr.offset)
        return _int96_from_ns(ns)
    storage = {INT32: np.int32, INT64: np.int64, FLOAT: np.float32, DOUBLE: np.float64}[ptype]
    if pa.types.is_integer(t) and t.bit_width < 32:
        return arr.to_numpy(zero_copy_only=False).astype(storage)
    width = np.dtype(storage).itemsize
    if t.bit_width // 8 != width:
        raise SchemaError(f"Arrow type {t} cannot be stored as physical type {ptype}")
    return _buffer(arr, 1, storage, n, arr.offset)


def _int96_from_ns(ns: np.ndarray) -> np.ndarray:
    days, nanos = np.divmod(ns, _NS_PER_DAY)
    out = np.empty((len(ns), 12), np.uint8)
    out[:, :8] = nanos.astype("<i8").view(np.uint8).reshape(-1, 8)
    out[:, 8:] = (days + _JULIAN_EPOCH).astype("<u4").view(np.uint8).reshape(-1, 4)
    return out


def decimal128_limbs(ptype: int, type_length: int, arrow_type: pa.DataType) -> bool:
    """Whether FIXED_LEN_BYTE_ARRAY values of ``type_length`` bytes read for ``arrow_type``
    may be converted to decimal128 limbs as they are decoded (``read_chunk(decimal128=True)``):
    a decimal128 column (an extension type's storage counts) of 1 to 16 bytes."""
    if isinstance(arrow_type, pa.BaseExtensionType):
        arrow_type = arrow_type.storage_type
    return (
        ptype == FIXED_LEN_BYTE_ARRAY
        and 1 <= type_length <= 16
        and pa.types.is_decimal(arrow_type)
        and arrow_type.byte_width == 16
    )


def to_arrow(values, ptype: int, arrow_type: pa.DataType) -> pa.Array:
    """Kernel values (non-null) -> an Arrow array of ``arrow_type`` without nulls."""
    if isinstance(arrow_type, pa.BaseExtensionType):
        storage = to_arrow(values, ptype, arrow_type.storage_type)
        return pa.ExtensionArray.from_storage(arrow_type, storage)
    t = arrow_type
    if pa.types.is_null(t):  # UNKNOWN logical type: every slot must be null
        n = count(values, ptype)
        if n:
            raise DecodeError(f"a column of logical type UNKNOWN (always null) holds {n} values")
        return pa.nulls(0)
    if ptype == BYTE_ARRAY:
        offsets, data = values
        n = len(offsets) - 1
        if offsets[0] != 0:
            data = data[offsets[0] : offsets[-1]]
            offsets = offsets - offsets[0]
        text = pa.types.is_string(t) or pa.types.is_large_string(t)
        if offsets.dtype == np.int64:
            base = pa.large_string() if text else pa.large_binary()
        else:
            base = pa.string() if text else pa.binary()
        arr = pa.Array.from_buffers(base, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        return arr if base == t else arr.cast(t)
    if ptype == BOOLEAN:
        return numeric_array(np.asarray(values, np.bool_))
    if ptype == INT96:
        days = values[:, 8:].copy().view("<u4").reshape(-1).astype(np.int64) - _JULIAN_EPOCH
        nanos = values[:, :8].copy().view("<i8").reshape(-1)
        with np.errstate(over="ignore"):
            ns = days * _NS_PER_DAY + nanos  # wraps like the int64 arithmetic of parquet-cpp
        return pa.array(ns, type=pa.int64()).cast(
            t if pa.types.is_timestamp(t) else pa.timestamp("ns")
        )
    if ptype == FIXED_LEN_BYTE_ARRAY:
        n, width = values.shape
        if values.dtype == np.int64:  # decimal128 limbs already (see the module docstring)
            if width != 2 or not pa.types.is_decimal(t) or t.byte_width != 16:
                raise SchemaError(f"decimal128 values cannot be read as {t}")
            return pa.Array.from_buffers(t, n, [None, pa.py_buffer(values)])
        if pa.types.is_decimal(t):
            full = t.byte_width
            if width > full:
                raise SchemaError(f"decimal of {width} bytes does not fit {t}")
            if full == 16 and width:  # one pass, into Arrow's pool (see pool_empty)
                limbs = pool_empty(n * 2, "<i8")
                decimals.to_decimal128(np.ascontiguousarray(values), width, limbs)
                return pa.Array.from_buffers(t, n, [None, pa.py_buffer(limbs)])
            # sign-extend the big-endian bytes to the full width, then swap 8-byte limbs to
            # Arrow's little-endian order (word-wise: far cheaper than reversing bytes)
            padded = pool_empty(n * full, np.uint8).reshape(n, full)
            pad = full - width
            if pad:
                padded[:, :pad] = (
                    np.where(values[:, :1] >= 0x80, 0xFF, 0).astype(np.uint8) if width else 0
                )
            padded[:, pad:] = values
            limbs = pool_empty(n * (full // 8), "<u8").reshape(n, full // 8)
            limbs[...] = padded.view(">u8")[:, ::-1]
            return pa.Array.from_buffers(t, n, [None, pa.py_buffer(limbs)])
        buf = pa.py_buffer(np.ascontiguousarray(values))
        return pa.Array.from_buffers(t, n, [None, buf])
    if pa.types.is_decimal(t):  # DECIMAL on INT32 / INT64: the unscaled value, sign-extended
        n, k = len(values), t.byte_width // 8
        limbs = pool_empty(n * k, "<i8").reshape(n, k)
        limbs[:, 0] = values
        if k > 1:  # the sign, copied up through the higher limbs
            np.right_shift(limbs[:, 0], 63, out=limbs[:, 1])
            limbs[:, 2:] = limbs[:, 1:2]
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(limbs)])
    arr = pa.Array.from_buffers(
        {INT32: pa.int32(), INT64: pa.int64(), FLOAT: pa.float32(), DOUBLE: pa.float64()}[ptype],
        len(values),
        [None, pa.py_buffer(np.ascontiguousarray(values))],
    )
    if arr.type == t:
        return arr
    if pa.types.is_integer(t) and t.bit_width == arr.type.bit_width:
        return arr.view(t)
    if pa.types.is_integer(t):
        return arr.cast(t, safe=False)
    return arr.view(t)


def with_validity(arr: pa.Array, bitmap: np.ndarray, null_count: int) -> pa.Array:
    """A fixed-width Arrow array (no nulls, one value per slot) with ``bitmap`` as validity."""
    if null_count == 0:
        return arr
    if isinstance(arr, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(
            arr.type, with_validity(arr.storage, bitmap, null_count)
        )
    buffers = arr.buffers()
    return pa.Array.from_buffers(
        arr.type,
        len(arr),
        [pa.py_buffer(bitmap), *buffers[1:]],
        null_count=null_count,
        offset=arr.offset,
    )
