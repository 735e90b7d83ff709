"""The footer model against real writers: pyarrow (parquet-cpp), duckdb and fastparquet.

pyarrow writes files with every feature the footer model covers (nested types, decimals,
timestamps, dictionary on/off, data page v1/v2, statistics, page index, bloom filters,
checksums, sorting columns, key/value metadata, several row groups); we decode the footer, page
headers, page index and bloom filter headers, compare with what pyarrow reports, and re-encode
byte-identically. A field-32767 extension survives and pyarrow still reads the file.
"""

import decimal
import io
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError
from metaindex.parquet import format as fmt
from tests.reference import thrift as R

N = 300


def sample_table():
    rng = np.random.default_rng(7)
    ints = rng.integers(-1000, 1000, N)
    nulls = rng.random(N) < 0.1
    strings = [None if m else f"s{v:05d}" for v, m in zip(ints, nulls, strict=True)]
    lists = [None if i % 17 == 0 else [int(v) for v in range(i % 4)] for i in range(N)]
    table = pa.table(
        {
            "i8": pa.array(ints % 100, pa.int8()),
            "i16": pa.array(ints, pa.int16()),
            "i32": pa.array(ints, pa.int32(), mask=nulls),
            "i64": pa.array(ints * 10**9, pa.int64()),
            "u32": pa.array(np.abs(ints), pa.uint32()),
            "u64": pa.array(np.abs(ints) * 2**40, pa.uint64()),
            "f32": pa.array(ints / 7, pa.float32()),
            "f64": pa.array(ints / 3, pa.float64(), mask=nulls),
            "f16": pa.array((ints / 5).astype(np.float16)),
            "flag": pa.array(ints > 0),
            "s": pa.array(strings),
            "bin": pa.array([None if s is None else s.encode() * 2 for s in strings], pa.binary()),
            "fixed": pa.array([struct.pack("<i", v) for v in ints], pa.binary(4)),
            "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in ints], pa.decimal128(10, 2)),
            "dec38": pa.array([decimal.Decimal(int(v)) for v in ints], pa.decimal128(38, 10)),
            "date": pa.array(ints + 19000, pa.int32()).cast(pa.date32()),
            "ts_ms": pa.array(ints * 1000, pa.timestamp("ms")),
            "ts_us": pa.array(ints * 10**6, pa.timestamp("us", tz="UTC")),
            "ts_ns": pa.array(ints * 10**9, pa.timestamp("ns")),
            "t32": pa.array(np.abs(ints) * 1000, pa.int32()).cast(pa.time32("ms")),
            "t64": pa.array(np.abs(ints) * 10**6, pa.int64()).cast(pa.time64("us")),
            "list": pa.array(lists, pa.list_(pa.int32())),
            "struct": pa.array(
                [{"a": int(v), "b": s} for v, s in zip(ints, strings, strict=True)],
                pa.struct([("a", pa.int32()), ("b", pa.string())]),
            ),
            "map": pa.array(
                [[("k", int(v)), ("j", 1)] for v in ints], pa.map_(pa.string(), pa.int64())
            ),
            "dict": pa.array([f"cat{v % 5}" for v in ints]).dictionary_encode(),
            "lstruct": pa.array(
                [[{"x": int(v)}] * (i % 3) for i, v in enumerate(ints)],
                pa.list_(pa.struct([("x", pa.int64())])),
            ),
            "nulls": pa.nulls(N),
        }
    )
    return table.replace_schema_metadata({"origin": "metaindex-test", b"\xff\xfe": b"\x80raw"})


CONFIGS = {
    "v1_dict_bloom": {
        "data_page_version": "1.0",
        "use_dictionary": True,
        "compression": "snappy",
        "write_page_index": True,
        "row_group_size": 100,
        "data_page_size": 256,
        "write_page_checksum": True,
        "sorting_columns": [pq.SortingColumn(3)],
        "bloom_filter_options": {"i64": {"ndv": 300, "fpp": 0.05}, "s": {"ndv": 300, "fpp": 0.01}},
    },
    "v2_plain_zstd": {
        "data_page_version": "2.0",
        "use_dictionary": False,
        "compression": "zstd",
        "write_page_index": True,
        "row_group_size": 150,
        "max_rows_per_page": 40,
        "column_encoding": {
            "i32": "DELTA_BINARY_PACKED",
            "s": "DELTA_BYTE_ARRAY",
            "f64": "BYTE_STREAM_SPLIT",
        },
    },
    "no_stats": {
        "write_statistics": False,
        "compression": "none",
        "store_schema": False,
        "row_group_size": 120,
    },
}


