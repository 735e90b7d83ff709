# cython: language_level=3
"""Definition / repetition levels (Dremel shredding) from Arrow validity bitmaps and list offsets.

``shred_leaf`` walks the chain of Arrow arrays from a top-level column down to one leaf (struct,
list / large_list / fixed_size_list / map levels, each with its validity bitmap and array
offset) and writes that leaf's def / rep levels, plus the leaf's present values (gathered for
fixed-width and boolean leaves, a selection bitmap otherwise). A counting pass sizes the outputs
first; each output is allocated once. The read side lives in ``levels_assemble``.

A null at a level writes the def level of its parent; an empty list writes the list's own def
level; each element of a list gets the list's rep level except the first, which inherits the
rep level of the position that opened the list (0 at the start of a record).
"""

cimport cython
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free
from levelbits cimport getbit, np_addr, buf_ptr, new_array

import numpy as np

from metaindex.errors import EncodeError

cdef enum:
    K_ONE = 0       # struct or leaf: slot i of the child is slot i of the node
    K_LIST32 = 1    # list / map, int32 offsets
    K_LIST64 = 2    # large_list, int64 offsets
    K_FIXED = 3     # fixed_size_list

cdef enum:
    G_SLICE = 0     # present values are leaf[lo:hi] (no gaps, no nulls): nothing to write
    G_FIXED = 1     # gather fixed-width values (width bytes each)
    G_BOOL = 2      # gather boolean bits
    G_MASK = 3      # write a selection bitmap over leaf[lo:hi]

cdef enum:
    MAX_DEPTH = 1000


cdef struct Step:
    int kind
    bint nullable
    const uint8_t* valid        # NULL: no nulls
    int64_t voff                # array offset: bit offset in valid, index base in offsets
    int64_t length
    const int32_t* off32
    const int64_t* off64
    int64_t size                # fixed_size_list size
    int64_t child_len
    int16_t def_present
    int16_t rep_child
    bint flat                   # no list at this step or below


cdef struct Shred:
    Step* steps
    int last
    int16_t* defs
    int16_t* reps
    int64_t cap
    int64_t pos
    int64_t lo
    int64_t hi
    bint any_range
    bint contiguous
    int gmode
    const uint8_t* src
    int64_t src_off
    int64_t width
    uint8_t* out
    int64_t k
    bint prefilled      # defs / reps hold the leaf def / element rep (fill_list_of_leaves)


cdef inline bint is_null(const Step* p, int64_t i) noexcept nogil:
    return p.valid != NULL and not getbit(p.valid, p.voff + i)


cdef int null_error(int d, int64_t i) except -1:
    raise EncodeError(f"non-nullable level {d} holds a null at index {i}")


cdef int offsets_error(int64_t i, int64_t cs, int64_t ce, int64_t child_len) except -1:
    raise EncodeError(f"invalid list offsets at entry {i}: [{cs}, {ce}) outside a child of "
                      f"length {child_len}")


cdef int internal_error() except -1:
    raise RuntimeError("levels kernel: count and fill passes disagree")


cdef inline int child_range(const Step* p, int64_t i, int64_t* cs, int64_t* ce) except -1:
    cdef int64_t j = p.voff + i
    if p.kind == K_LIST32:
        cs[0] = p.off32[j]
        ce[0] = p.off32[j + 1]
    elif p.kind == K_LIST64:
        cs[0] = p.off64[j]
        ce[0] = p.off64[j + 1]
    elif p.size == 0:
        cs[0] = 0
        ce[0] = 0
    elif j > p.child_len // p.size:     # j * size would pass the child (or overflow)
        return offsets_error(i, j, j, p.child_len)
    else:
        cs[0] = j * p.size
        ce[0] = cs[0] + p.size
    if cs[0] < 0 or ce[0] < cs[0] or ce[0] > p.child_len:
        return offsets_error(i, cs[0], ce[0], p.child_len)
    return 0


cdef int overlap_error() except -1:
    raise EncodeError("list offsets are not monotonic (leaf ranges overlap)")


