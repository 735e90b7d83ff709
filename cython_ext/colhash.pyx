# cython: language_level=3
"""XXH64 of an Arrow array's non-null values, straight from its buffers (the bloom index).

What a value hashes as is Parquet's bloom hash (cython_ext/bloom.pyx: XXH64, seed 0, over
the PLAIN value: 4 / 8 / ``width`` little-endian bytes, a string's bytes without a length
prefix), with floats canonical (arrowcol.pxd: -0.0 as 0.0, one NaN) so the index never
contradicts Spark's equality. Null rows are skipped by the validity bitmap: the hashes of
one array come out packed, written at ``out[pos:]`` so the chunks of a column fill one
preallocated array with no copies in between.
"""

cimport cython
from libc.stdint cimport uint8_t, uint32_t, int64_t, uint64_t

from arrowcol cimport Col, col_binary, col_fixed, col_hash, col_valid


cdef Py_ssize_t _run(Col* c, Py_ssize_t null_count, uint64_t[::1] out, Py_ssize_t pos) except -1:
    cdef Py_ssize_t m
    if null_count < 0 or null_count > c.n:
        raise ValueError(f"null_count {null_count} outside [0, {c.n}]")
    if pos < 0 or pos > out.shape[0] - (c.n - null_count):
        raise ValueError(f"out holds {out.shape[0]} hashes: no room for {c.n - null_count} "
                         f"at {pos}")
    if c.n == 0:
        return 0
    with nogil:
        # the bitmap is counted first: a bitmap with more set bits than null_count allows
        # would write past the room checked above
        m = _count_or_hash(c, null_count, &out[pos])
    if m < 0:
        raise ValueError(f"the validity bitmap disagrees with null_count {null_count} "
                         f"for {c.n} values")
    return m


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _count_or_hash(const Col* c, Py_ssize_t null_count, uint64_t* out) noexcept nogil:
    cdef Py_ssize_t i, valid = 0
    if c.validity != NULL:
        for i in range(c.n):
            valid += col_valid(c, i)
        if valid != c.n - null_count:
            return -1
    return col_hash(c, 0, c.n, out)


def fixed_hashes(validity, values, Py_ssize_t offset, Py_ssize_t length, Py_ssize_t width,
                 int canon, Py_ssize_t null_count, out, Py_ssize_t pos=0):
    """Hash the non-null values of a fixed-width Arrow array into ``out[pos:]``.

    Args:
        validity: the validity bitmap buffer, or None (no nulls).
        values: the value buffer (pyarrow Buffer, numpy array, bytes).
        offset, length: the array's offset and length (elements).
        width: bytes per value (4 / 8 take the short XXH64 paths).
        canon: 4 / 8 to hash float32 / float64 values canonical, else 0.
        null_count: the array's null count (checked against the bitmap).
        out: numpy uint64 array with room for ``length - null_count`` hashes at ``pos``.

    Returns:
        The number of hashes written (``length - null_count``).

    Raises:
        ValueError: a buffer too short for ``offset + length``, no room in ``out``, a bitmap
            that disagrees with ``null_count``, a bad ``width`` / ``canon``.
    """
    cdef Col c
    cdef list keep = []
    col_fixed(&c, validity, values, offset, length, width, canon, keep)
    if validity is None and null_count:
        raise ValueError(f"null_count {null_count} without a validity bitmap")
    return _run(&c, null_count, out, pos)


def binary_hashes(validity, offsets, int offset_width, data, Py_ssize_t offset,
                  Py_ssize_t length, Py_ssize_t null_count, out, Py_ssize_t pos=0):
    """Hash the non-null values of a binary / string Arrow array into ``out[pos:]``.

    Args as :func:`fixed_hashes`, with ``offsets`` (``offset_width`` = 4 or 8 bytes each)
    and ``data`` for the value buffer. The offsets are checked (non-decreasing, inside
    ``data``) before anything is hashed.
    """
    cdef Col c
    cdef list keep = []
    col_binary(&c, validity, offsets, offset_width, data, offset, length, keep)
    if validity is None and null_count:
        raise ValueError(f"null_count {null_count} without a validity bitmap")
    return _run(&c, null_count, out, pos)
