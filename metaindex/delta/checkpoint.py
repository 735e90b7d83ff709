"""Reading Delta checkpoints in every form (PROTOCOL.md, "Checkpoints"): classic single-file
Parquet, multi-part Parquet, v2 (UUID-named JSON or Parquet files, and classic-named files that
follow the v2 spec) with their ``checkpointMetadata`` and the ``sidecar`` files in
``_delta_log/_sidecars/`` they point to; and ``_last_checkpoint`` with its optional MD5
checksum ("Last Checkpoint File Schema", "JSON checksum").

Parquet files are read with our reader (:mod:`metaindex.parquet`), only the action columns.
A file our reader cannot read is reported as such (the reader's error, naming the file), never
read another way.
"""

from __future__ import annotations

import hashlib
import json
from urllib.parse import quote, unquote

from metaindex.delta.actions import (
    CHECKPOINT_COLUMNS,
    Actions,
    Where,
    parse_json_actions,
    parse_row_actions,
)
from metaindex.delta.names import LAST_CHECKPOINT, SIDECAR_DIR, Checkpoint
from metaindex.errors import MetaIndexError, UnsupportedFeatureError

__all__ = ["read_checkpoint", "read_last_checkpoint", "last_checkpoint_checksum"]

_PM_COLUMNS = ("metaData", "protocol")


def _read_parquet_actions(data: bytes, where: Where, wanted: tuple = CHECKPOINT_COLUMNS) -> Actions:
    from metaindex.parquet import ParquetFile

    try:
        pf = ParquetFile(data)
        present = [c for c in wanted if c in pf.schema_arrow.names]
        table = pf.read(columns=present)
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(
            f"{where.path}: metaindex's Parquet reader cannot read this checkpoint file: {exc}"
        ) from exc
    except MetaIndexError as exc:
        raise where.damage(f"the checkpoint file cannot be read: {exc}") from exc
    columns = {
        name: _rows(table.column(name), _FILE_FIELDS if name in ("add", "remove") else None)
        for name in present
    }
    return parse_row_actions(columns, where)


_FILE_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "deletionVector",
    "deletionTimestamp",
)
"""The fields of ``add`` / ``remove`` a snapshot uses (``stats``, ``tags`` and the parsed
stats are not converted)."""


