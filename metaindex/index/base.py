"""What every index kind shares: the :class:`Index` base, its storage name, leaf decoding.

An index covers one column (a dotted path into the table schema). Per indexed file it stores
one metadata value (:meth:`Index.collect`), and at query time it answers, for every file at
once, whether a leaf predicate *might* hold for some row of the file
(:meth:`Index.might_match`). Unknown metadata (a null entry) always answers True.

Leaf predicates arrive bound (``metaindex.expr``); :func:`leaf` turns one into a
:class:`Leaf` ``(op, column, value)`` so the kinds dispatch on a small closed set of
operations instead of on classes.
"""

from __future__ import annotations

import abc
import math
from decimal import Decimal
from collections.abc import Iterable
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa

from metaindex import expr as _expr
from metaindex.drift import Drift, drift_of
from metaindex.naming import index_column_name
from metaindex.arrays import FALSE, TRUE, from_pylist, to_numpy

__all__ = ["Index", "Collector", "Leaf", "leaf", "storage_name", "scalar_for", "literal_array",
           "IN_LIMIT", "LEAF_OPS", "wrap_range"]

IN_LIMIT = 200
"""IN / NOT IN lists longer than this are not checked against min/max (the file is kept)."""

EQ, NE, LT, LE, GT, GE = "eq", "ne", "lt", "le", "gt", "ge"
IN, NOT_IN = "in", "not_in"
IS_NULL, NOT_NULL, IS_NAN, NOT_NAN = "is_null", "not_null", "is_nan", "not_nan"
STARTS_WITH, NOT_STARTS_WITH, ENDS_WITH, CONTAINS = (
    "starts_with", "not_starts_with", "ends_with", "contains")
NEVER = "never"  # a comparison with NULL, NOT IN (.., NULL): true for no row

_OPS = {
    _expr.BoundEqualTo: EQ, _expr.BoundNotEqualTo: NE,
    _expr.BoundLessThan: LT, _expr.BoundLessThanOrEqual: LE,
    _expr.BoundGreaterThan: GT, _expr.BoundGreaterThanOrEqual: GE,
    _expr.BoundEqualNullSafe: EQ,  # with a non-null value; <=> NULL becomes IS NULL below
    _expr.BoundIn: IN, _expr.BoundNotIn: NOT_IN,
    _expr.BoundIsNull: IS_NULL, _expr.BoundNotNull: NOT_NULL,
    _expr.BoundIsNaN: IS_NAN, _expr.BoundNotNaN: NOT_NAN,
    _expr.BoundStartsWith: STARTS_WITH, _expr.BoundNotStartsWith: NOT_STARTS_WITH,
    _expr.BoundEndsWith: ENDS_WITH, _expr.BoundContains: CONTAINS,
}
LEAF_OPS = frozenset(_OPS.values()) | {NEVER}
_SET_OPS = (IN, NOT_IN)
_UNARY_OPS = (IS_NULL, NOT_NULL, IS_NAN, NOT_NAN)


class Leaf(NamedTuple):
    """A bound leaf predicate reduced to what evaluators need.

    ``value`` is the literal (a Python value of the column's type) for comparisons and string
    matches, a ``frozenset`` for IN / NOT IN, None for the unary tests. ``type`` is the
    column's Arrow type (the bound reference's field type); ``drift`` what that type cannot
    promise about the column's files (:class:`metaindex.drift.Drift`, recorded on the
    table schema's field).
    """

    op: str
    column: str
    value: Any
    type: pa.DataType | None = None
    drift: Drift = Drift()


def leaf(predicate) -> Leaf:
    """Decode a bound leaf predicate.

    Raises:
        TypeError: ``predicate`` is not a bound leaf predicate of ``metaindex.expr``.
    """
    op = _OPS.get(type(predicate))
    if op is None:
        raise TypeError(f"not a bound leaf predicate: {predicate!r} "
                        f"(expected one of {sorted(c.__name__ for c in _OPS)})")
    column, t = predicate.ref.name, predicate.ref.field.type
    drift = drift_of(predicate.ref.field)
    if op in _SET_OPS:
        values = frozenset(predicate.values)
        if None in values and op == NOT_IN:
            return Leaf(NEVER, column, None, t, drift)  # x NOT IN (.., NULL) is never true
        values = values - {None}
        return Leaf(op, column, values, t, drift) if values or op == NOT_IN \
            else Leaf(NEVER, column, None, t, drift)
    if op in _UNARY_OPS:
        return Leaf(op, column, None, t, drift)
    value = predicate.value
    if value is None:
        # <=> NULL is IS NULL; any other comparison with NULL is never true.
        return Leaf(IS_NULL, column, None, t, drift) \
            if isinstance(predicate, _expr.BoundEqualNullSafe) \
            else Leaf(NEVER, column, None, t, drift)
    return Leaf(op, column, value, t, drift)


