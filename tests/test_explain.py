"""MetaIndex.explain: the Pruner's own record of one decision, per conjunct and per index.

A 20-file table whose ``temp`` ranges do not overlap (file k holds k*10 .. k*10+9), with a
min/max index on temp and a value list on city. The explanation's counts must be those of
``prune(...)`` on the same predicate: it is the same decision, not a second evaluation.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.explain import Explanation
from metaindex.errors import ExpressionError

N = 20


@pytest.fixture
def table(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    for k in range(N):
        pq.write_table(
            pa.table(
                {
                    "temp": pa.array([float(k * 10 + j) for j in range(10)]),
                    "city": pa.array([f"c{k % 4}"] * 10),
                    "free": pa.array(list(range(10)), pa.int32()),
                }
            ),
            root / f"f{k:02d}.parquet",
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("temp").add_value_list_index("city").build(
        executor=SerialExecutor()
    )
    return mi, root


def test_dropped_conjunct_and_effective_index_are_named_with_prune_counts(table):
    mi, _ = table
    where = "upper(city) = 'X' AND temp > 30"
    explained = mi.explain(where)
    pruned = mi.prune(where).stats
    assert isinstance(explained, Explanation)
    dropped, used = explained.conjuncts
    assert (dropped.used, dropped.reason, dropped.indexes) == (False, "unknown function", {})
    assert used.used and used.reason is None
    assert used.indexes == {"minmax(temp)": pruned.skipped_files}
    assert pruned.skipped_files == 3  # files 0..2 hold temp <= 29; file 3 holds 31..39
    assert (
        explained.total_files,
        explained.kept_files,
        explained.skipped_files,
        explained.unindexed_files,
    ) == (pruned.total_files, pruned.kept_files, pruned.skipped_files, pruned.unindexed_files)
    assert explained.skipped_by_index == pruned.skipped_by_index
    text = str(explained)
    assert "dropped" in text and "UPPER(city) = 'X'" in text and "unknown function" in text
    assert "minmax(temp) rules out 3" in text and "3 of 20 files skipped" in text


def test_every_reason_and_two_indexes(table):
    mi, _ = table
    explained = mi.explain("nope = 1 AND temp = 'hot' AND free = 3 AND (city = 'c1' OR temp < 5)")
    assert [(c.used, c.reason) for c in explained.conjuncts] == [
        (False, "unknown column"),
        (False, "type mismatch"),
        (False, "no index on the column"),
        (True, None),
    ]
    assert "nope" in explained.conjuncts[0].detail  # reported, where prune() raises
    both = explained.conjuncts[3].indexes
    assert set(both) == {"minmax(temp)", "valuelist(city)"}
    # under OR neither index alone rules a file out; together they rule out 14 (not c1, >= 5)
    assert both == {"minmax(temp)": 0, "valuelist(city)": 0}
    assert explained.skipped_files == mi.prune("city = 'c1' OR temp < 5").stats.skipped_files
    doc = explained.as_dict()
    assert doc["conjuncts"][3]["indexes"] == both and doc["skipped_files"] == 14


def test_files_new_or_changed_since_the_refresh_are_counted(table):
    mi, root = table
    pq.write_table(
        pa.table(
            {"temp": pa.array([5.0]), "city": pa.array(["c0"]), "free": pa.array([1], pa.int32())}
        ),
        root / "new.parquet",
    )
    old = root / "f01.parquet"
    os.utime(old, (1_000_000, 1_000_000))  # rewritten in place (new mtime)
    explained = mi.explain("temp < 15")
    assert explained.unindexed_files == 2 and explained.total_files == N + 1
    assert explained.skipped_files == N - 2  # f00 kept by the index, f01 and new.parquet kept
    assert "2 file(s) kept: not indexed" in str(explained)


def test_syntax_errors_still_raise(table):
    with pytest.raises(ExpressionError):
        table[0].explain("temp >>> 1")
