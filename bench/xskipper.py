"""The real xskipper 1.6.0 and metaindex side by side: the same tables, indexes and queries.

How to run (from the repository root, in the project's venv)::

    python bench/xskipper.py            # 4 tables of 150 files x 1000 rows, 3 builds each
    python bench/xskipper.py --quick    # 4 tables of 30 files x 200 rows, one build each

Options: ``--files N``, ``--rows N`` (rows per file), ``--repeats N`` (builds per tool and
table; the median is reported), ``--work DIR`` (keep the tables and stores there; default a
temporary directory removed at the end).

xskipper 1.6.0 is built for Spark 3.5 (Scala 2.12), so both tools run in the pyspark 3.5 venv
the tests build and cache (``tests.toolcache.venv``, the venv of
``tests/xskipper/realxskipper.py``), with xskipper's jar from ``tests.toolcache.xskipper_jar``
(the first run fetches pyspark and the jar; later runs fetch nothing). metaindex is imported
there from this source tree (``PYTHONPATH``; its kernels are built for the same Python) and
uses its Spark 3.5 jar (``metaindex.spark.jar_path()``). Each tool runs in its own Spark
process (``local[2]``, session time zone UTC) so neither's optimizer rule sees the other's
scans; their stores live in separate directories outside the tables.

The tables (written once with pyarrow and the standard library, read by both tools with the
same Spark reader and options): ``parquet`` (flat), ``parquet-part`` (Hive-partitioned by
``day``), ``csv`` (with a header, read with an explicit schema) and ``json`` (line-delimited,
explicit schema). Columns: ``ts`` timestamp (file i covers hours i*4..i*4+4: min/max),
``temp`` double (drifting upwards with i: min/max), ``city`` (3 of 16 names per file: value
list), ``device_id`` bigint (random, about unique: bloom filter), and ``day`` (the partition
column of ``parquet-part``). Both tools build min/max on ``ts`` and ``temp``, a value list on
``city`` and a bloom filter on ``device_id``.

Reported per table: each tool's build time (median of ``--repeats`` builds, each after dropping
the index; wall time of the build call), and per query the files Spark read (its scan metric
"number of files read") with skipping off, with xskipper and with metaindex, and whether each
tool's rows equal the rows read with skipping off (as multisets).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CITIES = [f"city{k:02d}" for k in range(16)]
T0 = datetime.datetime(2025, 1, 1)
HOURS_PER_FILE = 4
FILES_PER_DAY = 6
TEXT_SCHEMA = "ts TIMESTAMP, temp DOUBLE, city STRING, device_id BIGINT"
TS_FORMAT = "yyyy-MM-dd HH:mm:ss"
TABLES = {  # name -> (Spark format, reader options, partitioned)
    "parquet": ("parquet", {}, False),
    "parquet-part": ("parquet", {}, True),
    "csv": (
        "csv",
        {"header": "true", "timestampFormat": TS_FORMAT, "schema": TEXT_SCHEMA},
        False,
    ),
    "json": ("json", {"timestampFormat": TS_FORMAT, "schema": TEXT_SCHEMA}, False),
}
INDEXES = [("minmax", "ts"), ("minmax", "temp"), ("valuelist", "city"), ("bloom", "device_id")]


# ---------------------------------------------------------------- the data (parent process)


def _file_rows(i: int, rows: int, rng) -> dict:
    start = T0 + datetime.timedelta(hours=HOURS_PER_FILE * i)
    secs = sorted(rng.integers(0, HOURS_PER_FILE * 3600, rows).tolist())
    cities = rng.choice(len(CITIES), 3, replace=False)
    return {
        "ts": [start + datetime.timedelta(seconds=s) for s in secs],
        "temp": [round(float(x), 1) for x in 10 + 0.1 * i + rng.normal(0, 2, rows)],
        "city": [CITIES[cities[k]] for k in rng.integers(0, 3, rows)],
        "device_id": rng.integers(0, 10**12, rows).tolist(),
    }


def generate(root: str, files: int, rows: int) -> dict:
    """Writes the four tables under ``root``; returns the literals the queries use."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(30)
    data = [_file_rows(i, rows, rng) for i in range(files)]
    for name, (fmt, _, partitioned) in TABLES.items():
        table = os.path.join(root, "tables", name)
        os.makedirs(table)
        for i, cols in enumerate(data):
            if fmt == "parquet":
                directory = table
                if partitioned:
                    day = (T0 + datetime.timedelta(days=i // FILES_PER_DAY)).date()
                    directory = os.path.join(table, f"day={day.isoformat()}")
                    os.makedirs(directory, exist_ok=True)
                arrow = pa.table(
                    {
                        "ts": pa.array(cols["ts"], pa.timestamp("us", tz="UTC")),
                        "temp": pa.array(cols["temp"], pa.float64()),
                        "city": pa.array(cols["city"], pa.string()),
                        "device_id": pa.array(cols["device_id"], pa.int64()),
                    }
                )
                pq.write_table(arrow, os.path.join(directory, f"part-{i:05d}.parquet"))
                continue
            texts = [t.strftime("%Y-%m-%d %H:%M:%S") for t in cols["ts"]]
            with open(os.path.join(table, f"part-{i:05d}.{fmt}"), "w") as f:
                if fmt == "csv":
                    f.write("ts,temp,city,device_id\n")
                    for r in zip(texts, cols["temp"], cols["city"], cols["device_id"], strict=True):
                        f.write(",".join(map(str, r)) + "\n")
                else:
                    for ts, temp, city, dev in zip(
                        texts, cols["temp"], cols["city"], cols["device_id"], strict=True
                    ):
                        f.write(
                            json.dumps({"ts": ts, "temp": temp, "city": city, "device_id": dev})
                            + "\n"
                        )
    mid = files // 2
    return {
        "ids": [data[k]["device_id"][rows // 2] for k in (mid, files // 5, files - 3)],
        "mid_city": data[mid]["city"][0],
        "temp_mid": data[mid]["temp"][rows // 3],
        "files": files,
    }


def queries(lit: dict) -> list:
    files = lit["files"]

    def ts(file_index: float) -> str:
        t = T0 + datetime.timedelta(hours=HOURS_PER_FILE * file_index)
        return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S')}'"

    a, b, c = lit["ids"]
    hi = 10 + 0.1 * files + 4.0
    return [
        f"ts >= {ts(files // 2 + 0.5)} AND ts < {ts(files // 2 + 2.5)}",
        f"ts >= {ts(files - files / 20)}",
        f"temp > {hi - 1.5:.1f}",
        "temp < 6.0",
        f"city = '{lit['mid_city']}'",
        "city IN ('city01', 'city09')",
        f"device_id = {a}",
        f"device_id IN ({a}, {b}, {c})",
        f"ts < {ts(files / 4)} AND city = 'city03'",
        f"city = 'city02' OR device_id = {b}",
        f"temp != {lit['temp_mid']}",
    ]


# ------------------------------------------------------- one tool in a pyspark 3.5 process


def _reader(spark, fmt: str, options: dict):
    opts = {k: v for k, v in options.items() if k != "schema"}
    reader = spark.read.format(fmt).options(**opts)
    if "schema" in options:
        reader = reader.schema(options["schema"])
    return reader


def child(tool: str, job_path: str, out_path: str) -> None:
    from pyspark.sql import SparkSession

    from metaindex.spark.metrics import files_read
    from tests.xskipper.xskipper_driver import rows_of

    with open(job_path) as f:
        job = json.load(f)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(f"bench-{tool}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if tool == "xskipper":
        builder = builder.config("spark.jars", job["xskipper_jar"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    store = os.path.join(job["work"], f"store-{tool}")
    on, off, build = _tool(spark, tool, store)
    results = {"spark": spark.version, "tables": {}}
    for name, (fmt, options, _) in TABLES.items():
        table = os.path.join(job["work"], "tables", name)
        times = []
        for _ in range(job["repeats"]):
            t = time.perf_counter()
            build(table, fmt, options)
            times.append(time.perf_counter() - t)
        per_query = []
        t = time.perf_counter()
        for q in job["queries"]:
            on(table)
            df = _reader(spark, fmt, options).load(table).where(q)
            rows_on = rows_of(df)
            read_on = files_read(df)
            off(table)
            df = _reader(spark, fmt, options).load(table).where(q)
            rows_off = rows_of(df)
            per_query.append(
                {
                    "query": q,
                    "files_on": read_on,
                    "files_off": files_read(df),
                    "rows": len(rows_off),
                    "rows_equal": rows_on == rows_off,
                }
            )
        results["tables"][name] = {"build_s": times, "queries": per_query}
        print(
            f"{tool}: {name} built in {statistics.median(times):.1f} s, queried in "
            f"{time.perf_counter() - t:.0f} s",
            flush=True,
        )
    with open(out_path, "w") as f:
        json.dump(results, f)
    spark.stop()


def _tool(spark, tool: str, store: str):
    """(enable for a table, disable, build) for ``tool`` in this session."""
    if tool == "metaindex":
        from metaindex.spark import MetaIndex, disable, enable

        spark.conf.set("metaindex.store", store)

        def build(table, fmt, options):
            mi = MetaIndex(spark, table, format=fmt, options=options)
            if mi.is_indexed():
                mi.drop()
            mi = MetaIndex(spark, table, format=fmt, options=options)
            b = mi.index_builder()
            for kind, col in INDEXES:
                {"minmax": b.add_min_max_index, "valuelist": b.add_value_list_index}.get(
                    kind, b.add_bloom_filter_index
                )(col)
            b.build()

        return (lambda table: enable(spark)), (lambda table: disable(spark)), build

    jvm, jss = spark._jvm, spark._jsparkSession
    X = jvm.io.xskipper.Xskipper
    conf = jvm.java.util.HashMap()
    conf.put("io.xskipper.parquet.mdlocation", store)
    conf.put("io.xskipper.parquet.mdlocation.type", "EXPLICIT_BASE_PATH_LOCATION")
    X.setConf(conf)
    manager = "io.xskipper.metadatastore.parquet.ParquetMetadataStoreManager"

    def build(table, fmt, options):
        xs = jvm.io.xskipper.Xskipper(jss, table, manager)
        if xs.isIndexed():
            xs.dropIndex()
        b = jvm.io.xskipper.index.execution.IndexBuilder(jss, table, xs)
        for kind, col in INDEXES:
            {"minmax": b.addMinMaxIndex, "valuelist": b.addValueListIndex}.get(
                kind, b.addBloomFilterIndex
            )(col)
        b.build(_reader(spark, fmt, options)._jreader)

    return (lambda table: X.enable(jss)), (lambda table: X.disable(jss)), build


# ------------------------------------------------------------------------ the parent process


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--files", type=int)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--work")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="with --work: keep its tables and reuse a tool's finished results",
    )
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "JOB", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    files = args.files or (30 if args.quick else 150)
    rows = args.rows or (200 if args.quick else 1000)
    repeats = args.repeats or (1 if args.quick else 3)

    sys.path.insert(0, REPO)
    from tests import toolcache
    from tests.xskipper import realxskipper

    python = toolcache.venv(realxskipper.VENV, realxskipper.PYSPARK)
    jar = toolcache.xskipper_jar(realxskipper._pyspark_jars(python))
    work = args.work or tempfile.mkdtemp(prefix="metaindex-xskipper-bench-")
    resume = args.resume and args.work and os.path.isfile(os.path.join(work, "lit.json"))
    if not resume:
        shutil.rmtree(os.path.join(work, "tables"), ignore_errors=True)
        for tool in ("xskipper", "metaindex"):
            shutil.rmtree(os.path.join(work, f"store-{tool}"), ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(work, f"{tool}.json"))
    try:
        started = datetime.datetime.now(datetime.timezone.utc)
        print(f"start {started:%Y-%m-%d %H:%M} UTC, load average {_load()}")
        if resume:
            with open(os.path.join(work, "lit.json")) as f:
                lit = json.load(f)
        else:
            lit = generate(work, files, rows)
            with open(os.path.join(work, "lit.json"), "w") as f:
                json.dump(lit, f)
        job = {
            "work": work,
            "repeats": repeats,
            "queries": queries(lit),
            "xskipper_jar": jar,
        }
        job_path = os.path.join(work, "job.json")
        with open(job_path, "w") as f:
            json.dump(job, f)
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "SPARK_REMOTE")}
        env.update(
            PYTHONPATH=REPO,
            PYSPARK_PYTHON=python,
            PYSPARK_DRIVER_PYTHON=python,
            SPARK_LOCAL_IP="127.0.0.1",
        )
        out = {}
        for tool in ("xskipper", "metaindex"):
            out_path = os.path.join(work, f"{tool}.json")
            if resume and os.path.isfile(out_path):
                with open(out_path) as f:
                    out[tool] = json.load(f)
                continue
            t = time.perf_counter()
            done = subprocess.run(
                [python, os.path.abspath(__file__), "--child", tool, job_path, out_path],
                env=env,
                cwd=work,
                timeout=7200,
                stderr=subprocess.PIPE,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"the {tool} process exited {done.returncode}:\n{done.stderr[-6000:]}")
            with open(out_path) as f:
                out[tool] = json.load(f)
            print(f"{tool}: {time.perf_counter() - t:.0f} s, load average {_load()}", flush=True)
        report(out, files, rows, repeats, job["queries"])
        ended = datetime.datetime.now(datetime.timezone.utc)
        print(f"end {ended:%H:%M} UTC, load average {_load()}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def report(out: dict, files: int, rows: int, repeats: int, qs: list) -> None:
    import metaindex

    sys.path.insert(0, HERE)
    from _common import machine, print_table

    xs, mi = out["xskipper"], out["metaindex"]
    print(
        f"\n{machine()}\nSpark {mi['spark']} local[2] (pyspark 3.5 venv), xskipper 1.6.0, "
        f"metaindex {metaindex.__version__} (this tree); {files} files x {rows} rows per "
        f"table, builds: median of {repeats}\n"
    )
    build_rows = []
    for name in TABLES:
        x = statistics.median(xs["tables"][name]["build_s"])
        m = statistics.median(mi["tables"][name]["build_s"])
        build_rows.append([name, f"{x:.2f}", f"{m:.2f}", f"{x / m:.2f}x"])
    print("Index build (s)")
    print_table(["table", "xskipper", "metaindex", "xskipper / metaindex"], build_rows)
    totals = collections.Counter()
    for name in TABLES:
        print(f"\nFiles read: {name}")
        table_rows = []
        for k, q in enumerate(qs):
            xq, mq = xs["tables"][name]["queries"][k], mi["tables"][name]["queries"][k]
            assert xq["files_off"] == mq["files_off"] and xq["rows"] == mq["rows"], (name, q)
            table_rows.append(
                [
                    f"q{k + 1}",
                    mq["rows"],
                    mq["files_off"],
                    xq["files_on"],
                    mq["files_on"],
                    "yes" if xq["rows_equal"] else "NO",
                    "yes" if mq["rows_equal"] else "NO",
                ]
            )
            totals["off"] += mq["files_off"]
            totals["xskipper"] += xq["files_on"]
            totals["metaindex"] += mq["files_on"]
            totals["xskipper wrong"] += not xq["rows_equal"]
            totals["metaindex wrong"] += not mq["rows_equal"]
        print_table(
            [
                "query",
                "rows",
                "read (off)",
                "xskipper",
                "metaindex",
                "xskipper rows equal",
                "metaindex rows equal",
            ],
            table_rows,
        )
    print("\nQueries:")
    for k, q in enumerate(qs):
        print(f"  q{k + 1}: {q}")
    print(f"\nTotals over every table and query: {dict(totals)}")


if __name__ == "__main__":
    main()
