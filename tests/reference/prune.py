"""Reference for pruning: which files hold a row that satisfies a bound predicate.

Two independent oracles over the same random "files" (small Arrow tables):

* :class:`SparkOracle` evaluates the predicate row by row in plain Python with Spark SQL's
  three-valued logic (NaN above every number and equal to itself, -0.0 = 0.0, strings by
  code point = UTF-8 byte order, NULL comparisons unknown, ``isnan(NULL)`` false);
* :class:`DuckDBOracle` renders it as DuckDB SQL (:func:`to_duckdb`) and asks DuckDB, which
  orders NaN above +inf, treats NaN = NaN and -0.0 = 0.0, and compares VARCHAR by bytes
  (checked by tests/index/test_differential.py). Float32 columns are widened to DOUBLE, as
  Spark widens a float column compared with a double literal. ``isnan`` is wrapped in
  ``coalesce(.., false)`` because DuckDB's ``isnan(NULL)`` is NULL, Spark's false.

:func:`random_files` and :func:`random_predicate` make the data and the bound predicates
(classes of ``metaindex.expr``) for the differential test; :func:`to_spark_sql` writes a
predicate as Spark SQL text so the test can also go through ``parse_sql`` and ``bind``.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

UTC = dt.timezone.utc
DEC = pa.decimal128(25, 3)

SCHEMA = pa.schema(
    [
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("dec", DEC),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tsn", pa.timestamp("us")),
        ("flag", pa.bool_()),
        ("st", pa.struct([("x", pa.int32())])),
    ]
)
COLUMNS = ["i32", "i64", "f32", "f64", "s", "bin", "dec", "d", "ts", "tsn", "flag", "st.x"]
"""Leaf columns (dotted paths) of :data:`SCHEMA`."""

NAN, INF = float("nan"), float("inf")

_T0 = dt.datetime(2021, 3, 4, 5, 6, 7, 123456)
POOLS = {
    "i32": sorted({-(2**31), -1000, -7, -1, 0, 1, 2, 3, 5, 8, 13, 21, 100, 999, 2**31 - 1}),
    "i64": sorted({-(2**63), -(2**62), -(10**12), -5, 0, 1, 4, 9, 10**12, 2**62, 2**63 - 1}),
    "f32": [-INF, -3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 1.5, 2.75, 1e30, INF, NAN],
    "f64": [-INF, -1e300, -2.5, -1.0, -0.0, 0.0, 5e-324, 0.1, 1.0, 3.14159, 1e300, INF, NAN],
    "s": sorted(
        {
            "",
            "a",
            "a\x00",
            "ab",
            "abc",
            "abd",
            "b",
            "Z",
            "zz",
            "é",
            "éa",
            "éé",
            "\u00ff",
            "\u0100",
            "\uffff",
            "😀",
            "😀x",
            "😁",
            "日本",
            "日本語",
        },
        key=lambda x: x.encode("utf-8"),
    ),
    "bin": sorted(
        {
            b"",
            b"\x00",
            b"\x00\x01",
            b"a",
            b"ab",
            b"\x7f",
            b"\x80",
            b"\xfe",
            b"\xff",
            b"\xff\x00",
            b"\xff\xff",
        }
    ),
    "dec": [
        Decimal(x)
        for x in (
            "-9999999999999999999999.999",
            "-12345678901234567890.123",
            "-1.500",
            "-0.001",
            "0.000",
            "0.001",
            "1.500",
            "2.250",
            "98765432109876543210.987",
            "9999999999999999999999.999",
        )
    ],
    "d": [
        dt.date(1900, 1, 1),
        dt.date(1969, 12, 31),
        dt.date(1970, 1, 1),
        dt.date(2000, 2, 29),
        dt.date(2020, 1, 1),
        dt.date(2020, 1, 2),
        dt.date(2038, 1, 19),
        dt.date(9999, 12, 31),
    ],
    "ts": [
        (_T0 + dt.timedelta(days=k, microseconds=k)).replace(tzinfo=UTC)
        for k in (-40000, -1, 0, 1, 2, 30, 365, 9000)
    ],
    "tsn": [_T0 + dt.timedelta(hours=k, microseconds=3 * k) for k in (-100000, -1, 0, 1, 5, 77)],
    "flag": [False, True],
    "st.x": [-5, -1, 0, 1, 2, 10, 50],
}
"""Each column's values, in Spark order (NaN last)."""


