# cython: language_level=3
"""Physical types and value-argument handling shared by the value kernels.

Header-only (``cdef inline``), like buffer.pxd; used by plain, bss, delta, dictionary, stats and
bloom. Physical type codes are parquet.thrift's. Value arrays follow the common convention:
BOOLEAN bool_, INT32 int32, INT64 int64, FLOAT float32, DOUBLE float64, INT96 uint8 (n, 12),
FIXED_LEN_BYTE_ARRAY uint8 (n, type_length), BYTE_ARRAY an Arrow-style ``(offsets, data)`` pair.

- ``byte_view``: a flat byte view of any C-contiguous buffer (no copy);
- ``fixed_bytes``: fixed-width values -> a 1-D uint8 array of ``n * width`` bytes;
- ``binary_values``: a BYTE_ARRAY pair -> (int64 offsets, uint8 data), offsets checked to be
  non-decreasing and inside ``data``.

Misfits raise ``TypeError`` (wrong kind of object: not a buffer, not C-contiguous, big-endian,
wrong dtype or shape) or ``EncodeError`` (inconsistent offsets, sequence values out of range).
"""

from libc.stdint cimport uint8_t, int64_t
from buffer cimport Cursor, cur_make

cimport cython

cdef enum:
    PT_BOOLEAN = 0
    PT_INT32 = 1
    PT_INT64 = 2
    PT_INT96 = 3
    PT_FLOAT = 4
    PT_DOUBLE = 5
    PT_BYTE_ARRAY = 6
    PT_FIXED_LEN_BYTE_ARRAY = 7


cdef inline Py_ssize_t fixed_width(int ptype, Py_ssize_t type_length) noexcept nogil:
    """Bytes per value of a fixed-width type, or -1 (BOOLEAN, BYTE_ARRAY, unknown, bad length)."""
    if ptype == PT_INT32 or ptype == PT_FLOAT:
        return 4
    if ptype == PT_INT64 or ptype == PT_DOUBLE:
        return 8
    if ptype == PT_INT96:
        return 12
    if ptype == PT_FIXED_LEN_BYTE_ARRAY:
        return type_length if type_length > 0 else -1
    return -1


cdef inline Py_ssize_t require_fixed_width(int ptype, Py_ssize_t type_length) except -1:
    """``fixed_width``, raising TypeError where it gives -1."""
    cdef Py_ssize_t width = fixed_width(ptype, type_length)
    if width > 0:
        return width
    if ptype == PT_FIXED_LEN_BYTE_ARRAY:
        raise TypeError(f"FIXED_LEN_BYTE_ARRAY needs type_length > 0, got {type_length}")
    raise TypeError(f"physical type {ptype} is not a fixed-width type "
                    "(expected INT32=1, INT64=2, INT96=3, FLOAT=4, DOUBLE=5, FIXED_LEN_BYTE_ARRAY=7)")


# ------------------------------------------------------------------------------- byte views

cdef inline object checked_buffer(object obj, str what):
    """``memoryview(obj)``; TypeError unless it is a C-contiguous, not big-endian buffer."""
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"{what} must be a C-contiguous buffer (numpy array, bytes, memoryview, "
                        f"pyarrow Buffer), got {type(obj).__name__}") from None
    if not mv.c_contiguous:
        raise TypeError(f"{what} must be C-contiguous")
    if mv.format[:1] in (">", "!"):
        raise TypeError(f"{what}: big-endian buffers (format {mv.format!r}) are not accepted; "
                        "convert to native byte order first")
    return mv


cdef inline object byte_view(object obj, str what="data"):
    """A flat 1-D byte buffer over any C-contiguous buffer, without a copy.

    The result (bytes, bytearray or a 1-D ``B`` memoryview) assigns to a
    ``const uint8_t[::1]`` view. TypeError as ``checked_buffer``, or for an item format that
    memoryview cannot cast to bytes (struct formats).
    """
    if type(obj) is bytes or type(obj) is bytearray:
        return obj
    mv = checked_buffer(obj, what)
    if mv.ndim == 1 and mv.format == "B":
        return mv
    if mv.nbytes == 0:  # memoryview cannot cast shapes with a zero, e.g. (0, 12)
        return b""
    try:
        return mv.cast("B")
    except (TypeError, ValueError) as exc:  # formats memoryview cannot cast, e.g. "T{...}"
        raise TypeError(f"{what}: cannot view a buffer of format {mv.format!r} as bytes "
                        f"({exc})") from None


cdef inline const uint8_t* view_ptr(const uint8_t[::1] view) noexcept:
    """The first byte of a byte view; never NULL, also for an empty view."""
    return &view[0] if view.shape[0] else <const uint8_t*>b""


cdef inline Cursor view_cursor(const uint8_t[::1] view) noexcept:
    """A cursor over a byte view. Never over NULL: ``cur_take`` returns NULL only on error."""
    return cur_make(view_ptr(view), view.shape[0])


# ------------------------------------------------------------------------ fixed-width values

cdef inline object fixed_array(Py_ssize_t n, int ptype, Py_ssize_t width):
    """A new, uninitialised value array of ``n`` values in the convention for ``ptype``."""
    import numpy as np
    if ptype == PT_INT32:
        return np.empty(n, np.int32)
    if ptype == PT_INT64:
        return np.empty(n, np.int64)
    if ptype == PT_FLOAT:
        return np.empty(n, np.float32)
    if ptype == PT_DOUBLE:
        return np.empty(n, np.float64)
    return np.empty((n, width), np.uint8)


