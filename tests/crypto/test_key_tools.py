"""Envelope key tools: PKMT1 key material, KMS clients, CryptoFactory wrapping and caches."""

from __future__ import annotations

import base64
import io
import json
import os
import time

import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from metaindex.crypto import (
    CryptoFactory,
    DecryptionConfiguration,
    EncryptionConfiguration,
    FileDecryptionProperties,
    FileEncryptionProperties,
    InMemoryKms,
    KeyMaterial,
    KmsClient,
    KmsConnectionConfig,
    LocalFileKms,
)
from metaindex.crypto.key_material import unwrap_key_locally, wrap_key_locally
from metaindex.errors import (
    DecodeError,
    KeyAccessError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
)
from metaindex.parquet.reader import read_table
from metaindex.parquet.writer import write_table
from tests.crypto.peers import MASTER_KEYS, ArrowInMemoryKms
from tests.reference.crypto import java_hashmap_order

# parquet-java 1.17.0 KeyMaterial.createSerialized (called through reflection from the jar
# pyspark ships) for the same arguments: the exact bytes it writes.
JAVA_OUTPUT = {
    (True, True): '{"kmsInstanceURL":"DEFAULT","masterKeyID":"mk","wrappedDEK":"WDEK",'
    '"keyEncryptionKeyID":"KEKID","doubleWrapping":true,"internalStorage":true,'
    '"isFooterKey":true,"keyMaterialType":"PKMT1","kmsInstanceID":"DEFAULT",'
    '"wrappedKEK":"WKEK"}',
    (False, False): '{"masterKeyID":"mk","wrappedDEK":"WDEK","doubleWrapping":false,'
    '"internalStorage":true,"isFooterKey":false,"keyMaterialType":"PKMT1"}',
    (True, False): '{"kmsInstanceURL":"DEFAULT","masterKeyID":"mk","wrappedDEK":"WDEK",'
    '"doubleWrapping":false,"internalStorage":true,"isFooterKey":true,'
    '"keyMaterialType":"PKMT1","kmsInstanceID":"DEFAULT"}',
    (False, True): '{"masterKeyID":"mk","wrappedDEK":"WDEK","keyEncryptionKeyID":"KEKID",'
    '"doubleWrapping":true,"internalStorage":true,"isFooterKey":false,'
    '"keyMaterialType":"PKMT1","wrappedKEK":"WKEK"}',
}
INSERTION_ORDER = [
    "keyMaterialType",
    "internalStorage",
    "isFooterKey",
    "kmsInstanceID",
    "kmsInstanceURL",
    "masterKeyID",
    "wrappedDEK",
    "doubleWrapping",
    "keyEncryptionKeyID",
    "wrappedKEK",
]


def material(footer, double):
    return KeyMaterial(
        footer,
        "mk",
        "WDEK",
        double,
        "KEKID" if double else None,
        "WKEK" if double else None,
        "DEFAULT" if footer else None,
        "DEFAULT" if footer else None,
    )


@pytest.mark.parametrize("footer,double", sorted(JAVA_OUTPUT))
def test_key_material_bytes_are_parquet_javas(footer, double):
    got = material(footer, double).to_json()
    assert got == JAVA_OUTPUT[(footer, double)].encode(), "byte-identical to parquet-java"
    keys = list(json.loads(got))
    present = [k for k in INSERTION_ORDER if k in keys]
    assert keys == java_hashmap_order(present), "field order is java.util.HashMap's"
    assert KeyMaterial.parse(got) == material(footer, double), "parses back"


def test_key_material_parse_accepts_old_string_booleans_and_refuses_junk():
    old = json.dumps(
        {
            "keyMaterialType": "PKMT1",
            "internalStorage": "true",
            "isFooterKey": "false",
            "masterKeyID": "m",
            "wrappedDEK": "w",
            "doubleWrapping": "false",
        }
    ).encode()
    assert KeyMaterial.parse(old) == KeyMaterial(False, "m", "w", False)
    with pytest.raises(DecodeError, match="not key material JSON"):
        KeyMaterial.parse(b"\xff{")
    with pytest.raises(DecodeError, match="not an object"):
        KeyMaterial.parse(b"[1]")
    with pytest.raises(UnsupportedVersionError, match="PKMT2"):
        KeyMaterial.parse(b'{"keyMaterialType": "PKMT2"}')
    with pytest.raises(UnsupportedFeatureError, match="external"):
        KeyMaterial.parse(b'{"keyMaterialType": "PKMT1", "internalStorage": false}')
    with pytest.raises(DecodeError, match="masterKeyID"):
        KeyMaterial.parse(
            b'{"keyMaterialType": "PKMT1", "internalStorage": true, "wrappedDEK": "x"}'
        )
    with pytest.raises(DecodeError, match="doubleWrapping"):
        KeyMaterial.parse(
            b'{"keyMaterialType": "PKMT1", "internalStorage": true, '
            b'"masterKeyID": "m", "wrappedDEK": "x", "doubleWrapping": 3}'
        )


