"""metaindex.spark.MetaIndex on the shared local[2] session: build / refresh / compact / vacuum /
describe / history / drop / is_indexed and the xskipper aliases on 200-file pyarrow tables, a
partitioned table (partition filters prune through the core), catalog tables (saveAsTable,
partitioned or not; CSV and JSON ones with their OPTIONS skipping through ``spark.table``;
views, Hive text tables and other providers refused), an encrypted store through the
``metaindex.encryption.*`` conf keys, list_indexes, and queries skipping through the index a
MetaIndex registered (until it is dropped). Spark-task builds equal to local-pool ones: see
test_executor_spark.py."""

from __future__ import annotations

import datetime
import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex as CoreMetaIndex
from metaindex.description import DESCRIBE_SCHEMA, Description, History
from metaindex.errors import MetaIndexError, SchemaError, UnsupportedFeatureError
from metaindex.spark import list_indexes
from metaindex.spark.api import MetaIndex
from metaindex.spark.catalog import TableNotFoundError, location_to_path, resolve_table
from tests.spark.conftest import ENCRYPTION_CONF_KEYS

pytestmark = pytest.mark.spark

N_FILES = 200
ROWS = 50


def _file(i: int, rows: int = ROWS) -> pa.Table:
    base = i * rows
    return pa.table(
        {
            "id": pa.array(range(base, base + rows), pa.int64()),
            "temp": pa.array([float((base + r) % 101) for r in range(rows)], pa.float64()),
            "city": pa.array([f"city{i % 20}" for _ in range(rows)], pa.string()),
        }
    )


def _write(root, n_files: int = N_FILES, start: int = 0, partitioned: bool = False) -> None:
    for i in range(start, start + n_files):
        directory = root / f"p={i % 4}" if partitioned else root
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_file(i), directory / f"part-{i:04d}.parquet")


def _kept(mi, where: str) -> list:
    """The kept files, relative to the (local) table root."""
    root = mi.table_uri[len("file://") :]
    return sorted(os.path.relpath(k, root) for k in mi.core.prune(where).kept)


@pytest.fixture
def table(tmp_path):
    root = tmp_path / "events"
    _write(root)
    return root


def test_build_describe_history_on_spark_tasks(spark, table, tmp_path):
    mi = MetaIndex(spark, str(table), store=str(tmp_path / "store"))
    assert not mi.is_indexed()
    result = (
        mi.index_builder()
        .add_min_max_index("id")
        .add_value_list_index("city")
        .add_bloom_filter_index("temp", fpp=0.01)
        .build()
    )
    assert (result.status, result.entries_added, result.entries_removed) == (
        "SUCCESS",
        N_FILES,
        0,
    ), result
    assert mi.is_indexed()
    assert len(_kept(mi, "id BETWEEN 110 AND 140")) == 1, "ids 110..140 sit in file 2 only"
    assert len(_kept(mi, "city = 'city3'")) == N_FILES // 20, "city3 is in every 20th file"

    rows = {r["kind"]: r.asDict() for r in mi.describe().to_spark().collect()}
    assert set(rows) == {"minmax", "valuelist", "bloom"}, rows
    assert rows["bloom"]["column"] == "temp" and json.loads(rows["bloom"]["params"])["fpp"] == 0.01
    for r in rows.values():
        assert r["indexed_files"] == N_FILES and r["up_to_date"] is True, r
        assert r["new_files"] == r["changed_files"] == r["deleted_files"] == 0, r
        assert r["store_bytes"] > 0 and r["key_label"] is None and r["version"] == 1, r
        assert r["damage"] is None, r
    assert mi.describe().counts.indexed_rows == N_FILES * ROWS
    # how well each index skips (metaindex.engine.effectiveness): ids are clustered, each
    # city fills every 20th file, and every file holds about half of the 101 temperatures
    assert rows["minmax"]["point_read_fraction"] <= 2 / N_FILES, rows["minmax"]
    assert rows["minmax"]["verdict"] == "effective"
    assert sorted(rows["minmax"]["range_read_fraction"]) == [0.001, 0.01, 0.1]
    assert rows["valuelist"]["point_read_fraction"] == pytest.approx(1 / 20)
    assert rows["valuelist"]["range_read_fraction"] is None
    assert rows["bloom"]["point_read_fraction"] >= 0.4, rows["bloom"]
    assert not rows["bloom"]["verdict"].startswith("effective"), rows["bloom"]

    history = [r.asDict() for r in mi.history().to_spark().collect()]
    assert [h["operation"] for h in history] == ["create", "build"], history
    assert history[1]["files_added"] == N_FILES
    assert json.loads(history[1]["details"])["files_indexed"] == N_FILES

    with pytest.raises(MetaIndexError, match="already indexed"):
        mi.index_builder().add_min_max_index("id").build()


