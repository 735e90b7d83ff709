"""Encrypted files end to end on our writer and reader: layouts, every module kind, and failures."""

from __future__ import annotations

import base64
import io

import numpy as np
import pyarrow as pa
import pytest

from metaindex._native import crypto as kernel
from metaindex.crypto import (
    CryptoFactory,
    EncryptionConfiguration,
    FileDecryptionProperties,
    FileEncryptionProperties,
    InMemoryKms,
    KmsConnectionConfig,
)
from metaindex.errors import (
    DecodeError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    SchemaError,
)
from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile, read_footer, read_table
from metaindex.parquet.writer import ParquetWriter, write_table
from tests.crypto.peers import MASTER_KEYS

FOOTER_KEY = bytes.fromhex("5d2f1c0a9e8b7d6c4f3e2a1b0c9d8e7f")
COL_KEY = bytes.fromhex("a3c1e5f7092b4d6f8193b5d7f91b3d5f7192b4d6f8a1c3e5")
OTHER_KEY = bytes.fromhex("1f3e5d7c9bbad9f8172635445362718099a8b7c6d5e4f30211203f4e5d6c7b8a")
RNG = np.random.default_rng(5)


def table(n=5000):
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "name": pa.array([f"name-{i % 37}" for i in range(n)]),
            "score": pa.array(RNG.random(n)),
            "tags": pa.array(
                [[f"t{i % 3}", "x"] if i % 5 else None for i in range(n)], pa.list_(pa.string())
            ),
            "pt": pa.array(
                [{"x": i, "y": -i} for i in range(n)],
                pa.struct([("x", pa.int32()), ("y", pa.int32())]),
            ),
        }
    )


def write(t, props, **options) -> bytes:
    sink = io.BytesIO()
    options.setdefault("data_page_size", 4096)
    write_table(t, sink, encryption_properties=props, **options)
    return sink.getvalue()


def dec(**kw):
    return FileDecryptionProperties(**kw)


def read_everything(data, props, t):
    """Read the table and every page index and bloom filter (each of them a module)."""
    pf = ParquetFile(data, decryption_properties=props)
    assert pf.read().equals(t), "decrypted data equals what was written"
    for rg in range(pf.num_row_groups):
        for path in pf.column_paths:
            pf.column_chunk_metadata(rg, path)
            pf.column_index(rg, path)
            pf.offset_index(rg, path)
            pf.bloom_filter(rg, path)
    return pf


LAYOUTS = {
    "uniform": {},
    "column keys": {"column_keys": {"id": COL_KEY, "name": OTHER_KEY, "pt.x": None}},
    "nested column keys": {"column_keys": {"tags": COL_KEY, "pt": OTHER_KEY}},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("algorithm", ["AES_GCM_V1", "AES_GCM_CTR_V1"])
@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_roundtrip_every_module_kind(layout, algorithm, plaintext_footer):
    t = table()
    props = FileEncryptionProperties(
        FOOTER_KEY, algorithm=algorithm, plaintext_footer=plaintext_footer, **LAYOUTS[layout]
    )
    data = write(
        t,
        props,
        row_group_size=2000,
        write_page_index=True,
        write_page_checksum=True,
        bloom_filter_options={"id": True, "name": True, "pt.y": True},
        compression="zstd",
        use_dictionary=["name", "tags"],
    )
    assert data[:4] == data[-4:] == (b"PAR1" if plaintext_footer else b"PARE")
    keys = dec(
        footer_key=FOOTER_KEY,
        column_keys={"id": COL_KEY, "name": OTHER_KEY, "tags": COL_KEY, "pt": OTHER_KEY},
    )
    pf = read_everything(data, keys, t)
    assert pf.num_row_groups == 3, "several row groups"
    ids = pf.offset_index(1, "id")
    assert len(ids.page_locations) > 1, "multi-page chunks: page ordinals > 0 in the AADs"
    assert pf.column_index(2, "id").min_values[0] == (4000).to_bytes(8, "little")
    assert pf.statistics(1, "id").min == 2000, "statistics come from the decrypted metadata"
    meta = pf.column_chunk_metadata(0, "name")
    assert meta.dictionary_page_offset is not None, "dictionary pages are encrypted modules too"
    assert read_table(data, decryption_properties=keys, verify_checksums=True).equals(t), (
        "CRCs cover the stored (encrypted) page bytes"
    )


def test_bloom_filters_answer_through_encryption():
    t = table(3000)
    data = write(t, FileEncryptionProperties(FOOTER_KEY), bloom_filter_options={"id": True})
    bloom = ParquetFile(data, decryption_properties=dec(footer_key=FOOTER_KEY)).bloom_filter(
        0, "id"
    )
    values = np.arange(3000, dtype=np.int64)
    assert bloom.might_contain(values, physical_type=2).all(), (
        "every written value is in the decrypted filter"
    )


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_data_page_versions_and_codecs(version):
    t = table(3000)
    for codec in ("none", "snappy", "gzip"):
        data = write(
            t,
            FileEncryptionProperties(FOOTER_KEY, algorithm="AES_GCM_CTR_V1"),
            data_page_version=version,
            compression=codec,
        )
        assert read_table(data, decryption_properties=dec(footer_key=FOOTER_KEY)).equals(t)


def test_streaming_writer_and_empty_file():
    t = table(100)
    sink = io.BytesIO()
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"id": COL_KEY})
    with ParquetWriter(sink, t.schema, encryption_properties=props) as w:
        for batch in t.to_batches(max_chunksize=30):
            w.write_batch(batch)
    keys = dec(footer_key=FOOTER_KEY, column_keys={"id": COL_KEY})
    pf = ParquetFile(sink.getvalue(), decryption_properties=keys)
    assert pf.num_row_groups == 4 and pf.read().equals(t)
    empty = write(t.slice(0, 0), props)
    assert read_table(empty, decryption_properties=keys).num_rows == 0


