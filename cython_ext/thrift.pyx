# cython: language_level=3
"""Thrift compact protocol, driven by field tables.

``compile_struct(cls, fields)`` turns a table with one tuple per field into a spec stored on
the class as ``cls._thrift_spec``; one generic loop in C then reads (``decode``,
``decode_prefix``) and writes (``encode``) every struct::

    ((1, "version", I32, None, True),            # id, name, type, spec, required
     (2, "schema", LIST, SchemaElement, True),   # list<SchemaElement>
     (5, "kv", MAP, (STRING, (LIST, I64)), False))

``spec`` is None for scalars (or an ``IntEnum`` class documenting an I32), the element spec
for LIST/SET, ``(key, value)`` for MAP, the class for STRUCT. An element spec is a type
constant, a compiled class, an ``IntEnum`` (an i32) or ``(LIST|SET, elem)`` / ``(MAP, k, v)``.

Objects: the decoder creates instances without calling ``__init__`` and sets one attribute
per field (None when absent) plus ``_unknown``. Values: bool, int, float, bytes (BINARY,
UUID), str (STRING, UTF-8 with ``surrogateescape`` so that the arbitrary bytes pyarrow puts in
``string`` fields round-trip), list (LIST and SET, wire order), dict (MAP), objects (STRUCT).
Bools in containers read 1 = true, 2 or 0 = false (0 per the Thrift spec, 2 as every Apache
implementation writes and as written here).

Round-trip: a field whose id is not in the table, or whose wire type differs from the table
(Thrift skips such fields), is kept in ``_unknown`` as ``(field_id, wire_type, value_bytes,
anchor)``, ``anchor`` being the id of the known field read just before it (None: before any;
an id not in the table: after all). Encoding writes known fields in table order, each kept
field after its anchor, with headers recomputed against the field actually written before;
so decode then encode returns the input whenever the writer used table order and short
headers where possible (parquet-cpp and parquet-java do). Empty lists may carry another element
type, even 0 (fastparquet writes ``0x00``), as Apache Thrift accepts; they decode as [] and
are re-encoded with the declared type. The Parquet extension field, header
``08 FF FF 01`` (ULEB128 32767 where a zigzag i16 is expected), is kept that way with id
``EXTENSION_FIELD_ID`` (-16384, what a zigzag reader sees).

Hostile input raises ``DecodeError``: every read is bounds-checked; nesting is limited to
``MAX_DEPTH``; container counts are checked against the bytes left before allocating; bad
varints and type nibbles, out-of-range ids, duplicate known fields, container element types
of non-empty containers other than declared, bool bytes other than 0/1/2 and missing required
fields are errors.

Layout: the wire-level readers (shared with the Parquet page-header scanner, pageheader.pyx)
are in ``compact.pxd``, direct ``__slots__`` access in ``slots.pxd``; this module holds the
field-table compiler, the decoder and the encoder, which share the compiled tables' classes.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_Append
from cpython.ref cimport Py_INCREF
from libc.stdint cimport uint8_t, int16_t, int64_t, uint64_t
from libc.string cimport memcpy

from buffer cimport (Cursor, WBuf, cur_make, cur_take, cur_uleb_size, raise_invalid, load_u64,
                     wb_init, wb_free, wb_put, wb_u8, wb_uleb, wb_zigzag, wb_u64le, wb_to_bytes)
from slots cimport get_slot, set_slot, slot_offset
from compact cimport (K_BOOL, K_BYTE, K_I16, K_I32, K_I64, K_DOUBLE, K_BINARY, K_LIST, K_SET,
                      K_MAP, K_STRUCT, K_UUID, CT_TRUE, CT_FALSE, DEPTH_LIMIT, tc_check_depth,
                      tc_compatible, tc_field_header, tc_read_bool_elem, tc_read_int,
                      tc_list_header, tc_map_header, tc_skip)

import enum
from numbers import Real as _Real

import numpy as np

from metaindex.errors import DecodeError, EncodeError

cdef extern from "Python.h":
    object PyType_GenericNew(PyTypeObject* t, PyObject* args, PyObject* kwds)
    void PyObject_GC_Track(object)
    void PyObject_GC_UnTrack(object)
    int PyObject_GC_IsTracked(object)

__all__ = ["BOOL", "BYTE", "I16", "I32", "I64", "DOUBLE", "BINARY", "STRING", "UUID", "LIST",
           "SET", "MAP", "STRUCT", "MAX_DEPTH", "EXTENSION_FIELD_ID", "compile_struct",
           "decode", "decode_prefix", "encode"]

# Table types. All but STRING are also the compact wire nibble (STRING is BINARY on the wire).
BOOL = K_BOOL
BYTE = K_BYTE
I16 = K_I16
I32 = K_I32
I64 = K_I64
DOUBLE = K_DOUBLE
BINARY = K_BINARY
LIST = K_LIST
SET = K_SET
MAP = K_MAP
STRUCT = K_STRUCT
UUID = K_UUID
STRING = K_STRING

cdef enum:                  # table kinds are the wire types (compact.pxd), and K_STRING
    K_STRING = 16           # (BINARY on the wire, str in Python)
    MAX_FIELDS = 64
    PREALLOC_LIMIT = 4096   # longer lists of nestable elements grow as they are read

MAX_DEPTH = DEPTH_LIMIT
EXTENSION_FIELD_ID = -16384
cdef tuple _SCALARS = (BOOL, BYTE, I16, I32, I64, DOUBLE, BINARY, STRING, UUID)
cdef tuple _EMPTY = ()
cdef object _END = object()


# ------------------------------------------------------------------ compiled tables

cdef class _Type:
    """One node of a compiled type spec."""
    cdef int kind              # table type constant
    cdef int ctype             # wire nibble
    cdef Py_ssize_t min_size   # fewest bytes one value takes as a container element
    cdef _Type elem            # LIST/SET element, MAP value
    cdef _Type key             # MAP key
    cdef _StructSpec spec      # STRUCT


cdef class _StructSpec:
    """A struct class's compiled field table."""
    cdef object cls
    cdef str name
    cdef bint is_union
    cdef Py_ssize_t n
    cdef int16_t ids[MAX_FIELDS]
    cdef Py_ssize_t offs[MAX_FIELDS]   # __slots__ offset of each field, -1: use setattr/getattr
    cdef Py_ssize_t unknown_off
    cdef bint gc                       # instances are tracked by the cyclic GC
    cdef tuple nested                  # indices of STRUCT/LIST/SET/MAP fields
    cdef _Type as_type                 # this struct as a type node (for _track)
    cdef uint64_t required_mask
    cdef tuple names           # str per field, table order
    cdef tuple types           # _Type per field
    cdef frozenset id_set

    @property
    def field_names(self):
        """Attribute names in table order."""
        return self.names

    @property
    def last_field_id(self):
        """Id of the table's last field (None for an empty struct)."""
        return self.ids[self.n - 1] if self.n else None


