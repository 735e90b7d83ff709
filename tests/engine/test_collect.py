"""Per-file collection: footer statistics agree with a scan, scans where footers cannot be
trusted, files without the column, nested fields, unreadable files."""

import datetime
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from metaindex.engine.collect import CollectTask, TaskResult, collect_file, run_task, split_tasks
from metaindex.engine.listing import DataFile
from metaindex.errors import MetaIndexError
from metaindex.formats import ParquetFormat
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.store import IndexDef, MetadataStore


def _task(indexes, types, *, footer=True, store=None, root="", files=()):
    return CollectTask(
        store,
        pafs.LocalFileSystem(),
        root,
        tuple(files),
        tuple(IndexDef.of(ix) for ix in indexes),
        tuple(indexes),
        types,
        footer_statistics=footer,
    )


def _collect(path, indexes, types, footer=True):
    result = TaskResult()
    with ParquetFormat().open(str(path), pafs.LocalFileSystem()) as pf:
        values = collect_file(pf, _task(indexes, types, footer=footer), result)
    return [v.as_py() for v in values], result


TABLE = pa.table(
    {
        "i": pa.array([5, None, -3, 12], pa.int32()),
        "s": pa.array(["b", "ä", None, "a"]),
        "dec": pa.array(
            [Decimal("-1.50"), Decimal("2.25"), None, Decimal("0.00")], pa.decimal128(20, 2)
        ),
        "d": pa.array(
            [
                datetime.date(2020, 1, 2),
                None,
                datetime.date(1999, 12, 31),
                datetime.date(2020, 1, 1),
            ]
        ),
        "ts": pa.array([1, 2, 3, None], pa.timestamp("us", tz="UTC")),
    }
)


@pytest.mark.parametrize("column", ["i", "s", "dec", "d", "ts"])
def test_footer_minmax_equals_scan(tmp_path, column):
    pq.write_table(TABLE, tmp_path / "f.parquet", row_group_size=2)
    ix = MinMaxIndex(column)
    types = {column: TABLE.schema.field(column).type}
    footer, r1 = _collect(tmp_path / "f.parquet", [ix], types, footer=True)
    scanned, r2 = _collect(tmp_path / "f.parquet", [ix], types, footer=False)
    assert r1.footer_minmax == 1, f"pyarrow's statistics on {column} are trusted and exact"
    assert r2.scanned_minmax == 1 and r2.footer_minmax == 0
    assert footer == scanned, f"footer and scan must agree on {column}"


def test_float_without_nan_count_is_scanned(tmp_path):
    pq.write_table(pa.table({"x": [1.0, float("nan"), -0.0]}), tmp_path / "f.parquet")
    (meta,), result = _collect(tmp_path / "f.parquet", [MinMaxIndex("x")], {"x": pa.float64()})
    assert result.scanned_minmax == 1, (
        "pyarrow writes no nan_count: the bounds say nothing about NaN, so the column is scanned"
    )
    assert meta["nan_count"] == 1 and meta["max"] == 1.0


def test_coarser_unit_than_stored_is_scanned(tmp_path):
    # timestamp[s] is stored in milliseconds: the footer bounds are in another unit
    t = pa.table({"t": pa.array([10, 20], pa.timestamp("s"))})
    pq.write_table(t, tmp_path / "f.parquet")
    (meta,), result = _collect(tmp_path / "f.parquet", [MinMaxIndex("t")], {"t": pa.timestamp("s")})
    assert result.scanned_minmax == 1
    assert meta["min"] == datetime.datetime(1970, 1, 1, 0, 0, 10)


def test_missing_column_is_all_null(tmp_path):
    pq.write_table(pa.table({"other": [1, 2, 3]}), tmp_path / "f.parquet")
    ixs = [MinMaxIndex("x"), ValueListIndex("x"), BloomFilterIndex("x")]
    (mm, vl, bf), _ = _collect(tmp_path / "f.parquet", ixs, {"x": pa.int64()})
    assert mm == {"min": None, "max": None, "null_count": 3, "nan_count": 0}, (
        "a file written before the column existed reads it as NULL in every row"
    )
    assert vl == {"values": [], "has_null": True}
    assert bf["bitset"] is None and bf["has_null"] is True


def test_nested_field_with_null_parent(tmp_path):
    s = pa.array([{"b": 1}, None, {"b": 7}], pa.struct([("b", pa.int64())]))
    pq.write_table(pa.table({"a": s}), tmp_path / "f.parquet")
    (mm, vl), _ = _collect(
        tmp_path / "f.parquet",
        [MinMaxIndex("a.b"), ValueListIndex("a.b")],
        {"a.b": pa.int64()},
        footer=False,
    )
    assert (mm["min"], mm["max"], mm["null_count"]) == (1, 7, 1), "a.b is NULL where a is NULL"
    assert sorted(vl["values"]) == [1, 7] and vl["has_null"]


