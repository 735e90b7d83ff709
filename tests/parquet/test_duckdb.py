"""DuckDB as a peer: it probes our bloom filters, reads our files, and we read its files.

- ``parquet_bloom_probe`` on a file of ours answers exactly what our own filter answers for every
  probe (never "excluded" for a present value; excluded for nearly every absent one), for int64,
  int32, double and string columns.
- DuckDB reads every type family we write (plus TIME, FLOAT16, ms/ns timestamps, large and
  dictionary strings) with data pages v1 and v2, dictionary on and off, several codecs and
  encodings, and sees the source values; its statistics-based pruning on our files agrees with
  the same query over the in-memory source table.
- We read files DuckDB writes (every type it stores, every codec, data page v2, tiny row
  groups) and equal pyarrow's reading of them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table
from tests.interop_tables import (
    assert_same_tables,
    assert_same_values,
    family_table,
    write_cases,
)

duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (pip install duckdb)")


@pytest.fixture()
def con():
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    yield connection
    connection.close()


# ------------------------------------------------------------------------- bloom filters

GROUPS, PER_GROUP = 3, 2000
BLOOM_COLUMNS = {"id": "INT64", "i32": "INT32", "d": "DOUBLE", "s": "BYTE_ARRAY"}


def _bloom_table(rng) -> pa.Table:
    n = GROUPS * PER_GROUP
    ids = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "i32": rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32),
            "d": rng.standard_normal(n),
            "s": pa.array([f"user-{v:x}" for v in ids.tolist()]),
        }
    )


def _absent(rng, column: str, present: set, k: int) -> list:
    draw = {
        "id": lambda: rng.integers(-(2**63), 2**63 - 1, 2 * k, dtype=np.int64).tolist(),
        "i32": lambda: rng.integers(-(2**31), 2**31 - 1, 2 * k, dtype=np.int32).tolist(),
        "d": lambda: rng.standard_normal(2 * k).tolist(),
        "s": lambda: [f"user-{v:x}" for v in rng.integers(0, 2**62, 2 * k).tolist()],
    }[column]
    return [v for v in draw() if v not in present][:k]


def _probe(con, path: str, column: str, value) -> dict:
    rows = con.execute(
        "SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?)",
        [path, column, value],
    ).fetchall()
    return dict(rows)


def test_duckdb_probes_our_bloom_filters(con, tmp_path):
    rng = np.random.default_rng(4)
    table = _bloom_table(rng)
    path = str(tmp_path / "bloom.parquet")
    write_table(
        table,
        path,
        row_group_size=PER_GROUP,
        bloom_filter_options={c: {"ndv": PER_GROUP, "fpp": 0.01} for c in BLOOM_COLUMNS},
    )
    pf = ParquetFile(path)
    for column, ptype in BLOOM_COLUMNS.items():
        present_all = set(table.column(column).to_pylist())
        absent = _absent(rng, column, present_all, 100)
        excluded = 0
        for g in range(GROUPS):
            ours = pf.bloom_filter(g, column)
            group = table.column(column).slice(g * PER_GROUP, PER_GROUP).to_pylist()
            for value in group[::40]:
                assert _probe(con, path, column, value)[g] is False, (
                    f"{column}={value!r} is in row group {g}: DuckDB's probe must not exclude it"
                )
            for value in absent:
                duck = _probe(con, path, column, value)[g]
                mine = bool(ours.might_contain([value], physical_type=ptype)[0])
                assert duck is not mine, (
                    f"{column}={value!r}, row group {g}: DuckDB says excludes={duck}, our filter "
                    f"says might_contain={mine}: the bitsets or hashing disagree"
                )
                excluded += duck
        rate = excluded / (GROUPS * len(absent))
        assert rate >= 0.95, f"{column}: DuckDB excluded only {rate:.1%} of absent values at fpp 1%"


# ---------------------------------------------------------------- DuckDB reads our files

WRITE_CASES = write_cases(u64="DELTA_BINARY_PACKED")
WRITE_CASES["v1-brotli-lz4raw-pageindex"] = {
    "compression": {"str": "brotli", "i64": "lz4_raw"},
    "write_page_index": True,
    "write_page_checksum": True,
}


def _duckdb_source() -> pa.Table:
    """The type families plus the types DuckDB reads and Spark does not."""
    table = family_table()
    n = table.num_rows
    extra = {
        "time_us": pa.array(
            [(i * 3_600_000_123) % 86_400_000_000 for i in range(n)], pa.time64("us")
        ),
        "time_ms": pa.array([(i * 1_234_567) % 86_400_000 for i in range(n)], pa.time32("ms")),
        "f16": pa.array(np.array([0.5, -0.0, np.inf, np.nan, 65504.0] * (n // 5), np.float16)),
        "ts_ms_utc": pa.array([i * 86_400_123 for i in range(n)], pa.timestamp("ms", tz="UTC")),
        "ts_ns": pa.array([i * 1_000_000_007 for i in range(n)], pa.timestamp("ns")),
        "large_str": pa.array([f"L{i}" * (i % 4) for i in range(n)], pa.large_string()),
        "dict_str": pa.array([f"d{i % 6}" for i in range(n)]).dictionary_encode(),
        "list_list": pa.array(
            [[[i, None], []] if i % 3 else None for i in range(n)], pa.list_(pa.list_(pa.int16()))
        ),
    }
    for name, column in extra.items():
        table = table.append_column(name, column)
    return table


@pytest.fixture(scope="module")
def duckdb_source():
    return _duckdb_source()


@pytest.mark.parametrize("case", list(WRITE_CASES))
def test_duckdb_reads_our_file(con, tmp_path, duckdb_source, case):
    path = str(tmp_path / f"{case}.parquet")
    write_table(duckdb_source, path, row_group_size=50, data_page_size=512, **WRITE_CASES[case])
    got = con.read_parquet(path).to_arrow_table()
    assert_same_values(got, duckdb_source, f"DuckDB reading our {case} file")


PUSHDOWN_FILTERS = [
    "i64 = 0",
    "i32 > 100",
    "u32 > 2147483648",
    "u64 >= 9223372036854775808",
    "i8 < 0",
    "str = 'héllo wörld'",
    "str > 'x'",
    "dec18 < 0",
    "dec38 > 1",
    "date < DATE '1970-01-01'",
    "ts_utc >= TIMESTAMPTZ '2024-01-03 00:00:00+00'",
    "ts_ntz < TIMESTAMP '1960-07-01'",
    "f64 > 1.0",
    "f64 = 0.0",
    "f32 < 0",
    "bool",
    "fixed = '\\x00\\x00\\xFF\\x07\\x00'::BLOB",
    "id BETWEEN 100 AND 140",
]


def test_duckdb_pruning_on_our_statistics(con, tmp_path, duckdb_source):
    """Counts through DuckDB's Parquet scan (which prunes on our statistics) equal the same
    query over the in-memory source table."""
    table = duckdb_source.drop_columns(["f16"])  # DuckDB cannot import Arrow float16 arrays
    table = table.append_column("id", pa.array(range(table.num_rows), pa.int64()))
    path = str(tmp_path / "stats.parquet")
    write_table(table, path, row_group_size=20, write_page_index=True)
    con.register("source_table", table)
    for predicate in PUSHDOWN_FILTERS:
        want = con.execute(f"SELECT count(*) FROM source_table WHERE {predicate}").fetchone()[0]
        got = con.execute(
            f"SELECT count(*) FROM read_parquet('{path}') WHERE {predicate}"
        ).fetchone()[0]
        assert got == want, (
            f"{predicate}: {got} rows from our file, {want} from the source: "
            "DuckDB pruned on statistics that exclude a match"
        )


# --------------------------------------------------------------- we read DuckDB's files

DUCKDB_QUERY = """
SELECT
    i::TINYINT AS i8, i::SMALLINT AS i16, (i * 1000)::INTEGER AS i32,
    (i * 1000000000000)::BIGINT AS i64, (i + 128)::UTINYINT AS u8, (i + 128)::USMALLINT AS u16,
    (i + 4294967000)::UINTEGER AS u32, (i + 18446744073709551000)::UBIGINT AS u64,
    CASE WHEN i % 5 = 0 THEN NULL ELSE i::HUGEINT * 1000000000000000000000 END AS huge,
    (['nan', 'inf', '-inf', '-0.0', '1.5'])[1 + i % 5]::FLOAT AS f32,
    (['nan', 'inf', '-inf', '-0.0', '1e300'])[1 + i % 5]::DOUBLE AS f64,
    CASE WHEN i % 7 = 0 THEN NULL ELSE (['', 'héllo', '日本', 'x'])[1 + i % 4] || i END AS s,
    CASE WHEN i % 6 = 0 THEN NULL ELSE ('\\x00\\xFF' || i)::BLOB END AS b,
    (i * 1.25)::DECIMAL(4, 1) AS d4, (i * 12345.67)::DECIMAL(9, 2) AS d9,
    (i * 1234567890.1234)::DECIMAL(18, 4) AS d18,
    (i * 123456789012345678.9)::DECIMAL(38, 10) AS d38,
    DATE '1970-01-01' + (i * 1000)::INTEGER AS dt,
    TIMESTAMP '2024-01-01 01:02:03.456789' + to_hours(i) AS ts,
    TIMESTAMPTZ '2024-01-01 01:02:03.456789+00' + to_minutes(i) AS tstz,
    TIMESTAMP_MS '2024-01-01 01:02:03.456' + to_seconds(i) AS ts_ms,
    TIMESTAMP_NS '2024-01-01 01:02:03.456789123' + to_seconds(i) AS ts_ns,
    TIME '12:34:56.789' + to_seconds(i) AS tm,
    ('00000000-0000-0000-0000-' || lpad((i + 40)::VARCHAR, 12, '0'))::UUID AS u,
    CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS bo,
    {'a': i, 'b': 'x' || i, 'c': {'d': i / 4}} AS st,
    CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, 3] END AS li,
    ['a', NULL, ''] AS ls,
    MAP {'k': i, 'z': NULL} AS m,
    [{'x': i, 'y': NULL::VARCHAR}, NULL] AS lst,
    [[1, 2], [], NULL] AS ll,
    {'n': NULL} AS all_null,
    to_days(i + 40) AS iv
