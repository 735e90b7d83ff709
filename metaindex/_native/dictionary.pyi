"""Dictionary building and gathering (cython_ext/dictionary.pyx).

Physical types: 1 INT32, 2 INT64, 3 INT96, 4 FLOAT, 5 DOUBLE, 6 BYTE_ARRAY, 7
FIXED_LEN_BYTE_ARRAY (BOOLEAN is never dictionary-encoded). _Values follow the kernel
conventions: numpy arrays of the type's dtype, ``(n, width)`` uint8 arrays for INT96 /
FIXED_LEN_BYTE_ARRAY, ``(offsets, data)`` pairs for BYTE_ARRAY. Entries are keyed by their
bytes (floats by bit pattern) and kept in first-occurrence order.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self, disjoint_base

_Values = Any  # ndarray in the conventions dtype, or an (offsets, data) pair for BYTE_ARRAY

@disjoint_base
class DictionaryBuilder:
    physical_type: int
    type_length: int
    max_dict_bytes: int
    num_entries: int
    plain_size: int
    def __new__(
        cls, physical_type: int, type_length: int = 0, max_dict_bytes: int = 1048576
    ) -> Self: ...
    def add(self, values: _Values) -> NDArray[np.uint32] | None: ...
    def dictionary(self) -> _Values: ...

def build_dictionary(
    values: _Values, physical_type: int, type_length: int = 0, max_dict_bytes: int = 1048576
) -> tuple[_Values, NDArray[np.uint32]] | None: ...
def take(
    dictionary_values: _Values,
    indices: NDArray[Any],
    physical_type: int,
    type_length: int = 0,
    out: Any = None,
) -> _Values: ...
