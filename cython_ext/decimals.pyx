# cython: language_level=3
"""FIXED_LEN_BYTE_ARRAY decimals (big-endian two's complement, 1 to 16 bytes) to Arrow's
decimal128 (two little-endian 64-bit limbs, sign-extended), in one pass: each value is read
as whole big-endian words where it can be, byte-swapped and shifted into place, with no
padded copy and no second pass for the high limb.

The page reader converts as it decodes (``read_chunk(decimal128=True)``): PLAIN pages
straight from the page (``decode_plain_decimal128``, ``plain_pages_to_decimal128``), a flat
nullable column's PLAIN values straight into their slots (``spread_plain_decimal128``), and
a dictionary once per chunk (``to_decimal128``), its pages then gathering 16-byte values (a
flat nullable column's straight into their slots: ``gather_spread_decimal128``)."""

cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from boolbits cimport popcount64
from physical cimport byte_view, out_bytes

from metaindex.errors import DecodeError

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define MI_BSWAP64(x) __builtin_bswap64(x)
    #else
    static inline uint64_t MI_BSWAP64(uint64_t x) {
        uint64_t r = 0;
        for (int i = 0; i < 8; i++) { r = (r << 8) | (x & 0xFF); x >>= 8; }
        return r;
    }
    #endif
    /* the largest of k indices, or -1 when one has the top bit set (a branch-free max over
       int32 that the compiler vectorises) */
    static inline int64_t mi_dec_max_index(const uint32_t* idx, Py_ssize_t k) {
        int32_t m = 0, sign = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            int32_t v = (int32_t)idx[i];
            m = v > m ? v : m;
            sign |= v;
        }
        return sign < 0 ? -1 : (int64_t)m;
    }
    """
    uint64_t bswap64 "MI_BSWAP64"(uint64_t x) noexcept nogil
    int64_t max_index "mi_dec_max_index"(const uint32_t* idx, Py_ssize_t k) noexcept nogil


cdef inline int64_t _be_word(const uint8_t* p, Py_ssize_t k) noexcept nogil:
    """The ``k`` (1..8) big-endian bytes at ``p`` as a sign-extended int64."""
    cdef uint64_t v = 0
    memcpy(&v, p, k)  # the bytes first in memory: the top of the word once swapped
    return (<int64_t>bswap64(v)) >> (64 - 8 * k)


cdef inline void _one(const uint8_t* p, const Py_ssize_t width, int64_t* out) noexcept nogil:
    """One value of ``width`` bytes at ``p`` into the two limbs at ``out``."""
    cdef uint64_t w
    cdef int64_t lo
    if width == 8:
        memcpy(&w, p, 8)
        lo = <int64_t>bswap64(w)
        out[0] = lo
        out[1] = lo >> 63
    elif width < 8:
        lo = _be_word(p, width)
        out[0] = lo
        out[1] = lo >> 63
    else:
        memcpy(&w, p + width - 8, 8)
        out[0] = <int64_t>bswap64(w)
        out[1] = _be_word(p, width - 8)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _convert(const uint8_t* src, Py_ssize_t n, Py_ssize_t width,
                   int64_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t lo, hi
    cdef uint64_t w
    if width == 8:
        for i in range(n):
            memcpy(&w, src + 8 * i, 8)
            lo = <int64_t>bswap64(w)
            out[2 * i] = lo
            out[2 * i + 1] = lo >> 63
    elif width < 8:
        for i in range(n):
            lo = _be_word(src + width * i, width)
            out[2 * i] = lo
            out[2 * i + 1] = lo >> 63
    else:
        for i in range(n):
            memcpy(&w, src + width * i + width - 8, 8)
            out[2 * i] = <int64_t>bswap64(w)
            out[2 * i + 1] = _be_word(src + width * i, width - 8)


def to_decimal128(values, Py_ssize_t width, out):
    """Big-endian FIXED_LEN_BYTE_ARRAY decimals as Arrow decimal128 values.

    Args:
        values: ``n * width`` bytes (any C-contiguous buffer).
        width: bytes per value, 1..16.
        out: a writable buffer of exactly ``16 * n`` bytes: two little-endian int64 limbs
            per value, low first, the high one holding the sign.

    Raises:
        ValueError: a width outside 1..16, values not a whole number of widths, or ``out``
            not ``16 * n`` bytes.
    """
    cdef const uint8_t[::1] src = byte_view(values, "values")
    cdef Py_ssize_t n
    if width < 1 or width > 16:
        raise ValueError(f"decimal width {width} is outside 1..16")
    if src.shape[0] % width:
        raise ValueError(f"{src.shape[0]} bytes are not whole {width}-byte values")
    n = src.shape[0] // width
    cdef uint8_t[::1] dst = out_bytes(out, 16 * n)
    if n:
        with nogil:
            _convert(&src[0], n, width, <int64_t*>&dst[0])


def decode_plain_decimal128(data, Py_ssize_t num_values, Py_ssize_t width, out):
    """The first ``num_values`` PLAIN FIXED_LEN_BYTE_ARRAY decimals of ``data`` (a page's
    values section, ``width`` bytes each; bytes after them are left alone) as decimal128 into
    ``out`` (``16 * num_values`` bytes), as ``to_decimal128`` converts them.

    Raises:
        DecodeError: a negative count, or ``data`` too short for the values.
        ValueError: a width outside 1..16, or ``out`` of another size.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    if width < 1 or width > 16:
        raise ValueError(f"decimal width {width} is outside 1..16")
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if src.shape[0] < num_values * width:
        raise DecodeError(
            f"PLAIN page holds {src.shape[0]} bytes, too few for {num_values} values of "
            f"{width} bytes"
        )
    cdef uint8_t[::1] dst = out_bytes(out, 16 * num_values)
    if num_values:
        with nogil:
            _convert(&src[0], num_values, width, <int64_t*>&dst[0])


