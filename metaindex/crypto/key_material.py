"""Key material: how a data key travels inside a Parquet file, wrapped, next to its master key id.

The format is parquet-java's ``keytools`` "PKMT1" key material, stored internally (the key
metadata of the footer and of each column *is* the key material JSON), which pyarrow and Spark
read and write too:

* single wrapping: the data encryption key (DEK) is wrapped by the KMS with the master key;
* double wrapping: the DEK is wrapped locally (AES-GCM, AAD = the raw key-encryption-key id)
  with a random key encryption key (KEK), and the KEK is wrapped by the KMS with the master key.

Locally wrapped keys are ``base64(nonce (12) | ciphertext | tag (16))`` — parquet-java's
``KeyToolkit.encryptKeyLocally``. The JSON is written with parquet-java's field order (that of
a ``java.util.HashMap`` of these fields, which Jackson serialises in iteration order), so our
key metadata is byte-for-byte what parquet-java would write for the same keys.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from metaindex.errors import (
    DecodeError,
    KeyAccessError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
)

__all__ = ["KEY_MATERIAL_TYPE", "KeyMaterial", "wrap_key_locally", "unwrap_key_locally"]

KEY_MATERIAL_TYPE = "PKMT1"
# java.util.HashMap(10) iteration order of parquet-java's KeyMaterial fields (buckets of
# String.hashCode); tests/reference/crypto.java_hashmap_order derives it and the Spark interop
# test compares with parquet-java's own output.
_JAVA_FIELD_ORDER = (
    "kmsInstanceURL",
    "masterKeyID",
    "wrappedDEK",
    "keyEncryptionKeyID",
    "doubleWrapping",
    "internalStorage",
    "isFooterKey",
    "keyMaterialType",
    "kmsInstanceID",
    "wrappedKEK",
)
_NONCE = 12


def wrap_key_locally(key: bytes, wrapping_key: bytes, aad: bytes) -> str:
    """``base64(nonce | AES-GCM(key) | tag)`` under ``wrapping_key`` with ``aad``."""
    nonce = os.urandom(_NONCE)
    return base64.b64encode(
        nonce + AESGCM(bytes(wrapping_key)).encrypt(nonce, bytes(key), aad)
    ).decode("ascii")


def unwrap_key_locally(wrapped: str, wrapping_key: bytes, aad: bytes) -> bytes:
    """Inverse of :func:`wrap_key_locally`.

    Raises:
        KeyAccessError: not base64, too short, or the tag does not verify (wrong wrapping key,
            wrong AAD, or tampered material).
    """
    try:
        raw = base64.b64decode(wrapped, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise KeyAccessError(f"wrapped key is not base64: {exc}") from None
    if len(raw) < _NONCE + 16:
        raise KeyAccessError(f"wrapped key is {len(raw)} bytes, shorter than nonce + tag")
    try:
        return AESGCM(bytes(wrapping_key)).decrypt(raw[:_NONCE], raw[_NONCE:], aad)
    except InvalidTag:
        raise KeyAccessError(
            "wrapped key does not unwrap: wrong master key or key encryption "
            "key, or tampered key material"
        ) from None


def _flag(value, name: str) -> bool:
    # parquet-java 1.12 wrote "true"/"false" strings, newer versions JSON booleans
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value is None:
        return False
    raise DecodeError(f"key material field {name!r} is {value!r}, not a boolean")


@dataclass(frozen=True)
class KeyMaterial:
    """One key's material: master key id, wrapped DEK, and (double wrapping) KEK id + wrapped KEK.

    Attributes hold wrapped keys and labels only, never a key in clear.
    """

    is_footer_key: bool
    master_key_id: str
    wrapped_dek: str
    double_wrapping: bool
    kek_id: str | None = None
    wrapped_kek: str | None = None
    kms_instance_id: str | None = None
    kms_instance_url: str | None = None

    def to_json(self) -> bytes:
        """Internally stored key material, serialised as parquet-java does (UTF-8 JSON)."""
        fields = {
            "keyMaterialType": KEY_MATERIAL_TYPE,
            "internalStorage": True,
            "isFooterKey": self.is_footer_key,
        }
        if self.is_footer_key:
            fields["kmsInstanceID"] = self.kms_instance_id
            fields["kmsInstanceURL"] = self.kms_instance_url
        fields["masterKeyID"] = self.master_key_id
        fields["wrappedDEK"] = self.wrapped_dek
        fields["doubleWrapping"] = self.double_wrapping
        if self.double_wrapping:
            fields["keyEncryptionKeyID"] = self.kek_id
            fields["wrappedKEK"] = self.wrapped_kek
        ordered = {k: fields[k] for k in _JAVA_FIELD_ORDER if k in fields}
        return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def parse(cls, key_metadata) -> KeyMaterial:
        """Parse a column's or the footer's key metadata (internal PKMT1 key material).

        Raises:
            DecodeError: not JSON, not an object, or a required field is missing or mistyped.
            UnsupportedVersionError: a key material type other than PKMT1.
            UnsupportedFeatureError: key material stored outside the file (external storage).
        """
        try:
            doc = json.loads(bytes(key_metadata).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise DecodeError(f"key metadata is not key material JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise DecodeError("key metadata is JSON but not an object")
        kind = doc.get("keyMaterialType")
        if kind != KEY_MATERIAL_TYPE:
            raise UnsupportedVersionError(
                f"key material type {kind!r} is not {KEY_MATERIAL_TYPE!r}"
                "; upgrade metaindex to read keys of this kind"
            )
        if not _flag(doc.get("internalStorage"), "internalStorage"):
            raise UnsupportedFeatureError(
                "key material is stored outside the Parquet file "
                "(external key material); only internal storage is "
                "supported"
            )

        def text(name, required=True):
            value = doc.get(name)
            if value is None and not required:
                return None
            if not isinstance(value, str):
                raise DecodeError(f"key material field {name!r} is missing or not a string")
            return value

        footer = _flag(doc.get("isFooterKey"), "isFooterKey")
        double = _flag(doc.get("doubleWrapping"), "doubleWrapping")
        return cls(
            is_footer_key=footer,
            master_key_id=text("masterKeyID"),
            wrapped_dek=text("wrappedDEK"),
            double_wrapping=double,
            kek_id=text("keyEncryptionKeyID") if double else None,
            wrapped_kek=text("wrappedKEK") if double else None,
            kms_instance_id=text("kmsInstanceID", False) if footer else None,
            kms_instance_url=text("kmsInstanceURL", False) if footer else None,
        )
