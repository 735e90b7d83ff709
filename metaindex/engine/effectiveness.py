"""How well each index of a snapshot can skip files, computed from the index alone (no data scan).

For every index the headline number is ``point_read_fraction``: the expected fraction of the
snapshot's files that an equality lookup (``col = v``) must read, for a value ``v`` drawn from
the table's rows. 1/n is the best an index can do on n files (each value lives in one file);
1.0 means the index never skips. Entries without usable metadata are always read and count as
read. The estimators, per kind:

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

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.index import make_index
from metaindex.index.base import valid_mask
from metaindex.index.bloom import bitset_offsets
from metaindex.store import OBJ_ROWS

__all__ = ["IndexEffectiveness", "effectiveness", "minmax_positions", "point_read_fraction",
           "read_fractions", "expected_cover", "RANGE_WIDTHS", "VERDICTS", "verdict_for"]

RANGE_WIDTHS = (0.001, 0.01, 0.1)
"""Range widths (fractions of a min/max column's span) of ``range_read_fraction``."""

VERDICTS = ("effective", "partial", "weak", "saturated", "unknown", "n/a")
"""The first word of every verdict."""

_EFFECTIVE = 0.1
_WEAK = 0.5
_PAIRS = 256           # sampled file pairs for the bloom overlap estimate
_PAIR_BYTES = 64 << 20  # at most this many bitset bytes folded for it
_FILL_BYTES = 64 << 20  # fills are measured on a random subset of files above this
_CHUNK_BLOCKS = 1 << 16
_LANES = np.arange(32)
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint8)


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


def effectiveness(snapshot) -> list:
    """One :class:`IndexEffectiveness` per index of ``snapshot`` (a ``metaindex.store``
    snapshot), in the order of its index definitions. Reads only the snapshot's parts, with
    the row counts and the index columns only (``Snapshot.read_parts``)."""
    table = snapshot.read_parts(snapshot.part_paths,
                                [OBJ_ROWS, *(d.storage_name for d in snapshot.index_defs)])
    rows = np.asarray(table.column(OBJ_ROWS).to_numpy(), np.float64) if table.num_rows \
        else np.zeros(0)
    out = []
    for d in snapshot.index_defs:
        meta = table.column(d.storage_name)
        meta = meta.combine_chunks() if isinstance(meta, pa.ChunkedArray) else meta
        estimate = _ESTIMATORS.get(d.name)
        if estimate is None:  # a user-registered kind: nothing to estimate from
            out.append(IndexEffectiveness(d.name, d.cols[0], len(meta), 0, None, None,
                                          "unknown: no estimate for this index kind"))
            continue
        ix = make_index(d.name, d.cols, d.params)
        if pa.types.is_null(meta.type):
            out.append(_unknown(ix, len(meta)))
            continue
        out.append(estimate(ix, meta, rows))
    return out


def verdict_for(kind: str, fraction: float | None, files: int, unknown: int,
                saturated: bool = False) -> str:
    """The verdict sentence of an index with these numbers."""
    known = files - unknown
    if saturated:
        return {"valuelist": "saturated value list: most files exceed max_values; use a "
                             "bloom filter index or raise max_values",
                "bloom": "saturated bloom filter: files hold more distinct values than "
                         "max_bytes allows at the fpp; raise max_bytes"}[kind]
    if files and unknown * 2 > files:
        return "unknown: most files have no usable metadata for this index (always read)"
    if fraction is None or known < 2:
        return "n/a: fewer than two indexed files hold a value"
    if fraction <= max(_EFFECTIVE, 1.5 / files):
        return "effective"
    what = "ranges overlap" if kind == "minmax" else "values occur in most files"
    if fraction >= _WEAK:
        return f"weak: {what}; cluster the table by this column"
    what = "ranges overlap partly" if kind == "minmax" else "values recur across files"
    return f"partial: {what}; clustering by this column would help"


def _unknown(ix, n: int) -> IndexEffectiveness:
    return IndexEffectiveness(ix.name, ix.column, n, n, 1.0 if n else None, None,
                              verdict_for(ix.name, 1.0, n, n))


# ------------------------------------------------------------------------------ min/max

