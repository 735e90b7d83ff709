"""The commit path of a table's store: creating the index, and committing a change to it.

Commit protocol (specs/metadata-store.md, "Commit protocol"): part files are written first under
unique names; then the entry for ``base + 1`` is created with create-if-absent. If another
writer created it first, the new entries are read; when none of them touches what this commit
touches (its removed parts, the objects it removes, supersedes or adds) the commit is rebased on
the newest version and retried, else :class:`CommitConflictError` is raised. A crash at any
point leaves the log at a committed version; at worst unreferenced files in ``parts/``, which
:meth:`TableStore.vacuum <metaindex.store.TableStore.vacuum>` removes once older than its
``retain``.

The functions take the :class:`~metaindex.store.TableStore` they commit to, as
:mod:`metaindex.store.maintenance` (vacuum, repair) and :mod:`metaindex.store.compaction` do;
:class:`~metaindex.store.TableStore` keeps the public methods. Every log entry is created
through ``TableStore._create_entry`` (:func:`create_entry`), whoever writes it.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import string_array
from metaindex.errors import CommitConflictError, DecodeError, IntegrityError
from metaindex.store import receipts
from metaindex.store.escaping import OBJ_NAME, OBJ_SIZE
from metaindex.store.layout import LOG_DIR, PARTS_DIR, TABLE_JSON, TableIdentity, entry_name
from metaindex.store.log import (
    State,
    VacuumedError,
    encode_entry,
    latest_for_writer,
    list_log,
    read_entry,
    remember_state,
    write_checkpoint,
)
from metaindex.store.logkey import LogCipher, cipher_for, new_log_key
from metaindex.store.model import (
    FORMAT_VERSION,
    OPERATIONS,
    DeadObjects,
    EncryptionLabels,
    LogEntry,
    PartRecord,
    normalize_index_defs,
)
from metaindex.store.parts import inspect_part
from metaindex.store.snapshot import Snapshot, read_part, scope_of
from metaindex.store.summary import summarize
from metaindex.store.tableschema import SCHEMA_DETAILS

__all__ = [
    "CHECKPOINT_INTERVAL",
    "KEEP",
    "now_ms",
    "create",
    "create_entry",
    "commit",
    "after_commit",
    "log_cipher",
    "check_labels",
]

log = logging.getLogger(__name__)
CHECKPOINT_INTERVAL = 10
"""Every this many versions, a commit also writes a checkpoint of the state it made."""
_MAX_ATTEMPTS = 30
KEEP = object()
"""``commit(encryption=KEEP)``: the encryption stays as it is."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class _LogDetails:
    """A commit's details as the log records them (``details`` and the ``unreadable`` /
    ``unreadable_cleared`` the engine passes in them): in an encrypted store, everything but
    the schema record is sealed and names are tokens (:mod:`metaindex.store.logkey`)."""

    clear: dict  # the entry's details
    sealed: str | None  # the rest, sealed (encrypted store)
    unreadable: dict  # log form -> record
    cleared: tuple  # clear names whose unreadable records go

    @classmethod
    def of(cls, details: dict, cipher) -> _LogDetails:
        details = dict(details)
        found = details.pop("unreadable", None) or {}
        cleared = details.pop("unreadable_cleared", None) or ()
        if not isinstance(found, dict) or not all(
            isinstance(n, str) and isinstance(r, (list, tuple)) and len(r) == 3
            for n, r in found.items()
        ):
            raise TypeError("details['unreadable'] is {file name: [size, mtime, reason]}")
        if isinstance(cleared, str) or not all(isinstance(n, str) for n in cleared):
            raise TypeError("details['unreadable_cleared'] is a list of file names")
        if cipher is None:
            return cls(details, None, {n: tuple(r) for n, r in found.items()}, tuple(cleared))
        records = {}
        for name, (size, mtime, reason) in found.items():
            token = cipher.token(name)
            records[token] = cipher.seal([name, size, mtime, reason], f"unreadable/{token}")
        clear = {k: details.pop(k) for k in SCHEMA_DETAILS if k in details}
        return cls(
            clear, cipher.seal(details, "details") if details else None, records, tuple(cleared)
        )


