"""Envelope encryption driven by master key ids: pyarrow's / parquet-java's key tools.

:class:`CryptoFactory` turns an :class:`EncryptionConfiguration` (which master key protects the
footer and which protects each column) into :class:`FileEncryptionProperties` with fresh random
data keys (DEKs) whose wrapped form is stored in the file as PKMT1 key material; and gives
:class:`FileDecryptionProperties` whose key retriever unwraps them through the KMS. The files
are those pyarrow's ``CryptoFactory`` and parquet-java's ``PropertiesDrivenCryptoFactory`` (Spark)
write and read, given the same KMS and master keys.

Caches, as parquet-java keeps them, per key access token and for ``cache_lifetime``: KMS clients
per KMS instance; on write one key encryption key (KEK) per master key (double wrapping); on
read the unwrapped KEKs per KEK id, so a KMS is asked once per master key, not once per file.
"""

from __future__ import annotations

import base64
import binascii
import os
import threading
import time
from dataclasses import replace
from datetime import timedelta

from metaindex.crypto.key_material import KeyMaterial, unwrap_key_locally, wrap_key_locally
from metaindex.crypto.kms import KMS_INSTANCE_DEFAULT, KmsConnectionConfig
from metaindex.crypto.properties import (
    ALGORITHMS,
    FileDecryptionProperties,
    FileEncryptionProperties,
)
from metaindex.errors import KeyAccessError, MetaIndexError, UnsupportedFeatureError

__all__ = ["EncryptionConfiguration", "DecryptionConfiguration", "CryptoFactory"]

_KEK_LENGTH = 16  # parquet-java FileKeyWrapper.KEK_LENGTH
_KEK_ID_LENGTH = 16  # parquet-java FileKeyWrapper.KEK_ID_LENGTH
_DEFAULT_LIFETIME = timedelta(minutes=10)


def _seconds(lifetime) -> float:
    if isinstance(lifetime, timedelta):
        seconds = lifetime.total_seconds()
    elif isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool):
        seconds = float(lifetime)
    else:
        raise TypeError(f"cache_lifetime must be a timedelta or seconds, not {lifetime!r}")
    if seconds <= 0:
        raise ValueError("cache_lifetime must be positive")
    return seconds


def _column_keys(column_keys) -> dict[str, list[str]]:
    """{master key id: [columns]}, from a dict or parquet-java's "id:c1,c2;id2:c3" string."""
    if isinstance(column_keys, str):
        parsed: dict[str, list[str]] = {}
        for part in column_keys.split(";"):
            if not part.strip():
                continue
            master, sep, listed = part.partition(":")
            if not sep or not master.strip():
                raise ValueError(f"column_keys entry {part!r} is not 'master_key_id: col1, col2'")
            parsed[master.strip()] = [c.strip() for c in listed.split(",") if c.strip()]
        column_keys = parsed
    if not isinstance(column_keys, dict):
        raise TypeError(
            "column_keys must be {master key id: [column, ...]} or 'id: col1, col2; id2: col3'"
        )
    seen: dict[str, str] = {}
    out: dict[str, list[str]] = {}
    for master, listed in column_keys.items():
        cols = [listed] if isinstance(listed, str) else [str(c) for c in listed]
        for col in cols:
            if col in seen:
                raise ValueError(
                    f"column {col!r} is listed under master keys {seen[col]!r} and {master!r}"
                )
            seen[col] = master
        out[str(master)] = cols
    return out


class EncryptionConfiguration:
    """Which master keys protect what (pyarrow's ``EncryptionConfiguration``).

    Args:
        footer_key: id of the master key for the footer (and uniform encryption).
        column_keys: {master key id: [columns]} (or "id: c1, c2; id2: c3"): each listed column
            gets its own random data key wrapped with that master key; unlisted columns stay
            plaintext. Exactly one of ``column_keys`` / ``uniform_encryption``.
        uniform_encryption: encrypt every column with the footer key.
        encryption_algorithm: "AES_GCM_V1" or "AES_GCM_CTR_V1".
        plaintext_footer: signed plaintext footer instead of an encrypted one.
        double_wrapping: wrap data keys with a local KEK that the KMS wraps (one KMS call per
            master key per cache lifetime) instead of calling the KMS for every data key.
        cache_lifetime: how long KMS clients and KEKs are cached (timedelta or seconds).
        internal_key_material: key material inside the file (the only mode supported).
        data_key_length_bits: 128, 192 or 256.
    """

    def __init__(
        self,
        footer_key: str,
        column_keys=None,
        *,
        uniform_encryption: bool = False,
        encryption_algorithm: str = "AES_GCM_V1",
        plaintext_footer: bool = False,
        double_wrapping: bool = True,
        cache_lifetime=_DEFAULT_LIFETIME,
        internal_key_material: bool = True,
        data_key_length_bits: int = 128,
    ):
        if not isinstance(footer_key, str) or not footer_key:
            raise TypeError("footer_key is the master key id (a non-empty str)")
        if column_keys is not None and uniform_encryption:
            raise ValueError("set either column_keys or uniform_encryption, not both")
        if column_keys is None and not uniform_encryption:
            raise ValueError(
                "set column_keys (which columns to encrypt with which master key) "
                "or uniform_encryption=True"
            )
        if encryption_algorithm not in ALGORITHMS:
            raise ValueError(
                f"encryption_algorithm must be one of {ALGORITHMS}, not {encryption_algorithm!r}"
            )
        if data_key_length_bits not in (128, 192, 256):
            raise ValueError(
                f"data_key_length_bits must be 128, 192 or 256, not {data_key_length_bits!r}"
            )
        if not internal_key_material:
            raise UnsupportedFeatureError(
                "external key material is not supported; key material is stored inside the file"
            )
        self.footer_key = footer_key
        self.column_keys = {} if column_keys is None else _column_keys(column_keys)
        self.uniform_encryption = bool(uniform_encryption)
        self.encryption_algorithm = encryption_algorithm
        self.plaintext_footer = bool(plaintext_footer)
        self.double_wrapping = bool(double_wrapping)
        self.cache_lifetime = cache_lifetime
        self._lifetime = _seconds(cache_lifetime)
        self.internal_key_material = True
        self.data_key_length_bits = int(data_key_length_bits)


