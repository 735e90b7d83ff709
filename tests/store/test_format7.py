"""Store format 7: objects leave the log; snapshots cost O(parts + changes); the Snapshot API
(object_count, part_paths, summary_table, read_parts(columns=), file_table); bounded,
clustered parts; format-5 stores upgraded in place; conflicts without object lists."""

from __future__ import annotations

import json
import os
import random
import shutil
from itertools import pairwise

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from metaindex.crypto import InMemoryKms
from metaindex.errors import CommitConflictError, IntegrityError, KeyAccessError
from metaindex.store import (
    CHECKPOINT_INTERVAL,
    FORMAT_VERSION,
    KEYS_UNAVAILABLE_KEY,
    EncryptionLabels,
    IndexDef,
    KeyAccess,
    MetadataStore,
)
from metaindex.store import compaction as compactionmod
from metaindex.store import log as logmod
from metaindex.store import snapshot as snapmod
from metaindex.store import table as tablemod
from metaindex.store.layout import checkpoint_name, entry_name
from tests.store.helpers import DEFS, MINMAX, check_rows, part_table

V5_STORE = os.path.join(os.path.dirname(__file__), "data", "v5_store")
V5_URI = "file:///nonexistent/v5table"


def _fresh_caches():
    logmod._state_cache.clear()
    snapmod._tables.clear()
    snapmod._parts.clear()
    snapmod._projections.clear()
    snapmod._summaries.clear()
    snapmod._parts_bytes = 0


@pytest.fixture
def table(backend, tmp_path):
    t = backend.store().table(tmp_path / "data")
    t.create(DEFS)
    return t


def add(t, base, objects, **kw):
    return t.commit(base, add_parts=[t.write_part(part_table(objects), DEFS)], **kw)


def _entry(backend, t, version) -> dict:
    return json.loads(backend.read(f"{t.path}/{entry_name(version)}"))


def test_entries_hold_no_object_lists(table, backend):
    many = [(f"f{i:05d}", 100 + i, 7, 3) for i in range(3000)]
    v1 = add(table, 0, many, operation="build")
    record = _entry(backend, table, v1)
    assert record["format_version"] == FORMAT_VERSION >= 7
    part = record["added_parts"][0]
    assert set(part) == {"path", "rows", "bytes", "sha256", "live_bytes", "summary"}, (
        "a format-7 part record lists no objects: the part is the list"
    )
    assert part["rows"] == 3000 and part["live_bytes"] == sum(100 + i for i in range(3000))
    assert len(backend.read(f"{table.path}/{entry_name(v1)}")) < 8000, (
        "the entry's size does not grow with its objects"
    )
    v2 = add(table, v1, [("f00001", 1, 8, 1), ("new", 5, 8, 1)], removed_objects=["f00002"])
    record = _entry(backend, table, v2)
    assert record["dead_objects"] == [
        {"part": part["path"], "names": ["f00001", "f00002"], "bytes": 101 + 102}
    ]
    assert record["superseded_objects"] == ["f00001"]
    assert record["removed_objects"] == ["f00002"]
    _fresh_caches()
    snap = table.snapshot()
    assert snap.object_count == 3000  # + new - f00002 (f00001 replaced)
    assert snap._state.files == {} and snap._state.members == {}, (
        "a format-7 state holds no per-object entries"
    )
    assert snap._state.dead == {part["path"]: {"f00001", "f00002"}, snap.part_paths[1]: set()}
    check_rows(snap)


def test_checkpoint_of_format_7_parts(table, backend):
    v = add(table, 0, [(f"o{i}", i, 1, 1) for i in range(50)])
    for i in range(1, CHECKPOINT_INTERVAL):
        v = add(table, v, [(f"o{i}", 100 + i, 2, 1)], removed_objects=[f"o{i + 20}"])
    assert v == CHECKPOINT_INTERVAL
    record = json.loads(backend.read(f"{table.path}/{checkpoint_name(v)}"))
    assert record["format_version"] == FORMAT_VERSION
    first = record["parts"][0]
    assert "objects" not in first and first["rows"] == 50
    assert len(first["dead"]["names"]) == 18 and first["dead"]["bytes"] == sum(range(1, 10)) + sum(
        range(21, 30)
    )
    before = table.snapshot()
    _fresh_caches()
    after = table.snapshot()
    assert after.object_count == before.object_count == 41
    assert after.summary_table().equals(before.summary_table())
    assert dict(after.files) == dict(before.files)
    check_rows(after)


