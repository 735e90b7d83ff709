"""The commit log: reading entries and checkpoints, and replaying them into a state.

A state is what a snapshot holds: the live objects (obj_name -> :class:`FileEntry`), the live
parts, the index definitions, the encryption labels and the table identity at one version. It is
rebuilt from the newest readable checkpoint at or below the wanted version plus the entries
after it. Checkpoints are derived data: a damaged one is skipped (with a warning) for an older
one or a replay from version 0; entries are the truth, and a damaged entry makes every version
from it on unreadable unless a later checkpoint, or a later ``repair`` entry (which holds its
whole state), covers it.

Names in a state are as the log writes them: clear, or (an encrypted store's format-8 entries)
tokens of the store's log key; whoever maps a part's rows to them passes the
:class:`~metaindex.store.logkey.LogCipher` (:meth:`State.live_mask`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import (
    CommitConflictError,
    DecodeError,
    IntegrityError,
    MetaIndexError,
    SchemaError,
    UnsupportedVersionError,
)
from metaindex.store.layout import (
    LOG_DIR,
    TableIdentity,
    checkpoint_name,
    entry_name,
    parse_log_name,
)
from metaindex.store.model import (
    FORMAT_VERSION,
    EncryptionLabels,
    FileEntry,
    IndexDef,
    LogEntry,
    PartRecord,
    check_format_version,
    require_field,
    seal_json,
    unreadable_record,
    unseal_json,
)
from metaindex.store.tableschema import (
    encode_schema,
    latest_table_state,
    merge_records,
    schema_record,
)

__all__ = [
    "State",
    "LogListing",
    "latest_for_writer",
    "list_log",
    "read_entry",
    "encode_entry",
    "load_state",
    "write_checkpoint",
    "oldest_readable",
    "remember_state",
    "read_checkpoint",
    "log_start",
    "changed_since_seen",
    "VacuumedError",
]

log = logging.getLogger(__name__)
_CACHE_SIZE = 16
_state_cache: OrderedDict = OrderedDict()
_cache_lock = Lock()


class VacuumedError(MetaIndexError):
    """A version below the oldest the log still holds (vacuumed)."""


class State:
    """The store's content at one version (mutable only while it is being replayed).

    Parts come in two kinds. A *listed* part (added by a format 5/6 entry) has its live
    objects in ``members`` and ``files``, as the log listed them. A format-7 part is its own
    object list: the state keeps only the names that died in it (``dead``) and their obj_size
    total (``dead_bytes``), so a state costs O(parts + changes), not O(objects).
    """

    __slots__ = (
        "version",
        "timestamp",
        "operation",
        "table",
        "index_defs",
        "encryption",
        "parts",
        "members",
        "files",
        "dead",
        "dead_bytes",
        "dropped",
        "schema_records",
        "unreadable",
        "log_key",
        "floor",
    )

    def __init__(self):
        self.version = -1
        self.timestamp = 0
        self.operation = ""
        self.table: TableIdentity | None = None
        self.index_defs: tuple = ()
        self.encryption: EncryptionLabels | None = None
        self.parts: dict[str, PartRecord] = {}  # live parts, in the order they were added
        self.members: dict[str, set] = {}  # listed part -> names of its live objects
        self.files: dict[str, FileEntry] = {}  # live objects of listed parts
        self.dead: dict[str, set] = {}  # format-7 part -> names no longer live
        self.dead_bytes: dict[str, int] = {}  # format-7 part -> their obj_size total
        self.dropped = False
        # the table schema records of the log, oldest first (metaindex.store.tableschema);
        # None only for a state read from a checkpoint written before they were kept
        self.schema_records: tuple | None = ()
        # data files a build / refresh could not read: name (or token) -> (size, mtime,
        # reason), or a sealed record (format 8, encrypted store)
        self.unreadable: dict[str, str | tuple] = {}
        self.log_key: str | None = None  # key material of an encrypted store's log key
        # versions below it are gone on purpose (vacuum, repair); None: not recorded (a state
        # read from a checkpoint older than format 8: the listing decides, as it did)
        self.floor: int | None = 0

    def copy(self) -> State:
        other = State()
        for name in (
            "version",
            "timestamp",
            "operation",
            "table",
            "index_defs",
            "encryption",
            "dropped",
            "schema_records",
            "log_key",
            "floor",
        ):
            setattr(other, name, getattr(self, name))
        other.parts = dict(self.parts)
        other.members = {k: set(v) for k, v in self.members.items()}
        other.files = dict(self.files)
        other.dead = {k: set(v) for k, v in self.dead.items()}
        other.dead_bytes = dict(self.dead_bytes)
        other.unreadable = dict(self.unreadable)
        return other

    @property
    def identity(self) -> TableIdentity:
        """``table``, which every state read from a log has (an entry or a checkpoint set it);
        MetaIndexError for a state nothing was applied to yet."""
        if self.table is None:
            raise MetaIndexError(f"a state at version {self.version} without a table identity")
        return self.table

    def without_parts(self, paths) -> State:
        """A copy without the given live parts (and every object living in them)."""
        other = self.copy()
        for path in paths:
            if path in other.parts:
                for name in other.members.pop(path, ()):
                    other.files.pop(name, None)
                other.dead.pop(path, None)
                other.dead_bytes.pop(path, None)
                del other.parts[path]
        return other

    # ---------------------------------------------------------------- what snapshots ask

    def object_count(self) -> int:
        """Live objects: O(parts)."""
        return len(self.files) + sum(self.parts[p].rows - len(d) for p, d in self.dead.items())

    def live_counts(self, path: str) -> tuple:
        """(live objects, their obj_size total) of a live part."""
        dead = self.dead.get(path)
        if dead is not None:
            record = self.parts[path]
            # a part in ``dead`` is a format-7 one: its record always has live_bytes
            # (PartRecord.from_json requires it, commits compute it)
            assert record.live_bytes is not None
            return record.rows - len(dead), record.live_bytes - self.dead_bytes[path]
        members = self.members[path]
        return len(members), sum(self.files[n].size for n in members)

    def live_mask(self, path: str, names: pa.ChunkedArray, tokens=None):
        """Which rows of a part (its obj_name column) are live; None when all are.
        ``tokens``: the tokens of ``names`` under the store's log key, when its log names
        objects by token (a name is dead when it or its token is)."""
        dead = self.dead.get(path)
        if dead is not None:
            if not dead:
                return None
            value_set = pa.array(sorted(dead), pa.string())
            gone = pc.is_in(names, value_set=value_set)
            if tokens is not None:
                gone = pc.or_(gone, pc.is_in(tokens, value_set=value_set))
            return pc.invert(gone)
        live = self.members[path]
        if len(live) == len(names):
            return None
        return pc.is_in(names, value_set=pa.array(sorted(live), pa.string()))

    def legacy_files(self) -> dict | None:
        """{obj_name: FileEntry} replayed from the log's object lists when every live part is
        a listed one; None otherwise."""
        return None if self.dead else self.files

    def is_listed(self, path: str) -> bool:
        return path in self.members

    # ---------------------------------------------------------------- replay

    def touched_by(self, entry: LogEntry, added_names=()) -> set:
        """Keys an entry changes, judged against this (prior) state: ("p", path) for a part it
        removes, ("k", path) for a part it kills objects in (format 7), ("o", name) for an
        object it adds, removes or supersedes (``added_names``: the objects of its format-7
        added parts, which the entry does not list)."""
        keys = {("p", p) for p in entry.removed_parts}
        for p in entry.removed_parts:
            keys.update(("o", n) for n in self.members.get(p, ()))
        keys.update(("k", d.part) for d in entry.dead_objects)
        keys.update(("o", n) for n in entry.removed_objects)
        keys.update(("o", n) for n in entry.superseded_objects)
        for part in entry.added_parts:
            keys.update(("o", o.name) for o in part.objects)
        keys.update(("o", n) for n in added_names)
        return keys

    def apply(self, entry: LogEntry, where: str) -> None:
        """Advance by one entry, checking it fits this state (else the log is corrupt). A
        ``repair`` entry's ``reset`` replaces the state whole, whatever it was."""
        if entry.reset is not None:
            self._reset(entry, entry.reset, where)
            return
        if entry.version != self.version + 1:
            raise DecodeError(
                f"{where}: holds version {entry.version}, expected {self.version + 1}"
            )
        if self.dropped:
            raise DecodeError(f"{where}: an entry after the table was dropped")
        for path in entry.removed_parts:
            if path not in self.parts:
                raise DecodeError(
                    f"{where}: removes part {path}, which is not live at version {self.version}"
                )
            if path in self.members:
                for name in self.members.pop(path):
                    del self.files[name]
            else:
                del self.dead[path], self.dead_bytes[path]
            del self.parts[path]
        if entry.format_version >= 7:
            self._apply_dead(entry, where)
        else:
            self._apply_listed_removals(entry, where)
        for part in entry.added_parts:
            if part.path in self.parts:
                raise DecodeError(f"{where}: adds part {part.path} twice")
            if part.listed:
                for obj in part.objects:
                    if obj.name in self.files:
                        raise DecodeError(
                            f"{where}: adds object {obj.name!r}, which is "
                            "already live (it must be removed or superseded "
                            "first)"
                        )
                    self.files[obj.name] = obj
                self.members[part.path] = {o.name for o in part.objects}
                part = PartRecord(part.path, part.rows, part.bytes, part.sha256)
            else:
                self.dead[part.path] = set()
                self.dead_bytes[part.path] = 0
            self.parts[part.path] = part
        for path in [p for p, names in self.members.items() if not names]:
            del self.members[path], self.parts[path]  # a part whose objects are all gone
        for path in [p for p, names in self.dead.items() if len(names) >= self.parts[p].rows]:
            del self.dead[path], self.dead_bytes[path], self.parts[path]
        self._take_header(entry)
        self._note_unreadable(entry)

    def _take_header(self, entry: LogEntry) -> None:
        """What an entry says of the whole state after it: version, time, operation, table,
        index definitions, encryption, schema records, log key and floor."""
        self.version = entry.version
        self.timestamp = entry.timestamp
        self.operation = entry.operation
        self.table = entry.table
        self.index_defs = entry.index_defs
        self.encryption = entry.encryption
        self.dropped = entry.operation == "drop"
        self._add_schema_records(entry)
        self._note_log_fields(entry)

    def _note_log_fields(self, entry: LogEntry) -> None:
        if entry.format_version >= 8:
            if entry.log_key != self.log_key and self.log_key is not None:
                self.unreadable = {}  # tokens of another key: meaningless from here on
            self.log_key = entry.log_key
        floor = entry.log_floor
        if floor is None and entry.operation == "vacuum" and entry.format_version < 8:
            floor = entry.details.get("oldest_version")  # vacuum entries of formats 5-7
            floor = floor if isinstance(floor, int) and not isinstance(floor, bool) else None
        if floor is not None:
            self.floor = floor if self.floor is None else max(self.floor, floor)

    def _reset(self, entry: LogEntry, reset: dict, where: str) -> None:
        """Take the whole state of a repair entry (``reset``: its ``reset``, a checkpoint
        record)."""
        fresh = State.from_checkpoint(reset, f"{where} (reset)")
        for name in State.__slots__:
            setattr(self, name, getattr(fresh, name))
        if self.schema_records is None:
            self.schema_records = ()
        self._take_header(entry)

    def _apply_listed_removals(self, entry: LogEntry, where: str) -> None:
        """Format 5/6: removed and superseded objects by name (every part is listed)."""
        for kind, names in (
            ("removes", entry.removed_objects),
            ("supersedes", entry.superseded_objects),
        ):
            for name in names:
                gone = self.files.pop(name, None)
                if gone is None:
                    raise DecodeError(
                        f"{where}: {kind} object {name!r}, which is not live at "
                        f"version {self.version}"
                    )
                self.members[gone.part].discard(name)

    def _apply_dead(self, entry: LogEntry, where: str) -> None:
        """Format 7: ``dead_objects``, part by part, must name exactly the removed and
        superseded objects, each live in the part named."""
        named = [*entry.removed_objects, *entry.superseded_objects]
        listed = [n for d in entry.dead_objects for n in d.names]
        if (
            len(listed) != len(set(listed))
            or set(listed) != set(named)
            or len(named) != len(set(named))
        ):
            raise DecodeError(
                f"{where}: dead_objects do not name exactly the removed and "
                "superseded objects, once each"
            )
        for record in entry.dead_objects:
            path = record.part
            if path not in self.parts:
                raise DecodeError(
                    f"{where}: objects die in part {path}, which is not live at "
                    f"version {self.version}"
                )
            if path in self.members:
                members, size = self.members[path], 0
                for name in record.names:
                    if name not in members:
                        raise DecodeError(
                            f"{where}: object {name!r} is not live in {path} at "
                            f"version {self.version}"
                        )
                    members.discard(name)
                    size += self.files.pop(name).size
                if size != record.bytes:
                    raise DecodeError(
                        f"{where}: the objects dying in {path} hold {size} "
                        f"bytes, the entry says {record.bytes}"
                    )
                continue
            dead = self.dead[path]
            again = dead.intersection(record.names)
            if again:
                raise DecodeError(
                    f"{where}: object {sorted(again)[0]!r} in {path} is already "
                    f"dead at version {self.version}"
                )
            dead.update(record.names)
            self.dead_bytes[path] += record.bytes
            part = self.parts[path]
            assert part.live_bytes is not None  # a format-7 part (see live_counts)
            if len(dead) > part.rows or self.dead_bytes[path] > part.live_bytes:
                raise DecodeError(f"{where}: more objects or bytes die in {path} than it holds")

    def _note_unreadable(self, entry: LogEntry) -> None:
        """The entry's ``unreadable_cleared`` are no longer unreadable, its ``unreadable``
        are; ``unreadable_all`` replaces every record first (format 8: the commit that first
        seals the records of an encrypted store that older entries kept in clear). (Before
        format 8 the objects an entry indexed or removed were cleared too without being
        named; format 7 named the indexed ones in ``unreadable_cleared``.)"""
        if entry.format_version < 8 and self.unreadable:
            for part in entry.added_parts:
                for obj in part.objects:
                    self.unreadable.pop(obj.name, None)
            for name in entry.removed_objects:
                self.unreadable.pop(name, None)
        if entry.unreadable_all is not None:
            self.unreadable = dict(entry.unreadable_all)
        for name in entry.unreadable_cleared:
            self.unreadable.pop(name, None)
        self.unreadable.update(entry.unreadable)

    def _add_schema_records(self, entry: LogEntry) -> None:
        records = list(self.schema_records or ())
        for record in (
            schema_record(entry.table.extra) if not records else None,
            schema_record(entry.details),
        ):
            if record is not None and (not records or records[-1] != record):
                records.append(record)
        self.schema_records = tuple(records)

    # ---------------------------------------------------------------- checkpoints

    def to_checkpoint(self) -> dict:
        parts = []
        for path, rec in self.parts.items():
            if path in self.members:
                live = tuple(self.files[n] for n in sorted(self.members[path]))
                parts.append(PartRecord(rec.path, rec.rows, rec.bytes, rec.sha256, live).to_json())
            else:
                parts.append(
                    {
                        **rec.to_json(),
                        "dead": {"names": sorted(self.dead[path]), "bytes": self.dead_bytes[path]},
                    }
                )
        return {
            "format_version": FORMAT_VERSION,
            "kind": "checkpoint",
            "version": self.version,
            "timestamp": self.timestamp,
            "operation": self.operation,
            "table": self.identity.to_json(),
            "index_defs": [d.to_json() for d in self.index_defs],
            "encryption": None if self.encryption is None else self.encryption.to_json(),
            "schema_records": self._collapsed_schema_records(),
            "unreadable": {
                n: r if isinstance(r, str) else list(r) for n, r in self.unreadable.items()
            },
            "log_key": self.log_key,
            "log_floor": self.floor,
            "parts": parts,
        }

    def _collapsed_schema_records(self) -> list:
        records = list(self.schema_records or ())
        if len(records) > 1:
            try:
                schema, partitions = merge_records(records)
            except SchemaError:
                return records  # kept as they are: the snapshot reports the conflict
            state = latest_table_state(records)
            records = [
                {
                    "schema": encode_schema(schema),
                    "partitions": partitions,
                    **({"table_state": state} if state else {}),
                }
            ]
        return records

    @classmethod
    def from_checkpoint(cls, record: dict, where: str) -> State:
        if record.get("kind") != "checkpoint":
            raise DecodeError(f"{where}: not a checkpoint")
        state = cls()
        state.version = require_field(record, "version", int, where)
        state.timestamp = require_field(record, "timestamp", int, where)
        state.operation = require_field(record, "operation", str, where)
        state.table = TableIdentity.from_json(record.get("table"), where)
        defs = record.get("index_defs")
        parts = record.get("parts")
        if not isinstance(defs, list) or not isinstance(parts, list):
            raise DecodeError(f"{where}: index_defs and parts must be lists")
        state.index_defs = tuple(IndexDef.from_json(d, where) for d in defs)
        state.encryption = EncryptionLabels.from_json(record.get("encryption"), where)
        unreadable = record.get("unreadable") or {}
        if not isinstance(unreadable, dict):
            raise DecodeError(f"{where}: 'unreadable' must be an object")
        state.unreadable = {n: unreadable_record(r, where) for n, r in unreadable.items()}
        if record.get("format_version", 0) >= 8:
            state.log_key = record.get("log_key")
            state.floor = record.get("log_floor")
            if state.log_key is not None:
                require_field(record, "log_key", str, where)
            if state.floor is not None:
                require_field(record, "log_floor", int, where)
        else:
            state.floor = None
        records = record.get("schema_records")
        if records is None:
            state.schema_records = None  # an older checkpoint: see _load
        elif not isinstance(records, list) or not all(
            isinstance(r, dict) and isinstance(r.get("schema"), str) for r in records
        ):
            raise DecodeError(f"{where}: 'schema_records' must be a list of schema records")
        else:
            state.schema_records = tuple(records)
        version = check_format_version(record.get("format_version"), where)
        for raw in parts:
            part = PartRecord.from_json(raw, where, version)
            if part.path in state.parts:
                raise DecodeError(f"{where}: part {part.path} repeated")
            if not part.listed:
                dead = raw.get("dead")
                if not isinstance(dead, dict):
                    raise DecodeError(f"{where}: part {part.path}: 'dead' must be an object")
                names = set(_names(dead.get("names"), where))
                size = require_field(dead, "bytes", int, where)
                if len(names) >= part.rows or size > part.live_bytes:
                    raise DecodeError(f"{where}: part {part.path} has no live objects left")
                state.parts[part.path] = part
                state.dead[part.path] = names
                state.dead_bytes[part.path] = size
                continue
            if not part.objects:
                raise DecodeError(f"{where}: part {part.path} without live objects")
            state.parts[part.path] = PartRecord(part.path, part.rows, part.bytes, part.sha256)
            state.members[part.path] = set()
            for obj in part.objects:
                if obj.name in state.files:
                    raise DecodeError(f"{where}: object {obj.name!r} is in two parts")
                state.files[obj.name] = obj
                state.members[part.path].add(obj.name)
        return state