class DecryptionConfiguration:
    """Decryption settings (pyarrow's ``DecryptionConfiguration``): the cache lifetime."""

    def __init__(self, cache_lifetime=_DEFAULT_LIFETIME):
        self.cache_lifetime = cache_lifetime
        self._lifetime = _seconds(cache_lifetime)


class _TokenCache:
    """{token: {key: value}} whose per-token maps expire ``lifetime`` after creation."""

    def __init__(self):
        self._lock = threading.Lock()
        self._maps: dict[str, tuple[float, float, dict]] = {}

    def get_or_create(self, token: str, key, lifetime: float, create):
        now = time.monotonic()
        with self._lock:
            for t in [t for t, (born, life, _) in self._maps.items() if now - born > life]:
                del self._maps[t]
            entry = self._maps.get(token)
            if entry is None:
                entry = self._maps[token] = (now, lifetime, {})
            values = entry[2]
            if key in values:
                return values[key]
        value = create()  # outside the lock: may call the KMS
        with self._lock:
            return values.setdefault(key, value)

    def remove(self, token: str | None = None) -> None:
        with self._lock:
            if token is None:
                self._maps.clear()
            else:
                self._maps.pop(token, None)


def _config_fields(config) -> tuple[str, str, str]:
    """(instance id, url, token) of ours or pyarrow's KmsConnectionConfig."""
    return (
        getattr(config, "kms_instance_id", "") or "",
        getattr(config, "kms_instance_url", "") or "",
        getattr(config, "key_access_token", "") or "DEFAULT",
    )


