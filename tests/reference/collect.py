"""Reference for the collection kernels (cython_ext/colhash.pyx, distinct.pyx) as the bloom
and value-list indexes use them: the whole column made one plain array, nulls dropped, floats
canonicalised, then pyarrow's ``unique`` / ``sort`` and ``metaindex.bloom``'s hashing and
filter sizing over it (the path the indexes took before the kernels).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.bloom import (SplitBlockBloomFilter, canonical_float_hashes, canonical_floats,
                             distinct_count)
from metaindex.index import base


def value_hashes(values):
    arr = base.plain_array(values)
    hashes = canonical_float_hashes(arr) if arr.null_count < len(arr) else []
    return [int(h) for h in hashes], arr.null_count > 0


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


def bloom_bitset(values, fpp: float, max_bytes: int):
    hashes, _ = value_hashes(values)
    if not hashes:
        return None
    f = SplitBlockBloomFilter.for_ndv(distinct_count(hashes), fpp, max_bytes)
    f.insert_hashes(hashes)
    return f.to_bytes()
