"""Refreshing an index: index only what changed since the snapshot, in one commit.

What changed is the table format's answer (:meth:`metaindex.formats.TableFormat.changes`;
a directory: a listing compared with the snapshot), and files are read with the data format,
both as the index recorded them at build (:class:`metaindex.formats.FormatSpec`).

New files and files rewritten in place (size or mtime differ from their entry) are collected;
their rows supersede the old entries. Entries of deleted files are removed. When another writer
commits first and the store cannot rebase this commit onto it (it touched the same files), the
refresh starts over from the new snapshot — usually to find that the other writer already did
the work — and gives up with :class:`~metaindex.errors.CommitConflictError` after ``attempts``.

``verify=True`` also finds files rewritten with the same size and mtime (``cp -p``,
``rsync -a``, ``touch -r``): an object whose listing and entry both carry an ETag is compared
by ETag; otherwise it reads the data format's fingerprint (Parquet: only the footer region, the
file's tail) of every file whose size and mtime match, and re-indexes those whose fingerprint
(footer length and CRC-32) differs from the one the build recorded, or that have none (entries
written by store format 5, which this also upgrades to a full format-6 record).

A damaged store is repaired first (``TableStore.repair``: a gap or a damaged entry in the log, a
part missing or damaged): the files whose metadata was lost are then new to the diff, and this
refresh indexes them again.
"""

from __future__ import annotations

import logging
import time

from metaindex.engine import schema as schema_mod
from metaindex.engine.build import BuildResult, collect, details, table_state
from metaindex.engine.diff import Diff, join
from metaindex.errors import CommitConflictError, DecodeError, IntegrityError, MetaIndexError
from metaindex.formats import FormatSpec
from metaindex.store import OBJ_NAME

__all__ = ["refresh", "ATTEMPTS"]

log = logging.getLogger(__name__)
ATTEMPTS = 3