@pytest.fixture(scope="module")
def files():
    table = sample_table()
    out = {}
    for name, options in CONFIGS.items():
        buf = io.BytesIO()
        pq.write_table(table, buf, **options)
        out[name] = buf.getvalue()
    return out


def footer_of(data):
    assert data[-4:] == b"PAR1", "a Parquet file ends with PAR1"
    n = int.from_bytes(data[-8:-4], "little")
    return data[-8 - n : -8]


def with_footer(data, footer):
    n = int.from_bytes(data[-8:-4], "little")
    return data[: -8 - n] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def chunks(meta):
    for rg in meta.row_groups:
        yield from rg.columns


@pytest.mark.parametrize("config", CONFIGS)
def test_footer_round_trips_byte_identically(files, config):
    footer = footer_of(files[config])
    meta = fmt.FileMetaData.from_bytes(footer)
    assert meta.to_bytes() == footer, "decode then encode must reproduce pyarrow's footer"
    assert meta == R.decode(footer, fmt.FileMetaData), "the reference decoder must agree"
    assert meta._unknown is None, "parquet-cpp writes nothing this model does not know"


@pytest.mark.parametrize("config", CONFIGS)
def test_decoded_values_match_pyarrow(files, config):
    data = files[config]
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    md = pq.ParquetFile(io.BytesIO(data)).metadata
    assert meta.num_rows == md.num_rows == N, "num_rows"
    assert meta.created_by == md.created_by, "created_by"
    assert len(meta.row_groups) == md.num_row_groups > 1, "several row groups"
    kv = meta.key_value_metadata and {
        k.key.encode("utf-8", "surrogateescape"): k.value.encode("utf-8", "surrogateescape")
        for k in meta.key_value_metadata
    }
    assert kv == md.metadata, "key/value metadata (non-UTF-8 bytes included), or None for both"
    leaves = [e for e in meta.schema if e.num_children is None]
    assert len(leaves) == md.num_columns, "one schema leaf per column"
    for i, leaf in enumerate(leaves):
        assert leaf.name == md.schema.column(i).name, f"leaf {i} name"
        assert fmt.Type(leaf.type).name == md.schema.column(i).physical_type, f"leaf {i} type"
    for r, rg in enumerate(meta.row_groups):
        prg = md.row_group(r)
        assert (rg.num_rows, rg.total_byte_size) == (prg.num_rows, prg.total_byte_size), f"rg {r}"
        assert len(rg.columns) == prg.num_columns, f"rg {r} columns"
        for j, cc in enumerate(rg.columns):
            check_chunk(cc.meta_data, prg.column(j), cc)


def check_chunk(cm, pc, cc):
    where = ".".join(cm.path_in_schema)
    assert where == pc.path_in_schema, "path_in_schema"
    assert fmt.Type(cm.type).name == pc.physical_type, f"{where}: physical type"
    assert fmt.CompressionCodec(cm.codec).name == pc.compression, f"{where}: codec"
    assert tuple(fmt.Encoding(e).name for e in cm.encodings) == pc.encodings, f"{where}: encodings"
    for name in (
        "num_values",
        "total_compressed_size",
        "total_uncompressed_size",
        "data_page_offset",
        "dictionary_page_offset",
        "bloom_filter_offset",
        "bloom_filter_length",
    ):
        assert getattr(cm, name) == getattr(pc, name), f"{where}: {name}"
    assert (cc.column_index_offset is not None) == pc.has_column_index, f"{where}: column index"
    assert (cc.offset_index_offset is not None) == pc.has_offset_index, f"{where}: offset index"
    assert (cm.statistics is not None) == pc.is_stats_set, f"{where}: statistics presence"
    if pc.is_stats_set and pc.statistics.has_min_max:
        stats = pc.statistics
        assert stats.null_count == cm.statistics.null_count, f"{where}: null_count"
        lo, hi = (
            plain_value(cm.type, v) for v in (cm.statistics.min_value, cm.statistics.max_value)
        )
        assert (lo, hi) == (stats.min_raw, stats.max_raw), f"{where}: min/max raw bytes"


def plain_value(physical, raw):
    """PLAIN bytes of a statistics value as the Python value pyarrow's min_raw gives."""
    codes = {
        fmt.Type.INT32: "<i",
        fmt.Type.INT64: "<q",
        fmt.Type.FLOAT: "<f",
        fmt.Type.DOUBLE: "<d",
    }
    if physical in codes:
        return struct.unpack(codes[physical], raw)[0]
    if physical == fmt.Type.BOOLEAN:
        return raw != b"\x00"
    return raw