cdef inline int note_range(Shred* sh, int64_t s, int64_t e) except -1:
    """Record the leaf slots [s, e) as reached; they must come in ascending, disjoint order."""
    if s >= e:
        return 0
    if not sh.any_range:
        sh.lo = s
        sh.hi = e
        sh.any_range = True
        return 0
    if s < sh.hi:
        return overlap_error()
    if s != sh.hi:
        sh.contiguous = False
    sh.hi = e
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int64_t count_plain_list(Shred* sh, const Step* p, int64_t s, int64_t e) except -1:
    """Levels of entries [s, e) of a null-free int32 / int64 list over a flat tail."""
    cdef int64_t i, cs, ce, total = 0, first, last
    cdef bint bad = False
    cdef const int32_t* o32 = p.off32 + p.voff
    cdef const int64_t* o64 = p.off64 + p.voff
    if p.kind == K_LIST32:
        for i in range(s, e):
            cs = o32[i]
            ce = o32[i + 1]
            bad |= ce < cs
            total += (ce - cs) + (ce == cs)
        first, last = o32[s], o32[e]
    else:
        for i in range(s, e):
            cs = o64[i]
            ce = o64[i + 1]
            bad |= ce < cs
            total += (ce - cs) + (ce == cs)
        first, last = o64[s], o64[e]
    if bad or first < 0 or last > p.child_len:
        for i in range(s, e):
            child_range(p, i, &cs, &ce)     # raises on the first bad entry
        return offsets_error(s, first, last, p.child_len)
    note_range(sh, first, last)
    return total


cdef int64_t count(Shred* sh, int d, int64_t s, int64_t e) except -1:
    """Levels produced by slots [s, e) of step d (exact; flat tails in O(1))."""
    cdef Step* p = &sh.steps[d]
    cdef int64_t total = 0, i, rs, cs = 0, ce = 0
    if p.flat:
        note_range(sh, s, e)
        return e - s
    if p.kind == K_ONE:
        i = s
        while i < e:
            if is_null(p, i):
                total += 1
                i += 1
            else:
                rs = i
                while i < e and not is_null(p, i):
                    i += 1
                total += count(sh, d + 1, rs, i)
        return total
    if sh.steps[d + 1].flat and p.valid == NULL and p.kind != K_FIXED and e > s:
        # innermost list without nulls: entry ranges chain, one contiguous leaf range
        return count_plain_list(sh, p, s, e)
    if sh.steps[d + 1].flat:
        # the common innermost list: its elements map straight onto leaf slots
        for i in range(s, e):
            if is_null(p, i):
                total += 1
                continue
            child_range(p, i, &cs, &ce)
            if cs == ce:
                total += 1
            else:
                note_range(sh, cs, ce)
                total += ce - cs
        return total
    for i in range(s, e):
        if is_null(p, i):
            total += 1
            continue
        child_range(p, i, &cs, &ce)
        if cs == ce:
            total += 1
        else:
            total += count(sh, d + 1, cs, ce)
    return total