def minmax_positions(meta: pa.Array) -> tuple:
    """Where the files' ranges lie on one numeric scale.

    Args:
        meta: a min/max index's metadata (``struct<min, max, null_count, nan_count>``).

    Returns:
        ``(known, has_value, lo, hi, ordinal)``: per entry whether it is usable and whether it
        holds a non-null, non-NaN value; for the entries with a value (in order), their bounds
        as float64 (numbers, dates and timestamps in their own unit; strings and binary as the
        dense rank among all bounds, ``ordinal`` True). Infinite bounds are clamped to the
        finite extremes.
    """
    mins, maxs = meta.field("min"), meta.field("max")
    has_value = valid_mask(mins)
    known = valid_mask(meta) & (has_value == valid_mask(maxs))
    take = pa.array(np.flatnonzero(known & has_value))
    lo_a, hi_a = mins.take(take), maxs.take(take)
    t = lo_a.type
    ordinal = False
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        lo_a, hi_a = lo_a.view(pa.int32()), hi_a.view(pa.int32())
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t) or \
            pa.types.is_duration(t):
        lo_a, hi_a = lo_a.view(pa.int64()), hi_a.view(pa.int64())
    elif pa.types.is_boolean(t):
        lo_a, hi_a = lo_a.cast(pa.int8()), hi_a.cast(pa.int8())
    if pa.types.is_integer(lo_a.type) or pa.types.is_floating(lo_a.type) or \
            pa.types.is_decimal(lo_a.type):
        lo = np.asarray(lo_a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
        hi = np.asarray(hi_a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    else:
        ordinal = True
        both = pa.concat_arrays([lo_a, hi_a])
        ranks = np.asarray(pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy(),
                           np.float64) - 1.0
        lo, hi = ranks[:len(lo_a)], ranks[len(lo_a):]
    finite = np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
    if len(finite) and len(finite) < 2 * len(lo):
        lo = np.clip(np.nan_to_num(lo, nan=finite.min()), finite.min(), finite.max())
        hi = np.clip(np.nan_to_num(hi, nan=finite.max()), finite.min(), finite.max())
    return known, has_value, lo, hi, ordinal


def expected_cover(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray,
                   pads=(0.0,)) -> np.ndarray:
    """For each pad p: E[#files whose ``[lo - p, hi + p]`` holds x], x drawn from the data.

    The data model: file i holds ``weights[i]`` (normalised) of the rows, spread uniformly
    over ``[lo[i], hi[i]]`` (a point mass where they are equal). Exact for that model, in
    O(n log n): ``F(t) = integral of C up to t`` (C counts the padded ranges holding t) is a
    difference of prefix sums over the sorted interval ends. One sort serves every pad.
    """
    n = len(lo)
    out = np.zeros(len(pads))
    if n == 0:
        return out
    total = weights.sum()
    w = weights / total if total > 0 else np.full(n, 1.0 / n)
    lo_sorted, hi_sorted = np.sort(lo), np.sort(hi)
    point = hi <= lo
    spread = ~point
    a, b, ws = lo[spread], hi[spread], w[spread]
    a_order, b_order = np.argsort(a), np.argsort(b)  # sorted needles keep searchsorted cached
    a_sorted, b_sorted = a[a_order], b[b_order]
    for p, pad in enumerate(pads):
        clo, chi = lo_sorted - pad, hi_sorted + pad
        if point.any():
            x = lo[point]
            count = np.searchsorted(clo, x, "right") - np.searchsorted(chi, x, "left")
            out[p] += float(np.dot(w[point], count))
        if not len(a):
            continue
        slo = np.concatenate([[0.0], np.cumsum(clo)])
        shi = np.concatenate([[0.0], np.cumsum(chi)])

        def integral(ts: np.ndarray, order: np.ndarray) -> np.ndarray:
            k = np.searchsorted(clo, ts, "right")
            m = np.searchsorted(chi, ts, "right")
            values = np.empty_like(ts)
            values[order] = (k * ts - slo[k]) - (m * ts - shi[m])
            return values

        out[p] += float(np.dot(ws, (integral(b_sorted, b_order) - integral(a_sorted, a_order))
                               / (b - a)))
    return out


def read_fractions(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, files: int,
                   unknown: int = 0, widths=(0.0,)) -> list:
    """:func:`expected_cover` as fractions of ``files`` (``unknown`` entries always read),
    for lookups (width 0) and ranges ``width`` times the column's span wide, centred on a
    value from the data."""
    if files == 0:
        return [0.0 for _ in widths]
    span = float(np.max(hi) - np.min(lo)) if len(lo) else 0.0
    if span > 0:
        base = float(np.min(lo))
        lo, hi = (lo - base) / span, (hi - base) / span
    else:
        lo, hi = np.zeros_like(lo), np.zeros_like(hi)
    covers = expected_cover(lo, hi, weights, [w / 2 for w in widths])
    return [min(1.0, (float(c) + unknown) / files) for c in covers]


def point_read_fraction(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, files: int,
                        unknown: int = 0, width: float = 0.0) -> float:
    """One of :func:`read_fractions`."""
    return read_fractions(lo, hi, weights, files, unknown, (width,))[0]


def _minmax(ix, meta: pa.Array, rows: np.ndarray) -> IndexEffectiveness:
    n = len(meta)
    known, has_value, lo, hi, ordinal = minmax_positions(meta)
    unknown = int(n - np.count_nonzero(known))
    valued = known & has_value
    weights = rows[valued] - _counts(meta, "null_count", valued) - _counts(meta, "nan_count",
                                                                           valued)
    weights = np.where(weights > 0, weights, 0.0)
    if not len(lo):
        fraction, curve = None, None
    else:
        fraction, *rest = read_fractions(lo, hi, weights, n, unknown, (0.0, *RANGE_WIDTHS))
        curve = dict(zip(RANGE_WIDTHS, rest))
    details = {"files_with_value": int(len(lo)), "scale": "ordinal" if ordinal else "value",
               "ideal_read_fraction": (1.0 / n) if n else None}
    return IndexEffectiveness(ix.name, ix.column, n, unknown, fraction, curve,
                              verdict_for(ix.name, fraction, n, unknown), details)


def _counts(meta: pa.Array, name: str, rows: np.ndarray) -> np.ndarray:
    col = meta.field(name)
    values = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), np.float64)
    return values[rows]


