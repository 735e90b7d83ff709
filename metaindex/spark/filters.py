"""Spark filters -> the Pruner's conjuncts, for the skipping hook and the data source.

Two inputs, each converted one top-level filter at a time into a
``metaindex.engine.prune.Conjunct`` (its text, and its ``metaindex.expr`` predicate or why
there is none), which ``Pruner.decide`` binds or drops:

- the JSON the Java shim sends (Catalyst expressions with internal literal values):
  :func:`to_conjuncts`, format below;
- the ``pyspark.sql.datasource`` filters Spark hands a Python data source's ``pushFilters``:
  :func:`datasource_conjuncts`.

Safety rule (DESIGN.md rule 1: never skip a file holding a matching row): the request's
top-level filters are AND-ed conjuncts, and dropping a conjunct only widens the predicate. So a
conjunct with anything unknown, unsupported or malformed *anywhere* inside it (an ``unknown``
node, an ``other`` literal, a missing key, an integer out of its type's range...) comes without
a predicate, and the Pruner drops it whole. Nothing else is ever dropped: dropping a child of
an OR would narrow it, dropping one under a NOT would flip its meaning.

Request format (``{"filters": [NODE, ...]}``)::

    NODE = {"op": "and"|"or", "left": NODE, "right": NODE} | {"op": "not", "child": NODE}
         | {"op": "eq"|"eq_null_safe"|"lt"|"le"|"gt"|"ge"|"starts_with"|"ends_with"|"contains",
            "col": NAME, "value": LIT}
         | {"op": "in", "col": NAME, "values": [LIT, ...]}
         | {"op": "is_null"|"is_not_null"|"is_nan", "col": NAME}
         | {"op": "unknown", "sql": "..."}
    NAME = ["attribute", "struct field", ...]
    LIT  = {"type": "null"} | {"type": "boolean", "value": true}
         | {"type": "byte"|"short"|"int"|"long", "value": 123}
         | {"type": "float", "bits": <Float.floatToRawIntBits>}
         | {"type": "double", "bits": <Double.doubleToRawLongBits>}
         | {"type": "string", "value": "..."} | {"type": "binary", "base64": "..."}
         | {"type": "decimal", "value": "123.45", "precision": 10, "scale": 2}
         | {"type": "date", "days": 19000}
         | {"type": "timestamp", "micros": ...}        (UTC)
         | {"type": "timestamp_ntz", "micros": ...}
         | {"type": "other", "sql": "..."}

A chain of one operator (``a OR b OR c ...``, as Spark nests a long OR) is flattened and
rebuilt balanced, however long; an alternation of AND / OR / NOT deeper than
:data:`MAX_DEPTH` is not converted (the conjunct is dropped).

Literal values become what :func:`metaindex.expr.bind` expects, so that binding applies Spark's
comparison rules: floats bit-exact from their raw bits (float32 values stay float32 values;
-0.0 and NaN as Spark compares them), decimals as ``Decimal`` at their type's scale, dates as
``datetime.date``, timestamps as UTC-aware ``datetime`` and TIMESTAMP_NTZ as naive ones, binary as
``bytes``, NULL as ``None`` (``x = NULL`` is never true; ``x <=> NULL`` is ``x IS NULL``).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import struct
from typing import Any

from metaindex.errors import MetaIndexError
from metaindex.expr import expressions as ex
from metaindex.expr.resolve import quote_part
from metaindex.expr.temporal import EPOCH, EPOCH_DATE
from metaindex.expr.visitors import and_, flatten, or_

__all__ = ["to_conjuncts", "datasource_conjuncts", "MAX_DEPTH"]

MAX_DEPTH = 100
"""Deepest nesting of AND / OR / NOT alternations converted (chains of one operator are
flattened and do not count); a deeper conjunct is dropped."""

_UTC = datetime.timezone.utc
_EPOCH_UTC = EPOCH.replace(tzinfo=_UTC)
_INT_BITS = {"byte": 8, "short": 16, "int": 32, "long": 64}
_COMPARE = {
    "eq": ex.EqualTo,
    "eq_null_safe": ex.EqualNullSafe,
    "lt": ex.LessThan,
    "le": ex.LessThanOrEqual,
    "gt": ex.GreaterThan,
    "ge": ex.GreaterThanOrEqual,
}
_PATTERN = {"starts_with": ex.StartsWith, "ends_with": ex.EndsWith, "contains": ex.Contains}
_UNARY = {"is_null": ex.IsNull, "is_not_null": ex.NotNull, "is_nan": ex.IsNaN}
_DECIMAL_CONTEXT = decimal.Context(prec=100, Emax=1000, Emin=-1000)
# Python data source filters carry decimals decoded by pyspark as Decimal(unscaled) * 10**-scale
# in the default 28-digit context: a value with 28 or more digits may have been rounded.
_VARIANT_DECIMAL_DIGITS = 28
# Failures of building a predicate from well-typed but unusable parts (check_literal, Reference).
_BUILD_ERRORS = (
    TypeError,
    ValueError,
    OverflowError,
    ArithmeticError,
    RecursionError,
    MetaIndexError,
)


class _Unusable(Exception):
    """A conjunct (or a filter) that cannot be converted: the caller drops it whole."""


# ------------------------------------------------------------------------------ JSON requests


def to_conjuncts(nodes: list) -> list:
    """A ``metaindex.engine.prune.Conjunct`` per top-level filter node of a shim request (its
    ``"filters"`` entries), for ``Pruner.decide``: the node shown as SQL-like text, and its
    predicate, or None with the reason when it does not convert (the Pruner drops it)."""
    from metaindex.engine.prune import Conjunct

    out = []
    for node in nodes:
        text = _clip(_show(node, 0), 1000)
        try:
            out.append(Conjunct(text, _node(node, 0)))
        except (_Unusable, *_BUILD_ERRORS) as exc:
            out.append(Conjunct(text, None, f"cannot convert {text}: {exc}"))
    return out


def _node(node: Any, depth: int) -> ex.BooleanExpression:
    if depth > MAX_DEPTH:
        raise _Unusable("nested too deeply")
    op = _get(node, "op", str)
    if op in ("and", "or"):
        parts = [_node(leaf, depth + 1) for leaf in _chain(node, op)]
        return and_(*parts) if op == "and" else or_(*parts)
    if op == "not":
        return ex.Not(_node(_get(node, "child", dict), depth + 1))
    if op in _COMPARE:
        return _COMPARE[op](_column(_get(node, "col", list)), _literal(_get(node, "value", dict)))
    if op in _PATTERN:
        value = _literal(_get(node, "value", dict))
        if value is not None and not isinstance(value, (str, bytes)):
            raise _Unusable(f"{op} needs a string or binary pattern")
        return _PATTERN[op](_column(_get(node, "col", list)), value)
    if op == "in":
        values = _get(node, "values", list)
        return ex.In(_column(_get(node, "col", list)), [_literal(v) for v in values])
    if op in _UNARY:
        return _UNARY[op](_column(_get(node, "col", list)))
    raise _Unusable(f"op {op!r}")


def _chain(node: dict, op: str) -> list:
    """The operands of a chain of one operator (``a AND (b AND c)`` -> a, b, c)."""
    return flatten(
        node,
        lambda n: (
            (_get(n, "left", dict), _get(n, "right", dict))
            if isinstance(n, dict) and n.get("op") == op
            else None
        ),
    )


def _get(node: Any, key: str, kind: type) -> Any:
    if not isinstance(node, dict):
        raise _Unusable("a node is not an object")
    value = node.get(key)
    if not isinstance(value, kind):
        raise _Unusable(f"{key!r} missing or not a {kind.__name__}")
    return value


def _column(parts: Any) -> ex.Reference:
    if (
        not isinstance(parts, (list, tuple))
        or not parts
        or not all(isinstance(p, str) and p for p in parts)
    ):
        raise _Unusable("a column name is a non-empty list of non-empty strings")
    if len(parts) == 1:
        return ex.Reference(quote_part(parts[0]))
    # backquote every part: "a.b" must not also match a top-level field named "a.b"
    return ex.Reference(".".join("`" + p.replace("`", "``") + "`" for p in parts))


def _int(value: Any, bits: int, signed: bool = True) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Unusable("an integer is expected")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= value <= hi:
        raise _Unusable(f"{value} is out of range for {bits} bits")
    return value


def _raw_bits(value: Any, bits: int) -> int:
    """Java's raw bits, signed (as Java prints them) or unsigned, as an unsigned int."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (-(1 << (bits - 1)) <= value < (1 << bits))
    ):
        raise _Unusable(f"raw bits must be a {bits}-bit integer")
    return value & ((1 << bits) - 1)


