"""One file's encryption state, as the Parquet writer and reader use it.

The Parquet layer never imports this module: it receives these objects from
``FileEncryptionProperties.file_encryptor`` / ``FileDecryptionProperties.open_*_footer`` and
calls a handful of methods (``chunk``, ``page``, ``page_header``, ``module``, ``footer``...).

Writing (:class:`FileEncryptor`): a fresh 8-byte file unique id per file; file AAD = AAD prefix
+ unique id; one :class:`ChunkEncryptor` per column chunk numbers the data pages for their AADs.
The footer is encrypted (``PARE``: FileCryptoMetaData, then the footer module) or left plaintext
and signed (``PAR1``: footer, 28-byte signature). A column's metadata is encrypted under its key
into ``encrypted_column_metadata`` whenever the footer does not already protect it with the same
key; in plaintext-footer mode the readable copy loses its statistics, as parquet-cpp does.

Reading (:class:`FileDecryptor`): the algorithm and AAD come from the file, checked against what
the caller supplied; keys come from the explicit keys or the key retriever (once per distinct
key metadata); every failure names the module that failed.
"""

from __future__ import annotations

import os
from typing import Any

from metaindex._native import crypto as _k
from metaindex.errors import (
    DecodeError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    SchemaError,
)
from metaindex.parquet import format as fmt

__all__ = ["FileEncryptor", "ChunkEncryptor", "FileDecryptor", "ChunkDecryptor", "algorithm_struct"]

_DICTIONARY_PAGE = 2  # PageType
_MODULES = {
    "column_index": _k.COLUMN_INDEX,
    "offset_index": _k.OFFSET_INDEX,
    "bloom_filter_header": _k.BLOOM_FILTER_HEADER,
    "bloom_filter_bitset": _k.BLOOM_FILTER_BITSET,
}
_THRIFT_MODULES: dict[str, type[fmt.Struct]] = {
    "column_index": fmt.ColumnIndex,
    "offset_index": fmt.OffsetIndex,
    "bloom_filter_header": fmt.BloomFilterHeader,
}


def algorithm_struct(name: str, unique: bytes, prefix: bytes | None, store_prefix: bool):
    """The EncryptionAlgorithm union as parquet-java fills it."""
    params: dict[str, Any] = {"aad_file_unique": unique}
    if prefix is not None:
        if store_prefix:
            params["aad_prefix"] = prefix
        else:
            params["supply_aad_prefix"] = True
    if name == "AES_GCM_V1":
        return fmt.EncryptionAlgorithm(AES_GCM_V1=fmt.AesGcmV1(**params))
    return fmt.EncryptionAlgorithm(AES_GCM_CTR_V1=fmt.AesGcmCtrV1(**params))


def _decode_module(cls, plain, where: str):
    """Decode a decrypted Thrift module, allowing zero padding after the struct.

    parquet-java 1.17 encrypts its footer from an oversized serialisation buffer, so the
    plaintext ends with zeros (authenticated, so harmless); anything else after the struct is
    corruption.
    """
    obj, end = cls.decode_prefix(plain)
    if end != len(plain) and any(memoryview(plain)[end:]):
        raise DecodeError(
            f"{where}: {len(plain) - end} bytes that are not zero padding after "
            f"the decrypted {cls.__name__}"
        )
    return obj


def _redacted(meta: fmt.ColumnMetaData) -> fmt.ColumnMetaData:
    """The plaintext copy of an encrypted column's metadata: no statistics of any kind."""
    copy = fmt.ColumnMetaData.from_bytes(meta.to_bytes())
    copy.statistics = None
    copy.encoding_stats = None
    copy.size_statistics = None
    copy.geospatial_statistics = None
    return copy


class ChunkEncryptor:
    """Encrypts one column chunk's modules; numbers its data pages from 0."""

    __slots__ = ("_cipher", "_rg", "_col", "_page")

    def __init__(self, cipher, row_group: int, column: int):
        self._cipher, self._rg, self._col, self._page = cipher, row_group, column, 0

    def page(self, page_type: int, body) -> bytes:
        """The page's frame (``compressed_page_size`` is its length)."""
        if page_type == _DICTIONARY_PAGE:
            return self._cipher.encrypt(_k.DICTIONARY_PAGE, body, self._rg, self._col)
        return self._cipher.encrypt(_k.DATA_PAGE, body, self._rg, self._col, self._page)

    def page_header(self, page_type: int, header_bytes) -> bytes:
        """The header's frame; call after :meth:`page` (it moves to the next page ordinal)."""
        if page_type == _DICTIONARY_PAGE:
            return self._cipher.encrypt(
                _k.DICTIONARY_PAGE_HEADER, header_bytes, self._rg, self._col
            )
        out = self._cipher.encrypt(
            _k.DATA_PAGE_HEADER, header_bytes, self._rg, self._col, self._page
        )
        self._page += 1
        return out

    def module(self, kind: str, data) -> bytes:
        """A column index, offset index, bloom filter header or bitset (``kind``: field name)."""
        return self._cipher.encrypt(_MODULES[kind], data, self._rg, self._col)


