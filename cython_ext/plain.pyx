# cython: language_level=3
"""PLAIN encoding for every Parquet physical type.

Fixed-width values are moved with one ``memcpy`` (little-endian host; floats as bit patterns,
so NaN payloads, -0.0 and infinities round-trip exactly). BOOLEAN is bit-packed LSB first.
BYTE_ARRAY is a 4-byte little-endian length before each value; its decoder makes two passes:
the first checks every length against the bytes that remain and writes the offsets, the second
copies the bytes into one allocation.
"""

cimport cython
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.stdint cimport uint8_t, int32_t, uint32_t, int64_t, uint64_t
from libc.string cimport memcpy

from buffer cimport (Cursor, cur_take, raise_decode, raise_invalid, load_u32, store_u32,
                     put_uleb, copy_bytes)
from boolbits cimport unpack_bools, pack_bools
from binsink cimport BinSlot, bin_claim, offset_t
from physical cimport (PT_BOOLEAN, PT_BYTE_ARRAY, fixed_width, byte_view, view_cursor,
                       fixed_array, fixed_bytes, binary_values, out_bytes)

import numpy as np

from metaindex.errors import DecodeError, EncodeError


# ------------------------------------------------------------------------------------ decode

def decode_plain(data, Py_ssize_t num_values, int physical_type, Py_ssize_t type_length=0,
                 out=None):
    """Decode ``num_values`` PLAIN values from the start of ``data``.

    Args:
        data: any C-contiguous buffer; bytes after the encoding are left alone.
        num_values: values to decode (>= 0).
        physical_type: parquet.thrift Type code (BOOLEAN=0 ... FIXED_LEN_BYTE_ARRAY=7).
        type_length: bytes per value for FIXED_LEN_BYTE_ARRAY (ignored otherwise).
        out: fixed-width types only: a writable buffer of exactly ``num_values * width``
            bytes to decode into (one memcpy), returned in place of a new array.

    Returns:
        ``(values, consumed)``: values in the common convention (bool_, int32, int64,
        uint8 (n, 12) for INT96, float32, float64, ``(int32 offsets, uint8 data)`` for
        BYTE_ARRAY, uint8 (n, type_length) for FIXED_LEN_BYTE_ARRAY) and the bytes read.

    Raises:
        DecodeError: truncated input, a BYTE_ARRAY length past the end, a negative count, or a
            physical type / type_length that cannot be decoded.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    cdef Py_ssize_t width
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if out is not None and physical_type in (PT_BOOLEAN, PT_BYTE_ARRAY):
        raise TypeError("out is only for fixed-width physical types")
    if physical_type == PT_BOOLEAN:
        return _decode_boolean(&c, num_values)
    if physical_type == PT_BYTE_ARRAY:
        return _decode_byte_array(&c, num_values)
    width = fixed_width(physical_type, type_length)
    if width < 0:
        raise DecodeError(f"cannot PLAIN-decode physical type {physical_type} "
                          f"with type_length {type_length}")
    return _decode_fixed(&c, num_values, physical_type, width, out)


cdef tuple _decode_fixed(Cursor* c, Py_ssize_t n, int ptype, Py_ssize_t width, object out):
    cdef uint8_t[::1] dst
    if n > (c.size - c.pos) // width:
        raise_decode(c, n * width if n <= PY_SSIZE_T_MAX // width else PY_SSIZE_T_MAX,
                     "truncated PLAIN values")
    cdef const uint8_t* src = cur_take(c, n * width)
    if out is None:
        out = fixed_array(n, ptype, width)
        dst = out.reshape(-1).view(np.uint8)
    else:
        dst = out_bytes(out, n * width)
    if n * width >= NOGIL_MIN_BYTES:
        with nogil:
            memcpy(&dst[0], src, n * width)
    elif n:
        memcpy(&dst[0], src, n * width)
    return out, c.pos


@cython.boundscheck(False)
@cython.wraparound(False)
cdef tuple _decode_boolean(Cursor* c, Py_ssize_t n):
    cdef Py_ssize_t nbytes = (n >> 3) + ((n & 7) != 0)
    cdef const uint8_t* src = cur_take(c, nbytes, "truncated PLAIN booleans")
    out = np.empty(n, np.bool_)
    cdef uint8_t[::1] view = out.view(np.uint8)
    cdef uint8_t* dst = &view[0] if n else NULL
    unpack_bools(src, n, dst)
    return out, c.pos


cdef enum:
    NOGIL_MIN_BYTES = 65536     # smaller copies keep the GIL (a release is not worth it)
    NOGIL_MIN_VALUES = 4096


cdef inline Py_ssize_t _next_length(const uint8_t* src, Py_ssize_t* pos,
                                    Py_ssize_t size) noexcept nogil:
    """The BYTE_ARRAY length prefix at ``src[pos[0]]``, ``pos`` moved past it; -1 when the
    prefix or its value would run past ``size``."""
    if size - pos[0] < 4:
        return -1
    cdef uint32_t length = load_u32(src + pos[0])
    pos[0] += 4
    if length > <uint64_t>(size - pos[0]):
        return -1
    return length


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _lengths_nogil(const uint8_t* src, Py_ssize_t pos, Py_ssize_t size, Py_ssize_t n,
                               int32_t* offsets) noexcept nogil:
    """Pass 1 of a BYTE_ARRAY decode: the values' total bytes (and offsets from 0 into
    ``offsets`` unless NULL), or -1 at the first length the checking loop would refuse."""
    cdef Py_ssize_t i, total = 0, length
    for i in range(n):
        length = _next_length(src, &pos, size)
        if length < 0:
            return -1
        pos += length
        total += length
        if total > 0x7FFFFFFF:
            return -1
        if offsets != NULL:
            offsets[i + 1] = <int32_t>total
    return total


cdef int _check_prefixes(Cursor* c, Py_ssize_t n) except -1:
    """DecodeError unless the input has room for ``n`` length prefixes (before allocating
    for ``n`` values)."""
    if n > (c.size - c.pos) >> 2:
        raise_decode(c, n * 4 if n <= PY_SSIZE_T_MAX // 4 else PY_SSIZE_T_MAX,
                     "too few bytes for the BYTE_ARRAY length prefixes")
    return 0


cdef Py_ssize_t _checked_lengths(Cursor* c, Py_ssize_t n, int32_t* offsets) except -1:
    """``_lengths_nogil`` from the cursor (without the GIL for many values), and at anything
    wrong again with it, raising the exact error: the values' total bytes."""
    cdef Py_ssize_t start = c.pos, pos, i, total = 0, size = c.size
    cdef uint32_t length
    cdef const uint8_t* src = c.data
    _check_prefixes(c, n)
    if n >= NOGIL_MIN_VALUES:
        with nogil:
            total = _lengths_nogil(src, start, size, n, offsets)
    else:
        total = _lengths_nogil(src, start, size, n, offsets)
    if total >= 0:
        return total
    pos = start
    total = 0
    for i in range(n):
        if c.size - pos < 4:
            c.pos = pos
            raise_decode(c, 4, "truncated BYTE_ARRAY length")
        length = load_u32(src + pos)
        pos += 4
        if length > <uint64_t>(c.size - pos):
            c.pos = pos - 4
            raise_decode(c, <Py_ssize_t>length + 4, "BYTE_ARRAY length exceeds the input")
        pos += length
        total += length
        if total > 0x7FFFFFFF:
            c.pos = pos - length - 4
            raise_invalid(c, "BYTE_ARRAY values exceed 2 GiB in one page")
    raise DecodeError("BYTE_ARRAY lengths changed between their two checks")


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _copy_values(uint8_t* dst, Py_ssize_t total, const uint8_t* src, Py_ssize_t pos,
                       Py_ssize_t size, const int32_t* offsets, Py_ssize_t n) noexcept nogil:
    """Pass 2 of ``_decode_byte_array``: every value's bytes (lengths already checked)."""
    cdef Py_ssize_t i
    cdef int32_t o0 = 0, o1
    for i in range(n):
        o1 = offsets[i + 1]
        copy_bytes(dst + o0, total - o0, src + pos, size - pos, o1 - o0)
        pos += (o1 - o0) + 4
        o0 = o1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef tuple _decode_byte_array(Cursor* c, Py_ssize_t n):
    cdef Py_ssize_t start = c.pos, total
    _check_prefixes(c, n)
    offsets_arr = np.empty(n + 1, np.int32)
    cdef int32_t[::1] offsets = offsets_arr
    # pass 1: every length is checked against what remains; offsets are written as we go
    offsets[0] = 0
    cdef int32_t* offs = &offsets[0]
    total = _checked_lengths(c, n, offs)
    # pass 2: one allocation, then copy every value (lengths are known to be in bounds)
    values_arr = np.empty(total, np.uint8)
    cdef uint8_t[::1] values = values_arr
    cdef uint8_t* dst = &values[0] if total else NULL
    if total >= NOGIL_MIN_BYTES:
        with nogil:
            _copy_values(dst, total, c.data, start + 4, c.size, offs, n)
    elif total:
        _copy_values(dst, total, c.data, start + 4, c.size, offs, n)
    c.pos = start + 4 * n + total
    return (offsets_arr, values_arr), c.pos


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _fill_values(offset_t* offs, const BinSlot* slot, Py_ssize_t total,
                             const uint8_t* src, Py_ssize_t size, Py_ssize_t n) noexcept nogil:
    """Pass 2 of ``decode_byte_array_into``: offsets and the ``total`` bytes pass 1 counted
    into the sink's slot. The lengths are read again from the input, which may be the caller's
    memory and was not held while the GIL was released: 0, or -1 as soon as one differs from
    what pass 1 read (nothing is then read past the input or written past the claimed
    bytes)."""
    cdef Py_ssize_t i, o = 0, pos = 0, length
    for i in range(n):
        length = _next_length(src, &pos, size)
        if length < 0 or length > total - o:
            return -1
        copy_bytes(slot.data + o, slot.room - o, src + pos, size - pos, length)
        pos += length
        o += length
        offs[i] = <offset_t>(slot.base + o)
    return 0 if o == total else -1


