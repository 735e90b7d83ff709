"""Refreshing an index: index only what changed since the snapshot, in one commit.

New files and files rewritten in place (size or mtime differ from their entry) are collected;
their rows supersede the old entries. Entries of deleted files are removed. When another writer
commits first and the store cannot rebase this commit onto it (it touched the same files), the
refresh starts over from the new snapshot — usually to find that the other writer already did
the work — and gives up with :class:`~metaindex.errors.CommitConflictError` after ``attempts``.
"""

from __future__ import annotations

import logging
import time

from metaindex.engine import schema as schema_mod
from metaindex.engine.build import BuildResult, collect, details
from metaindex.engine.diff import diff
from metaindex.engine.listing import list_files
from metaindex.errors import CommitConflictError, MetaIndexError

__all__ = ["refresh", "ATTEMPTS"]

log = logging.getLogger(__name__)
ATTEMPTS = 3


def refresh(location, table_store, *, executor=None, progress=None,
            footer_statistics=True, decryption_properties=None,
            attempts: int = ATTEMPTS) -> BuildResult:
    """Bring the index up to date with the table's files.

    Raises:
        MetaIndexError: the table has no index.
        CommitConflictError: concurrent writers kept touching the same files.
    """
    from metaindex.index import make_index

    started = time.monotonic()
    if not table_store.exists():
        raise MetaIndexError(f"{location.uri} has no index (store {table_store.path}); build "
                             "one with index_builder()")
    for attempt in range(attempts):
        snap = table_store.snapshot()
        data_schema, partitions = schema_mod.recorded(snap)
        listing = list_files(location)
        delta = diff(listing, snap.files, snap.unreadable)
        if delta.empty and not delta.cleared:
            return BuildResult("NO_CHANGE", snap.version, 0, 0,
                               seconds=time.monotonic() - started)
        found = schema_mod.infer_partition_types(listing)
        partitions = {**found, **partitions}  # a recorded type stays (values that do not
        # parse as it are unknown at prune time, so their files are kept)
        indexes = [make_index(d.name, d.cols, d.params) for d in snap.index_defs]
        column_types = {ix.column: schema_mod.resolve_column(data_schema, ix.column)[1].type
                        for ix in indexes}
        collected = collect(location, table_store, delta.to_index, snap.index_defs, indexes,
                            column_types, partitions, encryption=snap.encryption,
                            executor=executor, progress=progress,
                            footer_statistics=footer_statistics,
                            decryption_properties=decryption_properties)
        new_schema = schema_mod.unify([data_schema, *collected.schemas])
        # files that fail are recorded as unreadable (a typed reason each), so the next
        # refresh and describe agree: not pending, unreadable until they change
        changed = {f.path for f in delta.changed}
        superseded = sum(1 for p in collected.indexed if p in changed)
        try:
            version = table_store.commit(
                snap.version, add_parts=collected.parts, removed_objects=delta.deleted,
                operation="refresh",
                details=details(collected, new_schema, partitions, delta.to_index,
                                new_files=len(delta.new), changed_files=len(delta.changed),
                                deleted_files=len(delta.deleted),
                                **({"unreadable_cleared": list(delta.cleared)}
                                   if delta.cleared else {})))
        except CommitConflictError as exc:
            if attempt == attempts - 1:
                raise
            log.info("refresh of %s lost a commit race (%s); starting over", location.uri, exc)
            continue
        return BuildResult("SUCCESS", version, len(collected.indexed),
                           len(delta.deleted) + superseded, dict(collected.failed),
                           collected.footer_minmax, collected.scanned_minmax,
                           time.monotonic() - started)
    raise AssertionError("unreachable")
