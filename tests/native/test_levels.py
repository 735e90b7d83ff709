"""Dremel levels: kernels vs the pure-Python reference, round trips, pyarrow's own levels,
legacy list layouts and hostile level streams."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex._native import levels as klevels
from metaindex._native import levels_assemble as kassemble
from metaindex.errors import DecodeError, EncodeError, SchemaError
from metaindex.parquet.shred import (
    OPTIONAL,
    REPEATED,
    REQUIRED,
    LeafColumn,
    LevelNode,
    assemble,
    leaf_specs,
    level_tree,
    shred,
)
from tests.reference import levels as ref

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ------------------------------------------------------------------------ strategies

LEAF_TYPES = [pa.int64(), pa.string(), pa.int32(), pa.bool_()]


def _list_of(t, nullable, flavor):
    vf = pa.field("item", t, nullable)
    return pa.large_list(vf) if flavor == "large" else pa.list_(vf)


def nested_types():
    """Random nested types; every level's nullability random."""
    leaf = st.sampled_from(LEAF_TYPES)

    def extend(children):
        return st.one_of(
            st.tuples(children, st.booleans(), st.sampled_from(["list", "large"])).map(
                lambda a: _list_of(*a)
            ),
            st.lists(st.tuples(children, st.booleans()), min_size=1, max_size=3).map(
                lambda fs: pa.struct([pa.field(f"f{i}", t, nn) for i, (t, nn) in enumerate(fs)])
            ),
            st.tuples(children, st.booleans()).map(
                lambda a: pa.map_(pa.string(), pa.field("value", a[0], a[1]))
            ),
        )

    named = st.one_of(
        st.booleans().map(lambda nn: pa.int64()),
        st.booleans().map(lambda nn: pa.string()),
        st.tuples(st.booleans(), st.booleans()).map(
            lambda a: pa.struct(
                [
                    pa.field("a", pa.int32(), a[0]),
                    pa.field("b", pa.list_(pa.field("item", pa.string(), a[1])), a[0]),
                ]
            )
        ),
        st.tuples(st.booleans(), st.booleans()).map(
            lambda a: pa.list_(pa.field("item", pa.list_(pa.field("item", pa.int64(), a[0])), a[1]))
        ),
        st.booleans().map(lambda nn: pa.map_(pa.string(), pa.field("value", pa.int32(), nn))),
        st.tuples(st.booleans(), st.booleans()).map(
            lambda a: pa.list_(
                pa.field(
                    "item",
                    pa.struct(
                        [
                            pa.field("x", pa.int64(), a[0]),
                            pa.field("y", pa.list_(pa.string()), a[1]),
                        ]
                    ),
                    a[0],
                )
            )
        ),
    )
    return st.one_of(named, st.recursive(leaf, extend, max_leaves=5))


def values_of(t, nullable):
    if pa.types.is_int64(t):
        base = st.integers(-(2**63), 2**63 - 1)
    elif pa.types.is_int32(t):
        base = st.integers(-(2**31), 2**31 - 1)
    elif pa.types.is_string(t):
        base = st.text(max_size=4)
    elif pa.types.is_boolean(t):
        base = st.booleans()
    elif pa.types.is_map(t):
        base = st.lists(
            st.tuples(st.text(max_size=3), values_of(t.item_type, t.item_field.nullable)),
            max_size=3,
        )
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        base = st.lists(values_of(t.value_type, t.value_field.nullable), max_size=4)
    elif pa.types.is_struct(t):
        base = st.fixed_dictionaries({f.name: values_of(f.type, f.nullable) for f in t})
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), base) if nullable else base


@st.composite
def arrays(draw):
    t = draw(nested_types())
    nullable = draw(st.booleans())
    rows = draw(
        st.lists(values_of(t, nullable), min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=12)
    )
    arr = pa.array(rows, type=t)
    if draw(st.booleans()) and len(arr) > 1:
        start = draw(st.integers(0, len(arr) - 1))
        arr = arr.slice(start, draw(st.integers(1, len(arr) - start)))
    return arr, pa.field("c", t, nullable)


