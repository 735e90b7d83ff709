"""Delta log actions (PROTOCOL.md, "Actions"), parsed from JSON lines or checkpoint rows into
typed records, every field checked: a missing required field or a value of the wrong type is a
:class:`~metaindex.errors.DeltaLogDamageError` that names the file (and line), never a crash or
a silently wrong record. Unknown actions and unknown fields are ignored, as the protocol asks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from metaindex.errors import DeltaLogDamageError

__all__ = [
    "DeletionVector",
    "Protocol",
    "Metadata",
    "CommitInfo",
    "FileAction",
    "Actions",
    "Where",
    "parse_json_actions",
    "parse_row_actions",
]


@dataclass(frozen=True)
class Where:
    """Which log file (and line) a value came from, for the errors that name it."""

    table: str | None
    version: int | None
    path: str
    line: int | None = None
    unit: str = "line"

    def at_line(self, line: int, unit: str = "line") -> Where:
        return Where(self.table, self.version, self.path, line, unit)

    def damage(self, message: str) -> DeltaLogDamageError:
        where = f"{self.path} {self.unit} {self.line}" if self.line is not None else self.path
        return DeltaLogDamageError(
            f"{where}: {message}", table=self.table, version=self.version, path=self.path
        )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_KINDS = {"str": str, "bool": bool, "dict": dict, "list": list}


def _get(obj: dict, key: str, kind: str, where: Where, action: str, required: bool = True):
    value = obj.get(key)
    if value is None:
        if required:
            raise where.damage(f"{action} action without {key!r}")
        return None
    ok = _is_int(value) if kind == "int" else isinstance(value, _KINDS[kind])
    if not ok:
        raise where.damage(
            f"{action}.{key} must be a {kind}, not {type(value).__name__} {value!r:.80}"
        )
    return value


def _string_map(
    obj: dict, key: str, where: Where, action: str, required: bool, null_values: bool = True
) -> dict:
    value = obj.get(key)
    if value is None:
        if required:
            raise where.damage(f"{action} action without {key!r}")
        return {}
    if isinstance(value, list):  # a Parquet map read as (key, value) pairs
        try:
            value = dict(value)
        except (TypeError, ValueError):
            raise where.damage(f"{action}.{key} is not a map") from None
    if not isinstance(value, dict):
        raise where.damage(f"{action}.{key} must be a map of strings, not {type(value).__name__}")
    for k, v in value.items():
        if not isinstance(k, str) or not (isinstance(v, str) or (v is None and null_values)):
            raise where.damage(
                f"{action}.{key} must map strings to strings, found {k!r}: {v!r:.80}"
            )
    return value


@dataclass(frozen=True)
class DeletionVector:
    """A deletion vector descriptor (PROTOCOL.md, "Deletion Vectors"): which rows of a data
    file are deleted; the rows stay in the file, so an index built from the file covers a
    superset of the live rows."""

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @property
    def unique_id(self) -> str:
        """The id that, with the data file's path, keys a logical file in log replay."""
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    def file_path(self) -> str | None:
        """Where the vector is stored: a path relative to the table root (``u``), the absolute
        path (``p``), or None for one stored inline in the log (``i``)."""
        if self.storage_type == "i":
            return None
        if self.storage_type == "p":
            return self.path_or_inline_dv
        encoded = self.path_or_inline_dv
        prefix, uuid_z85 = encoded[:-20], encoded[-20:]
        uuid = _z85_decode(uuid_z85)
        text = uuid.hex()
        name = (
            f"deletion_vector_{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}.bin"
        )
        return f"{prefix}/{name}" if prefix else name


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def _z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise ValueError("Z85 text length must be a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for c in text[i : i + 5]:
            if c not in _Z85_INDEX:
                raise ValueError(f"{c!r} is not a Z85 character")
            value = value * 85 + _Z85_INDEX[c]
        if value >= 1 << 32:
            raise ValueError("Z85 group out of range")
        out += value.to_bytes(4, "big")
    return bytes(out)


def _deletion_vector(obj, where: Where, action: str) -> DeletionVector | None:
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise where.damage(f"{action}.deletionVector must be an object")
    name = f"{action}.deletionVector"
    storage = _get(obj, "storageType", "str", where, name)
    if storage not in ("u", "i", "p"):
        raise where.damage(f"{name}.storageType {storage!r} is not one of 'u', 'i', 'p'")
    dv = DeletionVector(
        storage,
        _get(obj, "pathOrInlineDv", "str", where, name),
        _get(obj, "offset", "int", where, name, required=False),
        _get(obj, "sizeInBytes", "int", where, name),
        _get(obj, "cardinality", "int", where, name),
    )
    if dv.size_in_bytes < 0 or dv.cardinality < 0 or (dv.offset is not None and dv.offset < 0):
        raise where.damage(f"{name} has a negative size, cardinality or offset")
    if storage == "u":
        try:
            dv.file_path()
        except ValueError as exc:
            raise where.damage(f"{name}.pathOrInlineDv is not a Z85 UUID: {exc}") from None
    return dv


@dataclass(frozen=True)
class FileAction:
    """An ``add`` or ``remove`` as written in the log (path still URL-encoded, partition
    values still strings keyed by physical name)."""

    kind: str
    path: str
    partition_values: dict
    size: int | None
    modification_time: int | None
    data_change: bool
    deletion_vector: DeletionVector | None
    deletion_timestamp: int | None = None

    @property
    def dv_id(self) -> str | None:
        return None if self.deletion_vector is None else self.deletion_vector.unique_id


def _file_action(kind: str, obj, where: Where, checkpoint: bool) -> FileAction:
    if not isinstance(obj, dict):
        raise where.damage(f"{kind} action must be an object")
    path = _get(obj, "path", "str", where, kind)
    if not path:
        raise where.damage(f"{kind} action with an empty path")
    is_add = kind == "add"
    size = _get(obj, "size", "int", where, kind, required=is_add)
    if size is not None and size < 0:
        raise where.damage(f"{kind}.size {size} is negative")
    # checkpoints written by some writers leave dataChange null: it has no meaning there
    data_change = _get(obj, "dataChange", "bool", where, kind, required=not checkpoint)
    return FileAction(
        kind,
        path,
        _string_map(obj, "partitionValues", where, kind, required=is_add and not checkpoint),
        size,
        _get(obj, "modificationTime", "int", where, kind, required=is_add),
        bool(data_change),
        _deletion_vector(obj.get("deletionVector"), where, kind),
        None if is_add else _get(obj, "deletionTimestamp", "int", where, kind, required=False),
    )


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action: reader/writer versions and features (None when the version
    has no feature lists: reader < 3, writer < 7)."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset | None = None
    writer_features: frozenset | None = None


def _features(obj: dict, key: str, where: Where) -> frozenset | None:
    value = _get(obj, key, "list", where, "protocol", required=False)
    if value is None:
        return None
    if not all(isinstance(f, str) for f in value):
        raise where.damage(f"protocol.{key} must be a list of strings")
    return frozenset(value)


def _protocol(obj, where: Where) -> Protocol:
    if not isinstance(obj, dict):
        raise where.damage("protocol action must be an object")
    protocol = Protocol(
        _get(obj, "minReaderVersion", "int", where, "protocol"),
        _get(obj, "minWriterVersion", "int", where, "protocol"),
        _features(obj, "readerFeatures", where),
        _features(obj, "writerFeatures", where),
    )
    if protocol.min_reader_version < 1 or protocol.min_writer_version < 1:
        raise where.damage("protocol versions must be at least 1")
    return protocol


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action: the table's id, schema (``schema_string``, Delta's JSON form),
    partition columns, configuration (table properties) and format."""

    id: str
    schema_string: str
    partition_columns: tuple
    configuration: dict = field(default_factory=dict)
    format_provider: str = "parquet"
    format_options: dict = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None


def _metadata(obj, where: Where) -> Metadata:
    if not isinstance(obj, dict):
        raise where.damage("metaData action must be an object")
    fmt = obj.get("format") or {}
    if not isinstance(fmt, dict):
        raise where.damage("metaData.format must be an object")
    columns = _get(obj, "partitionColumns", "list", where, "metaData")
    if not all(isinstance(c, str) for c in columns):
        raise where.damage("metaData.partitionColumns must be a list of strings")
    return Metadata(
        _get(obj, "id", "str", where, "metaData"),
        _get(obj, "schemaString", "str", where, "metaData"),
        tuple(columns),
        _string_map(obj, "configuration", where, "metaData", required=False, null_values=False),
        _get(fmt, "provider", "str", where, "metaData.format", required=False) or "parquet",
        _string_map(fmt, "options", where, "metaData.format", required=False, null_values=False),
        _get(obj, "name", "str", where, "metaData", required=False),
        _get(obj, "description", "str", where, "metaData", required=False),
        _get(obj, "createdTime", "int", where, "metaData", required=False),
    )


@dataclass(frozen=True)
class CommitInfo:
    """What a commit says about itself (``commitInfo``; any JSON, so every field optional):
    the operation (``WRITE``, ``DELETE``, ``MERGE``, ``OPTIMIZE``...), its parameters, the
    writer's wall-clock ``timestamp`` and the ``inCommitTimestamp`` (ms) where enabled."""

    operation: str | None = None
    operation_parameters: dict = field(default_factory=dict)
    timestamp: int | None = None
    in_commit_timestamp: int | None = None
    engine_info: str | None = None


