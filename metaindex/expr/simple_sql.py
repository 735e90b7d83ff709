"""Spark SQL predicates without sqlglot for the simple ones: the front of SQL parsing.

:func:`parse_sql` and :func:`parse_sql_conjuncts` first try a small parser of the predicates
pruning meets most (comparisons of a column with a literal either side, ``[NOT] IN`` lists,
``IS [NOT] NULL``, ``AND`` / ``OR`` / ``NOT`` and parentheses; columns as plain or dotted
names; literals as integers, decimals, doubles with an exponent, plain single-quoted strings,
``TRUE`` / ``FALSE`` / ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``, ``TIMESTAMP_NTZ
'...'``). Anything else (functions, ``LIKE``, ``BETWEEN``, backquoted names, escapes in
strings, keywords as names, a literal that does not convert...) goes to
:mod:`metaindex.expr.sql`, the sqlglot-based parser, which also reports every error. Both
give the same predicates and the same conjunct texts (sqlglot's Spark rendering: ``!=`` as
``<>``, ``DATE 'x'`` as ``CAST('x' AS DATE)``, ...), so a prune of a simple predicate never
imports sqlglot (~0.2 s of a cold prune); the tests prove the equality on generated
predicates.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any

from metaindex.expr import expressions as ex
from metaindex.expr.temporal import parse_date, parse_timestamp, session_zone
from metaindex.expr.visitors import and_, flatten, or_

__all__ = ["parse_sql", "parse_sql_conjuncts", "FLIPPED", "number_literal"]

FLIPPED: dict[type[ex._LiteralPredicate], type[ex._LiteralPredicate]] = {
    ex.EqualTo: ex.EqualTo,
    ex.NotEqualTo: ex.NotEqualTo,
    ex.LessThan: ex.GreaterThan,
    ex.LessThanOrEqual: ex.GreaterThanOrEqual,
    ex.GreaterThan: ex.LessThan,
    ex.GreaterThanOrEqual: ex.LessThanOrEqual,
    ex.EqualNullSafe: ex.EqualNullSafe,
}
"""``literal op column`` read as ``column op' literal``."""


def number_literal(text: str) -> int | float | Decimal:
    """A numeric literal as Spark types it: exponent -> double, point -> decimal, else
    integral."""
    if "e" in text or "E" in text:
        return float(text)
    if "." in text:
        return Decimal(text)
    return int(text)


def parse_sql(sql: str, *, time_zone: str = "UTC") -> ex.BooleanExpression:
    """:func:`metaindex.expr.sql.parse_sql` (same arguments, result and errors), without
    sqlglot for a simple predicate (see the module docstring)."""
    simple = _simple(sql, time_zone)
    if simple is not None:
        tree, zone = simple
        try:
            return _predicate(tree, False, zone)
        except (ValueError, ArithmeticError):
            pass  # a literal that does not convert: the full parser words the error
    from metaindex.expr import sql as full

    return full.parse_sql(sql, time_zone=time_zone)


def parse_sql_conjuncts(
    sql: str, *, time_zone: str = "UTC"
) -> list[tuple[str, ex.BooleanExpression | None, str | None]]:
    """:func:`metaindex.expr.sql.parse_sql_conjuncts` (same arguments, result and errors),
    without sqlglot for a simple predicate (see the module docstring)."""
    simple = _simple(sql, time_zone)
    if simple is not None:
        tree, zone = simple
        try:
            return [
                (_text(node), _predicate(node, False, zone), None)
                for node in (_unparen(n) for n in flatten(tree, _and_operands))
            ]
        except (ValueError, ArithmeticError):
            pass  # a literal that does not convert: the full parser words the error
    from metaindex.expr import sql as full

    return full.parse_sql_conjuncts(sql, time_zone=time_zone)


