"""The table-level API: index a table (a directory of Parquet files, or any table and data
format registered in :mod:`metaindex.formats`), keep the index fresh, prune.

::

    from metaindex import MetaIndex

    mi = MetaIndex("/data/events")
    mi.index_builder().add_min_max_index("temp").add_value_list_index("city") \\
        .add_bloom_filter_index("user_id", fpp=0.01).build()
    mi.prune("temp > 30 AND city IN ('Paris', 'Rome')").kept     # the files to read
    mi.refresh()                                                  # after files change

Where the index lives (``store=None``): the directory named by the ``METAINDEX_STORE``
environment variable if set, else ``_metaindex`` next to the table (``/data/_metaindex`` for
``/data/events``, ``s3://bucket/data/_metaindex`` for ``s3://bucket/data/events``). Never
inside the table: readers would list it as data. The ``_`` prefix keeps it out of listings of
a parent table (Spark and metaindex skip such directories). One store directory holds the
indexes of many tables, each under ``<table id>/``.

Works on its own (no JVM): builds run on a local process pool by default; pass ``executor=``
to run the per-file work elsewhere (the Spark layer provides one).
"""

from __future__ import annotations

import datetime
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from metaindex.description import (
    Counts,
    Damage,
    Description,
    Freshness,
    History,
    HistoryEntry,
    IndexDescription,
    StoreBytes,
)
from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import locate_table
from metaindex.engine.prune import (
    DamagedIndexWarning,
    DropReason,
    Pruner,
    PruneResult,
    PruneStats,
    SessionSettings,
    candidates,
    prune_context,
    read_every_file,
)
from metaindex.errors import (
    DecodeError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    SchemaError,
)
from metaindex.formats import DEFAULT_DATA_FORMAT, DEFAULT_TABLE_FORMAT, FormatSpec
from metaindex.formats.delta import DELTA_VERSION, DeltaTableFormat, is_delta_location
from metaindex.store import OBJ_ROWS, OBJ_TYPE_DRIFT
from metaindex.store.tableschema import SCHEMA_DETAILS

if TYPE_CHECKING:
    from metaindex.engine.build import BuildResult
    from metaindex.engine.context import PruneContext
    from metaindex.engine.effectiveness import IndexEffectiveness
    from metaindex.engine.explain import Explanation
    from metaindex.index import Index
    from metaindex.store.snapshot import Snapshot

__all__ = [
    "MetaIndex",
    "IndexBuilder",
    "StoreEncryption",
    "BuildResult",
    "PruneResult",
    "PruneStats",
    "Explanation",
    "SessionSettings",
    "STORE_ENV",
    "DEFAULT_STORE_NAME",
    "default_store",
    "Description",
    "IndexDescription",
    "History",
    "HistoryEntry",
]


def __getattr__(name: str):
    # build, refresh and explain are imported when used: a prune from a fresh process does
    # not pay for them (the collection tasks, the executors)
    if name == "BuildResult":
        from metaindex.engine.build import BuildResult

        return BuildResult
    if name == "Explanation":
        from metaindex.engine.explain import Explanation

        return Explanation
    raise AttributeError(f"module 'metaindex.api' has no attribute {name!r}")


STORE_ENV = "METAINDEX_STORE"
_UNREADABLE_SHOWN = 20
DEFAULT_STORE_NAME = "_metaindex"


@dataclass(frozen=True)
class StoreEncryption:
    """Encrypt the metadata store with Parquet Modular Encryption (keys by label only).

    Args:
        kms_client_factory: ``f(KmsConnectionConfig) -> KmsClient`` (module-level, so worker
            processes can use it).
        footer_key: label of the master key for footers and the obj_* / virtual_* columns.
        index_keys: the label for index columns: one label for all, or {column: label} (a
            column not listed uses ``footer_key``; a column mapped to None is left in
            plaintext). Default: ``footer_key`` for every index.
        kms_connection_config: a ``metaindex.crypto.KmsConnectionConfig``.
        plaintext_footer: signed plaintext footers instead of encrypted ones.
        algorithm: "AES_GCM_V1" or "AES_GCM_CTR_V1".
        double_wrapping / data_key_length_bits: as for ``metaindex.crypto``.
    """

    kms_client_factory: Callable[..., Any]
    footer_key: str
    index_keys: str | Mapping[str, str | None] | None = None
    kms_connection_config: Any = None
    plaintext_footer: bool = False
    algorithm: str = "AES_GCM_V1"
    double_wrapping: bool = True
    data_key_length_bits: int = 128

    def labels(self):
        from metaindex.store import EncryptionLabels

        return EncryptionLabels(self.footer_key, self.plaintext_footer, self.algorithm)

    def key_access(self):
        from metaindex.store import KeyAccess

        return KeyAccess(
            self.kms_client_factory,
            self.kms_connection_config,
            double_wrapping=self.double_wrapping,
            data_key_length_bits=self.data_key_length_bits,
        )

    def label_for(self, column: str) -> str | None:
        """The key label of an index on ``column`` (None: that index is plaintext)."""
        keys = self.index_keys
        if keys is None:
            return self.footer_key
        if isinstance(keys, str):
            return keys
        for name, label in keys.items():
            if name == column or name.lower() == column.lower():
                return label
        return self.footer_key


