"""Differential pruning test: kept files always include every file with a matching row.

150 random files (tests/reference/prune.py: every supported type family, NaN/±inf/-0.0,
empty/non-ASCII/emoji strings, decimals of precision 25 with negatives, all-null files, nulls
everywhere, a nested struct field) x 1,500 random bound predicates (with NOT pushed down by
``rewrite_not``) + 600 more written as Spark SQL and sent through ``parse_sql`` and ``bind``.
A drifted copy of the files (issue 27: each column of about half the files stored in another
type that holds its values exactly, narrower or wider: int64 as int16 / int32 / uint64 /
decimal, double as float, decimal(25, 3) as decimal(p, s), timestamps in ms or ns, strings as
binary) is collected in those types and converted to the table's type as the engine does, bloom
filters hashed with scheme 2 from the file's own type.
The truth per file comes from DuckDB, itself cross-checked against a row-by-row Python
evaluator of Spark's semantics. Each index kind alone, min/max from footer statistics, and all
kinds together must keep every matching file; the skip rate against the ideal (files without a
matching row) is printed (``pytest -s``).
"""

from __future__ import annotations

import io
import random

import numpy as np
import pyarrow as pa
import pytest

import metaindex.expr as E
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex, evaluate
from metaindex.parquet import ParquetFile, write_table
from tests.reference import prune as ref

N_FILES = 150
N_PREDICATES = 1500
N_SQL_PREDICATES = 600
SEED = 20240607


def _metadata(ix, files, collect):
    t = ref.column_values(files[0], ix.column).type
    return pa.array([collect(ix, i) for i in range(len(files))], ix.metadata_type(t))


_DRIFTS = {
    "i32": [pa.int16(), pa.int64(), pa.uint32(), pa.float64(), pa.decimal128(12, 0)],
    "i64": [pa.int16(), pa.int32(), pa.uint64(), pa.decimal128(25, 2)],
    "f64": [pa.float32()],
    "f32": [pa.float64()],
    "dec": [pa.decimal128(38, 3), pa.decimal128(24, 2), pa.decimal128(30, 6)],
    "d": [pa.timestamp("us")],
    "ts": [pa.timestamp("ms", "UTC"), pa.timestamp("ns", "UTC")],
    "tsn": [pa.timestamp("ms"), pa.timestamp("ns")],
    "s": [pa.large_string()],
    "bin": [pa.large_binary(), pa.string()],
    "st.x": [pa.int8(), pa.int64()],
}


def _drifted(files, rng):
    """Per file, {column: its values in another type that holds them exactly} for about half
    the files (a type only where every value of the file converts exactly)."""
    out = []
    for table in files:
        found = {}
        if rng.random() < 0.5:
            for column, types in _DRIFTS.items():
                values = ref.column_values(table, column)
                t = rng.choice(types)
                try:
                    moved = values.cast(t)
                    if moved.cast(values.type).equals(values):
                        found[column] = moved
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    continue
        out.append(found)
    return out


def _converted(ix, files, collect):
    """The table's metadata column from metadata collected in each file's own type, converted
    exactly or not at all (``metaindex.drift.conform``, as a collection task does)."""
    from metaindex.drift import conform

    target = ix.metadata_type(ref.column_values(files[0], ix.column).type)
    entries = []
    for i in range(len(files)):
        own = collect(ix, i)
        entries.append(conform(pa.array([own], own.type), target)[0])
    return pa.concat_arrays(entries)