@dataclass(frozen=True)
class _Change:
    """A validated commit, re-expressed as an entry on whatever state it lands on.

    What dies where (``dead``) is computed once against the base: a rebase happens only when
    no newer entry touched these objects or parts, so it still holds on the newer state.
    Names are in their log form (clear, or tokens of ``cipher``) except ``names`` and
    ``gone_names``.
    """

    defs: tuple
    labels: EncryptionLabels | None
    added: tuple  # PartRecord (format 7)
    removed: tuple  # part paths
    gone: tuple  # removed objects (still live outside the removed parts), log form
    superseded: tuple  # objects of the added parts live at the base outside removed parts
    dead: tuple  # DeadObjects: gone + superseded, by the part they live in
    names: pa.Array  # obj_names in the added parts
    gone_names: tuple  # the removed obj_names as given
    touches: frozenset  # part keys (State.touched_by) a concurrent commit must not touch;
    #                     the objects it must not touch are :attr:`mine`
    sets_defs: bool
    sets_labels: bool
    log_key: str | None  # key material of the store's log key (encrypted stores)
    cipher: LogCipher | None
    details: _LogDetails

    def identities(self, names) -> set:
        """Every log form of ``names``."""
        return set(names) if self.cipher is None else self.cipher.identities(names)

    @cached_property
    def mine(self) -> frozenset:
        """The log forms of every object this commit adds or removes."""
        return frozenset(self.identities([*self.names.to_pylist(), *self.gone_names]))

    @cached_property
    def _clears(self) -> frozenset:
        return frozenset(self.mine | self.identities(self.details.cleared))

    def entry(self, state: State, base: State, operation: str) -> LogEntry:
        cleared = (
            tuple(sorted(k for k in state.unreadable if k in self._clears))
            if state.unreadable
            else ()
        )
        found, every = self.details.unreadable, None
        if self.cipher is not None and any(isinstance(r, tuple) for r in state.unreadable.values()):
            # records an older entry kept in clear: seal them all, naming none of them
            every = {k: r for k, r in state.unreadable.items() if k not in cleared}
            for name, record in [(k, r) for k, r in every.items() if isinstance(r, tuple)]:
                del every[name]
                token = self.cipher.token(name)
                every[token] = self.cipher.seal([name, *record], f"unreadable/{token}")
            every.update(found)
            found, cleared = {}, ()
        return LogEntry(
            state.version + 1,
            max(now_ms(), state.timestamp + 1),
            operation,
            base.identity,
            self.defs,
            self.labels,
            self.added,
            self.removed,
            self.gone,
            self.superseded,
            self.details.clear,
            dead_objects=self.dead,
            unreadable=found,
            unreadable_cleared=cleared,
            unreadable_all=every,
            sealed_details=self.details.sealed,
            log_key=self.log_key,
        )


# ------------------------------------------------------------------------------ create


def create(ts, index_defs, identity: dict | None, encryption) -> int:
    """See :meth:`metaindex.store.TableStore.create`."""
    defs = normalize_index_defs(index_defs)
    check_labels(defs, encryption)
    json.dumps(identity or {}, allow_nan=False)  # JSON-able, or TypeError/ValueError here
    ident = TableIdentity(
        ts.identity.uri, ts.identity.id, ts.identity.identifier, dict(identity or {})
    )
    latest = list_log(ts._storage, ts.path).latest
    if latest is not None:
        try:
            dropped = read_entry(ts._storage, ts.path, latest).operation == "drop"
        except FileNotFoundError:
            dropped = False
        if not dropped:
            raise CommitConflictError(
                f"an index already exists for {ts.identity.uri} (version {latest})"
            )
        ts._delete_all()  # finish an interrupted drop
    for sub in (LOG_DIR, PARTS_DIR):
        ts._storage.makedirs(ts._p(sub))
    record = {"format_version": FORMAT_VERSION, **ident.to_json(), "created": now_ms()}
    if not ts._storage.create_if_absent(
        ts._p(TABLE_JSON), (json.dumps(record, indent=2) + "\n").encode(), ts._temp()
    ):
        _check_table_json(ts)
    log_key = None if encryption is None else new_log_key(ts._key_access, encryption)[1]
    entry = LogEntry(0, now_ms(), "create", ident, defs, encryption, log_key=log_key)
    if not ts._create_entry(entry):
        raise CommitConflictError(f"an index for {ts.identity.uri} was created concurrently")
    return 0


