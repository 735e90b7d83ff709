"""XXH64 and the split-block bloom filter: kernel vs xxhash, vs the Python reference, vs pyarrow."""

import decimal
import math
import pickle
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from metaindex._native import bloom as k
from metaindex.bloom import (
    MAX_BYTES,
    SplitBlockBloomFilter,
    canonical_float_hashes,
    canonical_floats,
    optimal_num_bytes,
    xxh64,
)
from metaindex.errors import DecodeError
from tests.reference import bloom as ref

RNG = np.random.default_rng(20240601)


def xx(b) -> int:
    return xxhash.xxh64_intdigest(bytes(b), 0)


def xx_rows(a: np.ndarray) -> list[int]:
    """xxhash of each value's little-endian bytes (rows of a 2-D uint8 array)."""
    a = np.ascontiguousarray(a)
    rows = a if a.ndim == 2 else a.view(np.uint8).reshape(len(a), a.dtype.itemsize)
    return [xx(r.tobytes()) for r in rows]


# ------------------------------------------------------------------------------- XXH64


def test_xxh64_every_length_0_to_1024_matches_xxhash():
    blobs = [RNG.bytes(n) for n in range(1025)]
    for seed in (0, 1, 2**64 - 1):
        for b in blobs:
            assert k.xxh64_bytes(b, seed) == xxhash.xxh64_intdigest(b, seed), (
                f"xxh64_bytes differs from xxhash for length {len(b)}, seed {seed}"
            )
    got = xxh64(blobs)  # the batched BYTE_ARRAY path over the same inputs
    assert got.dtype == np.uint64
    assert [int(h) for h in got] == [xx(b) for b in blobs], "batched BYTE_ARRAY hash differs"


def test_reference_xxh64_matches_xxhash():
    for n in list(range(70)) + [100, 255, 256, 1000]:
        b = RNG.bytes(n)
        assert ref.xxh64(b) == xx(b), f"reference xxh64 wrong at length {n}"
        assert ref.xxh64(b, 12345) == xxhash.xxh64_intdigest(b, 12345)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_fixed_width_arrays_hash_their_le_bytes(dtype):
    if np.dtype(dtype).kind == "f":
        a = RNG.standard_normal(500).astype(dtype)
        a[:6] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]
        a[6:8].view(np.uint32 if dtype == np.float32 else np.uint64)[:] = 0x7F800001  # payload NaN
    else:
        info = np.iinfo(dtype)
        a = RNG.integers(info.min, info.max, 500, dtype=dtype, endpoint=True)
    expected = xx_rows(a)
    assert [int(h) for h in xxh64(a)] == expected, f"{dtype.__name__} hashes differ from xxhash"
    assert [int(h) for h in k.hash_fixed(a, a.itemsize)] == expected
    assert [int(h) for h in xxh64(pa.array(a))] == expected, "Arrow input hashes differently"


@pytest.mark.parametrize("width", [1, 2, 3, 7, 12, 16, 31, 32, 33, 100])
def test_fixed_len_byte_array_and_int96(width):
    a = RNG.integers(0, 256, (300, width), dtype=np.uint8)
    expected = xx_rows(a)
    assert [int(h) for h in xxh64(a)] == expected, f"FLBA({width}) hashes differ"
    if width == 12:
        assert [int(h) for h in xxh64(a, physical_type="INT96")] == expected
    fsb = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), 300, [None, pa.py_buffer(a)])
    assert [int(h) for h in xxh64(fsb)] == expected, "fixed_size_binary hashes differ"


