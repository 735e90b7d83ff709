# cython: language_level=3
"""Page values straight into a column chunk's buffers (the reader's chunk decoder).

``decode_levels_bitmap``: definition levels of a max-level-1 column ORed into an Arrow validity
bitmap (no level array); ``decode_dictionary_into``: a dictionary-encoded page's fixed-width
values gathered into the chunk's value buffer (no index array). Both read the RLE /
bit-packing hybrid through ``rlerun.pxd``, every run checked before its bytes are used.
Gathers are in ``gather.pxd``: batches of indices checked by one branch-free max, and, for
4- and 8-byte values of dictionaries of up to 4,096 entries, bit-packed indices unpacked and
gathered at once from a padded copy of the dictionary (every index of up to 12 bits reads
inside it; the largest one is checked against the real size before the values count).
"""

cimport cython
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memmove, memset

from buffer cimport (Cursor, cur_make, raise_decode, load_u32, load_u64,
                     store_u32, store_u64)
from boolbits cimport popcount64
from physical cimport byte_view, view_cursor, out_bytes
from rlerun cimport Run, _next_run, _try_next_run, _unpack_batch, _prefixed, _indices_width
from gather cimport PAD_BITS, mi_gather, mi_unpack_gather, unpack_gather_groups

import numpy as np

from metaindex.errors import DecodeError


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline Py_ssize_t _or_bits(uint8_t* bm, Py_ssize_t bm_len, Py_ssize_t pos,
                                const uint8_t* src, Py_ssize_t n) noexcept nogil:
    """OR ``n`` LSB-first bits of ``src`` into ``bm`` at bit ``pos``; returns how many are set.
    The caller has checked that ``bm`` holds bit ``pos + n - 1`` and ``src`` ceil(n / 8)
    bytes."""
    cdef Py_ssize_t i = 0, full = n >> 3, q = pos >> 3, count = 0
    cdef int s = pos & 7
    cdef uint8_t b
    cdef uint64_t w
    # whole words while the destination (with its carry byte) has room
    while i + 8 <= full and q + i + 9 <= bm_len:
        w = load_u64(src + i)
        count += popcount64(w)
        store_u64(bm + q + i, load_u64(bm + q + i) | (w << s))
        if s:
            bm[q + i + 8] |= <uint8_t>(w >> (64 - s))
        i += 8
    while i < full + ((n & 7) != 0):
        b = src[i]
        if i == full:
            b &= <uint8_t>((1 << (n & 7)) - 1)
        count += popcount64(b)
        bm[q + i] |= <uint8_t>(b << s)
        if s and q + i + 1 < bm_len:
            bm[q + i + 1] |= <uint8_t>(b >> (8 - s))
        i += 1
    return count


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _set_bits(uint8_t* bm, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """Set bits [pos, pos + n) of ``bm`` (checked by the caller)."""
    cdef Py_ssize_t end = pos + n
    while pos < end and (pos & 7):
        bm[pos >> 3] |= <uint8_t>(1 << (pos & 7))
        pos += 1
    if end - pos >= 8:
        memset(bm + (pos >> 3), 0xFF, (end - pos) >> 3)
        pos += ((end - pos) >> 3) << 3
    while pos < end:
        bm[pos >> 3] |= <uint8_t>(1 << (pos & 7))
        pos += 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _set_run(uint8_t* bm, Py_ssize_t bm_len, Py_ssize_t pos,
                          Py_ssize_t n) noexcept nogil:
    """``_set_bits`` with a short run (the common case: runs between nulls) as one 64-bit
    OR where the bitmap has 8 bytes of room."""
    cdef Py_ssize_t q = pos >> 3
    if n <= 56 and q + 8 <= bm_len:
        store_u64(bm + q, load_u64(bm + q) | ((((<uint64_t>1) << n) - 1) << (pos & 7)))
    else:
        _set_bits(bm, pos, n)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline Py_ssize_t _or_run(uint8_t* bm, Py_ssize_t bm_len, Py_ssize_t pos,
                               const uint8_t* src, Py_ssize_t src_room,
                               Py_ssize_t n) noexcept nogil:
    """``_or_bits`` with a short bit-packed run as one 64-bit load, mask and OR where both
    buffers have 8 bytes of room (``src_room``: bytes readable from ``src``)."""
    cdef Py_ssize_t q = pos >> 3
    cdef uint64_t w
    if n <= 56 and src_room >= 8 and q + 8 <= bm_len:
        w = load_u64(src) & ((((<uint64_t>1) << n) - 1))
        store_u64(bm + q, load_u64(bm + q) | (w << (pos & 7)))
        return popcount64(w)
    return _or_bits(bm, bm_len, pos, src, n)


cdef enum:
    NOGIL_MIN_VALUES = 4096     # pages with fewer values keep the GIL (not worth a release)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _levels_bitmap_nogil(Cursor* c, Py_ssize_t num_values, uint8_t* bm,
                                     Py_ssize_t bm_len, Py_ssize_t bit_offset) noexcept nogil:
    """``decode_levels_bitmap``'s loop without the GIL: the count of 1 levels, or -1 at the
    first run ``_next_run`` would refuse (the bitmap may then hold some of the bits)."""
    cdef Run run
    cdef Py_ssize_t i = 0, k, present = 0
    while i < num_values:
        if c.pos >= c.size or _try_next_run(c, 1, &run) < 0:
            return -1
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            if run.value:
                _set_run(bm, bm_len, bit_offset + i, k)
                present += k
        else:
            present += _or_run(bm, bm_len, bit_offset + i, run.packed,
                               c.data + c.size - run.packed, k)
        i += k
    return present


