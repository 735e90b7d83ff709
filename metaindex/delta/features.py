"""Which Delta reader protocol features an index over a snapshot's files stays sound under
(PROTOCOL.md, "Table Features"), and the check that refuses the others by name.

An index is sound when (1) the snapshot's file list is exactly Delta's, (2) each file's index
covers every row Delta can return from it, and (3) the index reads the values Delta returns.
Supported reader features, and why:

- ``columnMapping``: columns are resolved to their physical names / field ids
  (:class:`metaindex.delta.ColumnMapping`); the file list does not change.
- ``deletionVectors``: a deletion vector hides rows of a file, it never adds any; an index of
  the file's physical rows covers a superset of its live rows, so skipping stays sound.
- ``timestampNtz``: a type (naive microsecond timestamps); partition values parse naive.
- ``v2Checkpoint``: UUID-named checkpoints and sidecars are read (``metaindex.delta``).
- ``vacuumProtocolCheck``: affects VACUUM only; readers need only acknowledge it.
- ``typeWidening`` (and ``typeWidening-preview``): a column's type may be wider in the table
  than in files written before the change (int8 -> int16 -> int32 -> int64, float -> double,
  int -> double, date -> timestamp_ntz, decimal widening). Every such change converts each
  value exactly, so under issue 27's rule (an index records values in the table's type,
  converted exactly or not at all; a file whose physical type differs is indexed in the
  table's type or left unindexed for that column) the index stays sound. A recorded change
  outside that list is refused (PROTOCOL.md: readers must fail on it).
- ``variantType`` / ``variantShredding`` (and ``-preview``): variant columns are not
  indexable (never skipped on); the file list does not change.
- ``domainMetadata``, ``rowTracking``, ``icebergCompatV1``/``V2``, ``inCommitTimestamp``,
  ``clustering``, ``appendOnly``...: writer features, accepted if a writer lists them for
  readers too (they change what writers must do, not what a file holds).

Refused: ``catalogManaged`` / ``catalogOwned-preview`` (the catalog, not the ``_delta_log``
directory, says which commits exist: a listing can miss ratified commits) and every feature not
named here, and reader versions above 3.
"""

from __future__ import annotations

from metaindex.errors import UnsupportedDeltaFeatureError

__all__ = ["SUPPORTED_READER_FEATURES", "MAX_READER_VERSION", "check_protocol"]

SUPPORTED_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        # writer features; harmless if listed for readers
        "domainMetadata",
        "rowTracking",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergCompatV3",
        "inCommitTimestamp",
        "clustering",
        "appendOnly",
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "allowColumnDefaults",
        "changeDataFeed",
        "identityColumns",
        "icebergWriterCompatV1",
        "icebergWriterCompatV3",
    }
)
"""Reader features an index over a Delta snapshot stays sound under (see the module doc)."""

MAX_READER_VERSION = 3


def check_protocol(protocol, table: str | None = None) -> None:
    """Refuse a protocol this reader cannot stay sound under.

    Raises:
        UnsupportedDeltaFeatureError: ``minReaderVersion`` above 3, or reader features outside
            :data:`SUPPORTED_READER_FEATURES` (named in the message and in ``features``).
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedDeltaFeatureError(
            f"{table or 'the Delta table'} needs Delta reader version "
            f"{protocol.min_reader_version}; metaindex reads versions 1 to "
            f"{MAX_READER_VERSION}",
            [f"minReaderVersion={protocol.min_reader_version}"],
        )
    if protocol.min_reader_version < 3:
        return
    unknown = sorted((protocol.reader_features or frozenset()) - SUPPORTED_READER_FEATURES)
    if unknown:
        raise UnsupportedDeltaFeatureError(
            f"{table or 'the Delta table'} uses Delta reader feature"
            f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}, which metaindex cannot "
            f"index soundly (supported: {', '.join(sorted(SUPPORTED_READER_FEATURES))})",
            unknown,
        )


def column_mapping_supported(protocol) -> bool:
    """Whether the protocol lets ``delta.columnMapping.mode`` take effect (reader version 2,
    or 3 with the ``columnMapping`` feature)."""
    if protocol.min_reader_version == 2:
        return True
    return protocol.min_reader_version >= 3 and "columnMapping" in (protocol.reader_features or ())
