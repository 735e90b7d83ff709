"""parse_sql + bind against Spark itself: on a table with NULLs, NaN, -0.0, infinities, extreme
integers, non-ASCII strings, decimals, dates and timestamps, every row Spark selects for a random
predicate is also selected by the bound predicate (reference evaluator), in two session time
zones. Bind may keep more rows (that is its contract), and mostly keeps exactly Spark's."""

from __future__ import annotations

import datetime
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.expr import bind, parse_sql
from tests.expr.reference import evaluate

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UTC = datetime.timezone.utc
SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("m", pa.decimal128(10, 2)),
        ("s", pa.string()),
        ("b", pa.bool_()),
        ("dt", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("st", pa.struct([("x", pa.int16())])),
    ]
)
POOLS = {
    "i": [0, 1, -1, 2, 30, -(2**31), 2**31 - 1],
    "l": [0, 1, 2**53, 2**53 + 1, -(2**63), 2**63 - 1, 9007199254740993],
    "f": [0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf"), 16777216.0, 1.100000023841858],
    "d": [0.0, -0.0, 1.5, 0.1, float("nan"), float("inf"), float("-inf"), 1e300],
    "m": [
        Decimal("0.00"),
        Decimal("1.50"),
        Decimal("-1.50"),
        Decimal("0.10"),
        Decimal("99999999.99"),
        Decimal("1.23"),
    ],
    "s": ["", "a", "ab", "abc", "b", "é", "\U0001f600", "Paris", "it's", "a%b", "a_c"],
    "b": [True, False],
    "dt": [
        datetime.date(2026, 1, 1),
        datetime.date(2025, 12, 31),
        datetime.date(1970, 1, 1),
        datetime.date(2026, 1, 2),
    ],
    "ts": [
        datetime.datetime(2026, 1, 1, tzinfo=UTC),
        datetime.datetime(2026, 1, 1, 8, tzinfo=UTC),
        datetime.datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime.datetime(1970, 1, 1, tzinfo=UTC),
    ],
    "st.x": [0, 1, -(2**15), 2**15 - 1],
}
NUMBER_LITERALS = [
    "0",
    "1",
    "-1",
    "2",
    "30",
    "1.5",
    "-1.5",
    "0.1",
    "1.23",
    "1.0",
    "16777217",
    "1.1",
    "1.1F",
    "1.5D",
    "1e0",
    "0.1D",
    "9007199254740992D",
    "9007199254740993",
    "9.007199254740993E15",
    "2147483648",
    "-2147483649",
    "99999999.99",
    "100000000",
    "CAST('NaN' AS DOUBLE)",
    "double('Infinity')",
    "CAST('-inf' AS DOUBLE)",
    "-0.0",
    "-0.0D",
    "1.500",
    "32768",
    "-32769",
]
LITERALS = {
    "i": NUMBER_LITERALS,
    "l": NUMBER_LITERALS,
    "f": NUMBER_LITERALS,
    "d": NUMBER_LITERALS,
    "m": NUMBER_LITERALS,
    "st.x": NUMBER_LITERALS,
    "s": ["''", "'a'", "'ab'", "'b'", "'é'", "'\U0001f600'", "'Paris'", "'it''s'", "'z'", "X'61'"],
    "b": ["true", "false"],
    "dt": [
        "DATE '2026-01-01'",
        "'2026-01-01'",
        "TIMESTAMP '2026-01-01 00:00:00'",
        "TIMESTAMP_NTZ '2026-01-01 12:00:00'",
        "TIMESTAMP '2026-01-01 08:00:00+00:00'",
        "DATE '1970-01-01'",
    ],
    "ts": [
        "TIMESTAMP '2026-01-01 00:00:00'",
        "TIMESTAMP '2026-01-01 00:00:00Z'",
        "TIMESTAMP_NTZ '2026-01-01 00:00:00'",
        "DATE '2026-01-01'",
        "TIMESTAMP '2025-12-31 23:59:59.999999Z'",
        "TIMESTAMP '2026-01-01 09:00:00+01:00'",
    ],
}
LIKE_PATTERNS = [
    "'a%'",
    "'%b'",
    "'%b%'",
    "'a_'",
    "'a%c'",
    "'%'",
    "''",
    "'a\\\\%b'",
    "'Par%'",
    "'_'",
    "'é%'",
]
OPS = ["=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>"]
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def make_rows(rng: random.Random, n: int) -> list[dict]:
    out = []
    for k in range(n):
        row = {"id": k}
        for name, pool in POOLS.items():
            value = None if rng.random() < 0.15 else rng.choice(pool)
            if name == "st.x":
                row["st"] = None if rng.random() < 0.1 else {"x": value}
            else:
                row[name] = value
        out.append(row)
    return out


def leaf(rng: random.Random) -> str:
    name = rng.choice(sorted(LITERALS))
    column = (
        f"`{name}`"
        if name == "s" and rng.random() < 0.3
        else name.upper()
        if rng.random() < 0.2
        else name
    )
    kind = rng.random()
    lits = LITERALS[name]
    if kind < 0.45:
        op = rng.choice(OPS)
        if rng.random() < 0.2:
            return f"{rng.choice(lits)} {FLIPPED.get(op, op)} {column}"
        return f"{column} {op} {rng.choice(lits)}"
    if kind < 0.6:
        values = ", ".join(rng.choice(lits + ["NULL"]) for _ in range(rng.randint(1, 4)))
        return f"{column} {rng.choice(['IN', 'NOT IN'])} ({values})"
    if kind < 0.68:
        a, b = rng.choice(lits), rng.choice(lits)
        return f"{column} {rng.choice(['BETWEEN', 'NOT BETWEEN'])} {a} AND {b}"
    if kind < 0.76:
        return f"{column} IS {rng.choice(['', 'NOT '])}NULL"
    if kind < 0.82 and name in ("f", "d", "i", "m"):
        return f"{rng.choice(['', 'NOT '])}isnan({column})"
    if name == "s":
        return f"s {rng.choice(['LIKE', 'NOT LIKE'])} {rng.choice(LIKE_PATTERNS)}"
    if name == "b":
        return rng.choice(["b", "NOT b", "b IS TRUE", "b IS NOT FALSE"])
    return f"{column} = {rng.choice(lits)}"


def predicate(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth >= 3 or r < 0.4:
        return leaf(rng)
    if r < 0.55:
        return f"NOT ({predicate(rng, depth + 1)})"
    return (
        f"({predicate(rng, depth + 1)}) {rng.choice(['AND', 'OR'])} ({predicate(rng, depth + 1)})"
    )


def _flat(row: dict) -> dict:
    flat = {k: v for k, v in row.items() if k != "st"}
    flat["st.x"] = None if row["st"] is None else row["st"]["x"]
    return flat


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_bound_predicates_keep_every_row_spark_selects(spark, tmp_path, zone):
    rng = random.Random(20260101 + len(zone))
    rows = make_rows(rng, 80)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    spark.read.parquet(path).createOrReplaceTempView("expr_t")
    predicates = [predicate(rng) for _ in range(600)]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        answers: dict[int, list] = {}
        for start in range(0, len(predicates), 100):
            chunk = predicates[start : start + 100]
            columns = ", ".join(f"({p}) AS p{start + k}" for k, p in enumerate(chunk))
            for r in spark.sql(f"SELECT id, {columns} FROM expr_t").collect():
                answers.setdefault(r["id"], []).extend(r[1:])
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    exact = total = 0
    for k, sql in enumerate(predicates):
        bound = bind(parse_sql(sql, time_zone=zone), SCHEMA)
        for row in rows:
            spark_true = answers[row["id"]][k] is True
            ours = evaluate(bound, _flat(row)) is True
            assert ours or not spark_true, (
                f"{sql!r} (tz {zone}): Spark selects row {row}, bound {bound} does not"
            )
            exact += ours == spark_true
            total += 1
    assert exact / total > 0.97, (
        f"bind should be exact nearly everywhere: {exact}/{total} row answers agree with Spark"
    )
