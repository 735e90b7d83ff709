"""Pure-Python RLE / bit-packing hybrid and deprecated BIT_PACKED: the reference for cython_ext/rle.

Decoding follows the same rules as the kernel (raise ValueError where it raises DecodeError).
The encoder is a line-by-line transliteration of Arrow's ``RleEncoder`` (Put / Flush state
machine), so it checks that the kernel's array-at-a-time run choice matches Arrow's.
"""

from __future__ import annotations

from tests.reference.varint import uleb_decode, uleb_encode

MAX_RUN = 2**31 - 1


def pack_lsb(values: list[int], width: int) -> bytes:
    """LSB-first bit packing (the hybrid's order)."""
    acc = 0
    for i, v in enumerate(values):
        acc |= v << (i * width)
    return acc.to_bytes((len(values) * width + 7) // 8, "little")


def unpack_lsb(data: bytes, count: int, width: int) -> list[int]:
    acc = int.from_bytes(data, "little")
    mask = (1 << width) - 1
    return [(acc >> (i * width)) & mask for i in range(count)]


def decode_hybrid(data: bytes, num_values: int, width: int) -> tuple[list[int], int]:
    """Decode without a length prefix; return (values, consumed)."""
    data = bytes(data)
    if num_values == 0 or (width == 0 and not data):
        return [0] * num_values, 0
    out: list[int] = []
    pos = 0
    while len(out) < num_values:
        if pos >= len(data):
            raise ValueError("data ends before num_values values")
        header, pos = uleb_decode(data, pos)
        count = header >> 1
        if header & 1:
            if count == 0 or count * 8 > MAX_RUN:
                raise ValueError("bad bit-packed run length")
            nbytes = count * width
            if pos + nbytes > len(data):
                raise ValueError("truncated bit-packed run")
            out += unpack_lsb(
                data[pos : pos + nbytes], min(count * 8, num_values - len(out)), width
            )
            pos += nbytes
        else:
            if count == 0 or count > MAX_RUN:
                raise ValueError("bad RLE run length")
            nbytes = (width + 7) // 8
            if pos + nbytes > len(data):
                raise ValueError("truncated RLE value")
            value = int.from_bytes(data[pos : pos + nbytes], "little")
            if value >> width:
                raise ValueError("RLE value wider than the bit width")
            pos += nbytes
            out += [value] * min(count, num_values - len(out))
    return out[:num_values], pos


def decode_hybrid_prefixed(data: bytes, num_values: int, width: int) -> tuple[list[int], int]:
    data = bytes(data)
    if len(data) < 4:
        raise ValueError("truncated length prefix")
    length = int.from_bytes(data[:4], "little")
    if length > len(data) - 4:
        raise ValueError("length prefix exceeds the input")
    values, _ = decode_hybrid(data[4 : 4 + length], num_values, width)
    return values, 4 + length


class ArrowRleEncoder:
    """Arrow's ``RleEncoder`` (cpp/src/arrow/util/rle_encoding_internal.h), in Python."""

    def __init__(self, width: int):
        self.width = width
        self.out = bytearray()
        self.buffered: list[int] = []
        self.current = None
        self.repeat_count = 0
        self.literal_count = 0
        self.indicator_pos = None

    def put(self, value: int) -> None:
        if self.current == value:
            self.repeat_count += 1
            if self.repeat_count > 8:
                return
        else:
            if self.repeat_count >= 8:
                self._flush_repeated_run()
            self.repeat_count = 1
            self.current = value
        self.buffered.append(value)
        if len(self.buffered) == 8:
            self._flush_buffered_values()

    def _flush_buffered_values(self) -> None:
        if self.repeat_count >= 8:
            self.buffered = []
            if self.literal_count:
                self._flush_literal_run(True)
            return
        self.literal_count += len(self.buffered)
        num_groups = (self.literal_count + 7) // 8
        self._flush_literal_run(num_groups + 1 >= 64)
        self.repeat_count = 0

    def _flush_literal_run(self, update_indicator: bool) -> None:
        if self.indicator_pos is None:
            self.indicator_pos = len(self.out)
            self.out.append(0)
        self.out += pack_lsb(self.buffered, self.width)
        self.buffered = []
        if update_indicator:
            num_groups = (self.literal_count + 7) // 8
            self.out[self.indicator_pos] = (num_groups << 1) | 1
            self.indicator_pos = None
            self.literal_count = 0

    def _flush_repeated_run(self) -> None:
        self.out += uleb_encode(self.repeat_count << 1)
        self.out += self.current.to_bytes((self.width + 7) // 8, "little")
        self.buffered = []
        self.repeat_count = 0

    def flush(self) -> bytes:
        if self.literal_count or self.repeat_count or self.buffered:
            all_repeat = self.literal_count == 0 and (
                self.repeat_count == len(self.buffered) or not self.buffered
            )
            if self.repeat_count and all_repeat:
                self._flush_repeated_run()
            else:
                if self.buffered:
                    self.buffered += [0] * (8 - len(self.buffered))
                self.literal_count += len(self.buffered)
                self._flush_literal_run(True)
                self.repeat_count = 0
        return bytes(self.out)


def encode_hybrid(values: list[int], width: int) -> bytes:
    enc = ArrowRleEncoder(width)
    for v in values:
        if not 0 <= v < (1 << width) and not (width == 0 and v == 0):
            raise ValueError("value does not fit the bit width")
        enc.put(int(v))
    return enc.flush()


def encode_hybrid_prefixed(values: list[int], width: int) -> bytes:
    body = encode_hybrid(values, width)
    return len(body).to_bytes(4, "little") + body


def pack_msb(values: list[int], width: int) -> bytes:
    """Deprecated BIT_PACKED: MSB first, last byte zero-padded."""
    acc = 0
    for v in values:
        acc = (acc << width) | v
    nbits = len(values) * width
    nbytes = (nbits + 7) // 8
    return (acc << (nbytes * 8 - nbits)).to_bytes(nbytes, "big")


def unpack_msb(data: bytes, num_values: int, width: int) -> tuple[list[int], int]:
    nbytes = (num_values * width + 7) // 8
    if nbytes > len(data):
        raise ValueError("truncated BIT_PACKED data")
    acc = int.from_bytes(bytes(data[:nbytes]), "big")
    total = nbytes * 8
    mask = (1 << width) - 1
    return [(acc >> (total - (i + 1) * width)) & mask for i in range(num_values)], nbytes