def decode_byte_array_into(data, Py_ssize_t num_values, sink):
    """Decode ``num_values`` PLAIN BYTE_ARRAY values from the start of ``data`` straight into
    a chunk's sink (see binsink.pxd): no arrays of the page's own. Returns the bytes read.

    Raises:
        DecodeError: as :func:`decode_plain` (checked before anything is written), values
            past the chunk's value count, or lengths that changed while they were copied (the
            input is memory another thread wrote to; the sink is then left part written).
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    cdef BinSlot slot
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    cdef Py_ssize_t total = _checked_lengths(&c, num_values, NULL)
    cdef Py_ssize_t status
    bin_claim(sink, num_values, total, &slot)
    with nogil:
        if slot.off32 != NULL:
            status = _fill_values(slot.off32, &slot, total, c.data, c.size, num_values)
        else:
            status = _fill_values(slot.off64, &slot, total, c.data, c.size, num_values)
    if status < 0:
        raise DecodeError("BYTE_ARRAY lengths changed between their two checks")
    return 4 * num_values + total


# ------------------------------------------------------------------------------------ encode

def encode_plain(values, int physical_type, Py_ssize_t type_length=0):
    """PLAIN-encode ``values`` of one physical type.

    Args:
        values: an array in the common convention for ``physical_type`` (see ``decode_plain``;
            numpy arrays and sequences of other dtypes are cast when numpy casts safely; other
            buffers such as bytes or pyarrow Buffers hold raw little-endian values); for
            BYTE_ARRAY an ``(offsets, data)`` tuple, offsets int32 or int64 of length n + 1
            (need not start at 0), data a byte buffer.
        physical_type: parquet.thrift Type code.
        type_length: bytes per value for FIXED_LEN_BYTE_ARRAY.

    Returns:
        The encoded bytes.

    Raises:
        TypeError: values of the wrong kind, dtype or shape, not C-contiguous or big-endian.
        EncodeError: an unknown physical type, offsets that are not a valid non-decreasing
            sequence inside ``data``, or a value longer than 4 GiB - 1.
    """
    cdef Py_ssize_t width
    if physical_type == PT_BOOLEAN:
        return _encode_boolean(values)
    if physical_type == PT_BYTE_ARRAY:
        return _encode_byte_array(values)
    width = fixed_width(physical_type, type_length)
    if width < 0:
        raise EncodeError(f"cannot PLAIN-encode physical type {physical_type} "
                          f"with type_length {type_length}")
    cdef const uint8_t[::1] src = fixed_bytes(values, width, physical_type)
    return PyBytes_FromStringAndSize(<const char*>&src[0] if src.shape[0] else NULL, src.shape[0])


cdef bytes _encode_boolean(values):
    arr = np.asarray(values)
    if arr.dtype != np.bool_ or arr.ndim != 1:
        raise TypeError(f"BOOLEAN values must be a 1-D bool array, got {arr.dtype} {arr.shape}")
    cdef const uint8_t[::1] src = np.ascontiguousarray(arr).view(np.uint8)
    cdef Py_ssize_t n = src.shape[0]
    cdef bytes out = PyBytes_FromStringAndSize(NULL, (n + 7) >> 3)
    if n:
        pack_bools(&src[0], n, <uint8_t*>PyBytes_AS_STRING(out))
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bytes _encode_byte_array(values):
    offsets_arr, data_arr = binary_values(values)   # non-decreasing, inside data
    cdef const int64_t[::1] off = offsets_arr
    cdef const uint8_t[::1] data = data_arr
    cdef Py_ssize_t n = off.shape[0] - 1, i, length, pos = 0
    cdef int64_t first = off[0], last = off[n]
    for i in range(n):
        length = off[i + 1] - off[i]
        if length > 0xFFFFFFFF:
            raise EncodeError(f"BYTE_ARRAY values must be shorter than 4 GiB; value {i} has "
                              f"length {length}")
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 4 * n + (last - first))
    cdef uint8_t* dst = <uint8_t*>PyBytes_AS_STRING(out)
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    cdef Py_ssize_t out_len = 4 * n + (last - first), data_len = data.shape[0]
    for i in range(n):
        length = off[i + 1] - off[i]
        store_u32(dst + pos, <uint32_t>length)
        copy_bytes(dst + pos + 4, out_len - pos - 4, src + off[i], data_len - off[i], length)
        pos += 4 + length
    return out


# ------------------------------------------- a page of BYTE_ARRAY values from Arrow's buffers

cdef enum:
    _MIN_RUN = 16  # whole validity bytes alike before they become an RLE run of levels


cdef inline uint8_t _bits_at(const uint8_t* bits, Py_ssize_t nbytes, int64_t bit) noexcept nogil:
    """The 8 validity bits from ``bit`` on (bits past the bitmap read as 0)."""
    cdef Py_ssize_t q = bit >> 3
    cdef int r = bit & 7
    cdef unsigned int lo = bits[q] if q < nbytes else 0
    if r == 0:
        return <uint8_t>lo
    cdef unsigned int hi = bits[q + 1] if q + 1 < nbytes else 0
    return <uint8_t>((lo >> r) | (hi << (8 - r)))


cdef Py_ssize_t _levels_from_bits(const uint8_t* bits, Py_ssize_t nbytes, int64_t bit0,
                                  Py_ssize_t n, uint8_t* dst) noexcept nogil:
    """Definition levels (max 1) of ``n`` slots from an Arrow validity bitmap, as the RLE /
    bit-packing hybrid of bit width 1: a bit-packed group of 8 levels *is* a validity byte,
    so the groups are the bitmap's bytes (shifted to ``bit0``); runs of at least
    ``_MIN_RUN`` all-valid or all-null bytes become RLE runs. Returns the bytes written
    (at most ``n / 8 + 16``)."""
    cdef Py_ssize_t groups = (n + 7) >> 3, g = 0, lit = 0, run, k, pos = 0
    cdef uint8_t b, last_mask = <uint8_t>((1 << (n & 7)) - 1) if n & 7 else 0xFF
    while g < groups:
        b = _bits_at(bits, nbytes, bit0 + 8 * g)
        run = 0
        if (b == 0 or b == 0xFF) and g + _MIN_RUN < groups:  # never the last, partial group
            run = 1
            while g + run < groups - 1 and _bits_at(bits, nbytes, bit0 + 8 * (g + run)) == b:
                run += 1
        if run < _MIN_RUN:  # too short: these groups stay literal
            g += run if run else 1
            continue
        if g > lit:  # the literal groups before the run
            pos += put_uleb(dst + pos, ((<uint64_t>(g - lit)) << 1) | 1)
            for k in range(lit, g):
                dst[pos] = _bits_at(bits, nbytes, bit0 + 8 * k)
                pos += 1
        pos += put_uleb(dst + pos, (<uint64_t>(run * 8)) << 1)
        dst[pos] = 1 if b else 0
        pos += 1
        g += run
        lit = g
    if groups > lit:
        pos += put_uleb(dst + pos, ((<uint64_t>(groups - lit)) << 1) | 1)
        for k in range(lit, groups):
            dst[pos] = _bits_at(bits, nbytes, bit0 + 8 * k)
            pos += 1
        dst[pos - 1] &= last_mask  # no stray bits past the last slot
    return pos


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _binary_page(const offset_t[::1] off, const uint8_t* data,
                             Py_ssize_t data_len, const uint8_t* bits, Py_ssize_t nbytes,
                             int64_t bit0, Py_ssize_t start, Py_ssize_t stop, uint8_t* dst,
                             Py_ssize_t room, Py_ssize_t* present,
                             Py_ssize_t* bad) noexcept nogil:
    """PLAIN values of the valid slots ``start:stop``; returns the bytes written, or -1 with
    ``bad`` = the slot whose offsets are wrong (decreasing, outside data, or >= 4 GiB)."""
    cdef Py_ssize_t i, pos = 0, count = 0
    cdef int64_t s, e, length
    cdef int64_t bit
    for i in range(start, stop):
        if bits != NULL:
            bit = bit0 + i
            if ((bits[bit >> 3] >> <int>(bit & 7)) & 1) == 0:
                continue
        s = off[i]
        e = off[i + 1]
        length = e - s
        if s < 0 or length < 0 or e > data_len or length > <int64_t>0xFFFFFFFF:
            bad[0] = i
            return -1
        store_u32(dst + pos, <uint32_t>length)
        copy_bytes(dst + pos + 4, room - pos - 4, data + s, data_len - s, length)
        pos += 4 + length
        count += 1
    present[0] = count
    return pos


def encode_plain_binary_page(offsets, data, validity, int64_t bit_offset, Py_ssize_t start,
                             Py_ssize_t stop, bint levels):
    """One data page v1 body of BYTE_ARRAY values straight from Arrow's buffers.

    Args:
        offsets: the column's int32 or int64 offsets (one per slot, plus one; a 1-D array).
        data: the column's data buffer (uint8 array or any byte buffer).
        validity: the column's Arrow validity bitmap as a uint8 array, or None (every slot
            valid).
        bit_offset: the bit of ``validity`` that holds slot 0 (the Arrow array's offset).
        start, stop: the page's slots.
        levels: write the definition levels first (max level 1: 4-byte length, then the RLE /
            bit-packing hybrid of the validity bits); the values are PLAIN (4-byte length,
            bytes) of the valid slots only.

    Returns:
        ``(body, valid slot count)``; the body is a byte memoryview of a buffer in Arrow's
        pool.

    Raises:
        EncodeError: offsets that decrease, point outside ``data``, or a value of 4 GiB or more.
    """
    import pyarrow as pa
    cdef object off = np.asarray(offsets)
    if off.ndim != 1 or off.dtype not in (np.int32, np.int64) or off.shape[0] < stop + 1 \
            or start < 0 or start > stop:
        raise TypeError("offsets must be a 1-D int32 or int64 array covering the page, got "
                        f"dtype {off.dtype} shape {off.shape} for slots {start}:{stop}")
    cdef const uint8_t[::1] d = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) \
        else data.reshape(-1).view(np.uint8)
    cdef const uint8_t[::1] v
    cdef const uint8_t* bits = NULL
    cdef Py_ssize_t nbytes = 0
    if validity is not None:
        v = validity
        nbytes = v.shape[0]
        if bit_offset < 0 or (bit_offset + stop + 7) >> 3 > nbytes:
            raise TypeError(f"validity bitmap of {nbytes} bytes does not cover slots "
                            f"{start}:{stop} at bit offset {bit_offset}")
        bits = &v[0] if nbytes else NULL
    cdef Py_ssize_t n = stop - start
    cdef int64_t first = off[start], last = off[stop]
    cdef Py_ssize_t span = <Py_ssize_t>(last - first) if last > first else 0
    cdef Py_ssize_t level_room = (4 + (n >> 3) + 32) if levels else 0
    cdef Py_ssize_t room = level_room + 4 * n + span + 16
    buf = pa.allocate_buffer(room)
    cdef uint8_t[::1] outv = np.frombuffer(buf, np.uint8)
    cdef uint8_t* dst = &outv[0]
    cdef const uint8_t* dp = &d[0] if d.shape[0] else <const uint8_t*>b""
    cdef Py_ssize_t pos = 0, lv, written, present = 0, bad = -1
    cdef const int32_t[::1] o32
    cdef const int64_t[::1] o64
    with nogil:
        if levels:
            if bits != NULL:
                lv = _levels_from_bits(bits, nbytes, bit_offset + start, n, dst + 4)
            else:  # every slot valid: one RLE run of 1s
                lv = 0
                if n:
                    lv = put_uleb(dst + 4, (<uint64_t>n) << 1)
                    dst[4 + lv] = 1
                    lv += 1
            store_u32(dst, <uint32_t>lv)
            pos = 4 + lv
    if off.dtype == np.int32:
        o32 = off
        with nogil:
            written = _binary_page(o32, dp, d.shape[0], bits, nbytes, bit_offset, start, stop,
                                   dst + pos, room - pos, &present, &bad)
    else:
        o64 = off
        with nogil:
            written = _binary_page(o64, dp, d.shape[0], bits, nbytes, bit_offset, start, stop,
                                   dst + pos, room - pos, &present, &bad)
    if written < 0:
        raise EncodeError(f"BYTE_ARRAY offsets [{off[bad]}, {off[bad + 1]}] of value {bad} "
                          f"fall outside data of {d.shape[0]} bytes, decrease, or make a value "
                          "of 4 GiB or more")
    return memoryview(buf).cast("B")[:pos + written], present