# ------------------------------------------------------------------------------ data


def _column(rng: random.Random, name: str, rows: int) -> list:
    pool = POOLS[name]
    mode = rng.random()
    if mode < 0.08:
        return [None] * rows  # all-null in this file
    start = rng.randrange(len(pool))
    width = rng.choice([1, 1, 2, 3, len(pool)])
    window = pool[start : start + width]
    null_rate = rng.choice([0.0, 0.0, 0.2, 0.5])
    values = [None if rng.random() < null_rate else rng.choice(window) for _ in range(rows)]
    if name in ("f32", "f64") and rng.random() < 0.15:
        values = [NAN if v is not None and rng.random() < 0.5 else v for v in values]
    return values


def random_files(rng: random.Random, n_files: int) -> list[pa.Table]:
    """``n_files`` small tables of :data:`SCHEMA` (0-14 rows; clustered, null-rich values)."""
    files = []
    for _ in range(n_files):
        rows = rng.choice([0, 1, 2, 3, 5, 8, 14])
        cols = {name: _column(rng, name, rows) for name in COLUMNS}
        st_valid = [rng.random() > 0.1 for _ in range(rows)]
        x = pa.array(cols.pop("st.x"), pa.int32())
        st = pa.StructArray.from_arrays(
            [x], names=["x"], mask=pa.array([not v for v in st_valid], pa.bool_())
        )
        arrays = [pa.array(cols[f.name], f.type) for f in SCHEMA if f.name != "st"] + [st]
        files.append(pa.Table.from_arrays(arrays, schema=SCHEMA))
    return files


def column_values(table: pa.Table, path: str) -> pa.Array:
    """A leaf column of one file, struct parents' nulls applied (what an index collects)."""
    parts = path.split(".")
    arr = table.column(parts[0]).combine_chunks()
    for name in parts[1:]:
        arr = pc.struct_field(arr, name)
    return arr


# ------------------------------------------------------------------------------ predicates

_ORDERED_OPS = [
    "EqualTo",
    "NotEqualTo",
    "LessThan",
    "LessThanOrEqual",
    "GreaterThan",
    "GreaterThanOrEqual",
    "EqualNullSafe",
]


def _field(path: str) -> pa.Field:
    parts = path.split(".")
    f = SCHEMA.field(parts[0])
    for name in parts[1:]:
        f = f.type.field(name)
    return f


def _literal(rng: random.Random, name: str):
    pool = POOLS[name]
    r = rng.random()
    if r < 0.75 or name == "flag":
        return rng.choice(pool)
    if name in ("i32", "i64", "st.x"):
        return rng.randint(-30, 30)
    if name == "f32":
        return float(np.float32(rng.uniform(-4, 4)))
    if name == "f64":
        return rng.choice([rng.uniform(-4, 4), 0.5, -0.0, NAN, 1.0000000000000002])
    if name == "s":
        return rng.choice(pool) + rng.choice(["", "a", "\x00", "é", "😀"])
    if name == "bin":
        return rng.choice(pool) + bytes([rng.randrange(256)])
    if name == "dec":
        if rng.random() < 0.2:
            return Decimal("1.5005")  # more digits than the scale
        return Decimal(rng.randint(-3000, 3000)).scaleb(-3)
    if name == "d":
        return dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(-5, 5))
    if name == "ts":
        return rng.choice(pool) + dt.timedelta(microseconds=rng.choice([-1, 1]))
    return rng.choice(pool) + dt.timedelta(microseconds=rng.choice([-1, 1]))


def _affix(rng: random.Random, name: str, kind: str):
    base = rng.choice(POOLS[name])
    if rng.random() < 0.15:
        base = base + (rng.choice(["a", "é", "😀"]) if name == "s" else b"\xff")
    if kind == "StartsWith" or kind == "NotStartsWith":
        return base[: rng.randint(0, len(base))]
    if kind == "EndsWith":
        return base[rng.randint(0, len(base)) :]
    i = rng.randint(0, len(base))
    return base[i : rng.randint(i, len(base))]


