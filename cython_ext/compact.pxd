# cython: language_level=3
"""The Thrift compact protocol's wire level, read side: wire types, field headers, integers,
container headers and skipping a value of any type.

Header-only like ``buffer.pxd``: every function is ``cdef inline`` so that ``thrift.pyx`` (the
table-driven codec) and ``pageheader.pyx`` (the Parquet page-header scanner) ``cimport`` it
without a run-time import. Every read goes through the bounds-checked ``Cursor`` and raises
``DecodeError`` for truncated or hostile input: bad type nibbles, field ids out of the i16
range, varints too long for their type, container counts that cannot fit in the bytes left,
nesting deeper than ``DEPTH_LIMIT``.
"""

from libc.stdint cimport uint8_t, int64_t, uint64_t

from buffer cimport Cursor, cur_take, cur_u8, cur_uleb, cur_uleb_size, raise_invalid, zigzag_decode


cdef enum:                  # compact wire types (the field header's low nibble)
    K_BOOL = 1              # a bool element; as a field, CT_TRUE or CT_FALSE holds its value
    K_BYTE = 3
    K_I16 = 4
    K_I32 = 5
    K_I64 = 6
    K_DOUBLE = 7
    K_BINARY = 8
    K_LIST = 9
    K_SET = 10
    K_MAP = 11
    K_STRUCT = 12
    K_UUID = 13
    CT_TRUE = 1
    CT_FALSE = 2
    DEPTH_LIMIT = 64        # deepest nesting of structs and containers


cdef inline int tc_check_depth(Cursor* c, int depth) except -1:
    if depth >= DEPTH_LIMIT:
        raise_invalid(c, f"nesting deeper than {DEPTH_LIMIT}")
    return 0


cdef inline int tc_check_ctype(Cursor* c, int ct) except -1:
    if ct < CT_TRUE or ct > K_UUID:
        raise_invalid(c, f"invalid compact type {ct}")
    return 0


cdef inline Py_ssize_t tc_ctype_min(int ct) noexcept nogil:
    return 8 if ct == K_DOUBLE else 16 if ct == K_UUID else 1


cdef inline bint tc_compatible(int want, int got) noexcept nogil:
    return want == got or (want == CT_TRUE and got == CT_FALSE)


cdef inline int tc_field_header(Cursor* c, int last_id, int* ct, int* fid) except -1:
    """Read a field header (short: delta from ``last_id``; long: zigzag i16); ct 0 is stop."""
    cdef uint8_t b
    cdef uint64_t u
    cdef Py_ssize_t hdr = c.pos
    cur_u8(c, &b)
    ct[0] = b & 0x0F
    if b == 0:
        return 0
    c.pos = hdr
    tc_check_ctype(c, ct[0])
    c.pos += 1
    if b >> 4:
        fid[0] = last_id + (b >> 4)
        if fid[0] > 32767:
            c.pos = hdr
            raise_invalid(c, "field id delta overflows i16")
    else:
        cur_uleb(c, &u)
        if u > 0xFFFF:
            c.pos = hdr
            raise_invalid(c, "field id varint exceeds 16 bits")
        fid[0] = <int>zigzag_decode(u)
    return 0


cdef inline int tc_read_bool_elem(Cursor* c, bint* out) except -1:
    cdef uint8_t b
    cur_u8(c, &b)
    if b > 2:
        c.pos -= 1
        raise_invalid(c, f"bool element byte {b} (want 1, 2 or 0)")
    out[0] = b == 1
    return 0


cdef inline int64_t tc_read_int(Cursor* c, int kind) except? -1:
    cdef uint64_t u
    cdef uint8_t b
    cdef Py_ssize_t start = c.pos
    if kind == K_BYTE:
        cur_u8(c, &b)
        return <int64_t>(<signed char>b)
    cur_uleb(c, &u)
    if (kind == K_I16 and u > 0xFFFF) or (kind == K_I32 and u > 0xFFFFFFFF):
        c.pos = start
        raise_invalid(c, f"varint too large for {'i16' if kind == K_I16 else 'i32'}")
    return zigzag_decode(u)


cdef inline int tc_check_count(Cursor* c, Py_ssize_t start, uint64_t n, Py_ssize_t min_size) except -1:
    """A container of ``n`` elements (i32 range) of at least ``min_size`` bytes must fit."""
    if n > 0x7FFFFFFF or <Py_ssize_t>n * min_size > c.size - c.pos:
        c.pos = start
        raise_invalid(c, f"{n} container elements cannot fit in {c.size - c.pos} bytes")
    return 0


cdef inline int tc_list_header(Cursor* c, int* etype, Py_ssize_t* count) except -1:
    cdef uint8_t h
    cdef uint64_t n
    cdef Py_ssize_t start = c.pos
    cur_u8(c, &h)
    etype[0] = h & 0x0F
    n = h >> 4
    if n == 15:
        cur_uleb(c, &n)
    if (n or etype[0]) and not CT_TRUE <= etype[0] <= K_UUID:   # empty: 0 allowed (fastparquet)
        c.pos = start
        tc_check_ctype(c, etype[0])
    tc_check_count(c, start, n, tc_ctype_min(etype[0]))
    count[0] = <Py_ssize_t>n
    return 0


cdef inline int tc_map_header(Cursor* c, int* ktype, int* vtype, Py_ssize_t* count) except -1:
    cdef uint64_t n
    cdef uint8_t h
    cdef Py_ssize_t start = c.pos
    cur_uleb(c, &n)
    if n:
        cur_u8(c, &h)
        ktype[0], vtype[0] = h >> 4, h & 0x0F
        tc_check_ctype(c, ktype[0])
        tc_check_ctype(c, vtype[0])
        tc_check_count(c, start, n, tc_ctype_min(ktype[0]) + tc_ctype_min(vtype[0]))
    count[0] = <Py_ssize_t>n
    return 0


cdef inline int tc_skip(Cursor* c, int ct, bint element, int depth) except -1:
    """Skip one value of wire type ``ct`` (a bool element is one byte, a bool field none)."""
    cdef Py_ssize_t n, i
    cdef int et, kt, fid = 0
    cdef bint flag
    if ct == CT_TRUE or ct == CT_FALSE:
        if element:
            tc_read_bool_elem(c, &flag)
    elif ct == K_BYTE:
        cur_take(c, 1)
    elif K_I16 <= ct <= K_I64:
        tc_read_int(c, ct)
    elif ct == K_DOUBLE:
        cur_take(c, 8)
    elif ct == K_UUID:
        cur_take(c, 16)
    elif ct == K_BINARY:
        cur_uleb_size(c, &n)
        c.pos += n
    elif ct == K_LIST or ct == K_SET:
        tc_check_depth(c, depth)
        tc_list_header(c, &et, &n)
        for i in range(n):
            tc_skip(c, et, True, depth + 1)
    elif ct == K_MAP:
        tc_check_depth(c, depth)
        tc_map_header(c, &kt, &et, &n)
        for i in range(n):
            tc_skip(c, kt, True, depth + 1)
            tc_skip(c, et, True, depth + 1)
    elif ct == K_STRUCT:
        tc_check_depth(c, depth)
        while True:
            tc_field_header(c, fid, &et, &fid)
            if et == 0:
                break
            tc_skip(c, et, False, depth + 1)
    else:
        raise_invalid(c, f"invalid compact type {ct}")
    return 0

