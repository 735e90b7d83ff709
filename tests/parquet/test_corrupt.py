"""Corrupt and hostile files: every failure is a typed MetaIndexError, never a crash or a hang."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError, MetaIndexError
from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table

pytestmark = pytest.mark.hostile


def _file(table=None, **options) -> bytes:
    table = (
        table
        if table is not None
        else pa.table(
            {
                "i": pa.array([1, 2, None, 4, 5, 6, 7, 8] * 4, pa.int64()),
                "s": pa.array(["a", "bb", "a", None, "ccc", "a", "bb", "d"] * 4),
                "l": pa.array([[1, 2], None, [], [3]] * 8, pa.list_(pa.int32())),
            }
        )
    )
    buf = io.BytesIO()
    write_table(table, buf, **options)
    return buf.getvalue()


def _split(data: bytes):
    n = int.from_bytes(data[-8:-4], "little")
    return data[: -8 - n], fmt.FileMetaData.from_bytes(data[-8 - n : -8])


def _join(body: bytes, meta: fmt.FileMetaData) -> bytes:
    footer = meta.to_bytes()
    return body + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def _expect_error(data: bytes, match: str | None = None):
    with pytest.raises(MetaIndexError, match=match):
        read_table(data)


def test_bad_magic_and_short_files():
    good = _file()
    _expect_error(b"", "not a Parquet file")
    _expect_error(b"PAR1PAR1", "not a Parquet file")
    _expect_error(b"XXXX" + good[4:], "leading magic")
    _expect_error(good[:-4] + b"PAR2", "not b'PAR1'")


def test_footer_length_past_the_file_and_truncated_footers():
    good = _file()
    n = int.from_bytes(good[-8:-4], "little")
    _expect_error(good[:-8] + (len(good) * 2).to_bytes(4, "little") + b"PAR1", "runs past")
    for cut in (1, 2, n // 2, n - 1):  # the footer loses its first bytes
        broken = good[: -8 - n] + good[-8 - n + cut :]
        _expect_error(broken[:-8] + (n - cut).to_bytes(4, "little") + b"PAR1")
    for keep in (0, 5, len(good) // 2, len(good) - 9):  # the file is cut short
        _expect_error(good[:keep])


def test_page_header_sizes_that_lie():
    body, meta = _split(_file(use_dictionary=False))
    chunk = meta.row_groups[0].columns[0].meta_data
    start = chunk.data_page_offset
    header, end = fmt.PageHeader.decode_prefix(body, start)
    for size in (
        header.compressed_page_size + 1000,
        header.compressed_page_size - 3,
        -5,
        2**31 - 1,
    ):
        lying = fmt.PageHeader.from_bytes(header.to_bytes())
        lying.compressed_page_size = size
        lying.uncompressed_page_size = max(size, 0)
        raw = lying.to_bytes()
        patched = body[:start] + raw + body[end:]
        shift = len(raw) - (end - start)
        m = fmt.FileMetaData.from_bytes(meta.to_bytes())
        m.row_groups[0].columns[0].meta_data.total_compressed_size += shift
        _expect_error(_join(patched, _shift_after(m, start, shift)))


def _shift_after(meta, position: int, shift: int):
    for rg in meta.row_groups:
        for cc in rg.columns:
            cm = cc.meta_data
            for field in ("data_page_offset", "dictionary_page_offset"):
                value = getattr(cm, field)
                if value is not None and value > position:
                    setattr(cm, field, value + shift)
    return meta


def test_dictionary_index_out_of_range():
    table = pa.table({"s": pa.array(["x", "y", "x", "y"] * 10)})
    data = _file(table, use_dictionary=True, data_page_version="2.0", compression="none")
    body, meta = _split(data)
    cm = meta.row_groups[0].columns[0].meta_data
    dict_header, dict_end = fmt.PageHeader.decode_prefix(body, cm.dictionary_page_offset)
    assert dict_header.dictionary_page_header.num_values == 2
    dict_header.dictionary_page_header.num_values = 1  # the pages still index entry 1
    dict_raw = body[dict_end : dict_end + dict_header.compressed_page_size]
    # a one-entry dictionary page: PLAIN "x"
    new_dict = b"\x01\x00\x00\x00x"
    dict_header.uncompressed_page_size = dict_header.compressed_page_size = len(new_dict)
    head = dict_header.to_bytes()
    start = cm.dictionary_page_offset
    patched = body[:start] + head + new_dict + body[dict_end + len(dict_raw) :]
    shift = len(patched) - len(body)
    cm.total_compressed_size += shift
    cm.data_page_offset += shift
    with pytest.raises(DecodeError, match="index"):
        read_table(_join(patched, meta))


def test_level_counts_that_disagree_with_num_values():
    body, meta = _split(_file())
    for cc in meta.row_groups[0].columns:
        cc.meta_data.num_values += 7
    _expect_error(_join(body, meta))
    body, meta = _split(_file())
    meta.row_groups[0].columns[1].meta_data.num_values = -3
    _expect_error(_join(body, meta), "negative")


def test_required_column_holding_nulls():
    body, meta = _split(_file())
    meta.schema[1].repetition_type = 0  # column "i" (has nulls, max_def 1) now claims REQUIRED
    _expect_error(_join(body, meta))


def test_repetition_level_that_starts_a_record_at_one():
    table = pa.table({"l": pa.array([[1, 2], [3], [4, 5, 6]] * 3, pa.list_(pa.int32()))})
    data = _file(table, data_page_version="2.0", use_dictionary=False)
    body, meta = _split(data)
    cm = meta.row_groups[0].columns[0].meta_data
    header, end = fmt.PageHeader.decode_prefix(body, cm.data_page_offset)
    v2 = header.data_page_header_v2
    rep = bytearray(body[end : end + v2.repetition_levels_byte_length])
    from metaindex._native import rle

    levels, _ = rle.decode_rle(bytes(rep), v2.num_values, 1)
    levels[0] = 1
    new_rep = rle.encode_rle(levels, 1)
    assert len(new_rep) == len(rep), "test setup: same encoded size expected"
    patched = body[:end] + new_rep + body[end + len(rep) :]
    with pytest.raises(DecodeError, match="rep"):
        read_table(_join(patched, meta))


def test_negative_counts_everywhere():
    for mutate in (
        lambda m: setattr(m.row_groups[0], "num_rows", -1),
        lambda m: setattr(m.schema[0], "num_children", -1),
        lambda m: setattr(m.schema[0], "num_children", 99),
        lambda m: setattr(m.row_groups[0].columns[0].meta_data, "total_compressed_size", -1),
        lambda m: setattr(m.row_groups[0].columns[0].meta_data, "data_page_offset", -100),
        lambda m: setattr(m.row_groups[0].columns[0].meta_data, "dictionary_page_offset", 2**40),
        lambda m: setattr(m.schema[1], "type", 99),
        lambda m: setattr(m.schema[1], "repetition_type", 7),
        lambda m: m.row_groups[0].columns.pop(),
    ):
        body, meta = _split(_file())
        mutate(meta)
        _expect_error(_join(body, meta))


def test_pyarrow_agrees_the_files_we_refuse_are_bad():
    good = _file()
    assert pq.read_table(io.BytesIO(good)).num_rows == 32
    bad = good[: len(good) // 2]
    with pytest.raises((pa.ArrowException, OSError)):  # pyarrow raises either
        pq.read_table(io.BytesIO(bad))
    _expect_error(bad)


SMALL = _file(
    pa.table(
        {
            "i": pa.array([1, None, 3, 4] * 3, pa.int32()),
            "s": pa.array(["ab", "c", None, "ab"] * 3),
            "l": pa.array([[1], None, [], [2, 3]] * 3, pa.list_(pa.int64())),
            "m": pa.array([{"k": 1}, None, {}, {"z": 2}] * 3, pa.map_(pa.string(), pa.int8())),
        }
    ),
    data_page_version="2.0",
    compression="snappy",
    write_page_index=True,
)


def _read_all(data: bytes):
    try:
        pf = ParquetFile(data)
        pf.read()
        for path in pf.column_paths:
            pf.statistics(0, path)
            pf.column_index(0, path)
            pf.offset_index(0, path)
    except MetaIndexError:
        pass


def test_every_single_byte_flip_is_typed_or_harmless():
    for pos in range(len(SMALL)):
        for flip in (0x01, 0x80, 0xFF):
            data = bytearray(SMALL)
            data[pos] ^= flip
            _read_all(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_damage_never_escapes_as_an_untyped_error(data):
    raw = bytearray(SMALL)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(raw) // 2, len(raw)))
    _read_all(bytes(raw[:cut]))


def test_damaged_list_column_of_another_length_is_typed():
    """Found by the test above: damaged levels make a list column decode to 13 rows beside
    columns of 12; the row group's assembly raises DecodeError, not Arrow's ArrowInvalid."""
    raw = bytearray(SMALL)
    raw[183] = raw[20] = 0
    with pytest.raises(MetaIndexError):
        ParquetFile(bytes(raw)).read()


def test_huge_claimed_sizes_do_not_allocate():
    body, meta = _split(_file())
    meta.row_groups[0].columns[0].meta_data.num_values = 2**60
    meta.row_groups[0].num_rows = 2**60
    with pytest.raises(MetaIndexError):
        read_table(_join(body, meta))
    assert np.iinfo(np.int64).max > 2**60


@pytest.mark.parametrize("kind", ["dict", "bss"])
@pytest.mark.parametrize("damage", ["wide", "wider", "zero"])
def test_multi_page_chunk_with_a_corrupt_middle_page(kind, damage):
    """A required fixed-width chunk's pages decode in one kernel call: a bad page in the middle
    still raises DecodeError naming it, and the pages around it do not hide it."""
    n = 30_000
    values = np.arange(n, dtype=np.int64) % 1000 * 7919
    table = pa.table([pa.array(values)], schema=pa.schema([pa.field("v", pa.int64(), False)]))
    buf = io.BytesIO()
    if kind == "dict":
        pq.write_table(table, buf, compression="none", use_dictionary=True, data_page_size=20_000)
    else:
        pq.write_table(
            table,
            buf,
            compression="none",
            use_dictionary=False,
            column_encoding={"v": "BYTE_STREAM_SPLIT"},
            data_page_size=100_000,
        )
    data = bytearray(buf.getvalue())
    assert read_table(bytes(data)).equals(table)
    cm = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(0)
    pos, end, bodies = cm.data_page_offset, cm.data_page_offset + cm.total_compressed_size, []
    if kind == "dict":
        pos, end = cm.dictionary_page_offset, cm.dictionary_page_offset + cm.total_compressed_size
    while pos < end:
        header, hend = fmt.PageHeader.decode_prefix(bytes(data), pos)
        if header.type != 2:  # data pages only (not the dictionary page)
            bodies.append((hend, header.compressed_page_size))
        pos = hend + header.compressed_page_size
    assert len(bodies) >= 3
    start, size = bodies[len(bodies) // 2]
    if kind == "dict":
        # the bit-width byte: over 32, wider than the indices (runs overrun the page), or zero
        # (every index 0 is in range: a valid page with other values, which must not raise)
        data[start] = {"wide": 40, "wider": 31, "zero": 0}[damage]
    elif damage == "zero":
        data[start : start + size] = bytes(size)  # zeroed streams: valid, values become 0
    else:
        # the page's header claims one value more than its streams hold (same header length)
        hstart = bodies[len(bodies) // 2 - 1][0] + bodies[len(bodies) // 2 - 1][1]
        header, hend = fmt.PageHeader.decode_prefix(bytes(data), hstart)
        header.data_page_header.num_values += {"wide": 1, "wider": 2}[damage]
        new = header.to_bytes()
        assert len(new) == hend - hstart
        data[hstart:hend] = new
    if damage == "zero":
        got = read_table(bytes(data)).column(0).to_numpy()
        assert len(got) == n and (got != values).any()
        return
    with pytest.raises(
        DecodeError,
        match=f"page {len(bodies) // 2} of {len(bodies)}" if kind == "dict" else "values",
    ):
        read_table(bytes(data))
    with pytest.raises((pa.ArrowException, OSError)):  # pyarrow refuses the file too
        pq.read_table(io.BytesIO(bytes(data)))
