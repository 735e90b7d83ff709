"""Delta Lake: what Delta's own statistics cannot skip, and what refreshing an index costs.

(a) A Delta table written by delta-spark: ``--files`` files (one Spark task each, a
    contiguous range of ``id`` per file), ``--rows`` rows in all, 41 columns: ``id``, ``u``
    (``uuid()``: random), 38 filler ints, and ``tag`` (``'t' || id DIV 997``: a handful of
    values per file) as the 41st column, past the 32 Delta collects statistics for.
(b) metaindex indexes it (``MetaIndex(spark, path)``, serial build): bloom filters on ``u``
    and ``id``, a value list on ``tag``.
(c) The same queries, in one Spark session, with Delta alone (``spark.metaindex.enabled``
    false: Delta's data skipping only) and Delta + metaindex (true: the index filters what
    Delta's skipping left), alternating off/on per run: a lookup of a random UUID of the
    table, of a UUID not in it, ``tag = <random value>``, and ``id IN`` (300 ids drawn from 5
    random files: Delta turns an ``IN`` list into one range, min..max of the list). Files
    read are Spark's scan metric (``metaindex.spark.metrics.files_read``); what Delta skipped
    and what the index skipped after it come from ``last_query_stats``; rows are compared
    on/off on every run. Medians over ``--runs`` runs, each with new random literals.
(d) Refresh cost (no Spark; delta-rs writes, the core ``MetaIndex(path)`` indexes): a table of
    ``--refresh-files`` small files written by ``deltalake.write_deltalake`` (cached under
    ``/tmp/metaindex-bench-delta/``, copied for each run), indexed (min/max ``id``, bloom
    ``key``), then 1 % more files appended in one commit and ``refresh()`` timed; the data
    files each step opened are counted through a registered counting Parquet format. Build and
    refresh run on one ``SerialExecutor`` so their times compare.

delta-spark 4.4.0 supports Spark up to 4.2, older than the shared venv's pyspark, so (a)-(c) run
in the pyspark 4.2.0 venv and with the delta-spark jars the Delta tests use (made and cached by
``tests/toolcache.py`` / ``tests/delta/conftest.py`` on first use: a fresh machine fetches
them from PyPI and Maven Central once): this file re-runs itself there as ``--driver``.

Usage (from the repository root or ``bench/``):
    python bench/delta.py [--quick] [--files 300] [--rows 3000000] [--runs 5]
                          [--refresh-files 10000]
``--quick``: 60 files of 5,000 rows, 3 runs, a 2,000-file refresh table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)

if __name__ == "__main__" and "--driver" in sys.argv:  # this worktree first, shared packages last
    sys.path.insert(0, _ROOT)
    sys.path.append(os.environ["METAINDEX_SITE"])
else:
    sys.path.insert(0, _ROOT)
    sys.path.insert(0, _HERE)

FILLERS = 38
IN_IDS = 300
IN_FILES = 5
ID_FPP = 1e-4
"""The id bloom's false-positive rate: an IN list of n ids keeps a file holding none of them
with probability about n * fpp (300 ids at the default 0.01 keep most files)."""
CACHE = "/tmp/metaindex-bench-delta"


# ------------------------------------------------------------------ (a)-(c): the Spark driver


def _session(jars: str):
    from tests.delta.spark_writer import DELTA_EXTENSION, METAINDEX_EXTENSION, delta_session

    return delta_session(
        jars,
        "metaindex-bench-delta",
        (DELTA_EXTENSION, METAINDEX_EXTENSION),
        {"spark.driver.memory": "2g"},
    )


def _write_table(spark, path: str, files: int, rows: int) -> None:
    columns = ["id", "uuid() AS u"]
    columns += [f"CAST((id * {i + 7}) % 1000 AS INT) AS c{i:02d}" for i in range(FILLERS)]
    columns.append("concat('t', CAST(id DIV 997 AS STRING)) AS tag")
    spark.range(0, rows, 1, files).selectExpr(*columns).write.format("delta").save(path)


def _queries(spark, path: str, files: int, rows: int, runs: int, rng: random.Random) -> dict:
    """{query kind: [WHERE clause per run]}, random literals drawn from the table."""
    df = spark.read.format("delta").load(path)
    per_file = rows // files
    ids = rng.sample(range(rows), runs)
    uuids = {r.id: r.u for r in df.where(f"id IN ({', '.join(map(str, ids))})").collect()}
    in_lists = []
    for _ in range(runs):
        chosen = rng.sample(range(files), IN_FILES)
        pool = [i for f in chosen for i in range(f * per_file, (f + 1) * per_file)]
        in_lists.append(sorted(rng.sample(pool, IN_IDS)))
    return {
        "uuid, present": [f"u = '{uuids[i]}'" for i in ids],
        "uuid, absent": [f"u = '{rng.getrandbits(128):032x}'" for _ in range(runs)],
        "tag (41st column)": [f"tag = 't{rng.randrange(rows // 997)}'" for _ in range(runs)],
        f"id IN ({IN_IDS} ids of {IN_FILES} files)": [
            f"id IN ({', '.join(map(str, ids))})" for ids in in_lists
        ],
    }


def _run(spark, path: str, where: str, on: bool) -> dict:
    from metaindex.spark import last_query_stats
    from metaindex.spark.metrics import files_read

    spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
    df = spark.read.format("delta").load(path).where(where)
    t0 = time.perf_counter()
    out = df.collect()
    seconds = time.perf_counter() - t0
    result = {"seconds": seconds, "files": files_read(df), "rows": sorted(tuple(r) for r in out)}
    if on:
        stats = last_query_stats(spark)
        result["stats"] = {
            "files_total": stats.files_total,
            "files_skipped": stats.files_skipped,
            "delta_files_skipped": stats.delta_files_skipped,
        }
    return result


def driver(out: str, jars: str, files: int, rows: int, runs: int) -> None:
    from metaindex.engine.executors import SerialExecutor
    from metaindex.spark import MetaIndex, enable

    spark = _session(jars)
    spark.sparkContext.setLogLevel("ERROR")
    enable(spark)
    results: dict = {"spark": spark.version, "load": {"start": os.getloadavg()}}
    path = os.path.join(out, "events")
    t0 = time.perf_counter()
    _write_table(spark, path, files, rows)
    results["write_seconds"] = time.perf_counter() - t0
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    results["table"] = {
        "files": detail.numFiles,
        "bytes": detail.sizeInBytes,
        "rows": rows,
        "columns": len(spark.read.format("delta").load(path).columns),
    }
    results["load"]["written"] = os.getloadavg()

    mi = MetaIndex(spark, path, store=os.path.join(out, "store"))
    t0 = time.perf_counter()
    mi.index_builder().add_bloom_filter_index("u").add_value_list_index(
        "tag"
    ).add_bloom_filter_index("id", fpp=ID_FPP).build(executor=SerialExecutor())
    results["build_seconds"] = time.perf_counter() - t0
    print(f"  table written and indexed, load {os.getloadavg()[0]:.1f}", flush=True)
    results["load"]["indexed"] = os.getloadavg()

    rng = random.Random(31)
    queries = _queries(spark, path, files, rows, runs, rng)
    warm = queries["uuid, present"][0]
    _run(spark, path, warm, False)  # the first scans of the session pay class loading
    _run(spark, path, warm, True)
    results["queries"] = {}
    for kind, wheres in queries.items():
        entries = []
        for k, where in enumerate(wheres):
            order = (False, True) if k % 2 == 0 else (True, False)  # load drift hits both
            got = {on: _run(spark, path, where, on) for on in order}
            off, on = got[False], got[True]
            if off["rows"] != on["rows"]:
                raise AssertionError(f"skipping changed the rows of {where[:80]}...")
            entries.append(
                {
                    "off_seconds": off["seconds"],
                    "on_seconds": on["seconds"],
                    "off_files": off["files"],
                    "on_files": on["files"],
                    "rows": len(on["rows"]),
                    **on["stats"],
                }
            )
        results["queries"][kind] = entries
        print(f"  {kind}: {len(entries)} runs done, load {os.getloadavg()[0]:.1f}", flush=True)
    results["load"]["end"] = os.getloadavg()
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f)
    spark.stop()


# ------------------------------------------------------------------ (d): refresh cost


def _refresh_table(files: int) -> str:
    """A Delta table of ``files`` files of 1,024 rows (100 commits), cached under CACHE."""
    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake

    path = os.path.join(CACHE, f"refresh-{files}")
    if os.path.isfile(os.path.join(path, ".complete")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    commits = 100
    for c in range(commits):
        _append(path, c * (files // commits), files // commits, np, pa, write_deltalake)
    open(os.path.join(path, ".complete"), "w").close()
    return path


def _append(path: str, first: int, files: int, np, pa, write_deltalake) -> None:
    """``files`` files of 1,024 rows, file i holding ids ``(first + i) * 1024 ...``, one
    commit (delta-rs closes a file at each 1,024-row batch when the target size is 1 B)."""
    n = files * 1024
    rng = np.random.default_rng(first)
    table = pa.table(
        {
            "id": pa.array(np.arange(first * 1024, first * 1024 + n, dtype=np.int64)),
            "key": pa.array(rng.integers(0, 2**62, n, dtype=np.int64)),
            "v": pa.array(rng.random(n)),
        }
    )
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(1024))
    write_deltalake(path, reader, mode="append", target_file_size=1)


def refresh_cost(files: int) -> dict:
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from metaindex import MetaIndex
    from metaindex.engine.executors import SerialExecutor
    from metaindex.formats import ParquetFormat, register_data_format

    class CountingParquet(ParquetFormat):
        """Our Parquet reader, counting the data files it opens (footer reads)."""

        name = "bench-counting-parquet"
        opened: list = []

        def open(self, path, filesystem, *, decryption_properties=None):
            CountingParquet.opened.append(path)
            return super().open(path, filesystem, decryption_properties=decryption_properties)

    register_data_format(CountingParquet, replace=True)
    load = {"start": os.getloadavg()}
    t0 = time.perf_counter()
    cached = _refresh_table(files)
    made = time.perf_counter() - t0
    work = tempfile.mkdtemp(prefix="metaindex-bench-delta-")
    try:
        path = os.path.join(work, "t")
        shutil.copytree(cached, path)
        before = len(DeltaTable(path).file_uris())
        mi = MetaIndex(path, store=os.path.join(work, "store"), format=CountingParquet.name)
        t0 = time.perf_counter()
        mi.index_builder().add_min_max_index("id").add_bloom_filter_index("key").build(
            executor=SerialExecutor()
        )
        build_s = time.perf_counter() - t0
        build_opened = len(CountingParquet.opened)
        build_distinct = len(set(CountingParquet.opened))
        CountingParquet.opened.clear()
        load["built"] = os.getloadavg()

        t0 = time.perf_counter()
        mi.refresh(executor=SerialExecutor())  # nothing changed: the fixed cost
        noop_s = time.perf_counter() - t0
        noop_opened = len(CountingParquet.opened)
        CountingParquet.opened.clear()

        appended = max(1, before // 100)
        version = DeltaTable(path).version()
        _append(path, 10 * before, appended, np, pa, write_deltalake)
        after = DeltaTable(path).file_uris()
        new = set(after) - set(DeltaTable(path, version=version).file_uris())
        t0 = time.perf_counter()
        result = mi.refresh(executor=SerialExecutor())
        refresh_s = time.perf_counter() - t0
        opened = {os.path.basename(p) for p in CountingParquet.opened}
        load["end"] = os.getloadavg()
        unchanged = opened - {os.path.basename(p) for p in new}
        if unchanged or len(opened) != len(new):
            raise AssertionError(
                f"refresh opened {len(opened)} files, {len(unchanged)} of them unchanged"
            )
        d = mi.describe()
        return {
            "files": before,
            "appended": len(new),
            "made_seconds": made,
            "build_seconds": build_s,
            "build_opened": build_opened,
            "build_distinct": build_distinct,
            "noop_seconds": noop_s,
            "noop_opened": noop_opened,
            "refresh_seconds": refresh_s,
            "refresh_opened": len(CountingParquet.opened),
            "entries_added": result.entries_added,
            "indexed_after": d.counts.indexed_files,
            "versions_behind": d.delta_versions_behind,
            "load": load,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ the report


def _spark_part(args) -> dict:
    from tests.delta.conftest import delta_spark_command

    python, jars, env = delta_spark_command(with_metaindex=True)
    out = tempfile.mkdtemp(prefix="metaindex-bench-delta-spark-")
    try:
        done = subprocess.run(
            [
                python,
                os.path.abspath(__file__),
                "--driver",
                out,
                jars,
                str(args.files),
                str(args.rows),
                str(args.runs),
            ],
            stderr=subprocess.PIPE,  # progress lines go to our stdout
            text=True,
            env=env,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the Delta driver failed:\n{done.stderr[-8000:]}")
        with open(os.path.join(out, "results.json")) as f:
            return json.load(f)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _median(entries: list, key: str) -> float:
    return statistics.median(e[key] for e in entries)


def _load(load: dict) -> str:
    return ", ".join(f"{k} {v[0]:.1f}" for k, v in load.items())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--refresh-files", type=int, default=10_000)
    ap.add_argument("--skip-spark", action="store_true", help="only (d), the refresh cost")
    args = ap.parse_args()
    if args.quick:
        args.files, args.rows, args.runs, args.refresh_files = 60, 300_000, 3, 2_000

    from _common import machine, print_table

    from tests.delta.conftest import DELTA_SPARK

    print(machine())
    if not args.skip_spark:
        r = _spark_part(args)
        t = r["table"]
        print(
            f"\ndelta-spark {DELTA_SPARK} on Spark {r['spark']}, local[2]: {t['files']} files, "
            f"{t['rows']:,} rows, {t['columns']} columns, {t['bytes'] / 2**20:.0f} MiB "
            f"(written in {r['write_seconds']:.0f} s); index build (bloom u, bloom id, value "
            f"list tag; serial) {r['build_seconds']:.1f} s; load average: {_load(r['load'])}"
        )
        rows = []
        for kind, entries in r["queries"].items():
            off_s, on_s = _median(entries, "off_seconds"), _median(entries, "on_seconds")
            rows.append(
                [
                    kind,
                    _median(entries, "off_files"),
                    _median(entries, "delta_files_skipped"),
                    _median(entries, "on_files"),
                    _median(entries, "files_skipped"),
                    off_s * 1000,
                    on_s * 1000,
                    off_s / on_s,
                    sum(e["rows"] for e in entries),
                ]
            )
        print(f"\n(c) medians of {args.runs} runs (new literals each run), off/on alternating")
        print_table(
            [
                "query",
                "files read, Delta alone",
                "skipped by Delta",
                "files read, + metaindex",
                "skipped by the index",
                "ms, Delta alone",
                "ms, + metaindex",
                "speedup",
                "rows (all runs, equal on/off)",
            ],
            rows,
        )
    d = refresh_cost(args.refresh_files)
    print(
        f"\n(d) refresh after appending 1 % ({d['appended']} files in one commit) to a "
        f"{d['files']:,}-file Delta table (delta-rs; serial build and refresh); "
        f"load average: {_load(d['load'])}"
    )
    print_table(
        ["step", "s", "data files opened"],
        [
            ["build", d["build_seconds"], f"{d['build_opened']} ({d['build_distinct']} distinct)"],
            ["refresh, nothing changed", d["noop_seconds"], d["noop_opened"]],
            ["refresh after the append", d["refresh_seconds"], d["refresh_opened"]],
            [
                "refresh / build",
                f"{d['refresh_seconds'] / d['build_seconds']:.2%}",
                f"{d['refresh_opened'] / d['build_opened']:.2%}",
            ],
        ],
    )
    print(
        f"after the refresh: {d['indexed_after']:,} files indexed, "
        f"{d['versions_behind']} versions behind"
    )


if __name__ == "__main__":
    if "--driver" in sys.argv:
        i = sys.argv.index("--driver")
        out, jars, files, rows, runs = sys.argv[i + 1 : i + 6]
        driver(out, jars, int(files), int(rows), int(runs))
    else:
        main()
