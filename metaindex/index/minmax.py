"""The min/max index: per file the smallest and largest value, the null and NaN counts.

Stored as ``struct<min: T, max: T, null_count: int64, nan_count: int64>`` with ``T`` the
column's type. NaN is never a bound: it is counted in ``nan_count`` and excluded from min/max
(NaN sorts above every number in Spark, so it is the one value a bound cannot cover). A file
with no non-null, non-NaN value has null min and max. A null ``null_count`` / ``nan_count``
means "unknown" (footer statistics that did not say); a null struct means the whole entry is
unknown and the file is always kept.

Might-match follows Spark SQL (DESIGN.md rule 1): comparisons against min/max, NaN above
every number and equal to itself, -0.0 = 0.0, strings in UTF-8 byte order. ``!=`` and
``NOT IN`` skip a file only when ``min == max`` is an excluded value and the file has no null
and no NaN; ``IN`` lists longer than :data:`~metaindex.index.base.IN_LIMIT` keep every file that
has a value; ``EndsWith`` / ``Contains`` cannot use bounds.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import ZERO, string_array
from metaindex.index import base
from metaindex.index.base import (
    Estimate,
    Index,
    Leaf,
    is_float,
    is_nan,
    scalar_for,
    to_bool,
    valid_mask,
)
from metaindex.index.ranges import RANGE_WIDTHS, minmax_positions, read_fractions

__all__ = ["MinMaxIndex"]

_FIELDS = ("min", "max", "null_count", "nan_count")


class MinMaxIndex(Index):
    """Min/max (with null and NaN counts) of one column per file.

    Args:
        col: the column's dotted path.
    """

    name = "minmax"
    label = "min/max"
    RANGES = True
    FOOTER_STATISTICS = True
    OVERLAP = ("ranges overlap", "ranges overlap partly")
    __slots__ = ()

    def __init__(self, col: str) -> None:
        super().__init__(col)

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        return _metadata_type(base.value_type(arrow_type))

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        arr = _undictionary(values)
        nulls, nans = arr.null_count, 0
        if is_float(arr.type):
            nan_mask = pc.is_nan(arr)
            nans = int(pc.sum(nan_mask).as_py() or 0)
            if nans:
                arr = arr.filter(pc.invert(nan_mask))  # drops the NaNs and the nulls
        bounds = pc.min_max(arr)
        return pa.scalar(
            {"min": bounds["min"], "max": bounds["max"], "null_count": nulls, "nan_count": nans},
            self.metadata_type(arr.type),
        )

    def collect_from_statistics(
        self, stats: list, num_rows: int, arrow_type: pa.DataType
    ) -> pa.Scalar | None:
        """One file's metadata from its footer statistics, without reading the column.

        Args:
            stats: one ``metaindex.parquet.statistics.ChunkStatistics`` (or None when the
                chunk has none) per row group, for this column.
            num_rows: the file's row count.
            arrow_type: the Arrow type matching the column's *Parquet* type (bounds of dates,
                times and timestamps are in the stored unit: a ``timestamp[s]`` column that
                pyarrow stored in milliseconds must be given as ``timestamp[ms]``).

        Returns:
            A scalar of ``metadata_type(arrow_type)``, or None when the statistics cannot
            stand for a scan: some row group has no statistics, no null count, bounds that
            are untrusted or marked inexact (truncated). Row groups without bounds are
            accepted only when the counts prove the whole file null or NaN. Float bounds
            keep ChunkStatistics' widening of zeros; a float column whose statistics lack
            ``nan_count`` gets a null (unknown) ``nan_count``.
        """
        t = base.value_type(arrow_type)
        found = self.bounds_from_statistics(stats, num_rows, is_float(t))
        if found is None:
            return None
        lo, hi, nulls, nans = found
        try:  # (the bounds converted with the struct: one conversion per file, not three)
            return pa.scalar(
                {"min": lo, "max": hi, "null_count": nulls, "nan_count": nans},
                self.metadata_type(t),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return None

    @staticmethod
    def bounds_from_statistics(stats: list, num_rows: int, floating: bool) -> tuple | None:
        """:meth:`collect_from_statistics`'s answer as plain values, before they are made a
        scalar: ``(min, max, null_count, nan_count)`` (bounds as the statistics give them, None
        for none; ``nan_count`` None when a part does not count its NaNs, always 0 unless
        ``floating``), or None under the same conditions. The build keeps these per file and
        makes a task's column of them at once."""
        lo = hi = None
        nulls = 0
        nans: int | None = 0  # None: a part does not count its NaNs
        unbounded = False
        for s in stats:
            if s is None or s.null_count is None:
                return None
            nulls += s.null_count
            if floating:
                nans = None if nans is None or s.nan_count is None else nans + s.nan_count
            if s.trusted and s.min is not None and s.max is not None:
                if s.is_min_exact is False or s.is_max_exact is False:
                    return None
                lo = s.min if lo is None or s.min < lo else lo
                hi = s.max if hi is None or s.max > hi else hi
            else:
                unbounded = True
        if unbounded and (lo is not None or nans is None or nulls + nans != num_rows):
            return None
        if nulls + (nans or 0) > num_rows:
            return None
        return lo, hi, nulls, nans

    def metadata_type_ok(self, t: pa.DataType) -> bool:
        """``struct<min: T, max: T, null_count: int64, nan_count: int64>``."""
        return (
            pa.types.is_struct(t)
            and tuple(t.field(i).name for i in range(t.num_fields)) == _FIELDS
            and t.field("min").type == t.field("max").type
            and all(t.field(n).type == pa.int64() for n in ("null_count", "nan_count"))
        )

    def summarize(self, metadata: pa.Array) -> pa.Scalar | None:
        """The smallest ``min`` and the largest ``max`` of the entries (entries without
        bounds, all null or all NaN, take no part), null and NaN counts summed (null when one
        is unknown); None when some entry is unknown (a null struct, one bound without the
        other, a NaN bound)."""
        col = metadata
        if col.null_count or len(col) == 0:
            return None
        mins, maxs = col.field("min"), col.field("max")
        if mins.null_count != maxs.null_count or (
            mins.null_count and not pc.all(pc.equal(mins.is_valid(), maxs.is_valid())).as_py()
        ):
            return None  # a row with one bound and not the other is unknown
        if pa.types.is_floating(mins.type) and (
            pc.any(pc.is_nan(mins)).as_py() or pc.any(pc.is_nan(maxs)).as_py()
        ):
            return None
        return pa.StructArray.from_arrays(
            [
                pa.array([pc.min(mins)], mins.type),
                pa.array([pc.max(maxs)], maxs.type),
                pa.array([_summed(col.field("null_count"))], pa.int64()),
                pa.array([_summed(col.field("nan_count"))], pa.int64()),
            ],
            fields=list(col.type),
        )[0]

    def sort_key(self, metadata: pa.Array) -> pa.Array | None:
        """The files' ``min``: clustered parts have narrow summaries."""
        t = metadata.type
        if not pa.types.is_struct(t) or t.get_field_index("min") < 0:
            return None
        return pc.struct_field(metadata, "min")

    def estimate(self, metadata: pa.Array, rows: np.ndarray) -> Estimate:
        """Files' rows spread uniformly over their ``[min, max]``
        (:mod:`metaindex.index.ranges`); ``range_read_fraction`` for
        :data:`~metaindex.index.ranges.RANGE_WIDTHS`."""
        n = len(metadata)
        known, has_value, lo, hi, ordinal = minmax_positions(metadata)
        unknown = int(n - np.count_nonzero(known))
        valued = known & has_value
        weights = (
            rows[valued]
            - _counts(metadata, "null_count", valued)
            - _counts(metadata, "nan_count", valued)
        )
        weights = np.where(weights > 0, weights, 0.0)
        fraction: float | None = None
        curve: dict | None = None
        if len(lo):
            fraction, *rest = read_fractions(lo, hi, weights, n, unknown, (0.0, *RANGE_WIDTHS))
            curve = dict(zip(RANGE_WIDTHS, rest, strict=True))
        details = {
            "files_with_value": int(len(lo)),
            "scale": "ordinal" if ordinal else "value",
            "ideal_read_fraction": (1.0 / n) if n else None,
        }
        return Estimate(unknown, fraction, curve, False, details)

    def _evaluate(self, lf: Leaf, metadata: pa.Array) -> np.ndarray:
        view = _View(metadata)
        out = _answer(lf, view) | ~view.known
        wrap = base.wrap_range(lf)
        if wrap is not None:  # a file with a value Spark may read wrapped: keep
            if wrap[0] is None:
                return view.everything()
            lo, hi = (view.field(f).cast(pa.float64(), safe=False) for f in ("min", "max"))
            out |= view.cmp("less", lo, pa.scalar(float(wrap[0]))) | view.cmp(
                "greater", hi, pa.scalar(float(wrap[1]))
            )
        return out


