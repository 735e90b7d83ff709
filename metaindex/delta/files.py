"""The records a Delta reader hands out: a table's data files (:class:`DeltaFile`), a snapshot
(:class:`DeltaSnapshot`), the changes between two versions (:class:`DeltaChanges`, one
:class:`CommitSummary` per commit), and how log paths become table paths.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from metaindex.delta.actions import DeletionVector, FileAction, Metadata, Protocol, Where
from metaindex.delta.schema import ColumnMapping, SchemaFormatError, field_types, partition_value

__all__ = [
    "DeltaFile",
    "DeltaSnapshot",
    "DeltaChanges",
    "CommitSummary",
    "PathResolver",
    "FileTyper",
]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


@dataclass(frozen=True)
class DeltaFile:
    """One logical file of a Delta table: a data file, with its deletion vector if any.

    Attributes:
        path: the data file's path relative to the table root (URL-decoded, POSIX ``/``), or
            its absolute URI when it lies outside the root (a shallow clone's files).
        size: bytes (always set for files in a snapshot; None on a ``remove`` that did not
            record it).
        modification_time: ms since the epoch when the file was created (None on removes).
        partition_values: logical partition column -> typed value (None for a null value),
            see :func:`metaindex.delta.schema.partition_value`; None on a ``remove`` that did
            not record them.
        deletion_vector: the rows of the file that are deleted, or None.
        data_change: the action's ``dataChange`` flag (False for rewrites such as OPTIMIZE
            and for metadata-only updates). Meaningful in :class:`DeltaChanges`; in a snapshot
            it is whatever the last action said, and checkpoints write False (as Delta's own
            snapshot state has it), so it is not part of equality.
        deletion_timestamp: for removed files, when (ms), if recorded (not part of
            equality).
    """

    path: str
    size: int | None
    modification_time: int | None
    partition_values: dict | None
    deletion_vector: DeletionVector | None = None
    data_change: bool = field(default=True, compare=False)
    deletion_timestamp: int | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        """``(path, deletion vector unique id or None)``: the logical file's identity in
        Delta's log replay."""
        return (self.path, None if self.deletion_vector is None else self.deletion_vector.unique_id)


@dataclass(frozen=True)
class CommitSummary:
    """One commit of a change range: its version, timestamp (ms: the in-commit timestamp where
    recorded, else the writer's ``commitInfo.timestamp``; None if neither), operation
    (``WRITE``, ``DELETE``, ``MERGE``, ``OPTIMIZE``, ...; None without ``commitInfo``) and its
    parameters, and how many files it added and removed."""

    version: int
    timestamp: int | None
    operation: str | None
    operation_parameters: dict
    added: int
    removed: int


@dataclass(frozen=True)
class DeltaSnapshot:
    """A Delta table at one version, reconstructed from its log.

    Attributes:
        table: the table root as given.
        version: the version.
        timestamp: the commit timestamp (ms) Delta's time travel uses for this version: the
            in-commit timestamp where enabled, else the commit file's modification time
            (made increasing across commits, as Delta does); None if the commit file is gone.
        protocol, metadata: the protocol and metaData actions in force.
        files: the active logical files, sorted by path.
        schema: the table schema as Arrow, by logical name (see :mod:`metaindex.delta.schema`).
        column_mapping: logical -> physical names / field ids.
        type_changes: every recorded type change (``delta.typeChanges``), all of them widenings
            Delta allows (others are refused).
        tombstones: removed logical files still in the state (for VACUUM).
        txns: application id -> latest transaction version (``txn``).
        domains: live domain metadata, domain -> configuration.
        log_files: the ``_delta_log`` files read to build it, in the order applied.
    """

    table: str
    version: int
    timestamp: int | None
    protocol: Protocol
    metadata: Metadata
    files: tuple
    schema: pa.Schema
    column_mapping: ColumnMapping
    type_changes: tuple
    tombstones: tuple
    txns: dict
    domains: dict
    log_files: tuple

    @property
    def partition_columns(self) -> tuple:
        return self.metadata.partition_columns

    @property
    def configuration(self) -> dict:
        return self.metadata.configuration

    @property
    def num_files(self) -> int:
        return len(self.files)

    @property
    def size_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def physical_schema(self) -> pa.Schema:
        """The schema by the names the data files use (physical names under column mapping
        ``name`` and ``id`` modes; field ids in ``PARQUET:field_id``), partition columns left
        out (they live in the log, not in the files)."""
        return _rename(self.schema, self.column_mapping, set(self.partition_columns))


