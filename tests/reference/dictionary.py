"""Pure-Python reference for the dictionary kernel (cython_ext/dictionary.pyx).

Values are handled as lists of ``bytes`` (each value's little-endian / raw bytes), so equality
is bit-pattern equality for floats, exactly as the kernel keys them. A Python dict keeps the
first-occurrence order.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from metaindex.errors import DecodeError

BOOLEAN, INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY = range(8)
WIDTH = {INT32: 4, INT64: 8, INT96: 12, FLOAT: 4, DOUBLE: 8}
DTYPE = {INT32: np.int32, INT64: np.int64, FLOAT: np.float32, DOUBLE: np.float64}


def width_of(physical_type: int, type_length: int = 0) -> int:
    return type_length if physical_type == FIXED_LEN_BYTE_ARRAY else WIDTH[physical_type]


def to_items(values, physical_type: int, type_length: int = 0) -> list[bytes]:
    """Values in the conventions format -> one ``bytes`` per value."""
    if physical_type == BYTE_ARRAY:
        offsets, data = values
        data = bytes(memoryview(np.ascontiguousarray(data)).cast("B"))
        return [data[int(a) : int(b)] for a, b in pairwise(offsets)]
    raw = np.ascontiguousarray(values).tobytes()
    w = width_of(physical_type, type_length)
    return [raw[i : i + w] for i in range(0, len(raw), w)]


def from_items(items: list[bytes], physical_type: int, type_length: int = 0):
    """One ``bytes`` per value -> the conventions format."""
    if physical_type == BYTE_ARRAY:
        offsets = np.zeros(len(items) + 1, np.int32)
        offsets[1:] = np.cumsum([len(v) for v in items], dtype=np.int64)
        return offsets, np.frombuffer(b"".join(items), np.uint8).copy()
    raw = np.frombuffer(b"".join(items), np.uint8).copy()
    if physical_type in DTYPE:
        return raw.view(DTYPE[physical_type])
    return raw.reshape(-1, width_of(physical_type, type_length))


def plain_size(items: list[bytes], physical_type: int) -> int:
    """Bytes of the PLAIN-encoded dictionary page holding ``items``."""
    if physical_type == BYTE_ARRAY:
        return sum(4 + len(v) for v in items)
    return sum(len(v) for v in items)


class Builder:
    def __init__(self, physical_type: int, max_dict_bytes: int = 1024 * 1024):
        if physical_type == BOOLEAN:
            raise TypeError("BOOLEAN is never dictionary-encoded")
        self.physical_type = physical_type
        self.max_dict_bytes = max_dict_bytes
        self.entries: dict[bytes, int] = {}

    def add(self, items: list[bytes]) -> list[int] | None:
        trial = dict(self.entries)
        out = []
        for v in items:
            if v not in trial:
                trial[v] = len(trial)
            out.append(trial[v])
        if plain_size(list(trial), self.physical_type) > self.max_dict_bytes:
            return None
        self.entries = trial
        return out

    def dictionary(self) -> list[bytes]:
        return list(self.entries)


def take(entries: list[bytes], indices) -> list[bytes]:
    out = []
    for i, k in enumerate(int(x) for x in indices):
        if not 0 <= k < len(entries):
            raise DecodeError(
                f"dictionary index {k} at position {i} is out of range for a "
                f"dictionary of {len(entries)} entries"
            )
        out.append(entries[k])
    return out
