"""metaindex.spark.filters without Spark: shim JSON and Python data source filters -> the
Pruner's conjuncts (``to_conjuncts``, ``datasource_conjuncts``: the hook's and the data
source's live path).

Covers every literal type of the JSON contract, the safety rule (a conjunct with anything
unknown or malformed anywhere inside comes without a predicate and is dropped whole, nothing
else is ever dropped) with hypothesis-generated request trees checked against a three-valued
reference evaluator of the JSON itself, hostile requests (through the hook's request handler),
the conjuncts' texts, and an end-to-end check that a converted request prunes exactly like the
equivalent SQL string through ``metaindex.MetaIndex.prune``.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex.expr import (
    AlwaysFalse,
    And,
    BoundEqualTo,
    BoundIsNull,
    Contains,
    EndsWith,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotNull,
    Or,
    StartsWith,
    bind,
    col,
)
from metaindex.expr.visitors import and_
from metaindex.spark.filters import datasource_conjuncts, to_conjuncts
from tests.expr.reference import evaluate

UTC = datetime.timezone.utc


def req(*filters) -> dict:
    return {"filters": list(filters)}


def predicates(*nodes) -> list:
    """Each top-level filter's predicate, None where it does not convert (the Pruner drops
    it): the hook's path, ``to_conjuncts``."""
    return [c.predicate for c in to_conjuncts(list(nodes))]


def used(*nodes):
    """The AND of the filters that convert (what the Pruner binds)."""
    return and_(*[p for p in predicates(*nodes) if p is not None])


def cmp(op, name, lit):
    return {"op": op, "col": name if isinstance(name, list) else [name], "value": lit}


def lit_int(v, kind="long"):
    return {"type": kind, "value": v}


def lit_double(v):
    return {"type": "double", "bits": struct.unpack("<q", struct.pack("<d", v))[0]}


def lit_str(v):
    return {"type": "string", "value": v}


UNKNOWN = {"op": "unknown", "sql": "upper(s) = 'X'"}


def value_of(lit: dict):
    """The Python value a literal converts to (through a one-conjunct request)."""
    [pred] = predicates(cmp("eq_null_safe", "x", lit))
    assert isinstance(pred, EqualNullSafe), f"{lit} should convert, got {pred!r}"
    return pred.value


# ------------------------------------------------------------------------------ literals


def test_float_bits_are_exact():
    one_point_one = struct.unpack("<i", struct.pack("<f", 1.1))[0]
    v = value_of({"type": "float", "bits": one_point_one})
    assert v == float(np.float32(1.1)) and v != 1.1, "a float literal is the float32 value, not 1.1"
    neg_zero = value_of({"type": "float", "bits": -(1 << 31)})  # Java's signed raw bits of -0.0f
    assert neg_zero == 0.0 and math.copysign(1.0, neg_zero) == -1.0, "-0.0f keeps its sign"
    assert value_of({"type": "float", "bits": 0x80000000}) == 0.0, "unsigned bits are read too"
    nan_payload = value_of({"type": "float", "bits": 0x7FC00123})
    assert nan_payload != nan_payload, "a NaN with a payload is NaN"
    assert value_of({"type": "float", "bits": 0x7F800000}) == math.inf
    assert value_of({"type": "float", "bits": 1}) == float(np.float32(1.4e-45)), "denormal"


def test_double_bits_are_exact():
    for v in (0.1, -0.0, 1e308, -math.inf, 5e-324, 2.0**53 + 2):
        got = value_of(lit_double(v))
        assert got == v and math.copysign(1.0, got) == math.copysign(1.0, v), f"{v!r} round trip"
    nan = value_of({"type": "double", "bits": 0x7FF8000000000001})
    assert nan != nan
    assert value_of({"type": "double", "bits": -1}) != value_of({"type": "double", "bits": -1}), (
        "all-ones bits (signed -1) are a NaN"
    )


@pytest.mark.parametrize(
    "kind,lo,hi",
    [
        ("byte", -128, 127),
        ("short", -32768, 32767),
        ("int", -(2**31), 2**31 - 1),
        ("long", -(2**63), 2**63 - 1),
    ],
)
def test_integer_literals_and_their_ranges(kind, lo, hi):
    assert value_of(lit_int(lo, kind)) == lo and value_of(lit_int(hi, kind)) == hi
    for bad in (lo - 1, hi + 1, 1.0, True, "1", None):
        assert predicates(cmp("eq", "x", lit_int(bad, kind))) == [None], (
            f"{kind} value {bad!r} is malformed: the conjunct is dropped"
        )