def _literal(lit: Any) -> Any:
    kind = _get(lit, "type", str)
    if kind == "null":
        return None
    if kind == "boolean":
        return _get(lit, "value", bool)
    if kind in _INT_BITS:
        return _int(lit.get("value"), _INT_BITS[kind])
    if kind == "float":
        return struct.unpack("<f", struct.pack("<I", _raw_bits(lit.get("bits"), 32)))[0]
    if kind == "double":
        return struct.unpack("<d", struct.pack("<Q", _raw_bits(lit.get("bits"), 64)))[0]
    if kind == "string":
        return _get(lit, "value", str)
    if kind == "binary":
        try:
            return base64.b64decode(_get(lit, "base64", str), validate=True)
        except (binascii.Error, ValueError):
            raise _Unusable("binary literal is not base64") from None
    if kind == "decimal":
        return _decimal(lit)
    if kind == "date":
        try:
            return EPOCH_DATE + datetime.timedelta(days=_int(lit.get("days"), 32))
        except OverflowError:
            raise _Unusable("date out of Python's range") from None
    if kind in ("timestamp", "timestamp_ntz"):
        micros = _int(lit.get("micros"), 64)
        try:
            if kind == "timestamp":
                return _EPOCH_UTC + datetime.timedelta(microseconds=micros)
            return EPOCH + datetime.timedelta(microseconds=micros)
        except OverflowError:
            raise _Unusable("timestamp out of Python's range") from None
    raise _Unusable(f"literal type {kind!r}")


