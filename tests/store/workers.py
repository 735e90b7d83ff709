"""Subprocess bodies for the crash and concurrency tests (run through a forkserver).

The crash worker drives a deterministic sequence of refresh operations ``op 0, 1, 2, ...``
(each one atomic commit that adds objects, supersedes one and removes one, recorded as
``details["op"]``), with a compaction after every 7th op and a vacuum after every 19th. It
continues from whatever the store holds, so a run killed at any moment is resumed by the next.
"""

from __future__ import annotations

import os
from datetime import timedelta

from metaindex.errors import CommitConflictError
from metaindex.store import MetadataStore
from tests.store import dirstore  # noqa: F401 - registers dirstore:// in worker processes
from tests.store.helpers import DEFS, part_table


def plan(i: int, live: dict):
    """Op ``i`` given the live objects {name: (size, mtime, rows)}: (parts, removed)."""
    adds = [(f"o{i}_{k}", 100 + i, i, k + 1) for k in range(1 + i % 3)]
    if f"o{i - 3}_0" in live:
        adds.append((f"o{i - 3}_0", 200 + i, i, 1))  # supersede
    removed = [f"o{i - 4}_1"] if f"o{i - 4}_1" in live else []
    parts = [adds[:1], adds[1:]] if i % 5 == 4 and len(adds) > 1 else [adds]
    return parts, removed


def simulate(last_op: int) -> dict:
    """The objects the store must hold after ops 0..last_op."""
    live: dict = {}
    for i in range(last_op + 1):
        parts, removed = plan(i, live)
        for name in removed:
            del live[name]
        for objs in parts:
            for name, size, mtime, rows in objs:
                live[name] = (size, mtime, rows)
    return live


def last_op(files) -> int:
    """The last op a state reflects: op i always adds o<i>_0, which is never removed."""
    return max((int(n[1:].split("_")[0]) for n in files if n.endswith("_0")), default=-1)


def crash_worker(root: str, table_uri: str, progress: str, ops: int, storage_options=None) -> None:
    def say(line: str) -> None:
        with open(progress, "a") as f:
            f.write(line + "\n")

    t = MetadataStore(root, storage_options=storage_options).table(table_uri)
    say("ready")
    if not t.exists():
        t.create(DEFS)
    first = last_op(t.snapshot().files) + 1
    for i in range(first, first + ops):
        snap = t.snapshot()
        live = {n: (e.size, e.mtime, e.rows) for n, e in snap.files.items()}
        parts, removed = plan(i, live)
        paths = [t.write_part(part_table(objs), DEFS) for objs in parts]
        t.commit(
            snap.version,
            add_parts=paths,
            removed_objects=removed,
            operation="refresh",
            details={"op": i},
        )
        say(f"op {i}")
        if i % 7 == 6:
            t.compact(target_file_size=1 << 20)
        if i % 19 == 18:
            t.vacuum(retain=timedelta(seconds=0.5), force=True)
    say("done")


def concurrent_worker(
    root: str, table_uri: str, writer: int, commits: int, go: str, out: str, storage_options=None
) -> None:
    """``commits`` commits, each adding w<writer>_<j> and superseding the shared "hot"
    object; a CommitConflictError is answered by recomputing from a fresh snapshot."""
    import json
    import time

    t = MetadataStore(root, storage_options=storage_options).table(table_uri)
    while not os.path.exists(go):
        time.sleep(0.001)
    results = []
    for j in range(commits):
        conflicts = 0
        while True:
            snap = t.snapshot()
            mtime = writer * 1000 + j
            part = t.write_part(
                part_table([(f"w{writer}_{j}", 1, mtime, 1), ("hot", 2, mtime, 1)]), DEFS
            )
            try:
                v = t.commit(snap.version, add_parts=[part], details={"writer": writer, "j": j})
                break
            except CommitConflictError:
                conflicts += 1
                t._storage.delete(part)
        results.append({"j": j, "version": v, "conflicts": conflicts})
    with open(out, "w") as f:
        json.dump(results, f)


