# cython: language_level=3
"""The Parquet page-header scanner: runs of v1 data page headers read in C.

A required fixed-width column's pages need only a few fields of each ``PageHeader`` (type,
sizes, crc present, and the ``DataPageHeader``'s value count and encoding). ``scan_data_pages``
reads those straight off the Thrift compact wire format (``compact.pxd``), without building the
header objects ``metaindex._native.thrift`` decodes into, and returns the run of pages the
reader's fast path can take in one kernel call. Field ids are PageHeader's (parquet.thrift):
1 type, 2 uncompressed_page_size, 3 compressed_page_size, 4 crc, 5 data_page_header; and
DataPageHeader's: 1 num_values, 2 encoding, 3 definition_level_encoding,
4 repetition_level_encoding.

It never raises for the input: a header it cannot take ends the run, and the general decoder
then reads that page and raises for it with its own message.
"""

from libc.stdint cimport uint8_t, int64_t, uint64_t

from buffer cimport Cursor, cur_make, raise_invalid
from compact cimport K_I32, K_STRUCT, tc_field_header, tc_read_int, tc_skip

from metaindex.errors import DecodeError

__all__ = ["scan_data_pages"]


cdef const uint8_t[::1] _bytes_view(object data):
    try:
        return data
    except (ValueError, TypeError):
        return memoryview(data).cast("B")


cdef struct _PageFields:
    int64_t type, usize, csize, num_values, encoding, def_encoding
    bint crc


cdef inline int _mark_field(Cursor* c, unsigned* seen, int fid, int ct, int want) except -1:
    """A field the run reads: once only, and of its wire type (else the run ends there)."""
    if seen[0] & (1u << fid) or ct != want:
        raise_invalid(c, f"page header field {fid} repeated or of another type")
    seen[0] |= 1u << fid
    return 0


cdef int _data_page_fields(Cursor* c, _PageFields* f) except -1:
    """Read one PageHeader for :func:`scan_data_pages`: the fields a required chunk's values
    need, every required field of PageHeader and DataPageHeader present with its wire type
    (as the general decoder demands), everything else skipped; any other shape raises."""
    cdef int ct = 0, fid = 0, sub_ct = 0, sub = 0
    cdef unsigned seen = 0, sub_seen = 0
    f.type = f.usize = f.csize = f.num_values = f.encoding = f.def_encoding = -1
    f.crc = False
    while True:
        tc_field_header(c, fid, &ct, &fid)
        if ct == 0:
            break
        if 1 <= fid <= 5:
            _mark_field(c, &seen, fid, ct, K_STRUCT if fid == 5 else K_I32)
        if fid == 1:
            f.type = tc_read_int(c, K_I32)
        elif fid == 2:
            f.usize = tc_read_int(c, K_I32)
        elif fid == 3:
            f.csize = tc_read_int(c, K_I32)
        elif fid == 4:
            tc_read_int(c, K_I32)
            f.crc = True
        elif fid == 5:
            sub = 0
            while True:
                tc_field_header(c, sub, &sub_ct, &sub)
                if sub_ct == 0:
                    break
                if 1 <= sub <= 4:
                    _mark_field(c, &sub_seen, sub, sub_ct, K_I32)
                    if sub == 1:
                        f.num_values = tc_read_int(c, K_I32)
                    elif sub == 2:
                        f.encoding = tc_read_int(c, K_I32)
                    elif sub == 3:
                        f.def_encoding = tc_read_int(c, K_I32)
                    else:
                        tc_read_int(c, K_I32)
                else:
                    tc_skip(c, sub_ct, False, 2)
        else:
            tc_skip(c, ct, False, 1)
    if seen & 0b101110 != 0b101110 or sub_seen != 0b11110:
        raise_invalid(c, "a field the run needs is missing")
    return 0


def scan_data_pages(data, Py_ssize_t pos, Py_ssize_t max_values, uint64_t encodings,
                    bint exact, bint no_crc, bint levels_rle=False):
    """Read a run of v1 data page headers in C: the fast path of a required fixed-width
    chunk's pages, which needs none of the header objects :func:`decode_prefix` builds.

    From ``data[pos:]`` (a column chunk's bytes), the run takes consecutive pages while each
    header is a DATA_PAGE whose required fields (and those of its DataPageHeader) are all
    there, repeated nowhere and of their wire type, with the encoding of the run's first page,
    non-negative sizes and value count, a body inside ``data`` and at most ``max_values``
    values in the whole run; ``encodings``: a bit mask of the encodings a run may have (bit
    ``e`` for encoding ``e``, so a run never starts at a page the caller would not take);
    ``exact``: its compressed size also equals its uncompressed size
    (an uncompressed chunk); ``no_crc``: it also has no crc (a page to verify);
    ``levels_rle``: its definition levels are also RLE-encoded (a nullable column's pages,
    whose levels the caller decodes from the body). Fields the
    values do not need (statistics, unknown ids) are only skipped over, so a header damaged
    only there is read, as by any reader that ignores them.

    Never raises for the input: the run ends before the first header that is anything else,
    does not decode or does not fit, and the caller reads that page with the general decoder,
    which raises for it with its own message.

    Returns:
        ``(pages, sizes, encoding, values, end)``: ``(body, num_values)`` per page (``body``
        a slice of ``data``), their uncompressed sizes, the run's encoding (-1 for an empty
        run), its value count and the offset just past its last page.
    """
    cdef const uint8_t[::1] view = _bytes_view(data)
    cdef Py_ssize_t size = view.shape[0], hend
    cdef Cursor c = cur_make(&view[0] if size else NULL, size)
    cdef _PageFields f
    cdef int64_t encoding = -1, values = 0
    cdef list pages = [], sizes = []
    if pos < 0 or pos > size:
        return pages, sizes, encoding, values, pos
    while pos < size:
        c.pos = pos
        try:
            _data_page_fields(&c, &f)
        except DecodeError:
            break
        hend = c.pos
        if f.type != 0 or f.usize < 0 or f.csize < 0 or f.num_values < 0 \
                or f.csize > size - hend or (exact and f.csize != f.usize) \
                or (no_crc and f.crc) or (levels_rle and f.def_encoding != 3) \
                or not 0 <= f.encoding < 64 \
                or not (encodings >> f.encoding) & 1 or (encoding >= 0 and f.encoding != encoding) \
                or f.num_values > max_values - values:
            break
        encoding = f.encoding
        values += f.num_values
        pages.append((data[hend:hend + f.csize], f.num_values))
        sizes.append(f.usize)
        pos = hend + f.csize
    return pages, sizes, encoding, values, pos
