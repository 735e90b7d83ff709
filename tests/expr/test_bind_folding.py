"""Property: bind only ever widens. A row Spark says satisfies ``column op literal`` (under any
implicit cast Spark might use) also satisfies the bound, folded predicate; and NOT of it too."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from metaindex.expr import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    bind,
)
from tests.expr.reference import evaluate
from tests.expr.spark_oracle import holds, variants

UTC = datetime.timezone.utc
TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint64(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(5, 2),
    pa.decimal128(20, 0),
    pa.decimal128(38, 10),
    pa.decimal128(3, -2),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
    pa.timestamp("ms"),
    pa.timestamp("s", tz="UTC"),
    pa.string(),
    pa.bool_(),
]
OPS = {
    EqualTo: "=",
    NotEqualTo: "!=",
    LessThan: "<",
    LessThanOrEqual: "<=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    EqualNullSafe: "<=>",
}
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "<=>": "!="}
EPOCH = datetime.datetime(1970, 1, 1)

_big = st.integers(-(2**64), 2**64)
_near_pow = st.builds(
    lambda e, d, s: s * (2**e + d),
    st.integers(50, 64),
    st.integers(-1100, 1100),
    st.sampled_from([1, -1]),
)
_ints = st.one_of(st.integers(-300, 300), _big, _near_pow)
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-300, 300),
    st.builds(float, _near_pow),
    st.builds(
        lambda i, h: i + h,
        st.integers(-300, 300),
        st.sampled_from([0.5, 0.25, 0.1, 0.0, -0.0, 1e-9]),
    ),
    st.floats(width=32),
)
_decimals = st.one_of(
    st.decimals(
        allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6
    ),
    st.builds(
        Decimal,
        st.sampled_from(
            [
                "1.5",
                "-0.0",
                "0.10",
                "1E+2",
                "999.99",
                "999.995",
                "1E+40",
                "123456789012345678901234567890.5",
            ]
        ),
    ),
    st.builds(lambda i: Decimal(i), _ints),
)
_dates = st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1))
_naive = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1))
_aware = st.builds(
    lambda d, h: d.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=h))),
    _naive,
    st.integers(-14, 14),
)


def literals_for(t: pa.DataType):
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_floating(t):
        return st.one_of(_ints, _floats, _decimals, st.builds(str, st.integers(-300, 300)))
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return st.one_of(_dates, _naive, _aware)
    if pa.types.is_string(t):
        return st.text(max_size=4)
    return st.booleans()


def _clamp_int(t, v: int) -> int:
    bits = t.bit_width
    lo, hi = (
        (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if pa.types.is_signed_integer(t)
        else (0, 2**bits - 1)
    )
    return min(max(v, lo), hi)


def _around(lit) -> Fraction | None:
    """A rational near the literal, to draw column values next to it."""
    try:
        if isinstance(lit, str):
            return Fraction(Decimal(lit))
        if isinstance(lit, float) and not math.isfinite(lit):
            return None
        return Fraction(lit)
    except (ValueError, ArithmeticError):
        return None


@st.composite
def column_values(draw, t: pa.DataType, lit):
    centre = _around(lit) if not isinstance(lit, (datetime.date, bool)) else None
    delta = draw(st.integers(-3, 3))
    if pa.types.is_integer(t):
        base = draw(st.one_of(_ints, st.just(math.floor(centre) if centre is not None else 0)))
        return _clamp_int(t, base + delta)
    if pa.types.is_decimal(t):
        top = 10**t.precision - 1
        unscaled = draw(
            st.one_of(
                st.integers(-top, top),
                st.just(math.floor(centre * Fraction(10) ** t.scale) if centre is not None else 0),
            )
        )
        unscaled = min(max(unscaled + delta, -top), top)
        return Decimal(f"{unscaled}E{-t.scale}")
    if pa.types.is_floating(t):
        x = draw(st.one_of(_floats, st.just(float(centre) if centre is not None else 0.0)))
        if t.bit_width == 32:
            with np.errstate(over="ignore"):
                x32 = np.float32(x)
            for _ in range(abs(delta)):
                x32 = np.nextafter(x32, np.float32(np.inf if delta > 0 else -np.inf))
            return float(x32)
        for _ in range(abs(delta)):
            x = float(np.nextafter(x, np.inf if delta > 0 else -np.inf))
        return x
    if pa.types.is_date(t):
        near = lit.date() if isinstance(lit, datetime.datetime) else lit
        return draw(st.one_of(_dates, st.just(near + datetime.timedelta(days=delta))))
    if pa.types.is_timestamp(t):
        if isinstance(lit, datetime.datetime):
            near = lit.astimezone(UTC).replace(tzinfo=None) if lit.tzinfo else lit
        else:
            near = datetime.datetime.combine(lit, datetime.time())
        hours = draw(st.sampled_from([0, 0, 14, -12, 18, -18, 5.5]))
        unit = {"s": 1_000_000, "ms": 1000, "us": 1}[t.unit]
        x = draw(st.one_of(_naive, st.just(near + datetime.timedelta(hours=hours))))
        us = (x - EPOCH) // datetime.timedelta(microseconds=1)
        us = (us // unit + delta) * unit
        x = EPOCH + datetime.timedelta(microseconds=us)
        return x.replace(tzinfo=UTC) if t.tz else x
    if pa.types.is_string(t):
        return draw(
            st.one_of(
                st.text(max_size=4), st.just(lit + draw(st.text(max_size=1))), st.just(lit[:-1])
            )
        )
    return draw(st.booleans())


@st.composite
def cases(draw):
    t = draw(st.sampled_from(TYPES))
    lit = draw(literals_for(t))
    x = draw(column_values(t, lit))
    return t, lit, x


def _bind_or_skip(pred, schema):
    from metaindex.errors import ExpressionError, SchemaError

    try:
        return bind(pred, schema)
    except (SchemaError, ExpressionError):
        assume(False)  # a literal Spark would reject too (checked by the binding tests)


@settings(max_examples=200, deadline=None)
@given(
    case=cases(), op=st.sampled_from(sorted(OPS, key=lambda c: c.__name__)), negate=st.booleans()
)
def test_folding_never_drops_a_matching_row(case, op, negate):
    t, lit, x = case
    pairs = variants(t, x, lit)
    assume(pairs is not None)
    schema = pa.schema([("c", t)])
    pred = op("c", lit)
    symbol = OPS[op]
    if negate:
        pred, symbol = Not(pred), NEGATED[symbol]
    bound = _bind_or_skip(pred, schema)
    kept = evaluate(bound, {"c": x}) is True
    event(f"spark may match: {any(holds(symbol, a, b) for a, b in pairs)}, kept: {kept}")
    for a, b in pairs:
        if holds(symbol, a, b):
            assert kept, (
                f"{pred} on {t}: Spark matches {x!r} (compared as {a!r} {symbol} "
                f"{b!r}) but bind gave {bound}"
            )


@settings(max_examples=150, deadline=None)
@given(data=st.data(), negate=st.booleans())
def test_in_and_not_in_never_drop_a_matching_row(data, negate):
    t = data.draw(st.sampled_from(TYPES))
    lits = data.draw(st.lists(literals_for(t), min_size=1, max_size=4))
    x = data.draw(column_values(t, lits[0]))
    per_value = [variants(t, x, lit) for lit in lits]
    assume(all(p is not None for p in per_value))
    schema = pa.schema([("c", t)])
    for cls, positive in ((In, True), (NotIn, False)):
        pred = cls("c", lits)
        match_in = any(holds("=", a, b) for pairs in per_value for a, b in pairs)
        # some cast makes every value differ (NOT IN true), or makes one equal (IN true)
        match_not_in = all(any(holds("!=", a, b) for a, b in pairs) for pairs in per_value)
        spark_true = match_in if positive else match_not_in
        if negate:
            pred, spark_true = Not(pred), (match_not_in if positive else match_in)
        bound = _bind_or_skip(pred, schema)
        if spark_true:
            assert evaluate(bound, {"c": x}) is True, (
                f"{pred} on {t}: Spark may match {x!r}, bind gave {bound}"
            )