def plain_pages_to_decimal128(list pages, Py_ssize_t width, out):
    """A run of PLAIN pages' decimals (``(data, num_values)`` each, in order, as for
    ``decode_plain_decimal128``) as decimal128 into ``out``, one page after the other.

    Raises:
        DecodeError: a negative count or a page too short for its values (its position in
            ``pages`` is in the message); pages before it are converted.
        ValueError: a width outside 1..16, or ``out`` not ``16 *`` the pages' values.
    """
    cdef Py_ssize_t npages = len(pages), p, total = 0, n, at = 0
    cdef const uint8_t[::1] src
    if width < 1 or width > 16:
        raise ValueError(f"decimal width {width} is outside 1..16")
    for p in range(npages):
        n = pages[p][1]
        if n < 0:
            raise DecodeError(f"page {p} of {npages}: negative value count {n}")
        total += n
    cdef uint8_t[::1] dst = out_bytes(out, 16 * total)
    for p in range(npages):
        data, n = pages[p]
        if n == 0:
            continue
        src = byte_view(data)
        if src.shape[0] < n * width:
            raise DecodeError(
                f"page {p} of {npages}: {src.shape[0]} bytes, too few for {n} values of "
                f"{width} bytes"
            )
        with nogil:
            _convert(&src[0], n, width, <int64_t*>&dst[16 * at])
        at += n


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _spread(const uint8_t* sp, int64_t* dp, const Py_ssize_t width,
                         const uint8_t* bm, Py_ssize_t bit_offset, Py_ssize_t n,
                         Py_ssize_t present) noexcept nogil:
    """The loop of ``spread_plain_decimal128`` (counts checked by the caller). Whole bitmap
    bytes: all set is 8 values converted in a row, none set 8 zeroed slots; a mixed byte is
    branch-free while 8 more source values exist (a null slot converts the next value and
    stores it masked to zero); the rest goes slot by slot."""
    cdef Py_ssize_t i = 0, j = 0, bit, k
    cdef uint8_t b
    cdef int64_t keep
    cdef int64_t v[2]
    while i < n:
        bit = bit_offset + i
        if (bit & 7) == 0 and n - i >= 8:
            b = bm[bit >> 3]
            if b == 0xFF:
                for k in range(8):
                    _one(sp + (j + k) * width, width, dp + 2 * (i + k))
                i += 8
                j += 8
                continue
            if b == 0:
                memset(dp + 2 * i, 0, 8 * 16)
                i += 8
                continue
            if j + 8 <= present:
                for k in range(8):
                    keep = -<int64_t>((b >> k) & 1)
                    _one(sp + j * width, width, v)
                    dp[2 * (i + k)] = v[0] & keep
                    dp[2 * (i + k) + 1] = v[1] & keep
                    j -= keep
                i += 8
                continue
        if (bm[bit >> 3] >> (bit & 7)) & 1:
            _one(sp + j * width, width, dp + 2 * i)
            j += 1
        else:
            dp[2 * i] = 0
            dp[2 * i + 1] = 0
        i += 1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _spread8(const uint8_t* sp, int64_t* dp, const uint8_t* bm, Py_ssize_t bit_offset,
                   Py_ssize_t n, Py_ssize_t present) noexcept nogil:
    """``_spread`` for 8-byte decimals (the common decimal(18, s)), its conversions written
    out so that they stay in registers."""
    cdef Py_ssize_t i = 0, j = 0, bit, k
    cdef uint8_t b
    cdef int64_t keep, lo
    cdef uint64_t w
    while i < n:
        bit = bit_offset + i
        if (bit & 7) == 0 and n - i >= 8:
            b = bm[bit >> 3]
            if b == 0xFF:
                _convert(sp + 8 * j, 8, 8, dp + 2 * i)
                i += 8
                j += 8
                continue
            if b == 0:
                memset(dp + 2 * i, 0, 8 * 16)
                i += 8
                continue
            if j + 8 <= present:
                for k in range(8):
                    keep = -<int64_t>((b >> k) & 1)
                    memcpy(&w, sp + 8 * j, 8)
                    lo = <int64_t>bswap64(w)
                    dp[2 * (i + k)] = lo & keep
                    dp[2 * (i + k) + 1] = (lo >> 63) & keep
                    j -= keep
                i += 8
                continue
        if (bm[bit >> 3] >> (bit & 7)) & 1:
            _one(sp + 8 * j, 8, dp + 2 * i)
            j += 1
        else:
            dp[2 * i] = 0
            dp[2 * i + 1] = 0
        i += 1


