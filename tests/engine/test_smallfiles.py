"""The small-file fast path of the collection task (``collect._scan_small`` and its kernel,
``metaindex._native.smallfiles``): the part a task writes through it equals the part written
the general way, byte for byte, over varied pyarrow-written files; files outside its shape
fall back; a damaged file gives the general path's ``failed`` entry."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex._native.distinct import ValueSet
from metaindex._native.smallfiles import flat_chunk
from metaindex.engine import collect
from metaindex.engine.collect import run_task
from metaindex.engine.listing import DataFile
from metaindex.formats import ParquetFormat
from metaindex.formats import parquet as parquet_format
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.parquet.compression import decompress
from metaindex.store import MetadataStore
from tests.engine.test_collect import _task

_TYPES = {
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "string": (pa.string(), st.text(max_size=6)),
    "binary": (pa.binary(), st.binary(max_size=6)),
    "double": (pa.float64(), st.floats(allow_nan=True)),
    "date": (pa.date32(), st.integers(-5000, 50000)),
    "timestamp": (pa.timestamp("us", "UTC"), st.integers(-(2**50), 2**50)),
}


def _listed(root, names):
    out = []
    for name in names:
        s = os.stat(os.path.join(root, name))
        out.append(DataFile(name, s.st_size, s.st_mtime_ns // 1_000_000))
    return out


def _both_ways(monkeypatch, root, indexes, types, files):
    """The part table and result of one task run with the fast paths (the small-file scan
    and the small-file open), then without them."""
    out = []
    for fast in (True, False):
        monkeypatch.setattr(collect, "SMALL_FILES", fast)
        monkeypatch.setattr(parquet_format, "SMALL_OPEN", fast)
        store = MetadataStore(os.path.join(root, f"_store{int(fast)}")).table(root)
        result = run_task(_task(indexes, types, store=store, root=root, files=files))
        part = None if result.part is None else pq.read_table(result.part)
        out.append((part, result))
    return out


def _write(data, path, kind, n):
    t, values = _TYPES[kind]
    nulls = data.draw(st.sampled_from(["none", "some", "all"]))
    drawn = data.draw(st.lists(values, min_size=n, max_size=n))
    if kind in ("string", "binary") and drawn and data.draw(st.booleans()):
        drawn[0] = drawn[0][:0]  # an empty value
    if nulls == "all":
        drawn = [None] * n
    elif nulls == "some":
        drawn = [None if data.draw(st.booleans()) else v for v in drawn]
    storage = {"date": pa.int32(), "timestamp": pa.int64()}.get(kind, t)
    column = pa.array(drawn, storage).cast(t)
    pq.write_table(
        pa.table({"x": column, "o": pa.array(range(n), pa.int64())}),
        path,
        row_group_size=data.draw(st.integers(1, 8)),
        use_dictionary=data.draw(st.booleans()),
        # (gzip: outside the fast path's codecs, the file goes the general way: a task's
        # column then mixes both ways' entries)
        compression=data.draw(st.sampled_from(["snappy", "zstd", "none", "gzip"])),
        data_page_version=data.draw(st.sampled_from(["1.0", "2.0"])),
        write_statistics=data.draw(st.booleans()),
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_fast_path_writes_the_same_part(tmp_path_factory, monkeypatch, data):
    root = str(tmp_path_factory.mktemp("t"))
    kinds = data.draw(st.lists(st.sampled_from(sorted(_TYPES)), min_size=1, max_size=2))
    names = []
    for k in range(data.draw(st.integers(1, 5))):
        name = f"f{k}.parquet"
        _write(data, os.path.join(root, name), kinds[k % len(kinds)], data.draw(st.integers(0, 20)))
        names.append(name)
    if data.draw(st.booleans()):  # a file that fails, anywhere in the task
        with open(os.path.join(root, "bad.parquet"), "wb") as fh:
            fh.write(b"PAR1 not a parquet file PAR1")
        names.insert(data.draw(st.integers(0, len(names))), "bad.parquet")
    table_type = _TYPES[kinds[0]][0]
    indexes = [
        ValueListIndex("x", max_values=data.draw(st.sampled_from([1, 3, 100]))),
        BloomFilterIndex("x", fpp=0.05, hash_scheme=data.draw(st.sampled_from([1, 2]))),
        MinMaxIndex("x"),
        ValueListIndex("o"),
        BloomFilterIndex("o"),
    ]
    types = {"x": table_type, "o": pa.int64()}
    files = _listed(root, names)
    (fast, rf), (slow, rs) = _both_ways(monkeypatch, root, indexes, types, files)
    assert ("bad.parquet" in names) == ("bad.parquet" in rf.failed)
    assert_same_parts(fast, rf, slow, rs)


def assert_same_parts(fast, rf, slow, rs) -> None:
    """The part (and the task's result) of the fast path equal to the general path's."""
    assert rf.failed == rs.failed
    assert (rf.indexed, rf.footer_minmax, rf.scanned_minmax) == (
        rs.indexed,
        rs.footer_minmax,
        rs.scanned_minmax,
    )
    assert [str(s) for s in rf.schemas] == [str(s) for s in rs.schemas]
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert fast.schema.equals(slow.schema, check_metadata=True)
        assert _rows(fast) == _rows(slow)


def _rows(table: pa.Table):
    """The table's rows as a repr (NaN bounds compare unequal as values), or the table when
    a value has no Python form (a damaged footer's bound past year 9999): compared by
    ``Table.__eq__`` then."""
    try:
        return repr(table.to_pylist())
    except OverflowError:
        return table


def _scanned(path, index, table_type):
    """What ``_scan_small`` answers for one file and one index of its column ``x``."""
    task = _task([index], {index.column: table_type})
    with ParquetFormat().open(path, pafs.LocalFileSystem()) as reader:
        plan = collect._Plan(task, reader.schema)
        return collect._scan_small(reader, task, [0], plan)


@pytest.mark.parametrize(
    ("table", "options", "index"),
    [
        (pa.table({"x": [1.5, 2.5]}), {}, ValueListIndex("x")),  # a float column
        (pa.table({"x": pa.array([1, 2], pa.timestamp("us"))}), {}, ValueListIndex("x")),
        (pa.table({"x": pa.array([1, 2], pa.date32())}), {}, BloomFilterIndex("x")),
        (pa.table({"x": pa.array([1, 2], pa.int8())}), {}, ValueListIndex("x")),
        (pa.table({"x": pa.array(["a", "b"], pa.large_string())}), {}, ValueListIndex("x")),
        (pa.table({"x": pa.array(["a", "b"]).dictionary_encode()}), {}, ValueListIndex("x")),
        (pa.table({"x": [{"a": 1}, {"a": 2}]}), {}, ValueListIndex("x.a")),  # nested
        (pa.table({"x": [[1], [2]]}), {}, ValueListIndex("x")),  # repeated
        (pa.table({"x": [1, 2]}), {}, MinMaxIndex("x")),  # a kind it does not take
        (pa.table({"x": [1, 2]}), {"compression": "gzip"}, ValueListIndex("x")),
        (pa.table({"x": [1, 2]}), {"write_page_checksum": True}, BloomFilterIndex("x")),
        (
            pa.table({"x": [1, 2]}),
            {"column_encoding": {"x": "DELTA_BINARY_PACKED"}, "use_dictionary": False},
            ValueListIndex("x"),
        ),
    ],
)
def test_outside_the_shape_falls_back(tmp_path, table, options, index):
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, **options)
    t = table.schema.field("x").type
    t = t.field("a").type if index.column == "x.a" else t
    assert _scanned(path, index, t) is None


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_inside_the_shape_is_taken(tmp_path, version, dictionary):
    path = str(tmp_path / "f.parquet")
    pq.write_table(
        pa.table({"x": ["a", None, "b", "a"]}),
        path,
        data_page_version=version,
        use_dictionary=dictionary,
    )
    found = _scanned(path, ValueListIndex("x"), pa.string())
    entry = collect._entry_scalar(found[0], ValueListIndex("x"), pa.string())
    assert entry.as_py() == {"values": ["a", "b"], "has_null": True}


def test_big_file_falls_back(tmp_path, monkeypatch):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"x": [1, 2]}), path)
    assert _scanned(path, ValueListIndex("x"), pa.int64()) is not None
    monkeypatch.setattr(collect, "SMALL_FILE_BYTES", os.path.getsize(path) - 1)
    assert _scanned(path, ValueListIndex("x"), pa.int64()) is None


def test_damaged_chunk_gives_the_same_failure(tmp_path, monkeypatch):
    root = str(tmp_path)
    good = pa.table({"x": [f"value {k}" for k in range(16)]})
    for name in ("a.parquet", "b.parquet"):
        pq.write_table(good, os.path.join(root, name), use_dictionary=False, compression="none")
    raw = bytearray(open(os.path.join(root, "b.parquet"), "rb").read())
    at = raw.index(b"value 3")
    raw[at - 4 : at] = (1 << 30).to_bytes(4, "little")  # a BYTE_ARRAY length past the page
    open(os.path.join(root, "b.parquet"), "wb").write(bytes(raw))
    files = _listed(root, ["a.parquet", "b.parquet"])
    indexes = [ValueListIndex("x"), BloomFilterIndex("x")]
    (fast, rf), (slow, rs) = _both_ways(monkeypatch, root, indexes, {"x": pa.string()}, files)
    assert rf.indexed == rs.indexed == ["a.parquet"]
    assert rf.failed == rs.failed and set(rf.failed) == {"b.parquet"}
    assert fast.equals(slow)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_damaged_bytes_give_the_same_answer(tmp_path_factory, monkeypatch, data):
    """Bytes of a file's chunks overwritten: both ways index it the same or fail it the same
    (the kernel never raises, and never takes what the general reader refuses)."""
    root = str(tmp_path_factory.mktemp("t"))
    values = [None if k % 5 == 0 else f"v{k % 7}" for k in range(16)]
    path = os.path.join(root, "f.parquet")
    pq.write_table(
        pa.table({"x": values, "o": pa.array(range(16), pa.int64())}),
        path,
        use_dictionary=data.draw(st.booleans()),
        compression=data.draw(st.sampled_from(["snappy", "zstd", "none"])),
        data_page_version=data.draw(st.sampled_from(["1.0", "2.0"])),
    )
    raw = bytearray(open(path, "rb").read())
    footer = int.from_bytes(raw[-8:-4], "little")
    chunks_end = len(raw) - 8 - footer
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(4, chunks_end - 1))
        raw[at] = data.draw(st.integers(0, 255))
    open(path, "wb").write(bytes(raw))
    indexes = [ValueListIndex("x"), BloomFilterIndex("x"), BloomFilterIndex("o")]
    types = {"x": pa.string(), "o": pa.int64()}
    (fast, rf), (slow, rs) = _both_ways(
        monkeypatch, root, indexes, types, _listed(root, ["f.parquet"])
    )
    assert rf.failed == rs.failed and rf.indexed == rs.indexed
    assert (fast is None) == (slow is None)
    if fast is not None:  # (no NaN here; strings may be invalid UTF-8: compared as arrays)
        assert fast.equals(slow, check_metadata=True)


def _chunk_bytes(path):
    """(the bytes of column ``x``'s first chunk, its row group's rows, physical type, codec)."""
    meta = pq.ParquetFile(path).metadata
    column = meta.row_group(0).column(0)
    start = min(o for o in (column.dictionary_page_offset, column.data_page_offset) if o)
    raw = open(path, "rb").read()
    physical = {"INT32": 1, "INT64": 2, "BYTE_ARRAY": 6}[column.physical_type]
    codec = {"UNCOMPRESSED": 0, "SNAPPY": 1, "ZSTD": 6}[column.compression]
    return (
        raw[start : start + column.total_compressed_size],
        meta.row_group(0).num_rows,
        (
            physical,
            codec,
        ),
    )


def _well_formed(found, physical, rows):
    values, ends, count, has_null = found
    assert 0 <= count <= rows and isinstance(has_null, bool)
    if physical == 6:
        offsets = [0, *memoryview(ends).cast("i")]
        assert len(offsets) == count + 1 and offsets[-1] == len(values)
        assert all(a <= b for a, b in zip(offsets, offsets[1:], strict=False))
    else:
        assert ends is None and len(values) == count * (4 if physical == 1 else 8)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_flat_chunk_on_damaged_chunks(tmp_path_factory, data):
    """The kernel on a chunk with bytes overwritten, cut short or given the wrong row count,
    type or codec never raises, and what it answers is well formed; the undamaged chunk gives
    the column's non-null values."""
    root = tmp_path_factory.mktemp("k")
    kind = data.draw(st.sampled_from(["int32", "int64", "string"]))
    t, values = _TYPES[kind]
    drawn = data.draw(st.lists(st.one_of(st.none(), values), min_size=1, max_size=20))
    path = str(root / "f.parquet")
    pq.write_table(
        pa.table({"x": pa.array(drawn, t)}),
        path,
        use_dictionary=data.draw(st.booleans()),
        compression=data.draw(st.sampled_from(["snappy", "zstd", "none"])),
        data_page_version=data.draw(st.sampled_from(["1.0", "2.0"])),
    )
    chunk, rows, (physical, codec) = _chunk_bytes(path)
    found = flat_chunk(chunk, rows, physical, 1, codec, decompress)
    _well_formed(found, physical, rows)
    present = [v for v in drawn if v is not None]
    assert found[2] == len(present) and found[3] == (len(present) < len(drawn))
    if physical == 6:
        ends = [0, *memoryview(found[1]).cast("i")]
        got = [found[0][a:b].decode() for a, b in zip(ends, ends[1:], strict=False)]
    else:
        got = list(memoryview(found[0]).cast("i" if physical == 1 else "q"))
    assert got == present
    damaged = bytearray(chunk)
    for _ in range(data.draw(st.integers(0, 4))):
        if damaged:
            damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    damaged = damaged[: data.draw(st.integers(0, len(damaged)))]
    rows = data.draw(st.sampled_from([rows, rows + 1, max(rows - 1, 0), 0, -1, 1 << 20]))
    physical = data.draw(st.sampled_from([physical, 1, 2, 6, 3]))
    codec = data.draw(st.sampled_from([codec, 0, 1, 6]))
    max_def = data.draw(st.sampled_from([1, 0, 2]))
    found = flat_chunk(bytes(damaged), rows, physical, max_def, codec, decompress)
    if found is not None:
        _well_formed(found, physical, max(rows, 0))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.binary(max_size=12), max_size=30), limit=st.integers(0, 40))
