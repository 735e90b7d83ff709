"""Whole files, like for like: metaindex vs pyarrow (Arrow C++), polars (Rust) and DuckDB, same
run, medians.

Every ratio compares our whole-file call with a peer's whole-file call on the same data and the
same options, the read result materialised as an Arrow table on every side:

- read: ``metaindex.parquet.read_table(src)`` vs ``pq.read_table(src, use_threads=False)`` on
  the *same* bytes (the file pyarrow wrote), from memory (bytes) and from a local file; and,
  from the same local file, ``pl.read_parquet(path, use_pyarrow=False).to_arrow(...)`` (polars'
  own reader, its Arrow export at its newest compat level: its own layout, no conversion) and
  DuckDB's ``con.sql("SELECT * FROM read_parquet(path)").to_arrow_table()``;
- write: ``metaindex.parquet.write_table(t, buf, ...)`` vs ``pq.write_table(t, buf, ...)``
  with the same compression, dictionary and column encoding (Arrow pinned to one thread).

Single-thread rows pass ``use_threads=False`` to us and pyarrow (pyarrow's CPU and I/O pools
pinned to one thread); polars runs in a child process started with ``POLARS_MAX_THREADS=1``
(its pool size is fixed when polars is imported), which times each read itself by the same
clock and answers before the next side runs, so the sides still alternate; DuckDB runs with
``SET threads=1``.
The multi-threaded rows give every reader the machine's cores (our ``use_threads=True``,
Arrow's pools, a polars child with ``POLARS_MAX_THREADS`` = cores, DuckDB ``threads`` = cores),
timed by wall clock; pyarrow's ``write_table`` has no thread option (it encodes one column after
the other).

One-column files: int32, int64, float, double, timestamp[us], decimal(18,2), string, binary;
each with PLAIN, dictionary, DELTA_* (where the type has one) and BYTE_STREAM_SPLIT (where it
applies); nullable (10 % nulls) and required; uncompressed and zstd. Then the six-column table
(int64, float64, string, timestamp, decimal, list<int32>) single-threaded and multi-threaded.
Ratios > 1 mean we are faster; "× best peer" is against the fastest of pyarrow, polars and DuckDB
reading the file. A peer whose result differs from the table (after a cast to the table's types:
polars' string views, DuckDB's types) is reported and left out of "best".

Usage: python bench/files.py [--quick] [--rows N] [--runs K] [--only SUBSTRING] [--no-peers]
  Default: 1 M rows per one-column file, medians of at least 11 interleaved runs (rows near
  1.0x moved by +-0.2 between runs of 5 on this machine), and of as many more as make half a
  second per side (at most 301), six-column table of 5 M rows.
  --quick: 200 k rows per one-column file, 3 runs, six-column table of 500 k rows.
  --no-peers: pyarrow only (polars and DuckDB not measured).
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _common import machine, print_table, single_thread

from metaindex.parquet import read_table, write_table

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
        return (
            pa.array(rng.integers(-(10**9), 10**9, n))
            .cast(pa.decimal128(21, 2))
            .cast(pa.decimal128(18, 2))
        )
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


def timed(sides, runs: int) -> list[float]:
    """Median times of several sides, interleaved so all see the same machine load.

    Each side is a callable that runs once and returns the time it took, by the row's clock:
    the process's CPU time for single-thread rows (every side runs on one thread, and on a
    machine shared with other jobs CPU time is far steadier than wall time), wall time for
    the multi-threaded rows. At least ``runs`` runs each, and more (up to ``MAX_RUNS``) until
    each side has run ``MIN_SECONDS``: a row of half a millisecond is otherwise measured within
    a few tens of milliseconds, which one burst of other work on the machine can cover whole.
    """
    for side in sides:
        side()
    times = [[] for _ in sides]
    while len(times[0]) < runs or (
        min(sum(t) for t in times) < MIN_SECONDS and len(times[0]) < MAX_RUNS
    ):
        for side, t in zip(sides, times, strict=True):
            t.append(side())
    return [statistics.median(t) for t in times]


def clocked(fn, clock):
    """``fn`` as a side of :func:`timed`: run it, return the time it took by ``clock``."""

    def side() -> float:
        t0 = clock()
        fn()
        return clock() - t0

    return side


def same_table(got: pa.Table, table: pa.Table) -> bool:
    """A peer's result equals ``table`` once cast to its types (string views, large lists...)."""
    try:
        return got.cast(table.schema).equals(table)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False


