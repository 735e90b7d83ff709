"""Pure-Python ULEB128 and zigzag: the reference for cython_ext/buffer."""


def uleb_encode(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def uleb_decode(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Return (value, new position); raise ValueError past 10 bytes / 64 bits / the end."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if value >= 1 << 64:
            raise ValueError("varint overflows 64 bits")
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def zigzag_encode(value: int) -> int:
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)
