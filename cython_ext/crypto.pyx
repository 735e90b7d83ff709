# cython: language_level=3
"""Parquet Modular Encryption: module framing, module AADs and footer signing.

Every encrypted Parquet "module" (a page, a page header, a column index, the footer...) is
stored as one frame:

* AES-GCM: ``length (4, LE) | nonce (12) | ciphertext | tag (16)``, length = 28 + plaintext;
* AES-CTR (pages under AES_GCM_CTR_V1): ``length | nonce | ciphertext``, length = 12 +
  plaintext, counter block IV = nonce || 00 00 00 01.

A module's AAD (GCM only) is ``file_aad + module type (1 byte) [+ row group ordinal + column
ordinal (int16 LE each) [+ page ordinal (int16 LE), data pages and their headers only]]``; the
footer's AAD is ``file_aad + 0x00``. ``file_aad`` is the AAD prefix followed by the file's
random unique id. A plaintext footer is signed with the nonce and tag of its GCM encryption
(28 bytes; the ciphertext is dropped).

AES itself comes from ``cryptography`` (OpenSSL): GCM through ``AESGCM.encrypt_into`` /
``decrypt_into`` straight into the frame's buffer, CTR through its Cipher API. Nonces come from
the OS CSPRNG (``os.urandom``), a fresh one per module.
"""

from cpython.buffer cimport PyBUF_WRITE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy

from buffer cimport load_u32, store_u32

import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from metaindex.errors import DecodeError, EncodeError, IntegrityError

FOOTER = 0
COLUMN_META_DATA = 1
DATA_PAGE = 2
DICTIONARY_PAGE = 3
DATA_PAGE_HEADER = 4
DICTIONARY_PAGE_HEADER = 5
COLUMN_INDEX = 6
OFFSET_INDEX = 7
BLOOM_FILTER_HEADER = 8
BLOOM_FILTER_BITSET = 9

MODULE_NAMES = ("footer", "column metadata", "data page", "dictionary page", "data page header",
                "dictionary page header", "column index", "offset index", "bloom filter header",
                "bloom filter bitset")

cdef enum:
    NONCE = 12
    TAG = 16
    LEN = 4
    MAX_ORDINAL = 32767

NONCE_LENGTH = NONCE
TAG_LENGTH = TAG
GCM_OVERHEAD = LEN + NONCE + TAG
CTR_OVERHEAD = LEN + NONCE
SIGNATURE_LENGTH = NONCE + TAG
MAX_MODULE_ORDINAL = MAX_ORDINAL
AAD_FILE_UNIQUE_LENGTH = 8  # what parquet-java and parquet-cpp generate
_CTR_COUNTER = b"\x00\x00\x00\x01"


cdef bytes _new_bytes(Py_ssize_t n):
    """An uninitialised bytes object for the caller to fill before anyone else sees it."""
    return PyBytes_FromStringAndSize(NULL, n)


cdef memoryview _writable(bytes fresh, Py_ssize_t start):
    """A writable view of a just-created bytes object's storage from ``start``.

    CPython builds bytes this way (allocate, then fill); the view lets ``cryptography`` write
    the output straight into the bytes we return, so a decrypted page needs no copy to become
    immutable bytes. ``fresh`` must not have escaped yet, and must outlive the view's use.
    """
    return PyMemoryView_FromMemory(PyBytes_AS_STRING(fresh) + start, len(fresh) - start,
                                   PyBUF_WRITE)


cdef str _where(int module_type, int row_group, int column, int page):
    if module_type == FOOTER:
        return MODULE_NAMES[module_type]
    text = f"{MODULE_NAMES[module_type]} (row group {row_group}, column {column}"
    if module_type == DATA_PAGE or module_type == DATA_PAGE_HEADER:
        text += f", page {page}"
    return text + ")"


cdef bint _has_page(int module_type):
    return module_type == DATA_PAGE or module_type == DATA_PAGE_HEADER


