# cython: language_level=3
"""Dictionary-encoded BYTE_ARRAY pages straight into a chunk's sink (see binsink.pxd).

``BinaryDictionary`` prepares a chunk's dictionary once: each entry's start and length in one
word, in a table padded to a power of two; every entry checked against the data once (a bad
entry, like a padding one, is FLAGged: start 0, length 0 and a flag bit), and the data copied
with 16 zero bytes after it so that any entry can be read in whole 16-byte moves. When the
table covers every index of a page's bit width, its indices need no range check: the entries
they name are OR-ed as they are gathered, and a FLAG in the result refuses the page.
``decode_into`` reads a page's indices (the RLE / bit-packing hybrid, through ``rlerun.pxd``)
with no index array. When the dictionary's longest entry is at most twice its mean plus 16
bytes, a page takes one pass: the sink is claimed at the longest entry's length per value
plus 16 bytes, each batch of indices is gathered at once (entries of up to 16 bytes in one
16-byte move, four values at a time, no room check), and the bytes not taken are given back;
a bad page sets the sink back as it was and the two passes raise its exact error. The two
passes: the first checks every run and index and sums the bytes the page's values take; the
sink is claimed once at that size; the second gathers each value in 16-byte moves while the
sink's buffer has room for them, exact copies near its end.
``decode_spread_into`` does the same (one pass or two) for a nullable page whose validity bits
are known: the values go straight to their slots, each null slot's end offset being the one
before it (no packed offsets spread afterwards).
"""

cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, INT32_MAX
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from binsink cimport BinSlot, bin_claim, offset_t
from boolbits cimport popcount64
from buffer cimport Cursor, raise_decode
from physical cimport byte_view, view_cursor
from rlerun cimport Run, _indices_width, _next_run, _try_next_run, _unpack_batch

from metaindex.errors import DecodeError


cdef extern from *:
    """
    /* An entry: its start << 33 | its length (both under 2**31); FLAG (start 0, length 0)
       for an entry no page may name (a bad entry, or one past the dictionary in the table's
       power-of-two span). */
    #define MI_BD_FLAG (1ull << 32)
    #define MI_BD_ENTRY(s, n) (((uint64_t)(s) << 33) | (uint64_t)(n))
    #define MI_BD_START(e) ((Py_ssize_t)((e) >> 33))
    #define MI_BD_LEN(e) ((Py_ssize_t)(uint32_t)(e))
    """
    const uint64_t FLAG "MI_BD_FLAG"
    uint64_t ENTRY "MI_BD_ENTRY" (int32_t start, int32_t length) noexcept nogil
    Py_ssize_t START "MI_BD_START" (uint64_t e) noexcept nogil
    Py_ssize_t LEN "MI_BD_LEN" (uint64_t e) noexcept nogil


cdef enum:
    PAD = 16                # zero bytes after the dictionary's data: whole 16-byte moves
    BATCH = 512             # indices unpacked at a time from a bit-packed run
    ONE_PASS_LIMIT = 1 << 24  # the most bytes a page gathered in one pass claims


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _copy16(uint8_t* dst, const uint8_t* src, Py_ssize_t length) noexcept nogil:
    """``length`` bytes in 16-byte moves (at least one): the caller has 16 bytes of slack
    after both ends (the dictionary's data is padded, the claim's room covers the rest)."""
    cdef Py_ssize_t t = 0
    while True:
        memcpy(dst + t, src + t, 16)
        t += 16
        if t >= length:
            break


cdef inline uint32_t _top(const uint32_t* idx, Py_ssize_t m) noexcept nogil:
    """The largest of ``idx[:m]`` (branch-free: the compiler vectorises the max)."""
    cdef Py_ssize_t j
    cdef uint32_t top = 0
    for j in range(m):
        top = idx[j] if idx[j] > top else top
    return top


