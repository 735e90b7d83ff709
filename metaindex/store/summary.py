"""Part summaries (format 7): one metadata row standing for every row of a part.

A summary has the four calendar columns and one column per index definition, each of the type
of that index's metadata column, so ``metaindex.index.evaluate`` runs on a table of summaries
unchanged. Each index's value is its kind's :meth:`metaindex.index.Index.summarize` of the
part's rows, which must *keep* the part whenever some row of it is kept (specs/metadata-store.md,
"Version 7"; the built-in kinds' rules are in their ``summarize`` docstrings: min/max the
outermost bounds, value list the union up to ``max_values``, bloom the bitsets folded and
OR-ed). The calendar columns: the rebase mode common to every row (else null); ``ancient``
true when a row's is true, else null when a row's is null, else false.

Null (the part is read) for an encrypted index (``IndexDef.key_metadata``: summaries are written
to the log in clear and never carry encrypted metadata), a kind that gives no summary (the
default of ``Index.summarize``), a kind not registered in this process, and a column whose
type the kind does not accept as its metadata.
"""

from __future__ import annotations

import base64
import functools

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import DecodeError
from metaindex.index import KINDS, Index, make_index
from metaindex.index.bloom import fold_bitset
from metaindex.index.valuelist import DEFAULT_MAX_VALUES
from metaindex.store.escaping import (
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_INT96_REBASE,
)

__all__ = [
    "summarize",
    "CALENDAR_TYPES",
    "encode_summary",
    "decode_summary",
    "fold_bitset",
    "check_layout",
    "index_for",
    "VALUELIST_DEFAULT_MAX_VALUES",
]

CALENDAR_TYPES = {
    OBJ_DATETIME_REBASE: pa.string(),
    OBJ_INT96_REBASE: pa.string(),
    OBJ_ANCIENT_DATETIME: pa.bool_(),
    OBJ_ANCIENT_INT96: pa.bool_(),
}
"""The calendar columns of a summary, in order, with their types."""

VALUELIST_DEFAULT_MAX_VALUES = DEFAULT_MAX_VALUES


def _column(table: pa.Table, name: str) -> pa.Array | None:
    if name not in table.column_names:
        return None
    col = table.column(name)
    if not isinstance(col, pa.ChunkedArray):
        return col
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()  # (that one copies)


def _any3(col: pa.Array | None):
    """True if a value is true, else None if one is null, else False (no rows: False)."""
    if col is None:
        return None
    if pc.any(col).as_py():
        return True
    return None if col.null_count else False


def _common(col: pa.Array | None):
    if col is None or col.null_count or len(col) == 0:
        return None
    distinct = pc.unique(col)
    return distinct[0].as_py() if len(distinct) == 1 else None


def index_for(d) -> Index | None:
    """The index a definition stands for, as this process knows its kind (None: a kind not
    registered here, or parameters it does not take)."""
    return _index_for(d, KINDS.get(d.name))


@functools.lru_cache(maxsize=1024)
def _index_for(d, kind: type | None) -> Index | None:  # (the kind: a registration changes it)
    if kind is None:
        return None
    try:
        return make_index(d.name, d.cols, d.params)
    except ValueError:
        return None


def _index_summary(d, col: pa.Array | None) -> pa.Array:
    """One index's summary value (a one-row array of the column's type): the kind's
    :meth:`~metaindex.index.Index.summarize`, null when it gives none or fails."""
    if col is None:
        return pa.nulls(1)
    ix = None if d.key_metadata is not None or pa.types.is_null(col.type) else index_for(d)
    if ix is not None and ix.metadata_type_ok(col.type):
        try:
            out = ix.summarize(col)
        except (KeyError, IndexError, pa.ArrowException, TypeError, ValueError):
            out = None  # not the layout its kind stores: no summary (keep)
        if out is not None and out.type.equals(col.type):
            return pa.repeat(out, 1)
    return pa.nulls(1, col.type)


def summarize(part_table: pa.Table, index_defs) -> pa.Table:
    """The summary row of a part's rows (see the module docstring for the rules).

    Args:
        part_table: rows of a part (the calendar columns and index columns it has; missing
            ones summarise as null).
        index_defs: the :class:`metaindex.store.IndexDef` of the index columns wanted.

    Returns:
        A one-row table: the four calendar columns, then one column per definition named
        ``IndexDef.storage_name`` (typed as the part's column; ``null`` type where it has none).
    """
    names, arrays = [], []
    for name in (OBJ_DATETIME_REBASE, OBJ_INT96_REBASE):
        names.append(name)
        arrays.append(pa.array([_common(_column(part_table, name))], pa.string()))
    for name in (OBJ_ANCIENT_DATETIME, OBJ_ANCIENT_INT96):
        names.append(name)
        arrays.append(pa.array([_any3(_column(part_table, name))], pa.bool_()))
    for d in index_defs:
        names.append(d.storage_name)
        arrays.append(_index_summary(d, _column(part_table, d.storage_name)))
    return pa.Table.from_arrays(arrays, names=names)


def check_layout(d, t: pa.DataType, where: str) -> None:
    """DecodeError unless ``t`` can be a summary of index ``d``: null, or a type its kind
    accepts as its metadata (:meth:`~metaindex.index.Index.metadata_type_ok`; a summary read
    from the log goes to that kind's evaluator). A kind not known here is not checked (its
    index is not evaluated here either)."""
    if pa.types.is_null(t):
        return
    ix = index_for(d)
    if ix is not None and not ix.metadata_type_ok(t):
        raise DecodeError(
            f"{where}: the summary of {d.storage_name} is {t}, not a {d.name} summary"
        )


def encode_summary(summary: pa.Table) -> str:
    """A summary row as base64 Arrow IPC (stream) text, as the log stores it."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, summary.schema) as writer:
        writer.write_table(summary)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def decode_summary(text, where: str) -> pa.Table:
    """:func:`encode_summary` reversed; DecodeError naming ``where`` if it is not one row."""
    if not isinstance(text, str):
        raise DecodeError(f"{where}: a part summary is base64 text, not {type(text).__name__}")
    try:
        table = pa.ipc.open_stream(pa.py_buffer(base64.b64decode(text, validate=True))).read_all()
    except (ValueError, TypeError, pa.ArrowException) as exc:
        raise DecodeError(f"{where}: unreadable part summary: {exc}") from None
    if table.num_rows != 1:
        raise DecodeError(f"{where}: a part summary has one row, not {table.num_rows}")
    for name, kind in CALENDAR_TYPES.items():
        if name not in table.column_names or table.schema.field(name).type != kind:
            raise DecodeError(f"{where}: a part summary has {name} of type {kind}")
    return table