def decode_levels_bitmap(data, Py_ssize_t num_values, bint prefixed, bitmap,
                         Py_ssize_t bit_offset):
    """Definition levels of a column whose maximum level is 1, straight into a validity bitmap.

    Args:
        data: the levels: the RLE / bit-packing hybrid of width 1, after a 4-byte length
            prefix when ``prefixed`` (data page v1), without one otherwise (v2).
        num_values: levels to decode (>= 0).
        bitmap: a writable, zero-initialised Arrow validity bitmap (LSB first); bits
            ``[bit_offset, bit_offset + num_values)`` are ORed with the levels.
        bit_offset: the first level's bit.

    Returns:
        ``(present, consumed)``: how many levels are 1 (non-null values), and the bytes read.

    Raises:
        DecodeError: as ``decode_rle`` / ``decode_rle_prefixed``.
        ValueError: ``bitmap`` too small for the bits, or a negative offset.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef uint8_t[::1] bm = bitmap
    cdef Cursor c
    cdef Run run
    cdef Py_ssize_t i = 0, k, present = 0, consumed
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if bit_offset < 0 or bit_offset + num_values > 8 * bm.shape[0]:
        raise ValueError(f"a bitmap of {bm.shape[0]} bytes cannot hold bits {bit_offset} + "
                         f"{num_values}")
    if prefixed:
        c = _prefixed(view)
    else:
        c = view_cursor(view)
    if num_values == 0:
        return 0, (4 + c.size) if prefixed else 0
    cdef Cursor fast = c
    cdef Py_ssize_t got
    if num_values >= NOGIL_MIN_VALUES:
        with nogil:
            got = _levels_bitmap_nogil(&fast, num_values, &bm[0], bm.shape[0], bit_offset)
    else:
        got = _levels_bitmap_nogil(&fast, num_values, &bm[0], bm.shape[0], bit_offset)
    if got >= 0:
        return got, (4 + fast.size) if prefixed else fast.pos
    # something is wrong: decode again with the GIL, raising at the first bad run. The
    # output is the caller's (nothing to size first), and every run is checked by _next_run
    # before its bits are used
    while i < num_values:
        if c.pos >= c.size:
            raise_decode(&c, 1, f"RLE data ends after {i} of {num_values} values")
        _next_run(&c, 1, &run)
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            if run.value:
                _set_bits(&bm[0], bit_offset + i, k)
                present += k
        else:
            present += _or_bits(&bm[0], bm.shape[0], bit_offset + i, run.packed, k)
        i += k
    consumed = (4 + c.size) if prefixed else c.pos
    return present, consumed


# ------------------------------------------------------- dictionary pages straight to values

cdef enum:
    GATHER_BATCH = 512          # indices unpacked at a time from a bit-packed run


cdef int _gather(const uint8_t* dic, Py_ssize_t size, Py_ssize_t width, const uint32_t* idx,
                 Py_ssize_t k, uint8_t* dst) except -1:
    """Copy dictionary entries ``idx[:k]`` to ``dst``; every index is checked first."""
    cdef Py_ssize_t i
    if mi_gather(dic, size, width, idx, k, dst) == 0:
        return 0
    for i in range(k):
        if idx[i] >= <uint64_t>size:
            raise DecodeError(f"dictionary index {idx[i]} is out of range for a dictionary of "
                              f"{size} entries")
    for i in range(k):  # every index in range after all (a dictionary of over 2**31 entries)
        memcpy(dst + width * i, dic + width * <Py_ssize_t>idx[i], width)
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _fill(uint8_t* dst, const uint8_t* p, Py_ssize_t width,
                       Py_ssize_t k) noexcept nogil:
    """``k`` copies of the ``width``-byte value at ``p``."""
    cdef Py_ssize_t j
    cdef uint64_t v8
    cdef uint32_t v4
    if width == 8:
        v8 = load_u64(p)
        for j in range(k):
            store_u64(dst + 8 * j, v8)
    elif width == 4:
        v4 = load_u32(p)
        for j in range(k):
            store_u32(dst + 4 * j, v4)
    else:
        for j in range(k):
            memcpy(dst + width * j, p, width)


cdef inline Py_ssize_t _unpack_gather(const uint8_t* packed, Py_ssize_t src_len, int w,
                                     Py_ssize_t k, const uint8_t* padded, Py_ssize_t size,
                                     Py_ssize_t width, uint8_t* dst) noexcept nogil:
    """The first groups of a bit-packed run of ``k`` values (those it can take) unpacked and
    gathered at once from the padded dictionary: how many values are done, or -1 when one
    index lies past the real dictionary (the values written are then not to be used)."""
    cdef Py_ssize_t groups
    if padded == NULL or w > PAD_BITS:
        return 0
    groups = unpack_gather_groups(src_len, w, k >> 3)
    if groups == 0:
        return 0
    if mi_unpack_gather(packed, groups, w, padded, width, dst) >= <uint64_t>size:
        return -1
    return groups * 8


cdef enum:
    PAD_MIN_VALUES = 1024       # fewer values do not pay for padding the dictionary


cdef object _padded(const uint8_t* entries, Py_ssize_t size, Py_ssize_t width,
                    Py_ssize_t num_values):
    """The dictionary copied into a zeroed buffer of ``2**PAD_BITS`` entries for
    ``mi_unpack_gather``, or None where it does not apply (other widths, larger dictionaries,
    few values)."""
    if (width != 4 and width != 8 and width != 16) or size > (1 << PAD_BITS) or num_values < PAD_MIN_VALUES:
        return None
    buf = bytearray((1 << PAD_BITS) * width)
    cdef uint8_t[::1] view = buf
    if size:
        memcpy(&view[0], entries, size * width)
    return buf


cdef inline const uint8_t* _padded_ptr(object buf):
    cdef uint8_t[::1] view
    if buf is None:
        return NULL
    view = buf
    return &view[0]


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _dictionary_into_nogil(Cursor* c, int w, Py_ssize_t num_values, const uint8_t* dic,
                                Py_ssize_t size, Py_ssize_t width, uint8_t* dst,
                                const uint8_t* padded) noexcept nogil:
    """``decode_dictionary_into``'s loop without the GIL: 0, or -1 at the first run or index
    the checking loop would refuse. ``padded``: the dictionary padded to ``2**PAD_BITS``
    entries (see gather.pxd), or NULL."""
    cdef Run run
    cdef uint32_t idx[GATHER_BATCH]
    cdef Py_ssize_t i = 0, k, j, off, m
    while i < num_values:
        if c.pos >= c.size or _try_next_run(c, w, &run) < 0:
            return -1
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            if run.value >= <uint64_t>size:
                return -1
            _fill(dst + i * width, dic + <Py_ssize_t>run.value * width, width, k)
        else:
            off = _unpack_gather(run.packed, c.data + c.size - run.packed, w, k, padded, size,
                                 width, dst + i * width)
            if off < 0:
                return -1
            while off < k:
                m = _unpack_batch(&run, c, w, off, k, idx, GATHER_BATCH)
                if _gather_nogil(dic, size, width, idx, m, dst + (i + off) * width) < 0:
                    return -1
                off += m
        i += k
    return 0


cdef inline int _gather_nogil(const uint8_t* dic, Py_ssize_t size, Py_ssize_t width,
                              const uint32_t* idx, Py_ssize_t k, uint8_t* dst) noexcept nogil:
    """``_gather`` without the GIL: -1 (nothing copied) for an index outside the dictionary
    (or over 2**31, which the checking loop then looks at)."""
    return mi_gather(dic, size, width, idx, k, dst)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _dictionary_into_checked(Cursor* cp, int w, Py_ssize_t num_values, const uint8_t* dic,
                                  Py_ssize_t size, Py_ssize_t width, uint8_t* dst,
                                  const uint8_t* padded) except -1:
    """``decode_dictionary_into``'s loop with the GIL, raising DecodeError at the first bad run
    or index (``cp`` is left after the last run read); ``padded`` as for the GIL-free loop."""
    cdef Cursor c = cp[0]
    cdef Run run
    cdef uint32_t idx[GATHER_BATCH]
    cdef Py_ssize_t i = 0, k, j, off, m
    while i < num_values:
        if c.pos >= c.size:
            raise_decode(&c, 1, f"RLE data ends after {i} of {num_values} values")
        _next_run(&c, w, &run)
        k = run.count if run.count < num_values - i else num_values - i
        if run.rle:
            if run.value >= <uint64_t>size:
                raise DecodeError(f"dictionary index {run.value} is out of range for a "
                                  f"dictionary of {size} entries")
            _fill(dst + i * width, dic + <Py_ssize_t>run.value * width, width, k)
        else:
            # an index past the dictionary: the batches below find and name it
            off = max(_unpack_gather(run.packed, c.data + c.size - run.packed, w, k, padded,
                                     size, width, dst + i * width), 0)
            while off < k:
                m = _unpack_batch(&run, &c, w, off, k, idx, GATHER_BATCH)
                _gather(dic, size, width, idx, m, dst + (i + off) * width)
                off += m
        i += k
    cp[0] = c
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def decode_dictionary_into(data, Py_ssize_t num_values, dictionary, Py_ssize_t width, out,
                           bint release_gil=False):
    """A dictionary-encoded page's values gathered straight into ``out`` (no index array).

    Args:
        data: the page's values section: one byte of bit width, then the RLE / bit-packing
            hybrid of the indices.
        num_values: values to decode (>= 0).
        dictionary: the dictionary's fixed-width values as raw bytes (``n * width``).
        width: bytes per value.
        out: a writable buffer of exactly ``num_values * width`` bytes.
        release_gil: decode without the GIL (threaded reads: other chunks decode meanwhile).

    Returns:
        The bytes of ``data`` read.

    Raises:
        DecodeError: a missing or too wide bit-width byte, a truncated or malformed run, or an
            index outside the dictionary.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef const uint8_t[::1] dic = byte_view(dictionary, "dictionary")
    cdef uint8_t[::1] dst
    cdef Cursor c = view_cursor(view)
    cdef Run run
    cdef uint32_t idx[GATHER_BATCH]
    cdef Py_ssize_t size, i = 0, k, j, off, m
    cdef const uint8_t* p
    cdef int w
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if width <= 0 or dic.shape[0] % width:
        raise ValueError(f"a dictionary of {dic.shape[0]} bytes does not hold {width}-byte values")
    dst = out_bytes(out, num_values * width)
    size = dic.shape[0] // width
    if num_values == 0:
        return 0
    w = _indices_width(&c)
    cdef Cursor fast = c
    cdef int rc
    cdef const uint8_t* entries = &dic[0] if size else <const uint8_t*>b""
    padded_buf = _padded(entries, size, width, num_values)
    cdef const uint8_t* padded = _padded_ptr(padded_buf)
    if release_gil and num_values >= NOGIL_MIN_VALUES:
        with nogil:
            rc = _dictionary_into_nogil(&fast, w, num_values, entries, size, width, &dst[0],
                                        padded)
        if rc == 0:
            return fast.pos + 1
    # with the GIL (about 10 % faster on one thread than the GIL-free loop), raising at the
    # first bad run or index; also where the GIL-free attempt stopped at something wrong
    _dictionary_into_checked(&c, w, num_values, entries, size, width, &dst[0], padded)
    return c.pos + 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _dictionary_pages_nogil(const uint8_t** data, const Py_ssize_t* sizes,
                                        const Py_ssize_t* counts, Py_ssize_t first,
                                        Py_ssize_t npages, const uint8_t* dic, Py_ssize_t size,
                                        Py_ssize_t width, uint8_t* dst,
                                        const uint8_t* padded) noexcept nogil:
    """Pages ``[first, npages)`` gathered one after another from ``dst``: ``npages`` when all
    decoded, else the index of the first page the checking loop would refuse."""
    cdef Py_ssize_t p
    cdef Cursor c
    cdef int w
    for p in range(first, npages):
        if counts[p]:
            if sizes[p] < 1 or data[p][0] > 32:
                return p
            w = data[p][0]
            c = cur_make(data[p] + 1, sizes[p] - 1, 1)
            if _dictionary_into_nogil(&c, w, counts[p], dic, size, width, dst, padded) < 0:
                return p
        dst += counts[p] * width
    return npages


