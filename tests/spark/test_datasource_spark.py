"""The ``metaindex`` Python data source through classic PySpark and local Spark Connect.

One 60-file table (hive-partitioned, every common column type) indexed with the core API.
Results must equal ``spark.read.parquet`` (schema, every row, every filtered query), and a
``where`` scan must plan one partition per kept file only (``maxPartitionBytes=1``). Also:
reuse of one DataFrame / view under different filters stays correct (Spark 4.0 - 4.3 share a
Python source's planned partitions across scans, which is why pushed filters do not prune
there), a missing, corrupt or undecryptable index reads every file, a user schema, and scan
stats from the Python worker logs. Connect runs in a subprocess (it cannot share this process
with the classic session) and is skipped when it cannot start.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.api import StoreEncryption
from metaindex.crypto.kms_spec import kms_factory
from metaindex.engine.executors import SerialExecutor
from metaindex.spark.datasource import (
    MetaIndexDataSource,
    pushdown_pruning_safe,
    read,
    register,
    scan_stats,
)

pytestmark = pytest.mark.spark

N_FILES = 60
ROWS = 20
REGIONS = ["eu", "us", "apac", "__HIVE_DEFAULT_PARTITION__"]
UTC = datetime.timezone.utc
WHERE = [
    "id < 500",
    "f64 > 50.5",
    "d >= DATE '2024-02-20'",
    "ts < TIMESTAMP '2024-01-01 05:00:00'",
    "region IS NULL",
    "isnan(f64) OR id = 1234",
]
CONNECT_WHERE = [
    "s = 's07-1'",
    "region = 'eu' AND day = 2",
    "NOT (ntz >= TIMESTAMP_NTZ '2024-01-03 00:00:00')",
]


def _file(k: int) -> pa.Table:
    j = np.arange(ROWS)
    ts0 = datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=k)
    f64 = k + j / 20
    if k % 9 == 0:
        f64 = f64.copy()
        f64[3] = math.nan
    f32 = (k + j / 8).astype(np.float32)
    if k % 4 == 0:
        f32[0] = -0.0
    return pa.table(
        {
            "id": pa.array(k * 100 + j, pa.int64()),
            "i8": pa.array((k + j) % 200 - 100, pa.int8()),
            "i16": pa.array(k * 300 - j, pa.int16()),
            "i32": pa.array(k * 70000 + j, pa.int32()),
            "u8": pa.array((k + j) % 256, pa.uint8()),
            "u32": pa.array(k * 2**26 + j, pa.uint32()),
            "u64": pa.array([k * 2**58 + int(x) for x in j], pa.uint64()),
            "f32": pa.array(f32, pa.float32()),
            "f64": pa.array(f64, pa.float64()),
            "dec": pa.array(
                [decimal.Decimal(f"{k / 4 + x / 1000:.3f}") for x in j], pa.decimal128(12, 3)
            ),
            "s": pa.array([None if x % 7 == 0 else f"s{k:02d}-{x % 3}" for x in j], pa.string()),
            "b": pa.array([bytes([k, x]) for x in j], pa.binary()),
            "flag": pa.array((j + k) % 3 == 0, pa.bool_()),
            "d": pa.array(
                [datetime.date(2024, 1, 1) + datetime.timedelta(days=k)] * ROWS, pa.date32()
            ),
            "ts": pa.array(
                [ts0 + datetime.timedelta(minutes=int(x)) for x in j], pa.timestamp("us", tz="UTC")
            ),
            "ntz": pa.array(
                [ts0.replace(tzinfo=None) + datetime.timedelta(minutes=int(x)) for x in j],
                pa.timestamp("us"),
            ),
            "arr": pa.array([[int(x), k] if x % 5 else None for x in j], pa.list_(pa.int32())),
            "st": pa.array(
                [{"a": int(x), "b": f"b{k}"} for x in j],
                pa.struct([("a", pa.int32()), ("b", pa.string())]),
            ),
            "m": pa.array([[("k", int(x))] for x in j], pa.map_(pa.string(), pa.int32())),
        }
    )


def _write_table(root: str, n: int) -> None:
    for k in range(n):
        directory = os.path.join(root, f"region={REGIONS[k % 4]}", f"day={k % 5}")
        os.makedirs(directory, exist_ok=True)
        pq.write_table(_file(k), os.path.join(directory, f"part-{k:03d}.parquet"))


def _index(root: str, store=None, encryption=None) -> MetaIndex:
    mi = MetaIndex(root, store=store, encryption=encryption)
    builder = mi.index_builder()
    for column in ("id", "f64", "s", "d", "ts", "ntz", "dec"):
        builder.add_min_max_index(column)
    builder.build(executor=SerialExecutor())
    return mi


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ds") / "events")
    _write_table(root, N_FILES)
    return root, _index(root)


REGISTERED = {}


@pytest.fixture(scope="module")
def session(spark):
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    REGISTERED["class"] = register(spark)
    return spark


def _norm(value):
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def rows(df) -> list:
    """Every row as a NaN-comparable dict, ordered by id."""
    return [_norm(r.asDict(recursive=True)) for r in df.orderBy("id").collect()]


def parquet_rows(session, root, where=None) -> list:
    """``rows`` of ``spark.read.parquet`` without Parquet filter pushdown: parquet-java drops
    row groups by min/max statistics that leave NaN out (pyarrow's), losing the NaN rows that
    ``f64 > 50.5`` selects under Spark's semantics (NaN is above every number)."""
    key = "spark.sql.parquet.filterPushdown"
    before = session.conf.get(key)
    session.conf.set(key, "false")
    try:
        df = session.read.parquet(root)
        return rows(df.where(where) if where else df)
    finally:
        session.conf.set(key, before)


def test_schema_matches_spark_parquet(session, table):
    root, _ = table
    ours = session.read.format("metaindex").load(root).schema
    theirs = session.read.parquet(root).schema
    assert ours == theirs, f"schema differs from Spark's Parquet reader:\n{ours}\n{theirs}"


def test_every_row_equals_spark_parquet(session, table):
    root, _ = table
    df = session.read.format("metaindex").load(root)
    assert rows(df) == parquet_rows(session, root), "a plain read must equal spark.read.parquet"
    assert df.rdd.getNumPartitions() < N_FILES, "small files are packed into few partitions"


@pytest.mark.parametrize("where", WHERE)
def test_where_prunes_and_equals_spark_parquet(session, table, where):
    root, mi = table
    q = read(session, root, where, maxPartitionBytes=1)
    expected = mi.prune(where).stats.kept_files
    assert expected < N_FILES, f"{where!r} should skip files on this table"
    assert q.rdd.getNumPartitions() == max(expected, 1), (
        f"{where!r}: one partition per kept file ({expected} of {N_FILES})"
    )
    assert rows(q) == parquet_rows(session, root, where), (
        f"{where!r}: rows differ from spark.read.parquet"
    )


def test_reused_dataframe_stays_correct_under_pushed_filters(session, table):
    """The Spark 4.1 - 4.3 plan sharing (see the module docstring of the data source)."""
    root, _ = table
    df = session.read.format("metaindex").option("maxPartitionBytes", "1").load(root)
    assert df.where("id < 500").count() == 5 * ROWS, "files 0-4 hold the ids below 500"
    assert df.count() == N_FILES * ROWS, "an unfiltered query after a filtered one reads all"
    union = df.where("id < 500").union(df.where("id >= 5500"))
    assert union.count() == 10 * ROWS, "two scans of one DataFrame under different filters"
    if not REGISTERED["class"].pushdown_pruning:
        assert df.where("id < 500").rdd.getNumPartitions() == N_FILES, (
            "pushed filters must not prune where Spark shares plans across scans"
        )


def test_pushed_filter_pruning_is_off_where_spark_shares_plans(session, table):
    """Forcing pushdown pruning on shows both that it prunes and why register() leaves it off
    on Spark 4.0 - 4.3: a reused DataFrame then serves a later query from the pruned plan."""
    root, _ = table
    forced = type(
        "ForcedPushdownSource",
        (MetaIndexDataSource,),
        {
            "pushdown_pruning": True,
            "__module__": MetaIndexDataSource.__module__,
            "name": classmethod(lambda cls: "metaindex_forced_pushdown"),
        },
    )
    session.dataSource.register(forced)
    df = (
        session.read.format("metaindex_forced_pushdown").option("maxPartitionBytes", "1").load(root)
    )
    q = df.where("id < 500")
    assert q.rdd.getNumPartitions() == 5, "pushed id < 500 keeps files 0-4"
    assert q.count() == 5 * ROWS
    safe = pushdown_pruning_safe(session)
    if session.version.startswith(("4.1.", "4.2.", "4.3.")):
        assert not safe, "Spark 4.1 - 4.3 keep planned partitions on the relation"
    assert (df.count() == N_FILES * ROWS) == safe, (
        "the probe must predict whether a reused DataFrame sees the whole table"
    )


def test_sql_view_with_where_option(session, table):
    root, mi = table
    where = "region = 'us' AND id > 3000"
    session.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ds_us USING metaindex OPTIONS "
        f"(path '{root}', where \"{where}\", maxPartitionBytes '1')"
    )
    session.sql(f"CREATE OR REPLACE TEMPORARY VIEW ds_all USING metaindex OPTIONS (path '{root}')")
    plain = session.read.parquet(root)
    got = rows(session.sql(f"SELECT * FROM ds_us WHERE {where}"))
    assert got == parquet_rows(session, root, where)
    assert session.table("ds_us").rdd.getNumPartitions() == mi.prune(where).stats.kept_files
    assert (
        session.sql("SELECT count(*) FROM ds_all WHERE day = 1").first()[0]
        == plain.where("day = 1").count()
    )
    assert session.sql("SELECT count(*) FROM ds_all").first()[0] == N_FILES * ROWS, (
        "the same view queried again without a filter reads everything"
    )


