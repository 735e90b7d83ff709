"""The writer's direct paths: pages of required fixed-width PLAIN columns written from views of
the values, compressed pages from the codec's own buffer, and nullable string / binary PLAIN
columns written straight from Arrow's offsets, data and validity bitmap (no shredding). pyarrow
reads back every file, its statistics agree with the ones pyarrow writes, and threaded writes
are the same bytes."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metaindex.parquet import read_table, write_table
from metaindex.parquet import writer as writer_mod


def _write(table, **kw) -> bytes:
    buf = io.BytesIO()
    write_table(table, buf, **kw)
    return buf.getvalue()


def _strings(n: int, rng, arrow_type, junk_under_nulls: bool) -> pa.Array:
    words = [
        None if rng.random() < 0.2 else f"w{int(k)}" * int(k % 4) for k in rng.integers(0, 5000, n)
    ]
    words[100:700] = [None] * 600  # long runs of nulls and of values: RLE runs of levels
    words[900:1500] = ["run"] * 600
    arr = pa.array(words, pa.string()).cast(arrow_type)
    if junk_under_nulls:  # null slots holding bytes (as if_else leaves them)
        full = pa.array(
            [w if w is not None else "\xff-not-a-value" for w in words], pa.string()
        ).cast(arrow_type)
        arr = pc.if_else(pa.array([w is None for w in words]), pa.scalar(None, arrow_type), full)
    return arr


def _stats(data: bytes):
    md = pq.ParquetFile(io.BytesIO(data)).metadata
    out = []
    for i in range(md.num_row_groups):
        s = md.row_group(i).column(0).statistics
        out.append((s.null_count, s.min, s.max) if s.has_min_max else (s.null_count,))
    return out


@pytest.mark.parametrize(
    "arrow_type", [pa.string(), pa.binary(), pa.large_string(), pa.large_binary()]
)
@pytest.mark.parametrize("junk_under_nulls", [False, True])
@pytest.mark.parametrize(
    "opts",
    [
        {"compression": "none"},
        {"compression": "zstd", "write_page_checksum": True},
        {"compression": "snappy", "data_page_size": 2000},
    ],
)
def test_nullable_binary_plain_from_arrow_buffers(monkeypatch, arrow_type, junk_under_nulls, opts):
    rng = np.random.default_rng(5)
    arr = _strings(5003, rng, arrow_type, junk_under_nulls)
    table = pa.table({"s": arr}).slice(3)  # bit offset 3 into the validity bitmap
    kw = dict(opts, use_dictionary=False, row_group_size=1237)  # row groups at odd bits

    def no_shredding(*args, **kwargs):
        raise AssertionError("a flat nullable binary column was shredded")

    monkeypatch.setattr(writer_mod, "shred", no_shredding)
    ours = _write(table, use_threads=False, **kw)
    assert _write(table, use_threads=True, **kw) == ours
    back = pq.read_table(io.BytesIO(ours))
    assert back.column("s").combine_chunks().to_pylist() == table.column("s").to_pylist()
    assert read_table(ours).column("s").to_pylist() == table.column("s").to_pylist()
    if opts.get("write_page_checksum"):
        pq.read_table(io.BytesIO(ours), page_checksum_verification=True)
    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    assert _stats(ours) == _stats(buf.getvalue())


def test_nullable_binary_with_a_bloom_filter_or_dictionary_is_shredded():
    rng = np.random.default_rng(6)
    table = pa.table({"s": _strings(3000, rng, pa.string(), True)})
    for kw in (
        {"use_dictionary": False, "bloom_filter_options": {"s": True}},
        {"use_dictionary": True},
        {"use_dictionary": False, "write_page_index": True},
        {"use_dictionary": False, "data_page_version": "2.0"},
    ):
        ours = _write(table, **kw)
        assert pq.read_table(io.BytesIO(ours)).equals(table)
        assert _stats(ours)[0][0] == table.column("s").null_count


def test_all_null_binary_column_has_no_bounds():
    table = pa.table({"s": pa.array([None] * 100, pa.string())})
    ours = _write(table, use_dictionary=False, compression="none")
    assert pq.read_table(io.BytesIO(ours)).equals(table)
    assert _stats(ours) == [(100,)]


@pytest.mark.parametrize(
    "column",
    [
        pa.array(np.arange(-5000, 5000, 7, dtype=np.int32)),
        pa.array(np.arange(10_000, dtype=np.int64) * 977),
        pa.array(np.linspace(-1, 1, 3001, dtype=np.float32)),
        pa.array(np.linspace(-1, 1, 3001)),
        pa.array(np.arange(2000, dtype=np.int64)).cast(pa.timestamp("us")),
        pa.array(np.arange(-900, 900, dtype=np.int64))
        .cast(pa.decimal128(21, 2))
        .cast(pa.decimal128(18, 2)),
        pa.array(np.arange(-900, 900, dtype=np.int64)).cast(pa.decimal128(30, 2)),
    ],
)
@pytest.mark.parametrize(
    "opts",
    [
        {"compression": "none"},
        {"compression": "zstd", "compression_level": 3},
        {"compression": "gzip", "write_page_checksum": True},
        {"compression": "zstd", "write_page_checksum": True, "data_page_size": 1000},
    ],
)
def test_required_fixed_width_plain_pages_from_views(column, opts):
    table = pa.table([column], schema=pa.schema([pa.field("c", column.type, False)]))
    table = table.slice(1)
    kw = dict(opts, use_dictionary=False, row_group_size=1100)
    ours = _write(table, use_threads=False, **kw)
    assert _write(table, use_threads=True, **kw) == ours
    assert pq.read_table(io.BytesIO(ours), page_checksum_verification=True).equals(table)
    assert read_table(ours).equals(table)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_direct_pages_encrypt(compression):
    from metaindex.crypto import FileDecryptionProperties, FileEncryptionProperties

    key = bytes(range(16))
    rng = np.random.default_rng(8)
    table = pa.table({"s": _strings(4000, rng, pa.string(), True), "x": pa.array(rng.random(4000))})
    data = _write(
        table,
        use_dictionary=False,
        compression=compression,
        write_page_checksum=True,
        encryption_properties=FileEncryptionProperties(key),
    )
    back = read_table(
        data, decryption_properties=FileDecryptionProperties(footer_key=key), verify_checksums=True
    )
    assert back.column("s").to_pylist() == table.column("s").to_pylist()
    assert back.column("x").equals(table.column("x"))
