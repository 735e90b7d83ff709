# cython: language_level=3
"""One Arrow array's buffers as the column kernels read them (header-only, like buffer.pxd).

A :c:type:`Col` is a validated view of a fixed-width or binary (int32 / int64 offsets) Arrow
array: the validity bitmap (NULL when there are no nulls), the values or offsets + data, the
array's ``offset`` (in elements and bits) and length. ``col_fixed`` / ``col_binary`` check every
buffer is long enough and, for binary arrays, that the offsets do not decrease and lie inside
the data, once; the kernels' loops then read unchecked.

Floats are read canonical where ``canon`` is 4 or 8 (float32 / float64): -0.0 as 0.0 and every
NaN as the quiet NaN 0x7fc00000 / 0x7ff8000000000000, so values Spark holds equal hash and
compare equal.

``col_hash`` writes the bloom hash (XXH64, seed 0, over the PLAIN value; floats canonical) of
each non-null value of a row range, packed.
"""

from libc.stdint cimport uint8_t, uint32_t, int32_t, int64_t, uint64_t

from buffer cimport load_u32, load_u64
from physical cimport byte_view, view_ptr
from xxh64 cimport xxh64_4, xxh64_8, xxh64_mem


cdef struct Col:
    const uint8_t* validity     # NULL: no nulls
    const uint8_t* values       # fixed width: the value buffer (element 0, not `offset`)
    const uint8_t* offsets      # binary: the offsets buffer (entry 0)
    const uint8_t* data         # binary: the value bytes
    Py_ssize_t data_len         # binary: bytes in data
    Py_ssize_t offset           # the array's offset into its buffers
    Py_ssize_t n                # values (rows, nulls included)
    Py_ssize_t width            # fixed: bytes per value; binary: 0
    int offset_width            # binary: 4 or 8
    int canon                   # 4 / 8: IEEE floats of that width, read canonical; else 0


