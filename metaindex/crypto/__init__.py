"""Parquet Modular Encryption: properties, KMS clients and envelope key tools.

Low level — keys in hand::

    props = FileEncryptionProperties(footer_key, column_keys={"ssn": column_key})
    write_table(table, "f.parquet", encryption_properties=props)
    read_table("f.parquet", decryption_properties=FileDecryptionProperties(
        footer_key=footer_key, column_keys={"ssn": column_key}))

Envelope encryption — master keys in a KMS, interoperable with pyarrow and Spark::

    factory = CryptoFactory(lambda config: InMemoryKms({"k1": master_key, "k2": other}))
    props = factory.file_encryption_properties(
        KmsConnectionConfig(), EncryptionConfiguration("k1", {"k2": ["ssn"]}))
    dprops = factory.file_decryption_properties(KmsConnectionConfig())
"""

from metaindex.crypto.awskms import AwsKms
from metaindex.crypto.factory import CryptoFactory, DecryptionConfiguration, EncryptionConfiguration
from metaindex.crypto.key_material import KeyMaterial
from metaindex.crypto.kms import InMemoryKms, KmsClient, KmsConnectionConfig, LocalFileKms
from metaindex.crypto.properties import (
    ALGORITHMS,
    FileDecryptionProperties,
    FileEncryptionProperties,
)

__all__ = [
    "FileEncryptionProperties",
    "FileDecryptionProperties",
    "ALGORITHMS",
    "KmsClient",
    "KmsConnectionConfig",
    "InMemoryKms",
    "LocalFileKms",
    "AwsKms",
    "CryptoFactory",
    "EncryptionConfiguration",
    "DecryptionConfiguration",
    "KeyMaterial",
]
