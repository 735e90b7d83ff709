"""One file's column fed chunk by chunk to the collection kernels, from its Arrow buffers.

:func:`value_hashes` (bloom index) and :func:`distinct_values` (value-list index) read each
chunk's validity bitmap, values or offsets + data in place (cython_ext/colhash.pyx,
cython_ext/distinct.pyx): no concatenation of the chunks, no null-dropping copy, no Python
objects per value. Floats are canonical in the kernels (-0.0 as 0.0, one NaN). Bloom hash
scheme 2 hashes each chunk in its canonical form (:func:`canonical_chunk`: int64 words for
numbers and instants, vectorised; the bytes of strings), so equal values of any width or type
hash alike.

A dictionary chunk is reduced to the dictionary entries its indices use (a kernel dedupe of
the indices, then one ``take``), so a dictionary-encoded column costs its distinct values,
not its rows. Types the kernels do not take directly (booleans for value lists; for hashes,
the types Parquet hashes in another width: 8/16-bit integers, decimals, ``date64``,
``timestamp[s]``) go through the reference conversion of :mod:`metaindex.bloom` /
``pyarrow.compute``, chunk by chunk.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex._native import bloomset as _bloom_kernel
from metaindex._native import colhash as _hash_kernel
from metaindex._native.distinct import ValueSet
from metaindex.arrays import numeric_array
from metaindex.bloom import canonical_float_hashes
from metaindex.index import base

__all__ = [
    "chunks",
    "plain_chunks",
    "value_hashes",
    "hashes_of",
    "insert_new",
    "distinct_values",
    "Distinct",
    "SCHEMES",
    "canonical_chunk",
    "canonical_number_bytes",
    "flag_array",
    "one_list_offsets",
]

_FLAGS = (
    numeric_array(np.array([False])),  # not pa.array: its pandas probe on the prune path
    numeric_array(np.array([True])),
)


def flag_array(value: bool) -> pa.Array:
    """A one-element boolean array of ``value`` (shared: Arrow arrays are immutable), for the
    ``has_null`` field of a file's metadata scalar, made for every file a build reads."""
    return _FLAGS[bool(value)]


@lru_cache(maxsize=1024)
def one_list_offsets(n: int) -> pa.Array:
    """int32 offsets ``[0, n]`` of a one-element list array (shared, made once per ``n``)."""
    return pa.array([0, n], pa.int32())


_HASHED_AS_IS = (
    pa.types.is_int32,
    pa.types.is_uint32,
    pa.types.is_int64,
    pa.types.is_uint64,
    pa.types.is_float32,
    pa.types.is_float64,
    pa.types.is_date32,
    pa.types.is_time64,
    pa.types.is_duration,
    pa.types.is_fixed_size_binary,
)


def chunks(values) -> tuple[list, pa.DataType]:
    """The chunks of one file's column and their (value) type, checked indexable.

    Raises:
        TypeError: not an Arrow Array / ChunkedArray, or a type no index kind supports.
    """
    if isinstance(values, pa.ChunkedArray):
        parts = list(values.chunks)
    elif isinstance(values, pa.Array):
        parts = [values]
    else:
        raise TypeError(
            f"collect takes a pyarrow Array or ChunkedArray, got {type(values).__name__}"
        )
    return parts, base.value_type(values.type)


def _is_binary(t: pa.DataType) -> bool:
    return base.is_text(t)


def _offset_width(t: pa.DataType) -> int:
    return 8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4


def _canon(t: pa.DataType) -> int:
    return t.bit_width // 8 if base.is_float(t) else 0


def _used_dictionary(chunk: pa.DictionaryArray) -> pa.Array:
    """The dictionary entries a dictionary chunk's non-null indices use (each once)."""
    indices, dictionary = chunk.indices, chunk.dictionary
    width = indices.type.bit_width // 8
    used = ValueSet(width, 0, len(dictionary))
    if not used.add_fixed(*_fixed_buffers(indices)):  # an index out of range: Arrow says so
        return chunk.dictionary_decode()
    data, _ = used.values()
    positions = np.frombuffer(data, dtype=indices.type.to_pandas_dtype())
    return dictionary.take(pa.array(positions))


def _fixed_buffers(chunk: pa.Array) -> tuple[pa.Buffer | None, pa.Buffer, int, int]:
    validity, values = chunk.buffers()[:2]
    return (validity if chunk.null_count else None), values, chunk.offset, len(chunk)


def _plain_chunks(parts: list):
    """Each chunk with dictionaries reduced to their used entries, and whether it holds a
    null (a null index, or an index to a null dictionary entry)."""
    for chunk in parts:
        if isinstance(chunk, pa.DictionaryArray):
            used = _used_dictionary(chunk)
            yield used, chunk.null_count > 0 or used.null_count > 0
        else:
            yield chunk, chunk.null_count > 0


