"""Unbound and bound expression classes: construction, folding, operators, equality, negation."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import metaindex.expr as mx
from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
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
    col,
)


def test_public_names_are_exported():
    for name in mx.__all__:
        assert hasattr(mx, name), f"metaindex.expr.__all__ lists {name} but the package lacks it"
    for name in (
        "bind",
        "rewrite_not",
        "parse_sql",
        "col",
        "BoundReference",
        "BoundEqualNullSafe",
        "BoundNotStartsWith",
    ):
        assert name in mx.__all__, f"{name} is part of the contract and must be in __all__"


def test_reference_operators_build_predicates():
    x = col("x")
    assert (x == 1) == EqualTo("x", 1)
    assert (x != 1) == NotEqualTo("x", 1)
    assert (x < 1) == LessThan("x", 1)
    assert (x <= 1) == LessThanOrEqual("x", 1)
    assert (x > 1) == GreaterThan("x", 1)
    assert (x >= 1) == GreaterThanOrEqual("x", 1)
    assert x.isin(1, 2) == In("x", (1, 2)) == x.isin([1, 2])
    assert (
        x.is_null() == IsNull("x") and x.is_not_null() == NotNull("x") and x.is_nan() == IsNaN("x")
    )
    assert col("s").startswith("a") == StartsWith("s", "a")
    assert ((x > 1) & (x < 3)) == And(GreaterThan("x", 1), LessThan("x", 3))
    assert ((x > 1) | (x < 3)) == Or(GreaterThan("x", 1), LessThan("x", 3))


def test_reference_has_no_truth_value():
    with pytest.raises(TypeError, match="no truth value"):
        bool(col("x"))


def test_equality_distinguishes_columns_values_and_classes():
    assert EqualTo("a", 1) != EqualTo("b", 1), "different columns must not compare equal"
    assert EqualTo("a", 1) != EqualTo("a", 2)
    assert EqualTo("a", 1) != NotEqualTo("a", 1)
    assert len({EqualTo("a", 1), EqualTo("a", 1), EqualTo("b", 1)}) == 2, (
        "hash must follow equality"
    )
    assert EqualTo("a", float("nan")) == EqualTo("a", float("nan")), (
        "NaN literals are canonical, so equal"
    )


def test_and_or_not_fold_constants():
    p = col("x") > 1
    assert And(AlwaysTrue(), p) is p and And(p, AlwaysTrue()) is p
    assert And(AlwaysFalse(), p) is AlwaysFalse() and And(p, AlwaysFalse()) is AlwaysFalse()
    assert Or(AlwaysTrue(), p) is AlwaysTrue() and Or(p, AlwaysTrue()) is AlwaysTrue()
    assert Or(AlwaysFalse(), p) is p and Or(p, AlwaysFalse()) is p
    assert And(p, p) is p and Or(p, p) is p
    assert Not(AlwaysTrue()) is AlwaysFalse() and Not(AlwaysFalse()) is AlwaysTrue()
    assert Not(Not(p)) is p
    assert AlwaysTrue() is AlwaysTrue(), "constants are singletons"


def test_folding_does_not_reinitialise_returned_nodes():
    inner = And(col("a") == 1, col("b") == 2)
    outer = And(AlwaysTrue(), inner)
    assert outer is inner and inner.left == EqualTo("a", 1) and inner.right == EqualTo("b", 2)
    nn = Not(Not(inner))
    assert nn is inner and inner.left == EqualTo("a", 1)


@pytest.mark.parametrize(
    "pred, negated",
    [
        (EqualTo("x", 1), NotEqualTo("x", 1)),
        (NotEqualTo("x", 1), EqualTo("x", 1)),
        (LessThan("x", 1), GreaterThanOrEqual("x", 1)),
        (LessThanOrEqual("x", 1), GreaterThan("x", 1)),
        (GreaterThan("x", 1), LessThanOrEqual("x", 1)),
        (GreaterThanOrEqual("x", 1), LessThan("x", 1)),
        (In("x", [1, None]), NotIn("x", [1, None])),
        (NotIn("x", [1]), In("x", [1])),
        (IsNull("x"), NotNull("x")),
        (NotNull("x"), IsNull("x")),
        (IsNaN("x"), NotNaN("x")),
        (NotNaN("x"), IsNaN("x")),
        (StartsWith("s", "a"), NotStartsWith("s", "a")),
        (NotStartsWith("s", "a"), StartsWith("s", "a")),
        (EqualNullSafe("x", 1), Or(IsNull("x"), NotEqualTo("x", 1))),
        (EqualNullSafe("x", None), NotNull("x")),
        (EndsWith("s", "a"), Not(EndsWith("s", "a"))),
        (Contains("s", "a"), Not(Contains("s", "a"))),
        (And(EqualTo("x", 1), IsNull("y")), Or(NotEqualTo("x", 1), NotNull("y"))),
    ],
)
def test_invert_is_the_three_valued_opposite(pred, negated):
    assert ~pred == negated


def test_literals_are_normalised():
    assert EqualTo("x", np.int64(5)).value == 5 and type(EqualTo("x", np.int64(5)).value) is int
    assert EqualTo("x", np.float32(1.5)).value == 1.5
    assert EqualTo("x", bytearray(b"ab")).value == b"ab"
    assert In("x", iter([1, 2])).values == (1, 2)
    assert math.isnan(EqualTo("x", np.float64("nan")).value)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: EqualTo("x", [1]), "unsupported literal"),
        (lambda: EqualTo("x", {1: 2}), "unsupported literal"),
        (lambda: EqualTo("x", col("y")), "two columns"),
        (lambda: EqualTo("x", Decimal("NaN")), "must be finite"),
        (lambda: In("x", 5), "iterable"),
        (lambda: In("x", "abc"), "iterable"),
        (lambda: StartsWith("s", 5), "str or bytes"),
        (lambda: EqualTo(5, 1), "Reference"),
        (lambda: Reference(""), "non-empty"),
        (lambda: And(EqualTo("x", 1), True), "predicate"),
        (lambda: Not("x"), "predicate"),
    ],
)
def test_bad_arguments_raise_type_error_saying_what_is_accepted(build, message):
    with pytest.raises(TypeError, match=message):
        build()


def test_bound_classes_are_frozen_and_compare_by_value():
    ref = mx.BoundReference("x", pa.field("x", pa.int32()))
    assert ref.path == ("x",)
    a, b = (
        mx.BoundEqualTo(ref, 1),
        mx.BoundEqualTo(mx.BoundReference("x", pa.field("x", pa.int32())), 1),
    )
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.value = 2  # type: ignore[misc]
    assert ~mx.BoundIn(ref, frozenset({1})) == mx.BoundNotIn(ref, frozenset({1}))
    assert ~mx.BoundEqualNullSafe(ref, 1) == Or(mx.BoundIsNull(ref), mx.BoundNotEqualTo(ref, 1))
    assert ~mx.BoundEndsWith(ref, "a") == Not(mx.BoundEndsWith(ref, "a"))
    ts = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert mx.BoundLessThan(ref, ts) == mx.BoundLessThan(ref, ts)