@pytest.mark.parametrize("offset_dtype", [np.int32, np.int64])
def test_byte_array_pairs_with_nonzero_first_offset(offset_dtype):
    blobs = [RNG.bytes(int(n)) for n in RNG.integers(0, 40, 400)]
    data = np.frombuffer(b"PAD" + b"".join(blobs) + b"TAIL", np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(offset_dtype) + 3
    got = xxh64((offsets, data), physical_type="BYTE_ARRAY")
    assert [int(h) for h in got] == [xx(b) for b in blobs], "offsets[0] != 0 must be honoured"
    assert [int(h) for h in k.hash_byte_array(offsets[100:201], data)] == [
        xx(b) for b in blobs[100:200]
    ], "a sliced offsets array hashes its own values"


@pytest.mark.parametrize(
    "typ", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.string_view()]
)
def test_arrow_strings_sliced_and_with_nulls(typ):
    strs = [f"v{i}" if i % 7 else None for i in range(300)]
    arr = pa.array(strs, typ).slice(5, 250)
    present = [s for s in strs[5:255] if s is not None]
    assert [int(h) for h in xxh64(arr)] == [xx(s.encode()) for s in present], (
        "xxh64 returns the hashes of the non-null values, in order"
    )


def test_python_values_and_physical_type_conversions():
    assert int(xxh64(5)[0]) == xx(np.int64(5).tobytes()), "a Python int hashes as INT64"
    assert int(xxh64(5, physical_type="INT32")[0]) == xx(np.int32(5).tobytes())
    assert int(xxh64(2**32 - 1, physical_type="INT32")[0]) == xx(np.int32(-1).tobytes()), (
        "unsigned values hash as their bit pattern"
    )
    assert int(xxh64(2.5)[0]) == xx(np.float64(2.5).tobytes())
    assert int(xxh64(2.5, physical_type="FLOAT")[0]) == xx(np.float32(2.5).tobytes())
    assert int(xxh64(3, physical_type="DOUBLE")[0]) == xx(np.float64(3).tobytes())
    assert int(xxh64("héllo")[0]) == xx("héllo".encode())
    assert int(xxh64(b"\x00\x01")[0]) == xx(b"\x00\x01")
    assert int(xxh64(b"ab", physical_type="FIXED_LEN_BYTE_ARRAY")[0]) == xx(b"ab")
    assert int(xxh64(np.float32(1.5))[0]) == xx(np.float32(1.5).tobytes()), (
        "a numpy scalar keeps its dtype"
    )
    assert len(xxh64([1, None, 2])) == 2
    with pytest.raises(ValueError, match="does not fit"):
        xxh64(2**31 * 2, physical_type="INT32")
    with pytest.raises(ValueError, match="exactly representable"):
        xxh64(0.1, physical_type="FLOAT")
    with pytest.raises(TypeError, match="mix"):
        xxh64([1, "a"])
    with pytest.raises(TypeError, match="BOOLEAN"):
        xxh64([True, False])
    with pytest.raises(TypeError, match="BOOLEAN"):
        xxh64(pa.array([True]))
    with pytest.raises(TypeError, match="BOOLEAN"):
        xxh64(np.array([True]))
    with pytest.raises(ValueError, match="same length"):
        xxh64([b"a", b"bc"], physical_type="FIXED_LEN_BYTE_ARRAY")
    with pytest.raises(TypeError, match="stored as INT64"):
        xxh64(pa.array([1], pa.int64()), physical_type="INT32")


def test_arrow_logical_types_hash_as_pyarrow_stores_them():
    def le(values, dtype):
        return [xx(np.array([v], dtype).tobytes()) for v in values]

    assert list(xxh64(pa.array([1, -2], pa.int8()))) == le([1, -2], np.int32)
    assert list(xxh64(pa.array([65535], pa.uint16()))) == le([65535], np.int32)
    assert list(xxh64(pa.array([2**32 - 1], pa.uint32()))) == le([-1], np.int32)
    assert list(xxh64(pa.array([2**64 - 1], pa.uint64()))) == le([-1], np.int64)
    assert list(xxh64(pa.array([3], pa.timestamp("s")))) == le([3000], np.int64), "s -> ms"
    assert list(xxh64(pa.array([3], pa.time32("s")))) == le([3000], np.int32), "s -> ms"
    assert list(xxh64(pa.array([86_400_000 * 2], pa.date64()))) == le([2], np.int32), (
        "date64 -> days"
    )
    assert list(xxh64(pa.array([7], pa.date32()))) == le([7], np.int32)
    assert list(xxh64(pa.array([-1], pa.int64()).cast(pa.duration("us")))) == le([-1], np.int64)
    dec = pa.array([decimal.Decimal("1.5"), decimal.Decimal("-0.01")], pa.decimal128(9, 2))
    assert list(xxh64(dec)) == [
        xx((150).to_bytes(4, "big", signed=True)),
        xx((-1).to_bytes(4, "big", signed=True)),
    ], "decimal(9) is a 4-byte big-endian FLBA"
    half = np.array([1.5, -0.0], np.float16)
    assert list(xxh64(pa.array(half))) == xx_rows(half.view(np.uint8).reshape(2, 2))


