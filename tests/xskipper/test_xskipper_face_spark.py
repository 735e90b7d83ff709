"""The xskipper face on a dataset whose only index is a store xskipper wrote (format version
4, built from the seed specification's layout): found where xskipper would find it,
``isIndexed`` is True, ``refreshIndex`` upgrades it and the queries then skip with it."""

from __future__ import annotations

import pytest

from metaindex.errors import MetaIndexError
from metaindex.store.xskipper_format import store_directory, table_identifier
from metaindex.xskipper import Xskipper
from tests.spark.conftest import spark  # noqa: F401  (the shared session fixture)
from tests.xskipper import seedstores

pytestmark = [pytest.mark.spark]

MD_LOCATION = "io.xskipper.parquet.mdlocation"
MD_TYPE = "io.xskipper.parquet.mdlocation.type"


@pytest.fixture
def xs(spark):  # noqa: F811
    yield spark
    Xskipper.reset(spark)


def _table(tmp_path):
    root = str(tmp_path / "events")
    mtimes = seedstores.write_table(root, seedstores.PARTITIONED)
    base = str(tmp_path / "md")
    md = store_directory(base, table_identifier(root))
    seedstores.write_store(md, root, 4, mtimes, seedstores.PARTITIONED)
    return root, base, md


def test_an_xskipper_store_is_found_and_upgraded_on_refresh(xs, tmp_path):
    root, base, md = _table(tmp_path)
    Xskipper.setConf(xs, {MD_LOCATION: base, MD_TYPE: "EXPLICIT_BASE_PATH_LOCATION"})
    xskipper = Xskipper(xs, root)
    assert xskipper.isIndexed(), "the store xskipper wrote is an index"
    result = xskipper.refreshIndex(xs.read.format("parquet")).collect()[0]
    assert result["status"] == "SUCCESS" and result["new_entries_added"] == 3
    again = Xskipper(xs, root)
    assert again.isIndexed()
    described = str(again.describeIndex(xs.read.format("parquet")).collect())
    assert "sketchbloom" in described and "minmax" in described, described
    Xskipper.enable(xs)
    Xskipper.clearStats(xs)
    rows = xs.read.parquet(root).where("i > 50").collect()
    assert sorted(r["i"] for r in rows) == [100, 150, 200]
    stats = Xskipper.getLatestQueryAggregatedStats(xs).collect()
    assert stats and stats[0]["skipped_Objs"] == 2, stats
    assert seedstores.write_store  # the xskipper store is left as it was:
    assert sorted(p.name for p in (tmp_path / "md" / md.rsplit("/", 1)[-1]).iterdir()) == [
        "_SUCCESS",
        "part-00000-0000-c000.snappy.parquet",
    ]


def test_explicit_location_is_found_and_not_written_into(xs, tmp_path):
    root, base, md = _table(tmp_path)
    Xskipper.setConf(xs, {MD_LOCATION: md, MD_TYPE: "EXPLICIT_LOCATION"})
    xskipper = Xskipper(xs, root)
    assert xskipper.isIndexed()
    with pytest.raises(MetaIndexError, match="inside xskipper's store"):
        xskipper.refreshIndex(xs.read.format("parquet"))


def test_hive_locations_find_the_store(xs, tmp_path):
    """``HIVE_DB_NAME`` (the database's mdlocation property is the base path) and
    ``HIVE_TABLE_NAME`` (the table's property is the store directory itself) find the store
    xskipper wrote, as xskipper's ``ParquetMetadataPath`` does."""
    root = str(tmp_path / "flat")
    mtimes = seedstores.write_table(root, seedstores.FILES)
    base = str(tmp_path / "md")
    md = store_directory(base, table_identifier(root))
    seedstores.write_store(md, root, 4, mtimes, seedstores.FILES)
    try:
        xs.sql(f"CREATE DATABASE xsk_find WITH DBPROPERTIES ('{MD_LOCATION}'='{base}')")
        xs.sql(
            f"CREATE TABLE xsk_find.flat USING PARQUET LOCATION '{root}' "
            f"TBLPROPERTIES ('{MD_LOCATION}'='{md}')"
        )
        Xskipper.setConf(xs, {MD_LOCATION: "xsk_find", MD_TYPE: "HIVE_DB_NAME"})
        assert Xskipper(xs, root).isIndexed(), "the database's base path holds the store"
        Xskipper.setConf(xs, {MD_LOCATION: "xsk_find.flat", MD_TYPE: "HIVE_TABLE_NAME"})
        assert Xskipper(xs, root).isIndexed(), "the table's property is the store"
        Xskipper.setConf(xs, {MD_LOCATION: "xsk_find.nope", MD_TYPE: "HIVE_TABLE_NAME"})
        with pytest.raises(MetaIndexError, match="'xsk_find.nope': not in the catalog"):
            Xskipper(xs, root).isIndexed()
    finally:
        xs.sql("DROP DATABASE IF EXISTS xsk_find CASCADE")


