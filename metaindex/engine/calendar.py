"""Old-calendar dates and timestamps: which indexed files' stored values Spark reads as written.

Spark before 3.0 wrote dates and timestamps in the hybrid Julian + Gregorian calendar; Spark 3+
uses the proleptic Gregorian calendar and, when it reads a Parquet file, may *rebase* the stored
values (``org.apache.spark.sql.catalyst.util.RebaseDateTime``). The index keeps the raw stored
values, so wherever Spark rebases, a comparison on the index can disagree with Spark's. Spark's
rule per file (``DataSourceUtils.datetimeRebaseSpec`` / ``int96RebaseSpec``):

* the footer has ``org.apache.spark.version``: the file decides its own mode — LEGACY when the
  version is below ``3.0.0`` (INT96: ``3.1.0``; a *string* comparison, as Spark does) or when
  ``org.apache.spark.legacyDateTime`` (INT96: ``org.apache.spark.legacyINT96``) is present,
  else CORRECTED;
* no Spark version (pyarrow, Hive, DuckDB, ...): the session's read conf decides,
  ``spark.sql.parquet.datetimeRebaseModeInRead`` / ``spark.sql.parquet.int96RebaseModeInRead``
  (Spark 4 default CORRECTED, Spark 3 default EXCEPTION): EXCEPTION raises on an ancient value,
  LEGACY rebases Julian -> Gregorian, CORRECTED reads the value as stored.

A rebase is the identity from a cutoff on: DATE from day ``-141427`` (1582-10-15,
``RebaseDateTime.lastSwitchJulianDay``), TIMESTAMP (INT64 micros/millis and INT96) from
``-2208988800000000`` micros (1900-01-01T00:00:00Z, ``lastSwitchJulianTs``: the last switch
over every time zone). A value before the cutoff is *ancient*.

What the build records per file (store format 6, ``specs/metadata-store.md``):

* ``obj_datetime_rebase`` / ``obj_int96_rebase``: the writer's mode, ``"LEGACY"``,
  ``"CORRECTED"`` or ``"SESSION"`` (no Spark version: the reading session decides);
* ``obj_ancient_datetime`` / ``obj_ancient_int96``: whether an indexed DATE / TIMESTAMP (INT32,
  INT64) column, resp. an indexed INT96 column, holds an ancient value (from the values the
  collection saw: footer minimum or the scanned column; INT96 from the raw Julian day).

At query time (:func:`must_keep`) a file's stored temporal values are trusted unless its
effective mode (the writer's, else the session's) is LEGACY or EXCEPTION *and* it holds ancient
values — then Spark either rebases them (the index compares the wrong values) or raises (the
file must be read so that Spark raises with skipping on as with it off). A file without a record
(an entry written by format 5) is not trusted. An untrusted file is still decided by the
conjuncts that reference no DATE/TIMESTAMP column (:func:`split_temporal`), so a store written
before format 6 keeps skipping on every other column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import FALSE, TRUE, string_array, to_numpy
from metaindex.expr import AlwaysTrue
from metaindex.expr.visitors import BooleanExpressionVisitor, and_, conjuncts, visit
from metaindex.formats.parquet import writer_modes
from metaindex.store import OBJ_ANCIENT_DATETIME as ANCIENT_DATETIME
from metaindex.store import OBJ_ANCIENT_INT96 as ANCIENT_INT96
from metaindex.store import OBJ_DATETIME_REBASE as DATETIME_REBASE
from metaindex.store import OBJ_INT96_REBASE as INT96_REBASE

__all__ = [
    "DATE_CUTOFF_DAYS",
    "TIMESTAMP_CUTOFF_MICROS",
    "INT96_CUTOFF_JULIAN_DAY",
    "MODES",
    "writer_modes",
    "is_ancient",
    "must_keep",
    "is_temporal",
    "split_temporal",
    "guard",
    "CALENDAR_COLUMNS",
]

DATE_CUTOFF_DAYS = -141427  # 1582-10-15
TIMESTAMP_CUTOFF_MICROS = -2208988800000000  # 1900-01-01T00:00:00Z
INT96_CUTOFF_JULIAN_DAY = 2415021  # the Julian day number of 1900-01-01
MODES = ("EXCEPTION", "LEGACY", "CORRECTED")

CALENDAR_COLUMNS = (DATETIME_REBASE, INT96_REBASE, ANCIENT_DATETIME, ANCIENT_INT96)


def _mode(value, what: str) -> str:
    mode = str(value).strip().upper()
    if mode not in MODES:
        raise ValueError(f"{what} must be one of {list(MODES)}, not {value!r}")
    return mode


def is_temporal(arrow_type: pa.DataType) -> bool:
    """DATE or TIMESTAMP: the types Spark may rebase."""
    return pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type)


def is_ancient(minimum) -> bool:
    """Whether a DATE / TIMESTAMP minimum (an Arrow scalar or array) lies before the cutoff;
    False for nulls and empty input."""
    if isinstance(minimum, (pa.Array, pa.ChunkedArray)):
        minimum = pc.min(minimum)
    if minimum is None or not minimum.is_valid:
        return False
    if not is_temporal(minimum.type):
        raise TypeError(f"{minimum.type} is not a DATE or TIMESTAMP type")
    # (``.value``: the scalar's stored integer, days / ms / the unit's)
    return stored_is_ancient(minimum.value, minimum.type)


def stored_is_ancient(value: int | None, t: pa.DataType) -> bool:
    """:func:`is_ancient` of a minimum given as its stored integer (days, milliseconds or
    the timestamp's unit; None: no value) and its DATE / TIMESTAMP type ``t``."""
    if value is None:
        return False
    if pa.types.is_date32(t):
        return value < DATE_CUTOFF_DAYS
    if pa.types.is_date64(t):
        return value < DATE_CUTOFF_DAYS * 86_400_000
    if pa.types.is_timestamp(t):
        per_micro = {"s": 1e-6, "ms": 1e-3, "us": 1, "ns": 1000}[t.unit]
        return value < TIMESTAMP_CUTOFF_MICROS * per_micro
    raise TypeError(f"{t} is not a DATE or TIMESTAMP type")


def _column(table: pa.Table, name: str, kind: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, kind)
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _untrusted(table: pa.Table, mode_col: str, ancient_col: str, session_mode: str):
    modes = _column(table, mode_col, pa.string())
    ancient = _column(table, ancient_col, pa.bool_())
    # Arrow scalars, not Python values, for the compute calls (see metaindex.arrays)
    session, corrected_mode = string_array(["SESSION", "CORRECTED"])
    effective = pc.if_else(pc.equal(modes, session), string_array([session_mode])[0], modes)
    corrected = pc.fill_null(pc.equal(effective, corrected_mode), FALSE)
    unknown = pc.or_(pc.is_null(modes), pc.is_null(ancient))
    untrusted = pc.and_(pc.invert(corrected), pc.or_(unknown, pc.fill_null(ancient, TRUE)))
    return np.asarray(to_numpy(untrusted), np.bool_)


def must_keep(metadata_table: pa.Table, settings) -> np.ndarray:
    """One bool per snapshot row: True where the stored DATE/TIMESTAMP values cannot be trusted
    to be the ones Spark compares under ``settings`` (attributes ``datetime_rebase_read`` and
    ``int96_rebase_read``): ancient values whose effective mode is LEGACY or EXCEPTION, or no
    calendar record (entries of format 5)."""
    dt = _mode(settings.datetime_rebase_read, "datetime_rebase_read")
    i96 = _mode(settings.int96_rebase_read, "int96_rebase_read")
    return _untrusted(metadata_table, DATETIME_REBASE, ANCIENT_DATETIME, dt) | _untrusted(
        metadata_table, INT96_REBASE, ANCIENT_INT96, i96
    )


class _OnTime(BooleanExpressionVisitor):
    """Whether a bound predicate refers to a DATE/TIMESTAMP column (an unbound leaf: not
    understood, so yes)."""

    def visit_true(self) -> bool:
        return False

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child: bool) -> bool:
        return child

    def visit_and(self, left: bool, right: bool) -> bool:
        return left or right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def visit_unbound_predicate(self, predicate) -> bool:
        return True

    def visit_bound_predicate(self, predicate) -> bool:
        ref = getattr(predicate, "ref", None)
        return ref is None or is_temporal(ref.type)


