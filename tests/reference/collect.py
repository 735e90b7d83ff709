"""Reference for the collection kernels (cython_ext/colhash.pyx, distinct.pyx) as the bloom
and value-list indexes use them: the whole column made one plain array, nulls dropped, floats
canonicalised, then pyarrow's ``unique`` / ``sort`` and ``metaindex.bloom``'s hashing and
filter sizing over it (the path the indexes took before the kernels).
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext
from fractions import Fraction

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.bloom import (
    SplitBlockBloomFilter,
    canonical_float_hashes,
    canonical_floats,
    distinct_count,
    xxh64,
)
from metaindex.index import base


def value_hashes(values, scheme: int = 1):
    arr = base.plain_array(values)
    if scheme == 2:
        return [int(h) for h in scheme2_hashes(arr)], arr.null_count > 0
    hashes = canonical_float_hashes(arr) if arr.null_count < len(arr) else []
    return [int(h) for h in hashes], arr.null_count > 0


_US = {"s": 10**6, "ms": 10**3, "us": 1}


def scheme2_bytes(value) -> bytes:
    """Bloom hash scheme 2 of one Python value (number as an exact Fraction; str; bytes)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, float) and math.isnan(value):
        return struct.pack("<Q", 0x7FF8000000000000)
    if isinstance(value, float) and math.isinf(value):
        return struct.pack("<d", value)
    exact = Fraction(value)
    if exact.denominator == 1 and -(2**63) <= exact < 2**63:
        return struct.pack("<q", int(exact))
    try:
        if Fraction(float(exact)) == exact:
            return struct.pack("<d", float(exact))
    except OverflowError:
        pass
    with localcontext() as ctx:  # exact: the denominator of a decimal divides a power of 10
        ctx.prec = 200
        text = (
            format(Decimal(exact.numerator) / Decimal(exact.denominator), "f")
            if exact.denominator != 1
            else str(exact.numerator)
        )
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return b"decimal:" + text.encode("ascii")


def scheme2_values(arr: pa.Array) -> list:
    """The non-null values of an array as scheme 2 sees them (temporal: microseconds)."""
    t = arr.type
    if pa.types.is_date(t):
        days = arr.cast(pa.date32()).cast(pa.int32()).to_pylist()
        return [d * 86_400_000_000 for d in days if d is not None]
    if pa.types.is_timestamp(t):
        ticks = [v for v in arr.cast(pa.int64()).to_pylist() if v is not None]
        return [v // 1000 for v in ticks] if t.unit == "ns" else [v * _US[t.unit] for v in ticks]
    return [v for v in arr.to_pylist() if v is not None]


def scheme2_hashes(arr: pa.Array) -> list:
    return [int(xxh64(scheme2_bytes(v))[0]) for v in scheme2_values(arr)]


def distinct_values(values, limit: int):
    """(sorted distinct values as Python objects, or None over ``limit``; has_null)."""
    arr = base.plain_array(values)
    present = arr.drop_null() if arr.null_count else arr
    if base.is_float(arr.type):
        present = pa.array(canonical_floats(present), arr.type)
    distinct = pc.unique(present)
    if len(distinct) > limit:
        return None, arr.null_count > 0
    return distinct.take(pc.sort_indices(distinct)), arr.null_count > 0


def bloom_bitset(values, fpp: float, max_bytes: int, scheme: int = 1):
    hashes, _ = value_hashes(values, scheme)
    if not hashes:
        return None
    f = SplitBlockBloomFilter.for_ndv(distinct_count(hashes), fpp, max_bytes)
    f.insert_hashes(hashes)
    return f.to_bytes()
