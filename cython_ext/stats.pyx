# cython: language_level=3
"""Min/max kernels for column statistics, one pass per value array, no Python object per value.

Each kernel works on the value conventions of the kernels (non-null values only) and compares in
one of Parquet's sort orders:

- INT32 / INT64 in signed or unsigned order (``minmax_int32`` / ``minmax_int64``): the bounds
  as Python ints (unsigned order returns them unsigned);
- FLOAT / DOUBLE (``minmax_float32`` / ``minmax_float64``): NaN is skipped and counted;
  ``-0.0`` and ``+0.0`` compare equal (the statistics layer widens zero bounds);
- FLOAT16 as FIXED_LEN_BYTE_ARRAY(2) half floats (``minmax_float16``): the same rules, bounds
  returned as 16-bit patterns;
- BOOLEAN (``minmax_bool``): false < true;
- FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY (``minmax_fixed`` / ``minmax_binary``): unsigned
  lexicographic byte order (shorter prefix first), or signed order of big-endian two's
  complement integers (DECIMAL), sign-extending values of different lengths. These return the
  positions of a smallest and a largest value (the first one in case of ties).

Integer bounds, and float bounds of values without NaN, are numpy's SIMD min and max; the
float loop that skips and counts NaNs keeps independent accumulators so it has no
loop-carried dependency through one register; byte-string kernels compare an 8-byte big-endian
prefix key first and only fall back to ``memcmp`` when the keys tie.
"""

cimport cython
from libc.stdint cimport uint8_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t
from libc.string cimport memcpy, memcmp, memset
from libc.math cimport INFINITY

from buffer cimport load_u64
from physical cimport byte_view

import numpy as np

from metaindex.errors import EncodeError


cdef uint8_t _EMPTY[8]  # a valid pointer for empty data (all values empty)


ctypedef fused offset_t:
    int32_t
    int64_t


# ------------------------------------------------------------------------- argument helpers

cdef object _typed(object values, object dtype, str what):
    """``values`` as an aligned, C-contiguous 1-D numpy array of ``dtype`` (no copy if it is one)."""
    cdef object arr, raw
    dtype = np.dtype(dtype)
    if isinstance(values, np.ndarray):
        arr = values
        if not arr.dtype.isnative:
            raise TypeError(f"{what}: big-endian arrays ({arr.dtype}) are not accepted; "
                            "convert to native byte order first")
        if arr.dtype.kind in "iuf" and arr.dtype.itemsize == dtype.itemsize \
                and arr.dtype.kind != "f" and dtype.kind != "f":
            arr = arr.view(dtype) if arr.flags.c_contiguous else np.ascontiguousarray(arr).view(dtype)
        if arr.dtype != dtype:
            raise TypeError(f"{what} expects {dtype} values, got a {arr.dtype} array")
        if arr.ndim != 1:
            raise TypeError(f"{what} expects a 1-D array, got shape {arr.shape}")
    else:
        raw = byte_view(values, f"{what} values")
        if len(raw) % dtype.itemsize:
            raise TypeError(f"a buffer of {len(raw)} bytes does not hold whole "
                            f"{dtype.itemsize}-byte values")
        arr = np.frombuffer(raw, dtype=dtype)
    if not arr.flags.aligned:
        arr = np.array(arr, copy=True, order="C")  # a fresh allocation is aligned
    elif not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


cdef object _rows(object values, Py_ssize_t width, str what):
    """FIXED_LEN_BYTE_ARRAY values as a C-contiguous (n, width) uint8 array."""
    cdef object arr
    if width <= 0:
        raise TypeError(f"{what}: type_length must be positive, got {width}")
    if isinstance(values, np.ndarray) and values.ndim == 2:
        arr = values
        if arr.dtype != np.uint8 or arr.shape[1] != width:
            raise TypeError(f"{what} expects a uint8 array of shape (n, {width}), got "
                            f"{arr.dtype} with shape {arr.shape}")
        return np.ascontiguousarray(arr)
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "SV":
        if values.dtype.itemsize != width:
            raise TypeError(f"{what} expects {width}-byte items, got {values.dtype}")
        return np.ascontiguousarray(values).view(np.uint8).reshape(-1, width)
    arr = _typed(values, np.uint8, what)
    if arr.shape[0] % width:
        raise TypeError(f"{what}: {arr.shape[0]} bytes do not hold whole {width}-byte values")
    return arr.reshape(-1, width)