def test_narrower_file_type_conforms_to_table_type(tmp_path):
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int32())}), tmp_path / "f.parquet")
    (mm,), _ = _collect(tmp_path / "f.parquet", [MinMaxIndex("x")], {"x": pa.int64()})
    assert (mm["min"], mm["max"]) == (1, 2)


def test_run_task_writes_part_and_reports_failures(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"x": np.arange(10)}), root / "a.parquet")
    (root / "b.parquet").write_bytes(b"not parquet at all")
    pq.write_table(pa.table({"x": np.arange(5)}), root / "c.parquet")
    files = []
    for name in ("a.parquet", "b.parquet", "c.parquet"):
        st = os.stat(root / name)
        files.append(DataFile(name, st.st_size, st.st_mtime_ns // 1_000_000))
    # c changed after listing: must not be indexed with the listed identity
    files[2] = DataFile("c.parquet", files[2].size, files[2].mtime - 5000)
    store = MetadataStore(str(tmp_path / "store")).table(str(root))
    ix = MinMaxIndex("x")
    result = run_task(_task([ix], {"x": pa.int64()}, store=store, root=str(root), files=files))
    assert result.indexed == ["a.parquet"]
    assert set(result.failed) == {"b.parquet", "c.parquet"}, result.failed
    assert "changed while" in result.failed["c.parquet"]
    assert os.path.exists(result.part), "the task writes its own part file"


def test_split_tasks():
    assert split_tasks([], 4) == []
    chunks = split_tasks(list(range(1000)), 2, min_files=10, max_files=100)
    assert [len(c) for c in chunks] == [100] * 10, "capped at max_files per task"
    chunks = split_tasks(list(range(50)), 4, min_files=32)
    assert [len(c) for c in chunks] == [32, 18]
    assert [x for c in chunks for x in c] == list(range(50)), "order and coverage kept"


def _corrupt_row_group(path, rg: int, column: int) -> None:
    """Overwrite the first page header of one column chunk: reading it raises."""
    chunk = pq.read_metadata(path).row_group(rg).column(column)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    with open(path, "r+b") as fh:
        fh.seek(start)
        fh.write(b"\xff" * 16)


def test_value_list_past_its_limit_reads_no_further_row_group(tmp_path):
    path = tmp_path / "f.parquet"
    table = pa.table(
        {
            "k": pa.array(np.arange(300), pa.int64()),
            "d": pa.array([datetime.date(2020, 1, 1)] * 300),
        }
    )
    pq.write_table(table, path, row_group_size=100, compression="none")
    _corrupt_row_group(path, 2, 0)
    (entry,), result = _collect(path, [ValueListIndex("k", max_values=50)], {"k": pa.int64()})
    assert entry is None, "100 distinct values in the first row group > 50: unknown"
    assert result.scanned_minmax == 0
    with pytest.raises(MetaIndexError):  # the corrupt row group is read by a min/max scan
        _collect(path, [MinMaxIndex("k")], {"k": pa.int64()}, footer=False)
    (entry, _), _ = _collect(
        path,
        [ValueListIndex("k", max_values=50), ValueListIndex("d")],
        {"k": pa.int64(), "d": pa.date32()},
    )
    assert entry is None, "another column's index does not keep k being read"


def test_value_list_on_a_date_column_reads_on_for_the_calendar(tmp_path):
    path = tmp_path / "f.parquet"
    days = np.arange(300, dtype=np.int32) + 18000
    days[250] = -200_000  # before the rebase cutoff, in the last row group
    pq.write_table(pa.table({"d": pa.array(days, pa.date32())}), path, row_group_size=100)
    ancient = {"datetime": False, "int96": False}
    with ParquetFormat().open(str(path), pafs.LocalFileSystem()) as pf:
        (entry,) = collect_file(
            pf,
            _task([ValueListIndex("d", max_values=10)], {"d": pa.date32()}),
            TaskResult(),
            ancient,
        )
    assert not entry.is_valid, "past max_values"
    assert ancient["datetime"], "the old date in a later row group is still seen"


def test_metadata_column_is_what_pyarrow_builds_from_the_scalars():
    """A task's index column (bloom bitsets gathered into one buffer) equals pa.array of the
    files' scalars, unknown files (None), null bitsets and sliced inputs included."""
    from metaindex.engine.collect import _metadata_array

    rng = np.random.default_rng(3)
    cases = []
    for ix, t in (
        (BloomFilterIndex("x", fpp=0.05), pa.int64()),
        (MinMaxIndex("x"), pa.int64()),
        (ValueListIndex("x"), pa.string()),
        (BloomFilterIndex("x"), pa.string()),
    ):
        files = [pa.array(rng.integers(0, 50, n)).cast(t) for n in (0, 3, 40, 2000)]
        files.append(pa.array([None, None], t))
        files.append(pa.array(rng.integers(0, 9, 30)).cast(t).slice(5, 10))
        scalars = [ix.collect(f) for f in files]
        cases.append((scalars + [None] + scalars[:2], ix.metadata_type(t)))
    for scalars, t in cases:
        got = _metadata_array(scalars, t)
        got.validate(full=True)
        assert got.equals(pa.array(scalars, t)), f"{t}: {got.to_pylist()[:3]}"
    assert _metadata_array([], cases[0][1]).equals(pa.array([], cases[0][1]))


def test_parts_written_by_workers_are_committed_without_decoding(tmp_path, monkeypatch):
    """Tasks in worker processes hand their parts' receipts to the committing process: it
    checks each part's bytes and decodes none, and the summaries are those of the rows."""
    from metaindex.api import MetaIndex
    from metaindex.engine.executors import LocalExecutor
    from metaindex.store import commit as commitmod
    from metaindex.store import summarize

    root = tmp_path / "t"
    root.mkdir()
    for k in range(70):  # three tasks of at most 32 files
        pq.write_table(pa.table({"x": np.arange(k, k + 20)}), root / f"f{k:02d}.parquet")

    def no_decoding(*args, **kwargs):
        raise AssertionError("the committer decoded a part a task wrote")

    monkeypatch.setattr(commitmod, "inspect_part", no_decoding)
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("x").add_bloom_filter_index("x").build(
        executor=LocalExecutor(2)
    )
    store = MetadataStore(str(tmp_path / "store")).table(str(root))
    snap = store.snapshot()
    assert snap.object_count == 70 and len(snap.part_paths) == 3
    for i, path in enumerate(snap.part_paths):
        expected = summarize(snap.read_parts([path]), snap.index_defs)
        got = snap.summary_table().slice(i, 1).select(expected.column_names)
        assert got.to_pylist() == expected.to_pylist(), f"summary of {path}"


_FAMILIES = {
    "int": ((pa.int32(), pa.int64()), pa.int64()),
    "float": ((pa.float32(), pa.float64()), pa.float64()),
    "string": ((pa.string(), pa.large_string()), pa.large_string()),
}


def _file_values(data, kind: pa.DataType, n: int) -> pa.Array:
    st = pytest.importorskip("hypothesis.strategies")
    if pa.types.is_integer(kind):
        value = st.integers(-(2**31), 2**31 - 1)
    elif pa.types.is_floating(kind):
        value = st.sampled_from([float("nan"), -0.0, 0.0, 1.5, -2.25, 1e30])
    else:
        value = st.text(alphabet="abä\x00", max_size=3)
    values = data.draw(
        st.one_of(
            st.lists(st.none(), min_size=n, max_size=n),  # an all-null file
            st.lists(st.one_of(st.none(), value), min_size=n, max_size=n),
        )
    )
    return pa.array(values, kind)


def test_a_task_gives_each_file_the_entry_it_gets_alone(tmp_path_factory):
    """A task's part (files of several schemas interleaved: the task's per-schema plans are
    reused and switched) holds, per file, exactly what ``collect_file`` gives that file on
    its own: pyarrow-written files with nulls, NaN, all-null row groups, without statistics
    or without the column."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=15, deadline=None, derandomize=True)
    @hypothesis.given(data=st.data())
    def check(data):
        family = data.draw(st.sampled_from(sorted(_FAMILIES)))
        kinds, table_type = _FAMILIES[family]
        root = tmp_path_factory.mktemp("t")
        files = []
        for k in range(data.draw(st.integers(2, 5))):
            n = data.draw(st.integers(0, 6))
            other = pa.array(range(n), pa.int64())
            if data.draw(st.booleans()) or k == 0:
                kind = data.draw(st.sampled_from(kinds))
                table = pa.table({"x": _file_values(data, kind, n), "o": other})
            else:
                table = pa.table({"o": other})  # a file written before the column
            name = f"f{k}.parquet"
            pq.write_table(
                table,
                root / name,
                row_group_size=data.draw(st.integers(1, 4)),
                write_statistics=data.draw(st.booleans()),
            )
            s = os.stat(root / name)
            files.append(DataFile(name, s.st_size, s.st_mtime_ns // 1_000_000))
        indexes = [MinMaxIndex("x"), ValueListIndex("x"), BloomFilterIndex("x", fpp=0.1)]
        store = MetadataStore(str(root / "_store")).table(str(root))
        task = _task(indexes, {"x": table_type}, store=store, root=str(root), files=files)
        result = run_task(task)
        assert result.indexed == [f.path for f in files] and not result.failed
        part = pq.read_table(result.part)
        for k, f in enumerate(files):
            with ParquetFormat().open(str(root / f.path), pafs.LocalFileSystem()) as pf:
                alone = collect_file(pf, task, TaskResult())
            for ix, value in zip(indexes, alone, strict=True):
                in_part = part.column(IndexDef.of(ix).storage_name)[k]
                assert repr(in_part.as_py()) == repr(value.as_py()), (family, f.path, ix)

    check()
