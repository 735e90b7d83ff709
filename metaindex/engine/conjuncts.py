"""Conjuncts: a query as top-level AND-ed conjuncts, and what the decision does with each.

A query is a list of :class:`Conjunct` (or a SQL string / a ``metaindex.expr`` predicate,
split at its top-level ANDs by :func:`to_conjuncts`). :func:`bind_conjuncts` is the one place
a conjunct is dropped; for each conjunct once it:

1. takes its converted predicate; a conjunct the caller could not convert (a function the
   converters do not know, such as ``upper(c) = 'X'`` or a cast of a column) is dropped;
2. resolves its columns in the recorded schema under the session's case rule (unknown or
   ambiguous column: dropped) and binds its literals to the columns' types, TIMESTAMP literals
   in the session time zone (a literal the column cannot take: dropped);
3. drops a conjunct none of whose columns has an index (or whose indexes are all encrypted
   with keys this reader cannot get).

Dropping a top-level conjunct only widens the predicate, so it can never lose a row; nothing
inside a conjunct is ever dropped (under OR or NOT that would narrow it). Each conjunct's fate
and the typed reason (:class:`DropReason`) are a :class:`ConjunctOutcome`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import singledispatch

from metaindex import expr as ex
from metaindex.engine.session import SessionSettings
from metaindex.errors import ExpressionError, SchemaError

__all__ = ["DropReason", "Conjunct", "ConjunctOutcome", "to_conjuncts", "bind_conjuncts",
           "indexes_of"]


class DropReason(str, enum.Enum):
    """Why a conjunct was not used for skipping (it then keeps every file)."""

    UNKNOWN_FUNCTION = "unknown function"
    """Not convertible: a function, a cast of a column, two columns compared..."""
    UNKNOWN_COLUMN = "unknown column"
    """A column the recorded schema does not have, or an ambiguous name."""
    TYPE_MISMATCH = "type mismatch"
    """A literal the column cannot be compared with, or that cannot be read as its type."""
    NO_INDEX = "no index on the column"
    """Binds, but no index (nor partition column) covers any of its columns."""
    KEYS_UNAVAILABLE = "keys unavailable"
    """The indexes of its columns are encrypted with keys this reader cannot get."""


@dataclass(frozen=True)
class Conjunct:
    """One top-level AND-ed conjunct as a caller has it.

    Attributes:
        text: how to show it (SQL, or the engine's rendering of its filter).
        predicate: its ``metaindex.expr`` predicate (unbound), or None when the caller could
            not convert it.
        error: why it could not be converted (with ``predicate`` None).
    """

    text: str
    predicate: object = None
    error: str | None = None


@dataclass(frozen=True)
class ConjunctOutcome:
    """What the decision (``metaindex.engine.prune.Pruner``) did with one conjunct.

    Attributes:
        text: the conjunct as shown.
        used: whether it took part in the decision.
        reason: why not (a :class:`DropReason`), None when used.
        detail: the message behind ``reason``.
        partition: a partition conjunct (marks listed files only).
        indexes: the labels (as in ``PruneStats.skipped_by_index``) of the indexes that
            answered it: those on its columns (partition value lists included), in index
            order; empty when dropped or when it binds to a constant.
    """

    text: str
    used: bool
    reason: DropReason | None = None
    detail: str | None = None
    partition: bool = False
    indexes: tuple = ()


def to_conjuncts(predicate, time_zone: str = "UTC") -> list:
    """:class:`Conjunct` s of a predicate: a SQL string (split at its top-level ANDs, each part
    converted on its own), a ``metaindex.expr`` predicate (split at its top-level ``And``), a
    :class:`Conjunct`, or a list / tuple of those.

    Raises:
        ExpressionError: SQL that does not parse (a syntax error), an unknown time zone.
        TypeError: anything else.
    """
    from metaindex.expr import And, BooleanExpression, parse_sql_conjuncts

    if isinstance(predicate, Conjunct):
        return [predicate]
    if isinstance(predicate, str):
        return [Conjunct(text, pred, error)
                for text, pred, error in parse_sql_conjuncts(predicate, time_zone=time_zone)]
    if isinstance(predicate, And):
        return to_conjuncts(predicate.left, time_zone) + to_conjuncts(predicate.right,
                                                                       time_zone)
    if isinstance(predicate, BooleanExpression):
        return [Conjunct(repr(predicate), predicate)]
    if isinstance(predicate, (list, tuple)):
        return [c for item in predicate for c in to_conjuncts(item, time_zone)]
    raise TypeError(f"a predicate is a metaindex.expr predicate, a SQL string, a Conjunct or a "
                    f"list of those, not {type(predicate).__name__}")


@singledispatch
def _columns(node) -> list:
    """The column names an unbound predicate refers to."""
    return []  # AlwaysTrue, AlwaysFalse


@_columns.register(ex.And)
@_columns.register(ex.Or)
def _(node):
    return _columns(node.left) + _columns(node.right)


@_columns.register(ex.Not)
def _(node):
    return _columns(node.child)


@_columns.register(ex.UnboundPredicate)
def _(node):
    return [node.term.name]


def indexes_of(tree, indexes) -> list:
    """The indexes (in ``indexes`` order) on the columns the leaves of a bound, NOT-free
    predicate refer to."""
    from metaindex.index import leaf

    columns, stack = set(), [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ex.And, ex.Or)):
            stack += (node.left, node.right)
        elif not isinstance(node, (ex.AlwaysTrue, ex.AlwaysFalse)):
            columns.add(leaf(node).column)
    return [ix for ix in indexes if ix.column in columns]


def bind_conjuncts(context, conjuncts: list, session: SessionSettings, partition: bool):
    """(AND of the conjuncts that bind, NOT-free; a :class:`ConjunctOutcome` per conjunct),
    against ``context`` (a ``metaindex.engine.context.PruneContext``: its schema, indexes,
    labels and which of their keys this reader lacks)."""
    from metaindex.expr import AlwaysTrue, And

    tree, outcomes = AlwaysTrue(), []
    for c in conjuncts:
        bound, outcome = _bind_one(context, c, session, partition)
        outcomes.append(outcome)
        if bound is not None:
            tree = And(tree, bound)
    return tree, outcomes


def _bind_one(context, c: Conjunct, session: SessionSettings, partition: bool):
    """(bound predicate or None, ConjunctOutcome): the one place a conjunct is dropped."""
    from metaindex.expr import AlwaysFalse, AlwaysTrue, bind
    from metaindex.expr.resolve import resolve

    def dropped(reason, detail):
        return None, ConjunctOutcome(c.text, False, reason, detail, partition)

    if c.predicate is None:
        return dropped(DropReason.UNKNOWN_FUNCTION, c.error)
    schema = context.schema
    columns = set()
    for name in _columns(c.predicate):
        try:
            columns.add(resolve(schema, name, session.case_sensitive).name)
        except (SchemaError, ExpressionError) as exc:
            return dropped(DropReason.UNKNOWN_COLUMN, str(exc))
    try:
        bound = bind(c.predicate, schema, case_sensitive=session.case_sensitive)
    except (SchemaError, ExpressionError, ValueError, TypeError) as exc:
        return dropped(DropReason.TYPE_MISMATCH, str(exc))
    indexed = columns & context.indexed_columns
    lost = context.keys_unavailable if indexed & context.encrypted_columns else frozenset()
    if columns and not isinstance(bound, (AlwaysFalse, AlwaysTrue)):
        if not indexed:
            return dropped(DropReason.NO_INDEX, f"no index on {', '.join(sorted(columns))}")
        if indexed <= lost:
            return dropped(DropReason.KEYS_UNAVAILABLE,
                           f"no key to read the indexes of {', '.join(sorted(indexed))}")
    usable = indexed - lost
    labels = tuple(context.labels[ix.key] for ix in context.indexes if ix.column in usable) \
        if not isinstance(bound, (AlwaysFalse, AlwaysTrue)) else ()
    return bound, ConjunctOutcome(c.text, True, partition=partition, indexes=labels)
