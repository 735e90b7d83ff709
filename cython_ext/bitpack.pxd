# cython: language_level=3
"""LSB-first bit packing (Parquet's RLE/bit-packing hybrid and DELTA_BINARY_PACKED order).

Header-only (``cdef inline``), shared by the rle and delta kernels. The caller checks that the
source holds ``packed_size(n, width)`` bytes before calling an unpack (STYLE.md: check the whole
run once, then loop unchecked); these loops never read past ``src_len``.
"""

from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from buffer cimport load_u64, store_u64


cdef inline Py_ssize_t packed_size(Py_ssize_t n, int width) noexcept nogil:
    """Bytes taken by ``n`` values of ``width`` bits: ceil(n * width / 8)."""
    return (n * width + 7) >> 3


cdef inline uint64_t width_mask(int width) noexcept nogil:
    return 0xFFFFFFFFFFFFFFFF if width >= 64 else ((<uint64_t>1 << width) - 1)


cdef inline void unpack_u32(const uint8_t* src, Py_ssize_t src_len, int width,
                            uint32_t* out, Py_ssize_t n) noexcept nogil:
    """Unpack ``n`` values of ``width`` (0..32) bits; requires src_len >= packed_size(n, width)."""
    cdef uint64_t mask = width_mask(width)
    cdef Py_ssize_t i = 0, bit = 0, byte
    cdef uint8_t tmp[16]
    if width == 0:
        memset(out, 0, n * sizeof(uint32_t))
        return
    # fast path: an 8-byte window starting at the value's first byte lies inside the source
    while i < n:
        byte = bit >> 3
        if byte + 8 > src_len:
            break
        out[i] = <uint32_t>((load_u64(src + byte) >> (bit & 7)) & mask)
        bit += width
        i += 1
    if i < n:
        # tail: fewer than 8 bytes remain; copy them into a zero-padded window
        byte = bit >> 3
        memset(tmp, 0, 16)
        memcpy(tmp, src + byte, src_len - byte)
        bit -= byte << 3
        while i < n:
            out[i] = <uint32_t>((load_u64(tmp + (bit >> 3)) >> (bit & 7)) & mask)
            bit += width
            i += 1


cdef inline void unpack_u64(const uint8_t* src, Py_ssize_t src_len, int width,
                            uint64_t* out, Py_ssize_t n) noexcept nogil:
    """Unpack ``n`` values of ``width`` (0..64) bits; requires src_len >= packed_size(n, width)."""
    cdef uint64_t mask = width_mask(width)
    cdef uint64_t v
    cdef Py_ssize_t i = 0, bit = 0, byte
    cdef int shift
    cdef uint8_t tmp[24]
    if width == 0:
        memset(out, 0, n * sizeof(uint64_t))
        return
    while i < n:
        byte = bit >> 3
        if byte + 9 > src_len:
            break
        shift = bit & 7
        v = load_u64(src + byte) >> shift
        if shift + width > 64:
            v |= (<uint64_t>src[byte + 8]) << (64 - shift)
        out[i] = v & mask
        bit += width
        i += 1
    if i < n:
        byte = bit >> 3
        memset(tmp, 0, 24)
        memcpy(tmp, src + byte, src_len - byte)
        bit -= byte << 3
        while i < n:
            byte = bit >> 3
            shift = bit & 7
            v = load_u64(tmp + byte) >> shift
            if shift + width > 64:
                v |= (<uint64_t>tmp[byte + 8]) << (64 - shift)
            out[i] = v & mask
            bit += width
            i += 1


cdef inline void pack_u64(const uint64_t* vals, Py_ssize_t n, int width, uint8_t* dst) noexcept nogil:
    """Pack ``n`` values (masked to ``width`` bits) into exactly packed_size(n, width) bytes."""
    cdef uint64_t mask = width_mask(width)
    cdef uint64_t acc = 0, v
    cdef int nbits = 0, spill
    cdef Py_ssize_t i, out = 0
    if width == 0:
        return
    for i in range(n):
        v = vals[i] & mask
        acc |= v << nbits
        nbits += width
        if nbits >= 64:
            store_u64(dst + out, acc)
            out += 8
            spill = nbits - 64
            acc = (v >> (width - spill)) if spill > 0 else 0
            nbits = spill
    while nbits > 0:
        dst[out] = <uint8_t>acc
        out += 1
        acc >>= 8
        nbits -= 8


cdef inline void pack_u32(const uint32_t* vals, Py_ssize_t n, int width, uint8_t* dst) noexcept nogil:
    """Pack ``n`` values (masked to ``width`` <= 32 bits) into exactly packed_size(n, width) bytes."""
    cdef uint64_t mask = width_mask(width)
    cdef uint64_t acc = 0, v
    cdef int nbits = 0, spill
    cdef Py_ssize_t i, out = 0
    if width == 0:
        return
    for i in range(n):
        v = vals[i] & mask
        acc |= v << nbits
        nbits += width
        if nbits >= 64:
            store_u64(dst + out, acc)
            out += 8
            spill = nbits - 64
            acc = (v >> (width - spill)) if spill > 0 else 0
            nbits = spill
    while nbits > 0:
        dst[out] = <uint8_t>acc
        out += 1
        acc >>= 8
        nbits -= 8


cdef inline int bit_width_u64(uint64_t v) noexcept nogil:
    """Bits needed to represent ``v`` (0 for 0)."""
    cdef int w = 0
    while v:
        w += 1
        v >>= 1
    return w
