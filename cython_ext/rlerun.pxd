# cython: language_level=3
"""Reading runs of the RLE / bit-packing hybrid: shared by ``rle`` and ``pagevalues``.

Header-only (``cdef inline``, like buffer.pxd). ``_next_run`` reads one run header and takes
(checks) the run's bytes; ``_unpack_run`` unpacks values of a bit-packed run; ``_prefixed``
opens the hybrid after a data page v1 4-byte length prefix.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from buffer cimport (Cursor, cur_make, cur_take, cur_uleb, cur_u32le, raise_decode,
                     raise_invalid, load_u64)
from bitpack cimport width_mask, unpack_u32
from physical cimport view_cursor

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
    cdef uint64_t mask = width_mask(width)
    cdef Py_ssize_t g = 0, groups = n >> 3
    cdef int k
    # a group of 8 values is ``width`` bytes; its last load reads 8 bytes at (7 * width) >> 3
    while g < groups and g * width + ((7 * width) >> 3) + 8 <= src_len:
        for k in range(8):
            out[8 * g + k] = <uint32_t>((load_u64(src + g * width + ((k * width) >> 3))
                                         >> ((k * width) & 7)) & mask)
        g += 1
    if 8 * g < n:
        unpack_u32(src + g * width, src_len - g * width, width, out + 8 * g, n - 8 * g)



cdef inline Cursor _prefixed(const uint8_t[::1] view) except *:
    """A cursor over the encoded data after a 4-byte length prefix, checked against the input."""
    cdef Cursor c = view_cursor(view)
    cdef uint32_t length
    cur_u32le(&c, &length)
    if length > <uint64_t>(c.size - c.pos):
        c.pos = 0
        raise_decode(&c, <Py_ssize_t>length + 4, "RLE length prefix exceeds the input")
    return cur_make(c.data + 4, length, 4)


