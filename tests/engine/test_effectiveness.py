"""Index effectiveness estimated from the index alone (metaindex.engine.effectiveness).

The acceptance case: two copies of the same 40 files, one range-clustered by ``x`` and one in
random order; describe() reports the min/max point read fraction of ``x`` as <= 0.05 and >= 0.9
and says so in words (core, --json and the CLI's text). The estimators are checked against
exact hand computations and against the truth counted from the data.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from metaindex import MetaIndex
from metaindex.cli.app import cli
from metaindex.engine.effectiveness import expected_cover, point_read_fraction
from metaindex.engine.executors import SerialExecutor
from tests.engine.layouts import N_FILES, write_copies


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("effect")
    paths = write_copies(str(root))
    store = str(root / "_store")
    for path in paths.values():
        MetaIndex(path, store=store).index_builder().add_min_max_index("x").add_min_max_index(
            "day"
        ).add_min_max_index("city").add_value_list_index("city").add_bloom_filter_index("id").build(
            executor=SerialExecutor()
        )
    return paths, store


def by_index(describe) -> dict:
    return {(ix.kind, ix.column): ix.to_dict() for ix in describe.indexes}


def test_clustered_and_random_copies(copies):
    paths, store = copies
    clustered = by_index(MetaIndex(paths["clustered"], store=store).describe())
    shuffled = by_index(MetaIndex(paths["random"], store=store).describe())
    for column in ("x", "day"):
        good, bad = clustered[("minmax", column)], shuffled[("minmax", column)]
        assert good["point_read_fraction"] <= 0.05, f"clustered by {column}: one file per value"
        assert good["verdict"] == "effective", good
        assert bad["point_read_fraction"] >= 0.9, "shuffled: every range spans the column"
        assert bad["verdict"] == "weak: ranges overlap; cluster the table by this column", bad
        curve = good["range_read_fraction"]
        assert sorted(curve) == [0.001, 0.01, 0.1]
        assert good["point_read_fraction"] <= curve[0.001] <= curve[0.01] <= curve[0.1] <= 0.2, (
            "wider ranges read more files, a tenth of the span about a tenth of them"
        )
        assert shuffled[("minmax", column)]["range_read_fraction"][0.1] >= 0.99
    # city is not clustered in either copy; the value list holds all 8 cities in every file
    for info in (clustered, shuffled):
        assert info[("minmax", "city")]["point_read_fraction"] >= 0.9
        assert info[("valuelist", "city")]["point_read_fraction"] == pytest.approx(1.0)
        assert info[("valuelist", "city")]["verdict"].startswith("weak: values occur")
        # ids are unique: a lookup reads the one file holding it plus false positives
        bloom = info[("bloom", "id")]
        assert bloom["point_read_fraction"] <= 1 / N_FILES + 0.02, bloom
        assert bloom["verdict"] == "effective"
        assert bloom["estimates"]["estimated_fpp"] <= 0.01


def test_cli_json_and_text_verdicts(copies):
    paths, store = copies
    runner = CliRunner()
    done = runner.invoke(cli, ["describe", paths["random"], "--store", store, "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    (x,) = [ix for ix in doc["indexes"] if ix["kind"] == "minmax" and ix["column"] == "x"]
    assert x["point_read_fraction"] >= 0.9 and set(x["range_read_fraction"]) == {
        "0.001",
        "0.01",
        "0.1",
    }, x
    text = runner.invoke(cli, ["describe", paths["random"], "--store", store]).output
    assert (
        "minmax(x)" in text and "weak: ranges overlap; cluster the table by this column" in text
    ), text
    text = runner.invoke(cli, ["describe", paths["clustered"], "--store", store]).output
    line = next(row for row in text.splitlines() if "minmax(x)" in row)
    assert "effective" in line and "█" in line, line


def test_estimates_are_cached_per_version(copies):
    paths, store = copies
    mi = MetaIndex(paths["clustered"], store=store)
    first = mi.effectiveness()
    assert mi.effectiveness()[0] is first[0], "computed once per snapshot"


# ------------------------------------------------------------------------------ estimators


def test_expected_cover_by_hand():
    # [0, 10] and [5, 15], equal rows: C = 1, 2, 1 on thirds of each range -> 1.5 files
    lo, hi = np.array([0.0, 5.0]), np.array([10.0, 15.0])
    assert expected_cover(lo, hi, np.array([1.0, 1.0]))[0] == pytest.approx(1.5)
    assert point_read_fraction(lo, hi, np.array([1.0, 1.0]), 2) == pytest.approx(0.75)
    # two point files at 3 and a range over them: points see 3 files, the range 1 (a.e.)
    lo, hi = np.array([3.0, 3.0, 0.0]), np.array([3.0, 3.0, 10.0])
    assert expected_cover(lo, hi, np.ones(3))[0] == pytest.approx(7 / 3)
    # an unknown file is always read
    assert point_read_fraction(np.array([0.0]), np.array([1.0]), np.ones(1), 2, unknown=1) == 1.0
    # disjoint ranges: one file per value; ranges of the whole span read everything
    lo, hi = np.arange(10.0), np.arange(10.0) + 0.5
    assert point_read_fraction(lo, hi, np.ones(10), 10) == pytest.approx(0.1)
    assert point_read_fraction(lo, hi, np.ones(10), 10, width=2.0) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_expected_cover_matches_monte_carlo(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    lo = rng.uniform(0, 100, n)
    hi = lo + rng.exponential(10, n) * (rng.random(n) > 0.2)  # some point files
    w = rng.integers(1, 100, n).astype(float)
    pad = float(rng.choice([0.0, 1.0, 5.0]))
    files = rng.choice(n, size=20_000, p=w / w.sum())
    x = lo[files] + rng.random(len(files)) * (hi[files] - lo[files])
    covered = (lo[None, :] - pad <= x[:, None]) & (x[:, None] <= hi[None, :] + pad)
    # the estimate is exact for the model: compare with the mean count over sampled values
    assert expected_cover(lo, hi, w, (pad,))[0] == pytest.approx(
        covered.sum(axis=1).mean(), rel=0.05, abs=0.05
    )


def _tables(root, name, columns: dict, files: int) -> str:
    path = os.path.join(root, name)
    os.makedirs(path)
    n = len(next(iter(columns.values())))
    for f in range(files):
        sl = slice(f * n // files, (f + 1) * n // files)
        pq.write_table(
            pa.table({k: v[sl] for k, v in columns.items()}),
            os.path.join(path, f"p{f:02d}.parquet"),
        )
    return path


def _truth(values: np.ndarray, files: int) -> float:
    """Mean over rows of the fraction of files holding the row's value."""
    per = {}
    for _f, chunk in enumerate(np.array_split(values, files)):
        for v in np.unique(chunk):
            per[v] = per.get(v, 0) + 1
    return float(np.mean([per[v] for v in values]) / files)


