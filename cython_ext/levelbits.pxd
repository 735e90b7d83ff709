# cython: language_level=3
"""Header-only helpers shared by the levels (shred) and levels_assemble kernels.

Arrow validity bitmaps are LSB-first: bit ``i`` of the array lives at ``bitmap[i >> 3] >> (i & 7)``.
"""

from libc.stdint cimport uint8_t, int64_t


cdef inline int getbit(const uint8_t* p, int64_t i) noexcept nogil:
    return (p[i >> 3] >> (i & 7)) & 1


cdef inline size_t np_addr(object arr) except? 0:
    """Address of the data of a numpy array this kernel just allocated (writable, contiguous)."""
    return <size_t>arr.ctypes.data


cdef inline const uint8_t* buf_ptr(object obj, list keep, int64_t need, str what,
                                   object error) except? NULL:
    """Pointer into a buffer-protocol object of at least ``need`` bytes (None -> NULL).

    The memoryview is appended to ``keep`` so the caller holds the buffer while it reads;
    a short buffer raises ``error`` (EncodeError on the write side, DecodeError on the read side).
    """
    cdef const uint8_t[::1] mv
    if obj is None:
        return NULL
    mv = memoryview(obj).cast("B")
    if mv.shape[0] < need:
        raise error(f"{what} buffer holds {mv.shape[0]} bytes, needs {need}")
    keep.append(mv)
    if mv.shape[0] == 0:
        return <const uint8_t*>""
    return &mv[0]


cdef inline object new_array(object alloc, Py_ssize_t count, object dtype, bint zero=False):
    """A writable 1-D numpy array of ``count`` items, from ``alloc(nbytes)`` when given.

    ``alloc`` lets the caller hand out memory from a pool that recycles pages (pyarrow's
    ``allocate_buffer``): first-touching fresh pages costs as much as the kernel itself.
    """
    import numpy
    if alloc is None:
        return numpy.zeros(count, dtype) if zero else numpy.empty(count, dtype)
    dt = numpy.dtype(dtype)
    arr = numpy.frombuffer(alloc(count * dt.itemsize), dtype=dt, count=count)
    if not arr.flags.writeable:
        raise ValueError("alloc must return a writable buffer")
    if zero:
        arr.fill(0)
    return arr