def test_key_retriever_runs_once_per_key_and_gets_the_metadata():
    t = table(1000)
    props = FileEncryptionProperties(
        FOOTER_KEY,
        column_keys={"id": COL_KEY, "name": OTHER_KEY},
        footer_key_metadata=b"kf",
        column_key_metadata={"id": b"k1", "name": "k2"},
    )
    data = write(t, props, row_group_size=200)
    seen = []
    keys = {b"kf": FOOTER_KEY, b"k1": COL_KEY, b"k2": OTHER_KEY}

    def retriever(key_metadata):
        seen.append(key_metadata)
        return keys[key_metadata]

    assert read_table(data, decryption_properties=dec(key_retriever=retriever)).equals(t)
    assert sorted(seen) == [b"k1", b"k2", b"kf"], (
        f"one call per distinct key across 5 row groups, got {seen}"
    )


def test_plaintext_footer_without_keys_reads_plaintext_columns_only():
    t = table(500)
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"id": COL_KEY}, plaintext_footer=True)
    data = write(t, props)
    assert read_table(data, columns=["name", "score"]).equals(t.select(["name", "score"])), (
        "a legacy reader (no keys) still reads the plaintext columns"
    )
    with pytest.raises(KeyAccessError, match="column id is encrypted"):
        read_table(data, columns=["id"])
    plain_meta = read_footer(data).row_groups[0].columns[0].meta_data
    assert plain_meta.statistics is None and plain_meta.encoding_stats is None, (
        "the readable copy of an encrypted column's metadata has no statistics"
    )
    with pytest.raises(KeyAccessError):
        ParquetFile(data).statistics(0, "id")
    keys = dec(footer_key=FOOTER_KEY, column_keys={"id": COL_KEY})
    assert ParquetFile(data, decryption_properties=keys).statistics(0, "id").max == 499


def test_encrypted_footer_needs_keys():
    data = write(table(10), FileEncryptionProperties(FOOTER_KEY))
    with pytest.raises(KeyAccessError, match="footer is encrypted"):
        read_table(data)
    with pytest.raises(KeyAccessError, match="footer key"):
        read_table(data, decryption_properties=dec(column_keys={"id": COL_KEY}))


def test_missing_column_key_names_the_column():
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"name": COL_KEY})
    data = write(table(10), props)
    pf = ParquetFile(data, decryption_properties=dec(footer_key=FOOTER_KEY))
    assert pf.read(columns=["id"]).num_rows == 10, "other columns stay readable"
    with pytest.raises(KeyAccessError, match="column name key"):
        pf.read(columns=["name"])