# ----------------------------------------------------------------- filter vs reference


@pytest.fixture(params=["portable", "avx2"])
def block_ops(request):
    """Run a test under each block insert/check implementation (AVX2 where the CPU has it)."""
    try:
        yield k.select_block_ops(request.param)
    except ValueError:
        pytest.skip("this CPU has no AVX2")
    finally:
        k.select_block_ops("auto")


@pytest.mark.parametrize("num_bytes", [32, 64, 1024, 65536])
def test_kernel_and_reference_sbbf_build_identical_bitsets(num_bytes, block_ops):
    hashes = RNG.integers(0, 2**64, 3000, dtype=np.uint64, endpoint=False)
    hashes[:4] = [0, 2**64 - 1, 2**32, 2**32 - 1]
    r = ref.SBBF(num_bytes)
    for h in hashes[:1500]:
        r.insert(int(h))
    f = SplitBlockBloomFilter(num_bytes)
    f.insert_hashes(hashes[:1500])
    assert f.to_bytes() == bytes(r.bits), "kernel bitset differs from the reference"
    got = f.might_contain_hashes(hashes)
    assert got.tolist() == [r.check(int(h)) for h in hashes], "kernel check differs"
    assert got[:1500].all(), "no false negatives"


def test_fused_value_paths_equal_hash_then_insert(block_ops):
    ints = RNG.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    strs = pa.array([f"key-{i}" for i in RNG.integers(0, 10**9, 5000)])
    for values in (
        ints,
        ints.astype(np.int32),
        ints.view(np.float64),
        strs,
        RNG.integers(0, 256, (5000, 12), dtype=np.uint8),
    ):
        fused = SplitBlockBloomFilter(4096)
        fused.insert(values)
        split = SplitBlockBloomFilter(4096)
        split.insert_hashes(xxh64(values))
        assert fused == split, "fused hash+insert must equal insert_hashes(xxh64(...))"
        assert fused.might_contain(values).all()
        assert (fused.might_contain(values) == split.might_contain_hashes(xxh64(values))).all()


def test_chunked_arrays_insert_and_check_per_chunk():
    chunked = pa.chunked_array([pa.array([1, 2]), pa.array([], pa.int64()), pa.array([None, 4])])
    f = SplitBlockBloomFilter(256)
    f.insert(chunked)
    g = SplitBlockBloomFilter(256)
    g.insert([1, 2, 4])
    assert f == g, "a ChunkedArray inserts like its concatenation"
    assert f.might_contain(chunked).tolist() == [True, True, False, True]
    assert (xxh64(chunked) == xxh64([1, 2, 4])).all()
    assert f.might_contain(pa.chunked_array([], pa.int64())).shape == (0,)


def test_nulls_are_ignored_by_insert_and_never_contained():
    arr = pa.array([1, None, 3, None], pa.int64())
    f = SplitBlockBloomFilter(1024)
    f.insert(arr)
    g = SplitBlockBloomFilter(1024)
    g.insert([1, 3])
    assert f == g, "insert must skip nulls"
    assert f.might_contain(arr).tolist() == [True, False, True, False], "null rows answer False"
    assert f.might_contain([1, None]).tolist() == [True, False]
    assert 3 in f and None not in f
    assert not SplitBlockBloomFilter(32).might_contain(pa.nulls(3)).any()


# --------------------------------------------------------------------- pyarrow interop


