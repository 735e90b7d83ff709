"""Bloom filter kernels vs a Python loop over `xxhash` and vs pyarrow's filter writing.

Single thread, same run, median of RUNS. For 10 M int64 and 1 M short strings we time our fused
hash+insert and hash+check on a filter that fits in cache (1 MiB) and one that does not (64 MiB),
plus the filter pyarrow would size for the data (ndv = rows, fpp = 0.01). Peers:

* Python + xxhash: a loop calling ``xxhash.xxh64_intdigest`` on each value's PLAIN bytes
  (timed on a 100 k subset and scaled), then our ``insert_hashes`` for the bits — the fastest
  obvious pure-Python approach.
* pyarrow: ``pq.write_table`` of the same one-column table with and without
  ``bloom_filter_options`` (one row group, uncompressed, no dictionary); the difference is
  what pyarrow spends building and writing the filter.

Usage: python bench/bloom.py [--quick]   (--quick: 1/10 of the data, 3 runs)
"""

from __future__ import annotations

import io
import struct
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from _common import machine, median_time, print_table, single_thread

from metaindex._native import bloom as kernel
from metaindex.bloom import SplitBlockBloomFilter, optimal_num_bytes

QUICK = "--quick" in sys.argv
SCALE = 10 if QUICK else 1
RUNS = 3 if QUICK else 5
FPP = 0.01
SUBSET = 100_000 // SCALE


def python_loop_rate(values: pa.Array) -> float:
    """Values/s of hashing with xxhash in a Python loop and inserting the hashes."""
    sub = values.slice(0, SUBSET)
    if pa.types.is_integer(sub.type):
        items = [struct.pack("<q", v) for v in sub.to_numpy()]
    else:
        items = [s.encode() for s in sub.to_pylist()]
    f = SplitBlockBloomFilter(1 << 20)

    def run():
        f.insert_hashes(
            np.fromiter((xxhash.xxh64_intdigest(b) for b in items), np.uint64, len(items))
        )

    return len(items) / median_time(run, RUNS)


def pyarrow_bloom_rate(values: pa.Array) -> tuple[float, int]:
    """Values/s of pyarrow's bloom filter work (write with filter - write without)."""
    table = pa.table({"c": values})
    n = len(values)
    common = {
        "row_group_size": n,
        "compression": "none",
        "use_dictionary": False,
        "write_statistics": False,
    }
    opts = {"c": {"ndv": n, "fpp": FPP}}

    def write(**kw):
        sink = io.BytesIO()
        pq.write_table(table, sink, **common, **kw)
        return sink

    with_filter = write(bloom_filter_options=opts).getvalue()
    size = (
        pq.ParquetFile(io.BytesIO(with_filter)).metadata.row_group(0).column(0).bloom_filter_length
    )
    plain = median_time(lambda: write(), RUNS)
    bloom = median_time(lambda: write(bloom_filter_options=opts), RUNS)
    return n / max(bloom - plain, 1e-9), size


def main() -> None:
    single_thread()
    rng = np.random.default_rng(11)
    n_int, n_str = 10_000_000 // SCALE, 1_000_000 // SCALE
    ints = pa.array(rng.integers(-(2**62), 2**62, n_int))
    strs = pa.array([f"k{v}" for v in rng.integers(0, 10**9, n_str)])
    print(
        f"# bloom: {machine()}; block ops: {kernel.select_block_ops()}; "
        f"{RUNS} runs, median{' (quick)' if QUICK else ''}\n"
    )
    headers = [
        "data",
        "filter",
        "ours insert M/s",
        "ours check M/s",
        "Python+xxhash M/s",
        "insert vs Python",
        "pyarrow bloom M/s",
        "insert vs pyarrow",
    ]
    rows = []
    for label, values in (
        (f"{n_int // 1_000_000}M int64", ints),
        (f"{n_str / 1_000_000:g}M short strings", strs),
    ):
        n = len(values)
        py_rate = python_loop_rate(values)
        arrow_rate, arrow_len = pyarrow_bloom_rate(values)
        arrow_size = optimal_num_bytes(n, FPP)
        for size in sorted({1 << 20, 64 << 20, arrow_size}):
            f = SplitBlockBloomFilter(size)
            ins = n / median_time(lambda f=f, v=values: f.insert(v), RUNS) / 1e6
            chk = n / median_time(lambda f=f, v=values: f.might_contain(v), RUNS) / 1e6
            name = (f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB") + (
                " (= pyarrow's)" if size == arrow_size else ""
            )
            rows.append(
                [
                    label,
                    name,
                    ins,
                    chk,
                    py_rate / 1e6,
                    ins * 1e6 / py_rate,
                    arrow_rate / 1e6 if size == arrow_size else None,
                    ins * 1e6 / arrow_rate if size == arrow_size else None,
                ]
            )
        assert arrow_len >= arrow_size, "pyarrow's filter should be the size we compare against"
    print_table(headers, rows)


if __name__ == "__main__":
    main()