def test_other_literal_types():
    assert value_of({"type": "null"}) is None
    assert value_of({"type": "boolean", "value": False}) is False
    assert value_of(lit_str("é😀")) == "é😀"
    assert (
        value_of({"type": "binary", "base64": base64.b64encode(b"\x00\xff").decode()})
        == b"\x00\xff"
    )
    d = value_of({"type": "decimal", "value": "1.5", "precision": 10, "scale": 2})
    assert d == decimal.Decimal("1.50") and d.as_tuple().exponent == -2, "at the type's scale"
    big = "1234567890123456789012345678901234567.8"
    assert value_of(
        {"type": "decimal", "value": big, "precision": 38, "scale": 1}
    ) == decimal.Decimal(big), "38 digits survive exactly"
    assert value_of({"type": "decimal", "value": "1.2E+3", "precision": 5, "scale": -2}) == 1200
    assert value_of({"type": "date", "days": 19000}) == datetime.date(2022, 1, 8)
    assert value_of({"type": "date", "days": -1}) == datetime.date(1969, 12, 31)
    ts = value_of({"type": "timestamp", "micros": 1_700_000_000_000_001})
    assert (
        ts == datetime.datetime(2023, 11, 14, 22, 13, 20, 1, tzinfo=UTC) and ts.tzinfo is not None
    )
    ntz = value_of({"type": "timestamp_ntz", "micros": -1})
    assert ntz == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999) and ntz.tzinfo is None


@pytest.mark.parametrize(
    "lit",
    [
        {"type": "other", "sql": "INTERVAL '1' DAY"},
        {"type": "binary", "base64": "not base64!"},
        {"type": "decimal", "value": "NaN", "precision": 10, "scale": 2},
        {"type": "decimal", "value": "1.555", "precision": 10, "scale": 2},
        {"type": "decimal", "value": "x", "precision": 10, "scale": 2},
        {"type": "decimal", "value": "1E+999999", "precision": 10, "scale": 2},
        {"type": "decimal", "value": "1.5", "precision": "10", "scale": 2},
        {"type": "date", "days": 10**7},
        {"type": "timestamp", "micros": 2**63 - 1},
        {"type": "timestamp_ntz", "micros": 1.5},
        {"type": "float", "bits": 2**32},
        {"type": "double", "bits": "0"},
        {"type": "string", "value": 5},
        {"type": "boolean", "value": 1},
        {"type": "mystery"},
        {"value": 1},
        "1",
    ],
)
def test_unusable_literal_drops_the_conjunct(lit):
    pred = predicates(cmp("gt", "a", lit_int(1)), cmp("eq", "x", lit))
    assert pred == [GreaterThan(col("a"), 1), None], f"only the conjunct with {lit!r} is dropped"


# ------------------------------------------------------------------------------ operators


def test_every_operator():
    x = lit_int(3)
    cases = [
        (cmp("eq", "x", x), EqualTo(col("x"), 3)),
        (cmp("eq_null_safe", "x", x), EqualNullSafe(col("x"), 3)),
        (cmp("lt", "x", x), LessThan(col("x"), 3)),
        (cmp("le", "x", x), LessThanOrEqual(col("x"), 3)),
        (cmp("gt", "x", x), GreaterThan(col("x"), 3)),
        (cmp("ge", "x", x), GreaterThanOrEqual(col("x"), 3)),
        (cmp("starts_with", "x", lit_str("ab")), StartsWith(col("x"), "ab")),
        (cmp("ends_with", "x", lit_str("ab")), EndsWith(col("x"), "ab")),
        (cmp("contains", "x", {"type": "binary", "base64": "AAE="}), Contains(col("x"), b"\0\1")),
        ({"op": "in", "col": ["x"], "values": [x, {"type": "null"}]}, In(col("x"), (3, None))),
        ({"op": "is_null", "col": ["x"]}, IsNull(col("x"))),
        ({"op": "is_not_null", "col": ["x"]}, NotNull(col("x"))),
        ({"op": "is_nan", "col": ["x"]}, IsNaN(col("x"))),
        ({"op": "not", "child": cmp("eq", "x", x)}, Not(EqualTo(col("x"), 3))),
        (
            {"op": "or", "left": cmp("eq", "x", x), "right": {"op": "is_null", "col": ["x"]}},
            Or(EqualTo(col("x"), 3), IsNull(col("x"))),
        ),
        (
            {"op": "and", "left": cmp("eq", "x", x), "right": {"op": "is_null", "col": ["y"]}},
            And(EqualTo(col("x"), 3), IsNull(col("y"))),
        ),
    ]
    for node, expected in cases:
        assert predicates(node) == [expected], f"{node['op']} converts to {expected!r}"
    assert predicates(cmp("starts_with", "x", x)) == [None], (
        "a numeric pattern is not a pattern: dropped"
    )


