"""Whole files against pyarrow: type families × nullability × nesting × page version × codec.

pyarrow reads our file and equals the source table; we read pyarrow's file and equal it. Plus the
reader's API: row groups, column selection, batches, statistics, page index, key/value metadata.
"""

from __future__ import annotations

import decimal
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import SchemaError
from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import ParquetWriter, write_table

RNG = np.random.default_rng(99)
N = 300


def _maybe_null(arr: pa.Array, nullable: bool) -> pa.Array:
    if not nullable:
        return arr
    mask = RNG.random(len(arr)) < 0.2
    return pa.array(arr.to_pylist(), type=arr.type, mask=mask)


def _families(nullable: bool) -> dict[str, pa.Array]:
    ints = RNG.integers(-1000, 1000, N)
    strings = [["", "a", "héllo", "🦆", "x" * 300][i % 5] + str(i % 17) for i in range(N)]
    cols = {
        "i8": pa.array(ints % 100, pa.int8()),
        "u16": pa.array(np.abs(ints), pa.uint16()),
        "i32": pa.array(ints, pa.int32()),
        "u64": pa.array(np.abs(ints).astype(np.uint64) * (2**50), pa.uint64()),
        "i64": pa.array(ints * 10**12, pa.int64()),
        "f32": pa.array(RNG.standard_normal(N).astype(np.float32)),
        "f64": pa.array(np.where(ints % 7 == 0, np.nan, RNG.standard_normal(N))),
        "str": pa.array(strings),
        "bin": pa.array([s.encode() for s in strings], pa.binary()),
        "fixed": pa.array([bytes([i % 256] * 4) for i in range(N)], pa.binary(4)),
        "dec9": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in ints], pa.decimal128(9, 2)),
        "dec38": pa.array(
            [decimal.Decimal(int(v) * 10**20).scaleb(-5) for v in ints], pa.decimal128(38, 5)
        ),
        "date": pa.array(ints + 19000, pa.int32()).cast(pa.date32()),
        "ts_utc": pa.array(ints * 10**9, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "ts_ntz": pa.array(ints * 10**6, pa.int64()).cast(pa.timestamp("ms")),
        "bool": pa.array(ints % 3 == 0),
    }
    cols = {k: _maybe_null(v, nullable) for k, v in cols.items()}
    lists = [None if nullable and i % 11 == 0 else list(range(i % 4)) for i in range(N)]
    cols["list_i32"] = pa.array(lists, pa.list_(pa.int32()))
    cols["list_str"] = pa.array(
        [
            None if v is None else [None if nullable and j == 1 else f"s{j}" for j in v]
            for v in lists
        ],
        pa.list_(pa.string()),
    )
    cols["struct"] = pa.array(
        [
            None
            if nullable and i % 9 == 0
            else {"a": i, "b": [f"{i}"] * (i % 3), "c": {"d": float(i)}}
            for i in range(N)
        ],
        pa.struct(
            [
                ("a", pa.int64()),
                ("b", pa.list_(pa.string())),
                ("c", pa.struct([("d", pa.float64())])),
            ]
        ),
    )
    cols["map"] = pa.array(
        [
            None
            if nullable and i % 13 == 0
            else [(f"k{j}", None if nullable and j == 2 else j) for j in range(i % 4)]
            for i in range(N)
        ],
        pa.map_(pa.string(), pa.int32()),
    )
    cols["list_struct"] = pa.array(
        [[{"x": j, "y": None if j % 2 else "v"} for j in range(i % 3)] for i in range(N)],
        pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())])),
    )
    cols["list_list"] = pa.array(
        [[[i, j] for j in range(i % 3)] for i in range(N)], pa.list_(pa.list_(pa.int64()))
    )
    return cols


def _table(nullable: bool) -> pa.Table:
    cols = _families(nullable)
    fields = [
        pa.field(k, v.type, nullable=nullable or k.startswith(("list", "struct", "map")))
        for k, v in cols.items()
    ]
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def _equal(a: pa.Table, b: pa.Table, why: str):
    assert a.schema.names == b.schema.names, why
    for name in a.schema.names:
        x, y = a.column(name), b.column(name)
        assert x.type == y.type, f"{why}: {name} type {y.type} != {x.type}"
        if pa.types.is_floating(x.type):  # NaN != NaN in equals: compare by position
            xs, ys = x.to_pylist(), y.to_pylist()
            assert all(
                (p is None and q is None)
                or (p is not None and q is not None and (p == q or (p != p and q != q)))
                for p, q in zip(xs, ys, strict=True)
            ), f"{why}: {name}"
        else:
            assert x.equals(y), f"{why}: column {name} differs"