# ------------------------------------------------------------------------------ helpers


def _as_list(x):
    return None if x is None else [int(v) for v in x]


def check_against_reference(arr, field):
    cols = shred(arr, field)
    expected = ref.shred_ref(arr, field)
    assert len(cols) == len(expected), "one LeafColumn per leaf"
    for col, (path, max_def, max_rep, defs, reps, vals) in zip(cols, expected, strict=True):
        where = ".".join(path)
        assert col.path == path, f"{where}: path {col.path}"
        assert (col.max_def, col.max_rep) == (max_def, max_rep), f"{where}: max levels"
        assert col.def_levels.dtype == np.int16, f"{where}: def levels are int16"
        assert _as_list(col.def_levels) == defs, f"{where}: def levels differ from the reference"
        assert _as_list(col.rep_levels) == reps, f"{where}: rep levels differ from the reference"
        assert col.values.null_count == 0, f"{where}: values hold only present values"
        assert col.values.to_pylist() == vals, f"{where}: present values differ"
    return cols


def roundtrip(arr, field):
    cols = shred(arr, field)
    back = assemble(level_tree(field), cols)
    back.validate(full=True)
    assert back.type == arr.type, f"assembled type {back.type} != {arr.type}"
    assert back.equals(arr), f"round trip changed the data: {back.to_pylist()} != {arr.to_pylist()}"
    return back


# --------------------------------------------------------------------- property tests


@SETTINGS
@given(arrays())
def test_shred_matches_reference(case):
    arr, field = case
    check_against_reference(arr, field)


@SETTINGS
@given(arrays())
def test_roundtrip(case):
    arr, field = case
    roundtrip(arr, field)


@SETTINGS
@given(arrays())
def test_assemble_matches_reference(case):
    arr, field = case
    cols = ref.shred_ref(arr, field)
    leaves = [
        (
            np.array(d, dtype=np.int16),
            None if r is None else np.array(r, dtype=np.int16),
            pa.array(v, type=_leaf_type(field, path)),
        )
        for path, _, _, d, r, v in cols
    ]
    got = assemble(level_tree(field), leaves)
    want = ref.assemble_ref(field, [(d, r, v) for _, _, _, d, r, v in cols])
    assert got.to_pylist() == want == arr.to_pylist(), "kernel and reference assembly differ"


def _leaf_type(field, path):
    for spec in leaf_specs(level_tree(field)):
        if spec.path == path:
            return spec.node.arrow_type
    raise AssertionError(path)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(arrays())
def test_levels_equal_pyarrows(case):
    """pyarrow's writer computes the same def / rep levels for the same Arrow data."""
    arr, field = case
    sink = pa.BufferOutputStream()
    pq.write_table(
        pa.Table.from_arrays([arr], schema=pa.schema([field])),
        sink,
        compression="NONE",
        use_dictionary=False,
        data_page_version="2.0",
    )
    theirs = ref.pyarrow_levels(sink.getvalue().to_pybytes())
    ours = shred(arr, field)
    assert [c.path for c in ours] == [t[0] for t in theirs], "column paths as pyarrow writes"
    for col, (path, max_def, max_rep, defs, reps) in zip(ours, theirs, strict=True):
        where = ".".join(path)
        assert (col.max_def, col.max_rep) == (max_def, max_rep), f"{where}: max levels"
        if not len(arr):
            continue
        assert _as_list(col.def_levels) == defs, f"{where}: def levels differ from pyarrow's"
        assert _as_list(col.rep_levels) == reps, f"{where}: rep levels differ from pyarrow's"


# ---------------------------------------------------------------------- worked examples


def test_null_vs_empty_vs_list_of_nulls():
    arr = pa.array([None, [], [None], [1, None]], type=pa.list_(pa.int32()))
    (col,) = shred(arr, pa.field("c", arr.type))
    assert col.path == ("c", "list", "element")
    assert (col.max_def, col.max_rep) == (3, 1)
    assert col.def_levels.tolist() == [0, 1, 2, 3, 2], "null list 0, empty 1, null element 2"
    assert col.rep_levels.tolist() == [0, 0, 0, 0, 1]
    assert col.values.to_pylist() == [1]
    roundtrip(arr, pa.field("c", arr.type))


