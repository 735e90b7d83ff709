"""parse_sql(): a Spark SQL predicate string -> an unbound expression (through sqlglot).

The full parser: :mod:`metaindex.expr.simple_sql` (what ``metaindex.expr.parse_sql`` and
pruning call) parses simple predicates itself and hands everything else to this module.

Literals are typed as Spark types them: ``1`` an int, ``1.5`` a *decimal*, ``1.5e0`` / ``1.5D`` a
double, ``'x'`` a string (``''`` inside quotes is a quote, ``\\`` escapes, adjacent literals
concatenate), ``DATE '...'``, ``TIMESTAMP '...'`` (in the session time zone unless it names
one), ``TIMESTAMP_NTZ '...'``, ``X'0A'``, ``NULL``, ``true`` / ``false``, and casts of literals
(``CAST('NaN' AS DOUBLE)``, ``double('NaN')``). ``NOT`` is pushed to the leaves while parsing,
so a ``LIKE`` pattern that no predicate expresses exactly can be widened safely: to a prefix /
suffix test under an even number of NOTs, to ``AlwaysTrue`` under an odd one.
"""

from __future__ import annotations

import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType

from metaindex.errors import ExpressionError
from metaindex.expr import expressions as ex
from metaindex.expr.literals import read_number, round_to_float32
from metaindex.expr.resolve import quote_part
from metaindex.expr.simple_sql import FLIPPED, number_literal
from metaindex.expr.temporal import parse_date, parse_timestamp, session_zone
from metaindex.expr.visitors import and_, flatten, or_

__all__ = ["parse_sql", "parse_sql_conjuncts"]

_SPARK = Dialect.get_or_raise("spark")

_COMPARISONS: dict[type[exp.Expression], type[ex._LiteralPredicate]] = {
    exp.EQ: ex.EqualTo,
    exp.NEQ: ex.NotEqualTo,
    exp.LT: ex.LessThan,
    exp.LTE: ex.LessThanOrEqual,
    exp.GT: ex.GreaterThan,
    exp.GTE: ex.GreaterThanOrEqual,
    exp.NullSafeEQ: ex.EqualNullSafe,
}
_PATTERN_FUNCTIONS: dict[type[exp.Expression], type[ex._PatternPredicate]] = {
    exp.StartsWith: ex.StartsWith,
    exp.EndsWith: ex.EndsWith,
    exp.Contains: ex.Contains,
}
_INTEGER_TYPES = {
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.BIGINT,
}
# expressions whose value is never a boolean: arithmetic, bitwise operations, numbers, strings
_VALUES = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.IntDiv,
    exp.Mod,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.BitwiseNot,
    exp.BitwiseLeftShift,
    exp.BitwiseRightShift,
    exp.Neg,
    exp.DPipe,
    exp.Literal,
)
_LTZ_TYPES = {
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.TIMESTAMPLTZ,
}


def parse_sql(sql: str, *, time_zone: str = "UTC") -> ex.BooleanExpression:
    """Parse a Spark SQL boolean expression (a WHERE clause without ``WHERE``).

    Supported: ``=``, ``==``, ``<=>``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` between a column
    and a literal (either side), ``[NOT] IN (literals)``, ``[NOT] BETWEEN``, ``IS [NOT] NULL``,
    ``IS [NOT] TRUE/FALSE``, ``IS [NOT] DISTINCT FROM``, ``isnan(c)``, ``isnull(c)``,
    ``isnotnull(c)``, ``[NOT] LIKE`` (``ESCAPE`` too), ``startswith`` / ``endswith`` / ``contains``,
    a bare boolean column, ``AND``, ``OR``, ``NOT``, parentheses. Names may be dotted (struct
    fields) and backquoted; they are matched case-insensitively at bind time by default.
    ``ILIKE`` and ``RLIKE`` parse to ``AlwaysTrue`` (no file can be ruled out by them).

    Args:
        sql: the predicate text.
        time_zone: the session time zone (an IANA name) for ``TIMESTAMP '...'`` literals that
            name none; Spark's ``spark.sql.session.timeZone``.

    Raises:
        ExpressionError: unparseable or unsupported SQL, or a literal that cannot be read.
        TypeError: ``sql`` is not a str.
    """
    tree, zone = _parse(sql, time_zone)
    return _Converter(zone).predicate(tree, False)


