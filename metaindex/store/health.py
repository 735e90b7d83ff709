"""Is a store whole? Verifying the log, its checkpoints and its parts, and saying what is wrong.

Three depths, one set of rules (specs/metadata-store.md, "Damage"):

* :func:`scan_log` reads every entry and checkpoint from the log's start to its head (each file
  once per process, keyed by its listed size, mtime and ETag, in parallel): a missing entry (a
  gap), an entry or checkpoint that fails its checksum or does not parse, a start without its
  checkpoint, a head that cannot be replayed. Queries, ``describe`` and ``history`` use it.
* :func:`part_problems` checks the parts the versions of the log name: those of the head are
  read and verified (size, SHA-256, decoded names), those of older versions listed (present,
  with the recorded size). ``refresh`` repairs what it finds.
* :func:`check_store` is ``metaindex check``: all of the above, plus a replay of every version
  (each entry must fit the state before it, each checkpoint must equal the replay), and every
  part of the head decoded and compared with its log record (row count, ``obj_size`` total,
  summary, table id, encryption, dead names) and with the other parts (an object live in two
  parts).

The log's *start* is the floor a vacuum or repair recorded (its older files are gone on purpose,
or are leftovers still being deleted), else, for stores whose checkpoints predate format 8,
where the listing starts (entry 0, else the oldest checkpoint).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import DecodeError, IntegrityError, MetaIndexError, UnsupportedVersionError
from metaindex.store.escaping import OBJ_MTIME, OBJ_NAME, OBJ_ROWS, OBJ_SIZE
from metaindex.store.layout import PARTS_DIR, TABLE_JSON, checkpoint_name, entry_name
from metaindex.store.log import LogListing, State, list_log, log_start, read_checkpoint, read_entry
from metaindex.store.parts import inspect_part, verify_part
from metaindex.store.snapshot import read_part, scope_of
from metaindex.store.summary import summarize

__all__ = ["Problem", "LogScan", "CheckReport", "scan_log", "part_problems", "check_store"]

_READERS = 16
_CACHE_FILES = 4096
_verified: OrderedDict = OrderedDict()  # (storage key, path, stamp) -> LogEntry | State | Problem
_lock = threading.Lock()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a store.

    Attributes:
        kind: ``"log"`` (an entry, or the log's shape), ``"checkpoint"``, ``"part"``,
            ``"version"`` (a version that cannot be used), ``"objects"`` (an object live
            twice), ``"table"`` (``table.json``).
        message: what is wrong, naming the file or version.
        path: the file (None: not one file). version: the version concerned, when one is.
    """

    kind: str
    message: str
    path: str | None = None
    version: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "path": self.path,
            "version": self.version,
        }