# ------------------------------------------------------------------------------ value list

def _valuelist(ix, meta: pa.Array, rows: np.ndarray) -> IndexEffectiveness:
    n = len(meta)
    lists = meta.field("values")
    known = valid_mask(meta) & valid_mask(lists) & valid_mask(meta.field("has_null"))
    unknown = int(n - np.count_nonzero(known))
    lengths = np.where(known, np.asarray(pc.list_value_length(lists).fill_null(0)
                                         .to_numpy(zero_copy_only=False), np.int64), 0)
    fraction = unknown / n if unknown else None
    per_value = None
    if lengths.sum():
        parents = np.repeat(np.arange(n), lengths)
        flat = lists.filter(pa.array(known)).flatten()
        distinct = pc.unique(flat)
        idx = np.asarray(pc.index_in(flat, value_set=distinct).fill_null(0).to_numpy(),
                         np.int64)
        files_per_value = np.bincount(idx, minlength=len(distinct))
        weights = (np.maximum(rows, 1.0) / np.maximum(lengths, 1))[parents]
        covered = float(np.dot(weights, files_per_value[idx]) / weights.sum())
        fraction = min(1.0, (covered + unknown) / n)
        per_value = float(files_per_value.mean())
    saturated = n > 0 and unknown * 2 > n  # an unknown list is one over max_values
    details = {"saturated_files": unknown, "distinct_values": None if per_value is None
               else int(len(distinct)), "files_per_distinct_value": per_value,
               "max_values": ix.params.get("max_values")}
    return IndexEffectiveness(ix.name, ix.column, n, unknown, fraction, None,
                              verdict_for(ix.name, fraction, n, unknown, saturated), details)


# ------------------------------------------------------------------------------ bloom