def test_snapshot_api(table):
    v1 = add(table, 0, [("a", 10, 1, 5), ("b", 20, 1, 6), ("c", 30, 1, 7)])
    v2 = add(table, v1, [("b", 21, 2, 6), ("d", 40, 2, 8)], removed_objects=["c"])
    snap = table.snapshot(v2)
    p1, p2 = snap.part_paths
    assert snap.object_count == 3
    summaries = snap.summary_table()
    assert summaries.column_names[:3] == ["part", "objects", "bytes"]
    assert summaries.column_names[3:7] == [
        "obj_datetime_rebase",
        "obj_int96_rebase",
        "obj_ancient_datetime",
        "obj_ancient_int96",
    ]
    assert summaries.column_names[7:] == [d.storage_name for d in DEFS]
    assert summaries.column("part").to_pylist() == [p1, p2]
    assert summaries.column("objects").to_pylist() == [1, 2]
    assert summaries.column("bytes").to_pylist() == [10, 61]
    meta = snap.metadata_table()
    for d in DEFS:
        col = d.storage_name
        assert summaries.schema.field(col).type == meta.schema.field(col).type
    mm = summaries.column(MINMAX.storage_name).to_pylist()
    for path, got in zip(snap.part_paths, mm, strict=True):
        rows = snap.read_parts([path], columns=[MINMAX.storage_name]).column(MINMAX.storage_name)
        if got is not None:  # superseded rows still count: a summary may keep more
            assert got["min"] <= min(r["min"] for r in rows.to_pylist())
    files = snap.file_table()
    assert files.column_names == ["obj_name", "obj_size", "obj_mtime", "part_index"]
    assert sorted(
        zip(*(files.column(c).to_pylist() for c in ("obj_name", "part_index")), strict=True)
    ) == [("a", 0), ("b", 1), ("d", 1)]
    assert files.schema.field("part_index").type == pa.int32()
    assert snap.file_table() is files, "cached per snapshot"
    some = snap.read_parts([p2], columns=["obj_rows", MINMAX.storage_name, "obj_etag"])
    assert some.column_names == ["obj_name", "obj_rows", MINMAX.storage_name, "obj_etag"]
    assert some.column("obj_rows").to_pylist() == [6, 8]
    with pytest.raises(ValueError, match="unknown metadata column"):
        snap.read_parts([p2], columns=["nope"])
    assert {n: (e.size, e.part) for n, e in snap.files.items()} == {
        "a": (10, p1),
        "b": (21, p2),
        "d": (40, p2),
    }
    assert snap.live_counts(p1) == (1, 10)


def test_snapshot_and_summaries_read_no_part(table, backend):
    v = add(table, 0, [(f"o{i}", i, 1, 1) for i in range(20)])
    v = add(table, v, [(f"p{i}", i, 1, 1) for i in range(20)])
    for path in backend.files(f"{table.path}/parts"):
        backend.delete(path)
    _fresh_caches()
    snap = table.snapshot()
    assert snap.object_count == 40 and len(snap.part_paths) == 2
    assert snap.summary_table().num_rows == 2, "summaries come from the log"
    with pytest.raises(IntegrityError, match="missing"):
        snap.file_table()


def test_parts_are_bounded(table, monkeypatch):
    monkeypatch.setattr(tablemod, "MAX_PART_OBJECTS", 7)
    objs = [(f"o{i:02d}", i, 1, 1) for i in range(20)]
    with pytest.raises(ValueError, match="at most 7 objects"):
        table.write_part(part_table(objs), DEFS)
    paths = table.write_parts(part_table(objs), DEFS)
    assert len(paths) == 3
    v = table.commit(0, add_parts=paths)
    snap = table.snapshot(v)
    assert [snap.parts[p].rows for p in snap.part_paths] == [7, 7, 6]
    check_rows(snap)


def test_compaction_clusters_by_the_leading_minmax(table, monkeypatch):
    """A shuffled store: every part spans the whole range. Compacted, the parts' summary
    ranges meet only at their boundaries (each file's range is [m, m + 5])."""
    monkeypatch.setattr(tablemod, "MAX_PART_OBJECTS", 40)
    monkeypatch.setattr(compactionmod, "MAX_PART_OBJECTS", 40)
    rng = random.Random(5)
    names = [f"f{i:03d}" for i in range(200)]
    rng.shuffle(names)
    v = 0
    for k in range(0, 200, 20):
        v = add(table, v, [(n, 1, 1, 1) for n in names[k : k + 20]])

    def overlap(snap):
        ranges = sorted(
            (r["min"], r["max"])
            for r in snap.summary_table().column(MINMAX.storage_name).to_pylist()
        )
        return sum(max(0, a[1] - b[0]) for a, b in pairwise(ranges))

    before = table.snapshot()
    assert overlap(before) > 5000, "the shuffled parts overlap"
    table.compact()
    after = table.snapshot()
    assert [after.parts[p].rows for p in after.part_paths] == [40] * 5
    assert overlap(after) <= 5 * 4, "compacted parts cover disjoint ranges of the leading min"
    assert {n: e.size for n, e in after.files.items()} == {
        n: e.size for n, e in before.files.items()
    }
    check_rows(after)
    assert table.compact() == after.version, "full parts are left alone"


