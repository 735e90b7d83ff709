"""Dremel assembly: validity bitmaps, list offsets and leaf arrays from def / rep levels
(cython_ext/levels_assemble.pyx). The Python driver is metaindex.parquet.shred."""

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

# numpy's stubs give ndarray the buffer protocol (``__buffer__``) only for Python >= 3.12
_Bytes = Buffer | NDArray[Any]

def check_levels(
    defs: NDArray[np.int16],
    reps: NDArray[np.int16] | None,
    max_def: int,
    max_rep: int,
    rep_def: NDArray[np.int16],
    leaf_slot_def: int,
) -> tuple[int, int, int]:
    """Validate a leaf's level stream; returns ``(n_records, n_present, n_slots)``.

    ``rep_def[r]`` is the def level at which the r-th repeated level has an element.
    Raises DecodeError (offset = level position) on levels out of range, a first level with
    rep != 0, or a rep level continuing a list that is null, empty or absent.
    """

def node_levels(
    defs: NDArray[np.int16],
    reps: NDArray[np.int16] | None,
    slot_def: int,
    slot_rep: int,
    def_present: int,
    offsets_width: int,
    alloc: Callable[[int], Buffer] | None = None,
) -> tuple[int, NDArray[np.uint8] | None, int, NDArray[np.int32] | NDArray[np.int64] | None, int]:
    """``(length, validity, null_count, offsets, child_count)`` of one struct (offsets_width 0)
    or list (4 / 8) node from the levels of a leaf below it."""

def scatter_leaf(
    defs: NDArray[np.int16],
    slot_def: int,
    max_def: int,
    mode: int,
    src: Buffer | None,
    src_off: int,
    width: int,
    n_values: int,
    n_slots: int,
    alloc: Callable[[int], Buffer] | None = None,
) -> tuple[NDArray[np.uint8], int, NDArray[np.generic]]:
    """Spread decoded non-null values over the leaf's slots: ``(validity, null_count, payload)``.

    mode 0 fixed-width bytes, 1 boolean bits, 2 / 3 int32 / int64 binary offsets (into the
    values' own data buffer), 4 int64 take indices. Raises DecodeError when the levels hold
    another number of values or slots than given.
    """

def spread_fixed(
    values: Any, width: int, bitmap: Any, bit_offset: int, n: int, present: int
) -> None:
    """Spread ``present`` packed values over the ``n`` slots the bitmap marks, in place."""

def spread_fixed_from(
    src: _Bytes, out: Any, width: int, bitmap: Any, bit_offset: int, n: int, present: int
) -> None:
    """Spread ``present`` packed values read from ``src`` over the ``n`` slots of ``out`` the
    bitmap marks (nulls zeroed)."""

def spread_offsets(
    offsets: Any, bitmap: Any, bit_offset: int, first: int, n: int, present: int
) -> None:
    """Spread a page's ``present`` packed BYTE_ARRAY end offsets (``offsets[first + 1:]``)
    over its ``n`` slots in place (a null slot ends where the slot before ends)."""