def test_view_made_from_read_returns_only_matching_rows(session, table):
    """The README's Connect example: a view over ``read(...)`` filters rows, a view with only
    the ``where`` option holds every row of the kept files (a superset)."""
    root, mi = table
    where = "s = 's07-1'"
    read(session, root, where).createOrReplaceTempView("ds_rare")
    assert rows(session.table("ds_rare")) == parquet_rows(session, root, where)
    session.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW ds_rare_files USING metaindex OPTIONS "
        f"(path '{root}', where \"{where}\")"
    )
    assert session.table("ds_rare_files").count() == mi.prune(where).stats.kept_files * ROWS


@pytest.mark.parametrize(
    "where",
    [
        "cast(id AS STRING) = '1234'",
        "upper(s) = 'S07-1'",
        "id < 500 AND coalesce(s, 'x') = 's03-1'",
    ],
)
def test_where_the_pruner_cannot_use_reads_what_it_must(session, table, where):
    root, mi = table
    q = read(session, root, where, maxPartitionBytes=1)
    assert rows(q) == parquet_rows(session, root, where), f"{where!r}: rows as Spark reads"
    kept = mi.prune(where).stats.kept_files
    assert q.rdd.getNumPartitions() == kept, f"{where!r}: {kept} files read"
    last = [x for x in scan_stats(session) if x.get("where") == where][-1]
    assert "unknown function" in last["reason"], last
    assert [c["used"] for c in last["conjuncts"]][-1] is False


