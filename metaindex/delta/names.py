"""The files of a ``_delta_log/`` directory, told apart by name (PROTOCOL.md, "File Types").

``<v>.json`` commits, ``<v>.checkpoint.parquet`` classic checkpoints,
``<v>.checkpoint.<o>.<p>.parquet`` parts of multi-part checkpoints,
``<v>.checkpoint.<uuid>.{json,parquet}`` UUID-named (v2) checkpoints,
``<x>.<y>.compacted.json`` log compaction files, ``<v>.crc`` version checksums and
``_last_checkpoint``; versions are 20 digits, part numbers 10. Anything else (Hadoop's
``.<name>.crc`` side files, ``_staged_commits/``, temporary files) is not part of the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "LOG_DIR",
    "SIDECAR_DIR",
    "LAST_CHECKPOINT",
    "Checkpoint",
    "LogListing",
    "commit_name",
    "crc_name",
    "classify",
]

LOG_DIR = "_delta_log"
SIDECAR_DIR = "_sidecars"
LAST_CHECKPOINT = "_last_checkpoint"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_UUID = re.compile(
    r"^(\d{20})\.checkpoint\.([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.(json|parquet)$"
)
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC = re.compile(r"^(\d{20})\.crc$")


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def crc_name(version: int) -> str:
    return f"{version:020d}.crc"


@dataclass(frozen=True)
class Checkpoint:
    """One complete checkpoint of a version: its files (one, or every part of a multi-part
    one, in part order) and its kind: ``"classic"``, ``"multi-part"`` or ``"v2"`` (UUID-named;
    a classic-named checkpoint may also turn out to follow the v2 spec when read)."""

    version: int
    kind: str
    files: tuple

    @property
    def preference(self) -> int:
        """Which of several checkpoints of one version to read: one file over many parts."""
        return {"v2": 0, "classic": 1, "multi-part": 2}[self.kind]


@dataclass
class LogListing:
    """What one listing of ``_delta_log/`` found, by version.

    Attributes:
        commits: version -> (file name, size, modification time in ms).
        checkpoints: version -> complete checkpoints of that version (multi-part ones with a
            missing part are left out, as PROTOCOL.md asks readers to do).
        compactions: ``(first, last)`` -> file name of the log compaction of that range.
        crcs: versions that have a version checksum file.
        has_last_checkpoint: whether ``_last_checkpoint`` is there.
    """

    commits: dict = field(default_factory=dict)
    checkpoints: dict = field(default_factory=dict)
    compactions: dict = field(default_factory=dict)
    crcs: set = field(default_factory=set)
    has_last_checkpoint: bool = False

    @property
    def latest_commit(self) -> int | None:
        return max(self.commits) if self.commits else None

    def checkpoint_at_or_before(self, version: int) -> Checkpoint | None:
        """The newest complete checkpoint not newer than ``version`` (the preferred kind
        when several exist for it)."""
        best = [v for v in self.checkpoints if v <= version]
        if not best:
            return None
        return min(self.checkpoints[max(best)], key=lambda c: c.preference)


def classify(entries) -> LogListing:
    """Sort a listing's ``(name, size, mtime_ms)`` entries into a :class:`LogListing`."""
    out = LogListing()
    parts: dict = {}
    for name, size, mtime in entries:
        if m := _COMMIT.match(name):
            out.commits[int(m.group(1))] = (name, size, mtime)
        elif m := _CLASSIC.match(name):
            out.checkpoints.setdefault(int(m.group(1)), []).append(
                Checkpoint(int(m.group(1)), "classic", (name,))
            )
        elif m := _UUID.match(name):
            out.checkpoints.setdefault(int(m.group(1)), []).append(
                Checkpoint(int(m.group(1)), "v2", (name,))
            )
        elif m := _MULTI.match(name):
            version, part, total = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if 1 <= part <= total:
                parts.setdefault((version, total), {})[part] = name
        elif m := _COMPACTED.match(name):
            first, last = int(m.group(1)), int(m.group(2))
            if first < last:
                out.compactions[(first, last)] = name
        elif m := _CRC.match(name):
            out.crcs.add(int(m.group(1)))
        elif name == LAST_CHECKPOINT:
            out.has_last_checkpoint = True
    for (version, total), found in parts.items():
        if len(found) == total:  # a multi-part checkpoint with a part missing is ignored
            out.checkpoints.setdefault(version, []).append(
                Checkpoint(version, "multi-part", tuple(found[i] for i in range(1, total + 1)))
            )
    return out
