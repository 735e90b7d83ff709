"""A Delta table's transaction log read without Spark: snapshots at any version or timestamp,
and the changes between two versions (PROTOCOL.md, "Action Reconciliation").

A snapshot starts from the newest complete checkpoint at or before its version (any form,
:mod:`metaindex.delta.checkpoint`) and applies the JSON commits after it in order, each
replaced by a log compaction file where one covers a run of them. Logical files are keyed by
(path, deletion vector id): the latest action wins, an ``add`` makes a file live, a ``remove``
makes it a tombstone; the latest ``protocol`` and ``metaData`` win, ``txn`` keeps the latest
version per application, ``domainMetadata`` the latest per domain (``removed`` deletes it);
``commitInfo`` does not touch the state. The result is checked before it is returned: one
live file per path, the protocol's reader features supported, and, where the writer left a
version checksum (``<v>.crc``), its file count and total size.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from itertools import pairwise

from metaindex.delta.actions import (
    Actions,
    CommitInfo,
    Metadata,
    Protocol,
    Where,
    parse_json_actions,
)
from metaindex.delta.checkpoint import read_checkpoint, read_last_checkpoint
from metaindex.delta.features import check_protocol, column_mapping_supported
from metaindex.delta.files import (
    CommitSummary,
    DeltaChanges,
    DeltaSnapshot,
    FileTyper,
    PathResolver,
)
from metaindex.delta.names import LOG_DIR, LogListing, classify, commit_name, crc_name
from metaindex.delta.schema import (
    SchemaFormatError,
    column_mapping,
    is_supported_widening,
    parse_schema_string,
    to_arrow_schema,
    type_changes,
)
from metaindex.errors import (
    DeltaLogDamageError,
    DeltaLogGapError,
    DeltaTableNotFoundError,
    DeltaVersionError,
    UnsupportedDeltaFeatureError,
)

__all__ = ["DeltaLog"]

_ICT_ENABLED = "delta.enableInCommitTimestamps"
_ICT_VERSION = "delta.inCommitTimestampEnablementVersion"
_ICT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"


class _View:
    """What one (protocol, metaData) pair means for reading: schema, column mapping, typing."""

    def __init__(
        self,
        protocol: Protocol,
        metadata: Metadata,
        where: Where,
        table: str,
        resolve: PathResolver,
    ):
        check_protocol(protocol, table)
        if metadata.format_provider.lower() != "parquet":
            raise UnsupportedDeltaFeatureError(
                f"{table} stores its data as {metadata.format_provider!r}; metaindex indexes "
                "Delta tables of Parquet files",
                [f"format={metadata.format_provider}"],
            )
        try:
            self.schema = parse_schema_string(metadata.schema_string)
            mode = (
                metadata.configuration.get("delta.columnMapping.mode", "none")
                if column_mapping_supported(protocol)
                else "none"
            )
            self.mapping = column_mapping(self.schema, mode.lower())
            self.type_changes = tuple(type_changes(self.schema))
            self.arrow = to_arrow_schema(self.schema)
        except SchemaFormatError as exc:
            raise where.damage(f"metaData: {exc}") from None
        for change in self.type_changes:
            if not is_supported_widening(change.from_type, change.to_type):
                raise UnsupportedDeltaFeatureError(
                    f"{table}: column {'.'.join(change.path)} changed type from "
                    f"{change.from_type} to {change.to_type}, which is not a type widening "
                    "Delta allows (PROTOCOL.md: readers must refuse it)",
                    [f"typeWidening:{change.from_type}->{change.to_type}"],
                )
        self.protocol, self.metadata = protocol, metadata
        self.typer = FileTyper(metadata, self.schema, self.mapping, resolve)


class _State:
    """Log replay state (keys are (resolved path, deletion vector id))."""

    def __init__(self, resolve: PathResolver):
        self.resolve = resolve
        self.adds: dict = {}
        self.tombstones: dict = {}
        self.protocol: Protocol | None = None
        self.metadata: Metadata | None = None
        self.protocol_where: Where | None = None
        self.metadata_where: Where | None = None
        self.txns: dict = {}
        self.domains: dict = {}

    def apply(self, actions: Actions, where: Where) -> None:
        resolve = self.resolve
        for action in actions.files:
            key = (resolve(action.path), action.dv_id)
            if action.kind == "add":
                self.adds[key] = (action, where)
                self.tombstones.pop(key, None)
            else:
                self.adds.pop(key, None)
                self.tombstones[key] = (action, where)
        if actions.protocol is not None:
            self.protocol, self.protocol_where = actions.protocol, where
        if actions.metadata is not None:
            self.metadata, self.metadata_where = actions.metadata, where
        self.txns.update(actions.txns)
        for domain, configuration in actions.domains.items():
            if configuration is None:
                self.domains.pop(domain, None)
            else:
                self.domains[domain] = configuration


def _millis(timestamp) -> int:
    if isinstance(timestamp, bool):
        raise TypeError(
            "timestamp must be ms since the epoch (int), an aware datetime or an "
            "ISO 8601 string with an offset, not a bool"
        )
    if isinstance(timestamp, int):
        return timestamp
    if isinstance(timestamp, str):
        try:
            timestamp = dt.datetime.fromisoformat(timestamp)
        except ValueError:
            raise ValueError(f"timestamp {timestamp!r} is not ISO 8601") from None
    if isinstance(timestamp, dt.datetime):
        if timestamp.tzinfo is None:
            raise TypeError(
                "timestamp is a naive datetime: give its time zone (e.g. "
                "tzinfo=datetime.timezone.utc), as Delta commit times are instants"
            )
        delta = timestamp - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return delta // dt.timedelta(milliseconds=1)
    raise TypeError(
        "timestamp must be ms since the epoch (int), an aware datetime or an ISO "
        f"8601 string with an offset, not {type(timestamp).__name__}"
    )


def _version(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise DeltaVersionError(f"{name} {value} is negative")
    return value


class DeltaLog:
    """The transaction log of the Delta table at ``table``.

    Args:
        table: the table root: a local path, a ``file://`` URI, an object store URI
            (``s3://``, ``s3a://``, ``gs://``, ``az://``, ``abfs[s]://``) or a path on
            ``filesystem``.
        filesystem: a ``pyarrow.fs.FileSystem`` holding the table (optional).
        storage_options: object store settings, as for the metadata store
            (:mod:`metaindex.store.objectstore`).

    Every method lists ``_delta_log/`` once (names, sizes and modification times; never the
    data directory) and reads only the log files it needs.
    """

    def __init__(self, table, *, filesystem=None, storage_options=None):
        from metaindex.store.layout import normalize_table_uri
        from metaindex.store.schemes import open_storage

        if isinstance(table, os.PathLike):
            table = os.fspath(table)
        if not isinstance(table, str) or not table:
            raise TypeError(f"table must be a non-empty path or URI, not {table!r}")
        self.table = table
        self._storage, self._root = open_storage(table, filesystem, storage_options)
        self._log_dir = self._storage.join(self._root, LOG_DIR)
        self._resolve = PathResolver(normalize_table_uri(table))

    @classmethod
    def on_storage(cls, table_uri: str, storage, root: str) -> DeltaLog:
        """The log of the table at ``root`` on an open ``metaindex.store.storage.Storage``
        (``table_uri``: its normalised URI, which log paths are resolved against): how a
        table format reads the log of a table already located, with its storage options.
        """
        from metaindex.store.layout import normalize_table_uri

        log = cls.__new__(cls)
        log.table = table_uri
        log._storage, log._root = storage, root
        log._log_dir = storage.join(root, LOG_DIR)
        log._resolve = PathResolver(normalize_table_uri(table_uri))
        return log

    # -- the log directory -------------------------------------------------------------------

    def _listing(self) -> LogListing:
        try:
            entries = self._storage.list(self._log_dir)
        except FileNotFoundError:
            entries = []
        listing = classify((e.name, e.size, e.mtime_ms) for e in entries)
        if not listing.commits and not listing.checkpoints:
            raise DeltaTableNotFoundError(
                f"{self.table} is not a Delta table: _delta_log/ holds no commit and no checkpoint",
                table=self.table,
            )
        return listing

    @staticmethod
    def _latest(listing: LogListing) -> int:
        return max(list(listing.commits) + list(listing.checkpoints))

    def latest_version(self) -> int:
        """The newest committed version."""
        return self._latest(self._listing())

    def earliest_version(self) -> int:
        """The oldest version time travel by timestamp can reach, as Delta decides it: 0 while
        commit 0 is there, else the oldest complete checkpoint that is not older than the
        oldest commit left after log cleanup."""
        return self._earliest(self._listing())

    def _earliest(self, listing: LogListing) -> int:
        if 0 in listing.commits:
            return 0
        smallest = min(listing.commits, default=None)
        for version in sorted(listing.checkpoints):
            if smallest is not None and version >= smallest:
                return version
        raise DeltaVersionError(
            f"{self.table}: no version can be reconstructed (commit 0 is "
            "gone and no checkpoint follows the oldest commit)",
            table=self.table,
        )

    def last_checkpoint(self) -> dict | None:
        """``_delta_log/_last_checkpoint`` (None if missing, unreadable or failing its
        checksum). Only a hint: snapshots choose checkpoints from the listing."""
        return read_last_checkpoint(self._storage, self._log_dir)

    def _where(self, version: int | None, name: str) -> Where:
        return Where(self.table, version, f"{LOG_DIR}/{name}")

    def _read_log_file(self, name: str, version: int, only: tuple = ()) -> tuple:
        where = self._where(version, name)
        try:
            data = self._storage.read(self._storage.join(self._log_dir, name))
        except FileNotFoundError:
            raise DeltaLogGapError(
                f"{where.path} is listed but missing (removed while read?)",
                table=self.table,
                version=version,
                path=where.path,
            ) from None
        return parse_json_actions(data, where, only=only), where

    def _commit_info(self, version: int) -> CommitInfo | None:
        """The ``commitInfo`` of a commit (read from its first line, where writers with
        in-commit timestamps must put it; else from the whole file)."""
        name = commit_name(version)
        try:
            data = self._storage.read(self._storage.join(self._log_dir, name))
        except FileNotFoundError:
            return None
        first = bytes(data).split(b"\n", 1)[0]
        try:
            head = parse_json_actions(first, self._where(version, name))
        except DeltaLogDamageError:
            head = None
        if head is not None and head.commit_info is not None:
            return head.commit_info
        return parse_json_actions(data, self._where(version, name)).commit_info

    # -- segments and replay -----------------------------------------------------------------

    def _segment(self, listing: LogListing, version: int) -> tuple:
        """``(checkpoint or None, steps)`` to reach ``version``: each step a log file name and
        the version range ``(first, last)`` it covers (a commit, or a compaction)."""
        latest = self._latest(listing)
        if version > latest:
            raise DeltaVersionError(
                f"{self.table}: version {version} does not exist (the latest is {latest})",
                table=self.table,
                version=version,
            )
        checkpoint = listing.checkpoint_at_or_before(version)
        start = checkpoint.version + 1 if checkpoint is not None else 0
        missing = [v for v in range(start, version + 1) if v not in listing.commits]
        if missing:
            present = min(listing.commits, default=latest + 1)
            if (
                checkpoint is None
                and missing == list(range(len(missing)))
                and missing[-1] < present
            ):
                raise DeltaVersionError(
                    f"{self.table}: version {version} is older than the earliest version the "
                    f"log can still reconstruct ({self._earliest(listing)}): its commits were "
                    "removed by log cleanup",
                    table=self.table,
                    version=version,
                )
            shown = ", ".join(str(v) for v in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise DeltaLogGapError(
                f"{self.table}: version {version} cannot be reconstructed: commit"
                f"{'s' if len(missing) > 1 else ''} {shown} missing from _delta_log/ while "
                "later ones exist",
                table=self.table,
                version=version,
                path=f"{LOG_DIR}/{commit_name(missing[0])}",
            )
        compactions: dict = {}
        for (first, last), name in listing.compactions.items():
            if first >= start and last <= version and last > compactions.get(first, ("", -1))[1]:
                compactions[first] = (name, last)
        steps, v = [], start
        while v <= version:
            if v in compactions:
                name, last = compactions[v]
                steps.append((name, v, last))
                v = last + 1
            else:
                steps.append((commit_name(v), v, v))
                v += 1
        return checkpoint, steps

    def _replay(self, listing: LogListing, version: int) -> tuple:
        checkpoint, steps = self._segment(listing, version)
        state = _State(self._resolve)
        read: list = []
        last_info = None
        if checkpoint is not None:
            actions = read_checkpoint(self._storage, self._log_dir, checkpoint, self.table)
            state.apply(actions, self._where(checkpoint.version, checkpoint.files[0]))
            read += [f"{LOG_DIR}/{n}" for n in checkpoint.files]
            read += [f"{LOG_DIR}/_sidecars/{p}" for p, _ in actions.sidecars]
        for name, first, last in steps:
            actions, where = self._read_log_file(name, last)
            state.apply(actions, where)
            read.append(where.path)
            if first == last == version:
                last_info = actions.commit_info
        return state, checkpoint, tuple(read), last_info

    def _view(self, protocol, metadata, where: Where) -> _View:
        return _View(protocol, metadata, where, self.table, self._resolve)

    def snapshot(self, version: int | None = None, *, timestamp=None) -> DeltaSnapshot:
        """The table at ``version`` (default: the latest), or at ``timestamp`` resolved as
        Delta's time travel does (:meth:`version_at`).

        Raises:
            DeltaVersionError: a version newer than the latest, or older than what the log
                can still reconstruct; a timestamp outside the commits' range.
            DeltaLogGapError: a commit the snapshot needs is missing.
            DeltaLogDamageError: a log file that does not parse or breaks the protocol, or a
                result that contradicts the writer's version checksum.
            UnsupportedDeltaFeatureError: a reader feature metaindex cannot stay sound under.
            DeltaTableNotFoundError: no Delta table there.
        """
        if version is not None and timestamp is not None:
            raise TypeError("give a version or a timestamp, not both")
        listing = self._listing()
        if timestamp is not None:
            version = self._version_at(listing, _millis(timestamp))
        elif version is None:
            version = self._latest(listing)
        else:
            version = _version(version, "version")
        state, checkpoint, read, info = self._replay(listing, version)
        if state.protocol is None or state.metadata is None:
            raise DeltaLogDamageError(
                f"{self.table}: no {'protocol' if state.protocol is None else 'metaData'} "
                f"action up to version {version}",
                table=self.table,
                version=version,
            )
        view = self._view(state.protocol, state.metadata, state.metadata_where)
        files = sorted(
            (view.typer(a, w) for a, w in state.adds.values()),
            key=lambda f: f.key[0] + "\0" + (f.key[1] or ""),
        )
        for before, after in pairwise(files):
            if before.path == after.path:
                raise DeltaLogDamageError(
                    f"{self.table} version {version}: data file {before.path!r} is live twice "
                    "(with two deletion vectors): the log breaks the protocol",
                    table=self.table,
                    version=version,
                )
        self._check_crc(listing, version, files)
        tombstones = tuple(view.typer(a, w) for a, w in state.tombstones.values())
        return DeltaSnapshot(
            self.table,
            version,
            self._timestamp_of(listing, version, view.metadata, info),
            state.protocol,
            state.metadata,
            tuple(files),
            view.arrow,
            view.mapping,
            view.type_changes,
            tombstones,
            dict(state.txns),
            dict(state.domains),
            read,
        )

    def _check_crc(self, listing: LogListing, version: int, files: list) -> None:
        if version not in listing.crcs:
            return
        name = crc_name(version)
        try:
            crc = json.loads(self._storage.read(self._storage.join(self._log_dir, name)))
        except (FileNotFoundError, ValueError, UnicodeDecodeError, RecursionError):
            return  # optional, and not needed to read the table
        if not isinstance(crc, dict):
            return
        count, size = crc.get("numFiles"), crc.get("tableSizeBytes")
        ours = (len(files), sum(f.size for f in files))
        if isinstance(count, int) and isinstance(size, int) and (count, size) != ours:
            raise DeltaLogDamageError(
                f"{self.table} version {version}: the log replays to {ours[0]} files of "
                f"{ours[1]} bytes, its version checksum {LOG_DIR}/{name} says {count} files "
                f"of {size} bytes",
                table=self.table,
                version=version,
                path=f"{LOG_DIR}/{name}",
            )

    # -- commit timestamps and time travel ----------------------------------------------------

    def _file_times(self, listing: LogListing, first: int, end: int) -> dict:
        """Commit file modification times of versions ``[first, end)``, made strictly
        increasing as Delta does (a commit no later than the one before is taken as 1 ms after
        it)."""
        out, previous = {}, None
        for v in range(first, end):
            if v not in listing.commits:
                continue
            t = listing.commits[v][2]
            if previous is not None and t <= previous:
                t = previous + 1
            out[v] = previous = t
        return out

    def _ict_start(self, metadata: Metadata, earliest: int):
        """``(version, timestamp)`` from which in-commit timestamps apply (None if they are
        not enabled; timestamp None when enabled for the whole history)."""
        if metadata.configuration.get(_ICT_ENABLED, "false").lower() != "true":
            return None
        version = metadata.configuration.get(_ICT_VERSION)
        stamp = metadata.configuration.get(_ICT_TIMESTAMP)
        if version is None or stamp is None:
            return (earliest, None)
        try:
            return (int(version), int(stamp))
        except ValueError:
            raise DeltaLogDamageError(
                f"{self.table}: {_ICT_VERSION} / {_ICT_TIMESTAMP} are not integers",
                table=self.table,
            ) from None

    def _ict(self, version: int) -> int:
        info = self._commit_info(version)
        if info is None or info.in_commit_timestamp is None:
            raise DeltaLogDamageError(
                f"{self.table}: in-commit timestamps are enabled but commit {version} has no "
                "commitInfo.inCommitTimestamp",
                table=self.table,
                version=version,
                path=f"{LOG_DIR}/{commit_name(version)}",
            )
        return info.in_commit_timestamp

    def _timestamp_of(
        self, listing: LogListing, version: int, metadata: Metadata, info: CommitInfo | None
    ) -> int | None:
        try:
            earliest = self._earliest(listing)
        except DeltaVersionError:
            earliest = min(listing.commits, default=version)
        ict = self._ict_start(metadata, earliest)
        if ict is not None and version >= ict[0]:
            info = info or self._commit_info(version)
            if info is not None and info.in_commit_timestamp is not None:
                return info.in_commit_timestamp
        return self._file_times(listing, min(earliest, version), version + 1).get(version)

    def version_at(self, timestamp) -> int:
        """The version Delta's time travel (``timestampAsOf``) reads at ``timestamp`` (ms since
        the epoch, an aware datetime, or an ISO 8601 string with an offset): the latest
        commit at or before it. Commit times are in-commit timestamps where enabled, else the
        commit files' modification times made increasing.

        Raises:
            DeltaVersionError: the timestamp is before the earliest reconstructable commit or
                after the latest commit (Delta refuses both).
        """
        return self._version_at(self._listing(), _millis(timestamp))

    def _version_at(self, listing: LogListing, when: int) -> int:
        latest = self._latest(listing)
        earliest = self._earliest(listing)
        _, metadata, _ = self._protocol_metadata(listing, latest)
        ict = self._ict_start(metadata, earliest)
        found: tuple[int, int] | None
        if ict is not None and (ict[1] is None or ict[1] <= when):
            latest_ts = self._ict(latest)
            if latest_ts <= when:
                found = (latest, latest_ts)
            else:
                lo = max(ict[0], earliest)
                found = None
                low, high = lo, latest  # greatest v with ict(v) <= when, by binary search
                while low <= high:
                    mid = (low + high) // 2
                    t = self._ict(mid)
                    if t <= when:
                        found, low = (mid, t), mid + 1
                    else:
                        high = mid - 1
                if found is None:
                    found = (lo, self._ict(lo))
        elif ict is not None and ict[0] <= earliest:
            found = (earliest, self._ict(earliest))
        else:
            end = latest + 1 if ict is None else ict[0]
            times = self._file_times(listing, earliest, end)
            before = [v for v, t in times.items() if t <= when]
            found = (
                (max(before), times[max(before)])
                if before
                else (min(times), times[min(times)])
                if times
                else (earliest, when + 1)
            )
        assert found is not None, "every branch above finds a commit"
        version, stamp = found
        if stamp > when:
            raise DeltaVersionError(
                f"{self.table}: timestamp {when} is before the earliest commit available "
                f"(version {version} at {stamp})",
                table=self.table,
            )
        if version == latest and stamp < when:
            raise DeltaVersionError(
                f"{self.table}: timestamp {when} is after the latest commit (version "
                f"{version} at {stamp})",
                table=self.table,
            )
        return version

    # -- protocol and metadata at a version, changes -----------------------------------------

    def _protocol_metadata(self, listing: LogListing, version: int) -> tuple:
        """``(protocol, metadata, where)`` in force at ``version``, read cheaply: from the
        version checksum if the writer left one, else from the commits back to the checkpoint,
        else from the checkpoint's protocol and metaData columns only."""
        if version in listing.crcs:
            found = self._crc_protocol_metadata(version)
            if found is not None:
                return found
        checkpoint, steps = self._segment(listing, version)
        protocol = metadata = None
        where = None
        for name, _, last in reversed(steps):
            actions, at = self._read_log_file(name, last, only=("protocol", "metaData"))
            protocol = protocol or actions.protocol
            if metadata is None and actions.metadata is not None:
                metadata, where = actions.metadata, at
            if protocol is not None and metadata is not None:
                return protocol, metadata, where
        if checkpoint is None:
            raise DeltaLogDamageError(
                f"{self.table}: no protocol or metaData action up to version {version}",
                table=self.table,
                version=version,
            )
        actions = read_checkpoint(
            self._storage, self._log_dir, checkpoint, self.table, protocol_and_metadata_only=True
        )
        at = self._where(checkpoint.version, checkpoint.files[0])
        return protocol or actions.protocol, metadata or actions.metadata, where or at

    def _crc_protocol_metadata(self, version: int):
        from metaindex.delta.actions import parse_row_actions

        name = crc_name(version)
        try:
            crc = json.loads(self._storage.read(self._storage.join(self._log_dir, name)))
        except (FileNotFoundError, ValueError, UnicodeDecodeError, RecursionError):
            return None
        if (
            not isinstance(crc, dict)
            or not isinstance(crc.get("protocol"), dict)
            or not isinstance(crc.get("metadata"), dict)
        ):
            return None
        where = self._where(version, name)
        try:
            actions = parse_row_actions(
                {"protocol": [crc["protocol"]], "metaData": [crc["metadata"]]}, where
            )
        except DeltaLogDamageError:
            return None  # a damaged checksum file is not needed: read the log instead
        return actions.protocol, actions.metadata, where

    def changes(self, from_version: int, to_version: int | None = None) -> DeltaChanges:
        """The logical files added and removed from ``from_version`` to ``to_version``
        (default: the latest), read from the JSON commits in between only (no checkpoint's
        file actions, no listing of the data directory: time proportional to the change).
        When those commits were removed by log cleanup, the difference of the two snapshots
        instead, with ``from_snapshots`` True and the reason.

        Raises:
            DeltaVersionError: ``from_version`` after ``to_version``, a version newer than the
                latest, or (commits gone) one the log can no longer reconstruct.
            DeltaLogDamageError, DeltaLogGapError, UnsupportedDeltaFeatureError: as
                :meth:`snapshot`.
        """
        listing = self._listing()
        latest = self._latest(listing)
        start = _version(from_version, "from_version")
        end = latest if to_version is None else _version(to_version, "to_version")
        if end > latest:
            raise DeltaVersionError(
                f"{self.table}: version {end} does not exist (the latest is {latest})",
                table=self.table,
                version=end,
            )
        if start > end:
            raise DeltaVersionError(
                f"from_version {start} is after to_version {end}", table=self.table
            )
        missing = [v for v in range(start + 1, end + 1) if v not in listing.commits]
        if missing:
            return self._changes_from_snapshots(
                listing,
                start,
                end,
                f"commit{'s' if len(missing) > 1 else ''} "
                f"{missing[0]}{'..' + str(missing[-1]) if len(missing) > 1 else ''} "
                "no longer in _delta_log/ (log cleanup): changes computed from the two "
                "snapshots",
            )
        protocol, metadata, where = self._protocol_metadata(listing, start)
        view = self._view(protocol, metadata, where)
        last: dict = {}
        commits, read = [], []
        for version in range(start + 1, end + 1):
            actions, where = self._read_log_file(commit_name(version), version)
            read.append(where.path)
            before = view
            if actions.protocol is not None or actions.metadata is not None:
                view = self._view(
                    actions.protocol or view.protocol, actions.metadata or view.metadata, where
                )
            counts = {"add": 0, "remove": 0}
            for action in actions.files:
                record = (view if action.kind == "add" else before).typer(action, where)
                last.pop(record.key, None)  # keep the order of the latest action
                last[record.key] = (action.kind, record)
                counts[action.kind] += 1
            info = actions.commit_info or CommitInfo()
            commits.append(
                CommitSummary(
                    version,
                    info.in_commit_timestamp
                    if info.in_commit_timestamp is not None
                    else info.timestamp,
                    info.operation,
                    info.operation_parameters,
                    counts["add"],
                    counts["remove"],
                )
            )
        order = sorted(last.values(), key=lambda kr: kr[1].key[0] + "\0" + (kr[1].key[1] or ""))
        return DeltaChanges(
            start,
            end,
            tuple(r for k, r in order if k == "add"),
            tuple(r for k, r in order if k == "remove"),
            tuple(commits),
            view.protocol,
            view.metadata,
            view.metadata != metadata,
            log_files=tuple(read),
        )

    def _changes_from_snapshots(
        self, listing: LogListing, start: int, end: int, reason: str
    ) -> DeltaChanges:
        del listing  # each snapshot lists again: the log may be changing under cleanup
        before, after = self.snapshot(start), self.snapshot(end)
        old = {f.key: f for f in before.files}
        new = {f.key: f for f in after.files}
        return DeltaChanges(
            start,
            end,
            tuple(f for k, f in new.items() if k not in old),
            tuple(f for k, f in old.items() if k not in new),
            (),
            after.protocol,
            after.metadata,
            after.metadata != before.metadata,
            from_snapshots=True,
            reason=reason,
            log_files=before.log_files + after.log_files,
        )
