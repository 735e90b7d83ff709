"""xskipper's bloom filter: Spark's ``org.apache.spark.util.sketch.BloomFilter`` (format V1) per
file, as xskipper's ``BloomFilterIndex`` builds it (``BloomFilter.create(ndv, fpp)``, one
filter of a fixed size per file, strings and integral columns only).

Kept so that a store xskipper wrote can be read and upgraded without reading its data files
again (``metaindex.store.xskipper_format``); new indexes use :mod:`metaindex.index.bloom`.

Stored as ``struct<num_hashes: int32, words: binary>``: ``words`` is the filter's bit array as
Spark serialises it (``BitArray.writeTo``: 64-bit words, big-endian). A null struct, or one
whose ``words`` is not a positive multiple of 8 bytes, is unknown (the file is kept).

Hashing is Spark's (``BloomFilterImpl.mightContainLong`` / ``mightContainBinary``): for a
value ``v``, ``h1 = murmur3_32(v, seed 0)``, ``h2 = murmur3_32(v, seed h1)``; bit ``i``
(1 <= i <= num_hashes) is ``c % bit_size`` where ``c = h1 + i * h2`` (int32 arithmetic),
bit-flipped when negative. Integral values (byte, short, int, long) hash as a 64-bit long
(``Murmur3_x86_32.hashLong``), strings as their UTF-8 bytes (``hashUnsafeBytes``: 4-byte
little-endian blocks, then each remaining byte, sign-extended, mixed as a block of its own —
not the reference Murmur3 tail).

Only ``=``, ``<=>`` with a value and ``IN`` use the filter; a file with no non-null value has
an empty filter (xskipper's) and so is ruled out by them, which is exact (no row equals a
value there). Everything else keeps the file.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.index import base
from metaindex.index.base import Index, Leaf, valid_mask

__all__ = [
    "SketchBloomIndex",
    "hash_longs",
    "hash_bytes",
    "bit_positions",
    "might_contain",
    "create_words",
    "DEFAULT_FPP",
    "DEFAULT_NDV",
    "MAX_HASHES",
]

DEFAULT_FPP = 0.01
DEFAULT_NDV = 100_000
"""xskipper's defaults (``io.xskipper.index.bloom.fpp`` / ``.ndv``)."""
MAX_HASHES = 1024
"""More hash functions than any sane filter has: a larger count is not understood."""
MAX_WORDS = 1 << 24
"""128 MiB of bits: a larger filter is not understood."""

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    return _rotl(k1 * _C1, 15) * _C2


def _mix_h1(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    return _rotl(h1 ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h1: np.ndarray, length) -> np.ndarray:
    h1 = h1 ^ np.uint32(length)
    h1 = h1 ^ (h1 >> np.uint32(16))
    h1 = h1 * np.uint32(0x85EBCA6B)
    h1 = h1 ^ (h1 >> np.uint32(13))
    h1 = h1 * np.uint32(0xC2B2AE35)
    return h1 ^ (h1 >> np.uint32(16))


def hash_longs(values: np.ndarray, seeds) -> np.ndarray:
    """Spark's ``Murmur3_x86_32.hashLong(v, seed)`` for int64 ``values`` (uint32 results;
    ``seeds`` a scalar or an array of the same length)."""
    v = np.asarray(values, np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        low = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        high = (v >> np.uint64(32)).astype(np.uint32)
        h1 = np.broadcast_to(np.asarray(seeds, np.uint32), low.shape).copy()
        h1 = _mix_h1(h1, _mix_k1(low))
        h1 = _mix_h1(h1, _mix_k1(high))
        return _fmix(h1, 8)


def hash_bytes(data: bytes, seed: int) -> int:
    """Spark's ``Murmur3_x86_32.hashUnsafeBytes(data, seed)`` (uint32 result)."""
    n = len(data)
    aligned = n - n % 4
    with np.errstate(over="ignore"):
        h1 = np.uint32(seed & 0xFFFFFFFF)
        if aligned:
            for k in np.frombuffer(data[:aligned], "<u4"):
                h1 = _mix_h1(h1, _mix_k1(np.uint32(k)))
        for b in data[aligned:]:
            signed = b - 256 if b >= 128 else b
            h1 = _mix_h1(h1, _mix_k1(np.uint32(signed & 0xFFFFFFFF)))
        return int(_fmix(h1, n))


def _value_hashes(value, t: pa.DataType) -> tuple | None:
    """``(h1, h2)`` of one literal as Spark's filter hashes it, or None when the filter cannot
    answer for it (another type, a string that is not valid Unicode)."""
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, np.integer))
            or not -(1 << 63) <= int(value) < (1 << 63)
        ):
            return None
        h1 = hash_longs(np.array([int(value)], np.int64), 0)
        h2 = hash_longs(np.array([int(value)], np.int64), h1)
        return int(h1[0]), int(h2[0])
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not isinstance(value, str):
            return None
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        first = hash_bytes(data, 0)
        return first, hash_bytes(data, first)
    return None