def storage_name(index_name: str, cols: Iterable[str]) -> str:
    """The metadata column name of an index (xskipper's version-2 scheme,
    :func:`metaindex.naming.index_column_name`): a min/max index on ``a.b`` is stored as
    ``a$#$b_minmax_5``."""
    return index_column_name(index_name, tuple(cols))


# ------------------------------------------------------------------------------ types

def is_float(t: pa.DataType) -> bool:
    """float32 / float64 (the types whose values may be NaN)."""
    return pa.types.is_float32(t) or pa.types.is_float64(t)


def is_text(t: pa.DataType) -> bool:
    """string / binary in any of Arrow's offset layouts."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t)


def _supported(t: pa.DataType) -> bool:
    types = pa.types
    return (types.is_boolean(t) or types.is_integer(t) or is_float(t) or types.is_decimal(t)
            or is_text(t) or types.is_fixed_size_binary(t) or types.is_date(t)
            or types.is_timestamp(t))


def value_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type values of a column are indexed as (dictionaries by their value type).

    Raises:
        TypeError: a type no index kind supports.
    """
    if not isinstance(arrow_type, pa.DataType):
        raise TypeError(f"expected a pyarrow DataType, got {type(arrow_type).__name__}")
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if not _supported(t):
        raise TypeError(f"cannot index a column of type {arrow_type}; supported: boolean, "
                        "(unsigned) integers, float32/float64, decimals, string, binary, "
                        "fixed_size_binary, date32/date64, timestamp (any unit, with or "
                        "without time zone)")
    return t


def plain_array(values) -> pa.Array:
    """One file's column as a single non-dictionary Arrow array."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        raise TypeError(f"collect takes a pyarrow Array or ChunkedArray, got "
                        f"{type(values).__name__}")
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    value_type(values.type)
    return values


# ------------------------------------------------------------------------------ literals

def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def scalar_for(value, t: pa.DataType) -> pa.Scalar | None:
    """``value`` as an Arrow scalar comparable with arrays of type ``t``.

    Floats compare as float64 (a float32 array is widened exactly, as Spark widens it to
    double against a double literal). An integer or decimal literal that does not fit ``t``
    is returned in its own type (Arrow compares across integer widths and decimal scales
    exactly). None when no scalar can stand for the literal: the caller keeps every file.
    """
    if is_float(t):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, np.number)):
            return None
        return from_pylist([float(value)], pa.float64())[0]
    try:
        return from_pylist([value], t)[0]
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    if (isinstance(value, int) and not isinstance(value, bool) and pa.types.is_integer(t)) or \
            (isinstance(value, (int, Decimal)) and pa.types.is_decimal(t)):
        try:
            return pa.scalar(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return None
    return None


def literal_array(values, t: pa.DataType) -> pa.Array | None:
    """Literals as one array comparable with arrays of type ``t`` (see :func:`scalar_for`).

    None when some literal has no scalar or they do not share one Arrow type (e.g. an int8
    column with one literal beyond int8): the caller keeps every file.
    """
    values = list(values)
    if is_float(t):
        if any(isinstance(x, bool) or not isinstance(x, (int, float, Decimal, np.number))
               for x in values):
            return None
        return from_pylist([float(x) for x in values], pa.float64())
    try:
        return from_pylist(values, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    scalars = [scalar_for(x, t) for x in values]
    if any(s is None for s in scalars) or len({s.type for s in scalars}) != 1:
        return None
    return pa.array(scalars, scalars[0].type)


def wrap_range(lf: Leaf) -> tuple | None:
    """``(lo, hi)``: the values Spark reads unchanged when it may read the column's INT32
    values wrapped into ``lf.drift.wrap`` bits (a file holding a value outside may match a
    literal after wrapping: keep it); ``(None, None)`` when the column is not an integer one
    (every file must be kept); None when nothing wraps or the operation looks at nulls only.
    """
    width = lf.drift.wrap
    if not width or lf.op in (IS_NULL, NOT_NULL):
        return None
    if lf.type is None or not pa.types.is_integer(value_type(lf.type)):
        return None, None
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def comparable(array: pa.Array) -> pa.Array:
    """An array in the form literals from :func:`scalar_for` compare with (floats as float64)."""
    if pa.types.is_float32(array.type):
        return array.cast(pa.float64())
    return array


def as_bytes(value) -> bytes | None:
    """A string-match pattern as bytes (UTF-8 for str); None for anything else."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return None


def prefix_upper(prefix: bytes) -> bytes | None:
    """The smallest byte string above every string that starts with ``prefix``.

    Trailing 0xFF bytes are dropped and the last remaining byte incremented; None when there
    is no such string (an empty or all-0xFF prefix).
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def to_bool(array: pa.Array | pa.ChunkedArray, null: bool) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls read as ``null``."""
    if array.null_count:
        array = array.fill_null(TRUE if null else FALSE)
    return np.asarray(to_numpy(array), dtype=np.bool_)


def valid_mask(array: pa.Array) -> np.ndarray:
    """True where an entry is not null."""
    if not array.null_count:
        return np.ones(len(array), np.bool_)
    return to_bool(array.is_valid(), False)