def _pyarrow_filters(table: pa.Table, ndv: int, fpp: float, tmp_path, **kw) -> dict:
    path = tmp_path / "bloom.parquet"
    opts = {name: {"ndv": ndv, "fpp": fpp} for name in table.column_names}
    pq.write_table(table, path, bloom_filter_options=opts, **kw)
    md = pq.ParquetFile(path).metadata
    raw = path.read_bytes()
    out = {}
    for i in range(md.num_columns):
        col = md.row_group(0).column(i)
        assert col.bloom_filter_offset is not None, (
            f"pyarrow wrote no filter for {col.path_in_schema}"
        )
        chunk = raw[col.bloom_filter_offset : col.bloom_filter_offset + col.bloom_filter_length]
        header, bitset = ref.parse_bloom_filter(chunk)
        assert header[2] == {1: {}} and header[3] == {1: {}} and header[4] == {1: {}}, (
            f"expected BLOCK / XXHASH / UNCOMPRESSED, got {header}"
        )
        assert len(bitset) == header[1], "bitset shorter than numBytes"
        out[col.path_in_schema] = bitset
    return out


def test_bitsets_identical_to_pyarrow_for_every_type(tmp_path):
    n = 3000
    ints = RNG.integers(-(2**40), 2**40, n)
    strs = [f"s{v}" if v % 11 else None for v in RNG.integers(0, 10**6, n)]
    cols = {
        "int64": pa.array(ints),
        "int32": pa.array(ints.astype(np.int32)),
        "int8": pa.array(ints.astype(np.int8)),
        "uint32": pa.array(ints.astype(np.uint32)),
        "uint64": pa.array(ints.astype(np.uint64)),
        "double": pa.array(
            np.concatenate([RNG.standard_normal(n - 4), [np.nan, -0.0, 0.0, np.inf]])
        ),
        "float": pa.array(RNG.standard_normal(n).astype(np.float32)),
        "float16": pa.array(RNG.standard_normal(n).astype(np.float16)),
        "string": pa.array(strs),
        "large_string": pa.array(strs, pa.large_string()),
        "string_view": pa.array(strs, pa.string_view()),
        "dict": pa.array(strs).dictionary_encode(),
        "binary": pa.array([RNG.bytes(int(m)) for m in RNG.integers(0, 30, n)]),
        "fsb": pa.array([RNG.bytes(16) for _ in range(n)], pa.binary(16)),
        "date32": pa.array(ints.astype(np.int32) % 50000, pa.date32()),
        "date64": pa.array((ints % 50000) * 86_400_000, pa.date64()),
        "ts_s": pa.array(ints % 2**31, pa.timestamp("s")),
        "ts_ns": pa.array(ints, pa.timestamp("ns", "UTC")),
        "time32_s": pa.array((ints % 86400).astype(np.int32), pa.time32("s")),
        "time64_us": pa.array(ints % 86_400_000_000, pa.time64("us")),
        "duration": pa.array(ints, pa.duration("ms")),
        "dec9": pa.array(
            [decimal.Decimal(int(v) % 10**9) / 100 for v in ints], pa.decimal128(9, 2)
        ),
        "dec20": pa.array([decimal.Decimal(int(v)) for v in ints], pa.decimal128(20, 0)),
        "dec40": pa.array([decimal.Decimal(-int(v)) for v in ints], pa.decimal256(40, 0)),
    }
    table = pa.table(cols).slice(7, n - 20)  # sliced: Arrow offsets != 0 everywhere
    bitsets = _pyarrow_filters(table, ndv=2000, fpp=0.01, tmp_path=tmp_path)
    for name in table.column_names:
        col = table.column(name)
        ours = SplitBlockBloomFilter(len(bitsets[name]))
        ours.insert(col)
        assert ours.to_bytes() == bitsets[name], f"{name}: our bitset differs from pyarrow's"
        theirs = SplitBlockBloomFilter.from_bytes(bitsets[name])
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        assert (theirs.might_contain(col) == valid).all(), (
            f"{name}: every inserted value must be found in pyarrow's filter"
        )


