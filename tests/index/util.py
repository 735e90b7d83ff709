"""Helpers for the index tests: per-file metadata arrays and bound predicates from SQL."""

from __future__ import annotations

import pyarrow as pa

from metaindex.expr import BoundReference, bind, parse_sql
from metaindex.index import might_match


def metadata(ix, files: list, t: pa.DataType) -> pa.Array:
    """One metadata entry per file: a list of values is collected, None is an unknown entry."""
    kind = ix.metadata_type(t)
    return pa.array(
        [pa.scalar(None, kind) if f is None else ix.collect(pa.array(f, t)) for f in files], kind
    )


def where(sql: str, column: str, t: pa.DataType):
    """``sql`` bound to a one-column schema."""
    return bind(parse_sql(sql), pa.schema([(column, t)]))


def kept(ix, sql: str, files: list, t: pa.DataType) -> list[bool]:
    """Which files ``ix`` keeps for ``sql`` over a one-column table (column = ix.column)."""
    meta = metadata(ix, files, t)
    return might_match(where(sql, ix.column, t), [ix], {ix.key: meta}, len(files)).tolist()


def ref(column: str, t: pa.DataType) -> BoundReference:
    """A bound reference, for leaves ``bind`` would fold away (NaN literals...)."""
    return BoundReference(column, pa.field(column, t))


def kept_leaf(ix, predicate, files: list, t: pa.DataType) -> list[bool]:
    """Which files ``ix`` keeps for one bound leaf."""
    return ix.might_match(predicate, metadata(ix, files, t)).tolist()
