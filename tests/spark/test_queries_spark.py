"""Automatic skipping on 50 representative queries: the same rows with skipping on and off, and
Spark's own "number of files read" drops to what the core index predicts.

One 200-file table ``t`` (30 rows a file, written with pyarrow) where file k holds a narrow
slice of every ordered column — ints k*100.., longs k*10^6.., doubles k.. (file 0 holds -0.0,
file 5 a NaN, file 9 only NaNs, some files nulls), strings "kKKK-JJ", dates day k, timestamps
hour k — and two cities a file; indexed with the core ``metaindex.MetaIndex`` (min/max, value
list, bloom). ``dim`` is a small unindexed table to join with. The queries go through a temp
view (SQL) or the DataFrame API, and cover comparisons, IN, IS NULL, NOT, OR, LIKE 'x%', NaN
and -0.0, dates, timestamps, joins, unions, subqueries and aggregations.

Each case lists the predicate every scan of ``t`` gets (the WHERE clause plus what Spark infers
— ``IS NOT NULL`` of join keys); the expected files read are the core's ``prune(...).kept`` for
those predicates plus every file of each ``dim`` scan.
"""

from __future__ import annotations

import datetime
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.spark import hook, stats
from metaindex.spark.metrics import files_read

pytestmark = pytest.mark.spark

N_FILES = 200
ROWS = 30
DIM_FILES = 4
CITIES = [
    "Paris",
    "Rome",
    "Oslo",
    "Lima",
    "Tokyo",
    "Nairobi",
    "Quito",
    "Hanoi",
    "Dakar",
    "Perth",
    "Cairo",
    "Lagos",
    "Porto",
    "Bergen",
    "Kyoto",
    "Turin",
    "Lyon",
    "Nice",
    "Bonn",
    "Graz",
]
DAY0 = datetime.date(2024, 1, 1)
T0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def _file(k: int) -> pa.Table:
    j = np.arange(ROWS)
    i = [int(k * 100 + 3 * x) for x in j]
    if k % 10 == 3:
        i[4] = i[11] = None
    d = [k + x / 100 for x in j]
    if k == 0:
        d[7] = -0.0
    if k == 5:
        d[3] = math.nan
    if k == 7:
        d[0] = None
    if k == 9:
        d = [math.nan] * ROWS
    rng = np.random.default_rng(k)
    longs = rng.integers(k * 1_000_000, (k + 1) * 1_000_000, ROWS).tolist()
    if k == 17:
        longs = [None] * ROWS
    return pa.table(
        {
            "i": pa.array(i, pa.int32()),
            "l": pa.array(longs, pa.int64()),
            "d": pa.array(d, pa.float64()),
            "s": pa.array([f"k{k:03d}-{x:02d}" for x in j]),
            "c": pa.array([CITIES[(k + x % 2) % len(CITIES)] for x in j]),
            "dt": pa.array([DAY0 + datetime.timedelta(days=k)] * ROWS, pa.date32()),
            "ts": pa.array(
                [T0 + datetime.timedelta(hours=k, minutes=int(x)) for x in j],
                pa.timestamp("us", tz="UTC"),
            ),
            "g": pa.array((j % 5).tolist(), pa.int32()),
        }
    )


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("queries")
    root = base / "t"
    root.mkdir()
    for k in range(N_FILES):
        pq.write_table(_file(k), root / f"part-{k:04d}.parquet")
    dim = base / "dim"
    dim.mkdir()
    for n in range(DIM_FILES):
        names = CITIES[n * 5 : (n + 1) * 5]
        pq.write_table(
            pa.table({"c": names, "zone": ["north" if n % 2 else "south"] * 5}),
            dim / f"dim-{n}.parquet",
        )
    mi = MetaIndex(str(root))
    (
        mi.index_builder()
        .add_min_max_index("i")
        .add_min_max_index("l")
        .add_min_max_index("d")
        .add_min_max_index("s")
        .add_min_max_index("dt")
        .add_min_max_index("ts")
        .add_value_list_index("c")
        .add_bloom_filter_index("s")
        .build(executor=SerialExecutor())
    )  # tiny files: a process pool costs more than it saves
    # Tiny files: pack a scan into 2 tasks instead of 7 (the suite runs 100 queries)
    previous = spark.conf.get("spark.sql.files.openCostInBytes")
    spark.conf.set("spark.sql.files.openCostInBytes", "65536")
    spark.read.parquet(str(root)).createOrReplaceTempView("t")
    spark.read.parquet(str(dim)).createOrReplaceTempView("dim")
    hook.register(spark, mi)
    yield mi
    hook.disable(spark)
    hook.unregister(spark, mi.table_uri)
    spark.conf.set("spark.sql.files.openCostInBytes", previous)
    spark.catalog.dropTempView("t")
    spark.catalog.dropTempView("dim")


