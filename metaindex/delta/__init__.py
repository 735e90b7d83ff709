"""Delta Lake tables read from their transaction log, without Spark.

:class:`DeltaLog` gives a table's :class:`DeltaSnapshot` at the latest version, any version or
a timestamp (Delta's time travel), and the :class:`DeltaChanges` between two versions, from
``_delta_log/`` alone: JSON commits, checkpoints in every form Delta writes (classic,
multi-part, v2 UUID-named with sidecars), log compaction files and ``_last_checkpoint``, as
PROTOCOL.md specifies (https://github.com/delta-io/delta/blob/master/PROTOCOL.md). Checkpoint
Parquet files are read with :mod:`metaindex.parquet`.

A snapshot's files are its live logical files (path relative to the table root, size,
modification time, typed partition values, deletion vector, ``dataChange``), with the table's
metadata (Arrow schema by logical name, partition columns, configuration, column mapping) and
protocol. Reader features an index stays sound under are listed in
:data:`SUPPORTED_READER_FEATURES` (see :mod:`metaindex.delta.features` for why); any other is
refused with :class:`metaindex.errors.UnsupportedDeltaFeatureError` naming it. A log the
reader cannot vouch for raises a :class:`metaindex.errors.DeltaLogError` (damaged file, gap,
version out of reach), never a wrong file list.

Example::

    from metaindex.delta import DeltaLog

    log = DeltaLog("/data/events")
    snap = log.snapshot()                          # or version=12, timestamp="2024-06-01T00:00Z"
    for f in snap.files:
        print(f.path, f.size, f.partition_values, f.deletion_vector is not None)
    changes = log.changes(snap.version - 3)        # added / removed since then, per commit
"""

from metaindex.delta.actions import CommitInfo, DeletionVector, Metadata, Protocol
from metaindex.delta.features import SUPPORTED_READER_FEATURES, check_protocol
from metaindex.delta.files import CommitSummary, DeltaChanges, DeltaFile, DeltaSnapshot
from metaindex.delta.log import DeltaLog
from metaindex.delta.schema import ColumnMapping, TypeChange, partition_value

__all__ = [
    "DeltaLog",
    "DeltaSnapshot",
    "DeltaFile",
    "DeltaChanges",
    "CommitSummary",
    "DeletionVector",
    "Protocol",
    "Metadata",
    "CommitInfo",
    "ColumnMapping",
    "TypeChange",
    "SUPPORTED_READER_FEATURES",
    "check_protocol",
    "partition_value",
    "is_delta_table",
]


def is_delta_table(table, *, filesystem=None, storage_options=None) -> bool:
    """Whether ``table`` has a ``_delta_log/`` holding at least one commit or checkpoint."""
    from metaindex.errors import DeltaTableNotFoundError

    try:
        DeltaLog(table, filesystem=filesystem, storage_options=storage_options).latest_version()
    except DeltaTableNotFoundError:
        return False
    return True
