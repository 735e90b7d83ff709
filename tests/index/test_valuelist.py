"""Value-list index: collection and might-match, case by case."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from metaindex.expr import (
    BoundEqualTo,
    BoundGreaterThan,
    BoundIn,
    BoundLessThan,
    BoundNotEqualTo,
    BoundNotIn,
)
from metaindex.index import ValueListIndex
from tests.index.util import kept, kept_leaf, metadata, ref

NAN = float("nan")
VL = ValueListIndex("x", max_values=4)


def test_collect_distinct_sorted_canonical_values():
    got = VL.collect(pa.array([1.0, NAN, None, -0.0, 0.0, float("-nan"), 1.0])).as_py()
    assert got["has_null"] is True
    values = got["values"]
    assert values[:2] == [0.0, 1.0] and math.copysign(1, values[0]) == 1, (
        "-0.0 is stored as 0.0, once"
    )
    assert len(values) == 3 and math.isnan(values[2]), "every NaN is stored once, last"


def test_collect_over_the_limit_is_unknown():
    assert VL.collect(pa.array([1, 2, 3, 4, 4, None])).as_py() == {
        "values": [1, 2, 3, 4],
        "has_null": True,
    }
    assert not VL.collect(pa.array([1, 2, 3, 4, 5])).is_valid, "5 distinct values > 4"


def test_collect_all_null_and_strings():
    assert VL.collect(pa.array([None, None], pa.string())).as_py() == {
        "values": [],
        "has_null": True,
    }
    assert VL.collect(pa.array(["é", "z", "", "z"])).as_py() == {
        "values": ["", "z", "é"],
        "has_null": False,
    }, "sorted by UTF-8 bytes"


def test_bad_parameters():
    with pytest.raises(ValueError, match="max_values"):
        ValueListIndex("x", max_values=0)
    with pytest.raises(TypeError, match="value-list metadata"):
        VL.might_match(BoundEqualTo(ref("x", pa.int64()), 1), pa.array([1]))


INTS = [[1, 3], [5], [None], [2, None], None, [1, 2, 3, 4, 5]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x = 2", [False, False, False, True, True, True]),  # last: over the limit, unknown
        ("x IN (3, 5)", [True, True, False, False, True, True]),
        ("x > 4", [False, True, False, False, True, True]),
        ("x <= 1", [True, False, False, False, True, True]),
        ("x != 5", [True, False, False, True, True, True]),
        ("x NOT IN (1, 3)", [False, True, False, True, True, True]),
        ("x != 2", [True, True, False, True, True, True]),  # [2, NULL] kept: it has a null
        ("x IS NULL", [False, False, True, True, True, True]),
        ("x IS NOT NULL", [True, True, False, True, True, True]),
    ],
)
def test_integer_predicates(sql, expected):
    assert kept(VL, sql, INTS, pa.int64()) == expected, f"{sql} over {INTS}"


FLOATS = [[1.0, NAN], [-0.0], [NAN], [2.0, None], [None]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x = 0", [False, True, False, False, False]),
        ("x > 1.5", [True, False, True, True, False]),
        ("isnan(x)", [True, False, True, False, False]),
        ("NOT isnan(x)", [True, True, False, True, True]),
        ("x != 1", [True, True, True, True, False]),
        ("x IN (0, 2)", [False, True, False, True, False]),
    ],
)
def test_float_predicates(sql, expected):
    for t in (pa.float64(), pa.float32()):
        assert kept(VL, sql, FLOATS, t) == expected, f"{sql} over {t} files {FLOATS}"


@pytest.mark.parametrize(
    "leaf, value, expected",
    [
        (BoundEqualTo, NAN, [True, False, True, False, False]),
        (BoundLessThan, NAN, [True, True, False, True, False]),
        (BoundGreaterThan, NAN, [False] * 5),
        (BoundNotEqualTo, NAN, [True, True, False, True, False]),
        (BoundNotEqualTo, -0.0, [True, False, True, True, False]),
        (BoundIn, frozenset({NAN, -0.0}), [True, True, True, False, False]),
        (BoundNotIn, frozenset({NAN, 1.0}), [False, True, False, True, False]),
    ],
)
def test_nan_and_zero_literals(leaf, value, expected):
    got = kept_leaf(VL, leaf(ref("x", pa.float64()), value), FLOATS, pa.float64())
    assert got == expected, f"{leaf.__name__}(x, {value}) over {FLOATS}"


STRINGS = [["abc", "x"], ["zab"], ["é😀"], [""], [None]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x LIKE 'ab%'", [True, False, False, False, False]),
        ("x NOT LIKE 'ab%'", [True, True, True, True, False]),
        ("x LIKE '%ab'", [False, True, False, False, False]),
        ("contains(x, '😀')", [False, False, True, False, False]),
        ("x > 'z'", [False, True, True, False, False]),
        ("x = ''", [False, False, False, True, False]),
    ],
)
def test_string_predicates(sql, expected):
    assert kept(VL, sql, STRINGS, pa.string()) == expected, f"{sql} over {STRINGS}"


@pytest.mark.parametrize(
    "t, files, sql, expected",
    [
        (
            pa.decimal128(25, 3),
            [[Decimal("-12345678901234567890.123")], [Decimal("1.500")]],
            "x IN (1.5, 7)",
            [False, True],
        ),
        (
            pa.decimal128(25, 3),
            [[Decimal("-12345678901234567890.123")], [Decimal("1.500")]],
            "x < 0",
            [True, False],
        ),
        (
            pa.date32(),
            [[dt.date(2020, 1, 1)], [dt.date(2021, 6, 1)]],
            "x = DATE '2021-06-01'",
            [False, True],
        ),
        (
            pa.timestamp("us", "UTC"),
            [[dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)]],
            "x = TIMESTAMP '2020-01-01 00:00:00'",
            [True],
        ),
        (pa.bool_(), [[True], [False, None]], "x = false", [False, True]),
        (pa.binary(), [[b"\xff\x00"], [b"a"]], "startswith(x, X'FF')", [True, False]),
    ],
)
def test_other_types(t, files, sql, expected):
    assert kept(VL, sql, files, t) == expected, f"{sql} over {t} files {files}"


def test_chunked_metadata():
    meta = metadata(VL, INTS * 2, pa.int64())
    leaf = BoundIn(ref("x", pa.int64()), frozenset({3, 5}))
    whole = VL.might_match(leaf, meta).tolist()
    chunked = pa.chunked_array([meta.slice(0, 5), meta.slice(5)])
    assert VL.might_match(leaf, chunked).tolist() == whole
    assert VL.might_match(leaf, meta.slice(3, 6)).tolist() == whole[3:9]


@pytest.mark.hostile
def test_null_lists_with_values_behind_them():
    """A null list may still own a range of the child values; answers must stay aligned."""
    lists = pa.ListArray.from_arrays(
        pa.array([0, 2, 4, 5], pa.int32()),
        pa.array([1, 2, 3, 4, 5], pa.int64()),
        mask=pa.array([False, True, False]),
    )
    meta = pa.StructArray.from_arrays(
        [lists, pa.array([False, False, False])], names=["values", "has_null"]
    )
    leaf = BoundIn(ref("x", pa.int64()), frozenset({5}))
    assert VL.might_match(leaf, meta).tolist() == [False, True, True]
    assert VL.might_match(leaf, meta.slice(1)).tolist() == [True, True]