# ------------------------------------------------------------------------------ hashes


def _hashed_in_kernel(t: pa.DataType) -> bool:
    if _is_binary(t):
        return True
    if pa.types.is_timestamp(t) or pa.types.is_time32(t):
        return t.unit != "s"
    return any(test(t) for test in _HASHED_AS_IS)


def plain_chunks(values) -> tuple[list, pa.DataType, bool]:
    """One file's column as plain chunks: ``(chunks, value type, has_null)``, dictionary
    chunks reduced to the entries they use (each once)."""
    parts, t = chunks(values)
    plain = list(_plain_chunks(parts))
    return [c for c, _ in plain], t, any(null for _, null in plain)


def value_hashes(values, scheme: int = 1) -> tuple[np.ndarray, bool]:
    """The bloom index's hashes of one file's column, and whether it holds a null.

    Args:
        values: the column (Array / ChunkedArray, dictionary chunks allowed).
        scheme: the bloom hash scheme (specs/bloom-index.md): 1 hashes each value's PLAIN
            encoding in the column's own type (:func:`metaindex.bloom.canonical_float_hashes`),
            2 its canonical form (:func:`canonical_chunk`), the same for equal values of any
            width or type.

    Returns:
        ``(hashes, has_null)``: numpy uint64 XXH64 (seed 0) of every non-null value, in row
        order (a dictionary chunk: of each entry its indices use, once); ``has_null`` when
        some row is null.
    """
    parts, t, has_null = plain_chunks(values)
    return hashes_of(parts, t, scheme), has_null


def hashes_of(parts: list, t: pa.DataType, scheme: int = 1) -> np.ndarray:
    """:func:`value_hashes` of chunks from :func:`plain_chunks`."""
    out = np.empty(sum(len(c) - c.null_count for c in parts), np.uint64)
    pos = 0
    for chunk, kind in _hashed_chunks(parts, t, scheme):
        if not _hashed_in_kernel(kind):
            h = canonical_float_hashes(chunk)
            out[pos : pos + len(h)] = h
            pos += len(h)
        elif _is_binary(kind):
            validity, offsets, data = chunk.buffers()[:3]
            pos += _hash_kernel.binary_hashes(
                validity if chunk.null_count else None,
                offsets,
                _offset_width(kind),
                data if data is not None else b"",
                chunk.offset,
                len(chunk),
                chunk.null_count,
                out,
                pos,
            )
        else:
            pos += _hash_kernel.fixed_hashes(
                *_fixed_buffers(chunk),
                kind.bit_width // 8,
                _canon(kind),
                chunk.null_count,
                out,
                pos,
            )
    return out[:pos]


def insert_new(bits: np.ndarray, parts: list, t: pa.DataType, scheme: int = 1) -> int:
    """Insert the bloom hashes (:func:`value_hashes`, ``scheme``) of chunks from
    :func:`plain_chunks` into the split-block bitset ``bits``, hashed from the buffers in
    batches (no array of hashes); returns how many inserts set a bit
    (``bloomset.insert_new``: a lower bound of the distinct values)."""
    fresh = 0
    for chunk, kind in _hashed_chunks(parts, t, scheme):
        validity = chunk.buffers()[0] if chunk.null_count else None
        if not _hashed_in_kernel(kind):
            fresh += _bloom_kernel.insert_new(bits, canonical_float_hashes(chunk))
        elif _is_binary(kind):
            _, offsets, data = chunk.buffers()[:3]
            fresh += _bloom_kernel.insert_binary_new(
                bits,
                validity,
                offsets,
                _offset_width(kind),
                data if data is not None else b"",
                chunk.offset,
                len(chunk),
            )
        else:
            fresh += _bloom_kernel.insert_fixed_new(
                bits,
                validity,
                chunk.buffers()[1],
                chunk.offset,
                len(chunk),
                kind.bit_width // 8,
                _canon(kind),
            )
    return fresh


