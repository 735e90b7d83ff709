"""Tables written by deltalake (delta-rs), read by :mod:`metaindex.delta` and compared, at every
version, with what deltalake itself says the table holds (``get_add_actions``): paths, sizes,
modification times, partition values. Changes between consecutive versions must turn one
snapshot into the next."""

from __future__ import annotations

import datetime as dt
import os
from itertools import pairwise
from urllib.parse import unquote

import pyarrow as pa
import pytest

from metaindex.delta import DeltaLog
from metaindex.errors import DeltaVersionError

deltalake = pytest.importorskip("deltalake", reason="the Delta tests need deltalake (test extra)")


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    parts = ["a b", "x/y", None, "é=€", "100%"]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([parts[i % len(parts)] for i in ids]),
            "d": pa.array([dt.date(2024, 1, 1 + i % 3) if i % 4 else None for i in ids]),
            "x": pa.array([i * 0.5 for i in ids]),
        }
    )


def _write_history(path: str) -> None:
    """A table through deltalake's operations, with its checkpoints and a log compaction
    file."""
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(path, _rows(0, 12), partition_by=["p", "d"])
    write_deltalake(path, _rows(12, 8), mode="append")
    table = DeltaTable(path)
    table.delete("id % 5 = 0")
    table.update(updates={"x": "x + 100"}, predicate="id < 6")
    table.create_checkpoint()
    table.merge(
        _rows(15, 10), predicate="t.id = s.id", source_alias="s", target_alias="t"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    write_deltalake(path, _rows(40, 6), mode="append")
    table = DeltaTable(path)
    table.optimize.compact()
    table.optimize.z_order(["x"])
    table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    table.create_checkpoint()
    write_deltalake(path, _rows(60, 3), mode="append")
    write_deltalake(path, _rows(70, 5), mode="overwrite")
    table = DeltaTable(path)  # the commits after the last checkpoint, compacted
    table.compact_logs(table.version() - 1, table.version())


def _theirs(path: str, version: int) -> dict:
    table = deltalake.DeltaTable(path, version=version)
    actions = pa.table(table.get_add_actions(flatten=True))
    out = {}
    for row in actions.to_pylist():
        values = {k[len("partition.") :]: v for k, v in row.items() if k.startswith("partition.")}
        out[unquote(row["path"])] = (row["size_bytes"], row["modification_time"], values)
    return out


def _ours(snapshot) -> dict:
    return {f.path: (f.size, f.modification_time, f.partition_values) for f in snapshot.files}


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("deltalake") / "events")
    _write_history(path)
    return path


def test_every_version_matches_deltalake(rs_table):
    log = DeltaLog(rs_table)
    latest = log.latest_version()
    assert latest == deltalake.DeltaTable(rs_table).version()
    for version in range(latest + 1):
        snap = log.snapshot(version)
        assert snap.version == version
        assert _ours(snap) == _theirs(rs_table, version), f"version {version} differs"
        for f in snap.files:  # every file the snapshot names is there (VACUUM spared them)
            if version == latest:
                assert os.path.getsize(os.path.join(rs_table, f.path)) == f.size


def test_checkpoints_are_read_and_agree_with_replaying_every_commit(rs_table):
    log = DeltaLog(rs_table)
    names = os.listdir(os.path.join(rs_table, "_delta_log"))
    checkpoints = sorted(n for n in names if ".checkpoint." in n)
    assert checkpoints, "deltalake wrote no checkpoint"
    latest = log.snapshot()
    assert any(".checkpoint." in f for f in latest.log_files), latest.log_files
    from_commits = {f.key for f in DeltaLog(rs_table).snapshot(latest.version).files}
    assert {f.key for f in latest.files} == from_commits
    assert log.last_checkpoint()["version"] == int(checkpoints[-1].split(".")[0])
    [compacted] = [n for n in names if n.endswith(".compacted.json")]
    assert f"_delta_log/{compacted}" in latest.log_files, "the compaction replaces its commits"
    assert not {f"_delta_log/{latest.version:020d}.json"} & set(latest.log_files)


def test_changes_between_consecutive_versions_turn_one_snapshot_into_the_next(rs_table):
    log = DeltaLog(rs_table)
    snaps = [log.snapshot(v) for v in range(log.latest_version() + 1)]
    for before, after in pairwise(snaps):
        changes = log.changes(before.version, after.version)
        assert not changes.from_snapshots
        assert changes.apply(before.files) == list(after.files)
        old, new = {f.key for f in before.files}, {f.key for f in after.files}
        assert {f.key for f in changes.added} - old == new - old
        assert {f.key for f in changes.removed} & new == set()
        assert old - new <= {f.key for f in changes.removed}
        [commit] = changes.commits
        assert commit.version == after.version and commit.operation
    wide = log.changes(0)
    assert wide.apply(snaps[0].files) == list(snaps[-1].files)
    assert [c.operation for c in wide.commits][:3] == ["WRITE", "DELETE", "UPDATE"]


def test_time_travel_by_version_and_timestamp(rs_table):
    log = DeltaLog(rs_table)
    for version in range(log.latest_version() + 1):
        snap = log.snapshot(version)
        assert log.version_at(snap.timestamp) == version
        assert log.snapshot(timestamp=snap.timestamp).version == version
        when = dt.datetime.fromtimestamp(snap.timestamp / 1000, dt.timezone.utc)
        assert log.snapshot(timestamp=when).version == version
    first = log.snapshot(0).timestamp
    with pytest.raises(DeltaVersionError, match="before the earliest"):
        log.version_at(first - 1)
    with pytest.raises(DeltaVersionError, match="after the latest"):
        log.version_at(log.snapshot().timestamp + 1)
    with pytest.raises(TypeError, match="naive"):
        log.version_at(dt.datetime(2024, 1, 1))
    with pytest.raises(DeltaVersionError, match="does not exist"):
        log.snapshot(log.latest_version() + 1)


def test_schema_and_partition_types(rs_table):
    snap = DeltaLog(rs_table).snapshot()
    assert snap.partition_columns == ("p", "d")
    assert snap.schema.field("d").type == pa.date32()
    assert snap.schema.field("x").type == pa.float64()
    assert snap.physical_schema().names == ["id", "x"]
    values = {f.partition_values["d"] for f in snap.files}
    assert values <= {None, dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)}
