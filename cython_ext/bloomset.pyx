# cython: language_level=3
"""Probe many split-block bloom filters stored back to back, one per indexed file; build one
file's filter while counting the hashes it certainly had not seen (``insert_new``).

The bloom index keeps one SBBF bitset per file in an Arrow binary column: ``offsets`` (n + 1
positions) into one ``data`` buffer. At query time a few literal hashes are checked against
every file's bitset at once: per file, its block ``((h >> 32) * z) >> 32`` (``z`` = bytes / 32)
must have every bit of the hash's mask ``1 << ((uint32(h) * salt[i]) >> 27)`` set in word ``i``
(Parquet spec; the same salts as cython_ext/bloom.pyx). The masks depend only on the hash, so
they are computed once per hash, not per file.

Index metadata is untrusted input: every file's range is validated (inside ``data``, a power
of two between 32 bytes and ``max_bytes``) before its words are read. A file whose range is
not a valid bitset proves nothing and answers True ("might match"); a null entry answers False
(the caller decides what a null means).
"""

from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t

cimport cython
import numpy as np

from arrowcol cimport Col, col_binary, col_fixed, col_hash
from buffer cimport load_u32

DEF_MAX_BYTES = 128 * 1024 * 1024

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__GNUC__) || defined(__clang__)
    #define MIS_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 0)
    #else
    #define MIS_PREFETCH(p) ((void)(p))
    #endif
    static const uint32_t MIS_SALT[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                         0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};
    /* Insert hashes into one filter, counting those that set a bit (so were new). The block
       of hash i + 8 is prefetched; a portable version and an AVX2 one (one vector per
       block), picked at run time as cython_ext/bloom.pyx picks its block operations. */
    static Py_ssize_t mis_insert_new_portable(uint8_t* bits, uint64_t z, const uint64_t* hs,
                                              Py_ssize_t n) {
        Py_ssize_t fresh = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + 8 < n) MIS_PREFETCH(bits + ((((hs[i + 8] >> 32) * z) >> 32) << 5));
            uint8_t* p = bits + ((((hs[i] >> 32) * z) >> 32) << 5);
            uint32_t w[8], x = (uint32_t)hs[i], missing = 0;
            memcpy(w, p, 32);
            for (int j = 0; j < 8; j++) {
                uint32_t m = (uint32_t)1 << ((x * MIS_SALT[j]) >> 27);
                missing |= m & ~w[j];
                w[j] |= m;
            }
            memcpy(p, w, 32);
            fresh += missing != 0;
        }
        return fresh;
    }
    #if defined(__GNUC__) && defined(__x86_64__)
    #include <immintrin.h>
    __attribute__((target("avx2")))
    static Py_ssize_t mis_insert_new_avx2(uint8_t* bits, uint64_t z, const uint64_t* hs,
                                          Py_ssize_t n) {
        const __m256i salt = _mm256_loadu_si256((const __m256i*)MIS_SALT);
        const __m256i one = _mm256_set1_epi32(1);
        Py_ssize_t fresh = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + 8 < n) MIS_PREFETCH(bits + ((((hs[i + 8] >> 32) * z) >> 32) << 5));
            uint8_t* p = bits + ((((hs[i] >> 32) * z) >> 32) << 5);
            __m256i x = _mm256_set1_epi32((int32_t)(uint32_t)hs[i]);
            __m256i mask = _mm256_sllv_epi32(
                one, _mm256_srli_epi32(_mm256_mullo_epi32(x, salt), 27));
            __m256i b = _mm256_loadu_si256((const __m256i*)p);
            fresh += !_mm256_testc_si256(b, mask);
            _mm256_storeu_si256((__m256i*)p, _mm256_or_si256(b, mask));
        }
        return fresh;
    }
    static int mis_has_avx2(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
    }
    #else
    #define mis_insert_new_avx2 mis_insert_new_portable
    static int mis_has_avx2(void) { return 0; }
    #endif
    """
    const uint32_t SALT "MIS_SALT"[8]
    void prefetch "MIS_PREFETCH"(const uint8_t* p) noexcept nogil
    Py_ssize_t insert_new_portable "mis_insert_new_portable"(
        uint8_t* bits, uint64_t z, const uint64_t* hs, Py_ssize_t n) noexcept nogil
    Py_ssize_t insert_new_avx2 "mis_insert_new_avx2"(
        uint8_t* bits, uint64_t z, const uint64_t* hs, Py_ssize_t n) noexcept nogil
    int has_avx2 "mis_has_avx2"() noexcept nogil


cdef const uint8_t[::1] _bytes_of(obj, str what):
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"{what} must be a buffer (bytes, numpy array, Arrow Buffer), "
                        f"got {type(obj).__name__}") from None
    if not mv.c_contiguous:
        raise TypeError(f"{what} must be C-contiguous")
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B") if mv.nbytes else memoryview(b"")
    return mv


def hash_masks(hashes):
    """The eight 32-bit mask words of each hash (the bits it sets in its block).

    Args:
        hashes: numpy uint64 array of ``k`` hashes.

    Returns:
        numpy uint32 array of shape ``(k, 8)``.
    """
    cdef const uint64_t[::1] hs = np.ascontiguousarray(hashes, dtype=np.uint64)
    out = np.empty((hs.shape[0], 8), dtype=np.uint32)
    cdef uint32_t[:, ::1] m = out
    cdef Py_ssize_t k
    cdef int j
    cdef uint32_t x
    for k in range(hs.shape[0]):
        x = <uint32_t>hs[k]
        for j in range(8):
            m[k, j] = (<uint32_t>1) << ((x * SALT[j]) >> 27)
    return out


cdef enum:
    PREFETCH_AHEAD = 8  # files ahead whose block is prefetched (a miss costs ~100 ns)


cdef inline bint _valid(const int64_t* offs, Py_ssize_t i, Py_ssize_t size,
                        int64_t max_bytes) noexcept nogil:
    cdef int64_t start = offs[i], length = offs[i + 1] - offs[i]
    return not (start < 0 or length < 32 or length > max_bytes or (length & (length - 1))
                or start > size - length)


cdef inline const uint8_t* _block(const int64_t* offs, Py_ssize_t i, const uint8_t* data,
                                  uint64_t h) noexcept nogil:
    cdef uint64_t z = <uint64_t>((offs[i + 1] - offs[i]) >> 5)
    return data + offs[i] + <int64_t>((((h >> 32) * z) >> 32) << 5)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _probe(const int64_t* offs, Py_ssize_t n, const uint8_t* data, Py_ssize_t size,
                const uint8_t* present, const uint64_t* hs, const uint32_t* masks,
                Py_ssize_t k, int64_t max_bytes, uint8_t* out, uint8_t* usable) except -1 nogil:
    # Reads only inside ``data[0:size]``: a file's words are loaded only after _valid() said
    # its range lies inside, and a block index is < z by construction ((h >> 32) * z < 2**32 z).
    # Files are the outer loop (one small bitset stays in cache for all k hashes); the first
    # hash's block of a file a few positions ahead is prefetched, so misses overlap.
    cdef Py_ssize_t i, q, ahead
    cdef const uint8_t* p
    cdef const uint32_t* m
    cdef int j
    cdef bint hit
    for i in range(n):
        usable[i] = present[i] and _valid(offs, i, size, max_bytes)
    for i in range(n):
        ahead = i + PREFETCH_AHEAD
        if k and ahead < n and usable[ahead]:
            prefetch(_block(offs, ahead, data, hs[0]))
        if not usable[i]:
            out[i] = present[i]  # null: no value; present but not a bitset: proves nothing
            continue
        hit = False
        for q in range(k):
            p = _block(offs, i, data, hs[q])
            m = masks + 8 * q
            hit = True
            for j in range(8):
                if (load_u32(p + 4 * j) & m[j]) != m[j]:
                    hit = False
                    break
            if hit:
                break
        out[i] = hit
    return 0


def probe(offsets, data, present, hashes, int64_t max_bytes=DEF_MAX_BYTES):
    """Check hashes against ``n`` bitsets stored back to back.

    Args:
        offsets: numpy int64 array of ``n + 1`` positions into ``data`` (an Arrow binary
            column's offsets, absolute): bitset ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
        data: buffer holding the bitsets (numpy uint8, bytes, Arrow Buffer).
        present: numpy bool (or uint8) array of ``n``: False for null entries.
        hashes: numpy uint64 array of the hashes to look for.
        max_bytes: the largest bitset accepted as valid.

    Returns:
        numpy bool array of ``n``: False for null entries and for bitsets that hold none of
        the hashes; True where one of them may be present, and for entries whose range is not
        a valid bitset (outside ``data``, not a power of two in [32, max_bytes]).

    Raises:
        TypeError: arguments of the wrong kind.
        ValueError: ``offsets`` and ``present`` disagree on ``n``.
    """
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const uint8_t[::1] raw = _bytes_of(data, "data")
    pres_arr = np.ascontiguousarray(present)
    if pres_arr.dtype not in (np.bool_, np.uint8):
        raise TypeError(f"present must be a bool or uint8 array, got {pres_arr.dtype}")
    cdef const uint8_t[::1] pres = pres_arr.view(np.uint8)
    if offs.shape[0] != pres.shape[0] + 1:
        raise ValueError(f"offsets has {offs.shape[0]} entries for {pres.shape[0]} bitsets "
                         f"(need n + 1)")
    cdef const uint64_t[::1] hs = np.ascontiguousarray(hashes, dtype=np.uint64)
    cdef const uint32_t[:, ::1] masks = hash_masks(hs)
    cdef Py_ssize_t n = pres.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    usable = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] ov = out.view(np.uint8)
    cdef uint8_t[::1] uv = usable
    cdef const uint8_t* dp = &raw[0] if raw.shape[0] else <const uint8_t*>b""
    cdef const uint64_t* hp = &hs[0] if hs.shape[0] else NULL
    cdef const uint32_t* mp = &masks[0, 0] if hs.shape[0] else NULL
    if n:
        with nogil:
            _probe(&offs[0], n, dp, raw.shape[0], &pres[0], hp, mp, hs.shape[0], max_bytes,
                   &ov[0], &uv[0])
    return out


ctypedef Py_ssize_t (*insert_new_t)(uint8_t* bits, uint64_t z, const uint64_t* hs,
                                    Py_ssize_t n) noexcept nogil

cdef insert_new_t _insert_new = insert_new_avx2 if has_avx2() else insert_new_portable


cdef uint8_t[::1] _bitset(bitset) except *:
    if not isinstance(bitset, np.ndarray) or bitset.dtype != np.uint8 or bitset.ndim != 1:
        raise TypeError("bitset must be a 1-D uint8 numpy array")
    cdef uint8_t[::1] bits = bitset
    cdef Py_ssize_t size = bits.shape[0]
    if size < 32 or size & (size - 1):
        raise ValueError(f"bitset must be a power of two >= 32 bytes, got {size}")
    return bits


def insert_new(bitset, hashes, bint portable=False):
    """Insert hashes into one split-block filter; count the inserts that set a bit.

    A hash whose eight bits were not all set yet cannot have been inserted before, so the
    count is a lower bound of the number of distinct hashes (short of it only by false
    positives). The bits are those ``metaindex.bloom.SplitBlockBloomFilter.insert_hashes``
    sets.

    Args:
        bitset: writable C-contiguous uint8 numpy array, a power of two >= 32 bytes.
        hashes: numpy uint64 array.
        portable: use the portable block code even where the CPU has AVX2 (tests).

    Returns:
        The number of inserts that set at least one bit.

    Raises:
        ValueError: a bitset that is not a power of two >= 32 bytes.
        TypeError: not a writable uint8 array.
    """
    cdef uint8_t[::1] bits = _bitset(bitset)
    cdef const uint64_t[::1] hs = np.ascontiguousarray(hashes, dtype=np.uint64)
    cdef Py_ssize_t fresh = 0
    cdef insert_new_t fn = insert_new_portable if portable else _insert_new
    if hs.shape[0]:
        with nogil:
            fresh = fn(&bits[0], <uint64_t>(bits.shape[0] >> 5), &hs[0], hs.shape[0])
    return fresh


cdef enum:
    HASH_BATCH = 256    # values hashed onto the stack between inserts


cdef Py_ssize_t _insert_col(uint8_t[::1] bits, const Col* c, bint portable) noexcept:
    cdef uint64_t hs[HASH_BATCH]
    cdef Py_ssize_t i0 = 0, i1, fresh = 0
    cdef uint64_t z = <uint64_t>(bits.shape[0] >> 5)
    cdef insert_new_t fn = insert_new_portable if portable else _insert_new
    with nogil:
        while i0 < c.n:
            i1 = min(i0 + <Py_ssize_t>HASH_BATCH, c.n)
            fresh += fn(&bits[0], z, hs, col_hash(c, i0, i1, hs))
            i0 = i1
    return fresh


def insert_fixed_new(bitset, validity, values, Py_ssize_t offset, Py_ssize_t length,
                     Py_ssize_t width, int canon, bint portable=False):
    """:func:`insert_new` of the bloom hashes of a fixed-width Arrow array's non-null values
    (cython_ext/colhash.pyx ``fixed_hashes``), hashed from its buffers without an array of
    hashes."""
    cdef Col c
    cdef list keep = []
    cdef uint8_t[::1] bits = _bitset(bitset)
    col_fixed(&c, validity, values, offset, length, width, canon, keep)
    return _insert_col(bits, &c, portable)


def insert_binary_new(bitset, validity, offsets, int offset_width, data, Py_ssize_t offset,
                      Py_ssize_t length, bint portable=False):
    """:func:`insert_new` of the bloom hashes of a binary / string Arrow array's non-null
    values (as ``colhash.binary_hashes``), from its buffers."""
    cdef Col c
    cdef list keep = []
    cdef uint8_t[::1] bits = _bitset(bitset)
    col_binary(&c, validity, offsets, offset_width, data, offset, length, keep)
    return _insert_col(bits, &c, portable)