def test_column_names():
    assert predicates({"op": "is_null", "col": ["a.b"]}) == [IsNull(col("`a.b`"))]
    [nested] = predicates({"op": "is_null", "col": ["s", "x`y"]})
    assert nested == IsNull(col("`s`.`x``y`")), "struct paths are backquoted part by part"
    schema = pa.schema([("s", pa.struct([("x`y", pa.int32())])), ("s.x`y", pa.int32())])
    assert bind(nested, schema) == BoundIsNull(bind(IsNull(col("`s`.`x``y`")), schema).ref)
    assert bind(nested, schema).ref.path == ("s", "x`y"), "the struct field, not the dotted column"
    for bad in ([], [""], ["a", 1], "a", None):
        assert predicates({"op": "is_null", "col": bad}) == [None]


def test_null_literal_semantics():
    schema = pa.schema([("x", pa.int64())])
    assert bind(used(cmp("eq", "x", {"type": "null"})), schema) is AlwaysFalse(), (
        "x = NULL is never true"
    )
    assert (
        bind(used({"op": "not", "child": cmp("eq", "x", {"type": "null"})}), schema)
        is AlwaysFalse()
    ), "NOT (x = NULL) is never true either"
    assert isinstance(
        bind(used(cmp("eq_null_safe", "x", {"type": "null"})), schema), BoundIsNull
    ), "x <=> NULL is x IS NULL"


def test_float32_literal_binds_exactly_to_a_float_column():
    bits = struct.unpack("<i", struct.pack("<f", 1.1))[0]
    [pred] = predicates(cmp("eq", "f", {"type": "float", "bits": bits}))
    bound = bind(pred, pa.schema([("f", pa.float32())]))
    assert isinstance(bound, BoundEqualTo) and bound.value == float(np.float32(1.1)), (
        "a float32 literal against a float32 column is an exact point"
    )


# ------------------------------------------------------------------------------ safety rule


def test_unknown_anywhere_drops_the_whole_conjunct():
    good = cmp("gt", "a", lit_int(1))
    inside_or = {"op": "or", "left": cmp("eq", "b", lit_int(2)), "right": UNKNOWN}
    inside_not = {
        "op": "not",
        "child": {"op": "and", "left": cmp("eq", "b", lit_int(2)), "right": UNKNOWN},
    }
    deep_other = {
        "op": "and",
        "left": cmp("eq", "b", lit_int(2)),
        "right": {
            "op": "or",
            "left": cmp("eq", "c", lit_int(1)),
            "right": cmp("eq", "c", {"type": "other", "sql": "x"}),
        },
    }
    for bad in (
        UNKNOWN,
        inside_or,
        inside_not,
        deep_other,
        {"op": "and", "left": good},
        {"op": "xor"},
        {"op": 5},
        5,
        None,
        [good],
    ):
        conjuncts = to_conjuncts([good, bad])
        assert [c.predicate for c in conjuncts] == [GreaterThan(col("a"), 1), None], (
            f"{bad!r}: that conjunct, and only it, is dropped"
        )
        assert conjuncts[1].error and conjuncts[0].error is None, "the reason comes with it"
        assert predicates(bad) == [None]


def _hook_reply(request) -> tuple:
    """(stats, verdict line) of the hook's answer to a raw request (what the shim gets)."""
    import logging

    from metaindex.spark.hook import _PruneCallback

    logging.disable(logging.WARNING)  # the callback logs the failure with its traceback
    try:
        reply = _PruneCallback().prune(request)
    finally:
        logging.disable(logging.NOTSET)
    first, _, rest = reply.partition("\n")
    return json.loads(first), rest