cdef _Type _compile_type(object spec, str where):
    cdef _Type t = _Type()
    if isinstance(spec, type) and issubclass(spec, enum.IntEnum):
        t.kind = I32
    elif isinstance(spec, type) and isinstance(getattr(spec, "_thrift_spec", None), _StructSpec):
        t.kind, t.spec = STRUCT, spec._thrift_spec
    elif isinstance(spec, tuple) and len(spec) == 2 and spec[0] in (LIST, SET):
        t.kind, t.elem = spec[0], _compile_type(spec[1], where)
    elif isinstance(spec, tuple) and len(spec) == 3 and spec[0] == MAP:
        t.kind, t.key, t.elem = MAP, _compile_type(spec[1], where), _compile_type(spec[2], where)
        if t.key.kind not in _SCALARS:
            raise TypeError(f"{where}: map keys must be a scalar type (they become dict keys)")
    elif type(spec) is int and spec in _SCALARS:
        t.kind = spec
    else:
        raise TypeError(f"{where}: {spec!r} is not a type spec (a type constant, a Struct "
                        "subclass, an IntEnum class, (LIST|SET, elem) or (MAP, key, value))")
    t.ctype = K_BINARY if t.kind == K_STRING else t.kind
    t.min_size = 8 if t.kind == DOUBLE else 16 if t.kind == UUID else 1
    return t


