"""Spark reads an ``s3a://`` table from S3 (moto's server on 127.0.0.1) and skips, with the
index store on S3 too, configured by one thing: the session's ``fs.s3a.*`` conf.

The session runs in its own process (a JVM with hadoop-aws and the AWS SDK bundle on its class
path, fetched from Maven Central into the test cache by :func:`tests.toolcache.s3a_jars`, for
the Hadoop version pyspark bundles) and has no AWS environment variables: the endpoint,
path-style access, keys and region are ``spark.hadoop.fs.s3a.*`` settings only, which Spark's
S3A connector reads and metaindex reads too — in the driver, in the Spark tasks that build the
index, and in the pruning process the JVM extension asks. Spark writes the table (20 files of
20 ids); the index is built as Spark tasks; queries run with skipping off and on, first through
the conf-only extension (pruning process), then through ``enable(spark)`` (the driver): the
rows are equal and Spark's own "number of files read" drops to what the index keeps. Then
objects change (one added by Spark, one overwritten in place, one deleted), queries stay
correct before the refresh, and after a refresh (Spark tasks again) they skip again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import io, json, sys
    import boto3
    import pyarrow as pa, pyarrow.parquet as pq
    from pyspark.sql import SparkSession
    from metaindex.spark import jar_path, enable, last_query_stats
    from metaindex.spark.api import MetaIndex
    from metaindex.spark.metrics import files_read

    endpoint, key, secret, data, meta, classpath = sys.argv[1:7]
    table, store = f"s3a://{data}/t", f"s3a://{meta}/idx"
    spark = (SparkSession.builder.master("local[2]")
             .config("spark.driver.extraClassPath", classpath)
             .config("spark.jars", jar_path())
             .config("spark.sql.extensions", "io.metaindex.spark.MetaIndexExtensions")
             .config("spark.hadoop.fs.s3a.endpoint", endpoint)
             .config("spark.hadoop.fs.s3a.path.style.access", "true")
             .config("spark.hadoop.fs.s3a.access.key", key)
             .config("spark.hadoop.fs.s3a.secret.key", secret)
             .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
             .config("spark.hadoop.fs.s3a.aws.credentials.provider",
                     "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
             # Hadoop 3.5's default stream (the analytics accelerator) caches an object's
             # ETag across queries and fails the read of a file overwritten in place (412)
             .config("spark.hadoop.fs.s3a.input.stream.type", "classic")
             .config("spark.metaindex.pruned.timeout", "60s")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("metaindex.store", store)
    out = {}

    def query(where, on):
        spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
        df = spark.read.parquet(table).where(where)
        rows = sorted(r.id for r in df.collect())
        return rows, files_read(df)

    def compare(name, where):
        off_rows, off_files = query(where, False)
        on_rows, on_files = query(where, True)
        out[name] = {"equal": on_rows == off_rows, "rows": len(on_rows),
                     "on": on_files, "off": off_files}

    # Spark writes the table: 20 files, file k holds ids 20k .. 20k+19
    spark.range(0, 400, numPartitions=20).write.parquet(table)
    mi = MetaIndex(spark, table)
    built = mi.index_builder().add_min_max_index("id").build()
    out["build"] = [built.status, built.entries_added]
    out["store"] = mi.store_path
    out["kept_core"] = len(mi.core.prune("id < 50").kept)
    compare("extension", "id < 50")         # the pruning process opens the S3 store
    stats = last_query_stats(spark)
    out["extension_stats"] = None if stats is None else [stats.files_total, stats.files_skipped]
    enable(spark)
    compare("driver", "id < 50")            # the driver's callback opens it
    compare("driver_range", "id BETWEEN 210 AND 229")

    # objects change: one added by Spark, one overwritten in place, one deleted
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                      aws_secret_access_key=secret, region_name="us-east-1")
    names = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=data, Prefix="t/")["Contents"]
                   if o["Key"].endswith(".parquet"))
    spark.range(1000, 1020, numPartitions=1).write.mode("append").parquet(table)
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(range(2000, 2010), pa.int64())}), buf)
    s3.put_object(Bucket=data, Key=names[0], Body=buf.getvalue())   # ids 0-19 -> 2000-2009
    s3.delete_object(Bucket=data, Key=names[1])                      # ids 20-39 gone
    compare("stale_low", "id < 50")
    compare("stale_new", "id >= 1000")
    refreshed = mi.refresh()
    out["refresh"] = [refreshed.status, refreshed.entries_added, refreshed.entries_removed]
    compare("fresh_low", "id < 50")
    compare("fresh_new", "id >= 1000")
    out["kept_fresh_new"] = len(mi.core.prune("id >= 1000").kept)
    print(json.dumps(out))
    spark.stop()
""")


@pytest.fixture(scope="module")
def s3a_classpath():
    """hadoop-aws and its dependencies for pyspark's Hadoop (fetched once into the cache)."""
    pytest.importorskip("pyspark")
    from tests.toolcache import s3a_jars

    return os.pathsep.join(s3a_jars())


def test_spark_reads_and_skips_an_s3a_table_configured_by_fs_s3a_conf(
    moto_s3, s3a_classpath, tmp_path
):
    from tests.s3server import ACCESS_KEY, SECRET_KEY

    data, meta = moto_s3.bucket(), moto_s3.bucket()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARK_REMOTE"))}
    env.update(
        PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        AWS_EC2_METADATA_DISABLED="true",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            moto_s3.endpoint,
            ACCESS_KEY,
            SECRET_KEY,
            data,
            meta,
            s3a_classpath,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=str(tmp_path),
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert lines, (
        f"the Spark script printed no result (rc {done.returncode}):\n{done.stderr[-5000:]}"
    )
    out = json.loads(lines[-1])

    assert out["build"] == ["SUCCESS", 20], "20 files indexed by Spark tasks"
    assert out["store"].startswith(f"s3://{meta}/idx/"), "the store is on S3"
    assert out["kept_core"] == 3, "ids < 50 live in files 0, 1 and 2"
    for name in ("extension", "driver"):
        q = out[name]
        assert q["equal"] and q["rows"] == 50, f"{name}: rows as with skipping off: {q}"
        assert q["off"] == 20 and q["on"] == 3, (
            f"{name}: Spark read 3 of 20 files with skipping on: {q}"
        )
    assert out["extension_stats"] == [20, 17], (
        "the pruning process opened the S3 store with the fs.s3a conf and skipped 17"
    )
    assert out["driver_range"]["equal"] and out["driver_range"]["on"] == 2, (
        f"ids 210-229 are in files 10 and 11: {out['driver_range']}"
    )

    low, new = out["stale_low"], out["stale_new"]
    assert low["equal"] and new["equal"], f"changed objects never lose rows: {low} {new}"
    assert low["rows"] == 10 and new["rows"] == 30, "ids 40-49, then 1000-1019 and 2000-2009"
    assert low["on"] == 3, "file 2, the overwritten file 0 (changed) and the new file are read"
    assert new["on"] == 2, "the new file (not indexed) and the overwritten file are read"
    assert out["refresh"] == ["SUCCESS", 2, 2], "added + rewritten indexed; deleted + old dropped"
    low, new = out["fresh_low"], out["fresh_new"]
    assert low["equal"] and new["equal"] and low["rows"] == 10 and new["rows"] == 30
    assert low["on"] == 1, f"after the refresh only file 2 can hold ids < 50: {low}"
    assert new["on"] == out["kept_fresh_new"] == 2 and new["off"] == 20, new
