"""The small-file open (``ParquetFormat.open`` -> ``formats.parquet._SmallReader``: one pread,
the footer decoded, no ParquetFile unless needed) and the statistics decoders kept per schema:
a task writes the same part, counts and failures with them as without them, over every type
min/max indexes, statistics on and off, writers whose statistics are distrusted, Spark's
rebase keys and damaged footers; the reader answers as the general one does."""

import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError
from metaindex.formats import ParquetFormat
from metaindex.formats import parquet as parquet_format
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.parquet import ParquetFile
from metaindex.parquet import format as fmt
from tests.engine.test_smallfiles import _both_ways, _listed, assert_same_parts

_INT96 = pa.timestamp("us", "UTC")

# kind: (the type written, the table's type of it, values)
_KINDS = {
    "int32": (pa.int32(), pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float": (pa.float32(), pa.float32(), st.floats(width=32, allow_nan=True)),
    "double": (pa.float64(), pa.float64(), st.floats(allow_nan=True)),
    "string": (pa.string(), pa.string(), st.text(max_size=5)),
    "binary": (pa.binary(), pa.binary(), st.binary(max_size=5)),
    "date": (pa.date32(), pa.date32(), st.integers(-200_000, 50_000)),
    "ts_us": (pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC"), st.integers(-(2**55), 2**55)),
    "ts_ms": (pa.timestamp("ms"), pa.timestamp("ms"), st.integers(-(2**45), 2**45)),
    "int96": (pa.timestamp("ns"), _INT96, st.integers(-(2**62), 2**62)),
    "dec9": (pa.decimal128(9, 2), pa.decimal128(9, 2), st.integers(-(10**9) + 1, 10**9 - 1)),
    "dec20": (pa.decimal128(20, 4), pa.decimal128(20, 4), st.integers(-(10**20) + 1, 10**20 - 1)),
}

_CREATED_BY = [
    "keep",
    None,
    "parquet-mr version 1.7.0 (build abc)",  # binary statistics distrusted (PARQUET-251)
    "parquet-mr version 1.5.0-cdh5.5.0 (build x)",
    "parquet-mr version 1.9.0 (build abc)",  # deprecated binary min/max distrusted
    "parquet-mr version 1.12.3 (build abc)",
    "parquet-mr version 1.2.8",  # PARQUET-816
    "parquet-mr",
    "parquet-cpp version 1.2.0",
    "parquet-cpp-arrow version 14.0.0",
    "spark",
]

_SPARK_KEYS = [
    {},
    {"org.apache.spark.version": "2.4.8"},
    {"org.apache.spark.version": "3.0.1"},
    {"org.apache.spark.version": "3.3.0", "org.apache.spark.legacyDateTime": ""},
    {"org.apache.spark.version": "3.3.0", "org.apache.spark.legacyINT96": ""},
]


def _values(data, kind, n):
    written, _, values = _KINDS[kind]
    drawn = data.draw(st.lists(values, min_size=n, max_size=n))
    nulls = data.draw(st.sampled_from(["none", "some", "all"]))
    if nulls == "all":
        drawn = [None] * n
    elif nulls == "some":
        drawn = [None if data.draw(st.booleans()) else v for v in drawn]
    if kind.startswith("dec"):
        return pa.array(
            [None if v is None else Decimal(v).scaleb(-written.scale) for v in drawn], written
        )
    if kind in ("date", "ts_us", "ts_ms", "int96"):
        storage = pa.int32() if kind == "date" else pa.int64()
        return pa.array(drawn, storage).cast(written)
    return pa.array(drawn, written)


def _edit_footer(path, edit) -> None:
    """The file's footer decoded, changed in place by ``edit(footer)`` and written back."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[-8:-4], "little")
    footer = fmt.FileMetaData.from_bytes(raw[-8 - n : -8])
    edit(footer)
    blob = footer.to_bytes()
    with open(path, "wb") as f:
        f.write(raw[: -8 - n] + blob + len(blob).to_bytes(4, "little") + b"PAR1")


def _rewrite_footer(path, created_by="keep", keys=None, orders=True):
    """The file's footer re-encoded with another ``created_by`` (None: absent), further
    key/value entries, and (``orders=False``) no column orders."""

    def edit(footer):
        if created_by != "keep":
            footer.created_by = created_by
        for k, v in (keys or {}).items():
            footer.key_value_metadata = [
                *(footer.key_value_metadata or []),
                fmt.KeyValue(key=k, value=v),
            ]
        if not orders:
            footer.column_orders = None

    _edit_footer(path, edit)


def _write(data, path, kind, n):
    column = _values(data, kind, n)
    pq.write_table(
        pa.table({"x": column, "o": pa.array(range(n), pa.int64())}),
        path,
        row_group_size=data.draw(st.integers(1, 8)),
        use_dictionary=data.draw(st.booleans()),
        compression=data.draw(st.sampled_from(["snappy", "none"])),
        write_statistics=data.draw(st.booleans()),
        use_deprecated_int96_timestamps=kind == "int96",
        store_decimal_as_integer=kind.startswith("dec") and data.draw(st.booleans()),
    )
    created_by = data.draw(st.sampled_from(_CREATED_BY))
    keys = data.draw(st.sampled_from(_SPARK_KEYS))
    orders = data.draw(st.booleans())
    if created_by != "keep" or keys or not orders:
        _rewrite_footer(path, created_by, keys, orders)


def _damage(data, path):
    raw = bytearray(open(path, "rb").read())
    n = int.from_bytes(raw[-8:-4], "little")
    how = data.draw(st.sampled_from(["footer byte", "length", "truncated", "trailing"]))
    if how == "footer byte":
        at = data.draw(st.integers(len(raw) - 8 - n, len(raw) - 9))
        raw[at] = data.draw(st.integers(0, 255))
    elif how == "length":
        raw[-8:-4] = data.draw(st.integers(0, len(raw))).to_bytes(4, "little")
    elif how == "truncated":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:  # a byte between the footer and its length
        raw[-8:-8] = b"\0"
        raw[-8:-4] = (n + 1).to_bytes(4, "little")
    open(path, "wb").write(bytes(raw))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_small_open_writes_the_same_part(tmp_path_factory, monkeypatch, data):
    root = str(tmp_path_factory.mktemp("t"))
    kind = data.draw(st.sampled_from(sorted(_KINDS)))
    names = []
    for k in range(data.draw(st.integers(1, 4))):
        name = f"f{k}.parquet"
        path = os.path.join(root, name)
        _write(data, path, kind, data.draw(st.integers(0, 12)))
        if data.draw(st.integers(0, 3)) == 0:
            _damage(data, path)
        names.append(name)
    indexes = [
        MinMaxIndex("x"),
        ValueListIndex("x", max_values=data.draw(st.sampled_from([2, 100]))),
        BloomFilterIndex("x", fpp=0.05),
        MinMaxIndex("o"),
    ]
    types = {"x": _KINDS[kind][1], "o": pa.int64()}
    (fast, rf), (slow, rs) = _both_ways(monkeypatch, root, indexes, types, _listed(root, names))
    assert_same_parts(fast, rf, slow, rs)


def _readers(path):
    """The same file opened the small way and the general way."""
    fs = pafs.LocalFileSystem()
    small = ParquetFormat().open(path, fs)
    assert isinstance(small, parquet_format._SmallReader)
    general = parquet_format.ParquetReader(ParquetFile(path, filesystem=fs))
    return small, general


def test_small_reader_answers_as_the_general_one(tmp_path):
    path = str(tmp_path / "f.parquet")
    table = pa.table(
        {
            "i": pa.array([3, None, -7], pa.int32()),
            "s": ["b", "a", None],
            "t": pa.array([1, 2, 3], pa.timestamp("ns")),
            "n": pa.array([{"a": 1}, {"a": 2}, None]),
        }
    )
    pq.write_table(table, path, row_group_size=2, use_deprecated_int96_timestamps=True)
    _rewrite_footer(path, keys={"org.apache.spark.version": "2.4.0"})
    small, general = _readers(path)
    with small, general:
        assert small._file is None  # no ParquetFile yet
        assert small.num_rows == general.num_rows == 3
        assert small.num_row_groups == general.num_row_groups == 2
        assert (
            small.fingerprint()
            == general.fingerprint()
            == ParquetFormat().fingerprint(path, pafs.LocalFileSystem())
        )
        assert small.rebase_modes() == general.rebase_modes() == ("LEGACY", "LEGACY")
        for path_ in ("i", "s", "t", "n.a", "absent"):
            a, b = small.statistics(path_), general.statistics(path_)
            assert (a is None) == (b is None)
            if a is not None:
                assert a.stored_type == b.stored_type
                assert a.row_groups == b.row_groups
                assert a.row_groups == [
                    general.file.statistics(rg, path_) for rg in range(general.num_row_groups)
                ]
        assert small.schema.equals(general.schema, check_metadata=True)
        assert small.raw_day_range("t") == general.raw_day_range("t")  # opens the file
        assert small._file is not None
        assert small.read_row_groups(range(2), ["i", "s"]).equals(
            general.read_row_groups(range(2), ["i", "s"])
        )


def test_decoders_are_kept_by_writer_and_column_order(tmp_path):
    """Files of one schema written by writers the rules tell apart: each file's statistics
    are its own writer's verdict (the decoders are shared by schema, not across writers)."""
    table = pa.table({"s": ["a", "c"], "i": pa.array([1, 2], pa.int64())})
    verdicts = []
    for k, (created_by, orders) in enumerate(
        [
            ("parquet-cpp-arrow version 14.0.0", True),
            ("parquet-mr version 1.7.0", True),
            (None, True),
            ("parquet-cpp-arrow version 14.0.0", False),
        ]
    ):
        path = str(tmp_path / f"f{k}.parquet")
        pq.write_table(table, path)
        _rewrite_footer(path, created_by, orders=orders)
        small, general = _readers(path)
        with small, general:
            for column in ("s", "i"):
                got = small.statistics(column).row_groups
                assert got == [general.file.statistics(0, column)]
                verdicts.append(got[0].trusted)
    # string bounds: trusted, PARQUET-251, no created_by, min_value without orders; int
    # bounds: the deprecated min/max stand in without orders
    assert verdicts[0::2] == [True, False, False, False]
    assert verdicts[1::2] == [True, True, True, True]


@pytest.mark.parametrize("small", [True, False])
def test_a_negative_row_count_is_a_damaged_file(tmp_path, monkeypatch, small):
    """A footer byte damaged into a negative ``num_rows`` (pyarrow still opens the file):
    both opens refuse the file, and the task lists it as failed instead of failing to write
    its part (found by the hypothesis test above in CI)."""
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"x": list(range(10))}), path)
    _edit_footer(path, lambda footer: setattr(footer, "num_rows", -1))
    assert pq.read_metadata(path).num_rows == -1
    monkeypatch.setattr(parquet_format, "SMALL_OPEN", small)
    with pytest.raises(DecodeError, match="negative row count"):
        ParquetFormat().open(path, pafs.LocalFileSystem())
    (fast, rf), (slow, rs) = _both_ways(
        monkeypatch,
        str(tmp_path),
        [MinMaxIndex("x")],
        {"x": pa.int64()},
        _listed(str(tmp_path), ["f.parquet"]),
    )
    assert "f.parquet" in rf.failed and "f.parquet" in rs.failed
    assert_same_parts(fast, rf, slow, rs)