# ------------------------------------------------------------------------------- integers

ctypedef fused float_t:
    float
    double


cdef tuple _int_bounds_numpy(object arr):
    """numpy's SIMD min and max (twice the four-lane loop's speed on this machine)."""
    if arr.shape[0] == 0:
        return None
    return int(arr.min()), int(arr.max())


def minmax_int32(values, bint unsigned=False):
    """Smallest and largest INT32 value.

    Args:
        values: int32 (or uint32) numpy array or any C-contiguous buffer of 4-byte values.
        unsigned: compare as unsigned 32-bit integers (UINT_8/16/32 columns).

    Returns:
        ``(min, max)`` as Python ints (unsigned when ``unsigned``), or None for no values.

    Raises:
        TypeError: values that are not 4-byte integers.
    """
    return _int_bounds_numpy(_typed(values, np.uint32 if unsigned else np.int32,
                                    "minmax_int32"))


def minmax_int64(values, bint unsigned=False):
    """Smallest and largest INT64 value.

    Args:
        values: int64 (or uint64) numpy array or any C-contiguous buffer of 8-byte values.
        unsigned: compare as unsigned 64-bit integers (UINT_64 columns).

    Returns:
        ``(min, max)`` as Python ints (unsigned when ``unsigned``), or None for no values.

    Raises:
        TypeError: values that are not 8-byte integers.
    """
    return _int_bounds_numpy(_typed(values, np.uint64 if unsigned else np.int64,
                                    "minmax_int64"))


# --------------------------------------------------------------------------------- floats

@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _minmax_float(const float_t* p, Py_ssize_t n, float_t* lo, float_t* hi) noexcept nogil:
    """NaN-skipping bounds (``v < lo`` is false for NaN); returns the NaN count."""
    cdef float_t a0 = INFINITY, a1 = INFINITY, b0 = -INFINITY, b1 = -INFINITY, v, w
    cdef Py_ssize_t nan0 = 0, nan1 = 0
    cdef Py_ssize_t i = 0
    while i + 2 <= n:
        v = p[i]
        w = p[i + 1]
        a0 = v if v < a0 else a0
        b0 = v if v > b0 else b0
        nan0 += v != v
        a1 = w if w < a1 else a1
        b1 = w if w > b1 else b1
        nan1 += w != w
        i += 2
    if i < n:
        v = p[i]
        a0 = v if v < a0 else a0
        b0 = v if v > b0 else b0
        nan0 += v != v
    lo[0] = a1 if a1 < a0 else a0
    hi[0] = b1 if b1 > b0 else b0
    return nan0 + nan1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef tuple _float_bounds(const float_t[::1] v):
    cdef Py_ssize_t n = v.shape[0], nans = 0
    cdef float_t lo = 0, hi = 0
    if n:
        with nogil:
            nans = _minmax_float(&v[0], n, &lo, &hi)
    if nans == n:
        return None, None, nans
    return <double>lo, <double>hi, nans


cdef tuple _float_bounds_fast(object arr):
    """numpy's SIMD min and max first (NaN-propagating: when neither is NaN there is no NaN,
    and those are the bounds, about 3x the scalar loop); the NaN-counting loop otherwise."""
    if arr.shape[0]:
        lo = arr.min()
        hi = arr.max()
        if lo == lo and hi == hi:
            return float(lo), float(hi), 0
    if arr.dtype == np.float32:
        return _float_bounds[float](arr)
    return _float_bounds[double](arr)