@pytest.mark.hostile
@pytest.mark.parametrize(
    "doc", ["", "{", "nul", "[1, 2]", "3", '"x"', b"\xff\xfe", "[" * 100_000 + "]" * 100_000]
)
def test_non_json_or_non_object_request_reads_every_file_with_the_reason(doc):
    stats, verdict = _hook_reply(doc)
    assert verdict == "NONE", "an unreadable request reads every file"
    assert stats["reason"].startswith("skipping failed ("), stats


@pytest.mark.hostile
def test_malformed_requests_convert_to_true():
    for doc in ({}, {"filters": None}, {"filters": 5}, {"filters": {}}, {"filters": []}):
        stats, verdict = _hook_reply(json.dumps(doc))
        assert verdict == "NONE" and stats["reason"], "no session, no index: every file read"
    assert to_conjuncts([]) == [], "no filter, no conjunct: nothing is ruled out"
    with pytest.raises(TypeError):
        to_conjuncts(5)


@pytest.mark.hostile
def test_deep_and_long_requests():
    chain = cmp("eq", "a", lit_int(0))
    for k in range(1, 5000):  # a OR a OR ... 5000 deep, as Spark nests a long OR
        chain = {"op": "or", "left": chain, "right": cmp("eq", "a", lit_int(k))}
    [pred] = predicates(chain)
    bound = bind(pred, pa.schema([("a", pa.int64())]))
    assert evaluate(bound, {"a": 4321}) is True and evaluate(bound, {"a": 5000}) is False, (
        "a long OR chain converts whole (flattened, rebuilt balanced)"
    )
    alternating = cmp("eq", "a", lit_int(0))
    for k in range(300):  # AND / OR alternation 300 deep: beyond MAX_DEPTH, dropped
        alternating = {
            "op": "and" if k % 2 else "or",
            "left": alternating,
            "right": cmp("eq", "a", lit_int(k)),
        }
    assert predicates(cmp("gt", "b", lit_int(1)), alternating) == [GreaterThan(col("b"), 1), None]
    text = json.dumps(req(alternating))
    [conjunct] = to_conjuncts(json.loads(text)["filters"])
    assert conjunct.predicate is None and "nested too deeply" in conjunct.error
    assert "AND" in conjunct.text


# ------------------------------------------------------------------------------ hypothesis


COLUMNS = {"i": pa.int64(), "f": pa.float64(), "s": pa.string()}
SCHEMA = pa.schema(list(COLUMNS.items()))
INTS = st.integers(-5, 5)
FLOATS = st.sampled_from([-1.5, -0.0, 0.0, 1.0, 2.5, math.inf, -math.inf, math.nan])
STRINGS = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "é"])


def literal_for(column):
    """A (JSON literal, Python value) strategy for the column's type; sometimes NULL."""
    if column == "i":
        values = INTS.map(lambda v: (lit_int(v, "int"), v))
    elif column == "f":
        values = FLOATS.map(lambda v: (lit_double(v), v))
    else:
        values = STRINGS.map(lambda v: (lit_str(v), v))
    return st.one_of(values, values, values, st.just(({"type": "null"}, None)))


BAD_NODES = st.sampled_from(
    [
        UNKNOWN,
        {"op": "eq", "col": ["i"], "value": {"type": "other", "sql": "x"}},
        {"op": "eq", "col": ["i"]},
        {"op": "lt", "col": "i", "value": lit_int(1)},
        {"op": "frobnicate", "col": ["i"]},
        {"op": "not"},
        "garbage",
    ]
)


@st.composite
def leaf_nodes(draw):
    column = draw(st.sampled_from(sorted(COLUMNS)))
    kinds = ["eq", "eq_null_safe", "lt", "le", "gt", "ge", "in", "is_null", "is_not_null"]
    kinds += ["is_nan"] if column == "f" else []
    kinds += ["starts_with", "ends_with", "contains"] if column == "s" else []
    op = draw(st.sampled_from(kinds))
    if op in ("is_null", "is_not_null", "is_nan"):
        return {"op": op, "col": [column]}
    if op == "in":
        lits = draw(st.lists(literal_for(column), max_size=4))
        return {"op": "in", "col": [column], "values": [lit for lit, _ in lits]}
    lit, _ = draw(literal_for(column))
    return {"op": op, "col": [column], "value": lit}