cdef Py_ssize_t _set_bits(const uint8_t* bm, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Set bits of ``bm`` in ``[start, start + n)``: bit by bit up to a byte boundary, then
    eight bytes at a time."""
    cdef Py_ssize_t i = start, end = start + n, count = 0
    cdef uint64_t w
    while i < end and (i & 7):
        count += (bm[i >> 3] >> (i & 7)) & 1
        i += 1
    while end - i >= 64:
        memcpy(&w, bm + (i >> 3), 8)
        count += popcount64(w)
        i += 64
    while i < end:
        count += (bm[i >> 3] >> (i & 7)) & 1
        i += 1
    return count


def spread_plain_decimal128(data, Py_ssize_t width, const uint8_t[::1] bitmap,
                            Py_ssize_t bit_offset, Py_ssize_t n, Py_ssize_t present, out):
    """A flat nullable column's page: its ``present`` PLAIN decimals (``width`` bytes each, at
    the start of ``data``) converted to decimal128 straight into their slots of ``out``
    (``16 * n`` bytes): slot ``i`` of every bit set in ``bitmap[bit_offset:]`` takes the next
    value, null slots are zero.

    Raises:
        DecodeError: ``data`` too short for ``present`` values, or the bitmap's set bits in
            the range are not ``present``.
        ValueError: a width outside 1..16, counts out of range, or ``out`` of another size.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    if width < 1 or width > 16:
        raise ValueError(f"decimal width {width} is outside 1..16")
    if n < 0 or present < 0 or present > n or bit_offset < 0 \
            or bit_offset + n > 8 * bitmap.shape[0]:
        raise ValueError("spread_plain_decimal128: counts out of range")
    if src.shape[0] < present * width:
        raise DecodeError(
            f"PLAIN page holds {src.shape[0]} bytes, too few for {present} values of "
            f"{width} bytes"
        )
    cdef uint8_t[::1] dst = out_bytes(out, 16 * n)
    if n == 0:
        return
    cdef Py_ssize_t set_bits = _set_bits(&bitmap[0], bit_offset, n)
    if set_bits != present:
        raise DecodeError(f"validity bitmap holds {set_bits} values, not {present}")
    cdef const uint8_t* sp = &src[0] if present else NULL
    with nogil:
        if width == 8:
            _spread8(sp, <int64_t*>&dst[0], &bitmap[0], bit_offset, n, present)
        else:
            _spread(sp, <int64_t*>&dst[0], width, &bitmap[0], bit_offset, n, present)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _put(uint64_t* dp, const uint8_t* e, uint64_t mask) noexcept nogil:
    """The 16-byte value at ``e`` into the slot at ``dp``, ANDed with ``mask``."""
    cdef uint64_t lo, hi
    memcpy(&lo, e, 8)
    memcpy(&hi, e + 8, 8)
    dp[0] = lo & mask
    dp[1] = hi & mask


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _gather_spread(const uint32_t* idx, const uint8_t* dic, uint64_t* dp,
                         const uint8_t* bm, Py_ssize_t bit_offset, Py_ssize_t n,
                         Py_ssize_t present) noexcept nogil:
    """The loop of ``gather_spread_decimal128`` (indices and counts checked by the caller),
    laid out like ``_spread8``."""
    cdef Py_ssize_t i = 0, j = 0, bit, k
    cdef uint8_t b
    cdef uint64_t keep
    while i < n:
        bit = bit_offset + i
        if (bit & 7) == 0 and n - i >= 8:
            b = bm[bit >> 3]
            if b == 0xFF:
                for k in range(8):
                    _put(dp + 2 * (i + k), dic + 16 * <Py_ssize_t>idx[j + k], ~<uint64_t>0)
                i += 8
                j += 8
                continue
            if b == 0:
                memset(dp + 2 * i, 0, 8 * 16)
                i += 8
                continue
            if j + 8 <= present:
                for k in range(8):
                    keep = (b >> k) & 1
                    _put(dp + 2 * (i + k), dic + 16 * <Py_ssize_t>idx[j], <uint64_t>0 - keep)
                    j += <Py_ssize_t>keep
                i += 8
                continue
        if (bm[bit >> 3] >> (bit & 7)) & 1:
            _put(dp + 2 * i, dic + 16 * <Py_ssize_t>idx[j], ~<uint64_t>0)
            j += 1
        else:
            dp[2 * i] = 0
            dp[2 * i + 1] = 0
        i += 1


