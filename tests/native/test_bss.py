"""BYTE_STREAM_SPLIT kernel (cython_ext/bss) against the Python reference and pyarrow."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.bss import decode_byte_stream_split as decode
from metaindex._native.bss import encode_byte_stream_split as encode
from metaindex.errors import DecodeError, EncodeError
from tests.reference import bss as ref
from tests.reference.pages import DATA_PAGE, column_pages

INT32, INT64, FLOAT, DOUBLE, FLBA = 1, 2, 4, 5, 7
DTYPES = {INT32: np.int32, INT64: np.int64, FLOAT: np.float32, DOUBLE: np.float64}
SPECIAL_BITS = {
    4: [0x7FC00000, 0x7F800001, 0xFFC0BEEF, 0x7F800000, 0xFF800000, 0x80000000, 0x7FFFFFFF],
    8: [
        0x7FF8000000000000,
        0xFFF0000000000001,
        0x7FF0000000000000,
        0xFFF0000000000000,
        0x8000000000000000,
        0x7FFFFFFFFFFFFFFF,
    ],
}


def arrays(ptype):
    """Value arrays as raw bit patterns: empty, one value, all equal, extremes, NaN payloads."""
    width = np.dtype(DTYPES[ptype]).itemsize
    unsigned = np.uint32 if width == 4 else np.uint64
    bits = st.one_of(st.integers(0, 2 ** (8 * width) - 1), st.sampled_from(SPECIAL_BITS[width]))
    lists = st.one_of(
        st.lists(bits, max_size=60), st.builds(lambda v, n: [v] * n, bits, st.integers(0, 60))
    )
    return lists.map(lambda v: np.array(v, unsigned).view(DTYPES[ptype]))


@pytest.mark.parametrize("ptype", sorted(DTYPES))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_roundtrip_matches_reference(ptype, data):
    values = data.draw(arrays(ptype))
    encoded = encode(values, ptype)
    assert encoded == ref.encode(values.tobytes(), values.itemsize), "kernel equals reference"
    decoded, consumed = decode(encoded, len(values), ptype)
    assert decoded.dtype == values.dtype and consumed == len(encoded)
    assert decoded.tobytes() == values.tobytes(), "values (floats as bit patterns) round-trip"


@settings(max_examples=80, deadline=None)
@given(width=st.integers(1, 33), data=st.data())
def test_fixed_len_byte_array_roundtrip(width, data):
    rows = data.draw(st.lists(st.binary(min_size=width, max_size=width), max_size=40))
    values = np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), width)
    encoded = encode(values, FLBA, width)
    assert encoded == ref.encode(b"".join(rows), width)
    decoded, consumed = decode(encoded, len(rows), FLBA, width)
    assert decoded.shape == (len(rows), width) and decoded.tobytes() == b"".join(rows)


def test_spec_example_and_fewer_values_than_streams():
    raw = bytes.fromhex("AABBCCDD00112233A3B4C5D6")
    assert encode(np.frombuffer(raw, np.float32), FLOAT) == bytes.fromhex(
        "AA00A3BB11B4CC22C5DD33D6"
    )
    decoded, consumed = decode(bytes.fromhex("AA00A3BB11B4CC22C5DD33D6"), 2, FLOAT)
    assert decoded.tobytes() == raw[:8] and consumed == 12, "the first 2 of each 3-byte stream"


@pytest.mark.parametrize(
    "wrap", [bytes, bytearray, memoryview, pa.py_buffer, lambda b: np.frombuffer(b, np.uint8)]
)
def test_accepts_any_contiguous_buffer(wrap):
    values = np.array([1.5, -0.0, np.inf], np.float64)
    decoded, _ = decode(wrap(encode(values, DOUBLE)), 3, DOUBLE)
    assert decoded.tobytes() == values.tobytes()


@pytest.mark.parametrize(
    "values, ptype, kw, error",
    [
        (np.array([1.0]), FLOAT, {}, TypeError),
        (np.array([1], np.int64), INT32, {}, TypeError),
        (np.zeros((2, 3), np.uint8), FLBA, {"type_length": 4}, TypeError),
        (np.zeros((2, 3), np.uint8), FLBA, {}, EncodeError),
        (np.array([True]), 0, {}, EncodeError),
        (np.zeros((1, 12), np.uint8), 3, {}, EncodeError),  # INT96
        ((np.array([0, 1]), b"a"), 6, {}, EncodeError),  # BYTE_ARRAY
    ],
)
def test_encoder_rejects_bad_input(values, ptype, kw, error):
    with pytest.raises(error):
        encode(values, ptype, **kw)


# ------------------------------------------------------------------------------ hostile input


@pytest.mark.hostile
@pytest.mark.parametrize("ptype, kw", [(INT32, {}), (DOUBLE, {}), (FLBA, {"type_length": 3})])
def test_every_strict_prefix_raises(ptype, kw):
    width = {INT32: 4, DOUBLE: 8, FLBA: 3}[ptype]
    encoded = bytes(range(width * 9))
    assert decode(encoded, 9, ptype, **kw)[1] == len(encoded)
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            decode(encoded[:cut], 9, ptype, **kw)
            pytest.fail(f"a {cut}-byte prefix of {len(encoded)} bytes must not decode")


@pytest.mark.hostile
def test_bad_arguments():
    with pytest.raises(DecodeError, match="multiple"):
        decode(b"\x00" * 7, 1, FLOAT)
    with pytest.raises(DecodeError, match="holds 2 values, 3 expected"):
        decode(b"\x00" * 16, 3, DOUBLE)
    with pytest.raises(DecodeError, match="negative"):
        decode(b"", -1, FLOAT)
    for ptype, kw in ((0, {}), (3, {}), (6, {}), (FLBA, {}), (FLBA, {"type_length": -1}), (99, {})):
        with pytest.raises(DecodeError, match="does not apply"):
            decode(b"\x00" * 24, 1, ptype, **kw)
    for n in (2**31, 2**62, 2**63 - 1):
        with pytest.raises(DecodeError):
            decode(b"\x00" * 64, n, INT64)


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=80),
    n=st.integers(0, 25),
    case=st.sampled_from([(INT32, 4, 0), (INT64, 8, 0), (FLOAT, 4, 0), (FLBA, 5, 5)]),
)
def test_random_bytes_decode_like_the_reference(data, n, case):
    ptype, width, type_length = case
    try:
        expected = ref.decode(data, n, width)
    except ValueError:
        with pytest.raises(DecodeError):
            decode(data, n, ptype, type_length)
        return
    decoded, consumed = decode(data, n, ptype, type_length)
    assert decoded.tobytes() == expected and consumed == len(data)


# ------------------------------------------------------------------------------ pyarrow


@pytest.mark.parametrize(
    "array, ptype, type_length",
    [
        (
            pa.array(
                np.r_[np.random.default_rng(1).standard_normal(3000), np.nan, -0.0, np.inf].astype(
                    np.float32
                )
            ),
            FLOAT,
            0,
        ),
        (
            pa.array(np.r_[np.random.default_rng(2).standard_normal(3000), np.nan, -0.0, -np.inf]),
            DOUBLE,
            0,
        ),
        (pa.array(np.arange(-1500, 1500, dtype=np.int32) * 1_000_003), INT32, 0),
        (pa.array(np.arange(3000, dtype=np.int64) * -(2**40)), INT64, 0),
        (pa.array([bytes([i % 256, i // 256, 7]) for i in range(3000)], pa.binary(3)), FLBA, 3),
    ],
)
def test_pyarrow_byte_stream_split_pages(array, ptype, type_length):
    schema = pa.schema([pa.field("c", array.type, nullable=False)])  # no levels before values
    buf = io.BytesIO()
    pq.write_table(
        pa.table([array], schema=schema),
        buf,
        use_dictionary=False,
        compression="NONE",
        column_encoding={"c": "BYTE_STREAM_SPLIT"},
        data_page_version="1.0",
        write_statistics=False,
    )
    raw = buf.getvalue()
    pages = column_pages(raw, pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0))
    expected = pq.read_table(io.BytesIO(raw)).column(0).combine_chunks()
    got, start = [], 0
    for page in pages:
        assert page.type == DATA_PAGE and page.header[5][2] == 9, "BYTE_STREAM_SPLIT pages"
        num = page.header[5][1]
        decoded, consumed = decode(page.body, num, ptype, type_length)
        assert consumed == len(page.body)
        assert encode(decoded, ptype, type_length) == page.body, "our encoding equals Arrow's"
        got.append(decoded.tobytes())
        start += num
    if ptype == FLBA:
        assert b"".join(got) == b"".join(expected.to_pylist())
    else:
        assert b"".join(got) == expected.to_numpy().tobytes(), "bit-exact values, NaN included"
