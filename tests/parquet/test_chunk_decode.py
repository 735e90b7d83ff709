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


def _columns():
    rng = np.random.default_rng(3)
    return {
        "int32": (pa.array(rng.integers(-1000, 1000, N, dtype=np.int32)),
                  ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", None]),
        "int64": (pa.array(rng.integers(-2**40, 2**40, N)),
                  ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT", None]),
        "double": (pa.array(rng.standard_normal(N)), ["PLAIN", "BYTE_STREAM_SPLIT", None]),
        "float": (pa.array(rng.standard_normal(N).astype(np.float32)), ["PLAIN", None]),
        "ts": (pa.array(rng.integers(0, 10**15, N)).cast(pa.timestamp("us", "UTC")),
               ["PLAIN", "DELTA_BINARY_PACKED", None]),
        "date": (pa.array(rng.integers(0, 20000, N, dtype=np.int32)).cast(pa.date32()),
                 ["PLAIN", None]),
        "int8": (pa.array(rng.integers(-100, 100, N, dtype=np.int8)), ["PLAIN", None]),
        "dec": (pa.array(rng.integers(-10**9, 10**9, N)).cast(pa.decimal128(21, 2))
                .cast(pa.decimal128(18, 2)),
                ["PLAIN", "BYTE_STREAM_SPLIT", None]),
        "dec38": (pa.array(rng.integers(-10**9, 10**9, N)).cast(pa.decimal128(24, 4))
                  .cast(pa.decimal128(38, 4)),
                  ["PLAIN", None]),
        "fsb": (pa.array([bytes([i % 256] * 3) for i in range(N)], pa.binary(3)),
                ["PLAIN", "BYTE_STREAM_SPLIT", None]),
        "f16": (pa.array(rng.standard_normal(N).astype(np.float16)), ["PLAIN", None]),
    }


CASES = [(name, encoding, nulls, version)
         for name, (_, encodings) in _columns().items() for encoding in encodings
         for nulls in (0.0, 0.1, 1.0) for version in ("1.0", "2.0")]


@pytest.mark.parametrize("name,encoding,nulls,version", CASES)
def test_pyarrow_pages_decode_into_one_chunk(name, encoding, nulls, version):
    arr, _ = _columns()[name]
    if nulls:
        mask = pa.array(np.random.default_rng(5).random(N) < nulls)
        arr = pc.if_else(mask, pa.scalar(None, arr.type), arr)
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, nulls > 0)]))
    opts = {"use_dictionary": encoding is None, "data_page_version": version,
            "data_page_size": 1024, "write_batch_size": 500, "row_group_size": 3000}
    if encoding is not None:
        opts["column_encoding"] = encoding
    buf = io.BytesIO()
    pq.write_table(table, buf, **opts)
    got = read_table(buf.getvalue())
    assert got.equals(table), f"{name} {encoding or 'dictionary'} nulls={nulls} v{version}"
    assert got.column(0).null_count == table.column(0).null_count
