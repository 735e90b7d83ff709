"""A user's index kind, written as one module against the public ``metaindex.index`` seam: per
file, the distinct prefixes of ``length`` characters of a string column (strings shorter than
``length`` kept whole), at most ``max_prefixes`` of them.

It answers ``col = 'v'``, ``col IN (...)``, ``startswith(col, 'p')`` and ``col LIKE 'p%'``: a file
can hold a matching row only if it lists the literal's own prefix (for a pattern shorter than
``length``: a prefix starting with it). Anything else, a file with more than ``max_prefixes``
prefixes (a null entry) or a literal that is not a str keeps the file. A file whose values are
all null lists nothing and is ruled out by those predicates (no NULL satisfies them).

Registered with one line: ``metaindex.index.register_index_kind(PrefixIndex)``; its part
summary is the union of the files' prefixes (``set_summary``), its effectiveness estimate that of
a kind listing keys per file (``set_estimate``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.index import Estimate, Index, set_estimate, set_summary
from metaindex.index.base import Leaf, valid_mask

__all__ = ["PrefixIndex"]


class PrefixIndex(Index):
    """Distinct string prefixes of one column per file.

    Args:
        col: the column's dotted path (a string column).
        length: the prefix length in characters (>= 1).
        max_prefixes: the most prefixes stored per file (and per part summary); a file with
            more gets a null (unknown) entry.
    """

    name = "prefix"
    label = "string prefix"
    __slots__ = ()

    def __init__(self, col: str, length: int = 4, max_prefixes: int = 64) -> None:
        for key, value in (("length", length), ("max_prefixes", max_prefixes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be an int >= 1, got {value!r}")
        super().__init__(col, length=length, max_prefixes=max_prefixes)

    @property
    def length(self) -> int:
        return int(self.params["length"])

    @property
    def max_prefixes(self) -> int:
        return int(self.params["max_prefixes"])

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise TypeError(f"a prefix index needs a string column, not {arrow_type}")
        return pa.list_(pa.string())

    def metadata_type_ok(self, t: pa.DataType) -> bool:
        return pa.types.is_list(t) and pa.types.is_string(t.value_type)

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        kind = self.metadata_type(values.type)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks() if values.num_chunks else pa.array([], pa.string())
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        prefixes = pc.unique(
            pc.utf8_slice_codeunits(values.cast(pa.string()), 0, self.length).drop_null()
        )
        if len(prefixes) > self.max_prefixes:
            return pa.scalar(None, kind)
        return pa.scalar(prefixes.take(pc.sort_indices(prefixes)).to_pylist(), kind)

    def _evaluate(self, leaf: Leaf, metadata: pa.Array) -> np.ndarray:
        keep = np.ones(len(metadata), np.bool_)
        if leaf.op == "eq":
            literals = [leaf.value]
        elif leaf.op == "in":
            literals = list(leaf.value)
        elif leaf.op == "starts_with":
            literals = [leaf.value]
        else:
            return keep
        if not all(isinstance(v, str) for v in literals):
            return keep
        flat = pc.list_flatten(metadata)
        parents = np.asarray(
            pc.list_parent_indices(metadata).to_numpy(zero_copy_only=False), np.int64
        )
        hits = np.zeros(len(flat), np.bool_)
        for v in literals:
            if leaf.op == "starts_with" and len(v) < self.length:
                found = pc.starts_with(flat, pattern=v)  # a stored prefix extends it
            else:
                found = pc.equal(flat, v[: self.length])
            hits |= np.asarray(found.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)
        might = np.zeros(len(metadata), np.bool_)
        might[parents[hits]] = True
        return might | ~valid_mask(metadata)

    def summarize(self, metadata: pa.Array) -> pa.Scalar | None:
        union = set_summary(metadata, self.max_prefixes)
        return None if union is None else pa.scalar(union.to_pylist(), metadata.type)

    def estimate(self, metadata: pa.Array, rows: np.ndarray) -> Estimate:
        return set_estimate(metadata, valid_mask(metadata), rows)
