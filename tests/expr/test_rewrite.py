"""rewrite_not: NOT pushed to the leaves, exactly under Spark's three-valued logic."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings

from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundContains,
    BoundEndsWith,
    BoundEqualNullSafe,
    BoundIsNull,
    BoundNotEqualTo,
    BoundReference,
    Contains,
    EndsWith,
    EqualTo,
    In,
    IsNaN,
    Not,
    NotIn,
    NotNaN,
    NotNull,
    Or,
    col,
    rewrite_not,
)
from tests.expr.reference import evaluate
from tests.expr.strategies import bound_expressions, leaves, rows

_INEXACT = (BoundEndsWith, BoundContains)


def _has_not(expr) -> bool:
    if isinstance(expr, Not):
        return True
    if isinstance(expr, (And, Or)):
        return _has_not(expr.left) or _has_not(expr.right)
    return False


@settings(max_examples=200, deadline=None)
@given(expr=bound_expressions(), row=rows())
def test_not_pushed_down_selects_the_same_rows(expr, row):
    negated = Not(expr)
    rewritten = rewrite_not(negated)
    assert not _has_not(rewritten), f"rewrite_not left a Not in {rewritten}"
    before, after = evaluate(negated, row) is True, evaluate(rewritten, row) is True
    if before:
        assert after, f"rewrite_not dropped a matching row: {negated} -> {rewritten} on {row}"
    if not any(isinstance(leaf, _INEXACT) for leaf in leaves(expr)):
        assert before == after, (
            "rewrite_not must be exact without EndsWith/Contains: "
            f"{negated} -> {rewritten} on {row}"
        )


@settings(max_examples=100, deadline=None)
@given(expr=bound_expressions(), row=rows())
def test_rewrite_keeps_three_valued_results_without_inexact_leaves(expr, row):
    if any(isinstance(leaf, _INEXACT) for leaf in leaves(expr)):
        return
    assert evaluate(rewrite_not(expr), row) == evaluate(expr, row), (
        f"{expr} changed its value (incl. unknown) on {row}"
    )


@settings(max_examples=100, deadline=None)
@given(expr=bound_expressions(with_not=False))
def test_rewrite_is_identity_without_not(expr):
    assert rewrite_not(expr) == expr


def test_examples_from_the_contract():
    ref = BoundReference("a", pa.field("a", pa.int32()))
    assert rewrite_not(Not(BoundEqualNullSafe(ref, 3))) == Or(
        BoundIsNull(ref), BoundNotEqualTo(ref, 3)
    )
    assert rewrite_not(Not(col("a") == 1)) == (col("a") != 1)
    assert rewrite_not(Not(col("a") < 1)) == (col("a") >= 1)
    assert rewrite_not(Not(In("a", [1, None]))) == NotIn("a", [1, None])
    assert rewrite_not(Not(IsNaN("a"))) == NotNaN("a")
    assert rewrite_not(Not(NotNull("a"))) == col("a").is_null()
    assert rewrite_not(Not(EndsWith("s", "x"))) is AlwaysTrue()
    assert rewrite_not(Not(Contains("s", "x"))) is AlwaysTrue()
    assert rewrite_not(Not(Not(col("a") == 1))) == EqualTo("a", 1)
    assert rewrite_not(Not(And(col("a") == 1, Not(col("b") > 2)))) == Or(
        col("a") != 1, col("b") > 2
    )
    assert rewrite_not(Not(Or(AlwaysFalse(), col("a") == 1))) == (col("a") != 1)


def test_rewrite_rejects_non_predicates():
    with pytest.raises(TypeError):
        rewrite_not("a = 1")
