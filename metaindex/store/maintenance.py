"""Vacuum and repair: deleting what no version needs, and making a damaged store whole again.

**Vacuum** (specs/metadata-store.md, "Vacuum") never deletes a part a version may name: it first
commits a ``vacuum`` entry listing the parts it is about to delete (``doomed_parts``: none of
the versions it keeps names them, and each is older than ``retain``), taking out of the list
any part a concurrent commit added before the entry landed; only then does it delete them. A
commit that lands after the vacuum entry and adds one of them is refused with
:class:`~metaindex.errors.CommitConflictError` (the committer recomputes its change), so no
entry ever names a deleted part. ``retain`` has a floor (:data:`MIN_RETAIN`): below it,
versions a concurrent reader or a slow writer still uses would go; ``force=True`` allows it.

**Repair** makes a damaged store whole without dropping it: it commits a ``repair`` entry
holding the whole state of the newest version that can be read (the latest, unless the log is
broken above it), less its damaged parts, writes its checkpoint, and deletes the log below it
(the versions the damage made unusable with the rest of the history). The files of the dropped
parts are then simply not indexed: the ``refresh`` that called the repair indexes them again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from metaindex.errors import (
    CommitConflictError,
    MetaIndexError,
    StoreDamageError,
    UnsafeRetentionError,
    UnsupportedVersionError,
)
from metaindex.store.commit import now_ms
from metaindex.store.layout import PARTS_DIR, checkpoint_name, entry_name, is_part_name
from metaindex.store.log import (
    State,
    VacuumedError,
    latest_for_writer,
    list_log,
    log_start,
    read_entry,
    remember_state,
    write_checkpoint,
)
from metaindex.store.model import LogEntry
from metaindex.store.tableschema import schema_record

__all__ = ["MIN_RETAIN", "TEMP_GRACE", "VacuumResult", "RepairResult", "vacuum", "repair"]

log = logging.getLogger(__name__)

MIN_RETAIN = timedelta(hours=1)
"""The least ``retain`` :func:`vacuum` accepts without ``force=True``."""
TEMP_GRACE = timedelta(minutes=10)
"""Temporary files (``parts/_tmp-*``, made and renamed away within a commit) younger than this
are never deleted, whatever ``retain`` says."""
_ATTEMPTS = 30
_REPAIR_ATTEMPTS = 3


@dataclass(frozen=True)
class VacuumResult:
    """What :meth:`TableStore.vacuum` did.

    Attributes:
        version: the version of the vacuum's own log entry.
        oldest_version: the oldest version still readable.
        deleted_parts: relative paths of the files deleted from ``parts/``.
        deleted_log_entries: versions whose entries (and checkpoints) were deleted.
    """

    version: int
    oldest_version: int
    deleted_parts: tuple
    deleted_log_entries: tuple


@dataclass(frozen=True)
class RepairResult:
    """What :meth:`TableStore.repair` did.

    Attributes:
        version: the version of the repair entry (the log's start from now on).
        from_version: the version whose state it kept.
        problems: the :class:`~metaindex.store.health.Problem` s it found.
        dropped_parts: damaged parts left out (their files are no longer indexed).
        deleted_log_entries: the versions deleted below the repair.
    """

    version: int
    from_version: int
    problems: tuple
    dropped_parts: tuple
    deleted_log_entries: tuple


def check_retain(retain, force: bool) -> None:
    """TypeError / ValueError for a bad ``retain``; :class:`UnsafeRetentionError` below
    :data:`MIN_RETAIN` unless ``force`` (then a warning)."""
    if not isinstance(retain, timedelta):
        raise TypeError(f"retain must be a datetime.timedelta, not {type(retain).__name__}")
    if retain < timedelta(0):
        raise ValueError("retain must not be negative")
    if retain >= MIN_RETAIN:
        return
    if not force:
        raise UnsafeRetentionError(
            f"vacuum(retain={retain}) is below the floor of {MIN_RETAIN}: a query reading an "
            "older version, or a refresh or compaction that has been writing its parts for "
            "longer than that, would lose them (the query reads every file, the writer starts "
            "over). Pass force=True (metaindex vacuum --force) to vacuum anyway"
        )
    log.warning(
        "vacuum with retain=%s, below the floor of %s (forced): concurrent readers of "
        "older versions and slow writers may have to start over",
        retain,
        MIN_RETAIN,
    )


def vacuum(table_store, retain: timedelta, force: bool = False) -> VacuumResult:
    """See :meth:`metaindex.store.TableStore.vacuum`."""
    check_retain(retain, force)
    for attempt in range(_REPAIR_ATTEMPTS):
        try:
            return _vacuum(table_store, retain)
        except (FileNotFoundError, VacuumedError) as exc:
            # a concurrent vacuum deleted the log files this one was reading: look again
            if attempt == _REPAIR_ATTEMPTS - 1:
                raise CommitConflictError(
                    f"{table_store.path}: concurrent vacuums keep "
                    f"deleting the log under this one ({exc})"
                ) from None
    raise AssertionError("unreachable")


def _vacuum(table_store, retain: timedelta) -> VacuumResult:
    storage = table_store._storage
    latest_state = table_store._state()
    listing = list_log(storage, table_store.path)
    start = log_start(listing, latest_state.floor)
    now = now_ms()
    cutoff = now - int(retain.total_seconds() * 1000)
    entries = {
        v: read_entry(storage, table_store.path, v)
        for v in range(start + 1, latest_state.version + 1)
    }
    stamps = {
        start: table_store._state(start).timestamp,
        **{v: e.timestamp for v, e in entries.items()},
    }
    keep = max((v for v, ts in stamps.items() if ts <= cutoff), default=start)
    kept = table_store._state(keep) if keep != latest_state.version else latest_state
    referenced = (
        set(kept.parts)
        | set(latest_state.parts)
        | {p.path for v, e in entries.items() if v > keep for p in e.added_parts}
    )
    below = sorted(
        {v for v in listing.entries if v < keep} | {v for v in listing.checkpoints if v < keep}
    )
    if below and keep not in listing.checkpoints:
        write_checkpoint(storage, table_store.path, kept, table_store._temp())
    temp_cutoff = now - int(max(retain, TEMP_GRACE).total_seconds() * 1000)
    doomed, temps = set(), []
    for stat in storage.list(table_store._p(PARTS_DIR)):
        rel = f"{PARTS_DIR}/{stat.name}"
        if is_part_name(rel):
            if rel not in referenced and stat.mtime_ms < cutoff:
                doomed.add(rel)
        elif stat.mtime_ms < temp_cutoff:
            temps.append(rel)
    details = {
        "retain_seconds": retain.total_seconds(),
        "oldest_version": keep,
        "deleted_parts": len(doomed) + len(temps),
        "deleted_log_entries": len(below),
    }
    version, doomed = _commit_vacuum(table_store, latest_state, doomed, keep, details)
    for rel in sorted(doomed) + temps:  # named by no version, now or later
        storage.delete(table_store._p(rel))
    for v in below:  # oldest first: an interrupted vacuum leaves a log that still starts
        storage.delete(table_store._p(checkpoint_name(v)))
        storage.delete(table_store._p(entry_name(v)))
    return VacuumResult(version, keep, tuple(sorted(doomed | set(temps))), tuple(below))


def _commit_vacuum(table_store, state: State, doomed: set, keep: int, details: dict) -> tuple:
    """Commit the vacuum entry; ``(its version, the parts it dooms)``. A concurrent commit
    that lands first keeps the parts it adds."""
    for _ in range(_ATTEMPTS):
        entry = LogEntry(
            state.version + 1,
            max(now_ms(), state.timestamp + 1),
            "vacuum",
            state.identity,
            state.index_defs,
            state.encryption,
            details=details,
            log_key=state.log_key,
            doomed_parts=tuple(sorted(doomed)),
            log_floor=keep,
        )
        if table_store._create_entry(entry):
            table_store._after_commit(state, entry)
            return entry.version, doomed
        state = _newer(table_store, state, doomed)
    raise CommitConflictError(
        f"{table_store.path}: vacuum gave up after {_ATTEMPTS} attempts: "
        "other writers keep committing first"
    )


def _newer(table_store, state: State, doomed: set) -> State:
    """The newest state; the parts the newer entries add leave ``doomed``."""
    storage = table_store._storage
    newer = state.copy()
    for v in range(state.version + 1, latest_for_writer(storage, table_store.path) + 1):
        where = table_store._p(entry_name(v))
        try:
            entry = read_entry(storage, table_store.path, v)
        except FileNotFoundError:
            raise CommitConflictError(
                f"{where}: gone (a concurrent vacuum or repair); vacuum again"
            ) from None
        if entry.operation == "drop" or entry.reset is not None:
            raise CommitConflictError(
                f"{where}: the index was "
                f"{'dropped' if entry.reset is None else 'repaired'} "
                "concurrently"
            )
        doomed.difference_update(p.path for p in entry.added_parts)
        newer.apply(entry, where)
    return newer


# ---------------------------------------------------------------------------- repair


def repair(table_store) -> RepairResult | None:
    """See :meth:`metaindex.store.TableStore.repair`."""
    from metaindex.store.health import part_problems, scan_log

    storage = table_store._storage
    for _ in range(_REPAIR_ATTEMPTS):
        scan = scan_log(table_store)
        found, damaged = part_problems(table_store, scan)
        problems = scan.problems + found
        if not problems:
            return None
        base = scan.head if scan.head is not None else _newest_readable(table_store, scan)
        dropped = tuple(sorted(p for p in damaged if p in base.parts))
        fresh = base.without_parts(dropped)
        version = scan.latest + 1
        entry = LogEntry(
            version,
            max(now_ms(), base.timestamp + 1),
            "repair",
            base.identity,
            base.index_defs,
            base.encryption,
            details={
                "problems": len(problems),
                "from_version": base.version,
                "parts_dropped": len(dropped),
            },
            log_key=base.log_key,
            log_floor=version,
            reset=fresh.to_checkpoint(),
        )
        if not table_store._create_entry(entry):
            continue  # someone committed meanwhile: look again
        new = State()
        new.apply(entry, entry_name(version))
        remember_state(storage, table_store.path, new)
        write_checkpoint(storage, table_store.path, new, table_store._temp())
        listing = list_log(storage, table_store.path)
        below = sorted({v for v in (*listing.entries, *listing.checkpoints) if v < version})
        for v in below:
            storage.delete(table_store._p(checkpoint_name(v)))
            storage.delete(table_store._p(entry_name(v)))
        table_store.forget_cached()
        log.warning(
            "%s: repaired the metadata store at version %d (kept version %d, %d "
            "damaged part(s) dropped): %s",
            table_store.path,
            version,
            base.version,
            len(dropped),
            "; ".join(str(p) for p in problems[:3]),
        )
        return RepairResult(version, base.version, problems, dropped, tuple(below))
    raise CommitConflictError(
        f"{table_store.path}: gave up repairing after "
        f"{_REPAIR_ATTEMPTS} attempts: other writers keep committing"
    )


def _newest_readable(table_store, scan) -> State:
    """The newest version below the (unreadable) latest that can be read; else an empty state
    with the newest readable entry's table, index definitions and encryption."""
    for v in range(scan.latest - 1, scan.start - 1, -1):
        try:
            return table_store._state(v, listing=scan.listing)
        except UnsupportedVersionError:
            raise
        except (MetaIndexError, FileNotFoundError):
            continue
    readable = [e for _, e in sorted(scan.entries.items()) if e.operation != "drop"]
    if not readable:
        raise StoreDamageError(
            f"{table_store.path}: no entry of the log can be read; drop and rebuild the index",
            scan.problems,
        )
    last = readable[-1]
    empty = State()
    empty.table, empty.index_defs, empty.encryption = last.table, last.index_defs, last.encryption
    empty.log_key = last.log_key
    empty.timestamp = last.timestamp
    empty.schema_records = tuple(
        r for r in (schema_record(last.table.extra), schema_record(last.details)) if r is not None
    )
    return empty
