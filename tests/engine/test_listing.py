"""Listing a table (hidden files, partitions, mtimes) and diffing it against a snapshot."""

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from metaindex.engine.diff import diff
from metaindex.engine.listing import (
    DataFile,
    Listing,
    is_hidden,
    list_files,
    locate_table,
    parse_partition,
)
from metaindex.engine.schema import infer_partition_types
from metaindex.store import FileEntry


def _touch(path, data=b"x"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def test_hidden_components_follow_spark():
    for name in ("_SUCCESS", "_metadata", ".part.crc", "_delta_log", "x._COPYING_", ".hidden"):
        assert is_hidden(name), f"{name} is not data for Spark, so not for us"
    for name in ("part-0.parquet", "_col=1", "a=b"):
        assert not is_hidden(name), f"{name} is data (a '_' name with '=' is a partition)"


def test_parse_partition_decodes_and_nulls():
    assert parse_partition("a=1/b=x%2Fy/f.parquet") == (("a", "1"), ("b", "x/y"))
    assert parse_partition("d=__HIVE_DEFAULT_PARTITION__/f.parquet") == (("d", None),), (
        "Hive's default partition directory is a NULL value"
    )
    assert parse_partition("plain/dir/f.parquet") == (), "directories without '=' are not keys"
    assert parse_partition("f=1.parquet") == (), "the file name itself is never a partition"


def test_list_files_skips_hidden_and_reports_identity(tmp_path):
    root = tmp_path / "t"
    _touch(str(root / "a.parquet"), b"12345")
    _touch(str(root / "k=1" / "b.parquet"))
    _touch(str(root / "_SUCCESS"))
    _touch(str(root / "_metaindex" / "x" / "p.parquet"))
    _touch(str(root / ".tmp" / "c.parquet"))
    _touch(str(root / "k=2" / ".c.parquet.crc"))
    os.utime(root / "a.parquet", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    listing = list_files(locate_table(str(root)))
    assert listing.paths == ["a.parquet", "k=1/b.parquet"], (
        f"only non-hidden files are data, got {listing.paths}"
    )
    a = listing.files[0]
    assert (a.size, a.mtime) == (5, 1_700_000_000_123), "size in bytes, mtime truncated to ms"
    assert listing.files[1].partition == (("k", "1"),)
    assert listing.partition_columns == ("k",)


def test_locate_table_forms(tmp_path):
    loc = locate_table(str(tmp_path))
    assert loc.uri == "file://" + str(tmp_path) and loc.root == str(tmp_path)
    same = locate_table("file://" + str(tmp_path))
    assert same.uri == loc.uri, "a path and its file:// URI are one table"
    on_fs = locate_table(str(tmp_path), pafs.LocalFileSystem())
    assert on_fs.uri == loc.uri
    with pytest.raises(FileNotFoundError):
        locate_table(str(tmp_path / "missing"))
    with pytest.raises(TypeError):
        locate_table(42)


def test_partition_type_inference():
    files = [
        DataFile(
            f"i={i}/d=2024-01-0{i}/s={s}/x={x}/f",
            1,
            1,
            parse_partition(f"i={i}/d=2024-01-0{i}/s={s}/x={x}/f"),
        )
        for i, s, x in ((1, "a", "1.5"), (2, "b", "2"), (3, "__HIVE_DEFAULT_PARTITION__", "-3e2"))
    ]
    assert infer_partition_types(Listing(files)) == {
        "i": "int64",
        "d": "date32",
        "s": "string",
        "x": "double",
    }


def test_diff_new_changed_deleted():
    entries = {
        "a": FileEntry("a", 10, 100, 1, "p"),
        "b": FileEntry("b", 10, 100, 1, "p"),
        "c": FileEntry("c", 10, 100, 1, "p"),
        "gone": FileEntry("gone", 1, 1, 1, "p"),
    }
    listing = Listing(
        [
            DataFile("a", 10, 100),
            DataFile("b", 11, 100),
            DataFile("c", 10, 101),
            DataFile("new", 5, 5),
        ]
    )
    d = diff(listing, entries)
    assert [f.path for f in d.new] == ["new"]
    assert sorted(f.path for f in d.changed) == ["b", "c"], (
        "a different size or mtime means rewritten in place"
    )
    assert d.deleted == ("gone",) and d.unchanged == 1 and not d.empty
    assert diff(Listing([DataFile("a", 10, 100)]), {"a": entries["a"]}).empty


def test_diff_against_a_file_table_with_unreadable_records():
    files = pa.table(
        {
            "obj_name": ["a", "b", "c", "gone", "z"],
            "obj_size": [10, 10, 10, 1, 3],
            "obj_mtime": [100, 100, 100, 1, 3],
            "part_index": [0, 0, 1, 1, 1],
        }
    )
    listing = Listing(
        [
            DataFile("a", 10, 100),
            DataFile("b", 11, 100),
            DataFile("c", 10, 101),
            DataFile("new", 5, 5),
            DataFile("bad", 7, 7),
            DataFile("fixed", 8, 9),
            DataFile("z", 3, 3),
        ]
    )
    unreadable = {
        "bad": (7, 7, "DecodeError"),
        "fixed": (8, 8, "DecodeError"),
        "lost": (1, 1, "DecodeError"),
    }
    d = diff(listing, files, unreadable)
    assert [f.path for f in d.new] == ["fixed", "new"], (
        "an unreadable file that changed since is new again"
    )
    assert [f.path for f in d.changed] == ["b", "c"]
    assert [f.path for f in d.unreadable] == ["bad"], "unchanged since it failed: not retried"
    assert d.deleted == ("gone",) and d.unchanged == 2
    assert d.cleared == ("fixed", "lost")
    empty = diff(Listing([]), files.slice(0, 0))
    assert empty.empty and empty.unchanged == 0
    assert diff(Listing([]), files).deleted == ("a", "b", "c", "gone", "z")
    with pytest.raises(TypeError, match="lacks"):
        diff(listing, files.drop_columns(["obj_mtime"]))


def test_listing_real_parquet_sizes(tmp_path):
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "f.parquet")
    listing = list_files(locate_table(str(tmp_path)))
    assert listing.files[0].size == os.path.getsize(tmp_path / "f.parquet")
    assert listing.total_bytes == listing.files[0].size


_COLD_PRUNE = """
import json, sys
from metaindex import MetaIndex
from metaindex.expr import col
kept = MetaIndex(sys.argv[1]).prune(col("a") > 2).kept
print(json.dumps({"kept": sorted(p.rsplit("/", 1)[-1] for p in kept),
                  "loaded": sorted(m for m in sys.modules
                                   if m.split(".")[0] in ("pandas", "sqlglot", "pyspark")
                                   or m in ("metaindex.engine.build", "metaindex.engine.collect",
                                            "metaindex.engine.executors",
                                            "metaindex.engine.refresh"))}))
"""


def test_a_cold_prune_imports_only_what_pruning_needs(tmp_path):
    """A prune from a fresh process (the listing included) loads neither the build side
    (collection tasks, executors, refresh) nor pandas, sqlglot or pyspark, and answers."""
    import json
    import subprocess
    import sys

    from metaindex import MetaIndex

    root = tmp_path / "t"
    for i in range(4):
        _touch(str(root / f"k={i}" / "x"), b"")
        os.remove(root / f"k={i}" / "x")
        pq.write_table(pa.table({"a": [i, i]}), str(root / f"k={i}" / f"part-{i}.parquet"))
    MetaIndex(str(root)).index_builder().add_min_max_index("a").build()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _COLD_PRUNE, str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["kept"] == ["part-3.parquet"], "max 0, 1, 2 <= 2: skipped"
    assert got["loaded"] == [], f"a prune should not import {got['loaded']}"


def test_a_data_file_pickles_and_copies_as_itself():
    import copy
    import pickle

    for f in (
        DataFile("a=1/b=%41/x.parquet", 10, 1_700_000_000_000, (("a", "1"), ("b", "A")), '"e1"'),
        DataFile("y.parquet", 0, -5),
    ):
        for back in (pickle.loads(pickle.dumps(f, protocol=p)) for p in (2, 5)):
            assert back == f and type(back) is DataFile and hash(back) == hash(f)
        assert copy.copy(f) == f and copy.deepcopy(f) == f
