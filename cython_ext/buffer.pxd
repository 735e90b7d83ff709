# cython: language_level=3
"""Bounds-checked read cursor and growable write buffer shared by every kernel.

Header-only on purpose: every function here is ``cdef inline`` so that other kernels
``cimport buffer`` without a run-time import, and the compiler inlines the checks into their
loops. The read rule (STYLE.md): call ``cur_need(c, n)`` once for a whole run of ``n`` bytes,
then read it unchecked; every other read helper checks for itself. A short read raises
``metaindex.errors.DecodeError(offset, needed, remaining)``.

Little-endian loads and stores go through ``memcpy`` into locals (never an unaligned
pointer cast).
"""

from libc.stdint cimport uint8_t, int32_t, uint32_t, int64_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport malloc, realloc, free


cdef struct Cursor:
    const uint8_t* data     # start of the buffer
    Py_ssize_t pos          # next byte to read
    Py_ssize_t size         # total bytes
    Py_ssize_t base         # offset of data[0] in the enclosing input (for error messages)


cdef inline Cursor cur_make(const uint8_t* data, Py_ssize_t size, Py_ssize_t base=0) noexcept nogil:
    cdef Cursor c
    # never NULL: cur_take returns c.data + pos and is `except NULL`, so an empty buffer
    # must still point somewhere for a zero-length take to succeed
    c.data = data if data != NULL else <const uint8_t*>b""
    c.pos = 0
    c.size = size
    c.base = base
    return c


cdef inline Py_ssize_t cur_remaining(const Cursor* c) noexcept nogil:
    return c.size - c.pos


cdef inline int raise_decode(const Cursor* c, Py_ssize_t needed, str what) except -1:
    from metaindex.errors import DecodeError
    raise DecodeError(what, offset=c.base + c.pos, needed=needed, remaining=c.size - c.pos)


cdef inline int raise_invalid(const Cursor* c, str what) except -1:
    from metaindex.errors import DecodeError
    raise DecodeError(what, offset=c.base + c.pos)


cdef inline int cur_need(const Cursor* c, Py_ssize_t n, str what="truncated input") except -1:
    """Check that ``n`` bytes remain (n < 0 is itself an error)."""
    if n < 0 or n > c.size - c.pos:
        raise_decode(c, n, what)
    return 0


cdef inline const uint8_t* cur_take(Cursor* c, Py_ssize_t n, str what="truncated input") except NULL:
    """Check ``n`` bytes, return a pointer to them and advance past them."""
    cdef const uint8_t* p
    if n < 0 or n > c.size - c.pos:
        raise_decode(c, n, what)
    p = c.data + c.pos
    c.pos += n
    return p


cdef inline int cur_u8(Cursor* c, uint8_t* out) except -1:
    if c.pos >= c.size:
        raise_decode(c, 1, "truncated input")
    out[0] = c.data[c.pos]
    c.pos += 1
    return 0


cdef inline uint32_t load_u32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline uint64_t load_u64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef inline void store_u32(uint8_t* p, uint32_t v) noexcept nogil:
    memcpy(p, &v, 4)


cdef inline void store_u64(uint8_t* p, uint64_t v) noexcept nogil:
    memcpy(p, &v, 8)


cdef inline void copy_bytes(uint8_t* dst, Py_ssize_t dst_room, const uint8_t* src,
                            Py_ssize_t src_room, Py_ssize_t n) noexcept nogil:
    """memcpy(dst, src, n) for ``n`` within both rooms, short values as one 16-byte move where
    both buffers have room.

    Writing up to 16 bytes is fine for sequential writers: the next value overwrites the rest.
    """
    if n <= 16 and dst_room >= 16 and src_room >= 16:
        memcpy(dst, src, 16)
    elif n:
        memcpy(dst, src, n)


cdef inline int cur_u32le(Cursor* c, uint32_t* out) except -1:
    out[0] = load_u32(cur_take(c, 4))
    return 0


cdef inline int cur_u64le(Cursor* c, uint64_t* out) except -1:
    out[0] = load_u64(cur_take(c, 8))
    return 0


