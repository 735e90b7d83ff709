"""The footer of a Parquet file: found from the file's tail, decoded with the Thrift kernel,
decrypted or verified under Parquet Modular Encryption, and fingerprinted.

PAR1 files hold a plaintext footer (signed when the file is encrypted with a plaintext footer);
PARE files an encrypted one, opened with the caller's ``FileDecryptionProperties``. Only the
file's tail is read: one request of up to 64 KiB (kept by the source: all of a small file, whose
column chunks are then read from it), a second one for a longer footer, one of the leading
magic of a file longer than that.
"""

from __future__ import annotations

import zlib

from metaindex.errors import DecodeError, IntegrityError, KeyAccessError
from metaindex.parquet import format as fmt
from metaindex.parquet.format import ENCRYPTED_MAGIC, MAGIC
from metaindex.parquet.source import Source

__all__ = [
    "footer_bytes",
    "decode_footer",
    "footer_region",
    "footer_fingerprint",
    "fingerprint",
    "read_footer",
]

_FOOTER_GUESS = 64 * 1024


def footer_bytes(source: Source) -> tuple[memoryview, bytes]:
    """The footer region (everything before its length field) and the magic, PAR1 or PARE.

    Raises:
        DecodeError: not a Parquet file (size, magic or footer length).
    """
    size = source.size
    if size < 12:
        raise DecodeError(
            f"{source.name}: not a Parquet file (its size is {size} bytes, "
            "shorter than the 12-byte frame)"
        )
    tail_len = min(size, _FOOTER_GUESS)
    tail = source.read_at(size - tail_len, tail_len, keep=True)  # a small file: all of it
    head = bytes(tail[:4] if tail_len == size else source.read_at(0, 4))
    if head not in (MAGIC, ENCRYPTED_MAGIC):
        raise DecodeError(f"{source.name}: not a Parquet file (bad leading magic)", offset=0)
    magic = bytes(tail[-4:])
    if magic != head:
        raise DecodeError(
            f"{source.name}: not a Parquet file (ends with {magic!r}, not {head!r})",
            offset=size - 4,
        )
    length = int.from_bytes(tail[-8:-4], "little")
    if length > size - 12:
        raise DecodeError(
            f"{source.name}: footer length {length} runs past the start of the file",
            offset=size - 8,
            needed=length,
            remaining=size - 12,
        )
    if length + 8 <= tail_len:
        return tail[tail_len - 8 - length : tail_len - 8], head
    return source.read_at(size - 8 - length, length), head


def decode_footer(source: Source, decryption_properties):
    """``(FileMetaData, FileDecryptor or None, footer length in bytes)`` of the file; records
    the footer's fingerprint on ``source``.

    Raises:
        DecodeError: not a Parquet file, or a corrupt footer.
        KeyAccessError: an encrypted footer and no properties to open it.
        IntegrityError: a footer or signature that does not verify, or a plaintext file where
            the properties demand an encrypted one.
    """
    blob, magic = footer_bytes(source)
    source.fingerprint = fingerprint(blob)
    return (*_decode_footer_blob(source, blob, magic, decryption_properties), len(blob))


def _decode_footer_blob(source: Source, blob, magic, decryption_properties):
    """``(FileMetaData, FileDecryptor or None)`` of a footer region.

    PARE: the footer is decrypted with ``decryption_properties``. PAR1 with an encryption
    algorithm: a signed plaintext footer, verified when properties are given (without them the
    plaintext columns stay readable, as for a legacy reader).
    """
    if magic == ENCRYPTED_MAGIC:
        if decryption_properties is None:
            raise KeyAccessError(
                f"{source.name}: the footer is encrypted (PARE); pass "
                "decryption_properties with its key or a key retriever"
            )
        return decryption_properties.open_encrypted_footer(blob, source.name)
    metadata, end = fmt.FileMetaData.decode_prefix(blob)
    if metadata.encryption_algorithm is None:
        if end != len(blob):
            raise DecodeError(
                f"{source.name}: {len(blob) - end} bytes after the footer's FileMetaData",
                offset=source.size - 8 - len(blob) + end,
            )
        if decryption_properties is not None and not decryption_properties.plaintext_files_allowed:
            raise IntegrityError(
                f"{source.name}: the file is not encrypted, but decryption "
                "properties were given (a plaintext file where an encrypted "
                "one is expected; set plaintext_files_allowed to accept it)"
            )
        return metadata, None
    if len(blob) - end != 28:
        raise DecodeError(
            f"{source.name}: a plaintext footer of an encrypted file is followed "
            f"by a 28-byte signature, not {len(blob) - end} bytes"
        )
    if decryption_properties is None:
        return metadata, None
    return metadata, decryption_properties.open_plaintext_footer(
        metadata, blob[:end], blob[end:], source.name
    )


def footer_region(path, filesystem=None) -> tuple[memoryview, bytes, int]:
    """The raw footer region of a Parquet file (everything between the data and the footer
    length), its magic (``b"PAR1"`` or ``b"PARE"``) and the file size, without decoding or
    decrypting anything: what tools inspecting an encrypted file without keys start from.

    Raises:
        FileNotFoundError: no such file.
        DecodeError: not a Parquet file (size, magic or footer length).
    """
    source = Source(path, filesystem)
    try:
        blob, magic = footer_bytes(source)
        return blob, magic, source.size
    finally:
        source.close()


def footer_fingerprint(path, filesystem=None) -> tuple[int, int]:
    """``(length, CRC-32)`` of a Parquet file's footer region (encrypted or not), read from its
    tail only: what :attr:`ParquetFile.footer_fingerprint` recorded when the file was opened.

    Raises:
        FileNotFoundError: no such file.
        DecodeError: not a Parquet file.
    """
    return fingerprint(footer_region(path, filesystem)[0])


def fingerprint(blob) -> tuple[int, int]:
    """``(length, CRC-32)`` of a footer region."""
    return len(blob), zlib.crc32(blob)


def read_footer(data, decryption_properties=None) -> fmt.FileMetaData:
    """Decode the footer of a whole Parquet file held in ``data`` (bytes-like)."""
    return decode_footer(Source(data), decryption_properties)[0]