cdef inline int emit(Shred* sh, int16_t dl, int16_t rl) except -1:
    if sh.pos >= sh.cap:
        return internal_error()
    sh.defs[sh.pos] = dl
    if sh.reps != NULL:
        sh.reps[sh.pos] = rl
    sh.pos += 1
    return 0


ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int64_t gather_words(const uint8_t* valid, int64_t bit0, int64_t n, int16_t dnull,
                          int16_t* dp, const uint8_t* src, word_t* out,
                          int64_t k) noexcept nogil:
    """Levels of n leaf slots and their present values (src[j] where bit bit0 + j is set).

    Branch-free per value: the value is written at out[k] and k advances when it is present
    (k stays below the reached slot count, which sized out). Whole validity bytes at a time,
    with a straight copy when all eight are valid. Returns the new k.
    """
    cdef int64_t j = 0, jj
    cdef int b
    cdef uint8_t byte
    cdef word_t v
    while j < n:
        if ((bit0 + j) & 7) == 0 and j + 8 <= n:
            byte = valid[(bit0 + j) >> 3]
            if byte == 0xFF:
                for jj in range(8):
                    dp[j + jj] = dnull + 1
                memcpy(out + k, src + j * sizeof(word_t), 8 * sizeof(word_t))
                k += 8
            else:
                for jj in range(8):
                    b = (byte >> jj) & 1
                    dp[j + jj] = dnull + b
                    memcpy(&v, src + (j + jj) * sizeof(word_t), sizeof(word_t))
                    out[k] = v
                    k += b
            j += 8
        else:
            b = getbit(valid, bit0 + j)
            dp[j] = dnull + b
            memcpy(&v, src + j * sizeof(word_t), sizeof(word_t))
            out[k] = v
            k += b
            j += 1
    return k


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int fill_leaf(Shred* sh, const Step* p, int64_t s, int64_t e,
                   int16_t rep_first, int16_t rep_rest) except -1:
    cdef int64_t n = e - s, j, i, k, w, lo
    cdef int16_t* dp
    cdef int16_t dpres = p.def_present, dnull = p.def_present - 1
    cdef int b
    cdef const uint8_t* src
    cdef const uint8_t* valid = p.valid
    cdef uint8_t* out
    if n <= 0:
        return 0
    if sh.pos + n > sh.cap:
        return internal_error()
    dp = sh.defs + sh.pos
    if sh.reps != NULL:
        sh.reps[sh.pos] = rep_first
        for j in range(1, n):
            sh.reps[sh.pos + j] = rep_rest
    k = sh.k
    w = sh.width
    out = sh.out
    src = sh.src
    lo = sh.lo
    if valid == NULL:
        for j in range(n):
            dp[j] = dpres
        if sh.gmode == G_FIXED:
            memcpy(out + k * w, src + (sh.src_off + s) * w, n * w)
        elif sh.gmode == G_BOOL:
            for j in range(n):
                if getbit(src, sh.src_off + s + j):
                    out[(k + j) >> 3] |= <uint8_t>(1 << ((k + j) & 7))
        elif sh.gmode == G_MASK:
            for j in range(s - lo, e - lo):
                out[j >> 3] |= <uint8_t>(1 << (j & 7))
        sh.k = k + n
        sh.pos += n
        return 0
    if not p.nullable:
        for j in range(n):
            if not getbit(valid, p.voff + s + j):
                return null_error(sh.last, s + j)
    if sh.gmode == G_FIXED and (w == 1 or w == 2 or w == 4 or w == 8):
        src += (sh.src_off + s) * w
        if w == 8:
            k = gather_words(valid, p.voff + s, n, dnull, dp, src, <uint64_t*>out, k)
        elif w == 4:
            k = gather_words(valid, p.voff + s, n, dnull, dp, src, <uint32_t*>out, k)
        elif w == 2:
            k = gather_words(valid, p.voff + s, n, dnull, dp, src, <uint16_t*>out, k)
        else:
            k = gather_words(valid, p.voff + s, n, dnull, dp, src, <uint8_t*>out, k)
    elif sh.gmode == G_FIXED:
        for j in range(n):
            i = s + j
            b = getbit(valid, p.voff + i)
            dp[j] = dnull + b
            if b:
                memcpy(out + k * w, src + (sh.src_off + i) * w, w)
                k += 1
    elif sh.gmode == G_BOOL:
        for j in range(n):
            i = s + j
            b = getbit(valid, p.voff + i)
            dp[j] = dnull + b
            out[k >> 3] |= <uint8_t>((b & getbit(src, sh.src_off + i)) << (k & 7))
            k += b
    else:   # G_MASK
        for j in range(n):
            i = s + j
            b = getbit(valid, p.voff + i)
            dp[j] = dnull + b
            out[(i - lo) >> 3] |= <uint8_t>(b << ((i - lo) & 7))
            k += b
    sh.k = k
    sh.pos += n
    return 0


cdef inline void list_bounds(const Step* p, int64_t i, int64_t* cs, int64_t* ce) noexcept nogil:
    """Child range of entry i of a list step whose offsets the count pass already validated."""
    cdef int64_t j = p.voff + i
    if p.kind == K_LIST32:
        cs[0] = p.off32[j]
        ce[0] = p.off32[j + 1]
    elif p.kind == K_LIST64:
        cs[0] = p.off64[j]
        ce[0] = p.off64[j + 1]
    else:
        cs[0] = j * p.size
        ce[0] = cs[0] + p.size


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int fill_list_of_leaves(Shred* sh, const Step* p, int64_t s, int64_t e,
                             int16_t rep_first, int16_t rep_rest) except -1:
    """Innermost list over a null-free leaf (G_SLICE / G_FIXED).

    shred_leaf prefilled defs / reps with the leaf's def and the list's element rep, so only
    the first position of each list entry (and null / empty entries) is written here.
    """
    cdef int64_t i, n, cs = 0, ce = 0
    cdef int64_t pos = sh.pos, cap = sh.cap, k = sh.k, w = sh.width
    cdef int16_t* defs = sh.defs
    cdef int16_t* reps = sh.reps
    cdef int16_t rep = rep_first
    cdef int16_t dnull = p.def_present - 1, dempty = p.def_present
    cdef bint gather = sh.gmode == G_FIXED
    for i in range(s, e):
        if is_null(p, i):
            if not p.nullable:
                return null_error(sh.last - 1, i)
            n = 0
            if pos >= cap:
                return internal_error()
            defs[pos] = dnull
        else:
            list_bounds(p, i, &cs, &ce)
            n = ce - cs
            if n < 0 or pos + n > cap or (n == 0 and pos >= cap):
                return internal_error()
            if n == 0:
                defs[pos] = dempty
            elif gather:
                if cs < sh.lo or ce > sh.hi:
                    return internal_error()
                memcpy(sh.out + k * w, sh.src + (sh.src_off + cs) * w, n * w)
        reps[pos] = rep
        pos += n if n else 1
        k += n
        rep = rep_rest
    sh.pos = pos
    sh.k = k
    return 0


