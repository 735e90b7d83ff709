"""Column-name splitting (backquotes) and Spark's date / timestamp / number string forms."""

from __future__ import annotations

import datetime
import math
from fractions import Fraction

import pytest

from metaindex.errors import ExpressionError
from metaindex.expr.literals import read_number, round_to_float32
from metaindex.expr.resolve import quote_part, split_name
from metaindex.expr.temporal import parse_date, parse_timestamp

UTC = datetime.timezone.utc


@pytest.mark.parametrize(
    "name, parts",
    [
        ("a", [("a", False)]),
        ("a.b.c", [("a", False), ("b", False), ("c", False)]),
        ("`a.b`.c", [("a.b", True), ("c", False)]),
        ("a.`b``c`", [("a", False), ("b`c", True)]),
        ("`my col`", [("my col", True)]),
    ],
)
def test_split_name(name, parts):
    assert split_name(name) == parts


@pytest.mark.parametrize("name", ["a..b", "a.", "`a", "`a`b", "a`b", ".a"])
def test_malformed_names_raise(name):
    with pytest.raises(ExpressionError):
        split_name(name)


def test_quote_part_round_trips_through_split_name():
    for part in ["plain", "a.b", "a`b", "x.`y"]:
        assert split_name(quote_part(part)) == [(part, part != quote_part(part))]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-01-02", datetime.date(2026, 1, 2)),
        (" 2026-1-2 ", datetime.date(2026, 1, 2)),
        ("2026", datetime.date(2026, 1, 1)),
        ("2026-03", datetime.date(2026, 3, 1)),
        ("2026-01-02 12:34", datetime.date(2026, 1, 2)),
        ("2026-01-02T12:34:56Z", datetime.date(2026, 1, 2)),
        ("+2026-01-02", datetime.date(2026, 1, 2)),
    ],
)
def test_parse_date_like_spark(text, expected):
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    "text", ["2026-13-01", "2026-02-30", "02/01/2026", "yesterday", "", "20260102"]
)
def test_parse_date_rejects(text):
    with pytest.raises(ExpressionError, match="as a date"):
        parse_date(text, "d")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-01-02 03:04:05", datetime.datetime(2026, 1, 2, 3, 4, 5)),
        ("2026-01-02T03:04:05.5", datetime.datetime(2026, 1, 2, 3, 4, 5, 500000)),
        ("2026-01-02 03:04:05.123456789", datetime.datetime(2026, 1, 2, 3, 4, 5, 123456)),
        ("2026-01-02", datetime.datetime(2026, 1, 2)),
        ("2026-01-02 03:04", datetime.datetime(2026, 1, 2, 3, 4)),
        ("2026-01-02 03:04:05Z", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02 03:04:05 UTC", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02 03:04:05-08:00", datetime.datetime(2026, 1, 2, 11, 4, 5, tzinfo=UTC)),
        ("2026-01-02 03:04:05+0530", datetime.datetime(2026, 1, 1, 21, 34, 5, tzinfo=UTC)),
        ("2026-01-02 03:04:05 Europe/Paris", datetime.datetime(2026, 1, 2, 2, 4, 5, tzinfo=UTC)),
    ],
)
def test_parse_timestamp_like_spark(text, expected):
    got = parse_timestamp(text)
    assert got == expected and (got.tzinfo is None) == (expected.tzinfo is None), (
        f"{text!r} -> {got!r}"
    )


@pytest.mark.parametrize(
    "text",
    ["2026-01-02 25:00", "2026-01-02 03:04:05 Nowhere/Land", "noon", "2026-01-02 03:04:05 +25:00"],
)
def test_parse_timestamp_rejects(text):
    with pytest.raises(ExpressionError, match="as a timestamp"):
        parse_timestamp(text, "t")


def test_read_number():
    assert read_number(" 1.50 ", "c") == Fraction(3, 2)
    assert read_number("-1e3", "c") == -1000
    assert math.isnan(read_number("NaN", "c"))
    assert read_number("-Infinity", "c") == -math.inf and read_number("+inf", "c") == math.inf
    with pytest.raises(ExpressionError, match="as a number"):
        read_number("1_000", "c")


def test_round_to_float32_is_exact_with_ties_to_even():
    assert round_to_float32(Fraction(16777217)) == 16777216.0, (
        "tie between 2^24 and 2^24+2 goes to even"
    )
    assert round_to_float32(Fraction(16777219)) == 16777220.0
    assert round_to_float32(Fraction(11, 10)) == 1.100000023841858
    assert round_to_float32(Fraction(10**50)) == math.inf
    assert round_to_float32(Fraction(2**53 + 1)) == 2.0**53, "no double rounding through float64"
