"""A strict reader of the few Java-serialised objects xskipper stored in its metadata files.

xskipper kept some index metadata as a Spark UDT whose SQL type is ``binary``: the bytes of
``ObjectOutputStream.writeObject`` of its metadata case class (Java Object Serialization
Stream Protocol, version 5). This module reads that grammar only as far as those objects
need it: objects of serialisable classes without custom ``writeObject`` (their field values),
strings, null, back references, and the block data of the one class with a custom
``writeObject`` they hold, Spark's ``org.apache.spark.util.sketch.BloomFilterImpl`` (format
V1: ``BloomFilter.writeTo``). Anything else (arrays, enums, proxies, externalizable classes,
other custom ``writeObject`` methods) raises :class:`~metaindex.errors.DecodeError`: the
caller treats such metadata as unknown, so the file it describes is read.

Every read checks the remaining length first; nesting is bounded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from metaindex.errors import DecodeError

__all__ = ["JavaObject", "read_object", "SketchFilter", "sketch_filter", "boxed_value"]

_MAGIC = b"\xac\xed\x00\x05"
_TC_NULL, _TC_REFERENCE, _TC_CLASSDESC, _TC_OBJECT, _TC_STRING = 0x70, 0x71, 0x72, 0x73, 0x74
_TC_BLOCKDATA, _TC_ENDBLOCKDATA, _TC_LONGSTRING, _TC_BLOCKDATALONG = 0x77, 0x78, 0x7C, 0x7A
_BASE_HANDLE = 0x7E0000
_SC_WRITE_METHOD, _SC_SERIALIZABLE, _SC_EXTERNALIZABLE = 0x01, 0x02, 0x04
_PRIMITIVES = {
    "B": ">b",
    "C": ">H",
    "D": ">d",
    "F": ">f",
    "I": ">i",
    "J": ">q",
    "S": ">h",
    "Z": ">?",
}
_MAX_DEPTH = 16

SKETCH_V1 = "org.apache.spark.util.sketch.BloomFilterImpl"
_ANNOTATED = frozenset({SKETCH_V1})
"""Classes with a custom writeObject whose output is block data only (no field values)."""


@dataclass
class _ClassDesc:
    name: str
    flags: int
    fields: list  # (type code, name)
    parent: _ClassDesc | None


@dataclass
class JavaObject:
    """One deserialised object: its class name, field values by name (of every serialisable
    class of its hierarchy) and the block data its custom ``writeObject`` wrote."""

    class_name: str
    fields: dict = field(default_factory=dict)
    block_data: bytes = b""


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0
        self.handles: list = []

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError(
                f"Java serialisation: {n} bytes needed at offset {self.pos}, "
                f"{len(self.data) - self.pos} remain"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def utf(self, long: bool = False) -> str:
        raw = bytes(self.take(self.unpack(">q" if long else ">H")))
        try:  # modified UTF-8: equal to UTF-8 except for NUL and supplementary characters
            return raw.replace(b"\xc0\x80", b"\x00").decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("Java serialisation: a string is not UTF-8") from None

    def handle(self, value) -> int:
        self.handles.append(value)
        return len(self.handles) - 1

    def reference(self):
        index = self.unpack(">i") - _BASE_HANDLE
        if not 0 <= index < len(self.handles) or self.handles[index] is None:
            raise DecodeError(f"Java serialisation: bad back reference {index}")
        return self.handles[index]

    def tag(self, depth: int) -> tuple:
        """``(tag, value)``: the next content tag, with the value of a null (None) or a back
        reference already read."""
        if depth > _MAX_DEPTH:
            raise DecodeError("Java serialisation: nested too deep")
        tc = self.unpack(">B")
        return tc, self.reference() if tc == _TC_REFERENCE else None

    def class_desc(self, depth: int) -> _ClassDesc | None:
        tc, desc = self.tag(depth)
        if tc == _TC_NULL:
            return None
        if tc == _TC_REFERENCE:
            if not isinstance(desc, _ClassDesc):
                raise DecodeError("Java serialisation: a reference is not a class descriptor")
            return desc
        if tc != _TC_CLASSDESC:
            raise DecodeError(f"Java serialisation: class descriptor 0x{tc:02x} not understood")
        name = self.utf()
        self.take(8)  # serialVersionUID: not checked (Spark changed BloomFilterImpl's)
        desc = _ClassDesc(name, 0, [], None)
        self.handle(desc)
        desc.flags = self.unpack(">B")
        for _ in range(self.unpack(">H")):
            code = chr(self.unpack(">B"))
            fname = self.utf()
            if code in "L[":
                self.content(depth + 1)  # the field's type name
            elif code not in _PRIMITIVES:
                raise DecodeError(f"Java serialisation: field type {code!r} not understood")
            desc.fields.append((code, fname))
        self.annotation(depth + 1)
        desc.parent = self.class_desc(depth + 1)
        return desc

    def annotation(self, depth: int) -> bytes:
        """Contents up to TC_ENDBLOCKDATA; the block data joined (objects not understood)."""
        out = bytearray()
        while True:
            tc = self.unpack(">B")
            if tc == _TC_ENDBLOCKDATA:
                return bytes(out)
            if tc == _TC_BLOCKDATA:
                out += self.take(self.unpack(">B"))
            elif tc == _TC_BLOCKDATALONG:
                out += self.take(self.unpack(">i"))
            else:
                raise DecodeError(
                    f"Java serialisation: annotation content 0x{tc:02x} not understood"
                )
            if len(out) > len(self.data):
                raise DecodeError("Java serialisation: block data longer than the stream")

    def content(self, depth: int):
        tc, value = self.tag(depth)
        if tc in (_TC_NULL, _TC_REFERENCE):
            return value
        if tc in (_TC_STRING, _TC_LONGSTRING):
            value = self.utf(long=tc == _TC_LONGSTRING)
            self.handle(value)
            return value
        if tc != _TC_OBJECT:
            raise DecodeError(f"Java serialisation: content 0x{tc:02x} not understood")
        desc = self.class_desc(depth + 1)
        if desc is None:
            raise DecodeError("Java serialisation: an object without a class")
        obj = JavaObject(desc.name)
        self.handle(obj)
        chain = []
        while desc is not None:
            chain.append(desc)
            desc = desc.parent
        for desc in reversed(chain):  # the topmost serialisable class first
            if desc.flags & _SC_EXTERNALIZABLE or not desc.flags & _SC_SERIALIZABLE:
                raise DecodeError(f"Java serialisation: {desc.name} is not plainly serialisable")
            if desc.flags & _SC_WRITE_METHOD:
                if desc.name not in _ANNOTATED:
                    raise DecodeError(
                        f"Java serialisation: {desc.name}'s writeObject is not understood"
                    )
                obj.block_data += self.annotation(depth + 1)
                continue
            for code, fname in desc.fields:
                obj.fields[fname] = (
                    self.unpack(_PRIMITIVES[code])
                    if code in _PRIMITIVES
                    else self.content(depth + 1)
                )
        return obj


def read_object(data: bytes):
    """The one object a Java serialisation stream holds (a :class:`JavaObject`, a str or None).

    Raises:
        DecodeError: not a stream, a grammar this module does not read, trailing bytes.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DecodeError(f"Java serialisation: expected bytes, not {type(data).__name__}")
    reader = _Reader(bytes(data))
    if bytes(reader.take(4)) != _MAGIC:
        raise DecodeError("Java serialisation: bad stream magic")
    value = reader.content(0)
    if reader.pos != len(reader.data):
        raise DecodeError(f"Java serialisation: {len(reader.data) - reader.pos} trailing bytes")
    return value