class DuckDBPeer:
    """DuckDB's Parquet reader, ``threads`` threads, the result fetched as an Arrow table
    (the relational API, whose Arrow export makes no extra copy of the rows)."""

    name = "DuckDB"

    def __init__(self, threads: int):
        import duckdb

        self._con = duckdb.connect(config={"threads": threads})
        self.version = duckdb.__version__

    def read(self, path: str) -> pa.Table:
        quoted = path.replace("'", "''")
        return self._con.sql(f"SELECT * FROM read_parquet('{quoted}')").to_arrow_table()

    def side(self, path: str, clock):
        return clocked(lambda: self.read(path), clock)

    def close(self) -> None:
        self._con.close()


# polars' pool size is fixed when polars is imported, so it runs in a process of its own started
# with POLARS_MAX_THREADS set; it reads the paths it is sent and answers with the time the read
# took by the clock asked for (or with the table, to check it). Pickles over stdin / stdout.
_POLARS_CHILD = r"""
import pickle, sys, time
import polars as pl
inp, out = sys.stdin.buffer, sys.stdout.buffer
pickle.dump(pl.__version__, out)
out.flush()
newest = pl.CompatLevel.newest()
while True:
    op, path, clock_name = pickle.load(inp)
    if op == "quit":
        break
    clock = time.process_time if clock_name == "cpu" else time.perf_counter
    t0 = clock()
    try:
        table = pl.read_parquet(path, use_pyarrow=False).to_arrow(compat_level=newest)
    except Exception as exc:  # an encoding polars does not read: the row leaves it out
        pickle.dump(("error", f"{type(exc).__name__}: {exc}"), out)
        out.flush()
        continue
    elapsed = clock() - t0
    pickle.dump(table if op == "table" else elapsed, out)
    out.flush()
"""


class PolarsPeer:
    """polars' own (Rust) Parquet reader with ``threads`` threads, in a child process; the
    child times each read itself (by the row's clock) and answers before the next side runs."""

    name = "polars"

    def __init__(self, threads: int):
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _POLARS_CHILD],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            self.version = pickle.load(self._proc.stdout)
        except EOFError:
            self._proc.wait()
            raise ImportError("polars did not start") from None

    def _ask(self, op: str, path: str, clock_name: str):
        pickle.dump((op, path, clock_name), self._proc.stdin)
        self._proc.stdin.flush()
        return pickle.load(self._proc.stdout)

    def read(self, path: str) -> pa.Table:
        """The file as polars reads it (RuntimeError: polars cannot read it)."""
        got = self._ask("table", path, "wall")
        if isinstance(got, tuple):
            raise RuntimeError(got[1])
        return got

    def side(self, path: str, clock):
        name = "cpu" if clock is time.process_time else "wall"
        return lambda: self._ask("time", path, name)

    def close(self) -> None:
        pickle.dump(("quit", None, None), self._proc.stdin)
        self._proc.stdin.close()
        self._proc.wait(10)


def start_peers(threads: int) -> list:
    """The polars and DuckDB readers with ``threads`` threads (those installed)."""
    peers = []
    for cls in (PolarsPeer, DuckDBPeer):
        try:
            peers.append(cls(threads))
        except ImportError as exc:
            print(f"{cls.name} is not installed ({exc}): not measured")
    return peers


PEER_NAMES = ("polars", "DuckDB")


def one_column_rows(n: int, runs: int, only: str | None, tmp: str, peers, reads_only: bool) -> list:
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
                    rows.append(
                        [
                            kind,
                            encoding,
                            "yes" if nullable else "no",
                            codec,
                            *measure(
                                table,
                                options(encoding, codec),
                                runs,
                                tmp,
                                peers,
                                reads_only=reads_only,
                            ),
                        ]
                    )
                    print(" ".join(str(x) for x in rows[-1]), flush=True)
    return rows