def parse_sql_conjuncts(
    sql: str, *, time_zone: str = "UTC"
) -> list[tuple[str, ex.BooleanExpression | None, str | None]]:
    """Parse a predicate and convert each top-level AND-ed conjunct on its own.

    For pruning: a conjunct this module cannot express (a function it does not know such as
    ``upper(c) = 'X'``, a cast of a column, a comparison of two columns) comes back without a
    predicate, so the caller can leave it out (which only keeps more files) and keep the others.

    Returns:
        ``[(conjunct text, predicate or None, why it could not be converted or None), ...]``.

    Raises:
        ExpressionError: the text is not a Spark SQL expression (a syntax error), or an unknown
            time zone.
        TypeError: ``sql`` is not a str.
    """
    tree, zone = _parse(sql, time_zone)
    out: list[tuple[str, ex.BooleanExpression | None, str | None]] = []
    for node in _top_level_conjuncts(tree):
        try:
            predicate, error = _Converter(zone).predicate(node, False), None
        except ExpressionError as exc:
            predicate, error = None, str(exc)
        except RecursionError:  # nested deeper than sqlglot's own walks go
            predicate, error = None, "nested too deeply to convert"
        try:  # written last: the node is not copied, and generating may touch it
            text = node.sql(dialect="spark", copy=False)
        except RecursionError:
            text = "<conjunct nested too deeply to show>"
        out.append((text, predicate, error))
    return out


def _top_level_conjuncts(node: exp.Expression) -> list[exp.Expression]:
    return [_unparen(n) for n in flatten(node, lambda n: _operands(n, exp.And))]


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _operands(node: exp.Expression, op: type[exp.Binary]) -> tuple | None:
    """``(left, right)`` of an ``op`` node (``exp.And`` / ``exp.Or``, parentheses around it
    looked through), None for anything else."""
    node = _unparen(node)
    return (node.left, node.right) if isinstance(node, op) else None


def _parse(sql: str, time_zone: str) -> tuple[exp.Expression, datetime.tzinfo]:
    if not isinstance(sql, str):
        raise TypeError(f"parse_sql takes a str, got {type(sql).__name__}")
    zone = session_zone(time_zone)  # IANA names, and the offsets Spark takes
    try:
        trees = _SPARK.parser().parse(_merge_quotes(_SPARK.tokenize(sql)), sql)
    except sqlglot.errors.SqlglotError as exc:
        raise ExpressionError(
            f"cannot parse {_clip(sql)!r} as Spark SQL: {_describe(exc)}"
        ) from None
    except RecursionError:  # sqlglot's parser recurses per parenthesis / NOT
        raise ExpressionError(
            f"cannot parse {_clip(sql)!r}: parentheses or NOTs nested too deeply "
            "for the SQL parser (a few hundred levels at most)"
        ) from None
    found = [t for t in trees if t is not None]
    if len(found) != 1:
        raise ExpressionError(
            f"expected one boolean expression, got {len(found)} statements in {sql!r}"
        )
    tree = found[0]
    assert isinstance(tree, exp.Expression), "sqlglot parses into Expression nodes"
    return tree, zone


def _clip(sql: str, limit: int = 200) -> str:
    return sql if len(sql) <= limit else sql[: limit - 1] + "…"


def _describe(exc: sqlglot.errors.SqlglotError) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        first = errors[0]
        return f"{first.get('description')} (line {first.get('line')}, column {first.get('col')})"
    return str(exc).splitlines()[0]


def _merge_quotes(tokens: list[Token]) -> list[Token]:
    """``'it''s'`` is one literal in Spark (a doubled quote); sqlglot reads two adjacent ones."""
    merged: list[Token] = []
    for tok in tokens:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and tok.token_type == TokenType.STRING
            and prev.token_type == TokenType.STRING
            and tok.start == prev.end + 1
        ):
            merged[-1] = Token(
                prev.token_type,
                prev.text + "'" + tok.text,
                prev.line,
                prev.col,
                prev.start,
                tok.end,
                prev.comments,
            )
        else:
            merged.append(tok)
    return merged