cdef Py_ssize_t _page_table(pages, Py_ssize_t[::1] counts, Py_ssize_t[::1] sizes,
                            uintptr_t[::1] ptrs, list keep, Py_ssize_t* most) except -1:
    """A run's ``(data, num_values)`` pages as arrays for a nogil loop: each page's count,
    byte size and first byte (its buffer view kept alive in ``keep``); returns the total
    count, ``most`` the largest. A negative count is a DecodeError naming the page."""
    cdef Py_ssize_t npages = len(pages), p, total = 0, n
    cdef const uint8_t[::1] view
    for p in range(npages):
        data, n = pages[p]
        if n < 0:
            raise DecodeError(f"page {p} of {npages}: negative value count {n}")
        view = byte_view(data)
        keep.append(view)
        counts[p] = n
        sizes[p] = view.shape[0]
        ptrs[p] = <uintptr_t>(&view[0]) if view.shape[0] else <uintptr_t><const uint8_t*>b""
        total += n
        if n > most[0]:
            most[0] = n
    return total


@cython.boundscheck(False)
@cython.wraparound(False)
def decode_dictionary_pages(list pages, dictionary, Py_ssize_t width, out,
                            bint release_gil=False):
    """Every dictionary-encoded page of a run of a chunk's pages, gathered into ``out`` in
    one call (no per-page Python work).

    Args:
        pages: ``(data, num_values)`` per page, in order: ``data`` is a page's values section
            as for ``decode_dictionary_into``, ``num_values`` >= 0 its value count.
        dictionary: the dictionary's fixed-width values as raw bytes (``n * width``).
        width: bytes per value.
        out: a writable buffer of exactly ``sum(num_values) * width`` bytes.
        release_gil: decode without the GIL (threaded reads: other chunks decode meanwhile);
            on one thread the checking loop with the GIL is faster (measured: int64 1.1 ms
            against 1.5 ms for 1 M values in 50 pages).

    Raises:
        DecodeError: as ``decode_dictionary_into``, for the first bad page (its position in
            ``pages`` is in the message); pages before it are decoded.
    """
    cdef const uint8_t[::1] dic = byte_view(dictionary, "dictionary")
    cdef Py_ssize_t npages = len(pages), p, total = 0, size, done, at, most = 0
    cdef const uint8_t[::1] view
    cdef uint8_t[::1] dst
    if width <= 0 or dic.shape[0] % width:
        raise ValueError(f"a dictionary of {dic.shape[0]} bytes does not hold {width}-byte values")
    size = dic.shape[0] // width
    cdef Py_ssize_t[::1] counts = np.empty(npages, np.intp)
    cdef Py_ssize_t[::1] sizes = np.empty(npages, np.intp)
    cdef uintptr_t[::1] ptrs = np.empty(npages, np.uintp)
    keep = []  # the pages' buffer views, held until the decode is done
    total = _page_table(pages, counts, sizes, ptrs, keep, &most)
    arr = out_bytes(out, total * width)
    dst = arr
    if total == 0:
        return
    cdef const uint8_t* entries = &dic[0] if size else <const uint8_t*>b""
    padded_buf = _padded(entries, size, width, total)
    cdef const uint8_t* padded = _padded_ptr(padded_buf)
    cdef Cursor c
    cdef uint8_t* to = &dst[0]
    if not release_gil:
        for p in range(npages):
            if counts[p]:
                try:
                    if sizes[p] < 1:
                        raise DecodeError("dictionary-encoded page has no bit-width byte")
                    if (<const uint8_t*>ptrs[p])[0] > 32:
                        raise DecodeError(f"dictionary index bit width "
                                          f"{(<const uint8_t*>ptrs[p])[0]} is over 32")
                    c = cur_make(<const uint8_t*>ptrs[p] + 1, sizes[p] - 1, 1)
                    _dictionary_into_checked(&c, (<const uint8_t*>ptrs[p])[0], counts[p],
                                             entries, size, width, to, padded)
                except DecodeError as exc:
                    raise DecodeError(f"page {p} of {npages}: {exc}") from exc
            to += counts[p] * width
        return
    p = 0
    while p < npages:
        at = 0
        for done in range(p):
            at += counts[done]
        with nogil:
            done = _dictionary_pages_nogil(<const uint8_t**>&ptrs[0], &sizes[0], &counts[0],
                                           p, npages, entries, size, width, &dst[0] + at * width,
                                           padded)
        if done == npages:
            return
        # page ``done`` is wrong somewhere: the checking decoder raises at the first bad run or
        # index (or decodes it, should the two loops ever disagree), then the rest goes on
        at = 0
        for p in range(done):
            at += counts[p]
        try:
            decode_dictionary_into(keep[done], counts[done], dictionary, width,
                                   arr[at * width:(at + counts[done]) * width])
        except DecodeError as exc:
            raise DecodeError(f"page {done} of {npages}: {exc}") from exc
        p = done + 1