def _footer_statistics(files):
    """Per file: our writer's footer statistics of every column (about three row groups)."""
    out = []
    for table in files:
        buf = io.BytesIO()
        write_table(table, buf, row_group_size=max(1, table.num_rows // 3 + 1))
        pf = ParquetFile(buf.getvalue())
        out.append(
            {c: [pf.statistics(rg, c) for rg in range(pf.num_row_groups)] for c in ref.COLUMNS}
        )
    return out


@pytest.fixture(scope="module")
def world():
    rng = random.Random(SEED)
    files = ref.random_files(rng, N_FILES)
    values = [{c: ref.column_values(f, c) for c in ref.COLUMNS} for f in files]
    kinds = {
        "minmax": [MinMaxIndex(c) for c in ref.COLUMNS],
        "valuelist": [ValueListIndex(c, max_values=3) for c in ref.COLUMNS],
        "bloom": [BloomFilterIndex(c) for c in ref.COLUMNS if c != "flag"],
    }
    scan = lambda ix, i: ix.collect(values[i][ix.column])  # noqa: E731
    metadata = {ix.key: _metadata(ix, files, scan) for group in kinds.values() for ix in group}

    footers = _footer_statistics(files)
    used = []

    def from_statistics(ix, i):
        got = ix.collect_from_statistics(
            footers[i][ix.column], files[i].num_rows, values[i][ix.column].type
        )
        used.append(got is not None)
        return got if got is not None else scan(ix, i)

    stats_metadata = {ix.key: _metadata(ix, files, from_statistics) for ix in kinds["minmax"]}
    assert np.mean(used) > 0.7, f"footer statistics were usable for only {np.mean(used):.0%}"
    drifted = _drifted(files, rng)
    assert sum(d != {} for d in drifted) > N_FILES // 3, "about half the files drift"

    def from_drifted(ix, i):
        own = drifted[i].get(ix.column, values[i][ix.column])
        return ix.collect(own)

    every = [ix for group in kinds.values() for ix in group]
    drift_metadata = {ix.key: _converted(ix, files, from_drifted) for ix in every}
    configs = {name: (group, metadata) for name, group in kinds.items()}
    configs["minmax (footer stats)"] = (kinds["minmax"], stats_metadata)
    configs["all kinds, drifted files"] = (every, drift_metadata)
    configs["all kinds"] = ([ix for group in kinds.values() for ix in group], metadata)
    oracle = ref.DuckDBOracle(files)
    yield files, configs, oracle
    oracle.close()


def test_duckdb_agrees_with_spark_semantics(world):
    """The SQL rendering and DuckDB's NaN/-0.0/byte-order rules match Spark's, row by row."""
    files, _, oracle = world
    spark = ref.SparkOracle(files)
    rng = random.Random(SEED + 1)
    for _ in range(300):
        expr = ref.random_predicate(rng, E, allow_not=True)
        duck, expected = oracle.matches(expr), spark.matches(expr)
        bad = np.flatnonzero(duck != expected)
        assert not len(bad), (
            f"DuckDB and the Spark-semantics oracle disagree on files "
            f"{bad.tolist()} for {expr}: {ref.to_duckdb(expr)}"
        )


def _check(configs, original, expr, truth, skipped, how: str) -> None:
    for name, (indexes, meta) in configs.items():
        kept = evaluate(expr, indexes, meta, N_FILES, per_index=False).kept
        lost = np.flatnonzero(truth & ~kept)
        assert not len(lost), (
            f"{name} skipped files {lost.tolist()} that hold a matching row for {original} "
            f"({how}: {expr}); DuckDB: {ref.to_duckdb(original)}"
        )
        skipped[name] += int(N_FILES - np.count_nonzero(kept))


def _report(title: str, skipped: dict, ideal: int) -> None:
    print(f"\n{title} (ideal skips {ideal}):")
    for name, count in skipped.items():
        print(f"  {name:24s} {count:7d} skipped = {count / max(ideal, 1):6.1%} of ideal")
    assert skipped["all kinds"] >= max(v for k, v in skipped.items() if k != "all kinds"), (
        "combining indexes must skip at least as much as the best single kind"
    )


def test_kept_files_include_every_matching_file(world):
    _, configs, oracle = world
    rng = random.Random(SEED + 2)
    skipped, ideal = dict.fromkeys(configs, 0), 0
    for _ in range(N_PREDICATES):
        original = ref.random_predicate(rng, E, allow_not=True)
        truth = oracle.matches(original)
        ideal += int(N_FILES - np.count_nonzero(truth))
        _check(configs, original, E.rewrite_not(original), truth, skipped, "rewrite_not")
    _report(
        f"bound predicates: skip rate vs ideal, {N_PREDICATES} predicates x {N_FILES} files",
        skipped,
        ideal,
    )


def test_kept_files_include_every_matching_file_through_sql(world):
    """The same property with predicates parsed from Spark SQL and bound to the schema."""
    _, configs, oracle = world
    rng = random.Random(SEED + 3)
    skipped, ideal = dict.fromkeys(configs, 0), 0
    for _ in range(N_SQL_PREDICATES):
        original = ref.random_predicate(rng, E, allow_not=True)
        sql = ref.to_spark_sql(original)
        bound = E.bind(E.parse_sql(sql), ref.SCHEMA)
        truth = oracle.matches(original)
        ideal += int(N_FILES - np.count_nonzero(truth))
        _check(configs, original, bound, truth, skipped, f"parse_sql({sql!r}) bound to")
    _report(
        f"SQL predicates: skip rate vs ideal, {N_SQL_PREDICATES} predicates x {N_FILES} files",
        skipped,
        ideal,
    )
