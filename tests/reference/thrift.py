"""Pure-Python Thrift compact protocol: the obviously-correct twin of cython_ext/thrift.pyx.

Two layers, both written for clarity rather than speed:

* A schema-less *wire tree* reader/writer. A struct is a list of ``(field_id, wire_type,
  value)``; a bool field is wire type 1 (true) or 2 (false) with value None; a list or set is
  ``(elem_type, [values])``; a map is ``(key_type, value_type, [(k, v), ...])`` (types None
  when empty); bool elements are True/False; i8..i64 ints; double float; binary bytes; uuid 16
  bytes; a nested struct is again a list of fields. Tests craft arbitrary (hostile or unknown)
  encodings with it.
* A table-driven codec with the same semantics as the kernel (``decode``, ``decode_prefix``,
  ``encode``) over the same struct classes (their ``FIELDS``), so both run on the same cases.
"""

from __future__ import annotations

import enum
import struct

from metaindex._native.thrift import (
    BINARY,
    BOOL,
    BYTE,
    DOUBLE,
    I16,
    I32,
    I64,
    LIST,
    MAP,
    SET,
    STRING,
    STRUCT,
    UUID,
)
from metaindex.errors import DecodeError, EncodeError
from metaindex.parquet.format import Union

MAX_DEPTH = 64
TRUE, FALSE = 1, 2
EXTENSION_FIELD_ID = -16384


# ------------------------------------------------------------------ primitives


class Input:
    """Bytes with a read position; every read checks what remains."""

    def __init__(self, data, pos=0):
        self.data = bytes(data)
        self.pos = pos

    def remaining(self):
        return len(self.data) - self.pos

    def take(self, n):
        if n < 0 or n > self.remaining():
            raise DecodeError("truncated", offset=self.pos)
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def byte(self):
        return self.take(1)[0]

    def uleb(self):
        result = 0
        for i in range(10):
            b = self.byte()
            if i == 9 and b > 1:
                raise DecodeError("varint overflows 64 bits", offset=self.pos)
            result |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                return result
        raise DecodeError("varint longer than 10 bytes", offset=self.pos)


def zigzag_decode(u):
    return (u >> 1) ^ -(u & 1)


