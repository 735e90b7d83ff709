# cython: language_level=3
"""Dremel assembly: Arrow validity bitmaps and list offsets from definition / repetition levels.

``check_levels`` validates one leaf column's decoded level stream once (levels within
[0, max], the first record starting at rep 0, every rep level continuing a list that exists);
``node_levels`` rebuilds one struct or list node (validity bitmap, list offsets) from a leaf's
levels; ``scatter_leaf`` spreads the decoded non-null values over the leaf's slots. The write
side lives in ``levels``.

Conventions, for one leaf column whose path holds ``max_rep`` repeated levels: an Arrow node
has a *slot* at level position ``i`` when ``def[i] >= slot_def`` and ``rep[i] <= slot_rep``
(the def / rep level of the nearest enclosing repeated level, 0 / 0 at the top); the slot is
non-null when ``def[i] >= def_present`` (the def level reached when the node itself is
present); a list node's elements are the positions with ``def >= def_present + 1`` and
``rep <= slot_rep + 1``. Every output is sized from the level count (which the caller already
holds in memory), so hostile levels never cause an allocation larger than their input. Errors
report level positions as ``offset``.
"""

cimport cython
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy, memmove, memset
from boolbits cimport popcount64
from buffer cimport load_u32, load_u64, store_u32, store_u64
from levelbits cimport getbit, np_addr, buf_ptr, new_array
from physical cimport byte_view

import numpy as np

from metaindex.errors import DecodeError

cdef enum:
    S_FIXED = 0     # scatter fixed-width values
    S_BOOL = 1      # scatter boolean bits
    S_BIN32 = 2     # expand int32 binary offsets (data buffer shared)
    S_BIN64 = 3     # expand int64 binary offsets
    S_TAKE = 4      # int64 take indices (any type)

ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused offset_t:
    int32_t
    int64_t


cdef const int16_t* levels_ptr(object arr, Py_ssize_t n, list keep, str what) except? NULL:
    cdef const int16_t[::1] mv
    if arr is None:
        return NULL
    mv = arr
    if mv.shape[0] != n:
        raise DecodeError(f"{what} levels hold {mv.shape[0]} entries, expected {n}")
    keep.append(mv)
    if n == 0:
        return NULL
    return &mv[0]


cdef int level_error(const int16_t* defs, const int16_t* reps, Py_ssize_t n, int max_def,
                     int max_rep, const int16_t[::1] rep_def) except -1:
    """Find the first bad level position and raise DecodeError for it (the cold path)."""
    cdef Py_ssize_t i
    cdef int d, r
    for i in range(n):
        d = defs[i]
        if d < 0 or d > max_def:
            raise DecodeError(f"definition level {d} outside [0, {max_def}]", offset=i)
        if reps == NULL:
            continue
        r = reps[i]
        if r < 0 or r > max_rep:
            raise DecodeError(f"repetition level {r} outside [0, {max_rep}]", offset=i)
        if r == 0:
            continue
        if i == 0:
            raise DecodeError(f"first level has repetition {r}: a record must start at 0",
                              offset=0)
        if d < rep_def[r] or defs[i - 1] < rep_def[r]:
            raise DecodeError(f"repetition level {r} continues a list that is null or empty "
                              f"(def {defs[i - 1]} then {d}, the list needs {rep_def[r]})",
                              offset=i)
    raise RuntimeError("level_error found no bad level")


