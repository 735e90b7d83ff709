"""Index build throughput per core against a pyarrow read of the indexed columns.

Files of 100 k rows (row groups of 25 k, as pyarrow writes them, snappy): ts int64, city
(100 distinct strings), user (random int64). For each index set, a build over every file in
one process (``SerialExecutor``: one core) is timed (process CPU time), and so is
``pq.read_table(path, columns=<the indexed columns>, use_threads=False)`` over the same files,
the two back to back in each run so a change in the machine's load hits both. ``build /
pyarrow read`` is the median over the runs of the per-run ratio: the cost of indexing relative
to just reading the indexed columns with Arrow C++ (the target is ≤ 1.5). files/s and MB/s
(the indexed columns' uncompressed bytes, from the footers) are per core, from the median
times. The build includes everything ``IndexBuilder.build`` does: listing, footers, reading
and collecting, writing the part and committing; the pyarrow side only reads (it writes
nothing), so the ratio charges the build for its output too (not strictly like for like:
writing a bloom part of 256 KiB per file is part of the build's cost).

Usage: python bench/build.py [--quick]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import machine, median_time, print_table, single_thread

from metaindex.api import MetaIndex
from metaindex.engine.executors import SerialExecutor

QUICK = "--quick" in sys.argv
FILES = 30 if QUICK else 120
RUNS = 3 if QUICK else 5
ROWS = 100_000

CASES = (
    ("min/max ts, footer statistics", True, ("ts",), lambda b: b.add_min_max_index("ts")),
    ("min/max ts, column scan", False, ("ts",), lambda b: b.add_min_max_index("ts")),
    ("value list city", True, ("city",), lambda b: b.add_value_list_index("city")),
    ("bloom user", True, ("user",), lambda b: b.add_bloom_filter_index("user")),
    (
        "min/max ts + value list city + bloom user, footer",
        True,
        ("ts", "city", "user"),
        lambda b: (
            b.add_min_max_index("ts").add_value_list_index("city").add_bloom_filter_index("user")
        ),
    ),
)


def write_files(root: str) -> list:
    rng = np.random.default_rng(0)
    cities = np.array([f"city-{c:03d}" for c in range(100)], dtype=object)
    paths = []
    for k in range(FILES):
        t = pa.table(
            {
                "ts": np.sort(rng.integers(0, 10**12, ROWS)),
                "city": pa.array(cities[rng.integers(0, 100, ROWS)]),
                "user": rng.integers(0, 10**9, ROWS),
            }
        )
        path = os.path.join(root, f"f{k:04d}.parquet")
        pq.write_table(t, path, row_group_size=25_000)
        paths.append(path)
    return paths


def column_bytes(paths: list, columns: tuple) -> int:
    total = 0
    for p in paths:
        meta = pq.read_metadata(p)
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                chunk = meta.row_group(rg).column(c)
                if chunk.path_in_schema in columns:
                    total += chunk.total_uncompressed_size
    return total


def _cpu(fn) -> float:
    """CPU time of one run of ``fn``."""
    return median_time(fn, 1, warmup=0, clock=time.process_time)


def main() -> None:
    single_thread()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    base = tempfile.mkdtemp(prefix="metaindex-bench-build-")
    try:
        root = os.path.join(base, "data")
        os.makedirs(root)
        paths = write_files(root)
        print(f"{FILES} files x {ROWS:,} rows; CPU time, median of {RUNS}\n")
        rows = []
        for label, footer, columns, builder in CASES:

            def build(builder=builder, footer=footer):
                store = tempfile.mkdtemp(dir=base)
                try:
                    builder(MetaIndex(root, store=store).index_builder()).build(
                        executor=SerialExecutor(), footer_statistics=footer
                    )
                finally:
                    shutil.rmtree(store)

            def arrow_read(columns=columns):
                for p in paths:
                    pq.read_table(p, columns=list(columns), use_threads=False)

            build()  # warm-up
            arrow_read()
            builds, reads = [], []
            for _ in range(RUNS):
                builds.append(_cpu(build))
                reads.append(_cpu(arrow_read))
            t_build, t_read = statistics.median(builds), statistics.median(reads)
            ratio = statistics.median(b / r for b, r in zip(builds, reads, strict=True))
            mb = column_bytes(paths, columns) / 1e6
            rows.append([label, FILES / t_build, mb / t_build, FILES / t_read, mb / t_read, ratio])
            print(rows[-1], flush=True)
        print()
        print_table(
            [
                "indexes",
                "build files/s",
                "build MB/s (indexed columns)",
                "pyarrow read files/s",
                "pyarrow read MB/s",
                "build / pyarrow read",
            ],
            rows,
        )
        print(
            "build: listing, footers, reading and collecting, writing the part file and "
            "committing it (IndexBuilder.build); pyarrow read: pq.read_table of the indexed "
            "columns only (no output written)"
        )
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
