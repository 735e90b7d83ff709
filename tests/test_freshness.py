"""Rewrites that keep a file's size and mtime (``cp -p``, ``rsync -a``, ``touch -r``): the
footer fingerprint recorded at build lets ``refresh(verify=True)`` / ``refresh --verify`` find
and re-index them (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.store import OBJ_ETAG, OBJ_FOOTER_LEN

SERIAL = SerialExecutor()


def _write(path, values):
    pq.write_table(
        pa.table({"x": pa.array(values, pa.int64())}),
        path,
        compression="none",
        use_dictionary=False,
    )


@pytest.fixture
def rewritten(tmp_path):
    """A table of 3 files, indexed; then b.parquet rewritten with other values, same size
    and the old mtime restored (as ``touch -r`` would)."""
    root = tmp_path / "t"
    root.mkdir()
    for name, base in (("a", 0), ("b", 100), ("c", 200)):
        _write(root / f"{name}.parquet", list(range(base, base + 10)))
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("x").build(executor=SERIAL)
    target = root / "b.parquet"
    before = os.stat(target)
    _write(target, list(range(500, 510)))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns), (
        "precondition: the rewrite keeps size and mtime"
    )
    return mi, str(root), str(tmp_path / "store")


def _kept(mi, predicate):
    return sorted(p.rsplit("/", 1)[1] for p in mi.prune(predicate).kept)


def test_verify_finds_same_size_same_mtime_rewrites(rewritten):
    mi, _, _ = rewritten
    assert _kept(mi, "x = 505") == [], "the stale entry is trusted until verified"
    assert mi.refresh(executor=SERIAL).status == "NO_CHANGE", (
        "size + mtime alone cannot see the rewrite"
    )
    result = mi.refresh(executor=SERIAL, verify=True)
    assert (result.status, result.entries_added, result.entries_removed) == ("SUCCESS", 1, 1)
    assert _kept(mi, "x = 505") == ["b.parquet"]
    assert _kept(mi, "x = 105") == []
    assert mi.refresh(executor=SERIAL, verify=True).status == "NO_CHANGE", (
        "nothing left to find once re-indexed"
    )


def test_entries_carry_fingerprint_and_nullable_etag(rewritten):
    mi, _, _ = rewritten
    table = mi.snapshot().metadata_table()
    assert table.column(OBJ_FOOTER_LEN).null_count == 0
    assert table.column(OBJ_ETAG).null_count == table.num_rows, "local files have no ETag"
    assert all(e.etag is None for e in mi.snapshot().files.values())


def test_verify_drops_the_entry_of_a_rewrite_it_cannot_index(rewritten):
    mi, root, _ = rewritten
    target = os.path.join(root, "c.parquet")
    before = os.stat(target)
    with open(target, "r+b") as fh:  # same size, no longer a Parquet file
        fh.write(b"JUNK")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = mi.refresh(executor=SERIAL, verify=True)
    assert "c.parquet" in result.failed
    assert "c.parquet" not in mi.snapshot().files, "a stale entry must not stay trusted"
    assert "c.parquet" in _kept(mi, "x = 9999")


def test_cli_refresh_verify(rewritten):
    _, root, store = rewritten
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def refresh(*extra):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "metaindex",
                "refresh",
                root,
                "--store",
                store,
                "--workers",
                "1",
                "--json",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    assert refresh()["status"] == "NO_CHANGE"
    doc = refresh("--verify")
    assert doc["status"] == "SUCCESS" and doc["files_indexed"] == 1, doc


def test_verify_compares_etags_where_listing_and_entry_have_them(rewritten, monkeypatch):
    """An object store lists an ETag per object: where the entry recorded one too, verify
    compares ETags instead of reading footers (here a local table listed with ETags)."""
    import dataclasses

    from metaindex.engine.listing import Listing, list_files
    from metaindex.formats import DirectoryFormat

    mi, root, store = rewritten
    etags = {"a.parquet": '"e-a"', "b.parquet": '"e-b"', "c.parquet": '"e-c"'}

    def listed(self, location):
        return Listing([dataclasses.replace(f, etag=etags[f.path]) for f in list_files(location)])

    monkeypatch.setattr(DirectoryFormat, "list_files", listed)
    fresh = MetaIndex(root, store=store + "-etag")
    fresh.index_builder().add_min_max_index("x").build(executor=SERIAL)
    assert {n: e.etag for n, e in fresh.snapshot().files.items()} == etags
    footers = []
    monkeypatch.setattr(
        "metaindex.formats.parquet.footer_fingerprint", lambda *a, **k: footers.append(a) or (0, 0)
    )
    assert fresh.refresh(executor=SERIAL, verify=True).status == "NO_CHANGE"
    assert footers == [], "equal ETags: no footer read"
    etags["a.parquet"] = '"e-a2"'
    result = fresh.refresh(executor=SERIAL, verify=True)
    assert (result.status, result.entries_added) == ("SUCCESS", 1)
    assert fresh.snapshot().files["a.parquet"].etag == '"e-a2"'
