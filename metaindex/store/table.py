"""The metadata store of a table: create, snapshot, commit, compact, vacuum, history, drop.

Commit protocol (specs/metadata-store.md, "Commit protocol"): part files are written first under
unique names; then the entry for ``base + 1`` is created with create-if-absent. If another
writer created it first, the new entries are read; when none of them touches what this commit
touches (its removed parts, the objects it removes, supersedes or adds) the commit is rebased on
the newest version and retried, else :class:`CommitConflictError` is raised. A crash at any
point leaves the log at a committed version; at worst unreferenced files in ``parts/``, which
:meth:`TableStore.vacuum` removes once older than its ``retain``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import (CommitConflictError, DecodeError, IntegrityError, MetaIndexError,
                              StoreDamageError, UnsupportedVersionError)
from metaindex.store.layout import (LOG_DIR, PARTS_DIR, TABLE_JSON, TableIdentity,
                                    parse_log_name,
                                    checkpoint_name, entry_name, is_part_name, new_part_name,
                                    temp_name)
from metaindex.store.log import (State, VacuumedError, changed_since_seen, encode_entry,
                                 list_log, load_state, read_entry, remember_state,
                                 write_checkpoint)
from metaindex.store.escaping import OBJ_NAME, OBJ_SIZE
from metaindex.store.logkey import LogCipher, cipher_for, new_log_key
from metaindex.store.maintenance import MIN_RETAIN, RepairResult, VacuumResult
from metaindex.store.tableschema import SCHEMA_DETAILS
from metaindex.store.model import (FORMAT_VERSION, MAX_PART_OBJECTS, OPERATIONS, DeadObjects,
                                   EncryptionLabels, LogEntry, PartRecord,
                                   normalize_index_defs)
from metaindex.store.parts import encode_part_table, inspect_part
from metaindex.store.summary import summarize
from metaindex.store.log import forget_table as log_forget
from metaindex.store.snapshot import Snapshot, read_part, scope_of
from metaindex.store.snapshot import forget_table as snapshot_forget
from metaindex.store.schemes import open_storage

__all__ = ["MetadataStore", "TableStore", "VacuumResult", "RepairResult", "CHECKPOINT_INTERVAL",
           "DEFAULT_TARGET_FILE_SIZE", "DEFAULT_RETAIN", "MIN_RETAIN", "PartReceipt"]

log = logging.getLogger(__name__)
CHECKPOINT_INTERVAL = 10
DEFAULT_TARGET_FILE_SIZE = 32 * 1024 * 1024
DEFAULT_RETAIN = timedelta(days=7)
_MAX_ATTEMPTS = 30
_COMPACT_ATTEMPTS = 3
COMPACT_DEAD_FRACTION = 0.1
"""A full part is rewritten by compaction once this share of its rows is dead."""
COMPACT_BATCH_OBJECTS = 16 * MAX_PART_OBJECTS
"""The most objects compaction sorts and rewrites in memory at once."""
_KEEP = object()
_WRITTEN_MAX_PARTS = 4096
_WRITTEN_MAX_BYTES = 64 * 1024 * 1024


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class _LogDetails:
    """A commit's details as the log records them (``details`` and the ``unreadable`` /
    ``unreadable_cleared`` the engine passes in them): in an encrypted store, everything but
    the schema record is sealed and names are tokens (:mod:`metaindex.store.logkey`)."""

    clear: dict           # the entry's details
    sealed: str | None    # the rest, sealed (encrypted store)
    unreadable: dict      # log form -> record
    cleared: tuple        # clear names whose unreadable records go

    @classmethod
    def of(cls, details: dict, cipher) -> "_LogDetails":
        details = dict(details)
        found = details.pop("unreadable", None) or {}
        cleared = details.pop("unreadable_cleared", None) or ()
        if not isinstance(found, dict) or not all(
                isinstance(n, str) and isinstance(r, (list, tuple)) and len(r) == 3
                for n, r in found.items()):
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
        return cls(clear, cipher.seal(details, "details") if details else None, records,
                   tuple(cleared))


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
    added: tuple        # PartRecord (format 7)
    removed: tuple      # part paths
    gone: tuple         # removed objects (still live outside the removed parts), log form
    superseded: tuple   # objects of the added parts live at the base outside removed parts
    dead: tuple         # DeadObjects: gone + superseded, by the part they live in
    names: pa.Array     # obj_names in the added parts
    gone_names: tuple   # the removed obj_names as given
    touches: frozenset  # part keys (State.touched_by) a concurrent commit must not touch;
    #                     the objects it must not touch are :attr:`mine`
    sets_defs: bool
    sets_labels: bool
    log_key: str | None  # key material of the store's log key (encrypted stores)
    cipher: object       # LogCipher or None
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
        cleared = tuple(sorted(k for k in state.unreadable if k in self._clears)) \
            if state.unreadable else ()
        found, every = self.details.unreadable, None
        if self.cipher is not None and any(isinstance(r, tuple) for r in
                                           state.unreadable.values()):
            # records an older entry kept in clear: seal them all, naming none of them
            every = {k: r for k, r in state.unreadable.items() if k not in cleared}
            for name, record in [(k, r) for k, r in every.items() if isinstance(r, tuple)]:
                del every[name]
                token = self.cipher.token(name)
                every[token] = self.cipher.seal([name, *record], f"unreadable/{token}")
            every.update(found)
            found, cleared = {}, ()
        return LogEntry(state.version + 1, max(_now_ms(), state.timestamp + 1), operation,
                        base.table, self.defs, self.labels, self.added, self.removed, self.gone,
                        self.superseded, self.details.clear, dead_objects=self.dead,
                        unreadable=found, unreadable_cleared=cleared, unreadable_all=every,
                        sealed_details=self.details.sealed, log_key=self.log_key)


@dataclass(frozen=True)
class PartReceipt:
    """What :meth:`TableStore.write_part` knows of a part it wrote (picklable): committing
    the part in a process that holds its receipt checks the part's bytes (size, SHA-256)
    against it instead of decoding the part again. See :meth:`TableStore.take_receipt`.

    Attributes:
        path: the part's path relative to the table directory.
        bytes / sha256: the size and SHA-256 of the bytes written.
        rows / live_bytes / names: its object count, their summed ``obj_size``, ``obj_name``.
        summary: :func:`~metaindex.store.summarize` of the table written, for ``defs``.
        defs: the index definitions it was written with.
        table_id / encryption: the table id and labels it was written with.
    """

    path: str
    bytes: int
    sha256: str
    rows: int
    live_bytes: int
    names: pa.Array
    summary: pa.Table
    defs: tuple
    table_id: str
    encryption: EncryptionLabels | None

    @property
    def weight(self) -> int:
        return self.names.nbytes + self.summary.nbytes


# (storage key, table dir, rel path) -> (receipt, the key access of the store it came from)
_written: OrderedDict[tuple, tuple] = OrderedDict()
_written_bytes = 0
_written_lock = threading.Lock()


def _remember_written(key: tuple, receipt: PartReceipt, key_access) -> None:
    """Remember a part's receipt (the oldest are forgotten past the bounds: their commit
    then decodes them, as for a part without one)."""
    global _written_bytes
    with _written_lock:
        old = _written.pop(key, None)
        if old is not None:
            _written_bytes -= old[0].weight
        _written[key] = (receipt, key_access)
        _written_bytes += receipt.weight
        while _written and (len(_written) > _WRITTEN_MAX_PARTS
                            or _written_bytes > _WRITTEN_MAX_BYTES):
            _written_bytes -= _written.popitem(last=False)[1][0].weight


def _take_written(key: tuple) -> PartReceipt | None:
    """Forget a part's receipt; the receipt (None: none held)."""
    global _written_bytes
    with _written_lock:
        found = _written.pop(key, None)
        if found is None:
            return None
        _written_bytes -= found[0].weight
        return found[0]


