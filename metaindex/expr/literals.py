"""Literals against a column's type, with Spark SQL's comparison rules.

A comparison ``column op literal`` is turned into :class:`Cuts`: where the column's own values
split into "may satisfy" and "cannot satisfy" for each operator. Spark compares after an
implicit cast that is not always exact (an int column against ``1.5`` compares as decimals,
against ``1.5D`` as doubles, a decimal column against a double as doubles, a date against a
timestamp in the session time zone). Where the result is exact the cuts are exact; where it
depends on rounding, a session setting (ANSI mode) or a session time zone that is not given,
the cuts are widened to cover every outcome: more rows may match, never fewer, so pruning stays
safe.

Columns are :class:`Domain` objects: integer-like columns (ints, decimals, dates, timestamps)
compare as whole "ticks" (the unscaled decimal, days, units since the epoch); floats, strings,
binary and booleans compare as values.
"""

from __future__ import annotations

import datetime
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr.temporal import EPOCH, EPOCH_DATE, parse_date, parse_timestamp, to_naive_utc

__all__ = [
    "BELOW",
    "ABOVE",
    "UNKNOWN",
    "KEEP",
    "Cuts",
    "Domain",
    "domain_for",
    "cuts_for",
    "read_number",
    "round_to_float32",
]


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


BELOW = _Sentinel("BELOW")  # lower than every value of the column
ABOVE = _Sentinel("ABOVE")  # higher than every value of the column
UNKNOWN = _Sentinel("UNKNOWN")  # no neighbour can be named (strings)
KEEP = _Sentinel("KEEP")  # the comparison cannot be expressed on the column: every row may match

_TZ_SLACK = datetime.timedelta(hours=18)  # the widest offset a session time zone can have
_DOUBLE_SLACK = Fraction(1, 2**48)  # relative error of any decimal -> double conversion, with room


@dataclass(frozen=True)
class Cuts:
    """For ``column op literal``, in the domain's internal values.

    ``x < literal`` may hold only for ``x <= lt``, ``x <= literal`` only for ``x <= le``,
    ``x > literal`` only for ``x >= gt``, ``x >= literal`` only for ``x >= ge``; ``point`` is the
    literal itself when it is a value of the column and every comparison with it is exact.
    """

    lt: Any
    le: Any
    gt: Any
    ge: Any
    point: Any = None


class Domain:
    """The ordered values a column can hold.

    Attributes:
        kind: "int", "decimal", "date", "timestamp", "float", "string", "binary" or "bool".
        lo, hi: the smallest and largest internal values, or None when not bounded.
    """

    kind: str
    lo: Any = None
    hi: Any = None

    def key(self, v: Any) -> Any:
        return v

    def pred(self, v: Any) -> Any:
        return UNKNOWN

    def succ(self, v: Any) -> Any:
        return UNKNOWN

    def value(self, v: Any) -> Any:
        """The Python value (as a bound predicate carries it) of an internal value."""
        return v

    def is_nan(self, v: Any) -> bool:
        return False

    def less(self, a: Any, b: Any) -> bool:
        """``a < b`` for internal values and the BELOW / ABOVE sentinels."""
        if a is b:
            return False
        if a is BELOW or b is ABOVE:
            return True
        if a is ABOVE or b is BELOW:
            return False
        return self.key(a) < self.key(b)

    def exact(self, v: Any) -> Cuts:
        """Cuts for a literal that is itself a value of the column."""
        return Cuts(self.pred(v), v, self.succ(v), v, v)

    def merge(self, a: Cuts, b: Cuts) -> Cuts:
        """Cuts that let through what either ``a`` or ``b`` lets through."""
        same = (
            a.point is not None and b.point is not None and self.key(a.point) == self.key(b.point)
        )
        return Cuts(
            b.lt if self.less(a.lt, b.lt) else a.lt,
            b.le if self.less(a.le, b.le) else a.le,
            a.gt if self.less(a.gt, b.gt) else b.gt,
            a.ge if self.less(a.ge, b.ge) else b.ge,
            a.point if same else None,
        )


