"""Column names of the metadata part files (specs/metadata-store.md, "Column names").

Index columns are named with xskipper's version-2 scheme, unchanged in version 5
(:func:`metaindex.naming.index_column_name`, re-exported here; the index kinds name their
``Index.key`` with the same function).
"""

from __future__ import annotations

from metaindex.naming import escape_column, index_column_name

__all__ = [
    "OBJ_NAME",
    "OBJ_SIZE",
    "OBJ_MTIME",
    "OBJ_ROWS",
    "OBJECT_COLUMNS",
    "VIRTUAL_PREFIX",
    "OBJ_ETAG",
    "OBJ_FOOTER_LEN",
    "OBJ_FOOTER_CRC",
    "OBJ_DATETIME_REBASE",
    "OBJ_INT96_REBASE",
    "OBJ_ANCIENT_DATETIME",
    "OBJ_ANCIENT_INT96",
    "OBJ_TYPE_DRIFT",
    "FILE_INFO_COLUMNS",
    "escape_column",
    "index_column_name",
    "virtual_column_name",
]

OBJ_NAME = "obj_name"
OBJ_SIZE = "obj_size"
OBJ_MTIME = "obj_mtime"
OBJ_ROWS = "obj_rows"
OBJECT_COLUMNS = (OBJ_NAME, OBJ_SIZE, OBJ_MTIME, OBJ_ROWS)
VIRTUAL_PREFIX = "virtual_"

# Optional per-file columns (format 6; null where unknown, absent from format-5 parts).
OBJ_ETAG = "obj_etag"  # string: the object store's ETag / version
OBJ_FOOTER_LEN = "obj_footer_len"  # int64: the Parquet footer's length
OBJ_FOOTER_CRC = "obj_footer_crc"  # int64: CRC-32 of the footer bytes
OBJ_DATETIME_REBASE = "obj_datetime_rebase"  # string: LEGACY / CORRECTED / SESSION
OBJ_INT96_REBASE = "obj_int96_rebase"  # string: LEGACY / CORRECTED / SESSION
OBJ_ANCIENT_DATETIME = "obj_ancient_datetime"  # bool: an indexed DATE/TIMESTAMP value < cutoff
OBJ_ANCIENT_INT96 = "obj_ancient_int96"  # bool: an indexed INT96 value < cutoff
OBJ_TYPE_DRIFT = "obj_type_drift"  # string: JSON {index column: the file's type}
#                                                of the indexes its values did not convert for
FILE_INFO_COLUMNS = (
    OBJ_ETAG,
    OBJ_FOOTER_LEN,
    OBJ_FOOTER_CRC,
    OBJ_DATETIME_REBASE,
    OBJ_INT96_REBASE,
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_TYPE_DRIFT,
)


def virtual_column_name(partition_column: str) -> str:
    """The part-file column holding the value of table partition column ``partition_column``."""
    return VIRTUAL_PREFIX + partition_column
