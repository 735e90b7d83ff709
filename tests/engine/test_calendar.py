"""Old-calendar dates and timestamps (issue 13): the writer's rebase mode and ancient values are
recorded per file, and files whose stored values Spark would rebase or refuse are decided
without their DATE/TIMESTAMP conjuncts. Spark's own behaviour is checked in
tests/spark/test_differential_spark.py."""

from __future__ import annotations

import datetime as dt
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine import calendar
from metaindex.engine.calendar import must_keep, writer_modes
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.prune import SessionSettings
from metaindex.store import (
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_FOOTER_CRC,
    OBJ_FOOTER_LEN,
    OBJ_INT96_REBASE,
)

SERIAL = SerialExecutor()


def _rebase(datetime_mode, int96_mode):
    return SessionSettings(datetime_rebase_read=datetime_mode, int96_rebase_read=int96_mode)


LEGACY = _rebase("LEGACY", "LEGACY")
CORRECTED = _rebase("CORRECTED", "CORRECTED")
EXCEPTION = _rebase("EXCEPTION", "EXCEPTION")


@pytest.mark.parametrize(
    "meta, expected",
    [
        ({}, ("SESSION", "SESSION")),
        ({"writer.model.name": "example"}, ("SESSION", "SESSION")),
        ({"org.apache.spark.version": "2.4.8"}, ("LEGACY", "LEGACY")),
        ({"org.apache.spark.version": "3.0.3"}, ("CORRECTED", "LEGACY")),
        ({"org.apache.spark.version": "3.5.1"}, ("CORRECTED", "CORRECTED")),
        (
            {"org.apache.spark.version": "4.0.0", "org.apache.spark.legacyDateTime": ""},
            ("LEGACY", "CORRECTED"),
        ),
        (
            {"org.apache.spark.version": "4.0.0", "org.apache.spark.legacyINT96": ""},
            ("CORRECTED", "LEGACY"),
        ),
        # Spark compares version strings as strings: "10.0.0" < "3.0.0"
        ({"org.apache.spark.version": "10.0.0"}, ("LEGACY", "LEGACY")),
    ],
)
def test_writer_modes_follow_spark(meta, expected):
    assert writer_modes(meta) == expected


def test_settings_validate_and_read_conf():
    assert _rebase("legacy", "corrected").datetime_rebase_read == "LEGACY"
    with pytest.raises(ValueError, match="datetime_rebase_read"):
        _rebase("JULIAN", "CORRECTED")
    got = SessionSettings.from_spark_conf(
        {
            "spark.sql.parquet.datetimeRebaseModeInRead": "LEGACY",
            "spark.sql.legacy.parquet.int96RebaseModeInRead": "EXCEPTION",
        }
    )
    assert (got.datetime_rebase_read, got.int96_rebase_read) == ("LEGACY", "EXCEPTION")
    assert SessionSettings.from_spark_conf({}) == CORRECTED  # Spark 4's defaults


