"""ObjectStorage on a real S3 API (moto's server): the conditional PUT commits rely on, listings
with size / mtime / ETag, configuration, errors; plus the scheme spellings of table URIs."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pytest

from metaindex.errors import StorageError, StorageNotFoundError
from metaindex.store import canonical_scheme, normalize_table_uri, scheme_spellings, table_id_for
from metaindex.store.localfs import LocalStorage
from metaindex.store.objectstore import (
    ObjectStorage,
    arrow_filesystem,
    arrow_s3_options,
    check_storage_options,
    is_object_store_uri,
    s3a_storage_options,
)
from metaindex.store.schemes import open_storage
from tests.conftest import SERVERS


@pytest.fixture
def storage(moto_s3):
    bucket = moto_s3.bucket()
    return ObjectStorage(f"s3://{bucket}", moto_s3.options), f"s3://{bucket}/root"


@pytest.fixture(params=sorted(SERVERS))
def any_storage(request):
    """An ObjectStorage on each object store server (S3, GCS, Azure) in turn."""
    server = request.getfixturevalue(SERVERS[request.param])
    base = f"{server.scheme}://{server.bucket()}"
    return ObjectStorage(base, server.options), f"{base}/root"


def test_second_conditional_put_of_a_key_fails_and_keeps_the_first(any_storage):
    s, root = any_storage
    assert s.create_if_absent(f"{root}/_log/0.json", b"first", "")
    assert not s.create_if_absent(f"{root}/_log/0.json", b"second", ""), (
        "the server honours the create-only precondition, so a second writer loses"
    )
    assert s.read(f"{root}/_log/0.json") == b"first"
    import obstore
    from obstore.exceptions import AlreadyExistsError

    with pytest.raises(AlreadyExistsError):  # the raw request, without our read-back
        obstore.put(s.store, "root/_log/0.json", b"first", mode="create", use_multipart=False)


def test_a_retry_that_meets_its_own_object_counts_as_won(any_storage):
    s, root = any_storage
    s.write(f"{root}/e", b"same bytes")  # as if a first PUT landed and its response was lost
    assert s.create_if_absent(f"{root}/e", b"same bytes", "")
    assert not s.create_if_absent(f"{root}/e", b"other bytes", "")


def test_listing_gives_size_mtime_and_etag(storage):
    s, root = storage
    s.write(f"{root}/d/a", b"12345")
    s.write(f"{root}/d/sub/b", b"x")
    stats = s.list(f"{root}/d")
    assert [(f.name, f.size) for f in stats] == [("a", 5)], "direct children only"
    assert stats[0].etag.strip('"') == "827ccb0eea8a706c4c34a16891f84e7b", "S3's ETag: MD5"
    assert stats[0].mtime_ms > 1_600_000_000_000
    assert sorted(f.name for f in s.walk(f"{root}/d")) == ["a", "sub/b"]
    assert s.list(f"{root}/missing") == [] and not s.exists(f"{root}/missing")
    s.remove_dir(f"{root}/d")
    assert s.walk(f"{root}/d") == []
    s.delete(f"{root}/d/a")  # a missing object is not an error


def test_missing_object_and_bucket(storage, moto_s3):
    s, root = storage
    with pytest.raises(FileNotFoundError):
        s.read(f"{root}/nothing")
    gone = ObjectStorage("s3://no-such-bucket-mi", moto_s3.options)
    with pytest.raises(StorageNotFoundError, match="does not exist"):
        gone.list("s3://no-such-bucket-mi/x")
    with pytest.raises(StorageNotFoundError):
        gone.create_if_absent("s3://no-such-bucket-mi/x/0.json", b"{}", "")


def test_unreachable_endpoint_is_a_storage_error():
    s = ObjectStorage(
        "s3://b",
        {
            "endpoint": "http://127.0.0.1:9",
            "access_key_id": "k",
            "secret_access_key": "s",
            "region": "us-east-1",
            "timeout": "2s",
            "connect_timeout": "1s",
            "retry_config": {"max_retries": 1, "retry_timeout": timedelta(seconds=1)},
        },
    )
    _ = s.store  # configured lazily
    with pytest.raises(StorageError):
        s.list("s3://b/x")


def test_pickles_for_worker_processes(storage):
    s, root = storage
    s.write(f"{root}/p", b"1")
    clone = pickle.loads(pickle.dumps(s))
    assert clone.read(f"{root}/p") == b"1" and clone.key == s.key


def test_open_storage_picks_the_backend(tmp_path, moto_s3):
    assert isinstance(open_storage(tmp_path)[0], LocalStorage)
    s, root = open_storage("S3A://bucket/a/b/", storage_options=moto_s3.options)
    assert isinstance(s, ObjectStorage) and root == "s3://bucket/a/b"
    with pytest.raises(TypeError, match="storage_options"):
        open_storage("s3://bucket/a", storage_options=["endpoint"])


@pytest.mark.parametrize(
    "spelling", ["s3a://bucket/t", "s3n://bucket/t/", "S3://bucket//t", "S3A://bucket/x/../t"]
)
def test_scheme_spellings_name_one_table(spelling):
    assert normalize_table_uri(spelling) == "s3://bucket/t"
    assert table_id_for(normalize_table_uri(spelling)) == table_id_for("s3://bucket/t"), (
        "a table Spark reads as s3a:// finds the index built for s3://"
    )


def test_canonical_scheme_and_object_store_uris():
    assert [canonical_scheme(s) for s in ("s3a", "S3N", "s3", "gcs", "gs", "file", "hdfs")] == [
        "s3",
        "s3",
        "s3",
        "gs",
        "gs",
        "file",
        "hdfs",
    ]
    assert scheme_spellings("s3a") == ("s3", "s3a", "s3n") and scheme_spellings("file") == ("file",)
    assert is_object_store_uri("s3a://b/x") and is_object_store_uri("gs://b/x")
    assert is_object_store_uri("abfss://c@acct.dfs.core.windows.net/x")
    assert not is_object_store_uri("/data/t") and not is_object_store_uri("hdfs://nn/t")


def test_storage_options_for_pyarrow():
    assert check_storage_options(None) == {}
    assert arrow_s3_options(
        {
            "endpoint": "http://127.0.0.1:9000/",
            "region": "eu-west-1",
            "access_key_id": "k",
            "secret_access_key": "s",
        }
    ) == {
        "scheme": "http",
        "endpoint_override": "127.0.0.1:9000",
        "region": "eu-west-1",
        "access_key": "k",
        "secret_key": "s",
    }
    assert arrow_s3_options({}) == {}


def test_s3a_settings_become_storage_options():
    assert s3a_storage_options({"spark.app.name": "x"}) == {}
    conf = {
        "spark.hadoop.fs.s3a.endpoint": "minio:9000",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.access.key": "old",
        "fs.s3a.access.key": "k",
        "fs.s3a.secret.key": "s",
        "fs.s3a.session.token": "t",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.bucket.b.endpoint": "ignored",
    }
    assert s3a_storage_options(conf) == {
        "endpoint": "http://minio:9000",
        "virtual_hosted_style_request": "false",
        "access_key_id": "k",
        "secret_access_key": "s",
        "session_token": "t",
        "region": "eu-west-1",
    }, "the session's fs.s3a.* wins over spark.hadoop.fs.s3a.*"
    assert s3a_storage_options(
        {"fs.s3a.endpoint": "s3.example.com", "fs.s3a.path.style.access": "false"}
    ) == {"endpoint": "https://s3.example.com", "virtual_hosted_style_request": "true"}
    anonymous = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    assert s3a_storage_options({"fs.s3a.aws.credentials.provider": anonymous}) == {
        "skip_signature": "true"
    }


def test_arrow_filesystems_follow_the_storage_options(monkeypatch):
    import pyarrow.fs as pafs

    for name in (
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_BASE_URL",
        "GOOGLE_SKIP_SIGNATURE",
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_STORAGE_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    fs, path = arrow_filesystem("s3://b/t/x", {"endpoint": "http://127.0.0.1:9000"})
    assert isinstance(fs, pafs.S3FileSystem) and path == "b/t/x"
    key = '{"gcs_base_url": "http://127.0.0.1:4443", "disable_oauth": true}'
    fs, path = arrow_filesystem("gs://b/t", {"service_account_key": key})
    assert isinstance(fs, pafs.GcsFileSystem) and path == "b/t"
    fs, path = arrow_filesystem(
        "abfss://c@acct.dfs.core.windows.net/t",
        {"account_key": "a2V5", "endpoint": "http://127.0.0.1:1/acct"},
    )
    assert isinstance(fs, pafs.AzureFileSystem) and path == "c/t"
    assert pickle.loads(pickle.dumps(fs)) is not None, "Spark tasks receive it pickled"