def split_temporal(bound) -> tuple:
    """``(conjuncts referencing a DATE/TIMESTAMP column, the other conjuncts)`` of a bound
    predicate's top-level AND."""
    temporal: list = []
    other: list = []
    for c in conjuncts(bound):
        (temporal if visit(c, _OnTime()) else other).append(c)
    return temporal, other


def guard(
    kept: np.ndarray, bound, metadata_table: pa.Table, settings, indexes, metadata: dict
) -> np.ndarray:
    """``kept`` (one bool per snapshot row, from the whole bound predicate) with the untrusted
    rows (:func:`must_keep`) decided by the conjuncts on non-temporal columns only (evaluated
    over ``indexes`` / ``metadata`` as ``metaindex.index.evaluate`` takes them); unchanged
    when no conjunct touches a DATE or TIMESTAMP column or every row is trusted."""
    from metaindex.index import evaluate

    temporal, other = split_temporal(bound)
    if not temporal or not len(kept):
        return kept
    untrusted = must_keep(metadata_table, settings)
    if not untrusted.any():
        return kept
    rest = and_(*other)
    if isinstance(rest, AlwaysTrue):
        return kept | untrusted
    others = evaluate(rest, indexes, metadata, len(kept), per_index=False).kept
    return np.where(untrusted, others, kept)
