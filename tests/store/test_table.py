"""TableStore: create, commit (add / supersede / remove), snapshots and time travel,
compaction, vacuum, history, drop, optimistic conflicts, encryption, read-only pyarrow.fs."""

from __future__ import annotations

import os
from datetime import timedelta

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from metaindex.crypto import InMemoryKms
from metaindex.errors import (
    CommitConflictError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    UnsupportedFeatureError,
)
from metaindex.store import (
    CHECKPOINT_INTERVAL,
    FILE_INFO_COLUMNS,
    EncryptionLabels,
    IndexDef,
    KeyAccess,
    MetadataStore,
)
from metaindex.store.log import latest_for_writer
from tests.store.helpers import BLOOM, DEFS, MINMAX, VALUES, check_rows, part_table


@pytest.fixture
def store(backend):
    return backend.store()


@pytest.fixture
def table(store, tmp_path):
    t = store.table(tmp_path / "data")
    t.create(DEFS, {"partition_columns": ["city"]})
    return t


def add(t, base, objects, **kw):
    return t.commit(base, add_parts=[t.write_part(part_table(objects), DEFS)], **kw)


def files_of(snap):
    return {n: (e.size, e.mtime) for n, e in snap.files.items()}


def test_create_then_empty_snapshot(table, backend):
    assert table.exists()
    snap = table.snapshot()
    assert snap.version == 0 and not snap.files and snap.operation == "create"
    assert snap.index_defs == DEFS
    assert snap.table.extra == {"partition_columns": ["city"]}
    meta = snap.metadata_table()
    assert meta.num_rows == 0 and meta.column_names[:4] == [
        "obj_name",
        "obj_size",
        "obj_mtime",
        "obj_rows",
    ]
    assert backend.exists(f"{backend.root}/{table.identity.id}/table.json")
    with pytest.raises(CommitConflictError, match="already exists"):
        table.create(DEFS)


def test_round_trip_supersede_remove_and_time_travel(table):
    v1 = add(table, 0, [("a", 10, 1, 5), ("b", 20, 1, 6), ("c", 30, 1, 7)], operation="build")
    v2 = add(
        table, v1, [("b", 21, 2, 6), ("d", 40, 2, 8)], removed_objects=["c"], operation="refresh"
    )
    snap = table.snapshot()
    assert snap.version == v2 == 2
    assert files_of(snap) == {"a": (10, 1), "b": (21, 2), "d": (40, 2)}, (
        "b superseded by its new row, c removed, d added"
    )
    check_rows(snap)
    entry = table.history()[-1]
    assert entry.superseded_objects == ("b",) and entry.removed_objects == ("c",)
    assert entry.operation == "refresh"
    old = table.snapshot(v1)
    assert files_of(old) == {"a": (10, 1), "b": (20, 1), "c": (30, 1)}, "time travel"
    check_rows(old)
    assert table.snapshot().metadata_table() is snap.metadata_table(), "cached per version"


def test_part_with_all_rows_dead_leaves_the_snapshot(table):
    v1 = add(table, 0, [("a", 1, 1, 1)])
    first = set(table.snapshot().parts)
    v2 = add(table, v1, [("a", 2, 2, 1)])
    assert not first & set(table.snapshot(v2).parts), "the old part has no live row left"


def test_commit_validates_its_arguments(table, backend, tmp_path):
    v1 = add(table, 0, [("a", 1, 1, 1)])
    with pytest.raises(ValueError, match="not indexed"):
        table.commit(v1, removed_objects=["zzz"])
    with pytest.raises(ValueError, match="not a live part"):
        table.commit(v1, remove_parts=["parts/" + "0" * 32 + ".parquet"])
    with pytest.raises(ValueError, match="not a part file of this table"):
        table.commit(v1, add_parts=[str(tmp_path / "x.parquet")])
    other = backend.store().table(tmp_path / "other")
    other.create(DEFS)
    foreign = other.write_part(part_table([("q", 1, 1, 1)]), DEFS)
    copied = f"{table.path}/parts/{foreign.rsplit('/', 1)[1]}"
    backend.copy(foreign, copied)
    with pytest.raises(IntegrityError, match="belongs to table id"):
        table.commit(v1, add_parts=[copied])
    p1, p2 = (table.write_part(part_table([("n", 1, 1, 1)]), DEFS) for _ in range(2))
    with pytest.raises(ValueError, match="two added parts"):
        table.commit(v1, add_parts=[p1, p2])
    assert table.latest_version() == v1, "nothing was committed by refused commits"


