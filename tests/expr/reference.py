"""A reference evaluator for bound predicates on one row, with Spark SQL semantics (tests only).

``evaluate(expr, row)`` returns True, False or None (unknown), under three-valued logic. ``row``
maps a column's canonical name (``BoundReference.name``) to its Python value (None for NULL).
Spark's order: NaN is greater than every number and equal to itself, -0.0 equals 0.0, strings
compare by code point (= UTF-8 bytes), bytes unsigned.
"""

from __future__ import annotations

from typing import Any

from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundContains,
    BoundEndsWith,
    BoundEqualNullSafe,
    BoundEqualTo,
    BoundGreaterThan,
    BoundGreaterThanOrEqual,
    BoundIn,
    BoundIsNaN,
    BoundIsNull,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundNotEqualTo,
    BoundNotIn,
    BoundNotNaN,
    BoundNotNull,
    BoundNotStartsWith,
    BoundStartsWith,
    Not,
    Or,
)


def key(value: Any) -> Any:
    """Spark's sort key of a non-null value."""
    if isinstance(value, float):
        return (1, 0.0) if value != value else (0, value)
    return value


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def evaluate(expr, row: dict) -> bool | None:
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And):
        left, right = evaluate(expr.left, row), evaluate(expr.right, row)
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if isinstance(expr, Or):
        left, right = evaluate(expr.left, row), evaluate(expr.right, row)
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if isinstance(expr, Not):
        child = evaluate(expr.child, row)
        return None if child is None else not child
    x = row.get(expr.ref.name)
    if isinstance(expr, BoundIsNull):
        return x is None
    if isinstance(expr, BoundNotNull):
        return x is not None
    if isinstance(expr, BoundIsNaN):
        return is_nan(x)
    if isinstance(expr, BoundNotNaN):
        return not is_nan(x)
    if isinstance(expr, BoundEqualNullSafe):
        return x is not None and key(x) == key(expr.value)
    if x is None:
        return None
    if isinstance(expr, BoundIn):
        return any(key(x) == key(v) for v in expr.values)
    if isinstance(expr, BoundNotIn):
        return all(key(x) != key(v) for v in expr.values)
    if isinstance(expr, BoundStartsWith):
        return x.startswith(expr.value)
    if isinstance(expr, BoundNotStartsWith):
        return not x.startswith(expr.value)
    if isinstance(expr, BoundEndsWith):
        return x.endswith(expr.value)
    if isinstance(expr, BoundContains):
        return expr.value in x
    a, b = key(x), key(expr.value)
    if isinstance(expr, BoundEqualTo):
        return a == b
    if isinstance(expr, BoundNotEqualTo):
        return a != b
    if isinstance(expr, BoundLessThan):
        return a < b
    if isinstance(expr, BoundLessThanOrEqual):
        return a <= b
    if isinstance(expr, BoundGreaterThan):
        return a > b
    if isinstance(expr, BoundGreaterThanOrEqual):
        return a >= b
    raise TypeError(f"reference evaluator: unknown node {expr!r}")
