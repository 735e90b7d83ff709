"""The Arrow listing: the vectorised hidden-file and partition rules against their per-file
references (is_hidden, parse_partition), the Arrow-backed Listing against the one made of
DataFile objects, and each storage's walk_table against its walk."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.engine.listing import list_files, locate_table
from metaindex.formats.base import DataFile, Listing
from metaindex.formats.directory import (
    HIVE_NULL,
    hidden_paths,
    is_hidden,
    parse_partition,
    parse_partitions,
)
from metaindex.store.arrowfs import ArrowStorage
from metaindex.store.localfs import LocalStorage
from metaindex.store.storage import WALK_SCHEMA, walk_table_of

# pieces the rules look at, and others: '.', '_', '=', '%' escapes, Hive's NULL, Spark's
# ._COPYING_ suffix, non-ASCII, newlines (a regular expression's '$' must not stop at one)
_PIECES = st.sampled_from(
    [
        ".",
        "_",
        "=",
        "a",
        "b",
        "%2F",
        "%3D",
        "%",
        "%zz",
        "%C3%A9",
        "é",
        "._COPYING_",
        "_COPYING_",
        HIVE_NULL,
        "\n",
        " ",
        "x.parquet",
        "k=v",
        "-",
        "%E2%82",
    ]
)
_COMPONENT = st.lists(_PIECES, min_size=1, max_size=5).map("".join).filter(lambda c: "/" not in c)
_COMPONENTS = st.lists(_COMPONENT, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(_COMPONENTS, min_size=1, max_size=20))
def test_hidden_paths_is_is_hidden_of_any_component(paths):
    relative = ["/".join(p) for p in paths]
    got = hidden_paths(pa.array(relative, pa.string())).to_pylist()
    want = [any(is_hidden(c) for c in p) for p in paths]
    assert got == want, "the vectorised rule must hide exactly the paths Spark's rule hides"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_COMPONENT, min_size=0, max_size=4), min_size=1, max_size=20))
def test_parse_partitions_is_parse_partition_per_directory(directories):
    relative = ["".join(c + "/" for c in d) for d in directories]
    got = parse_partitions(pa.array(relative, pa.string()))
    want = [parse_partition(d + "f.parquet") for d in relative]
    assert got == want, "percent-decoding and Hive's NULL must be exactly the reference's"


def test_hidden_and_partition_examples():
    paths = [
        "_SUCCESS",
        "a/.crc",
        "_k=1/f",
        "x._COPYING_/f",
        "f._COPYING_",
        "k=1/_tmp/f",
        "k=1/f",
        "a._COPYING_x/f",
        "dir/x.parquet",
    ]
    assert hidden_paths(pa.array(paths)).to_pylist() == [
        True,
        True,
        False,
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert parse_partitions(pa.array(["", "a=1/b=x%2Fy/", f"d={HIVE_NULL}/", "=1/p/"])) == [
        (),
        (("a", "1"), ("b", "x/y")),
        (("d", None),),
        (),
    ]


def _files():
    return [
        DataFile("k=2/b.parquet", 7, 20, (("k", "2"),)),
        DataFile("a.parquet", 5, 10, ()),
        DataFile("k=1/j=%41/c.parquet", 9, 30, (("k", "1"), ("j", "A")), "etag-c"),
    ]


def test_listing_from_table_behaves_as_the_listing_of_files():
    files = _files()
    table = pa.table(
        {
            "path": [f.path for f in files],
            "size": [f.size for f in files],
            "mtime": [f.mtime for f in files],
            "etag": [f.etag for f in files],
        }
    )
    arrow = Listing.from_table(table, parse_partitions)
    plain = Listing(files)
    assert arrow.paths == plain.paths == ["a.parquet", "k=1/j=%41/c.parquet", "k=2/b.parquet"]
    assert arrow.files == plain.files, "same DataFile objects, partitions from the paths"
    assert arrow.partition_columns == plain.partition_columns == ("k", "j")
    assert list(arrow.sizes) == list(plain.sizes) and list(arrow.mtimes) == list(plain.mtimes)
    assert arrow.total_bytes == plain.total_bytes == 21 and len(arrow) == len(plain) == 3
    assert arrow.files_at([2, 0]) == [plain.files[2], plain.files[0]]
    assert plain.table.equals(arrow.table)


def test_listing_from_table_sorts_as_python_does():
    names = ["b", "a", "é", "z", "B", "ä/x", "a/b", "a.b", "€"]
    listing = Listing.from_table(
        pa.table({"path": names, "size": [1] * len(names), "mtime": [2] * len(names)})
    )
    assert listing.paths == sorted(names), "UTF-8 byte order is code point order"
    assert listing.files[0].partition == () and listing.files[0].etag is None


def test_empty_listings():
    empty = Listing.from_table(WALK_SCHEMA.empty_table(), parse_partitions)
    assert len(empty) == 0 and empty.files == [] and empty.partition_columns == ()
    assert len(Listing()) == 0 and Listing().table.num_rows == 0


def _tree(root):
    for rel, data in [
        ("a.parquet", b"12345"),
        ("k=1/b.parquet", b"x"),
        ("_SUCCESS", b""),
        (".tmp/c.parquet", b"xx"),
        ("k=2/j=%41/d.parquet", b"yyy"),
        ("k=2/_x/e.parquet", b"z"),
        ("é/f.parquet", b"ff"),
    ]:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    os.makedirs(os.path.join(root, "empty-dir"))
    os.mkfifo(os.path.join(root, "k=1", "fifo"))
    os.symlink(os.path.join(root, "a.parquet"), os.path.join(root, "link.parquet"))


def test_walk_table_is_walk_on_local_and_arrow_storages(tmp_path):
    import pyarrow.fs as pafs

    _tree(str(tmp_path))
    for storage in (
        LocalStorage(str(tmp_path)),
        ArrowStorage(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), ""),
    ):
        where = str(tmp_path) if isinstance(storage, LocalStorage) else ""
        got = storage.walk_table(where)
        want = walk_table_of(storage.walk(where))
        order = np.argsort(want.column("path").to_pylist())
        assert got.sort_by("path").equals(want.take(pa.array(order))), (
            f"{type(storage).__name__}: the Arrow listing must list what walk lists"
        )
        assert "k=1/fifo" not in got.column("path").to_pylist(), "a FIFO is not a file"


def test_list_files_matches_the_per_file_rules(tmp_path):
    _tree(str(tmp_path))
    listing = list_files(locate_table(str(tmp_path)))
    walked = LocalStorage(str(tmp_path)).walk(str(tmp_path))
    want = sorted(s.name for s in walked if not any(is_hidden(c) for c in s.name.split("/")))
    assert listing.paths == want
    assert {f.path: f.partition for f in listing} == {p: parse_partition(p) for p in want}


def test_walk_table_is_walk_on_object_stores(bucket_env):
    from metaindex.store.objectstore import ObjectStorage

    fs = bucket_env.arrow_filesystem()
    bucket = bucket_env.bucket()
    for rel, data in [
        ("t/a.parquet", b"12345"),
        ("t/k=1/b.parquet", b"x"),
        ("t/_SUCCESS", b""),
        ("t/k=2/c.parquet", b"yyy"),
    ]:
        with fs.open_output_stream(f"{bucket}/{rel}") as out:
            out.write(data)
    uri = f"{bucket_env.scheme}://{bucket}/t"
    storage = ObjectStorage(uri)
    got = storage.walk_table(storage.root_path(uri))
    want = walk_table_of(storage.walk(storage.root_path(uri)))
    assert got.sort_by("path").equals(want.sort_by("path")), (
        "same files, sizes, ms mtimes and ETags as the per-object listing"
    )
    assert got.column("etag").null_count == 0, "object stores report ETags"
    assert storage.walk_table(storage.root_path(uri) + "/nothing").num_rows == 0
