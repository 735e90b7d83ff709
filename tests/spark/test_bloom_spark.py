"""parquet-java uses the bloom filters we write to skip row groups.

Four row groups of random values whose min/max overlap, so statistics cannot prune; dictionary
encoding off (and the dictionary filter off), so only a bloom filter can rule a group out. An
absent value then reads 0 row groups with ``parquet.filter.bloom.enabled`` and all 4 without; a
present value reads only its own group. Shown twice: through the ``numOutputRows`` metric of
Spark's Parquet scan (the rows of the row groups it decoded), and by asking parquet-java's
``ParquetFileReader`` directly which row groups survive a ``FilterCompat`` predicate. The same
checks on a pyarrow-written file are the sanity reference.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.parquet.reader import ParquetFile
from metaindex.parquet.writer import write_table
from tests.spark import collect_with_scan_metrics

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GROUPS, PER_GROUP = 4, 1000
COLUMNS = ("id", "i32", "d", "key")
PHYSICAL = {"id": "INT64", "i32": "INT32", "d": "DOUBLE", "key": "BYTE_ARRAY"}
WRITERS = ("ours", "pyarrow")


def _table(rng) -> pa.Table:
    n = GROUPS * PER_GROUP
    # |id| >= 2**31, so py4j hands them to Java as java.lang.Long, as longColumn needs
    ids = rng.integers(2**31, 2**63 - 1, n, dtype=np.int64) * rng.choice([-1, 1], n)
    return pa.table(
        {
            "id": ids,
            "i32": rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32),
            "d": rng.standard_normal(n) * 1e6,
            "key": pa.array([f"key-{v & 0xFFFFFFFFFFFF:012x}" for v in ids.tolist()]),
        }
    )


def _absent_candidates(rng, column: str) -> list:
    if column == "id":
        return (rng.integers(2**31, 2**62, 200) * rng.choice([-1, 1], 200)).tolist()
    if column == "i32":
        return rng.integers(-(2**30), 2**30, 200).tolist()
    if column == "d":
        return (rng.standard_normal(200) * 1e5).tolist()
    return [f"key-{v:012x}" for v in rng.integers(2**44, 2**47, 200).tolist()]


def _pick_keys(path: str, table: pa.Table, rng) -> dict:
    """Per column: an absent value inside every group's min/max that no group's bloom filter
    admits, and a present value that only its own group's filter admits (exact expectations)."""
    pf = ParquetFile(path)
    keys = {}
    for column in COLUMNS:
        ptype = PHYSICAL[column]
        blooms = [pf.bloom_filter(g, column) for g in range(GROUPS)]
        groups = [
            table.column(column).slice(g * PER_GROUP, PER_GROUP).to_pylist() for g in range(GROUPS)
        ]
        candidates = [
            v
            for v in _absent_candidates(rng, column)
            if all(min(vs) < v < max(vs) and v not in vs for vs in groups)
        ]
        rejected = [
            v
            for v in candidates
            if not any(b.might_contain([v], physical_type=ptype)[0] for b in blooms)
        ]
        assert rejected, f"{column}: no absent value inside every min/max that every filter rejects"
        own = 2
        alone = [
            v
            for v in groups[own]
            if not any(
                blooms[g].might_contain([v], physical_type=ptype)[0]
                for g in range(GROUPS)
                if g != own
            )
        ]
        assert alone, f"{column}: every value of group {own} is a false positive elsewhere"
        keys[column] = {"absent": rejected[0], "present": alone[0]}
    return keys


@pytest.fixture(scope="module")
def bloom_files(tmp_path_factory):
    """{writer: (path, keys)}: the same table written by us and by pyarrow."""
    rng = np.random.default_rng(20240601)
    table = _table(rng)
    options = {c: {"ndv": PER_GROUP, "fpp": 0.01} for c in COLUMNS}
    base = tmp_path_factory.mktemp("bloom")
    files = {}
    for writer in WRITERS:
        path = str(base / f"{writer}.parquet")
        write = write_table if writer == "ours" else pq.write_table
        write(
            table,
            path,
            row_group_size=PER_GROUP,
            use_dictionary=False,
            bloom_filter_options=options,
        )
        assert ParquetFile(path).num_row_groups == GROUPS
        files[writer] = (path, _pick_keys(path, table, np.random.default_rng(7)))
    return files


