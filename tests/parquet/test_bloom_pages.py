"""Bloom filters inside Parquet files: we write them, pyarrow reads the file, both read filters."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.bloom import SplitBlockBloomFilter
from metaindex.errors import DecodeError, SchemaError
from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile
from metaindex.parquet.writer import write_table

RNG = np.random.default_rng(4)


def _table(n=20_000):
    return pa.table(
        {
            "id": pa.array(RNG.permutation(n).astype(np.int64) * 7),
            "name": pa.array([f"user-{i}" for i in range(n)]),
            "score": pa.array(RNG.standard_normal(n)),
            "small": pa.array((np.arange(n) % 100).astype(np.int32)),
            "code": pa.array(
                [bytes([i % 256, (i // 256) % 256, 1]) for i in range(n)], pa.binary(3)
            ),
        }
    )


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_filters_we_write_hold_every_value_and_match_pyarrows(version):
    table = _table()
    opts = {c: {"ndv": 20_000, "fpp": 0.01} for c in table.column_names}
    buf = io.BytesIO()
    write_table(
        table,
        buf,
        bloom_filter_options=opts,
        row_group_size=5_000,
        data_page_version=version,
        compression="zstd",
    )
    data = buf.getvalue()
    assert pq.read_table(io.BytesIO(data)).equals(table), "pyarrow must read a file with filters"
    pf = ParquetFile(data)
    theirs_buf = io.BytesIO()
    pq.write_table(table, theirs_buf, bloom_filter_options=opts, row_group_size=5_000)
    theirs = ParquetFile(theirs_buf.getvalue())
    for rg in range(pf.num_row_groups):
        part = table.slice(rg * 5_000, 5_000)
        for col in table.column_names:
            bloom = pf.bloom_filter(rg, col)
            assert isinstance(bloom, SplitBlockBloomFilter)
            assert bloom.might_contain(part.column(col)).all(), f"{col}: a present value is absent"
            peer = theirs.bloom_filter(rg, col)
            assert peer == bloom, f"{col}: our bitset should equal pyarrow's for the same values"


def test_absent_values_are_mostly_rejected():
    table = _table()
    buf = io.BytesIO()
    write_table(table, buf, bloom_filter_options={"id": {"ndv": 20_000, "fpp": 0.01}})
    bloom = ParquetFile(buf.getvalue()).bloom_filter(0, "id")
    probes = pa.array(np.arange(1, 200_000, 7, dtype=np.int64) * 7 + 3)
    assert bloom.might_contain(probes).mean() < 0.03, "false-positive rate far above 1%"
    assert ParquetFile(buf.getvalue()).bloom_filter(0, "name") is None


def test_bad_options_are_refused():
    table = _table(10)
    with pytest.raises(SchemaError, match="unknown columns"):
        write_table(table, io.BytesIO(), bloom_filter_options={"nope": True})
    with pytest.raises(ValueError, match="fpp"):
        write_table(table, io.BytesIO(), bloom_filter_options={"id": {"ndv": 10, "fpp": 2}})
    with pytest.raises(ValueError, match="unknown bloom"):
        write_table(table, io.BytesIO(), bloom_filter_options={"id": {"size": 10}})


def _with_header(header, bitset: bytes, declared=None) -> bytes:
    """A small file whose first chunk's bloom filter is ``header`` (struct or raw bytes)."""
    table = _table(100)
    buf = io.BytesIO()
    write_table(table, buf, bloom_filter_options={"id": True})
    pf = ParquetFile(buf.getvalue())
    meta = pf.footer
    cm = meta.row_groups[0].columns[0].meta_data
    blob = (header if isinstance(header, bytes) else header.to_bytes()) + bitset
    body = buf.getvalue()[: -8 - len(meta.to_bytes())]
    cm.bloom_filter_offset = len(body)
    cm.bloom_filter_length = len(blob) if declared is None else declared
    footer = meta.to_bytes()
    return body + blob + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def _header(num_bytes, hash_=None):
    return fmt.BloomFilterHeader(
        numBytes=num_bytes,
        algorithm=fmt.BloomFilterAlgorithm(BLOCK=fmt.SplitBlockAlgorithm()),
        hash=hash_ or fmt.BloomFilterHash(XXHASH=fmt.XxHash()),
        compression=fmt.BloomFilterCompression(UNCOMPRESSED=fmt.Uncompressed()),
    )


@pytest.mark.hostile
@pytest.mark.parametrize(
    "num_bytes,bitset,declared",
    [
        (-32, b"\0" * 32, None),  # negative size
        (48, b"\0" * 48, None),  # not a power of two
        (16, b"\0" * 16, None),  # below the minimum
        (1 << 20, b"\0" * 64, None),  # past the file
        (64, b"\0" * 64, 10),  # declared length disagrees
    ],
)
def test_garbage_filters_raise_typed_errors(num_bytes, bitset, declared):
    data = _with_header(_header(num_bytes), bitset, declared)
    with pytest.raises(DecodeError):
        ParquetFile(data).bloom_filter(0, "id")


@pytest.mark.hostile
def test_legacy_murmur3_header_is_refused():
    raw = _header(64).to_bytes()
    xxhash_member = b"\x1c\x1c\x00\x00"  # hash (field 3) = union member 1 (XXHASH), empty
    at = raw.index(xxhash_member, raw.index(xxhash_member) + 1)
    legacy = raw[: at + 1] + b"\x2c" + raw[at + 2 :]  # union member 2: a hash we do not know
    with pytest.raises(DecodeError, match="unknown hash"):
        ParquetFile(_with_header(legacy, b"\0" * 64)).bloom_filter(0, "id")
