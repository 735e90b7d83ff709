"""A store written by format version 5 (``data/v5_store``, made by metaindex before format 6:
two files, minmax on a DATE ``d`` and a long ``k``) is read as it is, its files without
calendar record or fingerprint, and takes version-6 commits on top (specs/metadata-store.md,
"Upgrading from version 5")."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.engine.calendar import must_keep
from metaindex.engine.prune import Candidates, Pruner, SessionSettings, prune_context
from metaindex.store import FILE_INFO_COLUMNS, FORMAT_VERSION, MetadataStore

URI = "file:///nonexistent/v5table"
DATA = os.path.join(os.path.dirname(__file__), "data", "v5_store")


def _store(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(DATA, root)
    return MetadataStore(str(root))


def _decide(store, table, predicate):
    snap = table.snapshot()
    ctx = prune_context(snap)
    names = pa.array(["a.parquet", "b.parquet"])
    files = Candidates(names, names, np.array([100, 200]), np.array([1, 2]))
    result = Pruner(ctx).decide(predicate, files, session=SessionSettings())
    return sorted(result.kept)


def test_v5_store_reads_with_unknown_per_file_facts(tmp_path):
    store = _store(tmp_path)
    table = store.table(URI)
    log = os.path.join(table.path, "_log", "00000000000000000001.json")
    assert json.load(open(log))["format_version"] == 5
    snap = table.snapshot()
    meta = snap.metadata_table()
    assert meta.num_rows == 2
    for name in FILE_INFO_COLUMNS:
        assert meta.column(name).null_count == 2, name
    assert must_keep(meta, SessionSettings()).tolist() == [True, True]
    assert all(e.etag is None for e in snap.files.values())


def test_v5_entries_skip_on_other_columns_only(tmp_path):
    store = _store(tmp_path)
    table = store.table(URI)
    # no calendar record: a DATE conjunct cannot skip either file...
    assert _decide(store, table, "d = date'2020-01-01'") == ["a.parquet", "b.parquet"]
    # ...every other conjunct still can
    assert _decide(store, table, "k = 2") == ["b.parquet"]
    assert _decide(store, table, "d = date'2020-01-01' AND k = 1") == ["a.parquet"]


def test_v6_commit_on_a_v5_store(tmp_path):
    store = _store(tmp_path)
    table = store.table(URI)
    snap = table.snapshot()
    defs = snap.index_defs
    old = snap.metadata_table()
    row = old.filter(pc.equal(old.column("obj_name"), "b.parquet"))
    fresh = pa.table(
        {
            "obj_name": ["c.parquet"],
            "obj_size": [300],
            "obj_mtime": [3],
            "obj_rows": [1],
            "obj_etag": ['"etag-1"'],
            "obj_datetime_rebase": ["SESSION"],
            "obj_ancient_datetime": [False],
            **{d.storage_name: row.column(d.storage_name) for d in defs},
        }
    )
    version = table.commit(
        snap.version, add_parts=[table.write_part(fresh, defs)], operation="refresh"
    )
    log = os.path.join(table.path, "_log", f"{version:020d}.json")
    assert json.load(open(log))["format_version"] == FORMAT_VERSION >= 7
    after = table.snapshot()
    assert after.files["c.parquet"].etag == '"etag-1"'
    meta = {r["obj_name"]: r for r in after.metadata_table().to_pylist()}
    assert meta["c.parquet"]["obj_datetime_rebase"] == "SESSION"
    assert meta["a.parquet"]["obj_datetime_rebase"] is None
    reopened = MetadataStore(str(tmp_path / "store")).table(URI).snapshot()
    assert reopened.files["c.parquet"].etag == '"etag-1"', "the etag survives a reopen"
