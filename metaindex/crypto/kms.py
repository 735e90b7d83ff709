"""KMS clients: the interface (pyarrow's method names), an in-memory KMS and a key-file KMS.

A KMS client wraps and unwraps keys with master keys it holds and the caller never sees. Any
object with ``wrap_key(key_bytes, master_key_identifier) -> str`` and
``unwrap_key(wrapped_key, master_key_identifier) -> bytes`` works — a
``pyarrow.parquet.encryption.KmsClient`` subclass drops in unchanged.

:class:`InMemoryKms` wraps like parquet-java's ``InMemoryKMS`` sample (AES-GCM, AAD = the master
key id, ``base64(nonce | ciphertext | tag)``), so files written with it read in Spark with that
KMS and the same master keys, and back. :class:`LocalFileKms` is the same with master keys kept
in a file only its owner may read.
"""

from __future__ import annotations

import abc
import base64
import binascii
import os
import stat

from metaindex.crypto.key_material import unwrap_key_locally, wrap_key_locally
from metaindex.errors import KeyAccessError

__all__ = ["KmsClient", "KmsConnectionConfig", "InMemoryKms", "LocalFileKms"]

KEY_ACCESS_TOKEN_DEFAULT = "DEFAULT"
KMS_INSTANCE_DEFAULT = "DEFAULT"


class KmsClient(abc.ABC):
    """A Key Management Service client (pyarrow's ``KmsClient`` interface)."""

    @abc.abstractmethod
    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Wrap ``key_bytes`` with the master key; returns a string stored in the file."""

    @abc.abstractmethod
    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Inverse of :meth:`wrap_key`."""


class KmsConnectionConfig:
    """How to reach the KMS; handed to the ``kms_client_factory`` (pyarrow's fields).

    Args:
        kms_instance_id: the KMS instance ("" = take it from the file's key material on read,
            "DEFAULT" on write).
        kms_instance_url: the KMS URL (same defaults).
        key_access_token: the caller's token; caches are kept per token.
        custom_kms_conf: free-form {str: str} for the client.
    """

    def __init__(
        self,
        kms_instance_id: str = "",
        *,
        kms_instance_url: str = "",
        key_access_token: str = KEY_ACCESS_TOKEN_DEFAULT,
        custom_kms_conf=None,
    ):
        self.kms_instance_id = kms_instance_id or ""
        self.kms_instance_url = kms_instance_url or ""
        self.key_access_token = key_access_token or KEY_ACCESS_TOKEN_DEFAULT
        self.custom_kms_conf = dict(custom_kms_conf or {})

    def refresh_key_access_token(self, value: str) -> None:
        self.key_access_token = value

    def __repr__(self) -> str:  # the token is a credential: never printed
        return (
            f"KmsConnectionConfig(kms_instance_id={self.kms_instance_id!r}, "
            f"kms_instance_url={self.kms_instance_url!r}, key_access_token=<redacted>)"
        )


def _decode_master_key(key_id: str, key) -> bytes:
    if isinstance(key, str):
        try:
            key = base64.b64decode(key.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"master key {key_id!r} is not valid base64") from None
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"master key {key_id!r} must be bytes or base64 str, not {type(key).__name__}"
        )
    key = bytes(key)
    if len(key) not in (16, 24, 32):
        raise ValueError(f"master key {key_id!r} is {len(key)} bytes; AES keys are 16, 24 or 32")
    return key


def parse_key_list(text: str) -> dict[str, bytes]:
    """``"id1: base64, id2: base64"`` (parquet-java's ``encryption.key.list``) or one per line."""
    keys = {}
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item or item.startswith("#"):
            continue
        key_id, sep, key = item.partition(":")
        if not sep or not key_id.strip():
            raise ValueError(f"key list entry {key_id.strip()!r} is not 'id: base64-key'")
        keys[key_id.strip()] = _decode_master_key(key_id.strip(), key)
    return keys


