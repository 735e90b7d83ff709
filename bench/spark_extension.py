"""Skipping installed by conf (the extension): the pruning process against the py4j callback,
and a Spark Connect query with skipping on and off.

One JVM: a classic session started with ``spark.sql.extensions=io.metaindex.spark.
MetaIndexExtensions``, ``spark.jars=jar_path()`` and the Spark Connect plugin on a free port.

(a) Per-scan overhead of each pruning path on an indexed table: planning a filtered query and
    creating its RDD (which lists the files, so the scan asks for pruning) with skipping off
    (``spark.metaindex.enabled=false``) and on, alternating, median of paired differences.
    First the process path (no ``enable``: the extension asks ``python -m
    metaindex.spark.pruned``), then, after ``enable(spark)``, the callback path (py4j).
(b) A selective query from a Spark Connect client (the server prunes through the pruning
    process) with skipping off and on: wall time of the action and Spark's "number of files
    read" from ``df.executionInfo``.

Usage: python bench/spark_extension.py [--files 300] [--rows 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

import numpy as np
from _common import machine, print_table
from spark_e2e import generate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    from metaindex import MetaIndex
    from metaindex.spark import enable, jar_path

    work = tempfile.mkdtemp(prefix="metaindex-ext-bench-")
    try:
        table = f"{work}/sensors"
        rows = generate(table, args.files, args.rows)
        MetaIndex(table).index_builder().add_min_max_index("time").add_value_list_index(
            "city"
        ).build()
        print(f"table: {args.files} files, {rows:,} rows, indexed (min/max time, value list city)")

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("metaindex-ext-bench")
            .config("spark.sql.extensions", "io.metaindex.spark.MetaIndexExtensions")
            .config("spark.jars", jar_path())
            .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
            .config("spark.connect.grpc.binding.address", "127.0.0.1")
            .config("spark.connect.grpc.binding.port", str(port))
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "2g")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        print(machine() + f", Spark {spark.version}, local[2]\n")

        day = 86_400_000_000
        lo = np.datetime64("2025-01-01T00:00:00", "us") + np.timedelta64(
            args.files // 2 * day, "us"
        )
        where = (
            f"time >= TIMESTAMP '{lo}' AND time < TIMESTAMP "
            f"'{lo + np.timedelta64(day * max(1, args.files // 100), 'us')}'"
        )
        base = spark.read.parquet(table)

        def plan() -> float:
            t = time.perf_counter()
            base.where(where)._jdf.queryExecution().toRdd()
            return time.perf_counter() - t

        def overhead(runs: int) -> tuple:
            off, on = [], []
            for _ in range(runs):
                spark.conf.set("spark.metaindex.enabled", "false")
                off.append(plan())
                spark.conf.set("spark.metaindex.enabled", "true")
                on.append(plan())
            return (
                statistics.median(off),
                statistics.median(on),
                statistics.median(b - a for a, b in zip(off, on, strict=True)),
            )

        runs_a = max(31, args.runs * 6)
        for _ in range(3):  # warm up: the process starts, the index is read once
            spark.conf.set("spark.metaindex.enabled", "true")
            plan()
        process = overhead(runs_a)
        jvm = spark.sparkContext._jvm
        client = jvm.io.metaindex.spark.PruningProcess.shared(
            spark.sparkContext._jsc.sc().getConf()
        )
        micros = int((lo - np.datetime64("1970-01-01T00:00:00", "us")).astype(np.int64))
        request = json.dumps(
            {
                "scan": 1,
                "session": "bench",
                "roots": ["file://" + table],
                "table": None,
                "filters": [
                    {"op": "ge", "col": ["time"], "value": {"type": "timestamp", "micros": micros}},
                    {
                        "op": "lt",
                        "col": ["time"],
                        "value": {
                            "type": "timestamp",
                            "micros": micros + day * max(1, args.files // 100),
                        },
                    },
                ],
                "partition_filters": 0,
                "num_files": args.files,
                "num_bytes": 1,
                "query": "b",
                "conf": {},
            }
        )

        def round_trip(target, runs: int = 201) -> float:
            # a reply: its stats line, then OK and the files (specs/pruning-protocol.md)
            assert target.prune(request).split("\n", 2)[1].startswith("OK\t"), "the request prunes"
            empty, full = [], []
            for _ in range(runs):
                t = time.perf_counter()
                client.waiting()
                empty.append(time.perf_counter() - t)
                t = time.perf_counter()
                target.prune(request)
                full.append(time.perf_counter() - t)
            return statistics.median(full) - statistics.median(empty)

        process_rt = round_trip(client)

        # (b) Spark Connect, pruned by the process (no Python callback in this JVM yet)
        remote = RemoteSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()

        def connect_query():
            from pyspark.sql.connect import functions as F

            df = (
                remote.read.parquet(table)
                .where(where)
                .groupBy("city")
                .agg(F.count("*"), F.sum("device_id"), F.min("temperature"), F.max("temperature"))
            )
            out = sorted(tuple(r) for r in df.collect())
            graph = df.executionInfo.metrics.extract_graph()[1]
            files = sum(
                int(m.value) for n in graph.values() for m in n.metrics if m.name == "numFiles"
            )
            return out, files

        def timed(flag: str):
            remote.conf.set("spark.metaindex.enabled", flag)
            connect_query()  # warm-up
            times, out = [], None
            for _ in range(args.runs):
                t = time.perf_counter()
                out = connect_query()
                times.append(time.perf_counter() - t)
            return statistics.median(times), out

        off_s, (off_rows, off_files) = timed("false")
        on_s, (on_rows, on_files) = timed("true")
        assert off_rows == on_rows, "skipping changed the result under Connect"
        remote.stop()

        enable(spark)  # from now on the extension's scans ask this driver's py4j callback
        for _ in range(3):
            plan()
        callback = overhead(runs_a)
        callback_rt = round_trip(jvm.io.metaindex.spark.MetaIndexRule.currentCallback())

        print(
            f"(a) pruning overhead per scan, {args.files}-file indexed table: plan + list "
            f"files (median of {runs_a}, alternating off/on)"
        )
        print_table(
            ["path", "off ms", "on ms", "overhead ms (paired)"],
            [
                [
                    "pruning process (extension, no enable)",
                    process[0] * 1000,
                    process[1] * 1000,
                    process[2] * 1000,
                ],
                [
                    "py4j callback (enable)",
                    callback[0] * 1000,
                    callback[1] * 1000,
                    callback[2] * 1000,
                ],
            ],
        )
        print(
            f"\n(a') one pruning request's round trip (reply naming "
            f"{args.files - max(1, args.files // 100)} files; median of 201, minus an empty "
            f"py4j call)"
        )
        print_table(
            ["path", "ms"],
            [["pruning process (pipe)", process_rt * 1000], ["py4j callback", callback_rt * 1000]],
        )
        print(
            f"\n(b) Spark Connect query: WHERE {where}, grouped aggregate (median of {args.runs})"
        )
        skipped = 1 - on_files / off_files if off_files else float("nan")
        print_table(
            ["skipping", "ms", "files read", "skipped", "speedup"],
            [
                ["off", off_s * 1000, off_files, "", ""],
                ["on", on_s * 1000, on_files, f"{skipped:.1%}", off_s / on_s],
            ],
        )
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
