# cython: language_level=3
"""XXH64 and the Parquet split-block bloom filter (SBBF), batch kernels.

What is hashed (Parquet spec, "Parquet Bloom Filter"): XXH64 with seed 0 over the PLAIN
encoding of one value: INT32/FLOAT the 4 little-endian bytes, INT64/DOUBLE the 8, INT96 the
12, FIXED_LEN_BYTE_ARRAY its bytes, BYTE_ARRAY the bytes without the 4-byte length prefix.
BOOLEAN has no bloom hash (parquet-java and Arrow refuse it), so there is no boolean kernel.

The filter is a bitset of ``z = num_bytes / 32`` blocks of eight 32-bit little-endian words.
A 64-bit hash ``h`` selects block ``((h >> 32) * z) >> 32`` and sets (or tests) bit
``(uint32(h) * salt[i]) >> 27`` of word ``i``.

Every batch loop is one software pipeline over stack arrays of ``BATCH`` values: hash batch
k+1 and prefetch its blocks while inserting (checking) batch k. A filter larger than the caches
so pays overlapped memory round-trips instead of one stall per value, and no array of hashes
is allocated. The block operations themselves are small C functions (portable, and AVX2 with
one vector per block, chosen at import from the CPU).
Inputs are any C-contiguous buffer-protocol objects; lengths and offsets are validated once,
before the loops run unchecked. Inserts keep the GIL (two threads OR-ing into one bitset
would lose bits); hashing and checks release it.
"""

from libc.stdint cimport uint8_t, uint32_t, int32_t, int64_t, uint64_t

import numpy as np