def _check_table_json(ts) -> None:
    path = ts._p(TABLE_JSON)
    try:
        uri = json.loads(ts._storage.read(path)).get("uri")
    except (ValueError, AttributeError):
        return  # damaged; the log is authoritative
    if uri != ts.identity.uri:
        raise IntegrityError(
            f"{path}: belongs to {uri!r}, not {ts.identity.uri!r} (table id collision)"
        )


def create_entry(ts, entry: LogEntry) -> bool:
    """Create the log entry of ``entry.version`` unless it exists; True if we created it."""
    return ts._storage.create_if_absent(
        ts._p(entry_name(entry.version)), encode_entry(entry), ts._temp()
    )


def check_labels(defs, labels) -> None:
    if labels is None and any(d.key_metadata for d in defs):
        raise ValueError(
            "an index has key_metadata (a key label) but the store has no "
            "encryption labels: pass encryption=EncryptionLabels(footer_key=...)"
        )


# ------------------------------------------------------------------------------ commit


def commit(
    ts,
    base_version: int,
    add_parts,
    remove_parts,
    removed_objects,
    index_defs,
    encryption,
    operation: str,
    details: dict | None,
) -> int:
    """See :meth:`metaindex.store.TableStore.commit`."""
    if operation not in OPERATIONS or operation in ("create", "drop", "vacuum", "repair"):
        raise ValueError(
            f"operation must be one of build, refresh, compact, commit; not {operation!r}"
        )
    details = dict(details or {})
    json.dumps(details, allow_nan=False)  # JSON-able, or TypeError / ValueError here
    try:
        base = ts._state(base_version)
    except VacuumedError as exc:
        raise CommitConflictError(
            f"{exc}: the change was computed from a version a "
            "concurrent vacuum removed; recompute it"
        ) from None
    change = _change(
        ts, base, add_parts, remove_parts, removed_objects, index_defs, encryption, details
    )
    state = base
    for attempt in range(_MAX_ATTEMPTS):
        entry = change.entry(state, base, operation)
        if ts._create_entry(entry):
            receipts.forget(ts._written_key(p.path) for p in change.added)
            ts._after_commit(state, entry)
            return entry.version
        state = _rebase(ts, state, change, base)
        time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
    raise CommitConflictError(
        f"{ts.path}: gave up after {_MAX_ATTEMPTS} attempts: other writers keep committing first"
    )


def _change(
    ts, base: State, add_parts, remove_parts, removed_objects, index_defs, encryption, details: dict
) -> _Change:
    """Validate a commit's arguments against its base."""
    defs = base.index_defs if index_defs is None else normalize_index_defs(index_defs)
    labels = base.encryption if encryption is KEEP else encryption
    if labels is not None and not isinstance(labels, EncryptionLabels):
        raise TypeError("encryption must be EncryptionLabels or None")
    check_labels(defs, labels)
    log_key, cipher = _log_cipher(ts, base, labels)
    log_details = _LogDetails.of(details, cipher)
    read = [_added_part(ts, p, labels, defs) for p in add_parts]
    added = tuple(r for r, _ in read)
    names = pa.concat_arrays([n for _, n in read]) if read else string_array([])
    removed = tuple(dict.fromkeys(ts._relative_part(p) for p in remove_parts))
    gone = tuple(dict.fromkeys(str(n) for n in removed_objects))
    if len(pc.unique(names)) != len(names):
        raise ValueError("an object appears in two added parts")
    added_paths = {p.path for p in added}
    if len(added_paths) != len(added) or added_paths & set(removed):
        raise ValueError("a part is added twice, or added and removed")
    for path in removed:
        if path not in base.parts:
            raise ValueError(f"{path} is not a live part at version {base.version}")
    if labels != base.encryption and set(base.parts) - set(removed):
        raise ValueError("changing the encryption needs every live part removed (rebuild)")
    gone_names = gone
    gone, superseded, dead = _deaths(ts, base, names, gone, removed, cipher)
    if added:  # the parts' directory entries are durable before an entry names them
        ts._storage.sync_dir(ts._p(PARTS_DIR))
    touches = {("p", p) for p in removed} | {("k", p) for p in removed}
    touches |= {("p", d.part) for d in dead}
    for p in removed:
        touches.update(("o", n) for n in base.members.get(p, ()))
    return _Change(
        defs,
        labels,
        added,
        removed,
        gone,
        superseded,
        dead,
        names,
        gone_names,
        frozenset(touches),
        index_defs is not None,
        labels != base.encryption,
        log_key,
        cipher,
        log_details,
    )


