"""``explain(spark, df)``: why each scan of a DataFrame skips, or does not — without running it.

Spark plans ``df`` afresh (a new ``QueryExecution`` of its logical plan, so ``df`` itself is
left as it was) and lists the files of each file-source scan of the physical plan
(``FileSourceScanExec.selectedPartitions``: the listing a run does first, no job). Listing is
where automatic skipping decides (:mod:`metaindex.spark.hook`), so each scan's decision is the
one a run makes; it is recorded in the session's stats (:mod:`metaindex.spark.stats`) like any
scan, and explained from there: per filter, used or dropped and why, the indexes that answered
it and how many files each rules out, the files Spark listed and dropped, and the files the
index rules out that Spark still reads because they changed since the last refresh.

Classic PySpark only (it walks the JVM plan), with skipping on (:func:`enable` or the
extension).
"""

from __future__ import annotations

from metaindex.engine.explain import Explanation, explain_conjuncts
from metaindex.errors import MetaIndexError, UnsupportedFeatureError
from metaindex.spark import stats as _stats

__all__ = ["explain", "SkippingNotEnabledError"]

_FILE_SCAN = "org.apache.spark.sql.execution.FileSourceScanExec"


class SkippingNotEnabledError(MetaIndexError, RuntimeError):
    """``explain`` on a session where automatic skipping is off: there is nothing to explain
    (call ``metaindex.spark.enable(spark)`` or run the extension)."""


def _seq(jseq) -> list:
    return [jseq.apply(k) for k in range(jseq.size())]


def _file_scans(spark, plan) -> list:
    """The ``FileSourceScanExec`` nodes of a physical plan (inside adaptive plans and
    subqueries too), each once."""
    identity = spark._jvm.System.identityHashCode
    found, seen, stack = [], set(), [plan]
    while stack:
        node = stack.pop()
        ident = identity(node)
        if ident in seen:
            continue
        seen.add(ident)
        if node.getClass().getName() == _FILE_SCAN:
            found.append(node)
            continue
        stack.extend(_seq(node.children()))
        stack.extend(_seq(node.subqueries()))
        if node.nodeName() == "AdaptiveSparkPlan":
            stack.append(node.executedPlan())
    return found


def _explain_scan(scan: _stats.ScanStats) -> Explanation:
    by_index = dict(scan.skipped_by_index)
    used = scan.version is not None
    return Explanation(
        scan.table,
        scan.version,
        explain_conjuncts(scan.conjuncts, by_index),
        by_index,
        scan.files_total,
        scan.files_total - scan.files_skipped,
        scan.files_skipped,
        scan.bytes_total,
        scan.bytes_total - scan.bytes_skipped,
        scan.bytes_skipped,
        unindexed_files=None,
        stale_files=max(scan.files_named - scan.files_skipped, 0) if used else None,
        must_keep_files=scan.must_keep_files,
        reason=None if used else scan.reason,
        delta_version=scan.delta_version,
        delta_files_skipped=scan.delta_files_skipped,
    )


def explain(spark, df) -> list:
    """Per file-source scan of ``df`` that skipping looked at (scans with filters), an
    :class:`metaindex.engine.explain.Explanation`: table, index version, per filter (top-level
    conjunct) used or dropped and why (unknown function, type mismatch, unknown column, no
    index, keys unavailable) and the indexes that answered it with how many files each rules
    out, the files Spark listed / drops, and ``stale_files`` (ruled out but read: changed since
    the last refresh). ``print(e)`` shows one as text.

    Plans and lists the files, runs no job. The scans are also recorded in the session's stats
    (:func:`metaindex.spark.last_query_stats`), as a query of their own. Scans without filters
    are not listed here (nothing can be skipped without one).

    Raises:
        SkippingNotEnabledError: skipping is not enabled for ``spark``.
        UnsupportedFeatureError: a Spark Connect session (no JVM plan to walk).
    """
    from metaindex.spark.hook import _is_connect, is_enabled

    if _is_connect(spark) or not hasattr(df, "_jdf"):
        raise UnsupportedFeatureError(
            "explain walks the JVM plan: classic PySpark only (not Spark Connect)"
        )
    if not is_enabled(spark):
        raise SkippingNotEnabledError(
            "automatic skipping is not enabled for this session: call "
            "metaindex.spark.enable(spark) (or run the extension "
            "spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions) first"
        )
    jsession = spark._jsparkSession
    # SKIP: a command in the plan (an INSERT...) is planned, never run again
    mode = spark._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    execution = jsession.sessionState().executePlan(df._jdf.queryExecution().logical(), mode)
    position = _stats.mark()
    for node in _file_scans(spark, execution.executedPlan()):
        node.selectedPartitions()  # the listing: where skipping decides
    return [_explain_scan(s) for s in _stats.scans_since(spark, position)]
