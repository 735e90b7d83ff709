# cython: language_level=3
"""Dictionary building (write side) and dictionary gathering (read side).

Building: an open-addressing hash table in C (linear probing, 16-byte slots, load <= 1/4, or
<= 1/2 once the table passes 512 KiB) maps each distinct value to its index; entries are kept
in first-occurrence order. Values are compared by their bytes, so floats are keyed by bit
pattern (-0.0 and 0.0 are distinct entries, as are NaNs with different payloads) and every
value round-trips bit-exactly. Values of 4 or 8 bytes, and BYTE_ARRAY values of <= 8 bytes
(with their length), are stored in the slot itself: one slot read decides a lookup. INT96 /
FIXED_LEN_BYTE_ARRAY slots hold a hash, confirmed with memcmp; longer BYTE_ARRAY slots hold hash
bits, the length and the value's start in the key buffer, so a match costs one memcmp and no
offsets lookup. BYTE_ARRAY values are hashed a batch ahead and their slots prefetched, so cache
misses on a large table overlap.

The size limit is the PLAIN-encoded dictionary page size (4-byte length + bytes per
BYTE_ARRAY entry, the value width otherwise), as parquet-java and Arrow count it. An ``add``
that would pass it returns None and leaves the builder as it was before that call.

Gathering (``take``) checks each index against the dictionary size before reading its value
(dictionary-encoded BYTE_ARRAY pages into a chunk's sink: bindict.pyx).
"""

from libc.stdint cimport uint8_t, int32_t, uint32_t, int64_t, uint64_t, INT32_MAX
from libc.string cimport memcpy, memcmp
from libc.stdlib cimport malloc, realloc, free

cimport cython
import numpy as np

from buffer cimport (WBuf, wb_init, wb_free, wb_reserve, load_u32, load_u64, store_u32,
                     store_u64)
from physical cimport (PT_BOOLEAN, PT_INT32, PT_INT64, PT_FLOAT, PT_DOUBLE, PT_BYTE_ARRAY,
                       PT_FIXED_LEN_BYTE_ARRAY, require_fixed_width, view_ptr, fixed_bytes,
                       binary_values, out_bytes)

