"""Runs the real xskipper in a pyspark 3.5 process (not imported by the tests: started by
``tests/xskipper/realxskipper.py`` with the cached venv's python).

Reads a JSON job from argv[1]; for each scenario: writes the dataset with Spark in the
scenario's ``format`` (Parquet unless it names ``csv``, ``json`` or ``orc``, with its reader
``options`` and DDL ``schema``), builds the xskipper indexes through xskipper's JVM API (the
same calls its Python package makes: ``build(reader)`` with that format's reader), and for
each query records what xskipper did with skipping on (its skipped/total object counts, the
rows) and what is true with skipping off (the rows, the files holding a matching row). Writes
the JSON result to argv[2]. The xskipper part imports nothing of metaindex.

A job's ``metaindex`` scenario (optional) then runs metaindex itself on this Spark 3.5
session (imported from the source tree on ``PYTHONPATH``): it writes a table in a text format,
builds a min/max, value-list and bloom index with ``MetaIndex(spark, path, format=...,
options=...)`` (Spark's reader, in Spark 3.5's Python workers), and per query records the
rows with skipping on (``enable``) and off, Spark's files-read metric and the scan's stats.
"""

import datetime
import json
import math
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def rows_of(df):
    out = []
    for r in df.collect():
        row = []
        for v in r:
            if isinstance(v, float) and math.isnan(v):
                v = "NaN"
            elif isinstance(v, (datetime.date, datetime.datetime)):
                v = v.isoformat()
            row.append(v)
        out.append(row)
    return sorted(out, key=repr)


def dataset(spark, n_files, rows_per_file):
    rows = []
    for f in range(n_files):
        for k in range(rows_per_file):
            i = f * 100 + k
            rows.append(
                (
                    f,
                    None if k == 3 else i,
                    i * 1000 + 7,
                    (math.nan if (f == 2 and k == 1) else (-0.0 if (f == 1 and k == 2) else i / 7)),
                    None
                    if (f == 3 and k == 0)
                    else ("" if (f == 4 and k == 0) else f"v{f}_{k % 3}"),
                    datetime.date(2020, 1, 1) + datetime.timedelta(days=f * 10 + k),
                    datetime.datetime(2021, 3, 1, 0, 0) + datetime.timedelta(hours=f * 30 + k),
                )
            )
    schema = "f int, i int, l long, d double, s string, dt date, ts timestamp"
    return spark.createDataFrame(rows, schema)


def reader(spark, sc):
    """The scenario's ``DataFrameReader``: its format, reader options and schema."""
    out = spark.read.format(sc.get("format", "parquet")).options(**sc.get("options", {}))
    return out.schema(sc["schema"]) if sc.get("schema") else out