@cython.boundscheck(False)
@cython.wraparound(False)
def copy_plain_pages(list pages, Py_ssize_t width, out):
    """Every PLAIN page of a run of a required fixed-width chunk's pages, copied into ``out``
    in one call (no per-page Python work; the copies run without the GIL).

    Args:
        pages: ``(data, num_values)`` per page, in order: ``data`` a page's values section
            (any C-contiguous buffer; bytes after the values are left alone), ``num_values``
            >= 0 its value count.
        width: bytes per value.
        out: a writable buffer of exactly ``sum(num_values) * width`` bytes. It may be the
            start of the very buffer the pages lie in, each page's values then moving down
            over the headers before them (the copies are memmoves, in page order).

    Raises:
        DecodeError: a negative count or a page too short for its values (its position in
            ``pages`` is in the message); pages before it are copied.
        ValueError: ``out`` is not the pages' size.
    """
    cdef Py_ssize_t npages = len(pages), p, total = 0, n, size, good
    cdef const uint8_t[::1] view
    cdef uint8_t[::1] dst
    if width <= 0:
        raise ValueError(f"value width {width} is not positive")
    for p in range(npages):
        n = pages[p][1]
        if n < 0:
            raise DecodeError(f"page {p} of {npages}: negative value count {n}")
        total += n
    dst = out_bytes(out, total * width)
    cdef Py_ssize_t[::1] counts = np.empty(npages, np.intp)
    cdef uintptr_t[::1] ptrs = np.empty(npages, np.uintp)
    keep = []  # the pages' buffer views, held until the copies are done
    error = None
    good = npages
    for p in range(npages):
        data, n = pages[p]
        counts[p] = n
        ptrs[p] = 0
        if n == 0:
            continue
        view = byte_view(data)
        keep.append(view)
        size = view.shape[0]
        if n > size // width:
            error = DecodeError(f"page {p} of {npages}: truncated PLAIN values ({n} of "
                                f"{width} bytes in {size} bytes)", offset=0,
                                needed=<object>n * width, remaining=size)
            good = p
            break
        ptrs[p] = <uintptr_t>&view[0]
    cdef uint8_t* at = &dst[0] if total else NULL
    with nogil:
        for p in range(good):
            if counts[p]:
                memmove(at, <const uint8_t*>ptrs[p], counts[p] * width)
                at += counts[p] * width
    if error is not None:
        raise error