def _commit_info(obj) -> CommitInfo:
    if not isinstance(obj, dict):
        return CommitInfo()
    params = obj.get("operationParameters")
    ict = obj.get("inCommitTimestamp")
    ts = obj.get("timestamp")
    return CommitInfo(
        obj.get("operation") if isinstance(obj.get("operation"), str) else None,
        dict(params) if isinstance(params, dict) else {},
        ts if _is_int(ts) else None,
        ict if _is_int(ict) else None,
        obj.get("engineInfo") if isinstance(obj.get("engineInfo"), str) else None,
    )


@dataclass
class Actions:
    """The actions of one log file (a commit, a compaction, a checkpoint or sidecar part), in
    file order where order matters (``files``)."""

    files: list = field(default_factory=list)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict = field(default_factory=dict)
    domains: dict = field(default_factory=dict)
    commit_info: CommitInfo | None = None
    commit_info_first: bool = False
    checkpoint_version: int | None = None
    sidecars: list = field(default_factory=list)


def _add_action(
    out: Actions, name: str, value, where: Where, checkpoint: bool, position: int
) -> None:
    if value is None:
        return
    if name in ("add", "remove"):
        out.files.append(_file_action(name, value, where, checkpoint))
    elif name == "protocol":
        if out.protocol is not None and not checkpoint:
            raise where.damage("more than one protocol action in one commit")
        out.protocol = _protocol(value, where)
    elif name == "metaData":
        if out.metadata is not None and not checkpoint:
            raise where.damage("more than one metaData action in one commit")
        out.metadata = _metadata(value, where)
    elif name == "txn":
        if not isinstance(value, dict):
            raise where.damage("txn action must be an object")
        out.txns[_get(value, "appId", "str", where, "txn")] = _get(
            value, "version", "int", where, "txn"
        )
    elif name == "domainMetadata":
        if not isinstance(value, dict):
            raise where.damage("domainMetadata action must be an object")
        domain = _get(value, "domain", "str", where, "domainMetadata")
        removed = _get(value, "removed", "bool", where, "domainMetadata", required=False)
        out.domains[domain] = (
            None if removed else _get(value, "configuration", "str", where, "domainMetadata")
        )
    elif name == "commitInfo":
        out.commit_info = _commit_info(value)
        out.commit_info_first = position == 0
    elif name == "checkpointMetadata":
        if not isinstance(value, dict):
            raise where.damage("checkpointMetadata action must be an object")
        out.checkpoint_version = _get(value, "version", "int", where, "checkpointMetadata")
    elif name == "sidecar":
        if not isinstance(value, dict):
            raise where.damage("sidecar action must be an object")
        out.sidecars.append(
            (
                _get(value, "path", "str", where, "sidecar"),
                _get(value, "sizeInBytes", "int", where, "sidecar"),
            )
        )


