"""What changed in a table since a snapshot: new, changed and deleted files.

A file is *unchanged* when the snapshot has an entry with its path, size and modification time
(ms); *changed* when it has an entry whose size or mtime differs (rewritten in place: its
entry describes other content, so the file counts as not indexed until refreshed); *new*
without an entry. Entries whose file is gone are *deleted*.

The snapshot side is its file list as Arrow (``Snapshot.file_table()``), joined with the
listing by name in Arrow (``pyarrow.compute.index_in``): no Python object per entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import combined
from metaindex.formats.base import Listing
from metaindex.store import OBJ_MTIME, OBJ_NAME, OBJ_SIZE

__all__ = ["Diff", "diff", "join"]


@dataclass(frozen=True)
class Diff:
    """The delta between a listing and a snapshot.

    Attributes:
        new: :class:`~metaindex.formats.DataFile` without an entry.
        changed: DataFile whose entry has another size or mtime.
        deleted: obj_names of entries whose file no longer exists (sorted).
        unchanged: how many files match their entry.
        unreadable: DataFiles a build or refresh could not read, unchanged since (not
            retried; never indexed, so always read by queries).
        cleared: names of unreadable records whose file is gone or changed (sorted).
    """

    new: tuple
    changed: tuple
    deleted: tuple
    unchanged: int
    unreadable: tuple = ()
    cleared: tuple = ()

    @property
    def to_index(self) -> tuple:
        """The files a refresh collects: new and changed."""
        return self.new + self.changed

    @property
    def empty(self) -> bool:
        """No file pending a refresh (``cleared`` records are housekeeping only)."""
        return not (self.new or self.changed or self.deleted)


def _file_table(files) -> pa.Table:
    if isinstance(files, pa.Table):
        missing = {OBJ_NAME, OBJ_SIZE, OBJ_MTIME} - set(files.column_names)
        if missing:
            raise TypeError(
                f"a file table needs columns {OBJ_NAME}, {OBJ_SIZE}, {OBJ_MTIME}; "
                f"it lacks {sorted(missing)}"
            )
        return files
    if isinstance(files, Mapping):  # {obj_name: FileEntry}, e.g. a small hand-made snapshot
        entries = list(files.values())
        return pa.table(
            {
                OBJ_NAME: pa.array([e.name for e in entries], pa.string()),
                OBJ_SIZE: pa.array([e.size for e in entries], pa.int64()),
                OBJ_MTIME: pa.array([e.mtime for e in entries], pa.int64()),
            }
        )
    raise TypeError(
        f"files is a snapshot's file table (Snapshot.file_table()) or a mapping "
        f"of FileEntry by name, not {type(files).__name__}"
    )


def join(names: pa.Array, files: pa.Table) -> np.ndarray:
    """For each of ``names``, its row in ``files`` (a table with an ``obj_name`` column), or
    -1."""
    if not len(names):
        return np.zeros(0, np.int64)
    at = pc.index_in(names, value_set=files.column(OBJ_NAME).combine_chunks())
    return np.asarray(at.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)


def _numbers(files: pa.Table, name: str) -> np.ndarray:
    return np.asarray(files.column(name).to_numpy(), np.int64)


def diff(listing: Listing, files, unreadable: Mapping | None = None) -> Diff:
    """Compare ``listing`` with a snapshot's file list and ``unreadable`` records
    ({name: (size, mtime, reason)}).

    Args:
        listing: the table's files now.
        files: ``Snapshot.file_table()`` (obj_name, obj_size, obj_mtime as Arrow), or a
            mapping {obj_name: FileEntry}.
        unreadable: ``Snapshot.unreadable``.
    """
    files = _file_table(files)
    unreadable = unreadable or {}
    paths = combined(listing.table.column("path"))
    sizes, mtimes = listing.sizes, listing.mtimes
    at = join(paths, files)
    known = at >= 0
    where = np.maximum(at, 0)
    same = known
    if len(files):
        same = (
            known
            & (_numbers(files, OBJ_SIZE)[where] == sizes)
            & (_numbers(files, OBJ_MTIME)[where] == mtimes)
        )
    bad = np.zeros(len(paths), np.bool_)
    if unreadable:
        records = list(unreadable.items())
        hit = join(paths, pa.table({OBJ_NAME: pa.array([n for n, _ in records], pa.string())}))
        for i in np.flatnonzero(hit >= 0):
            size, mtime = records[hit[i]][1][:2]
            bad[i] = (size, mtime) == (int(sizes[i]), int(mtimes[i]))
    new = tuple(listing.files_at(np.flatnonzero(~bad & ~known)))
    changed = tuple(listing.files_at(np.flatnonzero(~bad & known & ~same)))
    known_bad = tuple(listing.files_at(np.flatnonzero(bad)))
    listed = np.zeros(len(files), np.bool_)
    listed[at[known]] = True
    gone = np.flatnonzero(~listed)
    deleted = tuple(sorted(files.column(OBJ_NAME).take(pa.array(gone, pa.int64())).to_pylist()))
    still = {f.path for f in known_bad}
    cleared = sorted(name for name in unreadable if name not in still)
    return Diff(
        new, changed, deleted, int(np.count_nonzero(~bad & same)), known_bad, tuple(cleared)
    )