def test_value_set_packed_is_values_with_int32_ends(values, limit):
    """``ValueSet.packed`` (the small path's value lists) holds what ``values`` holds."""
    ends = np.cumsum([0, *map(len, values)]).astype(np.int32)
    s = ValueSet(0, 0, limit)
    s.add_binary(None, ends.tobytes(), 4, b"".join(values), 0, len(values))
    data, offsets = s.values()
    packed, packed_ends = s.packed()
    assert packed == data and np.frombuffer(packed_ends, "<i4").tolist() == offsets[1:].tolist()
    fixed = ValueSet(8, 0, limit)
    fixed.add_fixed(None, np.arange(len(values), dtype=np.int64) % 7, 0, len(values))
    assert fixed.packed() == fixed.values()


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_kernel_takes_no_header_the_general_reader_refuses(tmp_path, version):
    """Every byte of a chunk's page headers and statistics set to 1 in turn (a repeated
    field id, a field of another type, ...): where the general reader refuses the chunk, the
    kernel does not take it either (the fast path then sends the file to the general read,
    which records the same failure)."""
    values = [None if k % 5 == 0 else f"v{k % 7}" for k in range(16)]
    path = str(tmp_path / "f.parquet")
    pq.write_table(
        pa.table({"x": values, "o": pa.array(range(16), pa.int64())}),
        path,
        use_dictionary=True,
        compression="none",
        data_page_version=version,
        write_statistics=True,
    )
    raw = open(path, "rb").read()
    meta = pq.ParquetFile(path).metadata.row_group(0).column(1)
    start = meta.dictionary_page_offset or meta.data_page_offset
    refused = 0
    for at in range(start, start + meta.total_compressed_size):
        if raw[at] == 1:
            continue
        damaged = bytearray(raw)
        damaged[at] = 1
        chunk = bytes(damaged[start : start + meta.total_compressed_size])
        taken = flat_chunk(chunk, 16, 2, 1, 0, decompress) is not None
        bad = str(tmp_path / "bad.parquet")
        open(bad, "wb").write(bytes(damaged))
        try:
            ParquetFormat().open(bad, pafs.LocalFileSystem()).file.read(["o"])
        except Exception:
            refused += 1
            assert not taken, at
    assert refused  # (the sweep reaches headers the general reader refuses)
