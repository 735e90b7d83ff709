"""The sqlglot-free parser of simple predicates (metaindex.expr.simple_sql) against the full
parser (metaindex.expr.sql, through sqlglot): the same predicates, conjunct texts and errors
for generated simple predicates, and every keyword of sqlglot's Spark dialect as a name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.expr import simple_sql
from metaindex.expr import sql as full

_NAMES = st.sampled_from(["a", "b", "ts", "A", "x_1", "_c", "s.t", "a.b.c", "Day", "e", "nan"])
_DIGITS = st.text("0123456789", min_size=1, max_size=4)
_NUMBERS = st.one_of(
    _DIGITS,
    st.builds(lambda a, b: f"{a}.{b}", _DIGITS, _DIGITS),
    st.builds(
        lambda a, e, s, x: f"{a}{e}{s}{x}",
        _DIGITS,
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        _DIGITS,
    ),
).flatmap(lambda n: st.sampled_from([n, f"-{n}", f"- {n}"]))
_STRINGS = st.lists(
    st.sampled_from(list('abzAZ09 %_-.,()=<>é日"`;*') + ["--", "/*"]), max_size=6
).map(lambda s: "'" + "".join(s) + "'")
_DATES = st.sampled_from(["2024-01-01", "2024-02-29", "2023-02-29", "1900-1-1", "x", "2024"])
_TIMES = st.sampled_from(
    [
        "2024-01-01 00:00:00",
        "2024-01-01T12:30:00.5",
        "2024-01-01 00:00:00+02:00",
        "2024-01-01 00:00:00 Europe/Paris",
        "1969-12-31 23:59:59.999999",
        "nope",
    ]
)
_LITERALS = st.one_of(
    _NUMBERS,
    _STRINGS,
    st.sampled_from(["TRUE", "false", "NULL", "True"]),
    _DATES.flatmap(lambda d: st.sampled_from([f"DATE '{d}'", f"date '{d}'"])),
    _TIMES.flatmap(lambda t: st.sampled_from([f"TIMESTAMP '{t}'", f"TIMESTAMP_NTZ '{t}'"])),
)
_OPS = st.sampled_from(["=", "==", "!=", "<>", "<", "<=", ">", ">=", "<=>"])
_SPACE = st.sampled_from([" ", "  ", "\n", "\t "])


def _comparison(draw) -> str:
    column, literal, op, sp = draw(_NAMES), draw(_LITERALS), draw(_OPS), draw(_SPACE)
    left, right = (column, literal) if draw(st.booleans()) else (literal, column)
    return f"{left}{sp}{op}{draw(st.sampled_from(['', ' ']))}{right}"


@st.composite
def _leaves(draw) -> str:
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "isnull"]))
    if kind == "cmp":
        return _comparison(draw)
    column = draw(_NAMES)
    if kind == "in":
        values = draw(st.lists(_LITERALS, min_size=1, max_size=4))
        neg = draw(st.sampled_from(["", "NOT ", "not "]))
        comma = draw(st.sampled_from([", ", ",", " , "]))
        return f"{column} {neg}IN ({comma.join(values)})"
    neg = draw(st.sampled_from(["", "NOT ", "not "]))
    return f"{column} IS {neg}{draw(st.sampled_from(['NULL', 'null']))}"


_PREDICATES = st.recursive(
    _leaves(),
    lambda inner: st.one_of(
        st.builds(
            lambda a, b, w: f"{a} {w} {b}",
            inner,
            inner,
            st.sampled_from(["AND", "and", "OR", "Or"]),
        ),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=8,
)


def _outcome(parse, text: str, zone: str):
    """repr of the result (repr tells 1 from 1.0 from Decimal('1')), or the error's type and
    message."""
    try:
        return "ok", repr(parse(text, time_zone=zone))
    except Exception as exc:  # noqa: BLE001 - the two parsers must fail alike
        return type(exc).__name__, str(exc)


def _same(text: str, zone: str = "UTC") -> None:
    for fast, slow in (
        (simple_sql.parse_sql_conjuncts, full.parse_sql_conjuncts),
        (simple_sql.parse_sql, full.parse_sql),
    ):
        assert _outcome(fast, text, zone) == _outcome(slow, text, zone), (
            f"{fast.__name__}({text!r}) must equal sqlglot's"
        )


@settings(max_examples=150, deadline=None)
@given(_PREDICATES, st.sampled_from(["UTC", "Europe/Paris", "America/New_York"]))
def test_simple_predicates_parse_as_sqlglot_parses_them(text, zone):
    assert simple_sql._simple(text, zone) is not None, f"{text!r} is in the simple grammar"
    _same(text, zone)


def _sqlglot_words() -> list:
    from sqlglot.dialects.dialect import Dialect

    spark = Dialect.get_or_raise("spark")
    words = set(spark.tokenizer_class.KEYWORDS) | set(spark.parser_class.FUNCTIONS)
    words |= {t.name for t in spark.parser_class.NO_PAREN_FUNCTIONS}
    return sorted(w for w in words if w.replace("_", "").isalnum() and " " not in w)


def test_every_keyword_as_a_name_parses_as_sqlglot_parses_it():
    """A name the simple parser takes for a column must be one to sqlglot too, wherever it
    stands (words it leaves to sqlglot are the same by construction)."""
    words = [w for w in _sqlglot_words() if w.lower() not in simple_sql._RESERVED]
    assert len(words) > 100
    for w in words:
        text = f"{w.lower()} = 1 AND x.{w} IS NULL AND 1 < {w.upper()}.y AND {w} IN (1, 2)"
        assert _outcome(simple_sql.parse_sql_conjuncts, text, "UTC") == _outcome(
            full.parse_sql_conjuncts, text, "UTC"
        ), f"{w!r} as a name"


@pytest.mark.parametrize(
    "text",
    [
        "a LIKE 'x%'",
        "a BETWEEN 1 AND 2",
        "`a b` = 1",
        "a = 'it''s'",
        "a = 'x' 'y'",
        'a = "dq"',
        "a = 'a\\'b'",
        "upper(a) = 'X'",
        "a = b",
        "1 = 1",
        "a = 1D",
        "a = X'0A'",
        "a = 1 -- comment",
        "a = DATE '2024-13-01'",
        "a = 1 AND",
        "ok",
        "a = 1;",
        "a IN ()",
        "a = .5",
    ],
)
def test_what_the_simple_parser_leaves_to_sqlglot_answers_the_same(text):
    _same(text)