def _added_part(ts, path, encryption, defs) -> tuple:
    """``(PartRecord with its summary, its obj_name array)`` of a part to commit."""
    rel = ts._relative_part(path)
    full = ts._p(rel)
    try:
        data = ts._storage.read(full)
    except FileNotFoundError:
        raise CommitConflictError(
            f"{full}: the part is gone before it was committed (a "
            "concurrent vacuum deleted it: it was written longer "
            "ago than the vacuum's retain); recompute it"
        ) from None
    written, key_access = receipts.held(ts._written_key(rel))
    if written is not None and written.defs == defs and key_access is ts._key_access:
        record = receipts.record_of(rel, full, data, written)
        _check_belongs(ts, full, written.table_id, written.encryption, encryption)
        return record, written.names
    info = inspect_part(data, full, ts._key_access, None)
    _check_belongs(ts, full, info.table_id, info.encryption, encryption)
    live_bytes = pc.sum(info.table.column(OBJ_SIZE)).as_py() or 0
    record = PartRecord(
        rel, info.rows, info.bytes, info.sha256, (), live_bytes, summarize(info.table, defs)
    )
    # not cached for later snapshots: every process reads (and verifies) a part from the
    # store the first time it uses it, so a part damaged or removed after its commit is
    # noticed by the writer's process too
    return record, info.table.column(OBJ_NAME).combine_chunks()


def _check_belongs(ts, full: str, table_id, labels, encryption) -> None:
    """IntegrityError unless a part of table ``table_id`` encrypted as ``labels`` may be
    added to this table, whose store is encrypted as ``encryption``."""
    if table_id != ts.identity.id:
        raise IntegrityError(
            f"{full}: the part belongs to table id {table_id}, not "
            f"{ts.identity.id} ({ts.identity.uri})"
        )
    if labels != encryption:
        raise IntegrityError(
            f"{full}: the part is encrypted as {labels}, the store as {encryption}"
        )


def _log_cipher(ts, base: State, labels) -> tuple:
    """``(log key material, LogCipher)`` a commit with ``labels`` writes under: the
    store's, or a new one for a store that has none yet or changes its labels; (None,
    None) for a plaintext store."""
    if labels is None:
        return None, None
    if labels == base.encryption and base.log_key is not None:
        return base.log_key, cipher_for(base.log_key, ts._key_access, ts.identity.id, ts.path)
    key, material = new_log_key(ts._key_access, labels)
    return material, LogCipher(key, ts.identity.id)


def log_cipher(ts, state: State):
    """See :meth:`metaindex.store.TableStore.log_cipher`."""
    if state.log_key is None:
        return None
    return cipher_for(state.log_key, ts._key_access, ts.identity.id, ts.path)


def _deaths(ts, base: State, names: pa.Array, gone: tuple, removed: tuple, cipher) -> tuple:
    """``(removed objects, superseded objects, DeadObjects)`` of a commit against its base,
    found in the base's file list read as Arrow, in their log form (tokens of ``cipher``,
    except in listed parts, whose names the log holds already). Objects living in removed
    parts die with their part and are in neither list."""
    if not gone and not len(names):
        return (), (), ()
    files = Snapshot(ts._storage, ts.path, base, ts._key_access).file_table((OBJ_NAME, OBJ_SIZE))
    wanted = pa.concat_arrays([names, string_array(list(gone))])  # (pa.array: pandas)
    hits = files.filter(pc.is_in(files.column(OBJ_NAME), value_set=wanted))
    paths = list(base.parts)
    gone_set = set(gone)
    found = set(hits.column(OBJ_NAME).to_pylist())
    missing = [n for n in gone if n not in found]
    if missing:
        raise ValueError(f"object {missing[0]!r} is not indexed at version {base.version}")
    removed_set = set(removed)
    by_part: dict[str, list] = {}
    kept_gone, superseded = [], []
    order = {n: i for i, n in enumerate(gone)}
    for name, size, index in zip(
        *(hits.column(c).to_pylist() for c in (OBJ_NAME, OBJ_SIZE, "part_index")), strict=True
    ):
        part = paths[index]
        if part in removed_set:
            continue
        form = name if cipher is None or base.is_listed(part) else cipher.token(name)
        if name in gone_set:
            kept_gone.append((order[name], form))
        else:
            superseded.append(form)
        entry = by_part.setdefault(part, [[], 0])
        entry[0].append(form)
        entry[1] += size
    kept_gone = [form for _, form in sorted(kept_gone)]
    dead = tuple(DeadObjects(p, tuple(sorted(ns)), size) for p, (ns, size) in by_part.items())
    return tuple(kept_gone), tuple(sorted(superseded)), dead