def test_rebase_when_concurrent_commit_does_not_overlap(table, store, tmp_path):
    other = store.table(tmp_path / "data")  # a second handle, as another writer would have
    v1 = add(table, 0, [("a", 1, 1, 1), ("b", 1, 1, 1)])
    add(other, v1, [("c", 1, 1, 1)])  # wins version 2
    v3 = add(table, v1, [("d", 1, 1, 1)], removed_objects=["a"])  # based on v1: rebased
    assert v3 == 3
    assert set(table.snapshot().files) == {"b", "c", "d"}
    check_rows(table.snapshot())


def test_conflict_when_concurrent_commit_touches_the_same_object(table, store, tmp_path):
    other = store.table(tmp_path / "data")
    v1 = add(table, 0, [("a", 1, 1, 1)])
    add(other, v1, [("a", 2, 2, 1)])  # supersedes a
    with pytest.raises(CommitConflictError, match="'a'"):
        add(table, v1, [("a", 3, 3, 1)])  # also from v1
    with pytest.raises(CommitConflictError):
        table.commit(v1, removed_objects=["a"])
    assert files_of(table.snapshot()) == {"a": (2, 2)}, "the winner's row stands"


def test_conflict_with_concurrent_compaction_and_drop(table, store, tmp_path):
    v = 0
    for i in range(3):
        v = add(table, v, [(f"o{i}", 1, 1, 1)])
    snap = table.snapshot()
    table.compact()
    with pytest.raises(CommitConflictError):  # removes an object whose part was compacted
        table.commit(snap.version, removed_objects=["o0"])
    before = table.latest_version()
    store.table(tmp_path / "data").drop()
    with pytest.raises(MetaIndexError, match="dropped|no metadata index"):
        add(table, before, [("z", 1, 1, 1)])


def test_compaction_merges_parts_and_drops_dead_rows(table):
    v = 0
    for i in range(6):
        v = add(table, v, [(f"o{i}", i, 1, 1), (f"p{i}", i, 1, 1)])
    v = add(table, v, [("o0", 99, 9, 1)], removed_objects=["p1"])
    before = table.snapshot()
    assert len(before.parts) == 7
    v2 = table.compact(target_file_size=1 << 20)
    after = table.snapshot()
    assert v2 == v + 1 and after.operation == "compact"
    assert len(after.parts) == 1, "every small part rewritten into one"
    assert files_of(after) == files_of(before), "compaction changes no object"
    check_rows(after)
    assert table.compact(target_file_size=1 << 20) == v2, "nothing left to do: no commit"
    check_rows(table.snapshot(v))  # the pre-compaction version is still readable


def test_compaction_respects_target_size(table):
    v = 0
    for i in range(8):
        v = add(table, v, [(f"o{i}_{k}", 1, 1, 1) for k in range(20)])
    size = max(r.bytes for r in table.snapshot().parts.values())
    calls = []
    table.compact(
        target_file_size=size * 3, progress=lambda done, total: calls.append((done, total))
    )
    snap = table.snapshot()
    assert 2 <= len(snap.parts) <= 4, f"8 parts packed about 3 per group, got {len(snap.parts)}"
    check_rows(snap)
    assert len(calls) == 8 and calls[-1] == (8, 8), (
        f"one progress call per part read, ending at all 8 parts read: {calls}"
    )
    assert [d for d, _ in calls] == sorted(d for d, _ in calls), "progress only moves forward"