def _forget_written(keys) -> None:
    for key in keys:
        _take_written(key)


def _forget_written_table(storage_key, table_dir: str) -> None:
    with _written_lock:
        keys = [k for k in _written if k[0] == storage_key and k[1] == table_dir]
    _forget_written(keys)


class MetadataStore:
    """A directory of table indexes: ``<root>/<table id>/``.

    Args:
        root: a local directory, an object store URI (``s3://bucket/prefix``, ``gs://``,
            ``az://``; committed to with conditional PUTs), or another URI ``pyarrow.fs``
            understands (read-only): the backend of its scheme in
            :mod:`metaindex.store.schemes`.
        filesystem: a ``pyarrow.fs.FileSystem`` to use for ``root`` (read-only unless local).
        key_access: a :class:`KeyAccess` for encrypted stores (never persisted).
        storage_options: object store settings (endpoint, region, credentials, client
            options), added to those from the environment; see
            :mod:`metaindex.store.objectstore`.
    """

    def __init__(self, root, *, filesystem=None, key_access=None, storage_options=None):
        self.storage, self.root = open_storage(root, filesystem, storage_options)
        self.key_access = key_access

    def table(self, table_uri) -> "TableStore":
        """The store of the table at ``table_uri`` (a path or URI; normalised)."""
        return TableStore(self, TableIdentity.for_uri(table_uri))

    def __repr__(self) -> str:
        return f"MetadataStore({self.root!r})"