# ------------------------------------- flat nullable pages: levels, values and slots at once

cdef extern from *:
    """
    /* mi_rank[b][k]: how many of the bits below bit k of the byte b are set (the packed
       value a slot of a validity byte takes), filled once when the module is imported */
    static uint8_t mi_rank[256][8];
    #if defined(__GNUC__) && defined(__x86_64__)
    #include <immintrin.h>
    /* AVX2 spreads: a validity byte's 8 slots of 4-byte values (a half byte's 4 slots of
       8-byte values) are one 32-byte load of the next packed values, one lane permutation
       taking each slot's value by its rank, one mask zeroing the null slots, one store */
    static uint32_t mi_perm4[256][8] __attribute__((aligned(32)));
    static uint32_t mi_mask4[256][8] __attribute__((aligned(32)));
    static uint32_t mi_perm8[16][8] __attribute__((aligned(32)));
    static uint32_t mi_mask8[16][8] __attribute__((aligned(32)));
    static int mi_spread_avx2 = 0;
    __attribute__((target("avx2,popcnt")))
    static Py_ssize_t mi_spread4_avx2(const uint8_t* bits, Py_ssize_t nbytes,
                                      const uint8_t* sp, Py_ssize_t avail, uint8_t* dp,
                                      Py_ssize_t* taken) {
        Py_ssize_t t = 0, j = 0;
        for (; t < nbytes && avail - j >= 8; t++) {
            unsigned b = bits[t];
            __m256i v = _mm256_loadu_si256((const __m256i*)(sp + 4 * j));
            v = _mm256_permutevar8x32_epi32(v, _mm256_load_si256((const __m256i*)mi_perm4[b]));
            v = _mm256_and_si256(v, _mm256_load_si256((const __m256i*)mi_mask4[b]));
            _mm256_storeu_si256((__m256i*)(dp + 32 * t), v);
            j += __builtin_popcount(b);
        }
        *taken = j;
        return t;
    }
    __attribute__((target("avx2,popcnt")))
    static Py_ssize_t mi_spread8_avx2(const uint8_t* bits, Py_ssize_t nbytes,
                                      const uint8_t* sp, Py_ssize_t avail, uint8_t* dp,
                                      Py_ssize_t* taken) {
        Py_ssize_t t = 0, j = 0;
        for (; t < nbytes && avail - j >= 8; t++) {
            unsigned lo = bits[t] & 15, hi = bits[t] >> 4;
            __m256i v = _mm256_loadu_si256((const __m256i*)(sp + 8 * j));
            v = _mm256_permutevar8x32_epi32(v, _mm256_load_si256((const __m256i*)mi_perm8[lo]));
            v = _mm256_and_si256(v, _mm256_load_si256((const __m256i*)mi_mask8[lo]));
            _mm256_storeu_si256((__m256i*)(dp + 64 * t), v);
            j += __builtin_popcount(lo);
            v = _mm256_loadu_si256((const __m256i*)(sp + 8 * j));
            v = _mm256_permutevar8x32_epi32(v, _mm256_load_si256((const __m256i*)mi_perm8[hi]));
            v = _mm256_and_si256(v, _mm256_load_si256((const __m256i*)mi_mask8[hi]));
            _mm256_storeu_si256((__m256i*)(dp + 64 * t + 32), v);
            j += __builtin_popcount(hi);
        }
        *taken = j;
        return t;
    }
    static int mi_cpu_has_avx2(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    }
    #else
    static int mi_spread_avx2 = 0;
    static Py_ssize_t mi_spread4_avx2(const uint8_t* bits, Py_ssize_t nbytes,
                                      const uint8_t* sp, Py_ssize_t avail, uint8_t* dp,
                                      Py_ssize_t* taken) { *taken = 0; return 0; }
    #define mi_spread8_avx2 mi_spread4_avx2
    static int mi_cpu_has_avx2(void) { return 0; }
    #endif
    static void mi_rank_init(void) {
        for (int b = 0; b < 256; b++) {
            int c = 0;
            for (int k = 0; k < 8; k++) { mi_rank[b][k] = (uint8_t)c; c += (b >> k) & 1; }
        }
    #if defined(__GNUC__) && defined(__x86_64__)
        for (int b = 0; b < 256; b++)
            for (int k = 0; k < 8; k++) {
                mi_perm4[b][k] = mi_rank[b][k] & 7;
                mi_mask4[b][k] = ((b >> k) & 1) ? 0xFFFFFFFFu : 0;
            }
        for (int b = 0; b < 16; b++)
            for (int k = 0; k < 4; k++) {
                uint32_t r = mi_rank[b][k] & 3;
                mi_perm8[b][2 * k] = 2 * r;
                mi_perm8[b][2 * k + 1] = 2 * r + 1;
                mi_mask8[b][2 * k] = mi_mask8[b][2 * k + 1] = ((b >> k) & 1) ? 0xFFFFFFFFu : 0;
            }
        mi_spread_avx2 = mi_cpu_has_avx2();
    #endif
    }
    """
    uint8_t mi_rank[256][8]
    int mi_spread_avx2
    void mi_rank_init() noexcept nogil
    int mi_cpu_has_avx2() noexcept nogil
    Py_ssize_t mi_spread4_avx2(const uint8_t* bits, Py_ssize_t nbytes, const uint8_t* sp,
                               Py_ssize_t avail, uint8_t* dp, Py_ssize_t* taken) noexcept nogil
    Py_ssize_t mi_spread8_avx2(const uint8_t* bits, Py_ssize_t nbytes, const uint8_t* sp,
                               Py_ssize_t avail, uint8_t* dp, Py_ssize_t* taken) noexcept nogil