def random_leaf(rng: random.Random, E):
    """A random bound leaf predicate on one of :data:`COLUMNS`."""
    name = rng.choice(COLUMNS)
    ref = E.BoundReference(name, _field(name))
    r = rng.random()
    if r < 0.45:
        op = rng.choice(_ORDERED_OPS)
        return getattr(E, "Bound" + op)(ref, _literal(rng, name))
    if r < 0.65:
        k = rng.choice([1, 2, 3, 5]) if rng.random() < 0.97 else 250
        values = frozenset(_literal(rng, name) for _ in range(k))
        if name in ("i32", "i64", "st.x") and k == 250:
            values = frozenset(rng.randint(-(10**6), 10**6) for _ in range(k))
        return (E.BoundIn if rng.random() < 0.6 else E.BoundNotIn)(ref, values)
    if r < 0.80:
        op = rng.choice(
            ["IsNull", "NotNull"] + (["IsNaN", "NotNaN"] * 2 if name in ("f32", "f64") else [])
        )
        return getattr(E, "Bound" + op)(ref)
    if name in ("s", "bin"):
        kinds = ["StartsWith", "StartsWith", "NotStartsWith", "EndsWith"] + (
            ["Contains"] if name == "s" else []
        )
        kind = rng.choice(kinds)
        return getattr(E, "Bound" + kind)(ref, _affix(rng, name, kind))
    return random_leaf(rng, E)


def random_predicate(rng: random.Random, E, depth: int = 0, allow_not: bool = False):
    """A random bound predicate: leaves under And/Or (and Not when ``allow_not``)."""
    r = rng.random()
    if depth >= 3 or r < 0.45:
        if rng.random() < 0.02:
            return rng.choice([E.AlwaysTrue(), E.AlwaysFalse()])
        return random_leaf(rng, E)
    if allow_not and r < 0.55:
        return E.Not(random_predicate(rng, E, depth + 1, allow_not))
    cls = E.And if r < 0.8 else E.Or
    return cls(
        random_predicate(rng, E, depth + 1, allow_not),
        random_predicate(rng, E, depth + 1, allow_not),
    )


# ------------------------------------------------------------------------------ Python oracle


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _order(a, b) -> int:
    """Spark's comparison of two non-null values of one type (NaN largest, equal to itself)."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if _is_nan(a) or _is_nan(b):
            return (_is_nan(a) > _is_nan(b)) - (_is_nan(a) < _is_nan(b))
    if isinstance(a, str) and isinstance(b, bytes):
        a = a.encode("utf-8")
    if isinstance(a, bytes) and isinstance(b, str):
        b = b.encode("utf-8")
    return (a > b) - (a < b)


def _bytes(v) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def spark_eval(expr, row: dict):
    """Spark SQL's value of ``expr`` on one row (True / False / None for NULL)."""
    kind = type(expr).__name__
    if kind == "AlwaysTrue":
        return True
    if kind == "AlwaysFalse":
        return False
    if kind in ("And", "Or"):
        a, b = spark_eval(expr.left, row), spark_eval(expr.right, row)
        if kind == "And":
            return False if a is False or b is False else (None if a is None or b is None else True)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if kind == "Not":
        a = spark_eval(expr.child, row)
        return None if a is None else not a
    x = row[expr.ref.name]
    op = kind[len("Bound") :]
    if op == "IsNull":
        return x is None
    if op == "NotNull":
        return x is not None
    if op == "IsNaN":
        return _is_nan(x)
    if op == "NotNaN":
        return not _is_nan(x)
    if op == "EqualNullSafe":
        if expr.value is None or x is None:
            return expr.value is None and x is None
        return _order(x, expr.value) == 0
    if op in ("In", "NotIn"):
        if x is None:
            return None
        hit = any(v is not None and _order(x, v) == 0 for v in expr.values)
        if not hit and any(v is None for v in expr.values):
            return None
        return hit if op == "In" else not hit
    if x is None or expr.value is None:
        return None
    if op in ("StartsWith", "NotStartsWith", "EndsWith", "Contains"):
        xs, p = _bytes(x), _bytes(expr.value)
        return {
            "StartsWith": xs.startswith(p),
            "NotStartsWith": not xs.startswith(p),
            "EndsWith": xs.endswith(p),
            "Contains": p in xs,
        }[op]
    c = _order(x, expr.value)
    return {
        "EqualTo": c == 0,
        "NotEqualTo": c != 0,
        "LessThan": c < 0,
        "LessThanOrEqual": c <= 0,
        "GreaterThan": c > 0,
        "GreaterThanOrEqual": c >= 0,
    }[op]


