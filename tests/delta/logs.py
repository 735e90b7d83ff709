"""Hand-written Delta logs for the cases no writer produces on demand (reconciliation corner
cases, damage, gaps, features), following PROTOCOL.md's action schemas."""

from __future__ import annotations

import json
import os


def schema(*fields, **metadata) -> str:
    """A schemaString of ``(name, type)`` fields (nullable, with ``metadata[name]``)."""
    return json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": n, "type": t, "nullable": True, "metadata": metadata.get(n, {})}
                for n, t in fields
            ],
        }
    )


def protocol(reader: int = 1, writer: int = 2, reader_features=None, writer_features=None):
    body = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        body["writerFeatures"] = list(writer_features)
    return {"protocol": body}


def metadata(schema_string: str, partition_columns=(), configuration=None, table_id="t-1"):
    return {
        "metaData": {
            "id": table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string,
            "partitionColumns": list(partition_columns),
            "configuration": configuration or {},
            "createdTime": 1,
        }
    }


def add(
    path: str, size: int = 100, partition_values=None, dv=None, data_change=True, mtime: int = 1_000
):
    body = {
        "path": path,
        "partitionValues": partition_values or {},
        "size": size,
        "modificationTime": mtime,
        "dataChange": data_change,
    }
    if dv is not None:
        body["deletionVector"] = dv
    return {"add": body}


def remove(path: str, size: int = 100, partition_values=None, dv=None, data_change=True):
    body = {
        "path": path,
        "deletionTimestamp": 5,
        "dataChange": data_change,
        "extendedFileMetadata": True,
        "partitionValues": partition_values or {},
        "size": size,
    }
    if dv is not None:
        body["deletionVector"] = dv
    return {"remove": body}


def dv(name: str = "ab^-aqEH.-t@S}K{vb[*k^", offset: int = 4, cardinality: int = 2):
    return {
        "storageType": "u",
        "pathOrInlineDv": name,
        "offset": offset,
        "sizeInBytes": 40,
        "cardinality": cardinality,
    }


def commit_info(operation: str = "WRITE", **extra):
    return {"commitInfo": {"operation": operation, "timestamp": 1, **extra}}


def write_commit(table: str, version: int, *actions, mtime_ms: int | None = None) -> str:
    log = os.path.join(table, "_delta_log")
    os.makedirs(log, exist_ok=True)
    path = os.path.join(log, f"{version:020d}.json")
    with open(path, "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))
    if mtime_ms is not None:
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def basic_table(table: str, versions: int = 4) -> None:
    """Version 0 creates ``a``/``b`` partitioned by ``p`` (string), each later version adds a
    file ``f<v>`` and removes the one before it."""
    write_commit(
        table,
        0,
        commit_info("CREATE TABLE"),
        protocol(),
        metadata(schema(("id", "long"), ("p", "string")), ["p"]),
        add("p=1/a", 10, {"p": "1"}),
        add("p=2/b", 20, {"p": "2"}),
        mtime_ms=1_000,
    )
    for v in range(1, versions):
        write_commit(
            table,
            v,
            commit_info(),
            add(f"p=1/f{v}", 100 + v, {"p": "1"}),
            *([remove(f"p=1/f{v - 1}", 100 + v - 1, {"p": "1"})] if v > 1 else []),
            mtime_ms=1_000 + 1_000 * v,
        )
