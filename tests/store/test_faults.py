"""Fault injection: writers racing, killed, and an object store that goes away.

On a local directory and on S3 (moto's server, reached through a TCP proxy that is killed and
started again: to the writers, a server restart; half of them give up on a failed request
after one retry, so operations also end half-done), six writer processes race for about a
minute: three change the table and refresh it, one compacts, two vacuum with any ``retain``
the API accepts (0 and fractions of a second with ``force``, an hour without). Every round,
random writers are SIGKILLed and started again, and on S3 the server "restarts". Afterwards:

* every version the log holds opens, or ``check()`` reports it damaged;
* queries are right: ``prune`` keeps every file that holds a matching row, as reading every
  file with pyarrow says;
* one ``refresh()`` leaves a store ``check()`` calls healthy, and queries skip again.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from collections import Counter
from datetime import timedelta

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.errors import MetaIndexError, StoreDamageError
from tests.store.tcpproxy import Proxy
from tests.store.workers import FAULT_GROUPS, change_table, fault_worker

ROUNDS = 14
KINDS = ("refresh", "refresh", "refresh", "compact", "vacuum", "vacuum")
_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(["tests.store.workers"])


class _Writers:
    def __init__(self, tmp_path, store_root, table_root, options):
        self.tmp_path, self.store_root, self.table_root = tmp_path, store_root, table_root
        self.options = options
        self.procs: dict = {}
        self.starts = Counter()
        self.kills = 0

    def start(self, slot: int) -> None:
        self.starts[slot] += 1
        progress = str(self.tmp_path / f"w{slot}-{self.starts[slot]}")
        options = self.options
        if options and slot % 2:  # half the writers give up at once on a failed request
            options = {
                **options,
                "retry_config": {"max_retries": 1, "retry_timeout": timedelta(seconds=1)},
            }
        proc = _ctx.Process(
            target=fault_worker,
            args=(
                KINDS[slot],
                self.store_root,
                self.table_root,
                options,
                slot * 1000 + self.starts[slot],
                progress,
            ),
        )
        proc.start()
        self.procs[slot] = (proc, progress)

    def check_alive(self) -> None:
        for slot, (proc, _progress) in self.procs.items():
            assert proc.exitcode is None, (
                f"{KINDS[slot]} writer {slot} ended on its own ({proc.exitcode}): it met an "
                f"error that is neither a conflict nor a storage failure (see its output)"
            )

    def kill(self, slot: int) -> None:
        proc, _ = self.procs[slot]
        proc.kill()
        proc.join()
        self.kills += 1

    def outcomes(self) -> Counter:
        seen = Counter()
        for path in self.tmp_path.glob("w*-*"):
            for line in path.read_text().split("\n"):
                if " " in line:
                    seen[line] += 1
        return seen


def _matching(table_root: str, column: str, test) -> set:
    """The files holding a row that ``test(column array)`` matches, read one by one."""
    out = set()
    for name in os.listdir(table_root):
        if name.endswith(".parquet"):
            values = pq.read_table(os.path.join(table_root, name)).column(column)
            if pc.any(test(values)).as_py():
                out.add(name)
    return out


def _queries(rng) -> list:
    out = []
    for _ in range(6):
        k = rng.randrange(10_000)
        x = k * 1000 + rng.randrange(1, 100) * 10 + rng.randrange(5)
        out.append((f"id = {x}", "id", lambda a, x=x: pc.equal(a, x)))
        out.append(
            (
                f"id BETWEEN {k * 1000} AND {k * 1000 + 2000}",
                "id",
                lambda a, k=k: pc.and_(
                    pc.greater_equal(a, k * 1000), pc.less_equal(a, k * 1000 + 2000)
                ),
            )
        )
    for g in range(0, FAULT_GROUPS, 2):
        out.append((f"grp = 'g{g}'", "grp", lambda a, g=g: pc.equal(a, f"g{g}")))
    return out


def _assert_queries_right(mi, table_root, rng) -> int:
    """Every query keeps every file holding a match; returns how many files were skipped."""
    skipped = 0
    names = {n for n in os.listdir(table_root) if n.endswith(".parquet")}
    for sql, column, test in _queries(rng):
        expected = _matching(table_root, column, test)
        result = mi.prune(sql)
        kept = {os.path.basename(p) for p in result.kept}
        assert expected <= kept, f"{sql}: skipped {sorted(expected - kept)}, which match"
        skipped += len(names - kept)
    return skipped


def _assert_versions_open_or_reported(mi) -> tuple:
    t = mi._table_store
    report = t.check()
    try:
        versions = [e.version for e in t.history()]
    except StoreDamageError:
        assert not report.healthy, "history() saw damage that check() did not"
        versions = list(range(report.oldest_version, report.version + 1))
    unusable = []
    for v in versions:
        try:
            t.snapshot(v).file_table()
        except MetaIndexError as exc:
            unusable.append(v)
            assert not report.healthy and any(
                p.version == v or (p.path and p.path in str(exc)) for p in report.problems
            ), f"version {v} does not open ({exc}) and check() does not say so"
    return report, versions, unusable


@pytest.mark.slow
def test_racing_killed_writers_and_server_restarts(backend, tmp_path, capsys):
    rng = random.Random(27)
    table_root = tmp_path / "table"
    table_root.mkdir()
    for _ in range(8):
        change_table(str(table_root), rng)
    proxy = None
    options = backend.options
    if backend.name == "s3":
        proxy = Proxy(int(backend.server.endpoint.rsplit(":", 1)[1])).start()
        options = {**backend.options, "endpoint": proxy.endpoint}
    mi = MetaIndex(str(table_root), store=backend.root, storage_options=backend.options)
    (
        mi.index_builder()
        .add_min_max_index("id")
        .add_bloom_filter_index("id")
        .add_value_list_index("grp")
        .build(executor=SerialExecutor())
    )
    writers = _Writers(tmp_path, backend.root, str(table_root), options)
    restarts = 0
    started = time.monotonic()
    try:
        for slot in range(len(KINDS)):
            writers.start(slot)
        for _ in range(ROUNDS):
            time.sleep(rng.uniform(1.5, 4.0))
            writers.check_alive()
            for slot in rng.sample(range(len(KINDS)), rng.randint(1, 3)):
                writers.kill(slot)
                writers.start(slot)
            if proxy is not None and rng.random() < 0.6:
                proxy.restart(rng.uniform(0.1, 1.0))
                restarts += 1
        writers.check_alive()
    finally:
        for slot in list(writers.procs):
            writers.kill(slot)
        if proxy is not None:
            proxy.kill()
    chaos = time.monotonic() - started

    mi = MetaIndex(str(table_root), store=backend.root, storage_options=backend.options)
    report, versions, unusable = _assert_versions_open_or_reported(mi)
    _assert_queries_right(mi, str(table_root), rng)
    mi.refresh(executor=SerialExecutor())
    healed = mi.check()
    assert healed.healthy, f"one refresh() leaves a healthy store: {healed.problems}"
    assert not mi.describe().damage
    skipped = _assert_queries_right(mi, str(table_root), rng)
    assert skipped > 0, "after the refresh the index skips again"
    outcomes = writers.outcomes()
    committed = sum(n for line, n in outcomes.items() if line.endswith(" ok"))
    assert outcomes["refresh ok"] > 10 and outcomes["vacuum ok"] > 3, outcomes
    with capsys.disabled():
        print(
            f"\n[faults {backend.name}] {chaos:.0f} s, {writers.kills} kills, {restarts} "
            f"server restarts, {committed} operations done "
            f"({', '.join(f'{k}: {v}' for k, v in sorted(outcomes.items()))}); "
            f"{len(versions)} versions in the log, {len(unusable)} unusable, "
            f"{len(report.problems)} problem(s) before the refresh"
        )
