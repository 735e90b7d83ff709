"""Writes Delta tables with delta-spark and records what delta-spark itself says they hold.

Run by :func:`tests.delta.conftest.spark_tables` as ``python spark_writer.py OUT JARS`` in the
cached pyspark venv whose Spark line delta-spark supports (this file imports nothing of
metaindex). Each table goes to ``OUT/<name>``; ``OUT/oracle.json`` holds, per table, every
version's files as delta-spark's own log replay gives them
(``DeltaLog.getSnapshotAt(v).allFiles``), the operation of each commit (``DESCRIBE HISTORY``),
and the version delta-spark's time travel picks for probe timestamps
(``DeltaHistoryManager.getActiveCommitAtTime``, as ``timestampAsOf`` resolves it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
METAINDEX_EXTENSION = "io.metaindex.spark.MetaIndexExtensions"


def delta_session(jars: str, app: str, extensions=(DELTA_EXTENSION,), conf=None):
    """A ``local[2]`` session with delta-spark, the one builder of the Delta tests and of
    ``bench/delta.py`` (they import it from this file, which needs nothing but pyspark):
    ``spark.sql.extensions`` lists ``extensions`` in that order, ``DeltaCatalog`` is the
    session catalog, shuffles are small, the time zone UTC; ``conf`` adds or overrides
    settings (``{key: value}``)."""
    from pyspark.sql import SparkSession

    settings = {
        "spark.jars": jars,
        "spark.sql.extensions": ",".join(extensions),
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "1g",
        **(conf or {}),
    }
    builder = SparkSession.builder.master("local[2]").appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def session(jars: str):
    return delta_session(
        jars,
        "metaindex-delta-writer",
        conf={
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
            "spark.databricks.delta.vacuum.parallelDelete.enabled": "false",
            "spark.databricks.delta.retentionDurationCheck.enabled": "false",
            "spark.databricks.delta.vacuum.logging.enabled": "true",
        },
    )


class Writer:
    def __init__(self, spark, out: str):
        self.spark, self.out = spark, out
        self.oracle: dict = {}

    def path(self, name: str) -> str:
        return os.path.join(self.out, name)

    def sql(self, statement: str, name: str):
        return self.spark.sql(statement.replace("$T", f"delta.`{self.path(name)}`"))

    def record(self, name: str, probes: bool = False) -> None:
        """Everything delta-spark says about table ``name`` at each of its versions."""
        spark = self.spark
        jvm = spark._jvm
        from pyspark.sql import DataFrame

        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            spark._jsparkSession, self.path(name)
        )
        none = jvm.scala.Option.empty()
        latest = log.update(False, none, none).version()
        versions = {}
        for v in range(latest + 1):
            try:
                snap = log.getSnapshotAt(v, none, none, False)
            except Exception as exc:  # noqa: BLE001 - recorded: the test expects ours to fail too
                versions[v] = {"error": type(exc).__name__ + ": " + str(exc)[:300]}
                continue
            rows = DataFrame(snap.allFiles().toDF(), spark).toJSON().collect()
            versions[v] = {"files": [json.loads(r) for r in rows]}
        history = {
            row["version"]: row["operation"]
            for row in self.sql("DESCRIBE HISTORY $T", name)
            .select("version", "operation")
            .collect()
        }
        entry = {
            "latest": latest,
            "versions": versions,
            "operations": history,
            "log": sorted(os.listdir(os.path.join(self.path(name), "_delta_log"))),
        }
        if probes:
            entry["timestamps"] = self.time_travel(log, name, latest)
        self.oracle[name] = entry

    def time_travel(self, log, name: str, latest: int) -> list:
        jvm = self.spark._jvm
        stamps = set()
        log_dir = os.path.join(self.path(name), "_delta_log")
        for v in range(latest + 1):
            commit = os.path.join(log_dir, f"{v:020d}.json")
            if not os.path.exists(commit):
                continue
            with open(commit) as f:
                first = json.loads(f.readline())
            ict = first.get("commitInfo", {}).get("inCommitTimestamp")
            t = ict if ict is not None else os.stat(commit).st_mtime_ns // 1_000_000
            stamps.update((t - 1, t, t + 1))
        stamps.update((min(stamps) - 60_000, max(stamps) + 60_000))
        out = []
        history = log.history()
        for t in sorted(stamps):
            try:
                commit = history.getActiveCommitAtTime(
                    jvm.java.sql.Timestamp(t), jvm.scala.Option.empty(), False, True, False
                )
                out.append([t, commit.version()])
            except Exception as exc:  # noqa: BLE001 - an out-of-range timestamp
                out.append([t, "error: " + str(exc).splitlines()[0][:200]])
        return out


def rows(spark, start: int, n: int, parts: int = 2):
    return spark.range(start, start + n, 1, parts).selectExpr(
        "id", "cast(id % 4 as string) as s", "id * 1.5 as x"
    )


def plain(w: Writer) -> None:
    """Appends, DELETE/UPDATE/MERGE rewrites, OPTIMIZE, ZORDER, VACUUM; classic checkpoints."""
    spark, name = w.spark, "plain"
    rows(spark, 0, 20).write.format("delta").option("delta.checkpointInterval", "3").save(
        w.path(name)
    )
    for start in (20, 40):
        rows(spark, start, 10).write.format("delta").mode("append").save(w.path(name))
    w.sql("DELETE FROM $T WHERE id % 7 = 0", name)
    w.sql("UPDATE $T SET s = 'u' WHERE id < 5", name)
    rows(spark, 45, 20).createOrReplaceTempView("src")
    w.sql(
        "MERGE INTO $T t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET x = -1 "
        "WHEN NOT MATCHED THEN INSERT *",
        name,
    )
    w.sql("OPTIMIZE $T", name)
    rows(spark, 100, 10, 3).write.format("delta").mode("append").save(w.path(name))
    w.sql("OPTIMIZE $T ZORDER BY (x)", name)
    w.sql("VACUUM $T RETAIN 0 HOURS", name)
    w.record(name, probes=True)


def partitioned(w: Writer) -> None:
    """Partition values with nulls, dates, timestamps, ints and special characters;
    multi-part checkpoints (checkpoint.partSize)."""
    spark, name = w.spark, "parts"
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "12")
    values = ["a b", "x/y", "c=d", "100%", "é€😀", "co:lon", None, "q'uote"]
    data = [
        (
            i,
            values[i % len(values)],
            None if i % 5 == 0 else f"2024-0{1 + i % 3}-1{i % 9}",
            None if i % 6 == 0 else i % 3,
            f"2024-05-0{1 + i % 2} 1{i % 3}:30:00.12345",
        )
        for i in range(24)
    ]
    df = spark.createDataFrame(data, "id long, p string, d string, n int, t string").selectExpr(
        "id", "p", "cast(d as date) as d", "n", "cast(t as timestamp) as t"
    )
    df.write.format("delta").partitionBy("p", "d", "n", "t").option(
        "delta.checkpointInterval", "2"
    ).save(w.path(name))
    df.where("id < 6").selectExpr("id + 100 as id", "p", "d", "n", "t").write.format("delta").mode(
        "append"
    ).save(w.path(name))
    w.sql("DELETE FROM $T WHERE p = 'x/y'", name)
    w.sql("UPDATE $T SET id = id + 1000 WHERE n = 1", name)
    w.sql("DELETE FROM $T WHERE d IS NULL", name)
    spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
    w.record(name)


def column_mapping(w: Writer, mode: str) -> None:
    """Column mapping by name or id: renames and drops, nested fields, a partition column."""
    name = f"cm_{mode}"
    w.sql(
        f"CREATE TABLE $T (id BIGINT, name STRING, st STRUCT<a: INT, b: STRING>, "
        f"part STRING) USING delta PARTITIONED BY (part) TBLPROPERTIES "
        f"('delta.columnMapping.mode' = '{mode}', 'delta.checkpointInterval' = '3')",
        name,
    )
    w.sql(
        "INSERT INTO $T VALUES (1, 'one', named_struct('a', 1, 'b', 'x'), 'p1'), "
        "(2, 'two', named_struct('a', 2, 'b', 'y'), 'p2')",
        name,
    )
    w.sql("ALTER TABLE $T RENAME COLUMN name TO full_name", name)
    w.sql("ALTER TABLE $T RENAME COLUMN st.a TO aa", name)
    w.sql("INSERT INTO $T VALUES (3, 'three', named_struct('aa', 3, 'b', 'z'), 'p1')", name)
    w.sql("ALTER TABLE $T DROP COLUMN full_name", name)
    w.sql("ALTER TABLE $T RENAME COLUMN part TO region", name)
    w.sql("INSERT INTO $T VALUES (4, named_struct('aa', 4, 'b', 'w'), 'p3')", name)
    if mode == "name":
        w.sql("DELETE FROM $T WHERE id = 1", name)
    w.record(name)
    w.oracle[name]["rows"] = [
        json.loads(r) for r in w.spark.read.format("delta").load(w.path(name)).toJSON().collect()
    ]


def deletion_vectors(w: Writer) -> None:
    """DELETE / UPDATE / MERGE with deletion vectors, a vector replaced, then purged."""
    spark, name = w.spark, "dv"
    rows(spark, 0, 40).write.format("delta").option("delta.enableDeletionVectors", "true").save(
        w.path(name)
    )
    w.sql("DELETE FROM $T WHERE id % 5 = 0", name)
    w.sql("DELETE FROM $T WHERE id % 5 = 1", name)
    w.sql("UPDATE $T SET s = 'u' WHERE id = 7", name)
    rows(spark, 30, 20).createOrReplaceTempView("src")
    w.sql(
        "MERGE INTO $T t USING src ON t.id = src.id WHEN MATCHED AND t.id % 2 = 0 THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT *",
        name,
    )
    w.sql("REORG TABLE $T APPLY (PURGE)", name)
    w.record(name)


def v2_checkpoints(w: Writer) -> None:
    """v2 checkpoints (checkpointPolicy v2): JSON and Parquet top-level files, sidecars."""
    spark, name = w.spark, "v2cp"
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "4")
    rows(spark, 0, 10).write.format("delta").option("delta.checkpointPolicy", "v2").option(
        "delta.checkpointInterval", "2"
    ).save(w.path(name))
    for i, fmt in enumerate(("json", "json", "parquet", "parquet")):
        spark.conf.set("spark.databricks.delta.checkpointV2.topLevelFileFormat", fmt)
        rows(spark, 10 * (i + 1), 10).write.format("delta").mode("append").save(w.path(name))
    w.sql("DELETE FROM $T WHERE id < 15", name)
    spark.conf.unset("spark.databricks.delta.checkpointV2.topLevelFileFormat")
    spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
    w.record(name)


def evolution(w: Writer) -> None:
    """mergeSchema appends, type widening (int -> bigint), timestamp_ntz."""
    spark, name = w.spark, "evolve"
    spark.range(0, 6, 1, 2).selectExpr("cast(id as int) as id", "'a' as a").write.format(
        "delta"
    ).option("delta.enableTypeWidening", "true").save(w.path(name))
    spark.range(6, 12, 1, 2).selectExpr(
        "cast(id as int) as id", "'b' as a", "id * 2 as b"
    ).write.format("delta").mode("append").option("mergeSchema", "true").save(w.path(name))
    w.sql("ALTER TABLE $T ALTER COLUMN id TYPE BIGINT", name)
    w.sql("ALTER TABLE $T SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')", name)
    spark.range(1 << 40, (1 << 40) + 4, 1, 2).selectExpr(
        "id", "'c' as a", "id as b", "timestamp_ntz'2024-01-02 03:04:05' as ntz"
    ).write.format("delta").mode("append").option("mergeSchema", "true").save(w.path(name))
    w.record(name)


def in_commit_timestamps(w: Writer) -> None:
    """Many small commits, in-commit timestamps, time travel by timestamp."""
    spark, name = w.spark, "ict"
    rows(spark, 0, 4, 1).write.format("delta").option(
        "delta.enableInCommitTimestamps", "true"
    ).option("delta.checkpointInterval", "4").save(w.path(name))
    for i in range(1, 5):
        time.sleep(0.05)
        rows(spark, 10 * i, 3, 1).write.format("delta").mode("append").save(w.path(name))
    w.record(name, probes=True)


def many_versions(w: Writer) -> None:
    """Commits whose file times go backwards (Delta makes them increasing for time travel)."""
    spark, name = w.spark, "history"
    rows(spark, 0, 4, 1).write.format("delta").option("delta.checkpointInterval", "5").save(
        w.path(name)
    )
    for i in range(1, 6):
        rows(spark, 10 * i, 3, 1).write.format("delta").mode("append").save(w.path(name))
    log_dir = os.path.join(w.path(name), "_delta_log")
    t2 = os.stat(os.path.join(log_dir, f"{2:020d}.json")).st_mtime
    for v in (3, 4):  # older than commit 2 on disk
        os.utime(os.path.join(log_dir, f"{v:020d}.json"), (t2 - 100, t2 - 100))
    w.record(name, probes=True)


STEPS = {
    "plain": plain,
    "parts": partitioned,
    "cm_name": lambda w: column_mapping(w, "name"),
    "cm_id": lambda w: column_mapping(w, "id"),
    "dv": deletion_vectors,
    "v2cp": v2_checkpoints,
    "evolve": evolution,
    "ict": in_commit_timestamps,
    "history": many_versions,
}


def main() -> None:
    out, jars, names = sys.argv[1], sys.argv[2], sys.argv[3:] or list(STEPS)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    spark = session(jars)
    spark.sparkContext.setLogLevel("ERROR")
    w = Writer(spark, out)
    timings = {}
    for name in names:
        started = time.time()
        STEPS[name](w)
        timings[name] = round(time.time() - started, 1)
        w.oracle["_meta"] = {"spark": spark.version, "timings": timings}
        with open(os.path.join(out, "oracle.json"), "w") as f:  # after each table
            json.dump(w.oracle, f)
    spark.stop()


if __name__ == "__main__":
    main()
