# cython: language_level=3
"""The RLE / bit-packing hybrid (levels, dictionary indices, booleans) and deprecated BIT_PACKED.

Decoding makes two passes over the run headers: the first checks every run (header varint at
most 10 bytes, run length in [1, 2^31 - 1], RLE values below 2^width, the whole of every
bit-packed run present) until ``num_values`` values are covered, so the output is allocated
only for input that really holds those values; the second fills it. Values past
``num_values`` in the last run (a padded bit-packed group, a longer RLE run) are ignored.

Encoding chooses runs like Arrow's ``RleEncoder``: groups of 8 values aligned from the end of
the last RLE run; a group of 8 equal values starts an RLE run that extends while the value
repeats, other groups are bit-packed in runs of at most 63 groups (a one-byte header); at the
end, leftover values (< 8) become an RLE run when they are equal and no bit-packed run is
open, otherwise a zero-padded bit-packed group.
"""

cimport cython
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from buffer cimport (Cursor, WBuf, cur_take, raise_decode, wb_init, wb_free, wb_to_bytes,
                     load_u64, store_u32, put_uleb)
from bitpack cimport packed_size, width_mask, pack_u32
from boolbits cimport unpack_bools
from physical cimport byte_view, view_cursor
from rlerun cimport (MAX_RUN, MAX_LITERAL_GROUPS, Run, _check_width, _next_run, _try_next_run,
                    _unpack_run, _prefixed)

import numpy as np

from metaindex.errors import DecodeError, EncodeError

cdef extern from *:
    uint64_t __builtin_bswap64(uint64_t) nogil

cdef enum:
    NOGIL_MIN_VALUES = 4096     # fewer values keep the GIL (a release is not worth it)

ctypedef fused out_t:
    uint32_t
    uint8_t

cdef int _check_runs(Cursor c, int width, Py_ssize_t n) except -1:
    """Pass 1: check that the runs starting at ``c`` (a copy) hold at least ``n`` values."""
    cdef Run run
    cdef Py_ssize_t total = 0
    while total < n:
        if c.pos >= c.size:
            raise_decode(&c, 1, f"RLE data ends after {total} of {n} values")
        _next_run(&c, width, &run)
        total += run.count
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _emit_run(Cursor* c, int width, Run* run, out_t* out,
                           Py_ssize_t k) noexcept nogil:
    """The first ``k`` values of an accepted run into ``out``."""
    cdef Py_ssize_t j
    cdef out_t v
    if run.rle:
        v = <out_t>run.value
        if v == 0:
            memset(out, 0, k * sizeof(out_t))
        else:
            for j in range(k):
                out[j] = v
    elif out_t is uint32_t:
        _unpack_run(run.packed, c.data + c.size - run.packed, width, out, k)
    else:
        unpack_bools(run.packed, k, out)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _fill_runs(Cursor* c, int width, out_t* out, Py_ssize_t n) except -1:
    """Pass 2: decode ``n`` values into ``out``, leaving ``c`` after the last run used."""
    cdef Run run
    cdef Py_ssize_t i = 0, k
    while i < n:
        _next_run(c, width, &run)
        k = run.count if run.count < n - i else n - i
        _emit_run(c, width, &run, out + i, k)
        i += k
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _fill_checked_runs(Cursor* c, int width, out_t* out, Py_ssize_t n) noexcept nogil:
    """``_fill_runs`` without the GIL, for runs ``_check_runs`` has accepted: -1 (never
    expected) if a run is refused after all."""
    cdef Run run
    cdef Py_ssize_t i = 0, k
    while i < n:
        if _try_next_run(c, width, &run) < 0:
            return -1
        k = run.count if run.count < n - i else n - i
        _emit_run(c, width, &run, out + i, k)
        i += k
    return 0


cdef tuple _decode(Cursor* c, Py_ssize_t num_values, int width, bint as_bool):
    """Both passes over ``c``; returns (uint32 or bool values, consumed relative to the input)."""
    cdef uint32_t[::1] out32
    cdef uint8_t[::1] out8
    dtype = np.bool_ if as_bool else np.uint32
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if num_values == 0 or (width == 0 and c.size == 0):
        # width 0 holds only zeros; an empty run list is accepted for it
        return np.zeros(num_values, dtype), c.base + c.pos
    _check_runs(c[0], width, num_values)
    out = np.empty(num_values, dtype)
    cdef int rc
    cdef uint8_t* p8
    cdef uint32_t* p32
    if as_bool:
        out8 = out.view(np.uint8)
        p8 = &out8[0]
        if num_values >= NOGIL_MIN_VALUES:
            with nogil:
                rc = _fill_checked_runs(c, width, p8, num_values)
        else:
            rc = _fill_checked_runs(c, width, p8, num_values)
    else:
        out32 = out
        p32 = &out32[0]
        if num_values >= NOGIL_MIN_VALUES:
            with nogil:
                rc = _fill_checked_runs(c, width, p32, num_values)
        else:
            rc = _fill_checked_runs(c, width, p32, num_values)
    if rc < 0:
        raise DecodeError("RLE runs changed between their check and their decoding")
    return out, c.base + c.pos