def test_describe_and_history_have_the_core_shapes(spark, table, tmp_path):
    """One vocabulary on both faces: describe() / history() return the core's typed results;
    the DataFrame is their rendering (to_spark); the old spellings still work, warned."""
    mi = MetaIndex(spark, table, store=tmp_path / "store")
    mi.index_builder().add_min_max_index(column="id").add_value_list_index(column="city").build(
        executor="local"
    )
    described, core = mi.describe(), mi.core.describe()
    assert isinstance(described, Description) and described.table_name is None
    assert (described.indexes, described.counts, described.version) == (
        core.indexes,
        core.counts,
        core.version,
    ), "the Spark face describes what the core does"
    assert [x.column for x in described.indexes] == ["id", "city"]
    frame = described.to_spark()
    rendered = [list(r) for r in frame.collect()]
    for row in rendered:  # Spark gives timestamps back naive, in the local time zone
        row[3] = row[3].astimezone(datetime.timezone.utc)
    assert rendered == [list(row) for row in described.rows()], (
        "the DataFrame renders the Description"
    )
    assert frame.columns == [c.split(" ")[0] for c in DESCRIBE_SCHEMA.split(", ")]
    with pytest.warns(DeprecationWarning, match=r"to_spark\(\)\.collect"):
        assert len(mi.describe().collect()) == 2, "DataFrame methods still answer"
    with pytest.warns(DeprecationWarning, match="describe_dict"):
        assert mi.describe_dict() == described.to_dict()
    assert described.to_dict()["table_name"] is None
    history = mi.history()
    assert isinstance(history, History) and [h.operation for h in history] == [
        h.operation for h in mi.core.history()
    ]
    assert [r["operation"] for r in history.to_spark().collect()] == ["create", "build"]
    assert [r["kind"] for r in mi.describeIndex().collect()] == ["minmax", "valuelist"], (
        "xskipper's describeIndex keeps answering a DataFrame"
    )


def test_refresh_compact_vacuum_drop(spark, table, tmp_path):
    mi = MetaIndex(spark, table, store=tmp_path / "store")
    mi.index_builder().add_min_max_index("id").build(executor="local")
    assert mi.refresh().status == "NO_CHANGE"

    _write(table, n_files=3, start=N_FILES)  # added
    os.remove(table / "part-0000.parquet")  # deleted
    time.sleep(0.01)
    pq.write_table(_file(1, rows=7), table / "part-0001.parquet")  # rewritten in place
    assert [r["up_to_date"] for r in mi.describe().to_spark().collect()] == [False]
    pending = mi.describe().to_spark().first()
    assert (pending["new_files"], pending["changed_files"], pending["deleted_files"]) == (
        3,
        1,
        1,
    ), pending.asDict()

    result = mi.refresh()
    assert (result.status, result.entries_added, result.entries_removed) == ("SUCCESS", 4, 2), (
        f"3 new + 1 rewritten added; 1 deleted + 1 superseded: {result}"
    )
    assert mi.describe().to_spark().first()["up_to_date"] is True
    assert len(_kept(mi, f"id >= {N_FILES * ROWS}")) == 3, "only the new files hold such ids"

    parts_before = mi.describe().counts.parts
    version = mi.compact()
    assert mi.describe().counts.parts < parts_before
    assert mi.describe().to_spark().first()["version"] == version
    assert len(_kept(mi, "id BETWEEN 110 AND 140")) == 1, "compaction keeps every entry"
    vacuumed = mi.vacuum(retain=0, force=True)
    assert vacuumed is not None
    assert [r["operation"] for r in mi.history().to_spark().collect()][-1] == "vacuum"

    mi.drop()
    assert not mi.is_indexed()
    with pytest.raises(MetaIndexError, match="no index"):
        mi.describe()


