"""The Parquet core and pruning without Spark, in about a minute: ``python -m metaindex.demo_core``.

(``make demo`` runs :mod:`metaindex.demo`, the PySpark tour; this one needs no JVM.)

1. Writes a sample sensor table with our own Parquet writer in several layouts, reads it back
   with our reader, and checks that pyarrow reads the same files identically.
2. Generates a table of 120 Parquet files of sensor readings, indexes it (min/max, value list,
   bloom), and runs typical queries with and without skipping. Each query is answered by reading
   either every file or only the files pruning kept, and the two results must be equal.
3. Appends and rewrites files, shows that changed files are never skipped before `refresh`,
   refreshes, compacts, and prints `describe` and `history`.

Everything happens in a temporary directory that is removed at the end. It runs on pyarrow alone.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table

CITIES = np.array(["Paris", "Rome", "Zürich", "São Paulo", "東京", "Nairobi"])


def sample_table(n: int = 1_000_000, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2026-01-01T00:00:00", "us")
    return pa.table(
        {
            "time": pa.array(
                t0 + np.sort(rng.integers(0, 86_400_000_000 * 30, n)).astype("timedelta64[us]")
            ),
            "city": pa.array(CITIES[rng.integers(0, len(CITIES), n)]),
            "device_id": pa.array(rng.integers(0, 50_000, n, dtype=np.int64)),
            "temperature": pa.array(np.round(rng.normal(18, 9, n), 2)),
            "ok": pa.array(rng.random(n) > 0.01),
            "note": pa.array(
                np.full(n, "recalibrated", object), pa.string(), mask=rng.random(n) < 0.7
            ),
        }
    )


LAYOUTS: list[tuple[str, dict[str, Any]]] = [
    ("dictionary, page v1, zstd", {"compression": "zstd"}),
    (
        "plain, page v2, snappy",
        {"use_dictionary": False, "data_page_version": "2.0", "compression": "snappy"},
    ),
    (
        "delta / byte-stream-split, v2, uncompressed",
        {
            "use_dictionary": False,
            "data_page_version": "2.0",
            "column_encoding": {
                "time": "DELTA_BINARY_PACKED",
                "device_id": "DELTA_BINARY_PACKED",
                "temperature": "BYTE_STREAM_SPLIT",
                "city": "DELTA_BYTE_ARRAY",
                "note": "DELTA_LENGTH_BYTE_ARRAY",
                "ok": "RLE",
            },
        },
    ),
]


def parquet_core() -> None:
    table = sample_table()
    print(f"1. Parquet core: a {table.num_rows:,}-row sensor table, columns {table.column_names}\n")
    header = (
        f"   {'layout':46s} {'bytes':>11s} {'write s':>8s} {'read s':>8s} "
        f"{'pyarrow read s':>15s}  same?"
    )
    print(header)
    print("   " + "-" * (len(header) - 3))
    for label, options in LAYOUTS:
        buf = io.BytesIO()
        t0 = time.perf_counter()
        write_table(table, buf, row_group_size=250_000, **options)
        t_write = time.perf_counter() - t0
        data = buf.getvalue()
        t0 = time.perf_counter()
        ours = read_table(data)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = pq.read_table(io.BytesIO(data))
        t_peer = time.perf_counter() - t0
        same = ours.equals(table) and theirs.equals(table)
        print(
            f"   {label:46s} {len(data):>11,d} {t_write:>8.2f} {t_read:>8.2f} {t_peer:>15.2f}  "
            f"{'yes' if same else 'NO'}"
        )
        if not same:
            raise SystemExit("demo failed: a round trip changed the data")
    meta = ParquetFile(data).footer
    print(f"   written by {meta.created_by!r}; read back identically by us and by pyarrow\n")


def make_files(root: str, n_files: int = 120, rows: int = 2_000) -> None:
    """Files as a data pipeline writes them: each covers one day and one region, ids in a range."""
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(7)
    day0 = np.datetime64("2026-01-01", "us")
    for i in range(n_files):
        day = day0 + np.timedelta64(i // 4, "D")
        cities = CITIES[[(i % 4), (i % 4) + 2]]
        t = pa.table(
            {
                "time": pa.array(
                    day + np.sort(rng.integers(0, 86_400_000_000, rows)).astype("timedelta64[us]")
                ),
                "city": pa.array(cities[rng.integers(0, 2, rows)]),
                "device_id": pa.array(
                    rng.integers(i * 1_000, i * 1_000 + 5_000, rows, dtype=np.int64)
                ),
                "temperature": pa.array(np.round(rng.normal(5 + i / 6, 4, rows), 2)),
            }
        )
        write_table(t, os.path.join(root, f"part-{i:05d}.parquet"), compression="zstd")


QUERIES = [
    ("temperature > 30", lambda t: pc.greater(t["temperature"], 30)),
    ("city = 'Nairobi'", lambda t: pc.equal(t["city"], "Nairobi")),
    ("device_id = 73311", lambda t: pc.equal(t["device_id"], 73311)),
    (
        "city IN ('Rome', '東京') AND temperature < 0",
        lambda t: pc.and_(
            pc.is_in(t["city"], pa.array(["Rome", "東京"])), pc.less(t["temperature"], 0)
        ),
    ),
    (
        "time >= TIMESTAMP_NTZ '2026-01-29 00:00:00'",
        lambda t: pc.greater_equal(t["time"], pa.scalar(np.datetime64("2026-01-29", "us"))),
    ),
]


def run_query(files: list[str], where) -> tuple[int, int, float]:
    t0 = time.perf_counter()
    rows = 0
    size = 0
    for f in files:
        table = pq.read_table(f)
        rows += table.filter(where(table)).num_rows
        size += os.path.getsize(f)
    return rows, size, time.perf_counter() - t0


def skipping(root: str, store: str) -> None:
    from metaindex import MetaIndex

    data = os.path.join(root, "sensors")
    make_files(data)
    every = sorted(os.path.join(data, f) for f in os.listdir(data))
    print(f"2. Skipping: {len(every)} files of sensor readings in {data}")
    mi = MetaIndex(data, store=store)
    t0 = time.perf_counter()
    result = (
        mi.index_builder()
        .add_min_max_index("temperature")
        .add_min_max_index("time")
        .add_value_list_index("city")
        .add_bloom_filter_index("device_id", fpp=0.01)
        .build()
    )
    print(
        f"   indexed {result.entries_added} files in {time.perf_counter() - t0:.2f} s "
        f"(min/max temperature & time, value list city, bloom device_id)\n"
    )
    header = (
        f"   {'query':46s} {'files read':>11s} {'MB read':>14s} {'time s':>14s} "
        f"{'speedup':>8s}  same rows?"
    )
    print(header)
    print("   " + "-" * (len(header) - 3))
    for sql, where in QUERIES:
        pruned = mi.prune(sql)
        full_rows, full_bytes, full_t = run_query(every, where)
        kept_rows, kept_bytes, kept_t = run_query(sorted(pruned.kept), where)
        same = full_rows == kept_rows
        print(
            f"   {sql:46s} {len(pruned.kept):>4d} / {len(every):<4d}  "
            f"{kept_bytes / 1e6:>5.2f} / {full_bytes / 1e6:<5.2f}  {kept_t:>5.2f} / {full_t:<5.2f} "
            f"{full_t / max(kept_t, 1e-9):>7.1f}x  {'yes' if same else 'NO'} ({kept_rows:,})"
        )
        if not same:
            raise SystemExit(f"demo failed: skipping changed the result of {sql}")
    print()

    print("3. Freshness: append one file, rewrite another in place, then refresh")
    extra = os.path.join(data, "part-99999.parquet")
    shutil.copy(every[0], extra)
    rewritten = every[5]
    hot = pa.table(
        {
            "time": pa.array([np.datetime64("2026-01-02T12:00", "us")]),
            "city": ["Paris"],
            "device_id": pa.array([5_000], pa.int64()),
            "temperature": [99.0],
        }
    )
    write_table(hot, rewritten)
    before = mi.prune("temperature > 90")
    print(
        f"   before refresh: 'temperature > 90' keeps {len(before.kept)} files; the rewritten "
        f"file is kept: {rewritten in before.kept}; the new file is kept: {extra in before.kept}"
    )
    assert rewritten in before.kept and extra in before.kept, "changed files must never be skipped"
    refreshed = mi.refresh()
    after = mi.prune("temperature > 90")
    print(
        f"   refresh: +{refreshed.entries_added} / -{refreshed.entries_removed} entries; after it "
        f"'temperature > 90' keeps {len(after.kept)} file(s): "
        f"{[os.path.basename(f) for f in after.kept]}"
    )
    version = mi.compact()
    d = mi.describe()
    print(
        f"   compacted to version {version}: {d.counts.indexed_files} files indexed in "
        f"{d.counts.parts} part(s), {d.store_bytes.live_parts:,} bytes of metadata; "
        f"up to date: {d.freshness.up_to_date}"
    )
    print("   history:", ", ".join(f"v{e.version} {e.operation}" for e in mi.history()))


def main() -> None:
    parquet_core()
    root = tempfile.mkdtemp(prefix="metaindex-demo-")
    try:
        skipping(root, os.path.join(root, "store"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\ndemo complete: every query returned the same rows with and without skipping.")


if __name__ == "__main__":
    main()
