"""Cost of the index effectiveness estimates (``metaindex.engine.effectiveness``) that
``describe()`` computes once per index version.

Synthetic metadata (the index kinds' own metadata types) for 10 k / 100 k / 1 M indexed files:
min/max ranges of random width, value lists of 10 values per file out of 100 k, 1 KiB bloom
filters holding 800 values each. For each kind: the estimate's median time, next to one
query's evaluation over the same metadata (``Index.might_match`` of an equality), as the peer
measured in the same run: "describe costs as much as N queries".

Usage: python bench/effectiveness.py [--quick]   (--quick: up to 100 k files, fewer runs)
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
from _common import machine, median_time, print_table

from metaindex.bloom import SplitBlockBloomFilter
from metaindex.engine.effectiveness import effectiveness
from metaindex.expr import EqualTo, bind
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.store import OBJ_ROWS, IndexDef

QUICK = "--quick" in sys.argv
SIZES = (10_000, 100_000) if QUICK else (10_000, 100_000, 1_000_000)
RUNS = 3


class _Snapshot:
    """What ``effectiveness()`` reads of a snapshot: index definitions and the metadata table."""

    def __init__(self, index, metadata: pa.Array):
        self.index_defs = (IndexDef(index.name, index.cols, index.params),)
        self._table = pa.table(
            {
                OBJ_ROWS: pa.array(np.full(len(metadata), 1000, np.int64)),
                self.index_defs[0].storage_name: metadata,
            }
        )

    def metadata_table(self) -> pa.Table:
        return self._table


def minmax(n: int, rng) -> pa.Array:
    lo = rng.uniform(0, 1e6, n)
    zeros = pa.array(np.zeros(n, np.int64))
    return pa.StructArray.from_arrays(
        [pa.array(lo), pa.array(lo + rng.exponential(50, n)), zeros, zeros],
        names=["min", "max", "null_count", "nan_count"],
    )


def valuelist(n: int, rng) -> pa.Array:
    values = pa.array(rng.integers(0, 100_000, n * 10))
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, n * 10 + 1, 10, dtype=np.int32)), values)
    return pa.StructArray.from_arrays(
        [lists, pa.array(np.zeros(n, bool))], names=["values", "has_null"]
    )


def bloom(n: int, rng) -> pa.Array:
    filters = []
    for _ in range(256):
        f = SplitBlockBloomFilter(1024)
        f.insert(rng.integers(0, 1 << 40, 800))
        filters.append(f.to_bytes())
    bitsets = pa.array([filters[i % 256] for i in range(n)], pa.binary())
    return pa.StructArray.from_arrays(
        [bitsets, pa.array(np.zeros(n, bool))], names=["bitset", "has_null"]
    )


def main() -> None:
    print(machine())
    rng = np.random.default_rng(0)
    schema = pa.schema([("x", pa.float64()), ("v", pa.int64()), ("b", pa.int64())])
    kinds = (
        (MinMaxIndex("x"), minmax, 500_000.0),
        (ValueListIndex("v", max_values=100), valuelist, 42),
        (BloomFilterIndex("b"), bloom, 42),
    )
    rows = []
    for n in SIZES:
        for index, make, literal in kinds:
            if index.name == "bloom" and n > 100_000:
                continue  # 1 KiB per file: 1 GiB of bitsets
            metadata = make(n, rng)
            snapshot = _Snapshot(index, metadata)
            estimate = median_time(lambda s=snapshot: effectiveness(s), RUNS)
            predicate = bind(EqualTo(index.column, literal), schema)
            query = median_time(lambda i=index, p=predicate, m=metadata: i.might_match(p, m), RUNS)
            rows.append(
                (
                    f"{n:,}",
                    index.name,
                    f"{estimate * 1000:,.0f}",
                    f"{query * 1000:,.1f}",
                    f"{estimate / query:,.0f}",
                )
            )
    print_table(("indexed files", "index", "estimate ms", "one query ms", "queries"), rows)


if __name__ == "__main__":
    main()