# --- tokens -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<num>-?\s*\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w.'"`])
    |(?P<str>'[^'\\\x00-\x1f\x7f]*')(?!\s*['"])
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?!['"`])
    |(?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,|\.)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false"}
_TYPED = {"date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ"}
_OPS = {
    "=": (ex.EqualTo, "="),
    "==": (ex.EqualTo, "="),
    "<>": (ex.NotEqualTo, "<>"),
    "!=": (ex.NotEqualTo, "<>"),
    "<": (ex.LessThan, "<"),
    "<=": (ex.LessThanOrEqual, "<="),
    ">": (ex.GreaterThan, ">"),
    ">=": (ex.GreaterThanOrEqual, ">="),
    "<=>": (ex.EqualNullSafe, "IS NOT DISTINCT FROM"),
}
# names sqlglot's Spark dialect reads as something other than a column: left to it (a test
# checks this list against sqlglot's keyword table)
_RESERVED = frozenset(
    """all alter analyze and any array as asc begin between both by cache call case cast
    collate comment commit connect_by_root copy create cross current_date current_time
    current_timestamp current_user date declare default delete desc describe distinct div
    drop else end escape except execute exists explain false fetch filter first following
    for from full glob grant group having if ilike in inner insert interval intersect into
    is join kill last lateral left like limit load map merge minus natural not notnull null
    nulls offset on optimize or order outer over partition partitioned_by percent pivot
    pragma preceding prepare qualify range recursive refresh regexp rename returning revoke
    right rlike rollback rollup row rows select serdeproperties session_user set show similar
    some struct table tablesample then timestamp timestamp_ntz to top true truncate unbounded
    uncache union unnest unpivot update use using vacuum values when where window with within
    xor""".split()
)


class _NotSimple(Exception):
    """The text is outside the simple grammar: the full parser takes it."""


def _tokens(sql: str) -> list[tuple[str, str]]:
    out, at, end = [], 0, len(sql.rstrip())
    while at < end:
        m = _TOKEN.match(sql, at)
        if m is None or m.end() == at:
            raise _NotSimple
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        at = m.end()
    return out


# --- grammar: nodes are tuples ------------------------------------------------------------
# ("and"|"or", left, right), ("not", x), ("paren", x), ("cmp", op, lhs, rhs),
# ("in", column, [literal, ...]), ("isnull", column); a column ("col", "a.b"), a literal
# ("lit", kind, text) with kind "num", "str", "bool", "null" or a type name.


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.at += 1
        return tok

    def keyword(self, word: str) -> bool:
        kind, text = self.peek()
        if kind == "name" and text.lower() == word:
            self.at += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if self.take() != ("op", text):
            raise _NotSimple

    def disjunction(self) -> tuple:
        node = self.conjunction()
        while self.keyword("or"):
            node = ("or", node, self.conjunction())
        return node

    def conjunction(self) -> tuple:
        node = self.negation()
        while self.keyword("and"):
            node = ("and", node, self.negation())
        return node

    def negation(self) -> tuple:
        if self.keyword("not"):
            return ("not", self.negation())
        if self.peek() == ("op", "("):
            self.at += 1
            inner = self.disjunction()
            self.expect(")")
            return ("paren", inner)
        return self.leaf()

    def leaf(self) -> tuple:
        left = self.term()
        if left[0] == "col":
            if self.keyword("is"):
                negated = self.keyword("not")
                if not self.keyword("null"):
                    raise _NotSimple
                node: tuple = ("isnull", left)
                return ("not", node) if negated else node
            negated = self.keyword("not")
            if self.keyword("in"):
                self.expect("(")
                values = [self.literal()]
                while self.peek() == ("op", ","):
                    self.at += 1
                    values.append(self.literal())
                self.expect(")")
                node = ("in", left, values)
                return ("not", node) if negated else node
            if negated:
                raise _NotSimple
        kind, op = self.take()
        if kind != "op" or op not in _OPS:
            raise _NotSimple
        right = self.term()
        if (left[0] == "col") == (right[0] == "col"):
            raise _NotSimple  # two columns or two literals: the full parser says why
        return ("cmp", op, left, right)

    def term(self) -> tuple:
        kind, text = self.peek()
        if kind == "name" and text.lower() not in _RESERVED:
            self.at += 1
            parts = [text]
            while self.peek() == ("op", "."):
                self.at += 1
                kind, text = self.take()
                if kind != "name" or text.lower() in _RESERVED:
                    raise _NotSimple
                parts.append(text)
            return ("col", ".".join(parts))
        return self.literal()

    def literal(self) -> tuple:
        kind, text = self.take()
        if kind == "num":
            return ("lit", "num", re.sub(r"\s+", "", text))
        if kind == "str":
            return ("lit", "str", text)
        if kind == "name":
            word = text.lower()
            if word in ("true", "false"):
                return ("lit", "bool", word.upper())
            if word == "null":
                return ("lit", "null", "NULL")
            if word in _TYPED and self.peek()[0] == "str":
                return ("lit", _TYPED[word], self.take()[1])
        raise _NotSimple


def _simple(sql: Any, time_zone: str) -> tuple[tuple, datetime.tzinfo] | None:
    """``(tree, session zone)`` of a simple predicate, None for anything else."""
    if not isinstance(sql, str) or len(sql) > 100_000:
        return None
    try:
        parser = _Parser(_tokens(sql))
        tree = parser.disjunction()
        if parser.at != len(parser.tokens):
            return None
        return tree, session_zone(time_zone)
    except (_NotSimple, RecursionError, ValueError, LookupError):
        return None


# --- predicates and texts, as metaindex.expr.sql makes them from sqlglot's tree -----------


def _unparen(node: tuple) -> tuple:
    while node[0] == "paren":
        node = node[1]
    return node


def _and_operands(node: tuple) -> tuple | None:
    node = _unparen(node)
    return (node[1], node[2]) if node[0] == "and" else None


def _or_operands(node: tuple) -> tuple | None:
    node = _unparen(node)
    return (node[1], node[2]) if node[0] == "or" else None


def _predicate(node: tuple, negated: bool, zone: datetime.tzinfo) -> ex.BooleanExpression:
    kind = node[0]
    if kind == "paren":
        return _predicate(node[1], negated, zone)
    if kind == "not":
        return _predicate(node[1], not negated, zone)
    if kind in ("and", "or"):
        chain = flatten(node, _and_operands if kind == "and" else _or_operands)
        parts = [_predicate(p, negated, zone) for p in chain]
        return and_(*parts) if (kind == "and") != negated else or_(*parts)
    leaf: ex.BooleanExpression
    if kind == "isnull":
        leaf = ex.IsNull(ex.Reference(node[1][1]))
    elif kind == "in":
        leaf = ex.In(ex.Reference(node[1][1]), [_value(v, zone) for v in node[2]])
    else:
        _, op, left, right = node
        cls = _OPS[op][0]
        if left[0] == "col":
            leaf = cls(ex.Reference(left[1]), _value(right, zone))
        else:
            leaf = FLIPPED[cls](ex.Reference(right[1]), _value(left, zone))
    return ~leaf if negated else leaf


def _value(literal: tuple, zone: datetime.tzinfo) -> Any:
    _, kind, text = literal
    if kind == "num":
        negative = text.startswith("-")
        value = number_literal(text.lstrip("-"))
        return -value if negative else value
    if kind == "bool":
        return text == "TRUE"
    if kind == "null":
        return None
    body = text[1:-1]
    if kind == "str":
        return body
    if kind == "DATE":
        return parse_date(body)
    ts = parse_timestamp(body)
    if kind == "TIMESTAMP_NTZ":
        return ts.replace(tzinfo=None)
    ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=zone)
    return ts.astimezone(datetime.timezone.utc)


def _text(node: tuple) -> str:
    """The node as sqlglot's Spark generator writes it (iteratively: chains can be long)."""
    out: list[str] = []
    todo: list = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, str):
            out.append(n)
            continue
        kind = n[0]
        if kind == "paren":
            todo += [")", n[1], "("]
        elif kind == "not":
            todo += [n[1], "NOT "]
        elif kind in ("and", "or"):
            todo += [n[2], f" {kind.upper()} ", n[1]]
        elif kind == "isnull":
            out.append(f"{n[1][1]} IS NULL")
        elif kind == "in":
            out.append(f"{n[1][1]} IN ({', '.join(_term_text(v) for v in n[2])})")
        else:
            out.append(f"{_term_text(n[2])} {_OPS[n[1]][1]} {_term_text(n[3])}")
    return "".join(out)


def _term_text(term: tuple) -> str:
    if term[0] == "col":
        return term[1]
    _, kind, text = term
    return f"CAST({text} AS {kind})" if kind in _TYPED.values() else text