def test_no_store_is_still_index_not_found(xs, tmp_path):
    root, base, md = _table(tmp_path)
    Xskipper.setConf(xs, {MD_LOCATION: str(tmp_path / "elsewhere")})
    xskipper = Xskipper(xs, root)
    assert not xskipper.isIndexed()
    with pytest.raises(MetaIndexError, match="Index Not Found"):
        xskipper.refreshIndex(xs.read.format("parquet"))


# ------------------------------------------------------------------ build(reader): CSV, JSON


def _write_csv(root, name, temps):
    import os

    os.makedirs(root, exist_ok=True)
    with open(f"{root}/{name}.csv", "w") as f:
        f.write("city,temp\n" + "".join(f"c{int(t) % 3},{t}\n" for t in temps))


def _on_and_off(spark, df_of, where):  # noqa: F811
    """(rows with skipping on, files Spark read, files skipped; rows with skipping off)."""
    from metaindex.spark import last_query_stats
    from metaindex.spark.metrics import files_read

    Xskipper.enable(spark)
    df = df_of().where(where)
    on = sorted(map(tuple, df.collect()))
    read, skipped = files_read(df), last_query_stats(spark).files_skipped
    Xskipper.disable(spark)
    off = sorted(map(tuple, df_of().where(where).collect()))
    return on, read, skipped, off


def test_build_and_refresh_with_a_csv_reader(xs, tmp_path):
    """build(reader) indexes the CSV files as the reader reads them (header, inferred
    schema); refreshIndex(reader) adds a new file; a reader with other options or another
    format is refused, never a silent re-definition."""
    from metaindex.errors import UnsupportedFeatureError, UnsupportedFormatError
    from metaindex.spark import MetaIndex

    root = str(tmp_path / "sensors")
    for k in range(3):
        _write_csv(root, f"part-{k}", [10.0 * k + j / 2 for j in range(5)])

    def reader():
        return xs.read.format("csv").option("header", "true").option("inferSchema", "true")

    xskipper = Xskipper(xs, root)
    result = xskipper.indexBuilder().addMinMaxIndex("temp").addValueListIndex("city")
    assert result.build(reader()).collect()[0]["new_entries_added"] == 3
    formats = MetaIndex(xs, root).describe().to_dict()["formats"]
    assert formats["data_format"] == "csv" and formats["format_options"]["header"] == "true"
    on, read, skipped, off = _on_and_off(xs, lambda: reader().load(root), "temp >= 21")
    assert on == off and [t for _, t in on] == [21.0, 21.5, 22.0], on
    assert (read, skipped) == (1, 2), f"temp >= 21 lives in part-2 only: read {read}"

    _write_csv(root, "part-3", [100.0, 101.0])
    refreshed = xskipper.refreshIndex(reader()).collect()[0]
    assert (refreshed["status"], refreshed["new_entries_added"]) == ("SUCCESS", 1), refreshed
    on, read, skipped, off = _on_and_off(xs, lambda: reader().load(root), "temp > 50")
    assert on == off == [("c1", 100.0), ("c2", 101.0)], on
    assert (read, skipped) == (1, 3), f"the new file is indexed: read {read}"
    described = str(xskipper.describeIndex(reader()).collect())
    assert "minmax" in described and "valuelist" in described, described

    with pytest.raises(MetaIndexError, match="sep"):
        xskipper.refreshIndex(reader().option("sep", ";"))
    with pytest.raises(MetaIndexError, match="json"):
        xskipper.refreshIndex(xs.read.format("json"))
    with pytest.raises(MetaIndexError, match="parquet"):
        xskipper.describeIndex(xs.read.format("parquet"))
    with pytest.raises(UnsupportedFeatureError, match="path"):
        xskipper.refreshIndex(reader().option("path", root))
    with pytest.raises(UnsupportedFormatError):
        Xskipper(xs, str(tmp_path / "sensors")).indexBuilder().addMinMaxIndex("temp").build(
            xs.read.format("text")
        )


def test_build_with_a_json_reader_and_schema(xs, tmp_path):
    """A partitioned JSON dataset (``day=.../``) with the reader's schema: the value list
    skips files without the city, rows (the partition column too) equal to skipping off."""
    import datetime
    import json
    import os

    root = str(tmp_path / "logs")
    for k, cities in enumerate((["a", "b"], ["b", "c"], ["d"])):
        os.makedirs(f"{root}/day=2024-01-0{k + 1}")
        with open(f"{root}/day=2024-01-0{k + 1}/part-{k}.json", "w") as f:
            f.writelines(
                json.dumps({"id": 10 * k + j, "city": c}) + "\n" for j, c in enumerate(cities)
            )

    def reader():
        return xs.read.format("json").schema("id INT, city STRING")

    xskipper = Xskipper(xs, root)
    xskipper.indexBuilder().addValueListIndex("city").build(reader())
    on, read, skipped, off = _on_and_off(xs, lambda: reader().load(root), "city = 'b'")
    day = datetime.date
    assert on == off == [(1, "b", day(2024, 1, 1)), (10, "b", day(2024, 1, 2))], on
    assert (read, skipped) == (2, 1), f"no 'b' in part-2: read {read}"
    with pytest.raises(MetaIndexError, match="schema"):
        xskipper.refreshIndex(xs.read.format("json").schema("id STRING, city STRING"))
