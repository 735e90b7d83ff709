"""The versioned metadata store (format version 8, specs/metadata-store.md).

::

    store = MetadataStore("/data/.metaindex")
    t = store.table("/data/events")
    t.create([IndexDef("minmax", ["temp"])])
    part = t.write_part(rows, t.snapshot().index_defs)   # obj_* columns + one per index
    t.commit(0, add_parts=[part], operation="build")
    t.snapshot().metadata_table()                        # one row per indexed file

Layout ``<root>/<table id>/{table.json, _log/, parts/}``; commits are atomic (create-if-absent
of the next log entry) and optimistic (rebase when concurrent commits do not overlap, else
:class:`metaindex.errors.CommitConflictError`).
"""

from metaindex.store.commit import CHECKPOINT_INTERVAL
from metaindex.store.compaction import DEFAULT_TARGET_FILE_SIZE
from metaindex.store.escaping import (
    FILE_INFO_COLUMNS,
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_ETAG,
    OBJ_FOOTER_CRC,
    OBJ_FOOTER_LEN,
    OBJ_INT96_REBASE,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    OBJ_TYPE_DRIFT,
    OBJECT_COLUMNS,
    index_column_name,
    virtual_column_name,
)
from metaindex.store.health import CheckReport, Problem
from metaindex.store.layout import (
    TableIdentity,
    canonical_scheme,
    normalize_table_uri,
    scheme_spellings,
    table_id_for,
)
from metaindex.store.maintenance import MIN_RETAIN, RepairResult, VacuumResult
from metaindex.store.model import (
    FORMAT_VERSION,
    MAX_PART_OBJECTS,
    DeadObjects,
    EncryptionLabels,
    FileEntry,
    IndexDef,
    KeyAccess,
    LogEntry,
    PartRecord,
)
from metaindex.store.parts import KEYS_UNAVAILABLE_KEY
from metaindex.store.receipts import PartReceipt
from metaindex.store.snapshot import Snapshot
from metaindex.store.sparkschema import SPARK_ROW_METADATA
from metaindex.store.summary import summarize
from metaindex.store.table import DEFAULT_RETAIN, MetadataStore, TableStore

__all__ = [
    "MetadataStore",
    "TableStore",
    "Snapshot",
    "VacuumResult",
    "IndexDef",
    "EncryptionLabels",
    "KeyAccess",
    "FileEntry",
    "PartRecord",
    "PartReceipt",
    "DeadObjects",
    "LogEntry",
    "TableIdentity",
    "FORMAT_VERSION",
    "MAX_PART_OBJECTS",
    "summarize",
    "CHECKPOINT_INTERVAL",
    "DEFAULT_RETAIN",
    "DEFAULT_TARGET_FILE_SIZE",
    "SPARK_ROW_METADATA",
    "MIN_RETAIN",
    "RepairResult",
    "CheckReport",
    "Problem",
    "OBJ_NAME",
    "OBJ_SIZE",
    "OBJ_MTIME",
    "OBJ_ROWS",
    "OBJECT_COLUMNS",
    "index_column_name",
    "virtual_column_name",
    "normalize_table_uri",
    "canonical_scheme",
    "scheme_spellings",
    "table_id_for",
    "KEYS_UNAVAILABLE_KEY",
    "FILE_INFO_COLUMNS",
    "OBJ_ETAG",
    "OBJ_FOOTER_LEN",
    "OBJ_FOOTER_CRC",
    "OBJ_DATETIME_REBASE",
    "OBJ_INT96_REBASE",
    "OBJ_ANCIENT_DATETIME",
    "OBJ_ANCIENT_INT96",
    "OBJ_TYPE_DRIFT",
]
