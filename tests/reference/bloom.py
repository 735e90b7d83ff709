"""Pure-Python XXH64 and split-block bloom filter, straight from the specs.

The reference for cython_ext/bloom: XXH64 per the xxHash spec 0.1.1, the SBBF per the Parquet
"Parquet Bloom Filter" section (block = eight 32-bit words, salt, mask, block index
``((h >> 32) * z) >> 32``). Also a minimal Thrift compact-protocol reader for the
BloomFilterHeader that precedes a bitset in a Parquet file (tests use it instead of our Thrift
module). Slow and obvious on purpose.
"""

import struct

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
P1, P2, P3, P4, P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)
SALT = (
    0x47B6137B,
    0x44974D91,
    0x8824AD5B,
    0xA2B7289D,
    0x705495C7,
    0x2DF1424B,
    0x9EFC4947,
    0x5C6BFB31,
)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    acc = (acc + lane * P2) & M64
    return (_rotl(acc, 31) * P1) & M64


def _merge(acc, v):
    acc ^= _round(0, v)
    return (acc * P1 + P4) & M64


def xxh64(data: bytes, seed: int = 0) -> int:
    n = len(data)
    p = 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while n - p >= 32:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[p + 8 * i : p + 8 * i + 8], "little"))
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = _merge(h, x)
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while n - p >= 8:
        h ^= _round(0, int.from_bytes(data[p : p + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M64
        p += 8
    if n - p >= 4:
        h ^= (int.from_bytes(data[p : p + 4], "little") * P1) & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        p += 4
    while p < n:
        h ^= (data[p] * P5) & M64
        h = (_rotl(h, 11) * P1) & M64
        p += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h


def mask(x: int) -> list[int]:
    """One bit per word: bit ``(x * salt[i]) >> 27`` (32-bit product) of word i."""
    return [1 << (((x * SALT[i]) & M32) >> 27) for i in range(8)]


class SBBF:
    """z blocks of eight little-endian 32-bit words in a bytearray."""

    def __init__(self, num_bytes: int):
        assert num_bytes >= 32 and num_bytes % 32 == 0
        self.bits = bytearray(num_bytes)
        self.z = num_bytes // 32

    def _block(self, h: int) -> int:
        return ((h >> 32) * self.z) >> 32

    def _word(self, block: int, i: int) -> int:
        return struct.unpack_from("<I", self.bits, 32 * block + 4 * i)[0]

    def insert(self, h: int) -> None:
        b = self._block(h)
        for i, m in enumerate(mask(h & M32)):
            struct.pack_into("<I", self.bits, 32 * b + 4 * i, self._word(b, i) | m)

    def check(self, h: int) -> bool:
        b = self._block(h)
        return all(self._word(b, i) & m for i, m in enumerate(mask(h & M32)))


# ------------------------------------------------------------- Thrift compact (just enough)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _skip_struct(data: bytes, pos: int) -> tuple[dict, int]:
    """Read a compact-protocol struct whose fields are i32/i64 or nested structs only."""
    fields = {}
    fid = 0
    while True:
        byte = data[pos]
        pos += 1
        if byte == 0:  # STOP
            return fields, pos
        ftype, delta = byte & 0x0F, byte >> 4
        if delta:
            fid += delta
        else:
            z, pos = _varint(data, pos)
            fid = (z >> 1) ^ -(z & 1)
        if ftype in (5, 6):  # i32, i64 (zigzag varint)
            z, pos = _varint(data, pos)
            fields[fid] = (z >> 1) ^ -(z & 1)
        elif ftype == 12:  # struct
            fields[fid], pos = _skip_struct(data, pos)
        else:
            raise ValueError(f"unexpected compact type {ftype} in a BloomFilterHeader")


def parse_bloom_filter(data: bytes) -> tuple[dict, bytes]:
    """``BloomFilterHeader`` + bitset -> (header fields by id, bitset bytes)."""
    header, pos = _skip_struct(data, 0)
    num_bytes = header[1]
    return header, data[pos : pos + num_bytes]


def optimal_num_bytes(ndv: int, fpp: float, max_bytes: int = 128 * 1024 * 1024) -> int:
    """Arrow's BlockSplitBloomFilter::OptimalNumOfBytes, transcribed."""
    import math

    m = -8.0 * ndv / math.log(1 - math.pow(fpp, 1.0 / 8))
    bits = max_bytes * 8 if (m < 0 or m > max_bytes * 8) else int(m)
    bits = max(bits, 32 * 8)
    if bits & (bits - 1):
        bits = 1 << bits.bit_length()
    return min(bits, max_bytes * 8) // 8
