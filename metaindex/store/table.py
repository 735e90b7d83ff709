"""The metadata store of a table: its handle (:class:`TableStore`) and where each concern lives.

:class:`MetadataStore` is a directory of table indexes, opened through the storage scheme
registry (:mod:`metaindex.store.schemes`); :class:`TableStore` is one table's versioned
metadata, with every public operation. It reads itself (snapshots, history, the log head) and
writes parts; the rest lives by concern, in modules that take the ``TableStore``:

* :mod:`metaindex.store.commit`: creating the index and committing changes (the commit
  protocol: create-if-absent of the next log entry, rebase, conflicts).
* :mod:`metaindex.store.receipts`: what this process knows of the parts it wrote, so their
  commit checks their bytes instead of decoding them.
* :mod:`metaindex.store.compaction`: rewriting small and dead-heavy parts.
* :mod:`metaindex.store.maintenance`: vacuum and repair.
* :mod:`metaindex.store.health`: verifying the log and the parts.
"""

from __future__ import annotations

import dataclasses
import os
from datetime import timedelta

import pyarrow as pa

from metaindex.errors import (
    DecodeError,
    IntegrityError,
    MetaIndexError,
    StoreDamageError,
    UnsupportedVersionError,
)
from metaindex.store import commit as commit_mod
from metaindex.store import compaction, maintenance, receipts
from metaindex.store.commit import CHECKPOINT_INTERVAL
from metaindex.store.compaction import DEFAULT_TARGET_FILE_SIZE
from metaindex.store.layout import (
    LOG_DIR,
    PARTS_DIR,
    TABLE_JSON,
    TableIdentity,
    checkpoint_name,
    entry_name,
    is_part_name,
    new_part_name,
    parse_log_name,
    temp_name,
)
from metaindex.store.log import State, changed_since_seen, list_log, load_state, read_entry
from metaindex.store.log import forget_table as log_forget
from metaindex.store.logkey import cipher_for
from metaindex.store.maintenance import MIN_RETAIN, RepairResult, VacuumResult
from metaindex.store.model import MAX_PART_OBJECTS, EncryptionLabels, LogEntry, normalize_index_defs
from metaindex.store.parts import encode_part_table
from metaindex.store.receipts import PartReceipt
from metaindex.store.schemes import open_storage
from metaindex.store.snapshot import Snapshot
from metaindex.store.snapshot import forget_table as snapshot_forget

__all__ = [
    "MetadataStore",
    "TableStore",
    "VacuumResult",
    "RepairResult",
    "CHECKPOINT_INTERVAL",
    "DEFAULT_TARGET_FILE_SIZE",
    "DEFAULT_RETAIN",
    "MIN_RETAIN",
    "PartReceipt",
]

