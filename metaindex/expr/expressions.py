"""Unbound predicates: what users write, before any schema is known.

Modelled on pyiceberg's ``expressions``: small frozen classes, ``~`` gives the exact opposite
under SQL's three-valued logic, and ``And`` / ``Or`` / ``Not`` fold the constants
``AlwaysTrue`` / ``AlwaysFalse`` as they are built. A predicate names its column with a
:class:`Reference` (``col("a")``) and carries a plain Python value; :func:`metaindex.expr.bind`
resolves the column and converts the value with Spark SQL's comparison rules.

Semantics are Spark SQL's: a comparison with NULL is unknown (never true), ``IsNaN`` is false for
NULL (Spark's ``isnan`` is never NULL) so ``NotNaN`` holds for NULL, ``x NOT IN (1, NULL)`` is
never true, ``<=>`` is never unknown.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

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
]

LITERAL_TYPES = (
    "None, bool, int, float, decimal.Decimal, str, bytes, datetime.date, datetime.datetime"
)


def _key(value: Any) -> Any:
    if isinstance(value, Reference):
        return ("Reference", value.name)
    if isinstance(value, tuple):
        return tuple(_key(v) for v in value)
    return value


class BooleanExpression:
    """Base of every predicate, bound or unbound: ``&``, ``|`` and ``~`` build new ones.

    Equality and hashing compare the class and the fields (column references by name), so two
    predicates built the same way are equal.
    """

    __slots__ = ()

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return And(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return Or(self, other)

    def __invert__(self) -> BooleanExpression:
        return Not(self)

    def _fields_key(self) -> tuple:
        """A leaf's fields, comparable and hashable (``And`` / ``Or`` / ``Not`` compare
        through their children: :func:`metaindex.expr.visitors.equal`)."""
        return tuple(_key(getattr(self, f.name)) for f in fields(self))  # type: ignore[arg-type]  # leaves are dataclasses

    def __eq__(self, other: object) -> bool:
        from metaindex.expr.visitors import equal  # visitors builds on this module

        return equal(self, other)

    def __hash__(self) -> int:
        from metaindex.expr.visitors import hash_of

        return hash_of(self)


def _check_expr(value: Any, what: str) -> BooleanExpression:
    if not isinstance(value, BooleanExpression):
        raise TypeError(
            f"{what} must be a predicate (BooleanExpression), got {type(value).__name__}"
        )
    return value


@dataclass(frozen=True, eq=False)
class AlwaysTrue(BooleanExpression):
    """The predicate every row satisfies (a singleton)."""

    _instance = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __invert__(self) -> BooleanExpression:
        return AlwaysFalse()


@dataclass(frozen=True, eq=False)
class AlwaysFalse(BooleanExpression):
    """The predicate no row satisfies (a singleton)."""

    _instance = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __invert__(self) -> BooleanExpression:
        return AlwaysTrue()


@dataclass(frozen=True, eq=False, init=False)
class And(BooleanExpression):
    """Both sides hold. Folds ``And(AlwaysFalse(), x)`` to ``AlwaysFalse()``,
    ``And(AlwaysTrue(), x)`` and ``And(x, x)`` to ``x``.

    ``~`` gives ``Or`` of the opposites (De Morgan). For many conjuncts,
    :func:`metaindex.expr.and_` builds a balanced tree.
    """

    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]  # folds constants: the result may be another node
        cls, left: BooleanExpression, right: BooleanExpression
    ) -> BooleanExpression:
        _check_expr(left, "And: left")
        _check_expr(right, "And: right")
        if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(left, AlwaysTrue) or left == right:
            return right
        if isinstance(right, AlwaysTrue):
            return left
        return object.__new__(cls)

    def __init__(self, left: BooleanExpression, right: BooleanExpression) -> None:
        if not hasattr(self, "left"):  # __new__ may hand back an existing node
            object.__setattr__(self, "left", left)
            object.__setattr__(self, "right", right)

    def __invert__(self) -> BooleanExpression:
        from metaindex.expr.visitors import negate

        return negate(self)


@dataclass(frozen=True, eq=False, init=False)
class Or(BooleanExpression):
    """Either side holds. Folds ``Or(AlwaysTrue(), x)`` to ``AlwaysTrue()``,
    ``Or(AlwaysFalse(), x)`` and ``Or(x, x)`` to ``x``.

    ``~`` gives ``And`` of the opposites (De Morgan). For many disjuncts,
    :func:`metaindex.expr.or_` builds a balanced tree.
    """

    left: BooleanExpression
    right: BooleanExpression

    def __new__(  # type: ignore[misc]  # folds constants: the result may be another node
        cls, left: BooleanExpression, right: BooleanExpression
    ) -> BooleanExpression:
        _check_expr(left, "Or: left")
        _check_expr(right, "Or: right")
        if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(left, AlwaysFalse) or left == right:
            return right
        if isinstance(right, AlwaysFalse):
            return left
        return object.__new__(cls)

    def __init__(self, left: BooleanExpression, right: BooleanExpression) -> None:
        if not hasattr(self, "left"):
            object.__setattr__(self, "left", left)
            object.__setattr__(self, "right", right)

    def __invert__(self) -> BooleanExpression:
        from metaindex.expr.visitors import negate

        return negate(self)


@dataclass(frozen=True, eq=False, init=False)
class Not(BooleanExpression):
    """The child does not hold (unknown stays unknown). Folds constants and double negation.

    Evaluators never see ``Not``: :func:`metaindex.expr.rewrite_not` pushes it to the leaves.
    """

    child: BooleanExpression

    def __new__(  # type: ignore[misc]  # folds constants: the result may be another node
        cls, child: BooleanExpression
    ) -> BooleanExpression:
        _check_expr(child, "Not: child")
        if isinstance(child, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(child, AlwaysFalse):
            return AlwaysTrue()
        if isinstance(child, Not):
            return child.child
        return object.__new__(cls)

    def __init__(self, child: BooleanExpression) -> None:
        if not hasattr(self, "child"):
            object.__setattr__(self, "child", child)

    def __invert__(self) -> BooleanExpression:
        return self.child


@dataclass(frozen=True, eq=False)
class Reference:
    """A column by name: a top-level name or a dotted path into structs (``"a.b.c"``).

    Names resolve case-insensitively by default (see :func:`metaindex.expr.bind`). A name part
    that itself contains a dot is written in backquotes, as in Spark: ``"a.`b.c`"``.
    Comparison operators build predicates: ``col("x") > 3`` is ``GreaterThan(col("x"), 3)``.
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a column name must be a non-empty str, got {self.name!r}")

    def __hash__(self) -> int:
        return hash(("Reference", self.name))

    def __bool__(self) -> bool:
        raise TypeError(
            "a column reference has no truth value: build predicates with ==, <, "
            "... and combine them with &, |, ~"
        )

    def __eq__(self, value: Any) -> EqualTo:  # type: ignore[override]
        return EqualTo(self, value)

    def __ne__(self, value: Any) -> NotEqualTo:  # type: ignore[override]
        return NotEqualTo(self, value)

    def __lt__(self, value: Any) -> LessThan:
        return LessThan(self, value)

    def __le__(self, value: Any) -> LessThanOrEqual:
        return LessThanOrEqual(self, value)

    def __gt__(self, value: Any) -> GreaterThan:
        return GreaterThan(self, value)

    def __ge__(self, value: Any) -> GreaterThanOrEqual:
        return GreaterThanOrEqual(self, value)

    def isin(self, *values: Any) -> In:
        """``x IN (values)``; a single iterable argument is taken as the list of values."""
        if len(values) == 1 and _is_values_iterable(values[0]):
            values = tuple(values[0])
        return In(self, values)

    def is_null(self) -> IsNull:
        return IsNull(self)

    def is_not_null(self) -> NotNull:
        return NotNull(self)

    def is_nan(self) -> IsNaN:
        return IsNaN(self)

    def startswith(self, prefix: str | bytes) -> StartsWith:
        return StartsWith(self, prefix)

    def endswith(self, suffix: str | bytes) -> EndsWith:
        return EndsWith(self, suffix)

    def contains(self, infix: str | bytes) -> Contains:
        return Contains(self, infix)