@pytest.mark.parametrize(
    "case",
    [
        "big",
        "relative",
        "encrypted footer",
        "trailing",
        "damaged",
        "not parquet",
        "missing",
        "fifo",
    ],
)
def test_outside_the_small_open(tmp_path, monkeypatch, case):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"x": list(range(10))}), path)
    if case == "big":
        pq.write_table(pa.table({"x": list(range(20_000))}), path, use_dictionary=False)
        assert os.path.getsize(path) > 64 * 1024
    elif case == "relative":
        monkeypatch.chdir(tmp_path)
        path = "f.parquet"
    elif case == "encrypted footer":
        raw = open(path, "rb").read()
        open(path, "wb").write(b"PARE" + raw[4:-4] + b"PARE")
    elif case == "trailing":
        raw = open(path, "rb").read()
        n = int.from_bytes(raw[-8:-4], "little")
        open(path, "wb").write(raw[:-8] + b"\0" + (n + 1).to_bytes(4, "little") + b"PAR1")
    elif case == "damaged":
        raw = bytearray(open(path, "rb").read())
        raw[-9] ^= 0xFF
        open(path, "wb").write(bytes(raw))
    elif case == "not parquet":
        open(path, "wb").write(b"hello, world")
    elif case == "fifo":  # (opened without waiting for a writer, then refused)
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    else:
        path = str(tmp_path / "absent.parquet")
    assert parquet_format._open_small(path, pafs.LocalFileSystem()) is None