class TickDomain(Domain):
    """Whole numbers of something (ints, decimal units, days, time units), maybe bounded."""

    def __init__(
        self,
        kind: str,
        lo: int | None,
        hi: int | None,
        to_value: Callable[[int], Any],
        *,
        precision: int = 0,
        scale: int = 0,
        unit: str = "",
        aware: bool = False,
        dense: bool = False,
    ) -> None:
        self.kind, self.lo, self.hi, self._to_value = kind, lo, hi, to_value
        self.dense = dense  # the column holds values between ticks (nanoseconds): no neighbours
        self.precision, self.scale = precision, scale  # ints and decimals: Spark's decimal(p, s)
        self.unit, self.aware = unit, aware  # timestamps: Arrow unit, time zone or not

    def pred(self, t: int) -> Any:
        if self.dense:
            return t  # "x <= t" is the closest superset of "x < t" that ticks can express
        return BELOW if self.lo is not None and t <= self.lo else t - 1

    def succ(self, t: int) -> Any:
        if self.dense:
            return t
        return ABOVE if self.hi is not None and t >= self.hi else t + 1

    def value(self, t: int) -> Any:
        return self._to_value(t)

    def at(self, p: Fraction) -> Cuts:
        """Exact cuts for the rational point ``p`` (in ticks), inside the domain or not."""
        n = p.numerator
        if (
            p.denominator == 1
            and (self.lo is None or n >= self.lo)
            and (self.hi is None or n <= self.hi)
        ):
            return self.exact(n)
        floor, ceil = math.floor(p), math.ceil(p)
        down = (
            BELOW
            if self.lo is not None and floor < self.lo
            else (self.hi if self.hi is not None and floor > self.hi else floor)
        )
        up = (
            ABOVE
            if self.hi is not None and ceil > self.hi
            else (self.lo if self.lo is not None and ceil < self.lo else ceil)
        )
        return Cuts(down, down, up, up)

    def between(self, a: Fraction, b: Fraction) -> Cuts:
        """Cuts for a literal known only to lie in ``[a, b]`` (ticks)."""
        return self.merge(self.at(a), self.at(b))

    def above_all(self) -> Cuts:
        """Cuts for a literal above every value (NaN and +inf against numbers)."""
        return Cuts(self.hi, self.hi, ABOVE, ABOVE)

    def below_all(self) -> Cuts:
        return Cuts(BELOW, BELOW, self.lo, self.lo)


class FloatDomain(Domain):
    """IEEE floats under Spark's order: -0.0 = 0.0, NaN above +inf and equal to itself."""

    kind = "float"

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self._np = np.float32 if bits == 32 else np.float64
        self.lo, self.hi = -math.inf, math.nan

    def key(self, v: float) -> tuple:
        return (1, 0.0) if v != v else (0, v)

    def is_nan(self, v: Any) -> bool:
        return isinstance(v, float) and v != v

    def pred(self, v: float) -> Any:
        if v != v:
            return math.inf
        if v == -math.inf:
            return BELOW
        with np.errstate(over="ignore"):
            return _canonical(float(np.nextafter(self._np(v), self._np(-math.inf))))

    def succ(self, v: float) -> Any:
        if v != v:
            return ABOVE
        if v == math.inf:
            return math.nan
        with np.errstate(over="ignore"):
            return _canonical(float(np.nextafter(self._np(v), self._np(math.inf))))

    def holds(self, v: float) -> bool:
        """``v`` (a double) is a value of this column's type."""
        with np.errstate(over="ignore"):
            return v != v or float(self._np(v)) == v

    def at(self, v: float) -> Cuts:
        """Cuts for the double ``v`` (compared as doubles) against this column."""
        v = _canonical(v)
        if self.holds(v):
            return self.exact(v)
        with np.errstate(over="ignore"):
            near = float(self._np(v))
        below = near if near < v else self.pred(near)
        above = near if near > v else self.succ(near)
        return Cuts(below, below, above, above)