class InMemoryKms(KmsClient):
    """Master keys held in memory; wraps exactly like parquet-java's ``InMemoryKMS``.

    Args:
        master_keys: {master key id: key (bytes, or base64 str)}; AES-128/192/256.
    """

    def __init__(self, master_keys: dict):
        if not isinstance(master_keys, dict) or not master_keys:
            raise TypeError("master_keys must be a non-empty dict of id -> key")
        self._keys = {str(k): _decode_master_key(str(k), v) for k, v in master_keys.items()}

    @classmethod
    def from_key_list(cls, text: str) -> InMemoryKms:
        """From parquet-java's ``encryption.key.list`` format: ``"k1: base64, k2: base64"``."""
        return cls(parse_key_list(text))

    def _master(self, master_key_identifier: str) -> bytes:
        try:
            return self._keys[master_key_identifier]
        except KeyError:
            raise KeyAccessError(f"KMS has no master key {master_key_identifier!r}") from None

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        return wrap_key_locally(
            key_bytes, self._master(master_key_identifier), master_key_identifier.encode("utf-8")
        )

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        try:
            return unwrap_key_locally(
                wrapped_key,
                self._master(master_key_identifier),
                master_key_identifier.encode("utf-8"),
            )
        except KeyAccessError as exc:
            raise KeyAccessError(f"master key {master_key_identifier!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(master key ids={sorted(self._keys)})"


class LocalFileKms(InMemoryKms):
    """Master keys in a local file, for a single machine: ``id: base64-key`` per line.

    The file must be a regular file owned by the current user with no permission bits for group
    or others (``chmod 600``); anything else is refused, as ssh refuses a readable private key.

    Args:
        path: the key file.

    Raises:
        KeyAccessError: the file is missing, not a regular file, owned by someone else, or
            readable/writable by group or others.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise KeyAccessError(f"cannot open KMS key file {self.path}: {exc.strerror}") from None
        owned = True  # closed here unless fdopen took it over
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise KeyAccessError(f"KMS key file {self.path} is not a regular file")
            if hasattr(os, "getuid") and info.st_uid != os.getuid():
                raise KeyAccessError(
                    f"KMS key file {self.path} is owned by uid {info.st_uid}, "
                    "not by the current user"
                )
            if info.st_mode & 0o077:
                raise KeyAccessError(
                    f"KMS key file {self.path} has mode {stat.S_IMODE(info.st_mode):04o}; master "
                    f"keys must be readable by their owner only (chmod 600 {self.path})"
                )
            with os.fdopen(fd, "r", encoding="utf-8") as fh:
                owned = False
                text = fh.read()
        finally:
            if owned:
                os.close(fd)
        try:
            keys = parse_key_list(text)
        except (ValueError, TypeError) as exc:
            raise KeyAccessError(f"KMS key file {self.path}: {exc}") from None
        if not keys:
            raise KeyAccessError(f"KMS key file {self.path} holds no keys")
        super().__init__(keys)

    @classmethod
    def create(cls, path, master_key_ids, key_bits: int = 256) -> LocalFileKms:
        """Write a new key file (mode 600, never overwriting) with fresh random master keys."""
        if key_bits not in (128, 192, 256):
            raise ValueError(f"key_bits must be 128, 192 or 256, not {key_bits}")
        ids = [str(i) for i in master_key_ids]
        bad = [i for i in ids if not i or any(c in i for c in ":,\n#") or i != i.strip()]
        if bad or not ids:
            raise ValueError(
                f"master key ids must be non-empty, without ':', ',', '#' or "
                f"newlines, and without surrounding spaces: {bad or ids}"
            )
        lines = "".join(
            f"{i}: {base64.b64encode(os.urandom(key_bits // 8)).decode()}\n" for i in ids
        )
        fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(lines)
        return cls(path)

    def __repr__(self) -> str:
        return f"LocalFileKms({self.path!r}, master key ids={sorted(self._keys)})"