def _names(value, where: str) -> list:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecodeError(f"{where}: dead names must be a list of strings")
    return value


# ---------------------------------------------------------------------------- files


@dataclass(frozen=True)
class LogListing:
    entries: tuple  # versions with an entry, ascending
    checkpoints: tuple  # versions with a checkpoint, ascending
    # log file name (relative to the table directory) -> (size, mtime ms, etag or None)
    stamps: dict = field(default_factory=dict, compare=False)

    @property
    def latest(self) -> int | None:
        return self.entries[-1] if self.entries else None


def list_log(storage, table_dir: str) -> LogListing:
    entries: list[int] = []
    checkpoints: list[int] = []
    stamps = {}
    for stat in storage.list(storage.join(table_dir, LOG_DIR)):
        parsed = parse_log_name(stat.name)
        if parsed is None:
            continue
        (entries if parsed[1] == "entry" else checkpoints).append(parsed[0])
        stamps[f"{LOG_DIR}/{stat.name}"] = (stat.size, stat.mtime_ms, stat.etag)
    return LogListing(tuple(sorted(entries)), tuple(sorted(checkpoints)), stamps)


def latest_for_writer(storage, table_dir: str) -> int:
    """The newest version, for a writer that lost a race to commit: CommitConflictError when
    the log is empty (the index was dropped and its directory deleted concurrently)."""
    latest = list_log(storage, table_dir).latest
    if latest is None:
        raise CommitConflictError(
            f"{table_dir}: the log is gone (the index was deleted concurrently)"
        )
    return latest