@dataclass(frozen=True)
class SketchFilter:
    """Spark's sketch ``BloomFilter`` (V1): hash count and the bit array's 64-bit words as
    serialised (big-endian)."""

    num_hashes: int
    words: bytes


def sketch_filter(obj) -> SketchFilter:
    """The filter an xskipper ``BloomFilterMetaData`` object holds.

    Raises:
        DecodeError: another object, another filter class or format, bad lengths.
    """
    if not isinstance(obj, JavaObject) or not obj.class_name.endswith(".BloomFilterMetaData"):
        raise DecodeError("not an xskipper BloomFilterMetaData object")
    bf = obj.fields.get("bloomFilter")
    if not isinstance(bf, JavaObject) or bf.class_name != SKETCH_V1:
        raise DecodeError(
            f"bloom filter of class {getattr(bf, 'class_name', type(bf).__name__)} not understood"
        )
    data = bf.block_data
    if len(data) < 12:
        raise DecodeError("sketch BloomFilter: truncated header")
    version, num_hashes, num_words = struct.unpack(">iii", data[:12])
    if (
        version != 1
        or not 0 < num_hashes <= 1024
        or num_words <= 0
        or len(data) != 12 + 8 * num_words
    ):
        raise DecodeError(
            f"sketch BloomFilter: version {version}, {num_hashes} hashes, "
            f"{num_words} words in {len(data)} bytes not understood"
        )
    return SketchFilter(num_hashes, bytes(data[12:]))


_BOXES = {
    f"java.lang.{n}" for n in ("Integer", "Long", "Short", "Byte", "Double", "Float", "Boolean")
}


def boxed_value(value):
    """A boxed ``java.lang`` number or boolean (or a string) as its Python value.

    Raises:
        DecodeError: anything else (dates, decimals, collections: not understood).
    """
    if value is None or isinstance(value, str):
        return value
    if (
        isinstance(value, JavaObject)
        and value.class_name in _BOXES
        and set(value.fields) == {"value"}
    ):
        out = value.fields["value"]
        return float(out) if isinstance(out, float) else out
    name = getattr(value, "class_name", type(value).__name__)
    raise DecodeError(f"a serialised {name} value is not understood")
