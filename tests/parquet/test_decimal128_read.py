"""FIXED_LEN_BYTE_ARRAY decimals read as decimal128 converted while they are decoded
(``read_chunk(decimal128=True)``): the dictionary once per chunk, PLAIN pages straight from the
page, a flat nullable column's values straight into their slots. Every way pyarrow writes them
(precisions, page sizes, codecs, v1 / v2 pages, dictionary on and off, the dictionary falling
back to PLAIN mid-chunk, INT32 / INT64 storage) must read back as pyarrow reads it, and the
kernels must refuse what does not fit (typed errors)."""

import io
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import decimals
from metaindex.errors import DecodeError
from metaindex.parquet import read_table


def _decimal_column(rng, n: int, precision: int, scale: int, nulls: float, distinct: int):
    """``n`` decimals of ``precision``, negative and positive, near the type's limits too;
    ``distinct`` > 0 draws them from that many values (dictionary-friendly)."""
    top = 10**precision - 1
    pool = n if distinct <= 0 else distinct
    unscaled = []
    for d in rng.integers(1, precision + 1, pool).tolist():  # up to d digits, either sign
        low = max(0, d - 18)
        u = int(rng.integers(0, 10 ** min(d, 18))) * 10**low + int(
            rng.integers(0, 10 ** min(low, 18))
        )
        unscaled.append(-u if rng.random() < 0.5 else u)
    for k in range(0, pool, 7):  # values of the full width: the sign in the first byte
        unscaled[k] = top if k % 2 else -top
    values = [Decimal(f"{u}E-{scale}") for u in unscaled]  # exact (no context rounding)
    if distinct > 0:
        values = [values[i] for i in rng.integers(0, distinct, n)]
    mask = rng.random(n) < nulls
    return pa.array(
        [None if m else v for v, m in zip(values, mask, strict=True)],
        pa.decimal128(precision, scale),
    )


def _check(table: pa.Table, **opts) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf, **opts)
    data = buf.getvalue()
    expected = pq.read_table(io.BytesIO(data))
    for threads in (False, True):
        got = read_table(data, use_threads=threads)
        assert got.equals(expected), opts


@settings(max_examples=60, deadline=None)
@given(
    precision=st.sampled_from([1, 2, 3, 5, 7, 9, 10, 12, 15, 18, 19, 25, 30, 38]),
    nulls=st.sampled_from([0.0, 0.1, 0.6, 1.0]),
    distinct=st.sampled_from([0, 1, 40, 3000]),
    codec=st.sampled_from(["none", "zstd", "snappy", "gzip"]),
    dictionary=st.booleans(),
    page_size=st.sampled_from([64, 1000, 1 << 20]),
    version=st.sampled_from(["1.0", "2.0"]),
    n=st.integers(0, 3000),
    seed=st.integers(0, 2**32 - 1),
)
def test_flba_decimals_read_as_pyarrow(
    precision, nulls, distinct, codec, dictionary, page_size, version, n, seed
):
    rng = np.random.default_rng(seed)
    scale = int(rng.integers(0, precision + 1))
    arr = _decimal_column(rng, n, precision, scale, nulls, distinct)
    table = pa.table(
        {
            "opt": arr,
            "req": arr.fill_null(Decimal(0).scaleb(-scale)),
        },
        schema=pa.schema(
            [
                pa.field("opt", arr.type, True),
                pa.field("req", arr.type, False),
            ]
        ),
    )
    _check(
        table,
        compression=codec,
        use_dictionary=dictionary,
        data_page_size=page_size,
        data_page_version=version,
        # a small dictionary limit: the dictionary falls back to PLAIN mid-chunk
        dictionary_pagesize_limit=512 if distinct > 40 else 1 << 20,
        write_batch_size=256,
    )


@pytest.mark.parametrize("encoding", ["PLAIN", "BYTE_STREAM_SPLIT", "DELTA_BYTE_ARRAY"])
@pytest.mark.parametrize("nullable", [False, True])
def test_other_encodings_convert_too(encoding, nullable):
    rng = np.random.default_rng(5)
    arr = _decimal_column(rng, 4000, 18, 2, 0.1 if nullable else 0.0, 0)
    table = pa.table({"c": arr}, schema=pa.schema([pa.field("c", arr.type, nullable)]))
    for codec in ("none", "zstd"):
        _check(
            table,
            compression=codec,
            use_dictionary=False,
            column_encoding=encoding,
            data_page_size=2000,
        )