def default_store(location) -> tuple:
    """``(store directory, filesystem or None)`` of the default store of a table
    (``metaindex.engine.listing.TableLocation``): ``$METAINDEX_STORE``, else ``_metaindex``
    next to the table (see the module docstring).

    Raises:
        ValueError: the table root has no parent directory.
    """
    override = os.environ.get(STORE_ENV)
    if override:
        return override, None
    if location.storage.uri_paths:  # an object store table: the store is one too
        parent = location.uri.rstrip("/").rsplit("/", 1)[0]
        if parent.endswith(":/"):
            raise ValueError(
                f"{location.uri} is a bucket root: pass store=... (or set {STORE_ENV})"
            )
        return f"{parent}/{DEFAULT_STORE_NAME}", None
    root = location.root.rstrip("/")
    parent = root.rsplit("/", 1)[0] if "/" in root else ""
    if not parent or parent == root:
        raise ValueError(
            f"{location.uri} has no parent directory for the default store: pass "
            f"store=... (or set {STORE_ENV})"
        )
    path = f"{parent}/{DEFAULT_STORE_NAME}"
    if location.storage.is_local:
        return path, None
    return path, location.filesystem


class IndexBuilder:
    """Collects index definitions for :meth:`MetaIndex.index_builder`; ``build()`` runs them.

    Methods return the builder, so calls chain.
    """

    def __init__(self, owner: MetaIndex):
        self._owner = owner
        self._indexes: list = []

    def add_index(
        self, kind: str | Index, column: str | None = None, **params: Any
    ) -> IndexBuilder:
        """An index of ``kind`` on ``column``: a built-in kind (``"minmax"``, ``"valuelist"``,
        ``"bloom"``) or one added with ``metaindex.index.register_index_kind``, with its
        parameters (the kind's defaults for those not given). An ``Index`` object is added
        as it is (no column, no parameters).

        Raises:
            IndexDefinitionError: an unknown kind (the message lists the known ones), a
                parameter the kind does not take or a value it does not accept.
            TypeError: ``column`` is not a non-empty str.
        """
        from metaindex.index import Index, new_index

        if isinstance(kind, Index):
            if column is not None or params:
                raise TypeError(
                    "add_index(index) takes no column or parameters: the Index object has them"
                )
            self._indexes.append(kind)
            return self
        if column is None:
            raise TypeError(f"add_index({kind!r}) needs the column to index")
        self._indexes.append(new_index(kind, column, **params))
        return self

    def add_min_max_index(self, column: str) -> IndexBuilder:
        """Per file: min, max, null and NaN counts of ``column``."""
        return self.add_index("minmax", column)

    def add_value_list_index(self, column: str, max_values: int = 100) -> IndexBuilder:
        """Per file: the distinct values of ``column`` (unknown above ``max_values``)."""
        return self.add_index("valuelist", column, max_values=max_values)

    def add_bloom_filter_index(self, column: str, fpp: float = 0.01, **params: Any) -> IndexBuilder:
        """Per file: a split-block bloom filter of ``column`` sized for false-positive rate
        ``fpp`` (``max_bytes=`` caps a file's filter)."""
        return self.add_index("bloom", column, fpp=fpp, **params)

    @property
    def indexes(self) -> tuple:
        return tuple(self._indexes)

    def build(self, *, executor=None, progress=None, footer_statistics: bool = True) -> BuildResult:
        """Index every file of the table in one commit.

        Args:
            executor: a ``metaindex.engine.executors.Executor`` (default: a local process
                pool).
            progress: ``callback(done_tasks, total_tasks)``.
            footer_statistics: take min/max from trusted footer statistics where possible
                (False: always read the column).

        Raises:
            MetaIndexError: already indexed (use ``refresh()`` or ``drop()``), or no data files.
            SchemaError: an index column the table does not have, or a partition column.
            TypeError: a column type the index kind cannot index.
        """
        return self._owner._run_build(self._indexes, executor, progress, footer_statistics)


