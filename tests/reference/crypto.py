"""Pure-Python Parquet Modular Encryption framing: the reference for cython_ext/crypto.

Written straight from the spec (parquet-format Encryption.md, sections 4.4 and 5.1) with the
simplest calls ``cryptography`` offers (one-shot AESGCM, CTR ``update``), and an explicit nonce
so tests can compare frames byte for byte.
"""

from __future__ import annotations

import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FOOTER, COLUMN_META_DATA, DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_HEADER = 0, 1, 2, 3, 4
DICTIONARY_PAGE_HEADER, COLUMN_INDEX, OFFSET_INDEX, BLOOM_HEADER, BLOOM_BITSET = 5, 6, 7, 8, 9


def aad(file_aad: bytes, module_type: int, row_group=None, column=None, page=None) -> bytes:
    """Module AAD; struct raises struct.error for ordinals outside int16."""
    out = file_aad + bytes([module_type])
    if module_type == FOOTER:
        return out
    out += struct.pack("<hh", row_group, column)
    if module_type in (DATA_PAGE, DATA_PAGE_HEADER):
        out += struct.pack("<h", page)
    return out


def uses_ctr(module_type: int, ctr_pages: bool) -> bool:
    return ctr_pages and module_type in (DATA_PAGE, DICTIONARY_PAGE)


def encrypt(key: bytes, module_aad: bytes, plaintext: bytes, nonce: bytes, ctr: bool) -> bytes:
    """The whole frame: length, nonce, ciphertext (+ tag for GCM)."""
    if ctr:
        enc = Cipher(algorithms.AES(key), modes.CTR(nonce + b"\x00\x00\x00\x01")).encryptor()
        body = nonce + enc.update(plaintext) + enc.finalize()
    else:
        body = nonce + AESGCM(key).encrypt(nonce, plaintext, module_aad)
    return struct.pack("<I", len(body)) + body


def decrypt(key: bytes, module_aad: bytes, frame: bytes, ctr: bool) -> tuple[bytes, int]:
    """(plaintext, frame size); ValueError on a bad length, InvalidTag on a bad tag."""
    if len(frame) < 4:
        raise ValueError("no length field")
    (length,) = struct.unpack_from("<I", frame)
    if length < (12 if ctr else 28) or length > len(frame) - 4:
        raise ValueError("bad length")
    nonce, rest = frame[4:16], frame[16 : 4 + length]
    if ctr:
        dec = Cipher(algorithms.AES(key), modes.CTR(nonce + b"\x00\x00\x00\x01")).decryptor()
        return dec.update(rest) + dec.finalize(), 4 + length
    return AESGCM(key).decrypt(nonce, rest, module_aad), 4 + length


def footer_signature(key: bytes, file_aad: bytes, footer: bytes, nonce: bytes) -> bytes:
    """nonce + the GCM tag of the footer under the footer AAD (ciphertext dropped)."""
    return nonce + AESGCM(key).encrypt(nonce, footer, aad(file_aad, FOOTER))[-16:]


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode (UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: list[str], table_size: int = 16) -> list[str]:
    """Iteration order of a java.util.HashMap filled with ``keys`` in order (no resize).

    HashMap spreads ``h ^ (h >>> 16)`` and takes the low bits as the bucket; a bucket lists its
    keys in insertion order; iteration walks the buckets in index order.
    """

    def bucket(k):
        h = java_string_hash(k)
        return (h ^ (h >> 16)) & (table_size - 1)

    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))
