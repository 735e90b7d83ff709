"""Push ``Not`` down to the leaves, exactly under SQL's three-valued logic.

De Morgan holds in three-valued logic, and every leaf except ``EndsWith`` / ``Contains`` has an
exact opposite (``~``): ``NOT (a < v)`` is ``a >= v``, ``NOT (a IN s)`` is ``a NOT IN s``,
``NOT (a <=> v)`` is ``a IS NULL OR a <> v``, ``NOT isnan(a)`` is ``NotNaN`` (true for NULL).
A negated ``EndsWith`` / ``Contains`` becomes ``AlwaysTrue``: a superset of its rows, which is all
pruning needs (it may keep more files, never fewer).

The rewrite is one bottom-up walk (:func:`metaindex.expr.visitors.visit`) that yields, for each
subtree, its NOT-free form and the NOT-free form of its opposite; a ``Not`` swaps the two. Each
node is visited once however deeply ``Not`` / ``And`` / ``Or`` nest.
"""

from __future__ import annotations

from metaindex.expr.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or
from metaindex.expr.visitors import BooleanExpressionVisitor, nodes, visit

__all__ = ["rewrite_not"]


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` without any ``Not`` node, selecting the same rows.

    Works on bound and unbound expressions alike. The result is exact except where a negated
    ``EndsWith`` / ``Contains`` is widened to ``AlwaysTrue``; a tree without ``Not`` comes back
    as it is.

    Raises:
        TypeError: ``expr`` is not a predicate.
    """
    if not isinstance(expr, BooleanExpression):
        raise TypeError(f"rewrite_not takes a predicate, got {type(expr).__name__}")
    if not any(isinstance(n, Not) for n in nodes(expr)):
        return expr
    return visit(expr, _PushNot())[0]


class _PushNot(BooleanExpressionVisitor[tuple]):
    """``(NOT-free form, NOT-free form of the opposite)`` of each subtree."""

    def visit_true(self) -> tuple:
        return AlwaysTrue(), AlwaysFalse()

    def visit_false(self) -> tuple:
        return AlwaysFalse(), AlwaysTrue()

    def visit_not(self, child: tuple) -> tuple:
        return child[1], child[0]

    def visit_and(self, left: tuple, right: tuple) -> tuple:
        return And(left[0], right[0]), Or(left[1], right[1])

    def visit_or(self, left: tuple, right: tuple) -> tuple:
        return Or(left[0], right[0]), And(left[1], right[1])

    def visit_unbound_predicate(self, predicate) -> tuple:
        return predicate, _opposite(predicate)

    def visit_bound_predicate(self, predicate) -> tuple:
        return predicate, _opposite(predicate)


def _opposite(leaf: BooleanExpression) -> BooleanExpression:
    negated = ~leaf
    if isinstance(negated, Not):  # no exact opposite (EndsWith, Contains): keep every row
        return AlwaysTrue()
    return negated
