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

from metaindex import expr as ex
from metaindex.engine.session import SessionSettings
from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr import visitors
from metaindex.expr.visitors import and_, predicates

__all__ = [
    "DropReason",
    "Conjunct",
    "ConjunctOutcome",
    "unused_summary",
    "to_conjuncts",
    "bind_conjuncts",
    "indexes_of",
]


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

    @property
    def in_predicate(self) -> bool:
        """Whether the conjunct itself is at fault (unknown function or column, a literal the
        column cannot take), not the index (no index, no key): what ``metaindex prune``
        refuses without ``--allow-unused``."""
        return self in (
            DropReason.UNKNOWN_FUNCTION,
            DropReason.UNKNOWN_COLUMN,
            DropReason.TYPE_MISMATCH,
        )


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
    predicate: ex.BooleanExpression | None = None
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

    def as_dict(self) -> dict:
        """The outcome as JSON values (how every report and reply writes it): ``text``,
        ``used``, ``reason`` (the :class:`DropReason` value or None), ``detail``,
        ``partition``, ``indexes`` (a list)."""
        return {
            "text": self.text,
            "used": self.used,
            "reason": None if self.reason is None else self.reason.value,
            "detail": self.detail,
            "partition": self.partition,
            "indexes": list(self.indexes),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> ConjunctOutcome:
        """The outcome of an :meth:`as_dict` object (missing keys take their defaults).

        Raises:
            KeyError: no ``text`` or ``used``. ValueError: an unknown reason.
        """
        reason = doc.get("reason")
        return cls(
            doc["text"],
            bool(doc["used"]),
            None if reason is None else DropReason(reason),
            doc.get("detail"),
            bool(doc.get("partition", False)),
            tuple(doc.get("indexes") or ()),
        )


def unused_summary(outcomes) -> str | None:
    """``"filters not used: <text> (<reason>: <detail>); ..."`` for the conjuncts dropped for
    another reason than a missing index (what scan stats and logs report), None when there
    are none."""
    dropped = [c for c in outcomes if not c.used and c.reason is not DropReason.NO_INDEX]
    if not dropped:
        return None
    return "filters not used: " + "; ".join(
        f"{c.text} ({c.reason.value}{': ' + c.detail if c.detail else ''})" for c in dropped
    )


def to_conjuncts(predicate, time_zone: str = "UTC") -> list:
    """:class:`Conjunct` s of a predicate: a SQL string (split at its top-level ANDs, each part
    converted on its own), a ``metaindex.expr`` predicate (split at its top-level ``And``), a
    :class:`Conjunct`, or a list / tuple of those.

    Raises:
        ExpressionError: SQL that does not parse (a syntax error), an unknown time zone.
        TypeError: anything else.
    """
    from metaindex.expr import BooleanExpression

    if isinstance(predicate, Conjunct):
        return [predicate]
    if isinstance(predicate, str):
        from metaindex.expr.simple_sql import parse_sql_conjuncts  # sqlglot: not for simple SQL

        return [
            Conjunct(text, pred, error)
            for text, pred, error in parse_sql_conjuncts(predicate, time_zone=time_zone)
        ]
    if isinstance(predicate, BooleanExpression):
        return [Conjunct(_show(c), c) for c in visitors.conjuncts(predicate)]
    if isinstance(predicate, (list, tuple)):
        return [c for item in predicate for c in to_conjuncts(item, time_zone)]
    raise TypeError(
        f"a predicate is a metaindex.expr predicate, a SQL string, a Conjunct or a "
        f"list of those, not {type(predicate).__name__}"
    )


def _show(predicate) -> str:
    """A predicate's text for :attr:`Conjunct.text`: its repr, or its class when the repr is
    too deep to write."""
    try:
        return repr(predicate)
    except RecursionError:
        return f"<{type(predicate).__name__} nested too deeply to show>"


def _columns(predicate) -> list:
    """The column names an unbound predicate refers to."""
    return [n.term.name for n in predicates(predicate) if isinstance(n, ex.UnboundPredicate)]


def indexes_of(tree, indexes) -> list:
    """The indexes (in ``indexes`` order) on the columns the leaves of a bound, NOT-free
    predicate refer to."""
    from metaindex.index import leaf

    columns = {leaf(node).column for node in predicates(tree)}
    return [ix for ix in indexes if ix.column in columns]


def bind_conjuncts(context, conjuncts: list, session: SessionSettings, partition: bool):
    """(AND of the conjuncts that bind, NOT-free, as a balanced tree; a
    :class:`ConjunctOutcome` per conjunct),
    against ``context`` (a ``metaindex.engine.context.PruneContext``: its schema, indexes,
    labels and which of their keys this reader lacks)."""
    bound, outcomes = [], []
    for c in conjuncts:
        tree, outcome = _bind_one(context, c, session, partition)
        outcomes.append(outcome)
        if tree is not None:
            bound.append(tree)
    return and_(*bound), outcomes


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
        bound = bind(
            c.predicate, schema, case_sensitive=session.case_sensitive, time_zone=session.time_zone
        )
    except (SchemaError, ExpressionError, ValueError, TypeError) as exc:
        return dropped(DropReason.TYPE_MISMATCH, str(exc))
    indexed = columns & context.indexed_columns
    lost = context.keys_unavailable if indexed & context.encrypted_columns else frozenset()
    if columns and not isinstance(bound, (AlwaysFalse, AlwaysTrue)):
        if not indexed:
            return dropped(DropReason.NO_INDEX, f"no index on {', '.join(sorted(columns))}")
        if indexed <= lost:
            return dropped(
                DropReason.KEYS_UNAVAILABLE,
                f"no key to read the indexes of {', '.join(sorted(indexed))}",
            )
    usable = indexed - lost
    labels = (
        tuple(context.labels[ix.key] for ix in context.indexes if ix.column in usable)
        if not isinstance(bound, (AlwaysFalse, AlwaysTrue))
        else ()
    )
    return bound, ConjunctOutcome(c.text, True, partition=partition, indexes=labels)
