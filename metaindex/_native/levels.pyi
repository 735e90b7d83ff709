"""Dremel shredding: def / rep levels from Arrow validity bitmaps and list offsets
(cython_ext/levels.pyx). The Python driver is metaindex.parquet.shred."""

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

# (kind, validity, offset, length, nullable, def_present, offsets, rep_child, size, child_len)
# kind: 0 struct or leaf, 1 int32 list / map offsets, 2 int64 offsets, 3 fixed-size list.
_Step = tuple[int, Buffer | None, int, int, bool, int, Buffer | None, int, int, int]

def shred_leaf(
    steps: list[_Step],
    with_reps: bool,
    leaf_values: Buffer | None,
    width: int,
    alloc: Callable[[int], Buffer] | None = None,
) -> tuple[
    NDArray[np.int16], NDArray[np.int16] | None, int, NDArray[np.uint8] | None, int, int, int
]:
    """One leaf column's levels and present values from its chain of Arrow arrays.

    Returns ``(defs, reps, mode, payload, lo, hi, n_present)``: mode 0 = the present values
    are ``leaf[lo:hi]``; 1 = payload holds n_present gathered ``width``-byte values; 2 = payload
    is a bitmap of n_present booleans; 3 = payload is a selection bitmap over ``leaf[lo:hi]``.
    Raises EncodeError on nulls in a non-nullable level, invalid offsets or short buffers.
    """
