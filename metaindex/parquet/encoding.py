"""One dispatch point from (encoding, physical type) to the kernels.

Everything above this module speaks Parquet's ``Encoding`` ids; everything below is a kernel in
``metaindex._native``. Levels use the RLE / bit-packing hybrid (with the 4-byte length prefix in
data page v1, without in v2) or, when reading old files, the deprecated BIT_PACKED encoding.
"""

from __future__ import annotations

import numpy as np

from metaindex._native import bindict, bss, delta, dictionary, plain, rle
from metaindex.bloom import PHYSICAL_TYPE_NAMES as _TYPE_NAMES
from metaindex.errors import DecodeError, EncodeError

__all__ = [
    "encode_values",
    "decode_values",
    "decode_binary_into",
    "encode_levels_v1",
    "decode_levels_v1",
    "encode_levels_v2",
    "decode_levels_v2",
    "constant_levels",
    "encode_indices",
    "decode_indices",
    "build_dictionary",
    "take",
    "ENCODING_NAMES",
]

PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED = 0, 2, 3, 4
DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY = 5, 6, 7
RLE_DICTIONARY, BYTE_STREAM_SPLIT = 8, 9
BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)

ENCODING_NAMES = {
    PLAIN: "PLAIN",
    PLAIN_DICTIONARY: "PLAIN_DICTIONARY",
    RLE: "RLE",
    BIT_PACKED: "BIT_PACKED",
    DELTA_BINARY_PACKED: "DELTA_BINARY_PACKED",
    DELTA_LENGTH_BYTE_ARRAY: "DELTA_LENGTH_BYTE_ARRAY",
    DELTA_BYTE_ARRAY: "DELTA_BYTE_ARRAY",
    RLE_DICTIONARY: "RLE_DICTIONARY",
    BYTE_STREAM_SPLIT: "BYTE_STREAM_SPLIT",
}

# which value encodings apply to which physical types (dictionary indices are separate)
_VALID = {
    PLAIN: set(range(8)),
    RLE: {BOOLEAN},
    DELTA_BINARY_PACKED: {INT32, INT64},
    DELTA_LENGTH_BYTE_ARRAY: {BYTE_ARRAY},
    DELTA_BYTE_ARRAY: {BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY},
    BYTE_STREAM_SPLIT: {INT32, INT64, FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY},
}


def _check(encoding: int, ptype: int, error):
    if ptype not in _VALID.get(encoding, ()):
        name = ENCODING_NAMES.get(encoding, f"encoding {encoding}")
        tname = _TYPE_NAMES[ptype] if 0 <= ptype < 8 else f"type {ptype}"
        raise error(f"{name} does not apply to {tname} values")


def encode_values(values, ptype: int, encoding: int, type_length: int = 0) -> bytes:
    """Encode non-null values of physical type ``ptype`` with a value ``encoding``."""
    _check(encoding, ptype, EncodeError)
    if encoding == PLAIN:
        return plain.encode_plain(values, ptype, type_length)
    if encoding == RLE:
        return rle.encode_rle_bool(values)
    if encoding == DELTA_BINARY_PACKED:
        return delta.encode_delta_binary_packed(values, ptype)
    if encoding == DELTA_LENGTH_BYTE_ARRAY:
        return delta.encode_delta_length_byte_array(values, ptype, type_length)
    if encoding == DELTA_BYTE_ARRAY:
        return delta.encode_delta_byte_array(values, ptype, type_length)
    return bss.encode_byte_stream_split(values, ptype, type_length)


def decode_values(data, num_values: int, ptype: int, encoding: int, type_length: int = 0, out=None):
    """Decode ``num_values`` values; returns ``(values, bytes consumed)``.

    ``out``: for fixed-width types, a writable buffer of exactly the values' bytes to decode
    into (returned as the values).
    """
    _check(encoding, ptype, DecodeError)
    if out is not None:
        if encoding == PLAIN:
            return plain.decode_plain(data, num_values, ptype, type_length, out)
        if encoding == DELTA_BINARY_PACKED:
            return delta.decode_delta_binary_packed(data, num_values, ptype, out)
        if encoding == BYTE_STREAM_SPLIT:
            return bss.decode_byte_stream_split(data, num_values, ptype, type_length, out)
        values, used = decode_values(data, num_values, ptype, encoding, type_length)
        np.frombuffer(out, np.uint8)[:] = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        return out, used
    if encoding == PLAIN:
        return plain.decode_plain(data, num_values, ptype, type_length)
    if encoding == RLE:
        return rle.decode_rle_bool(data, num_values)
    if encoding == DELTA_BINARY_PACKED:
        return delta.decode_delta_binary_packed(data, num_values, ptype)
    if encoding == DELTA_LENGTH_BYTE_ARRAY:
        return delta.decode_delta_length_byte_array(data, num_values, ptype, type_length)
    if encoding == DELTA_BYTE_ARRAY:
        return delta.decode_delta_byte_array(data, num_values, ptype, type_length)
    return bss.decode_byte_stream_split(data, num_values, ptype, type_length)


