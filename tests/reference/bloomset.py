"""Reference for cython_ext/bloomset.pyx: probe many back-to-back bitsets, one at a time.

Each file's bitset is sliced out of ``data`` and checked with the plain-Python SBBF of
tests/reference/bloom.py. Ranges that are not a valid bitset answer True, null entries False.
"""

from __future__ import annotations

from tests.reference.bloom import SBBF

MAX_BYTES = 128 * 1024 * 1024


def valid_range(start: int, end: int, size: int, max_bytes: int = MAX_BYTES) -> bool:
    length = end - start
    return 0 <= start and 32 <= length <= max_bytes and length & (length - 1) == 0 and end <= size


def probe(offsets, data: bytes, present, hashes, max_bytes: int = MAX_BYTES) -> list[bool]:
    out = []
    for i, here in enumerate(present):
        start, end = int(offsets[i]), int(offsets[i + 1])
        if not here:
            out.append(False)
        elif not valid_range(start, end, len(data), max_bytes):
            out.append(True)
        else:
            f = SBBF(end - start)
            f.bits = bytearray(data[start:end])
            out.append(any(f.check(int(h)) for h in hashes))
    return out
