"""Why a query skips, or does not: the Pruner's own record of one decision, made readable.

An :class:`Explanation` is built from the :class:`metaindex.engine.prune.PruneStats` of the
decision that was (or will be) used — nothing is evaluated a second way. Per top-level conjunct:
used or dropped, why (a :class:`metaindex.engine.prune.DropReason`), and the indexes that
answered it with how many files each of them alone rules out; then the totals and the files
kept because the index does not cover them (new or changed since the last refresh).
``MetaIndex.explain`` and ``metaindex prune --explain`` make one from a core decision,
``metaindex.spark.explain`` one per scan of a planned DataFrame.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["ConjunctExplanation", "Explanation", "explain_stats", "explain_conjuncts"]


@dataclass(frozen=True)
class ConjunctExplanation:
    """One top-level conjunct.

    Attributes:
        text: the conjunct as shown.
        used: whether it took part in the decision.
        reason: why not (a ``DropReason`` value: "unknown function", "type mismatch",
            "unknown column", "no index on the column", "keys unavailable"); None when used.
        detail: the message behind ``reason``.
        indexes: per index that answered it ("minmax(temp)"), how many of the index's files
            that index alone rules out (for the whole query: an index answering two conjuncts
            shows the same count on both).
        partition: a partition filter (Spark applies it; it only marks listed files).
    """

    text: str
    used: bool
    reason: str | None = None
    detail: str | None = None
    indexes: dict = field(default_factory=dict)
    partition: bool = False


@dataclass(frozen=True)
class Explanation:
    """One decision on one table.

    Attributes:
        table: the table (URI) or None.
        version: the index version used.
        conjuncts: a :class:`ConjunctExplanation` per top-level conjunct, in order.
        skipped_by_index: per index, how many of its files that index alone rules out.
        total_files / kept_files / skipped_files, total_bytes / kept_bytes / skipped_bytes:
            over the files decided (for a Spark scan: the files Spark listed, and those it
            dropped).
        unindexed_files: files kept because the index does not cover them (new, or changed
            since the last refresh); None where unknown (a Spark scan: the shim does not send
            the listing).
        stale_files: Spark scans only: files the index rules out that Spark still read because
            their size or mtime changed since the last refresh (None elsewhere).
        must_keep_files: files the index would skip but whose dates/timestamps Spark rebases
            under the session's read modes (decided by the other conjuncts).
        reason: why no index was used (a Spark scan of a table without one, an unreadable
            index), None when one was.
        delta_version / delta_files_skipped: a Spark scan of a Delta table: the Delta version
            read and the files of it Delta's own data skipping left out before the index saw
            the scan (``total_files`` are those Delta's index returned); None elsewhere.
    """

    table: str | None
    version: int | None
    conjuncts: tuple
    skipped_by_index: dict
    total_files: int
    kept_files: int
    skipped_files: int
    total_bytes: int = 0
    kept_bytes: int = 0
    skipped_bytes: int = 0
    unindexed_files: int | None = 0
    stale_files: int | None = None
    must_keep_files: int = 0
    reason: str | None = None
    delta_version: int | None = None
    delta_files_skipped: int | None = None

    @property
    def used(self) -> tuple:
        return tuple(c for c in self.conjuncts if c.used)

    @property
    def dropped(self) -> tuple:
        return tuple(c for c in self.conjuncts if not c.used)

    def as_dict(self) -> dict:
        """Plain JSON-able values (``metaindex prune --explain --json``)."""
        return asdict(self)

    def lines(self) -> list:
        """The explanation as text lines (``str(explanation)`` joins them)."""
        total = self.total_files
        ratio = self.skipped_files / total if total else 0.0
        version = "no index" if self.version is None else f"index version {self.version}"
        out = [
            (
                f"{self.table or 'table'} ({version}): {self.skipped_files:,} of {total:,} "
                f"files skipped ({ratio:.0%}), {self.kept_files:,} kept"
            )
        ]
        if self.version is None and self.reason:
            out.append(f"  every file read: {self.reason}")
        if self.delta_version is not None:
            before = (
                ""
                if self.delta_files_skipped is None
                else f": {self.delta_files_skipped:,} file(s) skipped by Delta first"
            )
            out.append(f"  Delta version {self.delta_version}{before}")
        width = max((len(c.text) for c in self.conjuncts), default=0)
        width = min(width, 48)
        for c in self.conjuncts:
            if c.used:
                what = (
                    "; ".join(f"{label} rules out {n:,}" for label, n in c.indexes.items())
                    or "constant"
                )
                tag = "partition" if c.partition else "used"
            else:
                what = c.reason + (f": {c.detail}" if c.detail else "")
                tag = "dropped"
            out.append(f"  {tag:<9} {c.text:<{width}}  {what}")
        if self.unindexed_files:
            out.append(
                f"  {self.unindexed_files:,} file(s) kept: not indexed (new or changed "
                "since the last refresh)"
            )
        if self.stale_files:
            out.append(
                f"  {self.stale_files:,} file(s) read although the index rules them "
                "out: changed since the last refresh"
            )
        if self.must_keep_files:
            out.append(
                f"  {self.must_keep_files:,} file(s) kept: old-calendar dates/"
                "timestamps Spark rebases"
            )
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def explain_conjuncts(outcomes, skipped_by_index: dict) -> tuple:
    """:class:`ConjunctExplanation` s of the Pruner's ``ConjunctOutcome`` s, each with the
    counts (from ``skipped_by_index``) of the indexes that answered it."""
    return tuple(
        ConjunctExplanation(
            c.text,
            c.used,
            None if c.reason is None else c.reason.value,
            c.detail,
            {label: skipped_by_index.get(label, 0) for label in c.indexes},
            c.partition,
        )
        for c in outcomes
    )


def explain_stats(stats, table: str | None = None) -> Explanation:
    """The :class:`Explanation` of one decision's ``PruneStats``."""
    by_index = dict(stats.skipped_by_index)
    conjuncts = explain_conjuncts(stats.conjuncts, by_index)
    return Explanation(
        table,
        stats.version,
        conjuncts,
        by_index,
        stats.total_files,
        stats.kept_files,
        stats.skipped_files,
        stats.total_bytes,
        stats.kept_bytes,
        stats.skipped_bytes,
        stats.unindexed_files,
        None,
        stats.must_keep_files,
    )
