"""Part pruning (issue 19) against an exhaustive per-file evaluation of the same snapshot.

A store of 1,000 files in 40 parts of uneven size (written through the store's own writer,
then a second commit that supersedes and removes files, so old parts hold dead rows), with a
min/max index on ``x`` (clustered by part, overlapping), a value list on ``c``, a bloom filter
on ``u``, a min/max on a DATE ``d`` with ancient values and every calendar record (LEGACY,
CORRECTED, SESSION, unknown), and a partition column ``p``. For random predicates, sessions and
candidate sets (indexed files, files changed since, new files, paths outside the table), the
Pruner, which rules parts out on their summaries and reads only the others, must decide every
file exactly as evaluating every file of ``Snapshot.metadata_table()`` does: a part skipped
wrongly loses a file the reference keeps.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex import MetaIndex
from metaindex.engine import calendar
from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import locate_table, parse_partition
from metaindex.engine.prune import SessionSettings, candidates
from metaindex.expr import bind, parse_sql
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex, evaluate, make_index
from metaindex.store import (
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_INT96_REBASE,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    IndexDef,
    MetadataStore,
)

PARTS = 40
INDEXES = (
    MinMaxIndex("x"),
    ValueListIndex("c", max_values=6),
    BloomFilterIndex("u"),
    MinMaxIndex("d"),
)
SCHEMA = pa.schema([("x", pa.int64()), ("c", pa.string()), ("u", pa.int64()), ("d", pa.date32())])
EPOCH = dt.date(1970, 1, 1)
MODES = ("LEGACY", "CORRECTED", "SESSION", None)


def _file_rows(rng, names: list, part: int) -> pa.Table:
    """One metadata row per file, collected by the index kinds from random column values."""
    rows = {
        OBJ_NAME: names,
        OBJ_SIZE: [],
        OBJ_MTIME: [],
        OBJ_ROWS: [],
        OBJ_DATETIME_REBASE: [],
        OBJ_INT96_REBASE: [],
        OBJ_ANCIENT_DATETIME: [],
        OBJ_ANCIENT_INT96: [],
    }
    meta: dict = {ix: [] for ix in INDEXES}
    for _ in names:
        n = int(rng.integers(1, 8))
        lo = part * 50 + int(rng.integers(-30, 60))  # clustered by part, overlapping
        x = rng.integers(lo, lo + 40, n)
        x_mask = rng.random(n) < (0.9 if rng.random() < 0.05 else 0.1)  # some all-null
        c = rng.choice([f"c{part % 7}", f"c{(part + 1) % 7}", f"c{part % 3 + 7}", "zz"], n)
        u = rng.integers(part * 1000, part * 1000 + 300, n)
        ancient = rng.random() < 0.15
        days = rng.integers(-200_000 if ancient else 18_000, 20_000, n)
        values = {
            "x": pa.array(x, mask=x_mask),
            "c": pa.array(c, pa.string()),
            "u": pa.array(u, pa.int64()),
            "d": pa.array(days.astype(np.int32), pa.date32()),
        }
        for ix in INDEXES:
            meta[ix].append(ix.collect(values[ix.column]))
        rows[OBJ_SIZE].append(int(rng.integers(100, 10_000)))
        rows[OBJ_MTIME].append(1_700_000_000_000 + int(rng.integers(0, 1000)))
        rows[OBJ_ROWS].append(n)
        rows[OBJ_DATETIME_REBASE].append(MODES[int(rng.integers(0, 4))])
        rows[OBJ_INT96_REBASE].append(MODES[int(rng.integers(0, 4))])
        rows[OBJ_ANCIENT_DATETIME].append(
            None if rng.random() < 0.05 else bool(days.min() < calendar.DATE_CUTOFF_DAYS)
        )
        rows[OBJ_ANCIENT_INT96].append(bool(rng.random() < 0.1))
    types = {
        OBJ_NAME: pa.string(),
        OBJ_SIZE: pa.int64(),
        OBJ_MTIME: pa.int64(),
        OBJ_ROWS: pa.int64(),
        OBJ_DATETIME_REBASE: pa.string(),
        OBJ_INT96_REBASE: pa.string(),
        OBJ_ANCIENT_DATETIME: pa.bool_(),
        OBJ_ANCIENT_INT96: pa.bool_(),
    }
    table = pa.table({k: pa.array(v, types[k]) for k, v in rows.items()})
    for ix in INDEXES:
        column_type = SCHEMA.field(ix.column).type
        table = table.append_column(
            IndexDef.of(ix).storage_name,
            pa.array([m.as_py() for m in meta[ix]], ix.metadata_type(column_type)),
        )
    return table


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    base = tmp_path_factory.mktemp("parts")
    (base / "t").mkdir()
    location = locate_table(str(base / "t"))
    table_store = MetadataStore(str(base / "store")).table(location.uri)
    defs = [IndexDef.of(ix) for ix in INDEXES]
    record = schema_mod.record(SCHEMA, {"p": "int64"})
    table_store.create(defs, record)
    rng = np.random.default_rng(19)
    sizes = rng.integers(1, 50, PARTS)
    names, added = [], []
    for part, size in enumerate(sizes):
        batch = [f"p={(part + k) % 5}/f{part:02d}_{k:03d}.parquet" for k in range(size)]
        names += batch
        added.append(table_store.write_part(_file_rows(rng, batch, part), defs))
    table_store.commit(0, add_parts=added, operation="build", details=record)
    # a refresh: some files rewritten (new rows in a new part), some deleted
    picks = rng.permutation(len(names))
    rewritten = sorted(names[i] for i in picks[:60])
    deleted = sorted(names[i] for i in picks[60:100])
    part = table_store.write_part(_file_rows(rng, rewritten, int(rng.integers(0, PARTS))), defs)
    table_store.commit(
        1, add_parts=[part], removed_objects=deleted, operation="refresh", details=record
    )
    return MetaIndex(str(base / "t"), store=str(base / "store"))


def _reference(snap, sql: str, session: SessionSettings) -> dict:
    """{obj_name: (size, mtime, might match)} evaluating every file of the snapshot."""
    table = snap.metadata_table()
    data_schema, partitions = snap.recorded_schema
    schema = schema_mod.with_partitions(data_schema, partitions)
    tree = bind(parse_sql(sql, time_zone=session.time_zone), schema)
    names = table.column(OBJ_NAME).to_pylist()
    indexes, metadata = [], {}
    for d in snap.index_defs:
        ix = make_index(d.name, d.cols, d.params)
        indexes.append(ix)
        metadata[ix.key] = table.column(d.storage_name).combine_chunks()
    ix = ValueListIndex("p")
    rows = []
    for name in names:
        value = dict(parse_partition(name)).get("p")
        rows.append(None if value is None else {"values": [int(value)], "has_null": False})
    indexes.append(ix)
    metadata[ix.key] = pa.array(rows, ix.metadata_type(pa.int64()))
    kept = evaluate(tree, indexes, metadata, len(names), per_index=False).kept
    kept = calendar.guard(kept, tree, table, session, indexes, metadata)
    return dict(
        zip(
            names,
            zip(
                table.column(OBJ_SIZE).to_pylist(),
                table.column(OBJ_MTIME).to_pylist(),
                kept.tolist(),
                strict=True,
            ),
            strict=True,
        )
    )


def _date(days: int) -> str:
    return f"DATE '{(EPOCH + dt.timedelta(days=days)).isoformat()}'"


_x = st.integers(-50, PARTS * 50 + 100)
_c = st.sampled_from(["c0", "c1", "c3", "c6", "c8", "zz", "nope"])
_u = st.integers(0, PARTS * 1000)
_d = st.integers(-210_000, 21_000)
ATOMS = st.one_of(
    st.builds(lambda op, v: f"x {op} {v}", st.sampled_from(["<", "<=", "=", ">=", ">", "!="]), _x),
    st.builds(lambda a, w: f"x BETWEEN {a} AND {a + w}", _x, st.integers(0, 200)),
    st.builds(lambda vs: f"x IN ({', '.join(map(str, vs))})", st.lists(_x, min_size=1, max_size=4)),
    st.just("x IS NULL"),
    st.builds(lambda op, v: f"c {op} '{v}'", st.sampled_from(["=", "!=", "<", ">="]), _c),
    st.builds(
        lambda vs: f"c IN ({', '.join(repr(v) for v in vs)})", st.lists(_c, min_size=1, max_size=3)
    ),
    st.builds(lambda v: f"c LIKE '{v[:1]}%'", _c),
    st.builds(lambda v: f"u = {v}", _u),
    st.builds(lambda vs: f"u IN ({', '.join(map(str, vs))})", st.lists(_u, min_size=1, max_size=5)),
    st.builds(lambda op, v: f"d {op} {_date(v)}", st.sampled_from(["<", ">=", "="]), _d),
    st.builds(lambda v: f"p = {v}", st.integers(0, 5)),
)


def _predicates():
    return st.recursive(
        ATOMS,
        lambda inner: st.one_of(
            st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
            st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
            st.builds(lambda a: f"NOT ({a})", inner),
        ),
        max_leaves=4,
    )


SESSIONS = st.builds(
    SessionSettings,
    datetime_rebase_read=st.sampled_from(calendar.MODES),
    int96_rebase_read=st.sampled_from(calendar.MODES),
)


def _spy(snap) -> list:
    """Record the parts the snapshot is asked to read (the reads still happen)."""
    seen: list = []
    read = snap.read_parts

    def recording(paths, columns=None):
        paths = list(paths)
        seen.extend(paths)
        return read(paths, columns)

    snap.read_parts = recording
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=_predicates(), session=SESSIONS)
def test_every_object_as_an_exhaustive_evaluation_decides(index, sql, session):
    snap = index.snapshot()
    expected = _reference(snap, sql, session)
    result = index.pruner().decide(sql, session=session)
    want = sorted(n for n, (_, _, keep) in expected.items() if keep)
    assert sorted(result.kept) == want, f"{sql}: part pruning must decide like every file"
    assert (
        isinstance(result.kept_paths, pa.ChunkedArray)
        and result.kept_paths.to_pylist() == result.kept
    )
    assert sorted(result.skipped) == sorted(set(expected) - set(want))
    assert result.stats.total_files == len(expected) == len(result.kept_mask)
    assert result.stats.kept_files == len(want) == int(result.kept_mask.sum())
    assert result.stats.total_bytes == sum(s for s, _, _ in expected.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=_predicates(), session=SESSIONS, data=st.data())
def test_candidates_as_an_exhaustive_evaluation_decides(index, sql, session, data):
    snap = index.snapshot()
    expected = _reference(snap, sql, session)
    names = sorted(expected)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    picked = [n for n in names if rng.random() < 0.5]  # from every part
    files = [(n, expected[n][0] + int(rng.random() < 0.05), expected[n][1]) for n in picked]
    files += [(f"p={k % 5}/new{k}.parquet", 10, 10) for k in range(int(rng.integers(0, 5)))]
    files += [("/elsewhere/f.parquet", 1, 1)]
    files = [files[i] for i in rng.permutation(len(files))]
    result = index.pruner().decide(sql, candidates(index._location, files), session=session)
    want = [
        p
        for p, size, mtime in files
        if p not in expected or (size, mtime) != expected[p][:2] or expected[p][2]
    ]
    assert result.kept == want, f"{sql}: unindexed files kept, indexed ones as every file"
    assert result.kept_paths.to_pylist() == want
    assert result.stats.unindexed_files == sum(
        1 for p, size, mtime in files if p not in expected or (size, mtime) != expected[p][:2]
    )


def test_selective_predicates_read_few_parts(index):
    fresh = MetaIndex(index._location.root, store=index._store.root)  # nothing cached
    snap = fresh.snapshot()
    pruner = fresh.pruner()
    read = _spy(snap)
    try:
        result = pruner.decide("x BETWEEN 1000 AND 1010")
        assert result.kept
        assert 0 < len(set(read)) <= 4, (
            f"a narrow range on the clustered column reads a few of {PARTS + 1} parts "
            f"(its kept files included): {read}"
        )
        assert len(result.skipped) == result.stats.skipped_files, (
            "skipped names come from the file list (Snapshot.file_table)"
        )
        assert result.stats.skipped_by_index["minmax(x)"] == result.stats.skipped_files
        read.clear()
        assert pruner.decide("x < -1000").kept == []
        assert read == [], "a range outside every part reads no part"
        read.clear()
        pruner.decide("c = 'nope' OR x BETWEEN 1000 AND 1010")
        unknown = snap.summary_table().column(IndexDef.of(INDEXES[1]).storage_name).null_count
        assert len(set(read)) <= unknown + 4, (
            "a value no part lists: only parts without a value-list summary are read"
        )
    finally:
        del snap.read_parts


def test_skipped_by_index_counts_parts_and_files(index):
    snap = index.snapshot()
    pruner = index.pruner()
    reference = _reference(snap, "x < 200", SessionSettings())
    ruled_out = sum(1 for *_, keep in reference.values() if not keep)
    alone = pruner.decide("x < 200").stats.skipped_by_index
    assert alone["minmax(x)"] == ruled_out, (
        "one index: its whole parts plus the files it rules out in the parts read"
    )
    both = pruner.decide("x < 200 AND c = 'nope'").stats
    assert both.skipped_files == both.total_files, "no file holds 'nope'"
    assert both.skipped_by_index["valuelist(c)"] == both.total_files
    assert 0 < both.skipped_by_index["minmax(x)"] <= ruled_out, (
        "parts the value list rules out are not read: a lower bound for min/max"
    )
    assert both.skipped_by_index["bloom(u)"] == 0 == both.skipped_by_index["partition(p)"]


def test_partition_conjuncts_mark_listed_files_from_names_or_a_real_index(index, tmp_path):
    """Partition conjuncts only mark what Spark lists (lazily over every object without
    candidates); a partition column that also has a real value-list index is answered by it."""
    snap = index.snapshot()
    pruner = index.pruner()
    result = pruner.decide("x < 0", partition_conjuncts="p = 1")
    names = pruner.context.names.to_pylist()
    assert result.listed_mask.tolist() == [n.startswith("p=1/") for n in names]
    assert len(result.listed_mask) == snap.object_count
    # the same rows, with a real value-list index on p (its values collected per file)
    ix = ValueListIndex("p")
    table = snap.metadata_table()
    values = [int(dict(parse_partition(n))["p"]) for n in table.column(OBJ_NAME).to_pylist()]
    table = table.append_column(
        IndexDef.of(ix).storage_name,
        pa.array(
            [{"values": [v], "has_null": False} for v in values], ix.metadata_type(pa.int64())
        ),
    )
    defs = [*snap.index_defs, IndexDef.of(ix)]
    (tmp_path / "t").mkdir()
    location = locate_table(str(tmp_path / "t"))
    table_store = MetadataStore(str(tmp_path / "store")).table(location.uri)
    record = schema_mod.record(SCHEMA, {"p": "int64"})
    table_store.create(defs, record)
    table_store.commit(
        0, add_parts=[table_store.write_part(table, defs)], operation="build", details=record
    )
    mi = MetaIndex(str(tmp_path / "t"), store=str(tmp_path / "store"))
    real = mi.pruner()
    assert "valuelist(p)" in real.context.labels.values() and not real.context.partition_indexes, (
        "the real index stands for the directories"
    )
    again = real.decide("x < 0", partition_conjuncts="p = 1")
    assert again.listed_mask.tolist() == [
        n.startswith("p=1/") for n in real.context.names.to_pylist()
    ]
    files = candidates(mi._location, [(n, 1, 1) for n in names[:50]] + [("p=1/new", 1, 1)])
    listed = real.decide("x < 0", files, partition_conjuncts="p = 1").listed_mask
    assert listed.tolist() == [True] * 51, "unindexed candidates (sizes differ) stay listed"
    ctx = real.context
    files = candidates(
        mi._location,
        list(zip(ctx.names.to_pylist(), ctx.sizes.tolist(), ctx.mtimes.tolist(), strict=True)),
    )
    listed = real.decide("x < 0", files, partition_conjuncts="p = 1").listed_mask
    assert listed.tolist() == [n.startswith("p=1/") for n in ctx.names.to_pylist()], (
        "indexed candidates are marked by the real index"
    )
