"""Layout advice (metaindex.engine.advice, MetaIndex.advise, ``metaindex advise``).

Acceptance: for the randomly ordered copy the advice names the column and repartitionByRange,
with the read fraction now (>= 0.9) and after (<= 0.05); for the clustered copy it recommends
nothing. Z-order wins when two independent columns are both indexed. Spark runs the suggested
code in tests/spark/test_explain_spark.py and the index of its output matches the estimate.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from metaindex import MetaIndex
from metaindex.cli.app import cli
from metaindex.engine.advice import range_buckets, zorder_keys
from metaindex.engine.executors import SerialExecutor
from tests.engine.layouts import write_copies, write_two_columns


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("advice")
    paths = write_copies(str(root))
    store = str(root / "_store")
    for path in paths.values():
        MetaIndex(path, store=store).index_builder().add_min_max_index("x").add_min_max_index(
            "city"
        ).build(executor=SerialExecutor())
    return paths, store


def test_random_copy_is_told_to_range_partition(copies):
    paths, store = copies
    advice = MetaIndex(paths["random"], store=store).advise()
    best = advice.recommendation
    assert best is not None and best.layout == "repartitionByRange(x)", advice.options
    now, after = best.read_fraction["x"]
    assert now >= 0.9 and after <= 0.05, best.read_fraction
    assert 'repartitionByRange(40, "x")' in best.spark and "sortWithinPartitions" in best.spark
    assert advice.per_column["x"].layout == "repartitionByRange(x)"
    assert advice.per_column["city"].layout == "repartitionByRange(city)"
    assert advice.sample_rows == 40 * 250 and advice.simulated_files == 40


def test_clustered_copy_needs_nothing(copies):
    paths, store = copies
    advice = MetaIndex(paths["clustered"], store=store).advise()
    assert advice.recommendation is None, advice.recommendation
    assert advice.current["x"] <= 0.05


def test_cli_advise(copies):
    paths, store = copies
    runner = CliRunner()
    text = runner.invoke(cli, ["advise", paths["random"], "--store", store]).output
    assert "Recommended: repartitionByRange(x)" in text, text
    assert 'df.repartitionByRange(40, "x").sortWithinPartitions("x")' in text, text
    done = runner.invoke(
        cli,
        [
            "advise",
            paths["random"],
            "--store",
            store,
            "--json",
            "--sample-rows",
            "2000",
            "--sample-files",
            "10",
        ],
    )
    doc = json.loads(done.output)
    assert doc["recommendation"]["layout"] == "repartitionByRange(x)", doc
    assert doc["sample_files"] == 10 and doc["sample_rows"] == 2000
    assert doc["simulated_files"] == 20, "one simulated file per 100 sampled rows"
    assert any("simulated 20 files" in note for note in doc["notes"]), doc["notes"]


def test_zorder_for_two_independent_columns(tmp_path):
    path = write_two_columns(str(tmp_path / "t"))
    mi = MetaIndex(path, store=str(tmp_path / "s"))
    mi.index_builder().add_min_max_index("a").add_min_max_index("b").build(
        executor=SerialExecutor()
    )
    advice = mi.advise()
    best = advice.recommendation
    assert best.layout == "zorder(a, b)", [(o.layout, o.mean_after) for o in advice.options]
    for column in ("a", "b"):
        now, after = best.read_fraction[column]
        assert now >= 0.9 and after <= 0.5, best.read_fraction
    assert "shiftleft" in best.spark and "repartitionByRange(32, z)" in best.spark


def test_no_min_max_index(tmp_path):
    path = write_two_columns(str(tmp_path / "t"), files=4)
    mi = MetaIndex(path, store=str(tmp_path / "s"))
    mi.index_builder().add_bloom_filter_index("b").build(executor=SerialExecutor())
    advice = mi.advise()
    assert advice.options == [] and advice.recommendation is None
    assert "no min/max index" in advice.notes[0]


def test_simulation_building_blocks():
    keys = np.array([5.0, 1.0, np.nan, 3.0, 3.0, 3.0, 9.0, 7.0])
    buckets = range_buckets(keys, 3)
    assert buckets[2] == 0, "nulls go first"
    same = buckets[keys == 3.0]
    assert (same == same[0]).all(), "equal keys stay in one file"
    valid = ~np.isnan(keys)
    in_order = buckets[valid][np.argsort(keys[valid])]
    assert list(in_order) == sorted(in_order), "files hold consecutive ranges"
    z = zorder_keys(
        np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0]), (0.0, 1.0), (0.0, 1.0)
    )
    top = (1 << 20) - 1
    assert list(z) == [0, top & 0xAAAAA, top & 0x55555, top], "a's bits above b's"
    with pytest.raises(ValueError, match="sample_rows"):
        from metaindex.engine.advice import advise

        advise(None, None, {}, sample_rows=0)
