"""parse_sql: Spark SQL predicate strings -> unbound expressions."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from metaindex.errors import ExpressionError
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
    StartsWith,
    bind,
    col,
    parse_sql,
)

UTC = datetime.timezone.utc


@pytest.mark.parametrize(
    "sql, expected",
    [
        (
            "temp > 30 AND city IN ('Paris', 'Rome')",
            And(GreaterThan("temp", 30), In("city", ("Paris", "Rome"))),
        ),
        ("a = 1", EqualTo("a", 1)),
        ("a == 1", EqualTo("a", 1)),
        ("a <=> 1", EqualNullSafe("a", 1)),
        ("a <> 1", NotEqualTo("a", 1)),
        ("a != 1", NotEqualTo("a", 1)),
        ("a < 1", LessThan("a", 1)),
        ("a <= 1", LessThanOrEqual("a", 1)),
        ("a >= 1", GreaterThanOrEqual("a", 1)),
        ("1 < a", GreaterThan("a", 1)),
        ("1 >= a", LessThanOrEqual("a", 1)),
        ("a IN (1, NULL)", In("a", (1, None))),
        ("a NOT IN (1, 2)", NotIn("a", (1, 2))),
        ("a IS NULL", IsNull("a")),
        ("a IS NOT NULL", NotNull("a")),
        ("isnull(a)", IsNull("a")),
        ("isnotnull(a)", NotNull("a")),
        ("isnan(a)", IsNaN("a")),
        ("NOT isnan(a)", NotNaN("a")),
        ("a BETWEEN 1 AND 5", And(GreaterThanOrEqual("a", 1), LessThanOrEqual("a", 5))),
        ("a NOT BETWEEN 1 AND 5", Or(LessThan("a", 1), GreaterThan("a", 5))),
        ("NOT (a = 1 OR b IS NULL)", And(NotEqualTo("a", 1), NotNull("b"))),
        ("NOT NOT a = 1", EqualTo("a", 1)),
        (
            "(a = 1 OR (b = 2)) AND c = 3",
            And(Or(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3)),
        ),
        ("a IS TRUE", EqualNullSafe("a", True)),
        ("a IS NOT TRUE", Or(IsNull("a"), NotEqualTo("a", True))),
        ("a IS DISTINCT FROM 3", Or(IsNull("a"), NotEqualTo("a", 3))),
        ("a IS NOT DISTINCT FROM 3", EqualNullSafe("a", 3)),
        ("flag", EqualTo("flag", True)),
        ("NOT flag", NotEqualTo("flag", True)),
        ("true", AlwaysTrue()),
        ("NOT true", AlwaysFalse()),
        ("NULL", AlwaysFalse()),
        ("NOT NULL", AlwaysFalse()),
        ("a = 1 OR false", EqualTo("a", 1)),
        # LIKE
        ("s LIKE 'ab%'", StartsWith("s", "ab")),
        ("s LIKE 'ab%%'", StartsWith("s", "ab")),
        ("s NOT LIKE 'ab%'", NotStartsWith("s", "ab")),
        ("s LIKE '%ab'", EndsWith("s", "ab")),
        ("s LIKE '%ab%'", Contains("s", "ab")),
        ("NOT s LIKE '%ab%'", Not(Contains("s", "ab"))),
        ("s LIKE 'abc'", EqualTo("s", "abc")),
        ("s NOT LIKE 'abc'", NotEqualTo("s", "abc")),
        ("s LIKE '%'", StartsWith("s", "")),
        ("s LIKE 'a_c%'", StartsWith("s", "a")),
        ("s LIKE 'a%c'", And(StartsWith("s", "a"), EndsWith("s", "c"))),
        ("s LIKE '_'", StartsWith("s", "")),
        ("s NOT LIKE 'a_c'", AlwaysTrue()),
        ("NOT (s LIKE 'a%c')", AlwaysTrue()),
        ("s LIKE 'a\\\\%'", EqualTo("s", "a%")),
        ("s LIKE 'a\\\\_b%'", StartsWith("s", "a_b")),
        ("s LIKE 'a!%%' ESCAPE '!'", StartsWith("s", "a%")),
        ("s ILIKE 'ab%'", AlwaysTrue()),
        ("NOT s RLIKE 'ab'", AlwaysTrue()),
        ("startswith(s, 'ab')", StartsWith("s", "ab")),
        ("endswith(s, 'ab')", EndsWith("s", "ab")),
        ("contains(s, 'ab')", Contains("s", "ab")),
        # names
        ("`my col` = 1", EqualTo("my col", 1)),
        ("a.b.c = 1", EqualTo("a.b.c", 1)),
        ("`a`.`b.c` = 1", EqualTo("a.`b.c`", 1)),
        ("A.B = 1", EqualTo("A.B", 1)),
    ],
)
def test_predicates(sql, expected):
    assert parse_sql(sql) == expected, f"{sql!r} parsed to {parse_sql(sql)}"


def _literal(sql_literal: str):
    return parse_sql(f"x = {sql_literal}").value


@pytest.mark.parametrize(
    "sql_literal, expected",
    [
        ("1", 1),
        ("-1", -1),
        ("9223372036854775808", 9223372036854775808),
        ("1.5", Decimal("1.5")),
        (".5", Decimal(".5")),
        ("1.5e0", 1.5),
        ("1E2", 100.0),
        ("1.5D", 1.5),
        ("1.5BD", Decimal("1.5")),
        ("1L", 1),
        ("10Y", 10),
        ("7S", 7),
        ("1.1F", 1.100000023841858),
        ("'abc'", "abc"),
        ("'it''s'", "it's"),
        ("'a' 'b'", "ab"),
        ("'a\\'b'", "a'b"),
        ("'é'", "é"),
        ("X'0A'", b"\n"),
        ("X'0'", b"\x00"),
        ("true", True),
        ("FALSE", False),
        ("NULL", None),
        ("DATE '2026-01-02'", datetime.date(2026, 1, 2)),
        ("DATE '2026-1-2'", datetime.date(2026, 1, 2)),
        ("to_date('2026-01-02')", datetime.date(2026, 1, 2)),
        (
            "TIMESTAMP '2026-01-02 03:04:05.123456'",
            datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        ),
        (
            "TIMESTAMP '2026-01-02 03:04:05+02:00'",
            datetime.datetime(2026, 1, 2, 1, 4, 5, tzinfo=UTC),
        ),
        ("TIMESTAMP '2026-01-02T03:04:05Z'", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("TIMESTAMP_NTZ '2026-01-02 03:04'", datetime.datetime(2026, 1, 2, 3, 4)),
        ("TIMESTAMP_LTZ '2026-01-02'", datetime.datetime(2026, 1, 2, tzinfo=UTC)),
        ("CAST('inf' AS DOUBLE)", math.inf),
        ("CAST('-Infinity' AS DOUBLE)", -math.inf),
        ("CAST(1.5 AS INT)", 1),
        ("CAST(-1.5 AS BIGINT)", -1),
        ("CAST('1.255' AS DECIMAL(5, 2))", Decimal("1.26")),
        ("CAST('abc' AS STRING)", "abc"),
        ("CAST('ab' AS BINARY)", b"ab"),
        ("CAST(NULL AS INT)", None),
    ],
)
def test_literals_are_typed_like_spark(sql_literal, expected):
    value = _literal(sql_literal)
    assert value == expected and type(value) is type(expected), (
        f"{sql_literal} -> {value!r}, expected {expected!r}"
    )


@pytest.mark.parametrize(
    "sql", ["CAST('NaN' AS DOUBLE)", "double('NaN')", "CAST('nan' AS FLOAT)", "float('NaN')"]
)
def test_nan_literals(sql):
    assert math.isnan(_literal(sql))


def test_timestamp_literals_use_the_session_time_zone():
    value = parse_sql("t > TIMESTAMP '2026-01-02 00:00:00'", time_zone="America/Los_Angeles").value
    assert value == datetime.datetime(2026, 1, 2, 8, tzinfo=UTC)
    assert parse_sql(
        "t > TIMESTAMP '2026-01-02 00:00:00Z'", time_zone="Asia/Tokyo"
    ).value == datetime.datetime(2026, 1, 2, tzinfo=UTC)
    with pytest.raises(ExpressionError, match="time zone"):
        parse_sql("t > 1", time_zone="Mars/Olympus")


@pytest.mark.parametrize(
    "sql, message",
    [
        ("x >", "cannot parse"),
        ("x = 'abc", "cannot parse"),
        ("a = 1; DROP TABLE t", "one boolean expression"),
        ("x = y", "one column with one literal"),
        ("1 = 1", "one column with one literal"),
        ("lower(s) = 'a'", "one column with one literal"),
        ("x = 1 + 2", "expected a literal"),
        ("x IN (SELECT 1)", "list of literals"),
        ("x IN (y)", "expected a literal, got a column"),
        ("x IS 5", "IS takes NULL, TRUE or FALSE"),
        ("x = CAST('abc' AS INT)", "cannot read 'abc' as a number"),
        ("x = DATE 'soon'", "as a date"),
        ("x = CAST(1 AS ARRAY<INT>)", "unsupported cast"),
        ("s LIKE 'abc\\\\'", "escape character"),
        ("s LIKE 'a' ESCAPE 'ab'", "one character"),
        ("upper(s)", "unsupported SQL"),
        ("x = -'a'", "minus applies to numbers"),
        ("x = CAST(12345.6 AS DECIMAL(5, 2))", "does not fit"),
    ],
)
def test_unsupported_sql_raises_expression_error(sql, message):
    with pytest.raises(ExpressionError, match=message):
        parse_sql(sql)


def test_parse_sql_takes_a_string():
    with pytest.raises(TypeError):
        parse_sql(col("a") == 1)


def test_parsed_predicates_bind_end_to_end():
    schema = pa.schema(
        [("temp", pa.int32()), ("City", pa.string()), ("price", pa.decimal128(10, 2))]
    )
    bound = bind(
        parse_sql("temp > 30.5 AND city IN ('Paris', 'Rome') AND NOT price = 1.005"), schema
    )
    text = str(bound)
    assert "BoundGreaterThanOrEqual" in text and "value=31" in text, (
        f"temp > 30.5 should become temp >= 31: {text}"
    )
    assert "name='City'" in text, "the schema's spelling of the column is used"
    assert "BoundNotNull" in text, "price <> 1.005 holds for every non-null decimal(10,2)"
