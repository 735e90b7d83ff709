"""Push ``Not`` down to the leaves, exactly under SQL's three-valued logic.

De Morgan holds in three-valued logic, and every leaf except ``EndsWith`` / ``Contains`` has an
exact opposite (``~``): ``NOT (a < v)`` is ``a >= v``, ``NOT (a IN s)`` is ``a NOT IN s``,
``NOT (a <=> v)`` is ``a IS NULL OR a <> v``, ``NOT isnan(a)`` is ``NotNaN`` (true for NULL).
A negated ``EndsWith`` / ``Contains`` becomes ``AlwaysTrue``: a superset of its rows, which is all
pruning needs (it may keep more files, never fewer).
"""

from __future__ import annotations

from metaindex.expr.expressions import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or

__all__ = ["rewrite_not"]


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` without any ``Not`` node, selecting the same rows.

    Works on bound and unbound expressions alike. The result is exact except where a negated
    ``EndsWith`` / ``Contains`` is widened to ``AlwaysTrue``.

    Raises:
        TypeError: ``expr`` is not a predicate.
    """
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Not):
        return _negate(expr.child)
    if not isinstance(expr, BooleanExpression):
        raise TypeError(f"rewrite_not takes a predicate, got {type(expr).__name__}")
    return expr


def _negate(expr: BooleanExpression) -> BooleanExpression:
    if isinstance(expr, And):
        return Or(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Or):
        return And(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Not):
        return rewrite_not(expr.child)
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return ~expr
    if not isinstance(expr, BooleanExpression):
        raise TypeError(f"rewrite_not takes a predicate, got {type(expr).__name__}")
    negated = ~expr
    if isinstance(negated, Not):  # no exact opposite (EndsWith, Contains): keep every row
        return AlwaysTrue()
    return negated
