"""metaindex.arrays: Arrow arrays built without pyarrow's pandas probe, equal to pyarrow's own;
and a prune in a fresh process that never imports pandas."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.arrays import (
    combined,
    from_pylist,
    numeric_array,
    string_array,
    to_numpy,
)

FAILURES = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)

TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.date32(),
    pa.decimal128(9, 2),
    *(pa.timestamp(u, tz) for u in ("s", "ms", "us", "ns") for tz in (None, "UTC", "+05:30")),
]

zones = st.one_of(
    st.none(), st.integers(-14 * 60, 14 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
)
KINDS = [
    st.integers(-(2**65), 2**65),
    st.integers(-300, 300),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=6),
    st.just("\ud800"),
    st.binary(max_size=6),
    st.dates(),
    st.datetimes(timezones=zones),
    st.datetimes(min_value=dt.datetime(1677, 9, 22), max_value=dt.datetime(2262, 4, 11)),
    st.decimals(places=3, allow_nan=False, allow_infinity=False),
    st.none(),
]

_OWN = {
    "int": [0, 1],
    "float": [3],
    "bool": [2],
    "str": [4, 5],
    "bytes": [6],
    "date": [7],
    "timestamp": [8, 9],
    "decimal": [10],
}
"""The kinds of KINDS each family of types takes."""


def _family(t: pa.DataType) -> str:
    for name, test in (
        ("int", pa.types.is_integer),
        ("float", pa.types.is_floating),
        ("bool", pa.types.is_boolean),
        ("date", pa.types.is_date),
        ("timestamp", pa.types.is_timestamp),
        ("decimal", pa.types.is_decimal),
        ("bytes", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)),
    ):
        if test(t):
            return name
    return "str"


def _outcome(build):
    try:
        return build()
    except FAILURES as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(t=st.sampled_from(TYPES), data=st.data())
def test_from_pylist_is_pa_array(t, data):
    """Same array (type and values) as ``pa.array(values, t)``, or a failure where it fails."""
    own = [KINDS[i] for i in _OWN[_family(t)]]
    kind = data.draw(
        st.sampled_from(own if data.draw(st.integers(0, 3)) else KINDS), label="the values' kind"
    )
    mixed = data.draw(st.booleans(), label="other kinds too")
    vals = data.draw(
        st.lists(st.one_of(*KINDS) if mixed else kind, min_size=1, max_size=5), label="values"
    )
    want = _outcome(lambda: pa.array(vals, t))
    got = _outcome(lambda: from_pylist(vals, t))
    if isinstance(want, pa.Array):
        assert isinstance(got, pa.Array), (vals, t, got)
        assert got.type == want.type and got.equals(want), (vals, t, got, want)
    else:
        assert not isinstance(got, pa.Array), (vals, t, got)


def test_from_pylist_of_nothing():
    for t in TYPES:
        assert from_pylist([], t).equals(pa.array([], t))


@given(st.lists(st.text(), max_size=20))
def test_string_array_is_pa_array(strings):
    assert string_array(strings).equals(pa.array(strings, pa.string()))
    raw = [s.encode() for s in strings]
    assert string_array(raw, binary=True).equals(pa.array(raw, pa.binary()))


def test_string_array_refuses_other_values():
    with pytest.raises(TypeError, match="expected str values, got int"):
        string_array(["a", 1])
    with pytest.raises(TypeError, match="expected bytes values, got str"):
        string_array([b"a", "b"], binary=True)


@given(
    st.sampled_from([np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64]),
    st.integers(0, 40),
    st.integers(0, 7),
    st.integers(1, 3),
)
def test_numbers_round_trip(dtype, n, start, step):
    """numeric_array and to_numpy agree with pyarrow's own conversions, strided and sliced."""
    base = (np.arange(n * 3 + 8) % 5).astype(dtype)
    view = base[start::step][:n]
    arr = numeric_array(view)
    assert arr.equals(pa.array(view))
    assert np.array_equal(to_numpy(arr), view)
    sliced = arr.slice(min(start, len(arr)))
    assert np.array_equal(to_numpy(sliced), view[min(start, len(arr)) :])
    chunked = pa.chunked_array([arr, sliced], arr.type)
    assert np.array_equal(to_numpy(chunked), np.concatenate([view, view[min(start, len(arr)) :]]))


def test_combined():
    empty = pa.chunked_array([], pa.int64())
    assert combined(empty).equals(pa.array([], pa.int64()))
    assert len(to_numpy(empty)) == 0
    for t in (pa.bool_(), pa.int32()):  # no data buffer at all
        assert to_numpy(pa.Array.from_buffers(t, 0, [None, None])).dtype == t.to_pandas_dtype()
    arr = pa.array([1, None, 3])
    assert combined(arr) is arr
    assert to_numpy(pa.chunked_array([arr])).tolist()[::2] == [1.0, 3.0]  # nulls: pyarrow's way


PREDICATES = [
    "temp > 150 AND city = 'Rome'",
    "day >= DATE '2024-01-03'",
    "ts < TIMESTAMP '2024-01-02 00:00:00'",
    "price BETWEEN 2 AND 3",
    "ok = true",
    "b = X'7831'",
    "city IN ('Paris', 'Oslo')",
    "temp IN (1, 250)",
    "NOT (temp < 10)",
    "temp IS NULL",
    "city LIKE 'Ro%'",
    "price > 1",
]

