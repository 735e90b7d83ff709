# cython: language_level=3
"""DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (Parquet encodings 5, 6, 7).

DELTA_BINARY_PACKED arithmetic wraps in two's complement at the column's width: 32 bits for
INT32 (as parquet-java and Arrow C++ do: deltas, min delta and bit widths <= 32), 64 bits for
INT64. The encoder writes blocks of 128 values in 4 miniblocks of 32 (parquet-java's layout,
and Arrow's for INT32: our INT32 bytes equal pyarrow's; Arrow writes INT64 in blocks of 256),
widths of unused miniblocks 0, padding bits 0. The decoder reads any valid layout and accepts
arbitrary padding bits and arbitrary widths of unused miniblocks.

Decoding rules (documented choices):
- ``num_values`` values are decoded; the header's total count may be larger (the rest is
  skipped but must be present and well-formed), a smaller total raises DecodeError.
- the encoding must be complete, including the padding of its last miniblock (as Arrow
  requires); ``consumed`` is the offset just past it, where DELTA_*_BYTE_ARRAY data continue.
- an INT32 first value is taken modulo 2**32 when it fits 32 bits signed or unsigned (DuckDB
  writes UINT32 columns' first value unsigned; parquet-java wraps it the same way), and is an
  error beyond that; an INT32 min delta is taken modulo 2**32 (so writers that compute deltas
  in 64 bits still read correctly).
- bit width > 64 (> 32 for INT32) in a used miniblock, block size 0 / not a multiple of 128 /
  above 2**31 - 128, miniblock count 0 / not dividing it into multiples of 32 -> DecodeError.
"""

from libc.stdint cimport uint8_t, int32_t, uint32_t, int64_t, uint64_t, INT32_MAX, INT32_MIN, UINT32_MAX
from libc.string cimport memcpy

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
import numpy as np

from buffer cimport (Cursor, WBuf, cur_take, cur_uleb, cur_zigzag, raise_decode,
                     load_u32, load_u64, wb_init, wb_free, wb_reserve, wb_uleb, wb_zigzag,
                     wb_put, wb_to_bytes)
from bitpack cimport unpack_u32, unpack_u64, pack_u32, pack_u64, width_mask, bit_width_u64
from binsink cimport BinSlot, bin_claim, offset_t
from physical cimport (PT_INT32, PT_INT64, PT_BYTE_ARRAY, PT_FIXED_LEN_BYTE_ARRAY, byte_view,
                       view_ptr, view_cursor, fixed_bytes, binary_values, out_bytes)

from metaindex.errors import DecodeError, EncodeError

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil     # GCC / Clang

ctypedef fused uword:
    uint32_t
    uint64_t

cdef enum:
    MAX_BLOCK_SIZE = 2147483520     # 2**31 - 128: the largest block size an int32 holds
    ENC_BLOCK = 128                 # what we write: blocks of 128 values,
    ENC_MINIBLOCKS = 4              # in 4 miniblocks
    ENC_MB_VALUES = 32              # of 32 values


cdef struct DbpHeader:
    uint64_t block_size
    uint64_t mb_count
    uint64_t mb_values      # values per miniblock
    uint64_t total          # values in the encoding
    uint64_t first          # first value, two's complement


cdef int invalid_at(const Cursor* c, Py_ssize_t pos, str what) except -1:
    raise DecodeError(what, offset=c.base + pos)