def bit_positions(h1: int, h2: int, num_hashes: int, bit_size: int) -> np.ndarray:
    """The bits Spark's V1 filter of ``bit_size`` bits and ``num_hashes`` hashes tests for a
    value with hashes ``(h1, h2)`` (int64 positions)."""
    i = np.arange(1, num_hashes + 1, dtype=np.int64)
    combined = ((h1 + i * h2) & 0xFFFFFFFF).astype(np.int64)
    combined = np.where(combined >= (1 << 31), combined - (1 << 32), combined)  # to int32
    combined = np.where(combined < 0, ~combined, combined)
    return combined % bit_size


def might_contain(words: np.ndarray, num_hashes: int, h1: int, h2: int) -> bool:
    """Whether one filter (``words``: uint64, in Spark's word order) might hold the value."""
    positions = bit_positions(h1, h2, num_hashes, len(words) * 64)
    bits = (words[positions >> 6] >> (positions & 63).astype(np.uint64)) & np.uint64(1)
    return bool(bits.all())


def create_words(ndv: int, fpp: float) -> tuple:
    """``(num_hashes, words)`` of an empty ``BloomFilter.create(ndv, fpp)`` (Spark V1)."""
    bits = int(-ndv * math.log(fpp) / (math.log(2) ** 2))
    num_hashes = max(1, int(math.floor(bits / ndv * math.log(2) + 0.5)))
    words = -(-bits // 64)
    return num_hashes, np.zeros(max(1, words), np.uint64)


def _set(words: np.ndarray, num_hashes: int, h1: np.ndarray, h2: np.ndarray) -> None:
    size = len(words) * 64
    for i in range(1, num_hashes + 1):
        combined = (h1.astype(np.int64) + i * h2.astype(np.int64)) & 0xFFFFFFFF
        combined = np.where(combined >= (1 << 31), combined - (1 << 32), combined)
        combined = np.where(combined < 0, ~combined, combined) % size
        np.bitwise_or.at(words, combined >> 6, np.uint64(1) << (combined & 63).astype(np.uint64))


class SketchBloomIndex(Index):
    """xskipper's bloom filter (Spark's sketch ``BloomFilter``, V1) on one string or integral
    column.

    Args:
        col: the column's dotted path.
        fpp: the false-positive rate of a filter holding ``ndv`` values.
        ndv: the number of distinct values every file's filter is sized for.
    """

    name = "sketchbloom"
    label = "xskipper bloom filter"
    __slots__ = ()

    def __init__(self, col: str, fpp: float = DEFAULT_FPP, ndv: int = DEFAULT_NDV) -> None:
        if isinstance(fpp, bool) or not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise ValueError(f"fpp must be a number in (0, 1), got {fpp!r}")
        if (
            isinstance(ndv, bool)
            or not isinstance(ndv, (int, np.integer))
            or not 0 < ndv <= 1 << 40
        ):
            raise ValueError(f"ndv must be an int in [1, 2**40], got {ndv!r}")
        super().__init__(col, fpp=float(fpp), ndv=int(ndv))

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        t = base.value_type(arrow_type)
        if not (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or (pa.types.is_integer(t) and not pa.types.is_uint64(t))
        ):
            raise TypeError(
                f"an xskipper bloom filter indexes strings and integers (Spark's "
                f"sketch BloomFilter), not {arrow_type}"
            )
        return pa.struct([pa.field("num_hashes", pa.int32()), pa.field("words", pa.binary())])

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        arr = base.plain_array(values)
        num_hashes, words = create_words(self.params["ndv"], self.params["fpp"])
        distinct = pc.unique(arr.drop_null())
        if pa.types.is_integer(arr.type):
            longs = np.asarray(distinct.cast(pa.int64()).to_numpy(), np.int64)
            h1 = hash_longs(longs, 0)
            _set(words, num_hashes, h1, hash_longs(longs, h1))
        else:
            hashes = [_value_hashes(v, arr.type) for v in distinct.to_pylist()]
            if hashes:
                h = np.array(hashes, np.uint32)
                _set(words, num_hashes, h[:, 0], h[:, 1])
        return pa.scalar(
            {"num_hashes": num_hashes, "words": words.astype(">u8").tobytes()},
            self.metadata_type(arr.type),
        )

    def _evaluate(self, lf: Leaf, metadata: pa.Array) -> np.ndarray:
        n = len(metadata)
        keep = np.ones(n, np.bool_)
        if lf.op == base.NEVER:
            return np.zeros(n, np.bool_)
        if lf.op not in (base.EQ, base.IN):
            return keep
        values = [lf.value] if lf.op == base.EQ else list(lf.value)
        if len(values) > base.IN_LIMIT:
            return keep
        pairs = [_value_hashes(v, lf.type) for v in values]
        hashes = [h for h in pairs if h is not None]
        if len(hashes) != len(pairs):
            return keep
        known = valid_mask(metadata)
        counts = metadata.field("num_hashes").to_numpy(zero_copy_only=False)
        blobs = metadata.field("words").to_pylist()
        for row in np.flatnonzero(known):
            blob, k = blobs[row], counts[row]
            if (
                blob is None
                or not len(blob)
                or len(blob) % 8
                or len(blob) > 8 * MAX_WORDS
                or not 0 < k <= MAX_HASHES
            ):
                continue  # not understood: keep
            words = np.frombuffer(blob, ">u8").astype(np.uint64)
            keep[row] = any(might_contain(words, int(k), h1, h2) for h1, h2 in hashes)
        return keep
