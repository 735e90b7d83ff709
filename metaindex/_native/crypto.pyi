"""Parquet Modular Encryption module framing, AADs and footer signing (cython_ext/crypto.pyx).

GCM frame: ``length (4, LE) | nonce (12) | ciphertext | tag (16)``; CTR frame (pages under
AES_GCM_CTR_V1): ``length | nonce | ciphertext``, IV = nonce || 00000001. AES comes from
``cryptography``; nonces from ``os.urandom``.
"""

from typing_extensions import Buffer, disjoint_base

FOOTER: int
COLUMN_META_DATA: int
DATA_PAGE: int
DICTIONARY_PAGE: int
DATA_PAGE_HEADER: int
DICTIONARY_PAGE_HEADER: int
COLUMN_INDEX: int
OFFSET_INDEX: int
BLOOM_FILTER_HEADER: int
BLOOM_FILTER_BITSET: int
MODULE_NAMES: tuple[str, ...]
NONCE_LENGTH: int
TAG_LENGTH: int
GCM_OVERHEAD: int
CTR_OVERHEAD: int
SIGNATURE_LENGTH: int
MAX_MODULE_ORDINAL: int
AAD_FILE_UNIQUE_LENGTH: int

def module_aad(
    file_aad: Buffer, module_type: int, row_group: int = -1, column: int = -1, page: int = -1
) -> bytes:
    """file_aad + type byte [+ row group, column (+ page) as int16 LE]; EncodeError past 32767."""

@disjoint_base
class ModuleCipher:
    """Encrypts/decrypts one file's modules under one key (CTR pages when ``ctr_pages``)."""

    def __init__(self, key: Buffer, file_aad: Buffer, ctr_pages: bool = False) -> None: ...
    @property
    def file_aad(self) -> bytes: ...
    def encrypt(
        self, module_type: int, data: Buffer, row_group: int = -1, column: int = -1, page: int = -1
    ) -> bytes:
        """The module's whole frame (length field included)."""
    def decrypt(
        self, module_type: int, data: Buffer, row_group: int = -1, column: int = -1, page: int = -1
    ) -> tuple[bytes, int]:
        """``(plaintext, frame size)`` of the frame at ``data[0]``; DecodeError / IntegrityError."""
    def sign_footer(self, footer: Buffer) -> bytes:
        """28-byte nonce + tag signature of a plaintext footer."""
    def verify_footer(self, footer: Buffer, signature: Buffer) -> None:
        """IntegrityError unless ``signature`` signs ``footer``."""