def _unsupported(node: exp.Expression, what: str = "unsupported SQL") -> ExpressionError:
    return ExpressionError(f"{what}: {node.sql(dialect='spark')!r}")


class _Converter:
    def __init__(self, zone: datetime.tzinfo) -> None:
        self.zone = zone

    # --- predicates -------------------------------------------------------------------------

    def predicate(self, node: exp.Expression, negated: bool) -> ex.BooleanExpression:
        """``node`` as a predicate, negated when ``negated`` (NOT pushed down as we go)."""
        if isinstance(node, exp.Paren):
            return self.predicate(node.this, negated)
        if isinstance(node, exp.Not):
            return self.predicate(node.this, not negated)
        if isinstance(node, (exp.And, exp.Or)):  # a chain of one operator, however long
            chain = flatten(node, lambda n: _operands(n, type(node)))
            parts = [self.predicate(p, negated) for p in chain]
            return and_(*parts) if isinstance(node, exp.And) != negated else or_(*parts)
        if isinstance(node, exp.Boolean):
            return ex.AlwaysTrue() if node.this != negated else ex.AlwaysFalse()
        if isinstance(node, exp.Null):
            return ex.AlwaysFalse()  # unknown, and NOT unknown is unknown: never true
        if isinstance(node, (exp.Like, exp.Escape)):
            return self.like(node, negated)
        if isinstance(node, (exp.ILike, exp.RegexpLike)):
            self.column(node.this)
            return ex.AlwaysTrue()
        leaf = self.leaf(node)
        return ~leaf if negated else leaf

    def leaf(self, node: exp.Expression) -> ex.BooleanExpression:
        """An exact predicate (its negation is exact too)."""
        cls = _COMPARISONS.get(type(node))
        if cls is not None:
            return self.comparison(cls, node)
        if isinstance(node, exp.NullSafeNEQ):
            return ~self.comparison(ex.EqualNullSafe, node)
        if isinstance(node, exp.In):
            if (
                node.args.get("query") is not None
                or node.args.get("unnest") is not None
                or node.args.get("field") is not None
            ):
                raise _unsupported(node, "IN takes a list of literals")
            return ex.In(self.column(node.this), [self.literal(v) for v in node.expressions])
        if isinstance(node, exp.Between):
            column = self.column(node.this)
            low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
            return ex.And(ex.GreaterThanOrEqual(column, low), ex.LessThanOrEqual(column, high))
        if isinstance(node, exp.Is):
            column, target = self.column(node.this), node.expression
            if isinstance(target, exp.Null):
                return ex.IsNull(column)
            if isinstance(target, exp.Boolean):
                return ex.EqualNullSafe(column, bool(target.this))
            raise _unsupported(node, "IS takes NULL, TRUE or FALSE")
        if isinstance(node, exp.IsNan):
            return ex.IsNaN(self.column(node.this))
        pattern = _PATTERN_FUNCTIONS.get(type(node))
        if pattern is not None:
            value = self.literal(node.expression)
            return pattern(self.column(node.this), value)
        if (
            isinstance(node, exp.Anonymous)
            and node.name.lower() in ("isnull", "isnotnull")
            and len(node.expressions) == 1
        ):
            column = self.column(node.expressions[0])
            return ex.IsNull(column) if node.name.lower() == "isnull" else ex.NotNull(column)
        if isinstance(node, (exp.Column, exp.Dot)):
            return ex.EqualTo(self.column(node), True)  # a bare boolean column
        if isinstance(node, _VALUES):
            raise _unsupported(node, "not a predicate (a value, not true or false)")
        raise _unsupported(node)

    def comparison(
        self, cls: type[ex._LiteralPredicate], node: exp.Expression
    ) -> ex.BooleanExpression:
        left, right = node.this, node.expression
        if _is_column(left) and not _is_column(right):
            return cls(self.column(left), self.literal(right))
        if _is_column(right) and not _is_column(left):
            return FLIPPED[cls](self.column(right), self.literal(left))
        if _is_column(left) and _is_column(right):
            other = right.sql(dialect="spark")
            raise _unsupported(
                node,
                f"compare one column with one literal, not two columns (if "
                f"{other} is a string, quote it: '{other}')",
            )
        raise _unsupported(node, "compare one column with one literal")

    def like(self, node: exp.Expression, negated: bool) -> ex.BooleanExpression:
        escape = "\\"
        if isinstance(node, exp.Escape):
            escape = self.literal(node.expression)
            if not isinstance(escape, str) or len(escape) != 1:
                raise _unsupported(node, "ESCAPE takes one character")
            node = node.this
            if not isinstance(node, exp.Like):
                raise _unsupported(node, "ESCAPE applies to LIKE")
        if node.args.get("negate"):
            negated = not negated
        column, pattern = self.column(node.this), self.literal(node.expression)
        if pattern is None:
            return ex.AlwaysFalse()
        if not isinstance(pattern, str):
            raise _unsupported(node, "LIKE takes a string pattern")
        exact, approx = _like_pattern(column, pattern, escape)
        if exact is not None:
            return ~exact if negated else exact
        return ex.AlwaysTrue() if negated else approx

    # --- terms ------------------------------------------------------------------------------

    def column(self, node: exp.Expression) -> ex.Reference:
        parts = _name_parts(node)
        if parts is None:
            raise _unsupported(node, "expected a column name")
        return ex.Reference(
            ".".join(quote_part(text) if quoted else text for text, quoted in parts)
        )

    def literal(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Paren):
            return self.literal(node.this)
        if isinstance(node, exp.Literal):
            return node.this if node.is_string else number_literal(node.this)
        if isinstance(node, exp.Neg):
            value = self.literal(node.this)
            if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
                return -value
            raise _unsupported(node, "minus applies to numbers")
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.HexString):
            text = node.this
            return bytes.fromhex(text if len(text) % 2 == 0 else "0" + text)
        if isinstance(node, exp.Concat) and all(
            isinstance(e, exp.Literal) and e.is_string for e in node.expressions
        ):
            return "".join(e.this for e in node.expressions)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(node)
        if isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is None:
            return self.cast_to(self.literal(node.this), exp.DataType.build("DATE"), node)
        if _is_column(node):
            raise _unsupported(node, "expected a literal, got a column")
        raise _unsupported(node, "expected a literal")

    def cast(self, node: exp.Cast) -> Any:
        return self.cast_to(self.literal(node.this), node.to, node)

    def cast_to(self, value: Any, to: exp.DataType, node: exp.Expression) -> Any:
        if value is None:
            return None
        kind = to.this
        try:
            if kind in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
                exact = _exact(value, node)
                if isinstance(exact, float):
                    return exact
                return float(exact) if kind == exp.DataType.Type.DOUBLE else round_to_float32(exact)
            if kind in _INTEGER_TYPES:
                exact = _exact(value, node)
                if isinstance(exact, float):
                    raise _unsupported(node, "cannot cast NaN or infinity to an integer")
                return int(exact)  # Spark truncates toward zero
            if kind == exp.DataType.Type.DECIMAL:
                return _to_decimal(value, to, node)
            if kind in (
                exp.DataType.Type.VARCHAR,
                exp.DataType.Type.TEXT,
                exp.DataType.Type.CHAR,
            ) and isinstance(value, str):
                return value
            if kind == exp.DataType.Type.BOOLEAN and isinstance(value, (bool, str)):
                return value  # bind reads Spark's true/false words against the column
            if kind == exp.DataType.Type.BINARY and isinstance(value, (str, bytes)):
                return value.encode("utf-8") if isinstance(value, str) else value
            if kind == exp.DataType.Type.DATE and isinstance(value, str):
                return parse_date(value)
            if kind in _LTZ_TYPES and isinstance(value, str):
                ts = parse_timestamp(value)
                ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=self.zone)
                return ts.astimezone(datetime.timezone.utc)
            if kind == exp.DataType.Type.TIMESTAMPNTZ and isinstance(value, str):
                return parse_timestamp(value).replace(tzinfo=None)
        except (ValueError, ArithmeticError) as exc:
            if isinstance(exc, ExpressionError):
                raise
            raise _unsupported(node, f"cannot cast literal ({exc})") from None
        raise _unsupported(node, "unsupported cast of a literal")