SIMPLE = [p for p in PREDICATES if not any(w in p for w in ("BETWEEN", "LIKE", "X'"))]
"""The predicates metaindex.expr.simple_sql parses without sqlglot."""

NOT_ON_THE_PRUNE_PATH = (
    "pandas",  # ~0.7 s (issue 32)
    "sqlglot",  # ~0.2 s: a typed or simple SQL predicate does not need it
    "cryptography",  # a plaintext store needs no AES
    "metaindex.crypto",
    "metaindex._native.crypto",
    "metaindex.parquet.writer",  # pruning reads parts, never writes
    "metaindex.delta",  # a directory table has no Delta log
    "pyspark",
    "polars",
    "duckdb",
)
"""Modules a prune of a plaintext store with a typed or simple SQL predicate never imports."""

_PRUNE = """
import json, sys
from metaindex import MetaIndex
from metaindex.expr import col
mi = MetaIndex(sys.argv[1])
typed = sorted(mi.prune((col("temp") > 150) & (col("city") == "Rome")).kept)
simple = [sorted(mi.prune(p).kept) for p in json.loads(sys.argv[3])]
forbidden = json.loads(sys.argv[4])
imported = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in forbidden))
kept = [sorted(mi.prune(p).kept) for p in json.loads(sys.argv[2])]
print(json.dumps({"typed": typed, "imported": imported, "kept": kept, "simple": simple,
                  "pandas": sorted(m for m in sys.modules if m.split(".")[0] == "pandas")}))
"""


def test_a_prune_in_a_fresh_process_imports_no_pandas(tmp_path):
    """Every index kind, every literal type the pruner binds, the calendar guard: pruning
    from a fresh process never imports pandas (issue 32: ~0.7 s of a cold prune), and answers
    as a prune in this process does; a metaindex.expr predicate or a simple SQL one imports
    none of NOT_ON_THE_PRUNE_PATH (no sqlglot, no cryptography, no Parquet writer)."""
    from metaindex import MetaIndex

    root = tmp_path / "t"
    root.mkdir()
    for i in range(6):
        pq.write_table(
            pa.table(
                {
                    "temp": pa.array(range(i * 100, i * 100 + 100), pa.int32()),
                    "city": ["Rome" if i % 3 else "Paris"] * 100,
                    "day": [dt.date(2024, 1, 1 + i)] * 100,
                    "ts": [dt.datetime(2024, 1, 1 + i, 5)] * 100,
                    "price": [1.5 * i] * 100,
                    "ok": [bool(i % 2)] * 100,
                    "b": [b"x%d" % i] * 100,
                }
            ),
            root / f"part-{i:03d}.parquet",
        )
    mi = MetaIndex(str(root))
    builder = mi.index_builder()
    for column in ("temp", "day", "ts", "price"):
        builder = builder.add_min_max_index(column)
    builder.add_value_list_index("city").add_value_list_index("ok").add_bloom_filter_index(
        "b"
    ).build()
    want = [sorted(mi.prune(p).kept) for p in PREDICATES]
    assert want[0] and any(len(k) < 6 for k in want)  # the index does skip files

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _PRUNE,
            str(root),
            json.dumps(PREDICATES),
            json.dumps(SIMPLE),
            json.dumps(NOT_ON_THE_PRUNE_PATH),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["pandas"] == []
    assert got["kept"] == want
    assert got["typed"] == want[0]
    assert got["imported"] == [], "a plaintext prune of simple predicates imports none of these"
    assert got["simple"] == [want[PREDICATES.index(p)] for p in SIMPLE]
    assert len(SIMPLE) >= 8


_BUILD = """
import json, sys
from metaindex import MetaIndex
from metaindex.engine.executors import LocalExecutor
out = {}
for name in sys.argv[1:]:
    mi = MetaIndex(name)
    result = mi.index_builder().add_min_max_index("x").add_value_list_index("c").build(
        executor=LocalExecutor(2)
    )
    out[name] = [result.entries_added, len(mi.prune("x > 35").kept)]
out["pandas"] = sorted(m for m in sys.modules if m.split(".")[0] == "pandas")
print(json.dumps(out))
"""


def test_a_build_imports_no_pandas_in_the_calling_process(tmp_path):
    """Building a directory table (with partition directories or without) with a local pool
    never imports pandas in the calling process (issue 32: ~0.25 s of the build): listing,
    partition parsing, merging the workers' results, the commit; and the prune after it."""
    flat, parted = tmp_path / "flat", tmp_path / "parted"
    for i in range(40):  # two tasks: they run in the pool, not here
        for root, sub in ((flat, ""), (parted, f"d={i % 3}/e=%41{i % 2}/")):
            (root / sub).mkdir(parents=True, exist_ok=True)
            pq.write_table(
                pa.table({"x": pa.array([i], pa.int64()), "c": [f"v{i}"]}),
                root / sub / f"f{i:02d}.parquet",
            )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, str(flat), str(parted)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["pandas"] == []
    assert got[str(flat)] == got[str(parted)] == [40, 4]