def _fingerprints_differ(location, snap, listing, delta, data_format) -> tuple:
    """The listed files whose size and mtime match their entry but whose fingerprint
    (``data_format.fingerprint``) does not (or was never recorded)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    from metaindex.store import OBJ_ETAG, OBJ_FOOTER_CRC, OBJ_FOOTER_LEN

    files = snap.file_table((OBJ_NAME, OBJ_ETAG, OBJ_FOOTER_LEN, OBJ_FOOTER_CRC))
    suspect = {f.path for f in delta.to_index}
    at = join(pa.array(listing.paths, pa.string()), files)
    same = [
        (f, int(i)) for f, i in zip(listing, at, strict=True) if i >= 0 and f.path not in suspect
    ]
    if not same:
        return ()
    rows = files.take(pa.array([i for _, i in same], pa.int64()))
    recorded = list(
        zip(
            *(rows.column(c).to_pylist() for c in (OBJ_ETAG, OBJ_FOOTER_LEN, OBJ_FOOTER_CRC)),
            strict=True,
        )
    )

    def current(f):
        try:
            return data_format.fingerprint(location.full_path(f.path), location.filesystem)
        except (MetaIndexError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"

    # an ETag listed now and recorded at build decides without reading the file
    by_etag = [
        (f, etag)
        for (f, _), (etag, _, _) in zip(same, recorded, strict=True)
        if f.etag is not None and etag is not None
    ]
    read = [
        (f, (length, crc))
        for (f, _), (etag, length, crc) in zip(same, recorded, strict=True)
        if f.etag is None or etag is None
    ]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(current, [f for f, _ in read]))
    return tuple(f for f, etag in by_etag if f.etag != etag) + tuple(
        f for (f, was), now in zip(read, found, strict=True) if was[0] is None or was != now
    )


def refresh(
    location,
    table_store,
    *,
    executor=None,
    progress=None,
    footer_statistics=True,
    decryption_properties=None,
    attempts: int = ATTEMPTS,
    verify: bool = False,
    formats: FormatSpec | None = None,
) -> BuildResult:
    """Bring the index up to date with the table's files; ``verify``: also compare the
    fingerprint of files whose size and mtime match (see the module docstring);
    ``formats``: the formats the caller expects (None: the recorded ones).

    Raises:
        MetaIndexError: the table has no index, or it records formats other than ``formats``.
        UnsupportedFormatError: it records a format that is not registered here.
        CommitConflictError: concurrent writers kept touching the same files.
    """
    from metaindex.index import make_index

    started = time.monotonic()
    if not table_store.exists():
        raise MetaIndexError(
            f"{location.uri} has no index (store {table_store.path}); build "
            "one with index_builder()"
        )
    table_store.repair()  # a damaged store first becomes whole: its lost files are then new
    for attempt in range(attempts):
        snap = table_store.snapshot()
        data_schema, partitions = schema_mod.recorded(snap)
        recorded = FormatSpec.from_record(snap.table.extra, table_store.path)
        if formats is not None and not formats.agrees(recorded):
            raise MetaIndexError(
                f"the index of {location.uri} was built for {recorded}, not "
                f"{formats}; drop() it to index the table in another format"
            )
        table_format, data_format = recorded.table_format(), recorded.data_format()
        try:
            listing, delta = table_format.changes(location, snap)
        except (IntegrityError, DecodeError):
            if attempt == attempts - 1 or not table_store.moved_on(snap):
                raise
            continue  # a part of an older version, compacted and vacuumed meanwhile
        data_format = table_format.reading(listing, delta.to_index, data_format)
        rewritten: tuple = ()
        if verify:
            rewritten = _fingerprints_differ(location, snap, listing, delta, data_format)
            delta = Diff(
                delta.new,
                delta.changed + rewritten,
                delta.deleted,
                delta.unchanged - len(rewritten),
                delta.unreadable,
                delta.cleared,
            )
        moved = bool(listing.state) and listing.state != snap.table_state
        if delta.empty and not delta.cleared and not moved:
            return BuildResult("NO_CHANGE", snap.version, 0, 0, seconds=time.monotonic() - started)
        found = schema_mod.infer_partition_types(listing)
        partitions = {**found, **partitions}  # a recorded type stays (values that do not
        # parse as it are unknown at prune time, so their files are kept)
        indexes = [make_index(d.name, d.cols, d.params) for d in snap.index_defs]
        column_types = {
            ix.column: schema_mod.resolve_column(data_schema, ix.column)[1].type for ix in indexes
        }
        collected = collect(
            location,
            table_store,
            delta.to_index,
            snap.index_defs,
            indexes,
            column_types,
            partitions,
            encryption=snap.encryption,
            executor=executor,
            progress=progress,
            footer_statistics=footer_statistics,
            decryption_properties=decryption_properties,
            formats=recorded,
            data_format=data_format,
        )
        new_schema = schema_mod.unify([data_schema, *collected.schemas])
        # files that fail are recorded as unreadable (a typed reason each), so the next
        # refresh and describe agree: not pending, unreadable until they change. A same-size
        # same-mtime rewrite that fails must also lose its stale entry (its size and mtime
        # still match it).
        stale = tuple(f.path for f in rewritten if f.path in collected.failed)
        removed = tuple(sorted({*delta.deleted, *stale}))
        changed = {f.path for f in delta.changed}
        superseded = sum(1 for p in collected.indexed if p in changed)
        try:
            version = table_store.commit(
                snap.version,
                add_parts=collected.parts,
                removed_objects=removed,
                operation="refresh",
                details=details(
                    collected,
                    new_schema,
                    partitions,
                    delta.to_index,
                    new_files=len(delta.new),
                    changed_files=len(delta.changed),
                    deleted_files=len(delta.deleted),
                    **table_state(listing),
                    **({"unreadable_cleared": list(delta.cleared)} if delta.cleared else {}),
                ),
            )
        except CommitConflictError as exc:
            if attempt == attempts - 1:
                raise
            log.info("refresh of %s lost a commit race (%s); starting over", location.uri, exc)
            continue
        return BuildResult(
            "SUCCESS",
            version,
            len(collected.indexed),
            len(removed) + superseded,
            dict(collected.failed),
            collected.footer_minmax,
            collected.scanned_minmax,
            time.monotonic() - started,
        )
    raise AssertionError("unreachable")
