"""The tree evaluator: And/Or/constants, several indexes, unindexed columns, per-index counts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from metaindex.expr import AlwaysFalse, AlwaysTrue, And, BoundEqualTo, Not, Or, bind, parse_sql
from metaindex.index import (
    BloomFilterIndex,
    Index,
    MinMaxIndex,
    ValueListIndex,
    evaluate,
    make_index,
    might_match,
    storage_name,
)
from tests.index.util import metadata, ref

SCHEMA = pa.schema(
    [
        ("a", pa.int64()),
        ("b", pa.string()),
        ("c", pa.float64()),
        ("s", pa.struct([("x", pa.int32())])),
    ]
)
A = [[1, 2], [5, 9], [3], [None]]
B = [["x"], ["y", "z"], ["x", "q"], ["w"]]
SX = [[10], [20], [30], [None]]


@pytest.fixture()
def setup():
    indexes = [
        MinMaxIndex("a"),
        ValueListIndex("a"),
        ValueListIndex("b"),
        BloomFilterIndex("b"),
        MinMaxIndex("s.x"),
    ]
    data = {"a": (A, pa.int64()), "b": (B, pa.string()), "s.x": (SX, pa.int32())}
    meta = {ix.key: metadata(ix, *data[ix.column]) for ix in indexes}
    return indexes, meta


def _kept(sql, setup):
    indexes, meta = setup
    return might_match(bind(parse_sql(sql), SCHEMA), indexes, meta, 4).tolist()


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("a = 5", [False, True, False, False]),
        ("a = 5 OR b = 'x'", [True, True, True, False]),
        ("a = 5 AND b = 'x'", [False, False, False, False]),
        ("(a < 3 OR a > 8) AND b IN ('x', 'z')", [True, True, False, False]),
        ("c > 0", [True, True, True, True]),  # no index on c
        ("c > 0 AND a = 3", [False, False, True, False]),
        ("c > 0 OR a = 3", [True, True, True, True]),
        ("s.x = 20", [False, True, False, False]),  # nested field by dotted path
        ("NOT (a = 1 OR b = 'w')", [True, True, True, False]),  # bind pushes NOT down
        ("TRUE", [True] * 4),
        ("FALSE", [False] * 4),
    ],
)
def test_trees(sql, expected, setup):
    assert _kept(sql, setup) == expected, sql


def test_each_index_answers_and_the_answers_are_anded(setup):
    indexes, meta = setup
    expr = bind(parse_sql("a = 6"), SCHEMA)
    alone = {ix.key: might_match(expr, [ix], meta, 4).tolist() for ix in indexes[:2]}
    assert alone[MinMaxIndex("a").key] == [False, True, False, False], "6 is in [5, 9]"
    assert alone[ValueListIndex("a").key] == [False, False, False, False], "6 is not listed"
    assert might_match(expr, indexes, meta, 4).tolist() == [False] * 4, (
        "a file is skipped when any index on the column proves it"
    )


def test_per_index_skip_counts(setup):
    indexes, meta = setup
    result = evaluate(bind(parse_sql("a = 6 AND b = 'x'"), SCHEMA), indexes, meta, 4)
    assert result.kept.tolist() == [False] * 4 and result.num_skipped == 4
    assert result.skipped_by_index == {
        MinMaxIndex("a").key: 3,
        ValueListIndex("a").key: 4,
        ValueListIndex("b").key: 2,
        BloomFilterIndex("b").key: 2,
        MinMaxIndex("s.x").key: 0,
    }


def test_constants_and_errors(setup):
    indexes, meta = setup
    assert might_match(AlwaysTrue(), indexes, meta, 4).tolist() == [True] * 4
    leaf = BoundEqualTo(ref("a", pa.int64()), 1)
    assert might_match(Or(AlwaysFalse(), leaf), indexes, meta, 4).tolist() == [
        True,
        False,
        False,
        False,
    ]
    with pytest.raises(ValueError, match="rewrite_not"):
        might_match(And(leaf, Not(BoundEqualTo(ref("b", pa.string()), "x"))), indexes, meta, 4)
    with pytest.raises(TypeError, match="not a bound leaf"):
        might_match(parse_sql("a = 1"), indexes, meta, 4)
    with pytest.raises(ValueError, match="no metadata"):
        might_match(leaf, indexes, {}, 4)
    with pytest.raises(ValueError, match="entries for 5 files"):
        might_match(leaf, indexes, meta, 5)


def test_no_files_and_no_indexes():
    leaf = BoundEqualTo(ref("a", pa.int64()), 1)
    assert might_match(leaf, [], {}, 3).tolist() == [True] * 3
    ix = MinMaxIndex("a")
    empty = {ix.key: pa.array([], ix.metadata_type(pa.int64()))}
    assert might_match(leaf, [ix], empty, 0).tolist() == []


def test_definitions_names_and_equality():
    assert (
        storage_name("someindex", ["lat#_.$_new", "$_lng.#"])
        == "lat##_$#$$_new_$_lng$#$##_someindex_14-10"
    ), "xskipper's version-2 example"
    assert MinMaxIndex("a.b").key == "a$#$b_minmax_5"
    ix = make_index("valuelist", ["b"], {"max_values": "7"})
    assert ix == ValueListIndex("b", max_values=7) and hash(ix) == hash(ValueListIndex("b", 7))
    assert ix != ValueListIndex("b", max_values=8) and ix != MinMaxIndex("b")
    assert make_index("bloom", "c", {"fpp": "0.05"}).params == {
        "fpp": 0.05,
        "max_bytes": 1 << 20,
        "hash_scheme": 1,
    }, "a stored bloom definition without hash_scheme was written with scheme 1"
    assert BloomFilterIndex("c").hash_scheme == 2, "new bloom indexes hash with scheme 2"
    assert isinstance(make_index("minmax", ("a",)), Index)
    for bad in [
        ("nope", ["a"], {}),
        ("minmax", ["a", "b"], {}),
        ("minmax", ["a"], {"fpp": 1}),
        ("bloom", ["a"], {"fpp": "x"}),
        ("valuelist", ["a"], {"max_values": -1}),
    ]:
        with pytest.raises(ValueError):
            make_index(*bad)
    with pytest.raises(TypeError):
        MinMaxIndex("")
