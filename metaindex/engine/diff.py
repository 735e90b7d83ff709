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
    """

    new: tuple
    changed: tuple
    deleted: tuple
    unchanged: int

    @property
    def to_index(self) -> tuple:
        """The files a refresh collects: new and changed."""
        return self.new + self.changed

    @property
    def empty(self) -> bool:
        return not (self.new or self.changed or self.deleted)


def diff(listing: Listing, entries: Mapping) -> Diff:
    """Compare ``listing`` with a snapshot's ``files`` ({obj_name: FileEntry})."""
    new, changed = [], []
    unchanged = 0
    for f in listing:
        entry = entries.get(f.path)
        if entry is None:
            new.append(f)
        elif entry.size != f.size or entry.mtime != f.mtime:
            changed.append(f)
        else:
            unchanged += 1
    present = {f.path for f in listing}
    deleted = sorted(name for name in entries if name not in present)
    return Diff(tuple(new), tuple(changed), tuple(deleted), unchanged)
