"""Spark differential suite (issue 13): skipping on vs off must return the same rows.

Hostile data — NaN, +-0.0, infinities, nulls, empty / long / non-BMP strings, dates and
timestamps from 0001-01-01, 1000-01-01, the 1582 calendar gap, 1850 and 1899 (before Spark's
rebase cutoffs) to 9999-12-31, decimals of 30 digits — is written BY SPARK (with
``datetimeRebaseModeInWrite=LEGACY`` as INT96 and as INT64 micros, and CORRECTED) and by
pyarrow, 8 files per table clustered by value so that the index can skip. Seeded random
predicates (comparisons, IN, NOT, OR, IS NULL, LIKE prefix, casts, functions, wrong-case column
names) run through the hook path (``hook.enable`` + ``spark.read.parquet``) under several
session settings (time zones, LEGACY / CORRECTED read rebase, ``spark.sql.caseSensitive``),
each once with skipping on and once off; the rows must be equal as multisets. Both runs set
``spark.sql.parquet.filterPushdown=false`` (Spark's own row-group filter drops NaN rows, see
README). The read conf EXCEPTION is left out: Spark then raises on the ancient values of the
pyarrow files with skipping off, and skipping a file it would have raised on is what Spark's
own row-group filter does too (engine tests cover the decision).

The CI run is small; ``-m slow`` runs the larger one. The drift part (issue 27) is described
with its tests at the end of the module.
"""

from __future__ import annotations

import collections
import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.spark import hook
from metaindex.spark.metrics import files_read

pytestmark = pytest.mark.spark

SERIAL = SerialExecutor()
FILES = 8
ROWS = 10
COLUMNS = ("i", "f", "s", "d", "ts", "dec")

SETTINGS = [
    {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
        "spark.sql.caseSensitive": "false",
    },
    {
        "spark.sql.session.timeZone": "America/Los_Angeles",
        "spark.sql.parquet.datetimeRebaseModeInRead": "LEGACY",
        "spark.sql.parquet.int96RebaseModeInRead": "LEGACY",
        "spark.sql.caseSensitive": "false",
    },
    {
        "spark.sql.session.timeZone": "Asia/Kathmandu",
        "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInRead": "LEGACY",
        "spark.sql.caseSensitive": "true",
    },
]

# (datetimeRebaseModeInWrite, outputTimestampType) of the Spark-written tables
SPARK_WRITES = {
    "spark_legacy_int96": ("LEGACY", "INT96"),
    "spark_legacy_micros": ("LEGACY", "TIMESTAMP_MICROS"),
    "spark_corrected_micros": ("CORRECTED", "TIMESTAMP_MICROS"),
}

ERAS = [
    dt.date(1, 1, 1),
    dt.date(1000, 1, 1),
    dt.date(1582, 10, 1),
    dt.date(1850, 6, 1),
    dt.date(1899, 12, 25),
    dt.date(1970, 1, 1),
    dt.date(2020, 2, 28),
    dt.date(9999, 12, 20),
]
STRINGS = ["", "a", "abc", "abd", "ä", "😀", "😀x", "𝔘nicode", "x" * 300, "Zeta", "s'q"]

# the cases of issue 13 "Why", always run
FIXED = [
    "d = date'1000-01-01'",
    "d = date'0001-01-01'",
    "d < date'1582-10-15'",
    "d >= date'1582-10-04' and d <= date'1582-10-16'",
    "ts = timestamp'1000-01-01 00:00:00'",
    "ts < timestamp'1900-01-01 00:00:00'",
    "ts = timestamp'1850-06-01 01:02:03'",
    "d in (date'0001-01-01', date'1000-01-03')",
    "not (d > date'1000-01-01')",
    # what a LEGACY read makes of proleptic values (pyarrow's 1000-01-01 reads as
    # 0999-12-27): found only when the hook sees the session's read conf
    "d < date'1000-01-01'",
    "d = date'0999-12-27'",
    "ts < timestamp'1000-01-01 00:00:00'",
]


# ------------------------------------------------------------------------------ data


