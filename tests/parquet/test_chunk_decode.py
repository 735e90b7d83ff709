"""Whole column chunks decoded into one buffer: pyarrow writes many small pages (v1 and v2,
every value encoding, nulls and none), we read the file and must get pyarrow's table."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metaindex.parquet import read_table

N = 5000


def _pyarrow_written(table, encoding, opts: dict) -> io.BytesIO:
    """``table`` written by pyarrow with ``opts`` (and ``column_encoding`` unless None)."""
    if encoding is not None:
        opts = {**opts, "column_encoding": encoding}
    buf = io.BytesIO()
    pq.write_table(table, buf, **opts)
    return buf


def _columns():
    rng = np.random.default_rng(3)
    return {
        "int32": (
            pa.array(rng.integers(-1000, 1000, N, dtype=np.int32)),
            ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", None],
        ),
        "int64": (
            pa.array(rng.integers(-(2**40), 2**40, N)),
            ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", None],
        ),
        "double": (pa.array(rng.standard_normal(N)), ["PLAIN", "BYTE_STREAM_SPLIT", None]),
        "float": (pa.array(rng.standard_normal(N).astype(np.float32)), ["PLAIN", None]),
        "ts": (
            pa.array(rng.integers(0, 10**15, N)).cast(pa.timestamp("us", "UTC")),
            ["PLAIN", "DELTA_BINARY_PACKED", None],
        ),
        "date": (
            pa.array(rng.integers(0, 20000, N, dtype=np.int32)).cast(pa.date32()),
            ["PLAIN", None],
        ),
        "int8": (pa.array(rng.integers(-100, 100, N, dtype=np.int8)), ["PLAIN", None]),
        "dec": (
            pa.array(rng.integers(-(10**9), 10**9, N))
            .cast(pa.decimal128(21, 2))
            .cast(pa.decimal128(18, 2)),
            ["PLAIN", "BYTE_STREAM_SPLIT", None],
        ),
        "dec38": (
            pa.array(rng.integers(-(10**9), 10**9, N))
            .cast(pa.decimal128(24, 4))
            .cast(pa.decimal128(38, 4)),
            ["PLAIN", None],
        ),
        "fsb": (
            pa.array([bytes([i % 256] * 3) for i in range(N)], pa.binary(3)),
            ["PLAIN", "BYTE_STREAM_SPLIT", None],
        ),
        "f16": (pa.array(rng.standard_normal(N).astype(np.float16)), ["PLAIN", None]),
        # BYTE_ARRAY pages decode into the chunk's one offsets array and data buffer
        "str": (
            pa.array([f"user-{v}" * (v % 4) for v in rng.integers(0, 3000, N)]),
            ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", None],
        ),
        "bin": (
            pa.array([rng.bytes(int(k)) for k in rng.integers(0, 40, N)], pa.binary()),
            ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", None],
        ),
        "large_str": (
            pa.array([f"{v:x}" for v in rng.integers(0, 2**40, N)], pa.large_string()),
            ["PLAIN", "DELTA_BYTE_ARRAY", None],
        ),
    }


CASES = [
    (name, encoding, nulls, version)
    for name, (_, encodings) in _columns().items()
    for encoding in encodings
    for nulls in (0.0, 0.1, 1.0)
    for version in ("1.0", "2.0")
]


@pytest.mark.parametrize("name,encoding,nulls,version", CASES)
def test_pyarrow_pages_decode_into_one_chunk(name, encoding, nulls, version):
    arr, _ = _columns()[name]
    if nulls:
        mask = pa.array(np.random.default_rng(5).random(N) < nulls)
        arr = pc.if_else(mask, pa.scalar(None, arr.type), arr)
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, nulls > 0)]))
    opts = {
        "use_dictionary": encoding is None,
        "data_page_version": version,
        "data_page_size": 1024,
        "write_batch_size": 500,
        "row_group_size": 3000,
    }
    if encoding is not None:
        opts["column_encoding"] = encoding
    buf = io.BytesIO()
    pq.write_table(table, buf, **opts)
    got = read_table(buf.getvalue())
    assert got.equals(table), f"{name} {encoding or 'dictionary'} nulls={nulls} v{version}"
    assert got.column(0).null_count == table.column(0).null_count


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd", "gzip"])
@pytest.mark.parametrize("encoding", ["PLAIN", "BYTE_STREAM_SPLIT", None])
def test_required_pages_of_every_codec_decode_into_one_chunk(codec, encoding):
    """Required fixed-width pages go straight into the chunk's buffer (PLAIN) or are decoded
    one by one as they are decompressed (dictionary, BYTE_STREAM_SPLIT)."""
    rng = np.random.default_rng(9)
    table = pa.table(
        {
            "i": pa.array(rng.integers(-(2**40), 2**40, N)),
            "f": pa.array(rng.standard_normal(N).astype(np.float32)),
            "d": pa.array(rng.integers(0, 50, N).astype(np.float64)),
        }
    )
    table = table.cast(
        pa.schema(
            [
                pa.field(n, t, False)
                for n, t in zip(table.column_names, table.schema.types, strict=True)
            ]
        )
    )
    opts = {
        "use_dictionary": encoding is None,
        "compression": codec,
        "data_page_size": 2048,
        "write_batch_size": 500,
    }
    if encoding is not None:
        opts["column_encoding"] = encoding
    buf = io.BytesIO()
    pq.write_table(table, buf, **opts)
    assert pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0).num_rows == N
    assert read_table(buf.getvalue()).equals(table)


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_string_chunks_falling_back_from_dictionary_and_in_lists(codec, version):
    """A chunk's string pages in one output when the writer falls back from dictionary to
    PLAIN pages part way (a small dictionary page limit), and for lists of strings."""
    rng = np.random.default_rng(21)
    words = pa.array([f"w{v}" * (1 + v % 3) for v in rng.integers(0, 4000, N)])
    lists = pa.ListArray.from_arrays(np.arange(0, N + 1, 5, dtype=np.int32), words)
    lists = pc.if_else(pa.array(rng.random(len(lists)) < 0.2), pa.scalar(None, lists.type), lists)
    for table in (pa.table({"w": words}), pa.table({"l": lists})):
        buf = io.BytesIO()
        pq.write_table(
            table,
            buf,
            compression=codec,
            data_page_version=version,
            dictionary_pagesize_limit=2000,
            data_page_size=1024,
            write_batch_size=300,
        )
        meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0).column(0)
        assert "PLAIN" in meta.encodings and "RLE_DICTIONARY" in meta.encodings
        assert read_table(buf.getvalue()).equals(table)


def _page(n, raw, encoding=0, codec=0):
    from metaindex.parquet import compression as codecs
    from metaindex.parquet import format as fmt

    body = codecs.compress(codec, raw)
    header = fmt.PageHeader(
        type=0,
        uncompressed_page_size=len(raw),
        compressed_page_size=len(body),
        data_page_header=fmt.DataPageHeader(
            num_values=n,
            encoding=encoding,
            definition_level_encoding=3,
            repetition_level_encoding=3,
        ),
    )
    return header.to_bytes() + body


@pytest.mark.parametrize("codec", [0, 1, 2, 6])  # none, snappy, gzip, zstd
def test_required_plain_pages_short_of_values_are_decode_errors(codec):
    from metaindex.errors import DecodeError
    from metaindex.parquet import format as fmt
    from metaindex.parquet.page_reader import read_chunk
    from metaindex.parquet.pages import ColumnSpec

    spec = ColumnSpec(path=("c",), physical_type=2)
    values = np.arange(30, dtype=np.int64)
    good = _page(10, values[:10].tobytes(), codec=codec)
    meta = fmt.ColumnMetaData(
        type=2,
        encodings=[0],
        path_in_schema=["c"],
        codec=codec,
        num_values=30,
        total_uncompressed_size=0,
        total_compressed_size=0,
        data_page_offset=0,
    )
    chunk = (
        good
        + _page(10, values[10:20].tobytes(), codec=codec)
        + _page(10, values[20:30].tobytes(), codec=codec)
    )
    got = read_chunk(memoryview(chunk), 0, spec, meta)
    assert (np.asarray(got.values) == values).all()
    short = good + _page(10, values[10:19].tobytes(), codec=codec) + good
    with pytest.raises(DecodeError):
        read_chunk(memoryview(short), 0, spec, meta)
    extra = good + _page(11, values[10:21].tobytes(), codec=codec) + good
    with pytest.raises(DecodeError, match="more values"):
        read_chunk(memoryview(extra), 0, spec, meta)


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("encoding", ["PLAIN", "BYTE_STREAM_SPLIT", "DELTA_BINARY_PACKED", None])
@pytest.mark.parametrize("nulls", [0.0, 0.002, 0.5])
def test_nullable_pages_spread_into_one_chunk(codec, encoding, nulls):
    """Nullable flat columns: pages without a null decode straight into their slots, others
    spread from the page (PLAIN) or from the scratch buffer they decode into; long runs of
    values between rare nulls are copied whole."""
    rng = np.random.default_rng(13)
    arr = pa.array(rng.integers(-(2**40), 2**40, N))
    if nulls:
        arr = pc.if_else(pa.array(rng.random(N) < nulls), pa.scalar(None, arr.type), arr)
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, True)]))
    opts = {
        "use_dictionary": encoding is None,
        "compression": codec,
        "data_page_size": 4096,
        "write_batch_size": 700,
    }
    buf = _pyarrow_written(table, encoding, opts)
    got = read_table(buf.getvalue())
    assert got.equals(table)
    assert got.column(0).null_count == table.column(0).null_count


def _header_bytes(draw, st):
    """One page header as pyarrow and parquet-java write them, with the optional parts a
    reader must step over (crc, statistics, unknown fields, other page kinds)."""
    from metaindex.parquet import format as fmt

    size = draw(st.integers(0, 40))
    kind = draw(st.sampled_from([0, 0, 0, 2, 3]))
    header = fmt.PageHeader(
        type=kind,
        uncompressed_page_size=size + draw(st.sampled_from([0, 0, 1])),
        compressed_page_size=size,
    )
    if draw(st.booleans()):
        header.crc = draw(st.integers(-(2**31), 2**31 - 1))
    if kind == 0:
        stats = None
        if draw(st.booleans()):
            stats = fmt.Statistics(
                null_count=draw(st.integers(0, 9)),
                max_value=draw(st.binary(max_size=8)),
                min_value=draw(st.binary(max_size=8)),
            )
        header.data_page_header = fmt.DataPageHeader(
            num_values=draw(st.integers(0, 12)),
            encoding=draw(st.sampled_from([0, 0, 2, 8, 9, 5])),
            definition_level_encoding=draw(st.sampled_from([3, 3, 4])),
            repetition_level_encoding=3,
            statistics=stats,
        )
    elif kind == 2:
        header.dictionary_page_header = fmt.DictionaryPageHeader(num_values=3, encoding=0)
    else:
        header.data_page_header_v2 = fmt.DataPageHeaderV2(
            num_values=2,
            num_nulls=0,
            num_rows=2,
            encoding=0,
            definition_levels_byte_length=0,
            repetition_levels_byte_length=0,
        )
    return header.to_bytes() + bytes(size)


@pytest.mark.filterwarnings("ignore")
def test_scanned_page_runs_agree_with_the_general_decoder():
    """``scan_data_pages`` never raises, and every page of the run it returns is the page the
    general decoder reads at that place: a DATA_PAGE of the run's encoding with the same body,
    value count and sizes, meeting each condition asked for. Chunks of every page kind, with
    random bytes overwritten (a damaged header ends the run before it)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from metaindex._native.pageheader import scan_data_pages
    from metaindex.errors import DecodeError
    from metaindex.parquet import format as fmt

    @settings(max_examples=400, deadline=None)
    @given(st.data())
    def check(data):
        chunk = bytearray(
            b"".join(
                data.draw(
                    st.lists(st.builds(lambda d: _header_bytes(d.draw, st), st.data()), max_size=6)
                )
            )
        )
        for _ in range(data.draw(st.integers(0, 3))):
            if chunk:
                chunk[data.draw(st.integers(0, len(chunk) - 1))] = data.draw(st.integers(0, 255))
        view = memoryview(bytes(chunk))
        start = data.draw(st.integers(0, len(chunk)))
        limit = data.draw(st.integers(0, 40))
        mask = data.draw(st.sampled_from([1, 1 << 9 | 1, 1 << 2 | 1 << 8, (1 << 64) - 1]))
        exact, no_crc = data.draw(st.booleans()), data.draw(st.booleans())
        levels_rle = data.draw(st.booleans())
        pages, sizes, encoding, values, end = scan_data_pages(
            view, start, limit, mask, exact, no_crc, levels_rle
        )
        pos = start
        assert len(pages) == len(sizes)
        assert values == sum(n for _, n in pages) <= limit
        for (body, n), size in zip(pages, sizes, strict=True):
            header, hend = fmt.PageHeader.decode_prefix(view, pos)  # must not raise
            dph = header.data_page_header
            assert header.type == 0 and dph.num_values == n and dph.encoding == encoding
            assert mask >> encoding & 1
            assert header.uncompressed_page_size == size >= 0
            assert bytes(body) == bytes(view[hend : hend + header.compressed_page_size])
            assert len(body) == header.compressed_page_size
            assert not exact or size == len(body)
            assert not no_crc or header.crc is None
            assert not levels_rle or dph.definition_level_encoding == 3
            pos = hend + header.compressed_page_size
        assert end == pos
        if not pages:
            assert encoding == -1 and values == 0
        elif pos < len(view):  # the page the run stopped at fails a condition or decodes badly
            try:
                header, hend = fmt.PageHeader.decode_prefix(view, pos)
            except DecodeError:
                return
            dph = header.data_page_header
            assert (
                header.type != 0
                or dph is None
                or dph.encoding != encoding
                or dph.num_values is None
                or values + dph.num_values > limit
                or header.compressed_page_size > len(view) - hend
                or (exact and header.compressed_page_size != header.uncompressed_page_size)
                or (no_crc and header.crc is not None)
                or (levels_rle and dph.definition_level_encoding != 3)
                or header.compressed_page_size < 0
                or dph.num_values < 0
                or header.uncompressed_page_size < 0
            )

    check()


