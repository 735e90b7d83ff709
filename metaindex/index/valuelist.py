"""The value-list index: per file the distinct non-null values, and whether a null occurs.

Stored as ``struct<values: list<T>, has_null: bool>``. Values are sorted (Arrow's order:
numbers numerically, strings by UTF-8 bytes); float values are canonical (-0.0 stored as 0.0,
every NaN as one quiet NaN, stored once). A file with more than ``max_values`` distinct values
gets a null entry (unknown: always kept).

Might-match tests the stored values themselves with Spark SQL semantics, so it is exact up to
nulls: a file is kept when one of its values satisfies the predicate (``IS NULL`` reads
``has_null``). Like min/max, ``!=`` and ``NOT IN`` also keep a file that has a value and a
null (issue 6 asks for that margin; a NULL row never satisfies them).
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import ZERO, numeric_array, to_numpy
from metaindex.index import base, columns
from metaindex.index.base import (
    Collector,
    Estimate,
    Index,
    Leaf,
    is_float,
    is_nan,
    scalar_for,
    set_estimate,
    set_summary,
    to_bool,
    valid_mask,
)

_FLOAT_ZERO = numeric_array(np.zeros(1))[0]  # not a Python 0.0: see metaindex.arrays

__all__ = ["ValueListIndex", "DEFAULT_MAX_VALUES"]

DEFAULT_MAX_VALUES = 100
"""Distinct values a file may have and still get a value list."""


class ValueListIndex(Index):
    """Distinct values of one column per file (up to ``max_values``).

    Args:
        col: the column's dotted path.
        max_values: the most distinct non-null values stored per file; a file with more gets
            a null (unknown) entry.
    """

    name = "valuelist"
    label = "value list"
    SATURATED = (
        "saturated value list: most files exceed max_values; use a bloom filter "
        "index or raise max_values"
    )
    __slots__ = ()

    def __init__(self, col: str, max_values: int = DEFAULT_MAX_VALUES) -> None:
        if (
            isinstance(max_values, bool)
            or not isinstance(max_values, (int, np.integer))
            or max_values < 1
        ):
            raise ValueError(f"max_values must be an int >= 1, got {max_values!r}")
        super().__init__(col, max_values=int(max_values))

    @property
    def max_values(self) -> int:
        return self._params["max_values"]

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        return _metadata_type(base.value_type(arrow_type))

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        distinct, has_null = columns.distinct_values(values, self.max_values)
        return self._scalar(distinct, has_null, self.metadata_type(values.type))

    def collector(self, arrow_type: pa.DataType) -> Collector:
        """Stops wanting parts once the file has more than ``max_values`` distinct values."""
        return _Collector(self, arrow_type)

    @staticmethod
    def _scalar(distinct: pa.Array | None, has_null: bool, kind: pa.DataType) -> pa.Scalar:
        if distinct is None:
            return pa.scalar(None, kind)
        if len(distinct) > 1:  # (one value, the common case of a build: sorted already)
            distinct = distinct.take(pc.sort_indices(distinct))
        return pa.StructArray.from_arrays(
            [
                pa.ListArray.from_arrays(columns.one_list_offsets(len(distinct)), distinct),
                columns.flag_array(has_null),
            ],
            fields=list(kind),
        )[0]

    def metadata_type_ok(self, t: pa.DataType) -> bool:
        """``struct<values: list<T>, has_null: bool>``."""
        return (
            pa.types.is_struct(t)
            and [t.field(i).name for i in range(t.num_fields)] == ["values", "has_null"]
            and pa.types.is_list(t.field("values").type)
            and t.field("has_null").type == pa.bool_()
        )

    def summarize(self, metadata: pa.Array) -> pa.Scalar | None:
        """The union of the entries' values when every entry is known and the union holds at
        most ``max_values`` values; ``has_null`` = any entry's."""
        lists, has_null = metadata.field("values"), metadata.field("has_null")
        if metadata.null_count or has_null.null_count:
            return None
        distinct = set_summary(lists, self.max_values)
        if distinct is None:
            return None
        values = pa.ListArray.from_arrays(
            pa.array([0, len(distinct)], pa.int32()),
            distinct,
            type=metadata.type.field("values").type,
        )
        return pa.StructArray.from_arrays(
            [values, pa.array([bool(pc.any(has_null).as_py())])], fields=list(metadata.type)
        )[0]

    def estimate(self, metadata: pa.Array, rows: np.ndarray) -> Estimate:
        """A lookup reads the files listing the value (:func:`~metaindex.index.base.
        set_estimate`); files whose list is unknown (over ``max_values``) are always read."""
        lists = metadata.field("values")
        known = valid_mask(metadata) & valid_mask(lists) & valid_mask(metadata.field("has_null"))
        out = set_estimate(lists, known, rows)
        return out._replace(details={**out.details, "max_values": self.max_values})

    def _evaluate(self, lf: Leaf, metadata: pa.Array) -> np.ndarray:
        view = _View(metadata)
        out = _answer(lf, view) | ~view.known
        wrap = base.wrap_range(lf)
        if wrap is not None:  # a file with a value Spark may read wrapped: keep
            if wrap[0] is None:
                return view.everything()
            flat = view.flat.cast(pa.float64(), safe=False)
            outside = to_bool(
                pc.or_(pc.less(flat, float(wrap[0])), pc.greater(flat, float(wrap[1]))), False
            )
            out |= view.any(outside)
        return out


