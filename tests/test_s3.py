"""Tables and indexes on object stores, end to end, against real API servers on 127.0.0.1: S3
(moto), GCS (fake-gcs-server) and Azure Blob (Azurite).

Configured the way users do it: only each service's standard environment variables (S3:
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION; GCS:
GOOGLE_SERVICE_ACCOUNT_KEY; Azure: AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
AZURE_STORAGE_ENDPOINT), or a ``storage_options`` dict. On every store: build / prune / refresh
/ compact / vacuum / history of a table into a store in another bucket, a fresh process pruning
afterwards, two processes refreshing at once, a bucket store for a local table, an encrypted
store, listings with ETags, missing buckets (typed errors). On S3 also: Hadoop's s3a://
spelling, a session's fs.s3a.* conf as the only settings, the requests a prune makes, the CLI,
and bad credentials as typed errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.api import StoreEncryption
from metaindex.engine.listing import list_files, locate_table
from metaindex.engine.prune import relativize
from metaindex.errors import StorageAccessError, StorageError, StorageNotFoundError
from metaindex.store import normalize_table_uri
from tests.conftest import SERVERS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_file(fs, path: str, lo: int, hi: int, city: str) -> None:
    """A Parquet file whose temp column spans [lo, hi]."""
    n = hi - lo + 1
    table = pa.table(
        {"temp": pa.array(range(lo, hi + 1), pa.int64()), "city": pa.array([city] * n)}
    )
    pq.write_table(table, path, filesystem=fs)


def _table(server):
    """(table URI, store URI, pyarrow fs): 4 files, temp ranges 0-9, 10-19, 20-29, 30-39, in
    one bucket of ``server``; the store in another."""
    data, meta = server.bucket(), server.bucket()
    fs = server.arrow_filesystem()
    for i in range(4):
        write_file(fs, f"{data}/t/day={i}/part-{i}.parquet", 10 * i, 10 * i + 9, f"c{i}")
    return f"{server.scheme}://{data}/t", f"{server.scheme}://{meta}/idx", fs


@pytest.fixture
def s3_table(s3_env):
    """The table on S3 (moto)."""
    return _table(s3_env)


@pytest.fixture
def bucket_table(bucket_env):
    """The table on each object store in turn."""
    return _table(bucket_env)


def _build(table, store, **kw):
    mi = MetaIndex(table, store=store, **kw)
    mi.index_builder().add_min_max_index("temp").add_value_list_index("city").build()
    return mi


def _names(paths):
    return sorted(p.rsplit("/", 2)[-2] for p in paths)


def test_build_prune_refresh_compact_with_only_the_environment(bucket_table):
    table, store, fs = bucket_table
    mi = _build(table, store)
    assert mi.store_path.startswith(store + "/"), "the index lives in the S3 store"
    result = mi.prune("temp >= 25")
    assert _names(result.kept) == ["day=2", "day=3"], "max 9 and 19 < 25: skipped"
    assert all(p.startswith(table + "/") for p in result.kept), "paths reported as URIs"
    write_file(fs, f"{table[5:]}/day=4/part-4.parquet", 100, 109, "c4")
    fs.delete_file(f"{table[5:]}/day=0/part-0.parquet")
    refreshed = mi.refresh()
    assert refreshed.status == "SUCCESS" and refreshed.entries_added == 1
    assert refreshed.entries_removed == 1, "the deleted file's entry"
    assert _names(mi.prune("temp > 100").kept) == ["day=4"]

    def objects():
        return {n: (e.size, e.mtime, e.rows) for n, e in mi.snapshot().files.items()}

    before = objects()
    version = mi.compact()
    assert len(mi.snapshot().parts) == 1 and objects() == before
    assert [e.operation for e in mi.history()][-3:] == ["build", "refresh", "compact"]
    assert mi.describe().freshness.up_to_date
    vac = mi.vacuum(timedelta(0), force=True)
    assert vac.version == version + 1 and vac.deleted_parts, "the compacted parts are gone"
    assert _names(mi.prune("temp >= 25").kept) == ["day=2", "day=3", "day=4"]


def test_fresh_process_prunes_what_this_one_built(bucket_table):
    table, store, _ = bucket_table
    _build(table, store)
    script = textwrap.dedent(f"""
        import json
        from metaindex import MetaIndex
        r = MetaIndex({table!r}, store={store!r}).prune("temp < 12")
        print(json.dumps(sorted(r.kept)))
    """)
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert _names(json.loads(out)) == ["day=0", "day=1"], "only the environment is shared"


def test_default_store_is_next_to_a_bucket_table(bucket_table, monkeypatch):
    table, _, _ = bucket_table
    monkeypatch.delenv("METAINDEX_STORE", raising=False)
    mi = _build(table, None)
    assert mi.store_path.startswith(table.rsplit("/", 1)[0] + "/_metaindex/")
    assert len(list_files(locate_table(table))) == 4, "the store is not listed as data"


def test_two_processes_refreshing_at_once_leave_one_history(bucket_table, tmp_path):
    table, store, fs = bucket_table
    mi = _build(table, store)
    for i in range(4, 10):
        write_file(fs, f"{table[5:]}/day={i}/part-{i}.parquet", 10 * i, 10 * i + 9, f"c{i}")
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import json, os, time
        from metaindex import MetaIndex
        from metaindex.engine.executors import SerialExecutor
        mi = MetaIndex({table!r}, store={store!r})
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        r = mi.refresh(executor=SerialExecutor())
        print(json.dumps([r.status, r.version, r.entries_added]))
    """)
    env = {**os.environ, "PYTHONPATH": REPO}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(2.5)  # both imported and waiting
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    statuses = sorted(r[0] for r in results)
    assert statuses in (["NO_CHANGE", "SUCCESS"], ["SUCCESS", "SUCCESS"]), results
    history = mi.history()
    assert [e.version for e in history] == list(range(len(history))), "no gap, no duplicate"
    added = sum(r[2] for r in results if r[0] == "SUCCESS")
    assert added == 6, f"each new file indexed exactly once: {results}"
    snap = mi.snapshot()
    assert len(snap.files) == 10 and snap.version == history[-1].version
    kept = MetaIndex(table, store=store).prune("temp >= 85").kept
    assert _names(kept) == ["day=8", "day=9"]