cdef class BinaryDictionary:
    """A chunk's BYTE_ARRAY dictionary, prepared for ``decode_into``.

    Args:
        offsets: the dictionary's int32 offsets (n + 1, as a dictionary page decodes to).
        data: its bytes.

    An entry whose offsets decrease or point outside the data is kept, marked: a page that
    names it raises DecodeError.
    """

    cdef uint64_t* ent          # ENTRY(start, length) each, ``span`` of them (FLAG: bad)
    cdef uint8_t* data          # the entries' bytes, then PAD zero bytes
    cdef readonly Py_ssize_t size
    cdef Py_ssize_t span        # entries in ``ent``: ``size`` up to a power of two, FLAGged
    cdef readonly Py_ssize_t nbytes
    cdef object bad             # messages of the bad entries, by index
    cdef Py_ssize_t longest     # the longest good entry's length

    def __cinit__(self, offsets, data):
        cdef const int32_t[::1] off = offsets
        cdef const uint8_t[::1] dat = byte_view(data)
        cdef Py_ssize_t i, n = dat.shape[0]
        cdef int32_t s, e
        self.ent = NULL
        self.data = NULL
        if off.shape[0] < 1:
            raise TypeError("dictionary offsets must hold at least one offset")
        self.size = off.shape[0] - 1
        self.nbytes = n
        self.bad = {}
        self.longest = 0
        self.span = 1
        while self.span < self.size:
            self.span <<= 1
        self.ent = <uint64_t*>malloc(self.span * sizeof(uint64_t))
        self.data = <uint8_t*>malloc(n + PAD)
        if self.ent == NULL or self.data == NULL:
            raise MemoryError()
        if n:
            memcpy(self.data, &dat[0], n)
        memset(self.data + n, 0, PAD)
        for i in range(self.size):
            s = off[i]
            e = off[i + 1]
            if s < 0 or e < s or e > n:
                self.ent[i] = FLAG
                self.bad[i] = f"dictionary entry {i} spans bytes [{s}, {e}) of {n}"
            else:
                self.ent[i] = ENTRY(s, e - s)
                if e - s > self.longest:
                    self.longest = e - s
        for i in range(self.size, self.span):
            self.ent[i] = FLAG

    cdef inline bint covers(self, int w) noexcept nogil:
        """Every index of ``w`` bits names an entry of the table (one past the dictionary is
        FLAGged): a page's indices need no range check, only the FLAG of what they name."""
        return w < 32 and (<Py_ssize_t>1 << w) <= self.span

    cdef Py_ssize_t one_pass_bytes(self, Py_ssize_t num_values):
        """The bytes to claim for a page of ``num_values`` values gathered in one pass (every
        value taken as long as the longest entry, and 16 bytes for the last whole-word move;
        what the page does not take is given back after), or -1 when the page must be
        gathered in two passes: a dictionary whose longest entry is far above its mean (the
        claim would overshoot), or a claim over ``ONE_PASS_LIMIT`` bytes. (A page naming a
        bad entry is refused by the one pass, then raised for by the two.)"""
        cdef Py_ssize_t claim
        if self.size == 0 or self.longest > 2 * (self.nbytes // self.size) + PAD:
            return -1
        claim = num_values * self.longest + PAD
        return claim if claim <= ONE_PASS_LIMIT else -1

    def __dealloc__(self):
        free(self.ent)
        free(self.data)

    cdef int bad_index(self, uint32_t j, Py_ssize_t at) except -1:
        if j >= <uint64_t>self.size:
            raise DecodeError(f"dictionary index {j} at position {at} is out of range for a "
                              f"dictionary of {self.size} entries")
        raise DecodeError(self.bad[j])

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef int64_t batch_bytes(self, const uint32_t* idx, Py_ssize_t m, Py_ssize_t at,
                             bint covered) except -1:
        """The bytes of entries ``idx[:m]`` (values ``at`` onwards), each index checked
        (``covered``: by the FLAG of its entry only, see ``covers``)."""
        cdef Py_ssize_t j
        cdef int64_t total = 0
        cdef uint64_t* ent = self.ent
        cdef uint64_t e, acc = 0
        if not covered and _top(idx, m) >= <uint64_t>self.size:
            for j in range(m):
                if idx[j] >= <uint64_t>self.size:
                    self.bad_index(idx[j], at + j)
        for j in range(m):
            e = ent[idx[j]]
            acc |= e
            total += LEN(e)
        if acc & FLAG:
            for j in range(m):
                if ent[idx[j]] & FLAG:
                    self.bad_index(idx[j], at + j)
        return total

    cdef int64_t page_bytes(self, Cursor* c, int w, Py_ssize_t num_values) except -1:
        """Pass 1: every run and index of the page checked; the bytes of its values."""
        cdef Run run
        cdef uint32_t idx[BATCH]
        cdef Py_ssize_t i = 0, k, off, m
        cdef int64_t total = 0, length
        cdef bint covered = self.covers(w)
        while i < num_values:
            if c.pos >= c.size:
                raise_decode(c, 1, f"RLE data ends after {i} of {num_values} values")
            _next_run(c, w, &run)
            k = run.count if run.count < num_values - i else num_values - i
            if run.rle:
                idx[0] = run.value
                length = self.batch_bytes(idx, 1, i, False)
                total += length * k
            else:
                off = 0
                while off < k:
                    m = _unpack_batch(&run, c, w, off, k, idx, BATCH)
                    total += self.batch_bytes(idx, m, i + off, covered)
                    off += m
            if total > INT32_MAX:
                raise DecodeError(f"a page's values exceed 2**31 - 1 bytes at value {i}")
            i += k
        return total


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline Py_ssize_t _put(uint8_t* dst, Py_ssize_t room, Py_ssize_t pos,
                            const uint8_t* src, Py_ssize_t length) noexcept nogil:
    """Copy one value to ``dst + pos``: in whole 16-byte moves (the source is padded) while
    the destination has room for them, else exactly. Returns the position after it."""
    cdef Py_ssize_t j = 0
    if pos + length + PAD <= room:
        while True:
            memcpy(dst + pos + j, src + j, 16)
            j += 16
            if j >= length:
                break
    elif length:
        memcpy(dst + pos, src, length)
    return pos + length


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _gather(offset_t* offs, const BinSlot* slot, Py_ssize_t* pos, const uint64_t* ent,
                  const uint8_t* data, const uint32_t* idx, Py_ssize_t m) noexcept nogil:
    """Entries ``idx[:m]`` (checked) and their end offsets into the slot from ``pos``."""
    cdef Py_ssize_t j, at = pos[0], room = slot.room
    cdef uint64_t e
    cdef uint8_t* dst = slot.data
    cdef int64_t base = slot.base
    for j in range(m):
        e = ent[idx[j]]
        at = _put(dst, room, at, data + START(e), LEN(e))
        offs[j] = <offset_t>(base + at)
    pos[0] = at


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _repeat(offset_t* offs, const BinSlot* slot, Py_ssize_t* pos, uint64_t e,
                  const uint8_t* data, Py_ssize_t k) noexcept nogil:
    """``k`` copies of one (checked) entry and their end offsets into the slot."""
    cdef Py_ssize_t j, at = pos[0], room = slot.room
    cdef const uint8_t* src = data + START(e)
    cdef Py_ssize_t length = LEN(e)
    cdef int64_t base = slot.base
    for j in range(k):
        at = _put(slot.data, room, at, src, length)
        offs[j] = <offset_t>(base + at)
    pos[0] = at


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _gather_page(offset_t* offs, const BinSlot* slot, Cursor c, int w,
                       Py_ssize_t num_values, const uint64_t* ent,
                       const uint8_t* data) noexcept nogil:
    """Pass 2: the page (every run checked by pass 1) gathered into the slot."""
    cdef Run run
    cdef uint32_t idx[BATCH]
    cdef Py_ssize_t i = 0, k, off, m, pos = 0
    while i < num_values:
        if _try_next_run(&c, w, &run) < 0:  # cannot fail: pass 1 read the same runs
            return
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            _repeat(offs + i, slot, &pos, ent[run.value], data, k)
        else:
            off = 0
            while off < k:
                m = _unpack_batch(&run, &c, w, off, k, idx, BATCH)
                _gather(offs + i + off, slot, &pos, ent, data, idx, m)
                off += m
        i += k


@cython.boundscheck(False)
@cython.wraparound(False)
cdef uint64_t _gather_padded(offset_t* offs, uint8_t* dst, int64_t base, Py_ssize_t* pos,
                             const uint64_t* ent, const uint8_t* data, const uint32_t* idx,
                             Py_ssize_t m, bint short) noexcept nogil:
    """``_gather`` into a slot with 16 bytes of room past every value (no room check):
    ``short`` (no entry over 16 bytes) copies each value in one 16-byte move. Returns the
    entries OR-ed together: FLAG set when one of them is not to be named (it was copied as
    an empty value, and the caller refuses the page)."""
    cdef Py_ssize_t j, at = pos[0], length, t
    cdef uint64_t e, e1, e2, e3, acc = 0
    cdef const uint8_t* src
    if short:
        j = 0
        while j + 4 <= m:  # four at a time: their entries loaded ahead of the moves
            e = ent[idx[j]]
            e1 = ent[idx[j + 1]]
            e2 = ent[idx[j + 2]]
            e3 = ent[idx[j + 3]]
            acc |= e | e1 | e2 | e3
            memcpy(dst + at, data + START(e), 16)
            at += LEN(e)
            offs[j] = <offset_t>(base + at)
            memcpy(dst + at, data + START(e1), 16)
            at += LEN(e1)
            offs[j + 1] = <offset_t>(base + at)
            memcpy(dst + at, data + START(e2), 16)
            at += LEN(e2)
            offs[j + 2] = <offset_t>(base + at)
            memcpy(dst + at, data + START(e3), 16)
            at += LEN(e3)
            offs[j + 3] = <offset_t>(base + at)
            j += 4
        while j < m:
            e = ent[idx[j]]
            acc |= e
            memcpy(dst + at, data + START(e), 16)
            at += LEN(e)
            offs[j] = <offset_t>(base + at)
            j += 1
    else:
        for j in range(m):
            e = ent[idx[j]]
            acc |= e
            src = data + START(e)
            length = LEN(e)
            _copy16(dst + at, src, length)
            at += length
            offs[j] = <offset_t>(base + at)
    pos[0] = at
    return acc


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _gather_page_once(offset_t* offs, const BinSlot* slot, Cursor* c, int w,
                                  Py_ssize_t num_values, const uint64_t* ent,
                                  const uint8_t* data, Py_ssize_t size, bint covered,
                                  Py_ssize_t longest) noexcept nogil:
    """Pass 1 and 2 at once, for a slot with room for every value at the longest entry's
    length plus 16 bytes: each run read and each batch of indices gathered in whole 16-byte
    moves, then checked (``covered``: by the FLAG of the entries named, else the indices
    first against ``size``). Returns the bytes written, or -1 at a run or index pass 1 would
    refuse (the caller then lets pass 1 raise its exact error)."""
    cdef Run run
    cdef uint32_t idx[BATCH]
    cdef Py_ssize_t i = 0, k, off, m, pos = 0
    cdef bint short = longest <= 16
    while i < num_values:
        if _try_next_run(c, w, &run) < 0:
            return -1
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            if run.value >= <uint64_t>size or ent[run.value] & FLAG:
                return -1
            _repeat(offs + i, slot, &pos, ent[run.value], data, k)
        else:
            off = 0
            while off < k:
                m = _unpack_batch(&run, c, w, off, k, idx, BATCH)
                if not covered and _top(idx, m) >= <uint64_t>size:
                    return -1
                if _gather_padded(offs + i + off, slot.data, slot.base, &pos, ent, data, idx,
                                  m, short) & FLAG:
                    return -1
                off += m
        i += k
    return pos


cdef Py_ssize_t _decode_once(Cursor c, int w, Py_ssize_t num_values,
                             BinaryDictionary dictionary, object sink,
                             Py_ssize_t claim) except -1:
    """``decode_into`` in one pass (see ``one_pass_bytes``): ``claim`` bytes are claimed, the
    page gathered, the bytes it did not take given back; returns the bytes of the page read.
    On a bad page the sink is set back as it was and 0 is returned: the two passes then
    raise the error."""
    cdef BinSlot slot
    cdef Py_ssize_t count = sink.count, size = sink.size, got
    cdef bint covered = dictionary.covers(w)
    bin_claim(sink, num_values, claim, &slot)
    with nogil:
        if slot.off32 != NULL:
            got = _gather_page_once(slot.off32, &slot, &c, w, num_values, dictionary.ent,
                                    dictionary.data, dictionary.size, covered,
                                    dictionary.longest)
        else:
            got = _gather_page_once(slot.off64, &slot, &c, w, num_values, dictionary.ent,
                                    dictionary.data, dictionary.size, covered,
                                    dictionary.longest)
    if got < 0:
        sink.count, sink.size = count, size
        return 0
    sink.size = size + got
    return c.pos + 1


def decode_into(data, Py_ssize_t num_values, BinaryDictionary dictionary, sink):
    """A dictionary-encoded page's BYTE_ARRAY values gathered straight into a chunk's sink
    (no index array, no arrays of the page's own).

    Args:
        data: the page's values section: one byte of bit width, then the RLE / bit-packing
            hybrid of the indices.
        num_values: values to decode (>= 0).
        dictionary: the chunk's dictionary.
        sink: the chunk's sink (binsink.pxd).

    Returns:
        The bytes of ``data`` read.

    Raises:
        DecodeError: a missing or too wide bit-width byte, a truncated or malformed run, an
            index outside the dictionary or naming a bad entry, values past 2**31 - 1 bytes
            in the page or past the chunk's value count; the sink is left as it was (its
            count and size: a page gathered in one pass may have written past them).
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    cdef Cursor start
    cdef BinSlot slot
    cdef int w
    cdef int64_t total
    cdef Py_ssize_t claim, got
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if num_values == 0:
        bin_claim(sink, 0, 0, &slot)
        return 0
    w = _indices_width(&c)
    claim = dictionary.one_pass_bytes(num_values)
    if claim >= 0 and claim <= sink.narrow_room:
        got = _decode_once(c, w, num_values, dictionary, sink, claim)
        if got:
            return got
    start = c
    total = dictionary.page_bytes(&c, w, num_values)
    bin_claim(sink, num_values, total, &slot)
    with nogil:
        if slot.off32 != NULL:
            _gather_page(slot.off32, &slot, start, w, num_values, dictionary.ent,
                         dictionary.data)
        else:
            _gather_page(slot.off64, &slot, start, w, num_values, dictionary.ent,
                         dictionary.data)
    return c.pos + 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _spread(offset_t* offs, const BinSlot* slot, Py_ssize_t* pos, Py_ssize_t* s,
                  const uint8_t* bm, Py_ssize_t first, const uint64_t* ent,
                  const uint8_t* data, const uint32_t* idx, Py_ssize_t m) noexcept nogil:
    """Entries ``idx[:m]`` (checked) to the next ``m`` valid slots from slot ``s``, the null
    slots before them ending where the value before ends. Null slots are branch-free where
    the buffer has room: the next value is copied anyway and counts only in a valid slot."""
    cdef Py_ssize_t j = 0, at = pos[0], slot_i = s[0], room = slot.room, length, b
    cdef uint64_t e, v
    cdef uint8_t* dst = slot.data
    cdef const uint8_t* src
    cdef int64_t base = slot.base
    while j < m:
        b = first + slot_i
        v = (bm[b >> 3] >> (b & 7)) & 1
        e = ent[idx[j]]
        length = LEN(e)
        src = data + START(e)
        if at + length + PAD <= room:
            _put(dst, room, at, src, length)
            at += length & -(<Py_ssize_t>v)
        elif v:
            at = _put(dst, room, at, src, length)
        j += v
        offs[slot_i] = <offset_t>(base + at)
        slot_i += 1
    pos[0] = at
    s[0] = slot_i


@cython.boundscheck(False)
@cython.wraparound(False)
cdef uint64_t _spread_padded(offset_t* offs, uint8_t* dst, int64_t base, Py_ssize_t* pos,
                             Py_ssize_t* s, const uint8_t* bm, Py_ssize_t first,
                             const uint64_t* ent, const uint8_t* data, const uint32_t* idx,
                             Py_ssize_t m, bint short) noexcept nogil:
    """``_spread`` into a slot with room for every value at the longest entry's length plus
    16 bytes (no room check; a null slot copies the next value where it will go anyway):
    ``short`` copies each value in one 16-byte move. Returns the entries OR-ed together, as
    ``_gather_padded``."""
    cdef Py_ssize_t j = 0, at = pos[0], si = s[0], b, t, length
    cdef uint64_t e, acc = 0
    cdef Py_ssize_t v
    cdef const uint8_t* src
    if short:
        while j < m:
            b = first + si
            v = (bm[b >> 3] >> (b & 7)) & 1
            e = ent[idx[j]]
            acc |= e
            memcpy(dst + at, data + START(e), 16)
            at += LEN(e) & -v
            j += v
            offs[si] = <offset_t>(base + at)
            si += 1
    else:
        while j < m:
            b = first + si
            v = (bm[b >> 3] >> (b & 7)) & 1
            e = ent[idx[j]]
            acc |= e
            src = data + START(e)
            length = LEN(e)
            _copy16(dst + at, src, length)
            at += length & -v
            j += v
            offs[si] = <offset_t>(base + at)
            si += 1
    pos[0] = at
    s[0] = si
    return acc


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _spread_page(offset_t* offs, const BinSlot* slot, Cursor* c, int w,
                             Py_ssize_t present, const uint8_t* bm, Py_ssize_t first,
                             Py_ssize_t n, const uint64_t* ent, const uint8_t* data,
                             Py_ssize_t size, bint covered, Py_ssize_t longest) noexcept nogil:
    """Pass 2 of ``decode_spread_into``: the page's values to their slots, then the null
    slots after the last value; returns the bytes written. ``size`` 0: every run was checked
    by pass 1; else (one pass: the slot has room for every value at ``longest`` bytes plus
    16, see ``one_pass_bytes``) each run and batch of indices of a dictionary of ``size``
    entries is checked here (as in ``_gather_page_once``), and -1 returned at one pass 1
    would refuse."""
    cdef Run run
    cdef uint32_t idx[BATCH]
    cdef Py_ssize_t i = 0, k, off, m, pos = 0, s = 0, j
    cdef bint short = longest <= 16
    while i < present:
        if _try_next_run(c, w, &run) < 0:  # with size 0 cannot fail: pass 1 read the runs
            return -1
        k = run.count if run.count < present - i else present - i
        if size and run.rle and (run.value >= <uint64_t>size or ent[run.value] & FLAG):
            return -1
        off = 0
        while off < k:
            if run.rle:
                m = k - off if k - off < BATCH else BATCH
                for j in range(m):
                    idx[j] = run.value
            else:
                m = _unpack_batch(&run, c, w, off, k, idx, BATCH)
                if size and not covered and _top(idx, m) >= <uint64_t>size:
                    return -1
            if not size:
                _spread(offs, slot, &pos, &s, bm, first, ent, data, idx, m)
            elif _spread_padded(offs, slot.data, slot.base, &pos, &s, bm, first, ent, data,
                                idx, m, short) & FLAG:
                return -1
            off += m
        i += k
    while s < n:
        offs[s] = <offset_t>(slot.base + pos)
        s += 1
    return pos


cdef Py_ssize_t _set_bits(const uint8_t* bm, Py_ssize_t first, Py_ssize_t n) noexcept nogil:
    """How many of bits ``[first, first + n)`` are set."""
    cdef Py_ssize_t b = first, end = first + n, count = 0
    cdef uint64_t word
    while b < end and (b & 7):
        count += (bm[b >> 3] >> (b & 7)) & 1
        b += 1
    while b + 64 <= end:
        memcpy(&word, bm + (b >> 3), 8)
        count += popcount64(word)
        b += 64
    while b + 8 <= end:
        count += popcount64(bm[b >> 3])
        b += 8
    while b < end:
        count += (bm[b >> 3] >> (b & 7)) & 1
        b += 1
    return count


def decode_spread_into(data, Py_ssize_t present, BinaryDictionary dictionary, sink,
                       const uint8_t[::1] bitmap, Py_ssize_t first, Py_ssize_t n):
    """A nullable dictionary-encoded page's values gathered straight into their slots.

    Args:
        data: the page's values section (as for ``decode_into``), ``present`` values.
        present: the page's non-null values.
        dictionary: the chunk's dictionary.
        sink: the chunk's sink (binsink.pxd); ``n`` slots are claimed.
        bitmap: the chunk's validity bitmap; bits ``[first, first + n)`` are the page's
            slots, ``present`` of them set.
        first: the page's first slot in the bitmap.
        n: the page's slots (values and nulls).

    Returns:
        The bytes of ``data`` read.

    Raises:
        DecodeError: as ``decode_into``, or set bits in the range other than ``present``;
            all found before anything is written.
        ValueError: a bitmap too small for the slots, or negative counts.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    cdef Cursor start = c
    cdef BinSlot slot
    cdef int w = 0
    cdef int64_t total = 0
    cdef Py_ssize_t claim, count, size, got
    cdef const uint8_t* bm
    cdef bint covered = False
    if n < 0 or present < 0 or first < 0 or first + n > 8 * bitmap.shape[0]:
        raise ValueError(f"a bitmap of {bitmap.shape[0]} bytes cannot hold slots {first} + {n}")
    bm = &bitmap[0] if bitmap.shape[0] else <const uint8_t*>b""
    if _set_bits(bm, first, n) != present:
        raise DecodeError(f"the page's validity bits set {_set_bits(bm, first, n)} of {n} "
                          f"slots, its values are {present}")
    if present:
        w = _indices_width(&c)
        start = c
        claim = dictionary.one_pass_bytes(present)
        covered = dictionary.covers(w)
        count, size = sink.count, sink.size
        if claim >= 0 and claim <= sink.narrow_room:  # one pass (see decode_into)
            bin_claim(sink, n, claim, &slot)
            with nogil:
                if slot.off32 != NULL:
                    got = _spread_page(slot.off32, &slot, &c, w, present, bm, first, n,
                                       dictionary.ent, dictionary.data, dictionary.size,
                                       covered, dictionary.longest)
                else:
                    got = _spread_page(slot.off64, &slot, &c, w, present, bm, first, n,
                                       dictionary.ent, dictionary.data, dictionary.size,
                                       covered, dictionary.longest)
            if got >= 0:
                sink.size = size + got
                return c.pos + 1
            sink.count, sink.size = count, size  # a bad page: the two passes raise
            c = start
        total = dictionary.page_bytes(&c, w, present)
    bin_claim(sink, n, total, &slot)
    if n == 0:
        return 0
    with nogil:
        if slot.off32 != NULL:
            _spread_page(slot.off32, &slot, &start, w, present, bm, first, n, dictionary.ent,
                         dictionary.data, 0, False, 0)
        else:
            _spread_page(slot.off64, &slot, &start, w, present, bm, first, n, dictionary.ent,
                         dictionary.data, 0, False, 0)
    return c.pos + 1 if present else 0