mi_rank_init()


def _vector_spread(bint on):
    """Use the AVX2 spread where the CPU has it (``on``) or the portable loop (tests cover
    both); returns whether it was in use."""
    global mi_spread_avx2
    cdef bint was = mi_spread_avx2
    mi_spread_avx2 = on and mi_cpu_has_avx2()
    return was


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline Py_ssize_t _spread_byte(uint8_t b, Py_ssize_t nbits, const uint8_t* sp,
                                    Py_ssize_t avail, Py_ssize_t width,
                                    uint8_t* dp) noexcept nogil:
    """Slots ``[0, nbits)`` (``nbits`` <= 8) of one validity byte ``b``: a set bit takes the
    next value of ``sp``, a clear one is zeroed; returns the values taken. The caller has
    checked that ``avail`` (values readable from ``sp``) covers the set bits. A whole byte
    of 4- or 8-byte values is branch-free when 8 values are readable (every slot loads the
    value its rank picks, a null slot's masked to zero)."""
    cdef Py_ssize_t k, j = 0
    cdef const uint8_t* r = mi_rank[b]
    cdef uint64_t m
    if nbits == 8 and avail >= 8:
        if width == 8:
            for k in range(8):
                m = <uint64_t>0 - ((b >> k) & 1)
                store_u64(dp + 8 * k, load_u64(sp + 8 * <Py_ssize_t>r[k]) & m)
            return popcount64(b)
        if width == 4:
            for k in range(8):
                m = <uint64_t>0 - ((b >> k) & 1)
                store_u32(dp + 4 * k, <uint32_t>(load_u32(sp + 4 * <Py_ssize_t>r[k]) & m))
            return popcount64(b)
    for k in range(nbits):
        if (b >> k) & 1:
            memcpy(dp + k * width, sp + j * width, width)
            j += 1
        else:
            memset(dp + k * width, 0, width)
    return j


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _spread_bytes(const uint8_t* bits, Py_ssize_t k, const uint8_t* sp,
                               Py_ssize_t avail, Py_ssize_t width, uint8_t* dp) noexcept nogil:
    """Slots ``[0, k)`` from the LSB-first bits at ``bits`` (byte aligned): 4- and 8-byte
    values by the AVX2 loop where the CPU has it (while 8 values are readable); then 64 slots
    whose bits are all set are one copy, all clear one memset, other bytes ``_spread_byte``
    (no branch on the byte's bits). The caller has checked that ``avail`` covers the set
    bits."""
    cdef Py_ssize_t t = 0, full = k >> 3, j = 0
    cdef uint64_t w
    if mi_spread_avx2 and full >= 2:
        if width == 4:
            t = mi_spread4_avx2(bits, full, sp, avail, dp, &j)
        elif width == 8:
            t = mi_spread8_avx2(bits, full, sp, avail, dp, &j)
    while t < full:
        if t + 8 <= full:
            w = load_u64(bits + t)
            if w == <uint64_t>0 - 1:
                memcpy(dp + 8 * t * width, sp + j * width, 64 * width)
                j += 64
                t += 8
                continue
            if w == 0:
                memset(dp + 8 * t * width, 0, 64 * width)
                t += 8
                continue
        j += _spread_byte(bits[t], 8, sp + j * width, avail - j, width, dp + 8 * t * width)
        t += 1
    if k & 7:
        _spread_byte(bits[full] & <uint8_t>((1 << (k & 7)) - 1), k & 7, sp + j * width,
                     avail - j, width, dp + 8 * full * width)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _spread_bitmap(const uint8_t* sp, Py_ssize_t avail, Py_ssize_t width, uint8_t* dp,
                         const uint8_t* bm, Py_ssize_t bit, Py_ssize_t n) noexcept nogil:
    """``n`` slots from bit ``bit`` of the bitmap ``bm`` (whose set bits there the caller has
    counted, and ``avail`` covers): slot by slot up to a byte boundary, then by bytes
    (``_spread_bytes``)."""
    cdef Py_ssize_t i = 0, j = 0
    while i < n and ((bit + i) & 7):
        if (bm[(bit + i) >> 3] >> ((bit + i) & 7)) & 1:
            memcpy(dp + i * width, sp + j * width, width)
            j += 1
        else:
            memset(dp + i * width, 0, width)
        i += 1
    if i < n:
        _spread_bytes(bm + ((bit + i) >> 3), n - i, sp + j * width, avail - j, width,
                      dp + i * width)


