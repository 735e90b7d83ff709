"""Spark (parquet-java) as the second, independent peer for our Parquet files.

Spark reads a file of ours for every type family, written with data pages v1 and v2, dictionary
on and off, several codecs and encodings, through both of its readers (the vectorized one and
parquet-java's record reader), and sees the source values. Spark's filters pushed into
parquet-java (statistics, page index) give the same answers as an unpushed scan. In the other
direction we read what Spark writes (INT96 / TIMESTAMP_MICROS / TIMESTAMP_MILLIS timestamps, data
page v2 with DELTA encodings, every codec parquet-java has built in, the legacy format's 2-level
lists and FIXED_LEN_BYTE_ARRAY decimals) and equal pyarrow's reading of the same file.

Not covered because Spark cannot read them: TIME columns (UNSUPPORTED_TIME_TYPE) and FLOAT16
(PARQUET_TYPE_ILLEGAL).
"""

from __future__ import annotations

import glob

import pyarrow.parquet as pq
import pytest

from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table
from tests.interop_tables import (
    assert_same_tables,
    assert_same_values,
    family_table,
    write_cases,
)
from tests.spark import collect_with_scan_metrics, sql_conf

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# What Spark 4 makes of each family we write (unsigned widen; isAdjustedToUTC=false is NTZ).
SPARK_TYPES = {
    "i8": "tinyint",
    "i16": "smallint",
    "i32": "int",
    "i64": "bigint",
    "u8": "smallint",
    "u16": "int",
    "u32": "bigint",
    "u64": "decimal(20,0)",
    "f32": "float",
    "f64": "double",
    "str": "string",
    "bin": "binary",
    "fixed": "binary",
    "dec9": "decimal(9,2)",
    "dec18": "decimal(18,4)",
    "dec38": "decimal(38,10)",
    "date": "date",
    "ts_utc": "timestamp",
    "ts_ntz": "timestamp_ntz",
    "bool": "boolean",
    "struct": "struct<a:int,b:string,c:struct<d:double>>",
    "list_i32": "array<int>",
    "list_str": "array<string>",
    "map": "map<string,int>",
    "list_struct": "array<struct<x:bigint,y:string>>",
}

WRITE_CASES = write_cases()
WRITE_CASES["v1-lz4raw-pageindex-crc"] = {
    "compression": "lz4_raw",
    "write_page_index": True,
    "write_page_checksum": True,
}


@pytest.fixture(scope="module")
def source():
    return family_table()


@pytest.mark.parametrize("case", list(WRITE_CASES))
def test_spark_reads_our_file(spark, tmp_path, source, case):
    path = str(tmp_path / f"{case}.parquet")
    # Small row groups and pages: several of each per chunk, so page boundaries are crossed.
    write_table(source, path, row_group_size=50, data_page_size=512, **WRITE_CASES[case])
    for vectorized in ("true", "false"):
        with sql_conf(spark, {"spark.sql.parquet.enableVectorizedReader": vectorized}):
            df = spark.read.parquet(path)
            types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
            assert types == SPARK_TYPES, f"{case}: Spark maps our Parquet types differently"
            assert_same_values(
                df.toArrow(),
                source,
                f"Spark ({'vectorized' if vectorized == 'true' else 'parquet-java'}"
                f" reader) reading our {case} file",
            )


FILTERS = [
    "i64 = 0",
    "i32 > 100",
    "i8 < 0",
    "u32 > 2147483648",
    "u8 >= 200",
    "str = 'héllo wörld'",
    "str > 'x'",
    "bin = X'00'",
    "dec18 < 0",
    "dec38 > 1",
    "date < DATE'1970-01-01'",
    "ts_utc >= TIMESTAMP'2024-01-03 00:00:00'",
    "ts_ntz < TIMESTAMP_NTZ'1960-07-01 00:00:00'",
    "f64 > 1.0",
    "f64 = 0.0",
    "f32 < 0",
    "bool",
    "id BETWEEN 100 AND 140",
    "id IN (5, 999)",
]


def test_spark_pushdown_on_our_statistics_and_page_index(spark, tmp_path, source):
    """Row groups and pages parquet-java skips on our statistics / page index hold no match."""
    import pyarrow as pa

    table = source.append_column("id", pa.array(range(source.num_rows), pa.int64()))
    path = str(tmp_path / "stats.parquet")
    write_table(table, path, row_group_size=20, data_page_size=256, write_page_index=True)
    with sql_conf(spark, {"spark.sql.parquet.filterPushdown": "false"}):
        unpushed = (
            spark.read.parquet(path)
            .selectExpr(*[f"count_if({p}) AS c{i}" for i, p in enumerate(FILTERS)])
            .first()
        )
    pruned_any = False
    for i, predicate in enumerate(FILTERS):
        rows, metrics = collect_with_scan_metrics(spark.read.parquet(path).filter(predicate))
        got = len(rows)
        assert got == unpushed[i], (
            f"{predicate}: {got} rows with filters pushed into parquet-java, {unpushed[i]} "
            "without: our statistics or page index excluded a match"
        )
        pruned_any |= metrics["numOutputRows"] < table.num_rows
    assert pruned_any, "parquet-java should prune some row group on the sorted id column"