def oldest_readable(listing: LogListing) -> int:
    """The oldest version a reader can start from: 0 while entry 0 exists, else the oldest
    checkpoint (vacuum deletes entries only below a checkpoint)."""
    starts = [c for c in listing.checkpoints if c <= listing.latest]
    if listing.entries[0] == 0:
        starts.append(0)
    if not starts:
        raise MetaIndexError(
            f"the log starts at version {listing.entries[0]} without a checkpoint to begin from"
        )
    return min(starts)


def log_start(listing: LogListing, floor: int | None) -> int:
    """The oldest version the log must still hold: the floor a vacuum or repair recorded (the
    head state's), else (a store whose checkpoints predate format 8) where the listing
    starts."""
    if floor is not None:
        return floor
    try:
        return oldest_readable(listing)
    except MetaIndexError:
        return listing.entries[0]


_seen: dict = {}  # (storage key, table dir) -> {log file: stamp} as last listed
_seen_lock = Lock()


def changed_since_seen(storage_key, table_dir: str, listing: LogListing) -> bool:
    """Whether a log file this process listed before has another size, mtime or ETag now.
    Log files are immutable, so a change means damage or replacement: whatever was cached
    from them must be read again. (Files that appear or go are not changes.)"""
    with _seen_lock:
        before = _seen.get((storage_key, table_dir), {})
        changed = any(before.get(name, stamp) != stamp for name, stamp in listing.stamps.items())
        _seen[(storage_key, table_dir)] = dict(listing.stamps)
        if len(_seen) > 1024:
            _seen.pop(next(iter(_seen)))
    return changed


