# cython: language_level=3
"""Python face of the shared cursor and write buffer (see buffer.pxd).

Kernels use the inline C functions in ``buffer.pxd`` directly; this module exposes the same
behaviour to Python for tests, the pure-Python references, and small framing jobs.
"""

from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t

from buffer cimport (Cursor, WBuf, cur_make, cur_take, cur_uleb, cur_zigzag, cur_u32le,
                     cur_u64le, cur_uleb_size, wb_init, wb_free, wb_put, wb_uleb, wb_zigzag,
                     wb_u32le, wb_u64le, wb_to_bytes)


cdef class Reader:
    """A bounds-checked read cursor over any contiguous buffer.

    Every read checks what remains and raises ``DecodeError(offset, needed, remaining)``.
    """

    cdef Cursor c
    cdef const uint8_t[::1] view
    cdef object owner

    def __cinit__(self, data, Py_ssize_t base=0):
        self.owner = data
        self.view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        self.c = cur_make(&self.view[0] if self.view.shape[0] else NULL, self.view.shape[0], base)

    @property
    def pos(self):
        return self.c.pos

    @property
    def remaining(self):
        return self.c.size - self.c.pos

    def read(self, Py_ssize_t n):
        cdef const uint8_t* p = cur_take(&self.c, n)
        return (<const char*>p)[:n] if n else b""

    def uleb(self):
        cdef uint64_t v
        cur_uleb(&self.c, &v)
        return v

    def zigzag(self):
        cdef int64_t v
        cur_zigzag(&self.c, &v)
        return v

    def size_prefixed(self):
        """A ULEB128 length followed by that many bytes (Thrift binary)."""
        cdef Py_ssize_t n
        cur_uleb_size(&self.c, &n)
        return self.read(n)

    def u32le(self):
        cdef uint32_t v
        cur_u32le(&self.c, &v)
        return v

    def u64le(self):
        cdef uint64_t v
        cur_u64le(&self.c, &v)
        return v


cdef class Writer:
    """A growable write buffer that never drops bytes."""

    cdef WBuf w

    def __cinit__(self, Py_ssize_t capacity=256):
        wb_init(&self.w, capacity)

    def __dealloc__(self):
        wb_free(&self.w)

    def __len__(self):
        return self.w.len

    def write(self, const uint8_t[::1] data):
        if data.shape[0]:
            wb_put(&self.w, &data[0], data.shape[0])
        return self

    def uleb(self, uint64_t v):
        wb_uleb(&self.w, v)
        return self

    def zigzag(self, int64_t v):
        wb_zigzag(&self.w, v)
        return self

    def u32le(self, uint32_t v):
        wb_u32le(&self.w, v)
        return self

    def u64le(self, uint64_t v):
        wb_u64le(&self.w, v)
        return self

    def getvalue(self):
        return wb_to_bytes(&self.w)
