"""Whole-file write and read vs pyarrow and fastparquet, single thread, same run.

A 5 M-row table of six columns (int64, float64, string, timestamp, decimal, list<int32>), written
and read UNCOMPRESSED and ZSTD. pyarrow runs with ``use_threads=False`` and its CPU pool pinned to
one thread; fastparquet writes and reads the five flat columns (it has no nested writer), so its
ratios are for that subset and say so. Ratios > 1 mean we are faster.

Usage: python bench/files.py [--quick]   (--quick: 500 k rows, 3 runs)
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _common import machine, median_time, print_table, single_thread
from metaindex.parquet.reader import read_table
from metaindex.parquet.writer import write_table

QUICK = "--quick" in sys.argv
ROWS = 500_000 if QUICK else 5_000_000
RUNS = 3 if QUICK else 5


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 5, n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.table({
        "id": pa.array(rng.integers(0, 1 << 40, n)),
        "value": pa.array(rng.standard_normal(n)),
        "name": pa.array(np.char.add("user-", rng.integers(0, 100_000, n).astype(str)).astype(object)),
        "ts": pa.array(np.datetime64("2026-01-01", "us") + rng.integers(0, 10**12, n).astype("timedelta64[us]")),
        "amount": pa.array(rng.integers(-10**9, 10**9, n)).cast(pa.decimal128(21, 2)).cast(pa.decimal128(18, 2)),
        "tags": pa.ListArray.from_arrays(offsets, pa.array(rng.integers(0, 1000, int(offsets[-1]), dtype=np.int32))),
    })


def main():
    single_thread()
    warnings.simplefilter("ignore")
    print(f"machine: {machine()}")
    table = make_table(ROWS)
    flat = table.drop(["tags"])
    print(f"table: {ROWS:,} rows x {table.num_columns} columns, {table.nbytes / 1e6:.0f} MB in Arrow; "
          f"median of {RUNS}\n")
    try:
        import fastparquet
        df = flat.to_pandas()
    except ImportError:
        fastparquet = None
    tmp = tempfile.mkdtemp()
    rows = []
    for codec in ("none", "zstd"):
        def ours_write():
            buf = io.BytesIO()
            write_table(table, buf, compression=codec, row_group_size=1 << 20)
            return buf.getvalue()

        def pa_write():
            buf = io.BytesIO()
            pq.write_table(table, buf, compression=codec, row_group_size=1 << 20)
            return buf.getvalue()
        ours_file, pa_file = ours_write(), pa_write()
        t_ow, t_pw = median_time(ours_write, RUNS), median_time(pa_write, RUNS)
        t_or = median_time(lambda: read_table(pa_file), RUNS)
        t_pr = median_time(lambda: pq.read_table(io.BytesIO(pa_file), use_threads=False), RUNS)
        assert read_table(ours_file).equals(table) and read_table(pa_file).equals(table)
        t_fw = t_fr = None
        t_ow_flat = t_or_flat = None
        if fastparquet is not None:
            path = os.path.join(tmp, f"fp-{codec}.parquet")
            fp_codec = None if codec == "none" else "ZSTD"
            t_fw = median_time(lambda: fastparquet.write(path, df, compression=fp_codec,
                                                         row_group_offsets=1 << 20, stats=False), RUNS)
            flat_buf = io.BytesIO()
            pq.write_table(flat, flat_buf, compression=codec, row_group_size=1 << 20)
            flat_path = os.path.join(tmp, f"pa-flat-{codec}.parquet")
            with open(flat_path, "wb") as fh:
                fh.write(flat_buf.getvalue())
            t_fr = median_time(lambda: fastparquet.ParquetFile(flat_path).to_pandas(), RUNS)
            t_ow_flat = median_time(lambda: write_table(flat, io.BytesIO(), compression=codec,
                                                        row_group_size=1 << 20), RUNS)
            t_or_flat = median_time(lambda: read_table(flat_buf.getvalue()), RUNS)
        mb = table.nbytes / 1e6
        rows.append([codec, f"{len(ours_file) / 1e6:.0f} / {len(pa_file) / 1e6:.0f}",
                     mb / t_ow, mb / t_or, t_pw / t_ow, t_pr / t_or,
                     None if t_fw is None else t_fw / t_ow_flat,
                     None if t_fr is None else t_fr / t_or_flat])
    print_table(["codec", "file MB ours / pyarrow", "ours write MB/s", "ours read MB/s",
                 "× pyarrow write", "× pyarrow read", "× fastparquet write (flat)",
                 "× fastparquet read (flat)"], rows)


if __name__ == "__main__":
    main()