class ValueDomain(Domain):
    """Strings (by UTF-8 bytes = code points), binary (unsigned bytes) and booleans."""

    def __init__(self, kind: str, lo: Any = None, hi: Any = None) -> None:
        self.kind, self.lo, self.hi = kind, lo, hi

    def pred(self, v: Any) -> Any:
        if self.kind != "bool":
            return BELOW if v == self.lo else UNKNOWN
        return BELOW if v is False else False

    def succ(self, v: Any) -> Any:
        if self.kind != "bool":
            return UNKNOWN
        return ABOVE if v is True else True


def _canonical(v: float) -> float:
    if v != v:
        return math.nan
    return 0.0 if v == 0.0 else v


# --- domains for Arrow types ----------------------------------------------------------------

# Spark's decimal precision of an integral type (unsigned ones read as the next wider type)
_INT_DIGITS = {
    (8, True): 3,
    (16, True): 5,
    (32, True): 10,
    (64, True): 20,
    (8, False): 5,
    (16, False): 10,
    (32, False): 20,
    (64, False): 20,
}


def _decimal_value(scale: int) -> Callable[[int], Decimal]:
    return lambda t: Decimal(f"{t}E{-scale}")


def _date_value(t: int) -> datetime.date:
    return EPOCH_DATE + datetime.timedelta(days=t)


_UNIT_US = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _timestamp_value(unit: str, aware: bool) -> Callable[[int], datetime.datetime]:
    per = _UNIT_US[unit]

    def value(t: int) -> datetime.datetime:
        dt = EPOCH + datetime.timedelta(microseconds=t * per)
        return dt.replace(tzinfo=datetime.timezone.utc) if aware else dt

    return value


def storage_type(t: pa.DataType) -> pa.DataType:
    """The value type of dictionary columns, the type itself otherwise."""
    return t.value_type if pa.types.is_dictionary(t) else t


@functools.lru_cache(maxsize=256)
def domain_for(t: pa.DataType) -> Domain | None:
    """The comparison domain of an Arrow type, or None if its values cannot be compared (one
    object per type: domains are not changed once made)."""
    t = storage_type(t)
    if pa.types.is_integer(t):
        bits, signed = t.bit_width, pa.types.is_signed_integer(t)
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        return TickDomain("int", lo, hi, int, precision=_INT_DIGITS[bits, signed])
    if pa.types.is_decimal(t):
        top = 10**t.precision - 1
        return TickDomain(
            "decimal", -top, top, _decimal_value(t.scale), precision=t.precision, scale=t.scale
        )
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return FloatDomain(t.bit_width)
    if pa.types.is_date(t):
        return TickDomain("date", None, None, _date_value)
    if pa.types.is_timestamp(t):
        aware = t.tz is not None
        unit = "us" if t.unit == "ns" else t.unit  # literals hold microseconds at most
        value = _timestamp_value(unit, aware)
        return TickDomain(
            "timestamp", None, None, value, unit=unit, aware=aware, dense=t.unit == "ns"
        )
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return ValueDomain("string", lo="")
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return ValueDomain("binary", lo=b"")
    if pa.types.is_boolean(t):
        return ValueDomain("bool", lo=False, hi=True)
    return None


# --- literal -> cuts --------------------------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_FLOAT_WORDS = {"nan": math.nan, "infinity": math.inf, "inf": math.inf}


def read_number(text: str, column: str) -> Fraction | float:
    """A string literal compared with a numeric column: its exact value, or a float special."""
    word = text.strip().lower()
    sign = -1.0 if word.startswith("-") else 1.0
    special = _FLOAT_WORDS.get(word.lstrip("+-"))
    if special is not None:
        return special if special != special else sign * special
    if not _NUMBER_TEXT.fullmatch(text):
        raise ExpressionError(
            f"cannot read {text!r} as a number to compare with numeric column {column!r}"
        )
    return Fraction(Decimal(text.strip()))


