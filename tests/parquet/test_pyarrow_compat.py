"""metaindex.parquet behaves as pyarrow.parquet does: keywords, metadata objects, sources, errors.

Every check runs against the real peer: pyarrow reads what we write (and we read what it
writes), and our metadata objects are compared with pyarrow's for the same file.
"""

from __future__ import annotations

import datetime
import io
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metaindex.parquet as mp
from metaindex.errors import DecodeError, EncodeError, MetaIndexError


def _write(table, **options) -> bytes:
    buf = io.BytesIO()
    mp.write_table(table, buf, **options)
    return buf.getvalue()


def _sample() -> pa.Table:
    return pa.table(
        {
            "i": pa.array([3, None, -7, 12], pa.int32()),
            "s": pa.array(["b", "a", None, "zz"]),
            "f": pa.array([1.5, -0.0, None, 2.25]),
            "l": pa.array([[1, 2], None, [], [3]], pa.list_(pa.int64())),
        }
    )


# ---------------------------------------------------------------------------- errors


def test_errors_are_what_pyarrow_users_catch():
    data = _write(_sample())
    corrupt = data[:-12] + b"\xff" * 4 + data[-8:]
    for raw in (b"PAR1", data[: len(data) // 2], corrupt):
        with pytest.raises(OSError) as info:  # pyarrow raises OSError / ArrowInvalid here
            mp.read_table(raw)
        assert isinstance(info.value, MetaIndexError), "typed, and also an OSError"
    assert issubclass(DecodeError, OSError) and issubclass(DecodeError, ValueError)
    with pytest.raises(OSError, match="BYTE_STREAM_SPLIT only supports") as info:
        _write(
            pa.table({"b": [True, False]}),
            use_dictionary=False,
            column_encoding={"b": "BYTE_STREAM_SPLIT"},
        )
    assert isinstance(info.value, EncodeError)


# ---------------------------------------------------------------------------- metadata


def test_metadata_objects_agree_with_pyarrows():
    data = _write(_sample(), row_group_size=3, compression="snappy")
    ours, theirs = mp.read_metadata(data), pq.read_metadata(pa.BufferReader(data))
    assert (ours.num_rows, ours.num_columns, ours.num_row_groups, ours.format_version) == (
        theirs.num_rows,
        theirs.num_columns,
        theirs.num_row_groups,
        theirs.format_version,
    )
    assert ours.metadata == theirs.metadata
    for i in range(ours.num_columns):
        a, b = ours.schema.column(i), theirs.schema.column(i)
        assert (
            a.name,
            a.path,
            a.physical_type,
            a.logical_type.type,
            a.converted_type,
            a.max_definition_level,
            a.max_repetition_level,
        ) == (
            b.name,
            b.path,
            b.physical_type,
            b.logical_type.type,
            b.converted_type,
            b.max_definition_level,
            b.max_repetition_level,
        )
    for rg in range(ours.num_row_groups):
        mine, peer = ours.row_group(rg).to_dict(), theirs.row_group(rg).to_dict()
        assert mine.keys() == peer.keys()
        for c_mine, c_peer in zip(mine.pop("columns"), peer.pop("columns"), strict=True):
            assert c_mine == c_peer, f"row group {rg} column {c_mine['path_in_schema']}"
        assert mine == peer
    assert ours.to_dict().keys() == theirs.to_dict().keys()
    with pytest.raises(IndexError):
        ours.row_group(ours.num_row_groups)


def test_statistics_are_python_values_of_the_column_type():
    table = pa.table(
        {
            "t": pa.array([datetime.time(10, 30), datetime.time(15, 0)], pa.time64("us")),
            "d": pa.array([datetime.date(2019, 6, 24), None], pa.date32()),
            "n": pa.array([None, None], pa.int64()),
        }
    )
    meta = mp.ParquetFile(_write(table)).metadata.row_group(0)
    t, d, n = (meta.column(i).statistics for i in range(3))
    assert (t.min, t.max) == (datetime.time(10, 30), datetime.time(15, 0))
    assert (d.min, d.max, d.null_count, d.num_values) == (
        datetime.date(2019, 6, 24),
        datetime.date(2019, 6, 24),
        1,
        1,
    )
    assert not n.has_min_max and n.max is None and n.null_count == 2


def test_metadata_is_built_only_when_asked():
    pf = mp.ParquetFile(_write(_sample()))
    pf.read()
    assert pf._metadata is None, "reading data must not build the pyarrow-style metadata"
    assert pf.metadata.schema is pf.schema
    assert pf.footer is pf.metadata.thrift, "our typed footer stays reachable"


def test_metadata_collector_and_write_metadata_make_a_summary_pyarrow_reads(tmp_path):
    table = _sample()
    collected = []
    for name in ("a.parquet", "b.parquet"):
        mp.write_table(table, tmp_path / name, metadata_collector=collected)
        collected[-1].set_file_path(name)
    mp.write_metadata(table.schema, tmp_path / "_metadata", metadata_collector=collected)
    summary = pq.read_metadata(tmp_path / "_metadata")
    assert summary.num_row_groups == 2 and summary.num_rows == 8
    assert summary.row_group(1).column(0).file_path == "b.parquet"
    with pytest.raises(RuntimeError, match="AppendRowGroups requires equal schemas"):
        collected[0].append_row_groups(mp.read_metadata(_write(pa.table({"x": [1]}))))


# ---------------------------------------------------------------------------- keywords


def test_writer_keywords_have_pyarrows_meanings():
    table = pa.table(
        {
            "u": pa.array([1, 2, 3], pa.uint32()),
            "t": pa.array([1, 2, 3], pa.time64("us")),
            "l": pa.array([[1], [2, 3], None]),
        }
    )
    sorting = (mp.SortingColumn(0, descending=True),)
    data = _write(
        table,
        version="1.0",
        store_schema=False,
        write_time_adjusted_to_utc=True,
        use_compliant_nested_type=False,
        sorting_columns=sorting,
    )
    peer = pq.ParquetFile(pa.BufferReader(data))
    assert peer.metadata.format_version == "1.0"
    assert peer.metadata.metadata is None, "store_schema=False: no ARROW:schema"
    assert peer.schema.column(0).physical_type == "INT64", "version 1.0 stores uint32 as INT64"
    assert "isAdjustedToUTC=true" in str(peer.schema.column(1).logical_type)
    assert peer.schema.column(2).path == "l.list.item"
    assert peer.metadata.row_group(0).sorting_columns[0].to_dict() == sorting[0].to_dict()
    assert mp.read_table(data).equals(pq.read_table(pa.BufferReader(data)))
    with pytest.raises(ValueError, match="Unsupported Parquet format version"):
        _write(table, version="2.2")


def test_max_rows_per_page_splits_pages():
    table = pa.table({"x": list(range(100))})
    pf = mp.ParquetFile(_write(table, max_rows_per_page=7, write_page_index=True))
    assert len(pf.offset_index(0, "x").page_locations) == math.ceil(100 / 7)
    assert pq.read_table(pa.BufferReader(pf._source._view.tobytes())).equals(table)


def test_duration_date64_and_seconds_are_written_and_restored():
    table = pa.table(
        {
            "d": pa.array([1, None, -5], pa.duration("ms")),
            "d64": pa.array([datetime.date(2020, 1, 1), None], pa.date64()).take([0, 1, 0]),
            "ts": pa.array([1, 2, 3], pa.timestamp("s")),
        }
    )
    data = _write(table)
    assert mp.read_table(data).equals(table), "ARROW:schema restores every type"
    peer = pq.read_table(pa.BufferReader(data))
    assert peer["d"].equals(table["d"])
    assert peer["ts"].equals(table["ts"].cast(pa.timestamp("ms"))), "as pyarrow stores seconds"


def test_per_column_compression_level_and_bad_levels():
    table = pa.table({"a": list(range(1000)), "b": list(range(1000))})
    data = _write(table, compression="zstd", compression_level={"a": 1, "b": 19})
    assert pq.read_table(pa.BufferReader(data)).equals(table)
    for codec, level in (("snappy", 4), ("gzip", -1337), ("none", 3)):
        with pytest.raises(ValueError):
            _write(table, compression=codec, compression_level=level)


def test_dictionary_columns_keep_their_dictionary():
    dictionary = pa.array(["zeta", "alpha", "mid", "unused"])
    column = pa.DictionaryArray.from_arrays(pa.array([2, 0, 0, 1, None], pa.int32()), dictionary)
    table = pa.table({"c": column})
    data = _write(table, row_group_size=2)
    assert mp.read_table(data).equals(table)
    assert pq.read_table(pa.BufferReader(data)).equals(table), "pyarrow gets it back too"
    plain = pa.table({"s": ["b", "a", "b", None, "c"]})
    ours = mp.read_table(_write(plain, row_group_size=2), read_dictionary=["s"])
    assert ours["s"].num_chunks == 1 and pa.types.is_dictionary(ours["s"].type)
    assert ours["s"].cast(pa.string()).equals(plain["s"])


def test_sources_pyarrow_accepts(tmp_path):
    table = _sample()
    data = _write(table)
    assert mp.read_table(pa.py_buffer(data)).equals(table)
    assert mp.read_table(pa.BufferReader(data)).equals(table)
    for name in ("p1.parquet", "p2.parquet"):
        (tmp_path / name).write_bytes(data)
    both = pa.concat_tables([table, table])
    assert mp.read_table([tmp_path / "p1.parquet", tmp_path / "p2.parquet"]).equals(both)
    assert mp.read_table(tmp_path).equals(both)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        mp.ParquetFile(tmp_path)


def test_writer_add_key_value_metadata_and_closed_flags(tmp_path):
    path = tmp_path / "kv.parquet"
    with mp.ParquetWriter(path, _sample().schema) as writer:
        writer.write_table(_sample())
        writer.add_key_value_metadata({"k1": "1", "k2": "x"})
        writer.add_key_value_metadata({"k2": "2"})
    meta = pq.read_metadata(path).metadata
    assert meta[b"k1"] == b"1" and meta[b"k2"] == b"2"
    with open(path, "rb") as f:
        with mp.ParquetFile(f) as pf:
            pf.read()
        assert not pf.closed, "a file object passed in stays open"
    assert pf.closed
    with mp.ParquetFile(path) as pf:
        assert not pf.closed
    assert pf.closed


def test_thrift_limits_refuse_large_footers():
    table = pa.table({f"column_{i}": [1] for i in range(50)})
    data = _write(table)
    with pytest.raises(OSError, match="Exceeded size limit"):
        mp.read_table(data, thrift_container_size_limit=50)
    with pytest.raises(DecodeError, match="Exceeded size limit"):
        mp.read_table(data, thrift_string_size_limit=100)
    assert mp.read_table(data, thrift_container_size_limit=51).equals(table)


def test_content_defined_chunking_keeps_pages_across_an_insert():
    import numpy as np

    base = np.random.default_rng(1).integers(0, 1 << 40, 200_000)
    options = {
        "use_dictionary": False,
        "compression": "none",
        "write_page_index": True,
        "use_content_defined_chunking": {"min_chunk_size": 16384, "max_chunk_size": 65536},
    }

    def pages(values):
        data = _write(pa.table({"x": values}), **options)
        assert pq.read_table(pa.BufferReader(data))["x"].to_numpy().tolist() == list(values)
        locations = mp.ParquetFile(data).offset_index(0, "x").page_locations
        sizes = [loc.compressed_page_size for loc in locations]
        assert max(sizes) <= 65536 + 64, "max_chunk_size bounds every page (plus its header)"
        return {data[loc.offset : loc.offset + loc.compressed_page_size] for loc in locations}

    before, after = pages(base), pages(np.insert(base, 1000, [7, 8, 9]))
    assert len(before & after) >= len(before) - 2, "an insert changes only the pages around it"
    with pytest.raises(ValueError, match="Missing options"):
        _write(pa.table({"x": [1]}), use_content_defined_chunking={"min_chunk_size": 1})
