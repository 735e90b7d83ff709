"""Walking predicate trees: one visitor, walked without recursion, and balanced builders.

Every pass over a ``metaindex.expr`` tree goes through this module: binding, ``rewrite_not``,
negation (``~``), equality and hashing, the index evaluators, the calendar guard's split and
the Pruner's column lookups. None of them recurses, so a tree as deep as memory allows (a
left-deep ``And`` of 10,000 conjuncts, a long ``OR`` chain, ``NOT`` nested 10,000 times)
is walked like a shallow one.

- :func:`visit` folds a tree bottom-up with a :class:`BooleanExpressionVisitor`: each node's
  method gets the results of its children (the model is pyiceberg's
  ``BooleanExpressionVisitor``; the walk keeps its own stack instead of Python's).
- :func:`nodes` iterates every node top-down (for finding leaves, comparing trees).
- :func:`and_` / :func:`or_` build the AND / OR of many predicates as a balanced tree (depth
  log2(n)); :func:`conjuncts` / :func:`disjuncts` split one at its top-level ``And`` / ``Or``
  chain, and :func:`flatten` does the same for any binary tree (SQL syntax trees, the Spark
  shim's JSON).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from metaindex.expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Or,
    UnboundPredicate,
)

__all__ = [
    "BooleanExpressionVisitor",
    "visit",
    "nodes",
    "predicates",
    "and_",
    "or_",
    "conjuncts",
    "disjuncts",
    "flatten",
    "negate",
    "equal",
    "hash_of",
]

T = TypeVar("T")


class BooleanExpressionVisitor(Generic[T], abc.ABC):
    """Folds a predicate tree bottom-up (see :func:`visit`): one method per kind of node.

    ``visit_and`` / ``visit_or`` / ``visit_not`` receive what the visitor returned for the
    children. A visitor holds no state between calls to :func:`visit` unless it says so.
    """

    @abc.abstractmethod
    def visit_true(self) -> T:
        """``AlwaysTrue()``."""

    @abc.abstractmethod
    def visit_false(self) -> T:
        """``AlwaysFalse()``."""

    @abc.abstractmethod
    def visit_not(self, child: T) -> T:
        """``Not(child)``."""

    @abc.abstractmethod
    def visit_and(self, left: T, right: T) -> T:
        """``And(left, right)``."""

    @abc.abstractmethod
    def visit_or(self, left: T, right: T) -> T:
        """``Or(left, right)``."""

    @abc.abstractmethod
    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> T:
        """A leaf naming its column (``metaindex.expr.UnboundPredicate``)."""

    @abc.abstractmethod
    def visit_bound_predicate(self, predicate: BooleanExpression) -> T:
        """A leaf on a resolved column (``metaindex.expr.BoundPredicate``)."""


# How each kind of node is walked: its children, and how the visitor combines their results.
def _leaf(method: str) -> tuple:
    return (), lambda visitor, node, results: getattr(visitor, method)(node)


_KINDS = {
    And: (("left", "right"), lambda v, n, r: v.visit_and(r[0], r[1])),
    Or: (("left", "right"), lambda v, n, r: v.visit_or(r[0], r[1])),
    Not: (("child",), lambda v, n, r: v.visit_not(r[0])),
    AlwaysTrue: ((), lambda v, n, r: v.visit_true()),
    AlwaysFalse: ((), lambda v, n, r: v.visit_false()),
    UnboundPredicate: _leaf("visit_unbound_predicate"),
}


_BOUND = _leaf("visit_bound_predicate")  # every other predicate class: a leaf on a bound column
_BY_TYPE: dict = {}  # node class -> its entry (filled on first sight: a dict lookup per node)


def _kind(node: Any) -> tuple:
    cls = type(node)
    found = _BY_TYPE.get(cls)
    if found is None:
        if not issubclass(cls, BooleanExpression):
            raise TypeError(f"not a predicate (metaindex.expr.BooleanExpression): {cls.__name__}")
        found = next((_KINDS[c] for c in cls.__mro__ if c in _KINDS), _BOUND)
        _BY_TYPE[cls] = found
    return found


def visit(expr: BooleanExpression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Fold ``expr`` bottom-up with ``visitor``, without recursion.

    Children are visited left before right; a node's method runs once its children's results
    are known.

    Raises:
        TypeError: a node that is not a ``metaindex.expr`` predicate.
    """
    results: list = []
    todo: list = [(expr, False)]
    args: Sequence[Any]
    while todo:
        node, ready = todo.pop()
        children, combine = _kind(node)
        if children and not ready:
            todo.append((node, True))
            todo.extend((getattr(node, name), False) for name in reversed(children))
            continue
        if children:
            args = results[-len(children) :]
            del results[-len(children) :]
        else:
            args = ()
        results.append(combine(visitor, node, args))
    return results[0]