class _ColumnSetup:
    __slots__ = ("cipher", "crypto_metadata", "with_footer_key")

    def __init__(self, cipher, crypto_metadata, with_footer_key):
        self.cipher, self.crypto_metadata, self.with_footer_key = (
            cipher,
            crypto_metadata,
            with_footer_key,
        )


class FileEncryptor:
    """Encryption of one file being written (built by FileEncryptionProperties)."""

    def __init__(self, props, leaf_paths):
        unique = os.urandom(_k.AAD_FILE_UNIQUE_LENGTH)
        prefix = props.aad_prefix
        self._props = props
        self.file_aad = (prefix or b"") + unique
        self.algorithm = algorithm_struct(props.algorithm, unique, prefix, props.store_aad_prefix)
        ctr = props.algorithm == "AES_GCM_CTR_V1"
        ciphers = {}

        def cipher(key):
            if key not in ciphers:
                ciphers[key] = _k.ModuleCipher(key, self.file_aad, ctr)
            return ciphers[key]

        self._footer_cipher = cipher(props.footer_key)
        with_footer_key = _ColumnSetup(
            self._footer_cipher,
            fmt.ColumnCryptoMetaData(ENCRYPTION_WITH_FOOTER_KEY=fmt.EncryptionWithFooterKey()),
            True,
        )
        self._columns: list[_ColumnSetup | None] = []
        used = set()
        keys = props.column_keys
        for path in leaf_paths:
            dotted = ".".join(path)
            name = dotted if dotted in keys else path[0] if path[0] in keys else None
            used.add(name)
            if not keys:  # uniform encryption: every column under the footer key
                self._columns.append(with_footer_key)
            elif name is None:  # not listed: plaintext
                self._columns.append(None)
            elif keys[name] is None:
                self._columns.append(with_footer_key)
            else:
                self._columns.append(
                    _ColumnSetup(
                        cipher(keys[name]),
                        fmt.ColumnCryptoMetaData(
                            ENCRYPTION_WITH_COLUMN_KEY=fmt.EncryptionWithColumnKey(
                                path_in_schema=list(path),
                                key_metadata=props.column_key_metadata.get(name) or None,
                            )
                        ),
                        False,
                    )
                )
        unknown = set(keys) - used
        if unknown:
            raise SchemaError(
                f"encryption column_keys name columns that are not in the schema: "
                f"{sorted(unknown)}; leaf columns are "
                f"{['.'.join(p) for p in leaf_paths]}"
            )

    @property
    def magic(self) -> bytes:
        """The magic at both ends of the file: PAR1 for a plaintext footer, PARE otherwise."""
        return b"PAR1" if self._props.plaintext_footer else b"PARE"

    def chunk(self, row_group: int, column: int) -> ChunkEncryptor | None:
        """The encryptor of one column chunk, None for a plaintext column."""
        setup = self._columns[column]
        return None if setup is None else ChunkEncryptor(setup.cipher, row_group, column)

    def footer(self, metadata: fmt.FileMetaData) -> bytes:
        """Everything after the last data byte: footer (+ crypto metadata or signature), its
        length and the magic. ``metadata`` itself is left unchanged."""
        md = fmt.FileMetaData.from_bytes(metadata.to_bytes())
        plaintext = self._props.plaintext_footer
        for r, rg in enumerate(md.row_groups):
            for c, (chunk, setup) in enumerate(zip(rg.columns, self._columns, strict=True)):
                if setup is None:
                    continue
                chunk.crypto_metadata = setup.crypto_metadata
                if plaintext or not setup.with_footer_key:
                    meta = chunk.meta_data
                    assert meta is not None, "a footer we wrote has every chunk's metadata"
                    chunk.encrypted_column_metadata = setup.cipher.encrypt(
                        _k.COLUMN_META_DATA, meta.to_bytes(), r, c
                    )
                    chunk.meta_data = _redacted(meta) if plaintext else None
        key_metadata = self._props.footer_key_metadata or None
        if plaintext:
            md.encryption_algorithm = self.algorithm
            md.footer_signing_key_metadata = key_metadata
            blob = md.to_bytes()
            blob += self._footer_cipher.sign_footer(blob)
        else:
            head = fmt.FileCryptoMetaData(
                encryption_algorithm=self.algorithm, key_metadata=key_metadata
            ).to_bytes()
            blob = head + self._footer_cipher.encrypt(_k.FOOTER, md.to_bytes())
        return blob + len(blob).to_bytes(4, "little") + self.magic


# ---------------------------------------------------------------------------- reading


