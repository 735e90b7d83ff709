"""metaindex.xskipper on the shared local[2] session: xskipper's DataFrame layouts for build,
refresh, describe, list and stats (with the values), skipping on and off giving the same rows,
metadata locations from the conf, setParams and database properties, encryption (keyMetadata,
plaintext indexes, footer modes), bloom filter argument forms, and a user-defined index kind
registered through Registration and used by queries."""

from __future__ import annotations

import datetime
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import MetaIndexError, SchemaError
from metaindex.xskipper import Registration, Xskipper
from tests.spark.conftest import write_demo_keys

pytestmark = pytest.mark.spark

MD = "io.xskipper.parquet.mdlocation"
MD_TYPE = "io.xskipper.parquet.mdlocation.type"
ROWS = [
    ("2017-07-07", 20.0, "Tel-Aviv", "a"),
    ("2017-07-08", 30.0, "Jerusalem", "b"),
    ("2017-07-09", 25.0, "Haifa", "c"),
]


@pytest.fixture
def xs(spark):
    """Resets the xskipper face (process-wide conf, stats, hook) after each test."""
    yield spark
    Xskipper.reset(spark)
    spark.conf.unset("metaindex.encryption.kms")


def _dataset(root, rows=ROWS):
    """One Parquet file per row under dt=<date>/ (as xskipper's partitionBy("dt"))."""
    for dt, temp, city, vid in rows:
        part = root / f"dt={dt}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.table({"temp": pa.array([temp]), "city": pa.array([city]), "vid": pa.array([vid])}),
            part / "part-0.parquet",
        )
    return str(root)


def _rows(df):
    return [tuple(r) for r in df.collect()]


def test_build_describe_refresh_stats_and_list_layouts(xs, tmp_path):
    spark = xs
    data = _dataset(tmp_path / "data", ROWS[:2])
    base = str(tmp_path / "metadata")
    Xskipper.setConf(spark, {MD: base, MD_TYPE: "EXPLICIT_BASE_PATH_LOCATION"})
    reader = spark.read.format("parquet")
    x = Xskipper(spark, data)
    assert not x.isIndexed()
    built = (
        x.indexBuilder()
        .addMinMaxIndex("temp")
        .addValueListIndex("city")
        .addBloomFilterIndex("vid")
        .build(reader)
    )
    assert (
        built.schema.simpleString()
        == "struct<status:string,new_entries_added:int,old_entries_removed:int>"
    )
    assert _rows(built) == [("SUCCESS", 2, 0)]
    assert x.isIndexed()
    assert len(os.listdir(base)) == 1, "the index lives under the configured base path"

    described = x.describeIndex(reader)
    assert described.columns[0] == "Data Skipping Index Stats"
    assert described.columns[2] == "Comment"
    rows = _rows(described)
    assert ("Status", "Up to date", "") in rows
    assert ("Total objects indexed", "2", "") in rows
    assert [r[:2] for r in rows[rows.index(("# Index type", "Columns", "Params")) + 1 :]] == [
        ("minmax", "temp"),
        ("valuelist", "city"),
        ("bloomfilter", "vid"),
    ]

    _dataset(tmp_path / "data", ROWS[2:])
    rows = _rows(x.describeIndex(reader))
    assert rows[0][1].startswith("Out of date")
    assert ("Total new/modified objects", "33% of the objects (1 of 3)", "") in rows
    assert _rows(x.refreshIndex(reader)) == [("SUCCESS", 1, 0)]
    assert _rows(x.refreshIndex(reader)) == [("SUCCESS", 0, 0)]

    listed = Xskipper.listIndexes(spark)
    assert listed.columns == ["Dataset", "Index type", "Index columns"]
    listed_rows = _rows(listed)
    assert listed_rows[:2] == [
        ("# Metadatastore Manager parameters", "", ""),
        ("Metadata base path", base, ""),
    ]
    start = [r[0] for r in listed_rows].index(x._index().table_uri)
    assert listed_rows[start : start + 3] == [
        (x._index().table_uri, "minmax", "temp"),
        ("", "valuelist", "city"),
        ("", "bloomfilter", "vid"),
    ]

    assert _rows(Xskipper.getLatestQueryAggregatedStats(spark))[0][0] == "SUCCESS"
    Xskipper.clearStats(spark)
    spark.read.parquet(data).createOrReplaceTempView("xsk_sample")
    query = "select * from xsk_sample where temp < 24"
    Xskipper.disable(spark)
    expected = sorted(_rows(spark.sql(query)))
    Xskipper.enable(spark)
    assert Xskipper.isEnabled(spark)
    assert (
        sorted(_rows(spark.sql(query)))
        == expected
        == [(20.0, "Tel-Aviv", "a", datetime.date(2017, 7, 7))]
    )
    stats = x.getLatestQueryStats()
    assert stats.columns == [
        "status",
        "isSkippable",
        "skipped_Bytes",
        "skipped_Objs",
        "total_Bytes",
        "total_Objs",
    ]
    ((status, skippable, skipped_bytes, skipped, total_bytes, total),) = _rows(stats)
    assert (status, skippable, skipped, total) == ("SUCCESS", True, 2, 3), (
        "min/max rules out the 30.0 and 25.0 files"
    )
    assert 0 < skipped_bytes < total_bytes
    assert _rows(Xskipper.getLatestQueryAggregatedStats(spark)) == _rows(stats)
    Xskipper.clearStats(spark)
    assert _rows(x.getLatestQueryStats()) == [("FAILED", "No Data Was Supplied")]

    x.dropIndex()
    assert not x.isIndexed()
    x.dropIndex()  # nothing to drop: no error, as in xskipper
    with pytest.raises(MetaIndexError, match="Index Not Found"):
        x.refreshIndex(reader)


