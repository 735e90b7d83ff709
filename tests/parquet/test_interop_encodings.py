"""Every encoding against the real peer, both ways.

pyarrow writes a one-column file with a given encoding and we decode it; we write one and pyarrow
decodes it. Data covers empty input, one value, all-equal values, each type's extremes, NaN / ±inf /
-0.0, empty and 10 kB strings, sorted and random runs; columns nullable or not; page v1 and v2;
uncompressed and compressed; many small pages.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table

RNG = np.random.default_rng(20261121)


def _ints(dtype, kind, n):
    info = np.iinfo(dtype)
    if kind == "extremes":
        base = np.array([info.min, info.max, 0, -1, 1, info.min + 1, info.max - 1], dtype)
        return np.resize(base, n)
    if kind == "sorted":
        return np.sort(RNG.integers(info.min // 4, info.max // 4, n, dtype=dtype))
    if kind == "small":
        return RNG.integers(-50, 50, n).astype(dtype)
    if kind == "equal":
        return np.full(n, 7, dtype)
    return RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _floats(dtype, kind, n):
    if kind == "special":
        base = np.array(
            [
                np.nan,
                np.inf,
                -np.inf,
                -0.0,
                0.0,
                1.5,
                -2.25,
                np.finfo(dtype).max,
                np.finfo(dtype).tiny,
            ],
            dtype,
        )
        return np.resize(base, n)
    if kind == "equal":
        return np.full(n, -0.0, dtype)
    return RNG.standard_normal(n).astype(dtype)


def _strings(kind, n):
    if kind == "edge":
        base = ["", "a", "x" * 10_000, "héllo wörld", "🦆🦆", "\x00nul", ""]
        return [base[i % len(base)] for i in range(n)]
    if kind == "equal":
        return ["same"] * n
    if kind == "sorted":
        return sorted(f"key-{i * 7919 % 100_000:06d}" for i in range(n))
    return [f"s{RNG.integers(0, 300)}-{'z' * int(RNG.integers(0, 20))}" for _ in range(n)]


# (name, arrow type, value factory(kind, n), kinds, encodings pyarrow accepts for it)
CASES = [
    (
        "int32",
        pa.int32(),
        lambda k, n: _ints(np.int32, k, n),
        ["extremes", "sorted", "small", "equal", "random"],
        ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", "DICT"],
    ),
    (
        "int64",
        pa.int64(),
        lambda k, n: _ints(np.int64, k, n),
        ["extremes", "sorted", "small", "equal", "random"],
        ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", "DICT"],
    ),
    (
        "float",
        pa.float32(),
        lambda k, n: _floats(np.float32, k, n),
        ["special", "equal", "random"],
        ["PLAIN", "BYTE_STREAM_SPLIT", "DICT"],
    ),
    (
        "double",
        pa.float64(),
        lambda k, n: _floats(np.float64, k, n),
        ["special", "equal", "random"],
        ["PLAIN", "BYTE_STREAM_SPLIT", "DICT"],
    ),
    (
        "bool",
        pa.bool_(),
        lambda k, n: (np.arange(n) % 3 == 0) if k == "mixed" else np.ones(n, bool),
        ["mixed", "equal"],
        ["PLAIN", "RLE"],
    ),
    (
        "string",
        pa.string(),
        lambda k, n: _strings(k, n),
        ["edge", "equal", "sorted", "random"],
        ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "DICT"],
    ),
    (
        "binary",
        pa.binary(),
        lambda k, n: [s.encode() for s in _strings(k, n)],
        ["edge", "random"],
        ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "DICT"],
    ),
    (
        "fixed",
        pa.binary(5),
        lambda k, n: (
            [bytes(RNG.integers(0, 256, 5, dtype=np.uint8)) for _ in range(n)]
            if k == "random"
            else [b"\xff" * 5] * n
        ),
        ["random", "equal"],
        ["PLAIN", "BYTE_STREAM_SPLIT", "DELTA_BYTE_ARRAY", "DICT"],
    ),
]

SIZES = [0, 1, 1000]


def _table(arrow_type, values, nullable, n):
    arr = pa.array(values, type=arrow_type)
    if nullable and n > 1:
        mask = np.zeros(n, bool)
        mask[::3] = True
        arr = pa.array(values, type=arrow_type, mask=mask)
    return pa.table({"c": arr}, schema=pa.schema([pa.field("c", arrow_type, nullable=nullable)]))


def _assert_same(expected: pa.Table, got: pa.Table, why: str):
    assert got.num_rows == expected.num_rows, why
    a = expected.column(0).combine_chunks()
    b = got.column(0).combine_chunks()
    assert b.type == a.type, f"{why}: type {b.type} != {a.type}"
    assert np.array_equal(np.asarray(a.is_valid()), np.asarray(b.is_valid())), (
        f"{why}: nulls differ"
    )
    if pa.types.is_floating(a.type):
        width = a.type.bit_width // 8
        view = {4: np.uint32, 8: np.uint64}[width]
        va = np.frombuffer(a.buffers()[1], view)[a.offset : a.offset + len(a)]
        vb = np.frombuffer(b.buffers()[1], view)[b.offset : b.offset + len(b)]
        valid = np.asarray(a.is_valid())
        assert np.array_equal(va[valid], vb[valid]), f"{why}: float bit patterns differ"
    else:
        assert a.equals(b), f"{why}: values differ"


def _params():
    for name, arrow_type, factory, kinds, encodings in CASES:
        for kind in kinds:
            for encoding in encodings:
                yield pytest.param(
                    name, arrow_type, factory, kind, encoding, id=f"{name}-{kind}-{encoding}"
                )


def _pyarrow_options(encoding):
    if encoding == "DICT":
        return {"use_dictionary": True}
    return {"use_dictionary": False, "column_encoding": {"c": encoding}}


@pytest.mark.parametrize("name,arrow_type,factory,kind,encoding", list(_params()))
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_we_decode_what_pyarrow_writes(name, arrow_type, factory, kind, encoding, version):
    for n in SIZES:
        for nullable in (False, True):
            table = _table(arrow_type, factory(kind, n), nullable, n)
            for compression in ("none", "zstd"):
                buf = io.BytesIO()
                pq.write_table(
                    table,
                    buf,
                    data_page_version=version,
                    compression=compression,
                    data_page_size=512,
                    write_statistics=False,
                    **_pyarrow_options(encoding),
                )
                got = read_table(buf.getvalue())
                _assert_same(
                    table,
                    got,
                    f"pyarrow {encoding} {version} {compression} n={n} nullable={nullable}",
                )


@pytest.mark.parametrize("name,arrow_type,factory,kind,encoding", list(_params()))
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pyarrow_decodes_what_we_write(name, arrow_type, factory, kind, encoding, version):
    for n in SIZES:
        for nullable in (False, True):
            table = _table(arrow_type, factory(kind, n), nullable, n)
            for compression in ("none", "snappy"):
                buf = io.BytesIO()
                write_table(
                    table,
                    buf,
                    data_page_version=version,
                    compression=compression,
                    data_page_size=512,
                    **_pyarrow_options(encoding),
                )
                data = buf.getvalue()
                got = pq.read_table(io.BytesIO(data))
                _assert_same(
                    table, got, f"ours {encoding} {version} {compression} n={n} nullable={nullable}"
                )
                if encoding != "DICT" and n:
                    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0)
                    assert encoding in meta.encodings, (
                        f"we should have written {encoding}: {meta.encodings}"
                    )


def test_many_pages_and_row_groups_round_trip():
    n = 50_000
    table = pa.table(
        {
            "i": np.arange(n, dtype=np.int64),
            "s": [f"v{i % 977}" for i in range(n)],
            "d": RNG.standard_normal(n),
        }
    )
    buf = io.BytesIO()
    write_table(table, buf, row_group_size=12_345, data_page_size=4096, compression="zstd")
    meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata
    assert meta.num_row_groups == 5
    assert pq.read_table(io.BytesIO(buf.getvalue())).equals(table)
    assert read_table(buf.getvalue()).equals(table)
    assert ParquetFile(buf.getvalue()).read_row_group(1).num_rows == 12_345


def test_int96_timestamps_from_pyarrow():
    ts = pa.array([0, -1, 1_700_000_000_123_456_789, -(2**62), 2**62], pa.timestamp("ns"))
    table = pa.table({"t": ts})
    buf = io.BytesIO()
    pq.write_table(table, buf, use_deprecated_int96_timestamps=True, use_dictionary=False)
    assert read_table(buf.getvalue()).column(0).equals(table.column(0))


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.int8(),
        pa.int16(),
        pa.uint8(),
        pa.uint16(),
        pa.uint32(),
        pa.uint64(),
        pa.date32(),
        pa.timestamp("ms"),
        pa.timestamp("us", tz="UTC"),
        pa.timestamp("ns"),
        pa.time32("ms"),
        pa.time64("us"),
        pa.decimal128(9, 2),
        pa.decimal128(18, 4),
        pa.decimal128(38, 10),
        pa.large_string(),
        pa.float16(),
    ],
)
def test_logical_types_both_ways(arrow_type):
    if pa.types.is_decimal(arrow_type):
        import decimal

        q = decimal.Decimal(1).scaleb(-arrow_type.scale)
        with decimal.localcontext(decimal.Context(prec=80)):
            values = [decimal.Decimal(v).quantize(q) for v in ("0", "-1.5", "123.25", "-0.01")]
            largest = decimal.Decimal("9" * arrow_type.precision).scaleb(-arrow_type.scale)
            values += [largest, -largest]
    elif pa.types.is_floating(arrow_type):
        values = np.array([0.5, -0.0, np.inf, 1.0, 65504.0], np.float16)
    elif pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        values = ["a", "", "ü", "z" * 100, "b"]
    else:
        storage = pa.int64() if arrow_type.bit_width == 64 else pa.int32()
        if pa.types.is_unsigned_integer(arrow_type):
            values = pa.array([0, 1, 2**arrow_type.bit_width - 1, 7, 3], pa.uint64()).cast(
                arrow_type
            )
        elif pa.types.is_integer(arrow_type):
            lo, hi = -(2 ** (arrow_type.bit_width - 1)), 2 ** (arrow_type.bit_width - 1) - 1
            values = pa.array([lo, hi, 0, -1, 5], arrow_type)
        else:
            values = pa.array([0, 1, 86_399_000, 5, 12], storage).cast(arrow_type)
    table = pa.table({"c": pa.array(values, type=arrow_type)})
    buf = io.BytesIO()
    write_table(table, buf)
    assert pq.read_table(io.BytesIO(buf.getvalue())).column(0).equals(table.column(0))
    buf2 = io.BytesIO()
    pq.write_table(table, buf2)
    assert read_table(buf2.getvalue()).column(0).equals(table.column(0))