from buffer cimport load_u32, load_u64, store_u32
from xxh64 cimport xxh64_4, xxh64_8, xxh64_mem
from physical cimport byte_view, view_ptr


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #define MI_SALTS 0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU, \
                     0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U
    static const uint32_t MI_SALT[8] = {MI_SALTS};

    #if defined(__GNUC__)
    #define MI_PREFETCH(p) __builtin_prefetch((p), 1, 3)
    #else
    #define MI_PREFETCH(p) ((void)(p))
    #endif

    /* Block operations over a batch of located blocks: blk[j] is the block of hash hs[j].
       A portable version, and an AVX2 one (8 words at once) picked at import when the CPU
       has it. Words are little-endian; memcpy keeps loads and stores alignment-safe. */
    static void mi_insert_many_portable(uint8_t** blk, const uint64_t* hs, Py_ssize_t m) {
        for (Py_ssize_t j = 0; j < m; j++) {
            uint32_t x = (uint32_t)hs[j], w[8];
            memcpy(w, blk[j], 32);
            for (int i = 0; i < 8; i++) w[i] |= (uint32_t)1 << ((x * MI_SALT[i]) >> 27);
            memcpy(blk[j], w, 32);
        }
    }
    static void mi_check_many_portable(uint8_t** blk, const uint64_t* hs, Py_ssize_t m,
                                       uint8_t* out) {
        for (Py_ssize_t j = 0; j < m; j++) {
            uint32_t x = (uint32_t)hs[j], w[8], ok = 1;
            memcpy(w, blk[j], 32);
            for (int i = 0; i < 8; i++) ok &= w[i] >> ((x * MI_SALT[i]) >> 27);
            out[j] = (uint8_t)(ok & 1);
        }
    }
    #if defined(__GNUC__) && defined(__x86_64__)
    #include <immintrin.h>
    __attribute__((target("avx2")))
    static void mi_insert_many_avx2(uint8_t** blk, const uint64_t* hs, Py_ssize_t m) {
        const __m256i salt = _mm256_setr_epi32(MI_SALTS), one = _mm256_set1_epi32(1);
        for (Py_ssize_t j = 0; j < m; j++) {
            __m256i x = _mm256_set1_epi32((int32_t)(uint32_t)hs[j]);
            __m256i mask = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, salt), 27));
            __m256i b = _mm256_loadu_si256((const __m256i*)blk[j]);
            _mm256_storeu_si256((__m256i*)blk[j], _mm256_or_si256(b, mask));
        }
    }
    __attribute__((target("avx2")))
    static void mi_check_many_avx2(uint8_t** blk, const uint64_t* hs, Py_ssize_t m,
                                   uint8_t* out) {
        const __m256i salt = _mm256_setr_epi32(MI_SALTS), one = _mm256_set1_epi32(1);
        for (Py_ssize_t j = 0; j < m; j++) {
            __m256i x = _mm256_set1_epi32((int32_t)(uint32_t)hs[j]);
            __m256i mask = _mm256_sllv_epi32(one, _mm256_srli_epi32(_mm256_mullo_epi32(x, salt), 27));
            __m256i b = _mm256_loadu_si256((const __m256i*)blk[j]);
            out[j] = (uint8_t)_mm256_testc_si256(b, mask);
        }
    }
    static int mi_cpu_has_avx2(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
    }
    #else
    #define mi_insert_many_avx2 mi_insert_many_portable
    #define mi_check_many_avx2 mi_check_many_portable
    static int mi_cpu_has_avx2(void) { return 0; }
    #endif
    """
    const uint32_t SALT "MI_SALT"[8]
    void prefetch "MI_PREFETCH"(const void* p) noexcept nogil
    void insert_many_portable "mi_insert_many_portable"(
        uint8_t** blk, const uint64_t* hs, Py_ssize_t m) noexcept nogil
    void check_many_portable "mi_check_many_portable"(
        uint8_t** blk, const uint64_t* hs, Py_ssize_t m, uint8_t* out) noexcept nogil
    void insert_many_avx2 "mi_insert_many_avx2"(
        uint8_t** blk, const uint64_t* hs, Py_ssize_t m) noexcept nogil
    void check_many_avx2 "mi_check_many_avx2"(
        uint8_t** blk, const uint64_t* hs, Py_ssize_t m, uint8_t* out) noexcept nogil
    int cpu_has_avx2 "mi_cpu_has_avx2"() noexcept nogil


ctypedef void (*insert_many_t)(uint8_t** blk, const uint64_t* hs, Py_ssize_t m) noexcept nogil
ctypedef void (*check_many_t)(uint8_t** blk, const uint64_t* hs, Py_ssize_t m,
                              uint8_t* out) noexcept nogil

cdef insert_many_t insert_many = insert_many_portable
cdef check_many_t check_many = check_many_portable


def select_block_ops(str name="auto"):
    """Choose the block insert/check implementation; returns the one now in use.

    Args:
        name: "auto" (AVX2 when the CPU has it, the default at import), "avx2" or
            "portable". Both give identical bitsets; tests run each against the reference.

    Raises:
        ValueError: unknown name, or "avx2" on a CPU without AVX2.
    """
    global insert_many, check_many
    if name not in ("auto", "avx2", "portable"):
        raise ValueError(f"block ops must be 'auto', 'avx2' or 'portable', got {name!r}")
    if name == "avx2" and not cpu_has_avx2():
        raise ValueError("this CPU has no AVX2")
    if name == "portable" or (name == "auto" and not cpu_has_avx2()):
        insert_many, check_many = insert_many_portable, check_many_portable
        return "portable"
    insert_many, check_many = insert_many_avx2, check_many_avx2
    return "avx2"


select_block_ops()


cdef enum:
    BATCH = 32          # values hashed ahead of their inserts/checks (prefetch distance)

cdef enum SrcKind:
    SRC_HASHES = 0      # the input already holds uint64 hashes
    SRC_FIXED4 = 1      # INT32 / FLOAT
    SRC_FIXED8 = 2      # INT64 / DOUBLE
    SRC_FIXED = 3       # INT96 / FIXED_LEN_BYTE_ARRAY: `width` bytes per value
    SRC_OFFSETS32 = 4   # BYTE_ARRAY with int32 offsets
    SRC_OFFSETS64 = 5   # BYTE_ARRAY with int64 offsets


cdef struct Src:
    int kind
    const uint8_t* data
    const uint8_t* offsets
    Py_ssize_t width
    Py_ssize_t n
    uint64_t seed


cdef inline Py_ssize_t load_offset(const uint8_t* offsets, int kind, Py_ssize_t i) noexcept nogil:
    if kind == SRC_OFFSETS32:
        return <int32_t>load_u32(offsets + 4 * i)
    return <Py_ssize_t><int64_t>load_u64(offsets + 8 * i)


cdef void hash_run(const Src* s, Py_ssize_t i0, Py_ssize_t m, uint64_t* out) noexcept nogil:
    """Hashes of values ``i0 .. i0+m-1`` of a validated source into ``out``."""
    cdef Py_ssize_t j, a, b
    cdef const uint8_t* p
    if s.kind == SRC_FIXED8:
        p = s.data + 8 * i0
        for j in range(m):
            out[j] = xxh64_8(load_u64(p + 8 * j), s.seed)
    elif s.kind == SRC_FIXED4:
        p = s.data + 4 * i0
        for j in range(m):
            out[j] = xxh64_4(load_u32(p + 4 * j), s.seed)
    elif s.kind == SRC_HASHES:
        p = s.data + 8 * i0
        for j in range(m):
            out[j] = load_u64(p + 8 * j)
    elif s.kind == SRC_FIXED:
        p = s.data + s.width * i0
        for j in range(m):
            out[j] = xxh64_mem(p + s.width * j, s.width, s.seed)
    else:
        a = load_offset(s.offsets, s.kind, i0)
        for j in range(m):
            b = load_offset(s.offsets, s.kind, i0 + j + 1)
            out[j] = xxh64_mem(s.data + a, b - a, s.seed)
            a = b


# ------------------------------------------------------------------------ split-block filter

cdef inline uint8_t* block_of(uint8_t* bits, uint64_t nblocks, uint64_t h) noexcept nogil:
    return bits + 32 * (((h >> 32) * nblocks) >> 32)


cdef inline void locate(uint8_t* bits, uint64_t nblocks, const uint64_t* hs,
                        uint8_t** blk, Py_ssize_t m) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(m):
        blk[j] = block_of(bits, nblocks, hs[j])
        prefetch(blk[j])


cdef void insert_src(uint8_t* bits, uint64_t nblocks, const Src* s) noexcept nogil:
    """Software pipeline: hash and prefetch batch k+1 while inserting batch k."""
    cdef uint64_t hs[2][BATCH]
    cdef uint8_t* blk[2][BATCH]
    cdef Py_ssize_t i0 = 0, m, m_prev = 0
    cdef int cur = 0
    while True:
        m = min(<Py_ssize_t>BATCH, s.n - i0)
        if m > 0:
            hash_run(s, i0, m, hs[cur])
            locate(bits, nblocks, hs[cur], blk[cur], m)
        if m_prev > 0:
            insert_many(blk[cur ^ 1], hs[cur ^ 1], m_prev)
        if m <= 0:
            return
        i0 += m
        m_prev = m
        cur ^= 1


cdef void check_src(const uint8_t* bits, uint64_t nblocks, const Src* s, uint8_t* out) noexcept nogil:
    """Software pipeline: hash and prefetch batch k+1 while checking batch k."""
    cdef uint64_t hs[2][BATCH]
    cdef uint8_t* blk[2][BATCH]
    cdef Py_ssize_t i0 = 0, m, m_prev = 0
    cdef int cur = 0
    while True:
        m = min(<Py_ssize_t>BATCH, s.n - i0)
        if m > 0:
            hash_run(s, i0, m, hs[cur])
            locate(<uint8_t*>bits, nblocks, hs[cur], blk[cur], m)
        if m_prev > 0:
            check_many(blk[cur ^ 1], hs[cur ^ 1], m_prev, out + i0 - m_prev)
        if m <= 0:
            return
        i0 += m
        m_prev = m
        cur ^= 1


# ----------------------------------------------------------------------- argument handling

cdef int _fixed_src(Src* s, const uint8_t[::1] raw, Py_ssize_t width, uint64_t seed) except -1:
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    if raw.shape[0] % width:
        raise ValueError(f"values hold {raw.shape[0]} bytes, not a multiple of width {width}")
    s.kind = SRC_FIXED8 if width == 8 else SRC_FIXED4 if width == 4 else SRC_FIXED
    s.data = view_ptr(raw)
    s.offsets = NULL
    s.width = width
    s.n = raw.shape[0] // width
    s.seed = seed
    return 0


cdef int _byte_array_src(Src* s, const uint8_t[::1] offs, int itemsize,
                         const uint8_t[::1] data, uint64_t seed) except -1:
    """Check ``offsets`` (n+1 entries, non-decreasing, within ``data``) once, before hashing."""
    cdef Py_ssize_t n = offs.shape[0] // itemsize - 1
    cdef Py_ssize_t i, prev, cur
    cdef const uint8_t* po = view_ptr(offs)
    if n < 0:
        raise ValueError("offsets must hold n + 1 >= 1 entries")
    s.kind = SRC_OFFSETS32 if itemsize == 4 else SRC_OFFSETS64
    prev = load_offset(po, s.kind, 0)
    if prev < 0 or prev > data.shape[0]:
        raise ValueError(f"offsets[0] = {prev} outside data of {data.shape[0]} bytes")
    for i in range(1, n + 1):
        cur = load_offset(po, s.kind, i)
        if cur < prev or cur > data.shape[0]:
            raise ValueError(f"offsets[{i}] = {cur} is below offsets[{i - 1}] = {prev} "
                             f"or past the end of data ({data.shape[0]} bytes)")
        prev = cur
    s.data = view_ptr(data)
    s.offsets = po
    s.width = 0
    s.n = n
    s.seed = seed
    return 0


cdef int _offsets_itemsize(offsets) except -1:
    try:
        mv = memoryview(offsets)
    except TypeError:
        raise TypeError(f"offsets must be an int32 or int64 numpy array, "
                        f"got {type(offsets).__name__}") from None
    if mv.ndim != 1 or mv.itemsize not in (4, 8) or mv.format[-1:] not in ("i", "l", "q"):
        raise TypeError(f"offsets must be a 1-D int32 or int64 array "
                        f"(got format {mv.format!r}, itemsize {mv.itemsize}, ndim {mv.ndim})")
    return mv.itemsize


cdef uint64_t _num_blocks(const uint8_t[::1] bits) except 0:
    cdef Py_ssize_t size = bits.shape[0]
    if size < 32 or size & (size - 1):
        raise ValueError(f"bitset must be a power of two >= 32 bytes, got {size}")
    return <uint64_t>(size // 32)


# ------------------------------------------------------------------------------ public API

def xxh64_bytes(data, uint64_t seed=0):
    """XXH64 of one buffer.

    Args:
        data: any C-contiguous buffer (bytes, bytearray, numpy array, Arrow Buffer).
        seed: the XXH64 seed (Parquet uses 0).

    Returns:
        The 64-bit hash as a Python int.
    """
    cdef const uint8_t[::1] raw = byte_view(data, "data")
    return xxh64_mem(view_ptr(raw), raw.shape[0], seed)


cdef object _hash_src(const Src* s):
    out = np.empty(s.n, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    if s.n:
        with nogil:
            hash_run(s, 0, s.n, &ov[0])
    return out


cdef object _insert_src(bitset, Src* s):
    cdef uint8_t[::1] bits = _writable_bytes_of(bitset)
    cdef uint64_t nblocks = _num_blocks(bits)
    if s.n:
        insert_src(&bits[0], nblocks, s)
    return None


cdef object _check_src(bitset, Src* s):
    cdef const uint8_t[::1] bits = byte_view(bitset, "bitset")
    cdef uint64_t nblocks = _num_blocks(bits)
    out = np.empty(s.n, dtype=np.bool_)
    cdef uint8_t[::1] ov = out.view(np.uint8)
    if s.n:
        with nogil:
            check_src(&bits[0], nblocks, s, &ov[0])
    return out


cdef uint8_t[::1] _writable_bytes_of(bitset):
    cdef const uint8_t[::1] ro = byte_view(bitset, "bitset")
    mv = memoryview(bitset)
    if mv.readonly:
        raise TypeError("bitset must be a writable buffer (numpy uint8 array, bytearray)")
    return mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv


def hash_fixed(values, Py_ssize_t width, uint64_t seed=0):
    """XXH64 of every ``width``-byte value of a fixed-width column.

    Args:
        values: C-contiguous buffer of ``n * width`` bytes: int32/float32 arrays (width 4),
            int64/float64 (8), uint8 ``(n, 12)`` INT96 or ``(n, k)`` FIXED_LEN_BYTE_ARRAY.
        width: bytes per value (4 and 8 take a short fixed path).
        seed: the XXH64 seed (Parquet uses 0).

    Returns:
        numpy uint64 array of ``n`` hashes.

    Raises:
        ValueError: the buffer length is not a multiple of ``width``.
        TypeError: ``values`` is not a C-contiguous buffer.
    """
    cdef Src s
    cdef const uint8_t[::1] raw = byte_view(values, "values")
    _fixed_src(&s, raw, width, seed)
    return _hash_src(&s)


def hash_byte_array(offsets, data, uint64_t seed=0):
    """XXH64 of every value of a BYTE_ARRAY column in Arrow layout (no length prefixes hashed).

    Args:
        offsets: int32 or int64 array of ``n + 1`` non-decreasing offsets into ``data``;
            ``offsets[0]`` may be non-zero (sliced Arrow arrays).
        data: the value bytes (any C-contiguous buffer).
        seed: the XXH64 seed (Parquet uses 0).

    Returns:
        numpy uint64 array of ``n`` hashes.

    Raises:
        ValueError: offsets decrease, are negative or point past ``data``.
        TypeError: offsets are not a 1-D int32/int64 array.
    """
    cdef Src s
    cdef int itemsize = _offsets_itemsize(offsets)
    cdef const uint8_t[::1] offs = byte_view(offsets, "offsets")
    cdef const uint8_t[::1] raw = byte_view(data, "data")
    _byte_array_src(&s, offs, itemsize, raw, seed)
    return _hash_src(&s)


def insert_hashes(bitset, hashes):
    """Insert 64-bit hashes into a split-block filter.

    Args:
        bitset: writable buffer (numpy uint8) of a power of two >= 32 bytes.
        hashes: buffer of ``n`` uint64 hashes (numpy uint64).

    Raises:
        ValueError: bad bitset size, or ``hashes`` not a whole number of uint64s.
        TypeError: ``bitset`` is read-only or not a buffer.
    """
    cdef Src s
    cdef const uint8_t[::1] raw = byte_view(hashes, "hashes")
    _fixed_src(&s, raw, 8, 0)
    s.kind = SRC_HASHES
    return _insert_src(bitset, &s)


def check_hashes(bitset, hashes):
    """Check 64-bit hashes against a split-block filter.

    Args:
        bitset: buffer of a power of two >= 32 bytes.
        hashes: buffer of ``n`` uint64 hashes.

    Returns:
        numpy bool array: False means the value was certainly never inserted.
    """
    cdef Src s
    cdef const uint8_t[::1] raw = byte_view(hashes, "hashes")
    _fixed_src(&s, raw, 8, 0)
    s.kind = SRC_HASHES
    return _check_src(bitset, &s)


def insert_fixed(bitset, values, Py_ssize_t width):
    """Hash fixed-width values (as :func:`hash_fixed`, seed 0) and insert them, in one pass.

    Args:
        bitset: writable buffer of a power of two >= 32 bytes.
        values: C-contiguous buffer of ``n * width`` bytes.
        width: bytes per value.
    """
    cdef Src s
    cdef const uint8_t[::1] raw = byte_view(values, "values")
    _fixed_src(&s, raw, width, 0)
    return _insert_src(bitset, &s)


def check_fixed(bitset, values, Py_ssize_t width):
    """Hash fixed-width values (seed 0) and check them, in one pass.

    Returns:
        numpy bool array of ``n`` answers.
    """
    cdef Src s
    cdef const uint8_t[::1] raw = byte_view(values, "values")
    _fixed_src(&s, raw, width, 0)
    return _check_src(bitset, &s)


def insert_byte_array(bitset, offsets, data):
    """Hash BYTE_ARRAY values (as :func:`hash_byte_array`, seed 0) and insert them, in one pass."""
    cdef Src s
    cdef int itemsize = _offsets_itemsize(offsets)
    cdef const uint8_t[::1] offs = byte_view(offsets, "offsets")
    cdef const uint8_t[::1] raw = byte_view(data, "data")
    _byte_array_src(&s, offs, itemsize, raw, 0)
    return _insert_src(bitset, &s)


def check_byte_array(bitset, offsets, data):
    """Hash BYTE_ARRAY values (seed 0) and check them, in one pass.

    Returns:
        numpy bool array of ``n`` answers.
    """
    cdef Src s
    cdef int itemsize = _offsets_itemsize(offsets)
    cdef const uint8_t[::1] offs = byte_view(offsets, "offsets")
    cdef const uint8_t[::1] raw = byte_view(data, "data")
    _byte_array_src(&s, offs, itemsize, raw, 0)
    return _check_src(bitset, &s)
