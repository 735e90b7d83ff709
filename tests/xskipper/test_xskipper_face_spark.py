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


def test_no_store_is_still_index_not_found(xs, tmp_path):
    root, base, md = _table(tmp_path)
    Xskipper.setConf(xs, {MD_LOCATION: str(tmp_path / "elsewhere")})
    xskipper = Xskipper(xs, root)
    assert not xskipper.isIndexed()
    with pytest.raises(MetaIndexError, match="Index Not Found"):
        xskipper.refreshIndex(xs.read.format("parquet"))
