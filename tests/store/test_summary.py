"""Part summaries (format 7): a summary row is kept whenever some row of its part is kept.

The parts are random files of tests/reference/prune.py (every type family, NaN/±inf/-0.0,
all-null and empty files, nulls everywhere, a nested field) indexed by every kind, with some
entries made unknown (null); the predicates are its random bound predicates. For each one
``metaindex.index.evaluate`` runs on the part's rows and on its one summary row.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metaindex.expr as E
from metaindex.bloom import SplitBlockBloomFilter
from metaindex.engine.calendar import must_keep
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex, evaluate
from metaindex.index.bloom import probe
from metaindex.index.valuelist import DEFAULT_MAX_VALUES
from metaindex.store import IndexDef, summarize
from metaindex.store.summary import (
    CALENDAR_TYPES,
    VALUELIST_DEFAULT_MAX_VALUES,
    decode_summary,
    encode_summary,
    fold_bitset,
)
from tests.reference import prune as ref

PREDICATES_PER_PART = 40


def _indexes(max_values: int, fpp: float) -> list:
    return (
        [MinMaxIndex(c) for c in ref.COLUMNS]
        + [ValueListIndex(c, max_values=max_values) for c in ref.COLUMNS]
        + [BloomFilterIndex(c, fpp=fpp) for c in ref.COLUMNS if c != "flag"]
    )


def _part(files, indexes, unknown: set) -> pa.Table:
    """One part row per file; entries (file, index number) in ``unknown`` are null."""
    columns = {}
    for k, ix in enumerate(indexes):
        t = ref.column_values(files[0], ix.column).type
        kind = ix.metadata_type(t)
        values = [
            None if (i, k) in unknown else ix.collect(ref.column_values(f, ix.column))
            for i, f in enumerate(files)
        ]
        columns[ix.key] = pa.array(values, kind)
    return pa.table(columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_files=st.integers(1, 10),
    max_values=st.sampled_from([1, 3, 8, 100]),
    fpp=st.sampled_from([0.5, 0.01, 1e-4]),
    unknown_rate=st.sampled_from([0.0, 0.0, 0.1]),
)
def test_summary_keeps_whenever_a_row_is_kept(seed, n_files, max_values, fpp, unknown_rate):
    rng = random.Random(seed)
    files = ref.random_files(rng, n_files)
    indexes = _indexes(max_values, fpp)
    unknown = {
        (i, k) for i in range(n_files) for k in range(len(indexes)) if rng.random() < unknown_rate
    }
    part = _part(files, indexes, unknown)
    summary = summarize(part, [IndexDef.of(ix) for ix in indexes])
    summary = decode_summary(encode_summary(summary), "test")  # what a reader gets back
    for ix in indexes:
        assert summary.schema.field(ix.key).type == part.schema.field(ix.key).type, (
            f"{ix.key}: a summary has its index's metadata type"
        )
    rows = {ix.key: part.column(ix.key) for ix in indexes}
    one = {ix.key: summary.column(ix.key) for ix in indexes}
    for _ in range(PREDICATES_PER_PART):
        expr = E.rewrite_not(ref.random_predicate(rng, E, allow_not=True))
        kept = evaluate(expr, indexes, rows, n_files, per_index=False).kept
        if kept.any():
            assert evaluate(expr, indexes, one, 1, per_index=False).kept[0], (
                f"the summary skips a part whose files {np.flatnonzero(kept).tolist()} are "
                f"kept for {expr}"
            )


def test_summaries_still_skip():
    """Not vacuous: clustered parts get summaries that rule parts out."""
    mm, vl, bl = MinMaxIndex("x"), ValueListIndex("x", max_values=10), BloomFilterIndex("x")
    indexes = [mm, vl, bl]
    part = pa.table(
        {
            ix.key: pa.array(
                [
                    ix.collect(pa.array(v, pa.int64()))
                    for v in ([1, 2, None], [3, 4], [None, None], [])
                ],
                ix.metadata_type(pa.int64()),
            )
            for ix in indexes
        }
    )
    summary = summarize(part, [IndexDef.of(ix) for ix in indexes])
    assert summary.column(mm.key).to_pylist() == [
        {"min": 1, "max": 4, "null_count": 3, "nan_count": 0}
    ]
    assert summary.column(vl.key).to_pylist() == [{"values": [1, 2, 3, 4], "has_null": True}]
    bitset = summary.column(bl.key).to_pylist()[0]["bitset"]
    assert bitset is not None and len(bitset) == 32
    meta = {ix.key: summary.column(ix.key) for ix in indexes}
    for sql, kept in (
        ("x = 9", False),
        ("x > 4", False),
        ("x IN (2, 7)", True),
        ("x IS NULL", True),
        ("x = 3", True),
    ):
        schema = pa.schema([("x", pa.int64())])
        got = evaluate(E.bind(E.parse_sql(sql), schema), indexes, meta, 1).kept[0]
        assert got == kept, f"{sql}: summary kept={got}, expected {kept}"
    for only in indexes:  # each kind on its own rules "x = 9" out
        got = evaluate(
            E.bind(E.parse_sql("x = 9"), pa.schema([("x", pa.int64())])),
            [only],
            {only.key: meta[only.key]},
            1,
        ).kept[0]
        assert not got, f"{only!r} alone should skip x = 9"


@pytest.mark.parametrize("sizes", [[32, 32], [32, 1024], [256, 64, 4096], [8192]])
def test_bloom_fold_is_exact(sizes):
    """Every hash inserted into any row's filter is found in the folded summary (the block
    of a hash in z blocks is the top log2(z) bits, so folding keeps it)."""
    rng = np.random.default_rng(len(sizes) * 7 + sizes[0])
    rows, inserted = [], []
    for size in sizes:
        f = SplitBlockBloomFilter(size)
        hashes = rng.integers(0, 2**64, size=3, dtype=np.uint64)
        f.insert_hashes(hashes)
        rows.append({"bitset": f.to_bytes(), "has_null": False})
        inserted.append(hashes)
    ix = BloomFilterIndex("x")
    part = pa.table({ix.key: pa.array(rows, ix.metadata_type(pa.int64()))})
    summary = summarize(part, [IndexDef.of(ix)]).column(ix.key).combine_chunks()
    bitset = summary.field("bitset")
    assert len(bitset[0].as_py()) == min(sizes), "folded to the smallest filter"
    for hashes in inserted:
        assert probe(bitset, hashes).all(), "a folded filter loses no inserted hash"
    ref_fold = SplitBlockBloomFilter(min(sizes))
    for hashes in inserted:
        ref_fold.insert_hashes(hashes)
    assert bitset[0].as_py() == ref_fold.to_bytes(), (
        "folding equals inserting every row's values into a filter of the smallest size"
    )
    folded = fold_bitset(np.frombuffer(rows[0]["bitset"], np.uint8), 32)
    assert len(folded) == 32


def test_bloom_summary_null_cases():
    ix = BloomFilterIndex("x")
    t = ix.metadata_type(pa.int64())
    d = [IndexDef.of(ix)]

    def summary(rows):
        return summarize(pa.table({ix.key: pa.array(rows, t)}), d).column(ix.key)[0].as_py()

    empty = {"bitset": None, "has_null": True}
    assert summary([empty, empty]) == empty, "no values anywhere: nothing matches equality"
    assert summary([empty, None]) is None, "an unknown row makes the summary unknown"
    assert summary([{"bitset": b"\x01" * 33, "has_null": False}]) is None, (
        "a bitset that is no filter proves nothing"
    )
    assert summary([{"bitset": b"\xff" * 32, "has_null": False}]) is None, (
        "a filter more than half full is not kept"
    )
    assert summary([{"bitset": b"\x00" * 32, "has_null": None}]) == {
        "bitset": b"\x00" * 32,
        "has_null": None,
    }


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["LEGACY", "CORRECTED", "SESSION", None]),
            st.sampled_from(["LEGACY", "CORRECTED", "SESSION", None]),
            st.sampled_from([True, False, None]),
            st.sampled_from([True, False, None]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["LEGACY", "CORRECTED", "EXCEPTION"]),
    st.sampled_from(["LEGACY", "CORRECTED", "EXCEPTION"]),
)
def test_calendar_summary_is_untrusted_when_a_row_is(rows, dt_mode, i96_mode):
    names = list(CALENDAR_TYPES)
    part = pa.table(
        {n: pa.array([r[i] for r in rows], CALENDAR_TYPES[n]) for i, n in enumerate(names)}
    )
    summary = summarize(part, [])
    session = SimpleNamespace(datetime_rebase_read=dt_mode, int96_rebase_read=i96_mode)
    if must_keep(part, session).any():
        assert must_keep(summary, session)[0], f"{rows} under {session}"


def test_encrypted_and_unknown_kinds_have_no_summary():
    mm = MinMaxIndex("x")
    col = pa.array([mm.collect(pa.array([1, 2]))], mm.metadata_type(pa.int64()))
    part = pa.table({mm.key: col, "x_custom_1": col})
    defs = [IndexDef("minmax", ["x"], key_metadata="k1"), IndexDef("custom", ["x"])]
    summary = summarize(part, defs)
    assert summary.column(mm.key).to_pylist() == [None], "encrypted metadata never summarised"
    assert summary.column("x_custom_1").to_pylist() == [None], "a kind without a rule"
    assert summary.schema.field(mm.key).type == mm.metadata_type(pa.int64())


def test_default_max_values_matches_the_index():
    assert VALUELIST_DEFAULT_MAX_VALUES == DEFAULT_MAX_VALUES