class ChunkDecryptor:
    """Decrypts one column chunk's modules in file order (pages must be read in sequence)."""

    __slots__ = ("_cipher", "_rg", "_col", "_where", "_expect_dictionary", "_page", "_body")

    def __init__(self, cipher, row_group: int, column: int, where: str, has_dictionary: bool):
        self._cipher, self._rg, self._col, self._where = cipher, row_group, column, where
        self._expect_dictionary = has_dictionary
        self._page = 0
        self._body: tuple[int, int] | None = None

    def _decrypt(self, module_type, data, page=-1):
        try:
            return self._cipher.decrypt(module_type, data, self._rg, self._col, page)
        except IntegrityError as exc:
            raise IntegrityError(f"{self._where}: {exc}") from None

    def page_header(self, chunk, pos: int):
        """Decrypt and decode the page header whose frame starts at ``chunk[pos]``.

        Returns ``(PageHeader, end)``; the chunk's first header is its dictionary page's when
        the column metadata says it has one.
        """
        dictionary = self._expect_dictionary
        module = _k.DICTIONARY_PAGE_HEADER if dictionary else _k.DATA_PAGE_HEADER
        plain, used = self._decrypt(module, chunk[pos:], self._page)
        header = _decode_module(fmt.PageHeader, plain, self._where)
        if (header.type == _DICTIONARY_PAGE) != dictionary:
            raise DecodeError(
                f"{self._where}: page {'' if dictionary else 'not '}expected to be "
                f"the dictionary page has type {header.type}"
            )
        if dictionary:
            self._expect_dictionary = False
            self._body = (_k.DICTIONARY_PAGE, -1)
        else:
            self._body = (_k.DATA_PAGE, self._page)
            self._page += 1
        return header, pos + used

    def page(self, frame) -> bytes:
        """Decrypt the page body that follows the last header (``frame``: exactly its bytes)."""
        if self._body is None:
            raise DecodeError(f"{self._where}: page body without a header")
        module, page = self._body
        self._body = None
        plain, used = self._decrypt(module, frame, page)
        if used != len(frame):
            raise DecodeError(
                f"{self._where}: page frame of {used} bytes but the header says {len(frame)}"
            )
        return plain

    def module(self, kind: str, data, exact: bool = True):
        """Decrypt a column index, offset index or bloom filter part starting at ``data[0]``.

        Returns ``(plaintext, consumed)``; with ``exact`` the frame must fill ``data``. A
        Thrift module's zero padding (see :func:`_decode_module`) is cut off.
        """
        plain, used = self._decrypt(_MODULES[kind], data)
        if exact and used != len(data):
            raise DecodeError(
                f"{self._where}: {kind.replace('_', ' ')} frame of {used} bytes "
                f"in a {len(data)}-byte location"
            )
        struct = _THRIFT_MODULES.get(kind)
        if struct is not None:
            _, end = struct.decode_prefix(plain)
            if end != len(plain):
                _decode_module(struct, plain, self._where)  # raises unless zero padding
                plain = plain[:end]
        return plain, used


def _as_key(key, what: str) -> bytes:
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise KeyAccessError(f"{what}: the key retriever returned {type(key).__name__}, not bytes")
    key = bytes(key)
    if len(key) not in (16, 24, 32):
        raise KeyAccessError(f"{what}: key of {len(key)} bytes; AES keys are 16, 24 or 32")
    return key