def test_bucket_store_for_a_local_table(tmp_path, bucket_env):
    import pyarrow.fs as pafs

    local = pafs.LocalFileSystem()
    root = tmp_path / "t"
    for i in range(3):
        os.makedirs(root / f"k={i}")
        write_file(local, str(root / f"k={i}" / "f.parquet"), 10 * i, 10 * i + 9, "x")
    store = f"{bucket_env.scheme}://{bucket_env.bucket()}/idx"
    mi = _build(str(root), store)
    assert mi.store_path.startswith(store)
    assert _names(mi.prune("temp < 5").kept) == ["k=0"]
    assert not os.path.exists(tmp_path / "_metaindex"), "nothing written next to the table"


def _without_env(server, monkeypatch) -> tuple:
    """(data bucket, store bucket) of ``server`` with its environment variables unset; the
    data bucket holds t/a.parquet (temp 0-9) and t/b.parquet (10-19)."""
    for variable in server.env:
        monkeypatch.delenv(variable, raising=False)
    data, meta = server.bucket(), server.bucket()
    fs = server.arrow_filesystem()
    write_file(fs, f"{data}/t/a.parquet", 0, 9, "a")
    write_file(fs, f"{data}/t/b.parquet", 10, 19, "b")
    return data, meta


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_storage_options_instead_of_env(tmp_path, name, request, monkeypatch):
    server = request.getfixturevalue(SERVERS[name])
    data, meta = _without_env(server, monkeypatch)
    scheme = server.scheme
    mi = _build(f"{scheme}://{data}/t", f"{scheme}://{meta}/idx", storage_options=server.options)
    assert _names(mi.prune("temp > 12").kept) == ["t"] and len(mi.prune("temp > 12").kept) == 1