def create_race_worker(
    root: str, name: str, temp_dir: str, go: str, out: str, storage_options=None
) -> None:
    """One contender for create-if-absent of ``<root>/<name>``."""
    import time
    import uuid

    from metaindex.store.schemes import open_storage

    storage, root = open_storage(root, storage_options=storage_options)
    storage.makedirs(root)
    while not os.path.exists(go):
        time.sleep(0.0005)
    won = storage.create_if_absent(
        storage.join(root, name),
        f"{os.getpid()}\n".encode(),
        os.path.join(temp_dir, uuid.uuid4().hex),
    )
    with open(out, "w") as f:
        f.write("won" if won else "lost")


# ---------------------------------------------------------------------------- fault injection

FAULT_GROUPS = 6


def fault_file(k: int, version: int):
    """File ``k`` at ``version``: ids k*1000 + version*10 + 0..4, group g<(k + version) % 6>."""
    import pyarrow as pa

    ids = [k * 1000 + version * 10 + j for j in range(5)]
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "grp": [f"g{(k + version) % FAULT_GROUPS}"] * len(ids)}
    )


def change_table(table_root: str, rng) -> None:
    """Add, rewrite or delete one file of the table, atomically (a rename or an unlink): a
    writer killed here leaves the table as it was, or changed."""
    import pyarrow.parquet as pq

    names = sorted(n for n in os.listdir(table_root) if n.endswith(".parquet"))
    action = rng.choice(["add", "add", "rewrite", "delete"]) if len(names) > 4 else "add"
    if action == "delete":
        os.remove(os.path.join(table_root, rng.choice(names)))
        return
    k = rng.randrange(10_000) if action == "add" else int(rng.choice(names)[1:6])
    staging = os.path.join(os.path.dirname(table_root), "staging")
    os.makedirs(staging, exist_ok=True)
    temp = os.path.join(staging, f"{os.getpid()}-{rng.randrange(10**9)}.parquet")
    pq.write_table(fault_file(k, rng.randrange(1, 100)), temp)
    os.replace(temp, os.path.join(table_root, f"f{k:05d}.parquet"))


def fault_worker(
    kind: str, store_root: str, table_root: str, storage_options, seed: int, progress: str
) -> None:
    """One writer of the fault-injection test, until it is killed: ``refresh`` changes the
    table and refreshes, ``compact`` compacts, ``vacuum`` vacuums with any retain the API
    accepts (below the floor with ``force``). A concurrent writer winning, or the object
    store failing a request, is reported and the loop goes on; anything else ends the worker
    with its traceback (the test fails)."""
    import logging
    import random
    import time

    from metaindex import MetaIndex
    from metaindex.engine.executors import SerialExecutor
    from metaindex.errors import StorageError

    logging.getLogger("metaindex").setLevel(logging.ERROR)  # forced vacuums warn each time
    rng = random.Random(seed)
    mi = MetaIndex(table_root, store=store_root, storage_options=storage_options)
    with open(progress, "a") as f:
        f.write("ready\n")
    while True:
        try:
            if kind == "refresh":
                change_table(table_root, rng)
                mi.refresh(executor=SerialExecutor())
            elif kind == "compact":
                mi.compact()
            else:
                retain = rng.choice([0.0, 0.0, 0.3, 2.0, 3600.0])
                mi.vacuum(retain, force=retain < 3600)
            outcome = "ok"
        except (CommitConflictError, StorageError) as exc:
            outcome = type(exc).__name__
        with open(progress, "a") as f:
            f.write(f"{kind} {outcome}\n")
        time.sleep(rng.uniform(0, 0.05 if kind == "refresh" else 0.6))


def _warm_up() -> None:
    """Do the lazy imports (pandas via pa.array, codecs, kernels) once in the forkserver, so
    forked workers spend their lives on store operations."""
    from metaindex.store.layout import TableIdentity
    from metaindex.store.parts import encode_part

    encode_part(part_table([("warm", 1, 1, 1)]), DEFS, TableIdentity.for_uri("/warm"), None)
    import metaindex.api  # noqa: F401 - the fault workers' table API, imported once
    import metaindex.engine.refresh  # noqa: F401


_warm_up()