def test_aggregated_stats_before_any_dataset_is_failed_frame(xs):
    Registration.setActiveMetadataStoreManager(xs, lambda spark, uri, conf: "/elsewhere")
    Xskipper.reset(xs)
    assert (
        Registration.getActiveMetadataStoreManagerType(xs)
        == "io.xskipper.metadatastore.parquet.Parquet$"
    ), "reset forgets the manager choice"
    frame = Xskipper.getLatestQueryAggregatedStats(xs)
    assert frame.columns == ["status", "reason"]
    assert _rows(frame) == [("FAILED", "No Data Was Supplied")]


def test_set_params_overrides_the_process_wide_location(xs, tmp_path):
    spark = xs
    data = _dataset(tmp_path / "data", ROWS[:2])
    Xskipper.setConf(spark, {MD: str(tmp_path / "jvm-wide")})
    x = Xskipper(spark, data)
    x.setParams({MD: str(tmp_path / "mine"), MD_TYPE: "EXPLICIT_LOCATION"})
    x.indexBuilder().addMinMaxIndex("temp").build()
    assert os.listdir(tmp_path / "mine") and not os.path.exists(tmp_path / "jvm-wide")
    assert not Xskipper(spark, data).isIndexed(), "another instance reads the process-wide one"
    assert spark.conf.get("metaindex.store") == str(tmp_path / "jvm-wide")
    Xskipper.unset(spark, MD)
    assert spark.conf.get("metaindex.store", None) is None

    seen = []

    def manager(session, table_uri, conf):
        seen.append((table_uri, conf.get(MD_TYPE)))
        return str(tmp_path / "managed")

    Registration.setActiveMetadataStoreManager(spark, manager)
    managed = Xskipper(spark, data)
    managed.setParams({MD_TYPE: "EXPLICIT_LOCATION"})
    assert managed._index().store_path.startswith(str(tmp_path / "managed"))
    assert seen[-1] == (managed._index().table_uri, "EXPLICIT_LOCATION")