cdef int fill(Shred* sh, int d, int64_t s, int64_t e, int16_t rep_first,
              int16_t rep_rest) except -1:
    cdef Step* p = &sh.steps[d]
    cdef int64_t i, rs, cs = 0, ce = 0
    cdef int16_t rep = rep_first
    if d == sh.last:
        return fill_leaf(sh, p, s, e, rep_first, rep_rest)
    if p.kind == K_ONE:
        i = s
        while i < e:
            if is_null(p, i):
                if not p.nullable:
                    return null_error(d, i)
                emit(sh, p.def_present - 1, rep)
                i += 1
            else:
                rs = i
                while i < e and not is_null(p, i):
                    i += 1
                fill(sh, d + 1, rs, i, rep, rep_rest)
            rep = rep_rest
        return 0
    if sh.prefilled and d + 1 == sh.last:
        return fill_list_of_leaves(sh, p, s, e, rep_first, rep_rest)
    for i in range(s, e):
        if is_null(p, i):
            if not p.nullable:
                return null_error(d, i)
            emit(sh, p.def_present - 1, rep)
        else:
            child_range(p, i, &cs, &ce)
            if cs == ce:
                emit(sh, p.def_present, rep)
            else:
                fill(sh, d + 1, cs, ce, rep, p.rep_child)
        rep = rep_rest
    return 0


