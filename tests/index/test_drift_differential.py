"""Differential pruning over tables whose files disagree on a column's type (issue 27).

Each case is a table of four files holding column ``x`` in two types (every ordered pair of
integer widths as Parquet stores them, signed and unsigned; float / double; integers with
floats; decimal precision and scale; timestamp units, with and without a time zone, INT96;
dates with timestamps; string / binary / fixed-size binary; a nested struct field; a column
added and dropped; types that do not convert), written alternately by pyarrow and by our
writer (INT96 by pyarrow). The index (min/max, value list and bloom filter on ``x``) is built
over the first two files and refreshed with the others one by one, so the table's type is
joined at build time, inside one task, and across parts of different types.

The truth per file comes from DuckDB reading that file alone with ``x`` cast to the type the
table recorded (``TRY_CAST``: a value that does not cast makes its file a match for every
predicate) and the predicate in Spark's semantics (tests/reference/prune.py). Every file with
a matching row must be kept by ``MetaIndex.prune`` of the same predicate in Spark SQL: 0 wrong
skips. The CI run covers a sample of the cases; ``-m slow`` all of them.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.parquet import write_table

duckdb = pytest.importorskip("duckdb")

SERIAL = SerialExecutor()
UTC = dt.timezone.utc
SEED = 2707
QUERIES = 40

# ------------------------------------------------------------------------------ values

INTS = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint8(): (0, 2**8 - 1),
    pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
}
_T0 = dt.datetime(2021, 3, 4, 5, 6, 7)


def _pool(t: pa.DataType) -> list:
    """Values a file of type ``t`` may hold (edges, shared small values, near misses)."""
    if t in INTS:
        lo, hi = INTS[t]
        return sorted(
            {
                v
                for v in (lo, lo + 1, -300, -1, 0, 1, 7, 44, 300, 2**31 + 5, 2**53 + 1, hi - 1, hi)
                if lo <= v <= hi
            }
        )
    if pa.types.is_floating(t):
        values = [
            -math.inf,
            -1.5,
            -0.0,
            0.0,
            0.1,
            1.1,
            3.0,
            44.0,
            2.0**60,
            1e30,
            math.inf,
            math.nan,
        ]
        return [float(np.float32(v)) for v in values] if t == pa.float32() else values
    if pa.types.is_decimal(t):
        with localcontext() as ctx:
            ctx.prec = 80
            q = Decimal(1).scaleb(-t.scale)
            top = Decimal(10) ** (t.precision - t.scale) - q
            raw = [
                -top,
                Decimal("-1.25"),
                Decimal(0),
                Decimal("0.1"),
                Decimal("1.1"),
                Decimal(3),
                Decimal(44),
                Decimal("123.4567"),
                top,
            ]
            return sorted({v.quantize(q, rounding="ROUND_DOWN") for v in raw if abs(v) <= top})
    if pa.types.is_timestamp(t):
        base = _T0.replace(tzinfo=UTC) if t.tz else _T0
        out = [base + dt.timedelta(seconds=s) for s in (-86400 * 400, -1, 0, 1, 3600)]
        if t.unit in ("us", "ns"):
            out += [base + dt.timedelta(microseconds=7)]
        if t.unit != "ns":
            out += [dt.datetime(9999, 12, 31, tzinfo=UTC if t.tz else None)]
        return out
    if pa.types.is_date(t):
        return [
            dt.date(1970, 1, 1),
            _T0.date(),
            _T0.date() + dt.timedelta(days=1),
            dt.date(9999, 12, 31),
        ]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ["", "a", "ab", "b", "é", "😀"]
    if pa.types.is_fixed_size_binary(t):
        return [b"ab", b"\x00\xff", b"zz"]
    if pa.types.is_binary(t):
        return [b"", b"a", b"ab", b"\xff", b"\x00\xff"]
    if pa.types.is_boolean(t):
        return [False, True]
    raise AssertionError(t)


# ------------------------------------------------------------------------------ cases


def _pairs():
    """name -> [(file type of x or None for no column), ...] for the four files."""
    cases = {}
    for a, b in itertools.permutations(INTS, 2):
        cases[f"{a}-{b}"] = [a, b, a, b]
    tz = "UTC"
    for a, b in [
        (pa.float32(), pa.float64()),
        (pa.float64(), pa.float32()),
        (pa.int32(), pa.float64()),
        (pa.float64(), pa.int32()),
        (pa.int16(), pa.float32()),
        (pa.int64(), pa.float64()),
        (pa.float32(), pa.uint64()),
        (pa.decimal128(5, 2), pa.decimal128(10, 4)),
        (pa.decimal128(10, 4), pa.decimal128(5, 2)),
        (pa.decimal128(9, 0), pa.int64()),
        (pa.int32(), pa.decimal128(12, 3)),
        (pa.decimal128(38, 0), pa.decimal128(5, 2)),
        (pa.decimal128(5, 2), pa.float64()),
        (pa.timestamp("ms"), pa.timestamp("us")),
        (pa.timestamp("us"), pa.timestamp("ms")),
        (pa.timestamp("us", tz), pa.timestamp("ns", tz)),
        (pa.timestamp("s"), pa.timestamp("ms")),
        (pa.timestamp("us", tz), pa.timestamp("us")),
        (pa.date32(), pa.timestamp("us")),
        (pa.string(), pa.binary()),
        (pa.binary(), pa.string()),
        (pa.string(), pa.large_string()),
        (pa.binary(2), pa.binary()),
        (pa.int32(), pa.string()),
        (pa.string(), pa.int64()),
        (pa.int32(), pa.bool_()),
    ]:
        cases[f"{a}-{b}"] = [a, b, a, b]
    cases["int96-micros"] = ["int96", pa.timestamp("us", tz), "int96", pa.timestamp("ms", tz)]
    cases["int96-naive"] = ["int96", pa.timestamp("us"), "int96", pa.timestamp("us")]
    cases["added-dropped"] = [None, pa.int32(), pa.int64(), None]
    cases["struct-int8-int32"] = [
        ("s", pa.int8()),
        ("s", pa.int32()),
        ("s", pa.int64()),
        ("s", pa.int8()),
    ]
    cases["struct-float-double"] = [
        ("s", pa.float32()),
        ("s", pa.float64()),
        ("s", pa.float32()),
        None,
    ]
    return cases


CASES = _pairs()
CI_CASES = [
    "int64-int32",
    "int32-int64",
    "int8-int32",
    "uint64-int64",
    "uint32-int32",
    "float-double",
    "double-float",
    "int64-double",
    "decimal128(5, 2)-decimal128(10, 4)",
    "decimal128(38, 0)-decimal128(5, 2)",
    "timestamp[ms]-timestamp[us]",
    "timestamp[us, tz=UTC]-timestamp[ns, tz=UTC]",
    "timestamp[us, tz=UTC]-timestamp[us]",
    "date32[day]-timestamp[us]",
    "string-binary",
    "int32-string",
    "int96-micros",
    "added-dropped",
    "struct-int8-int32",
    "struct-float-double",
]


def _file_table(spec, k: int, rng: random.Random):
    """(Arrow table, how to write it) of file ``k`` of a case."""
    n = 6
    ids = pa.array(range(k * n, k * n + n), pa.int64())
    if spec is None:
        return pa.table({"id": ids}), "pyarrow"
    nested = isinstance(spec, tuple)
    t = spec[1] if nested else spec
    int96 = t == "int96"
    if int96:
        t = pa.timestamp("ns")
    pool = _pool(pa.timestamp("ns") if int96 else t)
    values = [None if rng.random() < 0.15 else rng.choice(pool) for _ in range(n)]
    if int96:  # nanoseconds beyond the microsecond: Spark and DuckDB drop them
        values = [
            None
            if v is None
            else pa.scalar(v, pa.timestamp("us")).cast(pa.int64()).as_py() * 1000 + 500
            for v in values
        ]
    arr = pa.array(values, t)
    if nested:
        arr = pa.StructArray.from_arrays([arr], names=["a"])
        return pa.table({"id": ids, "s": arr}), "pyarrow" if k % 2 == 0 else "ours"
    return pa.table({"id": ids, "x": arr}), "int96" if int96 else (
        "pyarrow" if k % 2 == 0 else "ours"
    )


def _write(table: pa.Table, path, how: str) -> None:
    if how == "ours":
        write_table(table, str(path))
    else:
        pq.write_table(table, path, use_deprecated_int96_timestamps=how == "int96")


# ------------------------------------------------------------------------------ truth


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return (
            {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}[t.bit_width]
            if pa.types.is_signed_integer(t)
            else {8: "UTINYINT", 16: "USMALLINT", 32: "UINTEGER", 64: "UBIGINT"}[t.bit_width]
        )
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "DOUBLE"  # as Spark compares a float column with a double literal
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return "TIMESTAMPTZ"
        return "TIMESTAMP_NS" if t.unit == "ns" else "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "BLOB"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    raise AssertionError(t)


def _duck_literal(v, t: pa.DataType) -> str:
    if pa.types.is_floating(t):
        return f"CAST('{v!r}' AS DOUBLE)".replace("'nan'", "'NaN'")
    if pa.types.is_integer(t):
        return f"CAST({int(v)} AS HUGEINT)"
    if pa.types.is_decimal(t):
        return f"CAST('{v}' AS DECIMAL({t.precision}, {t.scale}))"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return f"TIMESTAMPTZ '{v.astimezone(UTC).replace(tzinfo=None).isoformat(' ')}+00'"
        return f"TIMESTAMP '{v.isoformat(' ')}'"
    if pa.types.is_date(t):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, bytes):
        return f"from_hex('{v.hex()}')"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    raise AssertionError((v, t))


def _spark_literal(v, t: pa.DataType) -> str:
    if pa.types.is_floating(t):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}Infinity' AS DOUBLE)"
        return f"{v!r}D"
    if pa.types.is_integer(t):
        return str(int(v))
    if pa.types.is_decimal(t):
        return f"{v}BD"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return f"TIMESTAMP '{v.astimezone(UTC).replace(tzinfo=None).isoformat(' ')}'"
        return f"TIMESTAMP_NTZ '{v.isoformat(' ')}'"
    if pa.types.is_date(t):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, bytes):
        return f"X'{v.hex()}'"
    if isinstance(v, bool):
        return "true" if v else "false"
    raise AssertionError((v, t))


class Truth:
    """Per file: does a row of it satisfy a predicate, ``x`` cast to the table's type?"""

    def __init__(self, paths, column: str, t: pa.DataType):
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        cast = _duck_type(t)
        parts = []
        self.unsure = []
        ref = '"s"."a"' if column == "s.a" else '"x"'
        for k, path in enumerate(paths):
            names = pq.read_schema(path).names
            top = column.split(".")[0]
            if top not in names:
                parts.append(
                    f"SELECT {k} AS f, CAST(NULL AS {cast}) AS x FROM read_parquet('{path}')"
                )
                self.unsure.append(False)
                continue
            src = f"SELECT {ref} AS v FROM read_parquet('{path}')"
            kind = self.con.execute(f"SELECT typeof(v) FROM ({src}) LIMIT 1").fetchone()
            conv = f"TRY_CAST(v AS {cast})"
            if kind is not None and kind[0] == "VARCHAR" and cast == "BLOB":
                conv = "encode(v)"  # the UTF-8 bytes (a cast takes only ASCII)
            lost = self.con.execute(
                f"SELECT count(*) FROM ({src}) WHERE v IS NOT NULL AND {conv} IS NULL"
            ).fetchone()[0]
            self.unsure.append(lost > 0)  # a value the table's type cannot hold: keep
            parts.append(f"SELECT {k} AS f, {conv} AS x FROM ({src})")
        self.con.execute("CREATE TABLE files AS " + " UNION ALL ".join(parts))
        self.n = len(paths)

    def matches(self, where: str) -> np.ndarray:
        out = np.array(self.unsure, np.bool_)
        for (k,) in self.con.execute(f"SELECT DISTINCT f FROM files WHERE {where}").fetchall():
            out[k] = True
        return out


