# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The small-file fast path's chunk kernel: one flat column chunk of a small Parquet file
(its bytes in memory) decoded in one call into its non-null values, for the value-list and
bloom collectors (:mod:`metaindex.engine.collect`).

It takes the plain shape pyarrow writes for small files and nothing else: data pages v1 or
v2 (their levels uncompressed, ``is_compressed`` honoured) with an optional dictionary page
first, PLAIN or dictionary (RLE_DICTIONARY / PLAIN_DICTIONARY) values, RLE definition levels
of at most one level, no repetition, no page CRC; INT32, INT64 and BYTE_ARRAY values; the
page bodies uncompressed, SNAPPY (cramjam, into a buffer of the page's size) or decompressed
by the caller's ``decompress``. Anything else, and any inconsistency (sizes, counts, indices
outside the dictionary, truncation), returns None: the caller then reads the file the
general way, which raises the typed error for a damaged file. Never raises for the input.
"""

from libc.stdint cimport uint8_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport malloc, free
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.bytearray cimport PyByteArray_AS_STRING

from buffer cimport Cursor, cur_make, WBuf, wb_init, wb_free, wb_put, wb_to_bytes
from rlerun cimport Run, _try_next_run, _unpack_run
from compact cimport (
    CT_FALSE,
    CT_TRUE,
    K_BINARY,
    K_I32,
    K_I64,
    K_STRUCT,
    tc_compatible,
    tc_field_header,
    tc_read_int,
    tc_skip,
)

from metaindex.errors import DecodeError

__all__ = ["flat_chunk"]

cdef enum:
    INT32 = 1
    INT64 = 2
    BYTE_ARRAY = 6
    DATA_PAGE = 0
    DICTIONARY_PAGE = 2
    DATA_PAGE_V2 = 3
    PLAIN = 0
    PLAIN_DICTIONARY = 2
    RLE = 3
    RLE_DICTIONARY = 8


cdef struct Header:
    int type
    int64_t usize
    int64_t csize
    bint crc
    bint v2
    bint other      # a field of a page kind not taken (index page, v2 header)
    int64_t num_values
    int encoding
    int def_encoding
    int rep_encoding
    int64_t num_nulls       # v2 only: nulls, level bytes, whether the values are compressed
    int64_t def_bytes
    int64_t rep_bytes
    bint compressed


cdef inline int _known_type(int fid, int kind) noexcept nogil:
    """The compact type of field ``fid`` of a known struct (``kind``: 0 PageHeader, 1
    DataPageHeader, 2 DictionaryPageHeader, 3 DataPageHeaderV2, 4 Statistics), or 0 for a
    field the general decoder skips unread."""
    if kind == 0:
        return K_I32 if 1 <= fid <= 4 else K_STRUCT if 5 <= fid <= 8 else 0
    if kind == 1:
        return K_I32 if 1 <= fid <= 4 else K_STRUCT if fid == 5 else 0
    if kind == 2:
        return K_I32 if 1 <= fid <= 2 else CT_TRUE if fid == 3 else 0
    if kind == 3:
        return K_I32 if 1 <= fid <= 6 else CT_TRUE if fid == 7 else K_STRUCT if fid == 8 else 0
    if fid == 1 or fid == 2 or fid == 5 or fid == 6:
        return K_BINARY
    return K_I64 if fid == 3 or fid == 4 else CT_TRUE if fid == 7 or fid == 8 else 0


cdef inline bint _odd_field(int fid, int ct, int kind, unsigned* fields) noexcept nogil:
    """Whether field ``fid`` of wire type ``ct`` is one the general decoder refuses: a known
    field of another type, or a known field a second time (then the header is ``other``, and
    the chunk goes to the general reader, which raises its typed error)."""
    cdef int want = _known_type(fid, kind)
    if want == 0:
        return False
    if fields[0] >> fid & 1 or not tc_compatible(want, ct):
        return True
    fields[0] |= 1u << fid
    return False


cdef int _statistics(Cursor* c, Header* h) except -1:
    """Skip a page's Statistics struct, checking its known fields as the general decoder
    does (their types, each at most once)."""
    cdef int ct = 0, fid = 0
    cdef unsigned fields = 0
    while True:
        tc_field_header(c, fid, &ct, &fid)
        if ct == 0:
            return 0
        if _odd_field(fid, ct, 4, &fields):
            h.other = True
        tc_skip(c, ct, False, 1)


cdef int _page_struct(Cursor* c, Header* h, bint v2, bint is_data) except -1:
    """A data_page_header (num_values, encoding, def/rep level encodings), a
    dictionary_page_header (num_values, encoding) or (``v2``) a data_page_header_v2
    (num_values, num_nulls, encoding, the level byte lengths, is_compressed); the rest
    skipped."""
    cdef int ct = 0, fid = 0
    cdef int64_t v
    cdef unsigned seen = 0, need, fields = 0
    cdef int kind = 3 if v2 else 1 if is_data else 2
    h.v2 = v2
    while True:
        tc_field_header(c, fid, &ct, &fid)
        if ct == 0:
            # a required field missing: the general reader refuses the header
            need = 0x7E if v2 else 0x1E if is_data else 0x6
            if seen & need != need:
                h.other = True
            return 0
        if _odd_field(fid, ct, kind, &fields):
            h.other = True
        if 1 <= fid <= 6 and ct == K_I32:
            # (a required field of another type is missing to the general reader too)
            seen |= 1u << fid
        if v2 and fid == 7 and (ct == CT_TRUE or ct == CT_FALSE):
            h.compressed = ct == CT_TRUE
        elif ct == K_I32 and 1 <= fid <= (6 if v2 else 4):
            v = tc_read_int(c, ct)
            if fid == 1:
                h.num_values = v
            elif v2:
                if fid == 2:
                    h.num_nulls = v
                elif fid == 4:
                    h.encoding = <int>v
                elif fid == 5:
                    h.def_bytes = v
                elif fid == 6:
                    h.rep_bytes = v
            elif fid == 2:
                h.encoding = <int>v
            elif fid == 3:
                h.def_encoding = <int>v
            else:
                h.rep_encoding = <int>v
        elif ct == K_STRUCT and ((v2 and fid == 8) or (is_data and not v2 and fid == 5)):
            _statistics(c, h)
        else:
            tc_skip(c, ct, False, 1)


cdef int _header(Cursor* c, Header* h) except -1:
    cdef int ct = 0, fid = 0
    cdef int64_t v
    cdef unsigned fields = 0
    h.type = -1
    h.usize = -1
    h.csize = -1
    h.crc = False
    h.v2 = False
    h.other = False
    h.num_values = -1
    h.encoding = -1
    h.def_encoding = RLE
    h.rep_encoding = RLE
    h.num_nulls = -1
    h.def_bytes = -1
    h.rep_bytes = -1
    h.compressed = True
    while True:
        tc_field_header(c, fid, &ct, &fid)
        if ct == 0:
            if h.type < 0 or h.usize < 0 or h.csize < 0:  # required fields
                h.other = True
            return 0
        if _odd_field(fid, ct, 0, &fields):
            h.other = True
        if ct == K_I32 and 1 <= fid <= 3:
            v = tc_read_int(c, ct)
            if fid == 1:
                h.type = <int>v
            elif fid == 2:
                h.usize = v
            else:
                h.csize = v
        elif fid == 4:
            h.crc = True
            tc_skip(c, ct, False, 1)
        elif ct == K_STRUCT and (fid == 5 or fid == 7 or fid == 8):
            _page_struct(c, h, fid == 8, fid == 5)
        elif fid == 6 or fid == 8:
            h.other = True
            tc_skip(c, ct, False, 1)
        else:
            tc_skip(c, ct, False, 1)


cdef int64_t _hybrid(const uint8_t* p, int64_t size, int width, int64_t count,
                     uint32_t* out) noexcept nogil:
    """``count`` values of the RLE / bit-packed hybrid into ``out`` (runs read and unpacked
    by rlerun.pxd, as the general reader's kernels read them); the bytes read, or -1 for
    input that does not hold them."""
    cdef Cursor c = cur_make(p, size)
    cdef Run run
    cdef int64_t got = 0, n, k
    while got < count:
        if _try_next_run(&c, width, &run) < 0:
            return -1
        n = run.count if run.count < count - got else count - got
        if run.rle:
            for k in range(n):
                out[got + k] = run.value
        else:
            _unpack_run(run.packed, c.data + c.size - run.packed, width, out + got, n)
        got += n
    return c.pos


cdef int64_t _defined(const uint8_t* p, int64_t size, int64_t count,
                      uint32_t* scratch) noexcept nogil:
    """How many of ``count`` definition levels (RLE, bit width 1) are 1; -1 for levels that
    do not decode."""
    cdef int64_t k, n = 0
    if _hybrid(p, size, 1, count, scratch) < 0:
        return -1
    for k in range(count):
        n += scratch[k]
    return n


cdef struct Out:
    WBuf data
    WBuf ends
    int64_t total


cdef inline int _put_binary(Out* out, const uint8_t* p, int64_t length) except -2:
    """One BYTE_ARRAY value appended to ``out`` with its int32 end offset; -1 when the
    chunk's values would pass int32 offsets."""
    cdef int32_t end
    if out.total + length >= (<int64_t>1 << 31):
        return -1
    wb_put(&out.data, p, length)
    out.total += length
    end = <int32_t>out.total
    wb_put(&out.ends, &end, 4)
    return 0


cdef int _plain(const uint8_t* p, int64_t size, int64_t n, int physical, Out* out,
                int64_t* starts, int64_t* lens) except -2:
    """``n`` PLAIN values: appended to ``out`` (``starts`` NULL) or, for a dictionary,
    located (BYTE_ARRAY: their starts and lengths in ``p``). -1 when they do not fit."""
    cdef int64_t pos = 0, k, length
    cdef int width = 4 if physical == INT32 else 8
    if physical != BYTE_ARRAY:
        if n * width > size:
            return -1
        if starts == NULL:
            wb_put(&out.data, p, n * width)
        return 0
    for k in range(n):
        if size - pos < 4:
            return -1
        length = <int64_t>(<uint32_t>p[pos] | (<uint32_t>p[pos + 1] << 8)
                           | (<uint32_t>p[pos + 2] << 16) | (<uint32_t>p[pos + 3] << 24))
        pos += 4
        if length > size - pos:
            return -1
        if starts != NULL:
            starts[k] = pos
            lens[k] = length
        else:
            if _put_binary(out, p + pos, length) < 0:
                return -1
        pos += length
    return 0


cdef object _snappy_page(const uint8_t* p, int64_t csize, object chunk, Py_ssize_t start,
                         int64_t size):
    """A SNAPPY page body (``csize`` bytes at ``p``, ``chunk[start:]``) decompressed into a
    new bytearray of exactly ``size`` bytes (its length preamble checked first: a lying one
    allocates nothing), or None."""
    cdef uint64_t value = 0
    cdef int k, shift = 0
    for k in range(5):
        if k >= csize:
            return None
        value |= (<uint64_t>(p[k] & 0x7F)) << shift
        shift += 7
        if p[k] < 0x80:
            break
    else:
        return None
    if value != <uint64_t>size:
        return None
    out = bytearray(size)
    if size:
        try:
            got = _cramjam_snappy().decompress_raw_into(chunk[start:start + csize], out)
        except Exception:  # cramjam.DecompressionError: a corrupt block
            return None
        if got != size:
            return None
    return out


_SNAPPY = None


cdef object _cramjam_snappy():
    global _SNAPPY
    if _SNAPPY is None:
        import cramjam

        _SNAPPY = cramjam.snappy
    return _SNAPPY


def flat_chunk(data, int64_t num_rows, int physical, int max_def, int codec, decompress):
    """The non-null values of one flat column chunk (``data``: the chunk's bytes, from its
    first page; ``num_rows``: its row group's rows; ``physical``: INT32, INT64 or BYTE_ARRAY;
    ``max_def``: 0 or 1; ``codec``: the chunk's; ``decompress``: ``decompress(codec, body,
    uncompressed_size)`` -> bytes for codecs other than UNCOMPRESSED and SNAPPY, which the
    kernel takes itself, SNAPPY with ``cramjam``).

    Returns:
        ``(values, ends, count, has_null)``: ``values`` the non-null values' bytes (fixed
        width, or BYTE_ARRAY data), ``ends`` the BYTE_ARRAY values' int32 end offsets
        (bytes; None for fixed width), ``count`` how many, ``has_null`` whether a level said
        null. None for a chunk outside the kernel's shape or not consistent.
    """
    if physical not in (INT32, INT64, BYTE_ARRAY) or max_def not in (0, 1):
        return None
    cdef Py_buffer src
    cdef Out out
    cdef uint32_t* scratch = NULL
    cdef int64_t* dspans = NULL
    PyObject_GetBuffer(data, &src, PyBUF_SIMPLE)
    wb_init(&out.data, 256)
    wb_init(&out.ends, 64)
    out.total = 0
    try:
        scratch = <uint32_t*>malloc(max(num_rows, 1) * sizeof(uint32_t))
        if scratch == NULL:
            raise MemoryError()
        return _flat(data, <const uint8_t*>src.buf, src.len, num_rows, physical, max_def,
                     codec, decompress, &out, scratch, &dspans)
    finally:
        free(scratch)
        free(dspans)
        wb_free(&out.data)
        wb_free(&out.ends)
        PyBuffer_Release(&src)


cdef object _flat(object data, const uint8_t* base, Py_ssize_t size, int64_t num_rows,
                  int physical, int max_def, int codec, object decompress, Out* out,
                  uint32_t* scratch, int64_t** dspans):
    """:func:`flat_chunk` over ``size`` bytes at ``base`` (``data``'s), ``scratch`` room for
    ``max(num_rows, 1)`` levels or indices; ``*dspans`` (freed by the caller) gets the
    dictionary's starts and lengths."""
    cdef Cursor c
    cdef Header h
    cdef Py_ssize_t pos = 0, lstart, bstart
    cdef int64_t rows = 0, k, nn, used, dict_n = -1, idx, level_bytes
    cdef int width = 4 if physical == INT32 else 8
    cdef int bw
    cdef bint has_null = False, first = True
    cdef const uint8_t* body
    cdef const uint8_t* dict_base = NULL
    cdef int64_t* dstart = NULL
    cdef int64_t* dlen = NULL
    chunk = None  # memoryview of data, made for the first compressed page
    dict_keep = None
    while rows < num_rows:
        if pos >= size:
            return None
        c = cur_make(base + pos, size - pos)
        try:
            _header(&c, &h)
        except DecodeError:
            return None
        if h.crc or h.other or h.csize < 0 or h.usize < 0 or h.csize > size - pos - c.pos:
            return None
        lstart = pos + c.pos
        bstart = lstart
        pos += c.pos + h.csize
        levels = False
        if h.type == DATA_PAGE_V2:
            # levels first, never compressed; then the values, compressed if is_compressed
            if (not h.v2 or h.rep_bytes != 0 or h.def_bytes < 0 or h.num_nulls < 0
                    or h.def_bytes > h.csize or h.def_bytes > h.usize
                    or (max_def == 0 and h.def_bytes != 0)):
                return None
            levels = True
            bstart += h.def_bytes
            h.usize -= h.def_bytes
            h.csize -= h.def_bytes
            if not h.compressed and h.csize != h.usize:
                return None
        page = None
        if codec != 0 and (not levels or h.compressed):
            if chunk is None:
                chunk = memoryview(data).cast("B")
            if codec == 1:
                page = _snappy_page(base + bstart, h.csize, chunk, bstart, h.usize)
                if page is None:
                    return None
                body = <const uint8_t*>PyByteArray_AS_STRING(page)
            else:
                try:
                    page = decompress(codec, chunk[bstart:bstart + h.csize], h.usize)
                except Exception:  # DecodeError, or the codec's own: the caller then raises
                    return None
                if not isinstance(page, bytes):
                    page = bytes(page)
                if PyBytes_GET_SIZE(page) != h.usize:
                    return None
                body = <const uint8_t*>PyBytes_AS_STRING(page)
        else:
            if h.csize != h.usize:
                return None
            body = base + bstart
        if h.type == DICTIONARY_PAGE:
            if not first or h.num_values < 0 or h.encoding not in (PLAIN, PLAIN_DICTIONARY):
                return None
            dict_n = h.num_values
            if dict_n > h.usize:  # (a value takes at least a byte: bounds the spans)
                return None
            dspans[0] = <int64_t*>malloc(2 * max(dict_n, 1) * sizeof(int64_t))
            if dspans[0] == NULL:
                raise MemoryError()
            dstart = dspans[0]
            dlen = dstart + max(dict_n, 1)
            if _plain(body, h.usize, dict_n, physical, out, dstart, dlen) < 0:
                return None
            dict_keep = page  # holds the bytes dict_base points into (None: data's)
            dict_base = body
            first = False
            continue
        first = False
        if h.num_values < 0 or h.num_values > num_rows - rows:
            return None
        used = 0
        nn = h.num_values
        if h.type == DATA_PAGE_V2:
            if max_def:
                nn = _defined(base + lstart, h.def_bytes, h.num_values, scratch)
                if nn < 0:
                    return None
            if nn + h.num_nulls != h.num_values:
                return None
        elif h.type != DATA_PAGE:
            return None
        elif max_def:
            if h.def_encoding != RLE or h.usize < 4:
                return None
            level_bytes = <int64_t>(<uint32_t>body[0] | (<uint32_t>body[1] << 8)
                                    | (<uint32_t>body[2] << 16) | (<uint32_t>body[3] << 24))
            if level_bytes > h.usize - 4:
                return None
            nn = _defined(body + 4, level_bytes, h.num_values, scratch)
            if nn < 0:
                return None
            used = 4 + level_bytes
        if h.encoding == PLAIN:
            if _plain(body + used, h.usize - used, nn, physical, out, NULL, NULL) < 0:
                return None
        elif h.encoding == RLE_DICTIONARY or h.encoding == PLAIN_DICTIONARY:
            if dict_n < 0:
                return None
            if nn:
                if used >= h.usize:
                    return None
                bw = body[used]
                if bw > 32:
                    return None
                if _hybrid(body + used + 1, h.usize - used - 1, bw, nn, scratch) < 0:
                    return None
                for k in range(nn):
                    idx = scratch[k]
                    if idx >= dict_n:
                        return None
                    if physical == BYTE_ARRAY:
                        if _put_binary(out, dict_base + dstart[idx], dlen[idx]) < 0:
                            return None
                    else:
                        wb_put(&out.data, dict_base + idx * width, width)
        else:
            return None
        has_null |= nn < h.num_values
        rows += h.num_values
    if pos != size:
        return None
    count = out.data.len // width if physical != BYTE_ARRAY else out.ends.len // 4
    values = wb_to_bytes(&out.data)
    ends = wb_to_bytes(&out.ends) if physical == BYTE_ARRAY else None
    del dict_keep
    return values, ends, count, has_null
