"""Literals read in the session time zone, against Spark's own answers: ``bind(...,
time_zone=)`` on TIMESTAMP, TIMESTAMP_NTZ and DATE columns compared with string, TIMESTAMP,
TIMESTAMP_NTZ and DATE literals, in seven session time zones (fixed offsets, daylight saving
with gaps and overlaps at 02:00, at midnight, and of 30 minutes), on rows and literals placed
around every transition of 2024.

Every row Spark selects is selected by the bound predicate; on a TIMESTAMP column the answer is
exactly Spark's for every literal form, and a string literal binds to the very predicate the
TIMESTAMP literal does (without the session zone it was widened by 18 hours).
"""

from __future__ import annotations

import datetime
import itertools
import zoneinfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.expr import bind, parse_sql
from tests.expr.reference import evaluate

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UTC = datetime.timezone.utc
ZONES = [
    "UTC",
    "+08:00",
    "Asia/Kolkata",
    "Europe/Paris",
    "America/Los_Angeles",
    "Australia/Lord_Howe",
    "Asia/Beirut",
]
SCHEMA = pa.schema(
    [
        ("id", pa.int32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("d", pa.date32()),
    ]
)
OPS = ["=", "<", ">="]


def _zone(name: str) -> datetime.tzinfo:
    if name.startswith(("+", "-")):
        hours, minutes = name[1:].split(":")
        sign = 1 if name[0] == "+" else -1
        return datetime.timezone(sign * datetime.timedelta(hours=int(hours), minutes=int(minutes)))
    return UTC if name == "UTC" else zoneinfo.ZoneInfo(name)


def _transitions(zone: datetime.tzinfo) -> list:
    """(instant, offset before, offset after) of each offset change in 2024 (to the minute)."""
    out, start = [], datetime.datetime(2024, 1, 1, tzinfo=UTC)
    hour = datetime.timedelta(hours=1)
    for h in range(366 * 24):
        a, b = start + h * hour, start + (h + 1) * hour
        if a.astimezone(zone).utcoffset() != b.astimezone(zone).utcoffset():
            while b - a > datetime.timedelta(minutes=1):
                mid = a + (b - a) / 2
                same = mid.astimezone(zone).utcoffset() == a.astimezone(zone).utcoffset()
                a, b = (mid, b) if same else (a, mid)
            out.append((b, a.astimezone(zone).utcoffset(), b.astimezone(zone).utcoffset()))
    return out


def _walls(zone: datetime.tzinfo) -> list:
    """Naive wall times around each transition (in gaps and overlaps too), or a few fixed ones."""
    steps = [datetime.timedelta(minutes=m) for m in (-60, -1, 0, 15, 30, 59, 60, 90)]
    walls = set()
    for instant, before, after in _transitions(zone) or [
        (datetime.datetime(2024, 6, 1, tzinfo=UTC), datetime.timedelta(0), datetime.timedelta(0))
    ]:
        for offset in {before, after}:
            base = (instant + offset).replace(tzinfo=None)
            walls.update(base + step for step in steps)
            walls.add(datetime.datetime.combine(base.date(), datetime.time()))
    return sorted(walls)


def _rows() -> list:
    instants, walls, dates = set(), set(), set()
    for name in ZONES:
        zone = _zone(name)
        for wall in _walls(zone):
            walls.add(wall)
            dates.update(
                {
                    wall.date(),
                    wall.date() - datetime.timedelta(days=1),
                    wall.date() + datetime.timedelta(days=1),
                }
            )
            # the instants a session in this zone shows as this wall time (both in an overlap)
            for fold in (0, 1):
                instants.add(wall.replace(tzinfo=zone, fold=fold).astimezone(UTC))
            instants.add(wall.replace(tzinfo=UTC))
    columns = [sorted(instants), sorted(walls), sorted(dates)]
    rows = []
    for k, (ts, ntz, d) in enumerate(itertools.zip_longest(*columns)):
        rows.append({"id": k, "ts": ts, "ntz": ntz, "d": d})
    rows.append({"id": len(rows), "ts": None, "ntz": None, "d": None})
    return rows


def _predicates(zone_name: str) -> list:
    """(column, literal form, SQL) for literals at this zone's interesting wall times."""
    out = []
    for wall in _walls(_zone(zone_name)):
        text = wall.isoformat(sep=" ")
        literals = {
            "string": f"'{text}'",
            "timestamp": f"TIMESTAMP '{text}'",
            "timestamp_ntz": f"TIMESTAMP_NTZ '{text}'",
            "date": f"DATE '{wall.date().isoformat()}'",
        }
        for column, (form, literal), op in itertools.product(
            ("ts", "ntz", "d"), literals.items(), OPS
        ):
            out.append((column, form, f"{column} {op} {literal}"))
    return out


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    rows = _rows()
    path = str(tmp_path_factory.mktemp("tz") / "t.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    spark.read.parquet(path).createOrReplaceTempView("tz_t")
    return rows


def _spark_answers(spark, zone: str, predicates: list) -> dict:
    """{row id: [Spark's value of each predicate]} under session time zone ``zone``."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        answers: dict = {}
        for start in range(0, len(predicates), 150):
            chunk = predicates[start : start + 150]
            columns = ", ".join(f"({sql}) AS p{start + k}" for k, (_, _, sql) in enumerate(chunk))
            for r in spark.sql(f"SELECT id, {columns} FROM tz_t").collect():
                answers.setdefault(r["id"], []).extend(r[1:])
        return answers
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


@pytest.mark.parametrize("zone", ZONES)
def test_literals_bind_in_the_session_time_zone_as_spark_reads_them(spark, table, zone):
    predicates = _predicates(zone)
    answers = _spark_answers(spark, zone, predicates)
    exact = total = 0
    for k, (column, form, sql) in enumerate(predicates):
        bound = bind(parse_sql(sql, time_zone=zone), SCHEMA, time_zone=zone)
        for row in table:
            theirs = answers[row["id"]][k] is True
            ours = evaluate(bound, row) is True
            assert ours or not theirs, (
                f"{sql!r} (tz {zone}): Spark selects {row}, the bound {bound} does not"
            )
            if column == "ts":
                assert ours == theirs, f"{sql!r} (tz {zone}) on {row}: exactly Spark's answer"
            exact += ours == theirs
            total += 1
        if column == "ts" and form == "string":
            typed = sql.replace("'", "TIMESTAMP '", 1)
            assert bound == bind(parse_sql(typed, time_zone=zone), SCHEMA, time_zone=zone), (
                f"{sql!r} binds exactly like {typed!r} in {zone}"
            )
    assert exact / total > 0.99, f"{exact}/{total} answers equal Spark's in {zone}"


def test_without_the_session_zone_a_string_literal_is_widened():
    sql = "ts >= '2024-06-01 00:00:00'"
    exact = bind(parse_sql(sql), SCHEMA, time_zone="Europe/Paris")
    widened = bind(parse_sql(sql), SCHEMA)
    row = {"ts": datetime.datetime(2024, 5, 31, 21, tzinfo=UTC)}  # 23:00 in Paris
    assert evaluate(exact, row) is False and evaluate(widened, row) is True, (
        "the session zone makes the bound exact; without it 18 hours of slack remain"
    )