FROM range(-40, 40) t(i)
"""

DUCKDB_OPTIONS = {
    "default": "",
    "zstd-v2-small-groups": ", COMPRESSION zstd, PARQUET_VERSION V2, ROW_GROUP_SIZE 16",
    "gzip": ", COMPRESSION gzip",
    "lz4": ", COMPRESSION lz4",
    "brotli": ", COMPRESSION brotli",
    "uncompressed-no-dict": ", COMPRESSION uncompressed, DICTIONARY_SIZE_LIMIT 1",
}


def _duckdb_file(con, path: str, options: str, query: str = DUCKDB_QUERY) -> str:
    con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet{DUCKDB_OPTIONS[options]})")
    return path


@pytest.mark.parametrize("options", list(DUCKDB_OPTIONS))
def test_we_read_what_duckdb_writes(con, tmp_path, options):
    query = DUCKDB_QUERY
    if "V2" in DUCKDB_OPTIONS[options]:  # see test_duckdb_v2_uint32_delta_first_value
        query = f"SELECT * EXCLUDE (u32) FROM ({DUCKDB_QUERY})"
    path = _duckdb_file(con, str(tmp_path / f"{options}.parquet"), options, query)
    referee = pq.read_table(path)
    assert_same_tables(
        read_table(path), referee, f"our read of DuckDB's {options} file vs pyarrow's"
    )


def test_duckdb_v2_uint32_delta_first_value(con, tmp_path):
    """DuckDB's PARQUET_VERSION V2 writes a UINTEGER column as DELTA_BINARY_PACKED INT32 whose
    first value is the unsigned number (4294966960), outside INT32. pyarrow cannot read it
    (OSError); we wrap it to its 32-bit pattern as parquet-java does, and read DuckDB's values."""
    query = "SELECT (i + 4294967000)::UINTEGER AS u32 FROM range(-40, 40) t(i)"
    path = _duckdb_file(con, str(tmp_path / "u32.parquet"), "zstd-v2-small-groups", query)
    with pytest.raises(OSError):
        pq.read_table(path)
    expected = [v for (v,) in con.execute(query).fetchall()]
    assert read_table(path).column("u32").to_pylist() == expected
