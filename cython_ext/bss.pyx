# cython: language_level=3
"""BYTE_STREAM_SPLIT: K byte streams (K = value width) of N bytes each.

Byte k of value i is stream k's byte i; the streams are concatenated. The encoding has no
header: the stream length is the data length / K, so ``data`` must be exactly the encoded
values (a data page's values section), its length a multiple of K. Widths 4 and 8 (FLOAT,
INT32 / DOUBLE, INT64) have their own loops; FIXED_LEN_BYTE_ARRAY uses the generic one.
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.stdint cimport uint8_t, uint32_t, uintptr_t

from buffer cimport load_u32, store_u32
from physical cimport (PT_INT32, PT_INT64, PT_FLOAT, PT_DOUBLE, PT_FIXED_LEN_BYTE_ARRAY,
                       fixed_width, byte_view, fixed_array, fixed_bytes, out_bytes)

import numpy as np

from metaindex.errors import DecodeError, EncodeError


cdef extern from *:
    """
    /* BYTE_STREAM_SPLIT decode of widths 4 and 8, 16 values per step with SSE2 byte
       interleaves (unpack 8 -> 16 -> 32 bits); returns the values done, the caller finishes
       the rest. Without SSE2 (other architectures) nothing is done here. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static Py_ssize_t bss_join4_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                                     uint8_t* dst) {
        Py_ssize_t i = 0;
        for (; i + 16 <= n; i += 16) {
            __m128i b0 = _mm_loadu_si128((const __m128i*)(s + i));
            __m128i b1 = _mm_loadu_si128((const __m128i*)(s + stride + i));
            __m128i b2 = _mm_loadu_si128((const __m128i*)(s + 2 * stride + i));
            __m128i b3 = _mm_loadu_si128((const __m128i*)(s + 3 * stride + i));
            __m128i lo01 = _mm_unpacklo_epi8(b0, b1), hi01 = _mm_unpackhi_epi8(b0, b1);
            __m128i lo23 = _mm_unpacklo_epi8(b2, b3), hi23 = _mm_unpackhi_epi8(b2, b3);
            uint8_t* d = dst + 4 * i;
            _mm_storeu_si128((__m128i*)d, _mm_unpacklo_epi16(lo01, lo23));
            _mm_storeu_si128((__m128i*)(d + 16), _mm_unpackhi_epi16(lo01, lo23));
            _mm_storeu_si128((__m128i*)(d + 32), _mm_unpacklo_epi16(hi01, hi23));
            _mm_storeu_si128((__m128i*)(d + 48), _mm_unpackhi_epi16(hi01, hi23));
        }
        return i;
    }
    static Py_ssize_t bss_join8_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                                     uint8_t* dst) {
        Py_ssize_t i = 0;
        for (; i + 16 <= n; i += 16) {
            __m128i b0 = _mm_loadu_si128((const __m128i*)(s + i));
            __m128i b1 = _mm_loadu_si128((const __m128i*)(s + stride + i));
            __m128i b2 = _mm_loadu_si128((const __m128i*)(s + 2 * stride + i));
            __m128i b3 = _mm_loadu_si128((const __m128i*)(s + 3 * stride + i));
            __m128i b4 = _mm_loadu_si128((const __m128i*)(s + 4 * stride + i));
            __m128i b5 = _mm_loadu_si128((const __m128i*)(s + 5 * stride + i));
            __m128i b6 = _mm_loadu_si128((const __m128i*)(s + 6 * stride + i));
            __m128i b7 = _mm_loadu_si128((const __m128i*)(s + 7 * stride + i));
            __m128i lo01 = _mm_unpacklo_epi8(b0, b1), hi01 = _mm_unpackhi_epi8(b0, b1);
            __m128i lo23 = _mm_unpacklo_epi8(b2, b3), hi23 = _mm_unpackhi_epi8(b2, b3);
            __m128i lo45 = _mm_unpacklo_epi8(b4, b5), hi45 = _mm_unpackhi_epi8(b4, b5);
            __m128i lo67 = _mm_unpacklo_epi8(b6, b7), hi67 = _mm_unpackhi_epi8(b6, b7);
            /* low 4 bytes of values 0-3, 4-7, 8-11, 12-15, then their high 4 bytes */
            __m128i a0 = _mm_unpacklo_epi16(lo01, lo23), a1 = _mm_unpackhi_epi16(lo01, lo23);
            __m128i a2 = _mm_unpacklo_epi16(hi01, hi23), a3 = _mm_unpackhi_epi16(hi01, hi23);
            __m128i c0 = _mm_unpacklo_epi16(lo45, lo67), c1 = _mm_unpackhi_epi16(lo45, lo67);
            __m128i c2 = _mm_unpacklo_epi16(hi45, hi67), c3 = _mm_unpackhi_epi16(hi45, hi67);
            uint8_t* d = dst + 8 * i;
            _mm_storeu_si128((__m128i*)d, _mm_unpacklo_epi32(a0, c0));
            _mm_storeu_si128((__m128i*)(d + 16), _mm_unpackhi_epi32(a0, c0));
            _mm_storeu_si128((__m128i*)(d + 32), _mm_unpacklo_epi32(a1, c1));
            _mm_storeu_si128((__m128i*)(d + 48), _mm_unpackhi_epi32(a1, c1));
            _mm_storeu_si128((__m128i*)(d + 64), _mm_unpacklo_epi32(a2, c2));
            _mm_storeu_si128((__m128i*)(d + 80), _mm_unpackhi_epi32(a2, c2));
            _mm_storeu_si128((__m128i*)(d + 96), _mm_unpacklo_epi32(a3, c3));
            _mm_storeu_si128((__m128i*)(d + 112), _mm_unpackhi_epi32(a3, c3));
        }
        return i;
    }
    #else
    static Py_ssize_t bss_join4_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                                     uint8_t* dst) { return 0; }
    static Py_ssize_t bss_join8_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                                     uint8_t* dst) { return 0; }
    #endif
    """
    Py_ssize_t bss_join4_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                              uint8_t* dst) noexcept nogil
    Py_ssize_t bss_join8_simd(const uint8_t* s, Py_ssize_t stride, Py_ssize_t n,
                              uint8_t* dst) noexcept nogil


cdef Py_ssize_t _width(int ptype, Py_ssize_t type_length) noexcept nogil:
    """Bytes per value for the types BYTE_STREAM_SPLIT supports, -1 for others."""
    if ptype in (PT_INT32, PT_INT64, PT_FLOAT, PT_DOUBLE, PT_FIXED_LEN_BYTE_ARRAY):
        return fixed_width(ptype, type_length)
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _join(const uint8_t* src, Py_ssize_t stride, Py_ssize_t n, Py_ssize_t width,
                uint8_t* dst) noexcept nogil:
    """Interleave ``width`` streams (``stride`` bytes apart) into ``n`` values at ``dst``."""
    cdef Py_ssize_t i, k
    cdef const uint8_t* s = src
    if width == 4:
        for i in range(bss_join4_simd(src, stride, n, dst), n):
            store_u32(dst + 4 * i, s[i] | (<uint32_t>s[stride + i] << 8)
                      | (<uint32_t>s[2 * stride + i] << 16) | (<uint32_t>s[3 * stride + i] << 24))
    elif width == 8:
        # the rest as two 4-byte halves (the compiler vectorises 32-bit lanes)
        for i in range(bss_join8_simd(src, stride, n, dst), n):
            store_u32(dst + 8 * i, s[i] | (<uint32_t>s[stride + i] << 8)
                      | (<uint32_t>s[2 * stride + i] << 16) | (<uint32_t>s[3 * stride + i] << 24))
            store_u32(dst + 8 * i + 4, s[4 * stride + i] | (<uint32_t>s[5 * stride + i] << 8)
                      | (<uint32_t>s[6 * stride + i] << 16) | (<uint32_t>s[7 * stride + i] << 24))
    else:
        for k in range(width):
            s = src + k * stride
            for i in range(n):
                dst[i * width + k] = s[i]


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _split(const uint8_t* src, Py_ssize_t n, Py_ssize_t width, uint8_t* dst) noexcept nogil:
    """Scatter ``n`` values of ``width`` bytes into ``width`` streams of ``n`` bytes at ``dst``."""
    cdef Py_ssize_t i, k, h
    cdef uint32_t v
    if width == 4:
        for i in range(n):
            v = load_u32(src + 4 * i)
            dst[i] = <uint8_t>v
            dst[n + i] = <uint8_t>(v >> 8)
            dst[2 * n + i] = <uint8_t>(v >> 16)
            dst[3 * n + i] = <uint8_t>(v >> 24)
    elif width == 8:
        # two passes of four streams: few enough output streams for the compiler to vectorise
        for h in range(2):
            for i in range(n):
                v = load_u32(src + 8 * i + 4 * h)
                dst[(4 * h) * n + i] = <uint8_t>v
                dst[(4 * h + 1) * n + i] = <uint8_t>(v >> 8)
                dst[(4 * h + 2) * n + i] = <uint8_t>(v >> 16)
                dst[(4 * h + 3) * n + i] = <uint8_t>(v >> 24)
    else:
        for k in range(width):
            for i in range(n):
                dst[k * n + i] = src[i * width + k]


def decode_byte_stream_split(data, Py_ssize_t num_values, int physical_type,
                             Py_ssize_t type_length=0, out=None):
    """Decode BYTE_STREAM_SPLIT values.

    Args:
        data: any C-contiguous buffer holding exactly the encoded streams (its length, a
            multiple of the value width K, gives the stream length N = len / K).
        num_values: values to decode, at most N (the first ``num_values`` of each stream).
        physical_type: FLOAT, DOUBLE, INT32, INT64 or FIXED_LEN_BYTE_ARRAY (Type codes).
        type_length: bytes per value for FIXED_LEN_BYTE_ARRAY.
        out: a writable buffer of exactly ``num_values * K`` bytes to decode into, returned
            in place of a new array.

    Returns:
        ``(values, consumed)``: values in the common convention (float32, float64, int32,
        int64, uint8 (n, type_length)) and ``len(data)``.

    Raises:
        DecodeError: a length that is not a multiple of K, fewer than ``num_values`` values,
            a negative count, or an unsupported physical type / type_length.
    """
    cdef const uint8_t[::1] view = byte_view(data)
    cdef Py_ssize_t width = _width(physical_type, type_length), size = view.shape[0], stride
    if width < 0:
        raise DecodeError(f"BYTE_STREAM_SPLIT does not apply to physical type {physical_type} "
                          f"with type_length {type_length}")
    if num_values < 0:
        raise DecodeError(f"negative value count {num_values}")
    if size % width:
        raise DecodeError(f"BYTE_STREAM_SPLIT data of {size} bytes is not a multiple of the "
                          f"value width {width}", offset=0)
    stride = size // width
    if num_values > stride:
        raise DecodeError(f"BYTE_STREAM_SPLIT data holds {stride} values, {num_values} expected",
                          offset=0, needed=<object>num_values * width, remaining=size)
    cdef uint8_t[::1] dst
    if out is None:
        out = fixed_array(num_values, physical_type, width)
        dst = out.reshape(-1).view(np.uint8)
    else:
        dst = out_bytes(out, num_values * width)
    if num_values:
        _join(&view[0], stride, num_values, width, &dst[0])
    return out, size


def encode_byte_stream_split(values, int physical_type, Py_ssize_t type_length=0):
    """Encode values as BYTE_STREAM_SPLIT.

    Args:
        values: an array in the common convention for ``physical_type`` (float32, float64,
            int32, int64, or uint8 (n, type_length) for FIXED_LEN_BYTE_ARRAY).
        physical_type: FLOAT, DOUBLE, INT32, INT64 or FIXED_LEN_BYTE_ARRAY.
        type_length: bytes per value for FIXED_LEN_BYTE_ARRAY.

    Returns:
        The K streams, concatenated.

    Raises:
        EncodeError: an unsupported physical type or type_length.
        TypeError: values of the wrong dtype or shape, not C-contiguous or big-endian.
    """
    cdef Py_ssize_t width = _width(physical_type, type_length)
    if width < 0:
        raise EncodeError(f"BYTE_STREAM_SPLIT does not apply to physical type {physical_type} "
                          f"with type_length {type_length}")
    cdef const uint8_t[::1] src = fixed_bytes(values, width, physical_type)
    cdef Py_ssize_t size = src.shape[0]
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
    if size:
        _split(&src[0], size // width, width, <uint8_t*>PyBytes_AS_STRING(out))
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def decode_byte_stream_split_pages(list pages, int physical_type, Py_ssize_t type_length, out):
    """Every BYTE_STREAM_SPLIT page of a run of a chunk's pages, decoded into ``out`` in one
    call with the GIL released (no per-page Python work).

    Args:
        pages: ``(data, num_values)`` per page, in order, as for ``decode_byte_stream_split``.
        physical_type, type_length: as for ``decode_byte_stream_split``.
        out: a writable buffer of exactly ``sum(num_values) * K`` bytes.

    Raises:
        DecodeError: as ``decode_byte_stream_split`` for the first bad page (its position in
            ``pages`` is in the message); every page is checked before any is decoded.
    """
    cdef Py_ssize_t width = _width(physical_type, type_length), npages = len(pages)
    cdef Py_ssize_t p, total = 0, size, n
    cdef const uint8_t[::1] view
    cdef uint8_t[::1] dst
    if width < 0:
        raise DecodeError(f"BYTE_STREAM_SPLIT does not apply to physical type {physical_type} "
                          f"with type_length {type_length}")
    cdef Py_ssize_t[::1] counts = np.empty(npages, np.intp)
    cdef Py_ssize_t[::1] strides = np.empty(npages, np.intp)
    cdef uintptr_t[::1] ptrs = np.empty(npages, np.uintp)
    keep = []  # the pages' buffer views, held until the decode is done
    for p in range(npages):
        data, n = pages[p]
        view = byte_view(data)
        keep.append(view)
        size = view.shape[0]
        if n < 0:
            raise DecodeError(f"page {p} of {npages}: negative value count {n}")
        if size % width:
            raise DecodeError(f"page {p} of {npages}: BYTE_STREAM_SPLIT data of {size} bytes "
                              f"is not a multiple of the value width {width}", offset=0)
        if n > size // width:
            raise DecodeError(f"page {p} of {npages}: BYTE_STREAM_SPLIT data holds "
                              f"{size // width} values, {n} expected", offset=0,
                              needed=<object>n * width, remaining=size)
        counts[p] = n
        strides[p] = size // width
        ptrs[p] = <uintptr_t>(&view[0]) if n else 0
        total += n
    dst = out_bytes(out, total * width)
    if total == 0:
        return
    cdef uint8_t* at = &dst[0]
    with nogil:
        for p in range(npages):
            if counts[p]:
                _join(<const uint8_t*>ptrs[p], strides[p], counts[p], width, at)
                at += counts[p] * width
