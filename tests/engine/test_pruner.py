"""The one decision path (metaindex.engine.prune.Pruner) on a real index.

A 12-file table (ints, strings, dates, UTC timestamps, one unindexed column), indexed with the
core API. Checks each conjunct's outcome and typed reason, that a dropped conjunct only keeps
more files (and never changes what the others decide), the session time zone, must-keep row
masks, partition conjuncts, the recorded schema on the snapshot (checkpoints included), and the
per-query store head check (a part damaged in place is noticed by the next query).
"""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.prune import Conjunct, DamagedIndexWarning, DropReason, SessionSettings
from metaindex.errors import ExpressionError, SchemaError
from metaindex.expr import col

SERIAL = SerialExecutor()
UTC = datetime.timezone.utc
N = 12


def _file(k: int) -> pa.Table:
    ts = datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(hours=k)
    return pa.table(
        {
            "i": pa.array([k * 10 + j for j in range(5)], pa.int64()),
            "s": pa.array([f"s{k:02d}"] * 5),
            "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=k)] * 5),
            "ts": pa.array([ts] * 5, pa.timestamp("us", tz="UTC")),
            "free": pa.array([k] * 5, pa.int32()),
        }
    )


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("pruner") / "t"
    for k in range(N):
        directory = root / f"p={k % 3}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_file(k), directory / f"f{k:02d}.parquet")
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("i").add_value_list_index("s").add_min_max_index(
        "d"
    ).add_min_max_index("ts").build(executor=SERIAL)
    return mi


def _outcomes(result) -> list:
    return [(c.used, c.reason) for c in result.stats.conjuncts]


@pytest.mark.parametrize(
    "unknown",
    [
        "coalesce(i, 0) = 5",
        "upper(s) = 'S01'",
        "length(s) > 2",
        "cast(s AS INT) = 5",
        "i = free",
        "coalesce(i, 0) = 5 OR i = 3",
    ],
)
def test_unknown_functions_keep_every_file(indexed, unknown):
    alone = indexed.prune(unknown)
    assert alone.stats.kept_files == N, f"{unknown!r} cannot be evaluated: every file is kept"
    assert _outcomes(alone) == [(False, DropReason.UNKNOWN_FUNCTION)]
    both = indexed.prune(f"i = 31 AND ({unknown})")
    assert both.stats.kept_files == 1, "the other conjunct still skips (file 3 holds 31)"
    assert _outcomes(both) == [(True, None), (False, DropReason.UNKNOWN_FUNCTION)]


def test_syntax_error_is_still_an_expression_error(indexed):
    with pytest.raises(ExpressionError, match="cannot parse"):
        indexed.prune("i >>> 1")
    with pytest.raises(ExpressionError, match="time zone"):
        indexed.prune("i = 1", time_zone="Mars/Olympus")


def test_reasons_are_typed(indexed):
    pruner = indexed.pruner()
    result = pruner.decide(
        "nope = 1 AND i = DATE '2024-01-01' AND d = 'not a date' AND free = 3 AND i = 31"
    )
    assert _outcomes(result) == [
        (False, DropReason.UNKNOWN_COLUMN),
        (False, DropReason.TYPE_MISMATCH),
        (False, DropReason.TYPE_MISMATCH),
        (False, DropReason.NO_INDEX),
        (True, None),
    ]
    assert result.stats.kept_files == 1 and "free" in result.stats.conjuncts[3].detail
    assert [c.text for c in result.stats.dropped][0] == "nope = 1"
    with pytest.raises(SchemaError, match="nope"):
        indexed.prune("nope = 1")  # the core API refuses a column the table lacks (a typo)


def test_used_conjuncts_name_the_indexes_that_answered_them(indexed):
    result = indexed.pruner().decide(
        "i = 31 AND (s = 's03' OR i > 100) AND p = 0 AND upper(s) = 'X' AND free = 3",
        partition_conjuncts="p = 1",
    )
    by_text = {c.text: c.indexes for c in result.stats.conjuncts}
    assert by_text == {
        "i = 31": ("minmax(i)",),
        "s = 's03' OR i > 100": ("minmax(i)", "valuelist(s)"),
        "p = 0": ("partition(p)",),
        "UPPER(s) = 'X'": (),
        "free = 3": (),
        "p = 1": ("partition(p)",),
    }
    for c in result.stats.conjuncts:  # each label is a key of the per-index counts
        assert set(c.indexes) <= set(result.stats.skipped_by_index)
    assert result.stats.skipped_by_index["minmax(i)"] == N - 1
    constant = indexed.pruner().decide("i = NULL").stats.conjuncts[0]
    assert constant.used and constant.indexes == ()  # binds to false: no index consulted


