"""The bloom-filter index: per file a split-block bloom filter of the column's values.

Stored as ``struct<bitset: binary, has_null: bool>``: the raw SBBF bitset (specs/bloom-index.md:
XXH64 seed 0 over the PLAIN value, floats in canonical form so -0.0 = 0.0 and NaN = NaN), sized
for the file's own distinct count at the index's ``fpp``; ``bitset`` is null when the file has
no non-null value. A null struct, or a bitset whose length is not a power of two >= 32 bytes,
is unknown: the file is kept.

Only equality can use a bloom filter: ``=``, ``<=>`` with a non-null literal, ``IN`` and
``isnan`` (= NaN) probe the literals' hashes in every file's bitset at once (the bloomset
kernel over the concatenated bitsets); ``IS NULL`` reads ``has_null``. Every other predicate
keeps each file that has a value (``NOT isnan`` also each file with a null).
Booleans cannot be indexed (Parquet defines no bloom hash for BOOLEAN).
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from metaindex._native import bloomset as _kernel
from metaindex._native.distinct import count_distinct
from metaindex.arrays import from_pylist
from metaindex.bloom import MAX_BYTES, MIN_BYTES, SplitBlockBloomFilter, canonical_float_hashes
from metaindex.index import base, columns
from metaindex.index.base import Index, Leaf, to_bool, valid_mask

__all__ = ["BloomFilterIndex", "DEFAULT_FPP", "DEFAULT_MAX_BYTES", "filter_bits", "literal_hashes",
           "probe", "bitset_offsets"]

DEFAULT_FPP = 0.01
DEFAULT_MAX_BYTES = 1 << 20
"""Largest bitset per file (1 MiB holds ~870 k distinct values at fpp 0.01); files with more
distinct values get a fuller filter (a higher false-positive rate, never a wrong answer)."""


class BloomFilterIndex(Index):
    """A split-block bloom filter of one column per file.

    Args:
        col: the column's dotted path.
        fpp: the false-positive rate each file's filter is sized for.
        max_bytes: the largest bitset per file (a power of two, 32 .. 128 MiB).
    """

    name = "bloom"
    __slots__ = ()

    def __init__(self, col: str, fpp: float = DEFAULT_FPP,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if isinstance(fpp, bool) or not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise ValueError(f"fpp must be a number in (0, 1), got {fpp!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or \
                not MIN_BYTES <= max_bytes <= MAX_BYTES or max_bytes & (max_bytes - 1):
            raise ValueError(f"max_bytes must be a power of two in [{MIN_BYTES}, {MAX_BYTES}], "
                             f"got {max_bytes!r}")
        super().__init__(col, fpp=float(fpp), max_bytes=int(max_bytes))

    @property
    def fpp(self) -> float:
        return self._params["fpp"]

    @property
    def max_bytes(self) -> int:
        return self._params["max_bytes"]

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        t = base.value_type(arrow_type)
        if pa.types.is_boolean(t):
            raise TypeError("a bloom index cannot cover a boolean column (Parquet defines no "
                            "bloom hash for BOOLEAN); use a min/max or value-list index")
        return pa.struct([pa.field("bitset", pa.binary()), pa.field("has_null", pa.bool_())])

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        parts, t, has_null = columns.plain_chunks(values)
        kind = self.metadata_type(values.type)
        bitset = pa.nulls(1, pa.binary())
        n = sum(len(c) - c.null_count for c in parts)
        if n:
            bits = _filled(n, lambda b: columns.insert_new(b, parts, t),
                           lambda: columns.hashes_of(parts, t), self.fpp, self.max_bytes)
            offsets = np.array([0, len(bits)], np.int32)
            bitset = pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(offsets),
                                                            pa.py_buffer(bits)])
        return pa.StructArray.from_arrays([bitset, pa.array([has_null])],
                                          fields=list(kind))[0]

    def _evaluate(self, lf: Leaf, metadata: pa.Array) -> np.ndarray:
        t = metadata.type
        if not pa.types.is_struct(t) or [t.field(i).name for i in range(t.num_fields)] != \
                ["bitset", "has_null"]:
            raise TypeError(f"bloom metadata must be struct<bitset: binary, has_null: bool>, "
                            f"got {t}")
        bitsets = metadata.field("bitset")
        known = valid_mask(metadata)
        has_null = to_bool(metadata.field("has_null"), True)
        if lf.op == base.IS_NULL:
            return has_null | ~known
        if lf.op == base.NOT_NAN:  # Spark: isnan(NULL) is false, so NOT isnan(NULL) is true
            return valid_mask(bitsets) | has_null | ~known
        literals = _probed(lf)
        if literals is not None:
            hashes = literal_hashes(literals, lf.type)
            if hashes is not None:
                return probe(bitsets, hashes) | ~known
        return valid_mask(bitsets) | ~known


def filter_bits(hashes: np.ndarray, fpp: float, max_bytes: int) -> np.ndarray:
    """The bitset of a file's filter: ``hashes`` inserted into a filter of
    ``SplitBlockBloomFilter.for_ndv(ndv, fpp, max_bytes)`` bytes, ``ndv`` their distinct
    count (the same bits as building that filter and inserting them).

    The size is a power of two, non-decreasing in ``ndv``, so only a few ``ndv`` change it.
    The hashes go into the filter ``len(hashes)`` distinct values would get, counting those
    that set a bit (certainly new: a lower bound of ``ndv``, cython_ext/bloomset.pyx). When
    that count is above every ``ndv`` of a smaller filter the filter is done; else the
    distinct hashes are counted (only as far as that decides the size) and the filter folded
    down to its size: halving a split-block filter ORs blocks ``2k`` and ``2k + 1`` into block
    ``k``, which is where the smaller filter puts each hash (its block is
    ``((h >> 32) * z) >> 32``), the bits within a block depending on ``h`` alone. The ``ndv``
    bounds of each size are computed once per process (``for_ndv`` is not cheap).
    """
    return _filled(len(hashes), lambda bits: _kernel.insert_new(bits, hashes), lambda: hashes,
                   fpp, max_bytes)


def _filled(n: int, insert, hashes, fpp: float, max_bytes: int) -> np.ndarray:
    """:func:`filter_bits` of ``n`` hashes that ``insert(bits)`` inserts (returning how many
    set a bit) and ``hashes()`` gives as an array (only when the size is left open)."""
    size = _sized(n, fpp, max_bytes)
    bits = np.zeros(size, np.uint8)
    fresh = insert(bits)
    below = _largest_ndv_below(size, fpp, max_bytes)
    if below < 0 or fresh > below:
        return bits
    ndv = count_distinct(hashes(), below)
    while 0 <= ndv <= below:  # a smaller filter: which one
        size //= 2
        below = _largest_ndv_below(size, fpp, max_bytes)
    while len(bits) > size:
        pairs = bits.reshape(-1, 2, 32)
        bits = (pairs[:, 0, :] | pairs[:, 1, :]).reshape(-1)
    return bits


@functools.lru_cache(maxsize=4096)
def _sized(ndv: int, fpp: float, max_bytes: int) -> int:
    return SplitBlockBloomFilter.for_ndv(ndv, fpp, max_bytes).num_bytes


@functools.lru_cache(maxsize=1024)
def _largest_ndv_below(num_bytes: int, fpp: float, max_bytes: int) -> int:
    """The largest ndv whose filter is smaller than ``num_bytes`` (-1: none is)."""
    if _sized(0, fpp, max_bytes) >= num_bytes:
        return -1
    lo, hi = 0, 1  # _sized(lo) < num_bytes <= _sized(hi)
    while _sized(hi, fpp, max_bytes) < num_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _sized(mid, fpp, max_bytes) < num_bytes:
            lo = mid
        else:
            hi = mid
    return lo


def _probed(lf: Leaf):
    """The values whose presence decides ``lf``; None when a filter cannot decide it."""
    if lf.type is None:
        return None
    if lf.op == base.EQ:
        return (lf.value,)
    if lf.op == base.IN:
        return lf.value
    if lf.op == base.IS_NAN and base.is_float(base.value_type(lf.type)):
        return (float("nan"),)
    return None


def literal_hashes(values, arrow_type: pa.DataType) -> np.ndarray | None:
    """The index hashes of literals of a column of ``arrow_type`` (None: some has no hash).

    The literals become an Arrow array of the column's own type and hash exactly as
    :meth:`BloomFilterIndex.collect` hashes the column. A literal that does not convert (an
    integer out of range, a decimal with more digits than the scale) has no hash: the
    caller keeps every file rather than reason about it.
    """
    t = base.value_type(arrow_type)
    try:
        arr = from_pylist(list(values), t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if arr.null_count:
        return None
    return np.unique(canonical_float_hashes(arr))


def bitset_offsets(bitsets: pa.Array) -> np.ndarray:
    """The n + 1 offsets of a binary (or large_binary) bitset column as int64, absolute into
    its data buffer (``bitsets.buffers()[2]``); entry ``i`` spans ``[off[i], off[i + 1])``."""
    dtype = np.int64 if pa.types.is_large_binary(bitsets.type) else np.int32
    n = len(bitsets)
    buf = bitsets.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n + 1, np.int64)
    raw = np.frombuffer(buf, dtype, count=n + 1, offset=bitsets.offset * dtype().itemsize)
    return raw.astype(np.int64)


def probe(bitsets: pa.Array, hashes: np.ndarray) -> np.ndarray:
    """For each file, might its bitset hold one of ``hashes``? (cython_ext/bloomset.pyx)

    Args:
        bitsets: binary (or large_binary) array, one SBBF bitset per file; null = no value.
        hashes: uint64 XXH64 hashes to look for.

    Returns:
        numpy bool per file: False where the bitset is null or holds none of the hashes;
        True where one may be present, and where the entry is not a valid bitset (length
        not a power of two in [32 bytes, 128 MiB]), which proves nothing.
    """
    if not (pa.types.is_binary(bitsets.type) or pa.types.is_large_binary(bitsets.type)):
        raise TypeError(f"bitsets must be binary or large_binary, got {bitsets.type}")
    data = bitsets.buffers()[2]
    return _kernel.probe(bitset_offsets(bitsets), data if data is not None else b"",
                         valid_mask(bitsets), np.asarray(hashes, np.uint64), MAX_BYTES)