def minmax_float64(values):
    """Bounds of the non-NaN DOUBLE values and the number of NaNs.

    Args:
        values: float64 numpy array or any C-contiguous buffer of 8-byte IEEE doubles.

    Returns:
        ``(min, max, nan_count)``; ``min`` and ``max`` are None when there is no non-NaN value.
        Zeros keep whichever sign was met first: callers normalise zero bounds.

    Raises:
        TypeError: values that are not 8-byte floats.
    """
    return _float_bounds_fast(_typed(values, np.float64, "minmax_float64"))


def minmax_float32(values):
    """Bounds of the non-NaN FLOAT values and the number of NaNs.

    Args:
        values: float32 numpy array or any C-contiguous buffer of 4-byte IEEE floats.

    Returns:
        ``(min, max, nan_count)`` with the bounds as Python floats (exact), or None bounds when
        there is no non-NaN value.

    Raises:
        TypeError: values that are not 4-byte floats.
    """
    return _float_bounds_fast(_typed(values, np.float32, "minmax_float32"))



cdef inline uint16_t _half_key(uint16_t h) noexcept nogil:
    """A 16-bit key whose unsigned order is the numeric order of half floats (NaN excluded)."""
    return <uint16_t>(~h) if h & 0x8000 else <uint16_t>(h | 0x8000)


@cython.boundscheck(False)
@cython.wraparound(False)
def minmax_float16(values):
    """Bounds of the non-NaN FLOAT16 values (FIXED_LEN_BYTE_ARRAY(2), little-endian halves).

    Args:
        values: uint8 array of shape (n, 2), a 1-D float16/uint16 array, or raw bytes.

    Returns:
        ``(min_bits, max_bits, nan_count)``: the 16-bit patterns of the bounds (None when every
        value is NaN). Of equal zeros, ``-0`` counts as the smaller.

    Raises:
        TypeError: values that are not 2-byte items.
    """
    cdef object arr
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.itemsize == 2:
        arr = np.ascontiguousarray(values).view(np.uint16)
    else:
        arr = _rows(values, 2, "minmax_float16").reshape(-1).view(np.uint16)
    cdef const uint16_t[::1] v = arr
    cdef Py_ssize_t n = v.shape[0], i, nans = 0
    cdef uint16_t h, k, lo_key = 0xFFFF, hi_key = 0, lo = 0, hi = 0
    with nogil:
        for i in range(n):
            h = v[i]
            if (h & 0x7FFF) > 0x7C00:
                nans += 1
                continue
            k = _half_key(h)  # non-NaN keys lie in [0x03FF, 0xFC00]: the start values lose
            if k < lo_key:
                lo_key = k
                lo = h
            if k > hi_key:
                hi_key = k
                hi = h
    if nans == n:
        return None, None, nans
    return lo, hi, nans


# -------------------------------------------------------------------------------- boolean

@cython.boundscheck(False)
@cython.wraparound(False)
def minmax_bool(values):
    """Smallest and largest BOOLEAN value (false < true).

    Args:
        values: bool_ numpy array or any buffer of bytes that are 0 or non-zero.

    Returns:
        ``(min, max)`` as Python bools, or None for no values.
    """
    cdef object arr = values.view(np.uint8) if isinstance(values, np.ndarray) \
        and values.dtype == np.bool_ else values
    cdef const uint8_t[::1] v = _typed(arr, np.uint8, "minmax_bool")
    cdef Py_ssize_t n = v.shape[0], i
    cdef bint seen_false = False, seen_true = False
    if n == 0:
        return None
    with nogil:
        for i in range(n):
            if v[i]:
                seen_true = True
            else:
                seen_false = True
            if seen_true and seen_false:
                break
    return not seen_false, seen_true


# --------------------------------------------------------------------------- byte strings

cdef inline uint64_t _bswap64(uint64_t x) noexcept nogil:
    x = ((x & <uint64_t>0x00FF00FF00FF00FF) << 8) | ((x >> 8) & <uint64_t>0x00FF00FF00FF00FF)
    x = ((x & <uint64_t>0x0000FFFF0000FFFF) << 16) | ((x >> 16) & <uint64_t>0x0000FFFF0000FFFF)
    return (x << 32) | (x >> 32)


