# cython: language_level=3
"""XXH64 (spec 0.1.1) over one value, header-only: the bloom kernels (Parquet's bloom hash,
seed 0 over the PLAIN value) and the column hashing / distinct-value kernels share it.

``xxh64_8`` / ``xxh64_4`` are the short fixed paths for exactly 8 / 4 little-endian bytes;
``xxh64_mem`` hashes ``n`` bytes the caller has checked are readable.
"""

from libc.stdint cimport uint8_t, uint32_t, uint64_t

from buffer cimport load_u32, load_u64


cdef extern from *:
    """
    #include <stdint.h>
    static const uint64_t MI_XXH_P1 = 0x9E3779B185EBCA87ULL;
    static const uint64_t MI_XXH_P2 = 0xC2B2AE3D27D4EB4FULL;
    static const uint64_t MI_XXH_P3 = 0x165667B19E3779F9ULL;
    static const uint64_t MI_XXH_P4 = 0x85EBCA77C2B2AE63ULL;
    static const uint64_t MI_XXH_P5 = 0x27D4EB2F165667C5ULL;
    """
    const uint64_t P1 "MI_XXH_P1"
    const uint64_t P2 "MI_XXH_P2"
    const uint64_t P3 "MI_XXH_P3"
    const uint64_t P4 "MI_XXH_P4"
    const uint64_t P5 "MI_XXH_P5"


cdef inline uint64_t rotl64(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t xxh_round(uint64_t acc, uint64_t lane) noexcept nogil:
    acc += lane * P2
    return rotl64(acc, 31) * P1


cdef inline uint64_t xxh_merge(uint64_t acc, uint64_t v) noexcept nogil:
    acc ^= xxh_round(0, v)
    return acc * P1 + P4


cdef inline uint64_t xxh_avalanche(uint64_t h) noexcept nogil:
    h ^= h >> 33
    h *= P2
    h ^= h >> 29
    h *= P3
    h ^= h >> 32
    return h


cdef inline uint64_t xxh64_8(uint64_t v, uint64_t seed) noexcept nogil:
    """XXH64 of exactly 8 bytes holding ``v`` (little-endian): the short fixed path."""
    cdef uint64_t h = seed + P5 + 8
    h ^= xxh_round(0, v)
    return xxh_avalanche(rotl64(h, 27) * P1 + P4)


cdef inline uint64_t xxh64_4(uint32_t v, uint64_t seed) noexcept nogil:
    """XXH64 of exactly 4 bytes holding ``v`` (little-endian)."""
    cdef uint64_t h = seed + P5 + 4
    h ^= <uint64_t>v * P1
    return xxh_avalanche(rotl64(h, 23) * P2 + P3)


cdef inline uint64_t xxh64_mem(const uint8_t* p, Py_ssize_t n, uint64_t seed) noexcept nogil:
    """XXH64 of ``n`` bytes at ``p``; the caller guarantees they are readable."""
    cdef const uint8_t* end = p + n
    cdef uint64_t h, v1, v2, v3, v4
    if n >= 32:
        v1 = seed + P1 + P2
        v2 = seed + P2
        v3 = seed
        v4 = seed - P1
        while end - p >= 32:
            v1 = xxh_round(v1, load_u64(p))
            v2 = xxh_round(v2, load_u64(p + 8))
            v3 = xxh_round(v3, load_u64(p + 16))
            v4 = xxh_round(v4, load_u64(p + 24))
            p += 32
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18)
        h = xxh_merge(h, v1)
        h = xxh_merge(h, v2)
        h = xxh_merge(h, v3)
        h = xxh_merge(h, v4)
    else:
        h = seed + P5
    h += <uint64_t>n
    while end - p >= 8:
        h ^= xxh_round(0, load_u64(p))
        h = rotl64(h, 27) * P1 + P4
        p += 8
    if end - p >= 4:
        h ^= <uint64_t>load_u32(p) * P1
        h = rotl64(h, 23) * P2 + P3
        p += 4
    while p < end:
        h ^= <uint64_t>p[0] * P5
        h = rotl64(h, 11) * P1
        p += 1
    return xxh_avalanche(h)