def test_index_added_later_reads_as_null_for_old_parts(table):
    v1 = add(table, 0, [("a", 1, 1, 1)])
    extra = IndexDef("minmax", ["price"])
    defs = DEFS + (extra,)
    t2 = part_table([("b", 1, 1, 1)]).append_column(
        extra.storage_name,
        pa.array(
            [{"min": 1, "max": 2, "null_count": 0, "nan_count": 0}],
            part_table([("x", 1, 1, 1)]).schema.field(MINMAX.storage_name).type,
        ),
    )
    table.commit(v1, add_parts=[table.write_part(t2, defs)], index_defs=defs)
    meta = table.snapshot().metadata_table()
    by_name = {r["obj_name"]: r for r in meta.to_pylist()}
    assert by_name["a"][extra.storage_name] is None, "unknown metadata = keep the file"
    assert by_name["b"][extra.storage_name]["max"] == 2
    table.commit(table.latest_version(), index_defs=[MINMAX])
    assert table.snapshot().metadata_table().column_names == [
        "obj_name",
        "obj_size",
        "obj_mtime",
        "obj_rows",
        *FILE_INFO_COLUMNS,
        MINMAX.storage_name,
    ]


def test_checkpoints_and_replay_agree(table, backend):
    v = 0
    for i in range(CHECKPOINT_INTERVAL + 3):
        v = add(table, v, [(f"o{i}", i, i, 1)], removed_objects=[f"o{i - 2}"] if i >= 2 else [])
    cp = f"{table.path}/_log/{CHECKPOINT_INTERVAL:020d}.checkpoint.json"
    assert backend.exists(cp), "a checkpoint every CHECKPOINT_INTERVAL versions"
    from_cp = files_of(table.snapshot())
    from metaindex.store import log as logmod

    logmod._state_cache.clear()
    backend.delete(cp)
    assert files_of(table.snapshot()) == from_cp, "replay from version 0 gives the same state"


def test_vacuum_keeps_recent_versions_and_removes_orphans(table, backend):
    v1 = add(table, 0, [("a", 1, 1, 1)])
    orphan = table.write_part(part_table([("never", 1, 1, 1)]), DEFS)  # a crashed writer's
    v2 = add(table, v1, [("a", 2, 2, 1)])
    kept = table.vacuum(retain=timedelta(days=1))
    assert kept.deleted_parts == () and kept.deleted_log_entries == (), "all newer than a day"
    backend.age(backend.files(f"{table.path}/parts"), 3600)
    result = table.vacuum(retain=timedelta(0), force=True)
    assert "parts/" + orphan.rsplit("/", 1)[1] in result.deleted_parts
    assert len(result.deleted_parts) == 2, "the orphan and the superseded part of a"
    assert result.oldest_version == kept.version and result.deleted_log_entries == (0, 1, v2)
    snap = table.snapshot()
    assert files_of(snap) == {"a": (2, 2)}
    check_rows(snap)
    with pytest.raises(MetaIndexError, match="no longer readable"):
        table.snapshot(v1)
    assert [e.operation for e in table.history()] == ["vacuum", "vacuum"]


def test_drop_removes_everything(table, store, backend, tmp_path):
    add(table, 0, [("a", 1, 1, 1)])
    reader = store.table(tmp_path / "data")
    table.drop()
    assert not table.exists() and backend.files(table.path) == []
    with pytest.raises(MetaIndexError, match="no metadata index"):
        reader.snapshot()
    table.drop()  # idempotent
    assert table.create(DEFS) == 0, "a dropped table can be indexed again"


def test_interrupted_drop_reads_as_dropped_and_create_finishes_it(table, backend):
    from metaindex.store.layout import entry_name
    from metaindex.store.log import encode_entry
    from metaindex.store.model import LogEntry

    v1 = add(table, 0, [("a", 1, 1, 1)])
    tomb = LogEntry(v1 + 1, 1, "drop", table.snapshot().table, (), None)
    # the drop entry of a drop that crashed right after it
    backend.write(f"{table.path}/{entry_name(v1 + 1)}", encode_entry(tomb))
    assert not table.exists()
    with pytest.raises(MetaIndexError, match="dropped"):
        table.snapshot()
    assert table.create(DEFS) == 0 and table.snapshot().files == {}


KEYS = {"footer": b"\x01" * 16, "col": b"\x02" * 16}


def kms_factory(config):
    return InMemoryKms(KEYS)