@cython.boundscheck(False)
@cython.wraparound(False)
def check_levels(const int16_t[::1] defs, object reps, int max_def, int max_rep,
                 const int16_t[::1] rep_def, int leaf_slot_def):
    """Validate one leaf column's level stream.

    Args:
        defs: int16 definition levels (one per level position).
        reps: int16 repetition levels of the same length, or None when ``max_rep`` is 0.
        max_def: the column's maximum definition level.
        max_rep: the column's maximum repetition level.
        rep_def: int16 array of ``max_rep + 1`` entries; ``rep_def[r]`` is the def level at which
            the r-th repeated level has an element (``rep_def[0]`` is unused).
        leaf_slot_def: def level at which the leaf has an Arrow slot (``rep_def[max_rep]``, or 0).

    Returns:
        ``(n_records, n_present, n_slots)``: records (positions with rep 0), positions with
        ``def == max_def`` (values the page must hold) and positions with
        ``def >= leaf_slot_def`` (the leaf array's length).

    Raises:
        DecodeError: a level outside [0, max], a stream not starting a record, or a rep level
            that continues a list which is null, empty or absent at that position.
    """
    cdef Py_ssize_t n = defs.shape[0], i
    cdef list keep = []
    cdef const int16_t* dp = &defs[0] if n else NULL
    cdef const int16_t* rp
    cdef int16_t d, r, prev = 0
    cdef int64_t records = 0, present = 0, slots = 0
    cdef bint bad = False
    cdef uint16_t umax = <uint16_t>max_def, urmax = <uint16_t>max_rep
    if max_def < 0 or max_rep < 0 or max_def > 32767 or max_rep > max_def:
        raise DecodeError(f"invalid max levels def={max_def} rep={max_rep}")
    if rep_def.shape[0] != max_rep + 1:
        raise DecodeError("rep_def must hold max_rep + 1 entries")
    for i in range(1, max_rep + 1):
        if rep_def[i] < 1 or rep_def[i] > max_def:
            raise DecodeError(f"rep_def[{i}] = {rep_def[i]} out of range")
    if reps is None and max_rep > 0:
        raise DecodeError("repetition levels missing for a repeated column")
    rp = levels_ptr(reps, n, keep, "repetition")
    if rp != NULL and max_rep == 0:
        for i in range(n):
            bad |= rp[i] != 0
        if bad:
            level_error(dp, rp, n, max_def, max_rep, rep_def)
        rp = NULL
    if rp == NULL:
        for i in range(n):                      # branch-free, vectorisable
            d = dp[i]
            bad |= <uint16_t>d > umax
            present += d == max_def
            slots += d >= leaf_slot_def
        if bad:
            level_error(dp, NULL, n, max_def, max_rep, rep_def)
        return n, present, slots
    if n and rp[0] != 0:
        level_error(dp, rp, n, max_def, max_rep, rep_def)
    for i in range(n):
        d = dp[i]
        r = rp[i]
        if <uint16_t>d > umax or <uint16_t>r > urmax:
            level_error(dp, rp, n, max_def, max_rep, rep_def)
        # rep r > 0 continues list r: it and the previous position must both reach into it
        bad |= (r != 0) & ((d < rep_def[r]) | (prev < rep_def[r]))
        records += r == 0
        present += d == max_def
        slots += d >= leaf_slot_def
        prev = d
    if bad:
        level_error(dp, rp, n, max_def, max_rep, rep_def)
    return records, present, slots


@cython.boundscheck(False)
@cython.wraparound(False)
def node_levels(const int16_t[::1] defs, object reps, int slot_def, int slot_rep,
                int def_present, int offsets_width, object alloc=None):
    """Validity bitmap (and list offsets) of one struct / list node from a leaf's levels.

    Args:
        defs: int16 definition levels of any leaf below the node (checked by check_levels).
        reps: its int16 repetition levels, or None.
        slot_def: def level at which the node has a slot (see the module docstring).
        slot_rep: the node's slots are positions with rep <= slot_rep.
        def_present: def level at which the node is non-null.
        offsets_width: 0 for a struct (no offsets), 4 or 8 for int32 / int64 list offsets.
        alloc: optional ``alloc(nbytes) -> writable buffer`` for the outputs.

    Returns:
        ``(length, validity, null_count, offsets, child_count)``: validity is a numpy uint8
        LSB bitmap or None when no slot is null; offsets a numpy int32 / int64 array of
        ``length + 1`` entries (None for a struct); child_count the list's element count.

    Raises:
        DecodeError: a list element before any list slot, or int32 offsets that overflow.
    """
    cdef Py_ssize_t n = defs.shape[0], i
    cdef list keep = []
    cdef const int16_t* dp = &defs[0] if n else NULL
    cdef const int16_t* rp = levels_ptr(reps, n, keep, "repetition")
    cdef int64_t slot = -1, child = 0, nulls = 0
    cdef int16_t d, r = 0
    cdef int child_def = def_present + 1, child_rep = slot_rep + 1
    cdef int is_slot, is_child
    cdef bint orphan = False
    cdef uint8_t* vb
    cdef int32_t* o32 = NULL
    cdef int64_t* o64 = NULL
    if offsets_width not in (0, 4, 8):
        raise ValueError("offsets_width must be 0, 4 or 8")
    if offsets_width == 4 and n > 0x7FFFFFFF:
        raise DecodeError("list holds more than 2**31 - 1 elements; use large_list")
    valid = new_array(alloc, (n >> 3) + 1, np.uint8, True)
    vb = <uint8_t*>np_addr(valid)
    offsets = None
    if offsets_width:
        offsets = new_array(alloc, n + 1, np.int32 if offsets_width == 4 else np.int64)
        if offsets_width == 4:
            o32 = <int32_t*>np_addr(offsets)
            o32[0] = 0
        else:
            o64 = <int64_t*>np_addr(offsets)
            o64[0] = 0
    # Branch-free: after position i, offsets[slot + 1] holds the elements seen so far, so a
    # new slot finds its start offset already written by the previous position.
    for i in range(n):
        d = dp[i]
        if rp != NULL:
            r = rp[i]
        is_slot = (d >= slot_def) & (r <= slot_rep)
        is_child = (d >= child_def) & (r <= child_rep)
        slot += is_slot
        if slot >= 0:
            vb[slot >> 3] |= <uint8_t>((is_slot & (d >= def_present)) << (slot & 7))
        nulls += is_slot & (d < def_present)
        orphan |= is_child & (slot < 0)
        child += is_child
        if o32 != NULL:
            o32[slot + 1] = <int32_t>child
        elif o64 != NULL:
            o64[slot + 1] = child
    if orphan and offsets_width:
        raise DecodeError("list element before any list slot")
    if offsets is not None:
        offsets = offsets[:slot + 2]
    return slot + 1, (valid if nulls else None), nulls, offsets, child


