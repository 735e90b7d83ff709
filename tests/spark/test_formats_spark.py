"""CSV, JSON (line-delimited and multiLine), ORC and Parquet tables through Spark (issue 30).

Each table is written by Spark from the same hostile rows (nulls, empty strings, NaN and
infinities, the ``nullValue`` marker as a string value, timestamps written as text in the
DST gap and the ambiguous hour of America/New_York, a header-only CSV file), clustered by
``id`` into a few files, and indexed with ``MetaIndex(spark, path, format=..., options=...)``
(min/max, value list and bloom filter). Seeded random predicates then run over the files with
skipping on; the expected rows come from the same values held in memory (no files, so no
skipping), and must be equal as multisets. Spark's own "number of files read" must fall where
the index says (total minus ``last_query_stats().files_skipped``), and the suite must skip.
A scan reading the table with other options, another time zone or another format reads every
file and says why; refresh, partitioned tables, describe and the core's refusal are checked too.
"""

from __future__ import annotations

import collections
import math
import os
import random
import zlib

import pytest

from metaindex.errors import MetaIndexError, UnsupportedFeatureError

pytestmark = pytest.mark.spark

FILES = 4
ROWS = 12
TZ = "America/New_York"
TEXT_SCHEMA = "id BIGINT, x DOUBLE, s STRING, ts TIMESTAMP, d DATE"
TIMES = [
    "2024-03-10 01:59:59",
    "2024-03-10 02:30:00",
    "2024-03-10 03:00:00",
    "2024-11-03 01:30:00",
    "2024-11-03 00:59:59",
    "2024-11-03 02:00:00",
    None,
    "",
]
STRINGS = ["", "NA", "a", "b", "Zürich", None, "a,b", "x"]
FLOATS = [0.0, -0.0, 1.5, float("nan"), float("inf"), None, -2.25, 1e300]