def test_local_wrapping_format():
    key, wrapping, aad = os.urandom(16), os.urandom(32), b"kek-id"
    wrapped = wrap_key_locally(key, wrapping, aad)
    raw = base64.b64decode(wrapped)
    assert len(raw) == 12 + 16 + 16, "nonce | ciphertext | tag"
    assert AESGCM(wrapping).decrypt(raw[:12], raw[12:], aad) == key
    assert unwrap_key_locally(wrapped, wrapping, aad) == key
    for bad in (
        lambda: unwrap_key_locally(wrapped, wrapping, b"other"),
        lambda: unwrap_key_locally(wrapped, os.urandom(32), aad),
        lambda: unwrap_key_locally("%%%", wrapping, aad),
        lambda: unwrap_key_locally(base64.b64encode(b"short").decode(), wrapping, aad),
    ):
        with pytest.raises(KeyAccessError):
            bad()


def test_in_memory_kms_is_parquet_javas_in_memory_kms():
    ours = InMemoryKms(MASTER_KEYS)
    theirs = ArrowInMemoryKms()
    dek = os.urandom(16)
    for master in MASTER_KEYS:
        assert theirs.unwrap_key(ours.wrap_key(dek, master), master) == dek
        assert ours.unwrap_key(theirs.wrap_key(dek, master), master) == dek
    with pytest.raises(KeyAccessError, match="no master key 'nope'"):
        ours.wrap_key(dek, "nope")
    with pytest.raises(KeyAccessError, match="footer_master"):
        ours.unwrap_key(ours.wrap_key(dek, "col_master"), "footer_master")
    listed = InMemoryKms.from_key_list(
        ", ".join(f"{k}: {base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())
    )
    assert listed.unwrap_key(ours.wrap_key(dek, "col_master"), "col_master") == dek
    with pytest.raises(ValueError, match="16, 24 or 32"):
        InMemoryKms({"k": b"short"})
    assert "8f9896" not in repr(ours) and "footer_master" in repr(ours)


def test_local_file_kms_refuses_readable_key_files(tmp_path):
    path = tmp_path / "keys"
    kms = LocalFileKms.create(path, ["a", "b"], key_bits=192)
    assert os.stat(path).st_mode & 0o777 == 0o600, "created owner-only"
    dek = os.urandom(32)
    assert LocalFileKms(path).unwrap_key(kms.wrap_key(dek, "b"), "b") == dek, (
        "keys persist across instances"
    )
    with pytest.raises(FileExistsError):
        LocalFileKms.create(path, ["c"])
    for mode in (0o644, 0o640, 0o604, 0o660):
        os.chmod(path, mode)
        with pytest.raises(KeyAccessError, match=f"mode {mode:04o}.*chmod 600"):
            LocalFileKms(path)
    os.chmod(path, 0o400)
    LocalFileKms(path)
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(KeyAccessError):
        LocalFileKms(link)
    with pytest.raises(KeyAccessError, match="cannot open"):
        LocalFileKms(tmp_path / "missing")
    bad = tmp_path / "bad"
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"a: not-base64!\n")
    os.close(fd)
    with pytest.raises(KeyAccessError, match="base64"):
        LocalFileKms(bad)


class CountingKms(InMemoryKms):
    def __init__(self, log, config=None):
        super().__init__(MASTER_KEYS)
        self.log = log
        log.append(
            (
                "client",
                getattr(config, "kms_instance_id", None),
                getattr(config, "kms_instance_url", None),
            )
        )

    def wrap_key(self, key_bytes, master_key_identifier):
        self.log.append(("wrap", master_key_identifier))
        return super().wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key, master_key_identifier):
        self.log.append(("unwrap", master_key_identifier))
        return super().unwrap_key(wrapped_key, master_key_identifier)


def _write(t, props):
    sink = io.BytesIO()
    write_table(t, sink, encryption_properties=props, row_group_size=50)
    return sink.getvalue()


T = pa.table({"a": list(range(200)), "b": [str(i) for i in range(200)], "c": [1.5] * 200})