# The scatter loops run unchecked: scatter_leaf has counted the slots (def >= slot_def) and
# present values (def == max_def) and matched them against n_slots / n_values first, so slot
# stays below n_slots and k at most n_values. A slot where def < max_def is null.

@cython.boundscheck(False)
@cython.wraparound(False)
cdef void scatter_words(const int16_t* defs, Py_ssize_t n, int16_t slot_def, int16_t max_def,
                        const uint8_t* src, int64_t n_values, bint dense, word_t* out,
                        uint8_t* vb) noexcept nogil:
    cdef Py_ssize_t i = 0, j
    cdef int64_t slot = 0, k = 0
    cdef int64_t last = n_values - 1      # n_values > 0 here
    cdef word_t v
    cdef int16_t d
    cdef int b
    cdef uint8_t acc
    if dense:
        # every position is a slot: blocks of 8 make one validity byte; branch-free, the read
        # index clamped so a null after the last value stays in bounds
        while i + 8 <= n:
            acc = 0
            for j in range(8):
                acc |= <uint8_t>((defs[i + j] == max_def) << j)
            vb[i >> 3] = acc
            if acc == 0xFF:
                memcpy(out + i, src + k * sizeof(word_t), 8 * sizeof(word_t))
                k += 8
            elif k + 8 <= n_values:             # no read can pass the last value
                for j in range(8):
                    b = (acc >> j) & 1
                    memcpy(&v, src + k * sizeof(word_t), sizeof(word_t))
                    out[i + j] = v & <word_t>(-b)
                    k += b
            else:
                for j in range(8):
                    b = (acc >> j) & 1
                    memcpy(&v, src + (k - (k > last)) * sizeof(word_t), sizeof(word_t))
                    out[i + j] = v & <word_t>(-b)
                    k += b
            i += 8
        slot = i
    for i in range(i, n):
        d = defs[i]
        if d < slot_def:
            continue
        b = d == max_def
        memcpy(&v, src + (k - (k > last)) * sizeof(word_t), sizeof(word_t))
        out[slot] = v & <word_t>(-b)
        k += b
        vb[slot >> 3] |= <uint8_t>(b << (slot & 7))
        slot += 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void scatter_bytes(const int16_t* defs, Py_ssize_t n, int16_t slot_def, int16_t max_def,
                        const uint8_t* src, int64_t width, uint8_t* out,
                        uint8_t* vb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t slot = 0, k = 0
    cdef int16_t d
    for i in range(n):
        d = defs[i]
        if d < slot_def:
            continue
        if d == max_def:
            memcpy(out + slot * width, src + k * width, width)
            vb[slot >> 3] |= <uint8_t>(1 << (slot & 7))
            k += 1
        else:
            memset(out + slot * width, 0, width)
        slot += 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void scatter_bits(const int16_t* defs, Py_ssize_t n, int16_t slot_def, int16_t max_def,
                       const uint8_t* src, int64_t src_off, uint8_t* out,
                       uint8_t* vb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t slot = 0, k = 0
    cdef int16_t d
    for i in range(n):
        d = defs[i]
        if d < slot_def:
            continue
        if d == max_def:
            vb[slot >> 3] |= <uint8_t>(1 << (slot & 7))
            out[slot >> 3] |= <uint8_t>(getbit(src, src_off + k) << (slot & 7))
            k += 1
        slot += 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void scatter_offsets(const int16_t* defs, Py_ssize_t n, int16_t slot_def, int16_t max_def,
                          const offset_t* src, offset_t* out, uint8_t* vb) noexcept nogil:
    """Binary values: slot offsets into the values' own data buffer (null slots empty)."""
    cdef Py_ssize_t i
    cdef int64_t slot = 0, k = 0
    cdef int16_t d
    cdef int b
    for i in range(n):
        d = defs[i]
        if d < slot_def:
            continue
        b = d == max_def
        out[slot] = src[k]
        vb[slot >> 3] |= <uint8_t>(b << (slot & 7))
        k += b
        slot += 1
    out[slot] = src[k]


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void scatter_indices(const int16_t* defs, Py_ssize_t n, int16_t slot_def, int16_t max_def,
                          int64_t* out, uint8_t* vb) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t slot = 0, k = 0
    cdef int16_t d
    cdef int b
    for i in range(n):
        d = defs[i]
        if d < slot_def:
            continue
        b = d == max_def
        out[slot] = k if b else 0
        vb[slot >> 3] |= <uint8_t>(b << (slot & 7))
        k += b
        slot += 1


def scatter_leaf(const int16_t[::1] defs, int slot_def, int max_def, int mode, object src,
                 int64_t src_off, int64_t width, int64_t n_values, int64_t n_slots,
                 object alloc=None):
    """Spread a leaf's decoded non-null values over its slots (nulls where def < max_def).

    Args:
        defs: the leaf's int16 definition levels.
        slot_def: def level at which the leaf has a slot.
        max_def: the leaf's maximum definition level (a present value).
        mode: 0 fixed-width bytes, 1 boolean bits, 2 / 3 int32 / int64 binary offsets,
            4 take indices.
        src: buffer of the values (data for mode 0, bitmap for 1, offsets for 2 / 3; unused by 4).
        src_off: the values array's offset (in values).
        width: bytes per value for mode 0.
        n_values: number of decoded values; must equal the count of ``def == max_def``.
        n_slots: number of slots (``def >= slot_def``), from ``check_levels``.
        alloc: optional ``alloc(nbytes) -> writable buffer`` for the outputs.

    Returns:
        ``(validity, null_count, payload)``: an LSB validity bitmap (numpy uint8), and the
        scattered data: mode 0 ``n_slots * width`` bytes (zero in null slots), 1 a bitmap,
        2 / 3 offsets of ``n_slots + 1`` entries pointing into the values' data buffer,
        4 int64 take indices.

    Raises:
        DecodeError: the levels and the value / slot counts disagree, or a short buffer.
    """
    cdef Py_ssize_t n = defs.shape[0]
    cdef const int16_t* dp = &defs[0] if n else NULL
    cdef list keep = []
    cdef const uint8_t* sp = NULL
    cdef int64_t slots = 0, present = 0
    cdef bint dense
    cdef Py_ssize_t i
    cdef uint8_t* ob
    cdef uint8_t* vb
    if mode < S_FIXED or mode > S_TAKE or width < 0 or n_values < 0 or src_off < 0:
        raise ValueError("invalid scatter arguments")
    for i in range(n):                          # count first, then loop unchecked
        slots += dp[i] >= slot_def
        present += dp[i] == max_def
    if slots != n_slots or present != n_values or max_def < slot_def:
        raise DecodeError(f"levels hold {present} values in {slots} slots, expected "
                          f"{n_values} in {n_slots}")
    dense = slots == n
    if mode == S_FIXED:
        if width == 0:
            raise ValueError("fixed-width scatter needs width > 0")
        sp = buf_ptr(src, keep, (src_off + n_values) * width, "values", DecodeError)
        sp += src_off * width
        payload = new_array(alloc, n_slots * width, np.uint8)
    elif mode == S_BOOL:
        sp = buf_ptr(src, keep, (src_off + n_values + 7) >> 3, "values", DecodeError)
        payload = new_array(alloc, (n_slots >> 3) + 1, np.uint8, True)
    elif mode == S_BIN32:
        sp = buf_ptr(src, keep, (src_off + n_values + 1) * 4, "offsets", DecodeError)
        sp += src_off * 4
        payload = new_array(alloc, n_slots + 1, np.int32)
    elif mode == S_BIN64:
        sp = buf_ptr(src, keep, (src_off + n_values + 1) * 8, "offsets", DecodeError)
        sp += src_off * 8
        payload = new_array(alloc, n_slots + 1, np.int64)
    else:
        payload = new_array(alloc, n_slots, np.int64)
    ob = <uint8_t*>np_addr(payload)
    valid = new_array(alloc, (n_slots >> 3) + 1, np.uint8, True)
    vb = <uint8_t*>np_addr(valid)
    with nogil:
        if mode == S_FIXED:
            if n_values == 0 or not (width == 1 or width == 2 or width == 4 or width == 8):
                scatter_bytes(dp, n, slot_def, max_def, sp, width, ob, vb)
            elif width == 1:
                scatter_words(dp, n, slot_def, max_def, sp, n_values, dense, <uint8_t*>ob, vb)
            elif width == 2:
                scatter_words(dp, n, slot_def, max_def, sp, n_values, dense, <uint16_t*>ob, vb)
            elif width == 4:
                scatter_words(dp, n, slot_def, max_def, sp, n_values, dense, <uint32_t*>ob, vb)
            else:
                scatter_words(dp, n, slot_def, max_def, sp, n_values, dense, <uint64_t*>ob, vb)
        elif mode == S_BOOL:
            scatter_bits(dp, n, slot_def, max_def, sp, src_off, ob, vb)
        elif mode == S_BIN32:
            scatter_offsets(dp, n, slot_def, max_def, <const int32_t*>sp, <int32_t*>ob, vb)
        elif mode == S_BIN64:
            scatter_offsets(dp, n, slot_def, max_def, <const int64_t*>sp, <int64_t*>ob, vb)
        else:
            scatter_indices(dp, n, slot_def, max_def, <int64_t*>ob, vb)
    return valid, n_slots - n_values, payload


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t count_bits(const uint8_t* bm, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Set bits in ``[start, start + n)``."""
    cdef Py_ssize_t count = 0, pos = start, end = start + n
    while pos < end and (pos & 63):
        count += getbit(bm, pos)
        pos += 1
    while end - pos >= 64:
        count += popcount64(load_u64(bm + (pos >> 3)))
        pos += 64
    while pos < end:
        count += getbit(bm, pos)
        pos += 1
    return count


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void spread_words(uint8_t* p, const uint8_t* bm, Py_ssize_t bit_offset, Py_ssize_t n,
                       Py_ssize_t j, Py_ssize_t width) noexcept nogil:
    """The loop of ``spread_fixed`` for widths 4 and 8 (``j``: the packed values, which the
    caller has checked equal the set bits). Branch-free per slot: a null slot loads the value
    at ``j`` (in bounds: j <= i) and stores it masked to zero."""
    cdef Py_ssize_t i = n - 1, bit
    cdef uint64_t v, keep
    while i >= 0:
        bit = bit_offset + i
        if (bit & 7) == 7 and i >= 7 and bm[bit >> 3] == 0xFF:
            j -= 8
            if j != i - 7:
                memmove(p + (i - 7) * width, p + j * width, 8 * width)
            i -= 8
            continue
        keep = getbit(bm, bit)
        j -= <Py_ssize_t>keep
        if width == 8:
            v = load_u64(p + j * 8)
            store_u64(p + i * 8, v & (<uint64_t>0 - keep))
        else:
            v = load_u32(p + j * 4)
            store_u32(p + i * 4, <uint32_t>(v & (<uint64_t>0 - keep)))
        i -= 1


cdef int _check_present(const uint8_t* bm, Py_ssize_t bit_offset, Py_ssize_t n,
                        Py_ssize_t present) except -1:
    """Raise ``DecodeError`` unless bits ``[bit_offset, bit_offset + n)`` of ``bm`` hold
    ``present`` set bits (a page's non-null count against its validity bitmap)."""
    cdef Py_ssize_t set_bits = count_bits(bm, bit_offset, n)
    if set_bits != present:
        raise DecodeError(f"validity bitmap holds {set_bits} values, not {present}")
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def spread_fixed(values, Py_ssize_t width, const uint8_t[::1] bitmap, Py_ssize_t bit_offset,
                 Py_ssize_t n, Py_ssize_t present):
    """Spread ``present`` packed fixed-width values over ``n`` slots, in place.

    ``values`` (writable, ``n * width`` bytes) holds the non-null values packed at its start;
    afterwards value ``i`` sits in slot ``i`` of every bit set in ``bitmap[bit_offset:]`` and
    null slots are zero. Walking backwards, no value is overwritten before it is moved.

    Raises:
        DecodeError: the bitmap's set bits in the range are not ``present``.
        ValueError: buffers too small for ``n`` slots.
    """
    cdef uint8_t[::1] buf = values
    cdef Py_ssize_t i, j = present
    cdef uint8_t* p
    cdef const uint8_t* bm
    if n < 0 or width <= 0 or present < 0 or present > n or buf.shape[0] < n * width \
            or bit_offset < 0 or bit_offset + n > 8 * bitmap.shape[0]:
        raise ValueError("spread_fixed: buffers too small or counts out of range")
    if n == 0:
        return
    bm = &bitmap[0]
    _check_present(bm, bit_offset, n, present)
    if present == n:
        return
    p = &buf[0]
    if width == 8 or width == 4:
        spread_words(p, bm, bit_offset, n, j, width)
        return
    i = n - 1
    while i >= 0:
        if getbit(bm, bit_offset + i):
            j -= 1
            if j != i:
                memcpy(p + i * width, p + j * width, width)
        else:
            memset(p + i * width, 0, width)
        i -= 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _spread_from(const uint8_t* sp, uint8_t* dp, const Py_ssize_t width,
                              const uint8_t* bm, Py_ssize_t bit_offset, Py_ssize_t n,
                              Py_ssize_t present) noexcept nogil:
    """The loop of ``spread_fixed_from`` (counts checked by the caller). Whole bitmap bytes:
    all set is one copy of 8 values, none set 8 zeroed slots; a mixed byte is branch-free
    for widths 4, 8 and 16 while 8 more source values exist (a null slot loads the next value and
    stores it masked to zero); the rest goes slot by slot."""
    cdef Py_ssize_t i = 0, j = 0, bit, k
    cdef uint8_t b
    cdef uint64_t keep
    while i < n:
        bit = bit_offset + i
        if (bit & 7) == 0 and n - i >= 8:
            b = bm[bit >> 3]
            if b == 0xFF:  # a run of full bytes: one copy
                k = 8
                while n - i - k >= 8 and bm[(bit + k) >> 3] == 0xFF:
                    k += 8
                memcpy(dp + i * width, sp + j * width, k * width)
                i += k
                j += k
                continue
            if b == 0:
                memset(dp + i * width, 0, 8 * width)
                i += 8
                continue
            if (width == 16 or width == 8 or width == 4) and j + 8 <= present:
                for k in range(8):
                    keep = (b >> k) & 1
                    if width == 16:
                        store_u64(dp + (i + k) * 16, load_u64(sp + j * 16) & (<uint64_t>0 - keep))
                        store_u64(dp + (i + k) * 16 + 8,
                                  load_u64(sp + j * 16 + 8) & (<uint64_t>0 - keep))
                    elif width == 8:
                        store_u64(dp + (i + k) * 8, load_u64(sp + j * 8) & (<uint64_t>0 - keep))
                    else:
                        store_u32(dp + (i + k) * 4,
                                  <uint32_t>(load_u32(sp + j * 4) & (<uint64_t>0 - keep)))
                    j += <Py_ssize_t>keep
                i += 8
                continue
        if getbit(bm, bit):
            memcpy(dp + i * width, sp + j * width, width)
            j += 1
        else:
            memset(dp + i * width, 0, width)
        i += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def spread_fixed_from(src, out, Py_ssize_t width, const uint8_t[::1] bitmap,
                      Py_ssize_t bit_offset, Py_ssize_t n, Py_ssize_t present):
    """Spread ``present`` packed fixed-width values read from ``src`` over ``n`` slots of
    ``out``: ``spread_fixed`` without first copying the values into the slots (one pass over
    a PLAIN page's values section).

    ``src``: any C-contiguous buffer of at least ``present * width`` bytes; ``out``: writable,
    at least ``n * width`` bytes, not overlapping ``src``. Afterwards slot ``i`` of every bit
    set in ``bitmap[bit_offset:]`` holds the next source value and null slots are zero.

    Raises:
        DecodeError: the bitmap's set bits in the range are not ``present``.
        ValueError: buffers too small for the counts, or counts out of range.
    """
    cdef const uint8_t[::1] s = byte_view(src)
    cdef uint8_t[::1] d = out
    if n < 0 or width <= 0 or present < 0 or present > n or s.shape[0] < present * width \
            or d.shape[0] < n * width or bit_offset < 0 or bit_offset + n > 8 * bitmap.shape[0]:
        raise ValueError("spread_fixed_from: buffers too small or counts out of range")
    if n == 0:
        return
    cdef const uint8_t* bm = &bitmap[0]
    _check_present(bm, bit_offset, n, present)
    cdef const uint8_t* sp = &s[0] if present else NULL
    cdef uint8_t* dp = &d[0]
    with nogil:
        if width == 8:
            _spread_from(sp, dp, 8, bm, bit_offset, n, present)
        elif width == 16:  # decimal128
            _spread_from(sp, dp, 16, bm, bit_offset, n, present)
        elif width == 4:
            _spread_from(sp, dp, 4, bm, bit_offset, n, present)
        else:
            _spread_from(sp, dp, width, bm, bit_offset, n, present)


ctypedef fused spread_offset_t:
    int32_t
    int64_t


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _spread_offsets(spread_offset_t* o, const uint8_t* bm, Py_ssize_t bit_offset,
                          Py_ssize_t n, Py_ssize_t present) noexcept nogil:
    """The loop of ``spread_offsets``: backward, so every read is of a packed end offset not
    yet overwritten (slot ``i`` reads packed entry ``k - 1 <= i``); it stops where every
    slot before is valid (the packed offsets are then already in place)."""
    cdef Py_ssize_t i = n - 1, k = present
    cdef spread_offset_t base = o[-1]
    while i >= 0 and k <= i:
        o[i] = o[k - 1] if k else base
        if getbit(bm, bit_offset + i):
            k -= 1
        i -= 1


@cython.boundscheck(False)
@cython.wraparound(False)
def spread_offsets(offsets, const uint8_t[::1] bitmap, Py_ssize_t bit_offset,
                   Py_ssize_t first, Py_ssize_t n, Py_ssize_t present):
    """Spread a page's ``present`` packed BYTE_ARRAY end offsets over its ``n`` slots, in place.

    ``offsets``: Arrow offsets (1-D int32 or int64, writable) whose entries
    ``[first + 1, first + 1 + present)`` are the end offsets of the page's non-null values,
    ``offsets[first]`` where they start. Afterwards ``offsets[first + 1 + i]`` ends slot
    ``i``, the slots being the bits ``[bit_offset, bit_offset + n)`` of ``bitmap``: a null
    slot is an empty value (it ends where the slot before ends). The data is not moved.

    Raises:
        DecodeError: the bitmap's set bits in the range are not ``present``.
        ValueError: arrays too small for the counts, or counts out of range.
    """
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    cdef Py_ssize_t size
    cdef bint wide = offsets.dtype.itemsize == 8
    if wide:
        o64 = offsets
        size = o64.shape[0]
    else:
        o32 = offsets
        size = o32.shape[0]
    if n < 0 or present < 0 or present > n or first < 0 or first + 1 + n > size \
            or bit_offset < 0 or bit_offset + n > 8 * bitmap.shape[0]:
        raise ValueError("spread_offsets: arrays too small or counts out of range")
    if n == 0:
        return
    cdef const uint8_t* bm = &bitmap[0]
    _check_present(bm, bit_offset, n, present)
    with nogil:
        if wide:
            _spread_offsets(&o64[0] + first + 1, bm, bit_offset, n, present)
        else:
            _spread_offsets(&o32[0] + first + 1, bm, bit_offset, n, present)
