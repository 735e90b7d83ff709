# cython: language_level=3
"""Argument normalisation for kernels that take column values (delta, dictionary).

Header-only (``cdef inline``), like buffer.pxd. Turns the value conventions of the kernel
brief into plain numpy arrays without copying where the input already fits:

- fixed-width values (INT32, INT64, INT96, FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY): any C-contiguous
  buffer whose items are ``width`` bytes wide, a 2-D ``(n, width)`` uint8 array, or raw bytes
  whose length is a multiple of ``width`` -> a 1-D uint8 array of ``n * width`` bytes;
- BYTE_ARRAY: an ``(offsets, data)`` pair (offsets int32 or int64, ``offsets[0]`` may be > 0)
  -> (int64 offsets, uint8 data), offsets checked to be non-decreasing and inside ``data``.

Misfits raise ``TypeError`` (wrong kind of object) or ``EncodeError`` (inconsistent offsets).
"""

from libc.stdint cimport uint8_t, int64_t

cimport cython

# Physical type codes (parquet.thrift).
cdef enum:
    PT_BOOLEAN = 0
    PT_INT32 = 1
    PT_INT64 = 2
    PT_INT96 = 3
    PT_FLOAT = 4
    PT_DOUBLE = 5
    PT_BYTE_ARRAY = 6
    PT_FIXED_LEN_BYTE_ARRAY = 7


cdef inline Py_ssize_t fixed_width(int physical_type, Py_ssize_t type_length) except -1:
    """Bytes per value of a fixed-width physical type (TypeError for BOOLEAN / BYTE_ARRAY)."""
    if physical_type == PT_INT32 or physical_type == PT_FLOAT:
        return 4
    if physical_type == PT_INT64 or physical_type == PT_DOUBLE:
        return 8
    if physical_type == PT_INT96:
        return 12
    if physical_type == PT_FIXED_LEN_BYTE_ARRAY:
        if type_length <= 0:
            raise TypeError(f"FIXED_LEN_BYTE_ARRAY needs type_length > 0, got {type_length}")
        return type_length
    raise TypeError(f"physical type {physical_type} is not a fixed-width type "
                    "(expected INT32=1, INT64=2, INT96=3, FLOAT=4, DOUBLE=5, FIXED_LEN_BYTE_ARRAY=7)")


cdef inline object as_fixed_bytes(object values, Py_ssize_t width):
    """``values`` as a 1-D uint8 array of ``n * width`` bytes (no copy when contiguous)."""
    import numpy as np
    cdef object mv
    if isinstance(values, tuple):
        raise TypeError("expected a buffer of fixed-width values, got a tuple "
                        "(BYTE_ARRAY (offsets, data) pairs are only for physical type 6)")
    try:
        mv = memoryview(values)
    except TypeError:
        raise TypeError(f"expected a C-contiguous buffer (numpy array, bytes, memoryview, "
                        f"pyarrow Buffer) of {width}-byte values, got {type(values).__name__}") from None
    if not mv.c_contiguous:
        raise TypeError("values must be C-contiguous")
    if mv.ndim == 2 and mv.itemsize == 1 and mv.shape[1] == width:
        pass
    elif mv.ndim > 1 or (mv.itemsize != width and mv.itemsize != 1):
        raise TypeError(f"expected {width}-byte values (a 1-D buffer of {width}-byte items, "
                        f"an (n, {width}) uint8 array or raw bytes), got items of {mv.itemsize} "
                        f"bytes in {mv.ndim} dimension(s)")
    if mv.nbytes % width:
        raise TypeError(f"a buffer of {mv.nbytes} bytes does not hold whole {width}-byte values")
    if mv.format[:1] in (">", "!"):
        raise TypeError(f"big-endian buffers (format {mv.format!r}) are not accepted; "
                        "convert to native byte order first")
    return np.frombuffer(mv, dtype=np.uint8)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline tuple as_binary(object values):
    """A BYTE_ARRAY ``(offsets, data)`` pair as (int64 offsets ndarray, uint8 data ndarray)."""
    import numpy as np
    from metaindex.errors import EncodeError
    cdef const int64_t[::1] off
    cdef Py_ssize_t i, n
    if not isinstance(values, tuple) or len(values) != 2:
        raise TypeError("BYTE_ARRAY values must be an (offsets, data) pair like Arrow's binary "
                        f"layout, got {type(values).__name__}")
    offsets, data = values
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.dtype not in (np.int32, np.int64) or offsets.shape[0] < 1:
        raise TypeError("BYTE_ARRAY offsets must be a non-empty 1-D int32 or int64 array, got "
                        f"dtype {offsets.dtype} shape {offsets.shape}")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    data = as_fixed_bytes(data, 1)
    off = offsets
    n = off.shape[0] - 1
    if off[0] < 0 or off[n] > data.shape[0]:
        raise EncodeError(f"BYTE_ARRAY offsets [{off[0]}, {off[n]}] fall outside data of "
                          f"{data.shape[0]} bytes")
    for i in range(n):
        if off[i + 1] < off[i]:
            raise EncodeError(f"BYTE_ARRAY offsets decrease at value {i}: {off[i]} > {off[i + 1]}")
    return offsets, data