def test_encrypted_store_round_trip_with_labels_only(backend, tmp_path):
    access = KeyAccess(kms_factory)
    store = backend.store(key_access=access)
    t = store.table(tmp_path / "data")
    labels = EncryptionLabels("footer")
    defs = (IndexDef("minmax", ["temp"], key_metadata="col"), VALUES, BLOOM)
    t.create(defs, encryption=labels)
    part = t.write_part(part_table([("a", 1, 1, 1), ("b", 2, 2, 2)], defs), defs, encryption=labels)
    assert backend.read(part)[:4] == b"PARE", "encrypted footer"
    v = t.commit(0, add_parts=[part])
    check_rows(t.snapshot())
    for path in backend.files(t.path):
        data = backend.read(path)
        for key in KEYS.values():
            assert key not in data, f"{path} holds key material"
    entry = t.history()[-1]
    assert entry.encryption == labels and entry.index_defs[0].key_metadata == "col"
    with pytest.raises(KeyAccessError):
        backend.store().table(tmp_path / "data").snapshot().metadata_table()
    plain = backend.store(key_access=access).table(tmp_path / "data")
    p2 = plain.write_part(part_table([("c", 1, 1, 1)], defs[1:]), defs[1:])
    with pytest.raises(IntegrityError, match="encrypted as None"):
        plain.commit(v, add_parts=[p2])
    t.compact(target_file_size=1 << 20)
    check_rows(t.snapshot())


def test_read_only_through_pyarrow_fs(tmp_path):
    table = MetadataStore(tmp_path / "store").table(tmp_path / "data")
    table.create(DEFS)
    add(table, 0, [("a", 1, 1, 1)])
    mock = pafs._MockFileSystem()
    src = tmp_path / "store"
    for root, _, names in os.walk(src):
        rel = os.path.relpath(root, src)
        mock.create_dir(f"s/{rel}".rstrip("/."), recursive=True)
        for name in names:
            with (
                open(os.path.join(root, name), "rb") as f,
                mock.open_output_stream(f"s/{rel}/{name}".replace("/./", "/")) as out,
            ):
                out.write(f.read())
    remote = MetadataStore("s", filesystem=mock).table(tmp_path / "data")
    snap = remote.snapshot()
    assert set(snap.files) == {"a"}
    check_rows(snap)
    with pytest.raises(UnsupportedFeatureError, match="create-if-absent"):
        remote.commit(snap.version, removed_objects=["a"])


def test_table_store_pickles_for_process_pools(table):
    import pickle

    add(table, 0, [("a", 1, 1, 1)])
    clone = pickle.loads(pickle.dumps(table))
    assert set(clone.snapshot().files) == {"a"}
    access = pickle.loads(pickle.dumps(KeyAccess(kms_factory)))
    assert access.decryption_properties() is not None, "KeyAccess rebuilds its factory"


def test_changing_encryption_needs_a_rebuild(table, backend, tmp_path):
    store = backend.store(key_access=KeyAccess(kms_factory))
    t = store.table(tmp_path / "data")
    v1 = add(t, 0, [("a", 1, 1, 1)])
    labels = EncryptionLabels("footer")
    with pytest.raises(ValueError, match="rebuild"):
        t.commit(v1, encryption=labels)
    part = t.write_part(part_table([("a", 2, 2, 1)]), DEFS, encryption=labels)
    v2 = t.commit(
        v1,
        add_parts=[part],
        remove_parts=list(t.snapshot().parts),
        encryption=labels,
        operation="build",
    )
    snap = t.snapshot()
    assert snap.encryption == labels and files_of(snap) == {"a": (2, 2)}
    check_rows(snap)
    assert t.snapshot(v1).encryption is None, "the plaintext version is still readable"
    assert v2 == v1 + 1


def test_writer_that_lost_a_race_to_a_drop_gets_a_conflict(table, store, tmp_path):
    # a commit or vacuum that lost the race to write its entry lists the log again to rebase;
    # if the index was dropped (log deleted) meanwhile, that is a conflict, not a TypeError
    add(table, 0, [("a", 1, 1, 1)])
    assert latest_for_writer(table._storage, table.path) == 1
    store.table(tmp_path / "data").drop()
    with pytest.raises(CommitConflictError, match="the log is gone"):
        latest_for_writer(table._storage, table.path)