def _summed(col: pa.Array) -> int | None:
    if col.null_count:
        return None
    total = pc.sum(col).as_py()
    return 0 if total is None else total


def _counts(meta: pa.Array, name: str, rows: np.ndarray) -> np.ndarray:
    col = meta.field(name)
    values = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), np.float64)
    return values[rows]


def _undictionary(values) -> pa.Array | pa.ChunkedArray:
    """The column as pyarrow's min_max takes it: chunks kept (no concatenated copy),
    dictionary chunks decoded."""
    if isinstance(values, pa.ChunkedArray) and values.num_chunks != 1:
        if pa.types.is_dictionary(values.type):
            values = pa.chunked_array(
                [c.dictionary_decode() for c in values.chunks], values.type.value_type
            )
        base.value_type(values.type)
        return values
    return base.plain_array(values)


class _View:
    """One query's look at a metadata array: fields and masks computed on first use."""

    def __init__(self, metadata: pa.Array) -> None:
        t = metadata.type
        if not pa.types.is_struct(t) or [t.field(i).name for i in range(t.num_fields)] != list(
            _FIELDS
        ):
            raise TypeError(
                f"min/max metadata must be struct<min, max, null_count, nan_count>, got {t}"
            )
        self.meta = metadata
        self.type = t.field("min").type
        self.floating = is_float(self.type)
        self.n = len(metadata)

    def field(self, name: str) -> pa.Array:
        return self.meta.field(name)

    @cached_property
    def mins(self) -> pa.Array:
        return base.comparable(self.field("min"))

    @cached_property
    def maxs(self) -> pa.Array:
        return base.comparable(self.field("max"))

    @cached_property
    def has_value(self) -> np.ndarray:
        """The file holds a non-null, non-NaN value."""
        return valid_mask(self.field("min"))

    @cached_property
    def known(self) -> np.ndarray:
        """The entry is usable: not null, and min and max are both set or both null."""
        return valid_mask(self.meta) & (self.has_value == valid_mask(self.field("max")))

    @cached_property
    def nan_possible(self) -> np.ndarray:
        if not self.floating:
            return np.zeros(self.n, np.bool_)
        return to_bool(pc.not_equal(self.field("nan_count"), ZERO), True)

    @cached_property
    def nan_free(self) -> np.ndarray:
        return ~self.nan_possible

    @cached_property
    def null_possible(self) -> np.ndarray:
        return to_bool(pc.not_equal(self.field("null_count"), ZERO), True)

    def nothing(self) -> np.ndarray:
        return np.zeros(self.n, np.bool_)

    def everything(self) -> np.ndarray:
        return np.ones(self.n, np.bool_)

    def cmp(self, op: str, array: pa.Array, scalar: pa.Scalar) -> np.ndarray:
        return to_bool(getattr(pc, op)(array, scalar), False)


