"""Spark's own scan metrics of a finished query, for checking what skipping saved.

``files_read(df)`` after an action on ``df`` sums the ``numFiles`` ("number of files read")
metric of every file-source scan in the executed plan (through adaptive query execution, query
stages and reused exchanges), so callers can compare runs with skipping on and off using the
engine's count rather than ours; ``files_skipped(df)`` sums the extension's "files skipped by
metaindex" metric likewise. Classic PySpark only (it walks the JVM plan).

The metrics belong to the DataFrame that ran: ``df.count()`` runs a different plan (an
aggregate over ``df``), so use ``agg = df.groupBy().count(); agg.collect(); files_read(agg)``.
"""

from __future__ import annotations

__all__ = ["scan_metrics", "files_read", "files_skipped"]

_SCAN_METRICS = ("numFiles", "filesSize", "numOutputRows")
_SKIPPED = "metaindexFilesSkipped"


def _children(node):
    out = []
    seq = node.children()
    for k in range(seq.size()):
        out.append(seq.apply(k))
    name = node.nodeName()
    if name == "AdaptiveSparkPlan":
        out.append(node.executedPlan())
        # when a stage finds the result empty, AQE replaces the rest of the final plan by an
        # empty relation: the scans that ran are then only reachable from the initial plan
        out.append(node.initialPlan())
    # scans inside subquery expressions (scalar subqueries, dynamic partition pruning)
    subqueries = node.subqueries()
    for k in range(subqueries.size()):
        out.append(subqueries.apply(k))
    # query stages and reused exchanges hide their plan behind .plan() / .child()
    for attr in ("plan",):
        if name.endswith("QueryStage") or name.startswith("ReusedExchange"):
            try:
                out.append(getattr(node, attr)())
            except Exception:  # noqa: BLE001 - not every node has it
                pass
    return out


def _nodes(df):
    """Every node of ``df``'s executed plan, each once."""
    plan = df._jdf.queryExecution().executedPlan()
    identity = df.sparkSession._jvm.System.identityHashCode
    seen, stack = set(), [plan]
    while stack:
        node = stack.pop()
        ident = identity(node)  # one plan node reached twice (final and initial plan) counts once
        if ident in seen:
            continue
        seen.add(ident)
        yield node
        stack.extend(_children(node))


def scan_metrics(df) -> list[dict]:
    """Per file-source scan of ``df``'s executed plan: ``{"table", "numFiles", "filesSize",
    "numOutputRows"}`` (metrics Spark did not report are missing). Run an action first."""
    found = []
    for node in _nodes(df):
        metrics = node.metrics()
        if node.nodeName().startswith("Scan") and metrics.contains("numFiles"):
            row = {"table": node.nodeName()[5:].strip()}
            for m in _SCAN_METRICS:
                if metrics.contains(m):
                    row[m] = int(metrics.apply(m).value())
            found.append(row)
    return found


def files_skipped(df) -> int:
    """The plan's "files skipped by metaindex" (``metaindexFilesSkipped`` of the
    ``MetaIndexSkipping`` nodes the extension puts over its scans), summed over ``df``'s last
    execution; 0 when the plan has none (no extension, or ``enable(spark)`` alone)."""
    return sum(
        int(node.metrics().apply(_SKIPPED).value())
        for node in _nodes(df)
        if node.nodeName() == "MetaIndexSkipping" and node.metrics().contains(_SKIPPED)
    )


def files_read(df) -> int:
    """Spark's "number of files read", summed over the scans of ``df``'s last execution."""
    return sum(s.get("numFiles", 0) for s in scan_metrics(df))