def test_double_wrapping_asks_the_kms_once_per_master_key():
    log = []
    factory = CryptoFactory(lambda config: CountingKms(log, config))
    config = EncryptionConfiguration(
        "footer_master", {"col_master": ["a", "b"], "other_master": ["c"]}
    )
    files = [
        _write(T, factory.file_encryption_properties(KmsConnectionConfig(), config))
        for _ in range(3)
    ]
    wraps = [e for e in log if e[0] == "wrap"]
    assert sorted(wraps) == [
        ("wrap", "col_master"),
        ("wrap", "footer_master"),
        ("wrap", "other_master"),
    ], f"one KEK per master key for all 3 files, got {wraps}"
    assert sum(e[0] == "client" for e in log) == 1, "the KMS client is cached per token"
    log.clear()
    dprops = factory.file_decryption_properties(KmsConnectionConfig())
    for data in files:
        assert read_table(data, decryption_properties=dprops).equals(T)
    unwraps = [e for e in log if e[0] == "unwrap"]
    assert len(unwraps) == 3, f"one KEK unwrap per KEK id across files, got {unwraps}"


def test_single_wrapping_wraps_every_data_key():
    log = []
    factory = CryptoFactory(lambda config: CountingKms(log, config))
    config = EncryptionConfiguration(
        "footer_master", {"col_master": ["a", "b"]}, double_wrapping=False
    )
    props = factory.file_encryption_properties(KmsConnectionConfig(), config)
    assert [e for e in log if e[0] == "wrap"] == [
        ("wrap", "footer_master"),
        ("wrap", "col_master"),
        ("wrap", "col_master"),
    ]
    assert len({props.footer_key, *props.column_keys.values()}) == 3, "a fresh DEK per key"
    material = json.loads(props.column_key_metadata["a"])
    assert material["doubleWrapping"] is False and "wrappedKEK" not in material
    data = _write(T, props)
    log.clear()
    assert read_table(
        data, decryption_properties=factory.file_decryption_properties(KmsConnectionConfig())
    ).equals(T)
    assert len([e for e in log if e[0] == "unwrap"]) == 3


def test_cache_lifetime_and_removal():
    log = []
    factory = CryptoFactory(lambda config: CountingKms(log, config))
    config = EncryptionConfiguration("footer_master", uniform_encryption=True, cache_lifetime=0.05)
    factory.file_encryption_properties(KmsConnectionConfig(), config)
    time.sleep(0.1)
    factory.file_encryption_properties(KmsConnectionConfig(), config)
    assert sum(e[0] == "wrap" for e in log) == 2, "an expired KEK is regenerated"
    long = EncryptionConfiguration("footer_master", uniform_encryption=True)
    factory.file_encryption_properties(KmsConnectionConfig(key_access_token="t1"), long)
    factory.file_encryption_properties(KmsConnectionConfig(key_access_token="t1"), long)
    factory.file_encryption_properties(KmsConnectionConfig(key_access_token="t2"), long)
    assert sum(e[0] == "wrap" for e in log) == 4, "caches are per access token"
    factory.remove_cache_entries_for_token("t1")
    factory.file_encryption_properties(KmsConnectionConfig(key_access_token="t1"), long)
    factory.remove_cache_entries_for_all_tokens()
    factory.file_encryption_properties(KmsConnectionConfig(key_access_token="t2"), long)
    assert sum(e[0] == "wrap" for e in log) == 6


def test_kms_instance_comes_from_the_footer_key_material_on_read():
    log = []
    factory = CryptoFactory(lambda config: CountingKms(log, config))
    config = EncryptionConfiguration("footer_master", {"col_master": ["a"]})
    props = factory.file_encryption_properties(
        KmsConnectionConfig("kms-7", kms_instance_url="https://kms.example"), config
    )
    assert json.loads(props.footer_key_metadata)["kmsInstanceID"] == "kms-7"
    assert "kmsInstanceID" not in json.loads(props.column_key_metadata["a"])
    data = _write(T, props)
    log.clear()
    read_table(
        data,
        decryption_properties=CryptoFactory(
            lambda config: CountingKms(log, config)
        ).file_decryption_properties(KmsConnectionConfig()),
    )
    assert log[0] == ("client", "kms-7", "https://kms.example")
    defaults = factory.file_encryption_properties(KmsConnectionConfig(), config)
    assert json.loads(defaults.footer_key_metadata)["kmsInstanceURL"] == "DEFAULT"


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_data_key_lengths(bits):
    factory = CryptoFactory(lambda config: InMemoryKms(MASTER_KEYS))
    config = EncryptionConfiguration(
        "footer_master",
        {"other_master": ["b"]},
        data_key_length_bits=bits,
        encryption_algorithm="AES_GCM_CTR_V1",
    )
    props = factory.file_encryption_properties(KmsConnectionConfig(), config)
    assert len(props.footer_key) == len(props.column_keys["b"]) == bits // 8
    assert read_table(
        _write(T, props),
        decryption_properties=factory.file_decryption_properties(
            KmsConnectionConfig(), DecryptionConfiguration(cache_lifetime=30)
        ),
    ).equals(T)