def encode_entry(entry: LogEntry) -> bytes:
    return seal_json(entry.to_json())


def read_entry(storage, table_dir: str, version: int) -> LogEntry:
    """One entry; FileNotFoundError when it does not exist."""
    path = storage.join(table_dir, entry_name(version))
    data = storage.read(path)
    record = unseal_json(data, path)
    entry = LogEntry.from_json(record, path)
    if entry.version != version:
        raise DecodeError(f"{path}: holds version {entry.version}, its name says {version}")
    return entry


def read_checkpoint(storage, table_dir: str, version: int) -> State:
    path = storage.join(table_dir, checkpoint_name(version))
    state = State.from_checkpoint(unseal_json(storage.read(path), path), path)
    if state.version != version:
        raise DecodeError(f"{path}: holds version {state.version}, its name says {version}")
    return state


def write_checkpoint(storage, table_dir: str, state: State, temp_path: str) -> bool:
    path = storage.join(table_dir, checkpoint_name(state.version))
    return storage.create_if_absent(path, seal_json(state.to_checkpoint()), temp_path)


def _cached(key) -> State | None:
    with _cache_lock:
        state = _state_cache.get(key)
        if state is not None:
            _state_cache.move_to_end(key)
        return state


def _remember(key, state: State) -> None:
    with _cache_lock:
        _state_cache[key] = state
        _state_cache.move_to_end(key)
        while len(_state_cache) > _CACHE_SIZE:
            _state_cache.popitem(last=False)