def test_encrypted_store_in_a_bucket(bucket_table):
    from metaindex.crypto import InMemoryKms

    table, store, _ = bucket_table
    enc = StoreEncryption(_kms, footer_key="footer")
    mi = _build(table, store, encryption=enc)
    part = next(iter(mi.snapshot().parts))
    raw = mi._store.storage.read(f"{mi.store_path}/{part}")
    assert raw[:4] == b"PARE", "the part in the bucket has an encrypted footer"
    assert _names(mi.prune("temp >= 30").kept) == ["day=3"]
    assert isinstance(_kms(None), InMemoryKms)


def _kms(config):
    from metaindex.crypto import InMemoryKms

    return InMemoryKms({"footer": b"\x07" * 16})


def test_s3a_and_s3n_spellings_map_to_the_same_index(s3_table):
    table, store, _ = s3_table
    mi = _build(table, store)
    for scheme in ("s3a", "s3n", "S3A"):
        spelled = scheme + table[2:]
        assert normalize_table_uri(spelled) == table
        other = MetaIndex(spelled, store=store)
        assert other.store_path == mi.store_path and other.is_indexed()
        loc = locate_table(spelled)
        if scheme.islower():  # Hadoop reports file paths with a lower-case scheme
            assert relativize(loc, f"{spelled}/day=1/part-1.parquet") == "day=1/part-1.parquet", (
                "a file Spark reports under s3a:// is the indexed file"
            )
        assert _names(other.prune("temp < 5").kept) == ["day=0"]


def test_listing_reports_etags_without_per_file_requests(bucket_table):
    table, _, _ = bucket_table
    listing = list_files(locate_table(table))
    assert len(listing) == 4
    for f in listing:
        assert f.etag and f.etag.strip('"'), f"{f.path}: the LIST's ETag is kept"
        assert f.size > 0 and f.mtime > 0


def test_prune_and_refresh_make_no_request_per_file(s3_table, s3_env):
    table, store, fs = s3_table
    for i in range(4, 24):
        write_file(fs, f"{table[5:]}/day={i}/part-{i}.parquet", 10 * i, 10 * i + 9, f"c{i}")
    mi = _build(table, store)
    mi.prune("temp > 5")  # the snapshot is now in memory
    start = s3_env.log_offset()
    assert len(mi.prune("temp > 5").kept) == 24
    prune_requests = s3_env.requests_since(start)
    start = s3_env.log_offset()
    assert mi.refresh().status == "NO_CHANGE"
    refresh_requests = s3_env.requests_since(start)
    for what, requests in (("prune", prune_requests), ("refresh", refresh_requests)):
        assert not [r for r in requests if r[0] == "HEAD" or ".parquet" in r[1]], (
            f"{what} touched data files one by one: {requests}"
        )
        assert len(requests) <= 6, f"{what} of 24 files: a few LISTs/GETs, not {requests}"
    lists = [r for r in prune_requests if "list-type=2" in r[1]]
    assert len(lists) == 3, (
        f"one LIST of the table, one of the store's log and one of its parts: {prune_requests}"
    )


def test_missing_buckets_are_typed_errors(bucket_table, bucket_env):
    table, store, _ = bucket_table
    scheme = bucket_env.scheme
    # fake-gcs-server answers a LIST of a missing bucket with 500 "no bucket named ..." (GCS
    # itself: 404 NoSuchBucket), which is a StorageError but not a StorageNotFoundError
    missing = StorageError if scheme == "gs" else StorageNotFoundError
    with pytest.raises(missing, match="nobucket"):
        MetaIndex(f"{scheme}://nobucket-metaindex/t", store=store)
    with pytest.raises(missing, match="does not exist|no bucket named"):
        _build(table, f"{scheme}://nobucket-metaindex/idx")
    with pytest.raises(FileNotFoundError):
        MetaIndex(table + "-absent", store=store)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "metaindex", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": REPO},
    )