def _sql(text):
    return lambda spark, root: spark.sql(text)


NN = " AND i IS NOT NULL"
# (id, query, predicates of the scans of t, number of dim scans)
CASES = [
    ("int-gt", _sql("SELECT * FROM t WHERE i > 19000"), ["i > 19000"], 0),
    ("int-lt", _sql("SELECT i, s FROM t WHERE i < 250"), ["i < 250"], 0),
    ("int-eq-present", _sql("SELECT * FROM t WHERE i = 5003"), ["i = 5003"], 0),
    ("int-eq-gap", _sql("SELECT * FROM t WHERE i = 5001"), ["i = 5001"], 0),
    (
        "int-between",
        _sql("SELECT * FROM t WHERE i BETWEEN 7000 AND 7150"),
        ["i >= 7000 AND i <= 7150"],
        0,
    ),
    ("int-is-null", _sql("SELECT * FROM t WHERE i IS NULL"), ["i IS NULL"], 0),
    (
        "int-not-null-lt",
        _sql("SELECT * FROM t WHERE i IS NOT NULL AND i < 300"),
        ["i IS NOT NULL AND i < 300"],
        0,
    ),
    (
        "int-in",
        _sql("SELECT * FROM t WHERE i IN (150, 9903, 19999)"),
        ["i IN (150, 9903, 19999)"],
        0,
    ),
    ("int-not", _sql("SELECT * FROM t WHERE NOT (i >= 300)"), ["NOT (i >= 300)"], 0),
    ("int-or", _sql("SELECT * FROM t WHERE i < 200 OR i > 19800"), ["i < 200 OR i > 19800"], 0),
    ("long-gt", _sql("SELECT * FROM t WHERE l > 199000000"), ["l > 199000000"], 0),
    ("long-eq", _sql("SELECT * FROM t WHERE l = 42000123"), ["l = 42000123"], 0),
    (
        "long-in",
        _sql("SELECT * FROM t WHERE l IN (1000005, 3000000)"),
        ["l IN (1000005, 3000000)"],
        0,
    ),
    ("long-is-null", _sql("SELECT * FROM t WHERE l IS NULL"), ["l IS NULL"], 0),
    ("double-gt", _sql("SELECT * FROM t WHERE d > 150.5D"), ["d > 150.5D"], 0),
    ("double-eq-zero", _sql("SELECT * FROM t WHERE d = 0.0D"), ["d = 0.0D"], 0),
    ("double-lt-zero", _sql("SELECT * FROM t WHERE d < 0.0D"), ["d < 0.0D"], 0),
    ("double-le-neg-zero", _sql("SELECT * FROM t WHERE d <= -0.0D"), ["d <= -0.0D"], 0),
    ("double-isnan", _sql("SELECT * FROM t WHERE isnan(d)"), ["isnan(d)"], 0),
    ("double-eq-nan", _sql("SELECT * FROM t WHERE d = double('NaN')"), ["d = double('NaN')"], 0),
    ("double-gt-all", _sql("SELECT * FROM t WHERE d > 1000D"), ["d > 1000D"], 0),
    ("double-is-null", _sql("SELECT * FROM t WHERE d IS NULL"), ["d IS NULL"], 0),
    ("double-not-lt", _sql("SELECT * FROM t WHERE NOT (d < 100D)"), ["NOT (d < 100D)"], 0),
    ("string-eq", _sql("SELECT * FROM t WHERE s = 'k042-07'"), ["s = 'k042-07'"], 0),
    ("string-like-prefix", _sql("SELECT * FROM t WHERE s LIKE 'k17%'"), ["s LIKE 'k17%'"], 0),
    (
        "string-like-and-gt",
        _sql("SELECT * FROM t WHERE s LIKE 'k0%' AND s > 'k05'"),
        ["s LIKE 'k0%' AND s > 'k05'"],
        0,
    ),
    ("string-lt", _sql("SELECT * FROM t WHERE s < 'k003'"), ["s < 'k003'"], 0),
    (
        "string-in",
        _sql("SELECT * FROM t WHERE s IN ('k100-00', 'k150-29')"),
        ["s IN ('k100-00', 'k150-29')"],
        0,
    ),
    ("city-eq", _sql("SELECT * FROM t WHERE c = 'Paris'"), ["c = 'Paris'"], 0),
    ("city-in", _sql("SELECT * FROM t WHERE c IN ('Rome', 'Oslo')"), ["c IN ('Rome', 'Oslo')"], 0),
    ("city-ne", _sql("SELECT * FROM t WHERE c <> 'Paris'"), ["c <> 'Paris'"], 0),
    (
        "city-not-or",
        _sql("SELECT * FROM t WHERE NOT (c = 'Lima' OR c = 'Oslo')"),
        ["NOT (c = 'Lima' OR c = 'Oslo')"],
        0,
    ),
    (
        "date-eq",
        _sql("SELECT * FROM t WHERE dt = DATE '2024-03-01'"),
        ["dt = DATE '2024-03-01'"],
        0,
    ),
    (
        "date-ge",
        _sql("SELECT * FROM t WHERE dt >= DATE '2024-07-01'"),
        ["dt >= DATE '2024-07-01'"],
        0,
    ),
    (
        "date-between",
        _sql("SELECT * FROM t WHERE dt BETWEEN DATE '2024-02-01' AND DATE '2024-02-05'"),
        ["dt >= DATE '2024-02-01' AND dt <= DATE '2024-02-05'"],
        0,
    ),
    (
        "ts-lt",
        _sql("SELECT * FROM t WHERE ts < TIMESTAMP '2024-01-01 05:00:00'"),
        ["ts < TIMESTAMP '2024-01-01 05:00:00'"],
        0,
    ),
    (
        "ts-range",
        _sql(
            "SELECT * FROM t WHERE ts >= TIMESTAMP '2024-01-08 00:00:00' AND "
            "ts < TIMESTAMP '2024-01-08 03:00:00'"
        ),
        ["ts >= TIMESTAMP '2024-01-08 00:00:00' AND ts < TIMESTAMP '2024-01-08 03:00:00'"],
        0,
    ),
    (
        "and-city",
        _sql("SELECT * FROM t WHERE i > 10000 AND c = 'Tokyo'"),
        ["i > 10000 AND c = 'Tokyo'"],
        0,
    ),
    (
        "or-mixed",
        _sql("SELECT * FROM t WHERE (i < 1000 AND d > 5D) OR dt = DATE '2024-06-01'"),
        ["(i < 1000 AND d > 5D) OR dt = DATE '2024-06-01'"],
        0,
    ),
    (
        "like-and-not",
        _sql("SELECT * FROM t WHERE s LIKE 'k1%' AND NOT (i < 15000)"),
        ["s LIKE 'k1%' AND NOT (i < 15000)"],
        0,
    ),
    (
        "agg-group-by",
        _sql("SELECT c, count(*), max(i) FROM t WHERE dt < DATE '2024-01-20' GROUP BY c"),
        ["dt < DATE '2024-01-20'"],
        0,
    ),
    (
        "agg-avg",
        _sql("SELECT g, round(avg(d), 6) FROM t WHERE i BETWEEN 3000 AND 4000 GROUP BY g"),
        ["i >= 3000 AND i <= 4000"],
        0,
    ),
    (
        "union-all",
        _sql("SELECT i FROM t WHERE i < 500 UNION ALL SELECT i FROM t WHERE i > 19500"),
        ["i < 500", "i > 19500"],
        0,
    ),
    (
        "union-distinct",
        _sql(
            "SELECT c FROM t WHERE l < 5000000 UNION SELECT c FROM t "
            "WHERE ts > TIMESTAMP '2024-01-09 00:00:00'"
        ),
        ["l < 5000000", "ts > TIMESTAMP '2024-01-09 00:00:00'"],
        0,
    ),
    (
        "in-subquery",
        _sql(
            "SELECT * FROM t WHERE i < 1000 AND i IN (SELECT i FROM t WHERE dt = DATE '2024-01-05')"
        ),
        ["i < 1000" + NN, "dt = DATE '2024-01-05'" + NN],
        0,
    ),
    # the scalar subquery's scan is skipped too, and counted (files_read walks subqueries)
    (
        "scalar-subquery",
        _sql(
            "SELECT count(*) FROM t WHERE dt < DATE '2024-01-10' AND "
            "i > (SELECT max(i) FROM t WHERE dt < DATE '2024-01-03')"
        ),
        ["dt < DATE '2024-01-10'" + NN, "dt < DATE '2024-01-03'"],
        0,
    ),
    (
        "exists-subquery",
        _sql(
            "SELECT * FROM t WHERE i < 2000 AND EXISTS (SELECT 1 FROM dim "
            "WHERE dim.c = t.c AND dim.zone = 'south')"
        ),
        ["i < 2000 AND c IS NOT NULL"],
        1,
    ),
    (
        "self-join",
        _sql(
            "SELECT a.i, b.l FROM t a JOIN t b ON a.i = b.i "
            "WHERE a.dt < DATE '2024-01-11' AND b.c = 'Paris'"
        ),
        ["dt < DATE '2024-01-11'" + NN, "c = 'Paris'" + NN],
        0,
    ),
    (
        "join-dim",
        _sql(
            "SELECT dim.zone, count(*) FROM t JOIN dim ON t.c = dim.c "
            "WHERE t.ts < TIMESTAMP '2024-01-02 12:00:00' GROUP BY dim.zone"
        ),
        ["ts < TIMESTAMP '2024-01-02 12:00:00' AND c IS NOT NULL"],
        1,
    ),
    (
        "dataframe-api",
        lambda spark, root: (
            spark.read.parquet(root).where("i > 100 AND c IN ('Paris', 'Rome')").select("i", "c")
        ),
        ["i > 100 AND c IN ('Paris', 'Rome')"],
        0,
    ),
]
assert len(CASES) == 50