def test_catalog_table_index_lives_at_the_database_property(xs, tmp_path):
    spark = xs
    data = _dataset(tmp_path / "data")
    base = str(tmp_path / "db-metadata")
    spark.sql(
        f"CREATE DATABASE xsk_db LOCATION '{tmp_path / 'db'}' WITH DBPROPERTIES ('{MD}'='{base}')"
    )
    try:
        spark.sql(
            "CREATE TABLE xsk_db.tbl (temp DOUBLE, city STRING, vid STRING, dt STRING) "
            f"USING PARQUET PARTITIONED BY (dt) LOCATION '{data}'"
        )
        spark.sql("ALTER TABLE xsk_db.tbl RECOVER PARTITIONS")
        x = Xskipper(spark, "xsk_db.tbl")
        assert _rows(x.indexBuilder().addMinMaxIndex("temp").build()) == [("SUCCESS", 3, 0)]
        assert len(os.listdir(base)) == 1
        assert _rows(x.describeIndex())[1] == ("Total objects indexed", "3", "")
        assert x.describeIndex().columns[1] == "spark_catalog.xsk_db.tbl"
        Xskipper.enable(spark)
        assert _rows(spark.sql("select count(*) from xsk_db.tbl where temp > 26")) == [(1,)]
        (row,) = _rows(x.getLatestQueryStats())
        assert row[:2] == ("SUCCESS", True) and row[3] == 2
        x.dropIndex()

        other = _dataset(tmp_path / "other")
        Xskipper.setConf(spark, {MD: "xsk_db", MD_TYPE: "HIVE_DB_NAME"})
        assert Xskipper(spark, other)._index().store_path.startswith(base)
        assert spark.conf.get("metaindex.store") == base, "the hook reads the same store"
        spark.sql(f"ALTER TABLE xsk_db.tbl SET TBLPROPERTIES ('{MD}'='{tmp_path / 'tbl-md'}')")
        Xskipper.setConf(spark, {MD: "xsk_db.tbl", MD_TYPE: "HIVE_TABLE_NAME"})
        assert Xskipper(spark, other)._index().store_path.startswith(str(tmp_path / "tbl-md"))
        assert (
            Xskipper(spark, "xsk_db.tbl")._index().store_path.startswith(str(tmp_path / "tbl-md"))
        ), "a table's own property comes first"
    finally:
        spark.sql("DROP DATABASE IF EXISTS xsk_db CASCADE")


def test_encryption_key_metadata_and_plaintext_indexes(xs, tmp_path):
    spark = xs
    data = _dataset(tmp_path / "data")
    keys = tmp_path / "keys.json"
    write_demo_keys(keys, ("k1", "k2"))
    Xskipper.setConf(spark, {MD: str(tmp_path / "md")})
    x = Xskipper(spark, data)
    x.setConf({"io.xskipper.parquet.encryption.footer.key": "k1"})  # an instance call
    with pytest.raises(MetaIndexError, match="metaindex.encryption.kms"):
        x.indexBuilder().addMinMaxIndex("temp", "k2").build()
    spark.conf.set("metaindex.encryption.kms", f"inmemory:{keys}")
    x.indexBuilder().addMinMaxIndex("temp", "k2").addValueListIndex("city").addBloomFilterIndex(
        "vid", "k2"
    ).build()
    snap = x._index().core.snapshot()
    assert {d.cols[0]: d.key_metadata for d in snap.index_defs} == {
        "temp": "k2",
        "city": None,
        "vid": "k2",
    }, "no keyMetadata: plaintext, as in xskipper"
    assert snap.encryption.footer_key == "k1"
    part = next(p for p in (tmp_path / "md").rglob("*.parquet"))
    with pytest.raises((pa.ArrowException, OSError)):  # pyarrow raises either
        pq.read_table(part)  # an encrypted footer: unreadable without keys
    Xskipper.enable(spark)
    spark.read.parquet(data).createOrReplaceTempView("xsk_enc")
    assert _rows(spark.sql("select count(*) from xsk_enc where city = 'Haifa'")) == [(1,)]
    assert _rows(x.getLatestQueryStats())[0][3] == 2, "the plaintext value list skips 2 files"


