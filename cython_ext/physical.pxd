# cython: language_level=3
"""Physical types and the value conventions shared by the value kernels (plain, bss).

Header-only (``cdef inline``). Physical type codes are parquet.thrift's. Value arrays follow
the common convention: BOOLEAN bool_, INT32 int32, INT64 int64, FLOAT float32, DOUBLE float64,
INT96 uint8 (n, 12), FIXED_LEN_BYTE_ARRAY uint8 (n, type_length); BYTE_ARRAY is an Arrow-style
``(offsets, data)`` pair handled by the plain kernel itself.
"""

from libc.stdint cimport uint8_t
from buffer cimport Cursor, cur_make

cdef enum:
    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7


cdef inline Py_ssize_t fixed_width(int ptype, Py_ssize_t type_length) noexcept:
    """Bytes per value of a fixed-width type, or -1 (BOOLEAN, BYTE_ARRAY, unknown, bad length)."""
    if ptype == INT32 or ptype == FLOAT:
        return 4
    if ptype == INT64 or ptype == DOUBLE:
        return 8
    if ptype == INT96:
        return 12
    if ptype == FIXED_LEN_BYTE_ARRAY:
        return type_length if type_length > 0 else -1
    return -1


cdef inline const uint8_t[::1] byte_view(object data) except *:
    """A flat byte view of any C-contiguous buffer (bytes, numpy of any dtype, pyarrow Buffer)."""
    if isinstance(data, (bytes, bytearray)):
        return data
    return memoryview(data).cast("B")


cdef inline Cursor view_cursor(const uint8_t[::1] view) noexcept:
    """A cursor over a byte view. Never over NULL: ``cur_take`` returns NULL only on error."""
    return cur_make(&view[0] if view.shape[0] else <const uint8_t*>b"", view.shape[0])


cdef inline object fixed_array(Py_ssize_t n, int ptype, Py_ssize_t width):
    """A new, uninitialised value array of ``n`` values in the convention for ``ptype``."""
    import numpy as np
    if ptype == INT32:
        return np.empty(n, np.int32)
    if ptype == INT64:
        return np.empty(n, np.int64)
    if ptype == FLOAT:
        return np.empty(n, np.float32)
    if ptype == DOUBLE:
        return np.empty(n, np.float64)
    return np.empty((n, width), np.uint8)


cdef inline object fixed_values(object values, int ptype, Py_ssize_t width):
    """Check and normalise encoder input of a fixed-width type to a C-contiguous numpy array.

    Accepted: arrays (or sequences) of the convention dtype; other dtypes numpy casts safely;
    unsigned integers of the same width for INT32/INT64 (reinterpreted, Parquet's UINT_32 /
    UINT_64); for INT96 / FIXED_LEN_BYTE_ARRAY also 1-D ``S<width>`` / ``V<width>`` arrays.
    Raises TypeError (wrong kind or shape) or EncodeError (sequence values out of range).
    """
    import numpy as np
    from metaindex.errors import EncodeError
    cdef object target, arr
    if ptype == INT32:
        target = np.dtype(np.int32)
    elif ptype == INT64:
        target = np.dtype(np.int64)
    elif ptype == FLOAT:
        target = np.dtype(np.float32)
    elif ptype == DOUBLE:
        target = np.dtype(np.float64)
    else:
        target = np.dtype(np.uint8)
    if isinstance(values, np.ndarray):
        arr = values
    else:
        try:
            arr = np.asarray(values, dtype=target if target.kind != "u" else None)
        except OverflowError as exc:
            raise EncodeError(f"value out of range for {target}: {exc}") from None
    if target.kind == "u":  # INT96, FIXED_LEN_BYTE_ARRAY
        if arr.dtype.kind in "SV" and arr.ndim == 1 and arr.dtype.itemsize == width:
            arr = np.ascontiguousarray(arr).view(np.uint8).reshape(-1, width)
        if arr.dtype != target or arr.ndim != 2 or arr.shape[1] != width:
            raise TypeError(f"expected a uint8 array of shape (n, {width}) or a 1-D S{width} array, "
                            f"got {arr.dtype} with shape {arr.shape}")
        return np.ascontiguousarray(arr)
    if arr.ndim != 1:
        raise TypeError(f"expected a 1-D array of {target}, got shape {arr.shape}")
    if arr.dtype != target:
        if arr.dtype.kind == "u" and target.kind == "i" and arr.dtype.itemsize == target.itemsize:
            arr = arr.view(target)
        elif np.can_cast(arr.dtype, target, "safe"):
            arr = arr.astype(target)
        else:
            raise TypeError(f"expected {target} values (or a dtype numpy casts to it safely), "
                            f"got {arr.dtype}")
    return np.ascontiguousarray(arr)
