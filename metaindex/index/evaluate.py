"""Might-match for a whole predicate tree over every indexed file at once.

The predicate is bound and NOT-free (``metaindex.expr.rewrite_not``). Each leaf is answered by
every index on its column and the answers are ANDed (each index proves "no row matches" on
its own, so any one of them may skip the file); a leaf on a column without an index keeps
every file. ``And`` / ``Or`` combine per file; ``AlwaysTrue`` keeps and ``AlwaysFalse`` skips
every file. A ``Not`` left in the tree is an error: pushing NOT down needs Spark's
three-valued logic, which ``rewrite_not`` knows and an evaluator does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from metaindex import expr as _expr
from metaindex.expr.visitors import BooleanExpressionVisitor, nodes, visit
from metaindex.index.base import Index, leaf

__all__ = ["might_match", "evaluate", "Evaluation"]


@dataclass(frozen=True)
class Evaluation:
    """The outcome of one predicate over the indexed files.

    Attributes:
        kept: numpy bool per file, True = the file might hold a matching row.
        skipped_by_index: per index key, how many files that index alone would skip (the
            predicate evaluated with only that index; other leaves keep everything).
    """

    kept: np.ndarray
    skipped_by_index: dict = field(default_factory=dict)

    @property
    def num_skipped(self) -> int:
        return int(len(self.kept) - np.count_nonzero(self.kept))


def might_match(
    expr, indexes: Sequence[Index], metadata: Mapping[str, pa.Array], num_files: int
) -> np.ndarray:
    """For every indexed file, whether a row of it might satisfy ``expr``.

    Args:
        expr: a bound, NOT-free predicate (``bind`` then ``rewrite_not``).
        indexes: the table's indexes.
        metadata: per index (keyed by :attr:`Index.key`), its metadata column: one entry per
            file, the same files in the same order for every index.
        num_files: the number of files (the length of every metadata column).

    Returns:
        numpy bool array of ``num_files``: False only where some index proves that no row of
        the file satisfies ``expr``.

    Raises:
        ValueError: a ``Not`` in ``expr``; an index without metadata; a metadata column of
            the wrong length.
        TypeError: something in ``expr`` that is not a bound predicate.
    """
    return evaluate(expr, indexes, metadata, num_files, per_index=False).kept


def evaluate(
    expr,
    indexes: Sequence[Index],
    metadata: Mapping[str, pa.Array],
    num_files: int,
    *,
    per_index: bool = True,
) -> Evaluation:
    """:func:`might_match` plus how many files each index alone would skip.

    Each leaf is evaluated once per covering index; the tree is then combined once for all
    indexes together and (``per_index``) once per index. Both walks are iterative
    (:mod:`metaindex.expr.visitors`): a tree of any depth is evaluated.
    """
    if isinstance(num_files, bool) or not isinstance(num_files, (int, np.integer)) or num_files < 0:
        raise ValueError(f"num_files must be an int >= 0, got {num_files!r}")
    by_column: dict[str, list[Index]] = {}
    for ix in indexes:
        if ix.key not in metadata:
            raise ValueError(f"no metadata for index {ix!r} (key {ix.key!r})")
        if len(metadata[ix.key]) != num_files:
            raise ValueError(
                f"metadata of {ix!r} has {len(metadata[ix.key])} entries for {num_files} files"
            )
        by_column.setdefault(ix.column, []).append(ix)

    answers: dict[int, dict[str, np.ndarray]] = {}  # per leaf (by id; the tree keeps it alive)
    for node in nodes(expr):
        if isinstance(node, _expr.Not):
            raise ValueError(
                "the predicate still contains NOT: call "
                "metaindex.expr.rewrite_not before evaluating it"
            )
        if isinstance(node, (_expr.And, _expr.Or, _expr.AlwaysTrue, _expr.AlwaysFalse)):
            continue
        lf = leaf(node)
        answers[id(node)] = {
            ix.key: ix.might_match(lf, metadata[ix.key]) for ix in by_column.get(lf.column, ())
        }

    everything = np.ones(num_files, np.bool_)
    kept = visit(expr, _Combine(answers, None, everything))
    if kept is everything:
        kept = everything.copy()
    skipped = {}
    if per_index:
        skipped = {
            ix.key: int(
                num_files - np.count_nonzero(visit(expr, _Combine(answers, ix.key, everything)))
            )
            for ix in indexes
        }
    return Evaluation(kept, skipped)


class _Combine(BooleanExpressionVisitor):
    """The per-file verdict of a NOT-free tree from its leaves' answers: every index's
    (``only`` None) or one index's alone (other leaves keep every file)."""

    def __init__(self, answers: dict, only: str | None, everything: np.ndarray):
        self.answers, self.only, self.everything = answers, only, everything

    def visit_true(self) -> np.ndarray:
        return self.everything

    def visit_false(self) -> np.ndarray:
        return np.zeros(len(self.everything), np.bool_)

    def visit_not(self, child) -> np.ndarray:
        raise AssertionError("evaluate checks for Not first")  # pragma: no cover

    def visit_and(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left & right

    def visit_or(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left | right

    def visit_unbound_predicate(self, predicate) -> np.ndarray:
        raise AssertionError("evaluate rejects unbound leaves first")  # pragma: no cover

    def visit_bound_predicate(self, predicate) -> np.ndarray:
        per_leaf = self.answers[id(predicate)]
        if self.only is not None:
            return per_leaf.get(self.only, self.everything)
        out = self.everything
        for ans in per_leaf.values():
            out = out & ans
        return out