def decode_rle(data, Py_ssize_t num_values, int bit_width):
    """Decode ``num_values`` values of the RLE / bit-packing hybrid without a length prefix.

    Args:
        data: any C-contiguous buffer starting at the first run header (dictionary indices
            after their bit-width byte, data page v2 levels); bytes after the runs are left.
        num_values: values to decode (>= 0).
        bit_width: 0..32. With width 0 an empty ``data`` decodes to zeros.

    Returns:
        ``(values, consumed)``: uint32 array of ``num_values`` and the bytes up to the end of
        the last run used.

    Raises:
        DecodeError: a truncated or malformed run, a run value wider than ``bit_width``, or
            fewer than ``num_values`` values.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    _check_width(bit_width)
    return _decode(&c, num_values, bit_width, False)


def decode_rle_prefixed(data, Py_ssize_t num_values, int bit_width):
    """Decode the hybrid after a 4-byte little-endian length (data page v1 levels).

    Args:
        data: any C-contiguous buffer starting at the length prefix.
        num_values: values to decode (>= 0).
        bit_width: 0..32.

    Returns:
        ``(values, consumed)``: uint32 array and ``4 + length``.

    Raises:
        DecodeError: a missing or oversized prefix, or any error of ``decode_rle`` within it.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    _check_width(bit_width)
    cdef Cursor c = _prefixed(view)
    values, _ = _decode(&c, num_values, bit_width, False)
    return values, 4 + c.size