cdef enum:
    FLAT_BAD_LEVELS = -1        # levels that decode_levels_bitmap refuses
    FLAT_SHORT_VALUES = -2      # a PLAIN values section shorter than the present values
    FLAT_BAD_INDICES = -3       # dictionary indices that decode_dictionary_into refuses


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _flat_plain(Cursor* c, Py_ssize_t n, const uint8_t* sp, Py_ssize_t avail,
                            Py_ssize_t width, uint8_t* dp, uint8_t* bm, Py_ssize_t bm_len,
                            Py_ssize_t bit) noexcept nogil:
    """A PLAIN page: levels (cursor ``c``) into the bitmap, then the values ``sp`` (``avail``
    of them readable) spread over the slots by the bitmap's bits. Two passes are faster than
    one over the level runs (a copy per short run between nulls). Returns the present values
    or a FLAT_* code."""
    cdef Py_ssize_t present = _levels_bitmap_nogil(c, n, bm, bm_len, bit)
    if present < 0:
        return FLAT_BAD_LEVELS
    if present > avail:
        return FLAT_SHORT_VALUES
    _spread_bitmap(sp, avail, width, dp, bm, bit, n)
    return present


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _flat_dict(Cursor* c, Py_ssize_t n, const uint8_t* vals, Py_ssize_t vsize,
                           const uint8_t* dic, Py_ssize_t size, Py_ssize_t width, uint8_t* dp,
                           uint8_t* bm, Py_ssize_t bm_len, Py_ssize_t bit, uint8_t* packed,
                           const uint8_t* padded) noexcept nogil:
    """A dictionary-encoded page: levels into the bitmap, then the present values gathered
    straight into the slots (no null) or into ``packed`` (room for the page's values and 8
    more) and spread. Returns the present values or a FLAT_* code."""
    cdef Py_ssize_t present = _levels_bitmap_nogil(c, n, bm, bm_len, bit)
    cdef Cursor v
    cdef int w
    if present < 0:
        return FLAT_BAD_LEVELS
    if present == 0:
        memset(dp, 0, n * width)
        return 0
    if vsize < 1 or vals[0] > 32:
        return FLAT_BAD_INDICES
    w = vals[0]
    v = cur_make(vals + 1, vsize - 1, 1)
    if present == n:
        if _dictionary_into_nogil(&v, w, n, dic, size, width, dp, padded) < 0:
            return FLAT_BAD_INDICES
        return n
    if _dictionary_into_nogil(&v, w, present, dic, size, width, packed, padded) < 0:
        return FLAT_BAD_INDICES
    _spread_bitmap(packed, present + 8, width, dp, bm, bit, n)
    return present


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _flat_pages_loop(const uint8_t** data, const Py_ssize_t* sizes,
                                 const Py_ssize_t* counts, Py_ssize_t npages,
                                 Py_ssize_t* present, const uint8_t* dic, Py_ssize_t size,
                                 Py_ssize_t width, uint8_t* dst, uint8_t* bm,
                                 Py_ssize_t bm_len, Py_ssize_t bit, uint8_t* packed,
                                 const uint8_t* padded, Py_ssize_t* code) noexcept nogil:
    """``decode_flat_pages``'s loop (GIL-free): ``npages`` when every page decoded, else the
    index of the first bad page (``code`` its FLAT_* code). ``dic``: NULL for PLAIN pages."""
    cdef Py_ssize_t p, n, length, got
    cdef Cursor c
    for p in range(npages):
        n = counts[p]
        if n:
            if sizes[p] < 4:
                code[0] = FLAT_BAD_LEVELS
                return p
            length = load_u32(data[p])
            if length > sizes[p] - 4:
                code[0] = FLAT_BAD_LEVELS
                return p
            c = cur_make(data[p] + 4, length, 4)
            if dic == NULL:
                got = _flat_plain(&c, n, data[p] + 4 + length, (sizes[p] - 4 - length) // width,
                                  width, dst, bm, bm_len, bit)
            else:
                got = _flat_dict(&c, n, data[p] + 4 + length, sizes[p] - 4 - length, dic, size,
                                 width, dst, bm, bm_len, bit, packed, padded)
            if got < 0:
                code[0] = got
                return p
            present[0] += got
        dst += n * width
        bit += n
    return npages