def trees(allow_bad: bool):
    leaves = st.one_of(leaf_nodes(), BAD_NODES) if allow_bad else leaf_nodes()
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(lambda a, b: {"op": "and", "left": a, "right": b}, inner, inner),
            st.builds(lambda a, b: {"op": "or", "left": a, "right": b}, inner, inner),
            st.builds(lambda a: {"op": "not", "child": a}, inner),
        ),
        max_leaves=8,
    )


def is_clean(node) -> bool:
    """No unknown, unsupported or malformed part anywhere (reference, written independently)."""
    if not isinstance(node, dict):
        return False
    op = node.get("op")
    if op in ("and", "or"):
        return is_clean(node.get("left")) and is_clean(node.get("right"))
    if op == "not":
        return is_clean(node.get("child"))
    if not isinstance(node.get("col"), list):
        return False
    lits = node.get("values") if op == "in" else [node.get("value")]
    if op in ("is_null", "is_not_null", "is_nan"):
        return True
    return (
        op
        in (
            "eq",
            "eq_null_safe",
            "lt",
            "le",
            "gt",
            "ge",
            "in",
            "starts_with",
            "ends_with",
            "contains",
        )
        and isinstance(lits, list)
        and all(
            isinstance(lit, dict) and lit.get("type") in ("null", "int", "double", "string")
            for lit in lits
        )
    )


def has_negated_pattern(node, negated=False) -> bool:
    if not isinstance(node, dict):
        return False
    if node.get("op") in ("and", "or"):
        return has_negated_pattern(node["left"], negated) or has_negated_pattern(
            node["right"], negated
        )
    if node.get("op") == "not":
        return has_negated_pattern(node["child"], not negated)
    return negated and node.get("op") in ("ends_with", "contains")


def _key(v):
    return (1, 0.0) if isinstance(v, float) and v != v else (0, v)


def json_value(lit):
    if lit["type"] == "null":
        return None
    if lit["type"] == "double":
        return struct.unpack("<d", struct.pack("<q", lit["bits"]))[0]
    return lit["value"]