cdef inline bint col_valid(const Col* c, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t b = c.offset + i
    return c.validity == NULL or (c.validity[b >> 3] >> (b & 7)) & 1


cdef inline int64_t col_offset(const Col* c, Py_ssize_t i) noexcept nogil:
    """Binary: offsets[offset + i]."""
    cdef Py_ssize_t k = c.offset + i
    if c.offset_width == 4:
        return <int32_t>load_u32(c.offsets + 4 * k)
    return <int64_t>load_u64(c.offsets + 8 * k)


cdef inline uint64_t canon_bits(uint64_t bits, int canon) noexcept nogil:
    """The canonical bit pattern of a float32 (canon 4, low 32 bits) / float64 (8) value."""
    if canon == 8:
        if (bits & 0x7FFFFFFFFFFFFFFFULL) == 0:
            return 0
        if (bits & 0x7FF0000000000000ULL) == 0x7FF0000000000000ULL and \
                (bits & 0x000FFFFFFFFFFFFFULL):
            return 0x7FF8000000000000ULL
    elif canon == 4:
        if (bits & 0x7FFFFFFFU) == 0:
            return 0
        if (bits & 0x7F800000U) == 0x7F800000U and (bits & 0x007FFFFFU):
            return 0x7FC00000U
    return bits


cdef inline int _need(Py_ssize_t have, Py_ssize_t need, str what) except -1:
    if have < need:
        raise ValueError(f"{what} holds {have} bytes, the array needs {need}")
    return 0


cdef inline int col_common(Col* c, object validity, Py_ssize_t offset, Py_ssize_t n,
                           list keep) except -1:
    cdef const uint8_t[::1] vb
    if offset < 0 or n < 0:
        raise ValueError(f"offset {offset} and length {n} must be >= 0")
    c.offset = offset
    c.n = n
    c.canon = 0
    c.validity = NULL
    if validity is not None:
        vb = byte_view(validity, "validity")
        _need(vb.shape[0], (offset + n + 7) >> 3, "validity")
        keep.append(validity)
        c.validity = view_ptr(vb)
    return 0


cdef inline int col_fixed(Col* c, object validity, object values, Py_ssize_t offset,
                          Py_ssize_t n, Py_ssize_t width, int canon, list keep) except -1:
    """A fixed-width array of ``width``-byte values (``canon`` 4/8 for float32/float64)."""
    cdef const uint8_t[::1] vals
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    if canon not in (0, 4, 8) or (canon and canon != width):
        raise ValueError(f"canon must be 0 or the float width, got {canon} for width {width}")
    col_common(c, validity, offset, n, keep)
    vals = byte_view(values if values is not None else b"", "values")
    _need(vals.shape[0], (offset + n) * width if n else 0, "values")
    keep.append(values)
    c.values = view_ptr(vals)
    c.offsets = c.data = NULL
    c.data_len = 0
    c.width = width
    c.offset_width = 0
    c.canon = canon
    return 0


cdef inline int col_binary(Col* c, object validity, object offsets, int offset_width,
                           object data, Py_ssize_t offset, Py_ssize_t n, list keep) except -1:
    """A binary / string array: ``offset_width``-byte offsets (4 or 8) into ``data``."""
    cdef const uint8_t[::1] offs, raw
    cdef Py_ssize_t i
    cdef int64_t prev, cur
    if offset_width != 4 and offset_width != 8:
        raise ValueError(f"offset_width must be 4 or 8, got {offset_width}")
    col_common(c, validity, offset, n, keep)
    offs = byte_view(offsets if offsets is not None else b"", "offsets")
    raw = byte_view(data if data is not None else b"", "data")
    keep.append(offsets)
    keep.append(data)
    c.values = NULL
    c.width = 0
    c.offset_width = offset_width
    c.offsets = view_ptr(offs)
    c.data = view_ptr(raw)
    c.data_len = raw.shape[0]
    if n == 0:
        return 0
    _need(offs.shape[0], (offset + n + 1) * offset_width, "offsets")
    prev = col_offset(c, 0)
    if prev < 0 or prev > raw.shape[0]:
        raise ValueError(f"offset {prev} lies outside data of {raw.shape[0]} bytes")
    for i in range(1, n + 1):
        cur = col_offset(c, i)
        if cur < prev or cur > raw.shape[0]:
            raise ValueError(f"offsets decrease or pass the end of data ({raw.shape[0]} bytes) "
                             f"at value {i - 1}: {prev} -> {cur}")
        prev = cur
    return 0


cdef inline Py_ssize_t col_hash(const Col* c, Py_ssize_t i0, Py_ssize_t i1,
                                uint64_t* out) noexcept nogil:
    """Hashes of the non-null values of rows ``i0 .. i1 - 1`` into ``out``; returns how many.
    One loop per layout: the width, canon and offset-width tests stay out of the loops."""
    cdef Py_ssize_t i, m = 0
    cdef const uint8_t* v = c.values
    cdef int64_t a, b
    if c.width == 8:
        for i in range(c.offset + i0, c.offset + i1):
            if c.validity == NULL or (c.validity[i >> 3] >> (i & 7)) & 1:
                out[m] = xxh64_8(canon_bits(load_u64(v + 8 * i), c.canon), 0)
                m += 1
    elif c.width == 4:
        for i in range(c.offset + i0, c.offset + i1):
            if c.validity == NULL or (c.validity[i >> 3] >> (i & 7)) & 1:
                out[m] = xxh64_4(<uint32_t>canon_bits(load_u32(v + 4 * i), c.canon), 0)
                m += 1
    elif c.width:
        for i in range(c.offset + i0, c.offset + i1):
            if c.validity == NULL or (c.validity[i >> 3] >> (i & 7)) & 1:
                out[m] = xxh64_mem(v + c.width * i, c.width, 0)
                m += 1
    elif i1 > i0:
        b = col_offset(c, i0)
        for i in range(i0, i1):
            a = b
            b = col_offset(c, i + 1)
            if col_valid(c, i):
                out[m] = xxh64_mem(c.data + a, b - a, 0)
                m += 1
    return m