def _decimal(lit: dict) -> decimal.Decimal:
    text = _get(lit, "value", str)
    precision, scale = lit.get("precision"), lit.get("scale")
    try:
        value = decimal.Decimal(text)
    except (decimal.InvalidOperation, ValueError):
        raise _Unusable(f"decimal literal {text!r}") from None
    if not value.is_finite():
        raise _Unusable("decimal literal is not finite")
    if precision is None and scale is None:
        return value
    precision, scale = _int(precision, 32), _int(scale, 32)
    if not (0 < precision <= 1000 and -1000 <= scale <= 1000):
        raise _Unusable(f"decimal({precision}, {scale})")
    try:  # at the type's scale: bind sees the literal as Spark types it
        scaled = value.quantize(decimal.Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    except decimal.InvalidOperation:
        raise _Unusable(f"decimal {text!r} does not fit scale {scale}") from None
    if scaled != value:
        raise _Unusable(f"decimal {text!r} is not a value of decimal({precision}, {scale})")
    return scaled


# ------------------------------------------------------------------------------ conjunct text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(node: Any, depth: int) -> str:
    try:
        return _show_node(node, depth)
    except (_Unusable, *_BUILD_ERRORS):
        return "<malformed>"


def _show_node(node: Any, depth: int) -> str:
    if depth > MAX_DEPTH:
        return "…"
    op = _get(node, "op", str)
    if op in ("and", "or"):
        parts = [_show(leaf, depth + 1) for leaf in _chain(node, op)]
        return "(" + f" {op.upper()} ".join(parts) + ")"
    if op == "not":
        return f"NOT {_show(node.get('child'), depth + 1)}"
    if op == "unknown":
        return "?" + _clip(str(node.get("sql", "")), 80)
    name = _show_column(node.get("col"))
    if op in ("eq", "eq_null_safe", "lt", "le", "gt", "ge"):
        symbol = {"eq": "=", "eq_null_safe": "<=>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[
            op
        ]
        return f"{name} {symbol} {_show_literal(node.get('value'))}"
    if op in _PATTERN:
        return f"{op.replace('_', '')}({name}, {_show_literal(node.get('value'))})"
    if op == "in":
        values = _get(node, "values", list)
        shown = [_show_literal(v) for v in values[:5]]
        if len(values) > 5:
            shown.append(f"… {len(values)} values")
        return f"{name} IN ({', '.join(shown)})"
    if op in _UNARY:
        return (
            f"isnan({name})"
            if op == "is_nan"
            else f"{name} IS {'NOT ' if op == 'is_not_null' else ''}NULL"
        )
    return f"<op {_clip(op, 20)}>"


def _show_column(parts: Any) -> str:
    try:
        return _column(parts).name
    except (_Unusable, *_BUILD_ERRORS):
        return "<column?>"


def _show_literal(lit: Any) -> str:
    kind = lit.get("type") if isinstance(lit, dict) else None
    if kind == "other":
        return "<other " + _clip(str(lit.get("sql", "")), 40) + ">"
    try:
        value = _literal(lit)
    except (_Unusable, *_BUILD_ERRORS):
        return "<literal?>"
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + _clip(value, 40).replace("'", "\\'") + "'"
    if isinstance(value, bytes):
        return "X'" + _clip(value.hex().upper(), 40) + "'"
    if isinstance(value, datetime.datetime):
        word = "TIMESTAMP" if value.tzinfo is not None else "TIMESTAMP_NTZ"
        return f"{word} '{value.replace(tzinfo=None).isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, float):
        return repr(value) + ("F" if kind == "float" else "D")
    if isinstance(value, decimal.Decimal):
        return str(value) + "BD"
    return str(value)


# ------------------------------------------------------------------------------ data source


def datasource_conjuncts(filters) -> list:
    """A ``metaindex.engine.prune.Conjunct`` per ``pyspark.sql.datasource`` filter, for
    ``Pruner.decide``.

    Spark hands a Python data source's ``pushFilters`` the top-level conjuncts it can express
    (``EqualTo``, ``EqualNullSafe``, ``GreaterThan[OrEqual]``, ``LessThan[OrEqual]``, ``In``,
    ``IsNull``, ``IsNotNull``, ``StringStartsWith`` / ``EndsWith`` / ``Contains``, and ``Not`` of
    one of those), columns as tuples of name parts, values as Python objects decoded from a
    Spark variant. A filter does not convert (its conjunct has no predicate, the Pruner drops
    it) when its value is of no literal type (a list, a dict, a variant), or a decimal of 28
    digits or more (pyspark decodes it in the default 28-digit decimal context, so it may have
    been rounded).
    """
    from metaindex.engine.prune import Conjunct

    out = []
    for f in filters:
        text = _clip(repr(f), 1000)
        try:
            out.append(Conjunct(text, _filter(f, 0)))
        except (_Unusable, *_BUILD_ERRORS) as exc:
            out.append(Conjunct(text, None, f"cannot convert {text}: {exc}"))
    return out


def _filter(f: Any, depth: int) -> ex.BooleanExpression:
    from pyspark.sql import datasource as ds

    if depth > MAX_DEPTH:
        raise _Unusable("nested too deeply")
    if isinstance(f, ds.Not):
        return ex.Not(_filter(f.child, depth + 1))
    compare = {
        ds.EqualTo: ex.EqualTo,
        ds.EqualNullSafe: ex.EqualNullSafe,
        ds.GreaterThan: ex.GreaterThan,
        ds.GreaterThanOrEqual: ex.GreaterThanOrEqual,
        ds.LessThan: ex.LessThan,
        ds.LessThanOrEqual: ex.LessThanOrEqual,
    }
    pattern = {
        ds.StringStartsWith: ex.StartsWith,
        ds.StringEndsWith: ex.EndsWith,
        ds.StringContains: ex.Contains,
    }
    kind = type(f)
    if kind in compare:
        return compare[kind](_column(f.attribute), _value(f.value))
    if kind in pattern:
        value = _value(f.value)
        if value is not None and not isinstance(value, (str, bytes)):
            raise _Unusable("a string pattern is expected")
        return pattern[kind](_column(f.attribute), value)
    if kind is ds.In:
        if not isinstance(f.value, (tuple, list)):
            raise _Unusable("In needs a sequence of values")
        return ex.In(_column(f.attribute), [_value(v) for v in f.value])
    if kind is ds.IsNull:
        return ex.IsNull(_column(f.attribute))
    if kind is ds.IsNotNull:
        return ex.NotNull(_column(f.attribute))
    raise _Unusable(f"filter {kind.__name__}")


def _value(value: Any) -> Any:
    if (
        isinstance(value, decimal.Decimal)
        and value.is_finite()
        and len(value.as_tuple().digits) >= _VARIANT_DECIMAL_DIGITS
    ):
        raise _Unusable("decimal may have been rounded by pyspark")
    if value is None or isinstance(
        value, (bool, int, float, str, bytes, decimal.Decimal, datetime.date)
    ):
        return ex.check_literal(value)
    raise _Unusable(f"value of type {type(value).__name__}")