def json_eval(node, row, unknowns) -> bool | None:
    """Three-valued truth of a request node on ``row`` under Spark's semantics; unknown and
    malformed nodes take the next value from ``unknowns`` (any truth value is possible)."""
    if not is_clean(node) and not (
        isinstance(node, dict) and node.get("op") in ("and", "or", "not")
    ):
        return unknowns.pop() if unknowns else None
    op = node["op"]
    if op in ("and", "or", "not"):
        if op == "not":
            if not isinstance(node.get("child"), (dict, str)):
                return unknowns.pop() if unknowns else None
            c = json_eval(node["child"], row, unknowns)
            return None if c is None else not c
        if "left" not in node or "right" not in node:
            return unknowns.pop() if unknowns else None
        a, b = json_eval(node["left"], row, unknowns), json_eval(node["right"], row, unknowns)
        if op == "and":
            return False if False in (a, b) else (None if None in (a, b) else True)
        return True if True in (a, b) else (None if None in (a, b) else False)
    x = row[node["col"][0]]
    if op == "is_null":
        return x is None
    if op == "is_not_null":
        return x is not None
    if op == "is_nan":
        return isinstance(x, float) and x != x
    if op == "in":
        values = [json_value(v) for v in node["values"]]
        if not values:
            return False  # Spark 4: even NULL IN () is false
        if x is None:
            return None
        if any(v is not None and _key(v) == _key(x) for v in values):
            return True
        return None if None in values else False
    v = json_value(node["value"])
    if op == "eq_null_safe":
        return (x is None and v is None) or (x is not None and v is not None and _key(x) == _key(v))
    if x is None or v is None:
        return None
    if op == "starts_with":
        return x.startswith(v)
    if op == "ends_with":
        return x.endswith(v)
    if op == "contains":
        return v in x
    a, b = _key(x), _key(v)
    return {"eq": a == b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


ROWS = st.fixed_dictionaries(
    {
        "i": st.one_of(st.none(), INTS),
        "f": st.one_of(st.none(), FLOATS),
        "s": st.one_of(st.none(), STRINGS),
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(trees(allow_bad=True), min_size=1, max_size=4),
    st.lists(ROWS, min_size=1, max_size=6),
    st.lists(st.sampled_from([True, False, None]), max_size=40),
)
def test_generated_requests_never_lose_a_row(conjuncts, rows, unknowns):
    """Whatever the unknown parts evaluate to: a row the request selects, the predicate selects."""
    bound = bind(used(*conjuncts), SCHEMA)
    for row in rows:
        truth = [json_eval(c, row, list(unknowns)) for c in conjuncts]
        if all(t is True for t in truth):
            assert evaluate(bound, row) is True, (
                f"row {row} satisfies the request {conjuncts} but not {bound!r}"
            )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(trees(allow_bad=True), min_size=1, max_size=4), st.lists(ROWS, max_size=6))
def test_generated_requests_keep_clean_conjuncts_whole(conjuncts, rows):
    """Exactly the unclean conjuncts are dropped; a clean one converts to the same rows."""
    clean = [c for c in conjuncts if is_clean(c)]
    assert used(*conjuncts) == used(*clean), (
        "conjuncts with unknown parts are dropped, the others kept"
    )
    for c in conjuncts:
        [one] = predicates(c)
        if not is_clean(c):
            assert one is None, f"{c} holds an unknown part: dropped whole"
            continue
        bound = bind(one, SCHEMA)
        for row in rows:
            want, got = json_eval(c, row, []), evaluate(bound, row)
            if has_negated_pattern(c):  # NOT ends_with / contains widen to TRUE: a superset
                assert want is not True or got is True
            else:
                assert (want is True) == (got is True), f"{c} on {row}: {want} vs {got!r}"


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(
                st.sampled_from(
                    [
                        "op",
                        "col",
                        "value",
                        "values",
                        "left",
                        "right",
                        "child",
                        "type",
                        "bits",
                        "micros",
                        "days",
                        "base64",
                        "scale",
                        "precision",
                        "filters",
                    ]
                ),
                inner,
                max_size=5,
            ),
        ),
        max_leaves=20,
    )
)
def test_random_json_never_raises_on_an_object(doc):
    filters = doc if isinstance(doc, list) else [doc]
    conjuncts = to_conjuncts(filters)
    assert len(conjuncts) == len(filters), "one conjunct per filter"
    for c in conjuncts:
        assert isinstance(c.text, str) and (c.predicate is not None or c.error)


# ------------------------------------------------------------------------------ conjunct text


def test_conjunct_texts_are_short_sql():
    doc = req(
        cmp("gt", "a", lit_int(5)),
        {"op": "or", "left": cmp("eq", "b", lit_str("x")), "right": UNKNOWN},
        {"op": "in", "col": ["c"], "values": [lit_int(k) for k in range(100)]},
        cmp("lt", ["s", "t"], {"type": "timestamp", "micros": 0}),
    )
    conjuncts = to_conjuncts(json.loads(json.dumps(doc))["filters"])
    assert [c.text for c in conjuncts[:2]] == ["a > 5", "(b = 'x' OR ?upper(s) = 'X')"]
    assert [c.predicate is None for c in conjuncts] == [False, True, False, False], (
        "the OR with an unknown branch is the unused one"
    )
    assert "… 100 values" in conjuncts[2].text, conjuncts[2].text
    assert "TIMESTAMP '1970-01-01 00:00:00'" in conjuncts[3].text, conjuncts[3].text
    long = to_conjuncts(
        [
            {
                "op": "or",
                "left": cmp("eq", "a", lit_str("x" * 500)),
                "right": cmp("eq", "a", lit_str("y" * 900)),
            }
        ]
    )
    assert len(long[0].text) <= 1000


# ------------------------------------------------------------------------------ data source