def test_where_binds_timestamps_in_the_session_time_zone(session, table):
    root, _ = table
    where = "ts = TIMESTAMP '2024-01-01 00:00:00'"  # 08:00 UTC in Los Angeles: file 8
    before = session.conf.get("spark.sql.session.timeZone")
    session.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        register(session)
        on = rows(read(session, root, where, maxPartitionBytes=1))
        off = parquet_rows(session, root, where)
        assert len(off) == 1 and on == off, "the point lookup finds its row"
    finally:
        session.conf.set("spark.sql.session.timeZone", before)
        REGISTERED["class"] = register(session)


def test_user_schema_subset_and_order(session, table):
    root, _ = table
    df = session.read.format("metaindex").schema("day int, id bigint, s string").load(root)
    expected = session.read.parquet(root).select("day", "id", "s")
    assert rows(df) == rows(expected), "columns are matched by name, partition columns too"
    assert df.columns == ["day", "id", "s"]


def test_scan_stats_from_worker_logs(session, table):
    root, mi = table
    where = "id < 500"
    read(session, root, where, maxPartitionBytes=1).count()
    stats = [s for s in scan_stats(session) if s.get("where") == where]
    assert stats, "each planned scan logs its stats"
    last = stats[-1]
    expected = mi.prune(where).stats
    assert (last["files_total"], last["files_skipped"], last["partitions"]) == (
        N_FILES,
        expected.skipped_files,
        expected.kept_files,
    )
    assert last["version"] == expected.version and last["reason"] is None
    assert last["skipped_by_index"].get("minmax(id)") == expected.skipped_files