def _answer(lf: Leaf, v: _View) -> np.ndarray:
    op, value = lf.op, lf.value
    if op == base.IS_NULL:
        return v.null_possible
    if op == base.NOT_NULL:
        return v.has_value | v.nan_possible
    if op == base.IS_NAN:
        return v.nan_possible
    if op == base.NOT_NAN:  # Spark: isnan(NULL) is false, so NOT isnan(NULL) is true
        return v.has_value | v.null_possible
    if op in (base.IN, base.NOT_IN):
        return _in(v, value) if op == base.IN else _not_in(v, value)
    if op in (base.STARTS_WITH, base.NOT_STARTS_WITH, base.ENDS_WITH, base.CONTAINS):
        return _string_match(v, op, value)
    if v.floating and is_nan(value):
        return {
            base.EQ: v.nan_possible,
            base.NE: v.has_value,
            base.LT: v.has_value,
            base.LE: v.has_value | v.nan_possible,
            base.GT: v.nothing(),
            base.GE: v.nan_possible,
        }[op]
    s = scalar_for(value, v.type)
    if s is None:
        return v.everything()
    if op == base.EQ:
        return v.cmp("less_equal", v.mins, s) & v.cmp("greater_equal", v.maxs, s)
    if op == base.NE:
        literals = pa.repeat(s, 1)  # not pa.array([s]): see metaindex.arrays
        return _not_in_literals(v, literals) | v.nan_possible  # NaN != v holds
    if op == base.LT:
        return v.cmp("less", v.mins, s)
    if op == base.LE:
        return v.cmp("less_equal", v.mins, s)
    if op == base.GT:
        return v.cmp("greater", v.maxs, s) | v.nan_possible
    if op == base.GE:
        return v.cmp("greater_equal", v.maxs, s) | v.nan_possible
    raise AssertionError(f"unhandled leaf op {op!r}")


def _split(v: _View, values: frozenset):
    """(the non-NaN literals as one array comparable with the bounds, or None when they have
    no common Arrow form; whether NaN is listed)."""
    nan = v.floating and any(is_nan(x) for x in values)
    rest = [x for x in values if not (v.floating and is_nan(x))]
    return base.literal_array(rest, v.type), nan