DEFAULT_RETAIN = timedelta(days=7)


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

    def table(self, table_uri) -> TableStore:
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
        parts = {
            stat.name: (stat.size, stat.mtime_ms, stat.etag)
            for stat in self._storage.list(self._p(PARTS_DIR))
        }
        return latest, parts, log_files

    def forget_cached(self) -> None:
        """Drop this table's decoded metadata (replayed versions, tables and parts) from the
        in-process caches, so the next snapshot read replays the log and verifies every part
        again (after a file changed on disk), and what this process remembers of the parts it
        wrote (committing one then decodes it)."""
        log_forget(self._storage.key, self.path)
        snapshot_forget(self._storage.key, self.path)
        receipts.forget_table(self._storage.key, self.path)

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
            raise MetaIndexError(
                f"no metadata index for table {self.identity.uri} (store directory {self.path})"
            ) from None
        if state.dropped:
            raise MetaIndexError(
                f"{self.path}: the index of {self.identity.uri} was dropped "
                f"(version {state.version})"
            )
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
            if (
                entry.sealed_details is not None
                and entry.log_key is not None
                and self._key_access is not None
            ):
                cipher = cipher_for(entry.log_key, self._key_access, self.identity.id, self.path)
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
            assert scan.head_error is not None, "no head without an error"
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

    def write_part(
        self, table: pa.Table, index_defs, *, encryption: EncryptionLabels | None = None
    ) -> str:
        """Write one part file (not yet committed) and return its path for :meth:`commit`.

        The process remembers what it wrote (size, SHA-256, names, summary): committing the
        part here checks its bytes against that instead of decoding it again.

        Args:
            table: obj_name, obj_size, obj_mtime (ms), obj_rows, optional ``virtual_<col>``
                columns and one column per index named ``IndexDef.storage_name``; at most
                :data:`MAX_PART_OBJECTS` rows (:meth:`write_parts` splits larger tables).
            index_defs: the index definitions of the index columns.
            encryption: the store's :class:`EncryptionLabels` (None: plaintext); keys come
                from the store's ``key_access``.
        """
        if isinstance(table, pa.Table) and table.num_rows > MAX_PART_OBJECTS:
            raise ValueError(
                f"a part holds at most {MAX_PART_OBJECTS} objects, not "
                f"{table.num_rows}: use write_parts()"
            )
        defs = normalize_index_defs(index_defs)
        pieces, written = encode_part_table(
            table, defs, self.identity, encryption, self._key_access
        )
        self._storage.makedirs(self._p(PARTS_DIR))
        rel = new_part_name()
        path = self._p(rel)
        self._storage.write(path, pieces)
        receipts.remember(
            self._written_key(rel),
            receipts.receipt_for(rel, pieces, written, defs, self.identity.id, encryption),
            self._key_access,
        )
        return path

    def take_receipt(self, path) -> PartReceipt | None:
        """The receipt of a part this process wrote with :meth:`write_part` and has not
        committed (None: none remembered), handed over to the process that commits the part
        (:meth:`expect_part`; this process forgets it)."""
        return receipts.take(self._written_key(self._relative_part(path)))

    def expect_part(self, receipt: PartReceipt) -> None:
        """Hold the receipt of a part written by another process (a build's task, from
        :meth:`take_receipt`): committing the part here then checks its size and SHA-256
        against the receipt and takes its names and summary from it, instead of decoding
        the part (a part that differs from its receipt is an :class:`IntegrityError`)."""
        if not isinstance(receipt, PartReceipt):
            raise TypeError(f"expected a PartReceipt, not {type(receipt).__name__}")
        receipts.remember(
            self._written_key(self._relative_part(receipt.path)), receipt, self._key_access
        )

    def _written_key(self, rel: str) -> tuple:
        return self._storage.key, self.path, rel

    def write_parts(
        self,
        table: pa.Table,
        index_defs,
        *,
        encryption: EncryptionLabels | None = None,
        max_objects: int | None = None,
    ) -> list:
        """:meth:`write_part` for a table of any size: consecutive slices of at most
        ``max_objects`` (default :data:`MAX_PART_OBJECTS`) rows, one part each; returns
        their paths in order (none for an empty table)."""
        cap = MAX_PART_OBJECTS if max_objects is None else max_objects
        if isinstance(cap, bool) or not isinstance(cap, int) or not 0 < cap <= MAX_PART_OBJECTS:
            raise ValueError(f"max_objects must be an int in [1, {MAX_PART_OBJECTS}]")
        if not isinstance(table, pa.Table):
            raise TypeError(f"a part is written from a pyarrow.Table, not {type(table).__name__}")
        return [
            self.write_part(table.slice(i, cap), index_defs, encryption=encryption)
            for i in range(0, table.num_rows, cap)
        ]

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
            raise ValueError(
                f"{path} is not a part file of this table ({parts_dir}/<32 hex>"
                ".parquet, from new_part_path() or write_part())"
            )
        return rel

    # ---------------------------------------------------------------- commits (commit.py)

    def create(
        self,
        index_defs,
        identity: dict | None = None,
        *,
        encryption: EncryptionLabels | None = None,
    ) -> int:
        """Create the index (version 0: no objects yet); returns 0.

        Args:
            index_defs: the index definitions.
            identity: extra JSON attributes recorded with the table identity.
            encryption: :class:`EncryptionLabels` for an encrypted store.

        Raises:
            CommitConflictError: an index already exists for this table.
        """
        return commit_mod.create(self, index_defs, identity, encryption)

    def commit(
        self,
        base_version: int,
        *,
        add_parts=(),
        remove_parts=(),
        removed_objects=(),
        index_defs=None,
        encryption=commit_mod.KEEP,
        operation: str = "commit",
        details: dict | None = None,
    ) -> int:
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
        return commit_mod.commit(
            self,
            base_version,
            add_parts,
            remove_parts,
            removed_objects,
            index_defs,
            encryption,
            operation,
            details,
        )

    def log_cipher(self, state: State):
        """The :class:`~metaindex.store.logkey.LogCipher` of a state's log key (None: the log
        names objects in clear).

        Raises:
            KeyAccessError: the store is encrypted and this store object has no key access.
        """
        return commit_mod.log_cipher(self, state)

    def _create_entry(self, entry: LogEntry) -> bool:
        return commit_mod.create_entry(self, entry)

    def _after_commit(self, state: State, entry: LogEntry) -> None:
        commit_mod.after_commit(self, state, entry)

    # ------------------------------- compaction (compaction.py), vacuum, repair (maintenance.py)

    def compact(self, target_file_size: int = DEFAULT_TARGET_FILE_SIZE, *, progress=None) -> int:
        """Rewrite the parts that are not full (fewer than :data:`MAX_PART_OBJECTS` objects
        and ``target_file_size`` bytes) or hold dead rows (a full part: at least
        :data:`~metaindex.store.compaction.COMPACT_DEAD_FRACTION` of them) into parts of at most
        :data:`MAX_PART_OBJECTS` objects and about ``target_file_size`` bytes, their rows
        sorted by the leading min/max index's ``min`` so that part summaries stay selective,
        in one atomic commit; returns the resulting version (the current one when there is
        nothing to do). The parts are taken in the order of their summaries' leading min, in
        batches of at most :data:`~metaindex.store.compaction.COMPACT_BATCH_OBJECTS` objects
        sorted in memory.
        ``progress(done, total)`` is called as parts are read: parts read so far, parts to
        rewrite."""
        return compaction.compact(self, target_file_size, progress)

    def moved_on(self, snap: Snapshot) -> bool:
        """Whether the log has moved past ``snap``: a part of it that is gone or unreadable
        is then explained by concurrent writers (a compaction removed it, a vacuum deleted
        it), not by damage; the reader starts over from a fresh snapshot."""
        return self.latest_version() != snap.version

    def vacuum(self, retain: timedelta = DEFAULT_RETAIN, *, force: bool = False) -> VacuumResult:
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
        return maintenance.vacuum(self, retain, force)

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
        return maintenance.repair(self)

    # ---------------------------------------------------------------- drop

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
            tomb = LogEntry(latest + 1, commit_mod.now_ms(), "drop", ident, (), None)
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
        receipts.forget_table(self._storage.key, self.path)


def _damage_error(where: str, problems) -> StoreDamageError:
    head = "; ".join(str(p) for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return StoreDamageError(
        f"{where}: the metadata store is damaged: {head}{more}; refresh() "
        "repairs it (metaindex check lists what is wrong)",
        problems,
    )