class CryptoFactory:
    """Builds encryption / decryption properties from master key ids and a KMS.

    Args:
        kms_client_factory: ``f(kms_connection_config) -> KmsClient`` (pyarrow's signature; the
            config has ``kms_instance_id``, ``kms_instance_url``, ``key_access_token``,
            ``custom_kms_conf``).
    """

    def __init__(self, kms_client_factory):
        if not callable(kms_client_factory):
            raise TypeError("kms_client_factory must be callable(kms_connection_config)")
        self._factory = kms_client_factory
        self._clients = _TokenCache()
        self._write_keks = _TokenCache()
        self._read_keks = _TokenCache()

    def _client(self, config, instance_id: str, url: str, token: str, lifetime: float):
        def create():
            conn = KmsConnectionConfig(
                instance_id,
                kms_instance_url=url,
                key_access_token=token,
                custom_kms_conf=getattr(config, "custom_kms_conf", None),
            )
            try:
                client = self._factory(conn)
            except MetaIndexError:
                raise
            except Exception as exc:
                raise KeyAccessError(
                    f"kms_client_factory failed for KMS instance "
                    f"{instance_id!r}: {type(exc).__name__}: {exc}"
                ) from exc
            if not (
                callable(getattr(client, "wrap_key", None))
                and callable(getattr(client, "unwrap_key", None))
            ):
                raise TypeError(
                    "kms_client_factory must return an object with wrap_key and "
                    f"unwrap_key, not {type(client).__name__}"
                )
            return client

        return self._clients.get_or_create(token, instance_id, lifetime, create)

    # ------------------------------------------------------------------ writing

    def file_encryption_properties(
        self,
        kms_connection_config,
        encryption_config: EncryptionConfiguration,
    ) -> FileEncryptionProperties:
        """Fresh data keys for one file (or several), wrapped by the KMS as configured."""
        if not isinstance(encryption_config, EncryptionConfiguration):
            raise TypeError("encryption_config must be an EncryptionConfiguration")
        instance_id, url, token = _config_fields(kms_connection_config)
        instance_id = instance_id or KMS_INSTANCE_DEFAULT
        url = url or KMS_INSTANCE_DEFAULT
        lifetime = encryption_config._lifetime
        client = self._client(kms_connection_config, instance_id, url, token, lifetime)
        double = encryption_config.double_wrapping
        dek_bytes = encryption_config.data_key_length_bits // 8

        def key_metadata(dek: bytes, master_id: str, footer: bool) -> bytes:
            if double:
                kek, kek_id, wrapped_kek = self._write_keks.get_or_create(
                    token, master_id, lifetime, lambda: self._new_kek(client, master_id)
                )
                wrapped = wrap_key_locally(dek, kek, kek_id)
                material = KeyMaterial(
                    footer,
                    master_id,
                    wrapped,
                    True,
                    base64.b64encode(kek_id).decode("ascii"),
                    wrapped_kek,
                )
            else:
                material = KeyMaterial(footer, master_id, self._wrap(client, dek, master_id), False)
            if footer:
                material = replace(material, kms_instance_id=instance_id, kms_instance_url=url)
            return material.to_json()

        footer_dek = os.urandom(dek_bytes)
        footer_md = key_metadata(footer_dek, encryption_config.footer_key, True)
        column_keys, column_md = {}, {}
        for master_id, columns in encryption_config.column_keys.items():
            for column in columns:
                dek = os.urandom(dek_bytes)
                column_keys[column] = dek
                column_md[column] = key_metadata(dek, master_id, False)
        return FileEncryptionProperties(
            footer_dek,
            column_keys=column_keys,
            algorithm=encryption_config.encryption_algorithm,
            plaintext_footer=encryption_config.plaintext_footer,
            footer_key_metadata=footer_md,
            column_key_metadata=column_md,
        )

    @staticmethod
    def _wrap(client, key: bytes, master_id: str) -> str:
        try:
            wrapped = client.wrap_key(key, master_id)
        except MetaIndexError:
            raise
        except Exception as exc:
            raise KeyAccessError(
                f"KMS could not wrap a key with master key {master_id!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(wrapped, bytes):
            wrapped = wrapped.decode("utf-8")
        if not isinstance(wrapped, str):
            raise KeyAccessError(f"KMS wrap_key returned {type(wrapped).__name__}, not str")
        return wrapped

    def _new_kek(self, client, master_id: str):
        kek = os.urandom(_KEK_LENGTH)
        kek_id = os.urandom(_KEK_ID_LENGTH)
        return kek, kek_id, self._wrap(client, kek, master_id)

    # ------------------------------------------------------------------ reading

    def file_decryption_properties(
        self,
        kms_connection_config,
        decryption_config: DecryptionConfiguration | None = None,
    ) -> FileDecryptionProperties:
        """Properties whose key retriever unwraps the file's key material through the KMS."""
        config = decryption_config or DecryptionConfiguration()
        return FileDecryptionProperties(
            key_retriever=_KeyUnwrapper(self, kms_connection_config, config._lifetime),
            plaintext_files_allowed=True,
        )

    def remove_cache_entries_for_token(self, access_token: str) -> None:
        for cache in (self._clients, self._write_keks, self._read_keks):
            cache.remove(access_token)

    def remove_cache_entries_for_all_tokens(self) -> None:
        for cache in (self._clients, self._write_keks, self._read_keks):
            cache.remove()


class _KeyUnwrapper:
    """The key retriever of :meth:`CryptoFactory.file_decryption_properties`."""

    def __init__(self, factory: CryptoFactory, config, lifetime: float):
        self._factory = factory
        self._config = config
        self._lifetime = lifetime

    def __call__(self, key_metadata: bytes) -> bytes:
        material = KeyMaterial.parse(key_metadata)
        instance_id, url, token = _config_fields(self._config)
        # parquet-java: the connection config wins, else the footer key material's instance
        instance_id = instance_id or material.kms_instance_id or KMS_INSTANCE_DEFAULT
        url = url or material.kms_instance_url or KMS_INSTANCE_DEFAULT
        client = self._factory._client(self._config, instance_id, url, token, self._lifetime)
        master = material.master_key_id
        if not material.double_wrapping:
            return self._unwrap(client, material.wrapped_dek, master)
        kek_id_b64, wrapped_kek = material.kek_id, material.wrapped_kek
        assert kek_id_b64 is not None and wrapped_kek is not None, "parse requires both"
        try:
            kek_id = base64.b64decode(kek_id_b64, validate=True)
        except (binascii.Error, ValueError):
            raise KeyAccessError("key material's keyEncryptionKeyID is not base64") from None
        kek = self._factory._read_keks.get_or_create(
            token, kek_id_b64, self._lifetime, lambda: self._unwrap(client, wrapped_kek, master)
        )
        return unwrap_key_locally(material.wrapped_dek, kek, kek_id)

    @staticmethod
    def _unwrap(client, wrapped: str, master_id: str) -> bytes:
        try:
            key = client.unwrap_key(wrapped, master_id)
        except MetaIndexError:
            raise
        except Exception as exc:
            raise KeyAccessError(
                f"KMS could not unwrap a key of master key {master_id!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return bytes(key)