cdef inline uint64_t _prefix_key(const uint8_t* p, Py_ssize_t length, Py_ssize_t room) noexcept nogil:
    """First min(length, 8) bytes as a big-endian integer, zero-padded on the right.

    ``room`` is how many bytes may be read from ``p`` (>= length).
    """
    cdef uint8_t tmp[8]
    cdef uint64_t k
    if length >= 8:
        return _bswap64(load_u64(p))
    if room >= 8:
        k = _bswap64(load_u64(p))
    else:
        memset(tmp, 0, 8)
        memcpy(tmp, p, length)
        return _bswap64(load_u64(tmp))
    if length == 0:
        return 0
    return k & (<uint64_t>0xFFFFFFFFFFFFFFFF << (8 * (8 - length)))


cdef inline int _cmp_unsigned_tail(const uint8_t* a, Py_ssize_t la,
                                   const uint8_t* b, Py_ssize_t lb) noexcept nogil:
    """Unsigned lexicographic order of two strings whose 8-byte prefix keys are equal."""
    cdef Py_ssize_t common = la if la < lb else lb
    cdef Py_ssize_t i = 8
    cdef uint64_t x, y
    # 8 bytes at a time (both strings hold them), then byte by byte
    while i + 8 <= common:
        x = load_u64(a + i)
        y = load_u64(b + i)
        if x != y:
            x = _bswap64(x)
            y = _bswap64(y)
            return -1 if x < y else 1
        i += 8
    while i < common:
        if a[i] != b[i]:
            return -1 if a[i] < b[i] else 1
        i += 1
    return (la > lb) - (la < lb)


cdef inline int _cmp_signed(const uint8_t* a, Py_ssize_t la,
                            const uint8_t* b, Py_ssize_t lb) noexcept nogil:
    """Order of big-endian two's complement integers of any lengths (empty = 0)."""
    cdef bint neg_a = la > 0 and (a[0] & 0x80)
    cdef bint neg_b = lb > 0 and (b[0] & 0x80)
    cdef uint8_t pad, x, y
    cdef Py_ssize_t n, i
    if neg_a != neg_b:
        return -1 if neg_a else 1
    pad = 0xFF if neg_a else 0
    # sign-extend the shorter one: compare the longer one's extra leading bytes with the pad
    n = la if la > lb else lb
    for i in range(n):
        x = a[i - (n - la)] if i >= n - la else pad
        y = b[i - (n - lb)] if i >= n - lb else pad
        if x != y:
            return -1 if x < y else 1
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def minmax_fixed(values, Py_ssize_t type_length, bint signed=False):
    """Positions of a smallest and a largest FIXED_LEN_BYTE_ARRAY value.

    Args:
        values: uint8 array of shape (n, type_length), a 1-D ``S``/``V`` array, or raw bytes.
        type_length: bytes per value (> 0).
        signed: compare as big-endian two's complement integers (DECIMAL) instead of unsigned
            lexicographic bytes.

    Returns:
        ``(i_min, i_max)`` (first positions among ties), or None for no values.

    Raises:
        TypeError: values that are not ``type_length``-byte rows.
    """
    cdef object arr = _rows(values, type_length, "minmax_fixed")
    cdef Py_ssize_t n = arr.shape[0], w = type_length, i, i_lo = 0, i_hi = 0
    if n == 0:
        return None
    cdef const uint8_t[:, ::1] v = arr
    cdef const uint8_t* base = &v[0, 0]
    cdef const uint8_t* p
    cdef Py_ssize_t total = n * w
    cdef uint64_t flip = <uint64_t>1 << 63 if signed else 0
    cdef uint64_t k, lo_key, hi_key
    cdef int r
    lo_key = hi_key = _prefix_key(base, w, total) ^ flip
    with nogil:
        for i in range(1, n):
            p = base + i * w
            k = _prefix_key(p, w, total - i * w) ^ flip
            if k < lo_key:
                lo_key = k
                i_lo = i
            elif k == lo_key and w > 8:
                r = memcmp(p + 8, base + i_lo * w + 8, w - 8)
                if r < 0:
                    i_lo = i
            if k > hi_key:
                hi_key = k
                i_hi = i
            elif k == hi_key and w > 8:
                r = memcmp(p + 8, base + i_hi * w + 8, w - 8)
                if r > 0:
                    i_hi = i
    return i_lo, i_hi