class _Collector(Collector):
    def __init__(self, index: ValueListIndex, arrow_type: pa.DataType) -> None:
        super().__init__(index, arrow_type)
        self._distinct = columns.Distinct(arrow_type, index.max_values)

    def add(self, values: pa.Array | pa.ChunkedArray) -> bool:
        return self._distinct.add(values)

    def result(self) -> pa.Scalar:
        return ValueListIndex._scalar(
            self._distinct.result(), self._distinct.has_null, self.index.metadata_type(self.type)
        )


class _View:
    """One query's look at a value-list array: flat values with their file numbers."""

    def __init__(self, metadata: pa.Array) -> None:
        t = metadata.type
        if (
            not pa.types.is_struct(t)
            or [t.field(i).name for i in range(t.num_fields)] != ["values", "has_null"]
            or not pa.types.is_list(t.field("values").type)
        ):
            raise TypeError(
                f"value-list metadata must be struct<values: list<T>, has_null: bool>, got {t}"
            )
        self.meta = metadata
        self.lists = metadata.field("values")
        self.type = t.field("values").type.value_type
        self.floating = is_float(self.type)
        self.n = len(metadata)

    @cached_property
    def known(self) -> np.ndarray:
        return (
            valid_mask(self.meta) & valid_mask(self.lists) & valid_mask(self.meta.field("has_null"))
        )

    @cached_property
    def flat(self) -> pa.Array:
        """Every stored value, null lists' ranges included, aligned with :attr:`parents`.

        (``ListArray.flatten`` drops the ranges of null lists while ``list_parent_indices``
        keeps them; the answers for null entries are discarded by :attr:`known` anyway.)
        """
        offsets = self.lists.offsets
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        return base.comparable(self.lists.values.slice(start, end - start))

    @cached_property
    def parents(self) -> np.ndarray:
        return to_numpy(pc.list_parent_indices(self.lists)).astype(np.int64)

    @cached_property
    def flat_floats(self) -> np.ndarray:
        return np.asarray(to_numpy(self.flat.fill_null(_FLOAT_ZERO)), np.float64)

    def any(self, hits: np.ndarray) -> np.ndarray:
        """Per file: does one of its values hit?"""
        out = np.zeros(self.n, np.bool_)
        out[self.parents[hits]] = True
        return out

    @cached_property
    def has_value(self) -> np.ndarray:
        return to_bool(pc.greater(pc.list_value_length(self.lists), ZERO), False)

    @cached_property
    def has_null(self) -> np.ndarray:
        return to_bool(self.meta.field("has_null"), True)

    @cached_property
    def null_and_value(self) -> np.ndarray:
        return self.has_null & self.has_value

    def everything(self) -> np.ndarray:
        return np.ones(self.n, np.bool_)

    def values_where(self, op: str, scalar: pa.Scalar) -> np.ndarray:
        return to_bool(getattr(pc, op)(self.flat, scalar), False)