def _rows(seed: int = 13) -> list:
    """FILES groups of ROWS rows; group g clusters every column around its own range."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(FILES):
        for j in range(ROWS):
            null = rng.random() < 0.1
            f = float(g * 10 + j * 0.5)
            if g == 1 and j < 2:
                f = [-0.0, 0.0][j]
            elif g == 2 and j == 0:
                f = math.inf if g % 2 == 0 else -math.inf
            elif g % 3 == 0 and j == 1:
                f = math.nan
            s = f"s{g}_{j}" if j % 3 else STRINGS[(g * 3 + j) % len(STRINGS)] + str(g)
            day = ERAS[g] + dt.timedelta(days=int(j * (1 if g != 2 else 2)))
            if g == 7 and j == 0:
                day = dt.date(9999, 12, 31)
            ts = dt.datetime.combine(day, dt.time(j % 24, 2 * j % 60, 3))
            if g == 3 and j == 0:
                ts = dt.datetime(1850, 6, 1, 1, 2, 3)
            dec = Decimal(g * 10**20 + j * 7919) / Decimal(10**5)
            out.append(
                {
                    "grp": g,
                    "i": None if null else g * 100 + j,
                    "f": None if rng.random() < 0.05 else f,
                    "s": None if rng.random() < 0.05 else s,
                    "d": None if rng.random() < 0.05 else day,
                    "ts": None if rng.random() < 0.05 else ts,
                    "dec": None if rng.random() < 0.05 else dec,
                }
            )
    return out


ARROW_SCHEMA = pa.schema(
    [
        ("grp", pa.int32()),
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("dec", pa.decimal128(30, 5)),
    ]
)


def _write_pyarrow(root, rows) -> None:
    root.mkdir(parents=True)
    for g in range(FILES):
        part = [r for r in rows if r["grp"] == g]
        table = pa.Table.from_pylist(part, schema=ARROW_SCHEMA)
        pq.write_table(table, root / f"part-{g:02d}.parquet")


def _write_spark(spark, root, rows, rebase: str, ts_type: str) -> None:
    from pyspark.sql import functions as F

    text = [
        {k: (None if v is None else str(v) if k in ("d", "ts", "dec") else v) for k, v in r.items()}
        for r in rows
    ]
    schema = "grp int, i long, f double, s string, d string, ts string, dec string"
    with _confs(
        spark,
        {
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.parquet.datetimeRebaseModeInWrite": rebase,
            "spark.sql.parquet.int96RebaseModeInWrite": rebase,
            "spark.sql.parquet.outputTimestampType": ts_type,
        },
    ):
        df = spark.createDataFrame(text, schema).select(
            "grp",
            "i",
            "f",
            "s",
            F.col("d").cast("date").alias("d"),
            F.col("ts").cast("timestamp").alias("ts"),
            F.col("dec").cast("decimal(30,5)").alias("dec"),
        )
        df.repartitionByRange(FILES, "grp").sortWithinPartitions("grp").write.parquet(str(root))


class _confs:
    """Set Spark confs for a block, restoring the previous values (or unsetting) after."""

    def __init__(self, spark, conf: dict):
        self.spark, self.conf = spark, conf

    def __enter__(self):
        self.old = {k: self.spark.conf.get(k, None) for k in self.conf}
        for k, v in self.conf.items():
            self.spark.conf.set(k, v)

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """{name: (path, MetaIndex)}: the tables, indexed and registered with the hook."""
    base = tmp_path_factory.mktemp("differential")
    rows = _rows()
    out = {}
    _write_pyarrow(base / "pyarrow", rows)
    for name, (rebase, ts_type) in SPARK_WRITES.items():
        _write_spark(spark, base / name, rows, rebase, ts_type)
    for name in ("pyarrow", *SPARK_WRITES):
        mi = MetaIndex(str(base / name), store=str(base / "store"))
        (
            mi.index_builder()
            .add_min_max_index("i")
            .add_min_max_index("f")
            .add_min_max_index("s")
            .add_min_max_index("d")
            .add_min_max_index("ts")
            .add_min_max_index("dec")
            .add_value_list_index("d")
            .add_bloom_filter_index("s")
            .build(executor=SERIAL)
        )
        hook.register(spark, mi)
        out[name] = (str(base / name), mi)
    yield out
    for _, mi in out.values():
        hook.unregister(spark, mi.table_uri)


# ------------------------------------------------------------------------------ predicates


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(column: str, value) -> str:
    if value is None:
        return "null"
    if column == "i":
        return str(value)
    if column == "f":
        if math.isnan(value):
            return "cast('NaN' as double)"
        if math.isinf(value):
            return f"cast('{'-' if value < 0 else ''}Infinity' as double)"
        return repr(float(value)) + "D"
    if column == "s":
        return _sql_string(value)
    if column == "d":
        return f"date'{value.isoformat()}'"
    if column == "ts":
        return f"timestamp'{value.isoformat(sep=' ')}'"
    if column == "dec":
        return f"{value}BD"
    raise AssertionError(column)


class Generator:
    """Seeded random predicates over the data's own values (and near misses)."""

    def __init__(self, rows, seed: int, case_sensitive: bool):
        self.rng = np.random.default_rng(seed)
        self.case_sensitive = case_sensitive
        self.values = {c: [r[c] for r in rows if r[c] is not None] for c in COLUMNS}
        self.values["f"] += [math.nan, -0.0, 0.0, math.inf, -math.inf, 1e300]
        self.values["d"] += [
            dt.date(1, 1, 1),
            dt.date(1582, 10, 15),
            dt.date(1582, 10, 4),
            dt.date(1899, 12, 31),
            dt.date(1900, 1, 1),
        ]
        self.values["ts"] += [
            dt.datetime(1900, 1, 1),
            dt.datetime(1000, 1, 1, 0, 0, 0),
            dt.datetime(1899, 12, 31, 23, 59, 59),
        ]
        self.values["s"] += STRINGS

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def name(self, column: str) -> str:
        if not self.case_sensitive and self.rng.random() < 0.3:
            return column.upper()
        return column

    def value(self, column):
        return self.pick(self.values[column])

    def leaf(self) -> str:
        kind = self.pick(["cmp", "cmp", "cmp", "in", "null", "like", "cast", "func"])
        c = self.pick(COLUMNS)
        n = self.name(c)
        if kind == "cmp":
            op = self.pick(["=", "!=", "<", "<=", ">", ">=", "<=>"])
            return f"{n} {op} {_literal(c, self.value(c))}"
        if kind == "in":
            k = int(self.rng.integers(1, 4))
            return f"{n} in ({', '.join(_literal(c, self.value(c)) for _ in range(k))})"
        if kind == "null":
            return f"{n} is {self.pick(['', 'not '])}null"
        if kind == "like":
            s = self.value("s")
            prefix = s[: int(self.rng.integers(0, 4))].replace("%", "").replace("_", "")
            return f"{self.name('s')} like {_sql_string(prefix + '%')}"
        if kind == "cast":
            return self.pick(
                [
                    f"cast({self.name('i')} as string) = {_sql_string(str(self.value('i')))}",
                    f"try_cast({self.name('s')} as int) = {int(self.rng.integers(0, 5))}",
                    f"cast({self.name('d')} as timestamp) >= {_literal('ts', self.value('ts'))}",
                    f"cast({self.name('ts')} as date) = {_literal('d', self.value('d'))}",
                    f"cast({self.name('i')} as double) < {_literal('f', self.value('f'))}",
                ]
            )
        return self.pick(
            [
                f"upper({self.name('s')}) = {_sql_string(str(self.value('s')).upper())}",
                f"length({self.name('s')}) > {int(self.rng.integers(0, 12))}",
                f"coalesce({self.name('i')}, -1) = -1",
                f"abs({self.name('f')}) < {_literal('f', self.value('f'))}",
                f"year({self.name('d')}) = {self.value('d').year}",
                f"isnan({self.name('f')})",
                f"{self.name('i')} + 1 > {_literal('i', self.value('i'))}",
            ]
        )

    def predicate(self, depth: int = 0) -> str:
        roll = self.rng.random()
        if depth >= 3 or roll < 0.4:
            return self.leaf()
        if roll < 0.55:
            return f"not ({self.predicate(depth + 1)})"
        op = "and" if roll < 0.8 else "or"
        return f"({self.predicate(depth + 1)}) {op} ({self.predicate(depth + 1)})"