def _is_column(node: exp.Expression) -> bool:
    return _name_parts(node) is not None


def _name_parts(node: exp.Expression) -> list[tuple[str, bool]] | None:
    if isinstance(node, exp.Column):
        parts = [p for p in node.parts if isinstance(p, exp.Identifier)]
        if len(parts) != len(node.parts):
            return None
        return [(p.this, bool(p.quoted)) for p in parts]
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        head = _name_parts(node.this)
        return (
            None if head is None else head + [(node.expression.this, bool(node.expression.quoted))]
        )
    return None


def _exact(value: Any, node: exp.Expression) -> Fraction | float:
    """A literal's exact numeric value (NaN and infinities as floats)."""
    if isinstance(value, bool) or value is None:
        raise _unsupported(node, "cannot cast to a number")
    if isinstance(value, str):
        return read_number(value, "")
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return value
    if isinstance(value, (int, float, Decimal)):
        return Fraction(value)
    raise _unsupported(node, "cannot cast to a number")


def _to_decimal(value: Any, to: exp.DataType, node: exp.Expression) -> Decimal:
    params = [p.this.this if isinstance(p.this, exp.Literal) else p.this for p in to.expressions]
    precision, scale = (
        (int(params[0]) if params else 10),
        (int(params[1]) if len(params) > 1 else 0),
    )
    exact = _exact(value, node)
    if isinstance(exact, float):
        raise _unsupported(node, "cannot cast NaN or infinity to a decimal")
    try:
        result = (
            Decimal(exact.numerator) / Decimal(exact.denominator)
            if exact.denominator != 1
            else Decimal(exact.numerator)
        )
        result = result.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise _unsupported(node, "decimal literal out of range") from None
    if len(result.as_tuple().digits) > precision:
        raise _unsupported(node, f"literal does not fit DECIMAL({precision}, {scale})")
    return result