@pytest.mark.parametrize("precision", [5, 9, 12, 18])
def test_integer_backed_decimals(precision):
    rng = np.random.default_rng(precision)
    arr = _decimal_column(rng, 3000, precision, 1, 0.1, 50)
    table = pa.table({"c": arr, "d": arr.fill_null(Decimal(0))})
    for dictionary in (False, True):
        _check(table, store_decimal_as_integer=True, use_dictionary=dictionary)


def test_decimals_in_lists_and_structs():
    rng = np.random.default_rng(9)
    arr = _decimal_column(rng, 2000, 20, 3, 0.1, 30)
    offsets = pa.array(np.arange(0, 2001, 4, dtype=np.int32))
    table = pa.table(
        {
            "list": pa.ListArray.from_arrays(offsets, arr),
            "struct": pa.StructArray.from_arrays([arr[:500]], ["d"]),
        }
    )
    for dictionary in (False, True):
        _check(table, use_dictionary=dictionary, data_page_size=500)


# ------------------------------------------------------------------------------ kernels


def _reference(values: list[int], width: int) -> np.ndarray:
    """Big-endian ``width``-byte encodings of ``values``, and their decimal128 limbs."""
    raw = b"".join(v.to_bytes(width, "big", signed=True) for v in values)
    limbs = np.array(
        [[v & (2**64 - 1), (v >> 64) & (2**64 - 1)] for v in values], np.uint64
    ).reshape(-1, 2)
    return np.frombuffer(raw, np.uint8), limbs.view(np.int64)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_spread_and_plain_kernels_match_reference(data):
    width = data.draw(st.integers(1, 16))
    lim = 2 ** (8 * width - 1)
    n = data.draw(st.integers(0, 70))
    valid = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    offset = data.draw(st.integers(0, 9))
    present = sum(valid)
    values = data.draw(st.lists(st.integers(-lim, lim - 1), min_size=present, max_size=present))
    raw, limbs = _reference(values, width)
    bits = np.zeros(offset + n + 8, bool)
    bits[offset : offset + n] = valid
    bitmap = np.packbits(bits, bitorder="little")
    expected = np.zeros((n, 2), np.int64)
    expected[np.array(valid, bool)] = limbs

    out = np.full((n, 2), 77, np.int64)
    decimals.spread_plain_decimal128(raw, width, bitmap, offset, n, present, out)
    assert np.array_equal(out, expected)

    packed = np.empty((present, 2), np.int64)
    trailing = np.append(raw, [1, 2, 3]).astype(np.uint8)  # bytes after the values: left alone
    decimals.decode_plain_decimal128(trailing, present, width, packed)
    assert np.array_equal(packed, limbs)
    cut = present // 2  # two pages
    packed[...] = 77
    pages = [(raw[: width * cut], cut), (trailing[width * cut :], present - cut)]
    decimals.plain_pages_to_decimal128(pages, width, packed)
    assert np.array_equal(packed, limbs)

    # the dictionary path: every value an entry of its own, gathered in reverse order
    dictionary = np.ascontiguousarray(limbs[::-1]).view(np.uint8)
    indices = np.arange(present - 1, -1, -1, dtype=np.uint32)
    out[...] = 77
    decimals.gather_spread_decimal128(indices, dictionary, bitmap, offset, n, present, out)
    assert np.array_equal(out, expected)