@pytest.mark.parametrize("nullable", [False, True], ids=["required", "nullable"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize(
    "compression,dictionary", [("none", True), ("zstd", False), ("snappy", True), ("gzip", False)]
)
def test_matrix_both_ways(nullable, version, compression, dictionary):
    table = _table(nullable)
    why = f"nullable={nullable} v{version} {compression} dict={dictionary}"
    ours = io.BytesIO()
    write_table(
        table,
        ours,
        data_page_version=version,
        compression=compression,
        use_dictionary=dictionary,
        data_page_size=2048,
        row_group_size=120,
    )
    _equal(table, pq.read_table(io.BytesIO(ours.getvalue())), f"pyarrow reads ours ({why})")
    _equal(table, read_table(ours.getvalue()), f"we read ours ({why})")
    theirs = io.BytesIO()
    pq.write_table(
        table,
        theirs,
        data_page_version=version,
        compression=compression,
        use_dictionary=dictionary,
        data_page_size=2048,
        row_group_size=120,
    )
    _equal(table, read_table(theirs.getvalue()), f"we read pyarrow's ({why})")


def test_statistics_and_page_index_agree_with_pyarrow():
    table = _table(True)
    ours, theirs = io.BytesIO(), io.BytesIO()
    write_table(table, ours, write_page_index=True, data_page_size=512)
    pq.write_table(table, theirs, write_page_index=True, data_page_size=512)
    mine = pq.ParquetFile(io.BytesIO(ours.getvalue())).metadata.row_group(0)
    peer = pq.ParquetFile(io.BytesIO(theirs.getvalue())).metadata.row_group(0)
    for i in range(mine.num_columns):
        a, b = mine.column(i), peer.column(i)
        if a.physical_type == "INT96" or b.statistics is None or not b.statistics.has_min_max:
            continue
        if a.path_in_schema.startswith(("str", "bin")):  # we truncate long bounds, pyarrow doesn't
            continue
        assert (a.statistics.min, a.statistics.max, a.statistics.null_count) == (
            b.statistics.min,
            b.statistics.max,
            b.statistics.null_count,
        ), a.path_in_schema
    pf = ParquetFile(ours.getvalue())
    for path in pf.column_paths:
        oi = pf.offset_index(0, path)
        assert oi is not None and oi.page_locations[0].first_row_index == 0, path
    ci = pf.column_index(0, "i64")
    assert ci is not None and len(ci.null_pages) == len(pf.offset_index(0, "i64").page_locations)
    st = pf.statistics(0, "i32")
    assert st.trusted and st.min == min(v for v in table.column("i32").to_pylist() if v is not None)


def test_streaming_writer_row_groups_and_batches(tmp_path):
    table = _table(True)
    path = tmp_path / "stream.parquet"
    with ParquetWriter(
        path, table.schema, compression="zstd", key_value_metadata={"owner": "metaindex"}
    ) as w:
        for batch in table.to_batches(max_chunksize=100):
            w.write_batch(batch)
    assert pq.read_table(path).num_rows == N
    pf = ParquetFile(path)
    assert pf.num_row_groups == 3
    assert pf.key_value_metadata["owner"] == "metaindex"
    assert pq.ParquetFile(path).metadata.metadata[b"owner"] == b"metaindex"
    assert read_table(path, columns=["i32", "map"], row_groups=[1]).equals(
        table.select(["i32", "map"]).slice(100, 100)
    )
    batches = list(pf.iter_batches(batch_size=64, columns=["str"]))
    assert sum(len(b) for b in batches) == N and max(len(b) for b in batches) <= 64
    assert read_table(path, columns=[]).num_rows == N
    with pytest.raises(SchemaError):
        read_table(path, columns=["nope"])
    with pytest.raises(SchemaError):
        with ParquetWriter(tmp_path / "x.parquet", table.schema) as w:
            w.write_table(table.select(["i32"]))


def test_pyarrow_filesystem_uri_and_checksums(tmp_path):
    table = pa.table({"x": list(range(1000))})
    uri = (tmp_path / "fs.parquet").as_uri()
    write_table(table, uri, write_page_checksum=True)
    assert read_table(uri, verify_checksums=True).equals(table)
    assert pq.read_table(tmp_path / "fs.parquet").equals(table)


def test_created_by_and_row_group_fields():
    buf = io.BytesIO()
    write_table(pa.table({"x": list(range(10))}), buf, row_group_size=4)
    meta = ParquetFile(buf.getvalue()).footer
    assert meta.created_by.startswith("metaindex version ")
    assert [rg.ordinal for rg in meta.row_groups] == [0, 1, 2]
    for rg in meta.row_groups:
        first = rg.columns[0].meta_data
        start = first.dictionary_page_offset or first.data_page_offset
        assert rg.file_offset == start and rg.total_compressed_size == first.total_compressed_size


def test_uuid_json_enum_bson_logical_types():
    import uuid

    table = pa.table(
        {
            "u": pa.array([uuid.UUID(int=i).bytes for i in range(5)], pa.uuid()),
            "j": pa.array(['{"a": 1}', "[]", "null", '"x"', "{}"], pa.json_()),
        }
    )
    ours = io.BytesIO()
    write_table(table, ours)
    assert pq.read_table(io.BytesIO(ours.getvalue())).equals(table)
    assert read_table(ours.getvalue()).equals(table)
    schema = pq.ParquetFile(io.BytesIO(ours.getvalue())).schema
    assert "(UUID)" in str(schema) and "(JSON)" in str(schema)
    theirs = io.BytesIO()
    pq.write_table(table, theirs)
    assert read_table(theirs.getvalue()).equals(table)