def test_wrong_keys_name_the_module():
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"name": COL_KEY})
    data = write(table(10), props)
    with pytest.raises(IntegrityError, match="footer failed AES-GCM verification"):
        read_table(data, decryption_properties=dec(footer_key=bytes(16)))
    wrong_col = dec(footer_key=FOOTER_KEY, column_keys={"name": bytes(24)})
    with pytest.raises(
        IntegrityError,
        match=r"row group 0, column name: column metadata "
        r"\(row group 0, column 1\) failed",
    ):
        read_table(data, decryption_properties=wrong_col)


def test_plaintext_footer_signature_is_checked():
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"id": COL_KEY}, plaintext_footer=True)
    data = bytearray(write(table(10), props))
    footer_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer_len
    md, end = fmt.FileMetaData.decode_prefix(bytes(data[start : len(data) - 8]))
    tampered = fmt.FileMetaData.from_bytes(md.to_bytes())
    tampered.num_rows = 11  # same length on the wire: a silent change without the signature
    blob = tampered.to_bytes()
    assert len(blob) == end
    data[start : start + end] = blob
    keys = dec(footer_key=FOOTER_KEY, column_keys={"id": COL_KEY})
    with pytest.raises(IntegrityError, match="footer signature does not verify"):
        read_table(bytes(data), decryption_properties=keys)
    unchecked = dec(
        footer_key=FOOTER_KEY, column_keys={"id": COL_KEY}, check_footer_integrity=False
    )
    assert ParquetFile(bytes(data), decryption_properties=unchecked).num_rows == 11


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_aad_prefix_stored_supplied_and_mismatched(plaintext_footer):
    t = table(20)
    stored = write(
        t,
        FileEncryptionProperties(
            FOOTER_KEY, aad_prefix=b"table/part-0", plaintext_footer=plaintext_footer
        ),
    )
    assert read_table(stored, decryption_properties=dec(footer_key=FOOTER_KEY)).equals(t)
    assert read_table(
        stored, decryption_properties=dec(footer_key=FOOTER_KEY, aad_prefix=b"table/part-0")
    ).equals(t)
    with pytest.raises(IntegrityError, match="stored AAD prefix differs"):
        read_table(
            stored, decryption_properties=dec(footer_key=FOOTER_KEY, aad_prefix=b"table/part-1")
        )
    hidden = write(
        t,
        FileEncryptionProperties(
            FOOTER_KEY,
            aad_prefix="table/part-0",
            store_aad_prefix=False,
            plaintext_footer=plaintext_footer,
        ),
    )
    assert b"table/part-0" not in hidden
    with pytest.raises(KeyAccessError, match="does not store"):
        read_table(hidden, decryption_properties=dec(footer_key=FOOTER_KEY))
    with pytest.raises(IntegrityError):
        read_table(
            hidden, decryption_properties=dec(footer_key=FOOTER_KEY, aad_prefix=b"table/part-1")
        )
    assert read_table(
        hidden, decryption_properties=dec(footer_key=FOOTER_KEY, aad_prefix=b"table/part-0")
    ).equals(t)


def _chunk_bytes(data, props, rg, leaf):
    pf = ParquetFile(data, decryption_properties=props)
    meta = pf.column_chunk_metadata(rg, pf.column_paths[leaf])
    start = min(o for o in (meta.dictionary_page_offset, meta.data_page_offset) if o)
    return start, meta.total_compressed_size


def test_swapped_modules_are_detected():
    """Same keys, same layout: a chunk moved between row groups or files fails its AAD."""
    t = pa.table({"id": pa.array(np.arange(200, dtype=np.int64))})
    props = FileEncryptionProperties(FOOTER_KEY)
    keys = dec(footer_key=FOOTER_KEY)
    a = write(t, props, row_group_size=100, use_dictionary=False, compression="none")
    b = write(t, props, row_group_size=100, use_dictionary=False, compression="none")
    s0, n0 = _chunk_bytes(a, keys, 0, 0)
    s1, n1 = _chunk_bytes(a, keys, 1, 0)
    assert n0 == n1
    moved = bytearray(a)
    moved[s0 : s0 + n0] = a[s1 : s1 + n1]  # row group 1's pages in row group 0's place
    with pytest.raises(IntegrityError, match=r"data page header \(row group 0, column 0, page 0\)"):
        read_table(bytes(moved), decryption_properties=keys)
    other = bytearray(a)
    other[s0 : s0 + n0] = b[s0 : s0 + n0]  # the same chunk from another file (other file AAD)
    with pytest.raises(IntegrityError, match="row group 0, column id"):
        read_table(bytes(other), decryption_properties=keys)