class MetaIndex:
    """The data-skipping index of one table (a directory of Parquet files).

    Args:
        table: the table root: a local directory, a ``pyarrow.fs`` URI, or a path on
            ``filesystem``.
        store: where the index lives: a directory or URI, or a ``metaindex.store.MetadataStore``
            (default: see the module docstring).
        filesystem: a ``pyarrow.fs.FileSystem`` for ``table``.
        encryption: :class:`StoreEncryption` to encrypt the store (needed to read an
            encrypted one too).
        storage_options: object store settings for the table and the store (``endpoint``,
            ``region``, ``access_key_id``, ``secret_access_key``, ``session_token``,
            ``allow_http``, ...), on top of the standard environment variables
            (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
            ``AWS_REGION``); see ``metaindex.store.objectstore``.
        format / format_options / table_format: how the table is read, by the names of
            :mod:`metaindex.formats` (data format, its options, table format); default
            ``"parquet"`` files found by a ``"directory"`` listing. A build records them with
            the index, and later operations read the table as recorded (naming other formats
            for an indexed table is a ``MetaIndexError`` at refresh).

    Raises:
        UnsupportedFormatError: a format name that is not registered, or an option the
            format does not take.
    """

    def __init__(
        self,
        table,
        store=None,
        *,
        filesystem=None,
        encryption=None,
        storage_options=None,
        format: str | None = None,
        format_options: dict | None = None,
        table_format: str | None = None,
    ):
        from metaindex.store import MetadataStore

        if encryption is not None and not isinstance(encryption, StoreEncryption):
            raise TypeError(
                f"encryption must be a metaindex.api.StoreEncryption, not "
                f"{type(encryption).__name__}"
            )
        self._formats = None
        if (format, format_options, table_format) != (None, None, None):
            self._formats = FormatSpec(
                table_format or DEFAULT_TABLE_FORMAT,
                format or DEFAULT_DATA_FORMAT,
                dict(format_options or {}),
            )
            self._formats.table_format(), self._formats.data_format()  # unknown: raise now
        self._location = locate_table(table, filesystem, storage_options)
        if table_format is None and is_delta_location(self._location):
            # a directory with _delta_log/ is a Delta table: never listed as a directory
            self._formats = FormatSpec(
                DeltaTableFormat.name, format or DEFAULT_DATA_FORMAT, dict(format_options or {})
            )
        self._encryption = encryption
        key_access = None if encryption is None else encryption.key_access()
        if isinstance(store, MetadataStore):
            self._store = store
        else:
            if store is None:
                store, store_fs = default_store(self._location)
            else:
                if isinstance(store, os.PathLike):
                    store = os.fspath(store)
                if not isinstance(store, str) or not store:
                    raise TypeError(
                        f"store must be a directory, a URI or a MetadataStore, not {store!r}"
                    )
                store_fs = None
            self._store = MetadataStore(
                store, filesystem=store_fs, key_access=key_access, storage_options=storage_options
            )
        self._table_store = self._store.table(self._location.uri)
        self._snapshot: Snapshot | None = None
        self._snapshot_stamp: object = None
        self._damage: tuple = ()
        self._seen_parts: dict = {}
        self._prune_context: tuple[Snapshot, PruneContext] | None = None
        self._effectiveness: tuple[Snapshot, list[IndexEffectiveness]] | None = None

    def __repr__(self) -> str:
        return f"MetaIndex({self._location.uri!r}, store={self._store.root!r})"

    @property
    def table_uri(self) -> str:
        """The normalised table URI the index is keyed by."""
        return self._location.uri

    @property
    def store_path(self) -> str:
        """The directory holding this table's index."""
        return self._table_store.path

    # ---------------------------------------------------------------- snapshots

    def _current(self):
        """The latest snapshot, reused while the store's head (:meth:`TableStore.head`: every
        log file, and the size and mtime of each live part) stays the same.

        The head is read on every call (two directory listings, no file reads), so within
        one process a new version, a log file or a part changed, damaged or removed in place,
        is noticed by the next query: a changed part drops the table's cached metadata, and
        the next read verifies every part again (and fails with the reason if one is
        damaged); a changed log re-reads the snapshot and verifies the log again
        (:meth:`TableStore.damage`, kept for :meth:`pruner`: a damaged log is not used).
        """
        latest, parts, log_files = self._table_store.head()
        if latest is None:
            raise MetaIndexError(
                f"{self._location.uri} has no index (store "
                f"{self._table_store.path}); build one with index_builder()"
            )
        if self._snapshot is not None and any(
            parts.get(name) != seen for name, seen in self._seen_parts.items()
        ):
            self._table_store.forget_cached()
            self._snapshot = None
            self._prune_context = None
        if log_files != self._snapshot_stamp or self._snapshot is None:
            self._snapshot = None
            snapshot, self._damage = self._table_store.checked_snapshot()
            self._snapshot, self._snapshot_stamp = snapshot, log_files
            live = {path.rsplit("/", 1)[-1] for path in snapshot.parts}
            self._seen_parts = {name: parts.get(name) for name in live}
        return self._snapshot

    # ---------------------------------------------------------------- writing

    def index_builder(self) -> IndexBuilder:
        """A builder: add indexes, then ``build()``."""
        return IndexBuilder(self)

    def _run_build(self, indexes, executor, progress, footer_statistics) -> BuildResult:
        keys = None
        labels = None
        if self._encryption is not None:
            labels = self._encryption.labels()
            keys = _KeyLabels(self._encryption)
        from metaindex.engine.build import build as _build

        result = _build(
            self._location,
            self._table_store,
            list(indexes),
            index_keys=keys,
            encryption=labels,
            executor=executor,
            progress=progress,
            footer_statistics=footer_statistics,
            formats=self._formats,
        )
        self._snapshot = None
        return result

    def refresh(
        self, *, executor=None, progress=None, footer_statistics: bool = True, verify: bool = False
    ) -> BuildResult:
        """Index new and rewritten files, forget deleted ones, in one commit.

        ``verify=True`` also re-reads the footer (only the file's tail) of every file whose
        size and mtime match its entry and re-indexes it when the footer's length or CRC-32
        differs from the one recorded at build: rewrites that keep size and mtime (``cp -p``,
        ``rsync -a``, ``touch -r``). Entries of a format-5 store have no fingerprint and are
        re-indexed (upgraded) by it.

        A damaged store is repaired first (``metaindex.store.TableStore.repair``): a gap or a
        damaged entry in the log, a missing or damaged part. The newest readable version less
        its damaged parts becomes the start of the log, and this refresh indexes again the
        files whose metadata was lost; ``check()`` then finds the store whole.

        Raises:
            MetaIndexError: the table has no index.
            CommitConflictError: concurrent writers kept changing the same files.
        """
        from metaindex.engine.refresh import refresh as _refresh

        result = _refresh(
            self._location,
            self._table_store,
            executor=executor,
            progress=progress,
            footer_statistics=footer_statistics,
            verify=verify,
            formats=self._formats,
        )
        self._snapshot = None
        return result

    def upgrade(
        self, xskipper_store: str, *, executor=None, progress=None, footer_statistics: bool = True
    ) -> BuildResult:
        """Write this table's index from the store xskipper wrote for it (format versions
        0-4, ``xskipper_store`` its directory), then index what it did not cover, as xskipper
        upgrades its older versions on refresh (``metaindex.engine.xskipper.upgrade``): entries
        whose file kept its path and mtime are carried over without reading the file's data
        (its footer only); each index keeps its kind, parameters and key label. An encrypted
        xskipper store keeps its footer key label and footer mode, and needs ``encryption``
        (its KMS) to be read. The xskipper store is not changed. The index records this
        MetaIndex's ``format``/``format_options`` (default Parquet): xskipper's store does
        not say the table is CSV, JSON or ORC; such a table is upgraded by the Spark face
        (``metaindex.spark.MetaIndex`` with ``format=``), whose Spark reader indexes every file
        again under the xskipper store's index definitions.

        Raises:
            MetaIndexError: the table already has a metaindex index; no xskipper store there.
            DecodeError: no file of the table reads as Parquet and no other format is named.
            UnsupportedFeatureError: a CSV/JSON/ORC table (Spark reads those).
            UnsupportedVersionError: an xskipper store newer than version 4.
            KeyAccessError: an encrypted xskipper store without ``encryption``.
        """
        from metaindex.engine.xskipper import upgrade

        key_access = None if self._encryption is None else self._encryption.key_access()
        labels = None if self._encryption is None else self._encryption.labels()
        result = upgrade(
            self._location,
            self._table_store,
            xskipper_store,
            encryption=labels,
            key_access=key_access,
            executor=executor,
            progress=progress,
            footer_statistics=footer_statistics,
            formats=self._formats,
        )
        self._snapshot = None
        return result

    def compact(self, target_file_size: int | None = None, *, progress=None) -> int:
        """Rewrite small metadata parts (and parts holding superseded rows) into parts of
        about ``target_file_size`` bytes in one commit; returns the version afterwards.
        ``progress(done, total)`` counts the parts rewritten."""
        from metaindex.store import DEFAULT_TARGET_FILE_SIZE

        size = DEFAULT_TARGET_FILE_SIZE if target_file_size is None else target_file_size
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"target_file_size is a number of bytes (int), not {size!r}")
        version = self._table_store.compact(size, progress=progress)
        self._snapshot = None
        return version

    def vacuum(self, retain=None, *, force: bool = False):
        """Delete parts and log entries no version younger than ``retain`` needs (see
        ``metaindex.store.TableStore.vacuum``: what it deletes is committed first, so a
        concurrent commit never names a deleted part).

        Args:
            retain: a ``datetime.timedelta`` or seconds (default: 7 days; at least
                ``metaindex.store.MIN_RETAIN``, 1 hour, unless ``force``).
            force: allow a ``retain`` below the floor (a query reading an older version, or
                a writer slower than ``retain``, then has to start over).

        Returns:
            ``metaindex.store.VacuumResult``.

        Raises:
            UnsafeRetentionError: ``retain`` below the floor without ``force``.
        """
        from metaindex.store import DEFAULT_RETAIN

        if retain is None:
            retain = DEFAULT_RETAIN
        elif isinstance(retain, (int, float)) and not isinstance(retain, bool):
            retain = timedelta(seconds=retain)
        elif not isinstance(retain, timedelta):
            raise TypeError(f"retain is a datetime.timedelta or seconds, not {retain!r}")
        result = self._table_store.vacuum(retain, force=force)
        self._snapshot = None
        return result

    def drop(self) -> None:
        """Delete the index of this table (every version)."""
        self._table_store.drop()
        self._snapshot = None
        self._snapshot_stamp = None

    # ---------------------------------------------------------------- reading

    def is_indexed(self) -> bool:
        """Whether the table has an index."""
        return self._table_store.exists()

    def history(self) -> History:
        """Every version still in the log, oldest first: a
        :class:`~metaindex.description.History` of
        :class:`~metaindex.description.HistoryEntry` (version, timestamp as a UTC datetime,
        operation, files_added, files_removed, files_superseded, parts_added, parts_removed,
        details without the recorded schema; an encrypted store's details are sealed in the
        log and shown with its keys only: ``{"sealed": True}`` without them).
        ``to_spark(spark)`` renders it as a DataFrame.

        Raises:
            StoreDamageError: a gap or a damaged entry or checkpoint in the log (its
                ``problems`` name them); ``refresh()`` repairs it.
        """
        out = []
        for e in self._table_store.history():
            details = {k: v for k, v in e.details.items() if k not in SCHEMA_DETAILS}
            if e.sealed_details is not None and details == {}:
                details = {"sealed": True}
            out.append(
                HistoryEntry(
                    e.version,
                    datetime.datetime.fromtimestamp(e.timestamp / 1000, datetime.timezone.utc),
                    e.operation,
                    e.added_objects,
                    len(e.removed_objects),
                    len(e.superseded_objects),
                    len(e.added_parts),
                    len(e.removed_parts),
                    details,
                )
            )
        return History(tuple(out))

    def check(self):
        """Verify the whole index: the log (every entry and checkpoint, each version
        replayed), the parts every version names, the latest version's parts decoded and
        compared with the log (rows, sizes, summaries, each file indexed once). Reads every
        part of the latest version. ``metaindex check`` prints it.

        Returns:
            ``metaindex.store.CheckReport`` (``healthy``, ``problems``, ``notes``,
            ``to_json()``).

        Raises:
            MetaIndexError: the table has no index.
        """
        return self._table_store.check()

    def describe(self) -> Description:
        """The index at a glance, as a :class:`~metaindex.description.Description`
        (``to_dict()`` for its JSON form, ``to_spark(spark)`` for a DataFrame): indexes,
        counts, freshness against the table's files now (new / changed / deleted files
        pending a refresh; files a build or refresh could not read, with the reason for up to
        20 of them: not pending, never skipped, retried once they change), version, store
        size. Counts come from the part summaries and the file list read as Arrow. Without
        the key of an encrypted store's footers the file list cannot be read:
        ``counts.indexed_rows`` and the freshness counts are then None and
        ``freshness.unknown`` says why.

        Each :class:`~metaindex.description.IndexDescription` of ``indexes`` (kind,
        column, params, key_label) also says how well that index skips, estimated from the
        index alone (``metaindex.engine.effectiveness``; computed once per index version):
        ``point_read_fraction`` (expected fraction of files an equality lookup of a value
        from the data reads, 1/files at best), ``range_read_fraction`` (min/max: {width as a
        fraction of the column's span: fraction read}), ``unknown_files`` (always read),
        ``verdict`` ("effective", "weak: ranges overlap; cluster the table by this column",
        "saturated value list: ...") and ``estimates`` (kind-specific figures).

        ``damage`` is None for a whole store, else a :class:`~metaindex.description.Damage`
        (``problems``, ``effect``):
        each problem names a damaged or missing file (a gap in the log, an entry or
        checkpoint failing its checksum, a missing or damaged part), and ``effect`` says what
        it does to queries until ``refresh()`` repairs it. When the latest version itself
        cannot be read, ``version``, the counts and the indexes are None / empty.

        ``formats``: how the table is read, as the index records it
        (``{"table_format", "data_format", "format_options"}``, :mod:`metaindex.formats`).

        ``type_drift`` (per index): None, or how the column's files disagree on its type and
        what that does to the index (``metaindex.engine.schema.type_drift``: the table's type,
        the recorded notes and their effect, how many files were left unindexed for the column
        because their values did not convert exactly, by file type).
        """
        try:
            snap = self._current()
        except (DecodeError, IntegrityError) as exc:  # the latest version cannot be read
            return self._describe_unreadable(exc)
        problems = [str(p) for p in self._table_store.damage(parts=True)]
        try:
            effect = {(e.kind, e.column): e for e in self.effectiveness()}
        except (KeyAccessError, IntegrityError, DecodeError):
            effect = {}  # describe works without keys, and on a damaged index
        _, partitions = schema_mod.recorded(snap)
        unconverted = None
        try:  # the file list is in the parts: a reader without the footer key cannot see it
            per_file = snap.read_parts(snap.part_paths, [OBJ_ROWS, OBJ_TYPE_DRIFT])
            rows = per_file.column(OBJ_ROWS)
            unconverted = per_file.column(OBJ_TYPE_DRIFT).to_pylist()
            # None also when an entry has no row count (carried from an xskipper store of
            # CSV/JSON/ORC files, which records none)
            indexed_rows: int | None = None if rows.null_count else int(pc.sum(rows).as_py() or 0)
            listing, delta = _recorded_formats(snap).table_format().changes(self._location, snap)
            delta_now = listing.state.get(DELTA_VERSION)
            freshness = Freshness(
                len(delta.new),
                len(delta.changed),
                len(delta.deleted),
                delta.empty,
                len(delta.unreadable),
                {f.path: snap.unreadable[f.path][2] for f in delta.unreadable[:_UNREADABLE_SHOWN]},
            )
        except (KeyAccessError, IntegrityError, DecodeError) as exc:
            indexed_rows = delta_now = None
            why = (
                f"no key to read the file list ({exc})"
                if isinstance(exc, KeyAccessError)
                else f"the file list cannot be read ({exc})"
            )
            if not isinstance(exc, KeyAccessError) and str(exc) not in problems:
                problems.append(str(exc))
            freshness = Freshness(None, None, None, None, snap.unreadable_count, {}, why)
        drift = schema_mod.type_drift(snap, unconverted)
        delta_indexed = snap.table_state.get(DELTA_VERSION)
        return Description(
            self._location.uri,
            self._table_store.path,
            snap.version,
            datetime.datetime.fromtimestamp(snap.timestamp / 1000, datetime.timezone.utc),
            tuple(
                IndexDescription(
                    d.name,
                    d.cols[0],
                    dict(d.params),
                    d.key_metadata,
                    **_effect_fields(effect.get((d.name, d.cols[0]))),
                    type_drift=drift.get(d.storage_name),
                )
                for d in snap.index_defs
            ),
            dict(partitions),
            None if snap.encryption is None else snap.encryption.to_json(),
            Counts(snap.object_count, indexed_rows, len(snap.part_paths)),
            freshness,
            StoreBytes(sum(p.bytes for p in snap.parts.values()), self._store_bytes()),
            _damage_line(problems, bool(self._damage)),
            formats=_recorded_formats(snap).to_record(),
            delta_version=delta_indexed,
            delta_versions_behind=None
            if delta_indexed is None or delta_now is None
            else delta_now - delta_indexed,
        )

    def _store_bytes(self) -> int:
        storage = self._store.storage
        on_disk = 0
        for sub in ("", "_log", "parts"):
            directory = storage.join(self._table_store.path, sub) if sub else self._table_store.path
            on_disk += sum(s.size for s in storage.list(directory))
        return on_disk

    def _describe_unreadable(self, exc) -> Description:
        """describe() when the latest version cannot be read: what is known, and the damage."""
        problems = [str(p) for p in self._table_store.damage()] or [str(exc)]
        unknown = f"the latest version cannot be read ({exc})"
        return Description(
            self._location.uri,
            self._table_store.path,
            None,
            None,
            (),
            {},
            None,
            Counts(None, None, None),
            Freshness(None, None, None, None, None, {}, unknown),
            StoreBytes(None, self._store_bytes()),
            _damage_line(problems, True),
        )

    def effectiveness(self) -> list:
        """How well each index skips, one ``metaindex.engine.effectiveness.IndexEffectiveness``
        per index (the estimators are documented in that module). Computed from the current
        snapshot's metadata only, once per version.

        Raises:
            MetaIndexError: the table has no index.
        """
        from metaindex.engine.effectiveness import effectiveness

        snap = self._current()
        if self._effectiveness is None or self._effectiveness[0] is not snap:
            self._effectiveness = (snap, effectiveness(snap))
        return list(self._effectiveness[1])

    def plot(self, path, *, columns=None, title: str | None = None) -> str:
        """Draw each min/max index's file ranges (horizontal intervals sorted by min, the
        overlap visible at a glance) into an image file (``.png``, ``.svg``, ``.pdf``);
        returns the path. Needs matplotlib: ``pip install metaindex[plot]``.

        Raises:
            MissingDependencyError: matplotlib is not installed.
            ValueError: the index has no min/max index (on ``columns``).
            MetaIndexError: the table has no index.
        """
        from metaindex.plot import plot_ranges

        return plot_ranges(
            self._current(), self.effectiveness(), path, columns=columns, title=title
        )

    def advise(
        self,
        *,
        sample_files: int = 64,
        sample_rows: int = 50_000,
        seed: int = 0,
        source: str | None = None,
    ):
        """Which layout of the table would make its min/max indexes selective, and how to get
        it with Spark, with the estimated read fraction per column before and after (see
        ``metaindex.engine.advice``). Reads a sample of the indexed columns; never rewrites
        data.

        Args:
            sample_files: most files to read (picked at random).
            sample_rows: most rows to sample in all.
            seed: for the random choices.
            source: the PySpark expression reading the table in the suggested code (default
                ``spark.read.parquet("<table>")``).

        Returns:
            ``metaindex.engine.advice.Advice`` (``recommendation``, ``per_column``,
            ``options``, ``to_dict()``).

        Raises:
            MetaIndexError: the table has no index.
            KeyAccessError: the data files are encrypted (PME): the sample cannot be read.
        """
        from metaindex.engine.advice import advise

        snap = self._current()
        from metaindex.index import KINDS

        current = {  # the range kinds, which layout advice covers (Index.RANGES)
            e.column: e.point_read_fraction
            for e in self.effectiveness()
            if getattr(KINDS.get(e.kind), "RANGES", False)
        }
        return advise(
            self._location,
            snap,
            current,
            source=source,
            sample_files=sample_files,
            sample_rows=sample_rows,
            seed=seed,
        )

    def prune(
        self,
        predicate,
        files=None,
        *,
        case_sensitive: bool | None = None,
        time_zone: str | None = None,
        session: SessionSettings | None = None,
        delta_version: int | None = None,
    ) -> PruneResult:
        """Which files might hold a row matching ``predicate``.

        Args:
            predicate: a ``metaindex.expr`` predicate or a SQL string
                (``"temp > 30 AND city IN ('Paris', 'Rome')"``), or a list of those
                (AND-ed).
            files: the candidate files (default: list the table): ``(path, size,
                mtime_ms)`` tuples or ``DataFile`` objects, or — fastest for many files — a
                ``pyarrow.Table`` with columns ``path``, ``size``, ``mtime`` (ms). Paths are
                relative to the table or absolute under it (URIs too).
            case_sensitive: resolve column names case-sensitively (Spark's default is not).
            time_zone: the session time zone ``TIMESTAMP '...'`` literals are read in (UTC).
            session: all session settings at once (:class:`SessionSettings`, including the
                session's rebase read modes: files whose stored dates/timestamps Spark would
                rebase or refuse are decided without their DATE/TIMESTAMP conjuncts);
                ``case_sensitive`` / ``time_zone`` override it.
            delta_version: a Delta table only: decide on the files of that version (time
                travel, ``versionAsOf``) instead of the latest; its files the index does not
                cover (added after the indexed version, or removed before it) are kept.

        Returns:
            :class:`PruneResult`: kept and skipped paths, stats (with each top-level
            conjunct's fate in ``stats.conjuncts``). Files the index does not cover with
            their current size and mtime are always kept. A conjunct that cannot be used (a
            function metaindex does not know, such as ``upper(c) = 'X'``, or a literal the
            column cannot take) is left out: it only keeps more files. A damaged index (a
            gap or a damaged entry in its log, a damaged or missing part) keeps every file,
            with a ``DamagedIndexWarning`` and the reason in ``stats.damage``.

        Raises:
            SchemaError: the predicate names a column the table does not have (or an
                ambiguous one).
            ExpressionError: SQL that does not parse.
        """
        if delta_version is not None:
            if files is not None:
                raise TypeError("give files or delta_version, not both")
            if self._listing_formats().table != DeltaTableFormat.name:
                raise TypeError(f"delta_version: {self.table_uri} is not indexed as a Delta table")
            files = DeltaTableFormat().list_files(self._location, delta_version)
        result = self._decide(predicate, files, case_sensitive, time_zone, session)
        for outcome in result.stats.conjuncts:
            if outcome.reason is DropReason.UNKNOWN_COLUMN:
                raise SchemaError(outcome.detail)
        return result

    def _decide(self, predicate, files, case_sensitive, time_zone, session) -> PruneResult:
        session = SessionSettings() if session is None else session
        if case_sensitive is not None or time_zone is not None:
            session = SessionSettings(
                session.time_zone if time_zone is None else time_zone,
                session.case_sensitive if case_sensitive is None else case_sensitive,
                session.datetime_rebase_read,
                session.int96_rebase_read,
            )
        try:  # one head check for the listing's formats and the decision
            pruner: Pruner | None = self.pruner()
            formats = _recorded_formats(self._snapshot)
        except (IntegrityError, DecodeError):
            pruner, formats = None, self._listing_formats()
        listing = files if files is not None else formats.table_format().list_files(self._location)
        files = candidates(self._location, listing)
        try:
            return (pruner or self.pruner()).decide(predicate, files, session=session)
        except (IntegrityError, DecodeError) as exc:  # a damaged index decides nothing
            reason = f"the index is damaged ({exc})"
            warnings.warn(
                f"metaindex: reading every file of {self.table_uri}: {reason}",
                DamagedIndexWarning,
                stacklevel=3,
            )
            version = self._snapshot.version if self._snapshot is not None else -1
            return read_every_file(files, reason, version)

    def _listing_formats(self) -> FormatSpec:
        """The formats to list the table with: the index's; when its latest version cannot
        be read (the query then reads every file), the ones named here, else the default."""
        try:
            return _recorded_formats(self._current())
        except (IntegrityError, DecodeError):
            return self._formats or FormatSpec()

    def explain(
        self,
        predicate,
        files=None,
        *,
        case_sensitive: bool | None = None,
        time_zone: str | None = None,
        session: SessionSettings | None = None,
    ) -> Explanation:
        """Why :meth:`prune` keeps what it keeps: the same decision, explained.

        Takes :meth:`prune`'s arguments and returns a
        :class:`metaindex.engine.explain.Explanation`: per top-level conjunct, used or dropped
        and why (unknown function, type mismatch, unknown column, no index, keys
        unavailable), the indexes that answered it and how many files each alone rules out;
        the files kept because they are new or changed since the last refresh; the totals
        (equal to ``prune(...).stats``). ``print(mi.explain(...))`` shows it as text. Unlike
        :meth:`prune`, a column the table lacks is reported as a dropped conjunct, not raised.

        Raises:
            ExpressionError: SQL that does not parse.
        """
        result = self._decide(predicate, files, case_sensitive, time_zone, session)
        from metaindex.engine.explain import explain_stats

        return explain_stats(result.stats, self.table_uri)

    def snapshot(self):
        """The index's latest ``metaindex.store.Snapshot`` (files, parts, index definitions,
        version); the same object while the log's newest entry is unchanged.

        Raises:
            MetaIndexError: the table has no index.
        """
        return self._current()

    def pruning_context(self):
        """The current snapshot's :class:`metaindex.engine.prune.PruneContext` (schema, indexes,
        part summaries; the file list and per-object metadata read on first use); the same
        object until the log moves on.

        Raises:
            MetaIndexError: the table has no index.
        """
        return self._context()

    def pruner(self) -> Pruner:
        """A :class:`metaindex.engine.prune.Pruner` over the current snapshot: what
        :meth:`prune` and the Spark layer decide with. Checks the log head (one listing of
        the log directory) and re-reads the snapshot when it moved on.

        Raises:
            MetaIndexError: the table has no index.
        """
        return Pruner(self._context())

    def _context(self):
        """The pruning arrays of the current snapshot (rebuilt when the log moves on)."""
        snap = self._current()
        if self._prune_context is None or self._prune_context[0] is not snap:
            self._prune_context = (snap, prune_context(snap, self._damage))
        return self._prune_context[1]