# ------------------------------------------------------------------------------ comparing


def _normal(value):
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else repr(value)
    return value


def _outcome(spark, path, where):
    """(Counter of rows or the error class, files read) of one query."""
    df = spark.read.parquet(path).where(where)
    try:
        rows = df.collect()
    except Exception as exc:  # noqa: BLE001 - both runs must fail alike
        return f"error: {type(exc).__name__}", 0
    return collections.Counter(tuple(_normal(v) for v in r) for r in rows), files_read(df)


def _outcomes(spark, path, queries) -> tuple:
    """([Counter of rows per query], files read): the queries as one UNION ALL job (one
    scan each, pruned on its own), query by query when the batch fails."""
    from functools import reduce

    from pyspark.sql import functions as F

    base = spark.read.parquet(path)
    parts = [base.where(q).withColumn("__q", F.lit(k)) for k, q in enumerate(queries)]
    df = reduce(lambda a, b: a.unionAll(b), parts)
    try:
        rows = df.collect()
    except Exception:  # noqa: BLE001 - find the failing one(s) alone
        found = [_outcome(spark, path, q) for q in queries]
        return [r for r, _ in found], sum(n for _, n in found)
    out = [collections.Counter() for _ in queries]
    for r in rows:
        out[r["__q"]][tuple(_normal(v) for v in r[:-1])] += 1
    return out, files_read(df)


