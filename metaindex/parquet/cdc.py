"""Content-defined data page boundaries (pyarrow's ``use_content_defined_chunking``).

Pages end where a gear hash rolled over the column's values says so, not at fixed sizes, so an
insert or a delete in one place changes only the pages around it and deduplicating storage keeps
the rest. As in pyarrow (a FastCDC variant), every page holds at least ``min_chunk_size`` and
at most ``max_chunk_size`` bytes of values (estimated at the column's average value width), and
``norm_level`` narrows the spread of page sizes around their average. Each value contributes
its XXH64 (nulls a constant per definition level) to a 64-term gear hash; a page may end after
a value whose hash has its top bits clear. The boundaries are our own: pages differ from
pyarrow's, the property (content-defined, size-bounded pages) is the same. Nested columns end
pages only at record starts.
"""

from __future__ import annotations

import math

import numpy as np

from metaindex.bloom import xxh64

__all__ = ["cdc_options", "page_bounds"]

_DEFAULTS = {"min_chunk_size": 256 * 1024, "max_chunk_size": 1024 * 1024, "norm_level": 0}
_BOOLEAN = 0


def cdc_options(option) -> tuple[int, int, int] | None:
    """``(min_chunk_size, max_chunk_size, norm_level)`` from True or pyarrow's dict."""
    if not option:
        return None
    merged = dict(_DEFAULTS)
    if isinstance(option, dict):
        merged.update(option)
    lo, hi, norm = merged["min_chunk_size"], merged["max_chunk_size"], merged["norm_level"]
    for name, value in (("min_chunk_size", lo), ("max_chunk_size", hi), ("norm_level", norm)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"use_content_defined_chunking: {name} must be an int")
    if lo <= 0 or norm < 0:
        raise ValueError(
            "use_content_defined_chunking: min_chunk_size must be positive and "
            "norm_level not negative"
        )
    if hi <= lo:
        raise ValueError("max_chunk_size must be greater than min_chunk_size")
    return lo, hi, norm


def _level_hashes(values, physical_type: int, def_levels, max_def: int, n: int) -> np.ndarray:
    if physical_type == _BOOLEAN:
        present = np.asarray(values, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    else:
        present = xxh64(values, physical_type=physical_type)
    if def_levels is None:
        return present
    out = (def_levels.astype(np.uint64) + np.uint64(1)) * np.uint64(0xBF58476D1CE4E5B9)
    out[def_levels == max_def] = present
    return out


def page_bounds(spec, data, value_width: int, options: tuple[int, int, int]) -> list:
    """``[(first level, end level)]`` of each page of one column chunk."""
    n = data.num_levels
    if n == 0:
        return [(0, 0)]
    lo_size, hi_size, norm = options
    width = max(1, int(value_width))
    g = _level_hashes(data.values, spec.physical_type, data.def_levels, spec.max_def, n)
    h = np.zeros(n, np.uint64)
    for k in range(min(64, n)):  # gear hash: h_i = sum over the last 64 values of g << age
        h[k:] += g[: n - k] << np.uint64(k)
    bits = max(1, int(math.log2(max(2, (hi_size - lo_size) // 2 // width))) + norm)
    ends = np.flatnonzero((h >> np.uint64(64 - min(bits, 63))) == 0) + 1
    if data.rep_levels is not None:
        record_starts = np.append(np.flatnonzero(data.rep_levels == 0), n)
        ends = ends[np.isin(ends, record_starts)]
    else:
        record_starts = None
    size = np.arange(n + 1, dtype=np.int64) * width  # bytes before each level position
    bounds, start = [], 0
    while start < n:
        first = int(np.searchsorted(size, size[start] + lo_size))
        last = int(np.searchsorted(size, size[start] + hi_size, side="right")) - 1
        j = int(np.searchsorted(ends, max(first, start + 1)))
        if j < len(ends) and ends[j] <= last:
            cut = int(ends[j])
        else:
            cut = min(n, max(last, start + 1))
            if record_starts is not None:
                cut = int(record_starts[np.searchsorted(record_starts, cut)])
        bounds.append((start, cut))
        start = cut
    return bounds
