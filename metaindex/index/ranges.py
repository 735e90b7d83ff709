"""Where files' value ranges lie, and how many of them a lookup meets: the arithmetic behind a
range-based kind's effectiveness estimate (``MinMaxIndex.estimate``) and the layout advice
(``metaindex.engine.advice``).

Each file's non-null, non-NaN rows are taken as spread uniformly over its ``[min, max]`` (a point
mass where ``min == max``), weighted by the file's row count. The expected number of files whose
range covers ``v`` is then ``sum_i w_i / (max_i - min_i) * integral of C(x) over [min_i, max_i]``
with ``C(x)`` the number of ranges holding ``x``; the integral of a step function with n steps is
a difference of prefix sums, so the whole estimate is two sorts and a few ``searchsorted``
calls. Ranges of width ``w`` (a fraction of the column's span, centred on a value from the data)
meet a file when their centre lies in ``[min - w/2, max + w/2]``. Numbers, dates and timestamps
are placed on their own scale; strings and binary on the ordinal scale of the distinct bounds
(their dense rank), so "span" there means ranks, not bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.index.base import valid_mask

__all__ = [
    "RANGE_WIDTHS",
    "minmax_positions",
    "expected_cover",
    "read_fractions",
    "point_read_fraction",
]

RANGE_WIDTHS = (0.001, 0.01, 0.1)
"""Range widths (fractions of a min/max column's span) of ``range_read_fraction``."""


def minmax_positions(meta: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
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
    elif (
        pa.types.is_date64(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_time64(t)
        or pa.types.is_duration(t)
    ):
        lo_a, hi_a = lo_a.view(pa.int64()), hi_a.view(pa.int64())
    elif pa.types.is_boolean(t):
        lo_a, hi_a = lo_a.cast(pa.int8()), hi_a.cast(pa.int8())
    if (
        pa.types.is_integer(lo_a.type)
        or pa.types.is_floating(lo_a.type)
        or pa.types.is_decimal(lo_a.type)
    ):
        lo = np.asarray(lo_a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
        hi = np.asarray(hi_a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    else:
        ordinal = True
        both = pa.concat_arrays([lo_a, hi_a])
        ranks = (
            np.asarray(
                pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy(), np.float64
            )
            - 1.0
        )
        lo, hi = ranks[: len(lo_a)], ranks[len(lo_a) :]
    finite = np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
    if len(finite) and len(finite) < 2 * len(lo):
        lo = np.clip(np.nan_to_num(lo, nan=finite.min()), finite.min(), finite.max())
        hi = np.clip(np.nan_to_num(hi, nan=finite.max()), finite.min(), finite.max())
    return known, has_value, lo, hi, ordinal


def expected_cover(
    lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, pads: Sequence[float] = (0.0,)
) -> np.ndarray:
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
        ends = (
            clo,
            chi,
            np.concatenate([[0.0], np.cumsum(clo)]),
            np.concatenate([[0.0], np.cumsum(chi)]),
        )
        out[p] += float(
            np.dot(
                ws,
                (_integral(b_sorted, b_order, ends) - _integral(a_sorted, a_order, ends)) / (b - a),
            )
        )
    return out


def _integral(ts: np.ndarray, order: np.ndarray, ends: tuple) -> np.ndarray:
    """``F(t)`` (the integral of the count of padded ranges holding x, up to t) at the sorted
    points ``ts``, put back in their order; ``ends``: the sorted padded lower and upper ends
    and their prefix sums."""
    clo, chi, slo, shi = ends
    k = np.searchsorted(clo, ts, "right")
    m = np.searchsorted(chi, ts, "right")
    values = np.empty_like(ts)
    values[order] = (k * ts - slo[k]) - (m * ts - shi[m])
    return values


def read_fractions(
    lo: np.ndarray,
    hi: np.ndarray,
    weights: np.ndarray,
    files: int,
    unknown: int = 0,
    widths: Sequence[float] = (0.0,),
) -> list[float]:
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


def point_read_fraction(
    lo: np.ndarray,
    hi: np.ndarray,
    weights: np.ndarray,
    files: int,
    unknown: int = 0,
    width: float = 0.0,
) -> float:
    """One of :func:`read_fractions`."""
    return read_fractions(lo, hi, weights, files, unknown, (width,))[0]