# ------------------------------------------------------------------------------ the base

class Index(abc.ABC):
    """One index on one column.

    Subclasses set :attr:`name` and implement :meth:`metadata_type`, :meth:`collect` and
    :meth:`_evaluate`. Instances are immutable and hashable (by kind, column and params) and
    hold no per-query state, so one instance may serve concurrent queries.

    Args:
        col: the column's dotted path as in the table schema (``"a.b"`` for field ``b`` of
            struct ``a``).
    """

    name: ClassVar[str]

    __slots__ = ("_cols", "_params")

    def __init__(self, col: str, **params) -> None:
        if not isinstance(col, str) or not col:
            raise TypeError(f"an index column must be a non-empty str, got {col!r}")
        self._cols = (col,)
        self._params = dict(params)

    @property
    def cols(self) -> tuple[str, ...]:
        """The indexed column paths (one)."""
        return self._cols

    @property
    def column(self) -> str:
        """The indexed column path."""
        return self._cols[0]

    @property
    def params(self) -> dict:
        """The index parameters (a copy)."""
        return dict(self._params)

    STORED_DEFAULTS: ClassVar[dict] = {}
    """Parameters a stored definition that lacks them was written with (by an older version:
    e.g. a bloom index without ``hash_scheme`` hashes with scheme 1); :func:`make_index`
    adds them before constructing the index."""

    @property
    def key(self) -> str:
        """The name of this index's metadata column (:func:`storage_name`)."""
        return storage_name(self.name, self._cols)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._cols == self._cols \
            and other._params == self._params

    def __hash__(self) -> int:
        return hash((self.name, self._cols, tuple(sorted(self._params.items()))))

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in sorted(self._params.items()))
        return f"{type(self).__name__}({self.column!r}{extra})"

    @abc.abstractmethod
    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        """The Arrow type of one file's metadata for a column of ``arrow_type``.

        Raises:
            TypeError: the kind cannot index ``arrow_type``.
        """

    @abc.abstractmethod
    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        """One file's metadata from all of the column's values in that file.

        Returns:
            A scalar of ``metadata_type(values.type)`` (dictionary columns: of their value
            type); a null scalar means "unknown" (the file is always kept).
        """

    def collector(self, arrow_type: pa.DataType) -> Collector:
        """A :class:`Collector` of one file's metadata from the column fed part by part (row
        group by row group), for a column of ``arrow_type`` in that file.

        The default gathers the parts and calls :meth:`collect` once; a kind that can tell
        early that further parts cannot change its result (a value list past its limit)
        returns its own so the caller may stop reading the column.
        """
        return Collector(self, arrow_type)

    @abc.abstractmethod
    def _evaluate(self, leaf: Leaf, metadata: pa.Array) -> np.ndarray:
        """``might_match`` for one chunk of metadata (a StructArray/BinaryArray)."""

    def might_match(self, predicate, metadata: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """For every file, whether a row of it might satisfy ``predicate``.

        Args:
            predicate: a bound leaf predicate on this index's column (``metaindex.expr``),
                or an already decoded :class:`Leaf`.
            metadata: this index's metadata, one entry per file (the stored column).

        Returns:
            numpy bool array, one entry per file; False only where the metadata proves that
            no row of the file satisfies the predicate. Null entries are True, and so is
            every entry on a column whose files' values the table type cannot promise
            (:attr:`metaindex.drift.Drift.values_unreliable`).

        Raises:
            TypeError: not a leaf predicate (And/Or/Not go through
                :func:`metaindex.index.might_match`).
            ValueError: the predicate is on another column.
        """
        lf = predicate if isinstance(predicate, Leaf) else leaf(predicate)
        if lf.column != self.column:
            raise ValueError(f"{self!r} cannot answer a predicate on column {lf.column!r}")
        chunks = metadata.chunks if isinstance(metadata, pa.ChunkedArray) else [metadata]
        if lf.op == NEVER:
            return np.zeros(len(metadata), np.bool_)
        if lf.drift.values_unreliable:  # the files' values may not be the table's
            return np.ones(len(metadata), np.bool_)
        parts = [self._evaluate(lf, chunk) for chunk in chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, np.bool_)


class Collector:
    """One file's metadata for one index, from the file's column fed part by part.

    Call :meth:`add` with each part in row order (an Array or ChunkedArray, e.g. one row
    group); :meth:`result` then gives what :meth:`Index.collect` gives for all of them.
    """

    def __init__(self, index: Index, arrow_type: pa.DataType) -> None:
        self.index = index
        self.type = arrow_type
        self._chunks: list = []

    def add(self, values: pa.Array | pa.ChunkedArray) -> bool:
        """Take the next part of the column. Returns False when later parts cannot change
        the result (they need not be read)."""
        self._chunks.extend(values.chunks if isinstance(values, pa.ChunkedArray) else [values])
        return True

    def result(self) -> pa.Scalar:
        """The file's metadata (a scalar of ``index.metadata_type``)."""
        return self.index.collect(pa.chunked_array(self._chunks, self.type))
