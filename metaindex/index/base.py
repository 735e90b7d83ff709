"""What every index kind shares: the :class:`Index` base, its storage name, leaf decoding.

An index covers one column (a dotted path into the table schema). Per indexed file it stores
one metadata value (:meth:`Index.collect`), and at query time it answers, for every file at
once, whether a leaf predicate *might* hold for some row of the file
(:meth:`Index.might_match`). Unknown metadata (a null entry) always answers True.

Leaf predicates arrive bound (``metaindex.expr``); :func:`leaf` turns one into a
:class:`Leaf` ``(op, column, value)`` so the kinds dispatch on a small closed set of
operations instead of on classes.

How to write a kind
-------------------
A kind is one class in one importable module plus one line,
``metaindex.index.register_index_kind(MyIndex)``. Everything the store, the builders, the
pruner, ``describe()`` and ``explain()`` do with an index they ask the kind; nothing outside
``metaindex.index`` switches on a kind's name.

Must have:
  * ``name`` (class attribute, ``[a-z][a-z0-9_]*``): what the store records.
  * ``__init__(self, col, *, param=default, ...)``: validate the parameters (raise
    ``ValueError`` / ``TypeError``) and pass them on as ``super().__init__(col, **params)``;
    their values are str, int, float or bool. :meth:`Index.defaults` reads them from this
    signature and :meth:`Index.from_params` converts a stored definition's string values
    (xskipper's stores hold a string map) to the defaults' types.
  * :meth:`Index.metadata_type`, :meth:`Index.collect`: one file's metadata.
  * :meth:`Index._evaluate`: might-match over a chunk of metadata (True where unsure).

May have (each default is sound: it never makes a file or part be skipped):
  * :meth:`Index.summarize` — one metadata value standing for every file of a store part,
    so a whole part is skipped when its summary cannot match. Default None: the part is
    always read. A kind whose metadata is a set of keys per file gets one line with
    :func:`set_summary` (the union, up to a cap).
  * :meth:`Index.metadata_type_ok` — whether a stored type can be this kind's metadata (a
    summary of another type read from the log is damage). Default: any type.
  * :meth:`Index.estimate` — how well the index skips (``describe()``'s
    ``point_read_fraction`` and verdict). Default None: "unknown". Set-of-keys kinds use
    :func:`set_estimate`.
  * :meth:`Index.sort_key` — what compaction sorts a part's rows by, so that part summaries
    stay selective. Default None (the first index of the store that has one decides).
  * :meth:`Index.collector` — a part-by-part collector that may stop reading early;
    :meth:`Index.collect_from_statistics` with ``FOOTER_STATISTICS = True`` — metadata from
    trusted Parquet footer statistics instead of a scan.
  * ``label`` (display name), ``RANDOM_FIELDS`` (how the store writes them), ``RANGES`` (its
    metadata are value ranges: clustering the table by the column is what makes it selective,
    see ``advise()``), ``SATURATED`` / ``OVERLAP`` (the words of its effectiveness verdicts),
    ``STORED_DEFAULTS``, :meth:`Index.type_note` (what it cannot do on a column's type).

Spark executors receive the index objects pickled (by reference to their module): the module
must be importable there (on ``PYTHONPATH`` / ``spark.executorEnv.PYTHONPATH``, or shipped with
``SparkContext.addPyFile``), and the kind registered in every process that refreshes or
queries its store. A store whose kind is not registered in a process cannot be refreshed
there; its files are then never skipped by that index.
"""

from __future__ import annotations

import abc
import functools
import inspect
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex import expr as _expr
from metaindex.arrays import FALSE, TRUE, from_pylist, to_numpy
from metaindex.drift import Drift, drift_of
from metaindex.errors import IndexDefinitionError
from metaindex.naming import index_column_name

__all__ = [
    "Index",
    "Collector",
    "Estimate",
    "Leaf",
    "leaf",
    "storage_name",
    "scalar_for",
    "literal_array",
    "IN_LIMIT",
    "LEAF_OPS",
    "wrap_range",
    "set_summary",
    "set_estimate",
]

IN_LIMIT = 200
"""IN / NOT IN lists longer than this are not checked against min/max (the file is kept)."""

EQ, NE, LT, LE, GT, GE = "eq", "ne", "lt", "le", "gt", "ge"
IN, NOT_IN = "in", "not_in"
IS_NULL, NOT_NULL, IS_NAN, NOT_NAN = "is_null", "not_null", "is_nan", "not_nan"
STARTS_WITH, NOT_STARTS_WITH, ENDS_WITH, CONTAINS = (
    "starts_with",
    "not_starts_with",
    "ends_with",
    "contains",
)
NEVER = "never"  # a comparison with NULL, NOT IN (.., NULL): true for no row

