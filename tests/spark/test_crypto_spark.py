"""Parquet Modular Encryption against Spark (parquet-java 1.17's PropertiesDrivenCryptoFactory).

Spark reads the encrypted files we write and we read the ones Spark writes, with the same master
keys on both sides: plaintext and encrypted footer, single and double wrapping, column keys that
differ from the footer key, GCM and GCM-CTR. pyspark's jars lack parquet-java's test-only
``InMemoryKMS``, so this module compiles a compatible ``KmsClient`` (same wrapping as
``metaindex.crypto.InMemoryKms``: AES-GCM with AAD = master key id, via parquet-java's own
``KeyToolkit.encryptKeyLocally``) against pyspark's jars and adds it to the session with
``ADD JAR``. Every encryption property is a per-read/per-write data source option, so the shared
session's Hadoop configuration keeps its settings (only its class loader is widened, for this
module).
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess

import pyarrow as pa
import pytest

from metaindex.crypto import (
    CryptoFactory,
    EncryptionConfiguration,
    InMemoryKms,
    KmsConnectionConfig,
)
from metaindex.errors import KeyAccessError
from metaindex.parquet.reader import ParquetFile
from metaindex.parquet.writer import write_table
from tests.reference.crypto import java_hashmap_order

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MASTER_KEYS = {
    "footer_master": bytes.fromhex("8f9896d76b15df0249abd7a1c928efe8"),
    "col_master": bytes.fromhex("39512fc8997fedcb7d1ae28c53db2c94fed45981613c3ccd"),
    "other_master": bytes.fromhex(
        "83aa153a97a8689b4348ce1c4e0509685aa4b8ca9098f8df523ad354b0c2d42e"
    ),
}
KEY_LIST = ", ".join(f"{k}: {base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())
KMS_CLASS = "metaindex.testkms.InMemoryKms"
JAVA_KMS = """\
package metaindex.testkms;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.crypto.keytools.KeyToolkit;
import org.apache.parquet.crypto.keytools.KmsClient;

/** parquet-java's InMemoryKMS sample: master keys from parquet.encryption.key.list. */
public class InMemoryKms implements KmsClient {
  private final Map<String, byte[]> keys = new HashMap<>();

  @Override
  public void initialize(Configuration conf, String instanceId, String instanceUrl, String token) {
    for (String entry : conf.getTrimmedStrings("parquet.encryption.key.list")) {
      String[] parts = entry.split(":");
      keys.put(parts[0].trim(), Base64.getDecoder().decode(parts[1].trim()));
    }
  }

  private byte[] master(String id) {
    byte[] key = keys.get(id);
    if (key == null) throw new KeyAccessDeniedException("no master key " + id);
    return key;
  }

  @Override
  public String wrapKey(byte[] keyBytes, String id) {
    return KeyToolkit.encryptKeyLocally(keyBytes, master(id), id.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public byte[] unwrapKey(String wrapped, String id) {
    return KeyToolkit.decryptKeyLocally(wrapped, master(id), id.getBytes(StandardCharsets.UTF_8));
  }
}
"""

# (plaintext footer, double wrapping, algorithm)
MODES = [
    pytest.param((False, True, "AES_GCM_V1"), id="encrypted-footer-double"),
    pytest.param((False, False, "AES_GCM_CTR_V1"), id="encrypted-footer-single-ctr"),
    pytest.param((True, True, "AES_GCM_CTR_V1"), id="plaintext-footer-double-ctr"),
    pytest.param((True, False, "AES_GCM_V1"), id="plaintext-footer-single"),
]
COLUMN_KEYS = {"col_master": ["ssn", "amount"], "other_master": ["city"]}


@pytest.fixture(scope="module")
def kms_jar(tmp_path_factory, spark):
    """The Java KMS compiled against pyspark's jars, added to the session."""
    if shutil.which("javac") is None or shutil.which("jar") is None:
        pytest.skip("no JDK (javac, jar) to compile the test KMS client")
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    work = tmp_path_factory.mktemp("kms")
    source = work / "metaindex" / "testkms" / "InMemoryKms.java"
    source.parent.mkdir(parents=True)
    source.write_text(JAVA_KMS)
    classes = work / "classes"
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", os.path.join(jars, "*"), str(source)],
        check=True,
        capture_output=True,
    )
    jar = work / "testkms.jar"
    subprocess.run(
        ["jar", "cf", str(jar), "-C", str(classes), "."], check=True, capture_output=True
    )
    spark.sql(f"ADD JAR '{jar}'")  # into the session's jar class loader and the executors
    # Per-query Hadoop confs copy the context's class loader, the JVM's application loader,
    # which cannot see added jars; point it at the session's jar loader (a child of it, so
    # every class it found before it still finds) for this module, then put it back.
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    previous = hadoop_conf.getClassLoader()
    hadoop_conf.setClassLoader(spark._jsparkSession.sharedState().jarClassLoader())
    yield jar
    hadoop_conf.setClassLoader(previous)


def spark_options(plaintext=False, double=True, algorithm="AES_GCM_V1", write=False) -> dict:
    options = {
        "parquet.crypto.factory.class": (
            "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory"
        ),
        "parquet.encryption.kms.client.class": KMS_CLASS,
        "parquet.encryption.key.list": KEY_LIST,
    }
    if write:
        options.update(
            {
                "parquet.encryption.footer.key": "footer_master",
                "parquet.encryption.column.keys": "; ".join(
                    f"{k}: {', '.join(v)}" for k, v in COLUMN_KEYS.items()
                ),
                "parquet.encryption.plaintext.footer": str(plaintext).lower(),
                "parquet.encryption.double.wrapping": str(double).lower(),
                "parquet.encryption.algorithm": algorithm,
                "parquet.bloom.filter.enabled#ssn": "true",
            }
        )
    return options


def table(n=3000) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "ssn": pa.array([f"{i * 7919 % 10**9:09d}" for i in range(n)]),
            "amount": pa.array([i * 0.25 - 100 for i in range(n)]),
            "city": pa.array([["Oslo", "Lima", None, "Pune"][i % 4] for i in range(n)]),
        }
    )