def test_factory_decryption_accepts_plaintext_files():
    plain = io.BytesIO()
    write_table(T, plain)
    dprops = CryptoFactory(lambda c: InMemoryKms(MASTER_KEYS)).file_decryption_properties(
        KmsConnectionConfig()
    )
    assert read_table(plain.getvalue(), decryption_properties=dprops).equals(T), (
        "like pyarrow's and parquet-java's factories, plaintext files are allowed"
    )


def test_a_pyarrow_kms_client_drops_in():
    factory = CryptoFactory(lambda config: ArrowInMemoryKms(config))
    config = EncryptionConfiguration("footer_master", "col_master: a, b; other_master: c")
    assert config.column_keys == {"col_master": ["a", "b"], "other_master": ["c"]}
    props = factory.file_encryption_properties(KmsConnectionConfig(), config)
    assert read_table(
        _write(T, props),
        decryption_properties=factory.file_decryption_properties(KmsConnectionConfig()),
    ).equals(T)


def test_kms_failures_are_key_access_errors():
    class Broken(KmsClient):
        def wrap_key(self, key_bytes, master_key_identifier):
            raise ConnectionError("KMS down")

        def unwrap_key(self, wrapped_key, master_key_identifier):
            raise PermissionError("denied")

    config = EncryptionConfiguration(
        "footer_master", uniform_encryption=True, double_wrapping=False
    )
    with pytest.raises(KeyAccessError, match="KMS down"):
        CryptoFactory(lambda c: Broken()).file_encryption_properties(KmsConnectionConfig(), config)
    good = CryptoFactory(lambda c: InMemoryKms(MASTER_KEYS))
    data = _write(T, good.file_encryption_properties(KmsConnectionConfig(), config))
    with pytest.raises(KeyAccessError, match="footer key.*denied"):
        read_table(
            data,
            decryption_properties=CryptoFactory(lambda c: Broken()).file_decryption_properties(
                KmsConnectionConfig()
            ),
        )
    with pytest.raises(KeyAccessError, match="factory failed"):
        CryptoFactory(lambda c: 1 / 0).file_encryption_properties(KmsConnectionConfig(), config)
    with pytest.raises(TypeError, match="wrap_key"):
        CryptoFactory(lambda c: object()).file_encryption_properties(KmsConnectionConfig(), config)
    with pytest.raises(UnsupportedVersionError, match="footer key: key material type 'PKMT9'"):
        read_table(
            _write(
                T,
                FileEncryptionProperties(
                    os.urandom(16), footer_key_metadata=b'{"keyMaterialType": "PKMT9"}'
                ),
            ),
            decryption_properties=good.file_decryption_properties(KmsConnectionConfig()),
        )
    with pytest.raises(KeyAccessError, match="retriever returned str"):
        read_table(
            data,
            decryption_properties=FileDecryptionProperties(
                key_retriever=lambda metadata: "not bytes"
            ),
        )


def test_configuration_validation():
    with pytest.raises(ValueError, match="either"):
        EncryptionConfiguration("f", {"k": ["a"]}, uniform_encryption=True)
    with pytest.raises(ValueError, match="uniform_encryption=True"):
        EncryptionConfiguration("f")
    with pytest.raises(ValueError, match="listed under master keys"):
        EncryptionConfiguration("f", {"k1": ["a"], "k2": ["a"]})
    with pytest.raises(ValueError, match="128, 192 or 256"):
        EncryptionConfiguration("f", uniform_encryption=True, data_key_length_bits=64)
    with pytest.raises(ValueError, match="encryption_algorithm"):
        EncryptionConfiguration("f", uniform_encryption=True, encryption_algorithm="AES_CTR")
    with pytest.raises(UnsupportedFeatureError, match="external key material"):
        EncryptionConfiguration("f", uniform_encryption=True, internal_key_material=False)
    with pytest.raises(ValueError, match="positive"):
        DecryptionConfiguration(cache_lifetime=0)
    with pytest.raises(TypeError):
        EncryptionConfiguration("", uniform_encryption=True)
    assert "secret-token" not in repr(KmsConnectionConfig(key_access_token="secret-token"))