def _rows(table: pa.Table) -> list[dict]:
    cols = {name: column_values(table, name).to_pylist() for name in COLUMNS}
    return [{name: cols[name][i] for name in COLUMNS} for i in range(table.num_rows)]


class SparkOracle:
    """Per file: does some row satisfy a predicate? (the Python oracle, rows converted once)"""

    def __init__(self, files: list[pa.Table]) -> None:
        self.rows = [_rows(t) for t in files]

    def matches(self, expr) -> np.ndarray:
        return np.array(
            [any(spark_eval(expr, row) is True for row in rows) for rows in self.rows],
            dtype=np.bool_,
        )


# ------------------------------------------------------------------------------ DuckDB oracle


def _sql_ref(path: str) -> str:
    return ".".join(f'"{p}"' for p in path.split("."))


def _sql_literal(value, t: pa.DataType) -> str:
    if pa.types.is_floating(t):
        if _is_nan(value):
            return "CAST('NaN' AS DOUBLE)"
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    if pa.types.is_boolean(t):
        return "TRUE" if value else "FALSE"
    if pa.types.is_integer(t):
        return f"CAST({int(value)} AS HUGEINT)"
    if pa.types.is_decimal(t):
        return f"CAST('{value}' AS DECIMAL(38, 10))"
    if pa.types.is_string(t):
        return "'" + str(value).replace("'", "''") + "'"
    if pa.types.is_binary(t):
        return "from_hex('" + bytes(value).hex() + "')"
    if pa.types.is_date(t):
        return f"DATE '{value.isoformat()}'"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return f"TIMESTAMPTZ '{value.astimezone(UTC).replace(tzinfo=None).isoformat(' ')}+00'"
        return f"TIMESTAMP '{value.isoformat(' ')}'"
    raise TypeError(f"no SQL literal for {t}")


def to_duckdb(expr) -> str:
    """``expr`` as a DuckDB boolean SQL expression with Spark's semantics."""
    kind = type(expr).__name__
    if kind == "AlwaysTrue":
        return "TRUE"
    if kind == "AlwaysFalse":
        return "FALSE"
    if kind in ("And", "Or"):
        return f"({to_duckdb(expr.left)} {kind.upper()} {to_duckdb(expr.right)})"
    if kind == "Not":
        return f"(NOT {to_duckdb(expr.child)})"
    t = expr.ref.field.type
    col = _sql_ref(expr.ref.name)
    if pa.types.is_float32(t):
        col = f"CAST({col} AS DOUBLE)"
    op = kind[len("Bound") :]
    if op == "IsNull":
        return f"({col} IS NULL)"
    if op == "NotNull":
        return f"({col} IS NOT NULL)"
    if op == "IsNaN":
        return f"coalesce(isnan({col}), FALSE)"
    if op == "NotNaN":
        return f"(NOT coalesce(isnan({col}), FALSE))"
    if op in ("In", "NotIn"):
        items = ", ".join("NULL" if v is None else _sql_literal(v, t) for v in expr.values)
        return f"({col} {'IN' if op == 'In' else 'NOT IN'} ({items}))"
    if op in ("StartsWith", "NotStartsWith", "EndsWith", "Contains"):
        if pa.types.is_binary(t):  # DuckDB has no BLOB prefix/suffix: compare hex digits
            col, lit = f"hex({col})", "'" + _bytes(expr.value).hex().upper() + "'"
            if op == "Contains":
                raise TypeError("no DuckDB rendering of Contains on BLOB")
        else:
            lit = _sql_literal(expr.value, t)
        fn = {
            "StartsWith": "starts_with",
            "NotStartsWith": "starts_with",
            "EndsWith": "suffix",
            "Contains": "contains",
        }[op]
        sql = f"{fn}({col}, {lit})"
        return f"(NOT {sql})" if op == "NotStartsWith" else sql
    if expr.value is None:
        return f"({col} IS NULL)" if op == "EqualNullSafe" else "(NULL::BOOLEAN)"
    sym = {
        "EqualTo": "=",
        "NotEqualTo": "<>",
        "LessThan": "<",
        "LessThanOrEqual": "<=",
        "GreaterThan": ">",
        "GreaterThanOrEqual": ">=",
        "EqualNullSafe": "IS NOT DISTINCT FROM",
    }[op]
    return f"({col} {sym} {_sql_literal(expr.value, t)})"