class FileDecryptor:
    """Decryption of one file being read (built by FileDecryptionProperties)."""

    def __init__(self, props, algorithm, footer_key_metadata, name: str):
        self._props = props
        self._name = name
        which = algorithm.which if algorithm is not None else None
        if which not in ("AES_GCM_V1", "AES_GCM_CTR_V1"):
            unknown = [u[0] for u in (getattr(algorithm, "_unknown", None) or ())]
            raise IntegrityError(
                f"{name}: footer: unknown encryption algorithm (union fields "
                f"{unknown}); the file is damaged or from a newer writer"
            )
        params = getattr(algorithm, which)
        stored, supplied = params.aad_prefix, props.aad_prefix
        if stored is not None and supplied is not None and bytes(stored) != supplied:
            raise IntegrityError(
                f"{name}: the file's stored AAD prefix differs from the one "
                "supplied: this is not the file you expect (swapped or replaced)"
            )
        if supplied is None and stored is None and params.supply_aad_prefix:
            raise KeyAccessError(
                f"{name}: the file was encrypted with an AAD prefix it does not "
                "store; pass aad_prefix in the decryption properties"
            )
        prefix = supplied if supplied is not None else bytes(stored or b"")
        self._file_aad = prefix + bytes(params.aad_file_unique or b"")
        self._ctr = which == "AES_GCM_CTR_V1"
        self._footer_key_metadata = bytes(footer_key_metadata or b"")
        self._keys: dict[bytes, bytes] = {}  # key metadata -> key: the retriever runs once per key
        self._ciphers: dict[bytes, _k.ModuleCipher] = {}  # key -> ModuleCipher
        # (row group, column) -> (ColumnMetaData, cipher, where)
        self._chunks: dict[tuple[int, int], tuple[fmt.ColumnMetaData, _k.ModuleCipher, str]] = {}

    def _cipher(self, key):
        if key not in self._ciphers:
            self._ciphers[key] = _k.ModuleCipher(key, self._file_aad, self._ctr)
        return self._ciphers[key]

    def _retrieve(self, key_metadata: bytes, what: str) -> bytes:
        if key_metadata in self._keys:
            return self._keys[key_metadata]
        retriever = self._props.key_retriever
        if retriever is None:
            raise KeyAccessError(
                f"{self._name}: {what}: no key given and no key_retriever to fetch it"
            )
        try:
            key = retriever(key_metadata)
        except MetaIndexError as exc:  # ours (key material, KMS): same type, with the context
            raise type(exc)(f"{self._name}: {what}: {exc}") from exc
        except Exception as exc:  # a user's callback or KMS: any failure is a key access failure
            raise KeyAccessError(
                f"{self._name}: {what}: key retrieval failed: {type(exc).__name__}: {exc}"
            ) from exc
        key = _as_key(key, f"{self._name}: {what}")
        self._keys[key_metadata] = key
        return key

    def footer_cipher(self):
        key = self._props.footer_key
        if key is None:
            key = self._retrieve(self._footer_key_metadata, "footer key")
        return self._cipher(key)

    def decrypt_footer(self, frame) -> fmt.FileMetaData:
        """Decrypt and decode an encrypted footer (``frame``: exactly its bytes)."""
        cipher = self.footer_cipher()
        try:
            plain, used = cipher.decrypt(_k.FOOTER, frame)
        except IntegrityError as exc:
            raise IntegrityError(f"{self._name}: {exc}") from None
        if used != len(frame):
            raise DecodeError(
                f"{self._name}: encrypted footer frame of {used} bytes in a "
                f"{len(frame)}-byte footer"
            )
        return _decode_module(fmt.FileMetaData, plain, f"{self._name}: footer")

    def verify_footer(self, footer, signature) -> None:
        try:
            self.footer_cipher().verify_footer(footer, signature)
        except IntegrityError as exc:
            raise IntegrityError(f"{self._name}: {exc}") from None

    def column(self, chunk: fmt.ColumnChunk, row_group: int, column: int, path: tuple):
        """``(ColumnMetaData, ChunkDecryptor)`` of an encrypted column chunk.

        The metadata is decrypted once per chunk; each call gets a fresh ChunkDecryptor (it
        counts pages as they are read).
        """
        found = self._chunks.get((row_group, column))
        if found is None:
            found = self._chunks[(row_group, column)] = self._open_column(
                chunk, row_group, column, tuple(path)
            )
        meta, cipher, where = found
        has_dictionary = meta.dictionary_page_offset is not None and meta.dictionary_page_offset > 0
        return meta, ChunkDecryptor(cipher, row_group, column, where, has_dictionary)

    def _open_column(self, chunk, row_group: int, column: int, path: tuple):
        dotted = ".".join(path)
        where = f"{self._name}: row group {row_group}, column {dotted}"
        ccmd = chunk.crypto_metadata
        if ccmd.ENCRYPTION_WITH_FOOTER_KEY is not None:
            cipher = self.footer_cipher()
        elif ccmd.ENCRYPTION_WITH_COLUMN_KEY is not None:
            ek = ccmd.ENCRYPTION_WITH_COLUMN_KEY
            if ek.path_in_schema is not None and list(ek.path_in_schema) != list(path):
                raise DecodeError(
                    f"{where}: crypto metadata names column {'.'.join(ek.path_in_schema)!r}"
                )
            keys = self._props.column_keys
            key = keys.get(dotted, keys.get(path[0]))
            if key is None:
                key = self._retrieve(bytes(ek.key_metadata or b""), f"column {dotted} key")
            cipher = self._cipher(key)
        else:
            raise IntegrityError(f"{where}: unknown column encryption kind")
        meta = chunk.meta_data
        if chunk.encrypted_column_metadata is not None:
            frame = chunk.encrypted_column_metadata
            try:
                plain, used = cipher.decrypt(_k.COLUMN_META_DATA, frame, row_group, column)
            except IntegrityError as exc:
                raise IntegrityError(f"{where}: {exc}") from None
            if used != len(frame):
                raise DecodeError(f"{where}: encrypted column metadata has trailing bytes")
            meta = _decode_module(fmt.ColumnMetaData, plain, where)
        if meta is None:
            raise DecodeError(f"{where}: encrypted column chunk without column metadata")
        return meta, cipher, where
