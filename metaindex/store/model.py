"""The records of a metadata store: index definitions, encryption labels, file and part
entries, log entries; their JSON form and the format-version rules.

Every record carries ``format_version`` (8). Readers accept every version metaindex ever wrote
(5, 6, 7 and 8: version 6 adds optional per-file columns and an object's optional ``etag``;
version 7 takes the object lists out of the log, in favour of part summaries and per-part
dead names; version 8 names no data file in an encrypted store's log, records what vacuum
deletes before deleting it, and can reset a damaged log) and raise
:class:`UnsupportedVersionError` for newer ones, saying what to upgrade. JSON records are
sealed with a SHA-256 of their canonical form, so a flipped byte that still parses is caught
as an :class:`IntegrityError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import metaindex
from metaindex.errors import DecodeError, IntegrityError, KeyAccessError, UnsupportedVersionError
from metaindex.store.escaping import index_column_name
from metaindex.store.layout import TableIdentity

if TYPE_CHECKING:
    import pyarrow as pa

    from metaindex.crypto import CryptoFactory

__all__ = [
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "check_format_version",
    "IndexDef",
    "EncryptionLabels",
    "KeyAccess",
    "FileEntry",
    "PartRecord",
    "DeadObjects",
    "LogEntry",
    "OPERATIONS",
    "MAX_PART_OBJECTS",
    "seal_json",
    "unseal_json",
    "normalize_index_defs",
    "require_key_access",
    "require_field",
    "unreadable_record",
]

FORMAT_VERSION = 8
READABLE_VERSIONS = (5, 6, 7, 8)  # every version metaindex ever wrote
MAX_PART_OBJECTS = 65_536
"""The most rows (objects) a part file written by this metaindex holds (one row group)."""
OPERATIONS = ("create", "build", "refresh", "commit", "compact", "vacuum", "drop", "repair")
_INDEX_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def check_format_version(found, where: str) -> int:
    """Validate a record's format version; raise what a user can act on."""
    if not isinstance(found, int) or isinstance(found, bool) or found < 0:
        raise DecodeError(f"{where}: format version {found!r} is not a natural number")
    if found > FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"{where}: metadata store format version {found} is newer than this metaindex "
            f"({metaindex.__version__}) reads (up to {FORMAT_VERSION}); upgrade metaindex "
            "(pip install -U metaindex) to read this index"
        )
    if found not in READABLE_VERSIONS:
        raise UnsupportedVersionError(
            f"{where}: metadata format version {found} is xskipper's (versions 0-4); metaindex "
            f"reads versions {list(READABLE_VERSIONS)}; drop and rebuild the index with metaindex"
        )
    return found


# ---------------------------------------------------------------------------- canonical JSON


def _canonical(obj) -> bytes:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def seal_json(record: dict) -> bytes:
    """The record's canonical JSON with ``checksum`` = SHA-256 of the rest."""
    body = {k: v for k, v in record.items() if k != "checksum"}
    body["checksum"] = "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()
    return _canonical(body) + b"\n"


def unseal_json(data: bytes, where: str) -> dict:
    """Parse a sealed record: DecodeError if it is not one, UnsupportedVersionError if it is
    newer than we read, IntegrityError if its checksum does not match."""
    try:
        record = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DecodeError(f"{where}: not a JSON record ({type(exc).__name__}: {exc})") from None
    if not isinstance(record, dict):
        raise DecodeError(f"{where}: a record is a JSON object, not {type(record).__name__}")
    check_format_version(record.get("format_version"), where)
    checksum = record.pop("checksum", None)
    if not isinstance(checksum, str) or not checksum.startswith("sha256:"):
        raise DecodeError(f"{where}: record has no 'checksum'")
    try:
        expected = "sha256:" + hashlib.sha256(_canonical(record)).hexdigest()
    except ValueError as exc:  # NaN / infinity smuggled in
        raise DecodeError(f"{where}: {exc}") from None
    if checksum != expected:
        raise IntegrityError(
            f"{where}: checksum mismatch (the record was modified after it was written)"
        )
    return record


def require_field(record: dict, key: str, kind, where: str):
    """``record[key]`` if it is a ``kind`` (ints: natural numbers, not bools), else DecodeError."""
    value = record.get(key)
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise DecodeError(
            f"{where}: field {key!r} must be {getattr(kind, '__name__', kind)}, not {value!r:.80}"
        )
    return value