def _hashed_chunks(parts: list, t: pa.DataType, scheme: int):
    """``(chunk, its type)`` of each chunk with a non-null value, in the form ``scheme``
    hashes it."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown bloom hash scheme {scheme!r}; known: {SCHEMES}")
    for chunk in parts:
        if not len(chunk) or chunk.null_count == len(chunk):
            continue
        if scheme == 2:
            chunk = canonical_chunk(chunk, t)
        yield chunk, chunk.type


# ------------------------------------------------------------------------------ scheme 2

SCHEMES = (1, 2)
"""The bloom hash schemes (specs/bloom-index.md): 1, each value's PLAIN encoding in its own
type; 2, its canonical form (:func:`canonical_chunk`)."""

_US_PER_DAY = 86_400_000_000
_TO_US = {"s": 1_000_000, "ms": 1_000, "us": 1}
_INT64_MIN, _INT64_END = -(2**63), 2**63
_CANONICAL_NAN = np.int64(0x7FF8000000000000)


def canonical_chunk(chunk: pa.Array, t: pa.DataType) -> pa.Array:
    """One chunk's values in the canonical form of bloom hash scheme 2: what is hashed
    depends on the value only, not on the width or type it is stored in.

    * a number (integer, decimal, float) that is an integer in int64's range: its 8
      little-endian bytes (int64); else one that a double holds exactly (fractions such as
      1.5, ±inf, NaN as ``0x7ff8000000000000``): the double's 8 bytes (-0.0 is the integer
      0); else (a decimal such as 0.1, an integer beyond int64) the text ``"decimal:"`` and
      its digits, without trailing zeros (``decimal:0.1``);
    * a date or timestamp: the microseconds since the epoch as an integer (rounded down; a
      date at midnight; time zones as stored), in the number form above;
    * strings, binaries: the bytes.

    Returns an int64 array (8-byte forms) or a binary array (when a value needs the text
    form), nulls where the chunk has them.

    Raises:
        TypeError: a type the bloom index does not hash (booleans, nested).
    """
    if _is_binary(t) or pa.types.is_fixed_size_binary(t):
        return chunk
    if pa.types.is_integer(t):
        if pa.types.is_int64(t):
            return chunk
        if (
            pa.types.is_uint64(t)
            and (_values(chunk, np.uint64) >= np.uint64(_INT64_END))[_valid(chunk)].any()
        ):
            return _text_forms(chunk.to_pylist())
        return chunk.cast(pa.int64(), safe=False)
    if base.is_float(t):
        return _int64_like(chunk, _float_words(_values(chunk, t.to_pandas_dtype())))
    if pa.types.is_decimal(t):
        try:
            return chunk.cast(pa.int64())  # integral and within int64: the integer form
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _text_forms(chunk.to_pylist())
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if pa.types.is_date(t):
            raw = _values(chunk.cast(pa.date32()), np.int32).astype(np.int64)
            scale = _US_PER_DAY
        else:
            raw = _values(chunk, np.int64)
            scale = _TO_US.get(t.unit, 0)
        if scale == 0:  # nanoseconds: rounded down to microseconds
            return _int64_like(chunk, np.floor_divide(raw, 1000))
        if scale == 1:
            return chunk.view(pa.int64())
        limit = (_INT64_END - 1) // scale
        if ((raw > limit) | (raw < -limit))[_valid(chunk)].any():
            return _text_forms(
                [None if v is None else v * scale for v in chunk.view(pa.int64()).to_pylist()]
                if not pa.types.is_date(t)
                else [
                    None if v is None else v * scale
                    for v in chunk.cast(pa.date32()).view(pa.int32()).to_pylist()
                ]
            )
        return _int64_like(chunk, raw * scale)
    raise TypeError(f"bloom hash scheme 2 has no canonical form for {t}")


def _values(chunk: pa.Array, dtype) -> np.ndarray:
    """The chunk's fixed-width values buffer as numpy (null slots hold anything)."""
    dtype = np.dtype(dtype)
    buf = chunk.buffers()[1]
    if buf is None or not len(chunk):
        return np.zeros(len(chunk), dtype)
    return np.frombuffer(buf, dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)


def _valid(chunk: pa.Array) -> np.ndarray | slice:
    """Where the chunk has values (a numpy mask; every slot when none is null)."""
    if not chunk.null_count:
        return slice(None)
    return np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), np.bool_)


def _int64_like(chunk: pa.Array, words: np.ndarray) -> pa.Array:
    """``words`` as an int64 array with the chunk's validity (its bitmap, not copied)."""
    if not chunk.null_count:
        return pa.Array.from_buffers(
            pa.int64(), len(chunk), [None, pa.py_buffer(np.ascontiguousarray(words))]
        )
    padded = np.empty(chunk.offset + len(chunk), np.int64)
    padded[chunk.offset :] = words
    return pa.Array.from_buffers(
        pa.int64(),
        len(chunk),
        [chunk.buffers()[0], pa.py_buffer(padded)],
        chunk.null_count,
        chunk.offset,
    )