def _decimal_digits(value: Decimal | int) -> tuple[int, int]:
    """(integral digits, scale) of a literal, as Spark types it (decimal(p, s) has p - s
    integral digits)."""
    if isinstance(value, int):
        return max(1, len(str(abs(value)))), 0
    _, digits, exp = value.as_tuple()
    assert isinstance(exp, int), "Decimal literals are finite (check_literal)"
    return max(1, len(digits) + exp), max(0, -exp)


def _double(value: Any) -> float:
    try:
        return _canonical(float(value))
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def round_to_float32(p: Fraction) -> float:
    """``p`` rounded to the nearest float32 (ties to even), as Java casts a long or a string."""
    with np.errstate(over="ignore"):
        near = np.float32(float(p))
    if not math.isfinite(near):
        return float(near)
    candidates = [
        near,
        np.nextafter(near, np.float32(-np.inf)),
        np.nextafter(near, np.float32(np.inf)),
    ]
    finite = [c for c in candidates if math.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - p), int(c.view(np.uint32)) & 1))
    return _canonical(float(best))


def _int_vs_double(dom: TickDomain, v: float) -> Cuts:
    """An integer column compared as doubles with ``v`` (Spark casts the column to double)."""
    if v != v or v == math.inf:
        return dom.above_all()
    if v == -math.inf:
        return dom.below_all()
    if abs(v) < 2**53:  # every integer of this size converts exactly: compare exactly
        return dom.at(Fraction(v))

    def last(pred):  # the largest tick whose double satisfies pred (monotone: true, then false)
        lo, hi = dom.lo - 1, dom.hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if pred(float(mid)) else (lo, mid - 1)
        return BELOW if lo < dom.lo else lo

    lt, le = last(lambda d: d < v), last(lambda d: d <= v)
    gt = ABOVE if le is not BELOW and le >= dom.hi else (dom.lo if le is BELOW else le + 1)
    ge = ABOVE if lt is not BELOW and lt >= dom.hi else (dom.lo if lt is BELOW else lt + 1)
    return Cuts(lt, le, gt, ge)


def _decimal_vs_double(dom: TickDomain, v: float) -> Cuts:
    """A decimal column compared as doubles: exact up to the conversion's rounding, widened by
    it."""
    if v != v or v == math.inf:
        return dom.above_all()
    if v == -math.inf:
        return dom.below_all()
    return _decimal_vs_around(dom, Fraction(v))


def _decimal_vs_around(dom: TickDomain, d: Fraction) -> Cuts:
    slack = abs(d) * _DOUBLE_SLACK
    scale = Fraction(10) ** dom.scale
    return dom.between((d - slack) * scale, (d + slack) * scale)


def _exact_decimal(dom: TickDomain, value: Decimal | int, column: str) -> Cuts | _Sentinel:
    """Integral or decimal literal against an int or decimal column: Spark compares as decimals."""
    lit_digits, lit_scale = _decimal_digits(value)
    if max(dom.precision - dom.scale, lit_digits) + max(dom.scale, lit_scale) > max(
        38, dom.precision
    ):
        return KEEP  # Spark would round or overflow in the common decimal type: do not guess
    return dom.at(Fraction(value) * Fraction(10) ** dom.scale)