def _rows(df) -> list:
    """Collected rows as sortable tuples (NaN as a marker string, so equal NaNs compare)."""

    def norm(v):
        if isinstance(v, float) and v != v:
            return "<NaN>"
        return repr(v)

    return sorted(tuple(norm(v) for v in row) for row in df.collect())


@pytest.mark.parametrize("name,query,scans,dim_scans", CASES, ids=[c[0] for c in CASES])
def test_query_same_rows_fewer_files(spark, tables, name, query, scans, dim_scans):
    root = tables.table_uri[len("file://") :]
    hook.disable(spark)
    off = query(spark, root)
    rows_off = _rows(off)
    read_off = files_read(off)
    hook.enable(spark)
    stats.clear_stats(spark)
    on = query(spark, root)
    rows_on = _rows(on)
    read_on = files_read(on)
    kept = [tables.prune(p).stats.kept_files for p in scans]
    expected = sum(kept) + dim_scans * DIM_FILES
    assert rows_on == rows_off, f"{name}: skipping changed the result"
    assert read_off == len(scans) * N_FILES + dim_scans * DIM_FILES, (
        f"{name}: without skipping every scan reads every file"
    )
    assert read_on == expected, (
        f"{name}: Spark read {read_on} files, the index keeps {kept} for {scans}"
    )
    last = stats.last_query_stats(spark)
    assert last is not None, f"{name}: the query's scans were recorded"
    assert last.files_total == len(scans) * N_FILES + dim_scans * DIM_FILES, (
        f"{name}: the stats count every filtered scan ({last})"
    )
    assert last.files_total - last.files_skipped == expected, (
        f"{name}: the stats count the files read ({last})"
    )