cdef bytes _aad(bytes file_aad, int module_type, int row_group, int column, int page,
                bint decoding):
    """The module AAD; an ordinal outside int16 raises EncodeError (DecodeError when reading)."""
    cdef uint8_t suffix[7]
    cdef int n = 1, i
    cdef int ordinals[3]
    if module_type < FOOTER or module_type > BLOOM_FILTER_BITSET:
        raise ValueError(f"unknown module type {module_type} (expected 0..9)")
    suffix[0] = <uint8_t>module_type
    if module_type != FOOTER:
        ordinals[0] = row_group
        ordinals[1] = column
        ordinals[2] = page
        for i in range(3 if _has_page(module_type) else 2):
            if ordinals[i] < 0 or ordinals[i] > MAX_ORDINAL:
                name = ("row group", "column", "page")[i]
                err = DecodeError if decoding else EncodeError
                raise err(f"{MODULE_NAMES[module_type]}: {name} ordinal {ordinals[i]} is outside "
                          f"0..{MAX_ORDINAL}; Parquet encryption addresses modules with int16 "
                          f"ordinals, so an encrypted file holds at most {MAX_ORDINAL + 1} row "
                          f"groups, columns, and pages per column chunk")
            suffix[n] = <uint8_t>(ordinals[i] & 0xFF)
            suffix[n + 1] = <uint8_t>(ordinals[i] >> 8)
            n += 2
    return file_aad + (<char*>suffix)[:n]


def module_aad(file_aad, int module_type, int row_group=-1, int column=-1, int page=-1) -> bytes:
    """The AAD of one module: ``file_aad`` + type byte + int16 LE ordinals.

    Args:
        file_aad: the AAD prefix followed by the file's unique id.
        module_type: 0 (footer) .. 9 (bloom filter bitset).
        row_group, column: ordinals, required (0..32767) for every module but the footer.
        page: the page ordinal within the column chunk, required for data pages and data page
            headers only (ignored otherwise).

    Raises:
        EncodeError: an ordinal outside 0..32767.
        ValueError: an unknown module type.
    """
    return _aad(bytes(file_aad), module_type, row_group, column, page, False)