def _differences(spark, tables, queries_per_table: int, seed: int, fixed: bool = True):
    rows = _rows()
    diffs, read_on, read_off, compared = [], 0, 0, 0
    for k, conf in enumerate(SETTINGS):
        case_sensitive = conf["spark.sql.caseSensitive"] == "true"
        gen = Generator(rows, seed + k, case_sensitive)
        work = {
            name: (FIXED if fixed else []) + [gen.predicate() for _ in range(queries_per_table)]
            for name in tables
        }
        with _confs(
            spark,
            {
                **conf,
                "spark.sql.parquet.filterPushdown": "false",
                "spark.sql.files.minPartitionNum": "1",
            },
        ):
            hook.enable(spark)
            try:
                on = {name: _outcomes(spark, tables[name][0], qs) for name, qs in work.items()}
            finally:
                hook.disable(spark)
            off = {name: _outcomes(spark, tables[name][0], qs) for name, qs in work.items()}
        for name, queries in work.items():
            read_on += on[name][1]
            read_off += off[name][1]
            for where, got, want in zip(queries, on[name][0], off[name][0], strict=True):
                compared += 1
                if got != want:
                    diffs.append(
                        (
                            conf["spark.sql.session.timeZone"],
                            conf["spark.sql.parquet.datetimeRebaseModeInRead"],
                            name,
                            where,
                            _count(got),
                            _count(want),
                        )
                    )
    return diffs, read_on, read_off, compared


def _count(outcome):
    return sum(outcome.values()) if isinstance(outcome, collections.Counter) else outcome


def _check(spark, tables, queries_per_table: int, seed: int, fixed: bool = True) -> None:
    diffs, read_on, read_off, compared = _differences(spark, tables, queries_per_table, seed, fixed)
    print(
        f"\n[differential] {compared} queries: files read {read_on} with skipping, "
        f"{read_off} without; {len(diffs)} differences"
    )
    assert not diffs, (
        "skipping changed answers (tz, read rebase, table, where, rows on, "
        "rows off):\n" + "\n".join(map(repr, diffs[:30]))
    )
    assert read_on < read_off, "the suite must exercise skipping, not only keep every file"


def test_written_as_intended(spark, tables):
    """The tables really carry what the suite is about: Spark's legacy footer keys, INT96."""
    meta = pq.ParquetFile(next(p for p in _files(tables["spark_legacy_int96"][0]))).metadata
    kv = meta.metadata
    assert b"org.apache.spark.legacyDateTime" in kv and b"org.apache.spark.legacyINT96" in kv
    assert meta.schema.column(5).physical_type == "INT96"
    corrected = pq.ParquetFile(_files(tables["spark_corrected_micros"][0])[0]).metadata
    assert b"org.apache.spark.version" in corrected.metadata
    assert b"org.apache.spark.legacyDateTime" not in corrected.metadata


def _files(path) -> list:
    import glob

    return sorted(glob.glob(f"{path}/*.parquet"))


def test_issue_13_legacy_date_is_found(spark, tables):
    """A Spark LEGACY-written 1000-01-01: 1 row with skipping off, and on."""
    path = tables["spark_legacy_micros"][0]
    with _confs(spark, {"spark.sql.parquet.filterPushdown": "false"}):
        want = _outcome(spark, path, "d = date'1000-01-01'")[0]
        hook.enable(spark)
        try:
            got = _outcome(spark, path, "d = date'1000-01-01'")[0]
        finally:
            hook.disable(spark)
    assert sum(want.values()) >= 1 and got == want


def test_session_legacy_read_conf_reaches_the_hook(spark, tables):
    """pyarrow wrote proleptic 1000-01-01; a LEGACY session reads it as 0999-12-27. The index
    holds the raw 1000-01-01, so the file is found only if the hook applies the session's
    read conf (sent by the shim with each request)."""
    path = tables["pyarrow"][0]
    where = "d = date'0999-12-27'"
    with _confs(
        spark,
        {
            "spark.sql.parquet.filterPushdown": "false",
            "spark.sql.parquet.datetimeRebaseModeInRead": "LEGACY",
        },
    ):
        want = _outcome(spark, path, where)[0]
        hook.enable(spark)
        try:
            got = _outcome(spark, path, where)[0]
        finally:
            hook.disable(spark)
    assert sum(want.values()) == 1 and got == want


