"""Index kinds (min/max, value list, bloom filter) and might-match over all indexed files.

Each kind collects one metadata value per file (:meth:`Index.collect`; min/max also from
trusted footer statistics) and answers, for a bound leaf predicate, which files might hold a
matching row (:meth:`Index.might_match`), vectorised over the metadata of every file.
:func:`might_match` / :func:`evaluate` walk a whole And/Or tree across several indexes.
"""

from metaindex.index.base import IN_LIMIT, Index, Leaf, leaf, storage_name
from metaindex.index.bloom import BloomFilterIndex
from metaindex.index.evaluate import Evaluation, evaluate, might_match
from metaindex.index.minmax import MinMaxIndex
from metaindex.index.valuelist import ValueListIndex

__all__ = [
    "Index",
    "MinMaxIndex",
    "ValueListIndex",
    "BloomFilterIndex",
    "make_index",
    "might_match",
    "evaluate",
    "Evaluation",
    "Leaf",
    "leaf",
    "storage_name",
    "IN_LIMIT",
    "KINDS",
]

KINDS = {cls.name: cls for cls in (MinMaxIndex, ValueListIndex, BloomFilterIndex)}
"""Index classes by their stored name."""


def make_index(name: str, cols, params=None) -> Index:
    """An index from its stored definition ``{name, cols, params}``.

    Args:
        name: "minmax", "valuelist" or "bloom".
        cols: the column paths (exactly one).
        params: the kind's parameters (``max_values``; ``fpp``, ``max_bytes``); values given
            as strings (xskipper stores a string map) are converted.

    Raises:
        ValueError: unknown kind, not one column, bad or unknown parameters.
    """
    cls = KINDS.get(name)
    if cls is None:
        raise ValueError(f"unknown index kind {name!r}; known: {sorted(KINDS)}")
    cols = (cols,) if isinstance(cols, str) else tuple(cols)
    if len(cols) != 1:
        raise ValueError(f"a {name} index covers exactly one column, got {list(cols)}")
    converters = {"max_values": int, "fpp": float, "max_bytes": int}
    kwargs = {}
    for key, value in (params or {}).items():
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
