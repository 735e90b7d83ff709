"""Sources read without copies: in-memory buffers, Arrow files and memory-mapped paths.

A PLAIN page of fixed-width values that holds a whole chunk becomes the column's value buffer
in place when its address is aligned to the value width: these tests check the output
buffer's address against the source's memory (or, for a path, against the file's mapping in
/proc/self/maps), and that damaged sources still raise typed errors.
"""

from __future__ import annotations

import gc
import io
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import DecodeError
from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile, read_table

N = 1000


def _file(values: np.ndarray, nullable: bool = False, **kw) -> tuple[pa.Table, bytes]:
    table = pa.table(
        [pa.array(values)],
        schema=pa.schema([pa.field("c", pa.from_numpy_dtype(values.dtype), nullable)]),
    )
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", use_dictionary=False, **kw)
    return table, buf.getvalue()


def _values_offset(data: bytes) -> int:
    """File offset of the first data page's values (a required column: no levels)."""
    footer_len = int.from_bytes(data[-8:-4], "little")
    meta = fmt.FileMetaData.decode_prefix(memoryview(data)[-8 - footer_len : -8])[0]
    start = meta.row_groups[0].columns[0].meta_data.data_page_offset
    _, end = fmt.PageHeader.decode_prefix(memoryview(data), start)
    return end


def _inside(address: int, base: int, size: int) -> bool:
    return base <= address < base + size


def _value_address(table: pa.Table) -> int:
    chunks = table.column(0).chunks
    assert len(chunks) == 1
    return chunks[0].buffers()[1].address


def test_buffer_source_is_read_in_place_where_aligned():
    table, data = _file(np.arange(N, dtype=np.int64))
    big = pa.allocate_buffer(len(data) + 64)  # 64-byte aligned
    hits = []
    for shift in range(8):
        np.frombuffer(big, np.uint8)[shift : shift + len(data)] = np.frombuffer(data, np.uint8)
        src = big.slice(shift, len(data))
        got = read_table(src)
        assert got.equals(table)
        hits.append(_inside(_value_address(got), src.address, src.size))
    # exactly the one shift that puts the values on an 8-byte boundary is read in place
    assert hits.count(True) == 1
    assert (big.address + hits.index(True) + _values_offset(data)) % 8 == 0


@pytest.fixture
def aligned():
    """A file whose values sit 8-byte aligned when the file starts 64-byte aligned, held in an
    Arrow buffer (64-byte aligned), plus its table."""
    table, data = _file(np.arange(N, dtype=np.int64) * 3)
    pad = (-_values_offset(data)) % 8
    # shift the whole file inside an aligned buffer: [pad bytes][file]
    big = pa.allocate_buffer(len(data) + pad)
    np.frombuffer(big, np.uint8)[pad:] = np.frombuffer(data, np.uint8)
    return table, big.slice(pad), data


def test_memoryview_and_buffer_reader_sources_in_place(aligned):
    table, src, _ = aligned
    for source in (memoryview(src), pa.BufferReader(src)):
        got = read_table(source)
        assert got.equals(table)
        assert _inside(_value_address(got), src.address, src.size), type(source)


def test_memory_mapped_native_file_in_place(tmp_path, aligned):
    table, _, data = aligned
    path = tmp_path / "f.parquet"
    path.write_bytes(data)
    with pa.memory_map(str(path)) as mm:
        whole = mm.read_buffer()
        mm.seek(7)  # the source's position is left where the caller put it
        got = read_table(mm)
        assert mm.tell() == 7
    assert got.equals(table)
    if _values_offset(data) % 8 == 0:
        assert _inside(_value_address(got), whole.address, whole.size)


def _mapped_ranges(path: str) -> list[tuple[int, int]]:
    out = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == path:
                a, b = parts[0].split("-")
                out.append((int(a, 16), int(b, 16)))
    return out