def test_differential_ci(spark, tables):
    _check(spark, tables, queries_per_table=4, seed=1300)


@pytest.mark.slow
def test_differential_large(spark, tables):
    # 14 random queries a table (was 40, then 20: the CI budget of 45 minutes on 2 cores; the seeded
    # queries of test_differential_ci and the format, Delta and drift suites add to them);
    # the fixed queries run in test_differential_ci, not again here
    _check(spark, tables, queries_per_table=14, seed=2600, fixed=False)


# ------------------------------------------------------------------------------ drift (issue 27)
#
# Tables whose files disagree on the type of ``x`` (and of a struct field ``s.a``), written by
# Spark, pyarrow and our writer, indexed with all three kinds (built over the first file,
# refreshed with each later one). Spark reads them with mergeSchema off (the schema of the
# first file: f0 sorts first), with a declared schema where the case has one (as a catalog
# table would), and with mergeSchema on where Spark can merge; every query once with skipping
# on and once off. Where Spark cannot read the table without skipping (a file it cannot convert
# to the read type: it raises), there is no answer to compare with, and the read is counted as
# such. Otherwise the rows must be equal: 0 wrong skips.

DRIFT_QUERIES = 10

# name: ([(writer, type) per file], declared schema or None, merge)
#   writer "spark" takes a Spark SQL type, "pyarrow" / "ours" an Arrow type, "int96" a
#   pyarrow INT96 file; None: a file without the column.
DRIFT_CASES = {
    "issue27_bigint_then_int": ([("pyarrow", pa.int64()), ("pyarrow", pa.int32())], None, False),
    "int_then_bigint": (
        [("spark", "int"), ("pyarrow", pa.int64()), ("ours", pa.int16())],
        "bigint",
        False,
    ),
    "tinyint_then_int": (
        [("spark", "tinyint"), ("pyarrow", pa.int32()), ("ours", pa.int32())],
        None,
        False,
    ),
    "smallint_then_uint16": (
        [("spark", "smallint"), ("pyarrow", pa.uint16()), ("ours", pa.int8())],
        "int",
        False,
    ),
    "uint32_then_bigint": ([("pyarrow", pa.uint32()), ("spark", "bigint")], None, False),
    "bigint_then_uint64": ([("spark", "bigint"), ("pyarrow", pa.uint64())], "decimal(20,0)", False),
    "double_then_float": (
        [("spark", "double"), ("pyarrow", pa.float32()), ("ours", pa.float32())],
        None,
        False,
    ),
    "float_then_double": ([("pyarrow", pa.float32()), ("spark", "double")], "double", False),
    "double_then_int": ([("spark", "double"), ("pyarrow", pa.int32())], None, False),
    "bigint_then_double": ([("spark", "bigint"), ("pyarrow", pa.float64())], "double", False),
    "decimal_scale": (
        [
            ("spark", "decimal(10,4)"),
            ("pyarrow", pa.decimal128(5, 2)),
            ("ours", pa.decimal128(7, 1)),
        ],
        None,
        False,
    ),
    "decimal_and_bigint": ([("spark", "decimal(24,4)"), ("pyarrow", pa.int64())], None, False),
    "timestamp_units": (
        [
            ("int96", None),
            ("spark", "timestamp"),
            ("pyarrow", pa.timestamp("ms", "UTC")),
            ("ours", pa.timestamp("us", "UTC")),
        ],
        None,
        True,
    ),
    "timestamp_zones": ([("spark", "timestamp"), ("pyarrow", pa.timestamp("us"))], None, False),
    "ntz_then_date": ([("pyarrow", pa.timestamp("us")), ("spark", "date")], None, False),
    "string_then_binary": (
        [("spark", "string"), ("pyarrow", pa.binary()), ("ours", pa.string())],
        None,
        False,
    ),
    "struct_field": (
        [
            ("spark", "struct<a:int>"),
            ("pyarrow", pa.struct([("a", pa.int64())])),
            ("ours", pa.struct([("a", pa.int8())])),
        ],
        "struct<a:bigint>",
        False,
    ),
    "added_and_dropped": (
        [(None, None), ("spark", "int"), ("pyarrow", pa.int32()), (None, None)],
        None,
        True,
    ),
}
DRIFT_CI = [
    "int_then_bigint",
    "tinyint_then_int",
    "double_then_float",
    "decimal_scale",
    "timestamp_units",
]