def _numeric(dom: TickDomain | FloatDomain, value: Any, column: str) -> Cuts | _Sentinel:
    if isinstance(value, str):
        parsed = read_number(value, column)
        if isinstance(parsed, float):
            value = parsed
        elif isinstance(dom, FloatDomain):  # parsed as a double, or straight into a float32
            cuts = dom.at(_double(parsed))
            return cuts if dom.bits == 64 else dom.merge(cuts, dom.at(round_to_float32(parsed)))
        elif dom.kind == "int":
            # ANSI Spark casts the text to an integer (an error unless integral); legacy Spark
            # truncates it: cover both.
            return dom.merge(dom.at(parsed), dom.at(Fraction(math.trunc(parsed))))
        else:
            return _decimal_vs_around(dom, parsed)  # compared as decimals or as doubles
    if isinstance(value, float):
        if isinstance(dom, FloatDomain):
            return dom.at(value)
        if dom.kind == "int":
            return _int_vs_double(dom, value)
        return _decimal_vs_double(dom, value)
    if isinstance(value, (int, Decimal)):
        if isinstance(dom, TickDomain):  # an int or decimal column
            return _exact_decimal(dom, value, column)
        double = dom.at(_double(value))
        if dom.bits == 32 and isinstance(value, int):
            # ANSI Spark compares a float column with an integer as doubles, legacy Spark as floats
            return dom.merge(double, dom.at(round_to_float32(Fraction(value))))
        return double
    raise _mismatch(dom, value, column, "int, float, Decimal or a numeric string")


def _date(dom: TickDomain, value: Any, column: str, zone: datetime.tzinfo | None) -> Cuts:
    if isinstance(value, datetime.datetime):
        naive = to_naive_utc(value)
        if value.tzinfo is None:  # compared as TIMESTAMP_NTZ: midnight of the date
            return dom.at(_days(naive))
        lo, hi = _walls(naive, zone)  # the date's start of day in the session time zone
        return dom.between(_days(lo), _days(hi))
    if isinstance(value, datetime.date):
        return dom.exact((value - EPOCH_DATE).days)
    if isinstance(value, str):
        return dom.exact((parse_date(value, column) - EPOCH_DATE).days)
    raise _mismatch(dom, value, column, "datetime.date, datetime.datetime or a date string")


def _days(naive: datetime.datetime) -> Fraction:
    delta = naive - EPOCH
    return delta.days + Fraction(delta.seconds * 1_000_000 + delta.microseconds, 86_400_000_000)


def _walls(instant: datetime.datetime, zone: datetime.tzinfo | None) -> tuple:
    """The wall-clock times (naive) a session in ``zone`` may show at ``instant`` (naive UTC):
    ``instant`` plus the least and the greatest UTC offset the zone has within 30 hours of it
    (one time when the offset is fixed there); plus and minus 18 hours without a zone.

    A wall time ``w`` (a TIMESTAMP_NTZ value, a date's midnight) that Spark casts to TIMESTAMP
    in the session time zone becomes ``w`` minus the offset in force at ``w``, so ``w`` before
    the first bound is an earlier instant than ``instant`` and ``w`` after the second a later
    one; between them (near a daylight-saving change) either may hold.
    """
    if zone is None:
        return instant - _TZ_SLACK, instant + _TZ_SLACK
    utc = instant.replace(tzinfo=datetime.timezone.utc)
    # an aware datetime always has an offset (``or`` only tells the type checker so)
    offsets = {
        (utc + datetime.timedelta(hours=h)).astimezone(zone).utcoffset() or datetime.timedelta(0)
        for h in range(-30, 31)
    }
    return instant + min(offsets), instant + max(offsets)


def _in_zone(wall: datetime.datetime, zone: datetime.tzinfo) -> datetime.datetime:
    """The instant (naive UTC) of a wall-clock time in ``zone``, resolved as Java's
    ``LocalDateTime.atZone`` (Spark's cast of TIMESTAMP_NTZ and DATE to TIMESTAMP): a time in a
    daylight-saving gap moves forward by the gap, an ambiguous one takes the earlier offset
    (Python's ``fold=0`` gives the same instants)."""
    return to_naive_utc(wall.replace(tzinfo=zone, fold=0))