_OPS = {
    _expr.BoundEqualTo: EQ,
    _expr.BoundNotEqualTo: NE,
    _expr.BoundLessThan: LT,
    _expr.BoundLessThanOrEqual: LE,
    _expr.BoundGreaterThan: GT,
    _expr.BoundGreaterThanOrEqual: GE,
    _expr.BoundEqualNullSafe: EQ,  # with a non-null value; <=> NULL becomes IS NULL below
    _expr.BoundIn: IN,
    _expr.BoundNotIn: NOT_IN,
    _expr.BoundIsNull: IS_NULL,
    _expr.BoundNotNull: NOT_NULL,
    _expr.BoundIsNaN: IS_NAN,
    _expr.BoundNotNaN: NOT_NAN,
    _expr.BoundStartsWith: STARTS_WITH,
    _expr.BoundNotStartsWith: NOT_STARTS_WITH,
    _expr.BoundEndsWith: ENDS_WITH,
    _expr.BoundContains: CONTAINS,
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
        raise TypeError(
            f"not a bound leaf predicate: {predicate!r} "
            f"(expected one of {sorted(c.__name__ for c in _OPS)})"
        )
    column, t = predicate.ref.name, predicate.ref.field.type
    drift = drift_of(predicate.ref.field)
    if op in _SET_OPS:
        values = frozenset(predicate.values)
        if None in values and op == NOT_IN:
            return Leaf(NEVER, column, None, t, drift)  # x NOT IN (.., NULL) is never true
        values = values - {None}
        return (
            Leaf(op, column, values, t, drift)
            if values or op == NOT_IN
            else Leaf(NEVER, column, None, t, drift)
        )
    if op in _UNARY_OPS:
        return Leaf(op, column, None, t, drift)
    value = predicate.value
    if value is None:
        # <=> NULL is IS NULL; any other comparison with NULL is never true.
        return (
            Leaf(IS_NULL, column, None, t, drift)
            if isinstance(predicate, _expr.BoundEqualNullSafe)
            else Leaf(NEVER, column, None, t, drift)
        )
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
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _supported(t: pa.DataType) -> bool:
    types = pa.types
    return (
        types.is_boolean(t)
        or types.is_integer(t)
        or is_float(t)
        or types.is_decimal(t)
        or is_text(t)
        or types.is_fixed_size_binary(t)
        or types.is_date(t)
        or types.is_timestamp(t)
    )


def value_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type values of a column are indexed as (dictionaries by their value type).

    Raises:
        TypeError: a type no index kind supports.
    """
    if not isinstance(arrow_type, pa.DataType):
        raise TypeError(f"expected a pyarrow DataType, got {type(arrow_type).__name__}")
    return _value_type(arrow_type)


@functools.lru_cache(maxsize=256)
def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    """:func:`value_type` of a DataType, once per type (it is asked for every file)."""
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if not _supported(t):
        raise TypeError(
            f"cannot index a column of type {arrow_type}; supported: boolean, "
            "(unsigned) integers, float32/float64, decimals, string, binary, "
            "fixed_size_binary, date32/date64, timestamp (any unit, with or "
            "without time zone)"
        )
    return t


def plain_array(values) -> pa.Array:
    """One file's column as a single non-dictionary Arrow array."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        raise TypeError(
            f"collect takes a pyarrow Array or ChunkedArray, got {type(values).__name__}"
        )
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
    if (isinstance(value, int) and not isinstance(value, bool) and pa.types.is_integer(t)) or (
        isinstance(value, (int, Decimal)) and pa.types.is_decimal(t)
    ):
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
        if any(
            isinstance(x, bool) or not isinstance(x, (int, float, Decimal, np.number))
            for x in values
        ):
            return None
        return from_pylist([float(x) for x in values], pa.float64())
    try:
        return from_pylist(values, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    found = [scalar_for(x, t) for x in values]
    scalars = [s for s in found if s is not None]
    if len(scalars) != len(found) or len({s.type for s in scalars}) != 1:
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

    label: ClassVar[str] = ""
    """How people call the kind (``"min/max"``); empty: its :attr:`name`."""

    RANGES: ClassVar[bool] = False
    """The metadata are value ranges: clustering the table by the column is what makes the
    index selective (layout advice covers these kinds)."""

    FOOTER_STATISTICS: ClassVar[bool] = False
    """:meth:`collect_from_statistics` may stand for a scan of the column."""

    RANDOM_FIELDS: ClassVar[tuple[str, ...]] = ()
    """Fields of the metadata struct that hold random bits (hash filters): the store keeps
    them uncompressed, without a dictionary or statistics."""

    SATURATED: ClassVar[str | None] = None
    """The effectiveness verdict when :meth:`estimate` says the index is saturated."""

    OVERLAP: ClassVar[tuple[str, str]] = ("values occur in most files", "values recur across files")
    """Why a weak / partial index skips little (effectiveness verdicts)."""

    @classmethod
    def display_name(cls) -> str:
        """:attr:`label`, or :attr:`name` when the kind sets none."""
        return cls.label or getattr(cls, "name", cls.__name__)

    # -------------------------------------------------------------- parameters

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The kind's parameters with their defaults, read from the constructor's signature
        (the keyword parameters after the column; one without a default maps to None)."""
        return dict(_signature(cls)[0])

    @classmethod
    def from_params(
        cls, column: str, params: Mapping[str, Any] | None = None, *, stored: bool = False
    ) -> Index:
        """An index of this kind on ``column`` from a parameter map.

        Values given as strings (xskipper's stores keep a string map) are converted to the
        type of the parameter's default (int, float or bool), as are integral floats for
        int parameters. ``stored=True`` (a definition read from a store) first adds
        :attr:`STORED_DEFAULTS`.

        Raises:
            IndexDefinitionError: a parameter the kind does not take, or a value it does not
                accept (the constructor's ``ValueError`` / ``TypeError``).
            TypeError: ``column`` is not a non-empty str.
        """
        if not isinstance(column, str) or not column:
            raise TypeError(f"an index column must be a non-empty str, got {column!r}")
        given = {**(cls.STORED_DEFAULTS if stored else {}), **dict(params or {})}
        defaults, takes_any = _signature(cls)
        unknown = sorted(k for k in given if k not in defaults)
        if unknown and not takes_any:
            raise IndexDefinitionError(
                f"a {cls.name} index takes no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters: {defaults or 'none'}"
            )
        kwargs = {k: _converted(v, defaults.get(k), cls.name, k) for k, v in given.items()}
        try:
            return cls(column, **kwargs)
        except (TypeError, ValueError) as exc:
            raise IndexDefinitionError(
                f"bad parameters for a {cls.name} index on {column!r}: {exc}"
            ) from None

    # -------------------------------------------------------------- part summaries

    def summarize(self, metadata: pa.Array) -> pa.Scalar | None:
        """One value standing for all of ``metadata`` (the entries of one store part, one per
        indexed file), so that a whole part can be skipped.

        Must be sound: of ``metadata``'s type, and :meth:`might_match` on it is True for
        every predicate that is True for some entry. The caller passes only known layouts
        (an encrypted index is never summarised: summaries are written in clear) and treats
        an exception from here as "no summary".

        Returns:
            The summary, or None: no summary, every file of the part is looked at (the
            default).
        """
        return None

    def metadata_type_ok(self, t: pa.DataType) -> bool:
        """Whether ``t`` can be this index's metadata type (for some column): a part summary
        of another type read from the store's log is damage. The default accepts any type;
        :meth:`might_match` must then cope with what it is given."""
        return True

    # -------------------------------------------------------------- effectiveness

    def estimate(self, metadata: pa.Array, rows: np.ndarray) -> Estimate | None:
        """How well this index skips, from its metadata alone (no data scan).

        Args:
            metadata: the index's metadata, one entry per file of a snapshot (not all null).
            rows: float64 row counts of those files.

        Returns:
            An :class:`Estimate`, or None: the kind cannot tell (the default; reported as
            "unknown").
        """
        return None

    def type_note(self, column_type: pa.DataType) -> str | None:
        """What this index cannot do on a column whose table type is ``column_type``, for
        people (the schema report); None (the default): nothing to say."""
        return None

    # -------------------------------------------------------------- compaction

    def sort_key(self, metadata: pa.Array) -> pa.Array | None:
        """What compaction sorts rows (files) by, given their metadata: files with close keys
        land in one part and keep its summary selective. None (the default): no order."""
        return None

    def collect_from_statistics(
        self, stats: list, num_rows: int, arrow_type: pa.DataType
    ) -> pa.Scalar | None:
        """One file's metadata from its footer statistics (see
        ``MinMaxIndex.collect_from_statistics``), or None: the column must be scanned. Used
        only when :attr:`FOOTER_STATISTICS` is set."""
        return None

    @property
    def key(self) -> str:
        """The name of this index's metadata column (:func:`storage_name`)."""
        return storage_name(self.name, self._cols)

    def __eq__(self, other) -> bool:
        return (
            type(other) is type(self)
            and other._cols == self._cols
            and other._params == self._params
        )

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


class Estimate(NamedTuple):
    """What :meth:`Index.estimate` tells about one index of a snapshot.

    Attributes:
        unknown_files: entries without usable metadata (always read).
        point_read_fraction: expected fraction of the files an equality lookup of a value
            drawn from the table's rows reads (unknown entries count as read); None when no
            file holds a value.
        range_read_fraction: {width: fraction} for ranges that wide (a fraction of the
            column's span), for kinds that answer ranges; None otherwise.
        saturated: the metadata mostly cannot tell (the verdict is :attr:`Index.SATURATED`).
        details: kind-specific figures behind the estimate.
    """

    unknown_files: int
    point_read_fraction: float | None
    range_read_fraction: dict | None = None
    saturated: bool = False
    details: dict = {}


@functools.lru_cache(maxsize=256)
def _signature(cls: type) -> tuple[dict[str, Any], bool]:
    """(the constructor's keyword parameters after the column with their defaults, whether it
    takes ``**params``)."""
    out: dict[str, Any] = {}
    takes_any = False
    for p in list(inspect.signature(cls).parameters.values())[1:]:  # (after the column)
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            out[p.name] = None if p.default is p.empty else p.default
        takes_any |= p.kind == p.VAR_KEYWORD
    return out, takes_any


def _converted(value: Any, default: Any, kind: str, key: str) -> Any:
    """A parameter value given as a str (or an integral float) in the type of its default."""
    if default is None or isinstance(default, str):
        return value
    target = type(default)
    if isinstance(value, str):
        text = value.strip()
        try:
            if target is bool:
                if text.lower() not in ("true", "false"):
                    raise ValueError(text)
                return text.lower() == "true"
            return (
                target(float(text))
                if target is int and "." in text and float(text).is_integer()
                else target(text)
            )
        except (TypeError, ValueError):
            article = "an" if target.__name__[0] in "aeiou" else "a"
            raise IndexDefinitionError(
                f"parameter {key}={value!r} of a {kind} index is not {article} {target.__name__}"
            ) from None
    if target is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def set_summary(lists: pa.Array, max_values: int) -> pa.Array | None:
    """The sorted union of per-file value sets, for :meth:`Index.summarize` of a kind whose
    metadata lists each file's keys.

    Args:
        lists: a list array, one entry per file.
        max_values: the most values the union may have.

    Returns:
        The distinct values (sorted; floats canonical: -0.0 as 0.0, one NaN), or None when a
        list is null (unknown), there are no lists, or the union exceeds ``max_values``.
    """
    if lists.null_count or len(lists) == 0:
        return None
    start, end = lists.offsets[0].as_py(), lists.offsets[-1].as_py()
    flat = lists.values.slice(start, end - start)
    if pa.types.is_floating(flat.type):
        from metaindex.bloom import canonical_floats

        flat = pa.array(canonical_floats(flat), flat.type)
    distinct = pc.unique(flat)
    if len(distinct) > max_values:
        return None
    return distinct.take(pc.sort_indices(distinct))


def set_estimate(lists: pa.Array, known: np.ndarray, rows: np.ndarray) -> Estimate:
    """:meth:`Index.estimate` of a kind whose metadata lists each file's keys (a lookup of
    a key reads the files listing it).

    A file's rows are taken as spread evenly over its listed keys; a key listed by k files
    makes a lookup read those k (exact counts, from the lists). Entries not ``known`` are
    always read; ``saturated`` when they are most of the files.

    Args:
        lists: a list array, one entry per file.
        known: per entry, whether it is usable.
        rows: float64 row counts of the files.
    """
    n = len(lists)
    unknown = int(n - np.count_nonzero(known))
    lengths = np.where(
        known,
        np.asarray(
            pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False), np.int64
        ),
        0,
    )
    fraction = unknown / n if unknown else None
    per_value, distinct_count = None, None
    if lengths.sum():
        parents = np.repeat(np.arange(n), lengths)
        flat = lists.filter(pa.array(known)).flatten()
        distinct = pc.unique(flat)
        distinct_count = len(distinct)
        idx = np.asarray(pc.index_in(flat, value_set=distinct).fill_null(0).to_numpy(), np.int64)
        files_per_value = np.bincount(idx, minlength=len(distinct))
        weights = (np.maximum(rows, 1.0) / np.maximum(lengths, 1))[parents]
        covered = float(np.dot(weights, files_per_value[idx]) / weights.sum())
        fraction = min(1.0, (covered + unknown) / n)
        per_value = float(files_per_value.mean())
    return Estimate(
        unknown,
        fraction,
        None,
        n > 0 and unknown * 2 > n,
        {
            "saturated_files": unknown,
            "distinct_values": distinct_count,
            "files_per_distinct_value": per_value,
        },
    )