def test_xskipper_aliases(spark, table, tmp_path):
    from metaindex.spark import stats

    mi = MetaIndex(spark, str(table), store=str(tmp_path / "store"))
    reader = spark.read.format("parquet")
    result = (
        mi.indexBuilder()
        .addMinMaxIndex("id")
        .addValueListIndex("city")
        .addBloomFilterIndex("temp", 0.02, 1000)
        .build(reader)
    )
    assert result.status == "SUCCESS" and result.entries_added == N_FILES
    assert mi.isIndexed()
    params = {r["kind"]: json.loads(r["params"]) for r in mi.describeIndex(reader).collect()}
    assert params["bloom"]["fpp"] == 0.02, params
    assert mi.refreshIndex(reader).status == "NO_CHANGE"
    assert MetaIndex.getLatestQueryStats(spark) == stats.last_query_stats(spark)
    assert mi.getLatestQueryStats() == stats.last_query_stats(spark)
    mi.dropIndex()
    assert not mi.isIndexed()


def test_bad_input_is_typed(spark, table, tmp_path):
    store = str(tmp_path / "store")
    with pytest.raises(TableNotFoundError):
        MetaIndex(spark, str(tmp_path / "missing"), store=store)
    with pytest.raises(TableNotFoundError):
        MetaIndex(spark, "no_such_db.no_such_table", store=store)
    with pytest.raises(TypeError):
        MetaIndex(spark, "bad name!", store=store)
    mi = MetaIndex(spark, str(table), store=store)
    with pytest.raises(SchemaError):
        mi.index_builder().add_min_max_index("no_such_column").build(executor="local")
    with pytest.raises(MetaIndexError, match="add at least one index"):
        mi.index_builder().build()
    with pytest.raises(MetaIndexError, match="not encrypted"):
        mi.index_builder().add_min_max_index("id", key_label="k1")
    with pytest.raises(TypeError, match="executor"):
        mi.index_builder().add_min_max_index("id").build(executor="cluster")
    assert not mi.is_indexed(), "failed builds leave no index"


