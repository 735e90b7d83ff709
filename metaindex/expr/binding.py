"""bind(): unbound predicates -> bound ones, with literals folded into the column's type.

``bind`` first pushes every ``Not`` to the leaves (:func:`rewrite_not`), so that each leaf it
folds sits in a positive position: there a leaf may be replaced by anything that selects at
least its rows. Folding is exact where Spark's comparison is exact (``int8 < 1000`` is
``IS NOT NULL``, ``int = 1.5`` is ``AlwaysFalse``, ``int < 1.5`` is ``int <= 1``) and widened
where Spark's result depends on rounding or ANSI mode (see :mod:`metaindex.expr.literals`).
Given the session time zone, literals that Spark reads in it (``ts >= '2024-06-01 00:00:00'``
on a TIMESTAMP column, a TIMESTAMP_NTZ or DATE literal against one, a TIMESTAMP literal against
a DATE or TIMESTAMP_NTZ column) bind exactly; without it they are widened by the widest offset
a zone can have (18 hours). A comparison that cannot be expressed on the column (a string
column against a number, which Spark answers by casting the column) becomes ``AlwaysTrue``.

The tree is walked once (:func:`metaindex.expr.visitors.visit`), without recursion.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from metaindex.errors import SchemaError
from metaindex.expr import bound as bd
from metaindex.expr import expressions as ex
from metaindex.expr.literals import ABOVE, BELOW, UNKNOWN, Cuts, Domain, cuts_for, domain_for
from metaindex.expr.resolve import resolve
from metaindex.expr.rewrite import rewrite_not
from metaindex.expr.temporal import session_zone
from metaindex.expr.visitors import BooleanExpressionVisitor, visit

__all__ = ["bind"]


def bind(
    expr: ex.BooleanExpression,
    schema: pa.Schema,
    case_sensitive: bool = False,
    *,
    time_zone: str | None = None,
) -> ex.BooleanExpression:
    """Resolve columns against ``schema`` and convert literals to the columns' types.

    The result holds no ``Not``; it selects every row the input selects under Spark SQL
    semantics (exactly the same rows wherever Spark's comparison is exact).

    Args:
        expr: an unbound predicate (bound leaves inside it are kept as they are).
        schema: the table's Arrow schema.
        case_sensitive: match column names exactly instead of Spark's case-insensitive default.
        time_zone: the session time zone (``spark.sql.session.timeZone``: an IANA name or an
            offset such as ``+08:00``) that string, TIMESTAMP_NTZ and DATE literals are read in
            against TIMESTAMP columns, and that DATE and TIMESTAMP_NTZ columns are read in
            against TIMESTAMP literals, as Spark casts them. None: unknown, such comparisons
            are widened to cover every zone.

    Raises:
        SchemaError: an unknown or ambiguous column, or a literal the column cannot be compared
            with (e.g. a date against an int column).
        ExpressionError: a string literal that cannot be read as the column's type; an unknown
            time zone.
        TypeError: ``schema`` is not a ``pa.Schema`` or ``expr`` not a predicate.
    """
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"bind needs a pyarrow.Schema, got {type(schema).__name__}")
    zone = None if time_zone is None else session_zone(time_zone)
    return visit(rewrite_not(expr), _Binder(schema, case_sensitive, zone))


class _Binder(BooleanExpressionVisitor[ex.BooleanExpression]):
    """Binds each leaf; ``And`` / ``Or`` are rebuilt over the bound children (constants fold)."""

    def __init__(self, schema: pa.Schema, case_sensitive: bool, zone: datetime.tzinfo | None):
        self.schema, self.case_sensitive, self.zone = schema, case_sensitive, zone
        self.refs: dict = {}  # column name -> BoundReference, resolved once per bind

    def visit_true(self) -> ex.BooleanExpression:
        return ex.AlwaysTrue()

    def visit_false(self) -> ex.BooleanExpression:
        return ex.AlwaysFalse()

    def visit_not(self, child: ex.BooleanExpression) -> ex.BooleanExpression:
        raise AssertionError("rewrite_not leaves no Not")  # pragma: no cover

    def visit_and(self, left, right) -> ex.BooleanExpression:
        return ex.And(left, right)

    def visit_or(self, left, right) -> ex.BooleanExpression:
        return ex.Or(left, right)

    def visit_unbound_predicate(self, predicate: ex.UnboundPredicate) -> ex.BooleanExpression:
        name = predicate.term.name
        ref = self.refs.get(name)
        if ref is None:
            ref = self.refs[name] = resolve(self.schema, name, self.case_sensitive)
        return _bind_leaf(predicate, ref, self.zone)

    def visit_bound_predicate(self, predicate) -> ex.BooleanExpression:
        return predicate


def _bind_leaf(
    pred: ex.UnboundPredicate, ref: bd.BoundReference, zone: datetime.tzinfo | None
) -> ex.BooleanExpression:
    if isinstance(pred, ex.IsNull):
        return bd.BoundIsNull(ref)
    if isinstance(pred, ex.NotNull):
        return bd.BoundNotNull(ref)
    dom = domain_for(ref.type)
    if isinstance(pred, (ex.IsNaN, ex.NotNaN)):
        return _bind_nan(pred, ref, dom)
    if dom is None:
        raise SchemaError(
            f"column {ref.name!r} of type {ref.type} cannot be compared with a "
            "value (only IS [NOT] NULL)"
        )
    if isinstance(pred, (ex.StartsWith, ex.NotStartsWith, ex.EndsWith, ex.Contains)):
        return _bind_pattern(pred, ref, dom)
    if isinstance(pred, ex.In):
        return _bind_in(ref, dom, pred.values, zone)
    if isinstance(pred, ex.NotIn):
        return _bind_not_in(ref, dom, pred.values, zone)
    if isinstance(pred, ex.EqualNullSafe):
        if pred.value is None:
            return bd.BoundIsNull(ref)
        return _compare(ex.EqualTo, ref, dom, pred.value, zone)  # same rows once no Not is above
    assert isinstance(pred, ex._LiteralPredicate), f"unknown predicate {pred!r}"
    return _compare(type(pred), ref, dom, pred.value, zone)


def _bind_nan(
    pred: ex.UnboundPredicate, ref: bd.BoundReference, dom: Domain | None
) -> ex.BooleanExpression:
    is_nan = isinstance(pred, ex.IsNaN)
    kind = dom.kind if dom is not None else None
    if kind == "float":
        return bd.BoundIsNaN(ref) if is_nan else bd.BoundNotNaN(ref)
    if kind in ("int", "decimal"):
        return ex.AlwaysFalse() if is_nan else ex.AlwaysTrue()
    if kind == "string":  # Spark casts the string to double: 'NaN' is NaN
        return ex.AlwaysTrue()
    raise SchemaError(f"isnan needs a numeric column; {ref.name!r} is {ref.type}")


def _bind_pattern(
    pred: ex._PatternPredicate, ref: bd.BoundReference, dom: Domain
) -> ex.BooleanExpression:
    value = pred.value
    if value is None:
        return ex.AlwaysFalse()
    if dom.kind == "string" and isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return ex.AlwaysTrue()
    elif dom.kind == "binary" and isinstance(value, str):
        value = value.encode("utf-8")
    elif dom.kind not in ("string", "binary"):
        return ex.AlwaysTrue()  # Spark casts the column to a string first
    negated = isinstance(pred, ex.NotStartsWith)
    if not value:
        return ex.AlwaysFalse() if negated else bd.BoundNotNull(ref)
    cls = {
        ex.StartsWith: bd.BoundStartsWith,
        ex.NotStartsWith: bd.BoundNotStartsWith,
        ex.EndsWith: bd.BoundEndsWith,
        ex.Contains: bd.BoundContains,
    }[type(pred)]
    return cls(ref, value)


# --- comparisons from cuts --------------------------------------------------------------------


def _eq(ref: bd.BoundReference, dom: Domain, v: Any) -> ex.BooleanExpression:
    return bd.BoundIsNaN(ref) if dom.is_nan(v) else bd.BoundEqualTo(ref, dom.value(v))


def _not_nan(ref: bd.BoundReference) -> ex.BooleanExpression:
    return ex.And(bd.BoundNotNull(ref), bd.BoundNotNaN(ref))


def _le(ref: bd.BoundReference, dom: Domain, t: Any) -> ex.BooleanExpression:
    """``x <= t``, folded at the domain's ends."""
    if t is BELOW:
        return ex.AlwaysFalse()
    if t is ABOVE or (dom.hi is not None and not dom.less(t, dom.hi)):
        return bd.BoundNotNull(ref)
    if dom.lo is not None and not dom.less(dom.lo, t):
        return _eq(ref, dom, dom.lo)
    return bd.BoundLessThanOrEqual(ref, dom.value(t))


def _ge(ref: bd.BoundReference, dom: Domain, t: Any) -> ex.BooleanExpression:
    """``x >= t``, folded at the domain's ends."""
    if t is ABOVE:
        return ex.AlwaysFalse()
    if t is BELOW or (dom.lo is not None and not dom.less(dom.lo, t)):
        return bd.BoundNotNull(ref)
    if dom.hi is not None and not dom.less(t, dom.hi):
        return _eq(ref, dom, dom.hi)
    return bd.BoundGreaterThanOrEqual(ref, dom.value(t))


def _range(ref: bd.BoundReference, dom: Domain, lo: Any, hi: Any) -> ex.BooleanExpression:
    """``lo <= x <= hi``."""
    if lo is ABOVE or hi is BELOW or dom.less(hi, lo):
        return ex.AlwaysFalse()
    if lo is not BELOW and hi is not ABOVE and dom.key(lo) == dom.key(hi):
        return _eq(ref, dom, lo)
    return _and_non_null(_ge(ref, dom, lo), _le(ref, dom, hi))


def _and_non_null(a: ex.BooleanExpression, b: ex.BooleanExpression) -> ex.BooleanExpression:
    """``a AND b``, without an ``IS NOT NULL`` that the other side implies."""

    def implies(e: ex.BooleanExpression) -> bool:
        return isinstance(e, bd.BoundPredicate) and not isinstance(
            e, (bd.BoundIsNull, bd.BoundNotNaN)
        )

    if isinstance(a, bd.BoundNotNull) and implies(b):
        return b
    if isinstance(b, bd.BoundNotNull) and implies(a):
        return a
    return ex.And(a, b)


def _not_equal(ref: bd.BoundReference, dom: Domain, c: Cuts) -> ex.BooleanExpression:
    """``x <= c.lt OR x >= c.gt`` (with ``c.point``: exactly ``x <> point``)."""
    if c.point is not None and dom.is_nan(c.point):
        return _not_nan(ref)
    if c.lt is UNKNOWN or c.gt is UNKNOWN:
        return bd.BoundNotEqualTo(ref, dom.value(c.point))
    if c.lt is BELOW or c.gt is ABOVE:  # the literal sits at an end of the domain
        return ex.Or(_le(ref, dom, c.lt), _ge(ref, dom, c.gt))
    if c.point is not None:
        return bd.BoundNotEqualTo(ref, dom.value(c.point))
    nxt = dom.succ(c.lt)
    if not dom.less(c.lt, c.gt) or (nxt is not UNKNOWN and not dom.less(nxt, c.gt)):
        return bd.BoundNotNull(ref)  # no value of the column is left out
    return ex.Or(_le(ref, dom, c.lt), _ge(ref, dom, c.gt))


def _equal_to(ref, dom, c):
    return _eq(ref, dom, c.point) if c.point is not None else _range(ref, dom, c.ge, c.le)


def _less_than(ref, dom, c):
    if c.point is None:
        return _le(ref, dom, c.lt)
    if dom.is_nan(c.point):
        return _not_nan(ref)
    if c.lt is BELOW:
        return ex.AlwaysFalse()
    if dom.lo is not None and c.lt is not UNKNOWN and not dom.less(dom.lo, c.lt):
        return _eq(ref, dom, dom.lo)
    return bd.BoundLessThan(ref, dom.value(c.point))


def _greater_than(ref, dom, c):
    if c.point is None:
        return _ge(ref, dom, c.gt)
    if c.gt is ABOVE:
        return ex.AlwaysFalse()
    if dom.hi is not None and c.gt is not UNKNOWN and not dom.less(c.gt, dom.hi):
        return _eq(ref, dom, dom.hi)
    return bd.BoundGreaterThan(ref, dom.value(c.point))


_EMIT: dict[type, Callable[[bd.BoundReference, Domain, Cuts], ex.BooleanExpression]] = {
    ex.EqualTo: _equal_to,
    ex.NotEqualTo: _not_equal,
    ex.LessThan: _less_than,
    ex.LessThanOrEqual: lambda ref, dom, c: _le(ref, dom, c.point if c.point is not None else c.le),
    ex.GreaterThan: _greater_than,
    ex.GreaterThanOrEqual: lambda ref, dom, c: _ge(
        ref, dom, c.point if c.point is not None else c.ge
    ),
}


def _compare(
    op: type, ref: bd.BoundReference, dom: Domain, value: Any, zone: datetime.tzinfo | None
) -> ex.BooleanExpression:
    if value is None:
        return ex.AlwaysFalse()  # a comparison with NULL is unknown
    cuts = cuts_for(dom, value, ref.name, zone)
    if not isinstance(cuts, Cuts):  # KEEP
        return ex.AlwaysTrue()
    return _EMIT[op](ref, dom, cuts)


def _bind_in(
    ref: bd.BoundReference, dom: Domain, values: tuple, zone: datetime.tzinfo | None
) -> ex.BooleanExpression:
    points: dict[Any, Any] = {}
    result: ex.BooleanExpression = ex.AlwaysFalse()
    for value in values:
        if value is None:
            continue
        cuts = cuts_for(dom, value, ref.name, zone)
        if not isinstance(cuts, Cuts):  # KEEP
            return ex.AlwaysTrue()
        if cuts.point is not None and not dom.is_nan(cuts.point):
            points[dom.key(cuts.point)] = dom.value(cuts.point)
        else:
            result = ex.Or(result, _equal_to(ref, dom, cuts))
    if dom.kind == "bool" and len(points) == 2:
        return bd.BoundNotNull(ref)
    if len(points) == 1:
        result = ex.Or(bd.BoundEqualTo(ref, next(iter(points.values()))), result)
    elif points:
        result = ex.Or(bd.BoundIn(ref, frozenset(points.values())), result)
    return result


def _bind_not_in(
    ref: bd.BoundReference, dom: Domain, values: tuple, zone: datetime.tzinfo | None
) -> ex.BooleanExpression:
    if any(value is None for value in values):
        return ex.AlwaysFalse()  # x NOT IN (..., NULL) is never true
    points: dict[Any, Any] = {}
    result: ex.BooleanExpression = ex.AlwaysTrue()
    for value in values:
        cuts = cuts_for(dom, value, ref.name, zone)
        if not isinstance(cuts, Cuts):  # KEEP
            continue  # x <> value cannot be expressed: widen that conjunct to AlwaysTrue
        if cuts.point is not None and not dom.is_nan(cuts.point):
            points[dom.key(cuts.point)] = cuts
        else:
            result = _and_non_null(result, _not_equal(ref, dom, cuts))
    if len(points) == 1:
        result = _and_non_null(_not_equal(ref, dom, next(iter(points.values()))), result)
    elif points:
        if dom.kind == "bool":
            return ex.AlwaysFalse()
        values_set = frozenset(dom.value(c.point) for c in points.values())
        result = _and_non_null(bd.BoundNotIn(ref, values_set), result)
    return result