def test_required_levels_have_no_def_increment():
    t = pa.list_(pa.field("element", pa.int32(), nullable=False))
    arr = pa.array([[1, 2], [], [3]], type=t)
    (col,) = shred(arr, pa.field("c", t, nullable=False))
    assert col.max_def == 1 and col.def_levels.tolist() == [1, 1, 0, 1]
    assert col.rep_levels.tolist() == [0, 1, 0, 0]
    flat = shred(pa.array([5, 6], pa.int64()), pa.field("x", pa.int64(), nullable=False))[0]
    assert flat.max_def == 0 and flat.rep_levels is None
    assert flat.def_levels.tolist() == [0, 0], "required flat column: def levels all 0"


def test_dremel_paper_like_nesting():
    t = pa.struct(
        [
            pa.field("id", pa.int64(), False),
            pa.field(
                "links",
                pa.struct(
                    [pa.field("fwd", pa.list_(pa.int64())), pa.field("back", pa.list_(pa.int64()))]
                ),
            ),
        ]
    )
    rows = [
        {"id": 10, "links": {"fwd": [20, 40, 60], "back": None}},
        {"id": 20, "links": {"fwd": [80], "back": [10, 30]}},
        {"id": 30, "links": None},
    ]
    arr = pa.array(rows, type=t)
    field = pa.field("doc", t, nullable=False)
    cols = check_against_reference(arr, field)
    assert [c.path for c in cols] == [
        ("doc", "id"),
        ("doc", "links", "fwd", "list", "element"),
        ("doc", "links", "back", "list", "element"),
    ]
    assert cols[1].def_levels.tolist() == [4, 4, 4, 4, 0]
    assert cols[1].rep_levels.tolist() == [0, 1, 1, 0, 0]
    assert cols[2].def_levels.tolist() == [1, 4, 4, 0]
    roundtrip(arr, field)


@pytest.mark.parametrize(
    "values",
    [
        pa.array([1, 2, 3, 4, 5, 6], pa.int64()),  # prefilled list path, memcpy
        pa.array([1, None, 3, 4, 5, None], pa.int64()),  # gather with validity
        pa.array([True, False, True, True, False, True]),  # boolean bits
        pa.array([True, None, True, True, False, None]),
        pa.array(["a", "bb", "", "ccc", "d", "e"]),  # selection bitmap + filter
        pa.array([decimal.Decimal(i) for i in range(6)], pa.decimal128(5, 0)),  # 16-byte values
        pa.array([1, 2, 3, 4, 5, 6], pa.int8()),
    ],
)
def test_null_list_with_non_empty_child_range_is_skipped(values):
    arr = pa.ListArray.from_arrays(
        pa.array([0, 2, 4, 6], pa.int32()), values, mask=pa.array([False, True, False])
    )
    field = pa.field("c", arr.type)
    (col,) = check_against_reference(arr, field)
    want = [v for v in values.to_pylist()[:2] + values.to_pylist()[4:] if v is not None]
    assert col.values.to_pylist() == want, "values under a null list are not written"
    roundtrip(arr, field)
    outer = pa.ListArray.from_arrays(
        pa.array([0, 2, 3], pa.int32()), arr, mask=pa.array([False, True])
    )
    check_against_reference(outer, pa.field("c", outer.type))
    roundtrip(outer, pa.field("c", outer.type))


def test_null_struct_hides_valid_children():
    child = pa.array([1, 2, 3], pa.int64())
    arr = pa.StructArray.from_arrays([child], names=["a"], mask=pa.array([False, True, False]))
    (col,) = check_against_reference(arr, pa.field("s", arr.type))
    assert col.values.to_pylist() == [1, 3]