def shred_leaf(list steps, bint with_reps, object leaf_values, int64_t width,
               object alloc=None):
    """Compute one leaf column's def / rep levels and present values from its Arrow chain.

    Args:
        steps: one tuple per Arrow level from the top-level column down to the leaf:
            ``(kind, validity, offset, length, nullable, def_present, offsets, rep_child, size,
            child_len)``. ``kind`` is 0 (struct or leaf), 1 (int32 list offsets), 2 (int64
            offsets) or 3 (fixed-size list of ``size``); ``validity`` is the Arrow LSB bitmap or
            None when the array has no nulls; ``offset`` / ``length`` are the array's; ``nullable``
            says the level is OPTIONAL (a null in a non-nullable level raises EncodeError);
            ``def_present`` is the def level when the node is present; ``offsets`` the list offsets
            buffer; ``rep_child`` the rep level of the list's elements; ``child_len`` the length of
            the list's child array (of the leaf itself for the last step).
        with_reps: produce repetition levels (max_rep > 0).
        leaf_values: the leaf's value buffer for gathering (None: write a selection bitmap).
        width: bytes per value to gather, or 0 for a boolean bitmap (ignored without buffer).
        alloc: optional ``alloc(nbytes) -> writable buffer`` for the outputs (e.g.
            ``pyarrow.allocate_buffer``); numpy allocates them when None.

    Returns:
        ``(defs, reps, mode, payload, lo, hi, n_present)``: int16 levels (reps None without
        ``with_reps``); mode 0 = the present values are ``leaf[lo:hi]``, 1 = ``payload`` holds
        n_present gathered values of ``width`` bytes, 2 = ``payload`` a bitmap of n_present
        booleans, 3 = ``payload`` a selection bitmap over ``leaf[lo:hi]``.

    Raises:
        EncodeError: nulls in a non-nullable level, invalid offsets or short buffers.
    """
    cdef int nsteps = len(steps)
    cdef Step* st
    cdef Shred sh
    cdef list keep = []
    cdef int d, kind
    cdef int64_t total, top_len, off, length
    cdef bint flat = True
    cdef bint leaf_clean
    if nsteps < 1 or nsteps > MAX_DEPTH:
        raise EncodeError(f"nesting depth {nsteps} out of range")
    st = <Step*>malloc(nsteps * sizeof(Step))
    if st == NULL:
        raise MemoryError()
    try:
        memset(st, 0, nsteps * sizeof(Step))
        for d in range(nsteps):
            (kind, validity, off, length, nullable, def_present, offsets, rep_child, size,
             child_len) = steps[d]
            if off < 0 or length < 0 or child_len < 0 or kind < K_ONE or kind > K_FIXED:
                raise EncodeError(f"invalid step {d}: {steps[d]!r}")
            st[d].kind = kind
            st[d].nullable = nullable
            st[d].voff = off
            st[d].length = length
            st[d].def_present = def_present
            st[d].rep_child = rep_child
            st[d].size = size
            st[d].child_len = child_len
            st[d].valid = buf_ptr(
                validity, keep, (off + length + 7) >> 3, "validity", EncodeError)
            if kind == K_LIST32:
                st[d].off32 = <const int32_t*>buf_ptr(
                    offsets, keep, (off + length + 1) * 4, "offsets", EncodeError)
                if st[d].off32 == NULL:
                    raise EncodeError("list step without offsets")
            elif kind == K_LIST64:
                st[d].off64 = <const int64_t*>buf_ptr(
                    offsets, keep, (off + length + 1) * 8, "offsets", EncodeError)
                if st[d].off64 == NULL:
                    raise EncodeError("list step without offsets")
            elif kind == K_FIXED and size < 0:
                raise EncodeError("negative fixed-size list size")
            if d == nsteps - 1 and kind != K_ONE:
                raise EncodeError("the last step must be a leaf")
            if kind != K_ONE and not with_reps:
                raise EncodeError("a list level needs repetition levels")
        leaf_clean = True
        for d in range(nsteps - 1, -1, -1):
            if st[d].kind != K_ONE:
                flat = False
            st[d].flat = flat
            if flat and st[d].valid != NULL:
                leaf_clean = False
        for d in range(1, nsteps):
            if st[d].length != st[d - 1].child_len and st[d - 1].kind != K_ONE:
                raise EncodeError(f"step {d} length {st[d].length} != list child length")
            if st[d - 1].kind == K_ONE and st[d].length != st[d - 1].length:
                raise EncodeError(f"struct child at step {d} has length {st[d].length}, "
                                  f"not {st[d - 1].length}")

        memset(&sh, 0, sizeof(Shred))
        sh.steps = st
        sh.last = nsteps - 1
        sh.contiguous = True
        top_len = st[0].length
        total = count(&sh, 0, 0, top_len)

        defs = new_array(alloc, total, np.int16)
        reps = new_array(alloc, total, np.int16) if with_reps else None
        sh.cap = total
        if total:
            sh.defs = <int16_t*>np_addr(defs)
            if with_reps:
                sh.reps = <int16_t*>np_addr(reps)
        if sh.contiguous and leaf_clean:
            sh.gmode = G_SLICE
            payload = None
        elif leaf_values is not None and width > 0:
            sh.gmode = G_FIXED
            sh.width = width
            sh.src_off = st[nsteps - 1].voff
            sh.src = buf_ptr(leaf_values, keep, (sh.src_off + sh.hi) * width, "leaf values",
                             EncodeError)
            payload = new_array(alloc, max(sh.hi - sh.lo, 1) * width, np.uint8)
        elif leaf_values is not None:
            sh.gmode = G_BOOL
            sh.src_off = st[nsteps - 1].voff
            sh.src = buf_ptr(leaf_values, keep, (sh.src_off + sh.hi + 7) >> 3, "leaf values",
                             EncodeError)
            payload = new_array(alloc, ((sh.hi - sh.lo) >> 3) + 1, np.uint8, True)
        else:
            sh.gmode = G_MASK
            payload = new_array(alloc, ((sh.hi - sh.lo) >> 3) + 1, np.uint8, True)
        if payload is not None:
            sh.out = <uint8_t*>np_addr(payload)
        if (nsteps >= 2 and st[nsteps - 2].kind != K_ONE and st[nsteps - 1].valid == NULL
                and (sh.gmode == G_SLICE or sh.gmode == G_FIXED)):
            defs.fill(st[nsteps - 1].def_present)
            reps.fill(st[nsteps - 2].rep_child)
            sh.prefilled = True
        fill(&sh, 0, 0, top_len, 0, 0)
        if sh.pos != total:
            raise RuntimeError("levels kernel: count and fill passes disagree")
        return defs, reps, sh.gmode, payload, sh.lo, sh.hi, sh.k
    finally:
        free(st)
