"""Pruning internals: candidate normalisation, path relativisation, matching candidates to
snapshot entries by name, lazily materialised results."""

import numpy as np
import pyarrow as pa
import pytest

from metaindex.engine.listing import DataFile, Listing, locate_table
from metaindex.engine.prune import NameLookup, PruneResult, PruneStats, candidates, relativize


@pytest.fixture
def loc(tmp_path):
    (tmp_path / "t").mkdir()
    return locate_table(str(tmp_path / "t"))


def test_relativize_forms(loc):
    root = loc.root
    assert relativize(loc, f"{root}/a/b.parquet") == "a/b.parquet"
    assert relativize(loc, f"file://{root}/x.parquet") == "x.parquet"
    assert relativize(loc, f"file:{root}/y.parquet") == "y.parquet", "Hadoop's file:/ form"
    assert relativize(loc, "k=1/z.parquet") == "k=1/z.parquet", "relative paths stay"
    for outside in (
        "/elsewhere/q.parquet",
        "s3://b/k.parquet",
        "../up.parquet",
        f"{root}x/sibling.parquet",
    ):
        assert relativize(loc, outside) is None, f"{outside} is not under the table"


def test_candidates_from_tuples_tables_datafiles_and_listing(loc):
    root = loc.root
    tuples = [(f"{root}/a", 1, 2), ("b", 3, 4)]
    c = candidates(loc, tuples)
    assert c.paths.to_pylist() == [f"{root}/a", "b"], "reported paths are the caller's"
    assert c.names.to_pylist() == ["a", "b"]
    assert c.sizes.tolist() == [1, 3] and c.mtimes.tolist() == [2, 4]
    t = candidates(
        loc,
        pa.table(
            {"path": [f"{root}/a", "b"], "size": [1, 3], "mtime": pa.array([2, 4], pa.int32())}
        ),
    )
    assert t.names.to_pylist() == ["a", "b"] and t.mtimes.dtype == np.int64
    d = candidates(loc, [DataFile("a", 1, 2), DataFile("b", 3, 4)])
    assert d.names.to_pylist() == ["a", "b"]
    listing = candidates(loc, Listing([DataFile("x/y", 5, 6)]))
    assert listing.paths.to_pylist() == [f"{root}/x/y"], "listings report full paths"
    assert candidates(loc, []).names.to_pylist() == []


@pytest.mark.parametrize(
    "bad",
    [["just/a/path"], [("a", 1)], [("a", 1.5, 2)], [("a", True, 2)], [(3, 1, 2)], [("a", 1, 2, 3)]],
)
def test_candidates_reject_malformed(loc, bad):
    with pytest.raises(TypeError):
        candidates(loc, bad)


def test_candidates_reject_bad_tables(loc):
    with pytest.raises(TypeError, match="lacks"):
        candidates(loc, pa.table({"path": ["a"], "size": [1]}))
    with pytest.raises(TypeError, match="integers"):
        candidates(loc, pa.table({"path": ["a"], "size": [1.0], "mtime": [1]}))
    with pytest.raises(TypeError, match="nulls"):
        candidates(loc, pa.table({"path": ["a", None], "size": [1, 2], "mtime": [1, 2]}))


def _context(names):
    return NameLookup(pa.array(names, pa.string()))


def test_rows_of_matches_by_name():
    ctx = _context([f"f{i}" for i in range(1000)])
    rng = np.random.default_rng(0)
    picks = rng.permutation(1000)[:300]
    query = [f"f{i}" for i in picks] + ["nope", "f1000", ""]
    rows = ctx.rows_of(pa.array(query + [None], pa.string()))
    assert rows[:300].tolist() == picks.tolist(), "each name finds its own row"
    assert rows[300:].tolist() == [-1, -1, -1, -1], "unknown, empty and null names: no entry"
    assert _context([]).rows_of(pa.array(["a"])).tolist() == [-1]
    assert ctx.rows_of(pa.array([], pa.string())).tolist() == []


def test_rows_of_confirms_hash_hits():
    ctx = _context(["a", "b"])
    ctx.names = pa.array(["a", "x"])  # the hashes still say row 1 is "b"; its name is not
    assert ctx.rows_of(pa.array(["a", "b"])).tolist() == [0, -1], (
        "a hash hit whose name differs (a collision) is not a match: the file is kept"
    )


def test_prune_result_is_lazy_and_consistent():
    stats = PruneStats(3, 3, 1, 2, 0, 30, 10, 20)
    r = PruneResult(pa.array(["a", "b", "c"]), np.array([False, True, False]), stats)
    assert r.kept == ["b"] and r.skipped == ["a", "c"]
    assert "kept=1" in repr(r)