def test_int96_timestamps_read_as_spark_does(session, tmp_path):
    root = str(tmp_path / "legacy")
    os.makedirs(root)
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "legacy": pa.array([datetime.datetime(2024, 1, 1, 5), None], pa.timestamp("us")),
        }
    )
    pq.write_table(table, os.path.join(root, "a.parquet"), use_deprecated_int96_timestamps=True)
    ours = session.read.format("metaindex").load(root)
    theirs = session.read.parquet(root)
    assert ours.schema == theirs.schema, "INT96 is a timestamp with time zone, as Spark reads it"
    assert rows(ours) == rows(theirs)


def test_arrow_to_spark_types():
    from pyspark.sql import types as T

    from metaindex.errors import UnsupportedFeatureError
    from metaindex.spark.datasource import _spark_fields

    def _spark_type(arrow, name):  # the data source's column types: the store's one map
        return _spark_fields([pa.field(name, arrow)])[0].dataType

    cases = [
        (pa.uint8(), T.ShortType()),
        (pa.uint16(), T.IntegerType()),
        (pa.uint32(), T.LongType()),
        (pa.uint64(), T.DecimalType(20, 0)),
        (pa.decimal128(38, 10), T.DecimalType(38, 10)),
        (pa.dictionary(pa.int32(), pa.string()), T.StringType()),
        (pa.large_string(), T.StringType()),
        (pa.binary(16), T.BinaryType()),
        (pa.timestamp("ns"), T.TimestampNTZType()),
        (pa.timestamp("ms", "UTC"), T.TimestampType()),
        (pa.date64(), T.DateType()),
        (pa.large_list(pa.int64()), T.ArrayType(T.LongType(), True)),
        (pa.map_(pa.int32(), pa.float64()), T.MapType(T.IntegerType(), T.DoubleType(), True)),
    ]
    for arrow, spark_type in cases:
        assert _spark_type(arrow, "c") == spark_type, f"{arrow} reads as {spark_type}"
    assert _spark_type(pa.timestamp("ns", "UTC"), "c") == T.TimestampType(), (
        "INT96, typed with a zone by engine.schema.file_schema"
    )
    for unsupported in (pa.time64("us"), pa.duration("s"), pa.decimal256(50, 2)):
        with pytest.raises(UnsupportedFeatureError, match="column 'c'"):
            _spark_type(unsupported, "c")


# ------------------------------------------------------------------------------ bad index states


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    base = tmp_path_factory.mktemp("small")
    roots = {}
    for name in ("unindexed", "corrupt", "encrypted"):
        roots[name] = str(base / name / "t")
        _write_table(roots[name], 8)
    _index(roots["corrupt"])
    store = str(base / "corrupt" / "_metaindex")
    parts = [
        os.path.join(d, f) for d, _, fs in os.walk(store) for f in fs if f.endswith(".parquet")
    ]
    assert parts, "the index wrote metadata parts"
    for path in parts:  # truncated: the footer is gone
        os.truncate(path, os.path.getsize(path) - 12)
    keys = str(base / "keys.json")
    with open(keys, "w") as f:
        json.dump({"footer": base64.b64encode(b"0123456789abcdef").decode()}, f)
    _index(
        roots["encrypted"], encryption=StoreEncryption(kms_factory(f"inmemory:{keys}"), "footer")
    )
    return roots, keys


def _last_stats(session, root):
    uri = MetaIndex(root).table_uri
    found = [s for s in scan_stats(session) if s["table"] == uri]
    assert found, f"a scan of {uri} was logged"
    return found[-1]


@pytest.mark.parametrize("name", ["unindexed", "corrupt", "encrypted"])
def test_bad_index_reads_every_file(session, small, name):
    roots, _ = small
    root = roots[name]
    where = "id < 150"
    q = read(session, root, where, maxPartitionBytes=1)
    assert rows(q) == parquet_rows(session, root, where), "results stay correct"
    assert q.rdd.getNumPartitions() == 8, f"{name}: every file is read"
    reason = _last_stats(session, root)["reason"]
    if name == "unindexed":
        assert reason == "table not indexed"
    else:
        assert reason.startswith("index unusable"), f"{name}: the reason is logged: {reason}"