# ----------------------------------------------------------------- files Spark writes

# name -> (Spark SQL confs, DataFrameWriter options, columns)
_NO_MAP = "no_map"
SPARK_FLAVORS = {
    "int96": ({"spark.sql.parquet.outputTimestampType": "INT96"}, {}, None),
    "micros": ({"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}, {}, None),
    "millis": ({"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS"}, {}, None),
    "v2-dict-zstd": ({}, {"parquet.writer.version": "v2", "compression": "zstd"}, None),
    "v2-delta": (
        {},
        {
            "parquet.writer.version": "v2",
            "parquet.enable.dictionary": "false",
            "compression": "uncompressed",
        },
        None,
    ),
    "plain-gzip": ({}, {"parquet.enable.dictionary": "false", "compression": "gzip"}, None),
    "lz4-hadoop": ({}, {"compression": "lz4"}, None),
    "lz4-raw": ({}, {"compression": "lz4_raw"}, None),
    "legacy": ({"spark.sql.parquet.writeLegacyFormat": "true"}, {}, _NO_MAP),
    "legacy-map": ({"spark.sql.parquet.writeLegacyFormat": "true"}, {}, ["map"]),
}


@pytest.fixture(scope="module")
def spark_files(spark, tmp_path_factory):
    """One Parquet file per flavor, written by Spark from the type families."""
    from pyspark.sql import functions as F

    base = tmp_path_factory.mktemp("spark-written")
    # Spark has no unsigned or fixed-size binary types; a list with containsNull=false is the
    # one the legacy format writes as a 2-level `repeated int32 array`.
    src = family_table(exclude=("u8", "u16", "u32", "u64", "fixed"))
    df = (
        spark.createDataFrame(src)
        .withColumn("ts_ntz", F.col("ts_ntz").cast("timestamp_ntz"))
        .withColumn("list_nn", F.expr("slice(array(1, 2, 3, 4), 1, abs(coalesce(i32, 0) % 5))"))
    )
    assert not df.schema["list_nn"].dataType.containsNull
    files = {}
    for name, (conf, options, columns) in SPARK_FLAVORS.items():
        part = (
            df
            if columns is None
            else (df.drop("map") if columns == _NO_MAP else df.select(*columns))
        )
        out = str(base / name)
        with sql_conf(spark, conf):
            part.coalesce(1).write.options(**options).parquet(out)
        (files[name],) = glob.glob(f"{out}/part-*.parquet")
    return files


def _leaf(pf: ParquetFile, path: str):
    """The schema element of the leaf column at dotted ``path``."""
    leaves = [e for e in pf.footer.schema if not e.num_children]
    return leaves[pf.column_paths.index(path)]


def _encodings(pf: ParquetFile, path: str) -> set:
    index = pf.column_paths.index(path)
    return {e for rg in pf.footer.row_groups for e in rg.columns[index].meta_data.encodings}


def _check_layout(name: str, pf: ParquetFile) -> None:
    """The file really has the layout the flavor is meant to exercise."""
    ts = _leaf(pf, "ts_utc") if "ts_utc" in pf.column_paths else None
    if name == "int96":
        assert ts.type == fmt.Type.INT96, "Spark should write INT96 timestamps"
    if name in ("micros", "millis"):
        unit = ts.logicalType.TIMESTAMP.unit
        assert ts.type == fmt.Type.INT64 and (unit.MICROS if name == "micros" else unit.MILLIS)
    if name.startswith(("int96", "micros", "millis", "v2", "plain", "lz4")):
        assert _leaf(pf, "dec9").type == fmt.Type.INT32, "Spark writes small decimals as INT32"
        assert _leaf(pf, "dec18").type == fmt.Type.INT64
    if name == "v2-delta":
        assert fmt.Encoding.DELTA_BINARY_PACKED in _encodings(pf, "i64"), (
            "parquet-java v2 without a dictionary should write DELTA_BINARY_PACKED integers"
        )
        assert fmt.Encoding.DELTA_BYTE_ARRAY in _encodings(pf, "str"), (
            "parquet-java v2 without a dictionary should write DELTA_BYTE_ARRAY strings"
        )
    if name == "legacy":
        assert _leaf(pf, "dec9").type == fmt.Type.FIXED_LEN_BYTE_ARRAY
        assert "list_nn.array" in pf.column_paths, "legacy 2-level list: repeated int32 array"
        assert _leaf(pf, "list_nn.array").repetition_type == fmt.FieldRepetitionType.REPEATED
        assert "list_i32.bag.array" in pf.column_paths, "legacy 3-level list: bag / array"


@pytest.mark.parametrize("name", SPARK_FLAVORS)
def test_we_read_what_spark_writes(spark_files, name):
    path = spark_files[name]
    referee = pq.read_table(path)
    with ParquetFile(path) as pf:
        _check_layout(name, pf)
    assert_same_tables(read_table(path), referee, f"our read of Spark's {name} file vs pyarrow's")