@pytest.mark.parametrize("offset,length", [(0, 7), (1, 5), (3, 4), (6, 1), (7, 0), (2, 0)])
def test_sliced_arrays(offset, length):
    rows = [
        {"a": [1, None], "b": "x"},
        None,
        {"a": [], "b": None},
        {"a": None, "b": "y"},
        {"a": [4, 5, 6], "b": "z"},
        None,
        {"a": [7], "b": ""},
    ]
    t = pa.struct([pa.field("a", pa.list_(pa.int64())), pa.field("b", pa.string())])
    arr = pa.array(rows, type=t).slice(offset, length)
    field = pa.field("c", t)
    check_against_reference(arr, field)
    roundtrip(arr, field)


@pytest.mark.parametrize(
    "t,rows",
    [
        (pa.list_(pa.int64(), 2), [[1, 2], None, [3, None]]),
        (pa.list_(pa.field("item", pa.int8(), False), 3), [[1, 2, 3], None, [4, 5, 6]]),
        (pa.list_(pa.int16(), 0), [[], None, []]),
        (pa.large_list(pa.large_string()), [["a", None], None, [], ["bc"]]),
        (pa.list_(pa.float32()), [[1.5, None, -0.0], None]),
        (pa.list_(pa.decimal128(20, 3)), [[decimal.Decimal("1.250"), None], []]),
        (pa.list_(pa.binary(3)), [[b"abc", None, b"xyz"]]),
        (pa.list_(pa.timestamp("us", tz="UTC")), [[0, None, 10**15]]),
        (pa.list_(pa.bool_()), [[True, None, False, True] * 5, None, []]),
        (pa.map_(pa.string(), pa.list_(pa.int64())), [[("k", [1, None]), ("j", None)], None, []]),
        (pa.list_(pa.dictionary(pa.int32(), pa.string())), [["a", None, "b", "a"], None]),
        (pa.struct([pa.field("n", pa.null())]), [{"n": None}, None]),
    ],
)
def test_leaf_and_list_flavours_roundtrip(t, rows):
    arr = pa.array(rows, type=t)
    field = pa.field("c", t)
    roundtrip(arr, field)
    roundtrip(arr.slice(1), field)


def test_large_flat_column_gathers_values():
    rng = np.random.default_rng(7)
    n = 100_003
    arr = pa.array(rng.integers(-1000, 1000, n), mask=rng.random(n) < 0.3).slice(5, n - 9)
    (col,) = shred(arr, pa.field("c", arr.type))
    assert col.values.equals(arr.drop_null()), "gathered values equal drop_null()"
    assert col.def_levels.tolist() == arr.is_valid().cast(pa.int16()).to_pylist()
    roundtrip(arr, pa.field("c", arr.type))


@pytest.mark.parametrize(
    "big",
    [
        pa.array(range(40), pa.int64()),
        pa.array([i % 3 == 0 for i in range(40)]),
        pa.array([str(i) for i in range(40)]),
        pa.array([str(i) for i in range(40)], pa.large_string()),
        pa.array([decimal.Decimal(i) for i in range(40)], pa.decimal128(4, 0)),
        pa.array([str(i) for i in range(40)]).dictionary_encode(),
    ],
)
def test_assemble_from_sliced_values(big):
    """Decoded values may arrive with an array offset (every scatter mode honours it)."""
    field = pa.field("c", pa.list_(big.type))
    defs = np.array([3, 2, 3, 0, 1, 3, 3, 2], np.int16)
    reps = np.array([0, 1, 1, 0, 0, 0, 1, 1], np.int16)
    values = big.slice(7, 4)
    arr = assemble(level_tree(field), [(defs, reps, values)])
    arr.validate(full=True)
    v = values.to_pylist()
    assert arr.to_pylist() == [[v[0], None, v[1]], None, [], [v[2], v[3], None]]


def test_contiguous_values_are_zero_copy_slices():
    values = pa.array(np.arange(20, dtype=np.int32))
    arr = pa.ListArray.from_arrays(pa.array([0, 5, 5, 12, 20], pa.int32()), values).slice(1, 2)
    (col,) = shred(arr, pa.field("c", arr.type))
    assert col.values.buffers()[1].address == values.buffers()[1].address, "a slice, not a copy"
    assert col.values.to_pylist() == list(range(5, 12))