def _aligned_file(tmp_path) -> tuple[pa.Table, str]:
    """A file whose values start 8-byte aligned in the file (a mapping starts page-aligned)."""
    for n in range(N, N + 64):
        table, data = _file(np.arange(n, dtype=np.int64) - 5)
        if _values_offset(data) % 8 == 0:
            path = str(tmp_path / "aligned.parquet")
            with open(path, "wb") as fh:
                fh.write(data)
            return table, path
    pytest.fail("no row count in 64 gave an aligned first page")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_path_is_memory_mapped_and_read_in_place(tmp_path):
    table, path = _aligned_file(tmp_path)
    got = read_table(path, memory_map=True)
    assert got.equals(table)
    address = _value_address(got)
    assert any(a <= address < b for a, b in _mapped_ranges(os.path.realpath(path)))
    # the default (as memory_map=False) reads the chunk with pread: no mapping is left behind
    del got
    gc.collect()
    for kwargs in ({}, {"memory_map": False}):
        again = read_table(path, **kwargs)
        assert again.equals(table)
        assert not _mapped_ranges(os.path.realpath(path))


def test_mapped_values_outlive_the_file(tmp_path):
    table, path = _aligned_file(tmp_path)
    with ParquetFile(path, memory_map=True) as pf:
        got = pf.read()
    os.remove(path)  # the mapping holds the pages; the table stays readable
    assert got.equals(table)
    assert got.column(0).to_pylist()[-1] == table.column(0).to_pylist()[-1]


def test_nullable_without_nulls_in_place_with_nulls_copied():
    values = np.arange(N, dtype=np.float64)
    for nulls in (False, True):
        arr = pa.array(values, mask=(np.arange(N) % 7 == 0) if nulls else None)
        table = pa.table([arr], schema=pa.schema([pa.field("c", pa.float64(), True)]))
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="none", use_dictionary=False)
        data = buf.getvalue()
        big = pa.allocate_buffer(len(data) + 64)
        found = []
        for shift in range(8):
            np.frombuffer(big, np.uint8)[shift : shift + len(data)] = np.frombuffer(data, np.uint8)
            src = big.slice(shift, len(data))
            got = read_table(src)
            assert got.equals(table)
            found.append(_inside(_value_address(got), src.address, src.size))
        # without nulls the values are the page's; with nulls they are spread into new slots
        assert found.count(True) == (0 if nulls else 1)


def test_multi_page_chunks_and_compressed_pages_are_copied_correctly():
    values = np.arange(300_000, dtype=np.int32)
    table = pa.table({"c": values})
    for kw in ({"compression": "none", "data_page_size": 64 * 1024}, {"compression": "zstd"}):
        buf = io.BytesIO()
        pq.write_table(table, buf, use_dictionary=False, **kw)
        assert read_table(pa.py_buffer(buf.getvalue())).equals(table)


@pytest.mark.hostile
@pytest.mark.parametrize("memory_map", [None, False, True])
def test_truncated_files_raise_decode_error(tmp_path, memory_map):
    _, data = _file(np.arange(N, dtype=np.int64))
    footer = int.from_bytes(data[-8:-4], "little") + 8
    path = tmp_path / "cut.parquet"
    cases = [
        data[: len(data) // 2],
        data[:-1],
        data[:12],
        # the footer kept, the data before it cut short: chunks lie past the file's end
        data[: len(data) // 2] + data[-footer:],
    ]
    for cut in cases:
        path.write_bytes(cut)
        with pytest.raises(DecodeError):
            read_table(str(path), memory_map=memory_map)
        with pytest.raises(DecodeError):
            read_table(pa.py_buffer(cut))
        with pytest.raises(DecodeError):
            read_table(pa.BufferReader(cut))


def test_empty_and_missing_paths(tmp_path):
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    with pytest.raises(DecodeError):
        read_table(str(empty))
    with pytest.raises(FileNotFoundError):
        read_table(str(tmp_path / "missing.parquet"))


def test_other_sources_still_read(tmp_path):
    table, data = _file(np.arange(N, dtype=np.int32), nullable=True)
    path = tmp_path / "f.parquet"
    path.write_bytes(data)
    sources = [
        data,
        bytearray(data),
        io.BytesIO(data),
        pa.OSFile(str(path)),
        pa.PythonFile(io.BytesIO(data), mode="r"),
    ]
    for source in sources:
        assert read_table(source).equals(table), type(source)


@pytest.mark.parametrize("dtype", ["<i4", "<i8", "<f4", "<f8", "decimal"])
def test_file_chunks_of_plain_pages_close_up_in_place(tmp_path, dtype):
    """A required chunk of uncompressed PLAIN pages read from a path (or a file object read
    into memory of ours) has its values moved down over the page headers, in place: the
    column's values are the start of the buffer the chunk was read into. Sources that are the
    caller's memory are never written to."""
    rng = np.random.default_rng(4)
    if dtype == "decimal":
        arr = pa.array(rng.integers(-(10**9), 10**9, 20_000)).cast(pa.decimal128(22, 2))
    else:
        arr = pa.array(rng.integers(-(10**6), 10**6, 20_000).astype(dtype))
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, False)]))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", use_dictionary=False, data_page_size=4096)
    data = buf.getvalue()
    path = tmp_path / "f.parquet"
    path.write_bytes(data)
    assert read_table(str(path)).equals(table)
    assert read_table(str(path), use_threads=True).equals(table)
    with open(path, "rb") as fh:
        assert read_table(fh).equals(table)
    for source in (bytearray(data), memoryview(bytearray(data))):
        before = bytes(source)
        assert read_table(source).equals(table)
        assert bytes(source) == before  # the caller's memory is left as it was


