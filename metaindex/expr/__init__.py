"""Predicates: unbound (column names and Python values), bound (resolved columns, converted
values), ``rewrite_not`` and SQL parsing, with Spark SQL semantics.

Typical use::

    from metaindex.expr import bind, col, parse_sql, rewrite_not

    pred = parse_sql("temp > 30 AND city IN ('Paris', 'Rome')")   # or (col("temp") > 30) & ...
    bound = bind(pred, table.schema)          # no Not left; folded to the columns' types

Evaluators take the bound form: And, Or, AlwaysTrue, AlwaysFalse and the ``Bound*`` leaves.
Every walk over a tree (binding, ``rewrite_not``, ``~``, ``==``, the evaluators) is iterative
(:mod:`metaindex.expr.visitors`: :func:`visit` with a :class:`BooleanExpressionVisitor`), so
trees of any depth work; :func:`and_` / :func:`or_` build many-armed ANDs / ORs balanced.
"""

from metaindex.expr.binding import bind
from metaindex.expr.bound import (
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
    BoundPredicate,
    BoundReference,
    BoundStartsWith,
)
from metaindex.expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Contains,
    EndsWith,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    Reference,
    StartsWith,
    UnboundPredicate,
    col,
)
from metaindex.expr.rewrite import rewrite_not
from metaindex.expr.visitors import BooleanExpressionVisitor, and_, conjuncts, or_, visit

__all__ = [
    "BooleanExpression",
    "AlwaysTrue",
    "AlwaysFalse",
    "And",
    "Or",
    "Not",
    "Reference",
    "col",
    "UnboundPredicate",
    "EqualTo",
    "NotEqualTo",
    "LessThan",
    "LessThanOrEqual",
    "GreaterThan",
    "GreaterThanOrEqual",
    "EqualNullSafe",
    "In",
    "NotIn",
    "IsNull",
    "NotNull",
    "IsNaN",
    "NotNaN",
    "StartsWith",
    "NotStartsWith",
    "EndsWith",
    "Contains",
    "BoundReference",
    "BoundPredicate",
    "BoundEqualTo",
    "BoundNotEqualTo",
    "BoundLessThan",
    "BoundLessThanOrEqual",
    "BoundGreaterThan",
    "BoundGreaterThanOrEqual",
    "BoundEqualNullSafe",
    "BoundIn",
    "BoundNotIn",
    "BoundIsNull",
    "BoundNotNull",
    "BoundIsNaN",
    "BoundNotNaN",
    "BoundStartsWith",
    "BoundNotStartsWith",
    "BoundEndsWith",
    "BoundContains",
    "bind",
    "rewrite_not",
    "parse_sql",
    "parse_sql_conjuncts",
    "and_",
    "or_",
    "conjuncts",
    "visit",
    "BooleanExpressionVisitor",
]


def __getattr__(name):
    # SQL parsing: simple predicates without sqlglot (~0.2 s cold), the rest through it, so
    # a prune given a metaindex.expr predicate or a simple SQL string never imports sqlglot
    if name in ("parse_sql", "parse_sql_conjuncts"):
        from metaindex.expr import simple_sql

        return getattr(simple_sql, name)
    raise AttributeError(f"module 'metaindex.expr' has no attribute {name!r}")