def _in(v: _View, values: frozenset) -> np.ndarray:
    literals, nan = _split(v, values)
    hits = v.nan_possible.copy() if nan else v.nothing()
    if literals is None or len(literals) > base.IN_LIMIT:
        return hits | v.has_value
    if not len(literals):
        return hits
    lo, hi, numbers = _numeric(v.mins), _numeric(v.maxs), _numeric(literals)
    if len(literals) > 8 and lo is not None and hi is not None and numbers is not None:
        # binary search: the smallest listed value >= min must be <= max
        wanted = np.sort(numbers)
        pos = np.searchsorted(wanted, lo, side="left")
        candidate = wanted[np.minimum(pos, len(wanted) - 1)]
        return hits | ((pos < len(wanted)) & (candidate <= hi) & v.has_value)
    for s in literals:
        hits |= v.cmp("less_equal", v.mins, s) & v.cmp("greater_equal", v.maxs, s)
    return hits


def _numeric(array: pa.Array) -> np.ndarray | None:
    """A zero-copy numpy view of a fixed-width numeric/temporal array (nulls hold garbage)."""
    t = array.type
    if not (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    ) or pa.types.is_float16(t):
        return None
    width = t.bit_width // 8
    if pa.types.is_floating(t):
        dtype = np.dtype(f"<f{width}")
    elif pa.types.is_unsigned_integer(t):
        dtype = np.dtype(f"<u{width}")
    else:
        dtype = np.dtype(f"<i{width}")
    buf = array.buffers()[1]
    if buf is None or len(array) == 0:
        return np.zeros(len(array), dtype)
    return np.frombuffer(buf, dtype, count=len(array), offset=array.offset * width)


def _not_in(v: _View, values: frozenset) -> np.ndarray:
    literals, nan = _split(v, values)
    if literals is None:
        return v.has_value | v.nan_possible
    # NaN rows satisfy NOT IN unless NaN is listed
    return _not_in_literals(v, literals) | (v.nothing() if nan else v.nan_possible)


def _not_in_literals(v: _View, literals: pa.Array) -> np.ndarray:
    """Files with a non-NaN value outside ``literals``, unless proven single-valued and clean.

    A file is skipped only when min == max equals a listed value and it has no null and no
    NaN (NaN != v is true in Spark, so a NaN row satisfies ``!=``).
    """
    single = v.cmp("equal", v.mins, v.maxs)
    if not single.any() or not len(literals):
        return v.has_value.copy()
    if v.floating:  # numpy equality: -0.0 == 0.0 (Arrow's is_in hashes bit patterns)
        mins, numbers = _numeric(v.mins), _numeric(literals)
        # float32 / float64 metadata, float64 literals (base.literal_array): both have views
        assert mins is not None and numbers is not None
        listed = np.isin(mins, numbers)
    elif literals.type == v.mins.type:
        listed = to_bool(pc.is_in(v.mins, value_set=literals), False)
    elif len(literals) <= base.IN_LIMIT:  # e.g. a decimal literal finer than the scale
        listed = v.nothing()
        for s in literals:
            listed |= v.cmp("equal", v.mins, s)
    else:
        return v.has_value.copy()
    clean = ~v.null_possible & v.nan_free
    return v.has_value & ~(single & listed & clean)


def _string_match(v: _View, op: str, pattern) -> np.ndarray:
    raw = base.as_bytes(pattern)
    if raw is None or not base.is_text(v.type):
        return v.has_value.copy()
    if op == base.STARTS_WITH:
        binary = (
            pa.large_binary()
            if pa.types.is_large_string(v.type) or pa.types.is_large_binary(v.type)
            else pa.binary()
        )
        lo, hi = v.mins.cast(binary), v.maxs.cast(binary)
        ok = v.cmp("greater_equal", hi, string_array([raw], binary=True).cast(binary)[0])
        upper = base.prefix_upper(raw)
        if upper is not None:
            ok &= v.cmp("less", lo, string_array([upper], binary=True).cast(binary)[0])
        return ok
    if op == base.NOT_STARTS_WITH:
        both = to_bool(pc.starts_with(v.mins, pattern=raw), False) & to_bool(
            pc.starts_with(v.maxs, pattern=raw), False
        )
        return v.has_value & ~both
    return v.has_value.copy()  # EndsWith / Contains: bounds say nothing


@lru_cache(maxsize=256)
def _metadata_type(t: pa.DataType) -> pa.DataType:
    """``struct<min: t, max: t, null_count: int64, nan_count: int64>``, made once per type
    (it is asked for every file a build reads)."""
    return pa.struct(
        [
            pa.field("min", t),
            pa.field("max", t),
            pa.field("null_count", pa.int64()),
            pa.field("nan_count", pa.int64()),
        ]
    )