def _str_list(value, what: str, where: str) -> tuple:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecodeError(f"{where}: {what} must be a list of strings")
    return tuple(value)


def unreadable_record(record, where: str):
    """A data file a build / refresh could not read, as the log records it: ``[size, mtime,
    reason]`` (a tuple here), or (format 8, encrypted store) one sealed string holding
    ``[name, size, mtime, reason]``."""
    if isinstance(record, str):
        return record
    if not (
        isinstance(record, (list, tuple))
        and len(record) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) for v in record[:2])
        and isinstance(record[2], str)
    ):
        raise DecodeError(
            f"{where}: an unreadable file is [size, mtime, reason], not {record!r:.80}"
        )
    return tuple(record)


def _unreadable(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise DecodeError(f"{where}: 'unreadable' must be an object")
    return {name: unreadable_record(r, where) for name, r in value.items()}


# ---------------------------------------------------------------------------- definitions


def _check_param(key, value, owner: str):
    if not isinstance(key, str) or not key:
        raise TypeError(f"{owner}: parameter names are non-empty str, not {key!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{owner}: parameter {key!r} must be finite, not {value!r}")
    if not isinstance(value, (str, int, float, bool)):
        raise TypeError(
            f"{owner}: parameter {key!r} must be str, int, float or bool, "
            f"not {type(value).__name__}"
        )


@dataclass(frozen=True)
class IndexDef:
    """One index as the store records it (xskipper's ``{name, cols, params, key_metadata}``).

    Attributes:
        name: the index kind, lower-case (``"minmax"``, ``"valuelist"``, ``"bloom"``, or one
            registered with ``metaindex.index.register_index_kind``).
        cols: the indexed column paths, in order (nested fields dotted: ``"a.b"``).
        params: the kind's parameters (str / int / float / bool values).
        key_metadata: label (master key id) of the key encrypting this index's column; None
            for a plaintext index. Never key material.
    """

    name: str
    cols: tuple
    params: Mapping[str, Any] = field(default_factory=dict)
    key_metadata: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not _INDEX_NAME.match(self.name):
            raise ValueError(f"index name must match [a-z][a-z0-9_]*, not {self.name!r}")
        cols = (self.cols,) if isinstance(self.cols, str) else tuple(self.cols)
        if not cols or not all(isinstance(c, str) and c for c in cols):
            raise ValueError(
                f"index {self.name!r}: cols must be non-empty column paths, not {self.cols!r}"
            )
        object.__setattr__(self, "cols", cols)
        if not isinstance(self.params, Mapping):
            raise TypeError(f"index {self.name!r}: params must be a mapping")
        for k, v in self.params.items():
            _check_param(k, v, f"index {self.name!r}")
        object.__setattr__(self, "params", dict(self.params))
        if self.key_metadata is not None and (
            not isinstance(self.key_metadata, str) or not self.key_metadata
        ):
            raise TypeError("key_metadata is a master key label (non-empty str) or None")

    def __hash__(self):
        return hash((self.name, self.cols, tuple(sorted(self.params.items())), self.key_metadata))

    @property
    def storage_name(self) -> str:
        """The part-file column holding this index's metadata (version-2 escaping:
        ``temp_minmax_4``; :func:`metaindex.index.storage_name`, ``Index.key``), recorded as
        ``column`` in the log. The table's column is ``cols[0]`` (``Index.column``)."""
        return index_column_name(self.name, self.cols)

    @classmethod
    def of(cls, obj) -> IndexDef:
        """An IndexDef from itself, a dict, or any object with ``name``, ``cols``, ``params``
        (and optionally ``key_metadata``) such as the index kinds of ``metaindex.index``."""
        if isinstance(obj, IndexDef):
            return obj
        if isinstance(obj, Mapping):
            return cls(obj["name"], obj["cols"], obj.get("params") or {}, obj.get("key_metadata"))
        try:
            return cls(
                obj.name, obj.cols, dict(obj.params or {}), getattr(obj, "key_metadata", None)
            )
        except AttributeError:
            raise TypeError(
                "an index definition is an IndexDef, a dict or an object with "
                f"name, cols and params, not {type(obj).__name__}"
            ) from None

    def to_json(self) -> dict:
        out = {
            "name": self.name,
            "cols": list(self.cols),
            "params": dict(self.params),
            "column": self.storage_name,
        }
        if self.key_metadata is not None:
            out["key_metadata"] = self.key_metadata
        return out

    @classmethod
    def from_json(cls, data, where: str) -> IndexDef:
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: an index definition must be an object")
        try:
            index = cls(
                require_field(data, "name", str, where),
                _str_list(data.get("cols"), "cols", where),
                require_field(data, "params", dict, where),
                data.get("key_metadata"),
            )
        except (TypeError, ValueError) as exc:
            raise DecodeError(f"{where}: bad index definition: {exc}") from None
        if data.get("column", index.storage_name) != index.storage_name:
            raise DecodeError(
                f"{where}: index column {data['column']!r} does not match its "
                f"definition ({index.storage_name!r})"
            )
        return index


def normalize_index_defs(defs) -> tuple:
    """Normalise a sequence of index definitions; two defs on one column name are an error."""
    if defs is None:
        raise TypeError("index_defs is required (a sequence of index definitions)")
    out = tuple(IndexDef.of(d) for d in defs)
    seen: dict[str, IndexDef] = {}
    for d in out:
        if d.storage_name in seen:
            raise ValueError(
                f"indexes {seen[d.storage_name]} and {d} both map to column {d.storage_name!r}"
            )
        seen[d.storage_name] = d
    return out


@dataclass(frozen=True)
class EncryptionLabels:
    """How a store's parts are encrypted, by key LABEL (master key id) only.

    Attributes:
        footer_key: label of the footer master key; also encrypts obj_* and virtual_* columns.
        plaintext_footer: signed plaintext footer instead of an encrypted one.
        algorithm: "AES_GCM_V1" or "AES_GCM_CTR_V1".

    Index columns are encrypted with their :attr:`IndexDef.key_metadata` label; an index
    without one stays plaintext.
    """

    footer_key: str
    plaintext_footer: bool = False
    algorithm: str = "AES_GCM_V1"

    def __post_init__(self):
        if not isinstance(self.footer_key, str) or not self.footer_key:
            raise TypeError("footer_key is a master key label (non-empty str)")
        if self.algorithm not in ("AES_GCM_V1", "AES_GCM_CTR_V1"):
            raise ValueError(
                f"algorithm must be AES_GCM_V1 or AES_GCM_CTR_V1, not {self.algorithm!r}"
            )
        object.__setattr__(self, "plaintext_footer", bool(self.plaintext_footer))

    def to_json(self) -> dict:
        return {
            "footer_key": self.footer_key,
            "plaintext_footer": self.plaintext_footer,
            "algorithm": self.algorithm,
        }

    @classmethod
    def from_json(cls, data, where: str) -> EncryptionLabels | None:
        if data is None:
            return None
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: 'encryption' must be an object or null")
        try:
            return cls(
                require_field(data, "footer_key", str, where),
                require_field(data, "plaintext_footer", bool, where),
                require_field(data, "algorithm", str, where),
            )
        except (TypeError, ValueError) as exc:
            raise DecodeError(f"{where}: bad encryption labels: {exc}") from None


class KeyAccess:
    """How this process reaches the keys behind the labels (never persisted).

    Args:
        kms_client_factory: ``f(KmsConnectionConfig) -> KmsClient``, as for
            ``metaindex.crypto.CryptoFactory``; a module-level function keeps this object
            picklable for process pools.
        kms_connection_config: the ``KmsConnectionConfig`` (default: an empty one).
        double_wrapping: wrap data keys with KEKs (one KMS call per master key).
        data_key_length_bits: 128, 192 or 256.
    """

    def __init__(
        self,
        kms_client_factory: Callable,
        kms_connection_config=None,
        *,
        double_wrapping: bool = True,
        data_key_length_bits: int = 128,
    ):
        if not callable(kms_client_factory):
            raise TypeError("kms_client_factory must be callable(kms_connection_config)")
        from metaindex.crypto import KmsConnectionConfig

        self.kms_client_factory = kms_client_factory
        self.kms_connection_config = kms_connection_config or KmsConnectionConfig()
        self.double_wrapping = bool(double_wrapping)
        self.data_key_length_bits = int(data_key_length_bits)
        self._factory: CryptoFactory | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_factory"] = None  # caches and locks stay in their process
        return state

    def _crypto_factory(self):
        if self._factory is None:
            from metaindex.crypto import CryptoFactory

            self._factory = CryptoFactory(self.kms_client_factory)
        return self._factory

    def encryption_properties(self, labels: EncryptionLabels, column_keys: dict):
        """Fresh data keys for one part file; ``column_keys``: {label: [leaf paths]}."""
        from metaindex.crypto import EncryptionConfiguration

        config = EncryptionConfiguration(
            labels.footer_key,
            column_keys,
            encryption_algorithm=labels.algorithm,
            plaintext_footer=labels.plaintext_footer,
            double_wrapping=self.double_wrapping,
            data_key_length_bits=self.data_key_length_bits,
        )
        return self._crypto_factory().file_encryption_properties(self.kms_connection_config, config)

    def decryption_properties(self):
        return self._crypto_factory().file_decryption_properties(self.kms_connection_config)

    def __repr__(self) -> str:
        return f"KeyAccess({self.kms_client_factory!r}, {self.kms_connection_config!r})"


def require_key_access(key_access, what: str):
    if key_access is None:
        raise KeyAccessError(
            f"{what} is encrypted: open the store with "
            "key_access=KeyAccess(kms_client_factory, ...)"
        )
    return key_access


# ---------------------------------------------------------------------------- entries


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One indexed data file (object) of a snapshot.

    Attributes:
        name: obj_name, the file's path relative to the table root.
        size: bytes when indexed. mtime: modification time when indexed (ms since the epoch).
        rows: rows in the file. part: the part file holding its metadata row.
        etag: the object store's ETag (or version id) when indexed; None when unknown (local
            files, entries written before format 6).
    """

    name: str
    size: int
    mtime: int
    rows: int
    part: str
    etag: str | None = None


@dataclass(frozen=True)
class PartRecord:
    """A part file as the log records it.

    Format 7 (``summary`` set): the part is its own object list; the log keeps its size,
    hash, row count, the obj_size total of its rows (``live_bytes``) and its summary row
    (:mod:`metaindex.store.summary`). Formats 5 and 6 (``summary`` None): the log lists the
    part's objects (``objects``, :class:`FileEntry` in file order).
    """

    path: str  # relative to the table directory: "parts/<32 hex>.parquet"
    rows: int  # rows in the file (live or not)
    bytes: int
    sha256: str
    objects: tuple = ()  # FileEntry, in file order (format 5/6 records only)
    live_bytes: int | None = None  # format 7: obj_size total of the rows
    summary: pa.Table | None = field(default=None, compare=False)  # format 7: one row

    @property
    def listed(self) -> bool:
        """Whether the log lists this part's objects (a format 5/6 record)."""
        return self.summary is None

    def to_json(self) -> dict:
        out = {"path": self.path, "rows": self.rows, "bytes": self.bytes, "sha256": self.sha256}
        if not self.listed:
            from metaindex.store.summary import encode_summary

            out["live_bytes"] = self.live_bytes
            out["summary"] = encode_summary(self.summary)
            return out
        objs = self.objects
        columns = {
            "name": [o.name for o in objs],
            "size": [o.size for o in objs],
            "mtime": [o.mtime for o in objs],
            "rows": [o.rows for o in objs],
        }
        if any(o.etag is not None for o in objs):
            columns["etag"] = [o.etag for o in objs]
        out["objects"] = columns
        return out

    @classmethod
    def from_json(cls, data, where: str, version: int = FORMAT_VERSION) -> PartRecord:
        """A record of either form (a format-7 one only in a record of ``version`` >= 7)."""
        from metaindex.store.layout import is_part_name

        if not isinstance(data, dict):
            raise DecodeError(f"{where}: a part record must be an object")
        path = require_field(data, "path", str, where)
        if not is_part_name(path):
            raise DecodeError(f"{where}: part path {path!r} is not parts/<32 hex>.parquet")
        sha = require_field(data, "sha256", str, where)
        if not _SHA256.match(sha):
            raise DecodeError(f"{where}: part {path}: sha256 is not 64 hex digits")
        rows = require_field(data, "rows", int, where)
        size = require_field(data, "bytes", int, where)
        if "objects" not in data and version >= 7:
            from metaindex.store.summary import decode_summary

            return cls(
                path,
                rows,
                size,
                sha,
                (),
                require_field(data, "live_bytes", int, where),
                decode_summary(data.get("summary"), f"{where}: part {path}"),
            )
        objs = data.get("objects")
        if not isinstance(objs, dict):
            raise DecodeError(f"{where}: part {path}: 'objects' must be an object of columns")
        names = _str_list(objs.get("name"), "objects.name", where)
        columns = []
        for key in ("size", "mtime", "rows"):
            col = objs.get(key)
            if (
                not isinstance(col, list)
                or len(col) != len(names)
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in col)
            ):
                raise DecodeError(
                    f"{where}: part {path}: objects.{key} must be {len(names)} integers"
                )
            columns.append(col)
        etags = objs.get("etag", [None] * len(names))
        if (
            not isinstance(etags, list)
            or len(etags) != len(names)
            or not all(e is None or isinstance(e, str) for e in etags)
        ):
            raise DecodeError(
                f"{where}: part {path}: objects.etag must be {len(names)} strings or nulls"
            )
        entries = tuple(
            FileEntry(n, s, m, r, path, e)
            for n, s, m, r, e in zip(names, *columns, etags, strict=True)
        )
        return cls(path, rows, size, sha, entries)


