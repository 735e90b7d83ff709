"""The bloomset kernel (probe many back-to-back bitsets) against its pure-Python reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import bloomset
from metaindex.bloom import SplitBlockBloomFilter, xxh64
from tests.reference import bloom as ref_bloom
from tests.reference import bloomset as ref


def _filters(rng, n):
    """n random filters (some empty, some null), their values, and the concatenated column."""
    blobs, present, inserted = [], [], []
    for _ in range(n):
        if rng.random() < 0.1:
            blobs.append(b"")
            present.append(False)
            inserted.append(np.zeros(0, np.int64))
            continue
        values = rng.integers(0, 1000, rng.integers(0, 60))
        f = SplitBlockBloomFilter(int(rng.choice([32, 64, 256, 1024])))
        f.insert(values)
        blobs.append(f.to_bytes())
        present.append(True)
        inserted.append(values)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    return offsets, b"".join(blobs), np.array(present), inserted


def test_hash_masks_match_the_reference_salts():
    hashes = np.random.default_rng(1).integers(0, 2**63, 50, dtype=np.uint64) * np.uint64(2)
    got = bloomset.hash_masks(hashes)
    want = np.array([ref_bloom.mask(int(h) & 0xFFFFFFFF) for h in hashes], np.uint32)
    assert np.array_equal(got, want), "mask words must be 1 << ((uint32(h) * salt[i]) >> 27)"


@pytest.mark.parametrize("seed", range(5))
def test_probe_matches_reference_and_never_misses(seed):
    rng = np.random.default_rng(seed)
    offsets, data, present, inserted = _filters(rng, 200)
    for _ in range(20):
        wanted = rng.integers(0, 1000, rng.integers(0, 4))
        hashes = xxh64(wanted.astype(np.int64))
        got = bloomset.probe(offsets, data, present, hashes)
        want = ref.probe(offsets, data, present, hashes)
        assert got.tolist() == want, f"kernel and reference disagree for values {wanted}"
        holds = np.array([bool(np.isin(wanted, v).any()) for v in inserted])
        assert not (holds & ~got).any(), "a file holding a probed value must answer True"


def test_sliced_offsets_and_empty_inputs():
    rng = np.random.default_rng(7)
    offsets, data, present, _ = _filters(rng, 30)
    hashes = xxh64(np.arange(5, dtype=np.int64))
    whole = bloomset.probe(offsets, data, present, hashes)
    part = bloomset.probe(offsets[10:21], data, present[10:20], hashes)
    assert part.tolist() == whole[10:20].tolist(), "absolute offsets of a slice must work"
    assert bloomset.probe(np.zeros(1, np.int64), b"", np.zeros(0, bool), hashes).size == 0
    none = bloomset.probe(offsets, data, present, np.zeros(0, np.uint64))
    assert not none.any(), "no hash to look for: no valid bitset can match"


@pytest.mark.hostile
def test_invalid_ranges_answer_true_without_reading():
    data = bytes(64)
    cases = [(0, 31), (0, 48), (-32, 0), (32, 96), (40, 72), (64, 32), (0, 2**62)]
    for start, end in cases:
        got = bloomset.probe(
            np.array([start, end], np.int64), data, np.array([True]), np.array([123], np.uint64)
        )
        assert got.tolist() == [True], f"range [{start}, {end}) of 64 bytes proves nothing"


@pytest.mark.hostile
def test_bad_arguments_raise_typed_errors():
    with pytest.raises(ValueError, match="n \\+ 1"):
        bloomset.probe(np.zeros(3, np.int64), b"", np.ones(3, bool), np.zeros(1, np.uint64))
    with pytest.raises(TypeError, match="present"):
        bloomset.probe(np.zeros(2, np.int64), b"", np.ones(1, np.float64), np.zeros(1, np.uint64))
    with pytest.raises(TypeError, match="data"):
        bloomset.probe(np.zeros(2, np.int64), 5, np.ones(1, bool), np.zeros(1, np.uint64))


@pytest.mark.hostile
@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=300),
    st.lists(st.integers(-100, 400), min_size=1, max_size=12),
    st.lists(st.integers(0, 2**64 - 1), max_size=4),
    st.integers(32, 256),
)
def test_random_offsets_and_bytes_agree_with_reference(data, cuts, hashes, max_bytes):
    offsets = np.array(cuts, np.int64)
    present = np.array([(i % 3) != 2 for i in range(len(cuts) - 1)], bool)
    hs = np.array(hashes, np.uint64)
    got = bloomset.probe(offsets, data, present, hs, max_bytes)
    assert got.tolist() == ref.probe(offsets, data, present, hs, max_bytes)
