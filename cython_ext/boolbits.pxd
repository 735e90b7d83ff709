# cython: language_level=3
"""Booleans <-> LSB-first bits (PLAIN BOOLEAN, bit-packed runs of RLE booleans).

Header-only. Pure pointer helpers: the caller has checked both buffers' sizes.
"""

from libc.stdint cimport uint8_t, uint64_t
from buffer cimport load_u64, store_u64


cdef inline uint64_t spread_bits(uint64_t b) noexcept nogil:
    """The 8 low bits of ``b`` as 8 bytes of 0/1, bit 0 in the first (lowest) byte."""
    b = (b | (b << 28)) & <uint64_t>0x0000000F0000000F
    b = (b | (b << 14)) & <uint64_t>0x0003000300030003
    return (b | (b << 7)) & <uint64_t>0x0101010101010101


cdef inline uint8_t gather_bits(uint64_t x) noexcept nogil:
    """Inverse of spread_bits: bit 0 of byte k becomes bit k (other bits of ``x`` ignored)."""
    x &= <uint64_t>0x0101010101010101
    return <uint8_t>((x * <uint64_t>0x0102040810204080) >> 56)


cdef inline void unpack_bools(const uint8_t* src, Py_ssize_t n, uint8_t* dst) noexcept nogil:
    """Unpack ``n`` bits (reads ceil(n / 8) bytes of ``src``) to ``n`` bytes of 0/1."""
    cdef Py_ssize_t i
    for i in range(n >> 3):
        store_u64(dst + 8 * i, spread_bits(src[i]))
    for i in range((n >> 3) << 3, n):
        dst[i] = (src[i >> 3] >> (i & 7)) & 1


cdef inline void pack_bools(const uint8_t* src, Py_ssize_t n, uint8_t* dst) noexcept nogil:
    """Pack ``n`` bytes (any non-zero low bit is True) into exactly ceil(n / 8) bytes."""
    cdef Py_ssize_t i
    cdef uint8_t last = 0
    for i in range(n >> 3):
        dst[i] = gather_bits(load_u64(src + 8 * i))
    for i in range((n >> 3) << 3, n):
        last |= (src[i] & 1) << (i & 7)
    if n & 7:
        dst[n >> 3] = last


cdef inline Py_ssize_t popcount64(uint64_t x) noexcept nogil:
    """Set bits of ``x`` (SWAR: no POPCNT instruction needed for a portable build)."""
    x = x - ((x >> 1) & <uint64_t>0x5555555555555555)
    x = (x & <uint64_t>0x3333333333333333) + ((x >> 2) & <uint64_t>0x3333333333333333)
    x = (x + (x >> 4)) & <uint64_t>0x0F0F0F0F0F0F0F0F
    return <Py_ssize_t>((x * <uint64_t>0x0101010101010101) >> 56)
