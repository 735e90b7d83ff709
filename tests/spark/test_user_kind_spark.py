"""A user's index kind (tests/kinds/prefix_kind.py) through the Spark face on local[2]: built on
Spark tasks with ``add_index("prefix", "code", length=3)`` (the executors import the kind's
module: the worker Python inherits this worktree's PYTHONPATH), described with its parameters,
and a query through the skipping hook reads fewer files with the same rows as without
skipping."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import IndexDefinitionError
from metaindex.index import KINDS, register_index_kind
from metaindex.spark.api import MetaIndex
from tests.kinds.prefix_kind import PrefixIndex

pytestmark = pytest.mark.spark

STEMS = ["alfa", "beta", "gama", "dlta", "epsi", "zeta"]


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_index_kind(PrefixIndex)
    yield
    KINDS.pop("prefix", None)


def test_prefix_kind_builds_on_spark_tasks_and_skips(spark, tmp_path):
    from metaindex.spark import disable, enable
    from metaindex.spark.metrics import files_read
    from metaindex.spark.stats import last_query_stats

    root = tmp_path / "codes"
    root.mkdir()
    for i in range(12):
        stem = STEMS[i % len(STEMS)]
        pq.write_table(
            pa.table(
                {
                    "code": pa.array([f"{stem}{i}{j}" for j in range(30)]),
                    "n": pa.array(range(30), pa.int64()),
                }
            ),
            root / f"part-{i:02d}.parquet",
        )
    mi = MetaIndex(spark, str(root), store=str(tmp_path / "store"))
    builder = mi.index_builder()
    with pytest.raises(IndexDefinitionError, match="unknown index kind 'prefx'"):
        builder.add_index("prefx", "code")
    builder.add_index("prefix", "code", length=3).build(executor="spark")
    described = {ix.kind: ix for ix in mi.core.describe().indexes}
    assert described["prefix"].params == {"length": 3, "max_prefixes": 64}

    def run(where: str) -> tuple:
        """(the matching codes, the files Spark read for them)."""
        frame = spark.read.parquet(str(root)).where(where).select("code")
        rows = sorted(r[0] for r in frame.collect())
        return rows, files_read(frame)

    # files i and i + 6 share a stem: a stem's prefix is in two files
    queries = {"code = 'gama28'": 2, "code LIKE 'bet%'": 2, "code IN ('zeta50', 'alfa00')": 4}
    disable(spark)
    plain = {q: run(q) for q in queries}
    assert all(files == 12 for _, files in plain.values()), f"skipping off: every file read {plain}"
    enable(spark)
    try:
        for q, wanted in queries.items():
            rows, files = run(q)
            assert rows == plain[q][0], f"{q}: skipping changed the rows"
            assert files == wanted, f"{q}: {wanted} files hold the prefixes, read {files}"
        stats = last_query_stats(spark)
        assert stats is not None and stats.files_skipped == 8, stats
        assert stats.skipped_by_index.get("prefix(code)") == 8, stats
    finally:
        disable(spark)