def test_int96_bitset_identical_to_pyarrow(tmp_path):
    ns = RNG.integers(0, 2**62, 2000)
    bitsets = _pyarrow_filters(
        pa.table({"ts": pa.array(ns, pa.timestamp("ns"))}),
        2000,
        0.01,
        tmp_path,
        use_deprecated_int96_timestamps=True,
    )
    days, nanos = np.divmod(ns, 86_400_000_000_000)
    int96 = np.empty((len(ns), 12), np.uint8)
    int96[:, :8] = nanos.astype("<i8").view(np.uint8).reshape(-1, 8)
    int96[:, 8:] = (days + 2440588).astype("<u4").view(np.uint8).reshape(-1, 4)
    ours = SplitBlockBloomFilter(len(bitsets["ts"]))
    ours.insert(int96, physical_type="INT96")
    assert ours.to_bytes() == bitsets["ts"], "INT96 bitset differs from pyarrow's"


@pytest.mark.parametrize("ndv", [0, 1, 100, 1000, 26214, 10**5, 10**6, 10**9])
@pytest.mark.parametrize("fpp", [0.5, 0.1, 0.05, 0.01, 0.001, 0.0001])
def test_optimal_num_bytes_is_arrows_formula(ndv, fpp):
    assert optimal_num_bytes(ndv, fpp) == ref.optimal_num_bytes(ndv, fpp)


@pytest.mark.parametrize("ndv,fpp", [(100, 0.01), (5000, 0.05), (20000, 0.001)])
def test_optimal_num_bytes_equals_pyarrows_size(tmp_path, ndv, fpp):
    # pyarrow sizes for min(ndv, rows in the row group): give it at least ndv rows
    table = pa.table({"c": pa.array(np.arange(ndv, dtype=np.int64))})
    size = len(_pyarrow_filters(table, ndv, fpp, tmp_path)["c"])
    assert optimal_num_bytes(ndv, fpp) == size, "sizing must match pyarrow's for the same ndv/fpp"


def test_for_ndv_meets_the_target_estimate():
    for fpp in (0.1, 0.01, 0.001):
        for ndv in (1, 1000, 12345, 10**6):
            f = SplitBlockBloomFilter.for_ndv(ndv, fpp)
            assert f.num_bytes >= optimal_num_bytes(ndv, fpp)
            assert f.fpp_estimate(ndv) <= fpp, f"for_ndv({ndv}, {fpp}) undersized"
            assert (
                f.num_bytes == 32
                or SplitBlockBloomFilter(f.num_bytes // 2).fpp_estimate(ndv) > fpp
                or f.num_bytes == optimal_num_bytes(ndv, fpp)
            ), "for_ndv must not oversize"
    assert SplitBlockBloomFilter.for_ndv(10**12, 0.01).num_bytes == MAX_BYTES
    assert SplitBlockBloomFilter.for_ndv(10**9, 0.01, max_bytes=1 << 20).num_bytes == 1 << 20
    with pytest.raises(ValueError):
        SplitBlockBloomFilter.for_ndv(10, 0.0)
    with pytest.raises(ValueError):
        SplitBlockBloomFilter.for_ndv(-1, 0.1)


def test_fpp_estimate_matches_the_spec_example():
    est = SplitBlockBloomFilter(1024 * 32).fpp_estimate(26214)
    assert abs(est - 0.0126) < 0.0003, f"spec: 1024 blocks, 26214 values ~ 1.26%, got {est}"
    assert SplitBlockBloomFilter(32).fpp_estimate(0) == 0.0


@pytest.mark.parametrize("fpp", [0.1, 0.01, 0.001])
def test_measured_false_positive_rate(fpp):
    # the hardest ndv for the sizing: the most values the writers' formula fits in 256 KiB
    bits = 256 * 1024 * 8
    ndv = int(bits * -math.log(1 - fpp ** (1 / 8)) / 8)
    f = SplitBlockBloomFilter.for_ndv(ndv, fpp)
    f.insert(np.arange(ndv, dtype=np.int64))
    probes = 2_000_000
    absent = np.arange(ndv, ndv + probes, dtype=np.int64)
    measured = f.might_contain(absent).mean()
    assert measured <= 1.5 * fpp, f"measured fpp {measured} > 1.5 x target {fpp}"
    est = f.fpp_estimate(ndv)
    sigma = math.sqrt(est * (1 - est) / probes)
    assert abs(measured - est) < 6 * sigma + 0.02 * est, (
        f"measured {measured} far from the Poisson estimate {est}"
    )


# ------------------------------------------------------------------ object behaviour


def test_merge_serialise_equality_pickle():
    a = SplitBlockBloomFilter(2048)
    b = SplitBlockBloomFilter(2048)
    a.insert(["x", "y"])
    b.insert(["z"])
    both = SplitBlockBloomFilter(2048)
    both.insert(["x", "y", "z"])
    merged = a.copy()
    merged.merge(b)
    assert merged == both, "merge is the bitwise OR (the union)"
    assert merged != a and a.might_contain(["x", "y"]).all()
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(SplitBlockBloomFilter(1024))
    again = SplitBlockBloomFilter.from_bytes(merged.to_bytes())
    assert again == merged and again.num_bytes == 2048 and again.num_blocks == 64
    assert pickle.loads(pickle.dumps(merged)) == merged
    assert "num_bytes=2048" in repr(merged)
    assert not merged.bitset.flags.writeable
    with pytest.raises(TypeError):
        hash(merged)


@pytest.mark.parametrize("bad", [0, 1, 31, 33, 48, 96, 1000, MAX_BYTES * 2])
def test_constructor_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="power of two|exceeds"):
        SplitBlockBloomFilter(bad)