cdef class ModuleCipher:
    """Encrypts and decrypts the modules of one file under one key.

    Args:
        key: the AES key, 16, 24 or 32 bytes.
        file_aad: AAD prefix + file unique id.
        ctr_pages: True for AES_GCM_CTR_V1: data and dictionary pages use AES-CTR framing, every
            other module AES-GCM.
    """

    cdef object _gcm
    cdef object _aes
    cdef bytes _file_aad
    cdef bint _ctr_pages

    def __init__(self, key, file_aad, bint ctr_pages=False):
        key = bytes(key)
        if len(key) not in (16, 24, 32):
            raise EncodeError(f"an AES key is 16, 24 or 32 bytes, not {len(key)}")
        self._gcm = AESGCM(key)
        self._aes = algorithms.AES(key)
        self._file_aad = bytes(file_aad)
        self._ctr_pages = ctr_pages

    @property
    def file_aad(self) -> bytes:
        return self._file_aad

    cdef bint _is_ctr(self, int module_type):
        return self._ctr_pages and (module_type == DATA_PAGE or module_type == DICTIONARY_PAGE)

    def encrypt(self, int module_type, data, int row_group=-1, int column=-1,
                int page=-1) -> bytes:
        """Encrypt one module into its frame (length field included).

        Args:
            module_type: 0..9 (see the module constants).
            data: the module's plaintext, any contiguous buffer.
            row_group, column, page: the module's ordinals (see :func:`module_aad`).

        Returns:
            The frame, ready to write.

        Raises:
            EncodeError: an ordinal outside 0..32767, or a module of 2 GiB or more.
        """
        cdef bytes aad = _aad(self._file_aad, module_type, row_group, column, page, False)
        cdef const uint8_t[::1] plain = data
        cdef Py_ssize_t n = plain.shape[0]
        cdef bint ctr = self._is_ctr(module_type)
        cdef Py_ssize_t total = LEN + NONCE + n + (0 if ctr else TAG)
        if total - LEN > 0x7FFFFFFF:
            raise EncodeError(f"{MODULE_NAMES[module_type]} of {n} bytes is too large to encrypt "
                              "(a module length is a signed 32-bit int)")
        nonce = os.urandom(NONCE)
        cdef bytes out = _new_bytes(total)
        cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
        store_u32(p, <uint32_t>(total - LEN))
        memcpy(p + LEN, <const char*>nonce, NONCE)
        body = _writable(out, LEN + NONCE)
        if ctr:
            encryptor = Cipher(self._aes, modes.CTR(nonce + _CTR_COUNTER)).encryptor()
            encryptor.update_into(data, body)
            encryptor.finalize()
        else:
            self._gcm.encrypt_into(nonce, data, aad, body)
        return out

    def decrypt(self, int module_type, data, int row_group=-1, int column=-1, int page=-1):
        """Decrypt the module whose frame starts at ``data[0]``.

        Args:
            module_type, row_group, column, page: what the module must be (its AAD).
            data: a contiguous buffer starting at the frame's length field; it may hold more
                bytes after the frame.

        Returns:
            ``(plaintext, consumed)``: the plaintext bytes, and the frame's size.

        Raises:
            DecodeError: the buffer is shorter than its length field says, or the length is
                smaller than a frame's overhead.
            IntegrityError: GCM verification failed (tampered, swapped, or wrong key).
        """
        cdef bytes aad = _aad(self._file_aad, module_type, row_group, column, page, True)
        cdef const uint8_t[::1] raw = data
        cdef Py_ssize_t size = raw.shape[0]
        cdef bint ctr = self._is_ctr(module_type)
        cdef Py_ssize_t overhead = NONCE + (0 if ctr else TAG)
        cdef Py_ssize_t length
        what = _where(module_type, row_group, column, page)
        if size < LEN:
            raise DecodeError(f"{what}: truncated before its length field", offset=0,
                              needed=LEN, remaining=size)
        length = load_u32(&raw[0])
        if length < overhead:
            raise DecodeError(f"{what}: frame length {length} is shorter than the "
                              f"{overhead}-byte nonce{'' if ctr else ' and tag'}", offset=0)
        if length > size - LEN:
            raise DecodeError(f"{what}: frame length {length} runs past the available bytes",
                              offset=LEN, needed=length, remaining=size - LEN)
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        nonce = bytes(view[LEN:LEN + NONCE])
        cdef bytes out = _new_bytes(length - overhead)
        target = _writable(out, 0)
        if ctr:
            decryptor = Cipher(self._aes, modes.CTR(nonce + _CTR_COUNTER)).decryptor()
            decryptor.update_into(view[LEN + NONCE:LEN + length], target)
            decryptor.finalize()
        else:
            try:
                self._gcm.decrypt_into(nonce, view[LEN + NONCE:LEN + length], aad, target)
            except InvalidTag:
                raise IntegrityError(
                    f"{what} failed AES-GCM verification: the module was tampered with, moved "
                    "or swapped from another file, or the key or AAD prefix is wrong") from None
        return out, LEN + length

    def sign_footer(self, footer) -> bytes:
        """The 28-byte signature (nonce + GCM tag) of a plaintext footer."""
        nonce = os.urandom(NONCE)
        return nonce + self._footer_tag(nonce, footer)

    def verify_footer(self, footer, signature) -> None:
        """Check a plaintext footer against its 28-byte signature.

        Raises:
            DecodeError: the signature is not 28 bytes.
            IntegrityError: it does not verify (tampered footer, wrong footer key or AAD).
        """
        signature = bytes(signature)
        if len(signature) != NONCE + TAG:
            raise DecodeError(f"footer signature is {len(signature)} bytes, not {NONCE + TAG}")
        if not hmac.compare_digest(self._footer_tag(signature[:NONCE], footer), signature[NONCE:]):
            raise IntegrityError("plaintext footer signature does not verify: the footer was "
                                 "tampered with, or the footer key or AAD prefix is wrong")

    cdef bytes _footer_tag(self, bytes nonce, footer):
        cdef const uint8_t[::1] plain = footer
        cdef bytes out = _new_bytes(plain.shape[0] + TAG)
        self._gcm.encrypt_into(nonce, footer, _aad(self._file_aad, FOOTER, -1, -1, -1, False),
                               _writable(out, 0))
        return out[plain.shape[0]:]
