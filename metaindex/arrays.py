"""Arrow arrays from Python lists and numpy arrays without importing pandas.

``pyarrow.array`` (and ``pyarrow.table`` of a dict, ``pyarrow.scalar``) asks its pandas shim
whether the object is a pandas one, and the first such question imports pandas (~0.7 s cold)
when it is installed. The prune path is meant to start in well under a second from a fresh
process, so it builds its arrays here, from buffers, where no such question is asked.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "EMPTY",
    "FALSE",
    "ONE",
    "TRUE",
    "ZERO",
    "combined",
    "from_pylist",
    "numeric_array",
    "string_array",
    "to_numpy",
]

_OFFSETS_MAX = 2**31 - 1
_EPOCH = datetime.datetime(1970, 1, 1)
_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}
_INT64 = (-(2**63), 2**63 - 1)


def from_pylist(values: list, t: pa.DataType) -> pa.Array:
    """``pa.array(values, t)``: the same array, or the same failure (an exception of one of
    the classes ``pa.array`` raises: ArrowInvalid / ArrowTypeError, or TypeError, ValueError,
    OverflowError where the failure is found before Arrow). Built from buffers for the
    literals the pruner binds (int, float, bool, str, bytes, date and datetime values of the
    matching types); anything else goes through ``pa.array``.
    """
    if not values:
        return pa.nulls(0, t)
    kinds = set(map(type, values))
    if len(kinds) == 1 and None not in values:
        (kind,) = kinds
        if kind is int and pa.types.is_integer(t):
            dtype = np.dtype(t.to_pandas_dtype())
            limits = np.iinfo(dtype)  # checked here: numpy 1.x wraps an int out of range
            if not all(limits.min <= v <= limits.max for v in values):
                raise OverflowError(f"an integer out of range of {t}")
            return numeric_array(np.array(values, dtype))
        if kind is float and pa.types.is_float64(t):
            return numeric_array(np.array(values, np.float64))
        if kind is bool and pa.types.is_boolean(t):
            return numeric_array(np.array(values, np.bool_))
        if kind is str and (pa.types.is_string(t) or pa.types.is_large_string(t)):
            arr = string_array(values)
            return arr if arr.type == t else arr.cast(t)
        if kind is bytes and (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            arr = string_array(values, binary=True)
            return arr if arr.type == t else arr.cast(t)
        if kind is datetime.date and pa.types.is_date32(t):
            days = np.array([v.toordinal() - 719163 for v in values], np.int32)
            return pa.Array.from_buffers(t, len(days), [None, pa.py_buffer(days)])
        if kind is datetime.datetime and pa.types.is_timestamp(t):
            ticks = _timestamp_ticks(values, t.unit)
            if ticks is not None:
                return pa.Array.from_buffers(t, len(ticks), [None, pa.py_buffer(ticks)])
    return pa.array(values, t)


def _timestamp_ticks(values: list, unit: str) -> np.ndarray | None:
    """Datetimes as ``unit`` ticks since the epoch, aware ones at their UTC instant and naive
    ones read as UTC (as Arrow reads them); None where one would be rounded or out of range
    (``pa.array`` decides those)."""
    out = []
    for v in values:
        offset = v.utcoffset()
        if offset is not None:
            v = v.replace(tzinfo=None) - offset
        delta = v - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        if unit == "ns":
            ticks = micros * 1000
        else:
            ticks, rest = divmod(micros, _MICROS[unit])
            if rest:
                return None
        if not _INT64[0] <= ticks <= _INT64[1]:
            return None
        out.append(ticks)
    return np.array(out, np.int64)


def string_array(values: Sequence[Any], binary: bool = False) -> pa.Array:
    """``values`` (a sequence of str, no None) as a ``pa.string()`` array (``pa.large_string()``
    when their UTF-8 bytes pass 2 GiB); with ``binary``, a list of bytes as ``pa.binary()``
    (``pa.large_binary()``).

    Raises:
        TypeError: an element is not a str (bytes).
        UnicodeEncodeError: a str holds a lone surrogate.
    """
    want = bytes if binary else str
    if not all(isinstance(v, want) for v in values):
        bad = next(v for v in values if not isinstance(v, want))
        raise TypeError(f"expected {want.__name__} values, got {type(bad).__name__}")
    encoded = values if binary else [v.encode() for v in values]
    n = len(encoded)
    ends = np.fromiter(map(len, encoded), np.int64, n).cumsum() if n else np.zeros(0, np.int64)
    total = int(ends[-1]) if n else 0
    large = total > _OFFSETS_MAX
    offsets = np.zeros(n + 1, np.int64 if large else np.int32)
    offsets[1:] = ends
    if binary:
        t = pa.large_binary() if large else pa.binary()
    else:
        t = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(
        t, n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def numeric_array(values: np.ndarray) -> pa.Array:
    """A 1-d numpy array of booleans or of a fixed-width number type (contiguous or not) as
    the Arrow array of the same type, sharing its memory where it is contiguous (booleans are
    packed to Arrow's bitmap)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(
        pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
    )


def combined(values):
    """A chunked array's chunks as one array (an array as it is): ``combine_chunks`` of no
    chunks builds its empty array with ``pa.array``, which imports pandas."""
    if not isinstance(values, pa.ChunkedArray):
        return values
    if values.num_chunks == 1:
        return values.chunk(0)
    return pa.concat_arrays(values.chunks) if values.num_chunks else pa.nulls(0, values.type)


def to_numpy(values) -> np.ndarray:
    """A null-free Arrow array (or chunked array) of booleans or fixed-width numbers as a
    numpy array, a view of its buffer where it can be: ``Array.to_numpy`` goes through
    pyarrow's pandas conversion, which imports pandas. Other arrays (nulls, other types) go
    that way still."""
    values = combined(values)
    t = values.type
    if values.null_count or not (
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
    ):
        return values.to_numpy(zero_copy_only=False)
    data = values.buffers()[1]
    n, offset = len(values), values.offset
    if data is None:  # an empty array may come without a buffer
        return np.zeros(0, t.to_pandas_dtype())
    if pa.types.is_boolean(t):
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
        return bits[offset : offset + n].astype(np.bool_)
    return np.frombuffer(data, t.to_pandas_dtype())[offset : offset + n]


ZERO, ONE = numeric_array(np.array([0, 1], np.int64))
"""``pa.scalar(0)`` and ``pa.scalar(1)`` built without pyarrow's pandas question (for compute
calls)."""
FALSE, TRUE = numeric_array(np.array([False, True]))
"""``pa.scalar(False)`` and ``pa.scalar(True)``, likewise."""
EMPTY = string_array([""])[0]
"""``pa.scalar("")``, likewise."""