cdef struct _Bounds:
    # the least and greatest BYTE_ARRAY value seen: their slots, byte ranges and prefix keys
    Py_ssize_t i_lo, i_hi
    int64_t lo_s, lo_e, hi_s, hi_e
    uint64_t lo_key, hi_key


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _bounds_start(_Bounds* b, const uint8_t* data, Py_ssize_t size, int64_t s,
                               int64_t e, Py_ssize_t i) noexcept nogil:
    """Value ``i`` (bytes ``[s, e)``) is both bounds."""
    b.i_lo = b.i_hi = i
    b.lo_s = b.hi_s = s
    b.lo_e = b.hi_e = e
    b.lo_key = b.hi_key = _prefix_key(data + s, e - s, size - s)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _bounds_take(_Bounds* b, const uint8_t* data, Py_ssize_t size, bint signed,
                              int64_t s, int64_t e, Py_ssize_t i) noexcept nogil:
    """Value ``i`` (bytes ``[s, e)``) becomes a bound where it is below / above the current
    ones (signed: two's complement big-endian order; else unsigned bytes, by 8-byte prefix
    key first)."""
    cdef uint64_t k
    if signed:
        if _cmp_signed(data + s, e - s, data + b.lo_s, b.lo_e - b.lo_s) < 0:
            b.lo_s, b.lo_e, b.i_lo = s, e, i
        if _cmp_signed(data + s, e - s, data + b.hi_s, b.hi_e - b.hi_s) > 0:
            b.hi_s, b.hi_e, b.i_hi = s, e, i
        return
    k = _prefix_key(data + s, e - s, size - s)
    if k < b.lo_key or (k == b.lo_key and _cmp_unsigned_tail(
            data + s, e - s, data + b.lo_s, b.lo_e - b.lo_s) < 0):
        b.lo_key, b.lo_s, b.lo_e, b.i_lo = k, s, e, i
    if k > b.hi_key or (k == b.hi_key and _cmp_unsigned_tail(
            data + s, e - s, data + b.hi_s, b.hi_e - b.hi_s) > 0):
        b.hi_key, b.hi_s, b.hi_e, b.i_hi = k, s, e, i


