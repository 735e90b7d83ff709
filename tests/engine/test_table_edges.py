"""Tables as users have them: columns that differ only in case, INT96 timestamps, files that
cannot be read, and Delta / Iceberg directories (refused at build)."""

from __future__ import annotations

import datetime
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.prune import DropReason
from metaindex.errors import DeltaLogError, SchemaError, UnsupportedFeatureError

SERIAL = SerialExecutor()


def test_columns_that_differ_only_in_case(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        pq.write_table(
            pa.table({"Id": [k, k + 1], "id": [10 * k, 10 * k + 1]}), root / f"f{k}.parquet"
        )
    mi = MetaIndex(str(root))
    with pytest.raises(SchemaError, match="ambiguous.*differ only in case"):
        mi.index_builder().add_min_max_index("ID").build(executor=SERIAL)
    result = (
        mi.index_builder().add_min_max_index("id").add_value_list_index("Id").build(executor=SERIAL)
    )
    assert result.entries_added == 3, "each column indexed by its exact name"
    assert [d.cols[0] for d in mi.snapshot().index_defs] == ["id", "Id"]
    strict = mi.prune("id = 21", case_sensitive=True)
    assert [os.path.basename(p) for p in strict.kept] == ["f2.parquet"]
    assert mi.prune("Id = 1", case_sensitive=True).stats.kept_files == 2
    loose = mi.pruner().decide("id = 21")
    assert loose.stats.conjuncts[0].reason is DropReason.UNKNOWN_COLUMN, (
        "case-insensitively the name is ambiguous (Spark refuses the query): nothing skipped"
    )
    assert loose.stats.kept_files == 3


def test_int96_value_list_and_bloom_skip_with_timestamp_literals(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    for k in range(4):
        ts = [datetime.datetime(2024, 1, 1, k), datetime.datetime(2024, 1, 1, k, 30)]
        pq.write_table(
            pa.table({"ts": pa.array(ts, pa.timestamp("us"))}),
            root / f"f{k}.parquet",
            use_deprecated_int96_timestamps=True,
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_value_list_index("ts").add_bloom_filter_index("ts").build(
        executor=SERIAL
    )
    assert mi.snapshot().recorded_schema[0].field("ts").type == pa.timestamp("us", tz="UTC"), (
        "Spark reads INT96 as TIMESTAMP (an instant)"
    )
    result = mi.prune("ts = TIMESTAMP '2024-01-01 02:30:00'")
    assert [os.path.basename(p) for p in result.kept] == ["f2.parquet"]
    assert result.stats.skipped_by_index == {"valuelist(ts)": 3, "bloom(ts)": 3}
    la = mi.prune("ts IN (TIMESTAMP '2024-01-01 00:00:00')", time_zone="America/Los_Angeles")
    assert la.stats.kept_files == 0, "00:00 in Los Angeles is 08:00 UTC: in no file"


def test_refresh_and_describe_agree_on_unreadable_files(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"a": [k]}), root / f"f{k}.parquet")
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("a").build(executor=SERIAL)
    (root / "bad.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    first = mi.refresh(executor=SERIAL)
    assert first.status == "SUCCESS" and "DecodeError" in first.failed["bad.parquet"]
    fresh = mi.describe().freshness
    assert fresh.up_to_date and fresh.new_files == 0, "a file that fails is not pending"
    assert fresh.unreadable_files == 1 and "DecodeError" in fresh.unreadable["bad.parquet"]
    assert mi.refresh(executor=SERIAL).status == "NO_CHANGE", "refresh agrees: nothing to do"
    assert "bad.parquet" in " ".join(mi.prune("a = 1").kept), "an unreadable file is read"
    pq.write_table(pa.table({"a": [7]}), root / "bad.parquet")  # fixed: retried
    again = mi.refresh(executor=SERIAL)
    assert again.entries_added == 1 and not again.failed
    assert mi.describe().freshness.unreadable_files == 0
    assert dict(mi.snapshot().unreadable) == {}


def test_unreadable_records_survive_checkpoints_and_deletion(tmp_path):
    from metaindex.store import CHECKPOINT_INTERVAL
    from metaindex.store.log import forget_table

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"a": [0]}), root / "f0.parquet")
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("a").build(executor=SERIAL)
    (root / "bad.parquet").write_bytes(b"junk")
    mi.refresh(executor=SERIAL)
    for k in range(CHECKPOINT_INTERVAL):
        pq.write_table(pa.table({"a": [k + 1]}), root / f"g{k}.parquet")
        mi.refresh(executor=SERIAL)
    forget_table(mi._store.storage.key, mi.store_path)
    assert set(MetaIndex(str(root)).snapshot().unreadable) == {"bad.parquet"}
    os.remove(root / "bad.parquet")
    assert mi.refresh(executor=SERIAL).status == "SUCCESS", "the record is cleared"
    assert dict(mi.snapshot().unreadable) == {}
    assert mi.refresh(executor=SERIAL).status == "NO_CHANGE"


def test_iceberg_directories_are_refused(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"a": [1]}), root / "part-0.parquet")
    (root / "metadata").mkdir()
    (root / "metadata" / "v1.metadata.json").write_text(json.dumps({"format-version": 2}))
    with pytest.raises(UnsupportedFeatureError, match="Iceberg"):
        MetaIndex(str(root)).index_builder().add_min_max_index("a").build(executor=SERIAL)


def test_a_delta_directory_is_read_from_its_log_never_listed(tmp_path):
    """A directory with ``_delta_log/`` is a Delta table (metaindex.formats.delta): a log
    that cannot be read is a typed error, never a listing of the directory's files."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"a": [1]}), root / "part-0.parquet")
    (root / "_delta_log").mkdir()
    (root / "_delta_log" / "00000000000000000000.json").write_text("{}")
    with pytest.raises(DeltaLogError):
        MetaIndex(str(root)).index_builder().add_min_max_index("a").build(executor=SERIAL)


def test_a_plain_metadata_directory_is_not_iceberg(tmp_path):
    root = tmp_path / "t"
    (root / "metadata").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1]}), root / "metadata" / "part-0.parquet")
    result = MetaIndex(str(root)).index_builder().add_min_max_index("a").build(executor=SERIAL)
    assert result.entries_added == 1, "a partition-like directory named metadata is data"
