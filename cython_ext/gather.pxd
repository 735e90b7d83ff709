# cython: language_level=3
"""Dictionary gathers: indices into a dictionary's fixed-width values, copied out.

Header-only (C in ``cdef extern``, like rlerun.pxd), cimported by pagevalues.

- ``mi_gather``: a batch of unpacked indices, checked first by one branch-free max (which the
  compiler vectorises) instead of a test and branch per index, then copied by a loop whose value
  width is a constant; -1, nothing copied, for an index outside the dictionary.
- ``mi_unpack_gather``: groups of 8 bit-packed indices of a width known at compile time (1 to
  ``PAD_BITS``) unpacked and gathered at once, the indices never leaving registers, from a
  dictionary padded to ``2**PAD_BITS`` entries so that every index of that width reads inside
  it. It returns the largest index it met: the caller checks that against the real dictionary
  size before it lets the values count (a larger one is an error the checking loop then names).
  The caller also guarantees that ``groups * width + ((7 * width) >> 3) + 8`` source bytes are
  readable (``unpack_gather_groups`` gives how many groups may go this way).
"""

from libc.stdint cimport uint8_t, uint32_t

cdef extern from *:
    """
    #include <string.h>
    static inline int mi_indices_ok(const uint32_t* idx, Py_ssize_t k, Py_ssize_t size) {
        /* indices come from at most 32-bit runs: one with the top bit set is out of range of
           any dictionary page (num_values is an i32) */
        int32_t m = 0, sign = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            int32_t v = (int32_t)idx[i];
            m = v > m ? v : m;
            sign |= v;
        }
        return sign >= 0 && (Py_ssize_t)m < size;
    }
    #define MI_GATHER(W, T) \
    static inline void mi_gather_##W(const uint8_t* dic, const uint32_t* idx, Py_ssize_t k, \
                                     uint8_t* dst) { \
        _Pragma("GCC unroll 8") \
        for (Py_ssize_t i = 0; i < k; i++) { \
            T v; memcpy(&v, dic + (size_t)idx[i] * (W), sizeof(T)); \
            memcpy(dst + i * (W), &v, sizeof(T)); \
        } \
    }
    MI_GATHER(1, uint8_t) MI_GATHER(2, uint16_t) MI_GATHER(4, uint32_t) MI_GATHER(8, uint64_t)
    static inline void mi_gather_16(const uint8_t* dic, const uint32_t* idx, Py_ssize_t k,
                                    uint8_t* dst) {
        for (Py_ssize_t i = 0; i < k; i++) {
            uint64_t a, b;
            memcpy(&a, dic + (size_t)idx[i] * 16, 8); memcpy(&b, dic + (size_t)idx[i] * 16 + 8, 8);
            memcpy(dst + i * 16, &a, 8); memcpy(dst + i * 16 + 8, &b, 8);
        }
    }
    static inline int mi_gather(const uint8_t* dic, Py_ssize_t size, Py_ssize_t width,
                                const uint32_t* idx, Py_ssize_t k, uint8_t* dst) {
        if (k <= 0) return 0;
        if (!mi_indices_ok(idx, k, size)) return -1;
        switch (width) {
        case 1: mi_gather_1(dic, idx, k, dst); break;
        case 2: mi_gather_2(dic, idx, k, dst); break;
        case 4: mi_gather_4(dic, idx, k, dst); break;
        case 8: mi_gather_8(dic, idx, k, dst); break;
        case 16: mi_gather_16(dic, idx, k, dst); break;
        default:
            for (Py_ssize_t i = 0; i < k; i++)
                memcpy(dst + i * width, dic + (size_t)idx[i] * width, width);
        }
        return 0;
    }

    #define MI_PAD_BITS 12
    static inline uint64_t mi_ug_load(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }
    #define MI_UG_ONE(K, W, T) { \
        uint32_t v = (uint32_t)((mi_ug_load(s + (((K) * (W)) >> 3)) >> (((K) * (W)) & 7)) & mask); \
        m = v > m ? v : m; \
        T x; memcpy(&x, dic + (size_t)v * sizeof(T), sizeof(T)); \
        memcpy(o + (K) * sizeof(T), &x, sizeof(T)); }
    #define MI_UG(W, T) \
    static uint32_t mi_ug_##W##_##T(const uint8_t* src, Py_ssize_t groups, const uint8_t* dic, \
                                    uint8_t* dst) { \
        const uint64_t mask = (1ull << (W)) - 1; \
        uint32_t m = 0; \
        for (Py_ssize_t g = 0; g < groups; g++) { \
            const uint8_t* s = src + g * (W); uint8_t* o = dst + g * 8 * sizeof(T); \
            MI_UG_ONE(0, W, T) MI_UG_ONE(1, W, T) MI_UG_ONE(2, W, T) MI_UG_ONE(3, W, T) \
            MI_UG_ONE(4, W, T) MI_UG_ONE(5, W, T) MI_UG_ONE(6, W, T) MI_UG_ONE(7, W, T) \
        } \
        return m; \
    }
    typedef struct { uint64_t lo, hi; } mi_u128;  /* 16-byte values (decimal128) */
    #define MI_UG_BOTH(W) MI_UG(W, uint32_t) MI_UG(W, uint64_t) MI_UG(W, mi_u128)
    MI_UG_BOTH(1) MI_UG_BOTH(2) MI_UG_BOTH(3) MI_UG_BOTH(4) MI_UG_BOTH(5) MI_UG_BOTH(6)
    MI_UG_BOTH(7) MI_UG_BOTH(8) MI_UG_BOTH(9) MI_UG_BOTH(10) MI_UG_BOTH(11) MI_UG_BOTH(12)
    typedef uint32_t (*mi_ug_fn)(const uint8_t*, Py_ssize_t, const uint8_t*, uint8_t*);
    static const mi_ug_fn mi_ug_4[MI_PAD_BITS + 1] = {0,
        mi_ug_1_uint32_t, mi_ug_2_uint32_t, mi_ug_3_uint32_t, mi_ug_4_uint32_t,
        mi_ug_5_uint32_t, mi_ug_6_uint32_t, mi_ug_7_uint32_t, mi_ug_8_uint32_t,
        mi_ug_9_uint32_t, mi_ug_10_uint32_t, mi_ug_11_uint32_t, mi_ug_12_uint32_t};
    static const mi_ug_fn mi_ug_8[MI_PAD_BITS + 1] = {0,
        mi_ug_1_uint64_t, mi_ug_2_uint64_t, mi_ug_3_uint64_t, mi_ug_4_uint64_t,
        mi_ug_5_uint64_t, mi_ug_6_uint64_t, mi_ug_7_uint64_t, mi_ug_8_uint64_t,
        mi_ug_9_uint64_t, mi_ug_10_uint64_t, mi_ug_11_uint64_t, mi_ug_12_uint64_t};
    static const mi_ug_fn mi_ug_16[MI_PAD_BITS + 1] = {0,
        mi_ug_1_mi_u128, mi_ug_2_mi_u128, mi_ug_3_mi_u128, mi_ug_4_mi_u128,
        mi_ug_5_mi_u128, mi_ug_6_mi_u128, mi_ug_7_mi_u128, mi_ug_8_mi_u128,
        mi_ug_9_mi_u128, mi_ug_10_mi_u128, mi_ug_11_mi_u128, mi_ug_12_mi_u128};
    /* ``width`` 4, 8 or 16 and ``bits`` 1..MI_PAD_BITS (the caller checks both) */
    static inline uint32_t mi_unpack_gather(const uint8_t* src, Py_ssize_t groups, int bits,
                                            const uint8_t* padded, Py_ssize_t width,
                                            uint8_t* dst) {
        return (width == 4 ? mi_ug_4 : width == 8 ? mi_ug_8 : mi_ug_16)[bits](
            src, groups, padded, dst);
    }
    """
    const int PAD_BITS "MI_PAD_BITS"
    int mi_gather(const uint8_t* dic, Py_ssize_t size, Py_ssize_t width, const uint32_t* idx,
                  Py_ssize_t k, uint8_t* dst) noexcept nogil
    uint32_t mi_unpack_gather(const uint8_t* src, Py_ssize_t groups, int bits,
                              const uint8_t* padded, Py_ssize_t width,
                              uint8_t* dst) noexcept nogil


cdef inline Py_ssize_t unpack_gather_groups(Py_ssize_t src_len, int bits,
                                            Py_ssize_t groups) noexcept nogil:
    """How many of ``groups`` groups of a bit-packed run (``src_len`` readable bytes from its
    start) ``mi_unpack_gather`` may take: those whose 8-byte loads all stay inside."""
    cdef Py_ssize_t room = src_len - ((7 * bits) >> 3) - 8
    if room < 0 or bits < 1:
        return 0
    room = room // bits + 1
    return room if room < groups else groups