def gather_spread_decimal128(indices, dictionary, const uint8_t[::1] bitmap,
                             Py_ssize_t bit_offset, Py_ssize_t n, Py_ssize_t present, out):
    """A flat nullable column's dictionary page: the first ``present`` of ``indices`` (uint32,
    as ``rle.decode_rle`` gives them) into ``dictionary`` (decimal128 values, 16 bytes each,
    as ``to_decimal128`` makes them) gathered straight into their slots of ``out`` (``16 * n``
    bytes): slot ``i`` of every bit set in ``bitmap[bit_offset:]`` takes the next value, null
    slots are zero.

    Raises:
        DecodeError: fewer than ``present`` indices, an index past the dictionary, or the
            bitmap's set bits in the range are not ``present``.
        ValueError: a dictionary not of whole 16-byte values, counts out of range, or ``out``
            of another size.
    """
    cdef const uint32_t[::1] idx = indices
    cdef const uint8_t[::1] dic = byte_view(dictionary, "dictionary")
    cdef Py_ssize_t size
    cdef int64_t top
    if dic.shape[0] % 16:
        raise ValueError(f"a dictionary of {dic.shape[0]} bytes does not hold 16-byte values")
    if n < 0 or present < 0 or present > n or bit_offset < 0 \
            or bit_offset + n > 8 * bitmap.shape[0]:
        raise ValueError("gather_spread_decimal128: counts out of range")
    if idx.shape[0] < present:
        raise DecodeError(f"{idx.shape[0]} dictionary indices, not {present}")
    size = dic.shape[0] // 16
    cdef uint8_t[::1] dst = out_bytes(out, 16 * n)
    if n == 0:
        return
    cdef Py_ssize_t set_bits = _set_bits(&bitmap[0], bit_offset, n)
    if set_bits != present:
        raise DecodeError(f"validity bitmap holds {set_bits} values, not {present}")
    if present == 0:
        memset(&dst[0], 0, 16 * n)
        return
    with nogil:
        top = max_index(&idx[0], present)
    if top < 0 or top >= size:
        raise DecodeError(f"a dictionary index is out of range for a dictionary of {size}")
    with nogil:
        _gather_spread(&idx[0], &dic[0], <uint64_t*>&dst[0], &bitmap[0], bit_offset, n, present)