def forget_table(storage_key, table_dir: str) -> None:
    """Drop every cached state of one table (after ``drop``: a rebuilt table reuses versions)."""
    with _cache_lock:
        for key in [k for k in _state_cache if k[0] == storage_key and k[1] == table_dir]:
            del _state_cache[key]


def remember_state(storage, table_dir: str, state: State) -> None:
    """Cache a state the caller built (it must not be mutated afterwards)."""
    if not state.dropped:
        _remember((storage.key, table_dir, state.version), state)


def load_state(
    storage, table_dir: str, version: int | None = None, listing: LogListing | None = None
) -> State:
    """The state at ``version`` (None: the latest). The returned state must not be mutated.

    Raises:
        FileNotFoundError: the log is empty (no index for this table).
        MetaIndexError: the latest entry is a drop (only when ``version`` is None).
        MetaIndexError: the version does not exist; VacuumedError: it is no longer readable
            (vacuumed).
        DecodeError / IntegrityError / UnsupportedVersionError: a damaged or newer entry,
            naming its file.
    """
    for attempt in range(3):
        listing = listing if attempt == 0 and listing is not None else list_log(storage, table_dir)
        try:
            return _load(storage, table_dir, version, listing)
        except (FileNotFoundError, DecodeError) as exc:
            # a vacuum removed files under us, or deleted entries while the listing was taken
            # (a listing is not a snapshot: it can hold an old checkpoint and miss the entries
            # after it): list again; a gap that stays is damage
            if getattr(exc, "_log_vanished", False) and attempt < 2:
                continue
            raise
    raise AssertionError("unreachable")