cdef _StructSpec _compile(object cls, object fields, bint is_union):
    cdef _StructSpec s = _StructSpec()
    cdef Py_ssize_t i
    s.cls, s.name, s.is_union = cls, cls.__name__, is_union
    fields = tuple(fields)
    if len(fields) > MAX_FIELDS:
        raise TypeError(f"{s.name}: at most {MAX_FIELDS} fields per struct")
    names, types, seen = [], [], set()
    for i, f in enumerate(fields):
        if not (isinstance(f, tuple) and len(f) == 5):
            raise TypeError(f"{s.name}: field {f!r} is not (id, name, type, spec, required)")
        fid, name, kind, spec, required = f
        where = f"{s.name}.{name}"
        if type(fid) is not int or not -32768 <= fid <= 32767 or fid in seen:
            raise TypeError(f"{where}: field id {fid!r} is not a unique i16")
        if not isinstance(name, str) or not name.isidentifier() or name == "_unknown":
            raise TypeError(f"{where}: not a usable attribute name")
        if kind in _SCALARS:
            if spec is not None and not (kind == I32 and isinstance(spec, type)
                                         and issubclass(spec, enum.IntEnum)):
                raise TypeError(f"{where}: a scalar takes spec None (or an IntEnum for I32)")
            t = _compile_type(spec if spec is not None else kind, where)
        elif kind in (LIST, SET):
            t = _compile_type((kind, spec), where)
        elif kind == MAP and isinstance(spec, tuple) and len(spec) == 2:
            t = _compile_type((MAP,) + spec, where)
        elif kind == STRUCT:
            t = _compile_type(spec, where)
            if t.kind != STRUCT:
                raise TypeError(f"{where}: STRUCT needs a Struct subclass")
        else:
            raise TypeError(f"{where}: bad type {kind!r} / spec {spec!r}")
        if is_union and required:
            raise TypeError(f"{where}: union members cannot be required")
        seen.add(fid)
        s.ids[i] = fid
        if required:
            s.required_mask |= (<uint64_t>1) << i
        names.append(name)
        types.append(t)
    s.n = len(fields)
    s.names, s.types, s.id_set = tuple(names), tuple(types), frozenset(seen)
    for i in range(s.n):
        s.offs[i] = slot_offset(cls, names[i])
    s.unknown_off = slot_offset(cls, "_unknown")
    s.gc = bool(cls.__flags__ & (1 << 14))     # Py_TPFLAGS_HAVE_GC
    s.nested = tuple(i for i, t in enumerate(types) if _nests((<_Type>t).kind))
    s.as_type = _Type()
    s.as_type.kind = s.as_type.ctype = K_STRUCT
    s.as_type.spec = s
    return s


def compile_struct(cls, fields, bint union=False):
    """Compile a field table for ``cls`` (stored by the caller as ``cls._thrift_spec``).

    Args:
        cls: the class the decoder instantiates (without ``__init__``); its instances must
            accept one attribute per field name plus ``_unknown`` (e.g. ``__slots__``).
        fields: ``(id, name, type, spec, required)`` tuples in the order fields are written.
        union: members are optional and ``encode`` requires exactly one to be set.

    Returns:
        An opaque spec object (``.field_names``, ``.last_field_id``).

    Raises:
        TypeError: a malformed table (bad type spec, duplicate id, over 64 fields...).
    """
    return _compile(cls, fields, union)


cdef inline _StructSpec _spec_of(object cls):
    spec = getattr(cls, "_thrift_spec", None)
    if not isinstance(spec, _StructSpec) or (<_StructSpec>spec).cls is not cls:
        raise TypeError(f"{cls!r} is not a Struct subclass with FIELDS")
    return <_StructSpec>spec


# ------------------------------------------------------------------ decoding
# (the wire-level readers, shared with the page-header scanner, are in compact.pxd)

cdef object _read_value(Cursor* c, _Type t, int depth):
    cdef int kind = t.kind
    cdef Py_ssize_t n
    cdef const uint8_t* p
    cdef uint64_t bits
    cdef double d
    cdef bint flag
    if kind == K_I32 or kind == K_I64 or kind == K_I16 or kind == K_BYTE:
        return tc_read_int(c, kind)
    if kind == K_BINARY or kind == K_STRING:
        cur_uleb_size(c, &n)
        p = cur_take(c, n)
        if kind == K_STRING:
            return PyUnicode_DecodeUTF8(<const char*>p, n, "surrogateescape")
        return PyBytes_FromStringAndSize(<const char*>p, n)
    if kind == K_STRUCT:
        return _read_struct(c, t.spec, depth)
    if kind == K_LIST or kind == K_SET:
        return _read_list(c, t, depth)
    if kind == K_BOOL:
        tc_read_bool_elem(c, &flag)
        return flag
    if kind == K_DOUBLE:
        bits = load_u64(cur_take(c, 8))
        memcpy(&d, &bits, 8)
        return d
    if kind == K_UUID:
        return PyBytes_FromStringAndSize(<const char*>cur_take(c, 16), 16)
    return _read_map(c, t, depth)