def _recorded_formats(snap) -> FormatSpec:
    """The formats the index of ``snap`` was built with."""
    return FormatSpec.from_record(snap.table.extra, f"the index of {snap.table.uri}")


def _damage_line(problems: list, unusable: bool) -> Damage | None:
    """describe()'s ``damage``: what is wrong and what it means (None: nothing is)."""
    if not problems:
        return None
    if unusable:
        effect = "queries read every file until refresh() repairs the store"
    else:
        effect = (
            "queries that need a damaged part read every file, and older versions "
            "cannot be opened, until refresh() repairs the store"
        )
    return Damage(tuple(problems), effect)


def _effect_fields(e) -> dict:
    if e is None:
        return {
            "point_read_fraction": None,
            "range_read_fraction": None,
            "unknown_files": None,
            "estimates": {},
            "verdict": "unknown: the index metadata is encrypted; give the KMS to see "
            "how well it skips",
        }
    return {
        "point_read_fraction": e.point_read_fraction,
        "range_read_fraction": e.range_read_fraction,
        "unknown_files": e.unknown_files,
        "verdict": e.verdict,
        "estimates": dict(e.details),
    }


class _KeyLabels:
    """{column: label} view of a StoreEncryption for build (``.get(column)``)."""

    def __init__(self, encryption: StoreEncryption):
        self._encryption = encryption

    def get(self, column, default=None):
        return self._encryption.label_for(column)