_SPARK_TO_ARROW = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "float": pa.float32(),
    "string": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", "UTC"),
    "struct<a:int>": pa.int32(),
}
_D0 = dt.datetime(2021, 3, 4, 5, 6, 7)


def _drift_pool(t) -> list:
    """Values of Arrow type ``t`` (of a struct: of its field) a drift file holds."""
    if pa.types.is_struct(t):
        t = t.field("a").type
    if pa.types.is_integer(t):
        lo, hi = (
            (0, 2**t.bit_width - 1)
            if pa.types.is_unsigned_integer(t)
            else (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
        )
        return [v for v in (lo, -300, -1, 0, 1, 9, 44, 300, 70000, 2**40, hi) if lo <= v <= hi]
    if pa.types.is_floating(t):
        values = [-1.5, -0.0, 0.0, 0.1, 1.1, 3.0, 44.0, 1e30, math.inf, math.nan]
        return [float(np.float32(v)) for v in values] if t == pa.float32() else values
    if pa.types.is_decimal(t):
        q = Decimal(1).scaleb(-t.scale)
        return sorted(
            {
                Decimal(v).quantize(q, rounding="ROUND_DOWN")
                for v in ("-1.25", "0", "0.1", "1.1", "3", "44", "123.4567")
                if abs(Decimal(v)) < Decimal(10) ** (t.precision - t.scale)
            }
        )
    if pa.types.is_timestamp(t):
        base = _D0.replace(tzinfo=dt.timezone.utc) if t.tz else _D0
        return [base + dt.timedelta(seconds=s) for s in (-86400 * 400, -1, 0, 1, 3600)] + (
            [base + dt.timedelta(microseconds=7)] if t.unit != "ms" else []
        )
    if pa.types.is_date(t):
        return [_D0.date(), _D0.date() + dt.timedelta(days=1), dt.date(1970, 1, 1)]
    if pa.types.is_string(t):
        return ["", "a", "ab", "é", "😀"]
    if pa.types.is_binary(t):
        return [b"", b"a", b"ab", b"\xc3\xa9", b"zz"]
    raise AssertionError(t)


def _write_drift_file(spark, root, k: int, writer, t, rng, scratch) -> None:
    n = 8
    ids = list(range(k * n, k * n + n))
    path = root / f"f{k}-{writer or 'none'}.parquet"
    if writer is None:
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
        return
    arrow_t = (
        pa.timestamp("us", "UTC")
        if writer == "int96"
        else _SPARK_TO_ARROW.get(t, t)
        if writer == "spark"
        else t
    )
    if writer == "spark" and t.startswith("decimal"):
        p, s = (int(x) for x in t[len("decimal(") : -1].split(","))
        arrow_t = pa.decimal128(p, s)
    pool = _drift_pool(arrow_t)
    values = [None if rng.random() < 0.15 else rng.choice(pool) for _ in range(n)]
    if writer == "spark":
        column = "s" if t.startswith("struct") else "x"
        rows = [
            (i, None if v is None else str(v) if not isinstance(v, (int, float)) else v)
            for i, v in zip(ids, values, strict=True)
        ]
        src = (
            "string"
            if not isinstance(pool[0], (int, float))
            else ("double" if isinstance(pool[0], float) else "bigint")
        )
        df = spark.createDataFrame(rows, f"id bigint, v {src}")
        expr = "named_struct('a', cast(v as int))" if column == "s" else f"cast(v as {t})"
        if t == "timestamp":
            expr = "cast(v as timestamp)"
        out = scratch / f"w-{root.name}-{k}"
        with _confs(
            spark,
            {
                "spark.sql.session.timeZone": "UTC",
                "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
            },
        ):
            df.selectExpr("id", f"{expr} as {column}").coalesce(1).write.parquet(str(out))
        (part,) = list(out.glob("part-*.parquet"))
        part.rename(path)
        return
    if writer == "int96":
        arr = pa.array(values, pa.timestamp("us", "UTC"))
        pq.write_table(
            pa.table({"id": pa.array(ids, pa.int64()), "x": arr}),
            path,
            use_deprecated_int96_timestamps=True,
        )
        return
    if pa.types.is_struct(t):
        arr = pa.StructArray.from_arrays([pa.array(values, t.field("a").type)], names=["a"])
        table = pa.table({"id": pa.array(ids, pa.int64()), "s": arr})
    else:
        table = pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(values, t)})
    if writer == "ours":
        from metaindex.parquet import write_table

        write_table(table, str(path))
    else:
        pq.write_table(table, path)


