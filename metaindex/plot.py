"""A picture of the min/max indexes: each file's range as a horizontal interval, sorted by min.

On a table clustered by the column the intervals form a thin staircase (a lookup meets one or
two files); on a table written in another order they pile up across the whole span (a lookup
meets every file). One panel per range index (a kind with ``Index.RANGES`` whose metadata are
``struct<min, max, ...>``: min/max, and a user's kind stored the same way), titled with its
point read fraction and verdict (``metaindex.engine.effectiveness``).

matplotlib is an optional extra (``pip install metaindex[plot]``), imported only here; it draws
with the object-oriented API on an Agg canvas, so no GUI backend or pyplot state is touched.
"""

from __future__ import annotations

import os

import numpy as np

from metaindex.errors import MissingDependencyError

__all__ = ["plot_ranges", "MAX_FILES_DRAWN"]

MAX_FILES_DRAWN = 2000
"""Panels with more files draw every k-th file (in min order), and say so."""


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError(
            f"plotting needs matplotlib ({exc}); install it with "
            "`pip install metaindex[plot]` (or `pip install matplotlib`)"
        ) from None
    return Figure, FigureCanvasAgg


def _has_bounds(arrow_type) -> bool:
    """Whether an index's metadata are ``struct<min, max, ...>`` (what a range kind stores and
    :func:`~metaindex.index.ranges.minmax_positions` reads)."""
    import pyarrow as pa

    return (
        pa.types.is_struct(arrow_type)
        and arrow_type.get_field_index("min") >= 0
        and arrow_type.get_field_index("max") >= 0
    )


def _axis_values(values: np.ndarray, arrow_type):
    """Positions as matplotlib understands them: datetimes for dates and timestamps."""
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type):
        return values.astype(np.int64).astype(f"datetime64[{arrow_type.unit}]")
    if pa.types.is_date32(arrow_type):
        return values.astype(np.int64).astype("datetime64[D]")
    if pa.types.is_date64(arrow_type):
        return values.astype(np.int64).astype("datetime64[ms]")
    return values


def _label_ranks(ax, meta) -> None:
    """Tick labels of an ordinal axis: some of the distinct bounds themselves."""
    import pyarrow as pa
    import pyarrow.compute as pc

    both = pa.concat_arrays([meta.field("min"), meta.field("max")]).drop_null()
    distinct = pc.unique(both)
    distinct = distinct.take(pc.sort_indices(distinct)).to_pylist()
    ticks = np.unique(np.linspace(0, len(distinct) - 1, min(8, len(distinct))).astype(int))
    labels = []
    for i in ticks:
        value = distinct[i]
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        labels.append(text if len(text) <= 14 else text[:13] + "…")
    ax.set_xticks(ticks, labels)


def plot_ranges(
    snapshot,
    effect: list,
    path,
    *,
    columns=None,
    title: str | None = None,
    max_files: int = MAX_FILES_DRAWN,
) -> str:
    """Draw the min/max indexes of ``snapshot`` into an image file.

    Args:
        snapshot: a ``metaindex.store`` snapshot.
        effect: its ``metaindex.engine.effectiveness.effectiveness()`` (for the titles).
        path: where to write; the format follows the extension (``.png``, ``.svg``, ``.pdf``).
        columns: only these min/max columns (default: all).
        title: the figure's title (default: none).
        max_files: draw at most this many files per panel (every k-th in min order).

    Returns:
        The path written.

    Raises:
        MissingDependencyError: matplotlib is not installed.
        ValueError: no min/max index (or none of ``columns``).
    """
    from metaindex.engine.effectiveness import minmax_positions
    from metaindex.index import KINDS

    path = os.fspath(path)
    table = snapshot.metadata_table()
    defs = [
        d
        for d in snapshot.index_defs
        if getattr(KINDS.get(d.name), "RANGES", False)
        and _has_bounds(table.schema.field(d.storage_name).type)
        and (columns is None or d.cols[0] in columns)
    ]
    if not defs:
        raise ValueError(
            "nothing to draw: the index has no min/max index"
            + ("" if columns is None else f" on {list(columns)}")
        )
    Figure, FigureCanvasAgg = _matplotlib()
    verdicts = {(e.kind, e.column): e for e in effect}
    fig = Figure(figsize=(8, 2.6 * len(defs) + (0.4 if title else 0)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(defs), 1, squeeze=False)[:, 0]
    for ax, d in zip(axes, defs, strict=True):
        meta = table.column(d.storage_name).combine_chunks()
        column = d.cols[0]
        e = verdicts.get((d.name, column))
        head = f"{d.name}({column})"
        if e is not None and e.point_read_fraction is not None:
            head += (
                f": a lookup reads {e.point_read_fraction:.1%} of {e.files:,} files — {e.verdict}"
            )
        if len(meta) == 0 or meta.null_count == len(meta):
            ax.set_title(head + " (no ranges)", fontsize=9, loc="left")
            ax.set_axis_off()
            continue
        _, _, lo, hi, ordinal = minmax_positions(meta)
        order = np.argsort(lo, kind="stable")
        step = max(1, -(-len(order) // max_files))
        order = order[::step]
        lo, hi = lo[order], hi[order]
        ys = np.arange(len(order))
        arrow_type = meta.type.field("min").type
        x0, x1 = (
            (lo, hi) if ordinal else (_axis_values(lo, arrow_type), _axis_values(hi, arrow_type))
        )
        ax.hlines(
            ys, x0, x1, color="#1f77b4", linewidth=max(0.3, min(4.0, 160 / len(order))), alpha=0.9
        )
        point = hi <= lo
        if point.any():
            ax.plot(x0[point], ys[point], "|", color="#1f77b4", markersize=3)
        if ordinal:
            _label_ranks(ax, meta)
        ax.set_ylim(-1, len(order))
        ax.set_ylabel("files, by min" + (f" (every {step}th)" if step > 1 else ""), fontsize=8)
        ax.set_xlabel(
            f"{column}" + (" (bounds in order, evenly spaced)" if ordinal else ""), fontsize=8
        )
        ax.tick_params(labelsize=7)
        ax.set_title(head, fontsize=9, loc="left")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110)
    return path