cdef inline int cur_uleb(Cursor* c, uint64_t* out) except -1:
    """ULEB128, at most 10 bytes, no bits beyond 64 (the 10th byte may only be 0 or 1)."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t b
    cdef Py_ssize_t start = c.pos
    while True:
        if c.pos >= c.size:
            c.pos = start
            raise_decode(c, c.size - start + 1, "truncated varint")
        b = c.data[c.pos]
        c.pos += 1
        if shift == 63 and b > 1:
            c.pos = start
            raise_invalid(c, "varint overflows 64 bits")
        result |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            out[0] = result
            return 0
        shift += 7
        if shift > 63:
            c.pos = start
            raise_invalid(c, "varint longer than 10 bytes")


cdef inline int64_t zigzag_decode(uint64_t v) noexcept nogil:
    return <int64_t>((v >> 1) ^ (-(v & 1)))


cdef inline uint64_t zigzag_encode(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline int cur_zigzag(Cursor* c, int64_t* out) except -1:
    cdef uint64_t u
    cur_uleb(c, &u)
    out[0] = zigzag_decode(u)
    return 0


cdef inline int cur_uleb_size(Cursor* c, Py_ssize_t* out, str what="length") except -1:
    """A ULEB128 that must be a non-negative size no larger than what remains."""
    cdef uint64_t u
    cdef Py_ssize_t start = c.pos
    cur_uleb(c, &u)
    if u > <uint64_t>(c.size - c.pos):
        c.pos = start
        raise_decode(c, <Py_ssize_t>min(u, <uint64_t>0x7FFFFFFFFFFFFFFF), what + " exceeds the input")
    out[0] = <Py_ssize_t>u
    return 0


# ---------------------------------------------------------------- write buffer

cdef struct WBuf:
    uint8_t* data
    Py_ssize_t len
    Py_ssize_t cap


cdef inline int wb_init(WBuf* w, Py_ssize_t cap) except -1:
    if cap < 64:
        cap = 64
    w.data = <uint8_t*>malloc(cap)
    if w.data == NULL:
        raise MemoryError()
    w.len = 0
    w.cap = cap
    return 0


cdef inline void wb_free(WBuf* w) noexcept nogil:
    if w.data != NULL:
        free(w.data)
    w.data = NULL
    w.len = 0
    w.cap = 0


cdef inline int wb_reserve(WBuf* w, Py_ssize_t extra) except -1:
    """Make room for ``extra`` more bytes; never drops bytes (raises MemoryError instead)."""
    cdef Py_ssize_t need = w.len + extra
    cdef Py_ssize_t cap = w.cap
    cdef uint8_t* p
    if extra < 0:
        raise ValueError("negative reservation")
    if need <= cap:
        return 0
    while cap < need:
        cap = cap * 2 if cap < (1 << 62) else need
    p = <uint8_t*>realloc(w.data, cap)
    if p == NULL:
        raise MemoryError()
    w.data = p
    w.cap = cap
    return 0


cdef inline int wb_put(WBuf* w, const void* src, Py_ssize_t n) except -1:
    wb_reserve(w, n)
    memcpy(w.data + w.len, src, n)
    w.len += n
    return 0


cdef inline int wb_u8(WBuf* w, uint8_t v) except -1:
    if w.len >= w.cap:
        wb_reserve(w, 1)
    w.data[w.len] = v
    w.len += 1
    return 0


cdef inline int wb_u32le(WBuf* w, uint32_t v) except -1:
    wb_reserve(w, 4)
    store_u32(w.data + w.len, v)
    w.len += 4
    return 0


cdef inline int wb_u64le(WBuf* w, uint64_t v) except -1:
    wb_reserve(w, 8)
    store_u64(w.data + w.len, v)
    w.len += 8
    return 0


cdef inline Py_ssize_t put_uleb(uint8_t* dst, uint64_t v) noexcept nogil:
    """Write ``v`` as ULEB128 at ``dst`` (room for 10 bytes); returns the bytes written."""
    cdef Py_ssize_t k = 0
    while v >= 0x80:
        dst[k] = <uint8_t>((v & 0x7F) | 0x80)
        v >>= 7
        k += 1
    dst[k] = <uint8_t>v
    return k + 1


cdef inline int wb_uleb(WBuf* w, uint64_t v) except -1:
    wb_reserve(w, 10)
    w.len += put_uleb(w.data + w.len, v)
    return 0


cdef inline int wb_zigzag(WBuf* w, int64_t v) except -1:
    return wb_uleb(w, zigzag_encode(v))


cdef inline bytes wb_to_bytes(WBuf* w):
    return (<char*>w.data)[:w.len] if w.len else b""