def uleb(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(v):
    return uleb(2 * v if v >= 0 else -2 * v - 1)


def field_header(fid, wire_type, last_id):
    delta = fid - last_id
    if 0 < delta <= 15:
        return bytes([(delta << 4) | wire_type])
    return bytes([wire_type]) + zigzag(fid)


def list_header(elem_type, n):
    return bytes([(n << 4) | elem_type]) if n < 15 else bytes([0xF0 | elem_type]) + uleb(n)


def min_size(wire_type):
    """Fewest bytes one container element of this wire type takes."""
    return {DOUBLE: 8, UUID: 16}.get(wire_type, 1)


def check_type(r, t):
    if not 1 <= t <= 13:
        raise DecodeError(f"invalid compact type {t}", offset=r.pos)


def check_count(r, n, each):
    if n > 0x7FFFFFFF or n * each > r.remaining():
        raise DecodeError(f"{n} elements cannot fit", offset=r.pos)


def read_field_header(r, last_id):
    """Returns (wire_type, field_id); wire_type 0 is the stop byte."""
    b = r.byte()
    if b == 0:
        return 0, None
    check_type(r, b & 0x0F)
    if b >> 4:
        fid = last_id + (b >> 4)
        if fid > 32767:
            raise DecodeError("field id overflows i16", offset=r.pos)
        return b & 0x0F, fid
    u = r.uleb()
    if u > 0xFFFF:
        raise DecodeError("field id exceeds 16 bits", offset=r.pos)
    return b & 0x0F, zigzag_decode(u)


def read_list_header(r):
    """An empty list may carry element type 0 (fastparquet writes 0x00)."""
    h = r.byte()
    n = h >> 4
    if n == 15:
        n = r.uleb()
    if n or h & 0x0F:
        check_type(r, h & 0x0F)
    check_count(r, n, min_size(h & 0x0F))
    return h & 0x0F, n


def read_map_header(r):
    n = r.uleb()
    if n == 0:
        return None, None, 0
    h = r.byte()
    check_type(r, h >> 4)
    check_type(r, h & 0x0F)
    check_count(r, n, min_size(h >> 4) + min_size(h & 0x0F))
    return h >> 4, h & 0x0F, n


def read_bool_element(r):
    b = r.byte()
    if b not in (0, 1, 2):
        raise DecodeError(f"bool element byte {b}", offset=r.pos)
    return b == 1


def read_int(r, wire_type):
    if wire_type == BYTE:
        b = r.byte()
        return b - 256 if b > 127 else b
    u = r.uleb()
    if (wire_type == I16 and u > 0xFFFF) or (wire_type == I32 and u > 0xFFFFFFFF):
        raise DecodeError("varint too large", offset=r.pos)
    return zigzag_decode(u)


# ------------------------------------------------------------------ schema-less wire trees


def read_wire(r, wire_type, element, depth):
    """One value as a wire tree (see the module docstring)."""
    if wire_type in (TRUE, FALSE):
        return read_bool_element(r) if element else None
    if wire_type in (BYTE, I16, I32, I64):
        return read_int(r, wire_type)
    if wire_type == DOUBLE:
        return struct.unpack("<d", r.take(8))[0]
    if wire_type == UUID:
        return r.take(16)
    if wire_type == BINARY:
        return r.take(r.uleb())
    if depth >= MAX_DEPTH:
        raise DecodeError("nesting too deep", offset=r.pos)
    if wire_type in (LIST, SET):
        et, n = read_list_header(r)
        return et, [read_wire(r, et, True, depth + 1) for _ in range(n)]
    if wire_type == MAP:
        kt, vt, n = read_map_header(r)
        return (
            kt,
            vt,
            [
                (read_wire(r, kt, True, depth + 1), read_wire(r, vt, True, depth + 1))
                for _ in range(n)
            ],
        )
    fields, last = [], 0
    while True:
        t, fid = read_field_header(r, last)
        if t == 0:
            return fields
        fields.append((fid, t, read_wire(r, t, False, depth + 1)))
        last = fid


def read_wire_struct(data, pos=0):
    """Parse one struct into a wire tree; returns (fields, end)."""
    r = Input(data, pos)
    fields = read_wire(r, STRUCT, False, 0)
    return fields, r.pos


def write_wire(wire_type, value, element=False):
    """Encode one wire-tree value."""
    if wire_type in (TRUE, FALSE):
        return (b"\x01" if value else b"\x02") if element else b""
    if wire_type == BYTE:
        return bytes([value & 0xFF])
    if wire_type in (I16, I32, I64):
        return zigzag(value)
    if wire_type == DOUBLE:
        return struct.pack("<d", value)
    if wire_type == UUID:
        return bytes(value)
    if wire_type == BINARY:
        return uleb(len(value)) + bytes(value)
    if wire_type in (LIST, SET):
        et, items = value
        return list_header(et, len(items)) + b"".join(write_wire(et, x, True) for x in items)
    if wire_type == MAP:
        kt, vt, items = value
        if not items:
            return b"\x00"
        return (
            uleb(len(items))
            + bytes([(kt << 4) | vt])
            + b"".join(write_wire(kt, k, True) + write_wire(vt, v, True) for k, v in items)
        )
    return write_wire_struct(value)


def write_wire_struct(fields):
    out, last = bytearray(), 0
    for fid, wire_type, value in fields:
        out += field_header(fid, wire_type, last) + write_wire(wire_type, value)
        last = fid
    return bytes(out + b"\x00")


def append_extension(thrift, ext):
    """The format docs' AppendExtension: replace the stop byte with a field-32767 binary."""
    assert thrift[-1:] == b"\x00", "there was a stop field in the first place"
    return thrift[:-1] + b"\x08" + uleb(32767) + uleb(len(ext)) + ext + b"\x00"


def skip(r, wire_type, element, depth):
    read_wire(r, wire_type, element, depth)


# ------------------------------------------------------------------ table-driven codec


def type_node(spec):
    """An element spec as (kind, sub): sub is the class, the element node or (key, value)."""
    if isinstance(spec, type) and issubclass(spec, enum.IntEnum):
        return I32, None
    if isinstance(spec, type):
        return STRUCT, spec
    if isinstance(spec, tuple) and spec[0] in (LIST, SET):
        return spec[0], type_node(spec[1])
    if isinstance(spec, tuple):
        return MAP, (type_node(spec[1]), type_node(spec[2]))
    return spec, None


def field_node(kind, spec):
    if kind in (LIST, SET):
        return kind, type_node(spec)
    if kind == MAP:
        return MAP, (type_node(spec[0]), type_node(spec[1]))
    if kind == STRUCT:
        return STRUCT, spec
    return kind, None


def wire_type_of(kind):
    return BINARY if kind == STRING else kind


def compatible(declared, got):
    return declared == got or (declared == TRUE and got == FALSE)


def read_value(r, node, depth):
    kind, sub = node
    if kind == BOOL:
        return read_bool_element(r)
    if kind in (BYTE, I16, I32, I64):
        return read_int(r, kind)
    if kind == DOUBLE:
        return struct.unpack("<d", r.take(8))[0]
    if kind == UUID:
        return r.take(16)
    if kind == BINARY:
        return r.take(r.uleb())
    if kind == STRING:
        return r.take(r.uleb()).decode("utf-8", "surrogateescape")
    if kind == STRUCT:
        return read_struct(r, sub, depth)
    if depth >= MAX_DEPTH:
        raise DecodeError("nesting too deep", offset=r.pos)
    if kind in (LIST, SET):
        et, n = read_list_header(r)
        if n and not compatible(wire_type_of(sub[0]), et):
            raise DecodeError("list element type mismatch", offset=r.pos)
        return [read_value(r, sub, depth + 1) for _ in range(n)]
    kt, vt, n = read_map_header(r)
    (knode, vnode) = sub
    if n and not (
        compatible(wire_type_of(knode[0]), kt) and compatible(wire_type_of(vnode[0]), vt)
    ):
        raise DecodeError("map types mismatch", offset=r.pos)
    out = {}
    for _ in range(n):
        k = read_value(r, knode, depth + 1)
        if k in out:
            raise DecodeError("duplicate map key", offset=r.pos)
        out[k] = read_value(r, vnode, depth + 1)
    return out


def read_struct(r, cls, depth):
    if depth >= MAX_DEPTH:
        raise DecodeError("nesting too deep", offset=r.pos)
    table = {f[0]: f for f in cls.FIELDS}
    values, unknown, last, anchor = {}, [], 0, None
    while True:
        t, fid = read_field_header(r, last)
        if t == 0:
            break
        f = table.get(fid)
        if f is not None and compatible(wire_type_of(f[2]), t):
            if f[1] in values:
                raise DecodeError("duplicate field", offset=r.pos)
            if f[2] == BOOL:
                values[f[1]] = t == TRUE
            else:
                values[f[1]] = read_value(r, field_node(f[2], f[3]), depth + 1)
            anchor = fid
        else:
            start = r.pos
            skip(r, t, False, depth + 1)
            unknown.append((fid, t, r.data[start : r.pos], anchor))
        last = fid
    obj = object.__new__(cls)
    for _, name, _, _, required in cls.FIELDS:
        if required and name not in values:
            raise DecodeError(f"required field {cls.__name__}.{name} is missing", offset=r.pos)
        setattr(obj, name, values.get(name))
    obj._unknown = unknown or None
    return obj


def decode_prefix(data, cls, offset=0):
    r = Input(data, offset)
    return read_struct(r, cls, 0), r.pos


def decode(data, cls):
    obj, end = decode_prefix(data, cls)
    if end != len(bytes(data)):
        raise DecodeError("trailing bytes", offset=end)
    return obj


def write_value(node, v):
    kind, sub = node
    if kind == BOOL:
        return b"\x01" if v else b"\x02"
    if kind == BYTE:
        return bytes([v & 0xFF])
    if kind in (I16, I32, I64):
        return zigzag(v)
    if kind == DOUBLE:
        return struct.pack("<d", v)
    if kind == UUID:
        return bytes(v)
    if kind in (BINARY, STRING):
        raw = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v)
        return uleb(len(raw)) + raw
    if kind == STRUCT:
        return encode(v)
    if kind in (LIST, SET):
        return list_header(wire_type_of(sub[0]), len(v)) + b"".join(write_value(sub, x) for x in v)
    knode, vnode = sub
    if not v:
        return b"\x00"
    return (
        uleb(len(v))
        + bytes([(wire_type_of(knode[0]) << 4) | wire_type_of(vnode[0])])
        + b"".join(write_value(knode, k) + write_value(vnode, x) for k, x in v.items())
    )


def encode(obj):
    """Known fields in table order, each kept unknown field after its anchor."""
    cls = type(obj)
    ids = {f[0] for f in cls.FIELDS}
    unknown = list(obj._unknown or ())
    out, last, nset = bytearray(), 0, 0

    def put_unknown(anchor):
        nonlocal last, out
        for fid, wire_type, raw, a in unknown:
            placed_at = a if a is None or a in ids else "end"
            if placed_at == anchor:
                out += field_header(fid, wire_type, last) + raw
                last = fid

    put_unknown(None)
    for fid, name, kind, spec, required in cls.FIELDS:
        v = getattr(obj, name)
        if v is None:
            if required:
                raise EncodeError(f"required field {cls.__name__}.{name} is None")
        else:
            nset += 1
            if kind == BOOL:
                out += field_header(fid, TRUE if v else FALSE, last)
            else:
                out += field_header(fid, wire_type_of(kind), last) + write_value(
                    field_node(kind, spec), v
                )
            last = fid
        put_unknown(fid)
    put_unknown("end")
    if issubclass(cls, Union) and (nset > 1 or (nset == 0 and not unknown)):
        raise EncodeError(f"union {cls.__name__} needs exactly one member set")
    return bytes(out + b"\x00")