cdef list _read_list(Cursor* c, _Type t, int depth):
    cdef int et
    cdef Py_ssize_t n, i, start = c.pos
    cdef _Type elem = t.elem
    cdef list out
    tc_check_depth(c, depth)
    tc_list_header(c, &et, &n)
    if n and not tc_compatible(elem.ctype, et):
        c.pos = start
        raise_invalid(c, f"list element type {et} where {elem.ctype} is declared")
    if _nests(elem.kind) and n > PREALLOC_LIMIT:
        out = []     # nested: never reserve more than what has been read (depth x input)
        PyObject_GC_UnTrack(out)
        for i in range(n):
            PyList_Append(out, _read_value(c, elem, depth + 1))
        return out
    out = PyList_New(n)
    PyObject_GC_UnTrack(out)
    for i in range(n):
        v = _read_value(c, elem, depth + 1)
        Py_INCREF(v)
        PyList_SET_ITEM(out, i, v)
    return out


cdef dict _read_map(Cursor* c, _Type t, int depth):
    cdef int kt = 0, vt = 0
    cdef Py_ssize_t n, i, start = c.pos
    cdef dict out = {}
    tc_check_depth(c, depth)
    tc_map_header(c, &kt, &vt, &n)
    if n and not (tc_compatible(t.key.ctype, kt) and tc_compatible(t.elem.ctype, vt)):
        c.pos = start
        raise_invalid(c, f"map types {kt}/{vt} where {t.key.ctype}/{t.elem.ctype} are declared")
    for i in range(n):
        start = c.pos
        k = _read_value(c, t.key, depth + 1)
        if k in out:
            c.pos = start
            raise_invalid(c, f"duplicate map key {k!r}")
        out[k] = _read_value(c, t.elem, depth + 1)
    return out


cdef object _read_struct(Cursor* c, _StructSpec spec, int depth):
    cdef uint64_t seen = 0, bit, missing
    cdef int ct, fid = 0, last_id = 0
    cdef Py_ssize_t i, k, hint = 0, start, hdr
    cdef list unknown = None
    cdef object anchor = None
    cdef _Type t
    tc_check_depth(c, depth)
    obj = PyType_GenericNew(<PyTypeObject*>spec.cls, <PyObject*>_EMPTY, NULL)
    if spec.gc:
        PyObject_GC_UnTrack(obj)     # see _track
    while True:
        hdr = c.pos
        tc_field_header(c, last_id, &ct, &fid)
        if ct == 0:
            break
        i = -1
        for k in range(spec.n):
            if spec.ids[(hint + k) % spec.n] == fid:
                i = (hint + k) % spec.n
                break
        if i >= 0:
            t = <_Type>spec.types[i]
            if not tc_compatible(t.ctype, ct):
                i = -1
        if i >= 0:
            bit = (<uint64_t>1) << i
            if seen & bit:
                c.pos = hdr
                raise_invalid(c, f"{spec.name}.{spec.names[i]} appears twice")
            seen |= bit
            set_slot(obj, spec.offs[i], <str>spec.names[i],
                      (ct == CT_TRUE) if t.kind == K_BOOL else _read_value(c, t, depth + 1))
            anchor = fid
            hint = i + 1
        else:
            start = c.pos
            tc_skip(c, ct, False, depth + 1)
            if unknown is None:
                unknown = []
            unknown.append((fid, ct, PyBytes_FromStringAndSize(<const char*>c.data + start,
                                                                c.pos - start), anchor))
        last_id = fid
    missing = spec.required_mask & ~seen
    if missing:
        c.pos -= 1
        for i in range(spec.n):
            if missing & ((<uint64_t>1) << i):
                raise_invalid(c, f"required field {spec.name}.{spec.names[i]} is missing")
    for i in range(spec.n):
        if not seen & ((<uint64_t>1) << i):
            set_slot(obj, spec.offs[i], <str>spec.names[i], None)
    set_slot(obj, spec.unknown_off, "_unknown", unknown)
    return obj