@cython.boundscheck(False)
@cython.wraparound(False)
def decode_flat_pages(list pages, dictionary, Py_ssize_t width, out, bitmap,
                      Py_ssize_t bit_offset, bint release_gil=False):
    """A run of data pages v1 of a flat nullable fixed-width column (max definition level 1,
    no repetition) decoded in one call: each page's definition levels ORed into the validity
    bitmap and its values put straight into their slots (null slots zeroed).

    Args:
        pages: ``(body, num_values)`` per page, in order: ``body`` the uncompressed page (the
            definition levels after their 4-byte length prefix, then the values),
            ``num_values`` >= 0 its slot count.
        dictionary: the chunk's dictionary as raw ``width``-byte values for
            dictionary-encoded pages, or None for PLAIN pages.
        width: bytes per value.
        out: a writable buffer of exactly ``sum(num_values) * width`` bytes: the run's slots.
        bitmap: a writable, zero-initialised Arrow validity bitmap (LSB first); bits
            ``[bit_offset, bit_offset + sum(num_values))`` are ORed with the levels.
        release_gil: decode without the GIL (threaded reads).

    Returns:
        The run's present (non-null) values.

    Raises:
        DecodeError: the first bad page's levels, a PLAIN values section too short for its
            present values, or dictionary indices that do not decode or lie outside the
            dictionary (the page's position in ``pages`` is in the message); pages before it
            are decoded.
        ValueError: ``out`` or ``bitmap`` too small, a negative offset or width.
    """
    cdef Py_ssize_t npages = len(pages), p, total = 0, size = 0, most = 0, n
    cdef const uint8_t[::1] view
    cdef const uint8_t[::1] dic
    cdef uint8_t[::1] dst
    cdef uint8_t[::1] bm = bitmap
    if width <= 0:
        raise ValueError(f"value width {width} is not positive")
    if dictionary is not None:
        dic = byte_view(dictionary, "dictionary")
        if dic.shape[0] % width:
            raise ValueError(f"a dictionary of {dic.shape[0]} bytes does not hold "
                             f"{width}-byte values")
        size = dic.shape[0] // width
    cdef Py_ssize_t[::1] counts = np.empty(npages, np.intp)
    cdef Py_ssize_t[::1] sizes = np.empty(npages, np.intp)
    cdef uintptr_t[::1] ptrs = np.empty(npages, np.uintp)
    keep = []  # the pages' buffer views, held until the decode is done
    total = _page_table(pages, counts, sizes, ptrs, keep, &most)
    if bit_offset < 0 or bit_offset + total > 8 * bm.shape[0]:
        raise ValueError(f"a bitmap of {bm.shape[0]} bytes cannot hold bits {bit_offset} + "
                         f"{total}")
    arr = out_bytes(out, total * width)
    if total == 0:
        return 0
    dst = arr
    cdef const uint8_t* entries = NULL
    cdef const uint8_t* padded = NULL
    cdef uint8_t* packed = NULL
    padded_buf = packed_buf = None
    cdef uint8_t[::1] packed_view
    if dictionary is not None:
        entries = &dic[0] if size else <const uint8_t*>b""
        padded_buf = _padded(entries, size, width, total)
        padded = _padded_ptr(padded_buf)
        packed_buf = np.empty((most + 8) * width, np.uint8)
        packed_view = packed_buf
        packed = &packed_view[0]
    cdef Py_ssize_t present = 0, code = 0, done
    if release_gil and total >= NOGIL_MIN_VALUES:
        with nogil:
            done = _flat_pages_loop(<const uint8_t**>&ptrs[0], &sizes[0], &counts[0], npages,
                                    &present, entries, size, width, &dst[0], &bm[0],
                                    bm.shape[0], bit_offset, packed, padded, &code)
    else:
        done = _flat_pages_loop(<const uint8_t**>&ptrs[0], &sizes[0], &counts[0], npages,
                                &present, entries, size, width, &dst[0], &bm[0], bm.shape[0],
                                bit_offset, packed, padded, &code)
    if done == npages:
        return present
    for p in range(done):
        bit_offset += counts[p]
    _flat_page_error(keep[done], counts[done], done, npages, code, dictionary, width,
                     bitmap, bit_offset)


cdef int _flat_page_error(view, Py_ssize_t n, Py_ssize_t p, Py_ssize_t npages,
                          Py_ssize_t code, dictionary, Py_ssize_t width, bitmap,
                          Py_ssize_t bit) except -1:
    """Raise the DecodeError of page ``p``, which ``_flat_pages_loop`` stopped at with
    ``code``: the checking decoders find and name what is wrong."""
    cdef Py_ssize_t length, present
    where = f"page {p} of {npages}"
    try:
        if code == FLAT_BAD_LEVELS:
            decode_levels_bitmap(view, n, True, np.zeros(len(bitmap), np.uint8), bit)
        else:
            length = int.from_bytes(bytes(view[:4]), "little")
            present, _ = decode_levels_bitmap(view, n, True, np.zeros(len(bitmap), np.uint8),
                                              bit)
            values = view[4 + length:]
            if code == FLAT_SHORT_VALUES:
                raise DecodeError(f"truncated PLAIN values ({present} of {width} bytes in "
                                  f"{len(values)} bytes)", offset=0,
                                  needed=present * width, remaining=len(values))
            decode_dictionary_into(values, present, dictionary, width,
                                   np.empty(present * width, np.uint8))
    except DecodeError as exc:
        raise DecodeError(f"{where}: {exc}") from exc
    raise DecodeError(f"{where}: the page does not decode")