@pytest.mark.parametrize("distinct", [200, 4000, 100_000])
def test_value_list_and_bloom_against_the_truth(tmp_path, distinct):
    rng = np.random.default_rng(distinct)
    files, n = 20, 20 * 1000
    ids = rng.integers(0, distinct, n)
    path = _tables(str(tmp_path), "t", {"id": ids}, files)
    mi = MetaIndex(path, store=str(tmp_path / "s"))
    mi.index_builder().add_value_list_index("id", max_values=1000).add_bloom_filter_index(
        "id"
    ).build(executor=SerialExecutor())
    truth = _truth(ids, files)
    info = by_index(mi.describe())
    assert info[("valuelist", "id")]["point_read_fraction"] == pytest.approx(truth, abs=0.02)
    bloom = info[("bloom", "id")]
    # + false positives, and the overlap is estimated from the filters' fill
    assert bloom["point_read_fraction"] == pytest.approx(truth, abs=0.05), (bloom, truth)


def test_saturated_value_list(tmp_path):
    path = _tables(str(tmp_path), "t", {"id": np.arange(4000)}, 8)
    mi = MetaIndex(path, store=str(tmp_path / "s"))
    mi.index_builder().add_value_list_index("id", max_values=10).build(executor=SerialExecutor())
    (ix,) = mi.describe().indexes
    assert ix.point_read_fraction == 1.0 and ix.unknown_files == 8
    assert ix.verdict.startswith("saturated value list"), ix


def _index_all(path, store, columns) -> dict:
    mi = MetaIndex(path, store=store)
    builder = mi.index_builder()
    for c in columns:
        builder.add_min_max_index(c)
    builder.build(executor=SerialExecutor())
    return by_index(mi.describe())


def test_edge_cases_stay_in_range(tmp_path):
    import datetime
    import decimal

    inf, nan = float("inf"), float("nan")
    files = [
        {
            "f": [nan, nan],
            "n": [None, None],
            "c": [5, 5],
            "d": [decimal.Decimal("1.5")] * 2,
            "day": [datetime.date(2024, 1, 1)] * 2,
            "b": [True, True],
            "inf": [-inf, 0.0],
        },
        {
            "f": [1.0, nan],
            "n": [None, None],
            "c": [5, 5],
            "d": [decimal.Decimal("2.5")] * 2,
            "day": [datetime.date(2024, 2, 1)] * 2,
            "b": [False, False],
            "inf": [1.0, inf],
        },
        {
            "f": [2.0, 3.0],
            "n": [None, None],
            "c": [5, 5],
            "d": [decimal.Decimal("9.5")] * 2,
            "day": [datetime.date(2024, 3, 1)] * 2,
            "b": [True, False],
            "inf": [2.0, 3.0],
        },
    ]
    path = tmp_path / "t"
    path.mkdir()
    for i, columns in enumerate(files):
        table = pa.table(
            {
                "f": pa.array(columns["f"], pa.float64()),
                "n": pa.array(columns["n"], pa.int64()),
                "c": pa.array(columns["c"], pa.int32()),
                "d": pa.array(columns["d"], pa.decimal128(5, 1)),
                "day": pa.array(columns["day"], pa.date32()),
                "b": pa.array(columns["b"]),
                "inf": pa.array(columns["inf"]),
            }
        )
        pq.write_table(table, path / f"p{i}.parquet")
    info = _index_all(str(path), str(tmp_path / "s"), ["f", "n", "c", "d", "day", "b", "inf"])
    for key, ix in info.items():
        fraction = ix["point_read_fraction"]
        assert fraction is None or 0.0 <= fraction <= 1.0, (key, ix)
    assert info[("minmax", "n")]["point_read_fraction"] is None, "no file holds a value"
    assert info[("minmax", "n")]["verdict"].startswith("n/a")
    assert info[("minmax", "c")]["point_read_fraction"] == 1.0, "one value in every file"
    assert info[("minmax", "d")]["point_read_fraction"] == pytest.approx(1 / 3)
    assert info[("minmax", "day")]["point_read_fraction"] == pytest.approx(1 / 3)
    assert info[("minmax", "b")]["point_read_fraction"] > 1 / 3


def test_one_file(tmp_path):
    path = _tables(str(tmp_path), "t", {"x": np.arange(10.0)}, 1)
    info = _index_all(path, str(tmp_path / "s"), ["x"])
    ix = info[("minmax", "x")]
    assert ix["point_read_fraction"] == 1.0 and ix["verdict"].startswith("n/a"), ix
