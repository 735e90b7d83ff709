"""The format seam: a data format written in a test (Arrow IPC files, one module and one
registration line) is indexed, pruned and refreshed by the engine untouched; unknown names are
typed errors; a store written before formats were recorded opens as a directory of Parquet."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.errors import MetaIndexError, UnsupportedFeatureError, UnsupportedFormatError
from metaindex.formats import (
    DataFormat,
    FileReader,
    FormatSpec,
    ParquetFormat,
    TableFormat,
    data_format,
    register_data_format,
    register_table_format,
    table_format,
)

SERIAL = SerialExecutor()


# ------------------------------------------------------------------------------ the format


class _IpcReader(FileReader):
    """An Arrow IPC file: each record batch is a row group; no statistics in its metadata."""

    def __init__(self, path: str, filesystem):
        self._file = filesystem.open_input_file(path)
        try:
            self._reader = ipc.open_file(self._file)
        except BaseException:
            self._file.close()
            raise
        self.num_row_groups = self._reader.num_record_batches
        self.num_rows = sum(self._reader.get_batch(i).num_rows for i in range(self.num_row_groups))

    @property
    def schema(self) -> pa.Schema:
        return self._reader.schema

    def read_row_groups(self, groups, columns, *, use_threads=False) -> pa.Table:
        schema = pa.schema([self.schema.field(c) for c in columns])
        return pa.Table.from_batches(
            [self._reader.get_batch(i).select(columns) for i in groups], schema
        )

    def close(self) -> None:
        self._file.close()


class ArrowIpcFormat(DataFormat):
    name = "test-arrow-ipc"

    def open(self, path, filesystem, *, decryption_properties=None):
        return _IpcReader(path, filesystem)


register_data_format(ArrowIpcFormat)


# ------------------------------------------------------------------------------ helpers


def _write_ipc(path, table: pa.Table, batch_rows: int = 2) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with ipc.new_file(str(path), table.schema) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)


def _table(xs, cities, ids) -> pa.Table:
    return pa.table(
        {
            "x": pa.array(xs, pa.int64()),
            "city": pa.array(cities, pa.string()),
            "id": pa.array(ids, pa.string()),
        }
    )


FILES = {
    "a.arrow": _table([1, 5, 9, None], ["Paris", "Rome", None, "Paris"], ["i1", "i2", "i3", "i4"]),
    "b.arrow": _table([10, 15, 19], ["Oslo", "Oslo", "Lima"], ["i5", "i6", "i7"]),
    "day=2/c.arrow": _table([20, 25, 29], ["Rome", "Kyiv", "Kyiv"], ["i8", "i9", "i10"]),
}


@pytest.fixture
def ipc_table(tmp_path):
    root = tmp_path / "t"
    for name, t in FILES.items():
        _write_ipc(root / name, t)
    mi = MetaIndex(str(root), store=str(tmp_path / "store"), format="test-arrow-ipc")
    mi.index_builder().add_min_max_index("x").add_value_list_index("city").add_bloom_filter_index(
        "id", fpp=0.001
    ).build(executor=SERIAL)
    return mi, root


def _truth(root, where) -> list:
    """The files holding a row that matches ``where`` (a pyarrow expression), read directly."""
    out = []
    for dirpath, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/")
            with ipc.open_file(os.path.join(dirpath, n)) as r:
                if r.read_all().filter(where).num_rows:
                    out.append(rel)
    return sorted(out)


def _kept(mi, sql) -> list:
    root = mi.table_uri.removeprefix("file://")
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p in mi.prune(sql).kept)


QUERIES = [
    ("x > 12", pc.field("x") > 12),
    ("x = 5", pc.field("x") == 5),
    ("x < 0", pc.field("x") < 0),
    ("city = 'Oslo'", pc.field("city") == "Oslo"),
    ("city IN ('Kyiv', 'Lima')", pc.field("city").isin(["Kyiv", "Lima"])),
    ("id = 'i6'", pc.field("id") == "i6"),
    ("id = 'nope'", pc.field("id") == "nope"),
    ("x > 12 AND city = 'Rome'", (pc.field("x") > 12) & (pc.field("city") == "Rome")),
]


# ------------------------------------------------------------------------------ tests


def test_a_registered_data_format_is_indexed_with_every_kind(ipc_table):
    mi, _ = ipc_table
    d = mi.describe()
    assert d.formats == {
        "table_format": "directory",
        "data_format": "test-arrow-ipc",
        "format_options": {},
    }
    assert d.counts.indexed_files == 3 and d.counts.indexed_rows == 10
    assert {i.kind for i in d.indexes} == {"minmax", "valuelist", "bloom"}
    assert d.partition_columns == {"day": "int64"}
    assert d.freshness.up_to_date is True


@pytest.mark.parametrize("sql,where", QUERIES, ids=[q for q, _ in QUERIES])
def test_pruning_an_ipc_table_keeps_every_matching_file_and_skips(ipc_table, sql, where):
    mi, root = ipc_table
    truth = _truth(root, where)
    kept = _kept(mi, sql)
    assert set(truth) <= set(kept), f"{sql}: a file holding a matching row was skipped"
    assert kept == truth, f"{sql}: these indexes decide every file exactly here: {kept}"


def test_a_changed_ipc_file_is_refreshed_and_pruned_by_its_new_values(ipc_table):
    mi, root = ipc_table
    assert _kept(mi, "x = 100") == []
    _write_ipc(root / "b.arrow", _table([100, 101], ["Quito", "Oslo"], ["z1", "z2"]))
    os.utime(root / "b.arrow", ns=(10**18, 10**18))  # a new mtime, whatever the clock says
    assert _kept(mi, "x = 100") == ["b.arrow"], "changed since indexed: always kept"
    assert mi.describe().freshness.changed_files == 1
    result = mi.refresh(executor=SERIAL)
    assert (result.status, result.entries_added, result.failed) == ("SUCCESS", 1, {})
    for sql, where in [
        ("x = 100", pc.field("x") == 100),
        ("city = 'Quito'", pc.field("city") == "Quito"),
        ("id = 'z2'", pc.field("id") == "z2"),
        ("x = 15", pc.field("x") == 15),
    ]:
        assert _kept(mi, sql) == _truth(root, where), sql
    _write_ipc(root / "day=3/d.arrow", _table([7], ["Lima"], ["n1"]))
    assert mi.refresh(executor=SERIAL).entries_added == 1
    assert _kept(mi, "city = 'Lima'") == ["day=3/d.arrow"]


def test_the_default_pool_runs_tasks_of_a_registered_format(tmp_path):
    """Tasks carry their formats to worker processes (pickled, by class)."""
    root = tmp_path / "t"
    for name, t in FILES.items():
        _write_ipc(root / name, t)
    mi = MetaIndex(str(root), store=str(tmp_path / "store"), format="test-arrow-ipc")
    result = mi.index_builder().add_min_max_index("x").build()
    assert (result.entries_added, result.failed) == (3, {})
    assert _kept(mi, "x > 12") == ["b.arrow", "day=2/c.arrow"]


def test_files_not_of_the_format_are_left_unindexed_and_kept(tmp_path):
    root = tmp_path / "t"
    for name, t in FILES.items():
        _write_ipc(root / name, t)
    (root / "junk.arrow").write_bytes(b"not an arrow file")
    mi = MetaIndex(str(root), store=str(tmp_path / "store"), format="test-arrow-ipc")
    result = mi.index_builder().add_min_max_index("x").build(executor=SERIAL)
    assert list(result.failed) == ["junk.arrow"]
    assert "junk.arrow" in _kept(mi, "x < 0")


def test_parquet_reading_an_ipc_table_fails_per_file_not_silently(tmp_path):
    root = tmp_path / "t"
    for name, t in FILES.items():
        _write_ipc(root / name, t)
    with pytest.raises(MetaIndexError):  # no file is Parquet: no schema to index against
        MetaIndex(str(root), store=str(tmp_path / "store")).index_builder().add_min_max_index(
            "x"
        ).build(executor=SERIAL)


def test_refresh_with_other_formats_than_recorded_is_refused(ipc_table, tmp_path):
    mi, root = ipc_table
    as_parquet = MetaIndex(str(root), store=str(tmp_path / "store"), format="parquet")
    with pytest.raises(MetaIndexError, match="built for"):
        as_parquet.refresh(executor=SERIAL)
    same = MetaIndex(str(root), store=str(tmp_path / "store"))  # no formats named: recorded
    assert same.refresh(executor=SERIAL).status == "NO_CHANGE"


def test_unknown_format_names_and_options_are_typed_errors(tmp_path):
    (tmp_path / "t").mkdir()
    for kwargs in (
        {"format": "avro"},
        {"table_format": "iceberg"},
        {"format_options": {"header": "true"}},
    ):
        with pytest.raises(UnsupportedFormatError) as info:
            MetaIndex(str(tmp_path / "t"), store=str(tmp_path / "s"), **kwargs)
        assert isinstance(info.value, UnsupportedFeatureError)
    with pytest.raises(UnsupportedFormatError, match="unknown data format 'avro'") as info:
        data_format("avro")
    assert info.value.format == "avro"
    with pytest.raises(UnsupportedFormatError, match="unknown table format"):
        table_format("iceberg")
    with pytest.raises(TypeError):
        data_format("parquet", {"k": 1})


def test_a_store_recording_an_unregistered_format_refuses_refresh(ipc_table, tmp_path, monkeypatch):
    import metaindex.formats as formats

    mi, _ = ipc_table
    monkeypatch.delitem(formats._DATA_FORMATS, "test-arrow-ipc")
    with pytest.raises(UnsupportedFormatError, match="test-arrow-ipc"):
        mi.refresh(executor=SERIAL)
    assert _kept(mi, "x > 12") == ["b.arrow", "day=2/c.arrow"], "pruning needs no reader"


def test_registry_rules():
    register_data_format(ArrowIpcFormat)  # the same class again: fine

    class Other(DataFormat):
        name = "test-arrow-ipc"

        def open(self, path, filesystem, *, decryption_properties=None):
            raise AssertionError

    with pytest.raises(ValueError, match="already registered"):
        register_data_format(Other)
    with pytest.raises(TypeError):
        register_table_format(ArrowIpcFormat)
    with pytest.raises(ValueError, match="name"):
        register_table_format(type("Nameless", (TableFormat,), {"list_files": lambda s, loc: 0}))
    assert data_format("parquet") == ParquetFormat()
    import pickle

    assert pickle.loads(pickle.dumps(data_format("test-arrow-ipc"))) == ArrowIpcFormat()


def test_format_records_read_defaults_and_refuse_damage():
    assert FormatSpec.from_record({}) == FormatSpec("directory", "parquet", {})
    spec = FormatSpec("directory", "test-arrow-ipc", {})
    assert FormatSpec.from_record(spec.to_record()) == spec
    from metaindex.errors import DecodeError

    for bad in ({"data_format": 3}, {"format_options": {"a": 1}}, {"table_format": None}):
        with pytest.raises(DecodeError):
            FormatSpec.from_record(bad)


# ------------------------------------------------------------------------------ old stores

PREFORMAT = os.path.join(os.path.dirname(__file__), "data", "preformat")
PREFORMAT_ROOT = "/tmp/metaindex-test-preformat/t"  # the table the store was built for


@pytest.fixture
def preformat(tmp_path):
    """A store written by metaindex before formats were recorded (main at 3e370e9: minmax x,
    value list and bloom on s, over p=1/f1.parquet and p=2/f2.parquet), its table put back
    where it was built with the recorded mtimes."""
    shutil.rmtree(os.path.dirname(PREFORMAT_ROOT), ignore_errors=True)
    shutil.copytree(os.path.join(PREFORMAT, "t"), PREFORMAT_ROOT)
    store = tmp_path / "store"
    shutil.copytree(os.path.join(PREFORMAT, "store"), store)
    mi = MetaIndex(PREFORMAT_ROOT, store=str(store))
    for name, entry in mi.snapshot().files.items():
        os.utime(os.path.join(PREFORMAT_ROOT, name), ns=(entry.mtime * 10**6,) * 2)
    yield mi
    shutil.rmtree(os.path.dirname(PREFORMAT_ROOT), ignore_errors=True)


def test_a_store_written_before_formats_opens_as_a_directory_of_parquet(preformat):
    mi = preformat
    assert not {"table_format", "data_format"} & set(mi.snapshot().table.extra)
    d = mi.describe()
    assert d.formats == {
        "table_format": "directory",
        "data_format": "parquet",
        "format_options": {},
    }
    assert d.freshness.up_to_date is True
    assert [os.path.basename(p) for p in mi.prune("x > 10").kept] == ["f2.parquet"]
    assert [os.path.basename(p) for p in mi.prune("s = 'b'").kept] == ["f1.parquet"]
    import pyarrow.parquet as pq

    os.mkdir(os.path.join(PREFORMAT_ROOT, "p=3"))
    pq.write_table(
        pa.table({"x": pa.array([50], pa.int64()), "s": ["q"]}),
        os.path.join(PREFORMAT_ROOT, "p=3", "f3.parquet"),
    )
    result = mi.refresh(executor=SERIAL)  # read as Parquet, listed as a directory
    assert (result.status, result.entries_added, result.failed) == ("SUCCESS", 1, {})
    assert [os.path.basename(p) for p in mi.prune("x > 40").kept] == ["f3.parquet"]
    # the refresh carries the old identity forward: still no format recorded, still Parquet
    assert "data_format" not in mi.snapshot().table.extra
