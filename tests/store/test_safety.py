"""Issue 27, the store-safety half: its three reproductions as tests, and what was built
around them.

3. An encrypted store's log named data files in clear (``removed_objects``,
   ``superseded_objects``, ``dead_objects``, unreadable files, failed samples): every byte of
   an encrypted store is searched for every data-file name and every value of an encrypted
   index, with a plaintext store as the control that proves the search finds them.
4. ``vacuum(retain=0)`` racing a commit deleted a part the commit then named, and every
   operation failed from then on: vacuum now has a floor on ``retain``, commits what it
   deletes before deleting it, and a part missing under a version makes that version
   unusable, not the store (queries read every file; ``refresh()`` re-indexes).
5. Damage in the middle of the log went unreported: a gap or checksum failure anywhere is now
   a typed error in ``history()``, a warning plus "read every file" in queries (also in a
   process that cached the version), a line in ``describe()``, and ``metaindex check`` exits
   non-zero; ``refresh()`` repairs it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.api import StoreEncryption
from metaindex.crypto import InMemoryKms
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.prune import DamagedIndexWarning
from metaindex.errors import (
    CommitConflictError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    StoreDamageError,
    UnsafeRetentionError,
)
from metaindex.store import (
    CHECKPOINT_INTERVAL,
    FORMAT_VERSION,
    MIN_RETAIN,
    EncryptionLabels,
    KeyAccess,
    MetadataStore,
)
from metaindex.store import log as logmod
from metaindex.store.layout import checkpoint_name, entry_name
from tests.store.helpers import DEFS, check_rows, part_table

SERIAL = SerialExecutor()
KEYS = {"footer": b"\x11" * 16, "cols": b"\x22" * 16}


def kms_factory(config):
    return InMemoryKms(KEYS)


def _data(k: int, version: int = 0) -> pa.Table:
    """File ``k``: ids k*100.., cities needle-<k>-<j> (the encrypted index's values), prices
    PRICE+k (a plaintext index)."""
    n = 20
    return pa.table(
        {
            "id": pa.array(np.arange(k * 100, k * 100 + n), pa.int64()),
            "city": [f"needle-{k:03d}-{j:02d}-v{version}" for j in range(n)],
            "price": pa.array([PRICE + k] * n, pa.int64()),
        }
    )


def _name(k: int) -> str:
    return f"secret-file-{k:04d}.parquet"


def _write(root, k: int, version: int = 0) -> None:
    path = os.path.join(root, _name(k))
    pq.write_table(_data(k, version), path)
    os.utime(path, ns=(10**18 + version * 10**9 + k,) * 2)  # a rewrite always moves the mtime


def _build(mi) -> None:
    (
        mi.index_builder()
        .add_min_max_index("city")
        .add_value_list_index("city", max_values=50)
        .add_min_max_index("price")
        .add_bloom_filter_index("id")
        .build(executor=SERIAL)
    )


# ------------------------------------------------------------------------------ 3: in clear


def _life(root, mi) -> tuple:
    """Build, rewrite, delete, an unreadable file, more than a checkpoint's worth of refreshes,
    compact, vacuum; returns (every data-file name used, every city value written)."""
    names, values = set(), set()

    def write(k, version=0):
        _write(root, k, version)
        names.add(_name(k))
        values.update(_data(k, version).column("city").to_pylist())

    for k in range(6):
        write(k)
    _build(mi)
    write(1, version=1)  # rewritten: its old row is superseded
    os.remove(os.path.join(root, _name(2)))  # deleted: removed
    with open(os.path.join(root, _name(99)), "wb") as f:
        f.write(b"PAR1 not parquet at all PAR1")  # unreadable: recorded with its reason
    names.add(_name(99))
    mi.refresh(executor=SERIAL)
    fresh = mi.describe().freshness
    assert fresh.unreadable_files == 1 and fresh.up_to_date, fresh  # its record opens
    assert mi.refresh(executor=SERIAL).status == "NO_CHANGE", "not retried until it changes"
    for k in range(6, 6 + CHECKPOINT_INTERVAL):
        write(k)
        mi.refresh(executor=SERIAL)
    mi.compact()
    os.remove(os.path.join(root, _name(99)))  # no longer unreadable: cleared
    write(3, version=2)
    mi.refresh(executor=SERIAL)
    mi.vacuum()
    return names, values


def _haystacks(directory) -> list:
    """Every file under ``directory`` as bytes, and what every base64 string in its JSON
    records decodes to (summaries and schemas are base64 Arrow IPC)."""
    out = []
    for base, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(base, name)
            data = open(path, "rb").read()
            out.append((path, data))
            if name.endswith(".json"):
                for blob in re.findall(rb'"([A-Za-z0-9+/]{8,}={0,2})"', data):
                    try:
                        out.append((path + " (base64)", base64.b64decode(blob, validate=True)))
                    except ValueError:
                        pass
    return out


PRICE = 918_273_645_000
"""The plaintext index's values start here: digits no timestamp, size or hash in a log holds
by chance (7000 once matched a millisecond timestamp in a checkpoint)."""


def _found(directory, needles) -> dict:
    hay = _haystacks(directory)
    return {
        n: [p for p, data in hay if n.encode() in data]
        for n in needles
        if any(n.encode() in data for _, data in hay)
    }


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_an_encrypted_store_holds_no_file_name_and_no_encrypted_value(tmp_path, plaintext_footer):
    # the control first: the same life in a plaintext store, where the search must find them
    plain_root = tmp_path / "plain"
    plain_root.mkdir()
    names, values = _life(
        str(plain_root), MetaIndex(str(plain_root), store=str(tmp_path / "plain_store"))
    )
    seen = _found(tmp_path / "plain_store", [*names, *values])
    assert {_name(1), _name(2), _name(99)} <= set(seen), (
        f"the control's log names the rewritten, deleted and unreadable files: {sorted(seen)}"
    )
    assert any(v in seen for v in values), "the control's log summarises the city values"

    root = tmp_path / "data"
    root.mkdir()
    enc = StoreEncryption(
        kms_factory,
        "footer",
        index_keys={"city": "cols", "id": "cols", "price": None},
        plaintext_footer=plaintext_footer,
    )
    mi = MetaIndex(str(root), store=str(tmp_path / "store"), encryption=enc)
    names, values = _life(str(root), mi)
    store_dir = tmp_path / "store"
    leaks = _found(store_dir, [*names, *[n.rsplit(".", 1)[0] for n in names], *values])
    assert not leaks, f"names or encrypted values in clear: {dict(list(leaks.items())[:3])}"
    prices = _found(store_dir, [str(PRICE)[:-2]])
    assert all("base64" in p or "parts" in p for found in prices.values() for p in found), prices

    # the store still works: history with its keys, counts without them
    ops = [h.operation for h in mi.history()]
    assert ops[-1] == "vacuum" and "compact" in ops
    failed = [h.details for h in mi.history() if h.details.get("files_failed")]
    assert failed and failed[0]["failed_sample"] == [_name(99)], (
        "with its keys, history opens the sealed details"
    )
    keyless = MetaIndex(str(root), store=str(store_dir))
    assert {"sealed": True} in [h.details for h in keyless.history()], (
        "without keys, the details stay sealed"
    )
    assert keyless.describe().counts.indexed_files == 15
    mi2 = MetaIndex(str(root), store=str(store_dir), encryption=enc)
    kept = mi2.prune("city = 'needle-004-03-v0'").kept
    assert [os.path.basename(p) for p in kept] == [_name(4)]
    assert mi2.check().healthy


def test_plaintext_index_in_an_encrypted_store_is_readable_in_the_log(tmp_path):
    """What a plaintext index (no key label) in an encrypted store means: its values are not
    secret, so its part summaries (min/max, value lists) are in the log in clear; file names
    still never are."""
    root = tmp_path / "data"
    root.mkdir()
    for k in range(3):
        _write(str(root), k)
    enc = StoreEncryption(kms_factory, "footer", index_keys={"price": None, "city": "cols"})
    mi = MetaIndex(str(root), store=str(tmp_path / "store"), encryption=enc)
    mi.index_builder().add_min_max_index("price").add_min_max_index("city").build(executor=SERIAL)
    snap = mi.snapshot()
    price, city = (d.storage_name for d in snap.index_defs)
    summaries = snap.summary_table()
    assert summaries.column(price).to_pylist()[0]["max"] == PRICE + 2
    assert summaries.column(city).to_pylist() == [None], "an encrypted index: none"
    assert not _found(tmp_path / "store", [_name(k) for k in range(3)])


def test_conflicts_are_still_detected_in_an_encrypted_store(backend, tmp_path):
    labels = EncryptionLabels("footer")
    t = backend.store(key_access=KeyAccess(kms_factory)).table(tmp_path / "data")
    t.create(DEFS, encryption=labels)

    def part(*objects):
        return t.write_part(part_table(list(objects)), DEFS, encryption=labels)

    v1 = t.commit(
        0,
        add_parts=[
            part(("alpha.parquet", 1, 1, 1), ("beta.parquet", 1, 1, 1), ("gamma.parquet", 1, 1, 1))
        ],
    )
    t.commit(v1, add_parts=[part(("alpha.parquet", 2, 2, 1))])
    with pytest.raises(CommitConflictError, match="changed what this commit changes"):
        t.commit(v1, add_parts=[part(("alpha.parquet", 3, 3, 1))])  # the same object
    t.commit(v1, removed_objects=["beta.parquet"])  # another object: rebased
    with pytest.raises(CommitConflictError):
        t.commit(v1, removed_objects=["beta.parquet"])
    t.commit(v1, removed_objects=["gamma.parquet"])
    snap = t.snapshot()
    assert {n: (e.size, e.mtime) for n, e in snap.files.items()} == {"alpha.parquet": (2, 2)}
    check_rows(snap)
    log = b"".join(backend.read(p) for p in backend.files(f"{t.path}/_log"))
    assert b"alpha" not in log and b"beta" not in log and b"gamma" not in log
    with pytest.raises(KeyAccessError):  # names become tokens under the store's key
        backend.store().table(tmp_path / "data").commit(
            t.latest_version(), removed_objects=["alpha.parquet"]
        )


# ------------------------------------------------------------------------------ 4: vacuum


@pytest.fixture
def table(backend, tmp_path):
    t = backend.store().table(tmp_path / "data")
    t.create(DEFS)
    return t


def _add(t, base, objects):
    return t.commit(base, add_parts=[t.write_part(part_table(objects), DEFS)])


def test_vacuum_below_the_floor_needs_force(table):
    v = _add(table, 0, [("a", 1, 1, 1)])
    assert MIN_RETAIN == timedelta(hours=1)
    for retain in (timedelta(0), timedelta(minutes=59)):
        with pytest.raises(UnsafeRetentionError, match="force=True"):
            table.vacuum(retain)
    assert table.latest_version() == v, "a refused vacuum changes nothing"
    assert table.vacuum(MIN_RETAIN).version == v + 1
    assert table.vacuum(timedelta(0), force=True).version == v + 2


def test_a_part_vacuumed_before_its_commit_is_refused_not_committed(table):
    v = _add(table, 0, [("a", 1, 1, 1)])
    late = table.write_part(part_table([("late", 1, 1, 1)]), DEFS)
    result = table.vacuum(timedelta(0), force=True)  # the reproduction: retain=0 meets it
    assert "parts/" + late.rsplit("/", 1)[1] in result.deleted_parts
    with pytest.raises(CommitConflictError, match="vacuum"):
        table.commit(result.version, add_parts=[late])
    assert table.check().healthy, "no version names the deleted part"
    assert table.snapshot().object_count == 1 and table.latest_version() == v + 1


def test_a_vacuum_entry_that_dooms_a_part_lands_first_the_commit_is_refused(
    table, backend, monkeypatch
):
    v = _add(table, 0, [("a", 1, 1, 1)])
    late = table.write_part(part_table([("late", 1, 1, 1)]), DEFS)
    vacuumer = backend.store().table(table.identity.uri)
    create = table._create_entry
    raced = []

    def vacuum_first(entry):  # the commit has read its part; a vacuum lands its entry now
        if not raced:
            raced.append(vacuumer.vacuum(timedelta(0), force=True))
        return create(entry)

    monkeypatch.setattr(table, "_create_entry", vacuum_first)
    with pytest.raises(CommitConflictError, match="vacuum deletes"):
        table.commit(v, add_parts=[late])
    assert raced and "parts/" + late.rsplit("/", 1)[1] in raced[0].deleted_parts
    assert table.check().healthy and table.latest_version() == v + 1


def test_a_commit_that_lands_first_keeps_its_part(table, backend, monkeypatch):
    v = _add(table, 0, [("a", 1, 1, 1)])
    late = table.write_part(part_table([("late", 1, 1, 1)]), DEFS)
    vacuumer = backend.store().table(table.identity.uri)
    create = vacuumer._create_entry
    committed = []

    def commit_first(entry):  # the vacuum listed the part as unreferenced; a commit lands
        if not committed:
            committed.append(table.commit(v, add_parts=[late]))
        return create(entry)

    monkeypatch.setattr(vacuumer, "_create_entry", commit_first)
    result = vacuumer.vacuum(timedelta(0), force=True)
    assert "parts/" + late.rsplit("/", 1)[1] not in result.deleted_parts
    assert backend.exists(late), "a part a version names is never deleted"
    assert set(table.snapshot().files) == {"a", "late"}
    check_rows(table.snapshot())
    assert table.check().healthy


def test_a_part_only_older_versions_name_makes_them_unusable_not_the_store(table, backend):
    v1 = _add(table, 0, [("a", 1, 1, 1)])
    v2 = _add(table, v1, [("b", 1, 1, 1)])
    v3 = table.compact()  # one new part: the two old ones only versions 1 and 2 name
    first = table.snapshot(v1).part_paths[0]
    backend.delete(f"{table.path}/{first}")
    table.forget_cached()  # as a process that never read it
    assert table.damage() == (), "the log is whole: queries at the latest version skip"
    check_rows(table.snapshot())
    with pytest.raises(IntegrityError, match="missing"):
        table.snapshot(v1).metadata_table()  # that version is unusable
    report = table.check()
    assert not report.healthy and "versions 1-2 cannot be used" in report.problems[0].message
    repaired = table.repair()
    assert repaired.from_version == v3 and repaired.dropped_parts == ()
    assert repaired.deleted_log_entries == tuple(range(v3 + 1))
    assert table.check().healthy and table.repair() is None
    assert [e.operation for e in table.history()] == ["repair"]
    check_rows(table.snapshot())
    assert v2 == v1 + 1


def _table_dir(tmp_path, n=6):
    root = tmp_path / "data"
    root.mkdir()
    for k in range(n):
        _write(str(root), k)
    return str(root)


def _store_files(mi, sub):
    path = os.path.join(mi.store_path, sub)
    return sorted(os.path.join(path, n) for n in os.listdir(path))


def test_a_missing_part_makes_queries_read_every_file_and_refresh_reindexes(tmp_path):
    root = _table_dir(tmp_path)
    mi = MetaIndex(root, store=str(tmp_path / "store"))
    _build(mi)
    for k in (6, 7):
        _write(root, k)
    mi.refresh(executor=SERIAL)
    assert [os.path.basename(p) for p in mi.prune("id = 705").kept] == [_name(7)]
    lost = mi.snapshot().part_paths[-1]  # the refresh's part: files 6 and 7
    os.remove(os.path.join(mi.store_path, lost))

    with pytest.warns(DamagedIndexWarning, match="missing"):
        result = mi.prune("id = 705")
    assert result.stats.skipped_files == 0 and len(result.kept) == 8
    assert "missing" in result.stats.damage
    damage = mi.describe().damage
    assert damage and any(lost in p for p in damage.problems), damage
    report = mi.check()
    assert not report.healthy and any(p.kind == "part" for p in report.problems)

    fixed = mi.refresh(executor=SERIAL)
    assert fixed.entries_added == 2, "the two files whose part was lost are indexed again"
    assert mi.check().healthy
    assert [os.path.basename(p) for p in mi.prune("id = 705").kept] == [_name(7)]
    assert [h.operation for h in mi.history()] == ["repair", "refresh"]


# ------------------------------------------------------------------------------ 5: damage


@pytest.fixture
def long_log(tmp_path):
    """27 versions (create, build, 25 refreshes): checkpoints at 10 and 20."""
    root = _table_dir(tmp_path, 2)
    mi = MetaIndex(root, store=str(tmp_path / "store"))
    _build(mi)
    for k in range(2, 27):
        _write(root, k)
        mi.refresh(executor=SERIAL)
    assert [h.version for h in mi.history()] == list(range(27))
    return mi, root


def _damage(mi, version: int, how: str) -> str:
    path = os.path.join(
        mi.store_path, entry_name(version) if how != "checkpoint" else checkpoint_name(version)
    )
    if how == "delete":
        os.remove(path)
    else:
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0x04
        with open(path, "wb") as f:
            f.write(data)
    return os.path.basename(path)


@pytest.mark.parametrize("how,version", [("delete", 5), ("flip", 5), ("checkpoint", 10)])
def test_damage_below_a_checkpoint_is_reported_everywhere_and_repaired(long_log, how, version):
    mi, root = long_log
    assert [os.path.basename(p) for p in mi.prune("id = 1203").kept] == [_name(12)]
    name = _damage(mi, version, how)

    with pytest.raises(StoreDamageError, match=re.escape(name)) as caught:
        mi.history()  # was: 26 of 27 versions, silently
    assert caught.value.problems and name in caught.value.problems[0].message
    with pytest.warns(DamagedIndexWarning, match=re.escape(name)):
        result = mi.prune("id = 1203")  # this process had the version cached
    assert len(result.kept) == 27 and name in result.stats.damage
    damage = mi.describe().damage
    assert damage is not None and name in damage.problems[0], damage
    assert "read every file" in damage.effect
    report = mi.check()
    assert not report.healthy and name in report.problems[0].message
    assert mi.snapshot().version == 26, "the latest version itself still reads"

    repaired = mi.refresh(executor=SERIAL)
    assert repaired.status == "NO_CHANGE"
    assert mi.check().healthy
    assert [h.operation for h in mi.history()] == ["repair"]
    assert [os.path.basename(p) for p in mi.prune("id = 1203").kept] == [_name(12)]


def test_damage_at_the_head_is_repaired_from_the_newest_readable_version(long_log):
    mi, root = long_log
    _damage(mi, 24, "flip")  # versions 24.. cannot be replayed: 23 is the newest readable
    doc = mi.describe()
    assert doc.version is None and entry_name(24).split("/")[1] in " ".join(doc.damage.problems)
    with pytest.warns(DamagedIndexWarning):
        assert len(mi.prune("id = 2501").kept) == 27
    repaired = mi.refresh(executor=SERIAL)
    assert repaired.entries_added == 3, "the files versions 24 to 26 indexed, again"
    assert mi.check().healthy
    assert [os.path.basename(p) for p in mi.prune("id = 2501").kept] == [_name(25)]


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("METAINDEX_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "metaindex", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_the_cli_names_the_damage(long_log):
    mi, root = long_log
    store = os.path.dirname(mi.store_path)
    healthy = _cli("check", root, "--store", store, "--json")
    assert healthy.returncode == 0 and json.loads(healthy.stdout)["healthy"], healthy
    name = _damage(mi, 7, "delete")
    shown = _cli("describe", root, "--store", store)
    assert shown.returncode == 0 and "DAMAGED" in shown.stdout and name in shown.stdout, shown
    found = _cli("check", root, "--store", store)
    assert found.returncode == 4 and name in found.stdout and "gap" in found.stdout, found
    doc = json.loads(_cli("check", root, "--store", store, "--json").stdout)
    assert doc["healthy"] is False and doc["problems"][0]["version"] == 7, doc
    assert _cli("refresh", root, "--store", store).returncode == 0
    assert _cli("check", root, "--store", store).returncode == 0


def test_a_cached_state_is_dropped_when_its_log_file_changes(table, backend):
    v = _add(table, 0, [("a", 1, 1, 1)])
    v = _add(table, v, [("b", 1, 1, 1)])
    assert set(table.snapshot().files) == {"a", "b"}  # cached in this process
    path = f"{table.path}/{entry_name(1)}"
    data = bytearray(backend.read(path))
    data[len(data) // 2] ^= 0x04
    backend.write(path, bytes(data))
    with pytest.raises(MetaIndexError, match=re.escape(entry_name(1).split("/")[1])):
        _ = table.snapshot().files  # not the cached state: the changed entry is read again
    assert not table.check().healthy
    logmod._state_cache.clear()


# ------------------------------------------------------------------------------ upgrading

V7_STORE = os.path.join(os.path.dirname(__file__), "data", "v7_encrypted_store")
"""An encrypted store written by format 7 (metaindex at 156125f): alpha, beta, gamma built
(with ``broken.parquet`` unreadable), then alpha rewritten; its log names alpha and broken in
clear."""


def v7_kms(config):
    return InMemoryKms({"footer": b"\x11" * 16})


def test_an_encrypted_format_7_store_upgrades_and_stops_naming_files(tmp_path):
    shutil.copytree(V7_STORE, tmp_path / "store")
    t = MetadataStore(str(tmp_path / "store"), key_access=KeyAccess(v7_kms)).table(
        "file:///nonexistent/v7table"
    )
    snap = t.snapshot()
    assert {n: (e.size, e.mtime) for n, e in snap.files.items()} == {
        "alpha.parquet": (2, 2),
        "beta.parquet": (1, 1),
        "gamma.parquet": (1, 1),
    }
    assert dict(snap.unreadable) == {"broken.parquet": (5, 5, "DecodeError: not parquet")}

    # beta dies in the format-7 part whose dead set names alpha in clear: by token now
    v = t.commit(
        snap.version,
        removed_objects=["beta.parquet"],
        details={"unreadable_cleared": ["broken.parquet"]},
    )
    raw = open(os.path.join(t.path, entry_name(v)), "rb").read()
    entry = json.loads(raw)
    assert entry["format_version"] == FORMAT_VERSION and entry["log_key"]
    assert b"beta" not in raw and b"broken" not in raw and len(entry["removed_objects"]) == 1
    snap = t.snapshot()
    assert set(snap.files) == {"alpha.parquet", "gamma.parquet"} and not snap.unreadable
    check_rows(snap)
    assert t.check().healthy

    # the names older records hold go with them: compaction, then vacuum
    t.compact()
    t.vacuum(timedelta(0), force=True)
    assert not _found(t.path, ["alpha", "beta", "gamma", "broken"])
    check_rows(t.snapshot())
    assert t.check().healthy
    keyless = MetadataStore(str(tmp_path / "store")).table("file:///nonexistent/v7table")
    assert keyless.snapshot().object_count == 2
