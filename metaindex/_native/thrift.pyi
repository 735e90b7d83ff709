"""Thrift compact protocol, driven by field tables (compiled from cython_ext/thrift.pyx).

A field table is a sequence of ``(id, name, type, spec, required)`` tuples; see the module
docstring in ``cython_ext/thrift.pyx`` and the struct model in ``metaindex.parquet.format``.
"""

from collections.abc import Sequence
from typing import Any, TypeVar

from _typeshed import ReadableBuffer
from typing_extensions import disjoint_base

__all__ = [
    "BOOL",
    "BYTE",
    "I16",
    "I32",
    "I64",
    "DOUBLE",
    "BINARY",
    "STRING",
    "UUID",
    "LIST",
    "SET",
    "MAP",
    "STRUCT",
    "MAX_DEPTH",
    "EXTENSION_FIELD_ID",
    "compile_struct",
    "decode",
    "decode_prefix",
    "encode",
]

_T = TypeVar("_T")

BOOL: int
BYTE: int
I16: int
I32: int
I64: int
DOUBLE: int
BINARY: int
STRING: int
UUID: int
LIST: int
SET: int
MAP: int
STRUCT: int

MAX_DEPTH: int
"""Deepest nesting of structs and containers accepted when decoding and encoding."""

EXTENSION_FIELD_ID: int
"""-16384: the id a zigzag reader sees in the ``08 FF FF 01`` extension header (field 32767)."""

@disjoint_base
class _StructSpec:
    @property
    def field_names(self) -> tuple[str, ...]: ...
    @property
    def last_field_id(self) -> int | None: ...

def compile_struct(
    cls: type, fields: Sequence[tuple[int, str, int, Any, bool]], union: bool = False
) -> _StructSpec:
    """Compile a field table for ``cls`` (the caller stores it as ``cls._thrift_spec``).

    Raises:
        TypeError: a malformed table.
    """

def decode(data: ReadableBuffer, cls: type[_T]) -> _T:
    """Decode ``data``, which must hold exactly one struct of class ``cls``.

    Raises:
        DecodeError: truncated, corrupt or hostile input, or trailing bytes.
    """

def decode_prefix(data: ReadableBuffer, cls: type[_T], offset: int = 0) -> tuple[_T, int]:
    """Decode one struct at ``data[offset]``; returns ``(obj, end_offset)``.

    Raises:
        DecodeError: truncated, corrupt or hostile input (offsets relative to ``data``).
    """

def encode(obj: Any) -> bytes:
    """Encode a struct instance.

    Raises:
        EncodeError: a required field is None, a value out of range, a union without
            exactly one member, a malformed kept unknown field.
        TypeError: a value of the wrong Python type.
    """
