"""The reader on object stores (S3, GCS, Azure emulators): a deltalake-written table copied into
a bucket reads as it does on local disk, through the same storage layer the metadata store
uses, configured by the standard environment variables only."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from metaindex.delta import DeltaLog

deltalake = pytest.importorskip("deltalake", reason="the Delta tests need deltalake (test extra)")


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("delta-objects") / "t")
    for i in range(4):
        deltalake.write_deltalake(
            path,
            pa.table({"id": [i, i + 10], "p": ["a b", None]}),
            partition_by=["p"],
            mode="append" if i else "error",
        )
    table = deltalake.DeltaTable(path)
    table.delete("id = 1")
    table.create_checkpoint()
    deltalake.write_deltalake(path, pa.table({"id": [99], "p": ["x/y"]}), mode="append")
    return path


def test_a_table_in_a_bucket_reads_as_on_local_disk(local_table, bucket_env):
    bucket = bucket_env.bucket()
    fs = bucket_env.arrow_filesystem()
    pafs.copy_files(
        local_table,
        f"{bucket}/t",
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=fs,
    )
    uri = f"{bucket_env.scheme}://{bucket}/t"
    local, remote = DeltaLog(local_table), DeltaLog(uri)
    assert remote.latest_version() == local.latest_version() == 5
    for version in range(6):
        ours = remote.snapshot(version)
        theirs = local.snapshot(version)
        assert [(f.key, f.size, f.partition_values) for f in ours.files] == [
            (f.key, f.size, f.partition_values) for f in theirs.files
        ]
    assert any(".checkpoint." in f for f in remote.snapshot().log_files)
    changes = remote.changes(2)
    assert changes.apply(remote.snapshot(2).files) == list(remote.snapshot().files)
    assert {f.path for f in remote.snapshot().files} <= {
        os.path.relpath(os.path.join(d, n), local_table)
        for d, _, names in os.walk(local_table)
        for n in names
        if n.endswith(".parquet")
    }