def test_from_datasource_filters():
    from pyspark.sql import datasource as ds

    ts = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    filters = [
        ds.EqualTo(("a",), 1),
        ds.EqualNullSafe(("a",), None),
        ds.GreaterThan(("s", "x"), 2.5),
        ds.GreaterThanOrEqual(("d",), datetime.date(2024, 1, 1)),
        ds.LessThan(("t",), ts),
        ds.LessThanOrEqual(("m",), decimal.Decimal("1.50")),
        ds.In(("a",), (1, 2, None)),
        ds.IsNull(("a",)),
        ds.IsNotNull(("a",)),
        ds.Not(ds.EqualTo(("a",), 3)),
        ds.StringStartsWith(("n",), "ab"),
        ds.StringEndsWith(("n",), "yz"),
        ds.StringContains(("n",), "mm"),
        ds.EqualTo(("b",), b"\x01"),
        ds.In(("a",), [4, 5]),  # Spark 4.3 hands In values as a list
    ]
    unusable = [
        ds.EqualTo(("a",), [1, 2]),
        ds.EqualTo(("a",), {"k": 1}),
        ds.EqualTo((), 1),
        ds.Not(ds.EqualTo(("a",), [1])),
        ds.EqualTo(("m",), decimal.Decimal("1234567890123456789012345678.9")),
    ]
    conjuncts = datasource_conjuncts(filters + unusable)
    assert [c.text for c in conjuncts] == [repr(f) for f in filters + unusable]
    unused = [f for f, c in zip(filters + unusable, conjuncts, strict=True) if c.predicate is None]
    assert unused == unusable and all(u is v for u, v in zip(unused, unusable, strict=True)), (
        "exactly the unusable filters come without a predicate"
    )
    assert all(c.error for c in conjuncts[len(filters) :]), "each with the reason"
    expected = [
        EqualTo(col("a"), 1),
        EqualNullSafe(col("a"), None),
        GreaterThan(col("`s`.`x`"), 2.5),
        GreaterThanOrEqual(col("d"), datetime.date(2024, 1, 1)),
        LessThan(col("t"), ts),
        LessThanOrEqual(col("m"), decimal.Decimal("1.50")),
        In(col("a"), (1, 2, None)),
        IsNull(col("a")),
        NotNull(col("a")),
        Not(EqualTo(col("a"), 3)),
        StartsWith(col("n"), "ab"),
        EndsWith(col("n"), "yz"),
        Contains(col("n"), "mm"),
        EqualTo(col("b"), b"\x01"),
        In(col("a"), (4, 5)),
    ]
    assert [c.predicate for c in conjuncts[: len(filters)]] == expected
    assert datasource_conjuncts([]) == []


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """30 files, each a narrow range of every literal type, indexed with min/max and value lists."""
    from metaindex import MetaIndex
    from metaindex.engine.executors import SerialExecutor

    root = str(tmp_path_factory.mktemp("typed") / "t")
    os.makedirs(root)
    for k in range(30):
        n = 10
        base_ts = datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=k)
        table = pa.table(
            {
                "i8": pa.array([k - 15] * n, pa.int8()),
                "i64": pa.array([k * 1000 + j for j in range(n)], pa.int64()),
                "f32": pa.array(
                    [np.float32(k) + np.float32(0.1) * j for j in range(n)], pa.float32()
                ),
                "f64": pa.array(
                    [k + j / 10 if (k, j) != (7, 0) else math.nan for j in range(n)], pa.float64()
                ),
                "dec": pa.array(
                    [decimal.Decimal(k) + decimal.Decimal(j) / 100 for j in range(n)],
                    pa.decimal128(10, 2),
                ),
                "s": pa.array([f"k{k:02d}-{j}" for j in range(n)], pa.string()),
                "b": pa.array([bytes([k, j]) for j in range(n)], pa.binary()),
                "flag": pa.array([k % 2 == 0] * n, pa.bool_()),
                "d": pa.array(
                    [datetime.date(2024, 1, 1) + datetime.timedelta(days=k)] * n, pa.date32()
                ),
                "ts": pa.array(
                    [base_ts + datetime.timedelta(minutes=j) for j in range(n)],
                    pa.timestamp("us", tz="UTC"),
                ),
                "ntz": pa.array(
                    [
                        base_ts.replace(tzinfo=None) + datetime.timedelta(minutes=j)
                        for j in range(n)
                    ],
                    pa.timestamp("us"),
                ),
                "n": pa.array([None if k % 3 == 0 else j for j in range(n)], pa.int32()),
            }
        )
        pq.write_table(table, os.path.join(root, f"part-{k:03d}.parquet"))
    mi = MetaIndex(root)
    builder = mi.index_builder()
    for c in ("i8", "i64", "f32", "f64", "dec", "s", "b", "d", "ts", "ntz", "n"):
        builder.add_min_max_index(c)
    builder.add_value_list_index("flag")
    builder.build(executor=SerialExecutor())
    return mi


