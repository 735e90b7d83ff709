"""Crash safety and concurrency with real processes.

Every test runs on a local directory and on S3 (moto's server; create-if-absent is a PUT with
If-None-Match: *). Crashes: one store, 32 trials (16 on S3); each trial starts a worker that
resumes the deterministic refresh / compact / vacuum sequence (tests/store/workers.py) and
SIGKILLs it at a random moment. After every kill the store must open at its last committed
version: the objects equal the simulation of every op up to the last one committed (which is
the last one the worker reported, or the one after if the kill fell between the log entry and
the report), each metadata row appears once with the right values, the log's op numbers have
no gap and no duplicate, and nothing but parts/ holds files the log does not name.

Concurrency: two writers commit at the same time, each superseding one shared object, so
every pair of concurrent commits conflicts; exactly one wins each version, the loser gets
CommitConflictError and retries from a fresh snapshot, and the final state is right.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
from collections import Counter
from datetime import timedelta

import pytest

from metaindex.store import log as logmod
from metaindex.store import snapshot as snapmod
from metaindex.store.layout import parse_log_name
from metaindex.store.log import read_checkpoint, read_entry
from tests.store.helpers import DEFS, check_rows
from tests.store.workers import (
    concurrent_worker,
    crash_worker,
    create_race_worker,
    last_op,
    simulate,
)

TRIALS = 32
_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(["tests.store.workers"])


def _fresh_caches():
    logmod._state_cache.clear()
    snapmod._tables.clear()
    snapmod._parts.clear()


def _wait_for(path, text, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path) and text in open(path).read():
            return
        time.sleep(0.002)
    raise AssertionError(f"worker never wrote {text!r} to {path}")


def _verify(backend, uri, reported: int, stats: Counter, seen: set) -> int:
    """Check the store after a kill; returns the last committed op."""
    _fresh_caches()
    t = backend.store().table(uri)
    if not t.exists():
        assert reported == -1, f"op {reported} was reported committed, but no index exists"
        stats["killed before create finished"] += 1
        return -1
    snap = t.snapshot()
    last = last_op(snap.files)
    assert last in (reported, reported + 1), (
        f"store holds op {last}, worker reported {reported}: a committed op was lost or invented"
    )
    if last == reported + 1:
        stats["killed between log entry and report"] += 1
    expected = simulate(last)
    got = {n: (e.size, e.mtime, e.rows) for n, e in snap.files.items()}
    assert got == expected, f"state after op {last} differs from the simulation"
    check_rows(snap)
    ops = [e.details["op"] for e in t.history() if "op" in e.details]
    assert ops == list(range(ops[0] if ops else 0, (ops[0] if ops else 0) + len(ops))), (
        f"op gap or duplicate in log: {ops}"
    )
    for name in backend.listdir(f"{t.path}/_log"):
        parsed = parse_log_name(name)
        assert parsed is not None, f"stray file in _log/: {name}"
        if parsed[1] == "entry":
            read_entry(t._storage, t.path, parsed[0])
        else:
            read_checkpoint(t._storage, t.path, parsed[0])
    listed = backend.listdir(t.path)
    if backend.name != "local" and "parts" not in listed:
        # an object store has no empty directories: killed before the first part was written
        assert not snap.parts, "live parts but no parts/ prefix"
        listed.insert(1, "parts")
    assert listed == ["_log", "parts", "table.json"], listed
    parts = set(backend.listdir(f"{t.path}/parts"))
    live = {p.split("/")[1] for p in snap.parts}
    assert live <= parts, "every live part exists"
    new = parts - live - seen
    seen.update(parts)
    if any(p.startswith("_tmp-") for p in new):
        stats["killed inside create-if-absent (temp file left)"] += 1
    if any(p.endswith(".parquet") for p in new):
        stats["killed with an uncommitted part written"] += 1
    return last


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_or_duplicates(backend, tmp_path, capsys):
    rng = random.Random(20240605)
    uri = str(tmp_path / "data")
    trials = TRIALS if backend.name == "local" else TRIALS // 2
    wanted = 40 if backend.name == "local" else trials
    reported, stats, last, seen = -1, Counter(), -1, set()
    trial = 0
    # The planned trials kill at random moments; on a loaded machine they may commit fewer ops
    # than wanted, so top-up trials (at most as many again) each wait for the worker to report
    # a new op before killing it: the crash checks run on every trial, and the sequence always
    # gets through compactions and vacuums, however slow the machine.
    while trial < trials or (last < wanted and trial < 2 * trials):
        progress = str(tmp_path / f"progress{trial}")
        proc = _ctx.Process(
            target=crash_worker, args=(backend.root, uri, progress, 10_000, backend.options)
        )
        proc.start()
        _wait_for(progress, "ready")
        if trial >= trials:
            _wait_for(progress, "op ", timeout=600.0)
            time.sleep(backend.pace * rng.uniform(0, 0.05))
        else:
            time.sleep(
                backend.pace * (rng.uniform(0, 0.03) if trial % 4 == 0 else rng.uniform(0.02, 0.5))
            )
        proc.kill()
        proc.join()
        assert proc.exitcode == -9, f"worker ended on its own (exit {proc.exitcode})"
        lines = open(progress).read().split("\n")
        ops = [int(line.split()[1]) for line in lines if line.startswith("op ")]
        if ops:
            reported = ops[-1]
        before = last
        last = _verify(backend, uri, reported, stats, seen)
        assert last >= before, "the store went back in time"
        reported = max(reported, last)
        trial += 1
    assert last >= wanted, f"only {last + 1} ops committed over {trial} trials"
    t = backend.store().table(uri)
    files = dict(t.snapshot().files)
    backend.age(backend.files(f"{t.path}/parts"), 3600)  # temporary files have a grace time
    t.vacuum(retain=timedelta(0), force=True)
    snap = t.snapshot()
    assert dict(snap.files) == files, "vacuum changed no object"
    assert set(backend.listdir(f"{t.path}/parts")) == {p.split("/")[1] for p in snap.parts}, (
        "after vacuum(retain=0) parts/ holds exactly the live parts"
    )
    check_rows(snap)
    assert t.check().healthy
    with capsys.disabled():
        print(
            f"\n[crash {backend.name}] {trials} kills, {last + 1} ops committed, "
            f"version {snap.version}; " + ", ".join(f"{k}: {v}" for k, v in sorted(stats.items()))
        )


@pytest.mark.slow
def test_two_writers_one_winner_per_version(backend, tmp_path, capsys):
    uri = str(tmp_path / "data")
    t = backend.store().table(uri)
    t.create(DEFS)
    go, commits = str(tmp_path / "go"), 12
    outs = [str(tmp_path / f"out{w}") for w in range(2)]
    procs = [
        _ctx.Process(
            target=concurrent_worker,
            args=(backend.root, uri, w, commits, go, outs[w], backend.options),
        )
        for w in range(2)
    ]
    for p in procs:
        p.start()
    time.sleep(0.3)
    open(go, "w").close()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0, "a writer failed with something other than a conflict"
    results = {w: json.load(open(outs[w])) for w in range(2)}
    versions = [r["version"] for w in results for r in results[w]]
    assert len(versions) == len(set(versions)) == 2 * commits, "one winner per version"
    history = t.history()
    assert [e.version for e in history] == list(range(2 * commits + 1))
    by_version = {e.version: (e.details["writer"], e.details["j"]) for e in history[1:]}
    for w in results:
        for r in results[w]:
            assert by_version[r["version"]] == (w, r["j"]), "the log holds the winner's commit"
    snap = t.snapshot()
    last_writer, last_j = by_version[snap.version]
    assert snap.files["hot"].mtime == last_writer * 1000 + last_j, "last commit's hot row wins"
    assert set(snap.files) == {"hot"} | {f"w{w}_{j}" for w in range(2) for j in range(commits)}
    check_rows(snap)
    conflicts = sum(r["conflicts"] for w in results for r in results[w])
    with capsys.disabled():
        print(
            f"\n[concurrency {backend.name}] 2 writers x {commits} commits: {conflicts} "
            "conflicts raised "
            "and retried, every version won exactly once"
        )


@pytest.mark.slow
def test_create_if_absent_has_exactly_one_winner(backend, tmp_path):
    for round_ in range(4):
        name = f"target{round_}"
        go = str(tmp_path / f"go{round_}")
        outs = [str(tmp_path / f"r{round_}_{i}") for i in range(6)]
        procs = [
            _ctx.Process(
                target=create_race_worker,
                args=(backend.root, name, str(tmp_path), go, o, backend.options),
            )
            for o in outs
        ]
        for p in procs:
            p.start()
        time.sleep(0.2)
        open(go, "w").close()
        for p in procs:
            p.join(60)
        verdicts = Counter(open(o).read() for o in outs)
        assert verdicts == {"won": 1, "lost": 5}, verdicts
        winner = int(backend.read(f"{backend.root}/{name}"))
        assert winner in {p.pid for p in procs}
    assert not [n for n in os.listdir(tmp_path) if len(n) == 32], "temp files cleaned up"
