"""The writer's sink: small writes gathered and written joined, in order, whatever the
stream; pyarrow (an independent reader) reads back every byte."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.parquet import ParquetWriter, write_table
from metaindex.parquet import writer as writer_mod


@pytest.mark.parametrize("flush_bytes", [1, 300, 8 << 20])
@pytest.mark.parametrize("use_threads", [False, True])
def test_gathered_writes_keep_their_order_and_offsets(
    monkeypatch, tmp_path, flush_bytes, use_threads
):
    monkeypatch.setattr(writer_mod, "_FLUSH_BYTES", flush_bytes)
    rng = np.random.default_rng(1)
    n = 40_000
    table = pa.table(
        {
            "a": rng.integers(0, 1000, n),
            "b": rng.random(n),
            "s": pa.array([None if i % 7 == 0 else f"v{i % 97}" for i in range(n)]),
            "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 64, n)]),
        }
    )
    sink = io.BytesIO()
    write_table(
        table,
        sink,
        row_group_size=9_000,
        compression="zstd",
        write_page_index=True,
        use_threads=use_threads,
        bloom_filter_options={"a": True},
    )
    assert pq.read_table(io.BytesIO(sink.getvalue())).equals(table)
    path = tmp_path / "t.parquet"
    with ParquetWriter(path, table.schema, use_threads=use_threads) as w:
        w.write_table(table.slice(0, 15_000))
        w.write_table(table.slice(15_000))
    assert pq.read_table(path).equals(table)
