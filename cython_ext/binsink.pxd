# cython: language_level=3
"""A column chunk's BYTE_ARRAY values decoded page after page into one output (no page arrays).

Header-only (``cdef inline``), like buffer.pxd; used by the ``*_into`` BYTE_ARRAY decoders of
plain, delta and dictionary. The sink is the reader's ``sinks.BinarySink`` (Python): one
offsets array (Arrow's, int32 until the values pass 2 GiB, then int64) sized for the chunk,
and one data buffer that grows. A decoder checks its page whole first (every length, every
index), then ``bin_claim``s ``n`` values of ``nbytes`` bytes: the sink grows its buffer if it
must and hands back where to write. The decoder then writes the ``n`` end offsets (each
``base`` plus the bytes so far) and the bytes, and nothing else: a page that fails its check
leaves the sink as it was.
"""

from libc.stdint cimport uint8_t, int32_t, int64_t

ctypedef fused offset_t:
    int32_t
    int64_t


cdef struct BinSlot:
    int32_t* off32          # int32 offsets: the first new value's end offset (else NULL)
    int64_t* off64          # int64 offsets: the same (else NULL)
    uint8_t* data           # the first new byte
    Py_ssize_t room         # bytes from ``data`` to the end of the sink's buffer (>= claimed)
    int64_t base            # the offset of ``data`` in the sink's buffer


cdef inline int bin_claim(object sink, Py_ssize_t n, Py_ssize_t nbytes,
                          BinSlot* slot) except -1:
    """Claim ``n`` values of ``nbytes`` bytes in ``sink`` (DecodeError past the chunk's value
    count); ``slot`` then points where they go. The sink holds its arrays: the pointers stay
    valid until the next claim."""
    cdef Py_ssize_t start, base
    cdef uint8_t[::1] data
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    slot.off32, slot.off64, slot.data, slot.room, slot.base = NULL, NULL, NULL, 0, 0
    start, base, offsets, data_arr = sink.claim(n, nbytes)
    data = data_arr
    slot.base = base
    slot.room = data.shape[0] - base
    slot.data = &data[0] + base if data.shape[0] else NULL
    if offsets.dtype.itemsize == 8:
        o64 = offsets
        slot.off64 = &o64[0] + start + 1
    else:
        o32 = offsets
        slot.off32 = &o32[0] + start + 1
    return 0
