"""Deep predicate trees: every walk is iterative (metaindex.expr.visitors), so a left-deep AND
of 10,000 conjuncts, a 10,000-way OR and NOT nested 10,000 times bind, rewrite, negate,
compare and hash without RecursionError, and select the rows they should.

Truth is computed here without any tree walk of ours: each tree is built from a list of leaves
whose meaning on a row is a plain loop.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

from metaindex.errors import ExpressionError
from metaindex.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpressionVisitor,
    Not,
    Or,
    and_,
    bind,
    col,
    conjuncts,
    or_,
    parse_sql,
    parse_sql_conjuncts,
    rewrite_not,
    visit,
)
from metaindex.expr.visitors import disjuncts, nodes
from tests.expr.reference import evaluate as evaluate_leaf

N = 10_000
SCHEMA = pa.schema([("x", pa.int64())])

pytestmark = pytest.mark.slow


class _Truth(BooleanExpressionVisitor):
    """Three-valued truth on one row; leaves by the reference evaluator (one leaf each)."""

    def __init__(self, row):
        self.row = row

    def visit_true(self):
        return True

    def visit_false(self):
        return False

    def visit_not(self, child):
        return None if child is None else not child

    def visit_and(self, left, right):
        return False if False in (left, right) else None if None in (left, right) else True

    def visit_or(self, left, right):
        return True if True in (left, right) else None if None in (left, right) else False

    def visit_unbound_predicate(self, predicate):
        raise AssertionError("evaluate bound trees")

    def visit_bound_predicate(self, predicate):
        return evaluate_leaf(predicate, self.row)


def truth(bound, x):
    return visit(bound, _Truth({"x": x}))


def depth(expr) -> int:
    """The longest root-to-leaf path (iteratively: nodes() with a depth per node)."""
    best, todo = 0, [(expr, 1)]
    while todo:
        node, d = todo.pop()
        best = max(best, d)
        todo.extend(
            (getattr(node, name), d + 1)
            for name in ("left", "right", "child")
            if hasattr(node, name)
        )
    return best


def test_a_left_deep_and_of_10000_conjuncts():
    tree = col("x") > -1
    for k in range(2, N + 1):  # what `a & b & c & ...` builds: depth N
        tree = tree & (col("x") > -k)
    assert depth(tree) == N
    assert conjuncts(tree) == [col("x") > -k for k in range(1, N + 1)], "the one split, in order"
    bound = bind(tree & (col("x") == 31), SCHEMA)
    assert truth(bound, 31) is True and truth(bound, 30) is False and truth(bound, None) is None
    assert rewrite_not(tree) is tree, "nothing to rewrite"
    same = col("x") > -1
    for k in range(2, N + 1):
        same = same & (col("x") > -k)
    assert same == tree and hash(same) == hash(tree), "equality and hashing walk deep trees"
    assert (same & (col("x") > 0)) != tree
    negated = ~tree
    assert isinstance(negated, Or) and truth(bind(negated, SCHEMA), -N - 5) is True
    assert truth(bind(negated, SCHEMA), 5) is False, "x > -k for every k: the opposite fails"


def test_balanced_builders():
    leaves = [col("x") == k for k in range(N)]
    anded, ored = and_(*leaves), or_(*leaves)
    assert depth(anded) == depth(ored) == 15, "log2(10,000) rounded up, plus the leaf"
    assert conjuncts(anded) == leaves and disjuncts(ored) == leaves, "order kept"
    assert and_() is AlwaysTrue() and or_() is AlwaysFalse()
    assert and_(leaves[0]) is leaves[0]
    assert and_(leaves[0], AlwaysFalse(), leaves[1]) is AlwaysFalse(), "constants fold"
    assert or_(AlwaysFalse(), leaves[1]) == leaves[1]
    with pytest.raises(TypeError):
        and_(leaves[0], "x = 1")
    bound = bind(ored, SCHEMA)
    assert truth(bound, 4321) is True and truth(bound, N) is False


def test_not_nested_10000_times():
    # T0 = x = 0; T(k) = NOT (x = k AND T(k-1)) when k is odd, NOT (x = k OR T(k-1)) when even
    tree = col("x") == 0
    for k in range(1, N + 1):
        tree = Not(And(col("x") == k, tree) if k % 2 else Or(col("x") == k, tree))
    assert depth(tree) > 2 * N

    def expected(x):
        value = None if x is None else x == 0
        for k in range(1, N + 1):
            leaf = None if x is None else x == k
            if k % 2:
                both = False if False in (leaf, value) else None if None in (leaf, value) else True
            else:
                both = True if True in (leaf, value) else None if None in (leaf, value) else False
            value = None if both is None else not both
        return value

    rewritten = rewrite_not(tree)
    assert not any(isinstance(n, Not) for n in nodes(rewritten)), "no Not left"
    bound = bind(tree, SCHEMA)
    assert not any(isinstance(n, Not) for n in nodes(bound))
    for x in (0, 1, 2, 3, 17, N - 1, N, N + 1, None):
        assert truth(bound, x) == expected(x), f"x = {x}"
    assert ~tree == tree.child, "~Not(x) is x"
    assert ~~rewritten == rewritten, "De Morgan twice is the identity on a NOT-free tree"


def test_sql_with_10000_conjuncts_and_a_10000_way_or():
    sql = " AND ".join(f"x > {-k}" for k in range(N)) + " AND x = 31"
    parts = parse_sql_conjuncts(sql)
    assert len(parts) == N + 1 and all(p is not None and e is None for _, p, e in parts)
    chain = " OR ".join(f"x = {k}" for k in range(N))
    [(text, pred, error)] = parse_sql_conjuncts(f"({chain})")
    assert error is None and depth(pred) == 15, "a long OR chain is rebuilt balanced"
    assert text.startswith("x = 0 OR x = 1")
    bound = bind(parse_sql(f"NOT ({chain})"), SCHEMA)
    assert truth(bound, 42) is False and truth(bound, N) is True


def test_parentheses_deeper_than_the_sql_parser_goes_are_a_typed_error():
    deep = "NOT (" * 2000 + "x = 1" + ")" * 2000
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse_sql(deep)
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse_sql_conjuncts(f"x = 2 AND {deep}")
    assert sys.getrecursionlimit() <= 10_000, "nothing here raised the interpreter's limit"
