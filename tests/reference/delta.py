"""Pure-Python references for the delta kernels (cython_ext/delta.pyx), and a page locator.

Slow, simple and obviously correct on purpose: integers are Python ints reduced modulo
2**bits, bit packing goes through one big little-endian integer. Decoders follow the same
documented rules as the kernel (see the delta.pyx docstring) and raise DecodeError on the same
kinds of bad input, so tests can run both on every case.

The encoder takes layout knobs the kernel's encoder does not have (block size, miniblock
count, forced bit widths, junk in unused widths and padding) so that tests can hand the
kernel's decoder every valid layout.

``data_page_values`` / ``dictionary_page_values`` find the value bytes of a data page or a
dictionary page with a tiny Thrift compact-protocol reader (only the PageHeader fields the
delta and dictionary tests need), so the tests do not depend on the project's Thrift kernel.
"""

from __future__ import annotations

from itertools import pairwise

from metaindex.errors import DecodeError

MAX_BLOCK_SIZE = 2**31 - 128
BYTE_ARRAY = 6
FIXED_LEN_BYTE_ARRAY = 7


# ------------------------------------------------------------------ varints


class _Reader:
    def __init__(self, data: bytes, pos: int = 0):
        self.data = bytes(data)
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError(
                "truncated input", offset=self.pos, needed=n, remaining=len(self.data) - self.pos
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uleb(self) -> int:
        start, result, shift = self.pos, 0, 0
        while True:
            if self.pos >= len(self.data):
                raise DecodeError("truncated varint", offset=start)
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 63:
                raise DecodeError("varint longer than 10 bytes", offset=start)
        if result >= 2**64:
            raise DecodeError("varint overflows 64 bits", offset=start)
        return result

    def zigzag(self) -> int:
        u = self.uleb()
        return (u >> 1) ^ -(u & 1)


def _uleb(v: int) -> bytes:
    assert v >= 0
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(v: int) -> bytes:
    return _uleb(2 * v if v >= 0 else -2 * v - 1)


def _signed(v: int, bits: int) -> int:
    v %= 2**bits
    return v - 2**bits if v >= 2 ** (bits - 1) else v


# ------------------------------------------------------------------ DELTA_BINARY_PACKED


def decode_dbp(data: bytes, num_values: int, bits: int) -> tuple[list[int], int]:
    """Decode ``num_values`` values (bits = 32 or 64); return (values, consumed bytes)."""
    r = _Reader(data)
    block_size = r.uleb()
    if block_size == 0 or block_size % 128 or block_size > MAX_BLOCK_SIZE:
        raise DecodeError(f"bad block size {block_size}")
    mb_count = r.uleb()
    if mb_count == 0 or block_size % mb_count or (block_size // mb_count) % 32:
        raise DecodeError(f"bad miniblock count {mb_count}")
    mb_values = block_size // mb_count
    total = r.uleb()
    if total < num_values:
        raise DecodeError(f"{total} values in the header, {num_values} expected")
    first = r.zigzag()
    if bits == 32 and not -(2**31) <= first < 2**32:  # unsigned (DuckDB UINT32) wraps
        raise DecodeError("INT32 first value out of range")
    first = _signed(first % 2**bits, bits)
    values = [first] if total and num_values else []
    last = first
    left = max(total - 1, 0)
    while left:
        min_delta = r.zigzag()
        widths = r.take(mb_count)
        for w in widths:
            if not left:
                break
            if w > bits:
                raise DecodeError(f"bit width {w} > {bits}")
            packed = int.from_bytes(r.take(mb_values * w // 8), "little")
            count = min(mb_values, left)
            for j in range(min(count, num_values - len(values))):  # the rest is skipped
                delta = (packed >> (j * w)) & ((1 << w) - 1)
                last = (last + min_delta + delta) % 2**bits
                values.append(_signed(last, bits))
            left -= count
    return values, r.pos


def encode_dbp(
    values: list[int],
    bits: int,
    *,
    block_size: int = 128,
    miniblocks: int = 4,
    min_widths: int | list[int] = 0,
    unused_width: int = 0,
    pad_bits: int = 0,
) -> bytes:
    """Encode with any layout.

    min_widths: a miniblock's width is at least this (one int, or one per miniblock index
    within a block), to write valid encodings with wider widths than needed.
    unused_width: width byte written for miniblocks that hold no value.
    pad_bits: 0 or 1, the value of the padding bits of a partly filled last miniblock.
    """
    mb_values = block_size // miniblocks
    mod = 2**bits
    out = bytearray(_uleb(block_size) + _uleb(miniblocks) + _uleb(len(values)))
    out += _zigzag(values[0] if values else 0)
    deltas = [(b - a) % mod for a, b in pairwise(values)]
    for start in range(0, len(deltas), block_size):
        block = [_signed(d, bits) for d in deltas[start : start + block_size]]
        min_delta = min(block)
        rel = [(d - min_delta) % mod for d in block]
        out += _zigzag(min_delta)
        width_bytes, bodies = [], b""
        for m in range(miniblocks):
            chunk = rel[m * mb_values : (m + 1) * mb_values]
            if not chunk:
                width_bytes.append(unused_width)
                continue
            need = max(chunk).bit_length()
            floor = min_widths if isinstance(min_widths, int) else min_widths[m]
            w = max(need, floor)
            width_bytes.append(w)
            packed = 0
            for j, v in enumerate(chunk):
                packed |= v << (j * w)
            if pad_bits:
                for j in range(len(chunk), mb_values):
                    packed |= ((1 << w) - 1) << (j * w)
            bodies += packed.to_bytes(mb_values * w // 8, "little")
        out += bytes(width_bytes) + bodies
    return bytes(out)


# ------------------------------------------------------------------ byte arrays


def _check_lengths(prefixes, suffixes, physical_type, type_length):
    prev = 0
    for i, (p, s) in enumerate(zip(prefixes, suffixes, strict=True)):
        if p < 0 or s < 0:
            raise DecodeError(f"negative length at value {i}")
        if p > prev:
            raise DecodeError(f"prefix {p} longer than previous value {prev} at value {i}")
        prev = p + s
        if physical_type == FIXED_LEN_BYTE_ARRAY and prev != type_length:
            raise DecodeError(f"value {i} is {prev} bytes, not {type_length}")


def decode_dlba(
    data: bytes, num_values: int, physical_type: int = BYTE_ARRAY, type_length: int = 0
) -> tuple[list[bytes], int]:
    lengths, pos = decode_dbp(data, num_values, 32)
    _check_lengths([0] * len(lengths), lengths, physical_type, type_length)
    out = []
    for n in lengths:
        if pos + n > len(data):
            raise DecodeError("byte array data exceeds the input")
        out.append(bytes(data[pos : pos + n]))
        pos += n
    return out, pos


def decode_dba(
    data: bytes, num_values: int, physical_type: int = BYTE_ARRAY, type_length: int = 0
) -> tuple[list[bytes], int]:
    prefixes, pos = decode_dbp(data, num_values, 32)
    suffixes, used = decode_dbp(data[pos:], num_values, 32)
    pos += used
    _check_lengths(prefixes, suffixes, physical_type, type_length)
    out, prev = [], b""
    for p, s in zip(prefixes, suffixes, strict=True):
        if pos + s > len(data):
            raise DecodeError("byte array data exceeds the input")
        prev = prev[:p] + bytes(data[pos : pos + s])
        pos += s
        out.append(prev)
    return out, pos


def encode_dlba(values: list[bytes], **layout) -> bytes:
    return encode_dbp([len(v) for v in values], 32, **layout) + b"".join(values)


def encode_dba(values: list[bytes], **layout) -> bytes:
    prefixes, prev = [], b""
    for v in values:
        k = 0
        while k < min(len(v), len(prev)) and v[k] == prev[k]:
            k += 1
        prefixes.append(k)
        prev = v
    suffixes = [v[p:] for v, p in zip(values, prefixes, strict=True)]
    return encode_dbp(prefixes, 32, **layout) + encode_dlba(suffixes, **layout)


# ------------------------------------------------------------------ page locator

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(
    13
)


def _skip(r: _Reader, ctype: int) -> None:
    if ctype in (_TRUE, _FALSE):
        return
    if ctype == _BYTE:
        r.take(1)
    elif ctype in (_I16, _I32, _I64):
        r.uleb()
    elif ctype == _DOUBLE:
        r.take(8)
    elif ctype == _BINARY:
        r.take(r.uleb())
    elif ctype in (_LIST, _SET):
        head = r.take(1)[0]
        n = head >> 4
        if n == 15:
            n = r.uleb()
        for _ in range(n):
            _skip(r, head & 0x0F)
    elif ctype == _MAP:
        n = r.uleb()
        if n:
            kv = r.take(1)[0]
            for _ in range(n):
                _skip(r, kv >> 4)
                _skip(r, kv & 0x0F)
    elif ctype == _STRUCT:
        _read_struct(r, {})
    else:
        raise DecodeError(f"unknown compact type {ctype}")


def _read_struct(r: _Reader, wanted: dict[int, str]) -> dict:
    """Read a struct; keep i32 fields and nested structs named in ``wanted`` (id -> name or
    (name, sub-wanted) for a struct), skip the rest."""
    out, fid = {}, 0
    while True:
        head = r.take(1)[0]
        ctype = head & 0x0F
        if ctype == _STOP:
            return out
        fid = fid + (head >> 4) if head >> 4 else r.zigzag()  # long form: zigzag i16 id
        spec = wanted.get(fid)
        if spec is None:
            _skip(r, ctype)
        elif isinstance(spec, tuple):
            out[spec[0]] = _read_struct(r, spec[1])
        else:
            out[spec] = r.zigzag()


PAGE_HEADER = {
    1: "type",
    2: "uncompressed_page_size",
    3: "compressed_page_size",
    5: ("data_page_header", {1: "num_values", 2: "encoding"}),
    7: ("dictionary_page_header", {1: "num_values", 2: "encoding"}),
    8: (
        "data_page_header_v2",
        {
            1: "num_values",
            2: "num_nulls",
            3: "num_rows",
            4: "encoding",
            5: "definition_levels_byte_length",
            6: "repetition_levels_byte_length",
        },
    ),
}


def data_page_values(file_bytes: bytes, page_offset: int) -> tuple[dict, bytes]:
    """(page header fields, value bytes) of an uncompressed data page of a REQUIRED column.

    For a v1 page of a required, non-nested column the page body is just the values; for v2
    the level bytes (lengths in the header) are skipped.
    """
    r = _Reader(file_bytes, page_offset)
    header = _read_struct(r, PAGE_HEADER)
    body = r.take(header["compressed_page_size"])
    if "data_page_header_v2" in header:
        v2 = header["data_page_header_v2"]
        body = body[v2["definition_levels_byte_length"] + v2["repetition_levels_byte_length"] :]
    return header, body


def dictionary_page_values(file_bytes: bytes, page_offset: int) -> tuple[dict, bytes]:
    """(page header fields, PLAIN value bytes) of an uncompressed dictionary page."""
    r = _Reader(file_bytes, page_offset)
    header = _read_struct(r, PAGE_HEADER)
    assert header["type"] == 2 and "dictionary_page_header" in header, "not a dictionary page"
    return header, r.take(header["compressed_page_size"])
