"""The scheme registry: one table of URI schemes to storage backends, used by the metadata store
and by table listing. A scheme added as a module plus a registry line (``dirstore://``,
tests/store/dirstore.py) serves a table end to end: listed, read, indexed, pruned, refreshed,
with its index in the same scheme next to it."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.listing import list_files, locate_table
from metaindex.errors import UnsupportedFeatureError
from metaindex.store import MetadataStore
from metaindex.store.arrowfs import ArrowStorage
from metaindex.store.localfs import LocalStorage
from metaindex.store.objectstore import OBJECT_SCHEMES, ObjectStorage
from metaindex.store.schemes import (
    FALLBACK,
    SCHEMES,
    backend_for,
    open_storage,
    register_scheme,
    scheme_of,
)
from tests.store import dirstore


def test_every_builtin_scheme_has_one_backend(tmp_path):
    assert {s for s, m in SCHEMES.items() if m == "metaindex.store.objectstore"} == set(
        OBJECT_SCHEMES
    ), "the object store module serves exactly the schemes it accepts"
    for spelling, backend in (
        ("s3a", "metaindex.store.objectstore"),
        ("GCS", "metaindex.store.objectstore"),
        ("file", "metaindex.store.localfs"),
        ("hdfs", FALLBACK),
        ("mock", FALLBACK),
    ):
        assert backend_for(spelling).__name__ == backend, spelling
    assert scheme_of("/data/t") == "file" and scheme_of("S3N://b/t") == "s3"
    assert isinstance(open_storage(str(tmp_path))[0], LocalStorage)
    assert open_storage(f"file://{tmp_path}/x/")[1] == f"{tmp_path}/x"
    storage, root = open_storage("abfss://c@acct.dfs.core.windows.net/p/")
    assert isinstance(storage, ObjectStorage) and root == "abfss://c@acct.dfs.core.windows.net/p"


def test_a_scheme_without_a_backend_is_read_only_through_pyarrow():
    storage, root = open_storage("mock:///stores/x")
    assert isinstance(storage, ArrowStorage) and root == "stores/x"
    table = MetadataStore("mock:///stores/x").table("/data/t")
    with pytest.raises(UnsupportedFeatureError, match="create-if-absent"):
        table.create([])


def test_register_scheme_checks_its_arguments():
    with pytest.raises(ValueError, match="spelled 's3'"):
        register_scheme("s3a", "metaindex.store.objectstore")
    with pytest.raises(ValueError, match="not a URI scheme"):
        register_scheme("1x", "metaindex.store.objectstore")
    with pytest.raises(TypeError):
        register_scheme("x", 42)
    register_scheme("nofn", "metaindex.errors")
    try:
        with pytest.raises(TypeError, match="open_uri"):
            open_storage("nofn://b/x")
    finally:
        del SCHEMES["nofn"]


def _write(base: str, relative: str, values) -> None:
    path = os.path.join(base, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), path)


def test_a_registered_scheme_serves_a_table_and_its_store(tmp_path):
    options = {"base": str(tmp_path / "base")}
    data = tmp_path / "base" / "bucket" / "t"
    for i in range(4):
        _write(str(data), f"k={i % 2}/f{i}.parquet", range(i * 10, i * 10 + 5))
    _write(str(data), "_SUCCESS/ignored.parquet", [1])

    location = locate_table(f"{dirstore.SCHEME}://bucket/t/", storage_options=options)
    assert isinstance(location.storage, dirstore.DirStorage), "listing uses the registry"
    assert location.uri == "dirstore://bucket/t" and location.storage_root == location.uri
    listing = list_files(location)
    assert listing.paths == [
        "k=0/f0.parquet",
        "k=0/f2.parquet",
        "k=1/f1.parquet",
        "k=1/f3.parquet",
    ], "hidden directories are not data"
    assert listing.partition_columns == ("k",)
    assert all(f.etag for f in listing), "the backend's ETags reach the listing"
    with pytest.raises(FileNotFoundError):
        locate_table(f"{dirstore.SCHEME}://bucket/none", storage_options=options)

    mi = MetaIndex(f"{dirstore.SCHEME}://bucket/t", storage_options=options)
    assert mi.store_path.startswith("dirstore://bucket/_metaindex/"), (
        "the default store sits next to the table, in the same scheme"
    )
    mi.index_builder().add_min_max_index("x").build(executor=SerialExecutor())
    kept = mi.prune("x >= 20 AND x < 25").kept
    assert [k.rsplit("/", 1)[-1] for k in kept] == ["f2.parquet"], kept
    assert os.path.isdir(tmp_path / "base" / "bucket" / "_metaindex"), (
        "the store's files are the backend's"
    )
    _write(str(data), "k=0/f4.parquet", [21])
    assert mi.refresh(executor=SerialExecutor()).entries_added == 1
    assert sorted(k.rsplit("/", 1)[-1] for k in mi.prune("x = 21").kept) == [
        "f2.parquet",
        "f4.parquet",
    ]