def _timestamp(dom: TickDomain, value: Any, column: str, zone: datetime.tzinfo | None) -> Cuts:
    wall = None
    if isinstance(value, str):
        value = parse_timestamp(value, column)
        if (
            value.tzinfo is not None and not dom.aware
        ):  # Spark may drop the offset for TIMESTAMP_NTZ
            wall = value.replace(tzinfo=None)
    elif not isinstance(value, datetime.datetime):
        if not isinstance(value, datetime.date):
            raise _mismatch(
                dom, value, column, "datetime.datetime, datetime.date or a timestamp string"
            )
        value = datetime.datetime.combine(value, datetime.time())
    per = Fraction(1) / _UNIT_US[dom.unit]
    ticks = lambda dt: Fraction((dt - EPOCH) // datetime.timedelta(microseconds=1)) * per  # noqa: E731
    naive = to_naive_utc(value)
    if (value.tzinfo is not None) == dom.aware:
        cuts = dom.at(ticks(naive))
    elif dom.aware and zone is not None:  # a wall time read in the session time zone
        cuts = dom.at(ticks(_in_zone(value, zone)))
    else:  # an instant against wall times read in the session time zone (or zone unknown)
        lo, hi = _walls(naive, zone)
        cuts = dom.between(ticks(lo), ticks(hi))
    return cuts if wall is None else dom.merge(cuts, dom.at(ticks(wall)))


def _string(dom: ValueDomain, value: Any, column: str) -> Any:
    if isinstance(value, str):
        return dom.exact(value)
    if isinstance(value, bytes):
        try:
            return dom.exact(value.decode("utf-8"))
        except UnicodeDecodeError:
            return KEEP
    if isinstance(value, (bool, int, float, Decimal, datetime.date)):
        return KEEP  # Spark casts the string column to the literal's type
    raise _mismatch(dom, value, column, "str or bytes")


def _binary(dom: ValueDomain, value: Any, column: str) -> Cuts:
    if isinstance(value, bytes):
        return dom.exact(value)
    if isinstance(value, str):
        return dom.exact(value.encode("utf-8"))
    raise _mismatch(dom, value, column, "bytes or str")


_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}


def _bool(dom: ValueDomain, value: Any, column: str) -> Cuts:
    if isinstance(value, bool):
        return dom.exact(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE or word in _FALSE:
            return dom.exact(word in _TRUE)
        raise ExpressionError(
            f"cannot read {value!r} as a boolean for column {column!r} "
            "(true/false, t/f, yes/no, y/n, 1/0)"
        )
    raise _mismatch(dom, value, column, "bool or 'true' / 'false'")


def _mismatch(dom: Domain, value: Any, column: str, accepted: str) -> SchemaError:
    return SchemaError(
        f"cannot compare {dom.kind} column {column!r} with {type(value).__name__} literal "
        f"{value!r}; accepted: {accepted}"
    )


def cuts_for(
    dom: Domain, value: Any, column: str, zone: datetime.tzinfo | None = None
) -> Cuts | _Sentinel:
    """The cuts of ``column op value`` (``value`` not None), or KEEP when they cannot be expressed.

    ``zone``: the session time zone, where Spark reads a wall time (a string, TIMESTAMP_NTZ or
    DATE literal against a TIMESTAMP column; a DATE or TIMESTAMP_NTZ column against a
    TIMESTAMP literal) as an instant; None widens those comparisons to every zone.

    Raises:
        SchemaError: the literal's type cannot be compared with the column's.
        ExpressionError: a string literal cannot be read as the column's type.
    """
    if dom.kind in ("int", "decimal", "float"):
        if isinstance(value, bool):
            raise _mismatch(dom, value, column, "int, float, Decimal or a numeric string")
        assert isinstance(dom, (TickDomain, FloatDomain))
        return _numeric(dom, value, column)
    if dom.kind in ("date", "timestamp"):
        assert isinstance(dom, TickDomain)
        return (_date if dom.kind == "date" else _timestamp)(dom, value, column, zone)
    assert isinstance(dom, ValueDomain)
    if dom.kind == "string":
        return _string(dom, value, column)
    if dom.kind == "binary":
        return _binary(dom, value, column)
    return _bool(dom, value, column)