def _like_pattern(
    column: ex.Reference, pattern: str, escape: str
) -> tuple[ex.BooleanExpression | None, ex.BooleanExpression]:
    """(an exact predicate for the LIKE pattern or None, a predicate selecting a superset of it)."""
    tokens: list[str | None] = []  # None: '%', '': '_', else one literal character
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape:
            if i + 1 >= len(pattern):
                raise ExpressionError(f"LIKE pattern {pattern!r} ends with the escape character")
            tokens.append(pattern[i + 1])
            i += 2
            continue
        if ch == "%":
            if not tokens or tokens[-1] is not None:
                tokens.append(None)
        else:
            tokens.append("" if ch == "_" else ch)
        i += 1
    literal = lambda ts: "".join(ts)  # noqa: E731
    if "" not in tokens:
        pieces = [t for t in tokens if t is not None]
        if None not in tokens:
            return ex.EqualTo(column, literal(pieces)), ex.EqualTo(column, literal(pieces))
        inner = (
            tokens[1:-1]
            if tokens and tokens[0] is None and tokens[-1] is None and len(tokens) > 1
            else None
        )
        exact: ex.BooleanExpression | None
        if tokens[-1] is None and None not in tokens[:-1]:
            exact = ex.StartsWith(column, literal(tokens[:-1]))
        elif tokens[0] is None and None not in tokens[1:]:
            exact = ex.EndsWith(column, literal(tokens[1:]))
        elif inner is not None and None not in inner:
            exact = ex.Contains(column, literal(inner))
        else:
            exact = None
        if exact is not None:
            return exact, exact
    first = next((k for k, t in enumerate(tokens) if t is None or t == ""), len(tokens))
    last = next(
        (k for k in range(len(tokens) - 1, -1, -1) if tokens[k] is None or tokens[k] == ""), -1
    )
    approx: ex.BooleanExpression = ex.StartsWith(column, literal(tokens[:first]))
    if last + 1 < len(tokens) and last >= first:
        approx = ex.And(approx, ex.EndsWith(column, literal(tokens[last + 1 :])))
    return None, approx