def test_v5_store_upgrades_in_place(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(V5_STORE, root)
    _fresh_caches()
    t = MetadataStore(str(root)).table(V5_URI)
    snap = t.snapshot()
    defs = snap.index_defs
    v5_part = snap.part_paths[0]
    assert t.history()[-1].format_version == 5
    meta = snap.metadata_table()
    summaries = snap.summary_table()
    k = next(d for d in defs if d.cols == ("k",))
    assert (
        summaries.column(k.storage_name).to_pylist()[0]["min"]
        == pc.min(pc.struct_field(meta.column(k.storage_name), "min")).as_py()
    ), "a format-5 part's summary is computed from the part"
    row = meta.filter(pc.equal(meta.column("obj_name"), "b.parquet"))
    fresh = pa.table(
        {
            "obj_name": ["b.parquet", "c.parquet"],
            "obj_size": [201, 300],
            "obj_mtime": [3, 3],
            "obj_rows": [1, 1],
            **{
                d.storage_name: pa.concat_arrays([row.column(d.storage_name).chunk(0)] * 2)
                for d in defs
            },
        }
    )
    v = t.commit(snap.version, add_parts=[t.write_part(fresh, defs)], operation="refresh")
    entry = t.history()[-1]
    assert entry.format_version == FORMAT_VERSION
    assert [(d.part, d.names, d.bytes) for d in entry.dead_objects] == [
        (v5_part, ("b.parquet",), 200)
    ], "b dies in the (listed) format-5 part"
    mixed = t.snapshot()
    assert mixed.object_count == 3 and mixed.summary_table().num_rows == 2
    assert {n: e.size for n, e in mixed.files.items()} == {
        "a.parquet": 100,
        "b.parquet": 201,
        "c.parquet": 300,
    }
    # a checkpoint of a mixed state keeps the listed part's objects, and reads back
    logmod.write_checkpoint(t._storage, t.path, logmod.load_state(t._storage, t.path), "tmp")
    _fresh_caches()
    again = MetadataStore(str(root)).table(V5_URI).snapshot()
    assert dict(again.files) == dict(mixed.files)
    assert again.metadata_table().equals(mixed.metadata_table())
    # compaction rewrites the format-5 part as format 7
    t.compact()
    done = t.snapshot()
    assert done._state.members == {} and all(not p.listed for p in done.parts.values())
    assert {n: e.size for n, e in done.files.items()} == {n: e.size for n, e in mixed.files.items()}
    assert v < done.version


def test_deletes_in_one_part_by_two_writers_both_commit(table):
    v1 = add(table, 0, [("a", 1, 1, 1), ("b", 1, 1, 1), ("c", 1, 1, 1)])
    v2 = table.commit(v1, removed_objects=["a"])
    v3 = table.commit(v1, removed_objects=["b"])  # rebased: another object of the same part
    assert v3 == v2 + 1
    assert set(table.snapshot().files) == {"c"}


def test_a_new_object_added_twice_concurrently_conflicts(table):
    v1 = add(table, 0, [("a", 1, 1, 1)])
    add(table, v1, [("new", 1, 2, 1)])
    with pytest.raises(CommitConflictError, match="new"):
        add(table, v1, [("new", 1, 3, 1)])  # the entry lists no objects: read from its part


def test_removing_a_part_conflicts_with_deaths_in_it(table):
    v1 = add(table, 0, [("a", 1, 1, 1), ("b", 1, 1, 1)])
    part = table.snapshot().part_paths[0]
    table.commit(v1, removed_objects=["a"])
    with pytest.raises(CommitConflictError):
        table.commit(v1, remove_parts=[part])


FOOTER_ONLY_KEYS = {"footer": b"\x01" * 16}
ALL_KEYS = {**FOOTER_ONLY_KEYS, "col": b"\x02" * 16}
REQUESTED: list = []


class _RecordingKms(InMemoryKms):
    def unwrap_key(self, wrapped_key, master_key_identifier):
        REQUESTED.append(master_key_identifier)
        return super().unwrap_key(wrapped_key, master_key_identifier)


def _all_keys(config):
    return InMemoryKms(ALL_KEYS)


def _footer_only(config):
    return _RecordingKms(FOOTER_ONLY_KEYS)


def test_encrypted_index_summaries_and_projected_decryption(backend, tmp_path):
    secret = IndexDef("minmax", ["temp"], key_metadata="col")
    plain = IndexDef("minmax", ["price"])
    defs = (secret, plain)
    labels = EncryptionLabels("footer")
    t = backend.store(key_access=KeyAccess(_all_keys)).table(tmp_path / "data")
    t.create(defs, encryption=labels)
    mm = pa.struct(
        [
            ("min", pa.int64()),
            ("max", pa.int64()),
            ("null_count", pa.int64()),
            ("nan_count", pa.int64()),
        ]
    )
    rows = [
        {"min": 1, "max": 9, "null_count": 0, "nan_count": 0},
        {"min": 4, "max": 5, "null_count": 1, "nan_count": 0},
    ]
    part = pa.table(
        {
            "obj_name": ["a", "b"],
            "obj_size": [1, 2],
            "obj_mtime": [1, 1],
            "obj_rows": [1, 1],
            secret.storage_name: pa.array(rows, mm),
            plain.storage_name: pa.array(rows, mm),
        }
    )
    t.commit(0, add_parts=[t.write_part(part, defs, encryption=labels)])
    summary = t.snapshot().summary_table()
    assert summary.column(secret.storage_name).to_pylist() == [None], (
        "an encrypted index column is never summarised in the (plaintext) log"
    )
    assert summary.column(plain.storage_name).to_pylist() == [
        {"min": 1, "max": 9, "null_count": 1, "nan_count": 0}
    ]
    log_text = b"".join(backend.read(p) for p in backend.files(f"{t.path}/_log"))
    assert b'"a"' not in log_text, "object names live in the encrypted parts only"

    _fresh_caches()
    REQUESTED.clear()
    reader = backend.store(key_access=KeyAccess(_footer_only)).table(tmp_path / "data")
    snap = reader.snapshot()
    got = snap.read_parts(snap.part_paths, columns=["obj_size", plain.storage_name])
    assert got.column("obj_size").to_pylist() == [1, 2]
    assert got.column(plain.storage_name).to_pylist() == rows
    assert not json.loads((got.schema.metadata or {}).get(KEYS_UNAVAILABLE_KEY, b"[]"))
    assert REQUESTED and "col" not in REQUESTED, (
        f"only the columns asked for are decrypted (keys asked: {REQUESTED})"
    )
    whole = snap.metadata_table()  # every column: the index key is tried, and is missing
    assert "col" in REQUESTED
    assert json.loads(whole.schema.metadata[KEYS_UNAVAILABLE_KEY]) == [secret.storage_name]
    with pytest.raises(KeyAccessError):
        backend.store().table(tmp_path / "data").snapshot().file_table()


def test_full_parts_are_rewritten_once_enough_rows_die(table, monkeypatch):
    monkeypatch.setattr(tablemod, "MAX_PART_OBJECTS", 20)
    monkeypatch.setattr(compactionmod, "MAX_PART_OBJECTS", 20)
    v = table.commit(
        0,
        add_parts=table.write_parts(part_table([(f"o{i:02d}", 1, 1, 1) for i in range(40)]), DEFS),
    )
    v = table.commit(v, removed_objects=["o00"])  # 1 of 20 dead: 5 %
    assert table.compact() == v, "a full part with few dead rows is left alone"
    v = table.commit(v, removed_objects=["o01"])  # 10 %
    before = table.snapshot()
    compacted = table.compact()
    after = table.snapshot()
    assert compacted == v + 1 and len(after.part_paths) == 2
    assert before.part_paths[1] in after.part_paths, "the part without dead rows stays"
    assert after.object_count == 38 and sum(after.parts[p].rows for p in after.part_paths) == 38
    check_rows(after)


def test_a_resealed_entry_with_a_forged_summary_is_a_decode_error(table, backend):
    from metaindex.errors import DecodeError
    from metaindex.store.model import seal_json
    from metaindex.store.summary import encode_summary

    v = add(table, 0, [("a", 1, 1, 1)])
    path = f"{table.path}/{entry_name(v)}"
    record = json.loads(backend.read(path))
    forged = pa.table(
        {
            "obj_datetime_rebase": pa.nulls(1, pa.string()),
            "obj_int96_rebase": pa.nulls(1, pa.string()),
            "obj_ancient_datetime": pa.nulls(1, pa.bool_()),
            "obj_ancient_int96": pa.nulls(1, pa.bool_()),
            MINMAX.storage_name: pa.array([b"\x00"], pa.binary()),
        }
    )
    record["added_parts"][0]["summary"] = encode_summary(forged)
    record.pop("checksum")
    backend.write(path, seal_json(record))
    _fresh_caches()
    with pytest.raises(DecodeError, match="not a minmax summary"):
        table.snapshot().summary_table()
    record["added_parts"][0]["summary"] = encode_summary(forged.slice(0, 0))
    backend.write(path, seal_json(record))
    _fresh_caches()
    with pytest.raises(DecodeError, match="one row"):
        table.snapshot()