cdef int _bounds_out(_Bounds* b, Py_ssize_t bad, int64_t s, int64_t e, Py_ssize_t size,
                     Py_ssize_t* out) except -1:
    """The bounds' slots into ``out``, or EncodeError for value ``bad`` (>= 0) whose offsets
    ``[s, e]`` fall outside the data."""
    if bad >= 0:
        raise EncodeError(f"BYTE_ARRAY offsets [{s}, {e}] of value {bad} fall outside data of "
                          f"{size} bytes or decrease")
    out[0] = b.i_lo
    out[1] = b.i_hi
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _minmax_binary(const offset_t[::1] off, const uint8_t* data, Py_ssize_t size,
                        bint signed, Py_ssize_t* out) except -1:
    cdef Py_ssize_t n = off.shape[0] - 1, i, bad = -1
    cdef int64_t s, e
    cdef _Bounds b
    s = off[0]
    e = off[1]
    if s < 0 or e < s or e > size:
        raise EncodeError(f"BYTE_ARRAY offsets [{s}, {e}] of value 0 fall outside data of "
                          f"{size} bytes or decrease")
    _bounds_start(&b, data, size, s, e, 0)
    with nogil:
        for i in range(1, n):
            s = e
            e = off[i + 1]
            if e < s or e > size:
                bad = i
                break
            _bounds_take(&b, data, size, signed, s, e, i)
    return _bounds_out(&b, bad, s, e, size, out)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _minmax_binary_valid(const offset_t[::1] off, const uint8_t* data, Py_ssize_t size,
                              bint signed, const uint8_t* bits, int64_t bit0,
                              Py_ssize_t* out) except -1:
    """``_minmax_binary`` over the slots whose validity bit is set; out = -1, -1 when none."""
    cdef Py_ssize_t n = off.shape[0] - 1, i, bad = -1
    cdef int64_t s = 0, e = 0, bit
    cdef _Bounds b
    b.i_lo = b.i_hi = -1
    b.lo_s = b.lo_e = b.hi_s = b.hi_e = 0
    b.lo_key = b.hi_key = 0
    with nogil:
        for i in range(n):
            bit = bit0 + i
            if ((bits[bit >> 3] >> <int>(bit & 7)) & 1) == 0:
                continue
            s = off[i]
            e = off[i + 1]
            if s < 0 or e < s or e > size:
                bad = i
                break
            if b.i_lo < 0:
                _bounds_start(&b, data, size, s, e, i)
            else:
                _bounds_take(&b, data, size, signed, s, e, i)
    return _bounds_out(&b, bad, s, e, size, out)


def minmax_binary(offsets, data, bint signed=False, validity=None, int64_t bit_offset=0):
    """Positions of a smallest and a largest BYTE_ARRAY value.

    Args:
        offsets: int32 or int64 array of n + 1 offsets into ``data`` (``offsets[0]`` may be > 0,
            as in sliced Arrow arrays).
        data: uint8 array or any C-contiguous buffer holding the values' bytes.
        signed: compare as big-endian two's complement integers of any length (DECIMAL), with
            sign extension, instead of unsigned lexicographic bytes (shorter prefix first).
        validity: an Arrow validity bitmap (uint8 array) of the n slots, or None: only slots
            whose bit is set count (null slots' offsets are not looked at).
        bit_offset: the bit of ``validity`` that holds slot 0.

    Returns:
        ``(i_min, i_max)`` (first positions among ties), or None for no values.

    Raises:
        TypeError: offsets that are not a 1-D int32/int64 array.
        EncodeError: offsets that decrease or point outside ``data``.
    """
    cdef object off = np.asarray(offsets)
    if off.ndim != 1 or off.dtype not in (np.int32, np.int64) or off.shape[0] < 1:
        raise TypeError("minmax_binary expects a non-empty 1-D int32 or int64 offsets array, "
                        f"got dtype {off.dtype} with shape {off.shape}")
    off = np.ascontiguousarray(off)
    cdef const uint8_t[::1] d = _typed(data, np.uint8, "minmax_binary")
    cdef const uint8_t* dp = &d[0] if d.shape[0] else _EMPTY
    cdef Py_ssize_t out[2]
    if off.shape[0] == 1:
        return None
    cdef const uint8_t[::1] v
    if validity is not None:
        v = _typed(validity, np.uint8, "minmax_binary validity")
        if bit_offset < 0 or (bit_offset + off.shape[0] - 1 + 7) >> 3 > v.shape[0]:
            raise TypeError(f"validity bitmap of {v.shape[0]} bytes does not cover "
                            f"{off.shape[0] - 1} slots at bit offset {bit_offset}")
        if off.dtype == np.int32:
            _minmax_binary_valid[int32_t](off, dp, d.shape[0], signed, &v[0], bit_offset, out)
        else:
            _minmax_binary_valid[int64_t](off, dp, d.shape[0], signed, &v[0], bit_offset, out)
        return None if out[0] < 0 else (out[0], out[1])
    if off.dtype == np.int32:
        _minmax_binary[int32_t](off, dp, d.shape[0], signed, out)
    else:
        _minmax_binary[int64_t](off, dp, d.shape[0], signed, out)
    return out[0], out[1]
