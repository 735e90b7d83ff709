"""bind(): column resolution, literal conversion with Spark's rules, folding, errors."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundEqualTo,
    BoundGreaterThanOrEqual,
    BoundIn,
    BoundIsNaN,
    BoundIsNull,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundNotEqualTo,
    BoundNotIn,
    BoundNotNaN,
    BoundNotNull,
    BoundNotStartsWith,
    BoundReference,
    BoundStartsWith,
    Contains,
    EndsWith,
    EqualNullSafe,
    In,
    IsNaN,
    Not,
    NotIn,
    NotNaN,
    Or,
    StartsWith,
    bind,
    col,
)

UTC = datetime.timezone.utc
SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("u8", pa.uint8()),
        ("i64", pa.int64()),
        ("u64", pa.uint64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(5, 2)),
        ("big", pa.decimal128(38, 0)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_ms", pa.timestamp("ms", tz="Europe/Paris")),
        ("ntz", pa.timestamp("us")),
        ("ts_ns", pa.timestamp("ns", tz="UTC")),
        ("dict", pa.dictionary(pa.int32(), pa.string())),
        ("lst", pa.list_(pa.int32())),
        (
            "Point",
            pa.struct(
                [
                    ("X", pa.int32()),
                    ("a.b", pa.string()),
                    ("inner", pa.struct([("z", pa.float64())])),
                ]
            ),
        ),
        ("Dup", pa.int32()),
        ("dup", pa.int32()),
    ]
)


def ref(name: str) -> BoundReference:
    from metaindex.expr.resolve import resolve

    return resolve(SCHEMA, name, case_sensitive=True)


# --- resolution ---------------------------------------------------------------------------------


def test_columns_resolve_case_insensitively_with_the_schema_spelling():
    bound = bind(col("I8") == 1, SCHEMA)
    assert bound.ref.name == "i8" and bound.ref.field == SCHEMA.field("i8")
    nested = bind(col("point.x") == 1, SCHEMA)
    assert (
        nested.ref.name == "Point.X"
        and nested.ref.path == ("Point", "X")
        and nested.ref.type == pa.int32()
    )
    deep = bind(col("POINT.INNER.Z") > 1.0, SCHEMA)
    assert deep.ref.path == ("Point", "inner", "z")


def test_field_names_with_dots_resolve_and_are_backquoted_in_the_canonical_name():
    for name in ("Point.a.b", "Point.`a.b`", "`Point`.`a.b`"):
        bound = bind(col(name) == "x", SCHEMA)
        assert bound.ref.name == "Point.`a.b`" and bound.ref.path == ("Point", "a.b"), name


def test_ambiguous_and_unknown_columns_raise_schema_error():
    with pytest.raises(SchemaError, match="ambiguous"):
        bind(col("dup") == 1, SCHEMA)
    assert bind(col("Dup") == 1, SCHEMA, case_sensitive=True).ref.name == "Dup"
    with pytest.raises(SchemaError, match="no column 'nope'"):
        bind(col("nope") == 1, SCHEMA)
    with pytest.raises(SchemaError, match="no column"):
        bind(col("i8") == 1, SCHEMA, case_sensitive=False) and bind(
            col("I8") == 1, SCHEMA, case_sensitive=True
        )
    with pytest.raises(SchemaError, match="no column"):
        bind(col("i8.x") == 1, SCHEMA)
    with pytest.raises(ExpressionError, match="backquote"):
        bind(col("`i8") == 1, SCHEMA)


def test_bind_checks_its_arguments():
    with pytest.raises(TypeError, match="pyarrow.Schema"):
        bind(col("i8") == 1, {"i8": "int"})


# --- folding examples ---------------------------------------------------------------------------

NAN = float("nan")


@pytest.mark.parametrize(
    "pred, expected",
    [
        # int column vs decimal / double literals (Spark: 1.5 is a decimal, 1.5e0 a double)
        (col("i8") == Decimal("1.5"), AlwaysFalse()),
        (col("i8") < Decimal("1.5"), BoundLessThanOrEqual(ref("i8"), 1)),
        (col("i8") > Decimal("1.5"), BoundGreaterThanOrEqual(ref("i8"), 2)),
        (col("i8") != 1.5, BoundNotNull(ref("i8"))),
        (col("i8") == 2.0, BoundEqualTo(ref("i8"), 2)),
        (col("i8") < 1000, BoundNotNull(ref("i8"))),
        (col("i8") > 1000, AlwaysFalse()),
        (col("i8") <= -128, BoundEqualTo(ref("i8"), -128)),
        (col("i8") < -128, AlwaysFalse()),
        (col("i8") >= 127, BoundEqualTo(ref("i8"), 127)),
        (col("i8") != 127, BoundLessThanOrEqual(ref("i8"), 126)),
        (col("u8") < 0, AlwaysFalse()),
        (col("u8") >= -5, BoundNotNull(ref("u8"))),
        (col("i8") < NAN, BoundNotNull(ref("i8"))),
        (col("i8") == NAN, AlwaysFalse()),
        (col("i8") > float("-inf"), BoundNotNull(ref("i8"))),
        # int64 vs doubles beyond 2^53: Spark casts the column to double
        (
            col("i64") == 2.0**53,
            And(
                BoundGreaterThanOrEqual(ref("i64"), 2**53),
                BoundLessThanOrEqual(ref("i64"), 2**53 + 1),
            ),
        ),
        (col("i64") == 9223372036854775808.0, BoundGreaterThanOrEqual(ref("i64"), 2**63 - 512)),
        (col("i64") < 9223372036854775808.0, BoundLessThanOrEqual(ref("i64"), 2**63 - 513)),
        (col("u64") == 2**64 - 1, BoundEqualTo(ref("u64"), 2**64 - 1)),
        (
            col("u64") == Decimal("1E+40"),
            AlwaysTrue(),
        ),  # Spark's common decimal type would overflow
        # float columns
        (col("f64") == NAN, BoundIsNaN(ref("f64"))),
        (col("f64") >= NAN, BoundIsNaN(ref("f64"))),
        (col("f64") < NAN, And(BoundNotNull(ref("f64")), BoundNotNaN(ref("f64")))),
        (col("f64") != NAN, And(BoundNotNull(ref("f64")), BoundNotNaN(ref("f64")))),
        (col("f64") <= NAN, BoundNotNull(ref("f64"))),
        (col("f64") > NAN, AlwaysFalse()),
        (col("f64") == -0.0, BoundEqualTo(ref("f64"), 0.0)),
        (col("f64") < float("-inf"), AlwaysFalse()),
        (col("f64") == Decimal("1.1"), BoundEqualTo(ref("f64"), 1.1)),
        (col("f64") == 3, BoundEqualTo(ref("f64"), 3.0)),
        (col("f32") == 1.1, AlwaysFalse()),  # no float32 is exactly the double 1.1
        (col("f32") < 1.1, BoundLessThanOrEqual(ref("f32"), 1.0999999046325684)),
        (col("f32") > 1.1, BoundGreaterThanOrEqual(ref("f32"), 1.100000023841858)),
        (col("f32") == 1.100000023841858, BoundEqualTo(ref("f32"), 1.100000023841858)),
        (
            col("f32") == 16777217,
            BoundEqualTo(ref("f32"), 16777216.0),
        ),  # legacy Spark rounds to float
        (col("f32") == "NaN", BoundIsNaN(ref("f32"))),
        # decimals
        (col("dec") == Decimal("1.234"), AlwaysFalse()),
        (col("dec") < Decimal("1.234"), BoundLessThanOrEqual(ref("dec"), Decimal("1.23"))),
        (col("dec") == 1, BoundEqualTo(ref("dec"), Decimal("1.00"))),
        (
            col("dec") == 0.1,
            BoundEqualTo(ref("dec"), Decimal("0.10")),
        ),  # Spark: 0.10 = 0.1D is true
        (col("dec") > 1e10, AlwaysFalse()),
        (col("dec") <= Decimal("999.99"), BoundNotNull(ref("dec"))),
        (
            col("big") == Decimal("1.5"),
            AlwaysTrue(),
        ),  # decimal(38,0) vs decimal(2,1) needs 39 digits
        (col("big") == 10**37, BoundEqualTo(ref("big"), Decimal(10**37))),
        # strings, binary, booleans
        (col("s") == "a", BoundEqualTo(ref("s"), "a")),
        (col("s") == b"a", BoundEqualTo(ref("s"), "a")),
        (col("s") == 5, AlwaysTrue()),  # Spark casts the string column: cannot be expressed
        (col("s") < "", AlwaysFalse()),
        (col("s") >= "", BoundNotNull(ref("s"))),
        (col("bin") == "é", BoundEqualTo(ref("bin"), "é".encode())),
        (col("flag") < True, BoundEqualTo(ref("flag"), False)),
        (col("flag") != True, BoundEqualTo(ref("flag"), False)),  # noqa: E712
        (col("flag") == "yes", BoundEqualTo(ref("flag"), True)),
        (col("flag").isin(True, False), BoundNotNull(ref("flag"))),
        (NotIn("flag", [True, False]), AlwaysFalse()),
        (col("dict") == "a", BoundEqualTo(ref("dict"), "a")),
        # dates and timestamps
        (col("day") == "2026-01-01 12:00", BoundEqualTo(ref("day"), datetime.date(2026, 1, 1))),
        (col("day") == "2026", BoundEqualTo(ref("day"), datetime.date(2026, 1, 1))),
        (
            col("day") < datetime.datetime(2026, 1, 1, 12),
            BoundLessThanOrEqual(ref("day"), datetime.date(2026, 1, 1)),
        ),
        (
            col("day") < datetime.datetime(2026, 1, 1),
            BoundLessThan(ref("day"), datetime.date(2026, 1, 1)),
        ),
        (col("day") == datetime.datetime(2026, 1, 1, 12), AlwaysFalse()),
        (
            col("day")
            == datetime.datetime(2026, 1, 1, 12, tzinfo=UTC),  # session time zone unknown
            And(
                BoundGreaterThanOrEqual(ref("day"), datetime.date(2026, 1, 1)),
                BoundLessThanOrEqual(ref("day"), datetime.date(2026, 1, 2)),
            ),
        ),
        (
            col("ts")
            == datetime.datetime(
                2026, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))
            ),
            BoundEqualTo(ref("ts"), datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ),
        (
            col("ts") == "2026-01-01T00:00:00Z",
            BoundEqualTo(ref("ts"), datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ),
        (col("ts_ms") == datetime.datetime(2026, 1, 1, 0, 0, 0, 500, tzinfo=UTC), AlwaysFalse()),
        (
            col("ts_ms") > datetime.datetime(2026, 1, 1, 0, 0, 0, 500, tzinfo=UTC),
            BoundGreaterThanOrEqual(
                ref("ts_ms"), datetime.datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)
            ),
        ),
        (
            col("ntz") == datetime.datetime(2026, 1, 1),
            BoundEqualTo(ref("ntz"), datetime.datetime(2026, 1, 1)),
        ),
        (
            col("ntz") == datetime.date(2026, 1, 1),
            BoundEqualTo(ref("ntz"), datetime.datetime(2026, 1, 1)),
        ),
        (
            col("ntz")
            > datetime.datetime(2026, 1, 1, tzinfo=UTC),  # compared in the session time zone
            BoundGreaterThanOrEqual(ref("ntz"), datetime.datetime(2025, 12, 31, 6, 0, 0, 1)),
        ),
        # nanosecond columns hold values between any two microsecond literals: no neighbours
        (
            col("ts_ns") < datetime.datetime(2026, 1, 1, tzinfo=UTC),
            BoundLessThan(ref("ts_ns"), datetime.datetime(2026, 1, 1, tzinfo=UTC)),
        ),
        (
            col("ts_ns") < datetime.datetime(2026, 1, 1),
            BoundLessThanOrEqual(ref("ts_ns"), datetime.datetime(2026, 1, 1, 18, tzinfo=UTC)),
        ),
        (col("ts_ns") != datetime.datetime(2026, 1, 1), BoundNotNull(ref("ts_ns"))),
        # NULL literals, IN / NOT IN, <=>
        (col("i8") == None, AlwaysFalse()),  # noqa: E711
        (col("i8") != None, AlwaysFalse()),  # noqa: E711
        (EqualNullSafe("i8", None), BoundIsNull(ref("i8"))),
        (EqualNullSafe("i8", 3), BoundEqualTo(ref("i8"), 3)),
        (Not(EqualNullSafe("i8", 3)), Or(BoundIsNull(ref("i8")), BoundNotEqualTo(ref("i8"), 3))),
        (In("i8", [1, Decimal("2.5"), None, 1000, 3]), BoundIn(ref("i8"), frozenset({1, 3}))),
        (In("i8", [None]), AlwaysFalse()),
        (In("i8", []), AlwaysFalse()),
        (In("i8", [7]), BoundEqualTo(ref("i8"), 7)),
        (In("f64", [1.0, NAN]), Or(BoundEqualTo(ref("f64"), 1.0), BoundIsNaN(ref("f64")))),
        (NotIn("i8", [1, None]), AlwaysFalse()),
        (NotIn("i8", []), AlwaysTrue()),
        (NotIn("i8", [1, 2]), BoundNotIn(ref("i8"), frozenset({1, 2}))),
        (NotIn("i8", [1, Decimal("2.5")]), BoundNotEqualTo(ref("i8"), 1)),
        (
            NotIn("f64", [1.0, NAN]),
            And(
                BoundNotEqualTo(ref("f64"), 1.0),
                And(BoundNotNull(ref("f64")), BoundNotNaN(ref("f64"))),
            ),
        ),
        (Not(In("i8", [1, None])), AlwaysFalse()),
        # NaN tests, patterns
        (IsNaN("f64"), BoundIsNaN(ref("f64"))),
        (NotNaN("f32"), BoundNotNaN(ref("f32"))),
        (IsNaN("i8"), AlwaysFalse()),
        (NotNaN("dec"), AlwaysTrue()),
        (IsNaN("s"), AlwaysTrue()),
        (StartsWith("s", "ab"), BoundStartsWith(ref("s"), "ab")),
        (Not(StartsWith("s", "ab")), BoundNotStartsWith(ref("s"), "ab")),
        (StartsWith("s", ""), BoundNotNull(ref("s"))),
        (Not(StartsWith("s", "")), AlwaysFalse()),
        (StartsWith("bin", "ab"), BoundStartsWith(ref("bin"), b"ab")),
        (StartsWith("i8", "1"), AlwaysTrue()),
        (Not(EndsWith("s", "x")), AlwaysTrue()),
        (Not(Contains("s", "x")), AlwaysTrue()),
        (StartsWith("s", None), AlwaysFalse()),
        # Not is pushed down before folding, so folded leaves never sit under a Not
        (Not(col("i8") == Decimal("1.5")), BoundNotNull(ref("i8"))),
        (Not(col("i8") < 1000), AlwaysFalse()),
        (Not(col("s") == 5), AlwaysTrue()),
        (
            Not(And(col("i8") > 1, col("s") == 5)),
            Or(BoundLessThanOrEqual(ref("i8"), 1), AlwaysTrue()),
        ),
    ],
    ids=lambda v: str(v)[:60] if not isinstance(v, (AlwaysTrue, AlwaysFalse)) else type(v).__name__,
)
def test_bind_folds_like_spark(pred, expected):
    bound = bind(pred, SCHEMA)
    assert bound == expected, f"{pred} bound to {bound}, expected {expected}"


def test_bound_values_have_the_column_python_types():
    assert type(bind(col("dec") == 1, SCHEMA).value) is Decimal
    assert bind(col("dec") == 1, SCHEMA).value.as_tuple().exponent == -2, (
        "decimal values carry the column's scale"
    )
    assert type(bind(col("f64") == 3, SCHEMA).value) is float
    assert math.copysign(1.0, bind(col("f64") < -0.0, SCHEMA).value) == 1.0, "-0.0 is stored as 0.0"
    ts = bind(
        col("ts_ms")
        == datetime.datetime(2026, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
        SCHEMA,
    ).value
    assert ts.tzinfo is UTC and ts == datetime.datetime(2026, 1, 1, tzinfo=UTC), (
        "aware timestamps are given in UTC"
    )
    assert bind(col("ntz") == datetime.datetime(2026, 1, 1), SCHEMA).value.tzinfo is None


@pytest.mark.parametrize(
    "pred, error, message",
    [
        (
            col("i8") == datetime.date(2026, 1, 1),
            SchemaError,
            "cannot compare int column 'i8' with date",
        ),
        (col("i8") == True, SchemaError, "accepted: int, float, Decimal"),  # noqa: E712
        (col("flag") == 1, SchemaError, "cannot compare bool column 'flag'"),
        (col("day") == 5, SchemaError, "accepted: datetime.date"),
        (col("bin") == 5, SchemaError, "bytes or str"),
        (col("ts") == 1.5, SchemaError, "timestamp column 'ts'"),
        (col("lst") == 1, SchemaError, "only IS \\[NOT\\] NULL"),
        (col("Point") == 1, SchemaError, "cannot be compared"),
        (IsNaN("day"), SchemaError, "isnan needs a numeric column"),
        (col("i8") == "abc", ExpressionError, "as a number"),
        (col("day") == "01/02/2026", ExpressionError, "as a date"),
        (col("ts") == "yesterday", ExpressionError, "as a timestamp"),
        (col("flag") == "maybe", ExpressionError, "as a boolean"),
    ],
)
def test_incomparable_literals_raise_clear_errors(pred, error, message):
    with pytest.raises(error, match=message):
        bind(pred, SCHEMA)


def test_is_null_binds_on_any_column_type():
    assert bind(col("lst").is_null(), SCHEMA) == BoundIsNull(ref("lst"))
    assert bind(col("point").is_not_null(), SCHEMA) == BoundNotNull(ref("Point"))


def test_bound_leaves_inside_an_unbound_tree_are_kept():
    leaf = BoundEqualTo(ref("i8"), 1)
    assert bind(And(leaf, col("s") == "a"), SCHEMA) == And(leaf, BoundEqualTo(ref("s"), "a"))