def test_scanned_runs_stop_where_the_general_path_must_read():
    """A run ends at a dictionary page, at another encoding, before a page past the chunk's
    values and at a page with a crc when pages are verified; the reader still decodes or
    rejects each of those pages itself."""
    from metaindex._native.pageheader import scan_data_pages

    values = np.arange(40, dtype=np.int64)
    pages = [_page(10, values[i : i + 10].tobytes()) for i in range(0, 40, 10)]
    chunk = memoryview(b"".join(pages))
    run, sizes, encoding, n, end = scan_data_pages(chunk, 0, 40, 1, True, False)
    assert (len(run), sizes, encoding, n, end) == (4, [80] * 4, 0, 40, len(chunk))
    assert b"".join(bytes(body) for body, _ in run) == values.tobytes()
    assert scan_data_pages(chunk, 0, 35, 1, True, False)[3] == 30  # a 4th page would be too many
    assert scan_data_pages(chunk, 0, 40, 1 << 9, True, False)[0] == []  # PLAIN not asked for
    bss_page = _page(10, values[:10].tobytes(), encoding=9)
    mixed = memoryview(pages[0] + bss_page + pages[1])
    assert scan_data_pages(mixed, 0, 40, 1 | 1 << 9, True, False)[4] == len(pages[0])
    assert scan_data_pages(mixed, len(pages[0]), 40, 1 | 1 << 9, True, False)[2] == 9
    assert scan_data_pages(chunk, len(chunk), 40, 1, True, False)[0] == []
    assert scan_data_pages(chunk, -1, 40, 1, True, False)[0] == []


