# cython: language_level=3
"""Distinct values: how many distinct 64-bit hashes an array holds (what bloom filters are
sized by), and the distinct values of Arrow columns (what value lists store).

``count_distinct``: one pass over an open-addressing set of the hashes themselves: the slot
is the top bits of the hash times the golden ratio, linear probing in a power-of-two table at
most half full, the slot of a hash a few positions ahead prefetched so cache misses overlap.
With ``limit`` it stops as soon as more than ``limit`` distinct hashes were seen (the table
is then sized for ``limit``, not for the whole array).

``ValueSet``: the distinct non-null values of one column, fed chunk by chunk straight from
Arrow buffers (arrowcol.pxd), fixed-width or binary, floats canonical; it stops taking values
once more than ``limit`` are distinct. Values are compared by their bytes (canonical for
floats), hashed (4 / 8-byte values by a 64-bit mixer, others by XXH64), kept in first-seen
order in one growable buffer.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

import numpy as np

from arrowcol cimport Col, col_valid, col_offset, canon_bits, col_fixed, col_binary
from buffer cimport load_u32, load_u64, store_u32, store_u64
from xxh64 cimport xxh64_mem


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MI_DISTINCT_PREFETCH(p) __builtin_prefetch((const void*)(p), 1, 1)
    #else
    #define MI_DISTINCT_PREFETCH(p) ((void)(p))
    #endif
    """
    void prefetch "MI_DISTINCT_PREFETCH"(const void* p) noexcept nogil


cdef enum:
    AHEAD = 16          # hashes ahead whose slot is prefetched


cdef inline uint64_t _home(uint64_t h, int shift) noexcept nogil:
    return (h * <uint64_t>0x9E3779B97F4A7C15) >> shift   # Fibonacci hashing


@cython.boundscheck(False)
@cython.wraparound(False)
def count_distinct(const uint64_t[::1] hashes, Py_ssize_t limit=-1):
    """The number of distinct values in ``hashes`` (1-D uint64).

    With ``limit >= 0`` the count stops as soon as it exceeds ``limit``: the result is then
    ``limit + 1`` (only "more than ``limit``" is known).
    """
    cdef Py_ssize_t n = hashes.shape[0], i, bound = n
    cdef uint64_t cap = 16, mask, slot, h
    cdef int shift = 60
    cdef uint64_t* table
    cdef Py_ssize_t count = 0
    cdef bint zero = False
    if n == 0:
        return 0
    if 0 <= limit < n:
        bound = limit + 1
    while cap < 2 * <uint64_t>bound:
        cap <<= 1
        shift -= 1
    table = <uint64_t*>calloc(cap, sizeof(uint64_t))
    if table == NULL:
        raise MemoryError()
    mask = cap - 1
    with nogil:
        for i in range(n):
            if i + AHEAD < n:
                prefetch(table + _home(hashes[i + AHEAD], shift))
            h = hashes[i]
            if h == 0:          # 0 marks an empty slot: counted apart
                zero = True
            else:
                slot = _home(h, shift)
                while table[slot] != 0 and table[slot] != h:
                    slot = (slot + 1) & mask
                if table[slot] == 0:
                    table[slot] = h
                    count += 1
            if count + zero >= bound and bound < n:   # more than limit: stop
                break
    free(table)
    return min(count + zero, bound)


# ------------------------------------------------------------------------------ ValueSet

cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    """MurmurHash3's 64-bit finaliser."""
    x ^= x >> 33
    x *= <uint64_t>0xFF51AFD7ED558CCD
    x ^= x >> 33
    x *= <uint64_t>0xC4CEB9FE1A85EC53
    return x ^ (x >> 33)


cdef inline uint64_t _short_hash(uint64_t x, Py_ssize_t length) noexcept nogil:
    """The slot hash of a value of at most 8 bytes, ``x`` (zero-extended)."""
    return _mix(x ^ (<uint64_t>length * <uint64_t>0x9E3779B97F4A7C15))


cdef inline uint64_t _upto8(const uint8_t* p, Py_ssize_t n, const uint8_t* end) noexcept nogil:
    """The ``n <= 8`` bytes at ``p`` as a zero-extended little-endian integer; reads no byte
    at or past ``end`` (one 8-byte load when 8 bytes are readable)."""
    cdef uint64_t x = 0
    if end - p >= 8:
        x = load_u64(p)
        return x if n == 8 else x & ((<uint64_t>1 << (8 * n)) - 1)
    memcpy(&x, p, n)
    return x


cdef struct Slot:
    uint64_t hash
    uint64_t x              # a value of <= 8 bytes as an integer (compared without `store`)
    int64_t length
    int64_t index           # into the stored values; -1 = empty