def nodes(expr: BooleanExpression) -> Iterator[BooleanExpression]:
    """Every node of ``expr`` top-down, a node before its children, left before right.

    Raises:
        TypeError: (while iterating) a node that is not a ``metaindex.expr`` predicate.
    """
    todo = [expr]
    while todo:
        node = todo.pop()
        children, _ = _kind(node)
        yield node
        todo.extend(getattr(node, name) for name in reversed(children))


def predicates(expr: BooleanExpression) -> list:
    """The leaves of ``expr`` (bound and unbound predicates), left to right."""
    return [
        n for n in nodes(expr) if not _kind(n)[0] and not isinstance(n, (AlwaysTrue, AlwaysFalse))
    ]


def equal(a: Any, b: Any) -> bool:
    """Whether two predicate trees are built alike: the same classes in the same places, and
    leaves with equal fields (columns by name). Stops at the first difference."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if x is y:
            continue
        if type(x) is not type(y) or not isinstance(x, BooleanExpression):
            return False
        children, _ = _kind(x)
        if children:
            todo.extend((getattr(x, name), getattr(y, name)) for name in reversed(children))
        elif x._fields_key() != y._fields_key():
            return False
    return True


def hash_of(expr: BooleanExpression) -> int:
    """A hash that follows :func:`equal`."""
    return hash(tuple(type(n) if _kind(n)[0] else (type(n), n._fields_key()) for n in nodes(expr)))


# ------------------------------------------------------------------------------ building


def _balanced(cls: type, items: list) -> BooleanExpression:
    """``cls`` over ``items`` as a balanced tree (pairs, then pairs of pairs...)."""
    for item in items:
        if not isinstance(item, BooleanExpression):
            raise TypeError(
                f"{cls.__name__.lower()}_ takes predicates (BooleanExpression), "
                f"got {type(item).__name__}"
            )
    while len(items) > 1:
        items = [
            cls(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
            for i in range(0, len(items), 2)
        ]
    return items[0]


def and_(*expressions: BooleanExpression) -> BooleanExpression:
    """The AND of ``expressions`` as a balanced tree (``AlwaysTrue()`` for none), constants
    folded as ``And`` folds them.

    Raises:
        TypeError: an argument that is not a predicate.
    """
    return _balanced(And, list(expressions)) if expressions else AlwaysTrue()


def or_(*expressions: BooleanExpression) -> BooleanExpression:
    """The OR of ``expressions`` as a balanced tree (``AlwaysFalse()`` for none).

    Raises:
        TypeError: an argument that is not a predicate.
    """
    return _balanced(Or, list(expressions)) if expressions else AlwaysFalse()


def flatten(node: Any, operands: Callable[[Any], Iterable | None]) -> list:
    """The operands of a chain of one binary operator, left to right, without recursion.

    ``operands(n)`` gives the two operands of ``n`` when ``n`` is the operator (``a AND (b
    AND c)`` -> a, b, c), None otherwise. Works on any tree: ``metaindex.expr`` predicates
    (:func:`conjuncts`), SQL syntax trees, the Spark shim's JSON.
    """
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        parts = operands(n)
        if parts is None:
            out.append(n)
        else:
            todo.extend(reversed(list(parts)))
    return out


def conjuncts(expr: BooleanExpression) -> list:
    """The top-level AND-ed parts of ``expr`` (``[expr]`` when it is not an ``And``)."""
    return flatten(expr, lambda n: (n.left, n.right) if isinstance(n, And) else None)


def disjuncts(expr: BooleanExpression) -> list:
    """The top-level OR-ed parts of ``expr`` (``[expr]`` when it is not an ``Or``)."""
    return flatten(expr, lambda n: (n.left, n.right) if isinstance(n, Or) else None)


# ------------------------------------------------------------------------------ negation


class _Negate(BooleanExpressionVisitor[tuple]):
    """``(the node, its opposite)`` per node: ``~`` of a leaf, De Morgan above, and the
    child itself under a ``Not``."""

    def visit_true(self) -> tuple:
        return AlwaysTrue(), AlwaysFalse()

    def visit_false(self) -> tuple:
        return AlwaysFalse(), AlwaysTrue()

    def visit_not(self, child: tuple) -> tuple:
        return Not(child[0]), child[0]

    def visit_and(self, left: tuple, right: tuple) -> tuple:
        return And(left[0], right[0]), Or(left[1], right[1])

    def visit_or(self, left: tuple, right: tuple) -> tuple:
        return Or(left[0], right[0]), And(left[1], right[1])

    def visit_unbound_predicate(self, predicate) -> tuple:
        return predicate, ~predicate

    def visit_bound_predicate(self, predicate) -> tuple:
        return predicate, ~predicate


def negate(expr: BooleanExpression) -> BooleanExpression:
    """The three-valued opposite of ``expr`` (what ``~expr`` gives), without recursion:
    ``And`` / ``Or`` by De Morgan, each leaf by its own ``~``, ``Not(x)`` as ``x``."""
    if isinstance(expr, (And, Or)):
        return visit(expr, _Negate())[1]
    return ~expr
