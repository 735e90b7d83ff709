"""Deep predicates through the Spark layer: the hook's request handler (what the JVM calls,
with 10,000 top-level filters as Spark splits a WHERE clause, and a long OR nested as Catalyst
nests it), the data source's planning (a 10,000-conjunct ``where`` and 10,000 pushed
filters), and a real query through ``enable()`` with as many conjuncts as Spark's own planner
takes on a default thread stack (it overflows between ~300 and ~500 left-deep ANDs; 10,000
need a much larger ``-Xss`` and many minutes of Spark planning).

Before the iterative walks, ~1,100 conjuncts made the hook answer "read every file"
(an untyped RecursionError caught at the callback).
"""

from __future__ import annotations

import functools
import json

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed")

from metaindex.spark import hook, stats  # noqa: E402
from tests.engine.test_deep_prune import FILES, indexed_table  # noqa: E402

N = 10_000


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return indexed_table(tmp_path_factory.mktemp("deep_spark") / "t")


def _gt(k: int) -> dict:
    return {"op": "gt", "col": ["i"], "value": {"type": "long", "value": k}}


def _eq(k: int) -> dict:
    return {"op": "eq", "col": ["i"], "value": {"type": "long", "value": k}}


def _ask(mi, filters, session: str) -> tuple:
    request = {
        "scan": 1,
        "session": session,
        "roots": [mi.table_uri],
        "table": None,
        "filters": filters,
        "partition_filters": 0,
        "num_files": FILES,
        "num_bytes": 1,
        "query": "q",
        "conf": {},
    }
    return _answer(json.dumps(request))


def _answer(text: str) -> tuple:
    """(stats, verdict line, named files) of the hook's reply."""
    first, *rest = hook._PruneCallback().prune(text).splitlines()
    return json.loads(first), rest[0], rest[1:]


@pytest.mark.slow
def test_hook_request_with_10000_filters(indexed):
    scan, verdict, named = _ask(indexed, [_gt(-k) for k in range(N)] + [_eq(31)], "deep1")
    assert verdict == f"OK\t{indexed.table_uri}" and scan["reason"] is None, scan["reason"]
    assert len(named) == FILES - 1 and not any(n.endswith("f03.parquet") for n in named), (
        "every file but the one holding 31 is named as skippable"
    )
    assert len(scan["conjuncts"]) == N + 1 and all(c["used"] for c in scan["conjuncts"])
    stats.clear_stats("deep1")


def test_hook_request_with_a_long_or(indexed):
    chain = _eq(1000)
    for k in range(1, 400):  # Catalyst nests a long OR left-deep; JSON carries it nested
        chain = {"op": "or", "left": chain, "right": _eq(1000 + k)}
    chain = {"op": "or", "left": chain, "right": _eq(31)}
    scan, verdict, named = _ask(indexed, [chain], "deep2")
    assert scan["reason"] is None and len(named) == FILES - 1, scan
    stats.clear_stats("deep2")
    too_deep = (
        '{"session": "deep3", "filters": ['
        + '{"op": "not", "child": ' * 5000
        + json.dumps(_eq(1))
        + "}" * 5000
        + "]}"
    )
    scan, verdict, named = _answer(too_deep)
    assert verdict == "NONE" and "nested too deeply" in scan["reason"], (
        "a request deeper than the decoder goes reads every file, saying why"
    )


@pytest.mark.slow
def test_data_source_plans_with_10000_conjuncts(indexed):
    from pyspark.sql import datasource as ds
    from pyspark.sql import types as T

    from metaindex.spark.datasource import MetaIndexReader

    schema = T.StructType([T.StructField("i", T.LongType())])
    where = " AND ".join(f"i > {-k}" for k in range(N)) + " AND i = 31"
    root = indexed.table_uri
    for options, pushed in (
        ({"path": root, "where": where}, []),
        ({"path": root}, [ds.GreaterThan(("i",), -k) for k in range(N)] + [ds.EqualTo(("i",), 31)]),
    ):
        reader = MetaIndexReader(options, {}, schema, True, {})
        assert reader.pushFilters(pushed) == pushed, "every filter is handed back to Spark"
        groups = reader.partitions()
        files = [path.rsplit("/", 1)[-1] for g in groups for path, _ in g.files]
        assert files == ["f03.parquet"], f"only the file holding 31 is planned: {files}"


@pytest.mark.spark
@pytest.mark.slow
def test_a_query_with_many_conjuncts_skips_through_enable(spark, indexed):
    from pyspark.sql import functions as F

    from metaindex.spark.metrics import files_read

    def query():  # a new DataFrame per run: each plans (and lists its files) afresh
        cond = functools.reduce(lambda a, b: a & b, [F.col("i") > -k for k in range(150)])
        # no equality: Spark would fold every other comparison of i away (constant propagation)
        return spark.read.parquet(indexed.table_uri).where(
            cond & (F.col("i") >= 30) & (F.col("i") < 35)
        )

    hook.disable(spark)
    off = query()
    off_rows = sorted(r.i for r in off.collect())
    hook.enable(spark)
    try:
        on = query()
        assert sorted(r.i for r in on.collect()) == off_rows == [30, 31, 32, 33, 34]
        assert files_read(off) == FILES and files_read(on) == 1, (
            "the 150-conjunct scan reads one file with skipping on"
        )
        last = stats.last_query_stats(spark)
        assert last.reason is None and len(last.tables[0]["conjuncts"]) >= 150, last
    finally:
        hook.disable(spark)