def test_partition_filters_prune_through_the_core(spark, tmp_path):
    root = tmp_path / "parted"
    _write(root, partitioned=True)
    mi = MetaIndex(spark, str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("id").build()
    with pytest.raises(SchemaError, match="partition column"):
        MetaIndex(
            spark, str(root), store=str(tmp_path / "store2")
        ).index_builder().add_min_max_index("p").build(executor="local")
    assert all(k.startswith("p=3/") for k in _kept(mi, "p = 3")), "p = 3 keeps p=3/ only"
    assert len(_kept(mi, "p = 3")) == N_FILES // 4
    assert _kept(mi, "p = 3 AND id < 50") == [], "id < 50 is file 0, in p=0"
    assert _kept(mi, "p = 0 AND id < 50") == ["p=0/part-0000.parquet"]
    assert len(_kept(mi, "p IN (1, 2) OR id = 0")) == N_FILES // 2 + 1


def test_catalog_tables(spark, tmp_path):
    df = spark.range(0, 4000, numPartitions=8).selectExpr(
        "id", "cast(id % 5 as int) as part", "concat('c', cast(id % 7 as string)) as city"
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS mi_api")
    try:
        df.write.mode("overwrite").saveAsTable("mi_api.flat")
        df.write.mode("overwrite").partitionBy("part").saveAsTable("mi_api.parted")
        df.write.mode("overwrite").format("json").saveAsTable("mi_api.jsonish")
        spark.sql("CREATE OR REPLACE VIEW mi_api.v AS SELECT * FROM mi_api.flat")
        df.createOrReplaceTempView("mi_api_temp")
        store = str(tmp_path / "store")

        flat = MetaIndex(spark, "mi_api.flat", store=store)
        assert flat.table_name == "spark_catalog.mi_api.flat" and flat.partition_columns == ()
        same = MetaIndex(spark, "spark_catalog.mi_api.flat", store=store)
        assert same.table_uri == flat.table_uri
        located = resolve_table(spark, "mi_api.flat").location
        assert os.path.isdir(located), f"a local catalog location becomes a path: {located}"
        result = flat.index_builder().add_min_max_index("id").build()
        assert result.status == "SUCCESS" and result.entries_added >= 8
        assert same.is_indexed(), "both spellings name one index"
        files = {
            r[0]
            for r in spark.read.table("mi_api.flat")
            .where("id < 10")
            .select("_metadata.file_name")
            .distinct()
            .collect()
        }
        kept = _kept(flat, "id < 10")
        assert len(kept) < result.entries_added
        assert files and files <= {os.path.basename(k) for k in kept}, (
            "every file Spark reads rows of id < 10 from must be kept"
        )

        parted = MetaIndex(spark, "mi_api.parted", store=store)
        assert parted.partition_columns == ("part",)
        parted.index_builder().add_value_list_index("city").build()
        assert all(k.startswith("part=2/") for k in _kept(parted, "part = 2"))
        assert _kept(parted, "city = 'nowhere'") == []

        for name in ("mi_api.v", "mi_api_temp"):
            with pytest.raises(UnsupportedFeatureError, match="view"):
                MetaIndex(spark, name, store=store)
        jsonish = MetaIndex(spark, "mi_api.jsonish", store=store)
        assert jsonish._resolved.data_format == "json"
        with pytest.raises(MetaIndexError, match="format='csv'"):
            MetaIndex(spark, "mi_api.jsonish", store=store, format="csv")
        path_form = MetaIndex(spark, f"parquet.`{located}`", store=store)
        assert path_form.table_uri == flat.table_uri and path_form.is_indexed()
    finally:
        spark.sql("DROP DATABASE IF EXISTS mi_api CASCADE")
        spark.catalog.dropTempView("mi_api_temp")


def _on_off(spark, name: str, where: str) -> tuple:
    """Rows (sorted) and Spark's files read of ``spark.table(name).where(where)``, skipping
    off and on; and the stats of the query with skipping on."""
    from metaindex.spark import disable, enable, last_query_stats
    from metaindex.spark.metrics import files_read

    out = []
    for on in (False, True):
        (enable if on else disable)(spark)
        df = spark.table(name).where(where)
        out.append((sorted(tuple(r) for r in df.collect()), files_read(df)))
    return out[0], out[1], last_query_stats(spark)


def test_catalog_csv_and_json_tables_skip_through_spark_table(spark, tmp_path):
    """CSV and JSON catalog tables (external with OPTIONS, managed, partitioned): the index
    records the table's format, OPTIONS and data schema, so a query through
    ``spark.table`` uses it, skips, and returns the rows it returns with skipping off."""
    from metaindex.spark import disable, enable

    df = spark.range(0, 400, numPartitions=4).selectExpr(
        "id",
        "CAST(id % 4 AS INT) AS p",
        "IF(id % 9 = 0, NULL, concat('c', CAST(id % 7 AS STRING))) AS s",
        "IF(id % 5 = 0, NULL, id * 1.5) AS x",
    )
    csv = str(tmp_path / "csv")
    df.repartitionByRange(8, "id").write.option("header", "true").option("sep", ";").option(
        "nullValue", "NA"
    ).csv(csv)
    spark.sql("CREATE DATABASE IF NOT EXISTS mi_cat")
    enable(spark)
    try:
        spark.sql(
            "CREATE TABLE mi_cat.ext (id BIGINT, p INT, s STRING, x DOUBLE) USING csv "
            f"OPTIONS (header 'true', sep ';', nullValue 'NA') LOCATION '{csv}'"
        )
        df.repartitionByRange(4, "id").write.partitionBy("p").format("json").saveAsTable(
            "mi_cat.parted"
        )
        store = str(tmp_path / "store")
        ext = MetaIndex(spark, "mi_cat.ext", store=store)
        resolved = ext._resolved
        assert resolved.data_format == "csv" and resolved.location == csv
        assert {k: v for k, v in resolved.options.items() if k != "schema"} == {
            "header": "true",
            "sep": ";",
            "nullValue": "NA",
        }
        ext.index_builder().add_min_max_index("id").add_value_list_index("s").build()
        parted = MetaIndex(spark, "mi_cat.parted", store=store)
        assert parted.partition_columns == ("p",)
        parted.index_builder().add_min_max_index("x").add_bloom_filter_index("s").build()
        assert MetaIndex(spark, "mi_cat.ext", store=store).is_indexed(), "reopened: same formats"
        with pytest.raises(MetaIndexError, match="sep"):
            MetaIndex(spark, "mi_cat.ext", store=store, options={"sep": ","})

        skipped = {}
        for name, wheres in (
            (
                "mi_cat.ext",
                [
                    "id = 17",
                    "id BETWEEN 100 AND 130",
                    "s = 'c3' AND id < 50",
                    "s IS NULL OR id > 390",
                    "x > 590",
                ],
            ),
            ("mi_cat.parted", ["x = 151.5", "x > 500 AND p = 1", "s = 'nope'", "x IS NULL"]),
        ):
            skipped[name] = 0
            for where in wheres:
                (rows_off, files_off), (rows_on, files_on), stats = _on_off(spark, name, where)
                assert rows_on == rows_off, f"{name}: {where!r} returned other rows"
                assert stats.reason is None, f"{name}: {where!r}: {stats.reason}"
                assert files_on == files_off - stats.files_skipped, (name, where, stats)
                skipped[name] += stats.files_skipped
        assert skipped["mi_cat.ext"] >= 7 + 4, skipped  # id = 17: one file of eight read
        assert skipped["mi_cat.parted"] > 0, skipped
    finally:
        disable(spark)
        spark.sql("DROP DATABASE IF EXISTS mi_cat CASCADE")


def test_catalog_formats_of_hive_tables_and_other_providers():
    """The provider / Hive storage -> data format mapping, on the values Spark's DESCRIBE
    prints (no Hive metastore in these tests), and DESCRIBE's "Storage Properties" form."""
    from metaindex.spark.catalog import parse_storage_properties, table_data_format

    orc = {
        "InputFormat": "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        "Serde Library": "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
    }
    parquet = {
        "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "Serde Library": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    }
    text = {
        "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
        "Serde Library": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
    }
    avro = {"InputFormat": "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat"}
    assert table_data_format("t", "hive", orc) == "orc"
    assert table_data_format("t", "hive", parquet) == "parquet"
    for provider in ("parquet", "csv", "json", "orc"):
        assert table_data_format("t", provider, {}) == provider
    assert table_data_format("t", "delta", {}) == "parquet"
    with pytest.raises(UnsupportedFeatureError, match="LazySimpleSerDe"):
        table_data_format("t", "hive", text)
    with pytest.raises(UnsupportedFeatureError, match="Avro"):
        table_data_format("t", "hive", avro)
    with pytest.raises(UnsupportedFeatureError, match="iceberg"):
        table_data_format("t", "iceberg", {})
    assert parse_storage_properties("[header=true, sep=,, nullValue=a, b]") == {
        "header": "true",
        "sep": ",",
        "nullValue": "a, b",
    }
    assert parse_storage_properties("") == {} and parse_storage_properties("[]") == {}


def test_location_to_path():
    assert location_to_path("file:/tmp/wh dir/t") == "/tmp/wh dir/t"
    assert location_to_path("file:///tmp/t") == "/tmp/t"
    assert location_to_path("file://localhost/tmp/t") == "/tmp/t"
    assert location_to_path("s3a://bucket/t") == "s3a://bucket/t"


def test_encrypted_store_through_conf_keys(spark, table, tmp_path, encryption_conf):
    store = str(tmp_path / "store")
    mi = MetaIndex(spark, str(table), store=store)
    result = (
        mi.index_builder()
        .add_min_max_index("id")
        .add_value_list_index("city")
        .add_bloom_filter_index("temp", key_label="secret")
        .build()
    )
    assert result.status == "SUCCESS" and result.entries_added == N_FILES
    labels = {r["kind"]: r["key_label"] for r in mi.describe().to_spark().collect()}
    assert labels == {"minmax": "cols", "valuelist": "cols", "bloom": "secret"}, labels
    assert mi.describe().encryption is not None
    assert len(_kept(mi, "id BETWEEN 110 AND 140")) == 1
    assert _kept(mi, "temp = 1000.0") == []

    part = next(p for p in (tmp_path / "store").rglob("*.parquet"))
    with pytest.raises((pa.ArrowException, OSError)):  # pyarrow raises either
        pq.read_table(part)  # footer encrypted: pyarrow without keys cannot read it
    with pytest.raises(MetaIndexError):
        CoreMetaIndex(str(table), store).prune("id < 10")

    _write(table, n_files=2, start=N_FILES)
    refreshed = mi.refresh()
    assert refreshed.entries_added == 2
    assert len(_kept(mi, f"id >= {N_FILES * ROWS}")) == 2

    for key in ENCRYPTION_CONF_KEYS:
        spark.conf.unset(key)
    reader = MetaIndex(spark, str(table), store=store)
    with pytest.raises(MetaIndexError):
        reader.core.prune("id < 10")
    spark.conf.set("metaindex.encryption.kms", f"inmemory:{encryption_conf}")
    reader = MetaIndex(spark, str(table), store=store)
    assert len(_kept(reader, "id BETWEEN 110 AND 140")) == 1, "a KMS alone reads the store"


def test_list_indexes_registry_and_conf_store(spark, table, tmp_path):
    mi = MetaIndex(spark, str(table), store=str(tmp_path / "conf-store"))
    mi.index_builder().add_min_max_index("temp").add_bloom_filter_index("city").build(
        executor="local"
    )
    spark.conf.set("metaindex.store", str(tmp_path / "conf-store"))
    try:
        rows = [r.asDict() for r in list_indexes(spark).collect()]
        mi.drop()
        after = [r.asDict() for r in list_indexes(spark).collect()]
    finally:
        spark.conf.unset("metaindex.store")
    mine = [r for r in rows if r["table"] == mi.table_uri]
    assert len(mine) == 1, f"one row per table, registry and store merged: {rows}"
    assert mine[0]["indexes"] == ["minmax(temp)", "bloom(city)"]
    assert mine[0]["indexed_files"] == N_FILES and mine[0]["registered"] is True
    assert not [r for r in after if r["table"] == mi.table_uri], "dropped: listed nowhere"


@pytest.mark.slow
def test_queries_skip_with_the_registered_index_until_drop(spark, table, tmp_path):
    from metaindex.spark import disable, enable
    from metaindex.spark.metrics import files_read

    def files_for(where: str) -> int:
        agg = spark.read.parquet(str(table)).where(where).groupBy().count()
        assert (
            agg.collect()[0][0]
            == spark.createDataFrame(pq.read_table(table).to_pandas()).where(where).count()
        )
        return files_read(agg)

    mi = MetaIndex(spark, str(table), store=str(tmp_path / "elsewhere"))
    mi.index_builder().add_min_max_index("id").build()
    enable(spark)
    try:
        assert files_for("id BETWEEN 110 AND 140") == 1, (
            "the store is not the default one: only the registered index can skip"
        )
        mi.drop()
        assert files_for("id BETWEEN 110 AND 140") == N_FILES, "dropped: every file is read"
    finally:
        disable(spark)