def col(name: str) -> Reference:
    """A reference to the column ``name`` (a dotted path reaches into structs)."""
    return Reference(name)


def _to_ref(term: Any) -> Reference:
    if isinstance(term, Reference):
        return term
    if isinstance(term, str):
        return Reference(term)
    raise TypeError(
        "a predicate's column must be a Reference (col('name')) or a str, got "
        f"{type(term).__name__}"
    )


def _is_values_iterable(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(
        value, (str, bytes, bytearray, memoryview)
    )


def check_literal(value: Any) -> Any:
    """A literal as predicates store it: numpy scalars unwrapped, NaN canonical, bytes-likes as
    bytes.

    Raises:
        TypeError: the value is of no literal type metaindex understands.
    """
    if value is None or isinstance(value, (bool, int, str, datetime.date)):
        return value
    if isinstance(value, float):
        return math.nan if value != value else value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeError(
                f"a Decimal literal must be finite, got {value!r} (use float('nan') / float('inf'))"
            )
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    item = getattr(value, "item", None)  # numpy scalars
    if item is not None and type(value).__module__ == "numpy":
        return check_literal(item())
    if isinstance(value, (Reference, BooleanExpression)):
        raise TypeError(
            "comparing two columns (or a column with a predicate) is not supported: "
            "compare a column with a literal"
        )
    raise TypeError(
        f"unsupported literal {value!r} of type {type(value).__name__}; accepted: {LITERAL_TYPES}"
    )


class UnboundPredicate(BooleanExpression):
    """A predicate on one column not yet resolved against a schema (``term`` is a Reference)."""

    __slots__ = ()
    term: Reference  # a field of every subclass


@dataclass(frozen=True, eq=False, init=False)
class _LiteralPredicate(UnboundPredicate):
    term: Reference
    value: Any

    def __init__(self, term: Reference | str, value: Any) -> None:
        object.__setattr__(self, "term", _to_ref(term))
        object.__setattr__(self, "value", check_literal(value))


@dataclass(frozen=True, eq=False, init=False)
class _SetPredicate(UnboundPredicate):
    term: Reference
    values: tuple

    def __init__(self, term: Reference | str, values: Iterable[Any]) -> None:
        if not _is_values_iterable(values):
            raise TypeError(
                f"{type(self).__name__} takes an iterable of literals, got {type(values).__name__}"
            )
        object.__setattr__(self, "term", _to_ref(term))
        object.__setattr__(self, "values", tuple(check_literal(v) for v in values))


@dataclass(frozen=True, eq=False, init=False)
class _UnaryPredicate(UnboundPredicate):
    term: Reference

    def __init__(self, term: Reference | str) -> None:
        object.__setattr__(self, "term", _to_ref(term))


@dataclass(frozen=True, eq=False, init=False)
class _PatternPredicate(UnboundPredicate):
    term: Reference
    value: str | bytes | None

    def __init__(self, term: Reference | str, value: str | bytes | None) -> None:
        value = check_literal(value)
        if value is not None and not isinstance(value, (str, bytes)):
            raise TypeError(
                f"{type(self).__name__} takes a str or bytes pattern, got {type(value).__name__}"
            )
        object.__setattr__(self, "term", _to_ref(term))
        object.__setattr__(self, "value", value)


class EqualTo(_LiteralPredicate):
    """``term = value`` (NaN equals NaN, -0.0 equals 0.0)."""

    def __invert__(self) -> BooleanExpression:
        return NotEqualTo(self.term, self.value)


class NotEqualTo(_LiteralPredicate):
    """``term <> value``: true for non-null values different from ``value``."""

    def __invert__(self) -> BooleanExpression:
        return EqualTo(self.term, self.value)


class LessThan(_LiteralPredicate):
    """``term < value`` (NaN is greater than every number)."""

    def __invert__(self) -> BooleanExpression:
        return GreaterThanOrEqual(self.term, self.value)


class LessThanOrEqual(_LiteralPredicate):
    """``term <= value``."""

    def __invert__(self) -> BooleanExpression:
        return GreaterThan(self.term, self.value)


class GreaterThan(_LiteralPredicate):
    """``term > value``."""

    def __invert__(self) -> BooleanExpression:
        return LessThanOrEqual(self.term, self.value)


class GreaterThanOrEqual(_LiteralPredicate):
    """``term >= value``."""

    def __invert__(self) -> BooleanExpression:
        return LessThan(self.term, self.value)


class EqualNullSafe(_LiteralPredicate):
    """``term <=> value``: never unknown; ``term <=> NULL`` is ``term IS NULL``."""

    def __invert__(self) -> BooleanExpression:
        if self.value is None:
            return NotNull(self.term)
        return Or(IsNull(self.term), NotEqualTo(self.term, self.value))


class In(_SetPredicate):
    """``term IN (values)``: a NULL in ``values`` never makes it true."""

    def __invert__(self) -> BooleanExpression:
        return NotIn(self.term, self.values)


class NotIn(_SetPredicate):
    """``term NOT IN (values)``: never true when ``values`` holds a NULL."""

    def __invert__(self) -> BooleanExpression:
        return In(self.term, self.values)


class IsNull(_UnaryPredicate):
    """``term IS NULL``."""

    def __invert__(self) -> BooleanExpression:
        return NotNull(self.term)


class NotNull(_UnaryPredicate):
    """``term IS NOT NULL``."""

    def __invert__(self) -> BooleanExpression:
        return IsNull(self.term)


class IsNaN(_UnaryPredicate):
    """``isnan(term)``: false for NULL."""

    def __invert__(self) -> BooleanExpression:
        return NotNaN(self.term)


class NotNaN(_UnaryPredicate):
    """``NOT isnan(term)``: true for NULL and for every non-NaN value."""

    def __invert__(self) -> BooleanExpression:
        return IsNaN(self.term)


class StartsWith(_PatternPredicate):
    """``term LIKE 'prefix%'`` (``startswith(term, prefix)``)."""

    def __invert__(self) -> BooleanExpression:
        return NotStartsWith(self.term, self.value)


class NotStartsWith(_PatternPredicate):
    """``term NOT LIKE 'prefix%'``: true for non-null values without the prefix."""

    def __invert__(self) -> BooleanExpression:
        return StartsWith(self.term, self.value)


class EndsWith(_PatternPredicate):
    """``term LIKE '%suffix'``. Its negation has no class: ``~`` gives ``Not(EndsWith)``."""


class Contains(_PatternPredicate):
    """``term LIKE '%infix%'``. Its negation has no class: ``~`` gives ``Not(Contains)``."""
