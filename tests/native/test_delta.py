"""DELTA_BINARY_PACKED / DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY kernels.

Every case runs on the kernel (metaindex._native.delta) and the pure-Python reference
(tests/reference/delta.py); pyarrow is the interop peer (it writes pages, we decode them).
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex._native import delta as D
from metaindex.errors import DecodeError, EncodeError
from tests.reference import delta as R

INT32, INT64, BYTE_ARRAY, FLBA = 1, 2, 6, 7
BITS = {INT32: 32, INT64: 64}
DTYPE = {INT32: np.int32, INT64: np.int64}
I32, I64 = np.iinfo(np.int32), np.iinfo(np.int64)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

rng = np.random.default_rng(20240601)

INT_CASES = {
    "empty": [],
    "one": [42],
    "two": [-5, 7],
    "all_equal": [7] * 300,
    "sorted": sorted(rng.integers(-(10**9), 10**9, 1000).tolist()),
    "random": rng.integers(-(2**31), 2**31, 777).tolist(),
    "exactly_one_block": list(range(129)),
    "block_plus_one": list(range(130)),
    "int32_extremes": [I32.min, I32.max, I32.min, 0, I32.max, -1, I32.min] * 40,
}
INT64_ONLY = {
    "int64_extremes": [I64.min, I64.max, I64.min, 0, I64.max, -1] * 50,
    "random_64": rng.integers(I64.min, I64.max, 513, dtype=np.int64, endpoint=True).tolist(),
}


def int_cases(pt):
    cases = dict(INT_CASES)
    if pt == INT64:
        cases.update(INT64_ONLY)
    return cases.items()


def decode_both(kernel, reference, data, n, *args):
    """Run kernel and reference on the same input; they must agree (values or DecodeError).

    Returns the kernel's (values, consumed), or re-raises the kernel's DecodeError.
    """
    k_err = r_err = None
    try:
        k_vals, k_used = kernel(data, n, *args)
    except DecodeError as e:
        k_err = e
    try:
        r_vals, r_used = reference(data, n, *args)
    except DecodeError as e:
        r_err = e
    assert (k_err is None) == (r_err is None), (
        f"kernel and reference disagree on {bytes(data[:40]).hex()}...: kernel {k_err!r}, "
        f"reference {r_err!r}"
    )
    if k_err is not None:
        raise k_err
    assert k_used == r_used, f"consumed bytes differ: kernel {k_used}, reference {r_used}"
    assert as_list(k_vals) == as_list(r_vals), "decoded values differ between kernel and reference"
    return k_vals, k_used


def as_list(values):
    if isinstance(values, tuple):
        offsets, data = values
        assert offsets.dtype == np.int32 and offsets[0] == 0, "decoders return int32 offsets from 0"
        return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]
    if isinstance(values, np.ndarray) and values.ndim == 2:
        return [bytes(row) for row in values]
    return list(values) if not isinstance(values, list) else values


def dbp_ref(pt):
    return lambda data, n: R.decode_dbp(data, n, BITS[pt])


def dbp_kernel(pt):
    return lambda data, n: D.decode_delta_binary_packed(data, n, pt)


# ------------------------------------------------------------------ DELTA_BINARY_PACKED


@pytest.mark.parametrize("pt", [INT32, INT64])
def test_dbp_roundtrip_and_same_bytes_as_reference(pt):
    for name, vals in int_cases(pt):
        arr = np.array(vals, dtype=DTYPE[pt])
        enc = D.encode_delta_binary_packed(arr, pt)
        assert enc == R.encode_dbp(vals, BITS[pt]), (
            f"{name}: kernel encoder should write the reference layout"
        )
        got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), enc + b"\xff\x00trailing", len(vals))
        assert got.dtype == DTYPE[pt], f"{name}: decoded dtype"
        assert got.tolist() == vals, f"{name}: round trip"
        assert used == len(enc), f"{name}: consumed should stop at the end of the encoding"


@pytest.mark.parametrize("pt", [INT32, INT64])
@pytest.mark.parametrize(
    "layout",
    [
        {"block_size": 256, "miniblocks": 8},
        {"block_size": 128, "miniblocks": 1},
        {"block_size": 256, "miniblocks": 4},  # what pyarrow writes for INT64
        {"block_size": 1024, "miniblocks": 32},
        {"block_size": 128, "miniblocks": 4, "unused_width": 255, "pad_bits": 1},
        {
            "block_size": 384,
            "miniblocks": 3,
            "unused_width": 77,
            "pad_bits": 1,
            "min_widths": [5, 0, 31],
        },
    ],
)
def test_dbp_decodes_other_layouts(pt, layout):
    for name, vals in int_cases(pt):
        enc = R.encode_dbp(vals, BITS[pt], **layout)
        got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), enc, len(vals))
        assert got.tolist() == vals, f"{name} with {layout}: decode"
        assert used == len(enc), f"{name} with {layout}: consumed"


@pytest.mark.parametrize("pt", [INT32, INT64])
def test_dbp_every_bit_width(pt):
    bits = BITS[pt]
    for w in range(bits + 1):
        # relative deltas 0 and 2**w - 1 (alternating) need exactly width w
        rel = [0 if i % 2 else (1 << w) - 1 for i in range(200)]
        min_delta = -(2 ** (bits - 1)) if w == bits else -3
        vals, last = [123], 123
        for r in rel:
            last = R._signed(last + min_delta + r, bits)
            vals.append(last)
        enc = R.encode_dbp(vals, bits)
        widths = _block_widths(enc)
        assert max(widths) == w, f"test data should need width {w}, got {widths}"
        for layout in ({}, {"block_size": 256, "miniblocks": 8, "pad_bits": 1}):
            data = R.encode_dbp(vals, bits, **layout)
            got, _ = decode_both(dbp_kernel(pt), dbp_ref(pt), data, len(vals))
            assert got.tolist() == vals, f"width {w} {layout}: decode"
        assert (
            D.decode_delta_binary_packed(
                D.encode_delta_binary_packed(np.array(vals, DTYPE[pt]), pt), len(vals), pt
            )[0].tolist()
            == vals
        ), f"width {w}: round trip"
        # the same values with every miniblock forced to width w (wider than needed elsewhere)
        data = R.encode_dbp(vals, bits, min_widths=w)
        assert D.decode_delta_binary_packed(data, len(vals), pt)[0].tolist() == vals


def _block_widths(enc):
    r = R._Reader(enc)
    bs, mb, total, _ = r.uleb(), r.uleb(), r.uleb(), r.zigzag()
    widths, left = [], total - 1
    while left > 0:
        r.zigzag()
        ws = list(r.take(mb))
        for w in ws:
            if left <= 0:
                break
            widths.append(w)
            r.take(bs // mb * w // 8)
            left -= bs // mb
    return widths


@pytest.mark.parametrize("pt", [INT32, INT64])
def test_dbp_wraparound_deltas(pt):
    lo, hi = (I32.min, I32.max) if pt == INT32 else (I64.min, I64.max)
    vals = [lo, hi, lo] + [hi, lo] * 100
    enc = D.encode_delta_binary_packed(np.array(vals, DTYPE[pt]), pt)
    assert D.decode_delta_binary_packed(enc, len(vals), pt)[0].tolist() == vals, "wrapping deltas"
    assert R.decode_dbp(enc, len(vals), BITS[pt])[0] == vals, "reference reads the kernel's bytes"


def test_dbp_int32_uses_32_bit_arithmetic():
    # INT32_MIN -> INT32_MAX is delta -1 in 32 bits: min delta -1, every width 0
    vals = [I32.min, I32.max] * 3
    enc = D.encode_delta_binary_packed(np.array(vals, np.int32), INT32)
    assert max(_block_widths(enc)) <= 32, "INT32 deltas are computed modulo 2**32"
    # a min delta written by a 64-bit writer (-(2**32 - 1), outside int32) reads modulo 2**32
    vals = [I32.max, I32.min, I32.min]
    enc64 = R.encode_dbp(vals, 64)
    assert _block_widths(enc64) == [32], "64-bit deltas of this data need exactly 32 bits"
    assert D.decode_delta_binary_packed(enc64, len(vals), INT32)[0].tolist() == vals


@pytest.mark.parametrize("pt", [INT32, INT64])
def test_dbp_header_total_larger_than_asked(pt):
    vals = list(range(1000, 0, -3))
    enc = R.encode_dbp(vals, BITS[pt])
    for n in (0, 1, 5, 128, 200, len(vals)):
        got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), enc + b"tail", n)
        assert got.tolist() == vals[:n], f"first {n} values"
        assert used == len(enc), "the whole encoding is consumed even when fewer values are asked"
    with pytest.raises(DecodeError, match="expected"):
        D.decode_delta_binary_packed(enc, len(vals) + 1, pt)


@pytest.mark.parametrize(
    "header, message",
    [
        (R._uleb(0) + R._uleb(4) + R._uleb(1) + R._zigzag(0), "block size"),
        (R._uleb(100) + R._uleb(1) + R._uleb(1) + R._zigzag(0), "block size"),
        (R._uleb(2**31) + R._uleb(1) + R._uleb(1) + R._zigzag(0), "block size"),
        (R._uleb(128) + R._uleb(0) + R._uleb(1) + R._zigzag(0), "miniblock count"),
        (R._uleb(128) + R._uleb(3) + R._uleb(1) + R._zigzag(0), "miniblock count"),
        (R._uleb(128) + R._uleb(8) + R._uleb(1) + R._zigzag(0), "miniblock count"),
        (R._uleb(128) + R._uleb(4) + R._uleb(2**40) + R._zigzag(0) + b"\x00" * 5, "truncated"),
    ],
)
def test_dbp_bad_headers(header, message):
    for pt in (INT32, INT64):
        with pytest.raises(DecodeError, match=message):
            D.decode_delta_binary_packed(header, 1, pt)
        with pytest.raises(DecodeError):
            R.decode_dbp(header, 1, BITS[pt])


def test_dbp_bad_widths_and_values():
    head = R._uleb(128) + R._uleb(4) + R._uleb(3)
    body = R._zigzag(0) + bytes([65, 0, 0, 0]) + b"\x00" * 2000
    with pytest.raises(DecodeError, match="bit width 65") as e:
        D.decode_delta_binary_packed(head + R._zigzag(1) + body, 3, INT64)
    assert e.value.offset == len(head) + 2, "the error names the offset of the width byte"
    body33 = R._zigzag(0) + bytes([33, 0, 0, 0]) + b"\x00" * 2000
    with pytest.raises(DecodeError, match="bit width 33"):
        D.decode_delta_binary_packed(head + R._zigzag(1) + body33, 3, INT32)
    assert D.decode_delta_binary_packed(head + R._zigzag(1) + body33, 3, INT64)[0].tolist() == [
        1,
        1,
        1,
    ]
    with pytest.raises(DecodeError, match="first value"):
        D.decode_delta_binary_packed(
            R._uleb(128) + R._uleb(4) + R._uleb(1) + R._zigzag(2**32), 1, INT32
        )
    # a first value written unsigned (DuckDB's UINT32 columns) wraps to its int32 bit pattern
    wrapped, _ = D.decode_delta_binary_packed(
        R._uleb(128) + R._uleb(4) + R._uleb(1) + R._zigzag(2**32 - 336), 1, INT32
    )
    assert wrapped.tolist() == [-336]
    # unused miniblocks may carry any width byte (here 200), and are not read
    ok = head + R._zigzag(1) + R._zigzag(0) + bytes([1, 200, 200, 200]) + b"\x00" * 4
    got, used = D.decode_delta_binary_packed(ok, 3, INT64)
    assert got.tolist() == [1, 1, 1] and used == len(ok), "unused miniblock widths are ignored"


def test_dbp_argument_errors():
    with pytest.raises(TypeError):
        D.encode_delta_binary_packed(np.arange(3, dtype=np.int64), 5)
    with pytest.raises(TypeError):
        D.encode_delta_binary_packed(np.arange(3, dtype=np.int16), INT32)
    with pytest.raises(TypeError):
        D.encode_delta_binary_packed(np.arange(6, dtype=np.int32)[::2], INT32)
    with pytest.raises(TypeError):
        D.decode_delta_binary_packed(b"", 0, BYTE_ARRAY)
    # raw little-endian bytes are accepted as values
    raw = np.arange(10, dtype=np.int64).tobytes()
    assert D.encode_delta_binary_packed(raw, INT64) == D.encode_delta_binary_packed(
        np.arange(10), INT64
    )


@SETTINGS
@given(st.sampled_from([INT32, INT64]), st.data())
def test_dbp_hypothesis_roundtrip(pt, data):
    bits = BITS[pt]
    vals = data.draw(st.lists(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1), max_size=700))
    enc = D.encode_delta_binary_packed(np.array(vals, DTYPE[pt]), pt)
    assert enc == R.encode_dbp(vals, bits), "kernel and reference encoders agree byte for byte"
    got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), enc, len(vals))
    assert got.tolist() == vals and used == len(enc), "round trip"
    layout = {
        "block_size": 128 * data.draw(st.integers(1, 3)),
        "miniblocks": data.draw(st.sampled_from([1, 2, 4])),
        "pad_bits": data.draw(st.integers(0, 1)),
        "unused_width": data.draw(st.integers(0, 255)),
    }
    other = R.encode_dbp(vals, bits, **layout)
    got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), other, len(vals))
    assert got.tolist() == vals and used == len(other), f"decode layout {layout}"


# ------------------------------------------------------------------ byte arrays

BYTES_CASES = {
    "empty": [],
    "one_empty": [b""],
    "spec_example": [b"axis", b"axle", b"babble", b"babyhood"],
    "hello": [b"Hello", b"World", b"Foobar", b"ABCDEF"],
    "repeats": [b"same"] * 300,
    "mixed": [bytes(rng.integers(0, 3, int(n), dtype=np.uint8)) for n in rng.integers(0, 20, 500)],
    "long": [b"x" * 1000, b"x" * 999 + b"y", b""],
}


def to_arrow_pair(values, large=False, slice_from=0):
    arr = pa.array([b"pad"] * slice_from + values, pa.large_binary() if large else pa.binary())
    arr = arr.slice(slice_from)
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    data = (
        np.frombuffer(arr.buffers()[2], np.uint8)
        if arr.buffers()[2] is not None
        else np.zeros(0, np.uint8)
    )
    return offsets, data


BYTE_CODECS = {
    "dlba": (
        D.encode_delta_length_byte_array,
        D.decode_delta_length_byte_array,
        R.encode_dlba,
        R.decode_dlba,
    ),
    "dba": (D.encode_delta_byte_array, D.decode_delta_byte_array, R.encode_dba, R.decode_dba),
}


@pytest.mark.parametrize("codec", BYTE_CODECS)
@pytest.mark.parametrize("large, slice_from", [(False, 0), (True, 0), (False, 3), (True, 2)])
def test_byte_arrays_roundtrip(codec, large, slice_from):
    enc_k, dec_k, enc_r, dec_r = BYTE_CODECS[codec]
    for name, vals in BYTES_CASES.items():
        enc = enc_k(to_arrow_pair(vals, large, slice_from))
        assert enc == enc_r(vals), f"{codec} {name}: kernel writes the reference bytes"
        got, used = decode_both(dec_k, dec_r, enc + b"\x01tail", len(vals))
        assert as_list(got) == vals and used == len(enc), f"{codec} {name}: round trip"


@pytest.mark.parametrize("codec", BYTE_CODECS)
def test_fixed_len_byte_arrays(codec):
    enc_k, dec_k, enc_r, dec_r = BYTE_CODECS[codec]
    vals = np.array([[1, 2, 3], [1, 2, 4], [9, 9, 9], [9, 9, 9]], np.uint8)
    enc = enc_k(vals, FLBA, 3)
    assert enc == enc_r([bytes(v) for v in vals]), "FLBA encodes every length"
    got, used = decode_both(dec_k, dec_r, enc, 4, FLBA, 3)
    assert got.shape == (4, 3) and (got == vals).all() and used == len(enc), "FLBA round trip"
    with pytest.raises(DecodeError, match="FIXED_LEN_BYTE_ARRAY"):
        dec_k(enc, 4, FLBA, 2)
    with pytest.raises(TypeError):
        enc_k(vals, FLBA, 0)


def test_byte_array_validation():
    # negative length
    bad = R.encode_dbp([3, -1], 32) + b"abc"
    with pytest.raises(DecodeError, match="negative"):
        D.decode_delta_length_byte_array(bad, 2)
    # lengths summing past the data
    with pytest.raises(DecodeError, match="exceeds the input"):
        D.decode_delta_length_byte_array(R.encode_dbp([3, 4], 32) + b"abcdef", 2)
    # prefix longer than the previous value (and a first prefix > 0)
    bad = R.encode_dbp([0, 3], 32) + R.encode_dbp([2, 1], 32) + b"abc"
    with pytest.raises(DecodeError, match="prefix length 3"):
        D.decode_delta_byte_array(bad, 2)
    bad = R.encode_dbp([1], 32) + R.encode_dbp([1], 32) + b"a"
    with pytest.raises(DecodeError, match="prefix length 1"):
        D.decode_delta_byte_array(bad, 1)
    bad = R.encode_dbp([0, -2], 32) + R.encode_dbp([2, 1], 32) + b"abc"
    with pytest.raises(DecodeError, match="negative"):
        D.decode_delta_byte_array(bad, 2)
    for args in [bad]:
        with pytest.raises(DecodeError):
            R.decode_dba(args, 2)


def test_byte_array_encoder_errors():
    with pytest.raises(TypeError):
        D.encode_delta_length_byte_array([b"a", b"b"])
    with pytest.raises(EncodeError, match="decrease"):
        D.encode_delta_byte_array((np.array([0, 3, 1], np.int32), np.zeros(3, np.uint8)))
    with pytest.raises(EncodeError, match="outside"):
        D.encode_delta_length_byte_array((np.array([0, 5], np.int64), np.zeros(3, np.uint8)))
    with pytest.raises(TypeError):
        D.encode_delta_length_byte_array((np.array([0, 1], np.int16), np.zeros(3, np.uint8)))
    with pytest.raises(TypeError):
        D.encode_delta_byte_array((np.array([0], np.int32), b""), INT64)


@SETTINGS
@given(
    st.sampled_from(list(BYTE_CODECS)),
    st.lists(st.binary(max_size=12), max_size=300),
    st.booleans(),
    st.integers(0, 255),
)
def test_byte_arrays_hypothesis(codec, vals, large, unused):
    enc_k, dec_k, enc_r, dec_r = BYTE_CODECS[codec]
    enc = enc_k(to_arrow_pair(vals, large))
    assert as_list(dec_k(enc, len(vals))[0]) == vals, "round trip"
    other = enc_r(vals, block_size=256, miniblocks=2, unused_width=unused, pad_bits=1)
    got, used = decode_both(dec_k, dec_r, other, len(vals))
    assert as_list(got) == vals and used == len(other), "decode another layout"


# ------------------------------------------------------------------ pyarrow interop


def pyarrow_page(arr, encoding, version):
    table = pa.table({"c": arr}, schema=pa.schema([pa.field("c", arr.type, nullable=False)]))
    buf = io.BytesIO()
    pq.write_table(
        table,
        buf,
        use_dictionary=False,
        compression="NONE",
        column_encoding={"c": encoding},
        data_page_version=version,
    )
    raw = buf.getvalue()
    offset = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0).data_page_offset
    header, body = R.data_page_values(raw, offset)
    page = header.get("data_page_header") or header["data_page_header_v2"]
    assert (
        page["encoding"]
        == {"DELTA_BINARY_PACKED": 5, "DELTA_LENGTH_BYTE_ARRAY": 6, "DELTA_BYTE_ARRAY": 7}[encoding]
    ), "page written with the asked encoding"
    assert page["num_values"] == len(arr), "one page holds the whole column"
    return body


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("pt", [INT32, INT64])
def test_pyarrow_writes_dbp_we_read(version, pt):
    for name, vals in int_cases(pt):
        if not vals:
            continue  # pyarrow writes no data page for an empty column
        arr = pa.array(np.array(vals, DTYPE[pt]), pa.int32() if pt == INT32 else pa.int64())
        body = pyarrow_page(arr, "DELTA_BINARY_PACKED", version)
        got, used = decode_both(dbp_kernel(pt), dbp_ref(pt), body, len(vals))
        assert got.tolist() == vals, f"{name}: pyarrow {version} page decodes to the column"
        assert used == len(body), f"{name}: the encoding fills the page"
        if pt == INT32:
            assert D.encode_delta_binary_packed(np.array(vals, np.int32), pt) == body, (
                f"{name}: INT32 bytes identical to pyarrow's (same 128/4 layout)"
            )


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize(
    "codec, encoding", [("dlba", "DELTA_LENGTH_BYTE_ARRAY"), ("dba", "DELTA_BYTE_ARRAY")]
)
def test_pyarrow_writes_byte_arrays_we_read(version, codec, encoding):
    enc_k, dec_k, enc_r, dec_r = BYTE_CODECS[codec]
    for name, vals in BYTES_CASES.items():
        if not vals:
            continue
        body = pyarrow_page(pa.array(vals, pa.binary()), encoding, version)
        got, used = decode_both(dec_k, dec_r, body, len(vals))
        assert as_list(got) == vals and used == len(body), f"{name}: pyarrow page decodes"
        assert enc_k(to_arrow_pair(vals)) == body, f"{name}: same bytes as pyarrow"


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pyarrow_writes_flba_delta_byte_array(version):
    vals = [bytes(r) for r in rng.integers(0, 4, (300, 5), dtype=np.uint8)]
    body = pyarrow_page(pa.array(vals, pa.binary(5)), "DELTA_BYTE_ARRAY", version)
    got, used = decode_both(D.decode_delta_byte_array, R.decode_dba, body, len(vals), FLBA, 5)
    assert as_list(got) == vals and used == len(body), "pyarrow FLBA page decodes"


# ------------------------------------------------------------------ hostile input


def valid_encodings():
    out = []
    for pt in (INT32, INT64):
        vals = np.array(INT_CASES["random"][:300], DTYPE[pt])
        out.append(("dbp", pt, 0, D.encode_delta_binary_packed(vals, pt), len(vals)))
        out.append(("dbp", pt, 0, D.encode_delta_binary_packed(vals[:1], pt), 1))
    vals = BYTES_CASES["mixed"][:200]
    out.append(
        ("dlba", BYTE_ARRAY, 0, D.encode_delta_length_byte_array(to_arrow_pair(vals)), len(vals))
    )
    out.append(("dba", BYTE_ARRAY, 0, D.encode_delta_byte_array(to_arrow_pair(vals)), len(vals)))
    fl = rng.integers(0, 3, (150, 4), dtype=np.uint8)
    out.append(("dba", FLBA, 4, D.encode_delta_byte_array(fl, FLBA, 4), 150))
    out.append(("dlba", FLBA, 4, D.encode_delta_length_byte_array(fl, FLBA, 4), 150))
    return out


def run_decoder(kind, pt, tl, data, n):
    if kind == "dbp":
        return decode_both(dbp_kernel(pt), dbp_ref(pt), data, n)
    k, r = (
        (D.decode_delta_length_byte_array, R.decode_dlba)
        if kind == "dlba"
        else (D.decode_delta_byte_array, R.decode_dba)
    )
    return decode_both(k, r, data, n, pt, tl)


@pytest.mark.hostile
@pytest.mark.parametrize("case", valid_encodings(), ids=lambda c: f"{c[0]}-{c[1]}")
def test_every_strict_prefix_raises(case):
    kind, pt, tl, enc, n = case
    assert run_decoder(kind, pt, tl, enc, n) is not None, "the full encoding decodes"
    for cut in range(len(enc)):
        with pytest.raises(DecodeError):
            run_decoder(kind, pt, tl, enc[:cut], n)
        # also copied into an exactly-sized numpy buffer (bytes objects end with a NUL byte;
        # under `make asan` a read past this one is caught)
        with pytest.raises(DecodeError):
            run_decoder(kind, pt, tl, np.frombuffer(enc[:cut], np.uint8).copy(), n)


@pytest.mark.hostile
@SETTINGS
@given(st.sampled_from(valid_encodings()), st.data())
def test_byte_flips_give_values_or_decode_error(case, data):
    kind, pt, tl, enc, n = case
    buf = bytearray(enc)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    try:
        run_decoder(
            kind, pt, tl, np.frombuffer(bytes(buf), np.uint8).copy(), data.draw(st.integers(0, n))
        )
    except DecodeError:
        pass


@pytest.mark.hostile
@SETTINGS
@given(
    st.sampled_from(
        [
            ("dbp", INT32, 0),
            ("dbp", INT64, 0),
            ("dlba", BYTE_ARRAY, 0),
            ("dba", BYTE_ARRAY, 0),
            ("dba", FLBA, 3),
        ]
    ),
    st.binary(max_size=200),
    st.integers(0, 50),
)
def test_random_bytes_give_values_or_decode_error(case, blob, n):
    kind, pt, tl = case
    # a plausible header in front of random bytes reaches the block decoding more often
    for data in (blob, R._uleb(128) + R._uleb(4) + R._uleb(n) + blob):
        try:
            run_decoder(kind, pt, tl, np.frombuffer(data, np.uint8).copy(), n)
        except DecodeError:
            pass


@pytest.mark.hostile
def test_huge_counts_fail_before_allocating():
    head = R._uleb(128) + R._uleb(1) + R._uleb(2**62) + R._zigzag(0)
    with pytest.raises(DecodeError, match="truncated"):
        D.decode_delta_binary_packed(head + b"\x00\x00", 2**40, INT64)
    with pytest.raises(DecodeError, match="truncated"):
        D.decode_delta_length_byte_array(head, 2**40)
    with pytest.raises(DecodeError):
        D.decode_delta_binary_packed(R._uleb(128) + R._uleb(4) + b"\xff" * 11, 1, INT64)