def test_key_metadata_needs_an_encrypted_store(xs, tmp_path):
    x = Xskipper(xs, _dataset(tmp_path / "data"))
    with pytest.raises(MetaIndexError, match="not encrypted"):
        x.indexBuilder().addMinMaxIndex("temp", "k2").build()


def test_bloom_filter_argument_forms_and_default_fpp(xs, tmp_path):
    spark = xs
    Xskipper.set(spark, "io.xskipper.index.bloom.fpp", "0.2")
    x = Xskipper(spark, _dataset(tmp_path / "data"))
    x.indexBuilder().addBloomFilterIndex("vid", 0.05, 1000).addBloomFilterIndex(
        "city"
    ).addCustomIndex(
        "io.xskipper.index.BloomFilterIndex", ["temp"], {"io.xskipper.index.bloom.fpp": "0.3"}
    ).build()
    fpps = {d.cols[0]: d.params["fpp"] for d in x._index().core.snapshot().index_defs}
    assert fpps == {"vid": 0.05, "city": 0.2, "temp": 0.3}
    with pytest.raises(MetaIndexError, match="fpp"):
        x.indexBuilder().addBloomFilterIndex("vid", 2.0)
    with pytest.raises(MetaIndexError, match="one column"):
        x.indexBuilder().addCustomIndex("io.xskipper.index.MinMaxIndex", ["a", "b"], {})


def test_missing_and_partition_columns_raise(xs, tmp_path):
    x = Xskipper(xs, _dataset(tmp_path / "data"))
    with pytest.raises(SchemaError):
        x.indexBuilder().addMinMaxIndex("nope").build()
    with pytest.raises(SchemaError, match="partition"):
        x.indexBuilder().addMinMaxIndex("dt").build()
    with pytest.raises(MetaIndexError, match="add an index"):
        x.indexBuilder().build()


def test_a_registered_python_index_kind_skips_files(xs, tmp_path):
    """Registration.addIndexFactory with a user's Index subclass, addCustomIndex by name, a
    Spark-task build (the module shipped with addPyFile) and queries that skip with it."""
    spark = xs
    source = os.path.join(os.path.dirname(os.path.dirname(__file__)), "index", "strlen_index.py")
    module_dir = tmp_path / "mods"
    module_dir.mkdir()
    text = open(source).read().replace('name = "strlen"', 'name = "strlen_spark"')
    (module_dir / "xsk_strlen.py").write_text(text)
    sys.path.insert(0, str(module_dir))
    spark.sparkContext.addPyFile(str(module_dir / "xsk_strlen.py"))
    data = _dataset(tmp_path / "data")
    Registration.addIndexFactory(spark, "xsk_strlen:StrLenIndex")
    x = Xskipper(spark, data)
    assert _rows(
        x.indexBuilder()
        .addCustomIndex("xsk_strlen:StrLenIndex", ["city"], {})
        .build(spark.read.format("parquet"))
    ) == [("SUCCESS", 3, 0)]
    rows = _rows(x.describeIndex())
    assert rows[-1][:2] == ("strlen_spark", "city")
    spark.read.parquet(data).createOrReplaceTempView("xsk_len")
    query = "select city from xsk_len where city = 'Eilat' or city = 'Holon'"
    Xskipper.disable(spark)
    assert _rows(spark.sql(query)) == []
    Xskipper.enable(spark)
    assert _rows(spark.sql(query)) == []
    (row,) = _rows(x.getLatestQueryStats())
    assert row[:2] == ("SUCCESS", True) and row[3] == 2, "length 5 keeps only Haifa's file"
    query = "select city from xsk_len where city = 'Jerusalem'"
    Xskipper.clearStats(spark)
    assert _rows(spark.sql(query)) == [("Jerusalem",)]
    assert _rows(x.getLatestQueryStats())[0][3] == 2
    shutil.rmtree(module_dir, ignore_errors=True)