cdef inline object _raw_fixed_bytes(object values, Py_ssize_t width, str what="values"):
    """Any C-contiguous buffer of ``width``-byte items, a 2-D ``(n, width)`` uint8 array or raw
    bytes (length a multiple of ``width``) as a 1-D uint8 array, no copy."""
    import numpy as np
    if isinstance(values, tuple):
        raise TypeError("expected a buffer of fixed-width values, got a tuple "
                        "(BYTE_ARRAY (offsets, data) pairs are only for physical type 6)")
    mv = checked_buffer(values, what)
    if mv.ndim == 2 and mv.itemsize == 1 and mv.shape[1] == width:
        pass
    elif mv.ndim > 1 or (mv.itemsize != width and mv.itemsize != 1):
        raise TypeError(f"{what}: expected {width}-byte values (a 1-D buffer of {width}-byte "
                        f"items, an (n, {width}) uint8 array or raw bytes), got items of "
                        f"{mv.itemsize} bytes in {mv.ndim} dimension(s)")
    if mv.nbytes % width:
        raise TypeError(f"a buffer of {mv.nbytes} bytes does not hold whole {width}-byte values")
    return np.frombuffer(mv, dtype=np.uint8)


cdef inline object _converted_fixed_bytes(object values, int ptype, Py_ssize_t width):
    """A numpy array or a Python sequence converted by value to the convention for ``ptype``."""
    import numpy as np
    from metaindex.errors import EncodeError
    cdef object target, arr
    if ptype == PT_INT32:
        target = np.dtype(np.int32)
    elif ptype == PT_INT64:
        target = np.dtype(np.int64)
    elif ptype == PT_FLOAT:
        target = np.dtype(np.float32)
    elif ptype == PT_DOUBLE:
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
        return np.ascontiguousarray(arr).reshape(-1)
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
    return np.ascontiguousarray(arr).view(np.uint8)


cdef inline object fixed_bytes(object values, Py_ssize_t width, int convert_to=-1):
    """Encoder input of a fixed-width type as a C-contiguous 1-D uint8 array of ``n * width``
    bytes (no copy where the input already fits).

    Buffers (bytes, memoryview, pyarrow Buffer, numpy arrays when ``convert_to`` is -1) are
    taken as raw little-endian values: items of ``width`` bytes, an ``(n, width)`` uint8 array,
    or raw bytes whose length is a multiple of ``width``. With ``convert_to`` a physical type
    code (the PLAIN and BYTE_STREAM_SPLIT encoders), numpy arrays and Python sequences are
    instead converted by value to that type's convention dtype: numpy's safe casts, unsigned
    integers of the same width reinterpreted (UINT_32 / UINT_64), for INT96 /
    FIXED_LEN_BYTE_ARRAY also 1-D ``S<width>`` / ``V<width>`` arrays.

    Raises TypeError (wrong kind, dtype or shape, not C-contiguous, big-endian, a tuple where
    raw values are expected) or EncodeError (sequence values out of range).
    """
    import numpy as np
    if convert_to >= 0:
        if isinstance(values, np.ndarray):
            return _converted_fixed_bytes(values, convert_to, width)
        try:
            memoryview(values)
        except TypeError:       # a Python sequence
            return _converted_fixed_bytes(values, convert_to, width)
    return _raw_fixed_bytes(values, width)


# ------------------------------------------------------------------------- BYTE_ARRAY values

@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline tuple binary_values(object values):
    """A BYTE_ARRAY ``(offsets, data)`` pair as (int64 offsets ndarray, uint8 data ndarray).

    Offsets: int32 or int64, ``n + 1`` of them, ``offsets[0]`` may be > 0 (sliced Arrow arrays).
    Raises TypeError (not a pair, bad offsets dtype / shape, data not a byte buffer) or
    EncodeError (offsets that decrease or fall outside ``data``).
    """
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
    data = _raw_fixed_bytes(data, 1, "BYTE_ARRAY data")
    off = offsets
    n = off.shape[0] - 1
    if off[0] < 0 or off[n] > data.shape[0]:
        raise EncodeError(f"BYTE_ARRAY offsets [{off[0]}, {off[n]}] fall outside data of "
                          f"{data.shape[0]} bytes")
    for i in range(n):
        if off[i + 1] < off[i]:
            raise EncodeError(f"BYTE_ARRAY offsets decrease at value {i}: {off[i]} > {off[i + 1]}")
    return offsets, data


# ------------------------------------------------------------------------ decoder outputs

cdef inline object out_bytes(object out, Py_ssize_t nbytes):
    """``out`` (a caller's writable buffer of exactly ``nbytes`` bytes, e.g. a slice of a
    column chunk's preallocated values buffer) as a 1-D uint8 numpy array over the same memory.

    Raises TypeError (not a writable C-contiguous buffer) or ValueError (wrong size).
    """
    import numpy as np
    mv = checked_buffer(out, "out")
    if mv.readonly:
        raise TypeError("out must be a writable buffer")
    if mv.nbytes != nbytes:
        raise ValueError(f"out holds {mv.nbytes} bytes, the decoded values {nbytes}")
    if nbytes == 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, np.uint8)