def test_canonical_floats_for_the_index():
    d = np.array([0.0, -0.0, np.nan, -np.nan, 1.5], np.float64)
    d[3:4].view(np.uint64)[:] = 0xFFF0000000000123  # a negative payload NaN
    c = canonical_floats(d)
    assert c.view(np.uint64).tolist()[:4] == [0, 0, 0x7FF8000000000000, 0x7FF8000000000000]
    assert d.view(np.uint64)[1] == 0x8000000000000000, "the input is not modified"
    h = canonical_float_hashes(d)
    assert h[0] == h[1] and h[2] == h[3], "-0.0 ~ 0.0 and NaN ~ NaN must hash alike"
    assert h[0] == xxh64(0.0)[0] and h[4] == xxh64(1.5)[0]
    f32 = canonical_floats(pa.array([-0.0, float("nan"), None], pa.float32()))
    assert f32.dtype == np.float32 and f32.view(np.uint32).tolist() == [0, 0x7FC00000]
    assert (canonical_float_hashes(pa.array(["a"])) == xxh64(["a"])).all(), (
        "non-float types hash unchanged"
    )
    assert xxh64(-0.0)[0] != xxh64(0.0)[0], "plain xxh64 keeps the Parquet (raw bits) semantics"


# ---------------------------------------------------------------------- hostile input


@pytest.mark.hostile
@pytest.mark.parametrize("size", [0, 1, 16, 31, 33, 63, 65, 96, 100, 1023, 1025, 4097])
def test_from_bytes_rejects_garbage_lengths(size):
    with pytest.raises(DecodeError, match="power of two"):
        SplitBlockBloomFilter.from_bytes(bytes(size))


@pytest.mark.hostile
def test_from_bytes_limit_and_prefixes():
    with pytest.raises(DecodeError, match="exceeds"):
        SplitBlockBloomFilter.from_bytes(bytes(1 << 12), max_bytes=1 << 11)
    valid = SplitBlockBloomFilter(1024)
    valid.insert(np.arange(100))
    data = valid.to_bytes()
    # a bitset has no framing: a strict prefix is rejected unless it is itself a valid size
    for n in range(len(data)):
        if n >= 32 and n & (n - 1) == 0:
            assert SplitBlockBloomFilter.from_bytes(data[:n]).num_bytes == n
        else:
            with pytest.raises(DecodeError):
                SplitBlockBloomFilter.from_bytes(data[:n])