def _replay(storage, table_dir: str, state: State, target: int, present) -> None:
    """Apply the entries after ``state`` up to ``target``."""
    for v in range(state.version + 1, target + 1):
        path = storage.join(table_dir, entry_name(v))
        if v not in present:
            gap = DecodeError(
                f"{path}: log entry missing (the log has a gap between "
                f"{state.version} and {target})"
            )
            gap._log_vanished = True  # type: ignore[attr-defined]  # load_state lists again
            raise gap
        try:
            entry = read_entry(storage, table_dir, v)
        except FileNotFoundError as exc:
            exc._log_vanished = True  # type: ignore[attr-defined]  # read back with getattr
            raise
        state.apply(entry, path)


def _from_repair(storage, table_dir: str, target: int, listing: LogListing) -> State | None:
    """The state at ``target`` replayed from the newest ``repair`` entry at or below it (which
    holds its whole state: the damage below it does not matter); None without one."""
    present = set(listing.entries)
    for v in sorted((e for e in listing.entries if e <= target), reverse=True):
        try:
            entry = read_entry(storage, table_dir, v)
        except (DecodeError, IntegrityError, FileNotFoundError):
            continue
        if entry.reset is None:
            continue
        state = State()
        state.apply(entry, storage.join(table_dir, entry_name(v)))
        _replay(storage, table_dir, state, target, present)
        return state
    return None