def test_non_nullable_field_holding_nulls_is_rejected():
    with pytest.raises(EncodeError, match="non-nullable"):
        shred(pa.array([1, None]), pa.field("c", pa.int64(), nullable=False))
    t = pa.list_(pa.field("item", pa.int64(), nullable=False))
    arr = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), pa.array([1, None]), type=t)
    with pytest.raises(EncodeError, match="non-nullable"):
        shred(arr, pa.field("c", t))


def test_array_that_does_not_fit_the_field():
    with pytest.raises(EncodeError):
        shred(pa.array([1, 2]), pa.field("c", pa.list_(pa.int64())))
    with pytest.raises(TypeError):
        shred([1, 2], pa.field("c", pa.int64()))
    with pytest.raises(SchemaError):
        level_tree(pa.field("u", pa.struct([])))


def test_paths_and_max_levels_match_pyarrows_schema():
    t = pa.struct(
        [
            pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
            pa.field(
                "l",
                pa.list_(pa.field("item", pa.struct([pa.field("z", pa.bool_())]), False)),
                False,
            ),
        ]
    )
    field = pa.field("c", t)
    arr = pa.array([None], type=t)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_arrays([arr], schema=pa.schema([field])), sink)
    schema = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
    specs = leaf_specs(level_tree(field))
    assert [".".join(s.path) for s in specs] == [schema.column(i).path for i in range(len(specs))]
    for i, s in enumerate(specs):
        assert s.max_def == schema.column(i).max_definition_level, s.path
        assert s.max_rep == schema.column(i).max_repetition_level, s.path


# ------------------------------------------------------------- legacy / hand-built trees


def leaf(name, rep, t=None):
    return LevelNode(name, rep, "leaf", (), pa.int32() if t is None else t)


def test_bare_repeated_field_is_a_required_list():
    node = leaf("x", REPEATED)
    arr = assemble(node, [([0, 1, 1, 1, 0], [0, 0, 1, 1, 0], pa.array([1, 2, 3], pa.int32()))])
    assert arr.to_pylist() == [[], [1, 2, 3], []]
    assert arr.type == pa.list_(pa.field("x", pa.int32(), False)) and arr.null_count == 0
    assert leaf_specs(node)[0].path == ("x",) and (
        leaf_specs(node)[0].max_def,
        leaf_specs(node)[0].max_rep,
    ) == (1, 1)


def test_bare_repeated_group_is_a_list_of_structs():
    node = LevelNode(
        "g", REPEATED, "group", (leaf("num", REQUIRED), leaf("str", OPTIONAL, pa.string()))
    )
    arr = assemble(
        node,
        [
            ([1, 1, 0], [0, 1, 0], pa.array([1, 2], pa.int32())),
            ([2, 1, 0], [0, 1, 0], pa.array(["a"])),
        ],
    )
    assert arr.to_pylist() == [[{"num": 1, "str": "a"}, {"num": 2, "str": None}], []]


@pytest.mark.parametrize(
    "repeated,expect_nullable_elements",
    [
        (leaf("element", REPEATED), False),  # rule 1
        (
            LevelNode("element", REPEATED, "group", (leaf("str", REQUIRED), leaf("num", REQUIRED))),
            False,
        ),  # rule 2
        (LevelNode("array", REPEATED, "group", (leaf("str", REQUIRED),)), False),  # rule 4
        (LevelNode("my_list_tuple", REPEATED, "group", (leaf("str", REQUIRED),)), False),  # rule 4
        (LevelNode("element", REPEATED, "group", (leaf("str", OPTIONAL),)), True),  # rule 5
    ],
)
def test_list_backward_compatibility_rules(repeated, expect_nullable_elements):
    node = LevelNode("my_list", OPTIONAL, "list", (repeated,))
    specs = leaf_specs(node)
    field = node.to_arrow_field()
    assert field.type.value_field.nullable is expect_nullable_elements
    # records: null list, empty list, [x, x]
    max_def = specs[0].max_def
    leaves = [([0, 1, max_def, max_def], [0, 0, 0, 1], pa.array([7, 8], pa.int32())) for _ in specs]
    arr = assemble(node, leaves)
    arr.validate(full=True)
    assert arr.to_pylist()[:2] == [None, []]
    assert len(arr.to_pylist()[2]) == 2