def test_small_file_limit_and_816(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"x": [1, 2]}), path)
    size = os.path.getsize(path)
    small, general = _readers(path)
    with small, general:
        assert bytes(small.small_file(size)) == bytes(general.small_file(size))
        assert small.small_file(size - 1) is None and general.small_file(size - 1) is None
    _rewrite_footer(path, "parquet-mr version 1.2.8")
    small, general = _readers(path)
    with small, general:
        assert small.small_file(1 << 20) is None and general.small_file(1 << 20) is None


_PLAIN_TYPES = [
    (pa.int8(), [3, None, -7], 1000),
    (pa.uint8(), [3, None, 250], 300),
    (pa.int16(), [3, None, -7], 40_000),
    (pa.uint16(), [3, None, 65_000], 70_000),
    (pa.uint32(), [3, None, 4_000_000_000], None),
    (pa.uint64(), [3, None, 2**64 - 1], None),
    (pa.int32(), [3, None, -7], None),
    (pa.int64(), [3, None, -(2**63)], None),
    (pa.float32(), [1.5, None, float("nan")], None),
    (pa.float64(), [1.5, None, -0.0], None),
    (pa.date32(), [3, None, -800_000], None),
    (pa.timestamp("ms"), [3, None, -(2**50)], None),
    (pa.timestamp("ns", "UTC"), [3, None, 7], None),
]


