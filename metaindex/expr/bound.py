"""Bound predicates: a resolved column and a value already converted to the column's type.

These are what index evaluators see, after :func:`metaindex.expr.bind` and
:func:`metaindex.expr.rewrite_not` (no ``Not`` left). Each class means exactly what its SQL
counterpart means under Spark SQL semantics; :func:`bind` produces values that the column can
hold, as the Python value of an Arrow scalar of the column's type:

- integers: ``int``; floats: ``float`` (never NaN or -0.0 in what ``bind`` produces: comparisons
  with NaN become ``BoundIsNaN`` / ``BoundNotNaN``); decimals: ``Decimal`` at the column's scale;
- strings: ``str``; binary: ``bytes``; booleans: ``bool``; dates: ``datetime.date``;
- timestamps: ``datetime.datetime``, timezone-aware UTC for a column with a time zone, naive for
  one without (``TIMESTAMP_NTZ``), a whole number of the column's unit.

``BoundIsNaN`` is false for NULL and ``BoundNotNaN`` true for NULL (Spark's ``isnan`` is never
NULL). ``BoundNotIn`` and ``BoundNotEqualTo`` are true only for non-null values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from metaindex.expr.expressions import BooleanExpression, Not, Or

__all__ = [
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
]


@dataclass(frozen=True)
class BoundReference:
    """A column resolved in a schema.

    Attributes:
        name: the canonical dotted path, with the schema's spelling (``"a.b.c"``); a part that
            contains a dot or a backquote is written in backquotes (``"a.`b.c`"``).
        field: the leaf ``pa.Field`` (its type is the column's type).
        path: the field names from the top-level column down to the leaf.
    """

    name: str
    field: pa.Field
    path: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", tuple(self.name.split(".")))

    @property
    def type(self) -> pa.DataType:
        return self.field.type


class BoundPredicate(BooleanExpression):
    """A predicate on one resolved column (``ref``)."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class _BoundLiteralPredicate(BoundPredicate):
    ref: BoundReference
    value: Any


@dataclass(frozen=True, eq=False)
class _BoundSetPredicate(BoundPredicate):
    ref: BoundReference
    values: frozenset


@dataclass(frozen=True, eq=False)
class _BoundUnaryPredicate(BoundPredicate):
    ref: BoundReference


class BoundEqualTo(_BoundLiteralPredicate):
    """``ref = value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundNotEqualTo(self.ref, self.value)


class BoundNotEqualTo(_BoundLiteralPredicate):
    """``ref <> value``: non-null and different."""

    def __invert__(self) -> BooleanExpression:
        return BoundEqualTo(self.ref, self.value)


class BoundLessThan(_BoundLiteralPredicate):
    """``ref < value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundGreaterThanOrEqual(self.ref, self.value)


class BoundLessThanOrEqual(_BoundLiteralPredicate):
    """``ref <= value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundGreaterThan(self.ref, self.value)


class BoundGreaterThan(_BoundLiteralPredicate):
    """``ref > value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundLessThanOrEqual(self.ref, self.value)


class BoundGreaterThanOrEqual(_BoundLiteralPredicate):
    """``ref >= value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundLessThan(self.ref, self.value)


class BoundEqualNullSafe(_BoundLiteralPredicate):
    """``ref <=> value`` with a non-null value: non-null and equal (its negation holds for NULL).

    ``bind`` itself emits ``BoundEqualTo`` (same rows once ``Not`` is gone) or ``BoundIsNull``.
    """

    def __invert__(self) -> BooleanExpression:
        return Or(BoundIsNull(self.ref), BoundNotEqualTo(self.ref, self.value))


class BoundIn(_BoundSetPredicate):
    """``ref IN (values)`` (``values`` holds no NULL)."""

    def __invert__(self) -> BooleanExpression:
        return BoundNotIn(self.ref, self.values)


class BoundNotIn(_BoundSetPredicate):
    """``ref NOT IN (values)``: non-null and in none of ``values`` (which hold no NULL)."""

    def __invert__(self) -> BooleanExpression:
        return BoundIn(self.ref, self.values)


class BoundIsNull(_BoundUnaryPredicate):
    """``ref IS NULL``."""

    def __invert__(self) -> BooleanExpression:
        return BoundNotNull(self.ref)


class BoundNotNull(_BoundUnaryPredicate):
    """``ref IS NOT NULL``."""

    def __invert__(self) -> BooleanExpression:
        return BoundIsNull(self.ref)


class BoundIsNaN(_BoundUnaryPredicate):
    """``isnan(ref)``: false for NULL."""

    def __invert__(self) -> BooleanExpression:
        return BoundNotNaN(self.ref)


class BoundNotNaN(_BoundUnaryPredicate):
    """``NOT isnan(ref)``: true for NULL and every non-NaN value."""

    def __invert__(self) -> BooleanExpression:
        return BoundIsNaN(self.ref)


class BoundStartsWith(_BoundLiteralPredicate):
    """``ref`` starts with ``value`` (str for string columns, bytes for binary ones)."""

    def __invert__(self) -> BooleanExpression:
        return BoundNotStartsWith(self.ref, self.value)


class BoundNotStartsWith(_BoundLiteralPredicate):
    """``ref`` is non-null and does not start with ``value``."""

    def __invert__(self) -> BooleanExpression:
        return BoundStartsWith(self.ref, self.value)


class BoundEndsWith(_BoundLiteralPredicate):
    """``ref`` ends with ``value``; ``~`` gives ``Not(self)`` (rewrite_not widens it to
    AlwaysTrue)."""

    def __invert__(self) -> BooleanExpression:
        return Not(self)


class BoundContains(_BoundLiteralPredicate):
    """``ref`` contains ``value``; ``~`` gives ``Not(self)`` (rewrite_not widens it to
    AlwaysTrue)."""

    def __invert__(self) -> BooleanExpression:
        return Not(self)
