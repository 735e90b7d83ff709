# cython: language_level=3
"""FIXED_LEN_BYTE_ARRAY decimals (big-endian two's complement, 1 to 16 bytes) to Arrow's
decimal128 (two little-endian 64-bit limbs, sign-extended), in one pass: each value is read
as whole big-endian words where it can be, byte-swapped and shifted into place, with no
padded copy and no second pass for the high limb."""

cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from physical cimport byte_view, out_bytes

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define MI_BSWAP64(x) __builtin_bswap64(x)
    #else
    static inline uint64_t MI_BSWAP64(uint64_t x) {
        uint64_t r = 0;
        for (int i = 0; i < 8; i++) { r = (r << 8) | (x & 0xFF); x >>= 8; }
        return r;
    }
    #endif
    """
    uint64_t bswap64 "MI_BSWAP64"(uint64_t x) noexcept nogil


cdef inline int64_t _be_word(const uint8_t* p, Py_ssize_t k) noexcept nogil:
    """The ``k`` (1..8) big-endian bytes at ``p`` as a sign-extended int64."""
    cdef uint64_t v = 0
    memcpy(&v, p, k)  # the bytes first in memory: the top of the word once swapped
    return (<int64_t>bswap64(v)) >> (64 - 8 * k)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _convert(const uint8_t* src, Py_ssize_t n, Py_ssize_t width,
                   int64_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t lo, hi
    cdef uint64_t w
    if width == 8:
        for i in range(n):
            memcpy(&w, src + 8 * i, 8)
            lo = <int64_t>bswap64(w)
            out[2 * i] = lo
            out[2 * i + 1] = lo >> 63
    elif width < 8:
        for i in range(n):
            lo = _be_word(src + width * i, width)
            out[2 * i] = lo
            out[2 * i + 1] = lo >> 63
    else:
        for i in range(n):
            memcpy(&w, src + width * i + width - 8, 8)
            out[2 * i] = <int64_t>bswap64(w)
            out[2 * i + 1] = _be_word(src + width * i, width - 8)


def to_decimal128(values, Py_ssize_t width, out):
    """Big-endian FIXED_LEN_BYTE_ARRAY decimals as Arrow decimal128 values.

    Args:
        values: ``n * width`` bytes (any C-contiguous buffer).
        width: bytes per value, 1..16.
        out: a writable buffer of exactly ``16 * n`` bytes: two little-endian int64 limbs
            per value, low first, the high one holding the sign.

    Raises:
        ValueError: a width outside 1..16, values not a whole number of widths, or ``out``
            not ``16 * n`` bytes.
    """
    cdef const uint8_t[::1] src = byte_view(values, "values")
    cdef Py_ssize_t n
    if width < 1 or width > 16:
        raise ValueError(f"decimal width {width} is outside 1..16")
    if src.shape[0] % width:
        raise ValueError(f"{src.shape[0]} bytes are not whole {width}-byte values")
    n = src.shape[0] // width
    cdef uint8_t[::1] dst = out_bytes(out, 16 * n)
    if n:
        with nogil:
            _convert(&src[0], n, width, <int64_t*>&dst[0])
