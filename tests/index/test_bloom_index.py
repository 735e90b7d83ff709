"""Bloom-filter index: collection, sizing, and might-match (never a false negative)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from metaindex.bloom import SplitBlockBloomFilter, canonical_float_hashes
from metaindex.expr import BoundEqualTo, BoundIn
from metaindex.index import BloomFilterIndex
from tests.index.util import kept, kept_leaf, metadata, ref, where

NAN = float("nan")
BF = BloomFilterIndex("x")


def test_collect_sizes_from_the_distinct_count_and_matches_a_direct_filter():
    values = pa.array(list(range(500)) * 3 + [None])
    got = BF.collect(values).as_py()
    want = SplitBlockBloomFilter.for_ndv(500, 0.01)
    want.insert_hashes(canonical_float_hashes(values))
    assert got == {"bitset": want.to_bytes(), "has_null": True}, (
        "the bitset is the SBBF sized for the file's 500 distinct values"
    )


def test_collect_all_null_and_limits():
    assert BF.collect(pa.array([None], pa.decimal128(25, 3))).as_py() == {
        "bitset": None,
        "has_null": True,
    }
    assert BF.collect(pa.array([], pa.binary(4))).as_py() == {"bitset": None, "has_null": False}
    small = BloomFilterIndex("x", fpp=0.2, max_bytes=64)
    assert len(small.collect(pa.array(range(10_000))).as_py()["bitset"]) == 64
    with pytest.raises(TypeError, match="boolean"):
        BF.metadata_type(pa.bool_())
    with pytest.raises(ValueError, match="fpp"):
        BloomFilterIndex("x", fpp=1.5)
    with pytest.raises(ValueError, match="max_bytes"):
        BloomFilterIndex("x", max_bytes=100)


CASES = [
    (pa.int8(), [[-128, 5], [127]], [-128, 5, 127]),
    (pa.int64(), [[2**62, -1], [0]], [2**62, -1, 0]),
    (pa.uint64(), [[2**64 - 1]], [2**64 - 1]),
    (pa.float32(), [[1.5, -0.0], [NAN]], [1.5, 0.0, NAN]),
    (pa.float64(), [[0.0, 5e-324], [NAN, float("inf")]], [-0.0, 5e-324, NAN, float("inf")]),
    (pa.string(), [["", "é"], ["😀x"]], ["", "é", "😀x"]),
    (pa.binary(), [[b"\xff\x00"], [b""]], [b"\xff\x00", b""]),
    (
        pa.decimal128(25, 3),
        [[Decimal("-12345678901234567890.123")]],
        [Decimal("-12345678901234567890.123")],
    ),
    (pa.decimal256(40, 2), [[Decimal("1.50")]], [Decimal("1.5")]),
    (pa.date32(), [[dt.date(2020, 1, 1)]], [dt.date(2020, 1, 1)]),
    (
        pa.timestamp("us", "UTC"),
        [[dt.datetime(2021, 1, 1, 1, tzinfo=dt.timezone.utc)]],
        [dt.datetime(2021, 1, 1, 1, tzinfo=dt.timezone.utc)],
    ),
    (pa.timestamp("us"), [[dt.datetime(2021, 1, 1, 1)]], [dt.datetime(2021, 1, 1, 1)]),
]


@pytest.mark.parametrize("t, files, present", CASES)
def test_present_values_are_always_found(t, files, present):
    """Spark equality: -0.0 finds 0.0, NaN finds NaN, equal decimals find each other."""
    meta = metadata(BF, files, t)
    for value in present:
        holders = [any(_spark_equal(v, value) for v in f) for f in files]
        got = BF.might_match(BoundEqualTo(ref("x", t), value), meta).tolist()
        assert all(g or not h for g, h in zip(got, holders, strict=True)), (
            f"{value!r} is in files {holders} but the filter answered {got}"
        )


def _spark_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def test_absent_values_are_mostly_skipped():
    files = [list(range(i * 100, i * 100 + 100)) for i in range(200)]
    meta = metadata(BF, files, pa.int64())
    probes = np.random.default_rng(3).integers(10**6, 10**7, 200)
    skipped = sum(
        not BF.might_match(BoundEqualTo(ref("x", pa.int64()), int(v)), meta).any()
        for v in probes[:20]
    )
    answers = BF.might_match(BoundIn(ref("x", pa.int64()), frozenset(map(int, probes))), meta)
    assert skipped >= 15, f"at fpp 0.01, most absent values should skip every file ({skipped})"
    assert answers.mean() < 0.9, "200 absent values at fpp 0.01 keep well under 90% of files"
    hit = BF.might_match(BoundEqualTo(ref("x", pa.int64()), 12345), meta)
    assert hit[123] and hit.sum() <= 10, "12345 is in file 123 only"


FILES = [[1, 2], [3, None], [None], None]


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("x = 2", [True, False, False, True]),
        ("x <=> 3", [False, True, False, True]),
        ("x IN (2, 3)", [True, True, False, True]),
        ("x IS NULL", [False, True, True, True]),
        ("x IS NOT NULL", [True, True, False, True]),
        ("x > 100", [True, True, False, True]),  # a filter cannot answer ranges
        ("x != 2", [True, True, False, True]),
    ],
)
def test_predicates(sql, expected):
    assert kept(BF, sql, FILES, pa.int64()) == expected, f"{sql} over {FILES}"


def test_nan_predicates_probe_the_canonical_nan():
    files = [[1.0, float.fromhex("-0x1.8p+1")], [NAN], [None]]
    assert kept(BF, "isnan(x)", files, pa.float64()) == [False, True, False]
    assert kept(BF, "NOT isnan(x)", files, pa.float64()) == [True, True, True]


def test_literals_without_a_hash_keep_every_file():
    leaf = BoundEqualTo(ref("x", pa.int8()), 1000)
    assert kept_leaf(BF, leaf, [[1], [2]], pa.int8()) == [True, True], (
        "1000 does not fit int8: no hash, no skipping"
    )


@pytest.mark.hostile
def test_corrupt_bitsets_keep_their_files():
    t = BF.metadata_type(pa.int64())
    good = BF.collect(pa.array([1]))["bitset"].as_py()
    assert len(good) == 32, "one value: the smallest filter"
    meta = pa.array(
        [
            {"bitset": good[:16], "has_null": False},
            {"bitset": good + b"\x00", "has_null": False},
            {"bitset": b"", "has_null": False},
            {"bitset": good, "has_null": None},
        ],
        t,
    )
    leaf = BoundEqualTo(ref("x", pa.int64()), 99)
    got = BF.might_match(leaf, meta).tolist()
    assert got[:3] == [True, True, True], "a bitset of a wrong size proves nothing"
    assert kept(BF, "x IS NULL", [[1]], pa.int64()) == [False]
    isnull = BF.might_match(where("x IS NULL", "x", pa.int64()), meta)
    assert isnull[3], "an unknown has_null may hide nulls"


def test_large_binary_bitsets_and_slices():
    meta = metadata(BF, [[1], [2], [3], [4]], pa.int64())
    large = meta.cast(pa.struct([("bitset", pa.large_binary()), ("has_null", pa.bool_())]))
    leaf = BoundEqualTo(ref("x", pa.int64()), 3)
    assert BF.might_match(leaf, large).tolist() == BF.might_match(leaf, meta).tolist()
    assert BF.might_match(leaf, meta.slice(2)).tolist() == [True, False]
