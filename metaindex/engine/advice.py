"""Layout advice: which ordering of the table would make its min/max indexes selective.

A min/max index skips well only when each file holds a narrow slice of the column, which is
a matter of how the table was written, not of the index. This module estimates, for each
layout Spark can produce, the fraction of files an equality lookup would read on each
min/max-indexed column, and says how to get the best one. It never rewrites data.

How: read a sample of rows of the indexed columns with our reader (up to ``sample_files``
files picked at random, up to ``sample_rows`` rows in all), then simulate writing the sample
into ``k`` files (the table's file count, at most one per ~100 sampled rows so each simulated
file has enough rows to show its range) the way Spark would:

* ``repartitionByRange(k, c)``: range bounds at the quantiles of ``c`` (equal values stay in
  one file, nulls first), as Spark's RangePartitioner cuts them;
* Z-order of two numeric or temporal columns: each scaled linearly to 10 bits between its
  sampled bounds, bits interleaved into one key, then range-partitioned on that key (the
  Spark expression is in the advice).

Each simulated file's range per column gives the read fraction through the same estimator as
``metaindex.engine.effectiveness`` (so "before", computed from the index, and "after" are the
same measure). ``sortWithinPartitions`` orders rows inside each file: it tightens row groups
for Spark's own reader but does not change which rows share a file, so alone it does not
help the index (it is recommended after ``repartitionByRange``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.engine.effectiveness import point_read_fraction
from metaindex.engine.schema import locate
from metaindex.formats import FormatSpec
from metaindex.index import KINDS
from metaindex.store import OBJ_NAME

__all__ = [
    "Advice",
    "LayoutOption",
    "advise",
    "range_buckets",
    "zorder_keys",
    "scaled_expr",
    "ZORDER_BITS",
]

ZORDER_BITS = 10
"""Bits per column in a simulated / suggested Z-order key."""

_ROWS_PER_FILE = 100  # fewest sampled rows per simulated file
_IMPROVES = 0.05  # an option must lower the mean read fraction by this much


@dataclass(frozen=True)
class LayoutOption:
    """One way to write the table, with its estimated effect.

    Attributes:
        layout: e.g. ``repartitionByRange(time)`` or ``zorder(lat, lon)``.
        columns: the columns it orders by.
        read_fraction: {min/max column: (now, after)}: expected fraction of files an
            equality lookup on that column reads, now (from the index) and after (simulated).
        mean_before / mean_after: those averaged over the min/max columns.
        spark: PySpark code producing the layout (into a new location).
    """

    layout: str
    columns: tuple
    read_fraction: dict
    mean_before: float
    mean_after: float
    spark: str

    def to_dict(self) -> dict:
        out = asdict(self)
        out["columns"] = list(self.columns)
        out["read_fraction"] = {
            c: {"now": b, "after": a} for c, (b, a) in self.read_fraction.items()
        }
        return out


@dataclass(frozen=True)
class Advice:
    """What :func:`advise` found.

    Attributes:
        files: indexed files now. simulated_files: files the sample was cut into.
        sample_files / sample_rows: what was read.
        current: {min/max column: read fraction now (from the index)}.
        options: every simulated :class:`LayoutOption`, best (lowest mean_after) first.
        per_column: {min/max column: the option that makes that column most selective}.
        recommendation: the best option when it improves the mean read fraction by at least
            5 points, else None (the layout is already as good as the options simulated).
        notes: remarks for people.
    """

    files: int
    simulated_files: int
    sample_files: int
    sample_rows: int
    current: dict
    options: list
    per_column: dict
    recommendation: LayoutOption | None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "files": self.files,
            "simulated_files": self.simulated_files,
            "sample_files": self.sample_files,
            "sample_rows": self.sample_rows,
            "current": dict(self.current),
            "recommendation": None
            if self.recommendation is None
            else self.recommendation.to_dict(),
            "per_column": {c: o.to_dict() for c, o in self.per_column.items()},
            "options": [o.to_dict() for o in self.options],
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------------------ sampling


def _sample(
    location,
    data_format,
    names: pa.Array,
    columns: list,
    sample_files: int,
    sample_rows: int,
    rng: np.random.Generator,
) -> tuple:
    """({column: Arrow array of sampled values, aligned by row}, files read) from a sample of
    the files ``names`` (sorted), read with ``data_format`` (a
    :class:`metaindex.formats.DataFormat`)."""
    count = min(sample_files, len(names))
    picked = names.take(
        pa.array(np.sort(rng.choice(len(names), count, replace=False)), pa.int64())
    ).to_pylist()
    per_file = max(1, sample_rows // max(1, count))
    chunks: dict = {c: [] for c in columns}
    types: dict = {}
    for name in picked:
        with data_format.open(location.full_path(name), location.filesystem) as reader:
            located = {c: locate(reader.schema, c) for c in columns}
            tops = sorted({where[0] for where in located.values() if where is not None})
            table = reader.read_row_groups(range(reader.num_row_groups), tops)
        rows = table.num_rows
        take = (
            None
            if rows <= per_file
            else pa.array(np.sort(rng.choice(rows, per_file, replace=False)))
        )
        size = rows if take is None else per_file
        for c, where in located.items():
            if where is None:  # the file predates the column: nulls
                chunks[c].append(size)
                continue
            values = table.column(where[0])
            if where[1]:
                values = pc.struct_field(values, where[1])
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if pa.types.is_dictionary(values.type):
                values = values.dictionary_decode()
            types.setdefault(c, values.type)
            chunks[c].append(values if take is None else values.take(take))
    out = {}
    for c in columns:
        t = types.get(c, pa.null())
        parts = [
            pa.nulls(a, t) if isinstance(a, int) else a if a.type == t else a.cast(t)
            for a in chunks[c]
        ]
        out[c] = pa.concat_arrays(parts) if parts else pa.array([], t)
    return out, count


def _positions(values: pa.Array) -> tuple:
    """(float64 positions with NaN for null/NaN, whether the scale is ordinal)."""
    t = values.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        values = values.view(pa.int32())
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t):
        values = values.view(pa.int64())
    elif pa.types.is_boolean(t):
        values = values.cast(pa.int8())
    if (
        pa.types.is_integer(values.type)
        or pa.types.is_floating(values.type)
        or pa.types.is_decimal(values.type)
    ):
        pos = np.asarray(
            values.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False), np.float64
        )
        return pos, False
    ranks = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    pos = np.asarray(ranks.to_numpy(), np.float64)
    pos[np.asarray(values.is_null().to_numpy(zero_copy_only=False), np.bool_)] = np.nan
    return pos, True


# ------------------------------------------------------------------------------ simulation


def range_buckets(keys: np.ndarray, k: int) -> np.ndarray:
    """The file (0..k-1) of each row when range-partitioning on ``keys`` into ``k`` files:
    bounds at the quantiles of the non-null keys, equal keys in one file, NaN (null) first."""
    valid = ~np.isnan(keys)
    out = np.zeros(len(keys), np.int64)
    if not valid.any() or k <= 1:
        return out
    s = np.sort(keys[valid])
    bounds = s[(np.arange(1, k) * len(s)) // k]
    out[valid] = np.searchsorted(bounds, keys[valid], side="left")
    return out


def zorder_keys(a: np.ndarray, b: np.ndarray, bounds_a: tuple, bounds_b: tuple) -> np.ndarray:
    """The Z-order key the suggested Spark code computes: each column scaled linearly to
    :data:`ZORDER_BITS` bits between its bounds (clamped), bits of ``a`` above those of ``b``
    at each level. NaN (null) in either gives NaN."""
    top = (1 << ZORDER_BITS) - 1
    scaled = []
    for x, (lo, hi) in ((a, bounds_a), (b, bounds_b)):
        q = np.clip((x - lo) / (hi - lo), 0.0, 1.0) * top
        scaled.append(np.where(np.isnan(q), 0, q).astype(np.int64))
    z = np.zeros(len(a), np.int64)
    for bit in range(ZORDER_BITS):
        z |= ((scaled[0] >> bit) & 1) << (2 * bit + 1)
        z |= ((scaled[1] >> bit) & 1) << (2 * bit)
    out = z.astype(np.float64)
    out[np.isnan(a) | np.isnan(b)] = np.nan
    return out


def _fraction_after(buckets: np.ndarray, k: int, pos: np.ndarray) -> float:
    """The read fraction of a column over the non-empty simulated files (empty partitions
    write no file)."""
    files = len(np.unique(buckets))
    valid = ~np.isnan(pos)
    b, v = buckets[valid], pos[valid]
    lo = np.full(k, np.inf)
    hi = np.full(k, -np.inf)
    np.minimum.at(lo, b, v)
    np.maximum.at(hi, b, v)
    weights = np.bincount(b, minlength=k).astype(np.float64)
    has = weights > 0
    if not has.any():
        return 0.0
    return point_read_fraction(lo[has], hi[has], weights[has], files)


# ------------------------------------------------------------------------------ Spark code


def _sql_name(column: str) -> str:
    return ".".join(f"`{p.replace('`', '``')}`" for p in column.split("."))


def _numeric_sql(column: str, t: pa.DataType) -> str | None:
    """A Spark SQL double of the column on the scale :func:`_positions` uses (None: none)."""
    name = _sql_name(column)
    if pa.types.is_timestamp(t):
        # _positions reads the stored unit; unix_micros etc. match it
        fn = {"s": "unix_seconds", "ms": "unix_millis", "us": "unix_micros"}.get(t.unit)
        return None if fn is None else f"cast({fn}({name}) as double)"
    if pa.types.is_date32(t):
        return f"cast(unix_date({name}) as double)"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return f"cast({name} as double)"
    return None


def scaled_expr(column: str, t: pa.DataType, bounds: tuple) -> str | None:
    """The Spark SQL int of one Z-order input: the column scaled linearly to
    :data:`ZORDER_BITS` bits between ``bounds`` (clamped), as :func:`zorder_keys` scales it;
    None for a type it cannot scale."""
    x = _numeric_sql(column, t)
    if x is None:
        return None
    lo, hi = bounds
    top = (1 << ZORDER_BITS) - 1
    return f"cast(least(greatest(({x} - {lo!r}) / {hi - lo!r}, 0.0), 1.0) * {top} as int)"


def _spark_code(source: str, kind: str, columns: tuple, k: int, scaled=None) -> str:
    target = '"<new location>"'
    if kind == "range":
        cols = ", ".join(f'"{c}"' for c in columns)
        return (
            f"df = {source}\n"
            f"df.repartitionByRange({k}, {cols}).sortWithinPartitions({cols}) \\\n"
            f"  .write.parquet({target})"
        )
    a, b = scaled
    return (
        f"from functools import reduce\n"
        f"from pyspark.sql import functions as F\n\n"
        f"def spread(c):  # bit i of c to bit 2i\n"
        f"    return reduce(lambda z, i: z.bitwiseOR(F.shiftleft(F.shiftright(c, i)"
        f".bitwiseAND(1), 2 * i)),\n"
        f"                  range({ZORDER_BITS}), F.lit(0))\n\n"
        f'a = F.expr("{a}")  # {columns[0]}\n'
        f'b = F.expr("{b}")  # {columns[1]}\n'
        f"z = F.shiftleft(spread(a), 1).bitwiseOR(spread(b))\n"
        f"df = {source}\n"
        f"df.repartitionByRange({k}, z).sortWithinPartitions(z) \\\n"
        f"  .write.parquet({target})"
    )


# ------------------------------------------------------------------------------ advise


def advise(
    location,
    snapshot,
    current: dict,
    *,
    source: str | None = None,
    sample_files: int = 64,
    sample_rows: int = 50_000,
    seed: int = 0,
) -> Advice:
    """Estimate the read fraction of each min/max index under other layouts of the table.

    Args:
        location: the table's ``metaindex.engine.listing.TableLocation``.
        snapshot: the index's current ``metaindex.store`` snapshot.
        current: {min/max column: point read fraction now} (from the index).
        source: the PySpark expression reading the table in the suggested code (default:
            ``spark.read.parquet("<table>")``).
        sample_files / sample_rows: how much of the table to read.
        seed: for the random choice of files and rows.

    Returns:
        :class:`Advice`.
    """
    for name, value in (("sample_files", sample_files), ("sample_rows", sample_rows)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    columns = [
        d.cols[0] for d in snapshot.index_defs if getattr(KINDS.get(d.name), "RANGES", False)
    ]  # range kinds: min/max
    n = snapshot.object_count
    notes = []
    if not columns or n < 2:
        notes.append(
            "no min/max index: layout advice covers min/max indexes"
            if not columns
            else "fewer than two indexed files: nothing to lay out"
        )
        return Advice(n, 0, 0, 0, dict(current), [], {}, None, notes)
    rng = np.random.default_rng(seed)
    names = snapshot.file_table().column(OBJ_NAME).combine_chunks()
    names = names.take(pc.sort_indices(names))
    data_format = FormatSpec.from_record(snapshot.table.extra).data_format()
    values, files_read = _sample(
        location, data_format, names, columns, sample_files, sample_rows, rng
    )
    rows = len(next(iter(values.values())))
    k = max(2, min(n, rows // _ROWS_PER_FILE))
    if k < n:
        notes.append(
            f"simulated {k} files (one per {_ROWS_PER_FILE} sampled rows), not {n}: "
            f"read fractions after are for {k} files; raise sample_rows to get closer"
        )
    positions, ordinal = {}, {}
    for c in columns:
        positions[c], ordinal[c] = _positions(values[c])
    types = {c: values[c].type for c in columns}
    bounds = {
        c: (float(np.nanmin(p)), float(np.nanmax(p)))
        for c, p in positions.items()
        if (~np.isnan(p)).any()
    }
    src = source or f'spark.read.parquet("{location.display}")'
    options = []

    def add(layout, cols, keys, kind, scaled=None):
        buckets = range_buckets(keys, k)
        fractions = {
            c: (current.get(c), _fraction_after(buckets, k, positions[c])) for c in columns
        }
        before = [b for b, _ in fractions.values() if b is not None]
        options.append(
            LayoutOption(
                layout,
                tuple(cols),
                fractions,
                float(np.mean(before)) if before else 1.0,
                float(np.mean([a for _, a in fractions.values()])),
                _spark_code(src, kind, tuple(cols), n, scaled),
            )
        )

    for c in columns:
        if c in bounds:
            add(f"repartitionByRange({c})", (c,), positions[c], "range")
    numeric = [
        c
        for c in columns
        if c in bounds
        and not ordinal[c]
        and bounds[c][1] > bounds[c][0]
        and _numeric_sql(c, types[c]) is not None
    ]
    for i, a in enumerate(numeric):
        for b in numeric[i + 1 :]:
            keys = zorder_keys(positions[a], positions[b], bounds[a], bounds[b])
            add(
                f"zorder({a}, {b})",
                (a, b),
                keys,
                "zorder",
                (scaled_expr(a, types[a], bounds[a]), scaled_expr(b, types[b], bounds[b])),
            )
    # within a point, prefer the simpler layout, and for a column the layout ordering by it
    options.sort(key=lambda o: (round(o.mean_after, 2), len(o.columns), o.mean_after))
    per_column = {}
    for c in columns:
        best = min(
            options,
            key=lambda o: (round(o.read_fraction[c][1], 2), c not in o.columns, len(o.columns)),
            default=None,
        )
        if best is not None:
            per_column[c] = best
    best = options[0] if options else None
    recommendation = (
        best if best is not None and best.mean_after <= best.mean_before - _IMPROVES else None
    )
    if recommendation is None and options:
        notes.append("the current layout is already about as selective as the layouts simulated")
    notes.append(
        "sortWithinPartitions alone keeps each file's rows (and so its min/max); it "
        "helps only after repartitionByRange"
    )
    notes.append(
        "write the new layout to a new location, then point the table at it and "
        "build its index there; metaindex never rewrites data"
    )
    return Advice(n, k, files_read, rows, dict(current), options, per_column, recommendation, notes)