def measure(
    table: pa.Table,
    opts: dict,
    runs: int,
    tmp: str,
    peers=(),
    threads: bool = False,
    row_group_size=None,
    reads_only: bool = False,
) -> list:
    """[MB, write MB/s, write ×, read MB/s, read × pyarrow (memory), read × pyarrow (file),
    read × each of polars and DuckDB (file), read × best peer (file)] for one table and one set
    of options (a peer not given or whose result differs: None)."""

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
    if (
        not got.equals(table)
        or not read_table(ours_bytes).equals(table)
        or not pq.read_table(io.BytesIO(ours_bytes)).equals(table)
    ):
        raise AssertionError(f"round trip differs for {table.schema} {opts}")
    checked = []
    for peer in peers:
        try:
            got = peer.read(path)
        except Exception as exc:  # an encoding the peer does not read: left out of the row
            print(f"  {peer.name} cannot read {table.schema.types} {opts}: {str(exc)[:120]}")
            continue
        if same_table(got, table):
            checked.append(peer)
        else:
            print(f"  {peer.name} reads {table.schema.types} {opts} differently: left out")
    kw = {"use_threads": threads}
    clock = time.perf_counter if threads else time.process_time
    mb = table.nbytes / 1e6
    write = [None, None]
    if not reads_only:
        t_ow, t_pw = timed([clocked(ours_write, clock), clocked(pa_write, clock)], runs)
        write = [mb / t_ow, t_pw / t_ow]
    t_or, t_pr = timed(
        [
            clocked(lambda: read_table(pa_bytes, **kw), clock),
            clocked(lambda: pq.read_table(pa.BufferReader(pa_bytes), use_threads=threads), clock),
        ],
        runs,
    )
    t_of, *t_peers = timed(
        [
            clocked(lambda: read_table(path, **kw), clock),
            clocked(lambda: pq.read_table(path, use_threads=threads), clock),
            *(peer.side(path, clock) for peer in checked),
        ],
        runs,
    )
    by_name = {peer.name: t / t_of for peer, t in zip(checked, t_peers[1:], strict=True)}
    return [
        f"{mb:.1f}",
        *write,
        mb / t_or,
        t_pr / t_or,
        t_peers[0] / t_of,
        *(by_name.get(name) for name in PEER_NAMES),
        min(t_peers) / t_of,
    ]


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
    return pa.table(
        {
            "id": column("int64", n, rng),
            "value": column("double", n, rng),
            "name": column("string", n, rng),
            "ts": column("timestamp", n, rng),
            "amount": column("decimal", n, rng),
            "tags": pa.ListArray.from_arrays(
                offsets, pa.array(rng.integers(0, 1000, int(offsets[-1]), dtype=np.int32))
            ),
        }
    )


READ_HEADERS = [
    "ours read MB/s",
    "× pyarrow read (memory)",
    "× pyarrow read (file)",
    "× polars read (file)",
    "× DuckDB read (file)",
    "× best peer read (file)",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--only", help="run only one-column rows whose label contains this")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--table-rows", type=int)
    ap.add_argument("--no-peers", action="store_true", help="pyarrow only")
    ap.add_argument("--reads-only", action="store_true", help="do not time the writes")
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
    peers = [] if args.no_peers else start_peers(1)
    print("peers: pyarrow " + pa.__version__ + "".join(f", {p.name} {p.version}" for p in peers))
    headers = [
        "type",
        "encoding",
        "nulls",
        "codec",
        "MB",
        "ours write MB/s",
        "× pyarrow write",
        *READ_HEADERS,
    ]
    warm_up(tmp)
    print(
        f"\none-column files, {n:,} rows, single thread, median of at least {runs} runs "
        f"(fast rows: until each side has run {MIN_SECONDS} s, at most {MAX_RUNS})"
    )
    rows = one_column_rows(n, runs, args.only, tmp, peers, args.reads_only)
    print()
    print_table(headers, rows)
    if args.skip_table:
        for peer in peers:
            peer.close()
        return
    table = six_columns(table_rows)
    print(
        f"\nsix-column table, {table_rows:,} rows, {table.nbytes / 1e6:.0f} MB in Arrow, "
        f"row groups of 1 Mi rows, median of {runs}"
    )
    trows = []
    for codec in ("none", "zstd"):
        trows.append(
            [
                "single thread",
                codec,
                *measure(
                    table,
                    {"compression": codec},
                    runs,
                    tmp,
                    peers,
                    row_group_size=1 << 20,
                    reads_only=args.reads_only,
                ),
            ]
        )
        print(trows[-1], flush=True)
    for peer in peers:
        peer.close()
    cores = os.cpu_count() or 1
    pa.set_cpu_count(cores)
    pa.set_io_thread_count(cores)
    peers = [] if args.no_peers else start_peers(cores)
    for codec in ("none", "zstd"):
        trows.append(
            [
                f"threads ({cores} cores)",
                codec,
                *measure(
                    table,
                    {"compression": codec},
                    runs,
                    tmp,
                    peers,
                    threads=True,
                    row_group_size=1 << 20,
                    reads_only=args.reads_only,
                ),
            ]
        )
        print(trows[-1], flush=True)
    for peer in peers:
        peer.close()
    print()
    print_table(["mode", "codec", "MB", "ours write MB/s", "× pyarrow write", *READ_HEADERS], trows)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
