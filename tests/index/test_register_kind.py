"""User-defined index kinds: ``metaindex.index.register_index_kind`` and the store, build,
refresh and prune paths that re-create indexes by kind name (core API, no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.index import KINDS, Index, MinMaxIndex, make_index, register_index_kind
from tests.index.strlen_index import StrLenIndex


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_index_kind(StrLenIndex)
    yield
    KINDS.pop("strlen", None)


def _table(tmp_path, cities_per_file):
    root = tmp_path / "t"
    root.mkdir()
    for i, cities in enumerate(cities_per_file):
        pq.write_table(
            pa.table(
                {
                    "city": pa.array(cities, pa.string()),
                    "n": pa.array(range(len(cities)), pa.int64()),
                }
            ),
            root / f"part-{i}.parquet",
        )
    return root


def test_a_registered_kind_builds_prunes_and_refreshes(tmp_path):
    root = _table(tmp_path, [["Rome", "Oslo"], ["Tel-Aviv", "Jerusalem"], [None, None]])
    mi = MetaIndex(root, store=tmp_path / "store")
    result = mi.index_builder().add_index(StrLenIndex("city")).build()
    assert result.entries_added == 3
    kept = sorted(p.rsplit("/", 1)[-1] for p in mi.prune("city = 'Rome'").kept)
    assert kept == ["part-0.parquet", "part-2.parquet"], (
        "length 4 rules out part-1 (8-9 bytes); the all-null file is unknown: kept"
    )
    assert len(mi.prune("city IN ('Jerusalem', 'Oslo')").kept) == 3
    assert len(mi.prune("city > 'A'").kept) == 3, "other operators keep every file"
    pq.write_table(
        pa.table({"city": pa.array(["Haifa"]), "n": pa.array([1], pa.int64())}),
        root / "part-3.parquet",
    )
    assert mi.refresh().entries_added == 1, "refresh re-creates the kind from the store"
    assert sorted(p.rsplit("/", 1)[-1] for p in mi.prune("city = 'Eilat'").kept) == [
        "part-2.parquet",
        "part-3.parquet",
    ]
    d = mi.describe()
    assert [(ix.kind, ix.column) for ix in d.indexes] == [("strlen", "city")]


def test_make_index_recreates_registered_kinds():
    assert make_index("strlen", ["city"], {}) == StrLenIndex("city")


def test_registration_rules():
    assert register_index_kind(StrLenIndex) is StrLenIndex  # idempotent

    class Other(StrLenIndex):
        __slots__ = ()

    with pytest.raises(ValueError, match="already registered"):
        register_index_kind(Other)

    class Builtin(StrLenIndex):
        name = "minmax"
        __slots__ = ()

    with pytest.raises(ValueError, match="built-in"):
        register_index_kind(Builtin)
    assert register_index_kind(MinMaxIndex) is MinMaxIndex

    class BadName(StrLenIndex):
        name = "Bad-Name"
        __slots__ = ()

    with pytest.raises(ValueError, match=r"\[a-z\]"):
        register_index_kind(BadName)

    class Abstract(Index):
        name = "abstract"

    with pytest.raises(TypeError, match="does not implement"):
        register_index_kind(Abstract)
    with pytest.raises(TypeError):
        register_index_kind(object)
    with pytest.raises(ValueError, match="unknown index kind"):
        make_index("nosuchkind", ["c"])


def test_describe_has_no_estimate_for_a_registered_kind(tmp_path):
    root = _table(tmp_path, [["Rome", "Oslo"], ["Tel-Aviv", "Jerusalem"]])
    mi = MetaIndex(root, store=tmp_path / "store")
    mi.index_builder().add_index(StrLenIndex("city")).add_min_max_index("n").build()
    info = {ix.kind: ix for ix in mi.describe().indexes}
    assert info["strlen"].point_read_fraction is None
    assert info["strlen"].verdict == "unknown: no estimate for this index kind"
    assert info["minmax"].point_read_fraction == 1.0, "n = 0, 1 in both files"
