"""explain(spark, df) on the shared local[2] session: per scan, the filters used and dropped,
the index that answered and its count, without running the query; the counts equal the stats
of an actual run, and Spark's own files-read metric equals total - skipped.

A 40-file table (file k holds temp k*10 .. k*10+9), min/max index on temp, registered and
enabled for the module.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.spark import SkippingNotEnabledError, explain, hook, stats
from metaindex.spark.metrics import files_read

pytestmark = pytest.mark.spark

N = 40


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("explain") / "t"
    root.mkdir()
    for k in range(N):
        pq.write_table(
            pa.table(
                {
                    "temp": pa.array([float(k * 10 + j) for j in range(10)]),
                    "city": pa.array([f"c{k % 4}"] * 10),
                }
            ),
            root / f"f{k:02d}.parquet",
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("temp").build(executor=SerialExecutor())
    hook.register(spark, mi)
    hook.enable(spark)
    yield mi, str(root)
    hook.disable(spark)
    hook.unregister(spark, mi.table_uri)


def test_explain_names_the_dropped_filter_and_the_index_with_the_run_counts(spark, table):
    mi, path = table
    where = "upper(city) = 'C1' AND temp > 300"
    df = spark.read.parquet(path).where(where)
    stats.clear_stats(spark)
    spark.sparkContext.setJobGroup("metaindex-explain", "explain only")
    try:
        (scan,) = explain(spark, df)
        (grouped,) = explain(spark, df.groupBy("city").count())  # adaptive plan, a shuffle
        tracker = spark.sparkContext.statusTracker()
        assert tracker.getJobIdsForGroup("metaindex-explain") == [], "explain runs no job"
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert scan.table == mi.table_uri and scan.version == 1
    assert (grouped.skipped_files, grouped.conjuncts) == (scan.skipped_files, scan.conjuncts)
    # Spark adds "IS NOT NULL" filters: on city (no index) dropped as such
    dropped = {c.reason: c.text for c in scan.conjuncts if not c.used}
    assert dropped.keys() == {"unknown function", "no index on the column"}, scan.conjuncts
    assert "upper" in dropped["unknown function"].lower()
    assert "city" in dropped["no index on the column"]
    used = [c for c in scan.conjuncts if c.used and c.indexes]
    assert [c.indexes for c in used] == [{"minmax(temp)": 30}] * 2, scan.conjuncts  # f00..f29
    assert (scan.total_files, scan.skipped_files, scan.kept_files) == (N, 30, N - 30)
    assert scan.stale_files == 0 and scan.unindexed_files is None
    text = str(scan)
    assert "unknown function" in text and "minmax(temp) rules out 30" in text

    run = spark.read.parquet(path).where(where)  # the same query, run
    rows = run.collect()
    assert len(rows) == 20  # files 33 and 37 (city c1, temp > 300): Spark applies every filter
    ran = stats.last_query_stats(spark)
    assert (ran.files_total, ran.files_skipped) == (scan.total_files, scan.skipped_files)
    assert ran.skipped_by_index == scan.skipped_by_index
    assert files_read(run) == scan.total_files - scan.skipped_files


def test_files_changed_since_the_refresh_are_read_and_counted(spark, table):
    _, path = table
    changed = os.path.join(path, "f00.parquet")
    stat = os.stat(changed)
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    try:
        (scan,) = explain(spark, spark.read.parquet(path).where("temp > 300"))
        assert scan.stale_files == 1 and scan.skipped_files == 29, scan  # f00 is read
        assert "1 file(s) read although the index rules them out" in str(scan)
    finally:
        os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_explain_needs_skipping_enabled(spark, table):
    _, path = table
    hook.disable(spark)
    try:
        with pytest.raises(SkippingNotEnabledError, match="enable"):
            explain(spark, spark.read.parquet(path).where("temp > 1"))
    finally:
        hook.enable(spark)
