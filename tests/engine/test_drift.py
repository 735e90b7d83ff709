"""Types that drift (issue 27): a column whose files disagree on its type is indexed in the
table's type, exactly or not at all, and never skips a file that holds a match.

The two reproductions of the issue as a user writes them (a bloom filter on a column that is
INT64 in one file and INT32 in another; FLOAT then DOUBLE through min/max and value lists),
then what the rule promises around them: a value that does not convert leaves its file
unindexed for the column with the reason in ``describe()`` (and no data-file name in the log),
a type that does not convert at all (a conflict) or time zones that disagree keep every file,
Spark's wrapping of INT32 values read as TINYINT keeps the files it could change, INT96 is
taken as Spark reads it, bloom filters of hash scheme 1 (stores written before scheme 2) stay
sound, and compaction keeps the answers. tests/index/test_drift_differential.py checks the
whole matrix against DuckDB; tests/spark/test_differential_spark.py against Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex import MetaIndex
from metaindex.drift import Drift, conform_array, drift_of, join_types
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.prune import Candidates, Pruner, SessionSettings, prune_context
from metaindex.index import BloomFilterIndex, columns
from metaindex.store import MetadataStore
from metaindex.store.tableschema import unify

SERIAL = SerialExecutor()
KINDS = ("minmax", "valuelist", "bloom")


def _index(root, store, kinds=KINDS, column="x") -> MetaIndex:
    mi = MetaIndex(str(root), store=str(store))
    builder = mi.index_builder()
    for kind in kinds:
        {
            "minmax": builder.add_min_max_index,
            "valuelist": builder.add_value_list_index,
            "bloom": builder.add_bloom_filter_index,
        }[kind](column)
    builder.build(executor=SERIAL)
    return mi


def _write(path, values, t, **kwargs) -> None:
    pq.write_table(pa.table({"x": pa.array(values, t)}), path, **kwargs)


def _kept(mi, where) -> list:
    return sorted(os.path.basename(k) for k in mi.prune(where).kept)


# ------------------------------------------------------------------------------ the issue


@pytest.mark.parametrize("first, later", [(pa.int64(), pa.int32()), (pa.int32(), pa.int64())])
@pytest.mark.parametrize("kind", KINDS)
def test_reproduction_1_a_later_file_of_another_integer_width(tmp_path, first, later, kind):
    """Issue 27, reproduction 1: the later file holds 9 in another width; x = 9 keeps it."""
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2, 3], first)
    mi = _index(root, tmp_path / "store", [kind])
    _write(root / "b.parquet", [9, 10], later)
    assert mi.refresh(executor=SERIAL).entries_added == 1
    assert _kept(mi, "x = 9") == ["b.parquet"], f"{kind}: the only file holding 9 is kept"
    assert _kept(mi, "x = 2") == ["a.parquet"], f"{kind}: and the index still skips"
    assert _kept(mi, "x in (10, 11)") == ["b.parquet"]
    assert mi.describe().indexes[0].type_drift is None, (
        "a widening that converts every value exactly is no drift to report"
    )


@pytest.mark.parametrize(
    "first, later", [(pa.float32(), pa.float64()), (pa.float64(), pa.float32())]
)
@pytest.mark.parametrize("kind", KINDS)
def test_reproduction_2_float_then_double(tmp_path, first, later, kind):
    """Issue 27, reproduction 2: 1.1 in the DOUBLE file is not recorded as 1.10000002."""
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1.5, 2.5], first)
    mi = _index(root, tmp_path / "store", [kind])
    _write(root / "b.parquet", [1.1, 0.25], later)
    mi.refresh(executor=SERIAL)
    if later == pa.float64():
        assert _kept(mi, "x = 1.1") == ["b.parquet"], f"{kind}: 1.1 is in b"
    else:  # b holds the float 1.1f = 1.100000023841858, which is not 1.1
        assert _kept(mi, f"x = {float(np.float32(1.1))!r}") == ["b.parquet"]
        if kind != "minmax":  # (1.1 lies between b's bounds)
            assert _kept(mi, "x = 1.1") == [], f"{kind}: no row equals the double 1.1"
    assert _kept(mi, "x = 0.25") == ["b.parquet"]
    assert _kept(mi, "x = 2.5") == ["a.parquet"]


def test_build_over_files_of_both_widths_at_once(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2], pa.int32())
    _write(root / "b.parquet", [2**40], pa.int64())
    _write(root / "c.parquet", [2**32 - 1], pa.uint32())
    mi = _index(root, tmp_path / "store")
    assert _kept(mi, f"x = {2**40}") == ["b.parquet"]
    assert _kept(mi, f"x = {2**32 - 1}") == ["c.parquet"]
    assert _kept(mi, "x = 2") == ["a.parquet"]


# ------------------------------------------------------------------------------ not exact


def test_a_value_that_does_not_convert_leaves_its_file_unindexed_with_the_reason(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [0.5, 1.5], pa.float64())
    mi = _index(root, tmp_path / "store", ["minmax", "valuelist"])
    big = 2**53 + 1  # no double holds it
    _write(root / "secret-name-b.parquet", [5, big], pa.int64())
    _write(root / "c.parquet", [5, 7], pa.int64())
    mi.refresh(executor=SERIAL)
    assert _kept(mi, f"x = {big}") == ["secret-name-b.parquet"]
    assert _kept(mi, "x = 7") == ["c.parquet", "secret-name-b.parquet"], (
        "b is unindexed for x (always kept); c's values convert and it is indexed"
    )
    assert _kept(mi, "x = 0.5") == ["a.parquet", "secret-name-b.parquet"]
    for ix in mi.describe().indexes:
        drift = ix.type_drift
        assert drift["table_type"] == "double" and drift["notes"] == {"lossy": ["int64"]}
        assert drift["unconverted_files"] == 1 and drift["file_types"] == {"int64": 1}, drift
        assert "may not convert exactly" in drift["effect"]
    log_dir = os.path.join(mi.describe().store, "_log")
    for name in os.listdir(log_dir):
        text = open(os.path.join(log_dir, name)).read()
        assert "secret-name-b" not in text and "obj_type_drift" not in text, (
            "the reason lives in the parts, not in the log"
        )


def test_a_type_that_does_not_convert_keeps_every_file_for_comparisons(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2], pa.int32())
    mi = _index(root, tmp_path / "store")
    _write(root / "b.parquet", ["5", None], pa.string())
    result = mi.refresh(executor=SERIAL)
    assert result.status == "SUCCESS" and not result.failed, "a conflict does not fail refresh"
    assert _kept(mi, "x = 5") == ["a.parquet", "b.parquet"]
    assert _kept(mi, "x < 0") == ["a.parquet", "b.parquet"]
    assert _kept(mi, "x is null") == ["a.parquet", "b.parquet"], (
        "an engine may read a value of the other type as NULL"
    )
    drift = mi.describe().indexes[0].type_drift
    assert drift["notes"] == {"conflict": ["string"]} and drift["unconverted_files"] == 1


def test_time_zones_that_disagree_keep_every_file_for_comparisons(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    t0 = dt.datetime(2020, 1, 1)
    _write(root / "a.parquet", [t0], pa.timestamp("us", "UTC"))
    mi = _index(root, tmp_path / "store")
    _write(root / "b.parquet", [t0 + dt.timedelta(days=9)], pa.timestamp("us"))
    mi.refresh(executor=SERIAL)
    assert _kept(mi, "x = timestamp'2020-01-01 00:00:00'") == ["a.parquet", "b.parquet"], (
        "Spark reads the naive values as wall-clock or as instants depending on the file it "
        "takes the schema from"
    )
    assert mi.describe().indexes[0].type_drift["notes"] == {"tz": True}


def test_int32_values_spark_may_read_wrapped_into_tinyint_keep_their_file(tmp_path):
    """Spark reads a TINYINT column's INT32 file value 300 as 44 (ByteUpdater): a file whose
    values leave the byte range is kept for every comparison."""
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2], pa.int8())
    _write(root / "b.parquet", [40, 300], pa.int32())
    _write(root / "c.parquet", [50, 60], pa.int32())
    mi = _index(root, tmp_path / "store")
    assert _kept(mi, "x = 44") == ["b.parquet"], "300 may be read as 44"
    assert _kept(mi, "x = 60") == ["b.parquet", "c.parquet"]
    assert _kept(mi, "x = 1") == ["a.parquet", "b.parquet"]
    assert mi.describe().indexes[0].type_drift["notes"] == {"wrap": 8}


def test_int96_is_taken_as_spark_reads_it(tmp_path):
    """pyarrow can store nanoseconds in INT96; Spark (and DuckDB) read microseconds."""
    root = tmp_path / "t"
    root.mkdir()
    ns = 1577836800_000_000_500  # 2020-01-01 00:00:00.0000005
    _write(root / "a.parquet", [ns], pa.timestamp("ns"), use_deprecated_int96_timestamps=True)
    _write(root / "b.parquet", [1577836900_000_000], pa.timestamp("us", "UTC"))
    mi = _index(root, tmp_path / "store")
    assert _kept(mi, "x = timestamp'2020-01-01 00:00:00'") == ["a.parquet"]
    assert _kept(mi, "x > timestamp'2020-01-01 00:00:00'") == ["b.parquet"]
    assert mi.describe().indexes[0].type_drift is None


@pytest.mark.parametrize("kind", KINDS)
def test_compaction_keeps_the_answers(tmp_path, kind):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2], pa.int32())
    mi = _index(root, tmp_path / "store", [kind])
    for k, (t, values) in enumerate(
        [(pa.uint32(), [9, 10]), (pa.int64(), [2**40, 2**41]), (pa.uint16(), [65535])]
    ):
        _write(root / f"n{k}.parquet", values, t)
        mi.refresh(executor=SERIAL)
    queries = ["x = 9", f"x = {2**40}", "x = 65535", "x = 2", "x in (3, 10)", "x = 77"]
    before = [_kept(mi, q) for q in queries]
    mi.compact()
    assert [_kept(mi, q) for q in queries] == before
    assert before[:3] == [["n0.parquet"], ["n1.parquet"], ["n2.parquet"]]


# ------------------------------------------------------------------------------ scheme 1

SCHEME1 = os.path.join(os.path.dirname(__file__), "data", "bloom_scheme1_store")
SCHEME1_URI = "file:///tmp/v1bloom/t"
SCHEME1_FILES = {"a.parquet": (1009, 1795774375242), "b.parquet": (905, 1795774375691)}


def _scheme1_kept(tmp_path, where) -> list:
    """The scheme-1 store (written by metaindex before scheme 2: blooms on x INT64 then INT32,
    f DOUBLE then FLOAT, s STRING then BINARY, the later file refreshed in) decides."""
    root = tmp_path / "store"
    if not root.exists():
        shutil.copytree(SCHEME1, root)
    snap = MetadataStore(str(root)).table(SCHEME1_URI).snapshot()
    names = pa.array(list(SCHEME1_FILES))
    files = Candidates(
        names,
        names,
        np.array([v[0] for v in SCHEME1_FILES.values()]),
        np.array([v[1] for v in SCHEME1_FILES.values()]),
    )
    return sorted(Pruner(prune_context(snap)).decide(where, files, session=SessionSettings()).kept)


def test_a_store_with_scheme_1_blooms_stays_sound(tmp_path):
    assert _scheme1_kept(tmp_path, "x = 9") == ["b.parquet"], (
        "scheme 1 hashed b's 9 as 4 bytes: a 64-bit column is probed in both widths"
    )
    assert _scheme1_kept(tmp_path, "x = 2") == ["a.parquet"], "and still skips"
    assert _scheme1_kept(tmp_path, "f = 1.25") == ["a.parquet", "b.parquet"], (
        "a scheme-1 filter on a double column may hold FLOAT hashes: not used"
    )
    assert _scheme1_kept(tmp_path, "s = 'q'") == ["b.parquet"], "bytes hash alike"
    assert _scheme1_kept(tmp_path, "s = 'zz'") == []


def test_scheme_1_blooms_are_explained_in_describe(tmp_path):
    from metaindex.engine.schema import type_drift

    root = tmp_path / "store"
    shutil.copytree(SCHEME1, root)
    snap = MetadataStore(str(root)).table(SCHEME1_URI).snapshot()
    report = type_drift(snap, [None, None])
    assert "probed as a 4-byte and an 8-byte integer" in report["x_bloom_1"]["effect"]
    assert "not used on a double column" in report["f_bloom_1"]["effect"]
    assert report["s_bloom_1"] is None


def test_refresh_of_a_scheme_1_index_keeps_its_scheme(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1, 2, 3], pa.int64())
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_index(BloomFilterIndex("x", hash_scheme=1)).build(executor=SERIAL)
    _write(root / "b.parquet", [9], pa.int32())
    mi.refresh(executor=SERIAL)
    assert mi.describe().indexes[0].params["hash_scheme"] == 1
    assert _kept(mi, "x = 9") == ["b.parquet"] and _kept(mi, "x = 1") == ["a.parquet"]


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    "a, b, want, notes",
    [
        (pa.int32(), pa.int64(), pa.int64(), {}),
        (pa.int64(), pa.int8(), pa.int64(), {"wrap": 8}),
        (pa.int16(), pa.uint8(), pa.int16(), {}),
        (pa.uint8(), pa.int8(), pa.int16(), {"wrap": 8}),
        (pa.uint32(), pa.int32(), pa.int64(), {}),
        (pa.int64(), pa.uint64(), pa.decimal128(20, 0), {}),
        (pa.float32(), pa.float64(), pa.float64(), {}),
        (pa.int16(), pa.float32(), pa.float32(), {}),
        (pa.int32(), pa.float32(), pa.float64(), {}),
        (pa.int64(), pa.float64(), pa.float64(), {"lossy": ["int64"]}),
        (pa.decimal128(5, 2), pa.decimal128(10, 4), pa.decimal128(10, 4), {}),
        (pa.decimal128(10, 4), pa.int64(), pa.decimal128(23, 4), {}),
        (
            pa.decimal128(38, 0),
            pa.decimal128(5, 2),
            pa.float64(),
            {"lossy": ["decimal128(38, 0)", "decimal128(5, 2)"]},
        ),
        (pa.decimal128(5, 2), pa.float64(), pa.float64(), {"lossy": ["decimal128(5, 2)"]}),
        (pa.timestamp("ms"), pa.timestamp("ns"), pa.timestamp("ns"), {}),
        (pa.timestamp("us", "UTC"), pa.timestamp("us"), pa.timestamp("us", "UTC"), {"tz": True}),
        (pa.date32(), pa.timestamp("us"), pa.timestamp("us"), {}),
        (pa.string(), pa.binary(), pa.binary(), {}),
        (pa.string(), pa.large_string(), pa.large_string(), {}),
        (pa.binary(4), pa.binary(), pa.binary(), {}),
        (pa.int32(), pa.string(), pa.int32(), {"conflict": ["string"]}),
        (pa.bool_(), pa.int8(), pa.bool_(), {"conflict": ["int8"]}),
    ],
)
def test_the_join_of_two_file_types(a, b, want, notes):
    schema = unify([pa.schema([("x", a)]), pa.schema([("x", b)])])
    assert schema.field("x").type == want
    assert drift_of(schema.field("x")).to_json() == notes


def test_struct_fields_join_one_by_one_with_their_own_notes():
    a = pa.schema([("s", pa.struct([("a", pa.int8()), ("b", pa.string())]))])
    b = pa.schema([("s", pa.struct([("a", pa.int32()), ("c", pa.float32())]))])
    s = unify([a, b]).field("s")
    assert s.type == pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.float32())])
    assert drift_of(s.type.field("a")) == Drift(wrap=8) and not drift_of(s)


def test_added_and_dropped_columns_and_the_record_order():
    a = pa.schema([("x", pa.int32()), ("y", pa.string())])
    b = pa.schema([("z", pa.date32()), ("x", pa.int64())])
    assert unify([a, b]).names == ["x", "y", "z"] and unify([a, b]).field("x").type == pa.int64()


def test_conversion_is_exact_or_null_per_entry():
    mm = pa.struct([("min", pa.float64()), ("max", pa.float64())])
    got = conform_array(
        pa.array([{"min": 1.1, "max": 2.0}, {"min": 1.5, "max": 2.0}, None], mm),
        pa.struct([("min", pa.float32()), ("max", pa.float32())]),
    )
    assert got.to_pylist() == [None, {"min": 1.5, "max": 2.0}, None], "1.1 is no float"
    lists = pa.array([[1, 2**40], [1, 2], None], pa.list_(pa.int64()))
    assert conform_array(lists, pa.list_(pa.int32())).to_pylist() == [None, [1, 2], None]
    assert conform_array(
        pa.array([Decimal("0.1"), Decimal("0.5")], pa.decimal128(5, 2)), pa.float64()
    ).to_pylist() == [None, 0.5], "0.1 is no double"
    assert conform_array(pa.array([2**53 + 1, 5]), pa.float64()).to_pylist() == [None, 5.0]
    assert conform_array(
        pa.array([5, 2**63 + 1], pa.uint64()), pa.decimal128(20, 0)
    ).to_pylist() == [Decimal(5), Decimal(2**63 + 1)]
    assert conform_array(pa.array([b"\xff", b"a"]), pa.string()).to_pylist() == [None, "a"]
    assert conform_array(
        pa.array([253402214400000], pa.timestamp("ms")), pa.timestamp("ns")
    ).to_pylist() == [None], "9999-12-31 overflows ns"
    assert conform_array(
        pa.array([1, None], pa.timestamp("us")), pa.timestamp("ms")
    ).to_pylist() == [None, None], "1 us is no ms"
    assert conform_array(pa.array(["a"]), pa.int64()).to_pylist() == [None]


_NUMBERS = st.one_of(
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(width=32),
    st.decimals(
        allow_nan=False,
        allow_infinity=False,
        places=4,
        min_value=Decimal(-(10**20)),
        max_value=Decimal(10**20),
    ),
)


def _typed(value):
    """The Arrow types that hold ``value`` exactly (the ways a file may store it)."""
    out = []
    for t in (
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.uint8(),
        pa.uint16(),
        pa.uint32(),
        pa.uint64(),
        pa.float32(),
        pa.float64(),
        pa.decimal128(38, 4),
        pa.decimal128(30, 0),
        pa.decimal128(12, 6),
    ):
        try:
            arr = pa.array([value], t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            continue
        got = arr[0].as_py()
        same = (
            (got != got and value != value) or (got == value and Decimal(got) == Decimal(value))
            if not isinstance(value, float) or value == value
            else got != got
        )
        if same:
            out.append(arr)
    return out


@settings(max_examples=300, deadline=None)
@given(_NUMBERS)
def test_scheme_2_hashes_an_equal_value_alike_in_every_type(value):
    forms = _typed(value)
    hashes = {tuple(columns.hashes_of([arr], arr.type, 2).tolist()) for arr in forms}
    assert len(hashes) <= 1, f"{value!r} hashes differently as {[a.type for a in forms]}"


@settings(max_examples=100, deadline=None)
@given(st.integers(-(10**6), 10**6), st.sampled_from(["s", "ms", "us"]))
def test_scheme_2_hashes_an_instant_alike_in_every_unit(seconds, unit):
    scale = {"s": 1, "ms": 1000, "us": 10**6}[unit]
    a = pa.array([seconds * scale], pa.timestamp(unit))
    b = pa.array([seconds * 10**9], pa.timestamp("ns"))
    assert columns.hashes_of([a], a.type, 2).tolist() == columns.hashes_of([b], b.type, 2).tolist()
    if seconds % 86400 == 0:
        d = pa.array([seconds // 86400], pa.date32())
        assert (
            columns.hashes_of([d], d.type, 2).tolist() == columns.hashes_of([a], a.type, 2).tolist()
        ), "a date is its midnight"


def test_join_is_the_same_whichever_part_comes_first():
    """Parts may be aligned in any order: the type does not depend on it (notes aside)."""
    types = [
        pa.int8(),
        pa.int32(),
        pa.uint16(),
        pa.int64(),
        pa.decimal128(10, 2),
        pa.float32(),
        pa.float64(),
        pa.uint64(),
    ]
    for a in types:
        for b in types:
            assert join_types(a, b)[0] == join_types(b, a)[0], (a, b)


def test_drift_notes_survive_the_recorded_schema(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    _write(root / "a.parquet", [1], pa.int8())
    mi = _index(root, tmp_path / "store", ["minmax"])
    _write(root / "b.parquet", [300], pa.int32())
    mi.refresh(executor=SERIAL)
    mi.compact()
    field = mi._current().recorded_schema[0].field("x")
    assert field.type == pa.int32() and json.loads(field.metadata[b"metaindex.drift"]) == {
        "wrap": 8
    }
