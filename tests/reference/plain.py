"""Pure-Python PLAIN encoding: the reference for cython_ext/plain.

Values are plain Python objects: bools, ints, ``bytes`` for INT96 / BYTE_ARRAY /
FIXED_LEN_BYTE_ARRAY, and floats as their IEEE bit patterns (ints) so NaN payloads compare.
"""

from __future__ import annotations

import struct

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)

# physical type -> struct format of one value (floats as same-size unsigned bit patterns)
_FIXED = {INT32: "<i", INT64: "<q", FLOAT: "<I", DOUBLE: "<Q"}


def encode(values: list, ptype: int, type_length: int = 0) -> bytes:
    if ptype == BOOLEAN:
        out = bytearray((len(values) + 7) // 8)
        for i, v in enumerate(values):
            if v:
                out[i // 8] |= 1 << (i % 8)
        return bytes(out)
    if ptype in _FIXED:
        return b"".join(struct.pack(_FIXED[ptype], v) for v in values)
    if ptype == BYTE_ARRAY:
        return b"".join(struct.pack("<I", len(v)) + v for v in values)
    width = 12 if ptype == INT96 else type_length
    assert all(len(v) == width for v in values)
    return b"".join(values)


def decode(data: bytes, num_values: int, ptype: int, type_length: int = 0) -> tuple[list, int]:
    """Return (values, consumed); raise ValueError on truncated input."""
    data = bytes(data)
    if ptype == BOOLEAN:
        nbytes = (num_values + 7) // 8
        if nbytes > len(data):
            raise ValueError("truncated booleans")
        return [bool(data[i // 8] >> (i % 8) & 1) for i in range(num_values)], nbytes
    if ptype == BYTE_ARRAY:
        values, pos = [], 0
        for _ in range(num_values):
            if pos + 4 > len(data):
                raise ValueError("truncated length")
            (length,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if pos + length > len(data):
                raise ValueError("length past the end")
            values.append(data[pos : pos + length])
            pos += length
        return values, pos
    width = {INT32: 4, INT64: 8, FLOAT: 4, DOUBLE: 8, INT96: 12}.get(ptype, type_length)
    if num_values * width > len(data):
        raise ValueError("truncated values")
    chunks = [data[i * width : (i + 1) * width] for i in range(num_values)]
    if ptype in _FIXED:
        return [struct.unpack(_FIXED[ptype], c)[0] for c in chunks], num_values * width
    return chunks, num_values * width