def test_rule3_list_of_lists_two_level():
    inner = LevelNode("array", REPEATED, "list", (leaf("array", REPEATED),))
    node = LevelNode("my_list", OPTIONAL, "list", (inner,))
    (spec,) = leaf_specs(node)
    assert (spec.max_def, spec.max_rep) == (3, 2)
    arr = assemble(node, [([3, 3, 2, 3, 0], [0, 2, 1, 1, 0], pa.array([1, 2, 3], pa.int32()))])
    assert arr.to_pylist() == [[[1, 2], [], [3]], None]


def test_standard_three_level_with_odd_names():
    node = LevelNode(
        "my_list",
        OPTIONAL,
        "list",
        (LevelNode("element", REPEATED, "group", (leaf("str", OPTIONAL, pa.string()),)),),
    )
    arr = assemble(node, [([3, 2, 1], [0, 1, 0], pa.array(["a"]))])
    assert arr.to_pylist() == [["a", None], []]


def test_map_key_only_is_a_list_of_keys():
    node = LevelNode(
        "m",
        OPTIONAL,
        "map",
        (LevelNode("key_value", REPEATED, "group", (leaf("key", REQUIRED, pa.string()),)),),
    )
    arr = assemble(node, [([2, 2, 0], [0, 1, 0], pa.array(["a", "b"]))])
    assert arr.to_pylist() == [["a", "b"], None]


def test_bad_trees_are_schema_errors():
    with pytest.raises(SchemaError):
        LevelNode("x", 5)
    with pytest.raises(SchemaError):
        LevelNode("x", OPTIONAL, "list", ())
    with pytest.raises(SchemaError):
        leaf_specs(LevelNode("x", OPTIONAL, "list", (leaf("e", OPTIONAL),)))
    with pytest.raises(SchemaError):
        leaf_specs(
            LevelNode(
                "m",
                OPTIONAL,
                "map",
                (LevelNode("kv", REPEATED, "group", (leaf("k", OPTIONAL), leaf("v", OPTIONAL))),),
            )
        )


def test_leafcolumn_tuple_and_numpy_inputs():
    field = pa.field("c", pa.list_(pa.int64()))
    arr = pa.array([[1, None], None], type=field.type)
    cols = shred(arr, field)
    assert isinstance(cols[0], LeafColumn)
    c = cols[0]
    via_tuple = assemble(
        level_tree(field),
        [(c.def_levels.astype(np.int32), c.rep_levels.tolist(), c.values.to_numpy())],
    )
    assert via_tuple.equals(arr)


# ----------------------------------------------------------------------------- hostile

LIST_NODE = level_tree(pa.field("c", pa.list_(pa.int32())))  # max_def 3, max_rep 1
STRUCT_NODE = level_tree(
    pa.field(
        "s", pa.struct([pa.field("a", pa.list_(pa.int32())), pa.field("b", pa.list_(pa.int32()))])
    )
)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "defs,reps,nvals,why",
    [
        ([4, 3], [0, 1], 1, "def above max"),
        ([-1, 3], [0, 1], 1, "negative def"),
        ([3, 3], [0, 2], 2, "rep above max"),
        ([3, 3], [0, -1], 2, "negative rep"),
        ([3, 3], [1, 0], 2, "record starting at rep 1"),
        ([1, 3], [0, 1], 1, "rep 1 continues an empty list"),
        ([0, 3], [0, 1], 1, "rep 1 continues a null list"),
        ([3, 1], [0, 1], 1, "rep 1 with a def that has no element"),
        ([3, 3], [0, 1], 1, "fewer values than the levels need"),
        ([3, 3], [0, 1], 3, "more values than the levels need"),
        ([3, 3], [0], 2, "rep and def of different lengths"),
    ],
)
def test_invalid_level_streams(defs, reps, nvals, why):
    values = pa.array(range(nvals), pa.int32())
    with pytest.raises(DecodeError):
        assemble(LIST_NODE, [(defs, reps, values)])
        pytest.fail(why)


