"""RLE / bit-packing hybrid and BIT_PACKED kernels (cython_ext/rle) against the Python
reference and pyarrow's data pages."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.rle import (
    decode_bit_packed,
    decode_rle,
    decode_rle_bool,
    decode_rle_prefixed,
    encode_rle,
    encode_rle_bool,
    encode_rle_prefixed,
)
from metaindex.errors import DecodeError, EncodeError
from tests.reference import rle as ref
from tests.reference.pages import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, column_pages
from tests.reference.varint import uleb_encode


@st.composite
def runs_of_values(draw, max_size=300):
    """(width, values): random mixes of repeats (RLE material) and noise (bit-packed)."""
    width = draw(st.integers(0, 32))
    top = (1 << width) - 1
    value = st.one_of(st.integers(0, top), st.sampled_from([0, top]))
    values = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            values += [draw(value)] * draw(st.integers(1, 70))
        else:
            values += draw(st.lists(value, max_size=40))
    return width, values[:max_size]


def hybrid(*runs, width):
    """Hand-build hybrid data: ('rle', count, value) and ('packed', values) runs."""
    out = b""
    for run in runs:
        if run[0] == "rle":
            out += uleb_encode(run[1] << 1) + run[2].to_bytes((width + 7) // 8, "little")
        else:
            vals = run[1] + [0] * (-len(run[1]) % 8)
            out += uleb_encode((len(vals) // 8) << 1 | 1) + ref.pack_lsb(vals, width)
    return out


# ------------------------------------------------------------------------------ round trips


@settings(max_examples=200, deadline=None)
@given(runs_of_values())
def test_encode_matches_arrow_reference_and_roundtrips(case):
    width, values = case
    encoded = encode_rle(np.array(values, np.uint32), width)
    assert encoded == ref.encode_hybrid(values, width), "runs must be chosen like Arrow's encoder"
    decoded, consumed = decode_rle(encoded + b"\x03\xff", len(values), width)
    assert decoded.dtype == np.uint32 and decoded.tolist() == values
    assert consumed == len(encoded), "bytes after the last run are not consumed"
    assert ref.decode_hybrid(encoded, len(values), width) == (values, len(encoded))
    prefixed = encode_rle_prefixed(np.array(values, np.uint32), width)
    assert prefixed == ref.encode_hybrid_prefixed(values, width)
    decoded, consumed = decode_rle_prefixed(prefixed + b"\x00", len(values), width)
    assert decoded.tolist() == values and consumed == len(prefixed)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), max_size=300))
def test_boolean_values(values):
    arr = np.array(values, np.bool_)
    encoded = encode_rle_bool(arr)
    assert encoded == ref.encode_hybrid_prefixed([int(v) for v in values], 1)
    decoded, consumed = decode_rle_bool(encoded + b"\x01", len(values))
    assert decoded.dtype == np.bool_ and decoded.tolist() == values and consumed == len(encoded)
    assert encode_rle_prefixed(arr, 1) == encoded == encode_rle_prefixed(arr.view(np.uint8), 1)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.uint16, np.int32, np.uint32, np.int64])
def test_input_dtypes(dtype):
    values = [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1]
    assert encode_rle(np.array(values, dtype), 1) == ref.encode_hybrid(values, 1)
    assert encode_rle(values, 1) == ref.encode_hybrid(values, 1), "sequences are accepted"


def test_spec_example_and_extremes():
    # parquet spec: 0..7 at width 3 bit-packed LSB first is 10001000 11000110 11111010
    assert hybrid(("packed", list(range(8))), width=3)[1:] == bytes(
        [0b10001000, 0b11000110, 0b11111010]
    )
    assert encode_rle(np.arange(8, dtype=np.uint32), 3) == b"\x03" + bytes([0x88, 0xC6, 0xFA])
    top = np.array([2**32 - 1] * 3 + [0, 2**31], np.uint32)
    decoded, _ = decode_rle(encode_rle(top, 32), 5, 32)
    assert decoded.tolist() == top.tolist()
    assert encode_rle(np.array([5] * 20, np.uint32), 3) == b"\x28\x05", "one RLE run"
    assert encode_rle(np.zeros(0, np.uint32), 7) == b""
    assert decode_rle(b"", 0, 7)[0].shape == (0,)


def test_decoder_takes_what_writers_other_than_ours_produce():
    width = 5
    data = hybrid(
        ("rle", 1, 3), ("packed", list(range(8)) * 70), ("rle", 2**31 - 1, 31), width=width
    )  # a length-1 RLE run, a 70-group bit-packed run, a max-length run
    expected = [3] + list(range(8)) * 70 + [31] * 10
    decoded, consumed = decode_rle(data, len(expected), width)
    assert decoded.tolist() == expected and consumed == len(data)
    # values past num_values in a padded group or a long RLE run are ignored
    data = hybrid(("packed", [1, 2, 3]), width=width)
    assert decode_rle(data, 3, width)[0].tolist() == [1, 2, 3]
    assert decode_rle(data, 8, width)[0].tolist() == [1, 2, 3, 0, 0, 0, 0, 0]
    decoded, consumed = decode_rle(hybrid(("rle", 100, 7), width=width) + b"zz", 3, width)
    assert decoded.tolist() == [7, 7, 7] and consumed == 3, "a 2-byte header and the value"


def test_slices_of_a_page_decode_in_place():
    page = b"\x03" + encode_rle(np.arange(20, dtype=np.uint32) % 8, 3) + b"rest"
    decoded, consumed = decode_rle(memoryview(page)[1:], 20, page[0])
    assert decoded.tolist() == (np.arange(20) % 8).tolist() and consumed == len(page) - 5
    decoded, _ = decode_rle(np.frombuffer(page, np.uint8)[1:], 20, 3)
    assert decoded.tolist() == (np.arange(20) % 8).tolist()


def test_width_zero():
    # parquet-java writes header-only runs for a one-entry dictionary (bit width 0)
    data = hybrid(("rle", 10, 0), ("packed", [0] * 8), width=0)
    decoded, consumed = decode_rle(data, 18, 0)
    assert decoded.tolist() == [0] * 18 and consumed == len(data)
    # with no runs at all the only possible values are zeros
    assert decode_rle(b"", 5, 0)[0].tolist() == [0] * 5
    decoded, consumed = decode_rle_prefixed(b"\x00\x00\x00\x00", 5, 0)
    assert decoded.tolist() == [0] * 5 and consumed == 4
    assert encode_rle(np.zeros(20, np.uint32), 0) == b"\x28"
    assert decode_bit_packed(b"", 9, 0)[0].tolist() == [0] * 9


def test_prefixed_length_bounds_the_runs():
    body = hybrid(("rle", 3, 1), width=1)
    data = (len(body) + 2).to_bytes(4, "little") + body + b"\x00\x00" + b"next"
    decoded, consumed = decode_rle_prefixed(data, 3, 1)
    assert decoded.tolist() == [1, 1, 1] and consumed == 4 + len(body) + 2
    with pytest.raises(DecodeError, match="ends after"):
        decode_rle_prefixed(
            len(body).to_bytes(4, "little") + body + hybrid(("rle", 3, 1), width=1), 6, 1
        )


def test_deprecated_bit_packed_is_msb_first():
    # parquet spec: 0..7 at width 3 is 00000101 00111001 01110111
    decoded, consumed = decode_bit_packed(bytes([0b00000101, 0b00111001, 0b01110111, 0xFF]), 8, 3)
    assert decoded.tolist() == list(range(8)) and consumed == 3


@settings(max_examples=100, deadline=None)
@given(runs_of_values(max_size=100))
def test_bit_packed_matches_reference(case):
    width, values = case
    packed = ref.pack_msb(values, width)
    decoded, consumed = decode_bit_packed(packed + b"\xff" * 3, len(values), width)
    assert (decoded.tolist(), consumed) == ref.unpack_msb(packed, len(values), width)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: encode_rle(np.array([8], np.uint32), 3), EncodeError),
        (lambda: encode_rle(np.array([1, 2, 3, 4, 5, 6, 7, 9, 1], np.uint32), 3), EncodeError),
        (lambda: encode_rle(np.array([1], np.int32), 33), EncodeError),
        (lambda: encode_rle(np.array([1]), -1), EncodeError),
        (lambda: encode_rle(np.array([-1], np.int32), 32), EncodeError),
        (lambda: encode_rle(np.array([2**32], np.int64), 32), EncodeError),
        (lambda: encode_rle(np.array([1.0]), 3), TypeError),
        (lambda: encode_rle(np.zeros((2, 2), np.uint32), 3), TypeError),
        (lambda: encode_rle_bool(np.array([1, 0])), TypeError),
    ],
)
def test_encoder_rejects_bad_input(call, error):
    with pytest.raises(error):
        call()


# ------------------------------------------------------------------------------ hostile input


@pytest.mark.hostile
@pytest.mark.parametrize(
    "data, width, n, match",
    [
        (b"\x00\x01", 1, 1, "RLE run of length 0"),
        (b"\x01", 1, 1, "bit-packed run of 0 groups"),
        (b"\x80" * 10 + b"\x01", 1, 1, "longer than 10|overflows"),
        (uleb_encode(2**31 << 1) + b"\x01", 1, 1, "RLE run of length"),
        (uleb_encode(2**28 << 1 | 1), 1, 1, "bit-packed run of"),
        (b"\x02\x08", 3, 1, "does not fit 3 bits"),
        (b"\x02\x00\x00\x00\x80", 31, 1, "does not fit 31 bits"),
        (b"\x03\xff\xff", 3, 8, "truncated bit-packed run"),
        (b"\x02\x05", 3, 2, "ends after 1 of 2"),
        (b"\x02", 9, 1, "truncated RLE run value"),
    ],
)
def test_malformed_runs(data, width, n, match):
    with pytest.raises(DecodeError, match=match):
        decode_rle(data, n, width)


@pytest.mark.hostile
def test_bad_arguments_and_prefixes():
    for width in (-1, 33, 64):
        with pytest.raises(DecodeError, match="bit width"):
            decode_rle(b"\x02\x00", 1, width)
        with pytest.raises(DecodeError, match="bit width"):
            decode_bit_packed(b"\x00", 1, width)
    with pytest.raises(DecodeError, match="negative"):
        decode_rle(b"\x02\x00", -1, 1)
    with pytest.raises(DecodeError, match="exceeds") as info:
        decode_rle_prefixed(b"\x05\x00\x00\x00\x02\x01", 1, 1)
    assert (info.value.offset, info.value.needed, info.value.remaining) == (0, 9, 6)
    with pytest.raises(DecodeError):
        decode_rle_bool(b"\x02\x00", 1)


@pytest.mark.hostile
def test_huge_counts_fail_before_allocating():
    tiny = hybrid(("rle", 2**31 - 1, 1), width=1)
    for n in (2**31, 2**40, 2**63 - 1):
        with pytest.raises(DecodeError, match="ends after"):
            decode_rle(tiny, n, 1)
        with pytest.raises(DecodeError, match="truncated"):
            decode_bit_packed(b"\x00" * 16, n, 1)


@pytest.mark.hostile
@pytest.mark.parametrize("width", [0, 1, 3, 8, 13, 32])
def test_every_strict_prefix_raises(width):
    top = (1 << width) - 1
    values = [top] * 20 + [i & top for i in range(37)] + [1 & top] * 9 + [top & 5] * 3
    encoded = encode_rle(np.array(values, np.uint32), width)
    for cut in range(len(encoded)):
        if width == 0 and cut == 0:
            continue  # width 0 with no runs at all is all zeros (test_width_zero)
        with pytest.raises(DecodeError):
            decode_rle(encoded[:cut], len(values), width)
            pytest.fail(f"a {cut}-byte prefix of {len(encoded)} bytes must not decode")
    prefixed = encode_rle_prefixed(np.array(values, np.uint32), width)
    for cut in range(len(prefixed)):
        with pytest.raises(DecodeError):
            decode_rle_prefixed(prefixed[:cut], len(values), width)
            pytest.fail(f"a {cut}-byte prefix of the prefixed encoding must not decode")
    packed = ref.pack_msb(values, width)
    for cut in range(len(packed)):
        with pytest.raises(DecodeError):
            decode_bit_packed(packed[:cut], len(values), width)


def assert_decodes_like_reference(data, n, width):
    try:
        expected = ref.decode_hybrid(data, n, width)
    except ValueError:
        with pytest.raises(DecodeError):
            decode_rle(data, n, width)
        return
    decoded, consumed = decode_rle(data, n, width)
    assert (decoded.tolist(), consumed) == expected


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40), n=st.integers(0, 50), width=st.integers(0, 32))
def test_random_bytes_decode_like_the_reference(data, n, width):
    assert_decodes_like_reference(data, n, width)


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(case=runs_of_values(max_size=120), data=st.data())
def test_byte_flips(case, data):
    width, values = case
    encoded = bytearray(encode_rle(np.array(values, np.uint32), width))
    if not encoded:
        return
    pos = data.draw(st.integers(0, len(encoded) - 1))
    encoded[pos] ^= data.draw(st.integers(1, 255))
    assert_decodes_like_reference(bytes(encoded), len(values), width)


# ------------------------------------------------------------------------------ pyarrow


def write(table, **kwargs):
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="NONE", write_statistics=False, **kwargs)
    raw = buf.getvalue()
    return raw, column_pages(raw, pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0))


def test_pyarrow_v1_definition_levels_and_dictionary_indices():
    rng = np.random.default_rng(3)
    n = 20_000
    values = rng.integers(0, 700, n)
    values[5000:9000] = 42  # long repeats: RLE runs in the indices
    valid = rng.random(n) > 0.2
    valid[12000:16000] = True  # long run of defined values
    # read_dictionary gives the file's dictionary indices for binary columns
    table = pa.table({"x": pa.array(values.astype(str).astype(object), pa.string(), mask=~valid)})
    raw, pages = write(table, use_dictionary=True, data_page_version="1.0")
    assert pages[0].type == DICTIONARY_PAGE and pages[0].header[7][1] == len(
        np.unique(values[valid])
    )
    expected = pq.read_table(io.BytesIO(raw), read_dictionary=["x"]).column(0).combine_chunks()
    exp_indices = expected.indices.drop_null().to_numpy()

    levels, indices, start = [], [], 0
    for page in pages[1:]:
        assert page.type == DATA_PAGE
        num, encoding, def_encoding = page.header[5][1], page.header[5][2], page.header[5][3]
        assert encoding == 8 and def_encoding == 3, "RLE_DICTIONARY values, RLE levels"
        lv, used = decode_rle_prefixed(page.body, num, 1)
        assert encode_rle_prefixed(lv, 1) == page.body[:used], "our level encoding equals Arrow's"
        width = page.body[used]
        count = int(lv.sum())
        idx, consumed = decode_rle(page.body[used + 1 :], count, width)
        assert used + 1 + consumed == len(page.body), "the indices end the page"
        assert encode_rle(idx, width) == page.body[used + 1 :], "our index encoding equals Arrow's"
        levels.append(lv)
        indices.append(idx)
        start += num
    assert start == n
    assert np.concatenate(levels).astype(bool).tolist() == valid.tolist()
    assert np.concatenate(indices).tolist() == exp_indices.tolist()


def test_pyarrow_v2_levels_have_no_prefix():
    valid = np.arange(3000) % 7 != 0
    table = pa.table({"x": pa.array(np.arange(3000), pa.int32(), mask=~valid)})
    _, pages = write(table, use_dictionary=False, data_page_version="2.0")
    seen = 0
    for page in pages:
        assert page.type == DATA_PAGE_V2
        header = page.header[8]
        levels_len, num = header[5], header[1]
        lv, consumed = decode_rle(page.body[:levels_len], num, 1)
        assert consumed == levels_len
        assert lv.astype(bool).tolist() == valid[seen : seen + num].tolist()
        assert encode_rle(lv, 1) == page.body[:levels_len]
        seen += num
    assert seen == 3000


def test_pyarrow_single_entry_dictionary():
    raw, pages = write(
        pa.table({"x": pa.array([7] * 100, pa.int32())}),
        use_dictionary=True,
        data_page_version="1.0",
    )
    body = pages[1].body
    lv, used = decode_rle_prefixed(body, 100, 1)
    width = body[used]
    idx, consumed = decode_rle(body[used + 1 :], 100, width)
    assert idx.tolist() == [0] * 100 and used + 1 + consumed == len(body)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pyarrow_rle_booleans(version):
    rng = np.random.default_rng(5)
    values = rng.random(5000) < 0.5
    values[1000:3000] = True
    raw, pages = write(
        pa.table({"b": pa.array(values)}),
        use_dictionary=False,
        column_encoding={"b": "RLE"},
        data_page_version=version,
    )
    got = []
    for page in pages:
        if version == "1.0":
            header = page.header[5]
            _, start = decode_rle_prefixed(page.body, header[1], 1)
        else:
            header = page.header[8]
            start = header[5] + header[6]
        assert header[4 if version == "2.0" else 2] == 3, "RLE-encoded values"
        decoded, consumed = decode_rle_bool(page.body[start:], header[1])
        assert start + consumed == len(page.body)
        assert encode_rle_bool(decoded) == page.body[start:], "our boolean RLE equals Arrow's"
        got += decoded.tolist()
    assert got == values.tolist()