cdef inline bint _nests(int kind) noexcept nogil:
    return kind == K_STRUCT or kind == K_LIST or kind == K_SET or kind == K_MAP


cdef int _track(object v, _Type t) except -1:
    """Hand a decoded tree to the cyclic GC.

    Decoding creates structs and lists untracked and tracks them here once the whole tree is
    built: a footer is tens of thousands of objects, and collections triggered while they are
    created (then promoted, then traversed again in full collections) cost more than the
    decoding itself. Nothing else can reach the objects before this point.
    """
    cdef _StructSpec spec
    cdef Py_ssize_t i
    if v is None:
        return 0
    if t.kind == K_STRUCT:
        spec = t.spec
        if spec.gc and not PyObject_GC_IsTracked(v):
            PyObject_GC_Track(v)
        for i in spec.nested:
            _track(get_slot(v, spec.offs[i], <str>spec.names[i]), <_Type>spec.types[i])
    elif t.kind == K_LIST or t.kind == K_SET:
        if not PyObject_GC_IsTracked(v):
            PyObject_GC_Track(v)
        if _nests(t.elem.kind):
            for x in <list>v:
                _track(x, t.elem)
    elif t.kind == K_MAP and _nests(t.elem.kind):
        for x in (<dict>v).values():
            _track(x, t.elem)
    return 0


cdef const uint8_t[::1] _view(object data):
    try:
        return data
    except (ValueError, TypeError):
        return memoryview(data).cast("B")


cdef tuple _decode(data, cls, Py_ssize_t offset, bint whole):
    cdef _StructSpec spec = _spec_of(cls)
    cdef const uint8_t[::1] view = _view(data)
    cdef Py_ssize_t size = view.shape[0]
    cdef Cursor c = cur_make(&view[0] if size else NULL, size)
    if offset < 0 or offset > size:
        raise DecodeError(f"offset {offset} outside a buffer of {size} bytes", offset=offset)
    c.pos = offset
    obj = _read_struct(&c, spec, 0)
    _track(obj, spec.as_type)
    if whole and c.pos != size:
        raise DecodeError(f"{size - c.pos} trailing bytes after {spec.name}", offset=c.pos)
    return obj, c.pos


def decode_prefix(data, cls, Py_ssize_t offset=0):
    """Decode one struct of class ``cls`` starting at ``data[offset]``.

    Args:
        data: any C-contiguous buffer (bytes, bytearray, memoryview, numpy, pyarrow Buffer).
        cls: a class with a compiled ``_thrift_spec``.
        offset: where the struct starts.

    Returns:
        ``(obj, end)``: the decoded object and the offset just past its stop byte.

    Raises:
        DecodeError: truncated, corrupt or hostile input (offsets are relative to ``data``).
    """
    return _decode(data, cls, offset, False)


def decode(data, cls):
    """Decode ``data``, which must hold exactly one struct of class ``cls``.

    Raises:
        DecodeError: corrupt input, or bytes left after the struct's stop byte.
    """
    return _decode(data, cls, 0, True)[0]


# ------------------------------------------------------------------ encoding

cdef int _write_header(WBuf* w, int fid, int ct, int last_id) except -1:
    cdef int delta = fid - last_id
    if 0 < delta <= 15:
        wb_u8(w, <uint8_t>((delta << 4) | ct))
    else:
        wb_u8(w, <uint8_t>ct)
        wb_zigzag(w, fid)
    return 0


cdef int _write_bytes(WBuf* w, int kind, const uint8_t* p, Py_ssize_t n) except -1:
    if kind == K_UUID:
        if n != 16:
            raise EncodeError(f"a uuid is 16 bytes, got {n}")
    else:
        wb_uleb(w, n)
    if n:
        wb_put(w, p, n)
    return 0


cdef int _write_buffer(WBuf* w, int kind, object v) except -1:
    cdef const uint8_t[::1] raw
    try:
        raw = _view(v)
    except (TypeError, ValueError):
        raise TypeError(f"expected {'str or ' if kind == K_STRING else ''}a bytes-like "
                        f"object, got {type(v).__name__}") from None
    return _write_bytes(w, kind, &raw[0] if raw.shape[0] else NULL, raw.shape[0])


