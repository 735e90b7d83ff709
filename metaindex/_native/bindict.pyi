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
    """A dictionary-encoded page's values gathered into ``sink`` (``sinks.BinarySink``);
    every run and index is checked (DecodeError) before anything is written. Returns the
    bytes of ``data`` read."""
