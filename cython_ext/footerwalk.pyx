# cython: language_level=3
"""Where a Parquet footer's schema and key/value metadata lie (compiled to
``metaindex._native.footerwalk``).

``schema_spans(footer)`` walks the top level of a ``FileMetaData`` in the Thrift compact
protocol (``compact.pxd``: every read bounded by the buffer, hostile input a ``DecodeError``,
answered here as None) without decoding anything, and returns where the values of field 2
(``schema``, a list) and field 5 (``key_value_metadata``, a list) are. The files of a table
mostly share these bytes: the small-file open (``metaindex.formats.parquet``) keeps what it
decoded and derived from them by those bytes and decodes only the rest of a later footer.
"""

from libc.stdint cimport uint8_t

from buffer cimport Cursor, cur_make
from compact cimport K_LIST, tc_field_header, tc_skip

from metaindex.errors import DecodeError

__all__ = ["schema_spans"]


def schema_spans(const uint8_t[::1] footer not None):
    """``(schema start, schema end, kv start, kv end, struct end)``: the byte ranges of the
    values of ``FileMetaData`` fields 2 and 5 (their first occurrence as lists; -1, -1 for an
    absent field 5) and where the struct ends; None when field 2 is not there as a list or
    the bytes are not a well-formed compact struct."""
    cdef Cursor c = cur_make(&footer[0] if footer.shape[0] else NULL, footer.shape[0])
    cdef int ct = 0, fid = 0
    cdef Py_ssize_t start, s2 = -1, e2 = -1, s5 = -1, e5 = -1
    if footer.shape[0] == 0:
        return None
    try:
        while True:
            tc_field_header(&c, fid, &ct, &fid)
            if ct == 0:
                break
            start = c.pos
            tc_skip(&c, ct, False, 1)
            if ct == K_LIST and fid == 2 and s2 < 0:
                s2, e2 = start, c.pos
            elif ct == K_LIST and fid == 5 and s5 < 0:
                s5, e5 = start, c.pos
    except DecodeError:
        return None
    if s2 < 0:
        return None
    return s2, e2, s5, e5, c.pos