@dataclass(frozen=True)
class DeadObjects:
    """Objects of one part that stop being live in a commit (format 7): removed, or
    superseded by a row in an added part.

    Attributes:
        part: the part's relative path. names: the obj_names. bytes: their obj_size total.
    """

    part: str
    names: tuple
    bytes: int

    def to_json(self) -> dict:
        return {"part": self.part, "names": list(self.names), "bytes": self.bytes}

    @classmethod
    def from_json(cls, data, where: str) -> DeadObjects:
        if not isinstance(data, dict):
            raise DecodeError(f"{where}: a dead_objects record must be an object")
        names = _str_list(data.get("names"), "dead_objects.names", where)
        if not names or len(set(names)) != len(names):
            raise DecodeError(f"{where}: dead_objects.names must be distinct and not empty")
        return cls(
            require_field(data, "part", str, where), names, require_field(data, "bytes", int, where)
        )


@dataclass(frozen=True)
class LogEntry:
    """One commit: the state change from ``version - 1`` to ``version``.

    Applying an entry: remove ``removed_parts`` (with every object living in them), remove
    ``removed_objects`` and ``superseded_objects`` (format 7: as ``dead_objects`` says, part by
    part), then add every object of ``added_parts``. ``index_defs``, ``encryption`` and
    ``table`` are the state after the commit. A ``repair`` entry's ``reset`` is the whole
    state instead (a checkpoint record): it applies on no prior state.

    In an encrypted store with a log key (format 8), object names are tokens
    (:mod:`metaindex.store.logkey`), except deaths in a listed (format 5/6) part, whose
    names the log already holds; ``unreadable`` records and ``sealed_details`` are sealed.
    """

    version: int
    timestamp: int  # ms since the epoch, UTC; strictly increasing
    operation: str
    table: TableIdentity
    index_defs: tuple
    encryption: EncryptionLabels | None
    added_parts: tuple = ()
    removed_parts: tuple = ()
    removed_objects: tuple = ()
    superseded_objects: tuple = ()
    details: dict = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    dead_objects: tuple = ()  # DeadObjects (format 7)
    # format 8 (read from ``details`` in older entries: unreadable, unreadable_cleared)
    unreadable: dict = field(default_factory=dict)  # name or token -> record
    unreadable_cleared: tuple = ()  # names or tokens
    unreadable_all: dict | None = None  # every record, replacing the state's (see State)
    sealed_details: str | None = None  # an encrypted store's details (all but the schema)
    log_key: str | None = None  # key material of an encrypted store's log key
    doomed_parts: tuple = ()  # vacuum: the parts it deletes once committed
    log_floor: int | None = None  # vacuum / repair: versions below it are gone
    reset: dict | None = field(default=None, compare=False)  # repair: the state, whole

    @property
    def added_objects(self) -> int:
        """How many objects the entry adds (the rows of its added parts)."""
        return sum(p.rows for p in self.added_parts)

    def to_json(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "version": self.version,
            "timestamp": self.timestamp,
            "operation": self.operation,
            "table": self.table.to_json(),
            "index_defs": [d.to_json() for d in self.index_defs],
            "encryption": None if self.encryption is None else self.encryption.to_json(),
            "added_parts": [p.to_json() for p in self.added_parts],
            "removed_parts": list(self.removed_parts),
            "removed_objects": list(self.removed_objects),
            "superseded_objects": list(self.superseded_objects),
            "dead_objects": [d.to_json() for d in self.dead_objects],
            "details": dict(self.details),
            **self._format8_json(),
        }

    def _format8_json(self) -> dict:
        out: dict[str, Any] = {}
        if self.unreadable:
            out["unreadable"] = {
                n: r if isinstance(r, str) else list(r) for n, r in self.unreadable.items()
            }
        if self.unreadable_cleared:
            out["unreadable_cleared"] = list(self.unreadable_cleared)
        if self.unreadable_all is not None:
            out["unreadable_all"] = {
                n: r if isinstance(r, str) else list(r) for n, r in self.unreadable_all.items()
            }
        for key in ("sealed_details", "log_key", "log_floor", "reset"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.doomed_parts:
            out["doomed_parts"] = list(self.doomed_parts)
        return out

    @classmethod
    def from_json(cls, record: dict, where: str) -> LogEntry:
        operation = require_field(record, "operation", str, where)
        if operation not in OPERATIONS:
            raise DecodeError(f"{where}: unknown operation {operation!r}")
        defs = record.get("index_defs")
        if not isinstance(defs, list):
            raise DecodeError(f"{where}: 'index_defs' must be a list")
        parts = record.get("added_parts")
        if not isinstance(parts, list):
            raise DecodeError(f"{where}: 'added_parts' must be a list")
        details = record.get("details", {})
        if not isinstance(details, dict):
            raise DecodeError(f"{where}: 'details' must be an object")
        version = record["format_version"]
        dead = record.get("dead_objects", [])
        if not isinstance(dead, list) or (dead and version < 7):
            raise DecodeError(f"{where}: 'dead_objects' must be a list (format 7)")
        added = tuple(PartRecord.from_json(p, where, version) for p in parts)
        if version >= 7 and any(p.listed for p in added):
            raise DecodeError(f"{where}: a format-7 entry lists no objects in added_parts")
        extra = _format8_fields(record if version >= 8 else details, version, where)
        return cls(
            version=require_field(record, "version", int, where),
            timestamp=require_field(record, "timestamp", int, where),
            operation=operation,
            table=TableIdentity.from_json(record.get("table"), where),
            index_defs=tuple(IndexDef.from_json(d, where) for d in defs),
            encryption=EncryptionLabels.from_json(record.get("encryption"), where),
            added_parts=added,
            removed_parts=_str_list(record.get("removed_parts"), "removed_parts", where),
            removed_objects=_str_list(record.get("removed_objects"), "removed_objects", where),
            superseded_objects=_str_list(
                record.get("superseded_objects"), "superseded_objects", where
            ),
            details=details,
            format_version=version,
            dead_objects=tuple(DeadObjects.from_json(d, where) for d in dead),
            **extra,
        )


def _format8_fields(source: dict, version: int, where: str) -> dict:
    """The format-8 fields of an entry (``source``: the record; for older entries its details,
    where ``unreadable`` and ``unreadable_cleared`` were kept)."""
    from metaindex.store.layout import is_part_name

    out: dict[str, Any] = {
        "unreadable": _unreadable(source.get("unreadable") or {}, where),
        "unreadable_cleared": _str_list(
            source.get("unreadable_cleared") or [], "'unreadable_cleared'", where
        ),
    }
    if version < 8:
        if any(isinstance(r, str) for r in out["unreadable"].values()):
            raise DecodeError(f"{where}: sealed unreadable records need format 8")
        return out
    for key, kind in (
        ("sealed_details", str),
        ("log_key", str),
        ("log_floor", int),
        ("reset", dict),
    ):
        if source.get(key) is not None:
            out[key] = require_field(source, key, kind, where)
    if source.get("unreadable_all") is not None:
        out["unreadable_all"] = _unreadable(source["unreadable_all"], where)
    doomed = _str_list(source.get("doomed_parts") or [], "'doomed_parts'", where)
    if not all(is_part_name(p) for p in doomed):
        raise DecodeError(f"{where}: doomed_parts must be parts/<32 hex>.parquet paths")
    out["doomed_parts"] = doomed
    return out
