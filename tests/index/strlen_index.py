"""A user-defined index kind for the registration tests: per file, the shortest and longest
UTF-8 length of a string column; ``col = 'x'`` / ``col IN (...)`` skip files whose lengths
cannot hold the literal's. Written only against the public ``metaindex.index`` base."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.index import Index
from metaindex.index.base import Leaf


class StrLenIndex(Index):
    name = "strlen"
    __slots__ = ()

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        if not (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)):
            raise TypeError(f"a strlen index needs a string column, not {arrow_type}")
        return pa.struct([pa.field("shortest", pa.int64()), pa.field("longest", pa.int64())])

    def collect(self, values) -> pa.Scalar:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        lengths = pc.binary_length(values.cast(pa.string()))
        bounds = pc.min_max(lengths)
        t = self.metadata_type(pa.string())
        if bounds["min"].as_py() is None:
            return pa.scalar(None, t)
        return pa.scalar({"shortest": bounds["min"].as_py(), "longest": bounds["max"].as_py()}, t)

    def _evaluate(self, leaf: Leaf, metadata: pa.Array) -> np.ndarray:
        keep = np.ones(len(metadata), np.bool_)
        if leaf.op not in ("eq", "in"):
            return keep
        values = [leaf.value] if leaf.op == "eq" else list(leaf.value)
        if not all(isinstance(v, str) for v in values):
            return keep
        shortest = metadata.field("shortest").fill_null(-1).to_numpy(zero_copy_only=False)
        longest = metadata.field("longest").fill_null(1 << 62).to_numpy(zero_copy_only=False)
        unknown = ~np.asarray(metadata.is_valid().to_numpy(zero_copy_only=False), np.bool_)
        hit = np.zeros(len(metadata), np.bool_)
        for n in {len(v.encode("utf-8")) for v in values}:
            hit |= (shortest <= n) & (n <= longest)
        return hit | unknown