def test_encrypted_index_with_kms_option_prunes(session, small):
    roots, keys = small
    root = roots["encrypted"]
    q = read(
        session,
        root,
        "id < 150",
        maxPartitionBytes=1,
        **{"metaindex.encryption.kms": f"inmemory:{keys}"},
    )
    assert q.rdd.getNumPartitions() == 2, "files 0 and 1 hold ids below 150"
    assert rows(q) == parquet_rows(session, root, "id < 150")


# ------------------------------------------------------------------------------ Spark Connect


CONNECT_SCRIPT = textwrap.dedent("""
    import json, math, os, socket, sys
    from pyspark.sql import SparkSession

    root, where_list = sys.argv[1], json.loads(sys.argv[2])
    total, below_500 = int(sys.argv[3]), int(sys.argv[4])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        SparkSession.builder.master("local[2]") \\
            .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin") \\
            .config("spark.connect.grpc.binding.port", str(port)) \\
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2") \\
            .config("spark.driver.host", "127.0.0.1") \\
            .config("spark.driver.bindAddress", "127.0.0.1") \\
            .config("spark.sql.session.timeZone", "UTC").getOrCreate() \\
            .sparkContext.setLogLevel("ERROR")
        from pyspark.sql.connect.session import SparkSession as RemoteSession
        spark = RemoteSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    except Exception as exc:
        print(json.dumps({"skip": f"Spark Connect did not start: {exc!r}"[:500]}))
        sys.exit(0)

    from metaindex.spark.datasource import read, scan_stats

    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v

    def rows(df):
        return [norm(r.asDict(recursive=True)) for r in df.orderBy("id").collect()]

    out = {"type": type(spark).__module__, "failures": [], "partitions": {}}
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")  # see parquet_rows
    from metaindex.spark import MetaIndex, enable, is_enabled
    enable(spark)  # under Connect: registers the data source (no JVM hook)
    if not is_enabled(spark):
        out["failures"].append("enable() under Connect")
    mi = MetaIndex(spark, root)  # the PySpark API works on a Connect session too
    if not mi.is_indexed() or mi.describe().to_spark().count() < 1:
        out["failures"].append("MetaIndex(spark, root) under Connect")
    plain = spark.read.parquet(root)
    df = spark.read.format("metaindex").load(root)
    if df.schema != plain.schema:
        out["failures"].append(f"schema {df.schema} != {plain.schema}")
    if df.count() != plain.count():
        out["failures"].append("full read differs")
    for where in where_list:
        if rows(read(spark, root, where, maxPartitionBytes=1)) != rows(plain.where(where)):
            out["failures"].append(f"rows differ for {where}")
    for s in scan_stats(spark):
        if s.get("where"):
            out["partitions"][s["where"]] = s["partitions"]
    if df.where("id < 500").count() != below_500 or df.count() != total:
        out["failures"].append("reused DataFrame")
    spark.sql(f"CREATE TEMPORARY VIEW v USING metaindex OPTIONS (path '{root}', "
              f"where 'day = 3')")
    if spark.sql("SELECT count(*) FROM v WHERE day = 3").first()[0] != \\
            plain.where("day = 3").count():
        out["failures"].append("view")
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_spark_connect(table):
    root, mi = table
    where_list = CONNECT_WHERE
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CONNECT_SCRIPT,
            root,
            json.dumps(where_list),
            str(N_FILES * ROWS),
            str(5 * ROWS),
        ],
        capture_output=True,
        text=True,
        timeout=420,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, (
        f"the Connect run printed no result (rc {proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    out = json.loads(lines[-1])
    if "skip" in out:
        pytest.skip(out["skip"])
    assert out["type"].startswith("pyspark.sql.connect"), "the queries ran through Connect"
    assert out["failures"] == [], f"Connect results differ from spark.read.parquet: {out}"
    for where in where_list:
        expected = mi.prune(where).stats.kept_files
        assert out["partitions"].get(where) == expected < N_FILES, (
            f"{where!r} under Connect plans only the {expected} kept files: {out['partitions']}"
        )