# ------------------------------------------------------------------------------ predicates


def _predicates(rng: random.Random, values: list, t: pa.DataType, column: str) -> list:
    """(Spark SQL for metaindex, DuckDB SQL) pairs of random predicates on the column."""
    out = [(f"{column} IS NULL", "x IS NULL"), (f"{column} IS NOT NULL", "x IS NOT NULL")]
    if not values:
        return out
    ops = ["=", "<=>", "!=", "<", "<=", ">", ">="]
    duck_ops = {"<=>": "IS NOT DISTINCT FROM", "!=": "<>"}

    def leaf():
        roll = rng.random()
        if roll < 0.7:
            op = rng.choice(ops)
            v = rng.choice(values)
            return (
                f"{column} {op} {_spark_literal(v, t)}",
                f"x {duck_ops.get(op, op)} {_duck_literal(v, t)}",
            )
        vs = [rng.choice(values) for _ in range(rng.randint(1, 3))]
        neg = rng.random() < 0.3
        return (
            f"{column} {'NOT ' if neg else ''}IN ({', '.join(_spark_literal(v, t) for v in vs)})",
            f"x {'NOT ' if neg else ''}IN ({', '.join(_duck_literal(v, t) for v in vs)})",
        )

    for _ in range(QUERIES):
        a = leaf()
        if rng.random() < 0.2:
            b, op = leaf(), rng.choice(["AND", "OR"])
            a = (f"({a[0]}) {op} ({b[0]})", f"({a[1]}) {op} ({b[1]})")
        out.append(a)
    return out