def test_cli_on_s3_and_the_exit_code_of_a_missing_bucket(s3_table, moto_s3, monkeypatch):
    from metaindex.cli.errors import STORAGE

    table, store, _ = s3_table
    result = _cli("describe", table, "--store", "s3://nobucket-mi/idx")
    assert result.returncode == STORAGE, result.stderr
    assert "does not exist" in result.stderr
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the endpoint from --storage-option instead
    result = _cli(
        "build",
        table,
        "--min-max",
        "temp",
        "--store",
        store,
        "-o",
        f"endpoint={moto_s3.endpoint}",
        "--json",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    result = _cli(
        "prune",
        table,
        "--where",
        "temp > 35",
        "--store",
        store,
        "--json",
        "--files",
        "--storage-option",
        f"endpoint={moto_s3.endpoint}",
    )
    assert result.returncode == 0, result.stderr
    assert _names(json.loads(result.stdout)["kept"]) == ["day=3"]


@pytest.fixture(scope="module")
def locked_s3():
    """A second server that checks every request's signature (keys must exist in its IAM)."""
    pytest.importorskip("moto.server")
    from tests.s3server import MotoServer

    with MotoServer(auth=True, bootstrap=("locked",)) as server:
        yield server


def test_bad_credentials_are_typed_errors(locked_s3, monkeypatch, tmp_path):
    for name, value in locked_s3.env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(StorageAccessError, match="refused the credentials"):
        MetaIndex("s3://locked/t")
    root = tmp_path / "t"
    import pyarrow.fs as pafs

    os.makedirs(root)
    write_file(pafs.LocalFileSystem(), str(root / "f.parquet"), 0, 1, "x")
    with pytest.raises(StorageAccessError):
        _build(str(root), "s3://locked/idx")


def test_spark_s3a_conf_configures_the_table_and_the_store(moto_s3, monkeypatch):
    """Without any AWS environment variable, a Spark session's fs.s3a.* entries (as the
    extension sends them with each request) reach both the table listing and the store."""
    from metaindex.spark.config import open_index, settings_from
    from tests.s3server import ACCESS_KEY, SECRET_KEY

    data, meta = _without_env(moto_s3, monkeypatch)
    settings = settings_from(
        {
            "metaindex.store": f"s3a://{meta}/idx",
            "spark.hadoop.fs.s3a.endpoint": moto_s3.endpoint.split("://", 1)[1],
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.endpoint.region": "us-east-1",
        }
    )
    assert settings.storage_options["endpoint"] == moto_s3.endpoint
    mi = open_index(f"s3a://{data}/t", settings)
    mi.index_builder().add_min_max_index("temp").build()
    assert mi.store_path.startswith(f"s3://{meta}/idx/")
    assert [p.rsplit("/", 1)[-1] for p in mi.prune("temp > 12").kept] == ["b.parquet"]


def test_s3a_conf_is_not_applied_to_other_object_stores(fake_gcs, monkeypatch):
    """A session with S3A settings indexing a gs:// table: the S3 options stay out of it (the
    GCS settings come from its environment)."""
    from metaindex.spark.config import open_index, settings_from

    for name, value in fake_gcs.env.items():
        monkeypatch.setenv(name, value)
    bucket = fake_gcs.bucket()
    write_file(fake_gcs.arrow_filesystem(), f"{bucket}/t/a.parquet", 0, 9, "a")
    settings = settings_from(
        {
            "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9",
            "spark.hadoop.fs.s3a.access.key": "k",
            "metaindex.store": f"gs://{bucket}/idx",
        }
    )
    assert settings.storage_options == {"endpoint": "http://127.0.0.1:9", "access_key_id": "k"}
    mi = open_index(f"gs://{bucket}/t", settings)
    mi.index_builder().add_min_max_index("temp").build()
    assert mi.prune("temp > 20").kept == []