def decode_binary_into(data, num_values: int, encoding: int, sink, entries=None) -> None:
    """Decode a page's ``num_values`` BYTE_ARRAY values straight into a chunk's sink
    (``sinks.BinarySink``); ``entries``: the chunk's dictionary (``bindict.BinaryDictionary``)
    for a dictionary-encoded page, whose indices are read and gathered in one kernel call."""
    if encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        if entries is None:
            raise DecodeError("dictionary-encoded page but the chunk has no dictionary page")
        bindict.decode_into(data, num_values, entries, sink)
        return
    _check(encoding, BYTE_ARRAY, DecodeError)
    if encoding == PLAIN:
        plain.decode_byte_array_into(data, num_values, sink)
    elif encoding == DELTA_LENGTH_BYTE_ARRAY:
        delta.decode_delta_length_byte_array_into(data, num_values, sink)
    else:
        delta.decode_delta_byte_array_into(data, num_values, sink)


def _width(max_level: int) -> int:
    return int(max_level).bit_length()


def encode_levels_v1(levels: np.ndarray, max_level: int) -> bytes:
    """Levels for a v1 data page: RLE hybrid with its 4-byte length prefix."""
    return rle.encode_rle_prefixed(levels, _width(max_level))


def constant_levels(count: int, level: int, prefixed: bool) -> bytes:
    """``count`` levels all equal to ``level`` as one RLE run (with the v1 length prefix when
    ``prefixed``), without building the level array."""
    header = count << 1
    run = bytearray()
    while header >= 0x80:
        run.append((header & 0x7F) | 0x80)
        header >>= 7
    run.append(header)
    run += int(level).to_bytes((_width(level) + 7) // 8, "little")
    if count == 0:
        run = bytearray()
    return (len(run).to_bytes(4, "little") + bytes(run)) if prefixed else bytes(run)


def encode_levels_v2(levels: np.ndarray, max_level: int) -> bytes:
    """Levels for a v2 data page: RLE hybrid, no prefix (the header holds the length)."""
    return rle.encode_rle(levels, _width(max_level))


def _levels_out(levels, max_level: int) -> np.ndarray:
    out = levels.astype(np.int16, copy=False)
    if len(out) and int(out.max()) > max_level:
        raise DecodeError(f"a level of {int(out.max())} exceeds the column's maximum {max_level}")
    return out


def decode_levels_v1(data, num_values: int, max_level: int, encoding: int | None):
    """Levels of a v1 data page; returns ``(int16 levels, bytes consumed)``."""
    if encoding == BIT_PACKED:
        levels, used = rle.decode_bit_packed(data, num_values, _width(max_level))
    elif encoding in (RLE, None):
        levels, used = rle.decode_rle_prefixed(data, num_values, _width(max_level))
    else:
        raise DecodeError(f"level encoding {ENCODING_NAMES.get(encoding, encoding)} is not valid")
    return _levels_out(levels, max_level), used


def decode_levels_v2(data, num_values: int, max_level: int) -> np.ndarray:
    """Levels of a v2 data page (its whole level section)."""
    levels, _ = rle.decode_rle(data, num_values, _width(max_level))
    return _levels_out(levels, max_level)


def encode_indices(indices: np.ndarray, dictionary_size: int) -> bytes:
    """Dictionary indices: one byte of bit width, then the RLE hybrid without a prefix."""
    width = max(0, int(dictionary_size - 1).bit_length()) if dictionary_size > 1 else 0
    return bytes([width]) + rle.encode_rle(indices, width)


def decode_indices(data, num_values: int):
    """Dictionary indices of a data page; returns ``(uint32 indices, bytes consumed)``."""
    if num_values == 0:
        return np.zeros(0, np.uint32), 0
    if len(data) < 1:
        raise DecodeError(
            "dictionary-encoded page has no bit-width byte", offset=0, needed=1, remaining=0
        )
    width = data[0]
    if width > 32:
        raise DecodeError(f"dictionary index bit width {width} is over 32", offset=0)
    indices, used = rle.decode_rle(memoryview(data)[1:], num_values, width)
    return indices, used + 1


def build_dictionary(values, ptype: int, type_length: int, max_bytes: int):
    """``(dictionary values, uint32 indices)``, or None when the dictionary passes ``max_bytes``."""
    return dictionary.build_dictionary(values, ptype, type_length, max_bytes)


def take(dictionary_values, indices, ptype: int, out=None):
    """Gather dictionary values by index (indices validated against the dictionary's size);
    fixed-width values into ``out`` when given."""
    return dictionary.take(dictionary_values, indices, ptype, out=out)