def _values_in(t: pa.DataType, specs) -> list:
    """Literals for the table's type: every file type's pool, where it converts exactly."""
    out = []
    for spec in specs:
        if spec is None:
            continue
        ft = spec[1] if isinstance(spec, tuple) else spec
        ft = pa.timestamp("ns") if ft == "int96" else ft
        for v in _pool(ft):
            try:
                got = pa.scalar(v, ft).cast(t).as_py()
            except (
                pa.ArrowInvalid,
                pa.ArrowNotImplementedError,
                pa.ArrowTypeError,
                OverflowError,
                ValueError,
            ):
                continue
            if got is not None and got not in out:
                out.append(got)
    return out


# ------------------------------------------------------------------------------ the test


def _run(tmp_path, name: str) -> tuple:
    specs = CASES[name]
    rng = random.Random(f"{SEED}-{name}")
    root = tmp_path / "t"
    root.mkdir()
    paths = []
    for k, spec in enumerate(specs):
        table, how = _file_table(spec, k, rng)
        path = root / f"f{k}.parquet"
        if k >= 2:
            paths.append((path, table, how))
            continue
        _write(table, path, how)
    column = "s.a" if any(isinstance(s, tuple) for s in specs) else "x"
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    (
        mi.index_builder()
        .add_min_max_index(column)
        .add_value_list_index(column, max_values=4)
        .add_bloom_filter_index(column)
        .build(executor=SERIAL)
    )
    for path, table, how in paths:  # one refresh (one part) per later file
        _write(table, path, how)
        mi.refresh(executor=SERIAL)
    schema = mi._current().recorded_schema[0]
    t = schema.field("s").type.field("a").type if column == "s.a" else schema.field("x").type
    files = [root / f"f{k}.parquet" for k in range(len(specs))]
    truth = Truth([str(p) for p in files], column, t)
    values = _values_in(t, specs) if not pa.types.is_boolean(t) else [False, True]
    wrong, skipped, ideal = [], 0, 0
    for spark_sql, duck_sql in _predicates(rng, values, t, column):
        want = truth.matches(duck_sql)
        kept = {str(p) for p in mi.prune(spark_sql).kept}
        got = np.array([str(p) in kept for p in files])
        ideal += int((~want).sum())
        skipped += int((~got).sum())
        lost = [files[k].name for k in np.flatnonzero(want & ~got)]
        if lost:
            wrong.append((spark_sql, lost))
    return wrong, skipped, ideal, str(t)


def _check(tmp_path_factory, names) -> None:
    problems, skipped, ideal = [], 0, 0
    for name in names:
        wrong, s, i, t = _run(tmp_path_factory.mktemp("drift"), name)
        skipped += s
        ideal += i
        problems += [(name, t, *w) for w in wrong]
    print(
        f"\n[drift differential] {len(names)} tables: skipped {skipped} of {ideal} "
        f"skippable files, {len(problems)} wrong skips"
    )
    assert not problems, (
        "files with a matching row were skipped (case, table type, where, "
        "files):\n" + "\n".join(map(repr, problems[:30]))
    )
    assert skipped > 0.2 * ideal, "the indexes must still skip on drifted tables"


def test_drift_matrix_ci(tmp_path_factory):
    _check(tmp_path_factory, CI_CASES)


@pytest.mark.slow
def test_drift_matrix_all(tmp_path_factory):
    _check(tmp_path_factory, sorted(CASES))