def test_is_ancient_at_the_cutoffs():
    day = calendar.DATE_CUTOFF_DAYS
    assert calendar.is_ancient(pa.scalar(day - 1, pa.int32()).cast(pa.date32()))
    assert not calendar.is_ancient(pa.scalar(day, pa.int32()).cast(pa.date32()))
    us = calendar.TIMESTAMP_CUTOFF_MICROS
    for unit, per in (("us", 1), ("ms", 1000), ("s", 1_000_000)):
        t = pa.timestamp(unit)
        assert calendar.is_ancient(pa.scalar(us // per - 1, pa.int64()).cast(t))
        assert not calendar.is_ancient(pa.scalar(us // per, pa.int64()).cast(t))
    assert not calendar.is_ancient(pa.array([], pa.date32()))
    assert not calendar.is_ancient(pa.array([None], pa.timestamp("us")))
    assert dt.date(1582, 10, 15) == dt.date(1970, 1, 1) + dt.timedelta(days=day)
    assert dt.datetime(1900, 1, 1) == dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)


def _calendar_table(rows):
    names = (OBJ_DATETIME_REBASE, OBJ_ANCIENT_DATETIME, OBJ_INT96_REBASE, OBJ_ANCIENT_INT96)
    kinds = (pa.string(), pa.bool_(), pa.string(), pa.bool_())
    return pa.table(
        {
            n: pa.array([r[i] for r in rows], k)
            for i, (n, k) in enumerate(zip(names, kinds, strict=True))
        }
    )


def test_must_keep_truth_table():
    rows = [
        ("CORRECTED", True, "CORRECTED", True),  # Spark 3+ file: values as stored
        ("LEGACY", False, "LEGACY", False),  # legacy writer, nothing ancient
        ("LEGACY", True, "CORRECTED", False),  # rebased by Spark
        ("SESSION", True, "SESSION", False),  # pyarrow: the session decides
        ("SESSION", False, "SESSION", True),  # ancient INT96 only
        ("SESSION", False, "SESSION", False),
        (None, None, None, None),  # a format-5 entry: unknown
    ]
    table = _calendar_table(rows)
    assert must_keep(table, CORRECTED).tolist() == [False, False, True, False, False, False, True]
    assert must_keep(table, LEGACY).tolist() == [False, False, True, True, True, False, True]
    assert must_keep(table, EXCEPTION).tolist() == [False, False, True, True, True, False, True]
    mixed = _rebase("LEGACY", "CORRECTED")
    assert must_keep(table, mixed).tolist() == [False, False, True, True, False, False, True]
    no_columns = pa.table({"obj_name": ["a", "b"]})
    assert must_keep(no_columns, CORRECTED).tolist() == [True, True]


# ------------------------------------------------------------------------------ end to end


def _write(path, d, ts, k, *, metadata=None, int96=False):
    # UTC-adjusted timestamps: the same Spark type (TIMESTAMP) as the INT96 file
    table = pa.table(
        {
            "d": pa.array(d, pa.date32()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "k": pa.array(k, pa.int64()),
        }
    )
    if metadata:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path, use_deprecated_int96_timestamps=int96)


@pytest.fixture
def old_table(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    old, new = dt.date(1000, 1, 1), dt.date(2020, 1, 1)
    # 1850: before Spark's timestamp cutoff (1900), inside INT96's nanosecond range
    t_old, t_new = dt.datetime(1850, 1, 1), dt.datetime(2020, 1, 1)
    # a pyarrow file (no Spark version) with an ancient date
    _write(root / "a.parquet", [old, new], [t_new, t_new], [1, 2])
    # a "Spark 2.4" file: raw values in the Julian calendar
    _write(root / "b.parquet", [old], [t_new], [3], metadata={"org.apache.spark.version": "2.4.8"})
    # a Spark 3.5 file: proleptic Gregorian, never rebased
    _write(root / "c.parquet", [old], [t_new], [4], metadata={"org.apache.spark.version": "3.5.0"})
    # modern values only
    _write(root / "e.parquet", [new], [t_new], [5], metadata={"org.apache.spark.version": "2.4.8"})
    # INT96 timestamps before 1900
    _write(root / "f.parquet", [new], [t_old], [6], int96=True)
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    (
        mi.index_builder()
        .add_min_max_index("d")
        .add_value_list_index("ts")
        .add_min_max_index("k")
        .build(executor=SERIAL)
    )
    return mi


def _kept(mi, predicate, settings):
    return sorted(p.rsplit("/", 1)[1] for p in mi.prune(predicate, session=settings).kept)


def test_build_records_modes_ancient_values_and_fingerprint(old_table):
    table = old_table.snapshot().metadata_table()
    rows = {r["obj_name"]: r for r in table.to_pylist()}
    assert {n: (r[OBJ_DATETIME_REBASE], r[OBJ_INT96_REBASE]) for n, r in rows.items()} == {
        "a.parquet": ("SESSION", "SESSION"),
        "b.parquet": ("LEGACY", "LEGACY"),
        "c.parquet": ("CORRECTED", "CORRECTED"),
        "e.parquet": ("LEGACY", "LEGACY"),
        "f.parquet": ("SESSION", "SESSION"),
    }
    assert {n: (r[OBJ_ANCIENT_DATETIME], r[OBJ_ANCIENT_INT96]) for n, r in rows.items()} == {
        "a.parquet": (True, False),
        "b.parquet": (True, False),
        "c.parquet": (True, False),
        "e.parquet": (False, False),
        "f.parquet": (False, True),
    }
    for name, r in rows.items():
        path = old_table._location.full_path(name)
        with open(path, "rb") as fh:
            data = fh.read()
        length = int.from_bytes(data[-8:-4], "little")
        assert r[OBJ_FOOTER_LEN] == length, name
        assert r[OBJ_FOOTER_CRC] == zlib.crc32(data[-8 - length : -8]), name


def test_prune_keeps_files_spark_rebases(old_table):
    mi = old_table
    # CORRECTED session: only the legacy-written b is untrusted (its raw 1000-01-01 is Julian)
    assert _kept(mi, "d = date'1000-01-01'", CORRECTED) == ["a.parquet", "b.parquet", "c.parquet"]
    assert _kept(mi, "d = date'2020-01-01'", CORRECTED) == [
        "a.parquet",
        "b.parquet",
        "e.parquet",
        "f.parquet",
    ]
    # b is kept only because its stored date cannot be trusted: counted as such
    assert mi.prune("d = date'2020-01-01'", session=CORRECTED).stats.must_keep_files == 1
    # LEGACY / EXCEPTION session: the pyarrow file with an ancient date is untrusted too
    for settings in (LEGACY, EXCEPTION):
        assert _kept(mi, "d = date'2020-01-01'", settings) == [
            "a.parquet",
            "b.parquet",
            "e.parquet",
            "f.parquet",
        ]
        assert _kept(mi, "d < date'0900-01-01'", settings) == [
            "a.parquet",
            "b.parquet",
            "f.parquet",
        ]
    # ...and the INT96 file under an INT96 LEGACY/EXCEPTION read conf
    # (the flag is per file: b's ancient DATE makes its TIMESTAMP conjuncts untrusted too)
    assert _kept(mi, "ts < timestamp'1800-01-01 00:00:00'", CORRECTED) == ["b.parquet"]
    assert _kept(mi, "ts < timestamp'1800-01-01 00:00:00'", _rebase("CORRECTED", "LEGACY")) == [
        "b.parquet",
        "f.parquet",
    ]


def test_untrusted_files_still_skip_on_other_columns(old_table):
    mi = old_table
    assert _kept(mi, "d = date'2020-01-01' AND k = 5", LEGACY) == ["e.parquet"]
    assert _kept(mi, "k = 3", LEGACY) == ["b.parquet"]
    assert _kept(mi, "d = date'1000-01-01' OR k = 5", CORRECTED) == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
        "e.parquet",
    ]


def test_entries_without_a_calendar_record_are_kept_for_temporal_conjuncts(old_table, tmp_path):
    """A format-5 entry has no calendar columns: unknown, so DATE/TIMESTAMP conjuncts cannot
    skip it, every other conjunct still can (the same rows, written without those columns
    through the store's writer)."""
    from metaindex.engine import schema as schema_mod
    from metaindex.store import MetadataStore

    snap = old_table.snapshot()
    blank = snap.metadata_table().drop_columns(list(calendar.CALENDAR_COLUMNS))
    store = str(tmp_path / "store5")
    table_store = MetadataStore(store).table(old_table.table_uri)
    record = schema_mod.record(*snap.recorded_schema)
    table_store.create(snap.index_defs, record)
    part = table_store.write_part(blank, snap.index_defs)
    table_store.commit(0, add_parts=[part], operation="build", details=record)
    mi = MetaIndex(old_table.table_uri, store=store)
    assert _kept(mi, "d = date'2099-01-01'", CORRECTED) == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
        "e.parquet",
        "f.parquet",
    ]
    assert _kept(mi, "d = date'2099-01-01' AND k = 4", CORRECTED) == ["c.parquet"]
    assert _kept(old_table, "d = date'2099-01-01'", CORRECTED) == ["b.parquet"], (
        "with the calendar record only b (a legacy writer, an ancient date) is untrusted"
    )
    assert np.all(must_keep(blank, CORRECTED))


def test_int96_outside_the_nanosecond_range_is_indexed_as_unknown(tmp_path):
    """INT96 values before 1677 or after 2262 do not fit int64 nanoseconds (the reader's
    values wrap): the file is indexed, its INT96 index entries unknown (kept), its other
    columns still skip, and its ancient values are recorded from the raw Julian days."""
    root = tmp_path / "t"
    root.mkdir()
    new = dt.datetime(2020, 1, 1)
    _write(
        root / "far.parquet",
        [dt.date(2020, 1, 1)] * 2,
        [dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31)],
        [1, 2],
        int96=True,
    )
    _write(root / "near.parquet", [dt.date(2020, 1, 1)], [new], [3], int96=True)
    mi = MetaIndex(str(root), store=str(tmp_path / "store"))
    result = (
        mi.index_builder()
        .add_min_max_index("ts")
        .add_value_list_index("ts")
        .add_min_max_index("k")
        .build(executor=SERIAL)
    )
    assert result.failed == {}
    rows = {r["obj_name"]: r for r in mi.snapshot().metadata_table().to_pylist()}
    assert rows["far.parquet"][OBJ_ANCIENT_INT96] is True
    assert rows["near.parquet"][OBJ_ANCIENT_INT96] is False
    for where in (
        "ts = timestamp'9999-12-31 00:00:00'",
        "ts < timestamp'1500-01-01 00:00:00'",
        "ts > timestamp'2021-01-01 00:00:00'",
    ):
        assert _kept(mi, where, CORRECTED) == ["far.parquet"], where
    assert _kept(mi, "k = 3", CORRECTED) == ["near.parquet"]