@dataclass(frozen=True)
class LogScan:
    """The log from its start to its head, read and verified.

    Attributes:
        listing: the log listing scanned. start: the log's start (see the module docstring).
        head: the state at the newest version (None: it cannot be read; ``head_error`` says
            why). entries: {version: LogEntry} of every readable entry from ``start`` on.
        problems: the damage found, in version order.
    """

    listing: LogListing
    start: int
    head: State | None
    head_error: Exception | None
    entries: dict
    problems: tuple

    @property
    def latest(self) -> int:
        latest = self.listing.latest
        assert latest is not None  # scan_log raises MetaIndexError on an empty log
        return latest


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_store` found.

    Attributes:
        healthy: nothing is wrong. problems: the :class:`Problem` s, if any.
        notes: facts that are not damage (files vacuum will remove, parts whose contents
            could not be verified without keys).
        version: the newest version. oldest_version: the log's start. parts: live parts at
            the head. objects: live objects at the head (None: not read).
    """

    problems: tuple
    notes: tuple = ()
    version: int | None = None
    oldest_version: int | None = None
    parts: int = 0
    objects: int | None = None
    verified_parts: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {
            "healthy": self.healthy,
            "version": self.version,
            "oldest_version": self.oldest_version,
            "parts": self.parts,
            "objects": self.objects,
            "verified_parts": self.verified_parts,
            "problems": [p.to_json() for p in self.problems],
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------- the log


def _cached(storage, table_dir: str, rel: str, stamp):
    key = (storage.key, storage.join(table_dir, rel), stamp)
    with _lock:
        found = _verified.get(key)
        if found is not None:
            _verified.move_to_end(key)
        return found


def _read_verified(storage, table_dir: str, rel: str, stamp, read):
    """``read()`` of one log file (a LogEntry or State), or the Problem it is; cached by the
    file's stamp (log files never change: a new stamp is a new file)."""
    key = (storage.key, storage.join(table_dir, rel), stamp)
    try:
        found = read()
    except FileNotFoundError:
        return None  # gone since the listing (a vacuum): not damage
    except UnsupportedVersionError:
        raise
    except (DecodeError, IntegrityError) as exc:
        found = Problem("checkpoint" if "checkpoint" in rel else "log", str(exc), key[1])
    with _lock:
        _verified[key] = found
        while len(_verified) > _CACHE_FILES:
            _verified.popitem(last=False)
    return found


def _read_all(storage, table_dir: str, listing: LogListing, start: int) -> tuple:
    """({version: LogEntry}, {version: State}, [Problem]) of the files from ``start`` on."""
    jobs: list[tuple[str, int, str, Callable[..., object]]] = []
    for v in listing.entries:
        if v >= start:
            rel = entry_name(v)
            jobs.append(("e", v, rel, lambda v=v: read_entry(storage, table_dir, v)))
    for v in listing.checkpoints:
        if v >= start:
            rel = checkpoint_name(v)
            jobs.append(("c", v, rel, lambda v=v: read_checkpoint(storage, table_dir, v)))

    def run(job):
        kind, v, rel, read = job
        return kind, v, _read_verified(storage, table_dir, rel, listing.stamps.get(rel), read)

    results, missing = [], []
    for job in jobs:
        found = _cached(storage, table_dir, job[2], listing.stamps.get(job[2]))
        (missing.append(job) if found is None else results.append((job[0], job[1], found)))
    if len(missing) > 1:
        with ThreadPoolExecutor(min(_READERS, len(missing))) as pool:
            results += pool.map(run, missing)
    else:
        results += [run(j) for j in missing]
    entries: dict[int, Any] = {}
    checkpoints: dict[int, Any] = {}
    problems = []
    for kind, v, found in results:
        if isinstance(found, Problem):
            problems.append(Problem(found.kind, found.message, found.path, v))
        elif found is not None:
            (entries if kind == "e" else checkpoints)[v] = found
    return entries, checkpoints, problems


def scan_log(table_store, listing: LogListing | None = None) -> LogScan:
    """Read and verify the log of ``table_store`` (see the module docstring).

    Raises:
        MetaIndexError: no index (an empty log).
        UnsupportedVersionError: a record of a newer format.
    """
    storage, table_dir = table_store._storage, table_store.path
    listing = listing or list_log(storage, table_dir)
    if listing.latest is None:
        raise MetaIndexError(
            f"no metadata index for table {table_store.identity.uri} (store directory {table_dir})"
        )
    head, head_error = None, None
    try:
        head = table_store._state(listing=listing)
    except UnsupportedVersionError:
        raise
    except MetaIndexError as exc:
        head_error = exc
    start = log_start(listing, None if head is None else head.floor)
    entries, _, problems = _read_all(storage, table_dir, listing, start)
    last = entries.get(listing.latest)
    if last is not None and last.operation == "drop":
        raise MetaIndexError(
            f"{table_dir}: the index of {table_store.identity.uri} was "
            f"dropped (version {listing.latest})"
        )
    present = set(listing.entries)
    for v in range(start, listing.latest + 1):
        if v not in present:
            problems.append(
                Problem(
                    "log",
                    f"{storage.join(table_dir, entry_name(v))}: log "
                    f"entry missing (a gap in the log)",
                    storage.join(table_dir, entry_name(v)),
                    v,
                )
            )
    if (
        start > 0
        and start not in listing.checkpoints
        and not (start in entries and entries[start].reset is not None)
    ):
        problems.append(
            Problem(
                "checkpoint",
                f"{table_dir}: the log starts at version {start} and its checkpoint is missing",
                storage.join(table_dir, checkpoint_name(start)),
                start,
            )
        )
    if head is None and not problems:
        problems.append(
            Problem(
                "version",
                f"{table_dir}: the latest version ({listing.latest}) cannot be read: {head_error}",
                None,
                listing.latest,
            )
        )
    problems.sort(key=lambda p: (p.version if p.version is not None else -1, p.kind))
    return LogScan(listing, start, head, head_error, entries, tuple(problems))


# ---------------------------------------------------------------------------- parts


def _start_state(table_store, scan: LogScan) -> State | None:
    """A private copy of the state at the log's start (None: it cannot be read)."""
    try:
        return table_store._state(scan.start, listing=scan.listing).copy()
    except MetaIndexError:
        return None


def _versions(table_store, scan: LogScan):
    """``(version, state or None, Problem or None)`` for each version from the log's start:
    the state replayed (None where the chain is broken by a missing or damaged entry, until a
    checkpoint or a repair entry starts it again; the state is reused: read it before asking
    for the next), and a Problem where an entry does not fit the state before it."""
    storage, table_dir = table_store._storage, table_store.path
    state = _start_state(table_store, scan)
    yield scan.start, state, None
    for v in range(scan.start + 1, scan.latest + 1):
        entry, problem = scan.entries.get(v), None
        if entry is not None and (state is not None or entry.reset is not None):
            state = State() if state is None else state
            where = storage.join(table_dir, entry_name(v))
            try:
                state.apply(entry, where)
            except MetaIndexError as exc:
                problem = Problem(
                    "log", f"{exc} (the entry does not fit the log before it)", where, v
                )
                state = None
        else:
            state = None
        if state is None and v in scan.listing.checkpoints:
            try:
                state = read_checkpoint(storage, table_dir, v)
            except (DecodeError, IntegrityError, FileNotFoundError):
                pass  # a problem of the scan already (or vacuumed since)
        yield v, state, problem


def _lifetimes(table_store, scan: LogScan) -> dict:
    """{part: (first version, last version)} of every part a version from the start names
    (as far as the replay reaches). O(changes) per version: only the parts an entry adds, or
    removes or kills objects in, can come or go (a part can live again only in a new chain,
    after a break, a checkpoint or a repair)."""
    spans: dict = {}
    live: dict = {}  # part -> the version it came at, for the parts of the previous version

    def close(paths, v):
        for path in paths:
            spans[path] = (live.pop(path), v - 1)

    previous = None
    for v, state, _ in _versions(table_store, scan):
        entry = scan.entries.get(v)
        if state is None:
            close(list(live), v)
            previous = None
            continue
        if (
            previous == v - 1
            and entry is not None
            and entry.reset is None
            and entry.format_version >= 7
        ):
            touched = {*entry.removed_parts, *(d.part for d in entry.dead_objects)}
            close([p for p in touched if p in live and p not in state.parts], v)
            for part in entry.added_parts:
                live.setdefault(part.path, v)
        else:
            close([p for p in live if p not in state.parts], v)
            for path in state.parts:
                live.setdefault(path, v)
        previous = v
    close(list(live), scan.latest + 1)
    return spans


def part_problems(table_store, scan: LogScan) -> tuple:
    """``(problems, damaged head parts)``: the head's parts read and verified (size, SHA-256,
    their names, sizes and mtimes decoded: what queries and refresh read), the parts of the
    older versions from the log's start listed (present, with the recorded size).

    Without the keys of an encrypted store, the head's parts are verified by size and
    SHA-256 only.
    """
    storage, table_dir = table_store._storage, table_store.path
    listed = {s.name: s.size for s in storage.list(storage.join(table_dir, PARTS_DIR))}
    problems, damaged = [], set()
    head = scan.head
    if head is not None:
        scope = scope_of(storage, table_dir, head.encryption, table_store._key_access)
        keyless = head.encryption is not None and table_store._key_access is None
        for path, record in head.parts.items():
            name = path.rsplit("/", 1)[1]
            full = storage.join(table_dir, path)
            try:
                if name not in listed:
                    raise IntegrityError(
                        f"{full}: part named by the log (version {head.version}) is missing"
                    )
                if keyless:  # its bytes only: decoding needs the keys
                    verify_part(storage.read(full), record.bytes, record.sha256, full)
                else:
                    read_part(
                        storage,
                        table_dir,
                        scope,
                        record,
                        (OBJ_SIZE, OBJ_MTIME),
                        table_store._key_access,
                        f"version {head.version}",
                    )
            except (IntegrityError, DecodeError) as exc:
                damaged.add(path)
                problems.append(
                    Problem(
                        "part",
                        f"{exc} (the latest version, {head.version}, cannot be used)",
                        storage.join(table_dir, path),
                        head.version,
                    )
                )
    for path, (first, last) in sorted(_lifetimes(table_store, scan).items(), key=lambda kv: kv[1]):
        if path in damaged or (head is not None and path in head.parts):
            continue
        name = path.rsplit("/", 1)[1]
        if name not in listed:
            span = f"version {first}" if first == last else f"versions {first}-{last}"
            problems.append(
                Problem(
                    "part",
                    f"{storage.join(table_dir, path)}: part named by "
                    f"the log is missing ({span} cannot be used)",
                    storage.join(table_dir, path),
                    last,
                )
            )
    return tuple(problems), frozenset(damaged)


# ---------------------------------------------------------------------------- check


def _fingerprint(state: State) -> tuple:
    """What a checkpoint must agree with the replay on."""
    parts = tuple(
        sorted((p, r.rows, r.bytes, r.sha256, r.live_bytes) for p, r in state.parts.items())
    )
    return (
        parts,
        tuple(sorted((p, tuple(sorted(m))) for p, m in state.members.items())),
        tuple(sorted((p, tuple(sorted(d))) for p, d in state.dead.items())),
        tuple(sorted(state.dead_bytes.items())),
        tuple(sorted(state.unreadable)),
        state.log_key,
        tuple(d.storage_name for d in state.index_defs),
        state.encryption,
    )


def _replay_problems(table_store, scan: LogScan) -> list:
    """Every version from the start replayed: an entry that does not fit the state before it,
    a checkpoint that differs from the replay."""
    storage, table_dir = table_store._storage, table_store.path
    problems = []
    for v, state, problem in _versions(table_store, scan):
        if problem is not None:
            problems.append(problem)
        if state is None or v not in scan.listing.checkpoints or v == scan.start:
            continue
        path = storage.join(table_dir, checkpoint_name(v))
        try:
            saved = read_checkpoint(storage, table_dir, v)
        except (DecodeError, IntegrityError, FileNotFoundError):
            continue  # a problem of the scan already (or vacuumed since)
        if _fingerprint(saved) != _fingerprint(state):
            problems.append(
                Problem("checkpoint", f"{path}: differs from the replay of the log", path, v)
            )
    return problems


def _content_problems(table_store, head: State, damaged) -> tuple:
    """(problems, notes, objects, verified parts) of the head's parts read whole but the
    ``damaged`` ones: each part against its log record, and the live objects of all of them
    (each once)."""
    storage, table_dir = table_store._storage, table_store.path
    key_access = table_store._key_access
    if head.encryption is not None and key_access is None:
        return (
            [],
            [
                f"{len(head.parts)} encrypted part(s) verified by size and SHA-256 only: "
                "give the KMS to check their contents"
            ],
            None,
            0,
        )
    cipher = table_store.log_cipher(head)
    problems, live, verified = [], [], 0
    for path, record in head.parts.items():
        if path in damaged:
            continue
        full = storage.join(table_dir, path)
        try:
            data = storage.read(full)
            verify_part(data, record.bytes, record.sha256, full)
            info = inspect_part(data, full, key_access, None)
        except FileNotFoundError:
            continue  # a problem of part_problems already
        except (IntegrityError, DecodeError) as exc:
            problems.append(Problem("part", str(exc), full, head.version))
            continue
        verified += 1
        wrong = _record_mismatch(table_store, head, path, record, info, cipher)
        if wrong:
            problems.append(Problem("part", f"{full}: {wrong}", full, head.version))
            continue
        names = info.table.column(OBJ_NAME)
        mask = head.live_mask(path, names, None if cipher is None else cipher.tokens(names))
        live.append(names if mask is None else names.filter(mask))
    objects = None
    if live:
        every = pa.chunked_array(live, pa.string())
        objects = len(every)
        counts = pc.value_counts(every.combine_chunks())
        twice = counts.filter(pc.greater(counts.field("counts"), 1))
        if len(twice):
            first = twice.field("values")[0].as_py()
            problems.append(
                Problem(
                    "objects",
                    f"{table_dir}: {len(twice)} object(s) are live "
                    f"in two parts at version {head.version} (e.g. {first!r})",
                    None,
                    head.version,
                )
            )
    return problems, [], objects, verified


def _record_mismatch(table_store, head: State, path: str, record, info, cipher) -> str | None:
    """How a decoded part differs from its log record (None: it does not)."""
    if info.table_id != table_store.identity.id:
        return f"belongs to table id {info.table_id}, not {table_store.identity.id}"
    if info.encryption != head.encryption:
        return f"is encrypted as {info.encryption}, the store as {head.encryption}"
    if info.rows != record.rows:
        return f"holds {info.rows} rows, the log recorded {record.rows}"
    table = info.table
    names = set(table.column(OBJ_NAME).to_pylist())
    if head.is_listed(path):
        rows = {
            n: (s, m, r)
            for n, s, m, r in zip(
                *(table.column(c).to_pylist() for c in (OBJ_NAME, OBJ_SIZE, OBJ_MTIME, OBJ_ROWS)),
                strict=True,
            )
        }
        for name in head.members[path]:
            entry = head.files[name]
            if rows.get(name) != (entry.size, entry.mtime, entry.rows):
                return f"its row of {name!r} differs from the log's"
        return None
    size = pc.sum(table.column(OBJ_SIZE)).as_py() or 0
    if size != record.live_bytes:
        return f"its obj_size total is {size}, the log recorded {record.live_bytes}"
    dead = head.dead[path]
    forms = names if cipher is None else cipher.identities(names)
    if not dead <= forms:
        return f"{len(dead - forms)} object(s) the log says died in it are not in it"
    expected = summarize(table, head.index_defs)
    for d in head.index_defs:
        col = d.storage_name
        if col in record.summary.column_names and not expected.column(col).equals(
            record.summary.column(col).cast(expected.schema.field(col).type)
            if not pa.types.is_null(record.summary.schema.field(col).type)
            else expected.column(col)
        ):
            return f"its {col} summary in the log is not that of its rows"
    return None


def check_store(table_store) -> CheckReport:
    """Verify a whole store (see the module docstring)."""
    storage, table_dir = table_store._storage, table_store.path
    scan = scan_log(table_store)
    problems = list(scan.problems)
    notes = []
    problems += _replay_problems(table_store, scan)
    found, damaged = part_problems(table_store, scan)
    problems += found
    objects, verified = None, 0
    head = scan.head
    if head is not None:
        more, said, objects, verified = _content_problems(table_store, head, damaged)
        problems += more
        notes += said
    referenced = set(_lifetimes(table_store, scan))
    stray = [
        s
        for s in storage.list(storage.join(table_dir, PARTS_DIR))
        if f"{PARTS_DIR}/{s.name}" not in referenced
    ]
    if stray:
        size = sum(s.size for s in stray)
        notes.append(
            f"{len(stray)} file(s) in parts/ no version names ({size} bytes: "
            "uncommitted or old parts; vacuum removes them)"
        )
    problems += _table_json_problems(table_store)
    unique = list(dict.fromkeys(problems))
    return CheckReport(
        tuple(unique),
        tuple(notes),
        scan.latest,
        scan.start,
        0 if head is None else len(head.parts),
        objects,
        verified,
    )


def _table_json_problems(table_store) -> list:
    import json

    path = table_store._storage.join(table_store.path, TABLE_JSON)
    try:
        record = json.loads(table_store._storage.read(path))
    except FileNotFoundError:
        return [Problem("table", f"{path}: missing", path)]
    except ValueError as exc:
        return [Problem("table", f"{path}: not JSON ({exc})", path)]
    if (
        not isinstance(record, dict)
        or record.get("uri") != table_store.identity.uri
        or record.get("id") != table_store.identity.id
    ):
        return [
            Problem("table", f"{path}: does not name this table ({table_store.identity.uri})", path)
        ]
    return []