class DuckDBOracle:
    """All files in one DuckDB table (``_file`` = file number), queried per predicate."""

    def __init__(self, files: list[pa.Table]) -> None:
        import duckdb

        self.n = len(files)
        parts = [
            t.append_column("_file", pa.array([i] * t.num_rows, pa.int32()))
            for i, t in enumerate(files)
        ]
        self.table = pa.concat_tables(parts)
        self.con = duckdb.connect()
        self.con.register("files", self.table)

    def matches(self, expr) -> np.ndarray:
        rows = self.con.execute(
            f"SELECT DISTINCT _file FROM files WHERE {to_duckdb(expr)}"
        ).fetchall()
        out = np.zeros(self.n, np.bool_)
        out[[r[0] for r in rows]] = True
        return out

    def close(self) -> None:
        self.con.close()


# ------------------------------------------------------------------------------ Spark SQL text


def _spark_literal(value, t: pa.DataType) -> str:
    if pa.types.is_floating(t):
        v = float(value)
        text = (
            "NaN"
            if _is_nan(v)
            else ("Infinity" if v == INF else "-Infinity" if v == -INF else repr(v))
        )
        return f"CAST('{text}' AS DOUBLE)"
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return str(value)
    if pa.types.is_string(t):
        return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"
    if pa.types.is_binary(t):
        return "X'" + bytes(value).hex() + "'"
    if pa.types.is_date(t):
        return f"DATE '{value.isoformat()}'"
    if pa.types.is_timestamp(t):
        if t.tz is not None:  # parse_sql reads TIMESTAMP literals in UTC by default
            return f"TIMESTAMP '{value.astimezone(UTC).replace(tzinfo=None).isoformat(' ')}'"
        return f"TIMESTAMP_NTZ '{value.isoformat(' ')}'"
    raise TypeError(f"no Spark SQL literal for {t}")


def to_spark_sql(expr) -> str:
    """``expr`` as Spark SQL text, for ``metaindex.expr.parse_sql``."""
    kind = type(expr).__name__
    if kind in ("AlwaysTrue", "AlwaysFalse"):
        return "TRUE" if kind == "AlwaysTrue" else "FALSE"
    if kind in ("And", "Or"):
        return f"({to_spark_sql(expr.left)} {kind.upper()} {to_spark_sql(expr.right)})"
    if kind == "Not":
        return f"(NOT {to_spark_sql(expr.child)})"
    t = expr.ref.field.type
    col = ".".join(f"`{p}`" for p in expr.ref.name.split("."))
    op = kind[len("Bound") :]
    if op in ("IsNull", "NotNull"):
        return f"({col} IS {'NOT ' if op == 'NotNull' else ''}NULL)"
    if op in ("IsNaN", "NotNaN"):
        return f"({'NOT ' if op == 'NotNaN' else ''}isnan({col}))"
    if op in ("In", "NotIn"):
        items = ", ".join(_spark_literal(v, t) for v in expr.values)
        return f"({col} {'IN' if op == 'In' else 'NOT IN'} ({items}))"
    if op in ("StartsWith", "NotStartsWith", "EndsWith", "Contains"):
        fn = {
            "StartsWith": "startswith",
            "NotStartsWith": "startswith",
            "EndsWith": "endswith",
            "Contains": "contains",
        }[op]
        sql = f"{fn}({col}, {_spark_literal(expr.value, t)})"
        return f"(NOT {sql})" if op == "NotStartsWith" else sql
    sym = {
        "EqualTo": "=",
        "NotEqualTo": "<>",
        "LessThan": "<",
        "LessThanOrEqual": "<=",
        "GreaterThan": ">",
        "GreaterThanOrEqual": ">=",
        "EqualNullSafe": "<=>",
    }[op]
    return f"({col} {sym} {_spark_literal(expr.value, t)})"
