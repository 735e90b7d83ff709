"""Deep predicates through the one decision path (MetaIndex.prune -> Pruner.decide): 10,000
conjuncts as a SQL string and as a left-deep ``&`` chain, a 10,000-way OR, NOT nested 10,000
times. Each keeps exactly the files a shallow equivalent keeps (today ~1,100 conjuncts raised
an untyped RecursionError)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.expr import And, Not, Or, col

N = 10_000
FILES = 12

pytestmark = pytest.mark.slow


def indexed_table(root) -> MetaIndex:
    """FILES files under ``root``, file k holding i in [10k, 10k + 5) (i = 31 is in file 3
    only), with a min/max index on i (also used by tests/spark/test_deep_spark.py)."""
    root.mkdir()
    for k in range(FILES):
        pq.write_table(
            pa.table({"i": pa.array(range(k * 10, k * 10 + 5), pa.int64())}),
            root / f"f{k:02d}.parquet",
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("i").build(executor=SerialExecutor())
    return mi


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return indexed_table(tmp_path_factory.mktemp("deep") / "t")


def _kept(result) -> list:
    return sorted(p.rsplit("/", 1)[-1] for p in result.kept)


def test_10000_conjuncts_as_sql(indexed):
    result = indexed.prune(" AND ".join(f"i > {-k}" for k in range(N)) + " AND i = 31")
    assert _kept(result) == ["f03.parquet"], "only the file holding 31"
    assert len(result.stats.conjuncts) == N + 1 and all(c.used for c in result.stats.conjuncts)
    explained = indexed.explain(" AND ".join(f"i > {-k}" for k in range(N)) + " AND i = 31")
    assert explained.skipped_files == FILES - 1


def test_10000_conjuncts_as_a_left_deep_and(indexed):
    tree = col("i") > -1
    for k in range(2, N):
        tree = tree & (col("i") > -k)
    result = indexed.prune(tree & (col("i") == 31))
    assert _kept(result) == ["f03.parquet"]
    assert len(result.stats.conjuncts) == N


def test_a_10000_way_or(indexed):
    chain = " OR ".join(f"i = {1000 + k}" for k in range(N))
    assert _kept(indexed.prune(f"{chain} OR i = 31")) == ["f03.parquet"]
    assert _kept(indexed.prune(f"NOT ({chain} OR i < 100)")) == ["f10.parquet", "f11.parquet"]


def test_not_nested_10000_times(indexed):
    # an even number of NOTs around (i = 31 OR (i = 42 AND ...)): the same rows as the core
    core = Or(col("i") == 31, And(col("i") == 42, col("i") > 0))
    tree = core
    for k in range(N):
        tree = Not(Or(tree, col("i") == -1 - k) if k % 2 else And(tree, col("i") > -1 - k))
    shallow = indexed.prune(core)
    deep = indexed.prune(tree)
    assert _kept(shallow) == ["f03.parquet", "f04.parquet"]
    assert _kept(deep) == _kept(shallow), "the NOTs cancel; the added arms never hold"
