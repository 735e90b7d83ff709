"""What to encrypt and with which keys (writing); which keys to decrypt with (reading).

These are the low-level properties: keys in bytes. :class:`metaindex.crypto.CryptoFactory`
builds them from master key ids and a KMS.
"""

from __future__ import annotations

from metaindex.crypto.file_crypto import FileDecryptor, FileEncryptor
from metaindex.parquet import format as fmt

__all__ = ["ALGORITHMS", "FileEncryptionProperties", "FileDecryptionProperties"]

ALGORITHMS = ("AES_GCM_V1", "AES_GCM_CTR_V1")


def _key(value, what: str, optional: bool = False) -> bytes | None:
    if value is None and optional:
        return None
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"{what} must be bytes (an AES key of 16, 24 or 32 bytes), not {type(value).__name__}"
        )
    value = bytes(value)
    if len(value) not in (16, 24, 32):
        raise ValueError(
            f"{what} is {len(value)} bytes; AES keys are 16, 24 or 32 bytes (128, 192 or 256 bits)"
        )
    return value


def _blob(value, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes or str, not {type(value).__name__}")


def _column_map(value, what: str, convert) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(
            f"{what} must be a dict of column path -> value, not {type(value).__name__}"
        )
    out = {}
    for name, item in value.items():
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"{what}: column names are non-empty str (dotted leaf path or "
                f"top-level name), not {name!r}"
            )
        out[name] = convert(item, f"{what}[{name!r}]")
    return out


class FileEncryptionProperties:
    """How to encrypt one Parquet file.

    Args:
        footer_key: AES key (16/24/32 bytes) for the footer — encrypting it, or signing it in
            plaintext-footer mode — and for every column encrypted "with the footer key".
        column_keys: {column: key}. Empty: every column is encrypted with the footer key
            (uniform encryption). Otherwise only the listed columns are encrypted, each with
            its key (None: with the footer key); the others stay plaintext. Columns are dotted
            leaf paths ("a.b") or top-level names (all leaves under them).
        algorithm: "AES_GCM_V1" (everything GCM) or "AES_GCM_CTR_V1" (pages CTR).
        plaintext_footer: leave the footer readable (signed) so legacy readers can read the
            plaintext columns; encrypted columns' readable metadata loses its statistics.
        aad_prefix: bytes identifying the file (e.g. table + partition), authenticated in
            every module; detects a file swapped for another.
        store_aad_prefix: store the prefix in the file (False: readers must supply it).
        footer_key_metadata: stored for readers to find the footer key (e.g. key material).
        column_key_metadata: {column: bytes}, the same per column key.
    """

    def __init__(
        self,
        footer_key,
        *,
        column_keys=None,
        algorithm: str = "AES_GCM_V1",
        plaintext_footer: bool = False,
        aad_prefix=None,
        store_aad_prefix: bool = True,
        footer_key_metadata=b"",
        column_key_metadata=None,
    ):
        self.footer_key = _key(footer_key, "footer_key")
        self.column_keys = _column_map(
            column_keys, "column_keys", lambda v, w: _key(v, w, optional=True)
        )
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
        self.algorithm = algorithm
        self.plaintext_footer = bool(plaintext_footer)
        self.aad_prefix = None if aad_prefix is None else _blob(aad_prefix, "aad_prefix")
        self.store_aad_prefix = bool(store_aad_prefix)
        self.footer_key_metadata = _blob(footer_key_metadata or b"", "footer_key_metadata")
        self.column_key_metadata = _column_map(column_key_metadata, "column_key_metadata", _blob)
        stray = set(self.column_key_metadata) - {
            k for k, v in self.column_keys.items() if v is not None
        }
        if stray:
            raise ValueError(
                f"column_key_metadata names columns without their own key: {sorted(stray)}"
            )

    def file_encryptor(self, leaf_paths) -> FileEncryptor:
        """The state of one file being written (``leaf_paths``: the leaves' path tuples).

        Raises:
            SchemaError: ``column_keys`` names a column the schema does not have.
        """
        return FileEncryptor(self, [tuple(p) for p in leaf_paths])

    def __repr__(self) -> str:  # keys never appear in reprs or logs
        columns = sorted(self.column_keys) or "all (footer key)"
        return (
            f"FileEncryptionProperties(algorithm={self.algorithm!r}, encrypted columns="
            f"{columns}, plaintext_footer={self.plaintext_footer}, aad_prefix="
            f"{'set' if self.aad_prefix is not None else None}, keys=<redacted>)"
        )


class FileDecryptionProperties:
    """How to find the keys of encrypted Parquet files.

    Args:
        footer_key: the footer key, when known.
        column_keys: {column: key} for columns encrypted with their own key (dotted leaf path
            or top-level name).
        key_retriever: ``f(key_metadata: bytes) -> bytes`` called (once per distinct key
            metadata) for the footer key and every column key not given explicitly; e.g. a
            :class:`CryptoFactory`'s KMS-backed retriever.
        aad_prefix: the file's expected AAD prefix; required for files that do not store
            theirs; a file that stores a different one is refused.
        check_footer_integrity: verify a plaintext footer's signature (needs the footer key).
        plaintext_files_allowed: also read files that are not encrypted at all (by default
            they are refused: a plaintext file where an encrypted one is expected may be a
            forgery). CryptoFactory's properties allow them, as pyarrow's and parquet-java's do.
    """

    def __init__(
        self,
        *,
        footer_key=None,
        column_keys=None,
        key_retriever=None,
        aad_prefix=None,
        check_footer_integrity: bool = True,
        plaintext_files_allowed: bool = False,
    ):
        self.footer_key = _key(footer_key, "footer_key", optional=True)
        self.column_keys = _column_map(column_keys, "column_keys", _key)
        if key_retriever is not None and not callable(key_retriever):
            raise TypeError("key_retriever must be callable(key_metadata: bytes) -> bytes")
        self.key_retriever = key_retriever
        self.aad_prefix = None if aad_prefix is None else _blob(aad_prefix, "aad_prefix")
        self.check_footer_integrity = bool(check_footer_integrity)
        self.plaintext_files_allowed = bool(plaintext_files_allowed)

    def open_encrypted_footer(self, tail, name: str = "<file>"):
        """Decode an encrypted (PARE) footer region: FileCryptoMetaData + footer frame.

        Returns ``(FileMetaData, FileDecryptor)``.
        """
        crypto, end = fmt.FileCryptoMetaData.decode_prefix(tail)
        decryptor = FileDecryptor(self, crypto.encryption_algorithm, crypto.key_metadata, name)
        return decryptor.decrypt_footer(tail[end:]), decryptor

    def open_plaintext_footer(self, metadata, footer, signature, name: str = "<file>"):
        """The FileDecryptor of a signed plaintext (PAR1) footer, its signature checked unless
        ``check_footer_integrity`` is off."""
        decryptor = FileDecryptor(
            self, metadata.encryption_algorithm, metadata.footer_signing_key_metadata, name
        )
        if self.check_footer_integrity:
            decryptor.verify_footer(footer, signature)
        return decryptor

    def __repr__(self) -> str:
        return (
            f"FileDecryptionProperties(footer_key={'set' if self.footer_key else None}, "
            f"column keys for {sorted(self.column_keys)}, key_retriever="
            f"{'set' if self.key_retriever else None}, check_footer_integrity="
            f"{self.check_footer_integrity}, keys=<redacted>)"
        )
