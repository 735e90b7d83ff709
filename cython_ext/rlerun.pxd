# cython: language_level=3
"""Reading runs of the RLE / bit-packing hybrid: shared by ``rle`` and ``pagevalues``.

Header-only (``cdef inline``, like buffer.pxd). ``_next_run`` reads one run header and takes
(checks) the run's bytes; ``_unpack_run`` unpacks values of a bit-packed run (``_unpack_batch`` a batch of them); ``_prefixed``
opens the hybrid after a data page v1 4-byte length prefix, ``_indices_width`` after a
dictionary-encoded page's bit-width byte.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from buffer cimport (Cursor, cur_make, cur_take, cur_uleb, cur_u32le, raise_decode,
                     raise_invalid)
from bitpack cimport unpack_u32
from physical cimport view_cursor

cdef extern from *:
    """
    /* Groups of 8 bit-packed values of a width known at compile time: one function per
       width 1..32, so every load offset, shift and mask is a constant (the loop with the
       width as a variable computes them per value). The caller guarantees that
       ``groups * width + ((7 * width) >> 3) + 8`` bytes are readable from ``src``. */
    #include <string.h>
    static inline uint64_t mi_rl_load64(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }
    #define MI_RL_GET(K, W) (uint32_t)((mi_rl_load64(s + (((K) * (W)) >> 3)) >> (((K) * (W)) & 7)) & mask)
    #define MI_RL_UNPACK(W) \
    static void mi_rl_unpack_##W(const uint8_t* src, Py_ssize_t groups, uint32_t* out) { \
        const uint64_t mask = (W) == 32 ? 0xFFFFFFFFull : ((1ull << (W)) - 1); \
        for (Py_ssize_t g = 0; g < groups; g++) { \
            const uint8_t* s = src + g * (W); uint32_t* o = out + 8 * g; \
            o[0] = MI_RL_GET(0, W); o[1] = MI_RL_GET(1, W); o[2] = MI_RL_GET(2, W); \
            o[3] = MI_RL_GET(3, W); o[4] = MI_RL_GET(4, W); o[5] = MI_RL_GET(5, W); \
            o[6] = MI_RL_GET(6, W); o[7] = MI_RL_GET(7, W); \
        } \
    }
    MI_RL_UNPACK(1) MI_RL_UNPACK(2) MI_RL_UNPACK(3) MI_RL_UNPACK(4) MI_RL_UNPACK(5)
    MI_RL_UNPACK(6) MI_RL_UNPACK(7) MI_RL_UNPACK(8) MI_RL_UNPACK(9) MI_RL_UNPACK(10)
    MI_RL_UNPACK(11) MI_RL_UNPACK(12) MI_RL_UNPACK(13) MI_RL_UNPACK(14) MI_RL_UNPACK(15)
    MI_RL_UNPACK(16) MI_RL_UNPACK(17) MI_RL_UNPACK(18) MI_RL_UNPACK(19) MI_RL_UNPACK(20)
    MI_RL_UNPACK(21) MI_RL_UNPACK(22) MI_RL_UNPACK(23) MI_RL_UNPACK(24) MI_RL_UNPACK(25)
    MI_RL_UNPACK(26) MI_RL_UNPACK(27) MI_RL_UNPACK(28) MI_RL_UNPACK(29) MI_RL_UNPACK(30)
    MI_RL_UNPACK(31) MI_RL_UNPACK(32)
    typedef void (*mi_rl_unpack_fn)(const uint8_t*, Py_ssize_t, uint32_t*);
    static const mi_rl_unpack_fn mi_rl_unpackers[33] = {0,
        mi_rl_unpack_1, mi_rl_unpack_2, mi_rl_unpack_3, mi_rl_unpack_4, mi_rl_unpack_5,
        mi_rl_unpack_6, mi_rl_unpack_7, mi_rl_unpack_8, mi_rl_unpack_9, mi_rl_unpack_10,
        mi_rl_unpack_11, mi_rl_unpack_12, mi_rl_unpack_13, mi_rl_unpack_14, mi_rl_unpack_15,
        mi_rl_unpack_16, mi_rl_unpack_17, mi_rl_unpack_18, mi_rl_unpack_19, mi_rl_unpack_20,
        mi_rl_unpack_21, mi_rl_unpack_22, mi_rl_unpack_23, mi_rl_unpack_24, mi_rl_unpack_25,
        mi_rl_unpack_26, mi_rl_unpack_27, mi_rl_unpack_28, mi_rl_unpack_29, mi_rl_unpack_30,
        mi_rl_unpack_31, mi_rl_unpack_32};
    static inline void mi_rl_unpack_groups(const uint8_t* src, Py_ssize_t groups, int width,
                                           uint32_t* out) {
        mi_rl_unpackers[width](src, groups, out);
    }
    """
    void mi_rl_unpack_groups(const uint8_t* src, Py_ssize_t groups, int width,
                             uint32_t* out) noexcept nogil


cdef enum:
    MAX_RUN = 0x7FFFFFFF        # spec: run lengths fit a signed 32-bit integer
    MAX_LITERAL_GROUPS = 63     # a bit-packed run header fits in one byte


cdef struct Run:
    bint rle                    # an RLE run (else bit-packed)
    Py_ssize_t count            # values in the run (a bit-packed run: groups * 8)
    uint32_t value              # the repeated value of an RLE run
    const uint8_t* packed       # the bit-packed bytes of a bit-packed run
    Py_ssize_t packed_len


cdef inline int _check_width(int bit_width) except -1:
    if bit_width < 0 or bit_width > 32:
        from metaindex.errors import DecodeError
        raise DecodeError(f"RLE bit width {bit_width} is outside 0..32")
    return 0


cdef inline int _next_run(Cursor* c, int width, Run* run) except -1:
    """Read one run header and take (check) its bytes."""
    cdef Py_ssize_t start = c.pos
    cdef uint64_t header, count
    cdef const uint8_t* p
    cdef uint32_t value = 0
    cdef int k
    cur_uleb(c, &header)
    count = header >> 1
    if header & 1:
        if count == 0 or count > MAX_RUN // 8:
            c.pos = start
            raise_invalid(c, f"bit-packed run of {count} groups")
        run.rle = False
        run.count = <Py_ssize_t>count * 8
        run.packed_len = <Py_ssize_t>count * width
        run.packed = cur_take(c, run.packed_len, "truncated bit-packed run")
    else:
        if count == 0 or count > MAX_RUN:
            c.pos = start
            raise_invalid(c, f"RLE run of length {count}")
        run.rle = True
        run.count = <Py_ssize_t>count
        p = cur_take(c, (width + 7) >> 3, "truncated RLE run value")
        for k in range((width + 7) >> 3):
            value |= (<uint32_t>p[k]) << (8 * k)
        if width < 32 and (value >> width) != 0:
            c.pos = start
            raise_invalid(c, f"RLE run value {value} does not fit {width} bits")
        run.value = value
    return 0


cdef inline int _try_next_run(Cursor* c, int width, Run* run) noexcept nogil:
    """``_next_run`` without the GIL: returns -1 (``c`` left where the run starts) on any input
    ``_next_run`` would refuse, so that the caller can take the GIL and let ``_next_run``
    raise its exact error from the same position."""
    cdef Py_ssize_t start = c.pos, nbytes
    cdef uint64_t header = 0, count
    cdef uint32_t value = 0
    cdef int shift = 0, k
    cdef uint8_t b
    while True:  # ULEB128 header, as cur_uleb checks it
        if c.pos >= c.size:
            c.pos = start
            return -1
        b = c.data[c.pos]
        c.pos += 1
        if shift == 63 and b > 1:
            c.pos = start
            return -1
        header |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            c.pos = start
            return -1
    count = header >> 1
    if header & 1:
        if count == 0 or count > MAX_RUN // 8 or \
                <Py_ssize_t>count * width > c.size - c.pos:
            c.pos = start
            return -1
        run.rle = False
        run.count = <Py_ssize_t>count * 8
        run.packed_len = <Py_ssize_t>count * width
        run.packed = c.data + c.pos
        c.pos += run.packed_len
    else:
        nbytes = (width + 7) >> 3
        if count == 0 or count > MAX_RUN or nbytes > c.size - c.pos:
            c.pos = start
            return -1
        for k in range(nbytes):
            value |= (<uint32_t>c.data[c.pos + k]) << (8 * k)
        if width < 32 and (value >> width) != 0:
            c.pos = start
            return -1
        c.pos += nbytes
        run.rle = True
        run.count = <Py_ssize_t>count
        run.value = value
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _unpack_run(const uint8_t* src, Py_ssize_t src_len, int width, uint32_t* out,
                             Py_ssize_t n) noexcept nogil:
    """Unpack ``n`` values of a bit-packed run; ``src_len`` (>= the run's bytes) may reach
    past the run into the rest of the input, which lets more groups take the fast path."""
    cdef Py_ssize_t g = 0, groups = n >> 3, room
    # a group of 8 values is ``width`` bytes; its last load reads 8 bytes at (7 * width) >> 3:
    # the groups whose loads all stay inside ``src_len`` go through the unpacker of their width
    if 1 <= width <= 32:
        room = src_len - ((7 * width) >> 3) - 8
        if room >= 0:
            g = room // width + 1
            if g > groups:
                g = groups
            mi_rl_unpack_groups(src, g, width, out)
    if 8 * g < n:
        unpack_u32(src + g * width, src_len - g * width, width, out + 8 * g, n - 8 * g)


cdef inline Py_ssize_t _unpack_batch(const Run* run, const Cursor* c, int width,
                                     Py_ssize_t off, Py_ssize_t k, uint32_t* out,
                                     Py_ssize_t batch) noexcept nogil:
    """Values ``off`` up to ``off + batch`` (at most ``k``, the run's values in use) of a
    bit-packed run into ``out``; returns how many."""
    cdef Py_ssize_t m = k - off if k - off < batch else batch
    cdef const uint8_t* p = run.packed + (off >> 3) * width
    _unpack_run(p, c.data + c.size - p, width, out, m)
    return m



cdef inline int _indices_width(Cursor* c) except -1:
    """A dictionary-encoded page's index bit width (its first byte, checked); ``c`` is left
    on the RLE / bit-packing hybrid after it."""
    cdef int w
    if c.size < 1:
        raise_decode(c, 1, "dictionary-encoded page has no bit-width byte")
    w = c.data[0]
    if w > 32:
        raise_invalid(c, f"dictionary index bit width {w} is over 32")
    c[0] = cur_make(c.data + 1, c.size - 1, c.base + 1)
    return w


cdef inline Cursor _prefixed(const uint8_t[::1] view) except *:
    """A cursor over the encoded data after a 4-byte length prefix, checked against the input."""
    cdef Cursor c = view_cursor(view)
    cdef uint32_t length
    cur_u32le(&c, &length)
    if length > <uint64_t>(c.size - c.pos):
        c.pos = 0
        raise_decode(&c, <Py_ssize_t>length + 4, "RLE length prefix exceeds the input")
    return cur_make(c.data + 4, length, 4)