def column_metadata_field_ids(footer):
    """Field ids of every ColumnMetaData, read schema-less from the wire."""
    tree = {fid: v for fid, _, v in R.read_wire_struct(footer)[0]}
    for rg in tree[4][1]:
        for cc in {fid: v for fid, _, v in rg}[1][1]:
            yield {fid for fid, _, _ in {fid: v for fid, _, v in cc}[3]}


def test_high_field_ids_are_present_and_survive(files):
    footer = footer_of(files["v1_dict_bloom"])
    meta = fmt.FileMetaData.from_bytes(footer)
    bloomed = [
        cc.meta_data for cc in chunks(meta) if cc.meta_data.path_in_schema in (["i64"], ["s"])
    ]
    assert bloomed and all(cm.bloom_filter_offset and cm.bloom_filter_length for cm in bloomed), (
        "ColumnMetaData 14/15 (bloom_filter_offset/length) decoded for bloom columns"
    )
    assert all(cc.meta_data.size_statistics is not None for cc in chunks(meta)), (
        "ColumnMetaData 16 (size_statistics) decoded"
    )
    ids = list(column_metadata_field_ids(meta.to_bytes()))
    assert sum({14, 15} <= s for s in ids) == len(bloomed), "fields 14/15 re-encoded on the wire"
    assert all(16 in s for s in ids), "field 16 re-encoded on the wire"


@pytest.mark.parametrize("config", CONFIGS)
def test_page_headers_walk_each_column_chunk(files, config):
    data = files[config]
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    want = (
        fmt.PageType.DATA_PAGE_V2
        if CONFIGS[config].get("data_page_version") == "2.0"
        else fmt.PageType.DATA_PAGE
    )
    for cc in chunks(meta):
        cm = cc.meta_data
        pos = cm.dictionary_page_offset or cm.data_page_offset
        end = pos + cm.total_compressed_size
        values, data_pages = 0, []
        while pos < end:
            header, body = fmt.PageHeader.decode_prefix(data, pos)
            assert header.to_bytes() == data[pos:body], "page headers re-encode identically"
            if header.type == fmt.PageType.DICTIONARY_PAGE:
                assert not data_pages, "the dictionary page comes first"
                assert header.dictionary_page_header.num_values >= 0, "dictionary page header"
            else:
                assert header.type == want, f"{config}: data page type"
                page = header.data_page_header or header.data_page_header_v2
                values += page.num_values
                data_pages.append((pos, body - pos + header.compressed_page_size))
            if config == "v1_dict_bloom":
                assert header.crc is not None, "write_page_checksum sets PageHeader.crc"
            pos = body + header.compressed_page_size
        assert pos == end, "pages exactly fill total_compressed_size"
        assert values == cm.num_values, f"{cm.path_in_schema}: page num_values sum to the chunk's"
        if cc.offset_index_offset is not None:
            check_page_index(data, cc, data_pages)


def check_page_index(data, cc, data_pages):
    raw = data[cc.offset_index_offset : cc.offset_index_offset + cc.offset_index_length]
    oi = fmt.OffsetIndex.from_bytes(raw)
    assert oi.to_bytes() == raw, "OffsetIndex re-encodes identically"
    assert [(p.offset, p.compressed_page_size) for p in oi.page_locations] == data_pages, (
        "OffsetIndex locates exactly the data pages found by walking the headers"
    )
    rows = [p.first_row_index for p in oi.page_locations]
    assert rows[0] == 0 and rows == sorted(set(rows)), "first_row_index starts at 0 and increases"
    if cc.column_index_offset is not None:
        raw = data[cc.column_index_offset : cc.column_index_offset + cc.column_index_length]
        ci = fmt.ColumnIndex.from_bytes(raw)
        assert ci.to_bytes() == raw, "ColumnIndex re-encodes identically"
        assert len(ci.null_pages) == len(ci.min_values) == len(ci.max_values) == len(data_pages), (
            "one ColumnIndex entry per data page"
        )
        assert ci.boundary_order in set(fmt.BoundaryOrder), "boundary order is a known enum value"
        assert ci.null_counts is not None and len(ci.null_counts) == len(data_pages), "null_counts"


def test_bloom_filter_headers(files):
    data = files["v1_dict_bloom"]
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    seen = 0
    for cc in chunks(meta):
        cm = cc.meta_data
        if cm.bloom_filter_offset is None:
            continue
        header, bitset = fmt.BloomFilterHeader.decode_prefix(data, cm.bloom_filter_offset)
        assert bitset - cm.bloom_filter_offset + header.numBytes == cm.bloom_filter_length, (
            "header plus bitset is bloom_filter_length"
        )
        assert header.numBytes > 0 and header.numBytes % 32 == 0, "whole 32-byte blocks"
        assert (
            header.algorithm.which == "BLOCK"
            and header.hash.which == "XXHASH"
            and header.compression.which == "UNCOMPRESSED"
        ), "split-block, xxhash, uncompressed"
        assert header.to_bytes() == data[cm.bloom_filter_offset : bitset], "re-encodes identically"
        seen += 1
    assert seen == 2 * len(meta.row_groups), "bloom filters for i64 and s in every row group"