from metaindex.errors import DecodeError

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define MI_DICT_PREFETCH(p) __builtin_prefetch((p), 0, 3)
    #else
    #define MI_DICT_PREFETCH(p) ((void)(p))
    #endif
    #define MI_DICT_NO_META 0xFFFFFFFFu
    """
    void prefetch "MI_DICT_PREFETCH"(const void* p) noexcept nogil
    const uint32_t NO_META "MI_DICT_NO_META"    # meta of an empty slot: matches no value


cdef enum:
    MAX_ENTRIES = 0x7FFFFFFE
    BATCH = 16              # values hashed (and their slots prefetched) ahead of the probes
    SHORT = 8               # BYTE_ARRAY values of <= SHORT bytes live in the slot itself
    SMALL_TABLE = 1 << 15   # slots (512 KiB) up to which the load stays <= 1/4


cdef struct Slot:
    # 4 / 8-byte values: key = the value. INT96 / FIXED_LEN_BYTE_ARRAY: key = hash.
    # BYTE_ARRAY of <= 8 bytes: key = the bytes (zero-padded), meta = length: equal key and
    # meta = equal value. Longer BYTE_ARRAY: key = start offset in ``keys`` << 32 | low 32 bits
    # of the hash, meta = length; a match is confirmed with one memcmp (no offsets lookup).
    uint64_t key
    int32_t idx         # entry index, -1 when empty
    uint32_t meta       # BYTE_ARRAY length, 0 for fixed widths, NO_META when empty


# Random per process: the table layout (never the output) depends on it, and data cannot be
# chosen to collide (fmix64 alone is invertible).
cdef uint64_t HASH_SEED = <uint64_t>(np.random.SeedSequence().entropy & 0xFFFFFFFFFFFFFFFF)


cdef inline uint64_t fmix64(uint64_t h) noexcept nogil:
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h


cdef inline uint64_t hash_bytes(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """A simple multiply-xor hash over 8-byte words, finished with fmix64."""
    cdef uint64_t h = HASH_SEED ^ (<uint64_t>n * 0xC2B2AE3D27D4EB4FULL)
    cdef uint64_t tail = 0
    if 8 < n <= 16:     # two overlapping loads, no byte loop or variable-length copy
        h = (h ^ load_u64(p)) * 0x87C37B91114253D5ULL
        h ^= h >> 31
        h = (h ^ load_u64(p + n - 8)) * 0x87C37B91114253D5ULL
        return fmix64(h)
    while n >= 8:
        h = (h ^ load_u64(p)) * 0x87C37B91114253D5ULL
        h ^= h >> 31
        p += 8
        n -= 8
    if n:
        memcpy(&tail, p, n)
        h = (h ^ tail) * 0x87C37B91114253D5ULL
    return fmix64(h)


cdef inline bint same_bytes(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """``memcmp(a, b, n) == 0``; values of 8 to 16 bytes as two overlapping word compares."""
    if 8 <= n <= 16:
        return load_u64(a) == load_u64(b) and load_u64(a + n - 8) == load_u64(b + n - 8)
    return memcmp(a, b, n) == 0


cdef inline uint64_t short_key(const uint8_t* p, Py_ssize_t n, Py_ssize_t room) noexcept nogil:
    """The ``n <= 8`` bytes at ``p`` as a zero-padded little-endian word; one 8-byte load when
    ``room`` (bytes readable from ``p``) allows it."""
    cdef uint64_t k = 0
    if room >= 8:
        k = load_u64(p)
        return k if n == 8 else k & ((<uint64_t>1 << (8 * n)) - 1)
    memcpy(&k, p, n)
    return k


cdef inline uint64_t short_hash(uint64_t key, Py_ssize_t n) noexcept nogil:
    return fmix64(key ^ HASH_SEED ^ (<uint64_t>n * 0x9E3779B97F4A7C15ULL))


cdef inline uint64_t load_narrow(const uint8_t* p, Py_ssize_t width) noexcept nogil:
    return load_u32(p) if width == 4 else load_u64(p)


cdef class DictionaryBuilder:
    """Incremental dictionary of one column chunk: ``add`` each page's values in turn.

    Args:
        physical_type: any physical type but BOOLEAN (0).
        type_length: value width for FIXED_LEN_BYTE_ARRAY (7).
        max_dict_bytes: limit on the PLAIN-encoded dictionary page size (< 2**31).
    """

    cdef readonly int physical_type
    cdef readonly Py_ssize_t type_length
    cdef readonly Py_ssize_t max_dict_bytes
    cdef readonly Py_ssize_t num_entries
    cdef readonly Py_ssize_t plain_size
    cdef Py_ssize_t width       # bytes per value, 0 for BYTE_ARRAY
    cdef bint narrow            # width 4 or 8: the key is the value
    cdef Slot* slots
    cdef Py_ssize_t cap         # slots, a power of two
    cdef int shift              # 64 - log2(cap)
    cdef uint64_t* hashes       # per entry
    cdef int64_t* offsets       # BYTE_ARRAY: entry i is keys[offsets[i]:offsets[i + 1]]
    cdef Py_ssize_t entries_cap
    cdef WBuf keys

    def __cinit__(self, int physical_type, Py_ssize_t type_length=0,
                  Py_ssize_t max_dict_bytes=1024 * 1024):
        self.slots = NULL
        self.hashes = NULL
        self.offsets = NULL
        self.keys.data = NULL
        if physical_type == PT_BOOLEAN:
            raise TypeError("BOOLEAN columns are never dictionary-encoded")
        if physical_type == PT_BYTE_ARRAY:
            self.width = 0
        else:
            self.width = require_fixed_width(physical_type, type_length)
        if max_dict_bytes < 0 or max_dict_bytes > INT32_MAX:
            raise ValueError(f"max_dict_bytes must be in [0, 2**31), got {max_dict_bytes}")
        self.physical_type = physical_type
        self.type_length = type_length if physical_type == PT_FIXED_LEN_BYTE_ARRAY else 0
        self.max_dict_bytes = max_dict_bytes
        self.narrow = self.width == 4 or self.width == 8
        wb_init(&self.keys, 1024)
        self.grow_entries(64)
        self.rehash(64)

    def __dealloc__(self):
        free(self.slots)
        free(self.hashes)
        free(self.offsets)
        wb_free(&self.keys)

    cdef int grow_entries(self, Py_ssize_t cap) except -1:
        cdef uint64_t* h = <uint64_t*>realloc(self.hashes, cap * sizeof(uint64_t))
        if h == NULL:
            raise MemoryError()
        self.hashes = h
        cdef int64_t* o = <int64_t*>realloc(self.offsets, (cap + 1) * sizeof(int64_t))
        if o == NULL:
            raise MemoryError()
        self.offsets = o
        if self.entries_cap == 0:
            self.offsets[0] = 0
        self.entries_cap = cap
        return 0

    cdef inline void fill_slot(self, Slot* s, int64_t e) noexcept nogil:
        """Key and meta of entry ``e``, from its stored bytes (the one definition of both)."""
        cdef int64_t start
        cdef Py_ssize_t n
        s.idx = <int32_t>e
        if self.width == 0:
            start = self.offsets[e]
            n = self.offsets[e + 1] - start
            s.meta = <uint32_t>n
            if n <= SHORT:
                s.key = short_key(self.keys.data + start, n, self.keys.len - start)
            else:
                s.key = (<uint64_t>start << 32) | (self.hashes[e] & 0xFFFFFFFFULL)
        else:
            s.meta = 0
            s.key = (load_narrow(self.keys.data + e * self.width, self.width)
                     if self.narrow else self.hashes[e])

    cdef int rehash(self, Py_ssize_t cap) except -1:
        """New table of ``cap`` slots, entries reinserted in index order."""
        cdef Slot* s = <Slot*>malloc(cap * sizeof(Slot))
        cdef Py_ssize_t i, pos, mask = cap - 1
        cdef int bits = 0
        if s == NULL:
            raise MemoryError()
        while (<Py_ssize_t>1 << bits) < cap:
            bits += 1
        for i in range(cap):
            s[i].idx = -1
            s[i].meta = NO_META
        self.shift = 64 - bits
        for i in range(self.num_entries):
            pos = <Py_ssize_t>(self.hashes[i] >> self.shift)
            while s[pos].idx >= 0:
                pos = (pos + 1) & mask
            self.fill_slot(&s[pos], i)
        free(self.slots)
        self.slots = s
        self.cap = cap
        return 0

    cdef int64_t insert(self, uint64_t h, const uint8_t* p, Py_ssize_t n) except -2:
        """Append a new entry (its bytes at ``p``); -1 when the size limit would pass.

        Everything that can fail (growing the table or the arrays) happens before the entry
        exists, so an exception leaves the builder consistent.
        """
        cdef Py_ssize_t e = self.num_entries
        cdef Py_ssize_t size = self.plain_size + (n + 4 if self.width == 0 else n)
        cdef Py_ssize_t pos, mask
        if size > self.max_dict_bytes or e >= MAX_ENTRIES:
            return -1
        # load <= 1/4 in a small table (short probes, few mispredictions), <= 1/2 once it is
        # larger than SMALL_TABLE slots (half the bytes, fewer cache misses)
        if 2 * (e + 1) > self.cap or (4 * (e + 1) > self.cap and self.cap <= SMALL_TABLE):
            self.rehash(2 * self.cap)
        if e == self.entries_cap:
            self.grow_entries(2 * e)
        wb_reserve(&self.keys, n)
        memcpy(self.keys.data + self.keys.len, p, n)
        self.keys.len += n
        self.offsets[e + 1] = self.keys.len
        self.hashes[e] = h
        self.num_entries = e + 1
        self.plain_size = size
        pos = <Py_ssize_t>(h >> self.shift)
        mask = self.cap - 1
        while self.slots[pos].idx >= 0:
            pos = (pos + 1) & mask
        self.fill_slot(&self.slots[pos], e)
        return e

    cdef void rollback(self, Py_ssize_t n_entries, Py_ssize_t plain) noexcept nogil:
        """Remove the entries added after the first ``n_entries`` (newest first, so that the
        linear-probing chains of the older entries stay intact)."""
        cdef Py_ssize_t e, pos, mask = self.cap - 1
        for e in range(self.num_entries - 1, n_entries - 1, -1):
            pos = <Py_ssize_t>(self.hashes[e] >> self.shift)
            while self.slots[pos].idx != e:
                pos = (pos + 1) & mask
            self.slots[pos].idx = -1
            self.slots[pos].meta = NO_META
        self.num_entries = n_entries
        self.plain_size = plain
        self.keys.len = self.offsets[n_entries] if self.width == 0 else n_entries * self.width

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef int add_narrow(self, const uint8_t* src, Py_ssize_t n, uint32_t* out) except -1:
        """Values of 4 or 8 bytes: the slot key is the value. Returns 1 if the limit passed."""
        cdef Py_ssize_t i, pos
        cdef Py_ssize_t w = self.width
        cdef uint64_t key, h
        cdef int64_t e
        # table fields cached in locals (stores to ``out`` would force reloads); refreshed
        # after every insert, which may rehash
        cdef Slot* s = self.slots
        cdef int shift = self.shift
        cdef Py_ssize_t mask = self.cap - 1
        for i in range(n):
            key = load_u32(src + 4 * i) if w == 4 else load_u64(src + 8 * i)
            h = fmix64(key ^ HASH_SEED)
            pos = <Py_ssize_t>(h >> shift)
            while True:
                e = s[pos].idx
                if s[pos].key == key and e >= 0:
                    break
                if e < 0:
                    e = self.insert(h, src + w * i, w)
                    if e < 0:
                        return 1
                    s = self.slots
                    shift = self.shift
                    mask = self.cap - 1
                    break
                pos = (pos + 1) & mask
            out[i] = <uint32_t>e
        return 0

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef int add_fixed_wide(self, const uint8_t* src, Py_ssize_t n, uint32_t* out) except -1:
        """INT96 / FIXED_LEN_BYTE_ARRAY: hash + memcmp. Returns 1 if the limit passed."""
        cdef Py_ssize_t i, pos, w = self.width
        cdef const uint8_t* p
        cdef uint64_t h
        cdef int64_t e
        cdef Slot* s = self.slots
        cdef int shift = self.shift
        cdef Py_ssize_t mask = self.cap - 1
        for i in range(n):
            p = src + i * w
            h = hash_bytes(p, w)
            pos = <Py_ssize_t>(h >> shift)
            while True:
                e = s[pos].idx
                if e < 0:
                    e = self.insert(h, p, w)
                    if e < 0:
                        return 1
                    s = self.slots
                    shift = self.shift
                    mask = self.cap - 1
                    break
                if s[pos].key == h and memcmp(self.keys.data + e * w, p, w) == 0:
                    break
                pos = (pos + 1) & mask
            out[i] = <uint32_t>e
        return 0

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef int add_binary(self, const uint8_t* data, Py_ssize_t size, const int64_t* offs,
                        Py_ssize_t n, uint32_t* out) except -1:
        """BYTE_ARRAY value i = data[offs[i]:offs[i+1]] (offsets checked by the caller).

        In batches: hash BATCH values and prefetch their slots, then probe them in order
        (first-occurrence order is kept). Values of <= 8 bytes are compared inside the slot;
        longer ones by the hash bits and length in the slot, then one memcmp at the slot's
        start offset. Returns 1 if the limit passed.
        """
        cdef uint64_t hs[BATCH]
        cdef uint64_t ks[BATCH]
        cdef Py_ssize_t i0, i, j, m, pos, length
        cdef int64_t start, e
        cdef uint64_t key, h
        cdef uint32_t meta
        cdef Slot* s = self.slots
        cdef int shift = self.shift
        cdef Py_ssize_t mask = self.cap - 1
        cdef const uint8_t* p
        i0 = 0
        while i0 < n:
            m = n - i0 if n - i0 < BATCH else BATCH
            for j in range(m):
                start = offs[i0 + j]
                length = offs[i0 + j + 1] - start
                if length <= SHORT:
                    key = short_key(data + start, length, size - start)
                    h = short_hash(key, length)
                else:
                    h = hash_bytes(data + start, length)
                    key = h & 0xFFFFFFFFULL
                ks[j] = key
                hs[j] = h
                prefetch(&s[<Py_ssize_t>(h >> shift)])
            for j in range(m):
                i = i0 + j
                start = offs[i]
                length = offs[i + 1] - start
                meta = <uint32_t>length
                key = ks[j]
                h = hs[j]
                p = data + start
                pos = <Py_ssize_t>(h >> shift)
                while True:
                    if s[pos].meta == meta and (
                            s[pos].key == key if length <= SHORT else
                            (s[pos].key & 0xFFFFFFFFULL) == key and
                            same_bytes(self.keys.data + (s[pos].key >> 32), p, length)):
                        e = s[pos].idx
                        break
                    if s[pos].idx < 0:
                        e = self.insert(h, p, length)
                        if e < 0:
                            return 1
                        s = self.slots
                        shift = self.shift
                        mask = self.cap - 1
                        break
                    pos = (pos + 1) & mask
                out[i] = <uint32_t>e
            i0 += m
        return 0

    def add(self, values):
        """Add one page's values.

        Args:
            values: values of the builder's physical type, in the conventions format.

        Returns:
            uint32 indices into the dictionary, one per value; None when the dictionary would
            pass ``max_dict_bytes`` (the builder is then left as it was before this call).
        """
        cdef const uint8_t[::1] raw
        cdef const int64_t[::1] offs
        cdef uint32_t[::1] out
        cdef Py_ssize_t n, old_n = self.num_entries, old_plain = self.plain_size
        cdef int over
        if self.width == 0:
            offsets, data = binary_values(values)
            offs = offsets
            raw = data
            n = offs.shape[0] - 1
        else:
            raw = fixed_bytes(values, self.width)
            n = raw.shape[0] // self.width
        indices = np.empty(n, dtype=np.uint32)
        if n == 0:
            return indices
        out = indices
        try:
            if self.width == 0:
                over = self.add_binary(view_ptr(raw), raw.shape[0], &offs[0], n, &out[0])
            elif self.narrow:
                over = self.add_narrow(&raw[0], n, &out[0])
            else:
                over = self.add_fixed_wide(&raw[0], n, &out[0])
        except BaseException:
            self.rollback(old_n, old_plain)
            raise
        if over:
            self.rollback(old_n, old_plain)
            return None
        return indices

    def dictionary(self):
        """The dictionary values in first-occurrence order, in the conventions format."""
        cdef Py_ssize_t n = self.num_entries, i
        cdef int32_t[::1] o
        data = np.empty(self.keys.len, dtype=np.uint8)
        if self.keys.len:
            memcpy(_ptr(data), self.keys.data, self.keys.len)
        if self.width == 0:
            offsets = np.empty(n + 1, dtype=np.int32)
            o = offsets
            for i in range(n + 1):
                o[i] = <int32_t>self.offsets[i]
            return offsets, data
        return _typed(data, self.physical_type, self.width)


cdef uint8_t* _ptr(object arr) except NULL:
    cdef uint8_t[::1] v = arr
    return &v[0]


cdef object _typed(object raw, int physical_type, Py_ssize_t width):
    """A uint8 array of whole values viewed in the conventions dtype / shape."""
    if physical_type == PT_INT32:
        return raw.view(np.int32)
    if physical_type == PT_INT64:
        return raw.view(np.int64)
    if physical_type == PT_FLOAT:
        return raw.view(np.float32)
    if physical_type == PT_DOUBLE:
        return raw.view(np.float64)
    return raw.reshape(-1, width)


def build_dictionary(values, int physical_type, Py_ssize_t type_length=0,
                     Py_ssize_t max_dict_bytes=1024 * 1024):
    """Dictionary-encode one batch of values.

    Args:
        values: values of ``physical_type`` in the conventions format.
        physical_type: any physical type but BOOLEAN.
        type_length: width of FIXED_LEN_BYTE_ARRAY values.
        max_dict_bytes: limit on the PLAIN-encoded dictionary page size.

    Returns:
        ``(dictionary_values, uint32 indices)``, or None when the dictionary would pass
        ``max_dict_bytes`` (the signal to fall back to a non-dictionary encoding).
    """
    builder = DictionaryBuilder(physical_type, type_length, max_dict_bytes)
    indices = builder.add(values)
    if indices is None:
        return None
    return builder.dictionary(), indices


# ------------------------------------------------------------------ take (dictionary decode)

cdef object as_indices(object indices):
    arr = np.asarray(indices)
    if arr.ndim != 1 or arr.dtype not in (np.uint32, np.int32):
        raise TypeError(f"indices must be a 1-D uint32 or int32 array, got dtype {arr.dtype} "
                        f"shape {arr.shape}")
    return np.ascontiguousarray(arr)


cdef int bad_index(object arr, Py_ssize_t i, Py_ssize_t size) except -1:
    raise DecodeError(f"dictionary index {int(arr[i])} at position {i} is out of range for a "
                      f"dictionary of {size} entries")


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object take_fixed(const uint8_t[::1] dic, object arr, Py_ssize_t width, int physical_type,
                       object into):
    """Gather fixed-width values; each index is checked before its value is read."""
    cdef const uint32_t[::1] idx = arr.view(np.uint32)
    cdef Py_ssize_t i, m = idx.shape[0], size = dic.shape[0] // width
    cdef uint32_t j
    out = np.empty(m * width, dtype=np.uint8) if into is None else out_bytes(into, m * width)
    cdef uint8_t[::1] o = out
    cdef const uint8_t* d = &dic[0] if dic.shape[0] else NULL
    cdef uint8_t* dst = &o[0] if m else NULL
    if width == 8:
        for i in range(m):
            j = idx[i]
            if j >= <uint64_t>size:
                bad_index(arr, i, size)
            store_u64(dst + 8 * i, load_u64(d + 8 * <Py_ssize_t>j))
    elif width == 4:
        for i in range(m):
            j = idx[i]
            if j >= <uint64_t>size:
                bad_index(arr, i, size)
            store_u32(dst + 4 * i, load_u32(d + 4 * <Py_ssize_t>j))
    else:
        for i in range(m):
            j = idx[i]
            if j >= <uint64_t>size:
                bad_index(arr, i, size)
            memcpy(dst + width * i, d + width * <Py_ssize_t>j, width)
    return _typed(out, physical_type, width) if into is None else into


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object take_binary(object dictionary_values, object arr):
    """Gather byte arrays: check indices and sum lengths, allocate once, then copy."""
    cdef const uint32_t[::1] idx = arr.view(np.uint32)
    cdef const int64_t[::1] off
    cdef const uint8_t[::1] dat
    cdef Py_ssize_t i, m = idx.shape[0], size, total = 0, pos = 0, length
    cdef int64_t start
    offsets, data = binary_values(dictionary_values)
    off = offsets
    dat = data
    size = off.shape[0] - 1
    for i in range(m):
        if idx[i] >= <uint64_t>size:
            bad_index(arr, i, size)
        total += off[idx[i] + 1] - off[idx[i]]
        if total > INT32_MAX:
            raise DecodeError(f"gathered values exceed 2**31 - 1 bytes at position {i}")
    out_offsets = np.empty(m + 1, dtype=np.int32)
    out_data = np.empty(total, dtype=np.uint8)
    cdef int32_t[::1] oo = out_offsets
    cdef uint8_t[::1] od = out_data
    oo[0] = 0
    for i in range(m):
        start = off[idx[i]]
        length = off[idx[i] + 1] - start
        if length:
            memcpy(&od[pos], &dat[start], length)
        pos += length
        oo[i + 1] = <int32_t>pos
    return out_offsets, out_data


def take(dictionary_values, indices, int physical_type, Py_ssize_t type_length=0, out=None):
    """Gather dictionary values by index (decode a dictionary-encoded page).

    Args:
        dictionary_values: the dictionary in the conventions format.
        indices: 1-D uint32 (or int32) indices.
        physical_type: any physical type but BOOLEAN.
        type_length: FIXED_LEN_BYTE_ARRAY width; 0 takes it from the dictionary's shape.
        out: fixed-width types only: a writable buffer of exactly ``len(indices) * width``
            bytes to gather into, returned in place of a new array.

    Returns:
        The values in the conventions format (BYTE_ARRAY: int32 offsets from 0 and data).

    Raises:
        DecodeError: an index outside the dictionary (each index is checked before its value
            is read; the error names the first bad index and its position), or BYTE_ARRAY output
            above 2**31 - 1 bytes.
    """
    cdef Py_ssize_t width
    arr = as_indices(indices)
    if physical_type == PT_BYTE_ARRAY:
        if out is not None:
            raise TypeError("out is only for fixed-width physical types")
        return take_binary(dictionary_values, arr)
    if physical_type == PT_BOOLEAN:
        raise TypeError("BOOLEAN columns are never dictionary-encoded")
    if physical_type == PT_FIXED_LEN_BYTE_ARRAY and type_length == 0:
        shape = getattr(dictionary_values, "shape", ())
        if len(shape) != 2:
            raise TypeError("give type_length or an (n, type_length) dictionary array")
        type_length = shape[1]
    width = require_fixed_width(physical_type, type_length)
    return take_fixed(fixed_bytes(dictionary_values, width), arr, width, physical_type, out)