def _rename(schema: pa.Schema, mapping: ColumnMapping, drop: set) -> pa.Schema:
    def field_of(f: pa.Field, logical: tuple) -> pa.Field:
        path = logical + (f.name,)
        return pa.field(
            mapping.physical.get(path, path)[-1], type_of(f.type, path), f.nullable, f.metadata
        )

    def type_of(t: pa.DataType, path: tuple) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([field_of(t.field(i), path) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            return pa.map_(
                pa.field("key", type_of(t.key_type, path + ("key",)), False),
                pa.field("value", type_of(t.item_type, path + ("value",)), t.item_field.nullable),
            )
        if pa.types.is_list(t):
            return pa.list_(
                pa.field(
                    "element", type_of(t.value_type, path + ("element",)), t.value_field.nullable
                )
            )
        return t

    return pa.schema([field_of(f, ()) for f in schema if f.name not in drop])


@dataclass(frozen=True)
class DeltaChanges:
    """What changed between two versions, from the JSON commits in between.

    ``added`` holds every logical file the range added, as it is at ``to_version``; it may also
    hold a file that was already there and was committed again unchanged (a metadata-only
    update, ``data_change`` False). ``removed`` holds every logical file the range removed; it
    may also hold one that came and went inside the range. Applied to the files at
    ``from_version`` (:meth:`apply`) they give the files at ``to_version`` exactly. A file whose
    deletion vector changed appears twice: removed with the old vector, added with the new.

    When the commits were no longer there (log cleanup), the changes are the difference of the
    two snapshots, exact and minimal: ``from_snapshots`` is True and ``reason`` says why.

    ``protocol`` and ``metadata`` are those in force at ``to_version``; ``metadata_changed``
    says whether it differs from the metadata at ``from_version`` (schema evolution, a column
    renamed, table properties). Partition values are keyed by logical name as of each action's
    commit, so after a partition column is renamed the files the range did not touch are keyed
    by the old name in the ``from_version`` snapshot: re-read them, or compare by
    :attr:`DeltaFile.key`.
    """

    from_version: int
    to_version: int
    added: tuple
    removed: tuple
    commits: tuple
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    metadata_changed: bool = False
    from_snapshots: bool = False
    reason: str | None = None
    log_files: tuple = field(default=())

    def apply(self, files) -> list:
        """The files at ``to_version`` given the files at ``from_version``."""
        gone = {f.key for f in self.removed} | {f.key for f in self.added}
        return sorted(
            [f for f in files if f.key not in gone] + list(self.added),
            key=lambda f: f.key[0] + "\0" + (f.key[1] or ""),
        )


class PathResolver:
    """Log paths (RFC 2396 URIs: relative to the table root, or absolute) to
    :attr:`DeltaFile.path`: decoded, relative to the root where the file lies under it."""

    def __init__(self, root_uri: str):
        from metaindex.store.layout import canonical_scheme

        self._canonical_scheme = canonical_scheme
        self._root = root_uri.rstrip("/") + "/"
        self._cache: dict = {}

    def __call__(self, raw: str) -> str:
        found = self._cache.get(raw)
        if found is None:
            found = self._cache[raw] = self._resolve(raw)
        return found

    def _resolve(self, raw: str) -> str:
        if not _SCHEME.match(raw) and not raw.startswith("/"):
            if "%" not in raw and "/." not in raw and "//" not in raw and not raw.startswith("."):
                return raw  # already what normpath(unquote()) would give
            return posixpath.normpath(unquote(raw))
        parts = urlsplit("file://" + raw if raw.startswith("/") else raw)
        scheme = self._canonical_scheme(parts.scheme)
        path = posixpath.normpath("/" + unquote(parts.path).lstrip("/"))  # decoded once
        absolute = f"file://{path}" if scheme == "file" else f"{scheme}://{parts.netloc}{path}"
        if absolute.startswith(self._root):
            return absolute[len(self._root) :]
        return absolute


class FileTyper:
    """Turns log file actions into :class:`DeltaFile` records under one metaData: paths
    resolved, partition values keyed by logical name and typed."""

    def __init__(
        self, metadata: Metadata, schema: dict, mapping: ColumnMapping, resolve: PathResolver
    ):
        types = field_types(schema)
        self._resolve = resolve
        self._columns = []  # (logical name, key in partitionValues, its lower case, type)
        for column in metadata.partition_columns:
            logical = (
                column
                if column in types
                else next((c for c in types if c.lower() == column.lower()), column)
            )
            key = mapping.physical.get((logical,), (logical,))[0]
            self._columns.append((logical, key, key.lower(), types.get(logical, "string")))

    def partition_values(self, raw: dict) -> dict:
        out = {}
        lowered = None
        for logical, key, lower, delta_type in self._columns:
            if key in raw:
                value = raw[key]
            else:
                if lowered is None:
                    lowered = {k.lower(): v for k, v in raw.items()}
                value = lowered.get(lower)
            out[logical] = partition_value(value, delta_type)
        return out

    def __call__(self, action: FileAction, where: Where) -> DeltaFile:
        try:
            unrecorded = action.kind == "remove" and self._columns and not action.partition_values
            values = None if unrecorded else self.partition_values(action.partition_values)
        except SchemaFormatError as exc:
            raise where.damage(f"{action.kind} {action.path!r}: {exc}") from None
        return DeltaFile(
            self._resolve(action.path),
            action.size,
            action.modification_time,
            values,
            action.deletion_vector,
            action.data_change,
            action.deletion_timestamp,
        )