def _rows() -> list:
    """(id, x, s, ts text, d text): ids clustered by file, hostile values cycled."""
    out = []
    for i in range(FILES * ROWS):
        out.append(
            (
                i,
                FLOATS[i % len(FLOATS)] if i % 11 else None,
                STRINGS[(i // 3) % len(STRINGS)],
                TIMES[i % len(TIMES)],
                None if i % 7 == 0 else f"2024-0{1 + i // ROWS}-1{i % 10}",
            )
        )
    return out


# format name -> (reader options the index and the scans use, how the files are written)
CASES = {
    "csv": (
        {
            "header": "true",
            "nullValue": "NA",
            "timeZone": TZ,
            "timestampFormat": "yyyy-MM-dd HH:mm:ss",
        },
        "text",
    ),
    "json": ({"timeZone": TZ, "timestampFormat": "yyyy-MM-dd HH:mm:ss"}, "text"),
    "json-multiline": (
        {"multiLine": "true", "timeZone": TZ, "timestampFormat": "yyyy-MM-dd HH:mm:ss"},
        "text",
    ),
    "orc": ({}, "typed"),
    "parquet": ({}, "typed"),
}


def _write(spark, fmt: str, root: str, how: str) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame(_rows(), "id BIGINT, x DOUBLE, s STRING, ts STRING, d STRING")
    df = df.repartitionByRange(FILES, "id").sortWithinPartitions("id")
    name = fmt.split("-")[0]
    if how == "typed":
        df = df.select(
            "id",
            "x",
            "s",
            F.expr("try_cast(ts AS TIMESTAMP)").alias("ts"),
            F.expr("try_cast(d AS DATE)").alias("d"),
        )
        df.write.format(name).save(root)
        return
    if fmt == "csv":
        df.write.option("header", "true").option("nullValue", "NA").csv(root)
        with open(os.path.join(root, "part-99999-header-only.csv"), "w") as f:
            f.write("id,x,s,ts,d\n")  # a file of no rows
    elif fmt == "json":
        df.write.json(root)
    else:  # one pretty-printed JSON array per file: multiLine
        import json

        for k in range(FILES):
            chunk = [
                dict(zip(("id", "x", "s", "ts", "d"), r, strict=True))
                for r in _rows()
                if r[0] // ROWS == k
            ]
            text = (
                json.dumps(chunk, indent=2)
                .replace("NaN", '"NaN"')
                .replace("-Infinity", '"-Infinity"')
                .replace("Infinity", '"Infinity"')
            )
            os.makedirs(root, exist_ok=True)
            with open(os.path.join(root, f"part-{k}.json"), "w") as f:
                f.write(text)


def _reader(spark, fmt: str, options: dict):
    reader = spark.read.format(fmt.split("-")[0]).options(**options)
    if CASES[fmt][1] == "text":
        reader = reader.schema(TEXT_SCHEMA)
    return reader


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """{format: (root, options, MetaIndex)} of indexed tables, skipping enabled."""
    from metaindex.spark import MetaIndex, enable

    base = tmp_path_factory.mktemp("formats")
    out = {}
    for fmt, (options, how) in CASES.items():
        root = str(base / fmt)
        _write(spark, fmt, root, how)
        given = dict(options, schema=TEXT_SCHEMA) if how == "text" else options
        mi = MetaIndex(spark, root, format=fmt.split("-")[0], options=given)
        mi.index_builder().add_min_max_index("id").add_min_max_index("x").add_min_max_index(
            "ts"
        ).add_value_list_index("s").add_bloom_filter_index("id").add_value_list_index("d").build()
        out[fmt] = (root, options, mi)
    enable(spark)
    return out


FLOAT_LITERALS = ["0.0", "-0.0", "1.5", "double('NaN')", "double('inf')"]


def _predicates(seed: int, n: int) -> list:
    rng = random.Random(seed)
    ids = list(range(-3, FILES * ROWS + 3))
    atoms = [
        lambda: f"id {rng.choice(['<', '<=', '>', '>=', '=', '!='])} {rng.choice(ids)}",
        lambda: f"id IN ({', '.join(str(rng.choice(ids)) for _ in range(3))})",
        lambda: f"NOT (id = {rng.choice(ids)})",
        lambda: f"x {rng.choice(['<', '>', '=', '>='])} {rng.choice(FLOAT_LITERALS)}",
        lambda: "isnan(x)",
        lambda: f"x IS {rng.choice(['', 'NOT '])}NULL",
        lambda: f"s = '{rng.choice(['', 'NA', 'a', 'Zürich', 'a,b', 'q'])}'",
        lambda: f"s IN ('{rng.choice(STRINGS[:5])}', '{rng.choice(['x', 'q'])}')",
        lambda: f"s IS {rng.choice(['', 'NOT '])}NULL",
        lambda: (
            f"ts {rng.choice(['<', '>', '='])} TIMESTAMP '{rng.choice([t for t in TIMES if t])}'"
        ),
        lambda: f"ts IS {rng.choice(['', 'NOT '])}NULL",
        lambda: f"d = DATE '2024-0{rng.randint(1, FILES)}-1{rng.randint(0, 9)}'",
    ]
    out = []
    for _ in range(n):
        a, b = rng.choice(atoms)(), rng.choice(atoms)()
        out.append(rng.choice([a, f"{a} AND {b}", f"{a} OR {b}", f"id > 30 AND {a}"]))
    return out


def _norm(v):
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _bag(rows) -> collections.Counter:
    return collections.Counter(tuple(_norm(v) for v in r) for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(CASES))
def test_differential(spark, tables, fmt):
    """Skipping on vs the same values in memory: equal rows for every predicate; Spark reads
    exactly the files the index does not skip; and the index does skip."""
    from metaindex.spark import last_query_stats
    from metaindex.spark.metrics import files_read

    root, options, _ = tables[fmt]
    scan = _reader(spark, fmt, options).load(root)
    memory = spark.createDataFrame(scan.collect(), scan.schema)  # no files: no skipping
    assert memory.count() == FILES * ROWS
    skipped_total = 0
    for text in _predicates(zlib.crc32(fmt.encode()) % 1000, 20):  # the same every run
        df = _reader(spark, fmt, options).load(root).where(text)
        got = df.collect()
        stats = last_query_stats(spark)
        want = memory.where(text).collect()
        assert _bag(got) == _bag(want), f"{fmt}: {text!r} returned other rows with skipping"
        if stats is None:  # Spark proved the predicate false (``id > 30 AND id = 1``): no scan
            assert not want and files_read(df) == 0, f"{fmt}: {text!r}: no scan, yet rows"
            continue
        assert stats.reason is None, f"{fmt}: {text!r}: {stats}"
        assert files_read(df) == stats.files_total - stats.files_skipped, (
            f"{fmt}: {text!r}: Spark read {files_read(df)} files, the index kept "
            f"{stats.files_total - stats.files_skipped}"
        )
        skipped_total += stats.files_skipped
    assert skipped_total > 0, f"{fmt}: no predicate skipped a file"


def test_point_query_skips(spark, tables):
    """``id = 5`` lives in the first file: every other file is skipped, on every format."""
    from metaindex.spark import last_query_stats

    for fmt, (root, options, _) in tables.items():
        rows = _reader(spark, fmt, options).load(root).where("id = 5").collect()
        stats = last_query_stats(spark)
        assert [r.id for r in rows] == [5], fmt
        extra = 1 if fmt == "csv" else 0  # the header-only file holds no row: skipped too
        assert stats.files_skipped == FILES - 1 + extra, f"{fmt}: {stats}"


def test_other_options_read_every_file(spark, tables):
    """A scan with another nullValue, time zone, schema or format reads every file, and the
    stats say why."""
    from metaindex.spark import last_query_stats

    root, options, _ = tables["csv"]
    variants = [
        (dict(options, nullValue="x"), TEXT_SCHEMA, "options differ", "csv"),
        (dict(options, timeZone="UTC"), TEXT_SCHEMA, "time zone", "csv"),
        (options, "id BIGINT, x DOUBLE, s STRING, ts STRING, d DATE", "schema", "csv"),
    ]
    for opts, schema, why, name in variants:
        df = spark.read.format(name).options(**opts).schema(schema).load(root).where("id = 5")
        assert [r.id for r in df.collect()] == [5]
        stats = last_query_stats(spark)
        assert stats.files_skipped == 0 and why in (stats.reason or ""), stats
    from metaindex.spark.explaining import explain

    df = spark.read.options(**dict(options, sep=";")).schema(TEXT_SCHEMA).csv(root).where("id = 5")
    [why] = explain(spark, df)
    assert why.reason and "sep" in why.reason and why.skipped_files == 0, why
    [used] = explain(spark, _reader(spark, "csv", options).load(root).where("id = 5"))
    assert used.reason is None and used.skipped_files == FILES, used  # 3 + header-only
    jroot, joptions, _ = tables["json"]
    df = (
        spark.read.options(**dict(joptions, multiLine="true"))
        .schema(TEXT_SCHEMA)
        .json(jroot)
        .where("id = 5")
    )
    df.collect()
    stats = last_query_stats(spark)
    assert stats.files_skipped == 0 and "multiline" in (stats.reason or ""), stats


def test_describe_shows_format_and_reopen_checks_it(spark, tables):
    from metaindex.spark import MetaIndex

    root, options, mi = tables["csv"]
    formats = mi.describe().to_dict()["formats"]
    assert formats["data_format"] == "csv"
    assert formats["format_options"]["nullValue"] == "NA"
    assert "schema" in formats["format_options"]
    again = MetaIndex(spark, root, format="csv", options=dict(options, schema=TEXT_SCHEMA))
    assert again.is_indexed()
    with pytest.raises(MetaIndexError, match="nullvalue"):
        MetaIndex(spark, root, format="csv", options=dict(options, nullValue="-"))
    with pytest.raises(MetaIndexError, match="json"):
        MetaIndex(spark, root, format="json")


def test_refresh_and_partitioned_csv(spark, tmp_path):
    """A partitioned CSV table: build, a query on a data and a partition column skips, a new
    file is indexed by refresh and found by the next query."""
    from metaindex.spark import MetaIndex, enable, last_query_stats

    enable(spark)
    root = str(tmp_path / "events")
    for day in ("2024-01-01", "2024-01-02"):
        os.makedirs(f"{root}/date={day}")
        for k in range(2):
            with open(f"{root}/date={day}/f{k}.csv", "w") as f:
                f.write("id,name\n" + "".join(f"{k * 10 + j},n{k}\n" for j in range(5)))
    options = {"header": "true", "schema": "id INT, name STRING"}
    mi = MetaIndex(spark, root, format="csv", options=options)
    mi.index_builder().add_min_max_index("id").build()
    reader = spark.read.options(header="true").schema("id INT, name STRING")
    rows = reader.csv(root).where("id >= 10 AND date = '2024-01-02'").collect()
    assert sorted(r.id for r in rows) == list(range(10, 15))
    assert last_query_stats(spark).files_skipped == 1  # f0 of 2024-01-02 (the other day: Spark)
    with open(f"{root}/date=2024-01-02/f2.csv", "w") as f:
        f.write("id,name\n100,new\n")
    assert mi.refresh().entries_added == 1
    rows = reader.csv(root).where("id = 100").collect()
    assert [r.name for r in rows] == ["new"]
    assert last_query_stats(spark).files_skipped == 4


def test_nested_json_field(spark, tmp_path):
    """A min/max index on a nested JSON field (``u.id``) skips like one on a nested Parquet
    field."""
    from metaindex.spark import MetaIndex, enable, last_query_stats

    enable(spark)
    root = tmp_path / "nested"
    root.mkdir()
    for k in range(3):
        (root / f"f{k}.json").write_text(
            "".join(f'{{"u": {{"id": {k * 10 + j}, "tag": "t{k}"}}, "v": {j}}}\n' for j in range(5))
        )
    mi = MetaIndex(spark, str(root), format="json", options={"primitivesAsString": "false"})
    mi.index_builder().add_min_max_index("u.id").build()
    rows = (
        spark.read.option("primitivesAsString", "false")
        .json(str(root))
        .where("u.id = 12")
        .collect()
    )
    assert [r.v for r in rows] == [2]
    assert last_query_stats(spark).files_skipped == 2, last_query_stats(spark)


def test_core_build_of_csv_is_refused(tmp_path):
    """Without Spark, a CSV index cannot promise Spark's values: a typed error says so."""
    from metaindex import MetaIndex

    root = tmp_path / "t"
    root.mkdir()
    (root / "a.csv").write_text("id\n1\n")
    mi = MetaIndex(str(root), format="csv", format_options={"header": "true"})
    with pytest.raises(UnsupportedFeatureError, match="built with Spark"):
        mi.index_builder().add_min_max_index("id").build()
