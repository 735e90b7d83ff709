"""The layout advice's PySpark code, run by Spark: the table it writes has the read fraction
the advice estimated (repartitionByRange on the random copy; Z-order on two independent
columns), and describe() on a Spark MetaIndex carries the effectiveness fields."""

from __future__ import annotations

import pytest

from metaindex import MetaIndex as CoreMetaIndex
from metaindex.spark.api import MetaIndex
from tests.engine.layouts import write_copies, write_two_columns

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _run_advice(spark, mi, out: str):
    advice = mi.advise()
    best = advice.recommendation
    assert best is not None, advice.options
    code = best.spark.replace('"<new location>"', repr(out))
    exec(code, {"spark": spark})  # the code exactly as the advice prints it
    return best


def _fractions(path: str, store: str, columns) -> dict:
    core = CoreMetaIndex(path, store=store)
    builder = core.index_builder()
    for c in columns:
        builder.add_min_max_index(c)
    builder.build()
    return {ix.column: ix.point_read_fraction for ix in core.describe().indexes}


def test_range_advice_run_by_spark(spark, tmp_path):
    paths = write_copies(str(tmp_path))
    mi = MetaIndex(spark, paths["random"], store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("x").build(executor="local")
    row = mi.describe().to_spark().first()
    assert row["point_read_fraction"] >= 0.9 and row["verdict"].startswith("weak"), row
    assert set(row["range_read_fraction"]) == {0.001, 0.01, 0.1}, row
    best = _run_advice(spark, mi, str(tmp_path / "ranged"))
    assert best.layout == "repartitionByRange(x)"
    measured = _fractions(str(tmp_path / "ranged"), str(tmp_path / "store"), ["x"])
    assert measured["x"] <= 0.05, measured
    assert measured["x"] == pytest.approx(best.read_fraction["x"][1], abs=0.02)


def test_zorder_advice_run_by_spark(spark, tmp_path):
    path = write_two_columns(str(tmp_path / "t"))
    mi = MetaIndex(spark, path, store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("a").add_min_max_index("b").build(executor="local")
    best = _run_advice(spark, mi, str(tmp_path / "z"))
    assert best.layout == "zorder(a, b)"
    measured = _fractions(str(tmp_path / "z"), str(tmp_path / "store"), ["a", "b"])
    for c in ("a", "b"):
        assert measured[c] <= 0.5, measured
        assert measured[c] == pytest.approx(best.read_fraction[c][1], abs=0.1), (
            measured,
            best.read_fraction,
        )