def test_closed_up_chunk_with_a_short_page_raises(tmp_path):
    """A page whose values section is short ends the in-place move with a DecodeError."""
    values = np.arange(40, dtype=np.int64)
    from metaindex.parquet.page_reader import read_chunk
    from metaindex.parquet.pages import ColumnSpec
    from tests.parquet.test_chunk_decode import _page

    spec = ColumnSpec(path=("c",), physical_type=2)
    meta = fmt.ColumnMetaData(
        type=2,
        encodings=[0],
        path_in_schema=["c"],
        codec=0,
        num_values=40,
        total_uncompressed_size=0,
        total_compressed_size=0,
        data_page_offset=0,
    )
    good = b"".join(_page(10, values[i : i + 10].tobytes()) for i in range(0, 40, 10))
    chunk = np.frombuffer(pa.allocate_buffer(len(good)), np.uint8)
    chunk[:] = np.frombuffer(good, np.uint8)
    got = read_chunk(memoryview(chunk), 0, spec, meta, owned=True)
    assert (np.asarray(got.values) == values).all()
    assert np.asarray(got.values).__array_interface__["data"][0] == chunk.ctypes.data
    short = (
        _page(10, values[:10].tobytes())
        + _page(10, values[10:19].tobytes() + b"\0" * 4)
        + _page(10, values[20:30].tobytes())
        + _page(10, values[30:].tobytes())
    )
    chunk = np.frombuffer(pa.allocate_buffer(len(short)), np.uint8)
    chunk[:] = np.frombuffer(short, np.uint8)
    with pytest.raises(DecodeError):
        read_chunk(memoryview(chunk), 0, spec, meta, owned=True)


@pytest.mark.parametrize("through", ["path", "filesystem"])
def test_a_small_file_is_read_whole_with_its_footer(tmp_path, through):
    """The footer's read of a small file holds the whole file: its columns read after the
    file is emptied come from that one read, equal to pyarrow's, as arrays of their own."""
    import pyarrow.fs as pafs

    table = pa.table({"a": pa.array(range(50), pa.int64()), "s": [f"v{i % 7}" for i in range(50)]})
    path = str(tmp_path / "small.parquet")
    pq.write_table(table, path)
    kw = {"filesystem": pafs.LocalFileSystem()} if through == "filesystem" else {}
    pf = ParquetFile(path, **kw)
    with open(path, "r+b") as fh:  # the open file sees its bytes go: only memory holds them
        fh.truncate(0)
    try:
        read = pf.read()
    finally:
        pf.close()
    assert read.equals(table)
    pq.write_table(table, path)
    assert read.equals(pq.read_table(path))


def test_a_large_file_still_reads_its_leading_magic_and_chunks(tmp_path):
    """A file longer than the footer's read: its leading magic is checked and the chunks
    before the tail are read from the file."""
    values = np.arange(40_000, dtype=np.int64)
    table, data = _file(values)
    assert len(data) > 64 * 1024
    path = tmp_path / "large.parquet"
    path.write_bytes(data)
    with ParquetFile(str(path)) as pf:
        assert pf.read().equals(table)
    path.write_bytes(b"PAR0" + data[4:])
    with pytest.raises(DecodeError, match="bad leading magic"):
        ParquetFile(str(path))