def _f32(v):
    return {"type": "float", "bits": struct.unpack("<i", struct.pack("<f", v))[0]}


def _ts(text, kind="timestamp"):
    dt = datetime.datetime.fromisoformat(text)
    micros = (dt - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
    return {"type": kind, "micros": micros}


E2E = [
    (cmp("lt", "i8", lit_int(-10, "byte")), "i8 < -10"),
    (cmp("eq", "i64", lit_int(12003)), "i64 = 12003"),
    ({"op": "in", "col": ["i64"], "values": [lit_int(5), lit_int(29009)]}, "i64 IN (5, 29009)"),
    (cmp("ge", "f32", _f32(28.5)), "f32 >= CAST('28.5' AS FLOAT)"),
    (
        cmp("eq", "f32", _f32(np.float32(3) + np.float32(0.1) * 2)),
        f"f32 = CAST('{float(np.float32(3) + np.float32(0.1) * 2)!r}' AS FLOAT)",
    ),
    (cmp("eq", "f64", lit_double(math.nan)), "f64 = CAST('NaN' AS DOUBLE)"),
    ({"op": "is_nan", "col": ["f64"]}, "isnan(f64)"),
    (cmp("gt", "f64", lit_double(28.85)), "f64 > 28.85D"),
    (
        cmp("le", "dec", {"type": "decimal", "value": "2.05", "precision": 10, "scale": 2}),
        "dec <= 2.05",
    ),
    (cmp("starts_with", "s", lit_str("k1")), "s LIKE 'k1%'"),
    (cmp("gt", "s", lit_str("k27")), "s > 'k27'"),
    (
        cmp("eq", "b", {"type": "binary", "base64": base64.b64encode(bytes([4, 2])).decode()}),
        "b = X'0402'",
    ),
    (cmp("eq", "flag", {"type": "boolean", "value": False}), "flag = false"),
    (cmp("lt", "d", {"type": "date", "days": 19723 + 3}), "d < DATE '2024-01-04'"),
    (cmp("ge", "ts", _ts("2024-01-02T04:05:00")), "ts >= TIMESTAMP '2024-01-02 04:05:00'"),
    (
        cmp("lt", "ntz", _ts("2024-01-01T02:00:00", "timestamp_ntz")),
        "ntz < TIMESTAMP_NTZ '2024-01-01 02:00:00'",
    ),
    (cmp("eq", "n", {"type": "null"}), "n = NULL"),
    (cmp("eq_null_safe", "n", {"type": "null"}), "n <=> NULL"),
    ({"op": "is_not_null", "col": ["n"]}, "n IS NOT NULL"),
    ({"op": "not", "child": cmp("lt", "i64", lit_int(27000))}, "NOT (i64 < 27000)"),
    (
        {
            "op": "or",
            "left": cmp("eq", "i8", lit_int(0, "byte")),
            "right": cmp("gt", "ts", _ts("2024-01-02T04:00:00")),
        },
        "i8 = 0 OR ts > TIMESTAMP '2024-01-02 04:00:00'",
    ),
]


@pytest.mark.parametrize("node,sql", E2E, ids=[sql for _, sql in E2E])
def test_converted_request_prunes_like_the_sql_string(typed_table, node, sql):
    mi = typed_table
    from_json = mi.prune(to_conjuncts(json.loads(json.dumps(req(node)))["filters"]))
    from_sql = mi.prune(sql)
    assert sorted(from_json.kept) == sorted(from_sql.kept), (
        f"{from_json.stats.conjuncts[0].text} keeps other files than {sql!r}"
    )
    assert from_json.stats.skipped_files > 0, f"{sql!r} should skip files on this table"
    with_unknown = mi.prune(to_conjuncts([node, UNKNOWN]))
    assert sorted(with_unknown.kept) == sorted(from_sql.kept), "an unknown conjunct only widens"
    assert (
        mi.prune(to_conjuncts([{"op": "or", "left": node, "right": UNKNOWN}])).stats.skipped_files
        == 0
    ), "an OR with an unknown branch is dropped whole: no file skipped"