def test_unknown_algorithm_and_plaintext_file_with_keys():
    t = table(10)
    data = write(t, FileEncryptionProperties(FOOTER_KEY))
    n = int.from_bytes(data[-8:-4], "little")
    tail = data[-8 - n : -8]
    crypto, end = fmt.FileCryptoMetaData.decode_prefix(tail)
    raw = crypto.to_bytes()
    assert raw[:2] == b"\x1c\x1c", "field 1 (struct) holding union member 1 (struct)"
    unknown = fmt.FileCryptoMetaData.from_bytes(b"\x1c\x3c" + raw[2:])  # member 3, unknown
    assert unknown.encryption_algorithm.which is None
    forged = unknown.to_bytes() + tail[end:]
    forged_file = data[: -8 - n] + forged + len(forged).to_bytes(4, "little") + b"PARE"
    with pytest.raises(IntegrityError, match="unknown encryption algorithm"):
        read_table(forged_file, decryption_properties=dec(footer_key=FOOTER_KEY))
    plain = io.BytesIO()
    write_table(t, plain)
    with pytest.raises(IntegrityError, match="not encrypted"):
        read_table(plain.getvalue(), decryption_properties=dec(footer_key=FOOTER_KEY))
    allowed = dec(footer_key=FOOTER_KEY, plaintext_files_allowed=True)
    assert read_table(plain.getvalue(), decryption_properties=allowed).equals(t)


def test_column_keys_for_unknown_columns_are_refused():
    with pytest.raises(SchemaError, match="nope"):
        write(table(5), FileEncryptionProperties(FOOTER_KEY, column_keys={"nope": COL_KEY}))


@pytest.mark.parametrize("bad", [b"short", bytes(17), "a string key" * 2, None])
def test_key_arguments_are_validated(bad):
    with pytest.raises((TypeError, ValueError)):
        FileEncryptionProperties(bad)
    with pytest.raises((TypeError, ValueError)):
        FileDecryptionProperties(footer_key=bad or 5)
    with pytest.raises(ValueError, match="algorithm"):
        FileEncryptionProperties(FOOTER_KEY, algorithm="AES_CBC")


def test_properties_never_print_keys():
    props = FileEncryptionProperties(FOOTER_KEY, column_keys={"id": COL_KEY})
    for text in (repr(props), repr(dec(footer_key=FOOTER_KEY, column_keys={"id": COL_KEY}))):
        assert FOOTER_KEY.hex() not in text and repr(FOOTER_KEY) not in text
        assert repr(COL_KEY) not in text and "redacted" in text


@pytest.mark.parametrize("double_wrapping", [True, False])
@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_no_key_in_clear_in_the_file(double_wrapping, plaintext_footer):
    kms_keys = []

    class Recording(InMemoryKms):
        def wrap_key(self, key_bytes, master_key_identifier):
            kms_keys.append(bytes(key_bytes))  # every DEK or KEK handed to the KMS
            return super().wrap_key(key_bytes, master_key_identifier)

    factory = CryptoFactory(lambda config: Recording(MASTER_KEYS))
    config = EncryptionConfiguration(
        "footer_master",
        {"col_master": ["id", "name"]},
        double_wrapping=double_wrapping,
        plaintext_footer=plaintext_footer,
    )
    props = factory.file_encryption_properties(KmsConnectionConfig(), config)
    t = table(200)
    data = write(t, props, bloom_filter_options={"id": True}, write_page_index=True)
    secrets = [props.footer_key, *props.column_keys.values(), *kms_keys, *MASTER_KEYS.values()]
    assert len(secrets) >= 5
    for secret in secrets:
        for form in (secret, secret.hex().encode(), base64.b64encode(secret)):
            assert form not in data, "no DEK, KEK or master key in clear in the file"
    dprops = factory.file_decryption_properties(KmsConnectionConfig())
    assert read_table(data, decryption_properties=dprops).equals(t)


