"""pyarrow reads our encrypted files and we read pyarrow's, in every mode pyarrow supports.

pyarrow's KMS here is a pyarrow ``KmsClient`` subclass with parquet-java InMemoryKMS wrapping
(tests/crypto/peers.py); ours is ``metaindex.crypto.InMemoryKms`` over the same master keys, so
each side also unwraps the other's key material.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

from metaindex.crypto import (
    CryptoFactory,
    EncryptionConfiguration,
    FileDecryptionProperties,
    FileEncryptionProperties,
    InMemoryKms,
    KmsConnectionConfig,
)
from metaindex.errors import IntegrityError
from metaindex.parquet.reader import ParquetFile, read_table
from metaindex.parquet.writer import write_table
from tests.crypto.peers import MASTER_KEYS, ArrowInMemoryKms, pyarrow_factory

N = 6000


def table():
    rng = np.random.default_rng(11)
    return pa.table(
        {
            "id": pa.array(np.arange(N, dtype=np.int64)),
            "ssn": pa.array([f"{i:09d}" for i in rng.integers(0, 10**9, N)]),
            "amount": pa.array(rng.normal(size=N)),
            "city": pa.array([["Oslo", "Lima", None, "Pune"][i % 4] for i in range(N)]),
            "items": pa.array(
                [[i, i + 1] if i % 3 else [] for i in range(N)], pa.list_(pa.int32())
            ),
        }
    )


# (uniform, column keys, plaintext footer, double wrapping, algorithm)
MODES = [
    pytest.param((True, None, False, True, "AES_GCM_V1"), id="uniform"),
    pytest.param((True, None, True, False, "AES_GCM_CTR_V1"), id="uniform-plainfooter-single-ctr"),
    pytest.param(
        (
            False,
            {"col_master": ["ssn", "amount"], "other_master": ["items"]},
            False,
            True,
            "AES_GCM_V1",
        ),
        id="columns-double",
    ),
    pytest.param(
        (False, {"col_master": ["ssn"]}, False, False, "AES_GCM_CTR_V1"), id="columns-single-ctr"
    ),
    pytest.param(
        (False, {"col_master": ["ssn", "amount"]}, True, True, "AES_GCM_CTR_V1"),
        id="columns-plainfooter-double-ctr",
    ),
    pytest.param(
        (False, {"footer_master": ["ssn"], "col_master": ["city"]}, True, False, "AES_GCM_V1"),
        id="columns-plainfooter-single",
    ),
]


def our_config(uniform, column_keys, plaintext, double, algorithm):
    return EncryptionConfiguration(
        "footer_master",
        column_keys,
        uniform_encryption=uniform,
        plaintext_footer=plaintext,
        double_wrapping=double,
        encryption_algorithm=algorithm,
    )


def arrow_config(uniform, column_keys, plaintext, double, algorithm):
    return pe.EncryptionConfiguration(
        "footer_master",
        column_keys=column_keys,
        uniform_encryption=uniform,
        plaintext_footer=plaintext,
        double_wrapping=double,
        encryption_algorithm=algorithm,
    )


def ours_factory():
    return CryptoFactory(lambda config: InMemoryKms(MASTER_KEYS))


@pytest.mark.parametrize("mode", MODES)
def test_pyarrow_reads_ours(tmp_path, mode):
    t = table()
    props = ours_factory().file_encryption_properties(KmsConnectionConfig(), our_config(*mode))
    path = tmp_path / "ours.parquet"
    write_table(
        t,
        path,
        encryption_properties=props,
        row_group_size=2500,
        data_page_size=8192,
        use_dictionary=["city"],
        compression="snappy",
        write_page_checksum=True,
    )
    dprops = pyarrow_factory().file_decryption_properties(pe.KmsConnectionConfig())
    got = pq.read_table(path, decryption_properties=dprops)
    assert got.equals(t), "pyarrow decrypts every column we encrypted"
    pfile = pq.ParquetFile(path, decryption_properties=dprops)
    assert pfile.metadata.num_row_groups == 3
    stats = pfile.metadata.row_group(1).column(0).statistics
    if mode[0] and mode[2]:
        # footer-key columns under a plaintext footer: pyarrow reads only the redacted copy
        # (parquet-java 1.17 and we decrypt encrypted_column_metadata with the footer key)
        assert stats is None, "no statistics in clear for an encrypted column"
    else:
        assert stats.min == 2500, "pyarrow reads the column statistics"
    if mode[2]:  # plaintext footer: pyarrow without keys reads the plaintext columns
        encrypted = {c for cols in (mode[1] or {}).values() for c in cols}
        plain = [c for c in t.column_names if c not in encrypted] if not mode[0] else []
        if plain:
            assert pq.read_table(path, columns=plain).equals(t.select(plain))


@pytest.mark.parametrize("mode", MODES)
def test_we_read_pyarrows(tmp_path, mode):
    t = table()
    props = pyarrow_factory().file_encryption_properties(
        pe.KmsConnectionConfig(), arrow_config(*mode)
    )
    path = tmp_path / "theirs.parquet"
    pq.write_table(
        t,
        path,
        encryption_properties=props,
        row_group_size=2500,
        data_page_size=8192,
        write_page_checksum=True,
        write_page_index=True,
    )
    dprops = ours_factory().file_decryption_properties(KmsConnectionConfig())
    pf = ParquetFile(path, decryption_properties=dprops, verify_checksums=True)
    assert pf.read().equals(t), "we decrypt every column pyarrow encrypted"
    assert pf.statistics(2, "id").min == 5000
    assert pf.offset_index(0, "ssn") is not None and pf.column_index(0, "ssn") is not None, (
        "pyarrow's encrypted page indexes decrypt"
    )
    if mode[2]:
        encrypted = {c for cols in (mode[1] or {}).values() for c in cols}
        if not mode[0]:
            plain = [c for c in t.column_names if c not in encrypted]
            assert read_table(path, columns=plain).equals(t.select(plain)), (
                "no keys: pyarrow's plaintext columns read"
            )


def test_key_material_is_what_pyarrow_writes(tmp_path):
    """Same fields and types as pyarrow's PKMT1 material; order as parquet-java's HashMap."""
    props = pyarrow_factory().file_encryption_properties(
        pe.KmsConnectionConfig(),
        arrow_config(False, {"col_master": ["ssn"]}, True, True, "AES_GCM_V1"),
    )
    path = tmp_path / "theirs.parquet"
    pq.write_table(table(), path, encryption_properties=props)
    footer = ParquetFile(path).footer
    theirs = json.loads(footer.footer_signing_key_metadata)
    ours = json.loads(
        ours_factory()
        .file_encryption_properties(
            KmsConnectionConfig(),
            our_config(False, {"col_master": ["ssn"]}, True, True, "AES_GCM_V1"),
        )
        .footer_key_metadata
    )
    assert set(ours) == set(theirs), "the same PKMT1 fields"
    for key in (
        "keyMaterialType",
        "internalStorage",
        "isFooterKey",
        "kmsInstanceID",
        "kmsInstanceURL",
        "masterKeyID",
        "doubleWrapping",
    ):
        assert ours[key] == theirs[key], f"{key}: {ours[key]!r} vs pyarrow's {theirs[key]!r}"


def test_bloom_filters_in_encrypted_files_read_by_pyarrow(tmp_path):
    """pyarrow refuses to write bloom filters with encryption; it still reads such files."""
    t = table()
    props = ours_factory().file_encryption_properties(
        KmsConnectionConfig(), our_config(True, None, False, True, "AES_GCM_V1")
    )
    path = tmp_path / "bloom.parquet"
    write_table(t, path, encryption_properties=props, bloom_filter_options={"ssn": True})
    dprops = pyarrow_factory().file_decryption_properties(pe.KmsConnectionConfig())
    assert pq.read_table(path, decryption_properties=dprops).equals(t)
    bloom = ParquetFile(
        path, decryption_properties=ours_factory().file_decryption_properties(KmsConnectionConfig())
    ).bloom_filter(0, "ssn")
    assert bloom.might_contain(t.column("ssn").to_pylist()[:100], physical_type=6).all()


def test_explicit_keys_and_retriever_on_a_pyarrow_file(tmp_path):
    """Low-level properties on a pyarrow file: the key_retriever gets pyarrow's key metadata."""
    ArrowInMemoryKms.calls.update(wrap=0, unwrap=0)
    props = pyarrow_factory().file_encryption_properties(
        pe.KmsConnectionConfig(),
        arrow_config(False, {"col_master": ["ssn"]}, False, False, "AES_GCM_V1"),
    )
    path = tmp_path / "theirs.parquet"
    pq.write_table(table(), path, encryption_properties=props, row_group_size=1000)
    kms = InMemoryKms(MASTER_KEYS)
    asked = []

    def retriever(key_metadata: bytes) -> bytes:
        material = json.loads(key_metadata)
        asked.append(material["masterKeyID"])
        return kms.unwrap_key(material["wrappedDEK"], material["masterKeyID"])

    got = read_table(path, decryption_properties=FileDecryptionProperties(key_retriever=retriever))
    assert got.equals(table())
    assert sorted(asked) == ["col_master", "footer_master"], (
        "the retriever runs once for the footer and once per column key, not per row group"
    )


def test_pyarrow_detects_our_tampering_and_we_detect_theirs(tmp_path):
    t = table()
    props = FileEncryptionProperties(bytes.fromhex("11" * 16))
    sink = io.BytesIO()
    write_table(t, sink, encryption_properties=props)
    data = bytearray(sink.getvalue())
    data[len(data) // 2] ^= 1
    with pytest.raises(IntegrityError):
        read_table(
            bytes(data),
            decryption_properties=FileDecryptionProperties(footer_key=bytes.fromhex("11" * 16)),
        )
