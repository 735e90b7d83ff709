"""Min/max index: collection (scan and footer statistics) and might-match, case by case."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from metaindex.expr import (
    BoundEqualTo,
    BoundGreaterThan,
    BoundIn,
    BoundLessThan,
    BoundNotEqualTo,
    BoundNotIn,
    BoundStartsWith,
)
from metaindex.index import IN_LIMIT, MinMaxIndex
from metaindex.parquet import ParquetFile, write_table
from metaindex.parquet.statistics import ChunkStatistics
from tests.index.util import kept, kept_leaf, metadata, ref

NAN = float("nan")
UTC = dt.timezone.utc
MM = MinMaxIndex("x")


# ------------------------------------------------------------------------------ collect


def test_collect_excludes_and_counts_nan():
    got = MM.collect(pa.array([1.0, NAN, None, -0.0, NAN, -7.5])).as_py()
    assert got == {"min": -7.5, "max": 1.0, "null_count": 1, "nan_count": 2}


def test_collect_all_nan_all_null_and_empty_have_no_bounds():
    assert MM.collect(pa.array([NAN, None], pa.float32())).as_py() == {
        "min": None,
        "max": None,
        "null_count": 1,
        "nan_count": 1,
    }
    assert MM.collect(pa.array([None, None], pa.int32())).as_py() == {
        "min": None,
        "max": None,
        "null_count": 2,
        "nan_count": 0,
    }
    assert MM.collect(pa.array([], pa.string())).as_py() == {
        "min": None,
        "max": None,
        "null_count": 0,
        "nan_count": 0,
    }


@pytest.mark.parametrize(
    "values, t, lo, hi",
    [
        (["b", "é", "a", "😀", ""], pa.string(), "", "😀"),  # UTF-8 byte order
        ([b"\xff", b"\x00", b"a"], pa.binary(), b"\x00", b"\xff"),
        (
            [Decimal("-12345678901234567890.123"), Decimal("1.500")],
            pa.decimal128(25, 3),
            Decimal("-12345678901234567890.123"),
            Decimal("1.500"),
        ),
        ([Decimal("1E+30"), Decimal("-2")], pa.decimal256(40, 0), Decimal("-2"), Decimal("1E+30")),
        ([True, False], pa.bool_(), False, True),
        ([2**64 - 1, 0], pa.uint64(), 0, 2**64 - 1),
        (
            [dt.date(2020, 1, 2), dt.date(1969, 1, 1)],
            pa.date32(),
            dt.date(1969, 1, 1),
            dt.date(2020, 1, 2),
        ),
        (
            [dt.datetime(2021, 1, 1, tzinfo=UTC)],
            pa.timestamp("us", "UTC"),
            dt.datetime(2021, 1, 1, tzinfo=UTC),
            dt.datetime(2021, 1, 1, tzinfo=UTC),
        ),
    ],
)
def test_collect_keeps_the_column_type(values, t, lo, hi):
    got = MM.collect(pa.array(values, t))
    assert got.type == MM.metadata_type(t), "metadata must have the index's stored type"
    assert (got["min"].as_py(), got["max"].as_py()) == (lo, hi)


def test_collect_dictionary_and_chunked_columns():
    column = pa.chunked_array(
        [pa.array(["b", "a"]).dictionary_encode(), pa.array(["c", None]).dictionary_encode()]
    )
    assert MM.collect(column).as_py() == {"min": "a", "max": "c", "null_count": 1, "nan_count": 0}


def test_unsupported_types_are_rejected():
    with pytest.raises(TypeError, match="cannot index"):
        MM.metadata_type(pa.list_(pa.int32()))
    with pytest.raises(TypeError, match="min/max metadata"):
        MM.might_match(BoundEqualTo(ref("x", pa.int32()), 1), pa.array([1, 2]))


# ------------------------------------------------------------------------------ integers

INTS = [[1, 2, 3], [4, 6], [None, None], [], None, [5, None]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x = 5", [False, True, False, False, True, True]),
        ("x < 4", [True, False, False, False, True, False]),
        ("x >= 6", [False, True, False, False, True, False]),
        ("x <=> 3", [True, False, False, False, True, False]),
        ("x IS NULL", [False, False, True, False, True, True]),
        ("x IS NOT NULL", [True, True, False, False, True, True]),
        ("x IN (0, 10)", [False, False, False, False, True, False]),
        ("x IN (2, 10)", [True, False, False, False, True, False]),
    ],
)
def test_integer_comparisons(sql, expected):
    assert kept(MM, sql, INTS, pa.int64()) == expected, (
        f"{sql}: files {INTS} (None = unknown entry, always kept)"
    )


@pytest.mark.parametrize("sql", ["x != 5", "x NOT IN (5, 6)"])
def test_not_equal_skips_only_single_valued_files_without_nulls(sql):
    files = [[5, 5], [5, None], [4, 6], [None], [6]]
    expected = [False, True, True, False, sql.startswith("x !=")]
    assert kept(MM, sql, files, pa.int32()) == expected, (
        "skip only when min == max is excluded and there is no null"
    )


@pytest.mark.parametrize(
    "sql", ["x <> 0.1 AND x <> 1.1 AND x <> 2.2", "NOT (x = 1.1)", "NOT (x = 1.1) AND x < 3"]
)
def test_not_equal_keeps_files_whose_range_spans_the_value(sql):
    """xskipper's min/max filter turns ``NOT (c = v)`` into ``min > v OR max < v`` and its own
    test (APITests.json, "minmax index with inequality condition", these three files) expects
    the first file skipped. Bounds [0.1, 2.2] cannot tell that file from the fourth, which
    holds 1.5 and so matches: both are kept."""
    files = [[0.1, 1.1, 2.2], [10.1, 11.1, 22.2], [20.1, 21.1, 32.2], [0.1, 1.5, 2.2]]
    expected = [True, True, True, True]
    if sql.endswith("x < 3"):
        expected = [True, False, False, True]
    assert kept(MM, sql, files, pa.float64()) == expected


def test_in_lists_binary_search_and_limit():
    files = [[110, 111], [120, 130], [50, 99], [1, 2]]
    many = ", ".join(str(v) for v in range(100, 120))
    assert kept(MM, f"x IN ({many})", files, pa.int64()) == [True, False, False, False]
    assert kept(MM, f"x IN ({many}, 99)", files, pa.int64()) == [True, False, True, False]
    huge = ", ".join(str(v) for v in range(1000, 1001 + IN_LIMIT))
    assert kept(MM, f"x IN ({huge})", files, pa.int64()) == [True] * 4, (
        f"IN lists longer than {IN_LIMIT} are not checked"
    )


def test_unsigned_beyond_int64():
    files = [[2**63 + 5], [1]]
    assert kept(MM, "x > 9223372036854775807", files, pa.uint64()) == [True, False]


# ------------------------------------------------------------------------------ floats

FLOATS = [[1.0, NAN], [1.0, 2.0], [NAN, NAN], [None], [-0.0], [0.0, None]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x > 5", [True, False, True, False, False, False]),  # NaN is above every number
        ("x = 1", [True, True, False, False, False, False]),
        ("isnan(x)", [True, False, True, False, False, False]),
        ("NOT isnan(x)", [True, True, False, True, True, True]),  # isnan(NULL) is false
        ("x = 0", [False, False, False, False, True, True]),  # -0.0 = 0.0
        ("x != 0", [True, True, True, False, False, True]),  # NaN != 0 holds
        ("x < 0", [False] * 6),
        ("x <= CAST('-0.0' AS DOUBLE)", [False, False, False, False, True, True]),
        ("x >= CAST('Infinity' AS DOUBLE)", [True, False, True, False, False, False]),
    ],
)
def test_float_nan_and_zero_rules(sql, expected):
    for t in (pa.float64(), pa.float32()):
        assert kept(MM, sql, FLOATS, t) == expected, f"{sql} over {t}: files {FLOATS}"


@pytest.mark.parametrize(
    "leaf, expected",
    [
        (BoundLessThan, [True, True, False, False, True, True]),  # x < NaN: any non-NaN value
        (BoundEqualTo, [True, False, True, False, False, False]),
        (BoundGreaterThan, [False] * 6),
        (BoundNotEqualTo, [True, True, False, False, True, True]),
    ],
)
def test_nan_literals(leaf, expected):
    got = kept_leaf(MM, leaf(ref("x", pa.float64()), NAN), FLOATS, pa.float64())
    assert got == expected, f"{leaf.__name__}(x, NaN) with NaN equal to itself and largest"


def test_nan_in_value_sets():
    x = ref("x", pa.float64())
    assert kept_leaf(MM, BoundIn(x, frozenset({NAN, 2.0})), FLOATS, pa.float64()) == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert kept_leaf(MM, BoundNotIn(x, frozenset({NAN})), FLOATS, pa.float64()) == [
        True,
        True,
        False,
        False,
        True,
        True,
    ]


def test_float32_bounds_compare_exactly_in_double():
    files = [[float(np.float32(0.1))]]
    x = ref("x", pa.float32())
    assert kept_leaf(MM, BoundEqualTo(x, 0.1), files, pa.float32()) == [False], (
        "float32(0.1) widened to double is not 0.1"
    )
    assert kept_leaf(MM, BoundEqualTo(x, float(np.float32(0.1))), files, pa.float32()) == [True]


def test_unknown_nan_count_keeps_files_for_nan_predicates():
    t = MM.metadata_type(pa.float64())
    meta = pa.array([{"min": 1.0, "max": 2.0, "null_count": 0, "nan_count": None}], t)
    leaf = BoundGreaterThan(ref("x", pa.float64()), 5.0)
    assert MM.might_match(leaf, meta).tolist() == [True], "an unknown nan_count may hide NaNs"


# ------------------------------------------------------------------------------ strings

STRINGS = [["é"], ["z"], ["\uffff"], ["😀"], ["ab", "abz"], ["ac", "b"], ["a", "ab"], [""], [None]]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x > 'z'", [True, False, True, True, False, False, False, False, False]),
        ("x < '😀'", [True, True, True, False, True, True, True, True, False]),
        ("x LIKE 'ab%'", [False, False, False, False, True, False, True, False, False]),
        ("x NOT LIKE 'ab%'", [True, True, True, True, False, True, True, True, False]),
        ("x LIKE '%z'", [True] * 8 + [False]),
        ("contains(x, 'q')", [True] * 8 + [False]),
    ],
)
def test_strings_in_utf8_byte_order(sql, expected):
    assert kept(MM, sql, STRINGS, pa.string()) == expected, f"{sql} over {STRINGS}"


def test_prefix_upper_bound_with_multibyte_and_ff_bytes():
    assert kept(MM, "x LIKE 'ÿ%'", [["ÿa"], ["Ā"], ["ÿ"]], pa.string()) == [True, False, True]
    x = ref("x", pa.binary())
    files = [[b"\xfe"], [b"\xff"], [b"\xff\xff\x01"], [b"\xfe", b"\xff\x00"]]
    assert kept_leaf(MM, BoundStartsWith(x, b"\xff"), files, pa.binary()) == [
        False,
        True,
        True,
        True,
    ], "an all-0xFF prefix has no upper bound"
    files = [[b"a\xff\xff"], [b"b"], [b"a\xfe"]]
    assert kept_leaf(MM, BoundStartsWith(x, b"a\xff"), files, pa.binary()) == [
        True,
        False,
        False,
    ], "prefix a\\xff: values in [a\\xff, b)"


# ------------------------------------------------------------------------------ other types


@pytest.mark.parametrize(
    "t, files, sql, expected",
    [
        (
            pa.decimal128(25, 3),
            [
                [Decimal("-12345678901234567890.123")],
                [Decimal("1.5"), Decimal("2.25")],
                [Decimal("9999999999999999999999.999")],
            ],
            "x < -1",
            [True, False, False],
        ),
        (
            pa.decimal128(25, 3),
            [[Decimal("-1.5")], [Decimal("1.5"), Decimal("2.25")]],
            "x = 2.250",
            [False, True],
        ),
        (
            pa.decimal256(40, 5),
            [[Decimal("-123456789012345678901234567890.12345")], [Decimal("0.00001")]],
            "x < 0",
            [True, False],
        ),
        (
            pa.date32(),
            [[dt.date(2020, 1, 1)], [dt.date(2021, 6, 1), dt.date(2021, 7, 1)]],
            "x >= DATE '2021-01-01'",
            [False, True],
        ),
        (
            pa.timestamp("us", "UTC"),
            [
                [dt.datetime(2020, 1, 1, tzinfo=UTC)],
                [dt.datetime(2021, 1, 1, 0, 0, 0, 1, tzinfo=UTC)],
            ],
            "x > TIMESTAMP '2021-01-01 00:00:00'",
            [False, True],
        ),
        (
            pa.timestamp("us"),
            [[dt.datetime(2020, 1, 1)], [dt.datetime(2021, 1, 1, 0, 0, 0, 1)]],
            "x > TIMESTAMP_NTZ '2021-01-01 00:00:00'",
            [False, True],
        ),
        (pa.bool_(), [[False], [True, False], [None]], "x = true", [False, True, False]),
        (pa.bool_(), [[False], [True, False], [None]], "x = false", [True, True, False]),
    ],
)
def test_other_types(t, files, sql, expected):
    assert kept(MM, sql, files, t) == expected, f"{sql} over {t} files {files}"


# ------------------------------------------------------------------------------ metadata shapes


def test_unknown_and_inconsistent_entries_are_kept():
    t = MM.metadata_type(pa.int64())
    meta = pa.array(
        [
            None,
            {"min": 1, "max": None, "null_count": 0, "nan_count": 0},
            {"min": 1, "max": 2, "null_count": None, "nan_count": 0},
        ],
        t,
    )
    assert MM.might_match(BoundEqualTo(ref("x", pa.int64()), 9), meta).tolist() == [
        True,
        True,
        False,
    ], "null entries and half-null bounds say nothing"


def test_chunked_and_sliced_metadata_give_the_same_answers():
    meta = metadata(MM, INTS * 3, pa.int64())
    leaf = BoundLessThan(ref("x", pa.int64()), 4)
    whole = MM.might_match(leaf, meta)
    chunked = pa.chunked_array([meta.slice(0, 5), meta.slice(5, 7), meta.slice(12)])
    assert MM.might_match(leaf, chunked).tolist() == whole.tolist()
    assert MM.might_match(leaf, meta.slice(4, 9)).tolist() == whole[4:13].tolist()


# ------------------------------------------------------------------------------ statistics


def _stats(lo, hi, nulls=0, nans=None, **kw):
    return ChunkStatistics(min=lo, max=hi, null_count=nulls, nan_count=nans, trusted=True, **kw)


def test_collect_from_statistics_combines_row_groups():
    got = MM.collect_from_statistics([_stats(3, 9, 1), _stats(-2, 4, 0)], 20, pa.int32())
    assert got.as_py() == {"min": -2, "max": 9, "null_count": 1, "nan_count": 0}
    got = MM.collect_from_statistics([_stats(-0.0, 2.5, 0, 1)], 5, pa.float64())
    assert got.as_py() == {"min": -0.0, "max": 2.5, "null_count": 0, "nan_count": 1}
    got = MM.collect_from_statistics([_stats(1.0, 2.0, 0, None)], 5, pa.float32())
    assert got.as_py()["nan_count"] is None, "missing nan_count stays unknown"
    got = MM.collect_from_statistics([_stats(18262, 18263)], 2, pa.date32())
    assert got.as_py()["max"] == dt.date(2020, 1, 2), "date bounds are days since the epoch"


@pytest.mark.parametrize(
    "stats, rows, why",
    [
        ([_stats(1, 2), None], 10, "a row group without statistics"),
        ([ChunkStatistics(min=1, max=2, null_count=0, trusted=False)], 10, "untrusted bounds"),
        ([_stats(1, 2, is_max_exact=False)], 10, "a truncated bound"),
        ([_stats(1, 2, nulls=None)], 10, "an unknown null count"),
        ([_stats(1, 2), ChunkStatistics(null_count=3)], 10, "a row group without bounds"),
    ],
)
def test_collect_from_statistics_refuses_doubtful_statistics(stats, rows, why):
    assert MM.collect_from_statistics(stats, rows, pa.int64()) is None, why


def test_collect_from_statistics_accepts_proven_all_null_files():
    got = MM.collect_from_statistics(
        [ChunkStatistics(null_count=3), ChunkStatistics(null_count=4)], 7, pa.string()
    )
    assert got.as_py() == {"min": None, "max": None, "null_count": 7, "nan_count": 0}


def test_collect_from_statistics_of_a_real_file_matches_a_scan():
    table = pa.table(
        {
            "x": pa.array([5, None, -3, 12, 7, None, 0], pa.int64()),
            "s": pa.array(["b", "é", None, "a", "😀", "", "zz"]),
            "f": pa.array([1.5, NAN, None, -2.0, 3.0, 0.0, 4.0]),
        }
    )
    buf = io.BytesIO()
    write_table(table, buf, row_group_size=3)
    pf = ParquetFile(buf.getvalue())
    for name in table.column_names:
        ix = MinMaxIndex(name)
        stats = [pf.statistics(rg, name) for rg in range(pf.num_row_groups)]
        got = ix.collect_from_statistics(stats, table.num_rows, table.schema.field(name).type)
        assert got is not None, f"{name}: our writer's statistics should be usable"
        assert got == ix.collect(table.column(name)), f"{name}: statistics and scan disagree"
