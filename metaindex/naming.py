"""How an index's metadata column is named (xskipper's version-2 scheme), the one rule that both
the index kinds (``Index.key``) and the metadata store (``IndexDef.storage_name``) use.

For an index ``I`` on columns ``c1..cn`` each ``ci`` becomes ``ci'`` (``#`` -> ``##``, then
``.`` -> ``$#$``) and the name is ``c1'_c2'_..._cn'_I_len(c1')-len(c2')-...-len(cn')``. The lengths
make the map injective: two different (index, columns) pairs never share a column name
(specs/metadata-store.md, "Column names"). This module imports nothing of metaindex, so every
layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["escape_column", "index_column_name"]


def escape_column(column: str) -> str:
    """One column path in the version-2 form: ``#`` doubled first, then ``.`` -> ``$#$``."""
    return column.replace("#", "##").replace(".", "$#$")


def index_column_name(index_name: str, cols: Iterable[str]) -> str:
    """The metadata column holding index ``index_name`` on ``cols`` (in this order).

    >>> index_column_name("someindex", ["lat#_.$_new", "$_lng.#"])
    'lat##_$#$$_new_$_lng$#$##_someindex_14-10'
    >>> index_column_name("minmax", ["a.b"])
    'a$#$b_minmax_5'

    Raises:
        TypeError: ``cols`` is one str rather than a sequence of column paths.
        ValueError: no column.
    """
    if isinstance(cols, str):
        raise TypeError("cols is a sequence of column paths, not one str")
    escaped = [escape_column(c) for c in cols]
    if not escaped:
        raise ValueError("an index is defined on at least one column")
    lengths = "-".join(str(len(e)) for e in escaped)
    return f"{'_'.join(escaped)}_{index_name}_{lengths}"