@pytest.mark.hostile
def test_kernels_refuse_what_does_not_fit():
    raw, limbs = _reference([1, -2, 3], 8)
    bitmap = np.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 0], bool), bitorder="little")
    out = np.empty((4, 2), np.int64)
    with pytest.raises(DecodeError):  # the page is too short for its values
        decimals.decode_plain_decimal128(raw[:-1], 3, 8, out[:3])
    with pytest.raises(DecodeError):
        decimals.plain_pages_to_decimal128([(raw[:8], 1), (raw[8:-1], 2)], 8, out[:3])
    with pytest.raises(DecodeError):
        decimals.plain_pages_to_decimal128([(raw, -1)], 8, out[:0])
    with pytest.raises(DecodeError):
        decimals.spread_plain_decimal128(raw[:-1], 8, bitmap, 0, 4, 3, out)
    with pytest.raises(DecodeError):  # the bitmap holds 3 values, not 2
        decimals.spread_plain_decimal128(raw, 8, bitmap, 0, 4, 2, out)
    dictionary = limbs.view(np.uint8).reshape(-1)
    for bad in ([0, 1, 3], [0, 2**31, 1], [0, 2**32 - 1, 1]):  # past the 3 entries
        with pytest.raises(DecodeError):
            decimals.gather_spread_decimal128(
                np.array(bad, np.uint32), dictionary, bitmap, 0, 4, 3, out
            )
    with pytest.raises(DecodeError):  # too few indices
        decimals.gather_spread_decimal128(
            np.array([0, 1], np.uint32), dictionary, bitmap, 0, 4, 3, out
        )
    with pytest.raises(DecodeError):  # an empty dictionary
        decimals.gather_spread_decimal128(
            np.array([0, 0, 0], np.uint32), dictionary[:0], bitmap, 0, 4, 3, out
        )
    with pytest.raises(ValueError):
        decimals.spread_plain_decimal128(raw, 17, bitmap, 0, 4, 3, out)
    with pytest.raises(ValueError):  # the bitmap is too short for the slots
        decimals.gather_spread_decimal128(
            np.array([0, 1, 2], np.uint32), dictionary, bitmap, 4, 8, 3, np.empty((8, 2))
        )


def _dictionary_file(nullable: bool, codec: str) -> tuple[bytes, int]:
    """A decimal column of 5 distinct values, dictionary-encoded, written by pyarrow; and
    where its dictionary page's num_values byte lies (5, one varint byte)."""
    rng = np.random.default_rng(4)
    arr = _decimal_column(rng, 3000, 18, 2, 0.1 if nullable else 0.0, 5)
    table = pa.table({"c": arr}, schema=pa.schema([pa.field("c", arr.type, nullable)]))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=codec, use_dictionary=True)
    data = buf.getvalue()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0)
    start = meta.dictionary_page_offset
    # DictionaryPageHeader (field 7 of PageHeader) holds num_values as field 1: i32 zigzag 5
    at = data.index(b"\x15\x0a", start, meta.data_page_offset)
    return data, at + 1


@pytest.mark.hostile
@pytest.mark.parametrize("nullable", [False, True])
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_out_of_range_dictionary_index_is_a_decode_error(nullable, codec):
    data, at = _dictionary_file(nullable, codec)
    assert read_table(data).equals(pq.read_table(io.BytesIO(data)))
    bad = bytearray(data)
    bad[at] = 0x06  # the dictionary says 3 entries: its pages' indices 3 and 4 lie past it
    for threads in (False, True):
        with pytest.raises(DecodeError):
            read_table(bytes(bad), use_threads=threads)


@pytest.mark.hostile
def test_damaged_decimal_pages_raise_typed_errors():
    rng = np.random.default_rng(6)
    for nullable in (False, True):
        for dictionary in (False, True):
            arr = _decimal_column(rng, 3000, 18, 2, 0.1 if nullable else 0.0, 20)
            schema = pa.schema([pa.field("c", arr.type, nullable)])
            buf = io.BytesIO()
            pq.write_table(pa.table({"c": arr}, schema=schema), buf, use_dictionary=dictionary)
            data = buf.getvalue()
            meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0)
            end = (
                meta.data_page_offset
                + meta.total_compressed_size
                - (meta.data_page_offset - (meta.dictionary_page_offset or meta.data_page_offset))
            )
            for cut in (meta.data_page_offset + 40, end - 100):
                bad = bytearray(data)
                bad[cut : cut + 60] = b"\xff" * 60
                try:
                    got = read_table(bytes(bad))
                except DecodeError:
                    continue
                assert len(got) == 3000  # a value changed, never a crash or a short column