def main():
    job = json.load(open(sys.argv[1]))
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("xskipper-driver")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", ",".join(job["jars"]))
    )
    for k, v in job.get("hadoop", {}).items():
        builder = builder.config(f"spark.hadoop.{k}", v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm, jss = spark._jvm, spark._jsparkSession
    X = jvm.io.xskipper.Xskipper
    results = []
    for sc in job["scenarios"]:
        started = time.monotonic()
        df = dataset(spark, job["files"], job["rows_per_file"])
        # one file per value of f, in one job: a range partitioning on f's equally frequent
        # values gives each its own task (the tests check the file count)
        part = df.repartitionByRange(job["files"], "f").sortWithinPartitions("i").write
        if sc.get("partition_by"):
            part = part.partitionBy(sc["partition_by"])
        part.format(sc.get("format", "parquet")).options(**sc.get("options", {})).save(sc["table"])
        conf = {
            "io.xskipper.parquet.mdlocation": sc["md_base"],
            "io.xskipper.parquet.mdlocation.type": "EXPLICIT_BASE_PATH_LOCATION",
        }
        conf.update(sc.get("conf", {}))
        X.setConf(_jmap(spark, conf))
        xs = jvm.io.xskipper.Xskipper(
            jss, sc["table"], "io.xskipper.metadatastore.parquet.ParquetMetadataStoreManager"
        )
        builder = jvm.io.xskipper.index.execution.IndexBuilder(jss, sc["table"], xs)
        for kind, col, key in sc["indexes"]:
            method = getattr(
                builder,
                {
                    "minmax": "addMinMaxIndex",
                    "valuelist": "addValueListIndex",
                    "bloom": "addBloomFilterIndex",
                }[kind],
            )
            method(col, key) if key else method(col)
        builder.build(reader(spark, sc)._jreader)
        md_path = jvm.io.xskipper.metadatastore.parquet.ParquetMetadataPath.getMetadataPath(
            sc["md_base"], xs.tableIdentifier()
        ).toString()
        queries = []
        for q in sc.get("queries") or job["queries"]:
            X.enable(jss)
            X.clearStats()
            on = rows_of(reader(spark, sc).load(sc["table"]).where(q))
            stats = [r.asDict() for r in _df(spark, X.getLatestQueryAggregatedStats(jss)).collect()]
            X.disable(jss)
            named = (
                reader(spark, sc)
                .load(sc["table"])
                .where(q)
                .select(F.input_file_name().alias("__file"), "*")
            )
            both = rows_of(named)
            off = sorted((r[1:] for r in both), key=repr)
            matching = sorted({r[0] for r in both})
            queries.append(
                {
                    "query": q,
                    "rows_on": on,
                    "rows_off": off,
                    "stats": stats,
                    "matching_files": matching,
                }
            )
        X.reset(jss)
        results.append(
            {
                "name": sc["name"],
                "table": sc["table"],
                "md_path": md_path,
                "identifier": xs.tableIdentifier(),
                "schema": [
                    [f.name, f.dataType.simpleString()]
                    for f in reader(spark, sc).load(sc["table"]).schema.fields
                ],
                "queries": queries,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    if job.get("metaindex"):
        try:
            results.append(metaindex_scenario(spark, job["metaindex"], job))
        except Exception:  # noqa: BLE001 - reported to its own test, not to every xskipper one
            import traceback

            results.append({"name": "metaindex", "error": traceback.format_exc()})
    json.dump(results, open(sys.argv[2], "w"), default=str)
    spark.stop()


def metaindex_scenario(spark, sc, job):
    import pyspark

    from metaindex.spark import MetaIndex, disable, enable, last_query_stats
    from metaindex.spark.metrics import files_read

    started = time.monotonic()
    df = dataset(spark, job["files"], job["rows_per_file"])
    df.repartitionByRange(job["files"], "f").sortWithinPartitions("i").write.format(
        sc["format"]
    ).options(**sc["options"]).save(sc["table"])
    options = dict(sc["options"], schema=sc["schema"])
    builder = MetaIndex(
        spark, sc["table"], store=sc["store"], format=sc["format"], options=options
    ).index_builder()
    builder.add_min_max_index("i").add_value_list_index("s").add_bloom_filter_index("l").build()
    queries = []
    for q in sc["queries"]:
        enable(spark)
        on = reader(spark, sc).load(sc["table"]).where(q)
        rows_on = rows_of(on)
        stats = last_query_stats(spark)
        disable(spark)
        queries.append(
            {
                "query": q,
                "rows_on": rows_on,
                "rows_off": rows_of(reader(spark, sc).load(sc["table"]).where(q)),
                "files_read": files_read(on),
                "files_total": stats.files_total,
                "files_skipped": stats.files_skipped,
            }
        )
    return {
        "name": "metaindex",
        "pyspark": pyspark.__version__,
        "queries": queries,
        "seconds": round(time.monotonic() - started, 1),
    }


def _jmap(spark, conf):
    m = spark._jvm.java.util.HashMap()
    for k, v in conf.items():
        m.put(k, v)
    return m


def _df(spark, jdf):
    from pyspark.sql import DataFrame

    return DataFrame(jdf, spark)


if __name__ == "__main__":
    main()