@pytest.mark.hostile
def test_missing_or_stray_levels():
    with pytest.raises(DecodeError, match="repetition levels missing"):
        assemble(LIST_NODE, [([3], None, pa.array([1], pa.int32()))])
    with pytest.raises(DecodeError):
        assemble(level_tree(pa.field("x", pa.int32())), [(None, None, pa.array([1], pa.int32()))])
    with pytest.raises(DecodeError, match="repetition level"):
        assemble(
            level_tree(pa.field("x", pa.int32())), [([1, 1], [0, 1], pa.array([1, 2], pa.int32()))]
        )
    with pytest.raises(DecodeError, match="must not hold nulls"):
        assemble(level_tree(pa.field("x", pa.int32())), [([1, 0], None, pa.array([1, None]))])


@pytest.mark.hostile
def test_required_column_holding_nulls():
    node = level_tree(pa.field("x", pa.int32(), nullable=False))  # max_def 0
    with pytest.raises(DecodeError, match="definition level 1"):
        assemble(node, [([0, 1], None, pa.array([1], pa.int32()))])


@pytest.mark.hostile
def test_leaves_that_disagree():
    # struct<a: list<int32>, b: list<int32>>: max_def 4 for both leaves
    one = (np.array([4, 4], np.int16), np.array([0, 1], np.int16), pa.array([1, 2], pa.int32()))
    two = (np.array([4, 4], np.int16), np.array([0, 0], np.int16), pa.array([1, 2], pa.int32()))
    with pytest.raises(DecodeError, match="records"):
        assemble(STRUCT_NODE, [one, two])
    node = level_tree(
        pa.field("l", pa.list_(pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.int32())])))
    )
    a = ([4, 4, 4], [0, 1, 1], pa.array([1, 2, 3], pa.int32()))
    b = ([4, 4, 4], [0, 1, 0], pa.array([1, 2, 3], pa.int32()))
    with pytest.raises(DecodeError):
        assemble(node, [a, b])


@pytest.mark.hostile
def test_every_prefix_of_a_column_is_rejected_or_a_shorter_column():
    arr = pa.array([[1, None], None, [], [2, 3, None], [4]], type=pa.list_(pa.int32()))
    (col,) = shred(arr, pa.field("c", arr.type))
    for cut in range(len(col.def_levels)):
        d, r = col.def_levels[:cut], col.rep_levels[:cut]
        present = int((d == col.max_def).sum())
        try:
            got = assemble(LIST_NODE, [(d, r, col.values)])
        except DecodeError:
            assert present != len(col.values), f"prefix {cut}: rejected although consistent"
        else:
            # legitimate only when the cut-off tail held no value and ends at a record
            assert present == len(col.values), f"prefix {cut}: accepted with missing values"
            got.validate(full=True)
            assert got.to_pylist() == arr.to_pylist()[: len(got)]


RANDOM_NODES = [
    LIST_NODE,
    STRUCT_NODE,
    level_tree(pa.field("m", pa.map_(pa.string(), pa.list_(pa.int64())))),
    level_tree(pa.field("l", pa.list_(pa.list_(pa.int32())))),
]