def _everything(data, props):
    """What a reader can get out of a file: rows, footer, and every chunk's metadata, page
    indexes and bloom filter (bytes, so two reads compare)."""
    pf = ParquetFile(data, decryption_properties=props)
    parts = [pf.read(), pf.footer.to_bytes()]
    for rg in range(pf.num_row_groups):
        for path in pf.column_paths:
            bloom = pf.bloom_filter(rg, path)
            parts += [
                pf.column_chunk_metadata(rg, path).to_bytes(),
                getattr(pf.column_index(rg, path), "to_bytes", lambda: None)(),
                getattr(pf.offset_index(rg, path), "to_bytes", lambda: None)(),
                None if bloom is None else bloom.to_bytes(),
            ]
    return parts


def _same(a, b):
    return all(
        x.equals(y) if isinstance(x, pa.Table) else x == y for x, y in zip(a, b, strict=True)
    )


@pytest.mark.hostile
@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_every_byte_flip_that_changes_what_is_read_is_detected(plaintext_footer):
    """A small GCM file, every column encrypted: flip each byte in turn and read everything."""
    t = pa.table({"a": pa.array([1, 2, 3, 2], pa.int32()), "s": pa.array(["x", "y", None, "x"])})
    props = FileEncryptionProperties(
        FOOTER_KEY, column_keys={"a": None, "s": COL_KEY}, plaintext_footer=plaintext_footer
    )
    data = write(
        t, props, write_page_index=True, bloom_filter_options={"s": {"ndv": 4, "fpp": 0.5}}
    )
    keys = dec(footer_key=FOOTER_KEY, column_keys={"s": COL_KEY})
    good = _everything(data, keys)
    assert good[0].equals(t)
    undetected = []
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x5A
        try:
            got = _everything(bytes(bad), keys)
        except (IntegrityError, DecodeError, KeyAccessError):
            continue
        if not _same(got, good):
            undetected.append(i)
    assert not undetected, (
        f"{len(undetected)} of {len(data)} byte flips changed what was read "
        f"without an error, at offsets {undetected[:20]}"
    )


def test_ordinal_limit_is_a_clear_error():
    enc = FileEncryptionProperties(FOOTER_KEY).file_encryptor([("a",)])
    assert enc.chunk(32767, 0) is not None
    with pytest.raises(MetaIndexError, match="row group ordinal 32768 is outside 0..32767"):
        enc.chunk(32768, 0).module("column_index", b"x")
    assert kernel.MAX_MODULE_ORDINAL == 32767


def _reencrypt_footer(data: bytes, key: bytes, transform) -> bytes:
    """The PARE file with its footer plaintext replaced by ``transform(plaintext)``."""
    n = int.from_bytes(data[-8:-4], "little")
    tail = data[-8 - n : -8]
    crypto, end = fmt.FileCryptoMetaData.decode_prefix(tail)
    cipher = kernel.ModuleCipher(key, crypto.encryption_algorithm.AES_GCM_V1.aad_file_unique)
    plain, _ = cipher.decrypt(kernel.FOOTER, tail[end:])
    blob = tail[:end] + cipher.encrypt(kernel.FOOTER, transform(plain))
    return data[: -8 - n] + blob + len(blob).to_bytes(4, "little") + b"PARE"


def test_zero_padded_thrift_modules_are_accepted():
    """parquet-java 1.17 pads encrypted Thrift modules with zeros; anything else is refused."""
    t = table(50)
    data = write(t, FileEncryptionProperties(FOOTER_KEY))
    keys = dec(footer_key=FOOTER_KEY)
    padded = _reencrypt_footer(data, FOOTER_KEY, lambda p: p + bytes(700))
    assert read_table(padded, decryption_properties=keys).equals(t)
    garbage = _reencrypt_footer(data, FOOTER_KEY, lambda p: p + b"\x00\x01")
    with pytest.raises(DecodeError, match="not zero padding"):
        read_table(garbage, decryption_properties=keys)


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_footer_region_reads_no_keys(tmp_path, plaintext_footer):
    from metaindex.parquet.reader import footer_region

    path = tmp_path / "f.parquet"
    path.write_bytes(
        write(table(50), FileEncryptionProperties(FOOTER_KEY, plaintext_footer=plaintext_footer))
    )
    blob, magic, size = footer_region(str(path))
    assert magic == (b"PAR1" if plaintext_footer else b"PARE"), "the magic says the footer mode"
    assert size == path.stat().st_size and 0 < len(blob) < size
    (tmp_path / "junk").write_bytes(b"x" * 40)
    with pytest.raises(DecodeError):
        footer_region(str(tmp_path / "junk"))
