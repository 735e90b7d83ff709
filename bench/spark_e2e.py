"""metaindex on Spark, end to end, in one local session.

(a) Index build: ``metaindex.spark.MetaIndex(...).build()`` (per-file collection as Spark tasks,
    min/max from trusted footer statistics, value list and bloom filter from the columns)
    against the xskipper-style baseline: one Spark job
    ``groupBy(input_file_name()).agg(min, max, collect_set, ...)`` computing the same per-file
    metadata (collect_set stands in for the bloom filter: xskipper's bloom UDAF also collects
    per file). Both read every file.
(b) A selective query (a one-day time range: ~2% of the files can match) with skipping off and
    on: wall time of the whole action, files read (Spark's own scan metric).
(c) The hook's planning overhead on a table without an index: planning a filtered query and
    creating its RDD (which lists the files, so the hook's callback runs) with the hook enabled
    and disabled; no job runs.

Medians of several runs; the table generator writes >= 500 files with pyarrow.

Usage: python bench/spark_e2e.py [--files 500] [--rows 40000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import machine, print_table

CITIES = np.array(["Paris", "Rome", "Zürich", "São Paulo", "Tokyo", "Nairobi", "Lima", "Oslo"])


def generate(root: str, files: int, rows: int, seed: int = 7) -> int:
    """``files`` Parquet files of sensor readings; file i covers day i (time-sorted table)."""
    rng = np.random.default_rng(seed)
    os.makedirs(root, exist_ok=True)
    t0 = np.datetime64("2025-01-01T00:00:00", "us")
    day = 86_400_000_000
    total = 0
    for i in range(files):
        offs = np.sort(rng.integers(0, day, rows)).astype("timedelta64[us]")
        table = pa.table(
            {
                "time": pa.array(t0 + np.timedelta64(i * day, "us") + offs),
                "city": pa.array(CITIES[rng.integers(0, len(CITIES), rows)]),
                "device_id": pa.array(rng.integers(0, 1_000_000, rows, dtype=np.int64)),
                "temperature": pa.array(np.round(rng.normal(15, 8, rows), 2)),
            }
        )
        pq.write_table(table, f"{root}/part-{i:05d}.parquet", compression="snappy")
        total += rows
    return total


def median_of(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--rows", type=int, default=40_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from metaindex.spark import MetaIndex, disable, enable, last_query_stats
    from metaindex.spark.metrics import files_read

    work = tempfile.mkdtemp(prefix="metaindex-spark-bench-")
    try:
        table = f"{work}/sensors"
        plain = f"{work}/plain"
        t = time.perf_counter()
        rows = generate(table, args.files, args.rows)
        generate(plain, 40, 5_000, seed=8)
        size = sum(os.path.getsize(f"{table}/{n}") for n in os.listdir(table))
        print(
            f"table: {args.files} files, {rows:,} rows, {size / 2**20:.0f} MiB "
            f"(generated in {time.perf_counter() - t:.0f} s)"
        )

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("metaindex-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "3g")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        print(machine() + f", Spark {spark.version}, local[2]\n")

        # (a) build vs the xskipper-style aggregation
        mi = MetaIndex(spark, table, store=f"{work}/store")

        def build():
            if mi.is_indexed():
                mi.drop()
            return (
                mi.index_builder()
                .add_min_max_index("time")
                .add_min_max_index("temperature")
                .add_value_list_index("city")
                .add_bloom_filter_index("device_id")
                .build()
            )

        def baseline():
            df = spark.read.parquet(table)
            return (
                df.groupBy(F.input_file_name().alias("file"))
                .agg(
                    F.min("time"),
                    F.max("time"),
                    F.min("temperature"),
                    F.max("temperature"),
                    F.collect_set("city"),
                    F.collect_set("device_id"),
                )
                .collect()
            )

        build_s, result = median_of(build, args.runs)
        base_s, base_rows = median_of(baseline, args.runs)
        assert len(base_rows) == args.files and result.entries_added == args.files
        rows_a = [
            ["metaindex build (Spark tasks)", build_s * 1000, args.files / build_s, ""],
            [
                "groupBy(input_file_name()).agg(...)",
                base_s * 1000,
                args.files / base_s,
                base_s / build_s,
            ],
        ]
        print("(a) index build")
        print_table(["", "ms", "files/s", "speedup"], rows_a)

        # (b) a selective query
        day = 86_400_000_000
        lo = np.datetime64("2025-01-01T00:00:00", "us") + np.timedelta64(
            args.files // 2 * day, "us"
        )
        where = (
            f"time >= TIMESTAMP '{lo}' AND time < TIMESTAMP "
            f"'{lo + np.timedelta64(day * max(1, args.files // 100), 'us')}'"
        )

        def query():
            # exact aggregates: a double avg depends on summation order, which differs
            # when a different set of files is read
            df = (
                spark.read.parquet(table)
                .where(where)
                .groupBy("city")
                .agg(F.count("*"), F.sum("device_id"), F.min("temperature"), F.max("temperature"))
            )
            out = sorted(df.collect())
            return out, files_read(df)

        disable(spark)
        off_s, (off_rows, off_files) = median_of(query, args.runs)
        enable(spark)
        on_s, (on_rows, on_files) = median_of(query, args.runs)
        stats = last_query_stats(spark)
        assert off_rows == on_rows, f"skipping changed the result: {off_rows} != {on_rows}"
        skipped = 1 - (on_files / off_files) if off_files else float("nan")
        print(f"\n(b) selective query: WHERE {where}")
        print_table(
            ["skipping", "ms", "files read", "files skipped", "speedup"],
            [
                ["off", off_s * 1000, off_files, 0, ""],
                ["on", on_s * 1000, on_files, f"{skipped:.1%}", off_s / on_s],
            ],
        )
        print(f"hook stats: {stats}")

        # (c) planning overhead on an unindexed table: plan the query and create its RDD
        # (which lists the files, so the hook's callback runs) without running a job; the
        # relation is created once, so its file listing is cached and not part of the time.
        # Runs alternate between hook off and on, so load drift hits both sides alike.
        base = spark.read.parquet(plain)

        def plan():
            t = time.perf_counter()
            base.where("temperature > 100 AND city = 'Oslo'")._jdf.queryExecution().toRdd()
            return time.perf_counter() - t

        runs_c = max(31, args.runs * 6)
        off_t, on_t = [], []
        for _ in range(runs_c):
            disable(spark)
            off_t.append(plan())
            enable(spark)
            on_t.append(plan())
        plan_off, plan_on = statistics.median(off_t), statistics.median(on_t)
        print(
            f"\n(c) hook overhead on an unindexed 40-file table: plan + list files "
            f"(median of {runs_c}, alternating)"
        )
        print_table(
            ["hook", "ms"],
            [
                ["disabled", plan_off * 1000],
                ["enabled", plan_on * 1000],
                [
                    "overhead (median of paired differences)",
                    statistics.median(b - a for a, b in zip(off_t, on_t, strict=True)) * 1000,
                ],
            ],
        )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