def _float_words(x: np.ndarray) -> np.ndarray:
    """Floats as scheme-2 words: integral ones within int64 as the integer, others as the
    double's bits (one NaN)."""
    x = x.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):
        whole = (np.floor(x) == x) & (x >= -(2.0**63)) & (x < 2.0**63)  # False for NaN, inf
    words = np.where(whole, np.where(whole, x, 0.0).astype(np.int64), x.view(np.int64))
    words[np.isnan(x)] = _CANONICAL_NAN
    return words


def canonical_number_bytes(value) -> bytes:
    """The bytes scheme 2 hashes for one number (int, float, Decimal), by the rule of
    :func:`canonical_chunk`."""
    if isinstance(value, float):
        if value != value:
            return int(_CANONICAL_NAN).to_bytes(8, "little", signed=True)
        if value in (float("inf"), float("-inf")) or value != int(value):
            return np.float64(value).tobytes()
        value = int(value)
    d = Decimal(value)
    if d == d.to_integral_value() and _INT64_MIN <= d < _INT64_END:
        return int(d).to_bytes(8, "little", signed=True)
    if d.is_finite() and Decimal(float(d)) == d:
        return np.float64(float(d)).tobytes()
    return b"decimal:" + format(d.normalize(), "f").encode("ascii")


def _text_forms(values: list) -> pa.Array:
    return pa.array([None if v is None else canonical_number_bytes(v) for v in values], pa.binary())


# ------------------------------------------------------------------------------ distinct


class Distinct:
    """The distinct non-null values of one file's column, fed part by part (row groups).

    Args:
        arrow_type: the column's type (dictionary types by their value type).
        limit: the most distinct values wanted.
    """

    def __init__(self, arrow_type: pa.DataType, limit: int) -> None:
        self.type = base.value_type(arrow_type)
        self.limit = limit
        self.has_null = False
        t = self.type
        self._binary = _is_binary(t)
        kernel = not pa.types.is_boolean(t) and (self._binary or t.bit_width % 8 == 0)
        # the kernel's set; None: a type it does not take (the reference path)
        self._set = (
            ValueSet(0 if self._binary else t.bit_width // 8, _canon(t), limit) if kernel else None
        )
        self._reference: list = []
        self._over = False

    def add(self, values) -> bool:
        """Take the next part of the column; False once it holds more than ``limit``
        distinct values (later parts cannot change that)."""
        if self._over:
            return False
        parts, t = chunks(values)
        if t != self.type:
            raise TypeError(f"a part of type {t} for a column of {self.type}")
        for chunk, null in _plain_chunks(parts):
            self.has_null |= null
            if not len(chunk) or chunk.null_count == len(chunk):
                continue
            if self._set is None:
                self._reference.append(chunk)
                continue
            if self._binary:
                validity, offsets, data = chunk.buffers()[:3]
                more = self._set.add_binary(
                    validity if chunk.null_count else None,
                    offsets,
                    _offset_width(t),
                    data if data is not None else b"",
                    chunk.offset,
                    len(chunk),
                )
            else:
                more = self._set.add_fixed(*_fixed_buffers(chunk))
            if not more:
                self._over = True
                return False
        return True

    def result(self) -> pa.Array | None:
        """The distinct values (unordered, floats canonical), None over ``limit``."""
        if self._over:
            return None
        if self._set is None:
            return _distinct_reference(self._reference, self.type, self.limit)
        data, offsets = self._set.values()
        n = len(self._set)
        if self._binary:
            assert offsets is not None  # a set of binary values has offsets
            if _offset_width(self.type) == 4:
                if offsets[-1] >= 2**31:
                    return None  # does not fit one array of this type: unknown
                offsets = offsets.astype(np.int32)
            buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        else:
            buffers = [None, pa.py_buffer(data)]
        return pa.Array.from_buffers(self.type, n, buffers)


def distinct_values(values, limit: int) -> tuple[pa.Array | None, bool]:
    """The distinct non-null values of one file's column, unordered, floats canonical.

    Args:
        values: the column (Array / ChunkedArray, dictionary chunks allowed).
        limit: the most distinct values wanted.

    Returns:
        ``(distinct, has_null)``: an array of the column's value type, or None when it holds
        more than ``limit`` distinct values (the chunks after the one that showed it are not
        looked at, nor are their nulls: ``has_null`` is then only "a null was seen").
    """
    _, t = chunks(values)
    found = Distinct(t, limit)
    found.add(values)
    return found.result(), found.has_null


def _distinct_reference(parts: list, t: pa.DataType, limit: int) -> pa.Array | None:
    """Booleans (and any other type without a byte width): pyarrow's ``unique``."""
    found = [pc.unique(chunk.drop_null() if chunk.null_count else chunk) for chunk in parts]
    distinct = pc.unique(pa.concat_arrays(found)) if found else pa.array([], t)
    return distinct if len(distinct) <= limit else None
