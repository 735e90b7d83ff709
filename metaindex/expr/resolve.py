"""Column names -> fields of a ``pa.Schema``: dotted paths into structs, Spark's case rules."""

from __future__ import annotations

import pyarrow as pa

from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr.bound import BoundReference

__all__ = ["split_name", "quote_part", "resolve", "matches"]


def split_name(name: str) -> list[tuple[str, bool]]:
    """The parts of a dotted name as ``(text, quoted)``; backquotes quote a part (`` doubles).

    Raises:
        ExpressionError: unbalanced backquotes or an empty part.
    """
    parts: list[tuple[str, bool]] = []
    i, n = 0, len(name)
    while True:
        if i < n and name[i] == "`":
            text, i = [], i + 1
            while True:
                if i >= n:
                    raise ExpressionError(f"column name {name!r}: unclosed backquote")
                if name[i] == "`":
                    if i + 1 < n and name[i + 1] == "`":
                        text.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                text.append(name[i])
                i += 1
            parts.append(("".join(text), True))
        else:
            end = name.find(".", i)
            end = n if end < 0 else end
            part = name[i:end]
            if not part or "`" in part:
                raise ExpressionError(
                    f"column name {name!r}: empty part or stray backquote (quote a part as `a.b`)"
                )
            parts.append((part, False))
            i = end
        if i == n:
            return parts
        if name[i] != ".":
            raise ExpressionError(f"column name {name!r}: expected '.' after a backquoted part")
        i += 1


def quote_part(part: str) -> str:
    """A field name as written in a canonical dotted path (backquoted if it holds '.' or '`')."""
    if "." in part or "`" in part:
        return "`" + part.replace("`", "``") + "`"
    return part


def resolve(schema: pa.Schema, name: str, case_sensitive: bool = False) -> BoundReference:
    """The field ``name`` designates in ``schema``.

    Each unquoted dot may separate struct levels or belong to a field's own name; a name that
    fits more than one way, or more than one field (case-insensitively), is ambiguous.

    Raises:
        SchemaError: no such column, or more than one.
        ExpressionError: a malformed name.
    """
    found = _walk(schema, name, case_sensitive)
    if not found:
        columns = ", ".join(quote_part(f.name) for f in schema)
        raise SchemaError(
            f"no column {name!r} in the table (columns: {columns}; reach struct fields as a.b)"
        )
    if len(found) > 1:
        options = " or ".join(repr(_canonical(path)) for path in found)
        raise SchemaError(
            f"column name {name!r} is ambiguous: {options} (use the exact case, or backquotes)"
        )
    return _reference(found[0])


def matches(schema: pa.Schema, name: str, case_sensitive: bool = False) -> list[BoundReference]:
    """Every field ``name`` may designate in ``schema`` (none, one, or several when ambiguous).

    Raises:
        ExpressionError: a malformed name.
    """
    return [_reference(path) for path in _walk(schema, name, case_sensitive)]


def _reference(path: tuple[pa.Field, ...]) -> BoundReference:
    return BoundReference(_canonical(path), path[-1], tuple(f.name for f in path))


def _walk(schema: pa.Schema, name: str, case_sensitive: bool) -> list[tuple[pa.Field, ...]]:
    parts = split_name(name)
    same = (lambda a, b: a == b) if case_sensitive else (lambda a, b: a.lower() == b.lower())
    found: list[tuple[pa.Field, ...]] = []

    def walk(fields: list[pa.Field], i: int, path: tuple[pa.Field, ...]) -> None:
        for field in fields:
            for j in range(i + 1, len(parts) + 1):
                if j > i + 1 and any(quoted for _, quoted in parts[i:j]):
                    break  # a quoted part is a whole field name
                if not same(field.name, ".".join(text for text, _ in parts[i:j])):
                    continue
                if j == len(parts):
                    found.append(path + (field,))
                elif pa.types.is_struct(field.type):
                    walk(
                        [field.type.field(k) for k in range(field.type.num_fields)],
                        j,
                        path + (field,),
                    )

    walk(list(schema), 0, ())
    return found


def _canonical(path: tuple[pa.Field, ...]) -> str:
    return ".".join(quote_part(f.name) for f in path)
