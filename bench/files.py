"""Whole files, like for like: metaindex vs pyarrow (Arrow C++), same run, medians.

Every ratio compares our whole-file call with pyarrow's whole-file call on the same data and
the same options:

- read: ``metaindex.parquet.read_table(src)`` vs ``pq.read_table(src, use_threads=False)`` on
  the *same* bytes (the file pyarrow wrote), from memory (bytes) and from a local file;
- write: ``metaindex.parquet.write_table(t, buf, ...)`` vs ``pq.write_table(t, buf, ...)``
  with the same compression, dictionary and column encoding (Arrow pinned to one thread).

Single-thread rows pass ``use_threads=False`` to both sides (pyarrow's CPU and I/O pools
pinned to one thread). The multi-threaded rows pass ``use_threads=True`` to both readers and to
our writer (pyarrow's ``write_table`` has no such option: it encodes one column after the
other), with Arrow's pools at the machine's core count, timed by wall clock.

One-column files: int32, int64, float, double, timestamp[us], decimal(18,2), string, binary;
each with PLAIN, dictionary, DELTA_* (where the type has one) and BYTE_STREAM_SPLIT (where it
applies); nullable (10 % nulls) and required; uncompressed and zstd. Then the six-column table
(int64, float64, string, timestamp, decimal, list<int32>) single-threaded and multi-threaded
(``use_threads=True`` on both sides). Ratios > 1 mean we are faster.

Usage: python bench/files.py [--quick] [--rows N] [--runs K] [--only SUBSTRING]
  Default: 1 M rows per one-column file, medians of at least 11 interleaved runs (rows near
  1.0x moved by +-0.2 between runs of 5 on this machine), and of as many more as make half a
  second per side (at most 301), six-column table of 5 M rows.
  --quick: 200 k rows per one-column file, 3 runs, six-column table of 500 k rows.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from _common import machine, print_table, single_thread
from metaindex.parquet.reader import read_table
from metaindex.parquet.writer import write_table

ENCODINGS = {
    "int32": ["PLAIN", "DICT", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"],
    "int64": ["PLAIN", "DICT", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"],
    "float": ["PLAIN", "DICT", "BYTE_STREAM_SPLIT"],
    "double": ["PLAIN", "DICT", "BYTE_STREAM_SPLIT"],
    "timestamp": ["PLAIN", "DICT", "DELTA_BINARY_PACKED"],
    "decimal": ["PLAIN", "DICT", "DELTA_BYTE_ARRAY", "BYTE_STREAM_SPLIT"],
    "string": ["PLAIN", "DICT", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"],
    "binary": ["PLAIN", "DICT", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"],
}


def column(kind: str, n: int, rng) -> pa.Array:
    """A column of ``kind``; dictionary-friendly where the dictionary is the encoding."""
    if kind == "int32":
        return pa.array(rng.integers(-(1 << 20), 1 << 20, n, dtype=np.int32))
    if kind == "int64":
        return pa.array(rng.integers(0, 1 << 40, n))
    if kind == "float":
        return pa.array(rng.standard_normal(n).astype(np.float32))
    if kind == "double":
        return pa.array(rng.standard_normal(n))
    if kind == "timestamp":
        start = np.datetime64("2026-01-01", "us")
        return pa.array(start + np.sort(rng.integers(0, 10**12, n)).astype("timedelta64[us]"))
    if kind == "decimal":
        return pa.array(rng.integers(-10**9, 10**9, n)).cast(pa.decimal128(21, 2)) \
            .cast(pa.decimal128(18, 2))
    words = np.char.add("user-", rng.integers(0, 100_000, n).astype(str)).astype(object)
    arr = pa.array(words)
    return arr if kind == "string" else arr.cast(pa.binary())


def dict_column(kind: str, n: int, rng) -> pa.Array:
    """Low-cardinality data (1,000 distinct values), as dictionary encoding is used for."""
    base = column(kind, 1000, rng)
    return base.take(pa.array(rng.integers(0, 1000, n)))


def with_nulls(arr: pa.Array, rng) -> pa.Array:
    mask = pa.array(rng.random(len(arr)) < 0.1)
    out = pc.if_else(mask, pa.scalar(None, arr.type), arr)
    if pa.types.is_binary(arr.type) or pa.types.is_string(arr.type):
        # as builders and Parquet readers make them: null slots hold no bytes (if_else keeps
        # the bytes under the nulls)
        out = pa.array(out.to_pylist(), arr.type)
    return out


def options(encoding: str, codec: str) -> dict:
    if encoding == "DICT":
        return {"compression": codec, "use_dictionary": True}
    return {"compression": codec, "use_dictionary": False, "column_encoding": encoding}


MIN_SECONDS = 0.5  # per side and row: a fast row takes more runs than ``runs``
MAX_RUNS = 301


def timed_pair(ours, theirs, runs: int, clock=None) -> tuple[float, float]:
    """Median times of two callables, interleaved so both see the same machine load.

    Single-thread rows use the process's CPU time (both sides run on one thread, and on a
    machine shared with other jobs CPU time is far steadier than wall time); the
    multi-threaded rows use wall time. At least ``runs`` runs each, and more (up to
    ``MAX_RUNS``) until each side has run ``MIN_SECONDS``: a row of half a millisecond is
    otherwise measured within a few tens of milliseconds, which one burst of other work on
    the machine can cover whole.
    """
    import statistics
    import time

    clock = clock or time.process_time
    ours()
    theirs()
    to, tt = [], []
    while len(to) < runs or (min(sum(to), sum(tt)) < MIN_SECONDS and len(to) < MAX_RUNS):
        t0 = clock()
        ours()
        to.append(clock() - t0)
        t0 = clock()
        theirs()
        tt.append(clock() - t0)
    return statistics.median(to), statistics.median(tt)


def one_column_rows(n: int, runs: int, only: str | None, tmp: str) -> list:
    rng = np.random.default_rng(7)
    rows = []
    for kind, encodings in ENCODINGS.items():
        for encoding in encodings:
            for nullable in (False, True):
                for codec in ("none", "zstd"):
                    label = f"{kind} {encoding} {'nullable' if nullable else 'required'} {codec}"
                    if only and only not in label:
                        continue
                    arr = dict_column(kind, n, rng) if encoding == "DICT" else column(kind, n, rng)
                    if nullable:
                        arr = with_nulls(arr, rng)
                    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, nullable)]))
                    rows.append([kind, encoding, "yes" if nullable else "no", codec,
                                 *measure(table, options(encoding, codec), runs, tmp)])
                    print(" ".join(str(x) for x in rows[-1]), flush=True)
    return rows


def measure(table: pa.Table, opts: dict, runs: int, tmp: str, threads: bool = False,
            row_group_size=None) -> list:
    """[MB, write ×, read × (memory), read × (file)] for one table and one set of options."""
    def ours_write():
        buf = io.BytesIO()
        write_table(table, buf, row_group_size=row_group_size, use_threads=threads, **opts)
        return buf

    def pa_write():
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=row_group_size, **opts)
        return buf

    pa_bytes = pa_write().getvalue()
    ours_bytes = ours_write().getvalue()
    path = os.path.join(tmp, "pa.parquet")
    with open(path, "wb") as fh:
        fh.write(pa_bytes)
        fh.flush()
        os.fsync(fh.fileno())  # written back now, not by the kernel while a read is timed
    got = read_table(pa_bytes)
    if not got.equals(table) or not read_table(ours_bytes).equals(table) \
            or not pq.read_table(io.BytesIO(ours_bytes)).equals(table):
        raise AssertionError(f"round trip differs for {table.schema} {opts}")
    kw = {"use_threads": threads}
    clock = time.perf_counter if threads else time.process_time
    t_ow, t_pw = timed_pair(ours_write, pa_write, runs, clock)
    t_or, t_pr = timed_pair(lambda: read_table(pa_bytes, **kw),
                            lambda: pq.read_table(pa.BufferReader(pa_bytes), use_threads=threads),
                            runs, clock)
    t_of, t_pf = timed_pair(lambda: read_table(path, **kw),
                            lambda: pq.read_table(path, use_threads=threads), runs, clock)
    mb = table.nbytes / 1e6
    return [f"{mb:.1f}", mb / t_ow, t_pw / t_ow, mb / t_or, t_pr / t_or, t_pf / t_of]


def warm_up(tmp: str) -> None:
    """Write and read a few files with both libraries first: the process's first large
    allocations (heap growth, page faults) would otherwise land on whichever row runs first."""
    table = pa.table({"c": np.arange(2_000_000)})
    for _ in range(3):
        measure(table, options("PLAIN", "none"), 1, tmp)


def six_columns(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 5, n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.table({
        "id": column("int64", n, rng),
        "value": column("double", n, rng),
        "name": column("string", n, rng),
        "ts": column("timestamp", n, rng),
        "amount": column("decimal", n, rng),
        "tags": pa.ListArray.from_arrays(offsets, pa.array(rng.integers(0, 1000, int(offsets[-1]),
                                                                      dtype=np.int32))),
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--only", help="run only one-column rows whose label contains this")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--table-rows", type=int)
    args = ap.parse_args()
    n = args.rows or (200_000 if args.quick else 1_000_000)
    runs = args.runs or (3 if args.quick else 11)
    table_rows = args.table_rows or (500_000 if args.quick else 5_000_000)
    if args.quick:
        global MIN_SECONDS
        MIN_SECONDS = 0.0
    warnings.simplefilter("ignore")
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    tmp = tempfile.mkdtemp()
    single_thread()
    headers = ["type", "encoding", "nulls", "codec", "MB", "ours write MB/s", "× pyarrow write",
               "ours read MB/s", "× pyarrow read (memory)", "× pyarrow read (file)"]
    warm_up(tmp)
    print(f"\none-column files, {n:,} rows, single thread, median of at least {runs} runs "
          f"(fast rows: until each side has run {MIN_SECONDS} s, at most {MAX_RUNS})")
    rows = one_column_rows(n, runs, args.only, tmp)
    print()
    print_table(headers, rows)
    if args.skip_table:
        return
    table = six_columns(table_rows)
    print(f"\nsix-column table, {table_rows:,} rows, {table.nbytes / 1e6:.0f} MB in Arrow, "
          f"row groups of 1 Mi rows, median of {runs}")
    trows = []
    for codec in ("none", "zstd"):
        trows.append(["single thread", codec, *measure(table, {"compression": codec}, runs, tmp,
                                                       row_group_size=1 << 20)])
        print(trows[-1], flush=True)
    pa.set_cpu_count(os.cpu_count() or 1)
    pa.set_io_thread_count(os.cpu_count() or 1)
    for codec in ("none", "zstd"):
        trows.append([f"threads ({os.cpu_count()} cores)", codec,
                      *measure(table, {"compression": codec}, runs, tmp, threads=True,
                               row_group_size=1 << 20)])
        print(trows[-1], flush=True)
    print()
    print_table(["mode", "codec", "MB", "ours write MB/s", "× pyarrow write", "ours read MB/s",
                 "× pyarrow read (memory)", "× pyarrow read (file)"], trows)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