def decode_rle_bool(data, Py_ssize_t num_values):
    """Decode RLE-encoded BOOLEAN page values (width 1 with a 4-byte length prefix).

    Args:
        data: any C-contiguous buffer starting at the length prefix.
        num_values: values to decode (>= 0).

    Returns:
        ``(values, consumed)``: numpy bool_ array and ``4 + length``.

    Raises:
        DecodeError: as ``decode_rle_prefixed``.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = _prefixed(view)
    values, _ = _decode(&c, num_values, 1, True)
    return values, 4 + c.size


# ------------------------------------------------------------------------------------ encode

cdef inline int _put_value(uint8_t* dst, uint32_t v, int nbytes) noexcept nogil:
    cdef int k
    for k in range(nbytes):
        dst[k] = <uint8_t>(v >> (8 * k))
    return nbytes


ctypedef fused in_t:
    uint32_t
    uint8_t


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _encode_runs(const in_t* vals, Py_ssize_t n, int width, WBuf* w) except -1:
    """Append the runs for ``vals`` to ``w`` (room reserved by the caller, see _max_size)."""
    cdef uint64_t mask = width_mask(width)
    cdef int vbytes = (width + 7) >> 3
    cdef Py_ssize_t i = 0, j, k, header = -1, groups = 0, rest
    cdef uint32_t v
    cdef uint32_t tmp[8]
    cdef bint equal
    cdef uint8_t* d = w.data
    while i < n:
        rest = n - i
        v = vals[i]
        equal = True
        for k in range(1, min(rest, 8)):
            if vals[i + k] != v:
                equal = False
                break
        if equal and (rest >= 8 or header < 0):
            # an RLE run: 8 equal values, or equal leftovers with no bit-packed run open
            if header >= 0:
                d[header] = <uint8_t>((groups << 1) | 1)
                header = -1
            if v > mask:
                raise EncodeError(f"value {v} at index {i} does not fit {width} bits")
            j = i + min(rest, 8)
            while j < n and vals[j] == v and j - i < MAX_RUN:
                j += 1
            w.len += put_uleb(d + w.len, <uint64_t>(j - i) << 1)
            w.len += _put_value(d + w.len, v, vbytes)
            i = j
            continue
        # one bit-packed group of 8 (zero-padded at the end)
        for k in range(8):
            tmp[k] = vals[i + k] if k < rest else 0
            if tmp[k] > mask:
                raise EncodeError(f"value {tmp[k]} at index {i + k} does not fit {width} bits")
        if header < 0:
            header = w.len
            groups = 0
            w.len += 1
        pack_u32(tmp, 8, width, d + w.len)
        w.len += width
        groups += 1
        i += 8
        if groups == MAX_LITERAL_GROUPS:
            d[header] = <uint8_t>((groups << 1) | 1)
            header = -1
    if header >= 0:
        d[header] = <uint8_t>((groups << 1) | 1)
    return 0


cdef Py_ssize_t _max_size(Py_ssize_t n, int width) noexcept nogil:
    """Bytes the runs for ``n`` values can take at most: per 8 values either a bit-packed group
    (``width`` bytes, plus a header byte per run) or an RLE run (a 5-byte header and value)."""
    cdef Py_ssize_t per_group = width + 1 if width + 1 > 9 else 9
    return (n // 8 + 2) * per_group


cdef object _levels(values):
    """Encoder input as a contiguous uint32 or uint8 array (bool, uint8, uint32, int32 >= 0)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise TypeError(f"expected a 1-D array of levels or indices, got shape {arr.shape}")
    if arr.dtype == np.bool_ or arr.dtype == np.uint8:
        return np.ascontiguousarray(arr).view(np.uint8)
    if arr.dtype == np.int32:
        if arr.shape[0] and arr.min() < 0:
            raise EncodeError("RLE values must be non-negative")
        return np.ascontiguousarray(arr).view(np.uint32)
    if arr.dtype == np.uint32:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind in "iu":
        if arr.shape[0] and (arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise EncodeError("RLE values must lie in 0 .. 2^32 - 1")
        return arr.astype(np.uint32)
    raise TypeError(f"expected bool or integer values, got {arr.dtype}")


cdef bytes _encode(values, int bit_width, bint prefix):
    cdef const uint32_t[::1] v32
    cdef const uint8_t[::1] v8
    cdef WBuf w
    if bit_width < 0 or bit_width > 32:
        raise EncodeError(f"RLE bit width {bit_width} is outside 0..32")
    arr = _levels(values)
    cdef Py_ssize_t n = arr.shape[0]
    wb_init(&w, 4 + _max_size(n, bit_width))
    try:
        w.len = 4 if prefix else 0
        if arr.dtype == np.uint32:
            v32 = arr
            _encode_runs(&v32[0] if n else NULL, n, bit_width, &w)
        else:
            v8 = arr
            _encode_runs(&v8[0] if n else NULL, n, bit_width, &w)
        if prefix:
            store_u32(w.data, <uint32_t>(w.len - 4))
        return wb_to_bytes(&w)
    finally:
        wb_free(&w)


def encode_rle(values, int bit_width):
    """Encode values with the RLE / bit-packing hybrid, without a length prefix.

    Args:
        values: 1-D bool, uint8, uint32, int32 (>= 0) or other integer array / sequence.
        bit_width: 0..32; every value must fit.

    Returns:
        The runs, chosen as Arrow's ``RleEncoder`` does.

    Raises:
        EncodeError: a bad width or a value that does not fit it.
        TypeError: values that are not a 1-D bool or integer array.
    """
    return _encode(values, bit_width, False)


def encode_rle_prefixed(values, int bit_width):
    """Like ``encode_rle`` with the 4-byte little-endian length first (data page v1 levels)."""
    return _encode(values, bit_width, True)


def encode_rle_bool(values):
    """Encode BOOLEAN page values as RLE: width 1 with the 4-byte length prefix.

    Args:
        values: 1-D bool array (or a sequence numpy turns into one).

    Raises:
        TypeError: values that are not booleans.
    """
    arr = np.asarray(values)
    if arr.dtype != np.bool_:
        raise TypeError(f"expected a bool array, got {arr.dtype}")
    return _encode(arr, 1, True)


# ------------------------------------------------------------------------- BIT_PACKED (old)

@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _unpack_msb(const uint8_t* src, Py_ssize_t src_len, int width, uint32_t* out,
                      Py_ssize_t n) noexcept nogil:
    """Unpack MSB-first values; requires src_len >= packed_size(n, width), 1 <= width <= 32."""
    cdef Py_ssize_t i = 0, bit = 0, byte
    cdef uint8_t tmp[16]
    while i < n:
        byte = bit >> 3
        if byte + 8 > src_len:
            break
        out[i] = <uint32_t>((__builtin_bswap64(load_u64(src + byte)) << (bit & 7)) >> (64 - width))
        bit += width
        i += 1
    if i < n:
        byte = bit >> 3
        memset(tmp, 0, 16)
        memcpy(tmp, src + byte, src_len - byte)
        bit -= byte << 3
        while i < n:
            out[i] = <uint32_t>((__builtin_bswap64(load_u64(tmp + (bit >> 3))) << (bit & 7))
                                >> (64 - width))
            bit += width
            i += 1


def decode_bit_packed(data, Py_ssize_t num_values, int bit_width):
    """Decode the deprecated BIT_PACKED level encoding (MSB first, no headers).

    Args:
        data: any C-contiguous buffer; bytes after the ceil(num_values * bit_width / 8)
            packed bytes are left alone.
        num_values: values to decode (>= 0).
        bit_width: 0..32.

    Returns:
        ``(values, consumed)``: uint32 array and the packed byte count.

    Raises:
        DecodeError: a bad width or count, or fewer bytes than the values need.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Cursor c = view_cursor(view)
    _check_width(bit_width)
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if bit_width and num_values > (c.size * 8) // bit_width:
        raise_decode(&c, packed_size(num_values, bit_width) if num_values < (1 << 56)
                     else PY_SSIZE_T_MAX,
                     "truncated BIT_PACKED levels")
    cdef Py_ssize_t nbytes = packed_size(num_values, bit_width)
    cdef const uint8_t* src = cur_take(&c, nbytes, "truncated BIT_PACKED levels")
    out = np.zeros(num_values, np.uint32) if bit_width == 0 else np.empty(num_values, np.uint32)
    cdef uint32_t[::1] dst = out
    if bit_width and num_values:
        _unpack_msb(src, nbytes, bit_width, &dst[0], num_values)
    return out, c.pos