def _legacy_schema_records(storage, table_dir: str, state: State) -> tuple:
    """The schema records of the entries up to a checkpoint that predates them: the table
    identity's, then those of the entries still in the log, oldest first."""
    found = []
    for v in range(state.version, -1, -1):
        try:
            entry = read_entry(storage, table_dir, v)
        except FileNotFoundError:
            break
        record = schema_record(entry.details)
        if record is not None:
            found.append(record)
    identity = schema_record(state.table.extra) if state.table is not None else None
    return tuple(([identity] if identity is not None else []) + found[::-1])


def _load(storage, table_dir: str, version: int | None, listing: LogListing) -> State:
    if listing.latest is None:
        raise FileNotFoundError(f"{storage.join(table_dir, LOG_DIR)}: no log entries")
    latest = listing.latest
    target = latest if version is None else version
    if not isinstance(target, int) or isinstance(target, bool) or target < 0:
        raise TypeError(f"version must be a natural number or None, not {version!r}")
    if target > latest:
        raise MetaIndexError(f"{table_dir}: version {target} does not exist (latest is {latest})")
    try:
        oldest = oldest_readable(listing)
    except MetaIndexError:  # no start: a repair entry may still hold the whole state
        oldest = listing.entries[0]
    if target < oldest:
        raise VacuumedError(
            f"{table_dir}: version {target} is no longer readable (vacuumed; "
            f"the oldest readable version is {oldest})"
        )
    key = (storage.key, table_dir, target)
    state = _cached(key)
    if state is not None:
        return state
    # where to start: the newest of (a cached state, a checkpoint) at or below the target
    bases = [v for v in listing.checkpoints if v <= target]
    cached_base = None
    for v in range(target - 1, max(bases[-1] if bases else -1, target - 64), -1):
        cached_base = _cached((storage.key, table_dir, v))
        if cached_base is not None:
            break
    state = None
    if cached_base is not None:
        state = cached_base.copy()
    else:
        for v in reversed(bases):
            try:
                state = read_checkpoint(storage, table_dir, v)
                if state.schema_records is None:
                    state.schema_records = _legacy_schema_records(storage, table_dir, state)
                break
            except FileNotFoundError as exc:
                exc._log_vanished = True  # type: ignore[attr-defined]  # read back with getattr
                raise
            except (DecodeError, IntegrityError) as exc:
                log.warning("skipping damaged checkpoint: %s", exc)
    present = set(listing.entries)
    try:
        if state is None:
            first = listing.entries[0]
            if first != 0:
                oldest = bases[0] if bases else first
                raise VacuumedError(
                    f"{table_dir}: version {target} is no longer readable "
                    f"(vacuumed; the oldest readable version is {oldest})"
                )
            state = State()
        _replay(storage, table_dir, state, target, present)
    except (DecodeError, IntegrityError, MetaIndexError) as exc:
        if isinstance(exc, UnsupportedVersionError):
            raise
        state = _from_repair(storage, table_dir, target, listing)
        if state is None:
            raise
    if version is None and state.dropped:
        raise MetaIndexError(f"{table_dir}: the index was dropped (version {state.version})")
    _remember(key, state)
    return state
