"""Compaction: rewriting small parts, and parts holding dead rows, into full clustered ones.

What is rewritten (:func:`plan`): the parts that are not full (fewer than
:data:`~metaindex.store.MAX_PART_OBJECTS` objects and ``target_file_size`` bytes), and those
with dead rows (a full part once :data:`COMPACT_DEAD_FRACTION` of its rows are dead); nothing
when that is one part without dead rows. The parts are taken in the order of their summaries'
sort key (``Index.sort_key`` of the first index whose kind has one: min/max's ``min``;
:func:`batches`), at most :data:`COMPACT_BATCH_OBJECTS` live objects sorted in memory at once,
and their live rows written sorted by that key (:func:`clustered`) into parts of about
``target_file_size`` bytes, so part summaries stay selective. One atomic commit replaces them;
on a conflict with a concurrent writer the compaction starts over from a fresh snapshot (at
most :data:`_ATTEMPTS` times), deleting the parts it wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import CommitConflictError, DecodeError, IntegrityError
from metaindex.index import Index
from metaindex.store.model import MAX_PART_OBJECTS, IndexDef
from metaindex.store.snapshot import Snapshot
from metaindex.store.summary import index_for

__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "COMPACT_DEAD_FRACTION",
    "COMPACT_BATCH_OBJECTS",
    "compact",
    "plan",
    "batches",
    "clustered",
]

DEFAULT_TARGET_FILE_SIZE = 32 * 1024 * 1024
_ATTEMPTS = 3
COMPACT_DEAD_FRACTION = 0.1
"""A full part is rewritten by compaction once this share of its rows is dead."""
COMPACT_BATCH_OBJECTS = 16 * MAX_PART_OBJECTS
"""The most objects compaction sorts and rewrites in memory at once."""


def compact(ts, target_file_size: int, progress=None) -> int:
    """See :meth:`metaindex.store.TableStore.compact`."""
    if not isinstance(target_file_size, int) or target_file_size <= 0:
        raise ValueError("target_file_size must be a positive number of bytes")
    for attempt in range(_ATTEMPTS):
        snap = ts.snapshot()
        chosen = plan(snap, target_file_size)
        if not chosen:
            return snap.version
        written = []
        try:
            done = 0
            for batch in batches(snap, chosen):
                tables = []
                for path in batch:
                    tables.append(snap.read_parts([path]))
                    done += 1
                    if progress is not None:
                        progress(done, len(chosen))
                written += _rewrite(ts, snap, batch, tables, target_file_size)
            return ts.commit(
                snap.version,
                add_parts=written,
                remove_parts=chosen,
                operation="compact",
                details={
                    "target_file_size": target_file_size,
                    "parts_rewritten": len(chosen),
                    "parts_written": len(written),
                },
            )
        except (CommitConflictError, IntegrityError, DecodeError) as exc:
            for path in written:  # never committed, nobody else knows their names
                ts._storage.delete(path)
            stale = isinstance(exc, CommitConflictError) or ts.moved_on(snap)
            if attempt == _ATTEMPTS - 1 or not stale:
                raise
    raise AssertionError("unreachable")


def _rewrite(ts, snap: Snapshot, paths: list, tables: list, target: int) -> list:
    """Write the live rows of ``paths`` (read as ``tables``) sorted by the leading sort key
    into parts of about ``target`` bytes; their paths."""
    table = pa.concat_tables(tables, promote_options="permissive")
    defs = [
        d for d in snap.index_defs if not pa.types.is_null(table.schema.field(d.storage_name).type)
    ]
    table = clustered(
        table.select(
            [c for c in table.column_names if not pa.types.is_null(table.schema.field(c).type)]
        ),
        defs,
    )
    estimate = sum(
        snap.parts[p].bytes * snap.live_counts(p)[0] // max(snap.parts[p].rows, 1) for p in paths
    )
    per_row = max(1, estimate // max(table.num_rows, 1))
    rows = max(1, min(MAX_PART_OBJECTS, target // per_row))
    return ts.write_parts(table, defs, encryption=snap.encryption, max_objects=rows)


def plan(snap: Snapshot, target: int) -> list[str]:
    """The parts to rewrite, oldest first: those not full (fewer than MAX_PART_OBJECTS
    objects and ``target`` bytes) and those with at least COMPACT_DEAD_FRACTION of their rows
    dead (any dead row in a part that is not full); none when that is a single part without
    dead rows (rewriting it alone gains nothing)."""
    chosen, dead = [], False
    for path, rec in snap.parts.items():
        live = snap.live_counts(path)[0]
        full = rec.rows >= MAX_PART_OBJECTS or rec.bytes >= target
        if live < rec.rows and (not full or rec.rows - live >= COMPACT_DEAD_FRACTION * rec.rows):
            dead = True
        elif full:
            continue
        chosen.append(path)
    return chosen if dead or len(chosen) > 1 else []


def batches(snap: Snapshot, chosen: list) -> list:
    """``chosen`` ordered by their summaries' sort key (clustered parts stay together) and
    cut into batches of at most COMPACT_BATCH_OBJECTS live objects, each rewritten (and
    sorted) in memory on its own."""
    if len(chosen) > 1:

        def summaries(d: IndexDef) -> pa.Array | None:
            table = snap.summary_table()
            if d.storage_name not in table.column_names:
                return None
            where = {p: i for i, p in enumerate(snap.part_paths)}
            return (
                table.column(d.storage_name)
                .combine_chunks()
                .take(pa.array([where[p] for p in chosen], pa.int64()))
            )

        keys = _sort_key(snap.index_defs, summaries)
        if keys is not None:
            try:
                order = pc.array_sort_indices(keys, null_placement="at_end").to_pylist()
                chosen = [chosen[i] for i in order]
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
                pass
    out: list[list[str]] = []
    current: list[str] = []
    size = 0
    for path in chosen:
        live = snap.live_counts(path)[0]
        if current and size + live > COMPACT_BATCH_OBJECTS:
            out.append(current)
            current, size = [], 0
        current.append(path)
        size += live
    if current:
        out.append(current)
    return out


def clustered(table: pa.Table, defs: Sequence[IndexDef]) -> pa.Table:
    """The rows sorted by the sort key of the first index whose kind gives one
    (``Index.sort_key``: min/max's ``min``), rows without a key last."""
    keys = _sort_key(
        defs,
        lambda d: (
            table.column(d.storage_name).combine_chunks()
            if d.storage_name in table.column_names
            else None
        ),
    )
    if keys is None:
        return table
    try:
        order = pc.array_sort_indices(keys, null_placement="at_end")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return table  # a type Arrow cannot sort: unclustered, still correct
    return table.take(order)


def _sort_key(
    defs: Sequence[IndexDef], column: Callable[[IndexDef], pa.Array | None]
) -> pa.Array | None:
    """The sort key of the first definition whose kind gives one for its ``column(d)``
    (None: no order)."""
    for d in defs:
        ix = index_for(d)
        if ix is None or type(ix).sort_key is Index.sort_key:
            continue
        metadata = column(d)
        if (
            metadata is None
            or pa.types.is_null(metadata.type)
            or not ix.metadata_type_ok(metadata.type)
        ):
            return None
        try:
            return ix.sort_key(metadata)
        except (KeyError, pa.ArrowException, TypeError, ValueError):
            return None
    return None