def test_case_rule_comes_from_the_session(indexed):
    pruner = indexed.pruner()
    loose = pruner.decide("I = 31", session=SessionSettings(case_sensitive=False))
    assert loose.stats.kept_files == 1
    strict = pruner.decide("I = 31", session=SessionSettings(case_sensitive=True))
    assert _outcomes(strict) == [(False, DropReason.UNKNOWN_COLUMN)]
    assert strict.stats.kept_files == N


def test_timestamp_literals_bind_in_the_session_time_zone(indexed):
    # file k holds ts = 2024-01-01 k:00 UTC; 00:00 in Los Angeles is 08:00 UTC (file 8)
    where = "ts = TIMESTAMP '2024-01-01 00:00:00'"
    assert indexed.prune(where).stats.kept_files == 1
    la = indexed.prune(where, time_zone="America/Los_Angeles")
    assert [os.path.basename(p) for p in la.kept] == ["f08.parquet"], (
        "an America/Los_Angeles session compares with 08:00 UTC"
    )
    pruner = indexed.pruner()
    session = SessionSettings(time_zone="America/Los_Angeles")
    assert (
        pruner.decide(where, session=session).kept_mask.tolist()
        == pruner.decide(
            col("ts") == datetime.datetime(2024, 1, 1, 8, tzinfo=UTC)
        ).kept_mask.tolist()
    )


def test_session_settings_from_spark_conf():
    s = SessionSettings.from_spark_conf(
        {
            "spark.sql.session.timeZone": "Europe/Paris",
            "spark.sql.caseSensitive": "TRUE",
            "spark.sql.legacy.parquet.datetimeRebaseModeInRead": "legacy",
        }
    )
    assert s == SessionSettings("Europe/Paris", True, "LEGACY", "CORRECTED")
    assert SessionSettings.from_spark_conf({}) == SessionSettings()
    with pytest.raises(ValueError):
        SessionSettings(datetime_rebase_read="SOMETIMES")


def test_partition_conjuncts_mark_listed_files_only(indexed):
    pruner = indexed.pruner()
    result = pruner.decide("i < 60", partition_conjuncts="p = 1")
    assert result.stats.kept_files == 6, "partition conjuncts never decide what is kept"
    names = indexed.pruning_context().names.to_pylist()
    assert result.listed_mask.tolist() == [n.startswith("p=1/") for n in names]
    assert pruner.decide("i < 60").listed_mask is None


def test_candidates_default_to_the_snapshot_and_unindexed_files_are_kept(indexed):
    pruner = indexed.pruner()
    everything = pruner.decide("i = 31")
    assert everything.stats.total_files == N and everything.kept == ["p=0/f03.parquet"]
    from metaindex.engine.prune import candidates

    files = [("p=0/f03.parquet", 1, 1), ("p=1/f04.parquet", 1, 1)]  # sizes that do not match
    odd = pruner.decide("i = 31", candidates(indexed._location, files))
    assert odd.stats.unindexed_files == 2 and odd.stats.kept_files == 2


POOL = [
    "i < 40",
    "i >= 20",
    "s IN ('s01', 's05', 's07')",
    "d > DATE '2024-01-06'",
    "ts <= TIMESTAMP '2024-01-01 09:30:00'",
    "NOT (i BETWEEN 50 AND 80)",
    "s LIKE 's0%' OR i = 115",
    "i IS NOT NULL",
    "free = 3",
    "upper(s) = 'X'",
    "nope > 1",
    "i = DATE '2024-01-01'",
    "coalesce(i, 1) = 2 OR i = 3",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=5))
def test_conjuncts_decide_independently(indexed, chosen):
    """The kept set of a list of conjuncts is the AND of each one's alone; a conjunct that
    is dropped changes nothing; the SQL AND of them decides the same."""
    pruner = indexed.pruner()
    together = pruner.decide(chosen)
    alone = np.ones(N, np.bool_)
    for c in chosen:
        alone &= pruner.decide(c).kept_mask
    assert together.kept_mask.tolist() == alone.tolist()
    usable = [c for c, o in zip(chosen, together.stats.conjuncts, strict=True) if o.used]
    assert pruner.decide(usable or "true").kept_mask.tolist() == alone.tolist()
    sql = " AND ".join(f"({c})" for c in chosen)
    assert pruner.decide(sql).kept_mask.tolist() == alone.tolist()


