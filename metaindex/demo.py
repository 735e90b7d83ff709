"""``make demo``: metaindex on PySpark, end to end, in about two minutes.

1. Generates a table of 300 Parquet files of sensor readings (time, city, device id,
   temperature) with our own Parquet writer. Most files arrive in time order (each covers a
   few hours, a few cities, a range of devices); some arrive late and unsorted.
2. Starts a local Spark session, and builds min/max, value-list and bloom-filter indexes with
   PySpark. The collection runs as Spark tasks, and the metadata store is encrypted with Parquet
   Modular Encryption (an in-memory demo KMS; the bloom filters under their own key).
3. Runs five typical SQL queries over a temporary view with skipping off and on, and prints
   Spark's own count of files and bytes read, the time, the speedup, and whether the results
   are equal.
4. Appends files and overwrites one in place: the changed files are read, never skipped, until
   ``refresh()`` indexes them. Then refreshes, compacts, and shows ``describe`` and
   ``history``.
5. Indexes a directory of CSV files (``format="csv"`` with the reader's options: Spark's own
   CSV reader collects the values), runs a time-window query that skips, and shows the format
   ``describe()`` records.

Everything happens in a temporary directory that is removed at the end. The Parquet core without
Spark has its own tour: ``python -m metaindex.demo_core``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from metaindex.parquet.writer import write_table

SORTED_FILES = 270
LATE_FILES = 30
ROWS = 12_000
REGIONS = [
    ["Paris", "Lyon", "Brussels"],
    ["Rome", "Milan", "Zürich"],
    ["São Paulo", "Lima", "Bogotá"],
    ["東京", "Osaka", "Seoul"],
    ["Nairobi", "Lagos", "Cairo"],
    ["Oslo", "Helsinki", "Stockholm"],
]
DAY0 = np.datetime64("2026-01-01T00:00:00", "us")
HOUR = 3_600_000_000
HEATWAVE = range(100, 104)


def _file(rng, start, hours, cities, devices, temp_mean, rows=ROWS) -> pa.Table:
    offsets = np.sort(rng.integers(0, hours * HOUR, rows)).astype("timedelta64[us]")
    return pa.table(
        {
            "time": pa.array(start + offsets),
            "city": pa.array(np.asarray(cities)[rng.integers(0, len(cities), rows)]),
            "device_id": pa.array(rng.integers(devices[0], devices[1], rows, dtype=np.int64)),
            "temperature": pa.array(np.round(rng.normal(temp_mean, 6, rows), 2)),
        }
    )


def make_table(root: str) -> None:
    """300 files: 270 in time order (2.5 h each), 30 late arrivals spread over the month."""
    os.makedirs(root)
    rng = np.random.default_rng(2026)
    for i in range(SORTED_FILES):
        cities = REGIONS[i % len(REGIONS)] + (["Reykjavík"] if i % 90 == 0 else [])
        mean = 12 + 8 * np.sin(i / 40) + (25 if i in HEATWAVE else 0)
        t = _file(
            rng,
            DAY0 + np.timedelta64(i * 150, "m"),
            2.5,
            cities,
            ((i % 90) * 500, (i % 90) * 500 + 800),
            mean,
        )
        write_table(t, f"{root}/part-{i:05d}.parquet", compression="zstd")
    for j in range(LATE_FILES):
        t = _file(rng, DAY0, 24 * 28, REGIONS[j % len(REGIONS)][:1], (0, 45_000), 10)
        write_table(t, f"{root}/late-{j:05d}.parquet", compression="zstd")


QUERIES = [
    (
        "a 6-hour window",
        "time >= TIMESTAMP '2026-01-10 00:00:00' AND time < TIMESTAMP '2026-01-10 06:00:00'",
    ),
    ("a rare city", "city = 'Reykjavík'"),
    ("one device", "device_id = 31337"),
    ("a heat wave", "temperature > 45"),
    ("cities and cold", "city IN ('Lima', 'Oslo') AND temperature < -8"),
]


CSV_FILES = 24
CSV_SCHEMA = "time TIMESTAMP, city STRING, device_id BIGINT, temperature DOUBLE"
CSV_WHERE = "time >= TIMESTAMP '2026-01-02 00:00:00' AND time < TIMESTAMP '2026-01-02 06:00:00'"


def make_csv(root: str) -> None:
    """24 CSV files with a header, 2.5 hours of readings each, in time order."""
    os.makedirs(root)
    rng = np.random.default_rng(30)
    for i in range(CSV_FILES):
        t = _file(
            rng, DAY0 + np.timedelta64(i * 150, "m"), 2.5, REGIONS[i % 6], (0, 45_000), 10, 2_000
        )
        times = np.datetime_as_string(t.column("time").to_numpy(), unit="s")
        with open(f"{root}/part-{i:05d}.csv", "w", encoding="utf-8") as f:
            f.write("time,city,device_id,temperature\n")
            columns = [t.column(c).to_pylist() for c in t.column_names[1:]]
            for row in zip(times, *columns, strict=True):
                f.write(",".join(map(str, row)) + "\n")


def _csv_step(spark, work: str) -> None:
    """6. A CSV directory indexed through Spark's own CSV reader, a query that skips, and
    describe() naming the format."""
    from metaindex.spark import MetaIndex, disable, enable
    from metaindex.spark.metrics import files_read

    data = f"{work}/sensors-csv"
    make_csv(data)
    options = {"header": "true", "schema": CSV_SCHEMA}
    mi = MetaIndex(spark, data, store=f"{work}/store-csv", format="csv", options=options)
    t0 = time.perf_counter()
    mi.index_builder().add_min_max_index("time").add_value_list_index("city").build()
    print(
        f"6. CSV: {CSV_FILES} CSV files with a header, indexed in "
        f"{time.perf_counter() - t0:.1f} s with MetaIndex(spark, path, format='csv', "
        "options={'header': 'true', 'schema': ...}): the values are the ones Spark's CSV "
        "reader reads with those options"
    )
    results = []
    for switch in (disable, enable):
        switch(spark)
        df = spark.read.options(header="true").schema(CSV_SCHEMA).csv(data).where(CSV_WHERE)
        results.append((sorted(tuple(r) for r in df.collect()), files_read(df)))
    (off, off_files), (on, on_files) = results
    if off != on:
        raise SystemExit(f"demo failed: skipping changed the result of {CSV_WHERE}")
    print(
        f"   WHERE {CSV_WHERE}: files read {off_files} → {on_files}, {len(on):,} rows, same result"
    )
    formats = mi.describe().formats
    print(
        f"   describe(): data_format={formats['data_format']!r}, "
        f"format_options={formats['format_options']}"
    )


def _run(spark, where: str):
    from metaindex.spark.metrics import scan_metrics

    df = spark.sql(
        "SELECT count(*) AS n, round(avg(temperature), 6) AS avg_t, "
        f"count(DISTINCT device_id) AS devices FROM sensors WHERE {where}"
    )
    t0 = time.perf_counter()
    rows = df.collect()
    seconds = time.perf_counter() - t0
    scans = scan_metrics(df)
    return (
        [tuple(r) for r in rows],
        sum(s.get("numFiles", 0) for s in scans),
        sum(s.get("filesSize", 0) for s in scans),
        seconds,
    )


def _table(headers, rows) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(*headers, show_lines=False, header_style="bold")
    for row in rows:
        table.add_row(*[str(c) for c in row])
    Console(width=max(120, len(headers) * 14)).print(table)


def _session(work: str, keys: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("metaindex-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", f"{work}/warehouse")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # The metadata store is encrypted, with keys from a KMS named by a spec string.
    spark.conf.set("metaindex.encryption.kms", f"inmemory:{keys}")
    spark.conf.set("metaindex.encryption.footer.key", "metadata")
    return spark


def main() -> None:
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="metaindex-demo-")
    spark = None
    try:
        data, store, keys = f"{work}/sensors", f"{work}/store", f"{work}/demo-keys.json"
        make_table(data)
        size = sum(os.path.getsize(f"{data}/{n}") for n in os.listdir(data))
        print(
            f"1. Table: {SORTED_FILES + LATE_FILES} Parquet files, "
            f"{(SORTED_FILES + LATE_FILES) * ROWS:,} sensor readings, {size / 2**20:.1f} MiB "
            f"in {data} (written by metaindex's own Parquet writer)"
        )

        # Demo keys only: a real deployment names its own KmsClient (module:Class).
        rng = np.random.default_rng()
        with open(keys, "w") as f:
            json.dump(
                {
                    label: base64.b64encode(rng.bytes(16)).decode()
                    for label in ("metadata", "devices")
                },
                f,
            )
        spark = _session(work, keys)
        print(
            f"   Spark {spark.version} on local[2] started "
            f"({time.perf_counter() - started:.0f} s so far)\n"
        )

        from metaindex.spark import MetaIndex, disable, enable, last_query_stats

        mi = MetaIndex(spark, data, store=store)
        t0 = time.perf_counter()
        result = (
            mi.index_builder()
            .add_min_max_index("time")
            .add_min_max_index("temperature")
            .add_value_list_index("city")
            .add_bloom_filter_index("device_id", fpp=0.01, key_label="devices")
            .build()
        )
        print(
            f"2. Index built with PySpark in {time.perf_counter() - t0:.1f} s: "
            f"{result.status}, {result.entries_added} files indexed "
            f"(min/max from footers for {result.footer_minmax}, scanned "
            f"{result.scanned_minmax}). The store is PME-encrypted: footers and most "
            "columns under key 'metadata', the bloom filters under 'devices'.\n"
        )

        spark.read.parquet(data).createOrReplaceTempView("sensors")
        rows = []
        for label, where in QUERIES:
            disable(spark)
            _run(spark, where)  # warm up the JVM on this query shape
            off, off_files, off_bytes, off_s = _run(spark, where)
            enable(spark)
            on, on_files, on_bytes, on_s = _run(spark, where)
            if off != on:
                raise SystemExit(
                    f"demo failed: skipping changed the result of {where}: {off} != {on}"
                )
            rows.append(
                [
                    label,
                    f"{off_files} → {on_files}",
                    f"{off_bytes / 2**20:.1f} → {on_bytes / 2**20:.1f}",
                    f"{off_s:.2f} → {on_s:.2f}",
                    f"{off_s / max(on_s, 1e-9):.1f}x",
                    f"{1 - on_files / max(off_files, 1):.0%}",
                    "yes",
                    f"{on[0][0]:,}",
                ]
            )
        print(
            "3. Queries over the view `sensors`, skipping off → on "
            "(files and MiB as Spark's scan metrics count them)"
        )
        _table(
            [
                "query",
                "files read",
                "MiB read",
                "seconds",
                "speedup",
                "skipped",
                "same result",
                "rows",
            ],
            rows,
        )
        for label, where in QUERIES:
            print(f"   {label}: WHERE {where}")
        stats = last_query_stats(spark)
        if stats is not None:
            print(
                f"   last query: {stats.files_skipped} of {stats.files_total} files skipped; "
                f"by index: {dict(stats.skipped_by_index)}"
            )
        print()

        print("4. Freshness: append 3 files, overwrite a file in place with a heat-wave reading")
        for k in range(3):
            shutil.copy(f"{data}/part-{k:05d}.parquet", f"{data}/part-new{k}.parquet")
        hot = pa.table(
            {
                "time": pa.array([DAY0 + np.timedelta64(5, "D")]),
                "city": ["Paris"],
                "device_id": pa.array([7], pa.int64()),
                "temperature": [52.5],
            }
        )
        write_table(hot, f"{data}/part-00007.parquet")
        spark.read.parquet(data).createOrReplaceTempView("sensors")
        where = QUERIES[3][1]
        disable(spark)
        off = _run(spark, where)
        enable(spark)
        on = _run(spark, where)
        print(
            f"   before refresh, '{where}': {on[0][0][0]} rows with skipping, "
            f"{off[0][0][0]} without; files read {on[1]} (the rewritten and new files are "
            "never skipped until refreshed)"
        )
        if on[0] != off[0]:
            raise SystemExit("demo failed: a changed file was skipped")
        refreshed = mi.refresh()
        print(
            f"   refresh: {refreshed.status}, +{refreshed.entries_added} / "
            f"-{refreshed.entries_removed} entries, version {refreshed.version}"
        )
        on = _run(spark, where)
        print(f"   after refresh: {on[0][0][0]} rows, files read {on[1]}")
        version = mi.compact()
        print(f"   compacted into version {version}\n")
        print("5. describe()")
        mi.describe().to_spark().select(
            "version",
            "kind",
            "column",
            "params",
            "key_label",
            "indexed_files",
            "up_to_date",
            "store_bytes",
        ).show(truncate=False)
        print("   history: " + ", ".join(f"v{e.version} {e.operation}" for e in mi.history()))
        print()
        _csv_step(spark, work)
        print(
            f"\ndemo complete in {time.perf_counter() - started:.0f} s: every query returned "
            "the same result with and without skipping."
        )
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
