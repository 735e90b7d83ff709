"""Index kinds (min/max, value list, bloom filter) and might-match over all indexed files.

Each kind collects one metadata value per file (:meth:`Index.collect`; min/max also from
trusted footer statistics) and answers, for a bound leaf predicate, which files might hold a
matching row (:meth:`Index.might_match`), vectorised over the metadata of every file.
:func:`might_match` / :func:`evaluate` walk a whole And/Or tree across several indexes.

Own index kinds: subclass :class:`Index` (set ``name``; implement ``metadata_type``,
``collect`` and ``_evaluate``; optionally ``collector``, returning a :class:`Collector` that
takes a file's row groups one by one and may say the rest need not be read) in an importable
module and call :func:`register_index_kind`.
The store records each index by its kind name and parameters, so the kind must be registered
in every process that refreshes or queries such an index; Spark executors receive the index
objects pickled (by reference to their module), so that module must be importable there.
"""

from metaindex.index.base import IN_LIMIT, Collector, Index, Leaf, leaf, storage_name
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

BUILTIN_KINDS = {cls.name: cls for cls in (MinMaxIndex, ValueListIndex, BloomFilterIndex,
                                            SketchBloomIndex)}
"""The built-in index classes by their stored name (``sketchbloom``: xskipper's bloom filters,
kept by stores upgraded from xskipper's)."""

KINDS = dict(BUILTIN_KINDS)
"""Index classes by their stored name: the built-in ones and those registered with
:func:`register_index_kind` (process-wide)."""


def register_index_kind(cls) -> type:
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
        raise TypeError(f"register_index_kind takes a metaindex.index.Index subclass, "
                        f"not {cls!r}")
    if getattr(cls, "__abstractmethods__", None):
        raise TypeError(f"{cls.__name__} does not implement "
                        f"{sorted(cls.__abstractmethods__)}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"{cls.__name__}.name must match [a-z][a-z0-9_]*, not {name!r}")
    if name in BUILTIN_KINDS and BUILTIN_KINDS[name] is not cls:
        raise ValueError(f"{name!r} is a built-in index kind")
    current = KINDS.get(name)
    if current is not None and current is not cls:
        raise ValueError(f"index kind {name!r} is already registered by "
                         f"{current.__module__}.{current.__qualname__}")
    KINDS[name] = cls
    return cls


def make_index(name: str, cols, params=None) -> Index:
    """An index from its stored definition ``{name, cols, params}``.

    Args:
        name: "minmax", "valuelist", "bloom" or a registered kind's name.
        cols: the column paths (exactly one).
        params: the kind's parameters (``max_values``; ``fpp``, ``max_bytes``,
            ``hash_scheme``); values given as strings (xskipper stores a string map) are
            converted; a parameter a stored definition lacks takes the value the kind was
            written with before it existed (:attr:`Index.STORED_DEFAULTS`).

    Raises:
        ValueError: unknown kind, not one column, bad or unknown parameters.
    """
    cls = KINDS.get(name)
    if cls is None:
        raise ValueError(f"unknown index kind {name!r}; known: {sorted(KINDS)}")
    cols = (cols,) if isinstance(cols, str) else tuple(cols)
    if len(cols) != 1:
        raise ValueError(f"a {name} index covers exactly one column, got {list(cols)}")
    if name not in BUILTIN_KINDS:
        try:
            return cls(cols[0], **{**cls.STORED_DEFAULTS, **dict(params or {})})
        except TypeError as exc:
            raise ValueError(f"bad parameters for a {name} index: {exc}") from None
    converters = {"max_values": int, "fpp": float, "max_bytes": int, "hash_scheme": int,
                  "ndv": int}
    kwargs = {}
    for key, value in {**cls.STORED_DEFAULTS, **dict(params or {})}.items():
        if key not in converters:
            raise ValueError(f"unknown parameter {key!r} for a {name} index")
        try:
            kwargs[key] = converters[key](value)
        except (TypeError, ValueError):
            raise ValueError(f"parameter {key}={value!r} of a {name} index is not a "
                             f"{converters[key].__name__}") from None
    try:
        return cls(cols[0], **kwargs)
    except TypeError as exc:
        raise ValueError(f"bad parameters for a {name} index: {exc}") from None