def test_conjunct_objects_from_other_converters(indexed):
    pruner = indexed.pruner()
    result = pruner.decide(
        [Conjunct("i = 31", col("i") == 31), Conjunct("myudf(s)", None, "cannot convert myudf(s)")]
    )
    assert result.stats.kept_files == 1
    assert result.stats.conjuncts[1].reason is DropReason.UNKNOWN_FUNCTION
    assert result.stats.conjuncts[1].detail == "cannot convert myudf(s)"
    with pytest.raises(TypeError):
        pruner.decide(42)


def test_snapshot_carries_the_recorded_schema_across_checkpoints(tmp_path):
    from metaindex.store import CHECKPOINT_INTERVAL
    from metaindex.store.log import forget_table

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), root / "f0.parquet")
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("a").build(executor=SERIAL)
    pq.write_table(pa.table({"a": [3], "late": ["x"]}), root / "f1.parquet")
    mi.refresh(executor=SERIAL)
    for k in range(CHECKPOINT_INTERVAL + 1):  # past a checkpoint
        pq.write_table(pa.table({"a": [10 + k]}), root / f"g{k}.parquet")
        mi.refresh(executor=SERIAL)
    forget_table(mi._store.storage.key, mi.store_path)  # read from the checkpoint again
    schema, partitions = MetaIndex(str(root)).snapshot().recorded_schema
    assert schema.names == ["a", "late"] and partitions == {}
    outcome = MetaIndex(str(root)).prune("late = 'y'").stats.conjuncts[0]
    assert outcome.reason is DropReason.NO_INDEX, "the column is known (it has no index)"


def test_part_damaged_in_place_is_noticed_by_the_next_query(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    for k in range(4):
        pq.write_table(pa.table({"a": [k]}), root / f"f{k}.parquet")
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("a").build(executor=SERIAL)
    assert mi.prune("a = 2").stats.kept_files == 1
    parts = os.path.join(mi.store_path, "parts")
    (part,) = [os.path.join(parts, n) for n in os.listdir(parts) if n.endswith(".parquet")]
    data = bytearray(open(part, "rb").read())
    data[100:140] = bytes(40)
    with open(part, "wb") as f:
        f.write(bytes(data))
    os.utime(part, ns=(os.stat(part).st_atime_ns, os.stat(part).st_mtime_ns + 10**9))
    for _ in range(2):  # noticed, and stays noticed: every file read, with the reason
        with pytest.warns(DamagedIndexWarning, match="SHA-256 differs"):
            result = mi.prune("a = 2")
        assert result.stats.kept_files == 4 and "SHA-256 differs" in result.stats.damage


def test_conjuncts_on_indexes_whose_key_is_unavailable(tmp_path):
    """A reader with the footer key but not an index column's key: that index reads as
    unknown (its files kept) and its conjuncts are dropped with KEYS_UNAVAILABLE; the other
    indexes still skip."""
    import base64
    import json

    from metaindex.api import StoreEncryption
    from metaindex.crypto.kms_spec import kms_factory

    root = tmp_path / "t"
    root.mkdir()
    for k in range(4):
        pq.write_table(pa.table({"i": [k], "s": [f"s{k}"]}), root / f"f{k}.parquet")
    keys = {label: base64.b64encode(os.urandom(16)).decode() for label in ("footer", "secret")}
    (tmp_path / "all.json").write_text(json.dumps(keys))
    (tmp_path / "footer.json").write_text(json.dumps({"footer": keys["footer"]}))

    def encryption(name):
        return StoreEncryption(
            kms_factory(f"inmemory:{tmp_path / name}"), "footer", index_keys={"i": "secret"}
        )

    store = str(tmp_path / "store")
    full = MetaIndex(str(root), store=store, encryption=encryption("all.json"))
    full.index_builder().add_min_max_index("i").add_value_list_index("s").build(executor=SERIAL)
    assert full.prune("i = 1 AND s = 's2'").stats.kept_files == 0
    partial = MetaIndex(str(root), store=store, encryption=encryption("footer.json"))
    result = partial.prune("i = 1 AND s = 's2'")
    assert _outcomes(result) == [(False, DropReason.KEYS_UNAVAILABLE), (True, None)]
    assert [os.path.basename(p) for p in result.kept] == ["f2.parquet"]
    assert partial.prune("i = 1").stats.kept_files == 4, "nothing is known about i here"