_FLOAT_CMP = {
    base.EQ: np.equal,
    base.NE: np.not_equal,
    base.LT: np.less,
    base.LE: np.less_equal,
    base.GT: np.greater,
    base.GE: np.greater_equal,
}
_ARROW_CMP = {
    base.EQ: "equal",
    base.NE: "not_equal",
    base.LT: "less",
    base.LE: "less_equal",
    base.GT: "greater",
    base.GE: "greater_equal",
}


def _float_hits(x: np.ndarray, op: str, value: float) -> np.ndarray:
    """Spark's comparison of float values with a literal: NaN equal to itself, above all."""
    nan = np.isnan(x)
    if is_nan(value):
        return {
            base.EQ: nan,
            base.NE: ~nan,
            base.LT: ~nan,
            base.LE: np.ones_like(nan),
            base.GT: np.zeros_like(nan),
            base.GE: nan,
        }[op]
    with np.errstate(invalid="ignore"):
        hits = _FLOAT_CMP[op](x, value)
    if op in (base.NE, base.GT, base.GE):
        hits |= nan
    else:
        hits &= ~nan
    return hits


def _answer(lf: Leaf, v: _View) -> np.ndarray:
    op, value = lf.op, lf.value
    if op == base.IS_NULL:
        return v.has_null
    if op == base.NOT_NULL:
        return v.has_value
    if op == base.IS_NAN:
        return v.any(np.isnan(v.flat_floats)) if v.floating else np.zeros(v.n, np.bool_)
    if op == base.NOT_NAN:  # Spark: isnan(NULL) is false, so NOT isnan(NULL) is true
        kept = v.any(~np.isnan(v.flat_floats)) if v.floating else v.has_value
        return kept | v.has_null
    if op in (base.IN, base.NOT_IN):
        hits = _in_hits(v, value)
        if hits is None:
            return v.everything()
        return v.any(hits) if op == base.IN else v.any(~hits) | v.null_and_value
    if op in (base.STARTS_WITH, base.NOT_STARTS_WITH, base.ENDS_WITH, base.CONTAINS):
        raw = base.as_bytes(value)
        if raw is None or not base.is_text(v.type):
            return v.has_value
        fn = {
            base.STARTS_WITH: pc.starts_with,
            base.NOT_STARTS_WITH: pc.starts_with,
            base.ENDS_WITH: pc.ends_with,
            base.CONTAINS: pc.match_substring,
        }[op]
        hits = to_bool(fn(v.flat, pattern=raw), False)
        return v.any(~hits if op == base.NOT_STARTS_WITH else hits)
    if v.floating:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return v.everything()
        hits = _float_hits(v.flat_floats, op, float(value))
    else:
        s = scalar_for(value, v.type)
        if s is None:
            return v.everything()
        hits = v.values_where(_ARROW_CMP[op], s)
    return v.any(hits) | v.null_and_value if op == base.NE else v.any(hits)


def _in_hits(v: _View, values: frozenset) -> np.ndarray | None:
    """Per stored value: is it in ``values``? None when the literals have no Arrow form."""
    if v.floating:
        literals = base.literal_array(values, v.type)
        if literals is None:
            return None
        listed = to_numpy(literals)
        hits = np.isin(v.flat_floats, listed[~np.isnan(listed)])  # -0.0 == 0.0
        if np.isnan(listed).any():
            hits |= np.isnan(v.flat_floats)
        return hits
    literals = base.literal_array(values, v.type)
    if literals is None or literals.type != v.flat.type:
        return None
    return to_bool(pc.is_in(v.flat, value_set=literals), False)


@lru_cache(maxsize=256)
def _metadata_type(t: pa.DataType) -> pa.DataType:
    """``struct<values: list<t>, has_null: bool>``, made once per type (it is asked for every
    file a build reads)."""
    return pa.struct([pa.field("values", pa.list_(t)), pa.field("has_null", pa.bool_())])