def _scan(spark, path: str, column: str, value, bloom: bool):
    from pyspark.sql import functions as F

    df = (
        spark.read.option("parquet.filter.bloom.enabled", str(bloom).lower())
        .option("parquet.filter.dictionary.enabled", "false")
        .parquet(path)
        .filter(F.col(column) == F.lit(value))
    )
    rows, metrics = collect_with_scan_metrics(df)
    return len(rows), metrics["numOutputRows"]


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("writer", WRITERS)
def test_spark_skips_row_groups_on_bloom_filters(spark, bloom_files, writer, column):
    path, keys = bloom_files[writer]
    absent, present = keys[column]["absent"], keys[column]["present"]
    everything = GROUPS * PER_GROUP

    rows, decoded = _scan(spark, path, column, absent, bloom=True)
    assert (rows, decoded) == (0, 0), (
        f"{writer} {column}={absent!r}: with bloom filtering on, parquet-java should skip all "
        f"{GROUPS} row groups (no filter admits the value); Spark decoded {decoded} rows"
    )

    rows, decoded = _scan(spark, path, column, absent, bloom=False)
    assert (rows, decoded) == (0, everything), (
        f"{writer} {column}={absent!r}: with bloom filtering off, min/max cannot prune, so all "
        f"{everything} rows should be decoded, not {decoded}"
    )

    rows, decoded = _scan(spark, path, column, present, bloom=True)
    assert rows >= 1 and decoded == PER_GROUP, (
        f"{writer} {column}={present!r}: a present value should be found ({rows} rows) reading "
        f"only its own row group ({PER_GROUP} rows), not {decoded}"
    )


def _parquet_java_row_groups(spark, path: str, column: str, value, bloom: bool) -> int:
    """How many row groups parquet-java's RowGroupFilter keeps for ``column == value``."""
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    api = jvm.org.apache.parquet.filter2.predicate.FilterApi
    if column == "key":
        predicate = api.eq(
            api.binaryColumn(column), jvm.org.apache.parquet.io.api.Binary.fromString(value)
        )
    else:
        make = {"id": api.longColumn, "i32": api.intColumn, "d": api.doubleColumn}[column]
        predicate = api.eq(make(column), value)
    options = (
        jvm.org.apache.parquet.HadoopReadOptions.builder(conf)
        .withRecordFilter(jvm.org.apache.parquet.filter2.compat.FilterCompat.get(predicate))
        .useStatsFilter(True)
        .useDictionaryFilter(False)
        .useColumnIndexFilter(False)
        .useBloomFilter(bloom)
        .build()
    )
    source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
        jvm.org.apache.hadoop.fs.Path(path), conf
    )
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source, options)
    try:
        assert reader.getFooter().getBlocks().size() == GROUPS
        return reader.getRowGroups().size()
    finally:
        reader.close()


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("writer", WRITERS)
def test_parquet_java_row_group_filter_uses_bloom_filters(spark, bloom_files, writer, column):
    path, keys = bloom_files[writer]
    absent, present = keys[column]["absent"], keys[column]["present"]
    kept = _parquet_java_row_groups(spark, path, column, absent, bloom=True)
    assert kept == 0, (
        f"{writer} {column}={absent!r}: bloom filters should drop all groups, kept {kept}"
    )
    kept = _parquet_java_row_groups(spark, path, column, absent, bloom=False)
    assert kept == GROUPS, (
        f"{writer} {column}: statistics alone should keep all {GROUPS}, kept {kept}"
    )
    kept = _parquet_java_row_groups(spark, path, column, present, bloom=True)
    assert kept == 1, (
        f"{writer} {column}={present!r}: only the value's own group should stay, kept {kept}"
    )
