"""The log key of an encrypted store: what the log must say about data files, without saying it
in clear (specs/metadata-store.md, "Version 8").

An encrypted store's parts hold the file names and index values under PME. Its log still has to
say which objects died in which part, which files could not be read and why, and free-form
commit details. With a log key it says so without names or values:

* **names become tokens**: ``"~"`` + 32 hex digits of keyed BLAKE2b-128 of the name's UTF-8
  bytes. Equal names give equal tokens, so replay and conflict detection compare tokens as they
  compared names; nobody without the key can tell which name a token stands for, or test a
  guess.
* **payloads are sealed**: AES-256-GCM of their canonical JSON, ``base64(nonce | ciphertext |
  tag)``, with the table id and the payload's purpose as AAD.

The log key is a random data key from the store's KMS, made and wrapped like a PME footer key
(``KeyAccess.encryption_properties`` with the footer master key label: double wrapping by
default), and recorded in the log as its key material only (``log_key``: master key id, wrapped
key). The token and seal keys are derived from it with HMAC-SHA256, one per purpose.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import threading
import weakref

import pyarrow as pa

from metaindex.errors import DecodeError, IntegrityError, KeyAccessError

__all__ = ["LogCipher", "TOKEN_PREFIX", "new_log_key", "cipher_for", "is_token"]

TOKEN_PREFIX = "~"
_TOKEN_LENGTH = 1 + 32
_NONCE = 12
_lock = threading.Lock()
_ciphers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def is_token(text: str) -> bool:
    """Whether a string has the form of a name token (``~`` + 32 hex digits)."""
    return (
        len(text) == _TOKEN_LENGTH
        and text[0] == TOKEN_PREFIX
        and all(c in "0123456789abcdef" for c in text[1:])
    )


class LogCipher:
    """Tokens and seals under one log key, for one table.

    Args:
        key: the log key (the unwrapped data key).
        table_id: the table's id, bound into every seal (a sealed payload of another table
            does not open here).
    """

    def __init__(self, key: bytes, table_id: str):
        self._names = hmac.new(bytes(key), b"metaindex/log/names", hashlib.sha256).digest()
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # only with a log key

        self._aead = AESGCM(hmac.new(bytes(key), b"metaindex/log/seal", hashlib.sha256).digest())
        self._table_id = table_id

    def token(self, name: str) -> str:
        """The token of one name."""
        return (
            TOKEN_PREFIX
            + hashlib.blake2b(name.encode("utf-8"), key=self._names, digest_size=16).hexdigest()
        )

    def tokens(self, names) -> pa.Array:
        """The tokens of a string array (or any iterable of str), as a string array."""
        if isinstance(names, (pa.Array, pa.ChunkedArray)):
            names = names.to_pylist()
        return pa.array([self.token(n) for n in names], pa.string())

    def identities(self, names) -> set:
        """Every form a name can take in the log: itself and its token (entries written
        before the store had a log key, and deaths in parts the log lists, name objects in
        clear)."""
        names = list(names)
        return {*names, *(self.token(n) for n in names)}

    def _aad(self, purpose: str) -> bytes:
        return f"metaindex/{self._table_id}/{purpose}".encode()

    def seal(self, value, purpose: str) -> str:
        """``value`` (JSON-able) sealed for ``purpose``."""
        nonce = os.urandom(_NONCE)
        body = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
        return base64.b64encode(nonce + self._aead.encrypt(nonce, body, self._aad(purpose))).decode(
            "ascii"
        )

    def open(self, sealed: str, purpose: str, where: str):
        """What :meth:`seal` sealed.

        Raises:
            DecodeError: not a sealed payload.
            IntegrityError: the tag does not verify (tampered, another table's, another
                purpose's, or another log key's).
        """
        try:
            raw = base64.b64decode(sealed, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise DecodeError(f"{where}: a sealed {purpose} is not base64") from None
        if len(raw) < _NONCE + 16:
            raise DecodeError(
                f"{where}: a sealed {purpose} is {len(raw)} bytes, shorter than nonce and tag"
            )
        from cryptography.exceptions import InvalidTag

        try:
            body = self._aead.decrypt(raw[:_NONCE], raw[_NONCE:], self._aad(purpose))
        except InvalidTag:
            raise IntegrityError(
                f"{where}: a sealed {purpose} does not verify under the "
                "store's log key (tampered, or copied from elsewhere)"
            ) from None
        try:
            return json.loads(body)
        except ValueError:
            raise DecodeError(f"{where}: a sealed {purpose} is not JSON") from None


def new_log_key(key_access, labels) -> tuple:
    """``(key, key material)``: a fresh log key from the store's KMS, wrapped with the footer
    master key as a PME footer key is (the material is parquet-java's key material JSON:
    labels and wrapped keys only)."""
    if key_access is None:
        raise KeyAccessError(
            "committing to an encrypted store needs its keys (the log's names "
            "are tokens under the store's log key): open the store with "
            "key_access=KeyAccess(kms_client_factory, ...)"
        )
    props = key_access.encryption_properties(labels, {})
    return bytes(props.footer_key), bytes(props.footer_key_metadata).decode("utf-8")


def cipher_for(material: str, key_access, table_id: str, where: str) -> LogCipher:
    """The :class:`LogCipher` of a log key's material (unwrapped through ``key_access``'s KMS
    once per key access).

    Raises:
        KeyAccessError: no key access, or the KMS cannot unwrap the key.
    """
    if key_access is None:
        raise KeyAccessError(
            f"{where}: the store is encrypted: open it with "
            "key_access=KeyAccess(kms_client_factory, ...)"
        )
    with _lock:
        mine = _ciphers.get(key_access)
        found = None if mine is None else mine.get((material, table_id))
    if found is not None:
        return found
    retriever = key_access.decryption_properties().key_retriever
    try:
        key = retriever(material.encode("utf-8"))
    except KeyAccessError as exc:
        raise KeyAccessError(f"{where}: the store's log key: {exc}") from None
    except DecodeError as exc:
        raise DecodeError(f"{where}: the store's log key material: {exc}") from None
    cipher = LogCipher(key, table_id)
    with _lock:
        _ciphers.setdefault(key_access, {})[(material, table_id)] = cipher
    return cipher