def parse_json_actions(
    data: bytes, where: Where, checkpoint: bool = False, only: tuple = ()
) -> Actions:
    """The actions of a newline-delimited JSON log file (commit, log compaction, or a
    UUID-named JSON checkpoint when ``checkpoint``); with ``only`` (action names), just the
    lines that can hold those actions are parsed."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise where.damage(f"not UTF-8 at byte {exc.start}") from None
    out = Actions()
    position = 0
    wanted = tuple(f'"{name}"' for name in only)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or (wanted and not any(w in line for w in wanted)):
            continue
        at = where.at_line(number)
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise at.damage(f"not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise at.damage(f"an action must be a JSON object, not {type(obj).__name__}")
        for name, value in obj.items():
            _add_action(out, name, value, at, checkpoint, position)
        position += 1
    return out


CHECKPOINT_COLUMNS = (
    "add",
    "remove",
    "metaData",
    "protocol",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)


def parse_row_actions(columns: dict, where: Where) -> Actions:
    """The actions of checkpoint (or sidecar) rows: ``columns`` maps each action column present
    to its values as Python objects (one per row, None where the row holds another action)."""
    out = Actions()
    names = [n for n in CHECKPOINT_COLUMNS if n in columns]
    rows = len(columns[names[0]]) if names else 0
    for row in range(rows):
        at = where.at_line(row, "row")
        for name in names:
            _add_action(out, name, columns[name][row], at, True, row)
    return out
