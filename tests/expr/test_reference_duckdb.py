"""The reference evaluator agrees with DuckDB, row by row and including unknown (NULL), on
random bound predicates: DuckDB orders NaN above everything and equal to itself, -0.0 = 0.0 and
compares strings by bytes, like Spark. Its isnan(NULL) is NULL where Spark's is false, so IsNaN
is sent as coalesce(isnan(x), false)."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundContains,
    BoundEndsWith,
    BoundEqualNullSafe,
    BoundEqualTo,
    BoundGreaterThan,
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
    BoundStartsWith,
    Not,
    Or,
)
from tests.expr.reference import evaluate
from tests.expr.strategies import SCHEMA, bound_expressions, rows

duckdb = pytest.importorskip("duckdb")

_OPS = {
    BoundEqualTo: "=",
    BoundNotEqualTo: "<>",
    BoundLessThan: "<",
    BoundLessThanOrEqual: "<=",
    BoundGreaterThan: ">",
    BoundGreaterThanOrEqual: ">=",
    BoundEqualNullSafe: "IS NOT DISTINCT FROM",
}


def literal(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"CAST('{value}' AS HUGEINT)"
    if isinstance(value, float):
        if math.isnan(value):
            return "'NaN'::DOUBLE"
        if math.isinf(value):
            return "'Infinity'::DOUBLE" if value > 0 else "'-Infinity'::DOUBLE"
        return f"{value!r}::DOUBLE"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS DECIMAL(20, 2))"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime.datetime):
        return f"'{value.isoformat()}'::TIMESTAMPTZ"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    raise TypeError(value)


def to_sql(expr) -> str:
    if isinstance(expr, AlwaysTrue):
        return "TRUE"
    if isinstance(expr, AlwaysFalse):
        return "FALSE"
    if isinstance(expr, And):
        return f"({to_sql(expr.left)} AND {to_sql(expr.right)})"
    if isinstance(expr, Or):
        return f"({to_sql(expr.left)} OR {to_sql(expr.right)})"
    if isinstance(expr, Not):
        return f"(NOT {to_sql(expr.child)})"
    c = f'"{expr.ref.name}"'
    if type(expr) in _OPS:
        return f"({c} {_OPS[type(expr)]} {literal(expr.value)})"
    if isinstance(expr, (BoundIn, BoundNotIn)):
        values = ", ".join(literal(v) for v in sorted(expr.values, key=repr))
        return f"({c} {'IN' if isinstance(expr, BoundIn) else 'NOT IN'} ({values}))"
    if isinstance(expr, BoundIsNull):
        return f"({c} IS NULL)"
    if isinstance(expr, BoundNotNull):
        return f"({c} IS NOT NULL)"
    if isinstance(expr, BoundIsNaN):
        return f"coalesce(isnan({c}), FALSE)"
    if isinstance(expr, BoundNotNaN):
        return f"(NOT coalesce(isnan({c}), FALSE))"
    if isinstance(expr, BoundStartsWith):
        return f"starts_with({c}, {literal(expr.value)})"
    if isinstance(expr, BoundNotStartsWith):
        return f"(NOT starts_with({c}, {literal(expr.value)}))"
    if isinstance(expr, BoundEndsWith):
        return f"suffix({c}, {literal(expr.value)})"
    if isinstance(expr, BoundContains):
        return f"contains({c}, {literal(expr.value)})"
    raise TypeError(expr)


@settings(max_examples=40, deadline=None)
@given(
    exprs=st.lists(bound_expressions(), min_size=1, max_size=12),
    table_rows=st.lists(rows(), min_size=1, max_size=12),
)
def test_reference_evaluator_matches_duckdb(exprs, table_rows):
    table = pa.Table.from_pylist(table_rows, schema=SCHEMA)
    con = duckdb.connect()
    con.register("t", table)
    columns = ", ".join(f"{to_sql(e)} AS p{k}" for k, e in enumerate(exprs))
    got = con.execute(f"SELECT {columns} FROM t").fetchall()
    for r, (row, answers) in enumerate(zip(table_rows, got, strict=True)):
        for e, answer in zip(exprs, answers, strict=True):
            assert evaluate(e, row) == answer, (
                f"row {r} {row}: reference says {evaluate(e, row)}, DuckDB {answer} for {to_sql(e)}"
            )


def test_nan_and_signed_zero_semantics_are_the_ones_assumed():
    con = duckdb.connect()
    got = con.execute(
        "SELECT 'NaN'::DOUBLE = 'NaN'::DOUBLE, 'NaN'::DOUBLE > 'Infinity'::DOUBLE, "
        "(-0.0)::DOUBLE = 0.0::DOUBLE, 'é' > 'z'"
    ).fetchone()
    assert got == (True, True, True, True), (
        "DuckDB's float and string order must match Spark's for this cross-check"
    )


def test_duckdb_reads_drifted_files_as_the_drift_differential_assumes(tmp_path):
    """tests/index/test_drift_differential.py takes DuckDB's reading of each file, cast to the
    table's type, as the truth: INT96 rounded down to microseconds (as Spark reads it), widening
    casts exact, a value the type cannot hold NULL under TRY_CAST, strings as their UTF-8
    bytes with encode()."""
    import pyarrow.parquet as pq

    ns = 1577836800_000_000_500  # 2020-01-01 00:00:00.0000005
    pq.write_table(
        pa.table({"x": pa.array([ns, -500], pa.timestamp("ns"))}),
        tmp_path / "int96.parquet",
        use_deprecated_int96_timestamps=True,
    )
    con = duckdb.connect()
    got = con.execute(
        f"SELECT epoch_us(x) FROM read_parquet('{tmp_path / 'int96.parquet'}')"
    ).fetchall()
    assert got == [(1577836800_000_000,), (-1,)], "INT96 nanoseconds rounded down"
    got = con.execute(
        "SELECT CAST(CAST(1.1 AS FLOAT) AS DOUBLE), CAST(2147483647 AS BIGINT), "
        "TRY_CAST(300 AS TINYINT), TRY_CAST(CAST(1.25 AS DECIMAL(5, 2)) AS "
        "DECIMAL(5, 1)), encode('é')"
    ).fetchone()
    assert got[0] == float(np.float32(1.1)) and got[1] == 2147483647
    assert got[2] is None, "TRY_CAST: out of range is NULL (the file is then a match)"
    assert got[3] is not None, (
        "DuckDB rounds a lost decimal digit: the oracle never casts "
        "a decimal to a smaller scale (the table's type keeps every digit, or is a double)"
    )
    assert got[4] == "é".encode()