cdef int dbp_header(Cursor* c, DbpHeader* h, Py_ssize_t num_values, int bits) except -1:
    """Read and validate the header; check that the blocks for ``total`` values can fit."""
    cdef Py_ssize_t start = c.pos
    cdef uint64_t nblocks
    cdef int64_t first
    if num_values < 0:
        raise ValueError(f"num_values must be >= 0, got {num_values}")
    cur_uleb(c, &h.block_size)
    if h.block_size == 0 or h.block_size % 128 or h.block_size > MAX_BLOCK_SIZE:
        invalid_at(c, start, f"DELTA_BINARY_PACKED block size {h.block_size} is not a "
                             "positive multiple of 128 below 2**31")
    start = c.pos
    cur_uleb(c, &h.mb_count)
    if h.mb_count == 0 or h.block_size % h.mb_count or (h.block_size // h.mb_count) % 32:
        invalid_at(c, start, f"DELTA_BINARY_PACKED miniblock count {h.mb_count} does not split "
                             f"a block of {h.block_size} into multiples of 32 values")
    h.mb_values = h.block_size // h.mb_count
    start = c.pos
    cur_uleb(c, &h.total)
    if h.total < <uint64_t>num_values:
        invalid_at(c, start, f"DELTA_BINARY_PACKED holds {h.total} values, {num_values} expected")
    start = c.pos
    cur_zigzag(c, &first)
    if bits == 32 and (first < INT32_MIN or first > UINT32_MAX):
        invalid_at(c, start, f"DELTA_BINARY_PACKED INT32 first value {first} is out of range")
    h.first = <uint64_t>first
    if h.total > 1:
        # every block takes at least its min delta (1 byte) and its miniblock widths
        nblocks = (h.total - 2) // h.block_size + 1
        if nblocks > <uint64_t>(c.size - c.pos) // (1 + h.mb_count):
            raise_decode(c, <Py_ssize_t>min(nblocks * (1 + h.mb_count), <uint64_t>0x7FFFFFFFFFFFFFFF),
                         f"DELTA_BINARY_PACKED blocks for {h.total} values are truncated")
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void miniblock_decode(const uint8_t* p, Py_ssize_t nbytes, bint window_ok, int w,
                                  uword md, uword* last, uword* out, Py_ssize_t n) noexcept nogil:
    """Add ``n`` packed ``w``-bit deltas (+ md) to ``last`` into ``out``.

    Only called after the caller took ``nbytes = packed_size(mb_values, w)`` bytes at ``p``;
    ``window_ok`` says 8 more readable bytes follow them (then an 8/9-byte window per value is
    read straight from the source, else the bounded ``unpack_*`` helper is used).
    """
    cdef Py_ssize_t j, bit = 0
    cdef const uint8_t* q
    cdef uword acc = last[0]
    cdef uint64_t mask = width_mask(w), v
    cdef int shift
    if w == 0:
        for j in range(n):
            acc += md
            out[j] = acc
    elif window_ok and w <= 56:
        # groups of 8 values start on a byte (8 * w bits): independent windows per group
        for j in range(0, n - 7, 8):
            q = p + (j >> 3) * w
            acc += md + <uword>(load_u64(q) & mask)
            out[j] = acc
            acc += md + <uword>((load_u64(q + ((w) >> 3)) >> ((w) & 7)) & mask)
            out[j + 1] = acc
            acc += md + <uword>((load_u64(q + ((2 * w) >> 3)) >> ((2 * w) & 7)) & mask)
            out[j + 2] = acc
            acc += md + <uword>((load_u64(q + ((3 * w) >> 3)) >> ((3 * w) & 7)) & mask)
            out[j + 3] = acc
            acc += md + <uword>((load_u64(q + ((4 * w) >> 3)) >> ((4 * w) & 7)) & mask)
            out[j + 4] = acc
            acc += md + <uword>((load_u64(q + ((5 * w) >> 3)) >> ((5 * w) & 7)) & mask)
            out[j + 5] = acc
            acc += md + <uword>((load_u64(q + ((6 * w) >> 3)) >> ((6 * w) & 7)) & mask)
            out[j + 6] = acc
            acc += md + <uword>((load_u64(q + ((7 * w) >> 3)) >> ((7 * w) & 7)) & mask)
            out[j + 7] = acc
        j = n & ~7
        bit = j * w
        for j in range(n & ~7, n):
            acc += md + <uword>((load_u64(p + (bit >> 3)) >> (bit & 7)) & mask)
            out[j] = acc
            bit += w
    elif window_ok:
        for j in range(n):
            shift = bit & 7
            v = load_u64(p + (bit >> 3)) >> shift
            if shift + w > 64:
                v |= (<uint64_t>p[(bit >> 3) + 8]) << (64 - shift)
            acc += md + <uword>(v & mask)
            out[j] = acc
            bit += w
    else:
        if uword is uint32_t:
            unpack_u32(p, nbytes, w, out, n)
        else:
            unpack_u64(p, nbytes, w, out, n)
        for j in range(n):
            acc += md + out[j]
            out[j] = acc
    last[0] = acc


cdef int dbp_body(Cursor* c, const DbpHeader* h, uword* out, Py_ssize_t n) except -1:
    """Decode the first ``n`` values into ``out``, then skip (and check) the rest."""
    cdef int bits = sizeof(uword) * 8
    cdef uint64_t left = h.total - 1 if h.total > 0 else 0
    cdef uint64_t cnt
    cdef Py_ssize_t done = 0, want, nbytes, i, wpos
    cdef uword last = <uword>h.first
    cdef uword md
    cdef int64_t md64
    cdef const uint8_t* widths
    cdef const uint8_t* p
    cdef int w
    if n > 0:
        out[0] = last
        done = 1
    while left > 0:
        cur_zigzag(c, &md64)
        md = <uword>md64
        wpos = c.pos
        widths = cur_take(c, <Py_ssize_t>h.mb_count, "truncated miniblock bit widths")
        for i in range(<Py_ssize_t>h.mb_count):
            if left == 0:
                break       # widths of unused miniblocks are not looked at
            w = widths[i]
            if w > bits:
                invalid_at(c, wpos + i, f"DELTA_BINARY_PACKED bit width {w} exceeds {bits}")
            nbytes = <Py_ssize_t>((h.mb_values * w) >> 3)
            p = cur_take(c, nbytes, "truncated DELTA_BINARY_PACKED miniblock")
            cnt = h.mb_values if left > h.mb_values else left
            left -= cnt
            want = <Py_ssize_t>cnt if <uint64_t>(n - done) > cnt else n - done
            if want > 0:
                miniblock_decode(p, nbytes, c.size - c.pos >= 8, w, md, &last, out + done, want)
                done += want
    return 0


def decode_delta_binary_packed(data, Py_ssize_t num_values, int physical_type, out=None):
    """Decode DELTA_BINARY_PACKED INT32 or INT64 values.

    Args:
        data: buffer starting with the encoding (may hold more bytes after it).
        num_values: values to decode (the page's non-null count); the header may hold more.
        physical_type: 1 (INT32) or 2 (INT64).
        out: a writable buffer of exactly ``num_values`` values' bytes to decode into,
            returned in place of a new array.

    Returns:
        ``(values, consumed)``: an int32 / int64 array and the bytes the encoding took.

    Raises:
        DecodeError: truncated or invalid encoding (offsets relative to ``data``).
    """
    cdef const uint8_t[::1] src = byte_view(data)
    cdef Cursor c = view_cursor(src)
    cdef DbpHeader h
    cdef uint32_t[::1] o32
    cdef uint64_t[::1] o64
    if physical_type == PT_INT32:
        dbp_header(&c, &h, num_values, 32)
        if out is None:
            out = np.empty(num_values, dtype=np.int32)
            o32 = out.view(np.uint32)
        else:
            o32 = out_bytes(out, num_values * 4).view(np.uint32)
        dbp_body(&c, &h, &o32[0] if num_values else <uint32_t*>NULL, num_values)
    elif physical_type == PT_INT64:
        dbp_header(&c, &h, num_values, 64)
        if out is None:
            out = np.empty(num_values, dtype=np.int64)
            o64 = out.view(np.uint64)
        else:
            o64 = out_bytes(out, num_values * 8).view(np.uint64)
        dbp_body(&c, &h, &o64[0] if num_values else <uint64_t*>NULL, num_values)
    else:
        raise TypeError(f"DELTA_BINARY_PACKED is for INT32 (1) or INT64 (2), not type {physical_type}")
    return out, c.pos


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int dbp_encode(WBuf* wb, const uint8_t* vals, Py_ssize_t n, uword* block) except -1:
    """Append the encoding of ``n`` little-endian ``uword`` values at ``vals``.

    ``block`` is scratch for ENC_BLOCK values (its type picks 32- or 64-bit arithmetic).
    """
    cdef Py_ssize_t i = 1, j, cnt, m, used
    cdef uword last, v, md, acc
    cdef int widths[ENC_MINIBLOCKS]
    cdef int k
    if uword is uint32_t:
        last = load_u32(vals) if n else 0
        wb_uleb(wb, ENC_BLOCK); wb_uleb(wb, ENC_MINIBLOCKS); wb_uleb(wb, n)
        wb_zigzag(wb, <int32_t>last)
    else:
        last = load_u64(vals) if n else 0
        wb_uleb(wb, ENC_BLOCK); wb_uleb(wb, ENC_MINIBLOCKS); wb_uleb(wb, n)
        wb_zigzag(wb, <int64_t>last)
    while i < n:
        cnt = min(ENC_BLOCK, n - i)
        for j in range(cnt):
            if uword is uint32_t:
                v = load_u32(vals + 4 * (i + j))
            else:
                v = load_u64(vals + 8 * (i + j))
            block[j] = v - last
            last = v
        md = block[0]
        for j in range(1, cnt):      # signed minimum
            if uword is uint32_t:
                if <int32_t>block[j] < <int32_t>md:
                    md = block[j]
            else:
                if <int64_t>block[j] < <int64_t>md:
                    md = block[j]
        for j in range(cnt):
            block[j] -= md
        for j in range(cnt, ENC_BLOCK):
            block[j] = 0
        used = (cnt + ENC_MB_VALUES - 1) // ENC_MB_VALUES
        for m in range(ENC_MINIBLOCKS):
            acc = 0
            if m < used:
                for j in range(m * ENC_MB_VALUES, (m + 1) * ENC_MB_VALUES):
                    acc |= block[j]
            widths[m] = bit_width_u64(acc)
        if uword is uint32_t:
            wb_zigzag(wb, <int32_t>md)
        else:
            wb_zigzag(wb, <int64_t>md)
        wb_reserve(wb, ENC_MINIBLOCKS + ENC_BLOCK * sizeof(uword))
        for m in range(ENC_MINIBLOCKS):
            wb.data[wb.len + m] = <uint8_t>widths[m]
        wb.len += ENC_MINIBLOCKS
        for m in range(used):
            k = widths[m]
            if uword is uint32_t:
                pack_u32(block + m * ENC_MB_VALUES, ENC_MB_VALUES, k, wb.data + wb.len)
            else:
                pack_u64(block + m * ENC_MB_VALUES, ENC_MB_VALUES, k, wb.data + wb.len)
            wb.len += (ENC_MB_VALUES * k) >> 3
        i += cnt
    return 0


def encode_delta_binary_packed(values, int physical_type):
    """Encode INT32 or INT64 values as DELTA_BINARY_PACKED (blocks of 128, 4 miniblocks).

    Args:
        values: int32 / int64 values (numpy array or any C-contiguous buffer of them).
        physical_type: 1 (INT32) or 2 (INT64).

    Returns:
        The encoding as ``bytes``.
    """
    cdef const uint8_t[::1] src
    cdef uint32_t b32[ENC_BLOCK]
    cdef uint64_t b64[ENC_BLOCK]
    cdef WBuf wb
    cdef Py_ssize_t n
    if physical_type != PT_INT32 and physical_type != PT_INT64:
        raise TypeError(f"DELTA_BINARY_PACKED is for INT32 (1) or INT64 (2), not type {physical_type}")
    width = 4 if physical_type == PT_INT32 else 8
    src = fixed_bytes(values, width)
    n = src.shape[0] // width
    wb_init(&wb, 32 + n * width + n // 8)
    try:
        if physical_type == PT_INT32:
            dbp_encode(&wb, view_ptr(src), n, b32)
        else:
            dbp_encode(&wb, view_ptr(src), n, b64)
        return wb_to_bytes(&wb)
    finally:
        wb_free(&wb)



# ------------------------------------------------------------ DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY

cdef int check_bytes_type(int physical_type, Py_ssize_t type_length) except -1:
    if physical_type == PT_FIXED_LEN_BYTE_ARRAY:
        if type_length <= 0 or type_length > INT32_MAX:
            raise TypeError(f"FIXED_LEN_BYTE_ARRAY needs 0 < type_length < 2**31, got {type_length}")
    elif physical_type != PT_BYTE_ARRAY:
        raise TypeError("DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY are for BYTE_ARRAY (6) or "
                        f"FIXED_LEN_BYTE_ARRAY (7), not type {physical_type}")
    return 0


cdef object dbp_int32(Cursor* c, Py_ssize_t n):
    """Decode ``n`` INT32 DELTA_BINARY_PACKED values at the cursor (lengths of byte arrays)."""
    cdef DbpHeader h
    cdef uint32_t[::1] o
    dbp_header(c, &h, n, 32)
    out = np.empty(n, dtype=np.int32)
    o = out.view(np.uint32)
    dbp_body(c, &h, &o[0] if n else <uint32_t*>NULL, n)
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t value_sizes(Cursor* c, const int32_t[::1] prefix, const int32_t[::1] suffix,
                            Py_ssize_t n, int physical_type, Py_ssize_t type_length,
                            Py_ssize_t lengths_at, Py_ssize_t* suffix_total) except -1:
    """Check ``n`` values' prefix lengths (empty view: all 0) and suffix lengths; their total
    bytes, and the suffixes' in ``suffix_total``. ``lengths_at`` is where the length encodings
    started (for error offsets)."""
    cdef bint has_prefix = prefix.shape[0] > 0
    cdef Py_ssize_t i, p, s, prev = 0, total = 0, suffixes = 0
    for i in range(n):
        p = prefix[i] if has_prefix else 0
        s = suffix[i]
        if p < 0 or s < 0:
            invalid_at(c, lengths_at, f"negative {'prefix' if p < 0 else 'suffix'} length "
                                      f"{p if p < 0 else s} at value {i}")
        if p > prev:
            invalid_at(c, lengths_at, f"prefix length {p} at value {i} exceeds the previous "
                                      f"value's length {prev}")
        prev = p + s
        if physical_type == PT_FIXED_LEN_BYTE_ARRAY and prev != type_length:
            invalid_at(c, lengths_at, f"value {i} has length {prev}, FIXED_LEN_BYTE_ARRAY "
                                      f"needs {type_length}")
        total += prev
        suffixes += s
        if total > INT32_MAX:
            invalid_at(c, lengths_at, f"decoded values exceed 2**31 - 1 bytes at value {i}")
    suffix_total[0] = suffixes
    return total


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void fill_values(offset_t* offs, int64_t base, uint8_t* dst, const uint8_t* src,
                      const int32_t* prefix, const int32_t* suffix, Py_ssize_t n,
                      Py_ssize_t suffix_total) noexcept nogil:
    """Rebuild ``n`` checked values (``prefix``: NULL for none) into ``dst``: each is its
    prefix of the previous value, then its suffix from ``src`` (``suffix_total`` bytes in
    all); ``offs`` (unless NULL) gets each value's end offset plus ``base``."""
    cdef Py_ssize_t i, p, s, pos = 0, prev_start = 0
    if prefix == NULL:  # DELTA_LENGTH_BYTE_ARRAY: the suffixes are the values, in one piece
        if suffix_total:
            memcpy(dst, src, suffix_total)
        if offs != NULL:
            for i in range(n):
                pos += suffix[i]
                offs[i] = <offset_t>(base + pos)
        return
    for i in range(n):
        p = prefix[i]
        s = suffix[i]
        if p:
            memcpy(dst + pos, dst + prev_start, p)
        if s:
            memcpy(dst + pos + p, src, s)
        src += s
        prev_start = pos
        pos += p + s
        if offs != NULL:
            offs[i] = <offset_t>(base + pos)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object build_values(Cursor* c, const int32_t[::1] prefix, const int32_t[::1] suffix,
                         Py_ssize_t n, int physical_type, Py_ssize_t type_length,
                         Py_ssize_t lengths_at):
    """Rebuild ``n`` values from prefix lengths (empty view: all 0) and suffixes at the cursor.

    Sizes are validated and summed first; then one allocation for the output and one copy
    pass. ``lengths_at`` is where the length encodings started (for error offsets).
    """
    cdef Py_ssize_t suffix_total
    cdef Py_ssize_t total = value_sizes(c, prefix, suffix, n, physical_type, type_length,
                                        lengths_at, &suffix_total)
    cdef const uint8_t* src = cur_take(c, suffix_total, "byte array data exceeds the input")
    cdef int32_t[::1] offs
    cdef uint8_t[::1] dst
    data = np.empty(total, dtype=np.uint8)
    dst = data
    cdef uint8_t* out = &dst[0] if total else <uint8_t*>NULL
    cdef const int32_t* pre = &prefix[0] if prefix.shape[0] else <const int32_t*>NULL
    cdef const int32_t* suf = &suffix[0] if n else <const int32_t*>NULL
    if physical_type == PT_BYTE_ARRAY:
        offsets = np.empty(n + 1, dtype=np.int32)
        offs = offsets
        offs[0] = 0
        fill_values(&offs[0] + 1, 0, out, src, pre, suf, n, suffix_total)
        return offsets, data
    fill_values(<int32_t*>NULL, 0, out, src, pre, suf, n, suffix_total)
    return data.reshape(n, type_length)


cdef Py_ssize_t values_into(Cursor* c, const int32_t[::1] prefix, const int32_t[::1] suffix,
                            Py_ssize_t n, sink) except -1:
    """``build_values`` for BYTE_ARRAY straight into a chunk's sink (binsink.pxd); the bytes
    read."""
    cdef Py_ssize_t suffix_total
    cdef Py_ssize_t total = value_sizes(c, prefix, suffix, n, PT_BYTE_ARRAY, 0, 0,
                                        &suffix_total)
    cdef const uint8_t* src = cur_take(c, suffix_total, "byte array data exceeds the input")
    cdef const int32_t* pre = &prefix[0] if prefix.shape[0] else <const int32_t*>NULL
    cdef const int32_t* suf = &suffix[0] if n else <const int32_t*>NULL
    cdef BinSlot slot
    bin_claim(sink, n, total, &slot)
    with nogil:
        if slot.off32 != NULL:
            fill_values(slot.off32, slot.base, slot.data, src, pre, suf, n, suffix_total)
        else:
            fill_values(slot.off64, slot.base, slot.data, src, pre, suf, n, suffix_total)
    return c.pos


def decode_delta_length_byte_array(data, Py_ssize_t num_values, int physical_type=PT_BYTE_ARRAY,
                                   Py_ssize_t type_length=0):
    """Decode DELTA_LENGTH_BYTE_ARRAY values (lengths DELTA_BINARY_PACKED, then the bytes).

    Args:
        data: buffer starting with the encoding (may hold more bytes after it).
        num_values: values to decode.
        physical_type: 6 (BYTE_ARRAY) or 7 (FIXED_LEN_BYTE_ARRAY, every length must be
            ``type_length``).
        type_length: the FIXED_LEN_BYTE_ARRAY width.

    Returns:
        ``(values, consumed)``: values as ``(int32 offsets, uint8 data)`` for BYTE_ARRAY or an
        ``(n, type_length)`` uint8 array.

    Raises:
        DecodeError: truncated or invalid encoding, negative lengths, data past the input.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    cdef Cursor c = view_cursor(src)
    check_bytes_type(physical_type, type_length)
    lengths = dbp_int32(&c, num_values)
    values = build_values(&c, np.empty(0, np.int32), lengths, num_values, physical_type,
                          type_length, 0)
    return values, c.pos


def decode_delta_byte_array(data, Py_ssize_t num_values, int physical_type=PT_BYTE_ARRAY,
                            Py_ssize_t type_length=0):
    """Decode DELTA_BYTE_ARRAY values (prefix lengths, then suffixes as DELTA_LENGTH_BYTE_ARRAY).

    Args:
        data: buffer starting with the encoding (may hold more bytes after it).
        num_values: values to decode.
        physical_type: 6 (BYTE_ARRAY) or 7 (FIXED_LEN_BYTE_ARRAY).
        type_length: the FIXED_LEN_BYTE_ARRAY width.

    Returns:
        ``(values, consumed)`` as for :func:`decode_delta_length_byte_array`.

    Raises:
        DecodeError: truncated or invalid encoding, a prefix longer than the previous value,
            negative lengths, output above 2**31 - 1 bytes.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    cdef Cursor c = view_cursor(src)
    check_bytes_type(physical_type, type_length)
    prefix = dbp_int32(&c, num_values)
    suffix = dbp_int32(&c, num_values)
    values = build_values(&c, prefix, suffix, num_values, physical_type, type_length, 0)
    return values, c.pos


def decode_delta_length_byte_array_into(data, Py_ssize_t num_values, sink):
    """Decode BYTE_ARRAY DELTA_LENGTH_BYTE_ARRAY values straight into a chunk's sink (see
    binsink.pxd): no arrays of the page's own but its lengths. Returns the bytes read.

    Raises:
        DecodeError: as :func:`decode_delta_length_byte_array` (checked before anything is
            written), or values past the chunk's value count.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    cdef Cursor c = view_cursor(src)
    lengths = dbp_int32(&c, num_values)
    return values_into(&c, np.empty(0, np.int32), lengths, num_values, sink)


def decode_delta_byte_array_into(data, Py_ssize_t num_values, sink):
    """Decode BYTE_ARRAY DELTA_BYTE_ARRAY values straight into a chunk's sink (see
    binsink.pxd). Returns the bytes read.

    Raises:
        DecodeError: as :func:`decode_delta_byte_array` (checked before anything is written),
            or values past the chunk's value count.
    """
    cdef const uint8_t[::1] src = byte_view(data)
    cdef Cursor c = view_cursor(src)
    prefix = dbp_int32(&c, num_values)
    suffix = dbp_int32(&c, num_values)
    return values_into(&c, prefix, suffix, num_values, sink)


cdef tuple binary_args(object values, int physical_type, Py_ssize_t type_length):
    """Values as (int64 offsets, uint8 data) whatever their physical type."""
    check_bytes_type(physical_type, type_length)
    if physical_type == PT_BYTE_ARRAY:
        return binary_values(values)
    data = fixed_bytes(values, type_length)
    return np.arange(data.shape[0] // type_length + 1, dtype=np.int64) * type_length, data


cdef bytes bytes_with_head(WBuf* head, Py_ssize_t extra, uint8_t** tail):
    """A new bytes object: the ``head`` buffer, then ``extra`` bytes for the caller to fill
    (through ``tail``) before the object is shared."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, head.len + extra)
    cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
    memcpy(p, head.data, head.len)
    tail[0] = p + head.len
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
cdef object lengths_u32(const int64_t[::1] off):
    cdef Py_ssize_t i, n = off.shape[0] - 1
    cdef int64_t d
    out = np.empty(n, dtype=np.uint32)
    cdef uint32_t[::1] o = out
    for i in range(n):
        d = off[i + 1] - off[i]
        if d > INT32_MAX:
            raise EncodeError(f"value {i} is {d} bytes long; Parquet byte arrays hold < 2**31")
        o[i] = <uint32_t>d
    return out


def encode_delta_length_byte_array(values, int physical_type=PT_BYTE_ARRAY,
                                   Py_ssize_t type_length=0):
    """Encode byte arrays as DELTA_LENGTH_BYTE_ARRAY.

    Args:
        values: ``(offsets, data)`` for BYTE_ARRAY (offsets int32/int64, may start above 0) or
            ``(n, type_length)`` uint8 values for FIXED_LEN_BYTE_ARRAY.
        physical_type: 6 (BYTE_ARRAY) or 7 (FIXED_LEN_BYTE_ARRAY).
        type_length: the FIXED_LEN_BYTE_ARRAY width.

    Returns:
        The encoding as ``bytes``.
    """
    cdef const int64_t[::1] off
    cdef const uint8_t[::1] lens, raw
    cdef uint32_t scratch[ENC_BLOCK]
    cdef WBuf wb
    cdef Py_ssize_t n
    offsets, data = binary_args(values, physical_type, type_length)
    off = offsets
    n = off.shape[0] - 1
    lens = lengths_u32(off).view(np.uint8)
    raw = data
    cdef uint8_t* tail
    wb_init(&wb, 32 + n // 2)
    try:
        dbp_encode(&wb, view_ptr(lens), n, scratch)
        out = bytes_with_head(&wb, off[n] - off[0], &tail)
    finally:
        wb_free(&wb)
    memcpy(tail, view_ptr(raw) + off[0], off[n] - off[0])
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def encode_delta_byte_array(values, int physical_type=PT_BYTE_ARRAY, Py_ssize_t type_length=0):
    """Encode byte arrays as DELTA_BYTE_ARRAY (front compression against the previous value).

    Args:
        values: as for :func:`encode_delta_length_byte_array`.
        physical_type: 6 (BYTE_ARRAY) or 7 (FIXED_LEN_BYTE_ARRAY).
        type_length: the FIXED_LEN_BYTE_ARRAY width.

    Returns:
        The encoding as ``bytes``.
    """
    cdef const int64_t[::1] off
    cdef const uint8_t* raw
    cdef uint32_t[::1] pre, suf
    cdef uint32_t scratch[ENC_BLOCK]
    cdef Py_ssize_t n, i, k, m, prev_start = 0, prev_len = 0, start, length, suffix_total = 0
    cdef uint64_t x
    cdef WBuf wb
    offsets, data = binary_args(values, physical_type, type_length)
    off = offsets
    n = off.shape[0] - 1
    lengths_u32(off)            # rejects values of 2**31 bytes or more
    raw = view_ptr(data)
    prefix = np.empty(n, dtype=np.uint32)
    suffix = np.empty(n, dtype=np.uint32)
    pre = prefix
    suf = suffix
    for i in range(n):
        start = off[i]
        length = off[i + 1] - start
        m = min(length, prev_len)
        k = 0
        x = 0
        while k + 8 <= m:           # 8 bytes at a time; the first differing byte from ctz
            x = load_u64(raw + start + k) ^ load_u64(raw + prev_start + k)
            if x:
                k += __builtin_ctzll(x) >> 3
                break
            k += 8
        if not x:
            while k < m and raw[start + k] == raw[prev_start + k]:
                k += 1
        pre[i] = <uint32_t>k
        suf[i] = <uint32_t>(length - k)
        suffix_total += length - k
        prev_start = start
        prev_len = length
    cdef uint8_t* tail
    wb_init(&wb, 64 + n)
    try:
        dbp_encode(&wb, view_ptr(prefix.view(np.uint8)), n, scratch)
        dbp_encode(&wb, view_ptr(suffix.view(np.uint8)), n, scratch)
        out = bytes_with_head(&wb, suffix_total, &tail)
    finally:
        wb_free(&wb)
    for i in range(n):
        memcpy(tail, raw + off[i + 1] - suf[i], suf[i])
        tail += suf[i]
    return out
