"""use_threads: reads of (row group, column) chunks and writes of a row group's columns in
parallel give the same tables and the same bytes as one thread, errors as typed; and the
kernels that release the GIL still raise their exact errors on large corrupt pages."""

from __future__ import annotations

import io
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex._native import pagevalues, plain, rle
from metaindex.errors import DecodeError
from metaindex.parquet import encoding as enc
from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table


def _table(n: int = 60_000) -> pa.Table:
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 1 << 40, n)
    tags_offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
    return pa.table(
        {
            "id": ids,
            "small": pa.array(rng.integers(0, 50, n), pa.int32()),  # dictionary pages
            "value": pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.1),
            "name": pa.array([f"user-{i % 997}" for i in range(n)]),
            "tags": pa.ListArray.from_arrays(
                tags_offsets, pa.array(rng.integers(0, 1000, int(tags_offsets[-1])), pa.int32())
            ),
            "s": pa.StructArray.from_arrays(
                [pa.array(ids % 7), pa.array(ids % 3 == 0)], ["a", "b"]
            ),
        }
    )


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_threaded_write_is_byte_identical(codec):
    table = _table()
    files = []
    for threads in (False, True):
        buf = io.BytesIO()
        write_table(
            table,
            buf,
            row_group_size=20_000,
            compression=codec,
            use_threads=threads,
            write_page_index=True,
            bloom_filter_options={"id": True, "name": True},
            data_page_size=64 * 1024,
        )
        files.append(buf.getvalue())
    assert files[0] == files[1]
    assert pq.read_table(io.BytesIO(files[1])).equals(table)
    pf = pq.ParquetFile(io.BytesIO(files[1]))
    assert pf.metadata.num_row_groups == 3
    assert pf.metadata.row_group(1).column(0).has_offset_index


def test_threaded_read_equals_serial():
    table = _table()
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=15_000, data_page_size=32 * 1024)
    data = buf.getvalue()
    serial = read_table(data, use_threads=False)
    assert serial.equals(table)
    assert read_table(data, use_threads=True).equals(serial)
    with ParquetFile(data) as pf:
        assert pf.read(columns=["name", "id"], use_threads=True).equals(
            table.select(["name", "id"])
        )
        assert pf.read_row_group(2, use_threads=True).equals(table.slice(30_000, 15_000))
        assert pf.read_row_groups([3, 0], use_threads=True).equals(
            pa.concat_tables([table.slice(45_000, 15_000), table.slice(0, 15_000)])
        )


def test_reads_from_many_threads_at_once(tmp_path):
    table = _table(20_000)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=5_000)
    results, errors = [], []

    def work():
        try:
            for source in (str(path), pa.OSFile(str(path)), path.read_bytes()):
                results.append(read_table(source).equals(table))
        except Exception as exc:  # noqa: BLE001 - any failure is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 12


@pytest.mark.hostile
def test_threaded_read_raises_typed_errors():
    table = _table(40_000)
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=10_000, compression="none")
    data = bytearray(buf.getvalue())
    meta = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    chunk = meta.row_group(2).column(3)  # "name": a dictionary page, then data pages
    start = chunk.data_page_offset
    data[
        start : start
        + chunk.total_compressed_size
        - (start - (chunk.dictionary_page_offset or start))
    ] = b"\xff" * (chunk.total_compressed_size - (start - (chunk.dictionary_page_offset or start)))
    for threads in (False, True):
        with pytest.raises(DecodeError):
            read_table(bytes(data), use_threads=threads)


# ------------------------------------------------ kernels releasing the GIL: exact errors

N = 50_000  # over the kernels' thresholds for releasing the GIL


def _errors(fn, *args):
    with pytest.raises(DecodeError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("release_gil", [False, True])
def test_dictionary_into_large_pages_check_runs_and_indices(release_gil):
    rng = np.random.default_rng(1)
    dictionary = rng.integers(0, 1 << 60, 100).astype(np.int64)
    idx = rng.integers(0, 100, N).astype(np.uint32)
    idx[:5000] = 7  # an RLE run too
    page = enc.encode_indices(idx, 100)
    out = np.empty(N, np.int64)
    pagevalues.decode_dictionary_into(page, N, dictionary.view(np.uint8), 8, out, release_gil)
    assert np.array_equal(out, dictionary[idx])
    # a dictionary too small for the indices: the page's first out-of-range index is named
    msg = _errors(
        pagevalues.decode_dictionary_into,
        page,
        N,
        dictionary[:50].view(np.uint8),
        8,
        out,
        release_gil,
    )
    assert "out of range for a dictionary of 50 entries" in msg
    for cut in (len(page) // 3, len(page) - 1):
        msg = _errors(
            pagevalues.decode_dictionary_into,
            page[:cut],
            N,
            dictionary.view(np.uint8),
            8,
            out,
            release_gil,
        )
        assert "truncated" in msg or "ends after" in msg


def test_levels_bitmap_large_pages_exact_errors():
    rng = np.random.default_rng(2)
    levels = (rng.random(N) < 0.9).astype(np.int16)
    page = enc.encode_levels_v2(levels, 1)
    bitmap = np.zeros((N + 7) // 8, np.uint8)
    present, used = pagevalues.decode_levels_bitmap(page, N, False, bitmap, 0)
    assert present == int(levels.sum()) and used == len(page)
    assert np.array_equal(np.unpackbits(bitmap, bitorder="little")[:N], levels)
    small = _errors(
        pagevalues.decode_levels_bitmap, page[:100], 2_000, False, np.zeros(N, np.uint8), 0
    )
    big = _errors(pagevalues.decode_levels_bitmap, page[:100], N, False, np.zeros(N, np.uint8), 0)
    assert small.split(" ")[:2] == big.split(" ")[:2]  # the same kind of error, either path


def test_plain_byte_array_large_pages_exact_errors():
    values = [b"x" * (i % 13) for i in range(N)]
    page = enc.encode_values(
        (
            np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int32),
            np.frombuffer(b"".join(values), np.uint8),
        ),
        6,
        0,
    )
    (_, data), used = plain.decode_plain(page, N, 6)
    assert used == len(page) and bytes(data) == b"".join(values)
    msg = _errors(plain.decode_plain, page[: len(page) // 2], N, 6)
    assert "BYTE_ARRAY" in msg
    bad = bytearray(page)
    at = 4 * 1000 + sum(len(v) for v in values[:1000])  # the 1001st value's length
    bad[at : at + 4] = (1 << 31).to_bytes(4, "little")
    with pytest.raises(DecodeError, match="BYTE_ARRAY length exceeds the input"):
        plain.decode_plain(bytes(bad), N, 6)


def test_rle_large_decodes_still_checked():
    rng = np.random.default_rng(4)
    values = rng.integers(0, 8, N).astype(np.uint32)
    page = enc.encode_levels_v2(values.astype(np.int16), 7)
    got, used = rle.decode_rle(page, N, 3)
    assert np.array_equal(got, values) and used == len(page)
    with pytest.raises(DecodeError):
        rle.decode_rle(page[: len(page) // 2], N, 3)