cdef object _np_bool = np.bool_


cdef bint _is_bool(object v):
    return v is True or v is False or isinstance(v, _np_bool)


cdef int _write_value(WBuf* w, _Type t, object v, int depth) except -1:
    cdef int kind = t.kind
    cdef int64_t x
    cdef double d
    cdef uint64_t bits
    if kind == K_I32 or kind == K_I64 or kind == K_I16 or kind == K_BYTE:
        if _is_bool(v) or isinstance(v, float):
            raise TypeError(f"expected int, got {type(v).__name__}")
        try:
            x = v
        except OverflowError:
            raise EncodeError(f"{v} does not fit in i64") from None
        if (kind == K_BYTE and not -128 <= x <= 127) or (kind == K_I16 and not -32768 <= x <= 32767) \
                or (kind == K_I32 and not -2147483648 <= x <= 2147483647):
            raise EncodeError(f"{x} out of range for {('byte', 'i16', 'i32')[kind - K_BYTE]}")
        if kind == K_BYTE:
            wb_u8(w, <uint8_t>x)
        else:
            wb_zigzag(w, x)
    elif kind == K_BINARY or kind == K_STRING or kind == K_UUID:
        if isinstance(v, str):
            if kind != K_STRING:
                raise TypeError("expected a bytes-like object, got str")
            try:
                v = (<str>v).encode("utf-8", "surrogateescape")
            except UnicodeEncodeError as e:
                raise EncodeError(f"not encodable as UTF-8: {e}") from None
        if type(v) is bytes:
            _write_bytes(w, kind, <const uint8_t*>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
        else:
            _write_buffer(w, kind, v)
    elif kind == K_STRUCT:
        if not isinstance(v, t.spec.cls):
            raise TypeError(f"expected {t.spec.name}, got {type(v).__name__}")
        _write_struct(w, v, t.spec, depth)
    elif kind == K_LIST or kind == K_SET:
        _write_list(w, t, v, depth)
    elif kind == K_MAP:
        _write_map(w, t, v, depth)
    elif kind == K_BOOL:
        if not _is_bool(v):
            raise TypeError(f"expected bool, got {type(v).__name__}")
        wb_u8(w, CT_TRUE if v else CT_FALSE)
    else:  # K_DOUBLE
        if not isinstance(v, _Real) or _is_bool(v):
            raise TypeError(f"expected float, got {type(v).__name__}")
        d = float(v)
        memcpy(&bits, &d, 8)
        wb_u64le(w, bits)
    return 0


cdef int _write_list(WBuf* w, _Type t, object v, int depth) except -1:
    cdef Py_ssize_t n
    if depth >= DEPTH_LIMIT:
        raise EncodeError(f"nesting deeper than {DEPTH_LIMIT}")
    if not isinstance(v, (list, tuple, set, frozenset) if t.kind == K_SET else (list, tuple)):
        raise TypeError(f"expected a list, got {type(v).__name__}")
    n = len(v)
    if n > 0x7FFFFFFF:
        raise EncodeError("list longer than 2**31 - 1")
    if n < 15:
        wb_u8(w, <uint8_t>((n << 4) | t.elem.ctype))
    else:
        wb_u8(w, <uint8_t>(0xF0 | t.elem.ctype))
        wb_uleb(w, n)
    for x in v:
        _write_value(w, t.elem, x, depth + 1)
    return 0


cdef int _write_map(WBuf* w, _Type t, object v, int depth) except -1:
    if depth >= DEPTH_LIMIT:
        raise EncodeError(f"nesting deeper than {DEPTH_LIMIT}")
    if not isinstance(v, dict):
        raise TypeError(f"expected a dict, got {type(v).__name__}")
    if len(v) > 0x7FFFFFFF:
        raise EncodeError("map larger than 2**31 - 1")
    wb_uleb(w, len(v))
    if v:
        wb_u8(w, <uint8_t>((t.key.ctype << 4) | t.elem.ctype))
    for k, x in (<dict>v).items():
        _write_value(w, t.key, k, depth + 1)
        _write_value(w, t.elem, x, depth + 1)
    return 0


cdef int _write_unknown(WBuf* w, tuple u, int last_id) except -1:
    """Write one kept field ``(field_id, wire_type, value_bytes, anchor)``."""
    cdef const uint8_t[::1] raw
    cdef Cursor c
    fid, ct, value = u[0], u[1], u[2]
    if type(fid) is not int or not -32768 <= fid <= 32767 or type(ct) is not int \
            or not CT_TRUE <= ct <= K_UUID or not isinstance(value, bytes):
        raise EncodeError(f"unknown field {u!r} is not (i16 id, wire type 1-13, bytes, anchor)")
    raw = value
    c = cur_make(&raw[0] if raw.shape[0] else NULL, raw.shape[0])
    try:
        tc_skip(&c, ct, False, 1)
    except DecodeError:
        c.pos = -1
    if c.pos != raw.shape[0]:
        raise EncodeError(f"unknown field {fid}: bytes are not one value of wire type {ct}")
    _write_header(w, fid, ct, last_id)
    if raw.shape[0]:
        wb_put(w, &raw[0], raw.shape[0])
    return 0


cdef dict _group_kept(list unknown, frozenset ids):
    """Kept fields by where they go: their anchor id, None (first) or _END (after the rest)."""
    cdef dict groups = {}
    for u in unknown:
        if not (isinstance(u, tuple) and len(<tuple>u) == 4):
            raise EncodeError(f"unknown field {u!r} is not (id, wire type, bytes, anchor)")
        a = (<tuple>u)[3]
        groups.setdefault(a if a is None or a in ids else _END, []).append(u)
    return groups


cdef int _write_group(WBuf* w, dict groups, object key, int* last_id) except -1:
    for u in groups.get(key, ()):
        _write_unknown(w, <tuple>u, last_id[0])
        last_id[0] = (<tuple>u)[0]
    return 0


cdef int _write_struct(WBuf* w, object obj, _StructSpec spec, int depth) except -1:
    cdef Py_ssize_t i, nset = 0
    cdef int last_id = 0
    cdef _Type t
    if depth >= DEPTH_LIMIT:
        raise EncodeError(f"nesting deeper than {DEPTH_LIMIT} (a struct that contains itself?)")
    cdef dict kept = None
    unknown = get_slot(obj, spec.unknown_off, "_unknown")
    if unknown:
        if not isinstance(unknown, list):
            raise TypeError(f"{spec.name}._unknown must be a list or None")
        kept = _group_kept(unknown, spec.id_set)
        _write_group(w, kept, None, &last_id)
    for i in range(spec.n):
        name = spec.names[i]
        v = get_slot(obj, spec.offs[i], name)
        if v is None:
            if spec.required_mask & ((<uint64_t>1) << i):
                raise EncodeError(f"required field {spec.name}.{name} is None")
        else:
            nset += 1
            t = <_Type>spec.types[i]
            try:
                if t.kind == K_BOOL:
                    if not _is_bool(v):
                        raise TypeError(f"expected bool, got {type(v).__name__}")
                    _write_header(w, spec.ids[i], CT_TRUE if v else CT_FALSE, last_id)
                else:
                    _write_header(w, spec.ids[i], t.ctype, last_id)
                    _write_value(w, t, v, depth + 1)
            except (TypeError, EncodeError) as e:
                raise type(e)(f"{spec.name}.{name}: {e}") from None
            last_id = spec.ids[i]
        if kept:
            _write_group(w, kept, spec.ids[i], &last_id)
    if kept:
        _write_group(w, kept, _END, &last_id)
    if spec.is_union and (nset > 1 or (nset == 0 and not kept)):
        raise EncodeError(f"union {spec.name} needs exactly one member set, has {nset}")
    wb_u8(w, 0)
    return 0


def encode(obj):
    """Encode a ``Struct`` instance with the compact protocol.

    Raises:
        EncodeError: a required field is None, a value out of range for its type, a union
            without exactly one member, a malformed kept field.
        TypeError: a value of the wrong Python type (the message names struct and field).
    """
    cdef _StructSpec spec = _spec_of(type(obj))
    cdef WBuf w
    wb_init(&w, 256)
    try:
        _write_struct(&w, obj, spec, 0)
        return wb_to_bytes(&w)
    finally:
        wb_free(&w)
