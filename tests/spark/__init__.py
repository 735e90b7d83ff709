"""Tests that start Spark (parquet-java is the peer), plus small helpers they share."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def sql_conf(spark, settings: dict):
    """Set Spark SQL confs for the duration of a block, then restore the previous values."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _scan_nodes(plan):
    """The file-scan leaves of an executed plan (looking inside adaptive plans)."""
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        node = leaves.next()
        if node.nodeName() == "AdaptiveSparkPlan":
            yield from _scan_nodes(node.executedPlan())
        else:
            yield node


def collect_with_scan_metrics(df) -> tuple[list, dict]:
    """Run ``df``: its rows and the SQL metrics of its single Parquet scan, by metric key.

    ``numOutputRows`` of a Parquet scan counts the rows of the row groups the reader decoded
    (pushed filters prune whole row groups; rows inside a kept group are filtered later by Spark),
    so it shows how many row groups parquet-java's row-group filters kept.
    """
    rows = df.collect()
    scans = [
        n
        for n in _scan_nodes(df._jdf.queryExecution().executedPlan())
        if "parquet" in n.nodeName().lower()
    ]
    assert len(scans) == 1, f"expected one Parquet scan, found {[n.nodeName() for n in scans]}"
    out = {}
    metrics = scans[0].metrics().iterator()
    while metrics.hasNext():
        entry = metrics.next()
        out[entry._1()] = entry._2().value()
    return rows, out