def _rows(column, fields) -> list:
    """A struct column as one dict (or None) per row, with only ``fields`` when given."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if fields is None or not hasattr(array, "field"):
        return array.to_pylist()
    present = [f for f in fields if array.type.get_field_index(f) >= 0]
    children = [array.field(f).to_pylist() for f in present]
    valid = array.is_valid().to_pylist()
    return [
        dict(zip(present, values, strict=True)) if ok else None
        for ok, values in zip(
            valid, zip(*children, strict=True) if children else [()] * len(valid), strict=True
        )
    ]


def _merge(into: Actions, part: Actions) -> None:
    into.files.extend(part.files)
    into.protocol = part.protocol or into.protocol
    into.metadata = part.metadata or into.metadata
    into.txns.update(part.txns)
    into.domains.update(part.domains)
    into.sidecars.extend(part.sidecars)
    if part.checkpoint_version is not None:
        into.checkpoint_version = part.checkpoint_version


def read_checkpoint(
    storage,
    log_dir: str,
    checkpoint: Checkpoint,
    table: str | None,
    protocol_and_metadata_only: bool = False,
) -> Actions:
    """Every action of a complete checkpoint (all parts, and the sidecars it names); with
    ``protocol_and_metadata_only``, only its ``protocol`` and ``metaData`` (their Parquet
    columns alone; no sidecar is read).

    Raises:
        DeltaLogDamageError: a part, or a sidecar, that is missing, cannot be read, has the
            wrong size, or a v2 checkpoint whose ``checkpointMetadata`` is missing or names
            another version.
        UnsupportedFeatureError: our Parquet reader cannot read a (valid) checkpoint file.
    """
    out = Actions()
    for name in checkpoint.files:
        where = Where(table, checkpoint.version, f"_delta_log/{name}")
        data = _read(storage, storage.join(log_dir, name), where)
        part = (
            parse_json_actions(data, where, checkpoint=True)
            if name.endswith(".json")
            else _read_parquet_actions(
                data, where, _PM_COLUMNS if protocol_and_metadata_only else CHECKPOINT_COLUMNS
            )
        )
        _merge(out, part)
    where = Where(table, checkpoint.version, f"_delta_log/{checkpoint.files[0]}")
    if checkpoint.kind == "v2" and out.checkpoint_version is None:
        raise where.damage("a UUID-named (v2) checkpoint without a checkpointMetadata action")
    if protocol_and_metadata_only:
        if out.protocol is None or out.metadata is None:
            raise where.damage("a checkpoint without a protocol or metaData action")
        return out
    if out.checkpoint_version is not None and out.checkpoint_version != checkpoint.version:
        raise where.damage(
            f"checkpointMetadata says version {out.checkpoint_version}, the "
            f"file name {checkpoint.version}"
        )
    if out.protocol is None or out.metadata is None:
        raise where.damage("a checkpoint without a protocol or metaData action")
    for path, size in out.sidecars:
        name = unquote(path).rsplit("/", 1)[-1]
        side = Where(table, checkpoint.version, f"_delta_log/{SIDECAR_DIR}/{name}")
        data = _read(storage, storage.join(log_dir, SIDECAR_DIR, name), side)
        if len(data) != size:
            raise side.damage(f"the sidecar holds {len(data)} bytes, the checkpoint says {size}")
        part = _read_parquet_actions(data, side)
        out.files.extend(part.files)
    return out


def _read(storage, path: str, where: Where) -> bytes:
    try:
        return storage.read(path)
    except FileNotFoundError:
        raise where.damage("missing") from None


class _Raw(str):
    """A JSON number kept as written (the checksum canonicalises numbers as they appear)."""


def last_checkpoint_checksum(text: str) -> str:
    """The MD5 checksum of a ``_last_checkpoint`` JSON text, as PROTOCOL.md's "JSON checksum"
    canonicalises it (the top-level ``checksum`` key left out)."""
    obj = json.loads(text, parse_float=_Raw, parse_int=_Raw, parse_constant=lambda c: _Raw(c))
    pairs: list = []

    def encode(s: str) -> str:
        return '"' + quote(s, safe="-._~") + '"'

    def walk(value, path: list) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if not path and key == "checksum":
                    continue
                walk(item, path + [encode(key)])
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, path + [str(i)])
        else:
            if value is None:
                leaf = "null"
            elif isinstance(value, bool):
                leaf = "true" if value else "false"
            elif isinstance(value, _Raw):
                leaf = str(value)
            else:
                leaf = encode(value)
            pairs.append(("+".join(path), leaf))

    walk(obj, [])
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    canonical = ",".join(f"{p}={v}" for p, v in pairs)
    return hashlib.md5(canonical.encode("utf-8")).hexdigest()


def read_last_checkpoint(storage, log_dir: str) -> dict | None:
    """``_last_checkpoint`` as a dict, or None when it is missing, does not parse, has no
    integer ``version``, or fails its checksum: it is only a hint (Delta readers then list the
    log), never a reason to fail."""
    try:
        text = storage.read(storage.join(log_dir, LAST_CHECKPOINT)).decode("utf-8")
        obj = json.loads(text)
    except (FileNotFoundError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if (
        not isinstance(obj, dict)
        or not isinstance(obj.get("version"), int)
        or isinstance(obj.get("version"), bool)
    ):
        return None
    try:
        if isinstance(obj.get("checksum"), str) and obj["checksum"] != last_checkpoint_checksum(
            text
        ):
            return None
    except RecursionError:
        return None
    return obj
