"""How well each index of a snapshot can skip files, computed from the index alone (no data scan).

For every index the headline number is ``point_read_fraction``: the expected fraction of the
snapshot's files that an equality lookup (``col = v``) must read, for a value ``v`` drawn from
the table's rows. 1/n is the best an index can do on n files (each value lives in one file);
1.0 means the index never skips. Entries without usable metadata are always read and count as
read. Each kind estimates its own (``Index.estimate``: ``metaindex.index.ranges`` for min/max,
``metaindex.index.base.set_estimate`` for kinds that list keys per file, the bloom filter's in
``metaindex.index.bloom``); a kind that gives none, or is not registered in this process, is
"unknown". The built-in kinds:

* **min/max** (exact for the model, via sorted interval endpoints): each file's non-null,
  non-NaN rows are taken as spread uniformly over its ``[min, max]`` (a point mass where
  ``min == max``), weighted by the file's row count. The expected number of files whose range
  covers ``v`` is then ``sum_i w_i / (max_i - min_i) * integral of C(x) over [min_i, max_i]``
  with ``C(x)`` the number of ranges holding ``x``; the integral of a step function with n
  steps is a difference of prefix sums, so the whole estimate is two sorts and a few
  ``searchsorted`` calls. ``range_read_fraction`` does the same for ranges of width ``w`` (a
  fraction of the column's span, centred on a value from the data): a range meets a file when
  its centre lies in ``[min - w/2, max + w/2]``. Numbers, dates and timestamps are placed on
  their own scale; strings and binary on the ordinal scale of the distinct bounds (their
  dense rank), so "span" there means ranks, not bytes.
* **value list**: a file's rows are taken as spread evenly over its listed values; a value
  listed by k files makes a lookup read those k. Exact counts of files per value come from
  the lists themselves. Files whose list is unknown (more than ``max_values`` distinct
  values: *saturated*) are always read.
* **bloom filter**: each file's distinct count and false-positive rate come from its filter's
  fill (per 256-bit block: ``m = ln(1 - fill) / ln(31/32)`` insertions, false-positive rate
  ``fill ** 8``). How many files share a value is estimated from sampled pairs of files: both
  filters are folded to the smaller size (block ``k`` of a filter of ``z`` blocks collects
  blocks ``2k`` and ``2k + 1`` of one of ``2z``: SBBF's multiply-shift block choice), OR-ed,
  and ``|A ∩ B| = n_A + n_B - n_(A ∪ B)``. Reads = files holding the value + false positives
  among the rest. Above 64 MiB of bitsets the fills are measured on a random subset of files.

Verdicts are short sentences for people (``effective``, ``weak: ranges overlap; cluster the
table by this column``, ``saturated value list: ...``); :data:`VERDICTS` lists their first words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from metaindex.index import KINDS, Estimate, Index
from metaindex.index.ranges import (
    RANGE_WIDTHS,
    expected_cover,
    minmax_positions,
    point_read_fraction,
    read_fractions,
)
from metaindex.store import OBJ_ROWS, Snapshot
from metaindex.store.summary import index_for

__all__ = [
    "IndexEffectiveness",
    "effectiveness",
    "minmax_positions",
    "point_read_fraction",
    "read_fractions",
    "expected_cover",
    "RANGE_WIDTHS",
    "VERDICTS",
    "verdict_for",
]

VERDICTS = ("effective", "partial", "weak", "saturated", "unknown", "n/a")
"""The first word of every verdict."""

_EFFECTIVE = 0.1
_WEAK = 0.5


@dataclass(frozen=True)
class IndexEffectiveness:
    """How well one index skips.

    Attributes:
        kind / column: the index.
        files: entries in the snapshot.
        unknown_files: entries without usable metadata (always read).
        point_read_fraction: expected fraction of files an equality lookup of a value drawn
            from the data reads (None: no file holds a value).
        range_read_fraction: min/max only: {width: fraction} for ranges of
            :data:`RANGE_WIDTHS` of the column's span.
        verdict: a short sentence (first word in :data:`VERDICTS`).
        details: kind-specific estimates (see :func:`effectiveness`).
    """

    kind: str
    column: str
    files: int
    unknown_files: int
    point_read_fraction: float | None
    range_read_fraction: dict | None
    verdict: str
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def effectiveness(snapshot: Snapshot) -> list[IndexEffectiveness]:
    """One :class:`IndexEffectiveness` per index of ``snapshot`` (a ``metaindex.store``
    snapshot), in the order of its index definitions. Reads only the snapshot's parts, with
    the row counts and the index columns only (``Snapshot.read_parts``)."""
    table = snapshot.read_parts(
        snapshot.part_paths, [OBJ_ROWS, *(d.storage_name for d in snapshot.index_defs)]
    )
    rows = _row_counts(table.column(OBJ_ROWS))
    out = []
    for d in snapshot.index_defs:
        meta = table.column(d.storage_name)
        meta = meta.combine_chunks() if isinstance(meta, pa.ChunkedArray) else meta
        ix = index_for(d)
        if ix is None:  # a kind not registered in this process
            out.append(_no_estimate(d.name, d.cols[0], len(meta)))
        elif pa.types.is_null(meta.type):
            out.append(_unknown(ix, len(meta)))
        else:
            found = ix.estimate(meta, rows)
            out.append(
                _no_estimate(d.name, d.cols[0], len(meta))
                if found is None
                else _rated(ix, len(meta), found)
            )
    return out


def _row_counts(column) -> np.ndarray:
    """float64 row counts of the files; a file whose count is unknown (null: an entry carried
    over from an xskipper store of CSV/JSON/ORC files) counts as the mean of the known ones
    (1 when none is known)."""
    rows = np.asarray(column.to_numpy(zero_copy_only=False), np.float64)
    unknown = np.isnan(rows)
    if unknown.any():
        rows[unknown] = rows[~unknown].mean() if not unknown.all() else 1.0
    return rows


def _no_estimate(kind: str, column: str, n: int) -> IndexEffectiveness:
    return IndexEffectiveness(
        kind, column, n, 0, None, None, "unknown: no estimate for this index kind"
    )


def _rated(ix: Index, n: int, e: Estimate) -> IndexEffectiveness:
    return IndexEffectiveness(
        ix.name,
        ix.column,
        n,
        e.unknown_files,
        e.point_read_fraction,
        e.range_read_fraction,
        verdict_for(ix.name, e.point_read_fraction, n, e.unknown_files, e.saturated),
        dict(e.details),
    )


def verdict_for(
    kind: str, fraction: float | None, files: int, unknown: int, saturated: bool = False
) -> str:
    """The verdict sentence of an index of ``kind`` with these numbers (the kind's words:
    ``Index.SATURATED``, ``Index.OVERLAP``)."""
    cls = KINDS.get(kind)
    overlap = Index.OVERLAP if cls is None else cls.OVERLAP
    known = files - unknown
    if saturated:
        return (cls and cls.SATURATED) or (
            f"saturated {kind} index: most files have no usable metadata for it"
        )
    if files and unknown * 2 > files:
        return "unknown: most files have no usable metadata for this index (always read)"
    if fraction is None or known < 2:
        return "n/a: fewer than two indexed files hold a value"
    if fraction <= max(_EFFECTIVE, 1.5 / files):
        return "effective"
    if fraction >= _WEAK:
        return f"weak: {overlap[0]}; cluster the table by this column"
    return f"partial: {overlap[1]}; clustering by this column would help"


def _unknown(ix: Index, n: int) -> IndexEffectiveness:
    return IndexEffectiveness(
        ix.name, ix.column, n, n, 1.0 if n else None, None, verdict_for(ix.name, 1.0, n, n)
    )
