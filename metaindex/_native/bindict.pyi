"""Dictionary-encoded BYTE_ARRAY pages straight into a chunk's sink (cython_ext/bindict.pyx)."""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self, disjoint_base

@disjoint_base
class BinaryDictionary:
    """A chunk's BYTE_ARRAY dictionary prepared once for ``decode_into``: entries whose
    offsets are wrong are marked (DecodeError when a page names one); TypeError for offsets
    without an entry."""

    size: int
    nbytes: int
    def __new__(cls, offsets: NDArray[np.int32], data: Any) -> Self: ...

def decode_into(data: Any, num_values: int, dictionary: BinaryDictionary, sink: Any) -> int:
    """A dictionary-encoded page's values gathered into ``sink`` (``sinks.BinarySink``), in
    one pass when the dictionary's entries are even, else in two; a bad run or index is a
    DecodeError that leaves the sink's count and size as they were. Returns the bytes of
    ``data`` read."""

def decode_spread_into(
    data: Any,
    present: int,
    dictionary: BinaryDictionary,
    sink: Any,
    bitmap: Any,
    first: int,
    n: int,
) -> int:
    """A nullable page's ``present`` values gathered straight into its ``n`` slots (validity
    bits ``[first, first + n)`` of ``bitmap``), the null slots ending where the value before
    ends. DecodeError as ``decode_into`` or for set bits other than ``present``; ValueError
    for a bitmap too small for the slots."""