def _drift_literal(v) -> str:
    if isinstance(v, bool) or v is None:
        raise AssertionError(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "cast('NaN' as double)"
        if math.isinf(v):
            return f"cast('{'-' if v < 0 else ''}Infinity' as double)"
        return repr(v) + "D"
    if isinstance(v, Decimal):
        return f"{v}BD"
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            return f"timestamp'{v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(' ')}'"
        return f"timestamp_ntz'{v.isoformat(' ')}'"
    if isinstance(v, dt.date):
        return f"date'{v.isoformat()}'"
    if isinstance(v, str):
        return _sql_string(v)
    if isinstance(v, bytes):
        return f"X'{v.hex()}'"
    raise AssertionError(v)


def _drift_queries(rng, values: list, column: str) -> list:
    out = [f"{column} is null", f"{column} is not null"]
    for _ in range(DRIFT_QUERIES):
        if rng.random() < 0.75:
            op = rng.choice(["=", "<=>", "!=", "<", "<=", ">", ">="])
            out.append(f"{column} {op} {_drift_literal(rng.choice(values))}")
        else:
            vs = ", ".join(_drift_literal(rng.choice(values)) for _ in range(rng.randint(1, 3)))
            out.append(f"{column} in ({vs})")
    return out


class _DriftTables:
    """Each case's table, written, indexed and registered on first use: ``[name]`` gives
    ``(path, [(read label, declared schema, mergeSchema)], queries)``."""

    def __init__(self, spark, base):
        self.spark, self.base, self.built, self.registered = spark, base, {}, []

    def __getitem__(self, name):
        if name not in self.built:
            self.built[name] = self._build(name)
        return self.built[name]

    def _build(self, name):
        import random

        spark, base = self.spark, self.base
        files, declared, merge = DRIFT_CASES[name]
        rng = random.Random(f"drift-{name}")
        root = base / name
        root.mkdir()
        column = (
            "s.a"
            if any(
                w and isinstance(t, (str, pa.DataType)) and str(t).startswith("struct")
                for w, t in files
            )
            else "x"
        )
        first = next(k for k, (writer, _) in enumerate(files) if writer is not None)
        for k in range(first + 1):  # the build needs a file with the column
            _write_drift_file(spark, root, k, *files[k], rng, base)
        mi = MetaIndex(str(root), store=str(base / "store"))
        (
            mi.index_builder()
            .add_min_max_index(column)
            .add_value_list_index(column, max_values=5)
            .add_bloom_filter_index(column)
            .build(executor=SERIAL)
        )
        for k in range(first + 1, len(files)):
            _write_drift_file(spark, root, k, *files[k], rng, base)
            mi.refresh(executor=SERIAL)
        hook.register(spark, mi)
        self.registered.append(mi)
        values = []
        for writer, t in files:
            if writer is None:
                continue
            arrow_t = (
                pa.timestamp("us", "UTC")
                if writer == "int96"
                else _SPARK_TO_ARROW.get(t, t)
                if writer == "spark"
                else t
            )
            if writer == "spark" and str(t).startswith("decimal"):
                p, s = (int(x) for x in t[len("decimal(") : -1].split(","))
                arrow_t = pa.decimal128(p, s)
            values += [v for v in _drift_pool(arrow_t) if v not in values]
        queries = _drift_queries(rng, values, column)
        readers = [("first file", None, "false")]
        if declared is not None:
            top = "s" if column == "s.a" else "x"
            readers.append((f"declared {declared}", f"id bigint, {top} {declared}", "false"))
        if merge:
            readers.append(("mergeSchema", None, "true"))
        return str(root), readers, queries


@pytest.fixture(scope="module")
def drift_tables(spark, tmp_path_factory):
    tables = _DriftTables(spark, tmp_path_factory.mktemp("drift"))
    yield tables
    for mi in tables.registered:
        hook.unregister(spark, mi.table_uri)


def _drift_read(spark, path, schema, merge):
    reader = spark.read.option("mergeSchema", merge)
    if schema is not None:
        reader = reader.schema(schema)
    return reader.parquet(path)


def _drift_outcomes(spark, path, schema, merge, queries):
    """([Counter per query], error of a plain read or None) with skipping as it is set."""
    from functools import reduce

    from pyspark.sql import functions as F

    base = _drift_read(spark, path, schema, merge)
    try:
        parts = [base.where(q).withColumn("__q", F.lit(k)) for k, q in enumerate(queries)]
        rows = reduce(lambda a, b: a.unionAll(b), parts).collect()
    except Exception as exc:  # noqa: BLE001 - compared with the other run below
        return None, type(exc).__name__
    out = [collections.Counter() for _ in queries]
    for r in rows:
        out[r["__q"]][tuple(_normal(v) for v in r[:-1])] += 1
    return out, None


def _check_drift(spark, drift_tables, names) -> None:
    compared, unreadable, diffs = 0, [], []
    with _confs(
        spark,
        {
            "spark.sql.parquet.filterPushdown": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.files.minPartitionNum": "1",
        },
    ):
        for name in names:
            path, readers, queries = drift_tables[name]
            for label, schema, merge in readers:
                off, error = _drift_outcomes(spark, path, schema, merge, queries)
                if off is None:
                    unreadable.append((name, label, error))
                    continue
                hook.enable(spark)
                try:
                    on, error_on = _drift_outcomes(spark, path, schema, merge, queries)
                finally:
                    hook.disable(spark)
                if on is None:
                    diffs.append((name, label, "skipping on raised", error_on))
                    continue
                for q, got, want in zip(queries, on, off, strict=True):
                    compared += 1
                    if got != want:
                        diffs.append((name, label, q, sum(got.values()), sum(want.values())))
    print(
        f"\n[drift differential spark] {len(names)} tables, {compared} queries compared; "
        f"reads Spark cannot do without skipping: {unreadable}; {len(diffs)} differences"
    )
    assert not diffs, (
        "skipping changed answers on drifted tables (table, read, where, rows "
        "on, rows off):\n" + "\n".join(map(repr, diffs[:30]))
    )
    assert compared >= 10 * len(names), "most reads must be comparable"


def test_issue_27_reproduction_1_through_spark(spark, tmp_path):
    """x is BIGINT in the first file and INT in one added later: with mergeSchema off Spark
    reads it as BIGINT; x = 9 finds the row with skipping on as with it off."""
    from metaindex.spark import MetaIndex as SparkMetaIndex
    from metaindex.spark import disable, enable

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), root / "part-0.parquet")
    mi = SparkMetaIndex(spark, str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_bloom_filter_index("x").build()
    pq.write_table(pa.table({"x": pa.array([9, 10], pa.int32())}), root / "part-1.parquet")
    mi.refresh()

    def count():
        return spark.read.option("mergeSchema", "false").parquet(str(root)).where("x = 9").count()

    off = count()
    enable(spark)
    try:
        on = count()
        nine_skips = files_read(spark.read.parquet(str(root)).where("x = 2"))
    finally:
        disable(spark)
    assert (off, on) == (1, 1), f"1 row with skipping off and on, got off={off} on={on}"
    assert spark.read.parquet(str(root)).schema["x"].dataType.simpleString() == "bigint"
    assert nine_skips in (0, 1), "x = 2 reads only the first file"
    mi.drop()


def test_describe_says_why_a_file_is_unindexed_for_a_column(spark, tmp_path):
    """The Spark face's describe() carries the core's type_drift: the table's type, the
    notes and their effect, and how many files were left unindexed for the column."""
    import json

    from metaindex.spark import MetaIndex as SparkMetaIndex

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"x": pa.array([0.5, 1.5], pa.float64())}), root / "a.parquet")
    mi = SparkMetaIndex(spark, str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("x").build()
    pq.write_table(pa.table({"x": pa.array([5, 2**53 + 1], pa.int64())}), root / "b.parquet")
    mi.refresh()
    (row,) = mi.describe().collect()
    drift = json.loads(row["type_drift"])
    assert drift["table_type"] == "double" and drift["notes"] == {"lossy": ["int64"]}
    assert drift["unconverted_files"] == 1 and drift["file_types"] == {"int64": 1}
    assert "may not convert exactly" in drift["effect"]
    mi.drop()


def test_drift_matrix_spark_ci(spark, drift_tables):
    _check_drift(spark, drift_tables, DRIFT_CI)


@pytest.mark.slow
def test_drift_matrix_spark_all(spark, drift_tables):
    _check_drift(spark, drift_tables, sorted(DRIFT_CASES))
