"""A user's index kind (tests/kinds/prefix_kind.py: one module, one registration line) goes
through every path a built-in kind does, in the core: build, prune (never a file with a
matching row, compared with pyarrow's own filtering), part summaries that skip parts,
compaction, describe() and explain(); and both builders' ``add_index`` reject unknown kinds and
bad parameters with a typed error. The Spark side is in tests/spark/test_user_kind_spark.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.errors import IndexDefinitionError
from metaindex.index import (
    KINDS,
    BloomFilterIndex,
    MinMaxIndex,
    ValueListIndex,
    register_index_kind,
)
from tests.kinds.prefix_kind import PrefixIndex

STEMS = ["alfa", "beta", "gama", "dlta", "epsi"]


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_index_kind(PrefixIndex)  # the one line a user writes
    yield
    KINDS.pop("prefix", None)


def _write(root, name: str, codes: list) -> None:
    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {"code": pa.array(codes, pa.string()), "n": pa.array(range(len(codes)), pa.int64())}
        ),
        root / name,
    )


def _table(root) -> None:
    for i in range(10):  # file i: codes of one stem, a few nulls
        stem = STEMS[i % len(STEMS)]
        _write(
            root, f"f{i:02d}.parquet", [f"{stem}{i:02d}{j}" if j % 7 else None for j in range(20)]
        )
    _write(root, "nulls.parquet", [None, None])
    _write(root, "mixed.parquet", [f"{k:02d}x{k}" for k in range(40)])  # 40 prefixes: over cap
    _write(root, "short.parquet", ["ab", "b", "épée", "日本語テキスト"])


def _kept(mi, where: str) -> set:
    return {os.path.basename(p) for p in mi.prune(where).kept}


def _matching(root, mask) -> set:
    """The files holding a row the predicate is true for (pyarrow's filtering)."""
    out = set()
    for name in sorted(os.listdir(root)):
        codes = pq.read_table(root / name).column("code")
        if pc.any(mask(codes)).as_py():
            out.add(name)
    return out


PREDICATES = [
    ("code = 'beta016'", lambda c: pc.equal(c, "beta016")),
    ("code = 'nope'", lambda c: pc.equal(c, "nope")),
    (
        "code IN ('gama022', 'epsi49', 'zz')",
        lambda c: pc.is_in(c, pa.array(["gama022", "epsi49", "zz"])),
    ),
    ("startswith(code, 'dl')", lambda c: pc.starts_with(c, "dl")),
    ("code LIKE 'alf%'", lambda c: pc.starts_with(c, "alf")),
    ("code LIKE 'alfa05%'", lambda c: pc.starts_with(c, "alfa05")),
    ("code LIKE 'é%'", lambda c: pc.starts_with(c, "é")),
    ("code = '日本語テキスト'", lambda c: pc.equal(c, "日本語テキスト")),
    ("code = 'ab'", lambda c: pc.equal(c, "ab")),
    ("code > 'm'", lambda c: pc.greater(c, "m")),
    ("code IS NULL", lambda c: pc.is_null(c)),
    ("NOT (code = 'beta016')", lambda c: pc.not_equal(c, "beta016")),
]


@pytest.fixture
def indexed(tmp_path):
    root = tmp_path / "t"
    _table(root)
    mi = MetaIndex(root, store=tmp_path / "store")
    mi.index_builder().add_index("prefix", "code", length=3, max_prefixes=8).add_min_max_index(
        "n"
    ).build()
    return root, mi


def test_prunes_soundly_and_skips(indexed):
    root, mi = indexed
    everything = set(os.listdir(root))
    for sql, mask in PREDICATES:
        kept = _kept(mi, sql)
        missing = _matching(root, mask) - kept
        assert not missing, f"{sql}: skipped {missing}, which hold matching rows"
    assert _kept(mi, "code = 'beta016'") == {"f01.parquet", "f06.parquet", "mixed.parquet"}, (
        "only the beta files list 'bet'; the over-cap file is unknown (kept); the all-null "
        "file lists nothing (no NULL equals a value)"
    )
    assert _kept(mi, "code = 'nope'") == {"mixed.parquet"}
    assert _kept(mi, "code LIKE 'é%'") == {"short.parquet", "mixed.parquet"}
    assert _kept(mi, "code > 'm'") == everything, "a range: the kind cannot tell, keep"
    assert _kept(mi, "code IS NULL") == everything


def test_part_summaries_skip_parts_and_compaction_keeps_decisions(tmp_path):
    root = tmp_path / "t"
    for i in range(4):
        _write(root, f"a{i}.parquet", [f"{STEMS[i]}{j}" for j in range(5)])
    mi = MetaIndex(root, store=tmp_path / "store")
    mi.index_builder().add_index("prefix", "code", length=2).build()
    for i in range(3):
        _write(root, f"z{i}.parquet", [f"z{i}eta{j}" for j in range(5)])
    mi.refresh()

    fresh = MetaIndex(root, store=tmp_path / "store")
    snap = fresh.snapshot()
    assert len(snap.part_paths) == 2, "build and refresh wrote one part each"
    summaries = snap.summary_table().column("code_prefix_4").to_pylist()
    assert sorted(summaries) == [["al", "be", "dl", "ga"], ["z0", "z1", "z2"]], (
        "each part's summary is the union of its files' prefixes"
    )
    read: list = []
    original = snap.read_parts

    def recording(paths, columns=None):
        read.extend(paths)
        return original(paths, columns)

    snap.read_parts = recording
    try:
        result = fresh.pruner().decide("code = 'z1eta1'")
        assert sorted(os.path.basename(p) for p in result.kept) == ["z1.parquet"]
        assert len(set(read)) == 1, f"the first part's summary rules it out: read {read}"
        read.clear()
        assert fresh.pruner().decide("code LIKE 'q%'").kept == []
        assert read == [], "no part summary lists 'q': no part is read"
    finally:
        del snap.read_parts

    queries = [
        "code = 'z1eta1'",
        "code = 'gama3'",
        "code LIKE 'be%'",
        "code IN ('x', 'alfa0')",
        "code = 'nope'",
    ]
    before = {q: _kept(mi, q) for q in queries}
    mi.compact()
    assert len(mi.snapshot().part_paths) == 1, "compaction rewrote both parts into one"
    assert {q: _kept(mi, q) for q in queries} == before
    assert mi.snapshot().summary_table().column("code_prefix_4").to_pylist() == [
        ["al", "be", "dl", "ga", "z0", "z1", "z2"]
    ]


def test_describe_and_explain_show_the_kind(indexed):
    _, mi = indexed
    info = {ix.kind: ix for ix in mi.describe().indexes}
    prefix = info["prefix"]
    assert prefix.column == "code"
    assert prefix.params == {"length": 3, "max_prefixes": 8}
    assert prefix.point_read_fraction is not None and 0 < prefix.point_read_fraction < 0.5, (
        "each prefix lives in 2 of 13 files (plus the unknown one)"
    )
    assert prefix.unknown_files == 1, "the over-cap file"
    assert prefix.verdict.split(":")[0] in ("effective", "partial")
    text = str(mi.explain("code = 'beta016'"))
    assert "prefix(code)" in text, text
    explanation = mi.explain("code = 'beta016'")
    assert explanation.skipped_by_index["prefix(code)"] == 10, (
        "13 files: the 2 beta files and the unknown one kept"
    )


def test_add_index_errors_are_typed(tmp_path):
    builder = MetaIndex(tmp_path, store=tmp_path / "store").index_builder()
    with pytest.raises(IndexDefinitionError, match=r"unknown index kind 'nosuch'.*'prefix'"):
        builder.add_index("nosuch", "code")
    with pytest.raises(IndexDefinitionError, match="length must be an int >= 1"):
        builder.add_index("prefix", "code", length=0)
    with pytest.raises(IndexDefinitionError, match="takes no parameter 'width'"):
        builder.add_index("prefix", "code", width=3)
    with pytest.raises(IndexDefinitionError, match="max_values"):
        builder.add_value_list_index("code", max_values=-1)
    with pytest.raises(TypeError, match="column"):
        builder.add_index("prefix")
    assert builder.indexes == ()


def test_named_helpers_are_add_index(tmp_path):
    builder = MetaIndex(tmp_path, store=tmp_path / "store").index_builder()
    builder.add_min_max_index("n").add_value_list_index(
        "code", max_values=5
    ).add_bloom_filter_index("code", fpp=0.05).add_index(PrefixIndex("code", length=2)).add_index(
        "bloom", "n", max_bytes=4096
    )
    assert builder.indexes == (
        MinMaxIndex("n"),
        ValueListIndex("code", max_values=5),
        BloomFilterIndex("code", fpp=0.05),
        PrefixIndex("code", length=2),
        BloomFilterIndex("n", max_bytes=4096),
    )
    assert BloomFilterIndex("c").hash_scheme == 2, "a new bloom index hashes with scheme 2"


def test_parameters_from_a_stored_definition():
    from metaindex.index import make_index, new_index

    assert PrefixIndex.defaults() == {"length": 4, "max_prefixes": 64}
    assert make_index("prefix", ["code"], {"length": "3", "max_prefixes": 8.0}) == PrefixIndex(
        "code", length=3, max_prefixes=8
    ), "xskipper-style string values convert"
    with pytest.raises(IndexDefinitionError, match="is not an int"):
        make_index("prefix", ["code"], {"length": "three"})
    with pytest.raises(IndexDefinitionError, match="exactly one column"):
        make_index("prefix", ["a", "b"])
    assert make_index("bloom", ["c"], {}).hash_scheme == 1, (
        "a stored bloom definition without hash_scheme was written with scheme 1"
    )
    assert new_index("bloom", "c").hash_scheme == 2
    assert new_index(PrefixIndex, "code", length=2) == PrefixIndex("code", length=2)