@pytest.mark.parametrize(("t", "values", "wide"), _PLAIN_TYPES, ids=lambda v: str(v))
@pytest.mark.parametrize("nulls", ["some", "all"])
def test_plain_footer_bounds_write_the_scalars_part(tmp_path, monkeypatch, t, values, wide, nulls):
    """Min/max from footer statistics kept as plain values and made a task's column at once
    (``collect._SmallMinMax``, taken with the small-file paths) write the part that one
    struct scalar per file writes, over the numeric, date and time types; a bound the type
    cannot hold (a damaged or hostile footer) is not taken: the column is scanned, both ways."""
    root = str(tmp_path)
    names = []
    for k, drawn in enumerate([values, [None] * 3 if nulls == "all" else values[:2]]):
        path = os.path.join(root, f"f{k}.parquet")
        pq.write_table(pa.table({"x": pa.array(drawn, t)}), path)
        names.append(f"f{k}.parquet")

        def edit(footer, k=k, drawn=drawn):
            stats = footer.row_groups[0].columns[0].meta_data.statistics
            if pa.types.is_floating(t):  # (pyarrow counts no NaNs: without a count, a scan)
                stats.nan_count = sum(v is not None and v != v for v in drawn)
            if wide is not None and k == 0:  # a bound past the type's range
                stats.max_value = wide.to_bytes(4, "little", signed=True)

        _edit_footer(path, edit)
    (fast, rf), (slow, rs) = _both_ways(
        monkeypatch, root, [MinMaxIndex("x")], {"x": t}, _listed(root, names)
    )
    assert_same_parts(fast, rf, slow, rs)
    assert rf.footer_minmax == (1 if wide is not None else 2)


@pytest.mark.parametrize("t", [pa.float32(), pa.float64()])
def test_float_bounds_without_a_nan_count_are_scanned(tmp_path, monkeypatch, t):
    """pyarrow records no NaN count: float bounds from such a footer would keep every file
    for ``>``, so the column is scanned (the plain footer path included)."""
    root = str(tmp_path)
    pq.write_table(pa.table({"x": pa.array([1.5, None, float("nan")], t)}), f"{root}/f.parquet")
    (fast, rf), (slow, rs) = _both_ways(
        monkeypatch, root, [MinMaxIndex("x")], {"x": t}, _listed(root, ["f.parquet"])
    )
    assert_same_parts(fast, rf, slow, rs)
    assert (rf.footer_minmax, rf.scanned_minmax) == (0, 1)
    assert fast.column("x_minmax_1")[0]["nan_count"].as_py() == 1
