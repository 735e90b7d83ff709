"""KMS peers for the interop tests: pyarrow's KmsClient interface with parquet-java's
InMemoryKMS wrapping (AES-GCM, AAD = master key id, base64(nonce | ct | tag)), written here
from the format, independently of metaindex.crypto."""

from __future__ import annotations

import base64
import os

import pyarrow.parquet.encryption as pe
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# Random-looking (no byte patterns that ordinary column data could contain), AES-128/192/256.
MASTER_KEYS = {
    "footer_master": bytes.fromhex("8f9896d76b15df0249abd7a1c928efe8"),
    "col_master": bytes.fromhex("39512fc8997fedcb7d1ae28c53db2c94fed45981613c3ccd"),
    "other_master": bytes.fromhex(
        "83aa153a97a8689b4348ce1c4e0509685aa4b8ca9098f8df523ad354b0c2d42e"
    ),
}


class ArrowInMemoryKms(pe.KmsClient):
    """A pyarrow KmsClient (the kind a pyarrow user already has) with InMemoryKMS wrapping."""

    calls = {"wrap": 0, "unwrap": 0}

    def __init__(self, config=None):
        pe.KmsClient.__init__(self)

    def wrap_key(self, key_bytes, master_key_identifier):
        type(self).calls["wrap"] += 1
        nonce = os.urandom(12)
        sealed = AESGCM(MASTER_KEYS[master_key_identifier]).encrypt(
            nonce, key_bytes, master_key_identifier.encode()
        )
        return base64.b64encode(nonce + sealed).decode()

    def unwrap_key(self, wrapped_key, master_key_identifier):
        type(self).calls["unwrap"] += 1
        raw = base64.b64decode(wrapped_key)
        return AESGCM(MASTER_KEYS[master_key_identifier]).decrypt(
            raw[:12], raw[12:], master_key_identifier.encode()
        )


def pyarrow_factory() -> pe.CryptoFactory:
    return pe.CryptoFactory(lambda config: ArrowInMemoryKms(config))