class TableStore:
    """The versioned metadata of one table. Cheap to create; holds no open files; picklable.

    Attributes:
        identity: the :class:`TableIdentity` (normalised URI, id, identifier).
        path: the table's directory in the store.
    """

    def __init__(self, store: MetadataStore, identity: TableIdentity):
        self._storage = store.storage
        self._key_access = store.key_access
        self.identity = identity
        self.path = self._storage.join(store.root, identity.id)

    def __repr__(self) -> str:
        return f"TableStore({self.identity.uri!r} at {self.path!r})"

    def _p(self, relative: str) -> str:
        return self._storage.join(self.path, relative)

    def _temp(self) -> str:
        return self._p(temp_name())

    # ---------------------------------------------------------------- reading

    def exists(self) -> bool:
        """Whether an index exists (its log is not empty and does not end with a drop)."""
        latest = list_log(self._storage, self.path).latest
        if latest is None:
            return False
        try:
            return read_entry(self._storage, self.path, latest).operation != "drop"
        except FileNotFoundError:
            return self.exists()
        except (DecodeError, IntegrityError, UnsupportedVersionError):
            return True  # it exists; snapshot() reports what is wrong with it

    def head(self) -> tuple:
        """A cheap fingerprint of the store's current state, for readers that cache a
        snapshot: ``(newest log entry as (version, size, mtime, etag) or None, {part file name:
        (size, mtime, etag)}, {log file name: (size, mtime, etag)})`` (etag: an object
        store's, else None). Two listings (the log and the parts directories), no reads."""
        latest, log_files = None, {}
        for stat in self._storage.list(self._p(LOG_DIR)):
            parsed = parse_log_name(stat.name)
            if parsed is None:
                continue
            log_files[stat.name] = (stat.size, stat.mtime_ms, stat.etag)
            if parsed[1] == "entry" and (latest is None or parsed[0] > latest[0]):
                latest = (parsed[0], stat.size, stat.mtime_ms, stat.etag)
        parts = {stat.name: (stat.size, stat.mtime_ms, stat.etag)
                 for stat in self._storage.list(self._p(PARTS_DIR))}
        return latest, parts, log_files

    def forget_cached(self) -> None:
        """Drop this table's decoded metadata (replayed versions, tables and parts) from the
        in-process caches, so the next snapshot read replays the log and verifies every part
        again (after a file changed on disk), and what this process remembers of the parts it
        wrote (committing one then decodes it)."""
        log_forget(self._storage.key, self.path)
        snapshot_forget(self._storage.key, self.path)
        _forget_written_table(self._storage.key, self.path)

    def latest_version(self) -> int | None:
        """The newest version in the log (None: no index)."""
        return list_log(self._storage, self.path).latest

    def _state(self, version: int | None = None, listing=None) -> State:
        listing = listing or list_log(self._storage, self.path)
        if changed_since_seen(self._storage.key, self.path, listing):
            # a log file changed in place (damage, or a drop and create): nothing read from
            # this table's log may be trusted any more
            log_forget(self._storage.key, self.path)
            snapshot_forget(self._storage.key, self.path)
        try:
            state = load_state(self._storage, self.path, version, listing)
        except FileNotFoundError:
            raise MetaIndexError(f"no metadata index for table {self.identity.uri} "
                                 f"(store directory {self.path})") from None
        if state.dropped:
            raise MetaIndexError(f"{self.path}: the index of {self.identity.uri} was dropped "
                                 f"(version {state.version})")
        return state

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The index at ``version`` (None: the latest committed one)."""
        return Snapshot(self._storage, self.path, self._state(version), self._key_access)

    def history(self) -> list[LogEntry]:
        """Every entry of the log from its start (the oldest version vacuum kept), oldest
        first. An encrypted store's details are opened with its keys (without them, an entry
        keeps ``sealed_details`` and shows its schema record only).

        Raises:
            StoreDamageError: a gap in the log, an entry or checkpoint that fails its checksum
                or does not parse (``problems`` names each); ``refresh()`` repairs it.
        """
        from metaindex.store.health import scan_log

        scan = scan_log(self)
        if scan.problems:
            raise _damage_error(self.path, scan.problems)
        out = []
        for v in range(scan.start, scan.latest + 1):
            entry = scan.entries.get(v)
            if entry is None:
                continue  # vacuumed since the listing
            if entry.sealed_details is not None and entry.log_key is not None and \
                    self._key_access is not None:
                cipher = cipher_for(entry.log_key, self._key_access, self.identity.id,
                                    self.path)
                opened = cipher.open(entry.sealed_details, "details", self._p(entry_name(v)))
                entry = dataclasses.replace(entry, details={**entry.details, **opened})
            out.append(entry)
        return out

    def checked_snapshot(self) -> tuple:
        """``(the latest Snapshot, damage())`` from one listing of the log: what a reader
        that uses the index only while the store is whole needs.

        Raises:
            as :meth:`snapshot` (the latest version cannot be read).
        """
        from metaindex.store.health import scan_log

        scan = scan_log(self)
        if scan.head is None:
            raise scan.head_error
        return Snapshot(self._storage, self.path, scan.head, self._key_access), scan.problems

    def damage(self, *, parts: bool = False) -> tuple:
        """What is wrong with the log (gaps, entries or checkpoints that fail their checksum
        or do not parse, a latest version that cannot be read), as
        :class:`~metaindex.store.health.Problem` s; empty when nothing is. Each log file is
        read once per process (again only when the listing shows it changed). ``parts``:
        also the parts of the latest version (read and verified) and of older ones (listed):
        what :meth:`repair` repairs."""
        from metaindex.store.health import part_problems, scan_log

        scan = scan_log(self)
        if not parts:
            return scan.problems
        return scan.problems + part_problems(self, scan)[0]

    def check(self):
        """Verify the whole store: the log chain and every version's replay, checkpoints,
        the parts every version names (present, size, SHA-256), the latest version's parts
        decoded and compared with their log records (rows, obj_size total, summaries, dead
        objects, an object live in two parts), ``table.json``. Reads every part of the latest
        version. Returns a :class:`~metaindex.store.health.CheckReport` (``healthy``,
        ``problems``, ``notes``)."""
        from metaindex.store.health import check_store

        return check_store(self)

    # ---------------------------------------------------------------- writing parts

    def new_part_path(self) -> str:
        """A fresh, unique part path (full path on the store's filesystem)."""
        return self._p(new_part_name())

    def write_part(self, table: pa.Table, index_defs, *,
                   encryption: EncryptionLabels | None = None) -> str:
        """Write one part file (not yet committed) and return its path for :meth:`commit`.

        The process remembers what it wrote (size, SHA-256, names, summary): committing the
        part here checks its bytes against that instead of decoding it again.

        Args:
            table: obj_name, obj_size, obj_mtime (ms), obj_rows, optional ``virtual_<col>``
                columns and one column per index named ``IndexDef.column``; at most
                :data:`MAX_PART_OBJECTS` rows (:meth:`write_parts` splits larger tables).
            index_defs: the index definitions of the index columns.
            encryption: the store's :class:`EncryptionLabels` (None: plaintext); keys come
                from the store's ``key_access``.
        """
        if isinstance(table, pa.Table) and table.num_rows > MAX_PART_OBJECTS:
            raise ValueError(f"a part holds at most {MAX_PART_OBJECTS} objects, not "
                             f"{table.num_rows}: use write_parts()")
        defs = normalize_index_defs(index_defs)
        pieces, written = encode_part_table(table, defs, self.identity, encryption,
                                            self._key_access)
        self._storage.makedirs(self._p(PARTS_DIR))
        rel = new_part_name()
        path = self._p(rel)
        self._storage.write(path, pieces)
        digest = hashlib.sha256()
        for piece in pieces:
            digest.update(piece)
        names = written.column(OBJ_NAME).combine_chunks()
        _remember_written(self._written_key(rel), PartReceipt(
            rel, sum(map(len, pieces)), digest.hexdigest(), written.num_rows,
            pc.sum(written.column(OBJ_SIZE)).as_py() or 0, names, summarize(written, defs),
            defs, self.identity.id, encryption), self._key_access)
        return path

    def take_receipt(self, path) -> PartReceipt | None:
        """The receipt of a part this process wrote with :meth:`write_part` and has not
        committed (None: none remembered), handed over to the process that commits the part
        (:meth:`expect_part`; this process forgets it)."""
        return _take_written(self._written_key(self._relative_part(path)))

    def expect_part(self, receipt: PartReceipt) -> None:
        """Hold the receipt of a part written by another process (a build's task, from
        :meth:`take_receipt`): committing the part here then checks its size and SHA-256
        against the receipt and takes its names and summary from it, instead of decoding
        the part (a part that differs from its receipt is an :class:`IntegrityError`)."""
        if not isinstance(receipt, PartReceipt):
            raise TypeError(f"expected a PartReceipt, not {type(receipt).__name__}")
        _remember_written(self._written_key(self._relative_part(receipt.path)), receipt,
                          self._key_access)

    def _written_key(self, rel: str) -> tuple:
        return self._storage.key, self.path, rel

    def write_parts(self, table: pa.Table, index_defs, *,
                    encryption: EncryptionLabels | None = None,
                    max_objects: int | None = None) -> list:
        """:meth:`write_part` for a table of any size: consecutive slices of at most
        ``max_objects`` (default :data:`MAX_PART_OBJECTS`) rows, one part each; returns
        their paths in order (none for an empty table)."""
        cap = MAX_PART_OBJECTS if max_objects is None else max_objects
        if isinstance(cap, bool) or not isinstance(cap, int) or not 0 < cap <= MAX_PART_OBJECTS:
            raise ValueError(f"max_objects must be an int in [1, {MAX_PART_OBJECTS}]")
        if not isinstance(table, pa.Table):
            raise TypeError(f"a part is written from a pyarrow.Table, not "
                            f"{type(table).__name__}")
        return [self.write_part(table.slice(i, cap), index_defs, encryption=encryption)
                for i in range(0, table.num_rows, cap)]

    def _relative_part(self, path) -> str:
        path = os.fspath(path)
        parts_dir = self._p(PARTS_DIR)
        if is_part_name(path):
            return path
        head, name = path.rsplit("/", 1) if "/" in path else ("", path)
        if os.sep != "/" and os.sep in path:
            head, name = os.path.split(path)
        rel = f"{PARTS_DIR}/{name}"
        if os.path.normpath(head) != os.path.normpath(parts_dir) or not is_part_name(rel):
            raise ValueError(f"{path} is not a part file of this table ({parts_dir}/<32 hex>"
                             ".parquet, from new_part_path() or write_part())")
        return rel

    def _added_part(self, path, encryption, defs) -> tuple:
        """``(PartRecord with its summary, its obj_name array)`` of a part to commit."""
        rel = self._relative_part(path)
        full = self._p(rel)
        try:
            data = self._storage.read(full)
        except FileNotFoundError:
            raise CommitConflictError(f"{full}: the part is gone before it was committed (a "
                                      "concurrent vacuum deleted it: it was written longer "
                                      "ago than the vacuum's retain); recompute it") from None
        with _written_lock:
            written, key_access = _written.get(self._written_key(rel), (None, None))
        if written is not None and written.defs == defs and key_access is self._key_access:
            return self._written_part(rel, data, written, encryption), written.names
        info = inspect_part(data, full, self._key_access, None)
        self._check_belongs(full, info.table_id, info.encryption, encryption)
        live_bytes = pc.sum(info.table.column(OBJ_SIZE)).as_py() or 0
        record = PartRecord(rel, info.rows, info.bytes, info.sha256, (), live_bytes,
                            summarize(info.table, defs))
        # not cached for later snapshots: every process reads (and verifies) a part from the
        # store the first time it uses it, so a part damaged or removed after its commit is
        # noticed by the writer's process too
        return record, info.table.column(OBJ_NAME).combine_chunks()

    def _check_belongs(self, full: str, table_id, labels, encryption) -> None:
        """IntegrityError unless a part of table ``table_id`` encrypted as ``labels`` may be
        added to this table, whose store is encrypted as ``encryption``."""
        if table_id != self.identity.id:
            raise IntegrityError(f"{full}: the part belongs to table id {table_id}, not "
                                 f"{self.identity.id} ({self.identity.uri})")
        if labels != encryption:
            raise IntegrityError(f"{full}: the part is encrypted as {labels}, the store as "
                                 f"{encryption}")

    def _written_part(self, rel: str, data: bytes, written: PartReceipt,
                      encryption) -> PartRecord:
        """The record of a part with a receipt, once its bytes are the ones written (what
        :meth:`_added_part` would decode from them is what :meth:`write_part` encoded)."""
        full = self._p(rel)
        if len(data) != written.bytes:
            raise IntegrityError(f"{full}: the part changed after it was written: "
                                 f"{len(data)} bytes, {written.bytes} were written")
        if hashlib.sha256(data).hexdigest() != written.sha256:
            raise IntegrityError(f"{full}: the part changed after it was written: its "
                                 "SHA-256 is not that of the bytes written")
        self._check_belongs(full, written.table_id, written.encryption, encryption)
        return PartRecord(rel, written.rows, written.bytes, written.sha256, (),
                          written.live_bytes, written.summary)

    # ---------------------------------------------------------------- commits

    def create(self, index_defs, identity: dict | None = None, *,
               encryption: EncryptionLabels | None = None) -> int:
        """Create the index (version 0: no objects yet); returns 0.

        Args:
            index_defs: the index definitions.
            identity: extra JSON attributes recorded with the table identity.
            encryption: :class:`EncryptionLabels` for an encrypted store.

        Raises:
            CommitConflictError: an index already exists for this table.
        """
        defs = normalize_index_defs(index_defs)
        _check_labels(defs, encryption)
        json.dumps(identity or {}, allow_nan=False)  # JSON-able, or TypeError/ValueError here
        ident = TableIdentity(self.identity.uri, self.identity.id, self.identity.identifier,
                              dict(identity or {}))
        latest = list_log(self._storage, self.path).latest
        if latest is not None:
            try:
                dropped = read_entry(self._storage, self.path, latest).operation == "drop"
            except FileNotFoundError:
                dropped = False
            if not dropped:
                raise CommitConflictError(f"an index already exists for {self.identity.uri} "
                                          f"(version {latest})")
            self._delete_all()  # finish an interrupted drop
        for sub in (LOG_DIR, PARTS_DIR):
            self._storage.makedirs(self._p(sub))
        record = {"format_version": FORMAT_VERSION, **ident.to_json(),
                  "created": _now_ms()}
        if not self._storage.create_if_absent(self._p(TABLE_JSON),
                                              (json.dumps(record, indent=2) + "\n").encode(),
                                              self._temp()):
            self._check_table_json()
        log_key = None if encryption is None else new_log_key(self._key_access, encryption)[1]
        entry = LogEntry(0, _now_ms(), "create", ident, defs, encryption, log_key=log_key)
        if not self._create_entry(entry):
            raise CommitConflictError(f"an index for {self.identity.uri} was created "
                                      "concurrently")
        return 0

    def _check_table_json(self) -> None:
        path = self._p(TABLE_JSON)
        try:
            uri = json.loads(self._storage.read(path)).get("uri")
        except (ValueError, AttributeError):
            return  # damaged; the log is authoritative
        if uri != self.identity.uri:
            raise IntegrityError(f"{path}: belongs to {uri!r}, not {self.identity.uri!r} "
                                 "(table id collision)")

    def _create_entry(self, entry: LogEntry) -> bool:
        return self._storage.create_if_absent(self._p(entry_name(entry.version)),
                                              encode_entry(entry), self._temp())

    def commit(self, base_version: int, *, add_parts=(), remove_parts=(), removed_objects=(),
               index_defs=None, encryption=_KEEP, operation: str = "commit",
               details: dict | None = None) -> int:
        """Commit a change made against ``base_version``; returns the new version.

        Args:
            base_version: the version the change was computed from.
            add_parts: part paths from :meth:`write_part` / :meth:`new_part_path`. An object
                in an added part that is live in the base supersedes its old row.
            remove_parts: live parts to drop, with every object living in them.
            removed_objects: obj_names no longer indexed (deleted files).
            index_defs: the new index definitions (None: unchanged).
            encryption: new :class:`EncryptionLabels` or None (default: unchanged); changing
                it requires removing every live part.
            operation: "build", "refresh", "compact" or "commit" (recorded).
            details: free-form JSON recorded in the entry; ``unreadable`` ({file name: [size,
                mtime, reason]}) and ``unreadable_cleared`` ([file names]) are the data files
                a build / refresh could not read, and those no longer unreadable. In an
                encrypted store every detail but the schema record is sealed, and the file
                names are tokens (specs/metadata-store.md, "Version 8").

        Raises:
            CommitConflictError: a concurrent commit touched the same parts or objects,
                changed the encryption (or the index definitions, when this commit sets them),
                dropped or repaired the index; a concurrent vacuum deleted (or will delete) an
                added part; the base version was vacuumed.
            KeyAccessError: an encrypted store without its keys.
        """
        if operation not in OPERATIONS or operation in ("create", "drop", "vacuum", "repair"):
            raise ValueError(f"operation must be one of build, refresh, compact, commit; not "
                             f"{operation!r}")
        details = dict(details or {})
        json.dumps(details, allow_nan=False)  # JSON-able, or TypeError / ValueError here
        try:
            base = self._state(base_version)
        except VacuumedError as exc:
            raise CommitConflictError(f"{exc}: the change was computed from a version a "
                                      "concurrent vacuum removed; recompute it") from None
        change = self._change(base, add_parts, remove_parts, removed_objects, index_defs,
                              encryption, details)
        state = base
        for attempt in range(_MAX_ATTEMPTS):
            entry = change.entry(state, base, operation)
            if self._create_entry(entry):
                _forget_written(self._written_key(p.path) for p in change.added)
                self._after_commit(state, entry)
                return entry.version
            state = self._rebase(state, change, base)
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise CommitConflictError(f"{self.path}: gave up after {_MAX_ATTEMPTS} attempts: other "
                                  "writers keep committing first")

    def _change(self, base: State, add_parts, remove_parts, removed_objects, index_defs,
                encryption, details: dict) -> "_Change":
        """Validate a commit's arguments against its base."""
        defs = base.index_defs if index_defs is None else normalize_index_defs(index_defs)
        labels = base.encryption if encryption is _KEEP else encryption
        if labels is not None and not isinstance(labels, EncryptionLabels):
            raise TypeError("encryption must be EncryptionLabels or None")
        _check_labels(defs, labels)
        log_key, cipher = self._log_cipher(base, labels)
        log_details = _LogDetails.of(details, cipher)
        read = [self._added_part(p, labels, defs) for p in add_parts]
        added = tuple(r for r, _ in read)
        names = pa.concat_arrays([n for _, n in read]) if read else pa.array([], pa.string())
        removed = tuple(dict.fromkeys(self._relative_part(p) for p in remove_parts))
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
        gone, superseded, dead = self._deaths(base, names, gone, removed, cipher)
        if added:  # the parts' directory entries are durable before an entry names them
            self._storage.sync_dir(self._p(PARTS_DIR))
        touches = {("p", p) for p in removed} | {("k", p) for p in removed}
        touches |= {("p", d.part) for d in dead}
        for p in removed:
            touches.update(("o", n) for n in base.members.get(p, ()))
        return _Change(defs, labels, added, removed, gone, superseded, dead, names, gone_names,
                       frozenset(touches), index_defs is not None, labels != base.encryption,
                       log_key, cipher, log_details)

    def _log_cipher(self, base: State, labels) -> tuple:
        """``(log key material, LogCipher)`` a commit with ``labels`` writes under: the
        store's, or a new one for a store that has none yet or changes its labels; (None,
        None) for a plaintext store."""
        if labels is None:
            return None, None
        if labels == base.encryption and base.log_key is not None:
            return base.log_key, cipher_for(base.log_key, self._key_access, self.identity.id,
                                            self.path)
        key, material = new_log_key(self._key_access, labels)
        return material, LogCipher(key, self.identity.id)

    def log_cipher(self, state: State):
        """The :class:`~metaindex.store.logkey.LogCipher` of a state's log key (None: the log
        names objects in clear).

        Raises:
            KeyAccessError: the store is encrypted and this store object has no key access.
        """
        if state.log_key is None:
            return None
        return cipher_for(state.log_key, self._key_access, self.identity.id, self.path)

    def _deaths(self, base: State, names: pa.Array, gone: tuple, removed: tuple,
                cipher) -> tuple:
        """``(removed objects, superseded objects, DeadObjects)`` of a commit against its base,
        found in the base's file list read as Arrow, in their log form (tokens of ``cipher``,
        except in listed parts, whose names the log holds already). Objects living in removed
        parts die with their part and are in neither list."""
        if not gone and not len(names):
            return (), (), ()
        files = Snapshot(self._storage, self.path, base, self._key_access).file_table(
            (OBJ_NAME, OBJ_SIZE))
        wanted = pa.concat_arrays([names, pa.array(gone, pa.string())])
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
        for name, size, index in zip(*(hits.column(c).to_pylist()
                                       for c in (OBJ_NAME, OBJ_SIZE, "part_index"))):
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
        dead = tuple(DeadObjects(p, tuple(sorted(ns)), size)
                     for p, (ns, size) in by_part.items())
        return tuple(kept_gone), tuple(sorted(superseded)), dead

    def _rebase(self, state: State, change: "_Change", base: State) -> State:
        """The newest state, if no entry after ``state`` conflicts with this commit."""
        latest = list_log(self._storage, self.path).latest
        newer = state.copy()
        added_paths = {p.path for p in change.added}
        for v in range(state.version + 1, latest + 1):
            where = self._p(entry_name(v))
            try:
                entry = read_entry(self._storage, self.path, v)
            except FileNotFoundError:
                raise CommitConflictError(f"{where}: gone (a concurrent vacuum or repair "
                                          "removed the versions this commit was computed "
                                          "from); recompute it") from None
            if entry.operation == "drop":
                raise CommitConflictError(f"{where}: the index was dropped concurrently")
            if entry.reset is not None:
                raise CommitConflictError(f"{where}: the index was repaired concurrently")
            doomed = added_paths.intersection(entry.doomed_parts)
            if doomed:
                raise CommitConflictError(
                    f"{where}: a concurrent vacuum deletes {sorted(doomed)[0]}, which this "
                    "commit adds (written longer ago than the vacuum's retain); recompute it")
            if entry.format_version >= 8 and entry.log_key != change.log_key:
                raise CommitConflictError(f"{where}: the store's log key changed "
                                          "concurrently")
            if entry.encryption != base.encryption:
                raise CommitConflictError(f"{where}: the encryption changed concurrently")
            if change.sets_labels and entry.added_parts:
                raise CommitConflictError(f"{where}: parts were added concurrently to a "
                                          "rebuild that changes the encryption")
            if change.sets_defs and entry.index_defs != base.index_defs:
                raise CommitConflictError(f"{where}: the index definitions changed "
                                          "concurrently")
            theirs = newer.touched_by(entry, change.identities(self._added_names(entry)))
            mine = change.mine
            clash = (theirs & change.touches) | {k for k in theirs
                                                 if k[0] == "o" and k[1] in mine}
            if clash:
                sample = sorted(k for _, k in clash)[:5]
                raise CommitConflictError(
                    f"{where}: a concurrent {entry.operation} (version {v}) changed what this "
                    f"commit changes: {sample}{' ...' if len(clash) > 5 else ''}")
            newer.apply(entry, where)
        return newer

    def _added_names(self, entry: LogEntry) -> list:
        """The obj_names of an entry's format-7 added parts (read from the parts)."""
        scope = scope_of(self._storage, self.path, entry.encryption, self._key_access)
        names = []
        for part in entry.added_parts:
            if not part.listed:
                try:
                    table = read_part(self._storage, self.path, scope, part, (),
                                      self._key_access, f"version {entry.version}")
                except (IntegrityError, DecodeError) as exc:
                    raise CommitConflictError(f"cannot read what the concurrent version "
                                              f"{entry.version} added ({exc}); recompute "
                                              "this commit") from None
                names.extend(table.column(OBJ_NAME).to_pylist())
        return names

    def _after_commit(self, state: State, entry: LogEntry) -> None:
        """Cache the new state (the next commit starts from it); write its checkpoint when due."""
        new = state.copy()
        new.apply(entry, entry_name(entry.version))
        remember_state(self._storage, self.path, new)
        if entry.version % CHECKPOINT_INTERVAL:
            return
        try:
            write_checkpoint(self._storage, self.path, new, self._temp())
        except OSError as exc:  # the commit stands; readers replay from an older checkpoint
            log.warning("%s: could not write checkpoint %d: %s", self.path, new.version, exc)

    # ---------------------------------------------------------------- maintenance

    def compact(self, target_file_size: int = DEFAULT_TARGET_FILE_SIZE, *,
                progress=None) -> int:
        """Rewrite the parts that are not full (fewer than :data:`MAX_PART_OBJECTS` objects
        and ``target_file_size`` bytes) or hold dead rows (a full part: at least
        :data:`COMPACT_DEAD_FRACTION` of them) into parts of at most
        :data:`MAX_PART_OBJECTS` objects and about ``target_file_size`` bytes, their rows
        sorted by the leading min/max index's ``min`` so that part summaries stay selective,
        in one atomic commit; returns the resulting version (the current one when there is
        nothing to do). The parts are taken in the order of their summaries' leading min, in
        batches of at most :data:`COMPACT_BATCH_OBJECTS` objects sorted in memory.
        ``progress(done, total)`` is called as parts are read: parts read so far, parts to
        rewrite."""
        if not isinstance(target_file_size, int) or target_file_size <= 0:
            raise ValueError("target_file_size must be a positive number of bytes")
        for attempt in range(_COMPACT_ATTEMPTS):
            snap = self.snapshot()
            chosen = _plan_compaction(snap, target_file_size)
            if not chosen:
                return snap.version
            written = []
            try:
                done = 0
                for batch in _batches(snap, chosen):
                    tables = []
                    for path in batch:
                        tables.append(snap.read_parts([path]))
                        done += 1
                        if progress is not None:
                            progress(done, len(chosen))
                    written += self._rewrite(snap, batch, tables, target_file_size)
                return self.commit(
                    snap.version, add_parts=written, remove_parts=chosen, operation="compact",
                    details={"target_file_size": target_file_size,
                             "parts_rewritten": len(chosen), "parts_written": len(written)})
            except (CommitConflictError, IntegrityError, DecodeError) as exc:
                for path in written:  # never committed, nobody else knows their names
                    self._storage.delete(path)
                stale = isinstance(exc, CommitConflictError) or self.moved_on(snap)
                if attempt == _COMPACT_ATTEMPTS - 1 or not stale:
                    raise
        raise AssertionError("unreachable")

    def moved_on(self, snap: Snapshot) -> bool:
        """Whether the log has moved past ``snap``: a part of it that is gone or unreadable
        is then explained by concurrent writers (a compaction removed it, a vacuum deleted
        it), not by damage; the reader starts over from a fresh snapshot."""
        return self.latest_version() != snap.version

    def _rewrite(self, snap: Snapshot, paths: list, tables: list, target: int) -> list:
        """Write the live rows of ``paths`` (read as ``tables``) sorted by the leading min/max
        into parts of about ``target`` bytes; their paths."""
        table = pa.concat_tables(tables, promote_options="permissive")
        defs = [d for d in snap.index_defs
                if not pa.types.is_null(table.schema.field(d.column).type)]
        table = _clustered(table.select([c for c in table.column_names
                                         if not pa.types.is_null(table.schema.field(c).type)]),
                           defs)
        estimate = sum(snap.parts[p].bytes * snap.live_counts(p)[0]
                       // max(snap.parts[p].rows, 1) for p in paths)
        per_row = max(1, estimate // max(table.num_rows, 1))
        rows = max(1, min(MAX_PART_OBJECTS, target // per_row))
        return self.write_parts(table, defs, encryption=snap.encryption, max_objects=rows)

    def vacuum(self, retain: timedelta = DEFAULT_RETAIN, *, force: bool = False
               ) -> VacuumResult:
        """Delete what no snapshot newer than ``retain`` needs.

        Every version that was the latest at some moment of the last ``retain`` stays
        readable: the newest version committed before ``now - retain`` and all later ones.
        The parts none of them names and older than ``retain`` (uncommitted parts of crashed
        writers included) are listed in a committed ``vacuum`` entry, then deleted; a
        concurrent commit that adds one of them is refused (it recomputes its change), so no
        version ever names a deleted part. Log entries and checkpoints below the oldest kept
        version go last (a checkpoint is written there first).

        Raises:
            UnsafeRetentionError: ``retain`` below :data:`MIN_RETAIN` (a reader of an older
                version, or a writer slower than that, would have to start over), unless
                ``force``.
        """
        from metaindex.store.maintenance import vacuum

        return vacuum(self, retain, force)

    def repair(self):
        """Make a damaged store whole (``refresh`` calls this first): if :meth:`damage`, a
        part of the latest version, or a part an older version names is missing or damaged,
        commit a ``repair`` entry holding the newest readable state less its damaged parts,
        and delete the log below it. Returns a
        :class:`~metaindex.store.maintenance.RepairResult` (None: nothing was wrong).

        Raises:
            StoreDamageError: no entry of the log can be read (drop and rebuild).
            KeyAccessError: an encrypted store without its keys.
        """
        from metaindex.store.maintenance import repair

        return repair(self)

    def drop(self) -> None:
        """Delete the index: a drop entry first (concurrent readers and writers then fail
        with a clear error), then every file, the drop entry last."""
        while True:
            latest = list_log(self._storage, self.path).latest
            if latest is None:
                self._delete_all()
                return
            try:
                last = read_entry(self._storage, self.path, latest)
                if last.operation == "drop":
                    break
                ident = last.table
            except (DecodeError, IntegrityError, UnsupportedVersionError, FileNotFoundError):
                ident = self.identity
            tomb = LogEntry(latest + 1, _now_ms(), "drop", ident, (), None)
            if self._create_entry(tomb):
                break
        self._delete_all()

    def _delete_all(self) -> None:
        listing = list_log(self._storage, self.path)
        for stat in self._storage.list(self._p(PARTS_DIR)):
            self._storage.delete(self._p(f"{PARTS_DIR}/{stat.name}"))
        for v in listing.checkpoints:
            self._storage.delete(self._p(checkpoint_name(v)))
        self._storage.delete(self._p(TABLE_JSON))
        for v in listing.entries:  # the drop entry (the newest) goes last
            self._storage.delete(self._p(entry_name(v)))
        self._storage.remove_dir(self.path)
        # a table created again here restarts at version 0: in-process caches keyed by
        # (directory, version) must not hand back the dropped table's states
        log_forget(self._storage.key, self.path)
        snapshot_forget(self._storage.key, self.path)
        _forget_written_table(self._storage.key, self.path)


def _damage_error(where: str, problems) -> StoreDamageError:
    head = "; ".join(str(p) for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return StoreDamageError(f"{where}: the metadata store is damaged: {head}{more}; refresh() "
                            "repairs it (metaindex check lists what is wrong)", problems)


def _check_labels(defs, labels) -> None:
    if labels is None and any(d.key_metadata for d in defs):
        raise ValueError("an index has key_metadata (a key label) but the store has no "
                         "encryption labels: pass encryption=EncryptionLabels(footer_key=...)")


def _plan_compaction(snap: Snapshot, target: int) -> list[str]:
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


def _batches(snap: Snapshot, chosen: list) -> list:
    """``chosen`` ordered by their summaries' leading min (clustered parts stay together) and
    cut into batches of at most COMPACT_BATCH_OBJECTS live objects, each rewritten (and
    sorted) in memory on its own."""
    leading = next((d for d in snap.index_defs if d.name == "minmax"), None)
    if leading is not None and len(chosen) > 1:
        summaries = snap.summary_table()
        where = {p: i for i, p in enumerate(snap.part_paths)}
        column = summaries.column(leading.column).combine_chunks().take(
            pa.array([where[p] for p in chosen], pa.int64()))
        if pa.types.is_struct(column.type) and column.type.get_field_index("min") >= 0:
            try:
                order = pc.array_sort_indices(pc.struct_field(column, "min"),
                                              null_placement="at_end").to_pylist()
                chosen = [chosen[i] for i in order]
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
                pass
    batches, current, size = [], [], 0
    for path in chosen:
        live = snap.live_counts(path)[0]
        if current and size + live > COMPACT_BATCH_OBJECTS:
            batches.append(current)
            current, size = [], 0
        current.append(path)
        size += live
    if current:
        batches.append(current)
    return batches


def _clustered(table: pa.Table, defs) -> pa.Table:
    """The rows sorted by the first min/max index's ``min`` (rows without one last)."""
    leading = next((d for d in defs if d.name == "minmax"), None)
    if leading is None or leading.column not in table.column_names:
        return table
    column = table.column(leading.column)
    if not pa.types.is_struct(column.type) or column.type.get_field_index("min") < 0:
        return table
    keys = pc.struct_field(column.combine_chunks(), "min")
    try:
        order = pc.array_sort_indices(keys, null_placement="at_end")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return table  # a type Arrow cannot sort: unclustered, still correct
    return table.take(order)