cdef enum:
    SLACK = 8               # bytes kept past the stored values: 8-byte loads never overrun


@cython.final
cdef class ValueSet:
    """The distinct non-null values of one column, up to ``limit`` of them.

    Args:
        width: bytes per value for fixed-width columns, 0 for binary / string columns.
        canon: 4 / 8 when the values are float32 / float64 (compared canonical), else 0.
        limit: the most distinct values wanted; once one more is seen the set stops taking
            values and :attr:`overflow` is True.

    Feed every chunk of the column with :meth:`add_fixed` / :meth:`add_binary` (their Arrow
    buffers, offset and length); :meth:`values` gives the distinct values in first-seen order.
    Values of at most 8 bytes are hashed and compared as one integer; longer ones by XXH64
    and ``memcmp``.
    """

    cdef Py_ssize_t width, limit, count, cap, size, space
    cdef int canon
    cdef bint full
    cdef Slot* slots
    cdef uint8_t* store         # the values' bytes, back to back (+ SLACK)
    cdef int64_t* starts        # count + 1 positions into store

    def __cinit__(self, Py_ssize_t width, int canon=0, Py_ssize_t limit=100):
        cdef Py_ssize_t i
        if width < 0:
            raise ValueError(f"width must be >= 0, got {width}")
        if canon not in (0, 4, 8) or (canon and canon != width):
            raise ValueError(f"canon must be 0 or the float width, got {canon} for width {width}")
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        self.width, self.canon, self.limit = width, canon, limit
        self.count = self.size = 0
        self.full = False
        self.cap = 16
        self.space = 256
        self.slots = <Slot*>malloc(self.cap * sizeof(Slot))
        self.store = <uint8_t*>calloc(self.space + SLACK, 1)
        self.starts = <int64_t*>malloc(self.cap * sizeof(int64_t))
        if self.slots == NULL or self.store == NULL or self.starts == NULL:
            raise MemoryError()
        for i in range(self.cap):
            self.slots[i].index = -1
        self.starts[0] = 0

    def __dealloc__(self):
        free(self.slots)
        free(self.store)
        free(self.starts)

    @property
    def overflow(self) -> bool:
        """True once more than ``limit`` distinct values were seen."""
        return self.full

    def __len__(self):
        return self.count

    cdef int _grow_table(self) except -1 nogil:
        cdef Py_ssize_t cap = self.cap * 2, i, slot
        cdef Slot* slots = <Slot*>malloc(cap * sizeof(Slot))
        cdef int64_t* starts = <int64_t*>realloc(self.starts, cap * sizeof(int64_t))
        if starts != NULL:
            self.starts = starts
        if slots == NULL or starts == NULL:
            free(slots)
            with gil:
                raise MemoryError()
        for i in range(cap):
            slots[i].index = -1
        for i in range(self.cap):
            if self.slots[i].index >= 0:
                slot = self.slots[i].hash & (cap - 1)
                while slots[slot].index >= 0:
                    slot = (slot + 1) & (cap - 1)
                slots[slot] = self.slots[i]
        free(self.slots)
        self.slots = slots
        self.cap = cap
        return 0

    cdef int _insert(self, const uint8_t* p, Py_ssize_t length, uint64_t h,
                     uint64_t x) except -1 nogil:
        """Add one value (``length`` bytes at ``p``, slot hash ``h``; ``x`` its bytes as an
        integer when ``length <= 8``) unless it is there already."""
        cdef Py_ssize_t slot = h & (self.cap - 1)
        cdef uint8_t* grown
        cdef Slot* e = self.slots + slot
        while e.index >= 0:
            if e.hash == h and e.length == length:
                if length <= 8:
                    if e.x == x:
                        return 0
                elif memcmp(p, self.store + self.starts[e.index], length) == 0:
                    return 0
            slot = (slot + 1) & (self.cap - 1)
            e = self.slots + slot
        if self.count == self.limit:
            self.full = True
            return 0
        if self.size + length > self.space:
            while self.size + length > self.space:
                self.space *= 2
            grown = <uint8_t*>realloc(self.store, self.space + SLACK)
            if grown == NULL:
                with gil:
                    raise MemoryError()
            self.store = grown
        memcpy(self.store + self.size, p, length)
        self.size += length
        e.hash, e.x, e.length, e.index = h, x, length, self.count
        self.count += 1
        self.starts[self.count] = self.size
        if 2 * self.count > self.cap:
            self._grow_table()
        return 0

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef int _add(self, const Col* c) except -1 nogil:
        # One loop per layout so the width tests stay out of the per-value path. A run of
        # one value (sorted or clustered data) is looked up once.
        cdef Py_ssize_t i, length, last_len = -1
        cdef const uint8_t* p
        cdef const uint8_t* last = NULL
        cdef const uint8_t* end
        cdef uint8_t buf[8]
        cdef uint64_t x, prev = 0
        cdef int64_t a, b
        if c.n == 0:
            return 0
        if 0 < c.width <= 8:
            for i in range(c.offset, c.offset + c.n):
                if c.validity != NULL and not (c.validity[i >> 3] >> (i & 7)) & 1:
                    continue
                p = c.values + c.width * i
                if c.width == 8:
                    x = load_u64(p)
                elif c.width == 4:
                    x = load_u32(p)
                else:
                    x = 0
                    memcpy(&x, p, c.width)
                if c.canon:
                    x = canon_bits(x, c.canon)
                if last_len >= 0 and x == prev:
                    continue
                last_len, prev = c.width, x
                store_u64(buf, x)           # little-endian: the value's bytes come first
                self._insert(buf, c.width, _short_hash(x, c.width), x)
                if self.full:
                    return 0
        elif c.width:
            for i in range(c.offset, c.offset + c.n):
                if c.validity != NULL and not (c.validity[i >> 3] >> (i & 7)) & 1:
                    continue
                p = c.values + c.width * i
                if last != NULL and memcmp(p, last, c.width) == 0:
                    continue
                last = p
                self._insert(p, c.width, xxh64_mem(p, c.width, 0), 0)
                if self.full:
                    return 0
        else:
            end = c.data + c.data_len
            b = col_offset(c, 0)
            for i in range(c.n):
                a = b
                b = col_offset(c, i + 1)
                if not col_valid(c, i):
                    continue
                p = c.data + a
                length = b - a
                if length <= 8:
                    x = _upto8(p, length, end)
                    if length == last_len and x == prev:
                        continue
                    last_len, prev = length, x
                    self._insert(p, length, _short_hash(x, length), x)
                else:
                    if length == last_len and memcmp(p, last, length) == 0:
                        continue
                    last, last_len = p, length
                    self._insert(p, length, xxh64_mem(p, length, 0), 0)
                if self.full:
                    return 0
        return 0

    def add_fixed(self, validity, values, Py_ssize_t offset, Py_ssize_t length):
        """Add the non-null values of a fixed-width Arrow array (its validity bitmap or None,
        its value buffer, offset and length). Returns False once the set overflowed."""
        cdef Col c
        cdef list keep = []
        if not self.width:
            raise TypeError("this ValueSet holds binary values: use add_binary")
        col_fixed(&c, validity, values, offset, length, self.width, self.canon, keep)
        with nogil:
            self._add(&c)
        return not self.full

    def add_binary(self, validity, offsets, int offset_width, data, Py_ssize_t offset,
                   Py_ssize_t length):
        """Add the non-null values of a binary / string Arrow array (``offset_width``: 4 or
        8 bytes per offset). Returns False once the set overflowed."""
        cdef Col c
        cdef list keep = []
        if self.width:
            raise TypeError("this ValueSet holds fixed-width values: use add_fixed")
        col_binary(&c, validity, offsets, offset_width, data, offset, length, keep)
        with nogil:
            self._add(&c)
        return not self.full

    def packed(self):
        """:meth:`values` with int32 ends: ``(data, None)`` for fixed-width values,
        ``(data, ends)`` for binary ones, ``ends`` the ``len`` values' end offsets into
        ``data`` as int32 little-endian bytes (no leading 0).

        Raises:
            OverflowError: binary values of 2 GiB or more (past int32 offsets).
        """
        cdef Py_ssize_t k
        cdef uint8_t* e
        data = (<char*>self.store)[:self.size]
        if self.width:
            return data, None
        if self.size >= (<int64_t>1 << 31):
            raise OverflowError("the values pass int32 offsets")
        ends = PyBytes_FromStringAndSize(NULL, self.count * 4)
        e = <uint8_t*>PyBytes_AS_STRING(ends)
        for k in range(self.count):
            store_u32(e + 4 * k, <uint32_t>self.starts[k + 1])
        return data, ends

    def values(self):
        """The distinct values in first-seen order: ``(data, None)`` for fixed-width values
        (``len * width`` bytes), ``(data, offsets)`` for binary ones (int64 numpy offsets,
        ``len + 1`` of them). Floats are in canonical form."""
        data = (<char*>self.store)[:self.size]
        if self.width:
            return data, None
        offsets = np.empty(self.count + 1, np.int64)
        cdef int64_t[::1] ov = offsets
        memcpy(&ov[0], self.starts, (self.count + 1) * sizeof(int64_t))
        return data, offsets