@pytest.mark.parametrize("config", CONFIGS)
def test_extension_survives_and_pyarrow_still_reads(files, config):
    data = files[config]
    footer = footer_of(data)
    payload = b"metaindex-ext\x00" + bytes(range(256)) + b"7f3c0a1e-uuid"
    extended = R.append_extension(footer, payload)
    meta = fmt.FileMetaData.from_bytes(extended)
    assert meta.extension == payload, "the extension payload is exposed"
    assert meta.to_bytes() == extended, "and re-encoded byte-identically"
    fresh = fmt.FileMetaData.from_bytes(footer)
    fresh.extension = payload
    assert fresh.to_bytes() == extended, "setting it appends exactly what the spec describes"
    modified = with_footer(data, extended)
    assert pq.read_table(io.BytesIO(modified)).equals(pq.read_table(io.BytesIO(data))), (
        "pyarrow ignores the extension and reads the same table"
    )


def test_extension_inside_column_metadata(files):
    data = files["v1_dict_bloom"]
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    cm = meta.row_groups[0].columns[0].meta_data
    cm.extension = b"per-column extension"
    modified = with_footer(data, meta.to_bytes())
    assert pq.read_table(io.BytesIO(modified)).equals(pq.read_table(io.BytesIO(data))), (
        "pyarrow reads a file whose ColumnMetaData carries an extension"
    )
    back = fmt.FileMetaData.from_bytes(footer_of(modified))
    assert back.row_groups[0].columns[0].meta_data.extension == b"per-column extension"
    assert back.to_bytes() == meta.to_bytes(), "nested extensions round-trip too"


def test_other_writers_decode_like_pyarrow_reads(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    fastparquet = pytest.importorskip("fastparquet")
    pd = pytest.importorskip("pandas")
    path = tmp_path / "duck.parquet"
    duckdb.sql(
        f"COPY (SELECT range AS i, range::VARCHAR AS s, [range, 1] AS l, {{'a': range}} AS st "
        f"FROM range(1000)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 300)"
    )
    data = path.read_bytes()
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    assert meta.to_bytes() == footer_of(data), "duckdb footers round-trip byte-identically"
    assert (
        meta.num_rows == 1000
        and len(meta.row_groups) == pq.ParquetFile(path).metadata.num_row_groups
    )

    path = tmp_path / "fp.parquet"
    df = pd.DataFrame(
        {"i": range(100), "s": [str(x) for x in range(100)], "c": pd.Categorical(["a", "b"] * 50)}
    )
    fastparquet.write(str(path), df, row_group_offsets=30, stats=True)
    data = path.read_bytes()
    meta = fmt.FileMetaData.from_bytes(footer_of(data))
    assert meta.row_groups[0].columns[0].meta_data.key_value_metadata == [], (
        "fastparquet's empty list with element type 0 decodes as []"
    )
    again = fmt.FileMetaData.from_bytes(meta.to_bytes())
    assert again == meta, "re-encoding (with the declared element type) keeps every value"
    md = pq.ParquetFile(path).metadata
    assert (meta.num_rows, len(meta.row_groups)) == (md.num_rows, md.num_row_groups)


@pytest.mark.hostile
def test_every_strict_prefix_of_a_real_footer_raises():
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1, 2, None], "s": ["x", None, "z"]}), buf, write_page_index=True)
    footer = footer_of(buf.getvalue())
    for n in range(len(footer)):
        with pytest.raises(DecodeError):
            fmt.FileMetaData.from_bytes(footer[:n])


@pytest.mark.hostile
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3))
def test_corrupt_footers_decode_like_reference_or_raise(flips):
    footer = bytearray(SMALL_FOOTER)
    for pos, value in flips:
        footer[pos % len(footer)] = value
    try:
        ours = fmt.FileMetaData.from_bytes(bytes(footer))
    except DecodeError:
        ours = None
    try:
        ref = R.decode(bytes(footer), fmt.FileMetaData)
    except DecodeError:
        ref = None
    assert ours == ref, "kernel and reference must agree on corrupt footers (value or DecodeError)"


def _small_footer():
    buf = io.BytesIO()
    pq.write_table(
        sample_table().slice(0, 20).select(["i32", "s", "list", "struct", "ts_us"]),
        buf,
        write_page_index=True,
    )
    return footer_of(buf.getvalue())


SMALL_FOOTER = _small_footer()