def ours_factory():
    return CryptoFactory(lambda config: InMemoryKms(MASTER_KEYS))


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.mark.parametrize("mode", MODES)
def test_spark_reads_ours(spark, kms_jar, tmp_path, mode):
    plaintext, double, algorithm = mode
    t = table()
    config = EncryptionConfiguration(
        "footer_master",
        COLUMN_KEYS,
        plaintext_footer=plaintext,
        double_wrapping=double,
        encryption_algorithm=algorithm,
    )
    out = tmp_path / "ours"
    out.mkdir()
    for part in range(2):  # two files, each with its own data keys
        props = ours_factory().file_encryption_properties(KmsConnectionConfig(), config)
        write_table(
            t.slice(part * 1500, 1500),
            out / f"part-{part}.parquet",
            encryption_properties=props,
            row_group_size=500,
            data_page_size=2048,
        )
    df = (
        spark.read.options(**spark_options())
        .schema("id long, ssn string, amount double, city string")
        .parquet(str(out))
    )
    rows = sorted(tuple(r) for r in df.collect())
    assert rows == _rows(t), "Spark decrypts every column we encrypted"
    if plaintext:  # legacy access: Spark without keys still reads the plaintext column
        plain = spark.read.schema("id long").parquet(str(out))
        assert sorted(r[0] for r in plain.collect()) == list(range(3000))


@pytest.mark.parametrize("mode", MODES)
def test_we_read_sparks(spark, kms_jar, tmp_path, mode):
    plaintext, double, algorithm = mode
    t = table()
    out = str(tmp_path / "spark")
    (
        spark.createDataFrame(t.to_pandas())
        .repartition(2)
        .write.options(**spark_options(plaintext, double, algorithm, write=True))
        .parquet(out)
    )
    files = sorted(glob.glob(os.path.join(out, "*.parquet")))
    assert files, "Spark wrote part files"
    dprops = ours_factory().file_decryption_properties(KmsConnectionConfig())
    got = []
    for path in files:
        with open(path, "rb") as fh:
            head = fh.read(4)
        assert head == (b"PAR1" if plaintext else b"PARE")
        pf = ParquetFile(path, decryption_properties=dprops, verify_checksums=True)
        part = pf.read().select(t.column_names)
        got.append(part)
        ssn = [v.encode() for v in part.column("ssn").to_pylist()]
        assert pf.bloom_filter(0, "ssn").might_contain(ssn, physical_type=6).all(), (
            "parquet-java's encrypted bloom filter decrypts and holds every value"
        )
        assert pf.column_index(0, "ssn") is not None and pf.offset_index(0, "amount") is not None, (
            "parquet-java's encrypted page indexes decrypt (zero-padded Thrift modules)"
        )
        assert pf.statistics(0, "ssn").min == min(part.column("ssn").to_pylist())
        if plaintext:  # the signed plaintext footer: plaintext columns read without keys
            assert ParquetFile(path).read(columns=["id"]).num_rows == pf.num_rows
            with pytest.raises(KeyAccessError):
                ParquetFile(path).read(columns=["ssn"])
    assert _rows(pa.concat_tables(got)) == _rows(t), "we decrypt every column Spark encrypted"


def test_spark_key_material_is_byte_compatible(spark, kms_jar, tmp_path):
    """parquet-java's key material has exactly our fields, types and (HashMap) field order."""
    out = str(tmp_path / "spark")
    (
        spark.createDataFrame(table(10).to_pandas())
        .coalesce(1)
        .write.options(**spark_options(True, True, write=True))
        .parquet(out)
    )
    path = sorted(glob.glob(os.path.join(out, "*.parquet")))[0]
    footer = ParquetFile(path).footer
    theirs = [footer.footer_signing_key_metadata]
    for chunk in footer.row_groups[0].columns:
        if chunk.crypto_metadata is not None:
            theirs.append(chunk.crypto_metadata.ENCRYPTION_WITH_COLUMN_KEY.key_metadata)
    config = EncryptionConfiguration("footer_master", COLUMN_KEYS, plaintext_footer=True)
    props = ours_factory().file_encryption_properties(KmsConnectionConfig(), config)
    ours = [props.footer_key_metadata, *props.column_key_metadata.values()]
    for theirs_md, ours_md in zip(theirs, ours, strict=True):
        a, b = json.loads(theirs_md), json.loads(ours_md)
        assert list(a) == list(b) == java_hashmap_order(list(a)), "same fields, same order"
        assert {k: type(v) for k, v in a.items()} == {k: type(v) for k, v in b.items()}
