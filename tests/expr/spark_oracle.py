"""Spark SQL's answer to ``column op literal`` on one non-null value, written independently of
metaindex.expr.literals (tests only).

Spark compares after an implicit cast. Where that cast depends on something metaindex does not
know (ANSI mode or legacy coercion, the session time zone, how a decimal becomes a double),
``variants`` returns every candidate pair; bind must keep a row whenever any of them matches.
"""

from __future__ import annotations

import datetime
import math
import zoneinfo
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa

ZONES = [
    datetime.timezone.utc,
    datetime.timezone(datetime.timedelta(hours=14)),
    datetime.timezone(datetime.timedelta(hours=-12)),
    zoneinfo.ZoneInfo("America/Los_Angeles"),
    zoneinfo.ZoneInfo("Asia/Kolkata"),
]


def f32(value) -> float:
    """A number rounded to float32 the way Java casts a long (exactly, ties to even)."""
    p = Fraction(value)
    near = np.float32(float(p))
    options = [
        near,
        np.nextafter(near, np.float32(-np.inf)),
        np.nextafter(near, np.float32(np.inf)),
    ]
    options = [o for o in options if math.isfinite(o)] or [near]
    return float(
        min(options, key=lambda o: (abs(Fraction(float(o)) - p), int(o.view(np.uint32)) & 1))
    )


def _key(v):
    if isinstance(v, float):
        return (1, 0.0) if v != v else (0, v)
    return v


def holds(op: str, a, b) -> bool:
    """``a op b`` for non-null, same-kind values under Spark's order."""
    ka, kb = _key(a), _key(b)
    return {
        "=": ka == kb,
        "<=>": ka == kb,
        "!=": ka != kb,
        "<": ka < kb,
        "<=": ka <= kb,
        ">": ka > kb,
        ">=": ka >= kb,
    }[op]


def variants(col_type: pa.DataType, x, lit) -> list[tuple] | None:
    """Candidate (column value, literal) pairs Spark may compare; None: not comparable here."""
    if pa.types.is_integer(col_type):
        if isinstance(lit, bool):
            return None
        if isinstance(lit, (int, Decimal)):
            return [(Fraction(x), Fraction(lit))]
        if isinstance(lit, float):
            return [(float(x), lit)]
        if isinstance(lit, str):
            exact = Fraction(Decimal(lit.strip()))
            return [(Fraction(x), exact), (Fraction(x), Fraction(math.trunc(exact)))]
    if pa.types.is_decimal(col_type):
        if isinstance(lit, (int, Decimal)) and not isinstance(lit, bool):
            return [(Fraction(x), Fraction(lit))]
        if isinstance(lit, float):
            unscaled = int(x.scaleb(col_type.scale))
            return [(float(x), lit), (float(unscaled) / float(10**col_type.scale), lit)]
    if pa.types.is_floating(col_type):
        if isinstance(lit, float):
            return [(x, lit)]
        if isinstance(lit, Decimal):
            return [(x, float(lit))]
        if isinstance(lit, int) and not isinstance(lit, bool):
            pairs = [(x, float(lit))]
            return pairs + [(x, f32(lit))] if col_type.bit_width == 32 else pairs
    if pa.types.is_date(col_type):
        if isinstance(lit, datetime.datetime):
            midnight = datetime.datetime.combine(x, datetime.time())
            if lit.tzinfo is None:
                return [(midnight, lit)]
            return [(midnight.replace(tzinfo=z), lit) for z in ZONES]
        if isinstance(lit, datetime.date):
            return [(x, lit)]
        if isinstance(lit, str):
            return [(x, datetime.date.fromisoformat(lit.strip()[:10]))]
    if pa.types.is_timestamp(col_type):
        if not isinstance(lit, datetime.datetime):
            lit = datetime.datetime.combine(lit, datetime.time())
        if (lit.tzinfo is not None) == (col_type.tz is not None):
            return [(x, lit)]
        if col_type.tz is not None:
            return [(x, lit.replace(tzinfo=z)) for z in ZONES]
        return [(x.replace(tzinfo=z), lit) for z in ZONES]
    if pa.types.is_string(col_type) and isinstance(lit, str):
        return [(x, lit)]
    if pa.types.is_boolean(col_type) and isinstance(lit, bool):
        return [(x, lit)]
    return None
