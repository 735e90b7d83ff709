"""Hypothesis strategies: bound predicates and rows over a small mixed-type schema (tests only)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
from hypothesis import strategies as st

from metaindex.expr import (
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
    BoundReference,
    BoundStartsWith,
    Not,
    Or,
)
from metaindex.expr.expressions import AlwaysFalse, AlwaysTrue

NAN = float("nan")

SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("b", pa.bool_()),
        ("d", pa.date32()),
        ("m", pa.decimal128(20, 2)),
        ("t", pa.timestamp("us", tz="UTC")),
    ]
)

_UTC = datetime.timezone.utc
# small pools, so that row values hit predicate values often
VALUES = {
    "i": [-(2**63), -1, 0, 1, 2, 7, 2**63 - 1],
    "f": [NAN, float("inf"), float("-inf"), -0.0, 0.0, 1.0, -1.5, 2.5, 1e300],
    "s": ["", "a", "ab", "abc", "b", "é", "\U0001f600", "z"],
    "b": [False, True],
    "d": [
        datetime.date(1970, 1, 1),
        datetime.date(2026, 1, 1),
        datetime.date(2026, 1, 2),
        datetime.date(1, 1, 1),
    ],
    "m": [Decimal("-1.50"), Decimal("0.00"), Decimal("1.50"), Decimal("99999999999999999.99")],
    "t": [
        datetime.datetime(2026, 1, 1, tzinfo=_UTC),
        datetime.datetime(1970, 1, 1, tzinfo=_UTC),
        datetime.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=_UTC),
    ],
}
REFS = {f.name: BoundReference(f.name, f) for f in SCHEMA}

_COMPARE = [
    BoundEqualTo,
    BoundNotEqualTo,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundGreaterThan,
    BoundGreaterThanOrEqual,
    BoundEqualNullSafe,
]


@st.composite
def bound_leaves(draw, allow_nan_values: bool = True):
    name = draw(st.sampled_from(sorted(VALUES)))
    ref, pool = REFS[name], VALUES[name]
    if not allow_nan_values:
        pool = [v for v in pool if not (isinstance(v, float) and v != v)]
    kinds = ["cmp", "in", "notin", "null", "notnull"]
    if name == "f":
        kinds += ["nan", "notnan"]
    if name == "s":
        kinds += ["starts", "notstarts", "ends", "contains"]
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        return draw(st.sampled_from(_COMPARE))(ref, draw(st.sampled_from(pool)))
    if kind in ("in", "notin"):
        values = frozenset(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3)))
        return (BoundIn if kind == "in" else BoundNotIn)(ref, values)
    if kind in ("starts", "notstarts", "ends", "contains"):
        cls = {
            "starts": BoundStartsWith,
            "notstarts": BoundNotStartsWith,
            "ends": BoundEndsWith,
            "contains": BoundContains,
        }[kind]
        return cls(ref, draw(st.sampled_from(["a", "b", "é", "\U0001f600", "ab"])))
    return {"null": BoundIsNull, "notnull": BoundNotNull, "nan": BoundIsNaN, "notnan": BoundNotNaN}[
        kind
    ](ref)


def bound_expressions(allow_nan_values: bool = True, with_not: bool = True):
    base = st.one_of(bound_leaves(allow_nan_values), st.just(AlwaysTrue()), st.just(AlwaysFalse()))

    def extend(children):
        options = [st.builds(And, children, children), st.builds(Or, children, children)]
        if with_not:
            options.append(st.builds(Not, children))
        return st.one_of(*options)

    return st.recursive(base, extend, max_leaves=8)


@st.composite
def rows(draw):
    return {
        name: draw(st.one_of(st.none(), st.sampled_from(pool))) for name, pool in VALUES.items()
    }


def leaves(expr):
    """Every leaf of an expression tree."""
    if isinstance(expr, (And, Or)):
        return leaves(expr.left) + leaves(expr.right)
    if isinstance(expr, Not):
        return leaves(expr.child)
    return [expr]