def _block_fill(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Fraction of bits set in each 32-byte block starting at ``starts`` (in chunks, so the
    memory used stays small whatever the index size)."""
    out = np.empty(len(starts))
    for i in range(0, len(starts), _CHUNK_BLOCKS):
        chunk = starts[i:i + _CHUNK_BLOCKS]
        out[i:i + len(chunk)] = _POPCOUNT[data[chunk[:, None] + _LANES]].sum(axis=1) / 256.0
    return out


def _inserts(fill: np.ndarray) -> float:
    """Values inserted into blocks with these fills (each sets one bit in each 32-bit word)."""
    f = np.minimum(fill, 255.0 / 256.0)
    return float(np.sum(np.log1p(-f)) / math.log1p(-1.0 / 32.0))


def _fold(block_bytes: np.ndarray, blocks: int) -> np.ndarray:
    """A filter's bitset (``(z, 32)`` bytes) folded to ``blocks`` blocks."""
    z = len(block_bytes)
    if z == blocks:
        return block_bytes
    return np.bitwise_or.reduce(block_bytes.reshape(blocks, z // blocks, 32), axis=1)


def _bloom(ix, meta: pa.Array, rows: np.ndarray) -> IndexEffectiveness:
    n = len(meta)
    bitsets = meta.field("bitset")
    offsets = bitset_offsets(bitsets)
    sizes = np.diff(offsets)
    present = valid_mask(meta) & valid_mask(bitsets)
    valid = present & (sizes >= 32) & ((sizes & (sizes - 1)) == 0)
    unknown = int(n - np.count_nonzero(valid_mask(meta) & (valid | ~valid_mask(bitsets))))
    files = np.flatnonzero(valid)
    data_buf = bitsets.buffers()[2]
    if not len(files) or data_buf is None:
        fraction = unknown / n if unknown else None  # else no file holds a value
        return IndexEffectiveness(ix.name, ix.column, n, unknown, fraction, None,
                                  verdict_for(ix.name, fraction, n, unknown), {})
    data = np.frombuffer(data_buf, np.uint8)
    measured = files
    if sizes[files].sum() > _FILL_BYTES:  # estimate the fills from a random subset
        shuffled = np.random.default_rng(1).permutation(files)
        measured = np.sort(shuffled[:max(1, int(np.searchsorted(
            np.cumsum(sizes[shuffled]), _FILL_BYTES)))])
    nblocks = sizes[measured] // 32
    block_file = np.repeat(np.arange(len(measured)), nblocks)
    first = np.repeat(offsets[measured], nblocks)
    within = np.arange(len(block_file)) - np.repeat(np.cumsum(nblocks) - nblocks, nblocks)
    fill = _block_fill(data, first + 32 * within)
    fpp = np.bincount(block_file, weights=fill ** 8) / nblocks
    log_empty = np.log1p(-np.minimum(fill, 255.0 / 256.0))
    ndv = np.bincount(block_file, weights=log_empty) / math.log1p(-1.0 / 32.0)
    share = _shared_fraction(data, offsets, measured, nblocks, rows)
    nb = len(files)
    holders = 1.0 + (nb - 1) * (share or 0.0)
    mean_fpp = float(fpp.mean())
    fraction = min(1.0, (holders + (nb - holders) * mean_fpp + unknown) / n)
    target = ix.params.get("fpp", 0.01)
    saturated = mean_fpp > max(3 * target, 0.05)
    details = {"estimated_fpp": mean_fpp, "fpp": target,
               "distinct_per_file": float(ndv.mean()),
               "files_per_value": None if share is None else holders}
    return IndexEffectiveness(ix.name, ix.column, n, unknown, fraction, None,
                              verdict_for(ix.name, fraction, n, unknown, saturated), details)


_ESTIMATORS = {"minmax": _minmax, "valuelist": _valuelist, "bloom": _bloom}


def _shared_fraction(data, offsets, files, nblocks, rows) -> float | None:
    """Mean over sampled pairs (A, B) of |A ∩ B| / |A|: the chance that another file holds a
    value of a file (A drawn by rows, B uniformly). None when no pair could tell (one file,
    or every sampled union too full): the caller then counts one file per value."""
    nb = len(files)
    if nb < 2:
        return None
    rng = np.random.default_rng(0)
    weights = np.maximum(rows[files], 1.0)
    pairs = min(_PAIRS, nb * (nb - 1))
    a = rng.choice(nb, size=pairs, p=weights / weights.sum())
    b = (a + rng.integers(1, nb, size=pairs)) % nb
    total, used, spent = 0.0, 0, 0

    def blocks_of(i):
        start = offsets[files[i]]
        return data[start:start + 32 * nblocks[i]].reshape(nblocks[i], 32)

    for i, j in zip(a, b):
        z = int(min(nblocks[i], nblocks[j]))
        fa, fb = _fold(blocks_of(i), z), _fold(blocks_of(j), z)
        union = fa | fb
        u_fill = _POPCOUNT[union].sum(axis=1) / 256.0
        if u_fill.mean() > 0.9:
            continue  # too full to tell overlaps apart
        na = _inserts(_POPCOUNT[fa].sum(axis=1) / 256.0)
        nbv = _inserts(_POPCOUNT[fb].sum(axis=1) / 256.0)
        if na <= 0:
            continue
        total += (na + nbv - _inserts(u_fill)) / na
        used += 1
        spent += 64 * z
        if spent > _PAIR_BYTES:
            break
    return min(1.0, max(0.0, total / used)) if used else None