@pytest.mark.parametrize(
    "arrow_type", [pa.decimal64(10, 2), pa.decimal128(18, 2), pa.decimal256(40, 2)]
)
@pytest.mark.parametrize("ptype,dtype", [(1, np.int32), (2, np.int64)])
def test_unscaled_integer_decimals_fill_every_limb(arrow_type, ptype, dtype):
    """DECIMAL stored as INT32 / INT64: the unscaled values, sign-extended through every
    64-bit limb of the Arrow type (one limb for decimal64: no sign limb to fill)."""
    from metaindex.parquet import values as vals

    unscaled = np.array([125, -350, 0, -1], dtype)
    got = vals.to_arrow(unscaled, ptype, arrow_type)
    assert got.type == arrow_type
    assert [str(v) for v in got.to_pylist()] == ["1.25", "-3.50", "0.00", "-0.01"]


def _strings(rng, n: int, long: bool) -> list:
    words = [f"w{i}" * (1 + i % 3) for i in range(200)] + [""]
    if long:
        words += ["x" * 5000 + str(i) for i in range(5)]
    return [words[i] for i in rng.integers(0, len(words), n)]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("encoding", ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", None])
@pytest.mark.parametrize("nulls", [0.0, 0.002, 0.5, 1.0])
def test_nullable_binary_pages_spread_into_one_chunk(version, encoding, nulls):
    """Nullable top-level BYTE_ARRAY columns: levels straight into the validity bitmap, the
    values of every page (dictionary, PLAIN, DELTA_*, v1 and v2 pages, long values and empty
    ones, pages of nulls only, an empty dictionary) packed into the chunk's offsets and
    spread over the null slots; equal to pyarrow's table, string, binary and large types."""
    rng = np.random.default_rng(17)
    values = _strings(rng, N, long=True)
    mask = rng.random(N) < nulls
    values = [None if m else v for v, m in zip(values, mask, strict=True)]
    table = pa.table(
        {
            "s": pa.array(values, pa.string()),
            "b": pa.array([None if v is None else v.encode() for v in values], pa.binary()),
            "ls": pa.array(values, pa.large_string()),
        }
    )
    opts = {
        "use_dictionary": encoding is None,
        "compression": "zstd",
        "data_page_size": 4096,
        "write_batch_size": 700,
        "data_page_version": version,
        "store_schema": True,
    }
    buf = _pyarrow_written(table, encoding, opts)
    got = read_table(buf.getvalue())
    assert got.equals(table)
    assert [c.null_count for c in got.columns] == [c.null_count for c in table.columns]
    assert read_table(buf.getvalue(), read_dictionary=["s"]).column("s").to_pylist() == values
