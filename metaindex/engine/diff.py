"""What changed in a table since a snapshot: new, changed and deleted files.

A file is *unchanged* when the snapshot has an entry with its path, size and modification time
(ms); *changed* when it has an entry whose size or mtime differs (rewritten in place: its
entry describes other content, so the file counts as not indexed until refreshed); *new*
without an entry. Entries whose file is gone are *deleted*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from metaindex.engine.listing import Listing

__all__ = ["Diff", "diff"]


@dataclass(frozen=True)
class Diff:
    """The delta between a listing and a snapshot.

    Attributes:
        new: :class:`~metaindex.engine.listing.DataFile` without an entry.
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


def diff(listing: Listing, entries: Mapping, unreadable: Mapping | None = None) -> Diff:
    """Compare ``listing`` with a snapshot's ``files`` ({obj_name: FileEntry}) and
    ``unreadable`` records ({name: (size, mtime, reason)})."""
    unreadable = unreadable or {}
    new, changed, known_bad = [], [], []
    unchanged = 0
    for f in listing:
        entry = entries.get(f.path)
        bad = unreadable.get(f.path)
        if bad is not None and (bad[0], bad[1]) == (f.size, f.mtime):
            known_bad.append(f)
        elif entry is None:
            new.append(f)
        elif entry.size != f.size or entry.mtime != f.mtime:
            changed.append(f)
        else:
            unchanged += 1
    present = {f.path for f in listing}
    deleted = sorted(name for name in entries if name not in present)
    still = {f.path for f in known_bad}
    cleared = sorted(name for name in unreadable if name not in still)
    return Diff(tuple(new), tuple(changed), tuple(deleted), unchanged, tuple(known_bad),
                tuple(cleared))
