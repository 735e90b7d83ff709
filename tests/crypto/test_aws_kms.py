"""AwsKms against a real AWS KMS API: moto's server on 127.0.0.1 (the same process serves S3
and KMS), configured by the standard AWS environment variables only.

Wrapping round-trips through KMS Encrypt / Decrypt; a wrapped key does not unwrap under another
key or under another label of the same key (the encryption context names the label). An
encrypted store with its table and store on S3 and its master keys in KMS is built, queried and
refreshed; a fresh process (no key caches) reads it with the same spec, and gets a
KeyAccessError once the footer key's alias points to another key or is deleted. moto does not
refuse Decrypt under a disabled or pending-deletion key (AWS KMS does: DisabledException,
KMSInvalidStateException), so revocation is tested through the alias.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.api import StoreEncryption
from metaindex.crypto import AwsKms, KmsConnectionConfig
from metaindex.crypto.kms_spec import kms_factory
from metaindex.errors import KeyAccessError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOOTER, INDEX = "alias/mi-footer", "alias/mi-index"


@pytest.fixture
def kms(s3_env):
    """(boto3 KMS client, {alias: key id}) with two fresh keys behind FOOTER and INDEX."""
    import boto3

    client = boto3.client("kms", endpoint_url=s3_env.endpoint, region_name="us-east-1")
    keys = {}
    for alias in (FOOTER, INDEX):
        key = client.create_key(Description=f"metaindex test {alias}")["KeyMetadata"]["KeyId"]
        try:
            client.delete_alias(AliasName=alias)
        except client.exceptions.NotFoundException:
            pass
        client.create_alias(AliasName=alias, TargetKeyId=key)
        keys[alias] = key
    return client, keys


def test_wrap_and_unwrap_through_kms(kms):
    client, keys = kms
    aws = AwsKms(KmsConnectionConfig())
    data_key = os.urandom(16)
    wrapped = aws.wrap_key(data_key, FOOTER)
    blob = base64.b64decode(wrapped)
    assert data_key not in blob, "the wrapped key is KMS ciphertext, not the key"
    assert aws.unwrap_key(wrapped, FOOTER) == data_key
    with pytest.raises(KeyAccessError, match="refused"):
        aws.unwrap_key(wrapped, keys[INDEX])  # another key
    with pytest.raises(KeyAccessError, match="refused"):
        aws.unwrap_key(wrapped, keys[FOOTER])  # the same key under another label: context
    with pytest.raises(KeyAccessError, match="NotFound"):
        aws.wrap_key(data_key, "alias/no-such-key")
    with pytest.raises(KeyAccessError, match="not base64"):
        aws.unwrap_key("!!", FOOTER)


def test_spec_and_unreachable_service(monkeypatch):
    factory = kms_factory("aws:eu-west-1")
    client = factory(KmsConnectionConfig(kms_instance_url="http://127.0.0.1:9"))
    assert isinstance(client, AwsKms) and client.region == "eu-west-1"
    assert client.endpoint == "http://127.0.0.1:9"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with pytest.raises(KeyAccessError, match="failed"):
        client.wrap_key(b"\0" * 16, FOOTER)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert kms_factory("aws:")(None).region == "ap-south-1", "aws: takes AWS_REGION"


def _fresh_prune(table: str, store: str, where: str) -> dict:
    script = textwrap.dedent(f"""
        import json
        from metaindex import MetaIndex
        from metaindex.api import StoreEncryption
        from metaindex.crypto.kms_spec import kms_factory
        from metaindex.errors import KeyAccessError
        enc = StoreEncryption(kms_factory("aws:"), {FOOTER!r})
        try:
            kept = MetaIndex({table!r}, store={store!r}, encryption=enc).prune({where!r}).kept
            print(json.dumps({{"kept": sorted(kept)}}))
        except KeyAccessError as exc:
            print(json.dumps({{"error": str(exc)}}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_encrypted_store_on_s3_with_keys_in_kms(kms, s3_env):
    client, keys = kms
    data, meta = s3_env.bucket(), s3_env.bucket()
    fs = s3_env.arrow_filesystem()
    for i in range(4):
        pq.write_table(
            pa.table({"temp": pa.array(range(10 * i, 10 * i + 10), pa.int64())}),
            f"{data}/t/part-{i}.parquet",
            filesystem=fs,
        )
    table, store = f"s3://{data}/t", f"s3://{meta}/idx"
    enc = StoreEncryption(kms_factory("aws:"), FOOTER, index_keys={"temp": INDEX})
    mi = MetaIndex(table, store=store, encryption=enc)
    mi.index_builder().add_min_max_index("temp").build()
    for part in mi.snapshot().parts:
        raw = mi._store.storage.read(f"{mi.store_path}/{part}")
        assert raw[:4] == b"PARE", "parts have encrypted footers"
    assert [p.rsplit("/", 1)[-1] for p in mi.prune("temp >= 35").kept] == ["part-3.parquet"]
    pq.write_table(
        pa.table({"temp": pa.array(range(100, 110), pa.int64())}),
        f"{data}/t/part-9.parquet",
        filesystem=fs,
    )
    assert mi.refresh().entries_added == 1
    assert _fresh_prune(table, store, "temp > 100") == {"kept": [f"{table}/part-9.parquet"]}, (
        "a fresh process reads the store with the same KMS spec"
    )

    other = client.create_key()["KeyMetadata"]["KeyId"]
    client.update_alias(AliasName=FOOTER, TargetKeyId=other)
    wrong = _fresh_prune(table, store, "temp > 100")
    assert "refused" in wrong.get("error", ""), f"the label now names another key: {wrong}"
    client.delete_alias(AliasName=FOOTER)
    revoked = _fresh_prune(table, store, "temp > 100")
    assert "NotFound" in revoked.get("error", ""), f"the label names no key: {revoked}"
    assert keys[FOOTER] != other
