"""Damaged or tampered metadata: a typed MetaIndexError naming the file, and every version
that does not depend on the damage still reads."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError, IntegrityError, MetaIndexError, UnsupportedVersionError
from metaindex.store import CHECKPOINT_INTERVAL, FORMAT_VERSION
from metaindex.store import log as logmod
from metaindex.store import snapshot as snapmod
from metaindex.store.layout import checkpoint_name, entry_name
from metaindex.store.model import seal_json
from tests.store.helpers import DEFS, check_rows, part_table

pytestmark = pytest.mark.hostile


def _fresh_caches():
    logmod._state_cache.clear()
    snapmod._tables.clear()
    snapmod._parts.clear()
    snapmod._parts_bytes = 0


@pytest.fixture
def built(backend, tmp_path):
    """A table at version 3: v1 adds a, b; v2 adds c; v3 supersedes a."""
    t = backend.store().table(tmp_path / "data")
    t.create(DEFS)
    parts = []
    for base, objs in (
        (0, [("a", 1, 1, 1), ("b", 1, 1, 1)]),
        (1, [("c", 1, 1, 1)]),
        (2, [("a", 2, 2, 1)]),
    ):
        parts.append(t.write_part(part_table(objs), DEFS))
        t.commit(base, add_parts=[parts[-1]])
    _fresh_caches()
    return t, parts


def _log_path(t, v):
    return f"{t.path}/{entry_name(v)}"


def _name(path):
    return path.rsplit("/", 1)[1]


def test_truncated_part(built, backend):
    t, parts = built
    data = backend.read(parts[1])
    backend.write(parts[1], data[: len(data) // 2])
    with pytest.raises(IntegrityError, match=_name(parts[1]) + ".*truncated"):
        t.snapshot().metadata_table()
    check_rows(t.snapshot(1))  # a version without that part is intact


@pytest.mark.parametrize("where", [0.1, 0.5, 0.97])
def test_flipped_byte_in_part(built, backend, where):
    t, parts = built
    data = bytearray(backend.read(parts[0]))
    data[int(len(data) * where)] ^= 0x40
    backend.write(parts[0], bytes(data))
    with pytest.raises(IntegrityError, match=_name(parts[0])):
        t.snapshot(1).metadata_table()
    snap = t.snapshot()
    assert snap.object_count == 3 and len(snap.part_paths) == 3, "the log itself is intact"
    with pytest.raises(IntegrityError, match=_name(parts[0])):
        _ = snap.files  # format 7: the parts are the object list


def test_missing_part_named_by_the_log(built, backend):
    t, parts = built
    backend.delete(parts[1])
    with pytest.raises(IntegrityError, match=_name(parts[1]) + ".*missing"):
        t.snapshot().metadata_table()
    check_rows(t.snapshot(1))


def test_garbage_log_entry(built, backend):
    t, _ = built
    backend.write(_log_path(t, 2), b'{"format_version": 5, "version": ')
    with pytest.raises(DecodeError, match=entry_name(2)):
        t.snapshot()
    check_rows(t.snapshot(1))
    assert t.exists(), "a damaged index still exists (and says what is wrong on read)"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe",
        b"[1, 2]",
        b"null",
        b"[" * 100000,
        b'{"format_version": "5"}',
        b'{"format_version": 5}',
    ],
)
def test_hostile_log_entry_bytes(built, backend, data):
    t, _ = built
    backend.write(_log_path(t, 3), data)
    with pytest.raises(MetaIndexError, match=entry_name(3)):
        t.snapshot()
    check_rows(t.snapshot(2))


def test_valid_json_but_tampered_entry(built, backend):
    t, _ = built
    path = _log_path(t, 2)
    record = json.loads(backend.read(path))
    record["added_parts"][0]["rows"] = 999  # still valid JSON
    backend.write(path, json.dumps(record).encode())
    with pytest.raises(IntegrityError, match=entry_name(2) + ".*checksum"):
        t.snapshot()


def test_resealed_entry_that_contradicts_the_log(built, backend):
    t, _ = built
    path = _log_path(t, 3)
    record = json.loads(backend.read(path))
    record["superseded_objects"] = []  # a's old row said dead, but not superseded
    backend.write(path, seal_json(record))
    with pytest.raises(DecodeError, match="dead_objects do not name exactly"):
        t.snapshot()
    record["superseded_objects"] = ["a"]
    record["dead_objects"][0]["bytes"] = 10**6  # more bytes than its part holds
    backend.write(path, seal_json(record))
    _fresh_caches()
    with pytest.raises(DecodeError, match="more objects or bytes die"):
        t.snapshot()
    record["dead_objects"][0]["part"] = "parts/" + "0" * 32 + ".parquet"  # not a live part
    backend.write(path, seal_json(record))
    _fresh_caches()
    with pytest.raises(DecodeError, match="not live"):
        t.snapshot()


def test_newer_log_version_names_file_and_upgrade(built, backend):
    t, _ = built
    path = _log_path(t, 3)
    record = json.loads(backend.read(path))
    record["format_version"] = FORMAT_VERSION + 1
    record["something_new"] = {"x": 1}
    backend.write(path, seal_json(record))
    with pytest.raises(
        UnsupportedVersionError, match=entry_name(3) + f".*version {FORMAT_VERSION + 1}.*upgrade"
    ):
        t.snapshot()
    check_rows(t.snapshot(2))


def test_gap_in_the_log(built, backend):
    t, parts = built
    t.commit(3, add_parts=[t.write_part(part_table([("d", 1, 1, 1)]), DEFS)])
    backend.delete(_log_path(t, 3))
    _fresh_caches()
    with pytest.raises(DecodeError, match=entry_name(3) + ".*missing"):
        t.snapshot()
    check_rows(t.snapshot(2))


def test_a_listing_taken_during_a_vacuum_is_taken_again(built, backend):
    """A listing is not a snapshot: taken while a vacuum deletes the log's old files, it can
    keep an old checkpoint and miss the entries after it. That is not damage: list again."""
    t, _ = built
    t.commit(3, add_parts=[t.write_part(part_table([("d", 1, 1, 1)]), DEFS)])
    listing = logmod.list_log(t._storage, t.path)
    assert 3 in listing.entries
    torn = logmod.LogListing(
        tuple(v for v in listing.entries if v != 3), listing.checkpoints, listing.stamps
    )
    _fresh_caches()
    state = logmod.load_state(t._storage, t.path, 4, torn)
    _fresh_caches()
    whole = logmod.load_state(t._storage, t.path, 4, listing)
    assert (state.version, set(state.parts)) == (whole.version, set(whole.parts))


def test_damaged_checkpoint_falls_back_to_replay(built, backend):
    t, _ = built
    v = 3
    while v < CHECKPOINT_INTERVAL + 1:
        v = t.commit(v, add_parts=[t.write_part(part_table([(f"n{v}", 1, 1, 1)]), DEFS)])
    expected = dict(t.snapshot().files)
    cp = f"{t.path}/{checkpoint_name(CHECKPOINT_INTERVAL)}"
    data = bytearray(backend.read(cp))
    data[len(data) // 2] ^= 0x01
    backend.write(cp, bytes(data))
    _fresh_caches()
    assert dict(t.snapshot().files) == expected, "entries are the truth; the checkpoint is not"


def test_commit_refuses_a_damaged_part(built, backend):
    t, _ = built
    path = t.write_part(part_table([("x", 1, 1, 1)]), DEFS)
    backend.write(path, backend.read(path)[:-3])
    with pytest.raises(IntegrityError, match=_name(path) + ".*changed after it was written"):
        t.commit(3, add_parts=[path])  # the writer's process checks the bytes it wrote
    t.forget_cached()
    with pytest.raises(DecodeError, match=_name(path)):
        t.commit(3, add_parts=[path])  # any other process decodes the part
    assert t.latest_version() == 3


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_damage_to_entries_is_always_typed(built, backend, data):
    t, _ = built
    path = _log_path(t, 2)
    original = backend.read(path)
    damaged = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    try:
        backend.write(path, bytes(damaged[:cut]))
        _fresh_caches()
        try:
            t.snapshot()
        except MetaIndexError as exc:
            assert entry_name(2) in str(exc), f"the error names the file: {exc}"
        check_rows(t.snapshot(1))
    finally:
        backend.write(path, original)