@pytest.mark.hostile
@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_are_a_filter_or_decode_error(data):
    try:
        f = SplitBlockBloomFilter.from_bytes(data)
    except DecodeError:
        return
    assert f.to_bytes() == data
    assert f.might_contain(["a", "b"]).shape == (2,)


@pytest.mark.hostile
def test_kernel_rejects_bad_offsets_and_bitsets():
    data = np.zeros(10, np.uint8)
    for offsets in ([0, 5, 3], [-1, 2], [0, 11], [4, 2]):
        with pytest.raises(ValueError, match="offsets"):
            k.hash_byte_array(np.array(offsets, np.int32), data)
    with pytest.raises(ValueError, match="offsets"):
        k.hash_byte_array(np.array([0, 2**40], np.int64), data)
    with pytest.raises(ValueError):
        k.hash_byte_array(np.zeros(0, np.int32), data)
    with pytest.raises(TypeError):
        k.hash_byte_array(np.zeros(3, np.float64), data)
    with pytest.raises(ValueError, match="multiple"):
        k.hash_fixed(np.zeros(7, np.uint8), 4)
    with pytest.raises(ValueError, match="power of two"):
        k.insert_hashes(np.zeros(48, np.uint8), np.zeros(1, np.uint64))
    with pytest.raises(ValueError, match="power of two"):
        k.check_fixed(np.zeros(16, np.uint8), np.zeros(1, np.int64), 8)
    with pytest.raises(TypeError, match="writable"):
        k.insert_hashes(bytes(32), np.zeros(1, np.uint64))
    with pytest.raises(TypeError, match="contiguous"):
        k.hash_fixed(np.zeros(10, np.int64)[::2], 8)


@pytest.mark.hostile
@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(np.int64, st.integers(1, 12), elements=st.integers(-5, 40)), st.binary(max_size=40)
)
def test_random_offsets_hash_or_value_error(offsets, data):
    for dtype in (np.int32, np.int64):
        o = offsets.astype(dtype)
        try:
            h = k.hash_byte_array(o, data)
        except ValueError:
            ok = o[0] >= 0 and (np.diff(o) >= 0).all() and o[-1] <= len(data)
            assert not ok, "valid offsets were rejected"
            continue
        assert [int(x) for x in h] == [xx(data[a:b]) for a, b in pairwise(o)]


@pytest.mark.hostile
@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.lists(st.integers(-(2**63), 2**64 - 1) | st.none(), max_size=20),
        st.lists(st.floats(allow_nan=True) | st.none(), max_size=20),
        st.lists(st.text(max_size=10) | st.none(), max_size=20),
        st.lists(st.binary(max_size=10), max_size=20),
        hnp.arrays(hnp.scalar_dtypes(), st.integers(0, 20)),
    )
)
def test_random_values_never_crash(values):
    f = SplitBlockBloomFilter(64)
    try:
        h = xxh64(values)
        f.insert(values)
    except (TypeError, ValueError):
        return
    assert h.dtype == np.uint64
    found = f.might_contain(values)
    present = [v is not None for v in values] if isinstance(values, list) else [True] * len(values)
    assert found.tolist() == present, "every inserted non-null value is found; nulls are not"


def test_empty_fixed_width_and_decimal_arrays_hash_to_nothing():
    import pyarrow as pa

    for t in (pa.decimal128(10, 2), pa.binary(4), pa.decimal256(50, 3)):
        assert len(xxh64(pa.array([], t))) == 0, f"{t}: an empty column has no hashes"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 2**64 - 1), st.integers(0, 40), st.integers(0, 40).map(lambda k: k << 58)
        ),
        max_size=300,
    ),
    st.integers(1, 4),
)
def test_distinct_count_matches_unique(values, repeat):
    from metaindex.bloom import distinct_count

    hashes = np.array(values * repeat, dtype=np.uint64)
    assert distinct_count(hashes) == len(np.unique(hashes)), "hash-set count == np.unique's"
