"""Index kinds (min/max, value list, bloom filter) and might-match over all indexed files.

Each kind collects one metadata value per file (:meth:`Index.collect`; min/max also from
trusted footer statistics) and answers, for a bound leaf predicate, which files might hold a
matching row (:meth:`Index.might_match`), vectorised over the metadata of every file. It also
summarises a store part (:meth:`Index.summarize`), estimates its effectiveness
(:meth:`Index.estimate`), gives compaction its sort key (:meth:`Index.sort_key`) and declares
its parameters (its constructor; :meth:`Index.from_params`). :func:`might_match` /
:func:`evaluate` walk a whole And/Or tree across several indexes.

Own index kinds: one module with an :class:`Index` subclass, and one line,
:func:`register_index_kind`. ``metaindex.index.base`` says what a kind must and may provide.
The store records each index by its kind name and parameters, so the kind must be registered
in every process that refreshes or queries such an index; Spark executors receive the index
objects pickled (by reference to their module), so that module must be importable there."""

from collections.abc import Iterable, Mapping
from typing import Any

from metaindex.errors import IndexDefinitionError
from metaindex.index.base import (
    IN_LIMIT,
    Collector,
    Estimate,
    Index,
    Leaf,
    leaf,
    set_estimate,
    set_summary,
    storage_name,
)
from metaindex.index.bloom import BloomFilterIndex
from metaindex.index.evaluate import Evaluation, evaluate, might_match
from metaindex.index.minmax import MinMaxIndex
from metaindex.index.sketchbloom import SketchBloomIndex
from metaindex.index.valuelist import ValueListIndex

__all__ = [
    "Index",
    "Collector",
    "MinMaxIndex",
    "ValueListIndex",
    "BloomFilterIndex",
    "SketchBloomIndex",
    "make_index",
    "new_index",
    "kind_of",
    "Estimate",
    "set_summary",
    "set_estimate",
    "might_match",
    "evaluate",
    "Evaluation",
    "Leaf",
    "leaf",
    "storage_name",
    "IN_LIMIT",
    "KINDS",
    "BUILTIN_KINDS",
    "register_index_kind",
]

_BUILTIN: tuple[type[Index], ...] = (
    MinMaxIndex,
    ValueListIndex,
    BloomFilterIndex,
    SketchBloomIndex,
)
BUILTIN_KINDS: dict[str, type[Index]] = {cls.name: cls for cls in _BUILTIN}
"""The built-in index classes by their stored name (``sketchbloom``: xskipper's bloom filters,
kept by stores upgraded from xskipper's)."""

KINDS: dict[str, type[Index]] = dict(BUILTIN_KINDS)
"""Index classes by their stored name: the built-in ones and those registered with
:func:`register_index_kind` (process-wide)."""


def register_index_kind(cls: type[Index]) -> type[Index]:
    """Make an :class:`Index` subclass known by its ``name`` (what the store records), so
    :func:`make_index` can re-create its indexes from the store. Idempotent for the same
    class; usable as a class decorator.

    The class is constructed as ``cls(column, **params)`` with the parameters it reported in
    :attr:`Index.params` (str, int, float or bool values) and must be importable by
    Spark executors when builds run there.

    Raises:
        TypeError: not an :class:`Index` subclass, or abstract.
        ValueError: ``name`` is not ``[a-z][a-z0-9_]*``, is a built-in kind's, or is taken
            by another class.
    """
    import re

    if not isinstance(cls, type) or not issubclass(cls, Index):
        raise TypeError(f"register_index_kind takes a metaindex.index.Index subclass, not {cls!r}")
    if getattr(cls, "__abstractmethods__", None):
        raise TypeError(f"{cls.__name__} does not implement {sorted(cls.__abstractmethods__)}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"{cls.__name__}.name must match [a-z][a-z0-9_]*, not {name!r}")
    if name in BUILTIN_KINDS and BUILTIN_KINDS[name] is not cls:
        raise ValueError(f"{name!r} is a built-in index kind")
    current = KINDS.get(name)
    if current is not None and current is not cls:
        raise ValueError(
            f"index kind {name!r} is already registered by "
            f"{current.__module__}.{current.__qualname__}"
        )
    KINDS[name] = cls
    return cls


def kind_of(name: str) -> type[Index]:
    """The index class registered as ``name``.

    Raises:
        IndexDefinitionError: no such kind (the message lists the known ones).
    """
    cls = KINDS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise IndexDefinitionError(f"unknown index kind {name!r}; known: {sorted(KINDS)}")
    return cls


def new_index(kind: str | type[Index], column: str, **params: Any) -> Index:
    """A new index of ``kind`` (a registered name, or an :class:`Index` subclass) on
    ``column``, with the kind's defaults for the parameters not given: what both builders'
    ``add_index(kind, column, **params)`` add.

    Raises:
        IndexDefinitionError: an unknown kind, a parameter it does not take, a value it does
            not accept.
        TypeError: ``column`` is not a non-empty str, ``kind`` not a str or Index subclass.
    """
    if isinstance(kind, type) and issubclass(kind, Index):
        cls = kind
    elif isinstance(kind, str):
        cls = kind_of(kind)
    else:
        raise TypeError(
            f"an index kind is a registered kind's name ({sorted(KINDS)}) or a "
            f"metaindex.index.Index subclass, not {kind!r}"
        )
    return cls.from_params(column, params)


def make_index(
    name: str, cols: str | Iterable[str], params: Mapping[str, Any] | None = None
) -> Index:
    """An index from its stored definition ``{name, cols, params}``.

    Args:
        name: "minmax", "valuelist", "bloom" or a registered kind's name.
        cols: the column paths (exactly one).
        params: the kind's parameters (``max_values``; ``fpp``, ``max_bytes``,
            ``hash_scheme``); values given as strings (xskipper stores a string map) are
            converted (:meth:`Index.from_params`); a parameter a stored definition lacks
            takes the value the kind was written with before it existed
            (:attr:`Index.STORED_DEFAULTS`).

    Raises:
        IndexDefinitionError (a ValueError): unknown kind, not one column, bad or unknown
            parameters.
    """
    cls = kind_of(name)
    cols = (cols,) if isinstance(cols, str) else tuple(cols)
    if len(cols) != 1:
        raise IndexDefinitionError(f"a {name} index covers exactly one column, got {list(cols)}")
    try:
        return cls.from_params(cols[0], params, stored=True)
    except TypeError as exc:  # not a column path
        raise IndexDefinitionError(f"bad {name} index definition: {exc}") from None