@pytest.mark.hostile
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_levels_give_an_array_or_decode_error(data):
    """Levels mostly within range (some outside), value counts mostly right: an array that
    validates and matches the reference assembly, or DecodeError; nothing else."""
    node = data.draw(st.sampled_from(RANDOM_NODES))
    specs = leaf_specs(node)
    max_def, max_rep = specs[0].max_def, specs[0].max_rep
    n = data.draw(st.integers(0, 25))
    if data.draw(st.booleans()):  # wild: anything near the valid range
        defs = data.draw(st.lists(st.integers(-2, max_def + 2), min_size=n, max_size=n))
        reps = data.draw(st.lists(st.integers(-2, max_rep + 2), min_size=n, max_size=n))
        if n and data.draw(st.booleans()):
            reps[0] = 0
    else:  # tame: a consistent stream
        field = node.to_arrow_field()
        chain = ref.leaf_chains(field)[0][1]
        rep_def, opt = [0], 0  # def level of each repeated level
        for kind, nullable, _ in chain:
            opt += nullable
            if kind in ("list", "map"):
                rep_def.append(opt + len(rep_def))
        defs, reps = [], []
        for i in range(n):
            ok = [r for r in range(1, max_rep + 1) if i and defs[-1] >= rep_def[r]]
            r = data.draw(st.sampled_from([0] + ok))
            reps.append(r)
            defs.append(data.draw(st.integers(rep_def[r] if r else 0, max_def)))
    present = sum(d == max_def for d in defs)
    nvals = present if data.draw(st.integers(0, 4)) else data.draw(st.integers(0, 30))
    leaves = []
    for spec in specs:
        t = spec.node.arrow_type
        vals = pa.array(
            [str(i) for i in range(nvals)] if pa.types.is_string(t) else list(range(nvals)), type=t
        )
        leaves.append((np.array(defs, np.int16), np.array(reps, np.int16), vals))
    try:
        arr = assemble(node, leaves)
    except DecodeError:
        return
    arr.validate(full=True)
    field = node.to_arrow_field()
    want = ref.assemble_ref(field, [(defs, reps, v.to_pylist()) for _, _, v in leaves])
    assert arr.to_pylist() == want, "accepted levels assemble as the reference does"


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-3, 6), max_size=40),
    st.integers(-2, 6),
    st.integers(-2, 6),
    st.integers(0, 4),
    st.integers(0, 45),
    st.integers(0, 45),
    st.integers(0, 3),
)
def test_read_kernels_never_crash(defs, slot_def, max_def, mode, nvals, nslots, src_off):
    d = np.array(defs, dtype=np.int16)
    src = np.arange(64, dtype=np.int64).tobytes()
    try:
        kassemble.scatter_leaf(d, slot_def, max_def, mode, src, src_off, 4, nvals, nslots)
    except (DecodeError, ValueError):
        pass
    try:
        kassemble.node_levels(d, d, slot_def, max_def, max_def, [0, 4, 8][mode % 3])
    except DecodeError:
        pass


@pytest.mark.hostile
@pytest.mark.parametrize(
    "offsets,child_len,why",
    [
        ([0, 3, 2], 3, "decreasing offsets"),
        ([0, 2, 5], 3, "offset past the child"),
        ([-1, 2, 3], 3, "negative offset"),
    ],
)
def test_shred_rejects_invalid_offsets(offsets, child_len, why):
    off = np.array(offsets, dtype=np.int32).tobytes()
    steps = [
        (1, None, 0, 2, True, 1, off, 1, 0, child_len),
        (0, None, 0, child_len, True, 3, None, 0, 0, child_len),
    ]
    with pytest.raises(EncodeError):
        klevels.shred_leaf(steps, True, None, 0)
        pytest.fail(why)


@pytest.mark.hostile
def test_shred_rejects_short_buffers():
    steps = [(0, b"", 0, 9, True, 1, None, 0, 0, 9)]
    with pytest.raises(EncodeError, match="validity buffer"):
        klevels.shred_leaf(steps, False, None, 0)
    steps = [(1, None, 0, 3, True, 1, b"\0" * 8, 1, 0, 0), (0, None, 0, 0, True, 3, None, 0, 0, 0)]
    with pytest.raises(EncodeError, match="offsets buffer"):
        klevels.shred_leaf(steps, True, None, 0)
    steps = [(0, None, 0, 4, True, 1, None, 0, 0, 4)]
    with pytest.raises(EncodeError, match="leaf values"):
        klevels.shred_leaf([(0, b"\x05", 0, 4, True, 1, None, 0, 0, 4)], False, b"\0" * 8, 8)