def _rebase(ts, state: State, change: _Change, base: State) -> State:
    """The newest state, if no entry after ``state`` conflicts with this commit."""
    latest = latest_for_writer(ts._storage, ts.path)
    newer = state.copy()
    added_paths = {p.path for p in change.added}
    for v in range(state.version + 1, latest + 1):
        where = ts._p(entry_name(v))
        try:
            entry = read_entry(ts._storage, ts.path, v)
        except FileNotFoundError:
            raise CommitConflictError(
                f"{where}: gone (a concurrent vacuum or repair "
                "removed the versions this commit was computed "
                "from); recompute it"
            ) from None
        if entry.operation == "drop":
            raise CommitConflictError(f"{where}: the index was dropped concurrently")
        if entry.reset is not None:
            raise CommitConflictError(f"{where}: the index was repaired concurrently")
        doomed = added_paths.intersection(entry.doomed_parts)
        if doomed:
            raise CommitConflictError(
                f"{where}: a concurrent vacuum deletes {sorted(doomed)[0]}, which this "
                "commit adds (written longer ago than the vacuum's retain); recompute it"
            )
        if entry.format_version >= 8 and entry.log_key != change.log_key:
            raise CommitConflictError(f"{where}: the store's log key changed concurrently")
        if entry.encryption != base.encryption:
            raise CommitConflictError(f"{where}: the encryption changed concurrently")
        if change.sets_labels and entry.added_parts:
            raise CommitConflictError(
                f"{where}: parts were added concurrently to a rebuild that changes the encryption"
            )
        if change.sets_defs and entry.index_defs != base.index_defs:
            raise CommitConflictError(f"{where}: the index definitions changed concurrently")
        theirs = newer.touched_by(entry, change.identities(_added_names(ts, entry)))
        mine = change.mine
        clash = (theirs & change.touches) | {k for k in theirs if k[0] == "o" and k[1] in mine}
        if clash:
            sample = sorted(k for _, k in clash)[:5]
            raise CommitConflictError(
                f"{where}: a concurrent {entry.operation} (version {v}) changed what this "
                f"commit changes: {sample}{' ...' if len(clash) > 5 else ''}"
            )
        newer.apply(entry, where)
    return newer


def _added_names(ts, entry: LogEntry) -> list:
    """The obj_names of an entry's format-7 added parts (read from the parts)."""
    scope = scope_of(ts._storage, ts.path, entry.encryption, ts._key_access)
    names = []
    for part in entry.added_parts:
        if not part.listed:
            try:
                table = read_part(
                    ts._storage,
                    ts.path,
                    scope,
                    part,
                    (),
                    ts._key_access,
                    f"version {entry.version}",
                )
            except (IntegrityError, DecodeError) as exc:
                raise CommitConflictError(
                    f"cannot read what the concurrent version "
                    f"{entry.version} added ({exc}); recompute "
                    "this commit"
                ) from None
            names.extend(table.column(OBJ_NAME).to_pylist())
    return names


def after_commit(ts, state: State, entry: LogEntry) -> None:
    """Cache the new state (the next commit starts from it); write its checkpoint when due."""
    new = state.copy()
    new.apply(entry, entry_name(entry.version))
    remember_state(ts._storage, ts.path, new)
    if entry.version % CHECKPOINT_INTERVAL:
        return
    try:
        write_checkpoint(ts._storage, ts.path, new, ts._temp())
    except OSError as exc:  # the commit stands; readers replay from an older checkpoint
        log.warning("%s: could not write checkpoint %d: %s", ts.path, new.version, exc)
