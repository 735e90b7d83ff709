"""The page index: our builders reproduce what pyarrow writes for the same pages, the layout
round-trips through the readers, and the readers reject locations and lists that do not fit.
"""

from __future__ import annotations

import io
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError, EncodeError
from metaindex.parquet import format as fmt
from metaindex.parquet import page_index as P
from metaindex.parquet import statistics as S
from metaindex.parquet import values as vals

RNG = np.random.default_rng(7)
N = 4000


def _write(table, **kw):
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        write_page_index=True,
        data_page_size=1024,
        write_batch_size=64,
        use_dictionary=False,
        **kw,
    )
    data = sink.getvalue()
    n = int.from_bytes(data[-8:-4], "little")
    return fmt.FileMetaData.from_bytes(data[-8 - n : -8]), data


def _page_locations(data: bytes, meta) -> list[tuple[int, int, int]]:
    """(offset, size incl. header, first row) of every data page, by walking the headers."""
    pos = meta.dictionary_page_offset or meta.data_page_offset
    end = pos + meta.total_compressed_size
    rows = 0
    out = []
    while pos < end:
        header, body_start = fmt.PageHeader.decode_prefix(data, pos)
        size = body_start - pos + header.compressed_page_size
        if header.type in (fmt.PageType.DATA_PAGE, fmt.PageType.DATA_PAGE_V2):
            h = header.data_page_header or header.data_page_header_v2
            out.append((pos, size, rows))
            rows += h.num_values  # flat columns: one value (or null) per row
        pos += size
    return out


def _with_nulls(arr: pa.Array, every: int) -> pa.Array:
    mask = np.zeros(len(arr), bool)
    mask[::every] = True
    return pa.array(arr.to_pylist(), arr.type, mask=mask)


COLUMNS = {
    "ascending": pa.array(np.arange(N, dtype=np.int64)),
    "descending": pa.array(np.arange(N, dtype=np.int32)[::-1].copy()),
    "random": pa.array(RNG.integers(-1000, 1000, N, dtype=np.int64)),
    "equal": pa.array(np.full(N, 5, np.int32)),
    "uint_wraps": pa.array(
        np.concatenate([np.arange(N // 2), 2**32 - 1 - np.arange(N // 2)]).astype(np.uint32)
    ),
    "doubles": pa.array(np.sort(RNG.standard_normal(N))),
    "zeros": pa.array(np.where(np.arange(N) % 3 == 0, -0.0, 0.0)),
    "strings": pa.array([f"k{i:06d}" for i in range(N)]),
    "strings_desc_nulls": _with_nulls(pa.array([f"v{N - i:06d}é" for i in range(N)]), 5),
    "null_block": pa.array([None if 1000 <= i < 2600 else i for i in range(N)], pa.int32()),
    "bools": pa.array([i % 7000 < 3500 for i in range(12 * N)]),
    "decimals": pa.array(
        [__import__("decimal").Decimal(i - N // 2) for i in range(N)], pa.decimal128(9, 0)
    ),
    "fixed": pa.array([int(i).to_bytes(4, "big") for i in range(N)], pa.binary(4)),
}


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_builders_reproduce_pyarrow(name):
    arr = COLUMNS[name]
    meta, data = _write(pa.table({"c": arr}))
    element = meta.schema[1]
    chunk = meta.row_groups[0].columns[0]
    ci = P.read_column_index(data, chunk)
    oi = P.read_offset_index(data, chunk)
    assert oi is not None, "pyarrow wrote an offset index"
    locations = _page_locations(data, chunk.meta_data)
    assert len(locations) > 3, f"{name}: want several pages, got {len(locations)}"

    ours_oi = P.build_offset_index(locations)
    assert ours_oi.page_locations == oi.page_locations, f"{name}: page locations differ"

    order = S.sort_order(element)
    bounds = [r for _, _, r in locations] + [len(arr)]
    page_stats, null_pages = [], []
    for a, b in pairwise(bounds):
        page = arr.slice(a, b - a)
        present = page.drop_null()
        values = vals.from_arrow(present, element.type, element.type_length or 0)
        page_stats.append(
            S.compute(
                values,
                element.type,
                element.type_length or 0,
                order,
                page.null_count,
                None,
                float16=S.is_float16(element),
            )
        )
        null_pages.append(len(present) == 0)
    ours = P.build_column_index(
        page_stats,
        null_pages,
        element.type,
        order,
        type_length=element.type_length,
        definition_level_histograms=ci.definition_level_histograms,
    )
    assert ours is not None and ci is not None
    for field in (
        "null_pages",
        "min_values",
        "max_values",
        "boundary_order",
        "null_counts",
        "definition_level_histograms",
    ):
        assert getattr(ours, field) == getattr(ci, field), (
            f"{name}: {field} {getattr(ours, field)!r} != pyarrow's {getattr(ci, field)!r}"
        )
    expected = {
        "ascending": P.ASCENDING,
        "descending": P.DESCENDING,
        "equal": P.ASCENDING,
        "random": P.UNORDERED,
        "strings_desc_nulls": P.DESCENDING,
    }
    if name in expected:
        assert ours.boundary_order == expected[name], f"{name}: boundary order"


def test_nan_page_means_no_column_index_like_pyarrow():
    arr = pa.array([1.0] * 600 + [float("nan")] * 600 + [2.0] * 600)
    meta, data = _write(pa.table({"c": arr}))
    assert P.read_column_index(data, meta.row_groups[0].columns[0]) is None, (
        "pyarrow writes none either"
    )
    nan_page = S.compute(np.full(4, np.nan), 5, 0, S.SIGNED, 0)
    ok_page = S.compute(np.ones(4), 5, 0, S.SIGNED, 0)
    assert P.build_column_index([ok_page, nan_page], [False, False], 5, S.SIGNED) is None, (
        "an all-NaN page has no bounds: TYPE_ORDER forbids the column index"
    )
    ci = P.build_column_index(
        [ok_page, S.compute(np.ones(0), 5, 0, S.SIGNED, 3)], [False, True], 5, S.SIGNED
    )
    assert ci.null_pages == [False, True] and ci.min_values[1] == b"" and ci.nan_counts == [0, 0]


def test_unknown_order_has_no_column_index():
    stats = S.compute(np.zeros((2, 12), np.uint8), 3, 12, S.UNKNOWN, 0)
    assert P.build_column_index([stats], [False], 3, S.UNKNOWN) is None


def test_boundary_order_rules():
    assert P.boundary_order([], []) == P.UNORDERED
    assert P.boundary_order([3], [4]) == P.ASCENDING, "one page is ascending"
    assert P.boundary_order([1, 1], [2, 2]) == P.ASCENDING, "equal bounds are ascending"
    assert P.boundary_order([1, 2], [5, 3]) == P.UNORDERED, "mins up, maxes down"
    assert P.boundary_order([3, 1], [9, 9]) == P.DESCENDING
    # the keys follow the column's order: 0xFFFFFFFF is the unsigned maximum
    keys = [S.order_key(v.to_bytes(4, "little"), 1, S.UNSIGNED) for v in (1, 2**32 - 1)]
    assert P.boundary_order(keys, keys) == P.ASCENDING
    keys = [S.order_key(v.to_bytes(4, "little"), 1, S.SIGNED) for v in (1, 2**32 - 1)]
    assert P.boundary_order(keys, keys) == P.DESCENDING, "as signed, the second value is -1"


def test_offset_index_builder_rejects_bad_locations():
    with pytest.raises(EncodeError):
        P.build_offset_index([(4, 10, 1)])
    with pytest.raises(EncodeError):
        P.build_offset_index([(4, 10, 0), (10, 10, 5)])
    with pytest.raises(EncodeError):
        P.build_offset_index([(4, 10, 0), (14, 10, 0)])
    with pytest.raises(EncodeError):
        P.build_offset_index([(4, 0, 0)])
    with pytest.raises(EncodeError):
        P.build_offset_index([(4, 10, 0)], unencoded_byte_array_data_bytes=[1, 2])


def _chunk():
    return fmt.ColumnChunk(file_offset=0)


def test_layout_round_trips_like_parquet_cpp():
    meta, data = _write(
        pa.table({"a": COLUMNS["ascending"], "s": COLUMNS["strings"]}), row_group_size=N // 2
    )
    cis = [[P.read_column_index(data, c) for c in rg.columns] for rg in meta.row_groups]
    ois = [[P.read_offset_index(data, c) for c in rg.columns] for rg in meta.row_groups]
    first = min(c.column_index_offset for rg in meta.row_groups for c in rg.columns)
    rgs = [
        fmt.RowGroup(columns=[_chunk() for _ in rg.columns], total_byte_size=0, num_rows=0)
        for rg in meta.row_groups
    ]
    blob = P.serialize_page_indexes(first, rgs, cis, ois)
    end = first + len(blob)
    assert data[first:end] == blob, "same bytes in the same order as parquet-cpp"
    for ours, theirs in zip(rgs, meta.row_groups, strict=True):
        for a, b in zip(ours.columns, theirs.columns, strict=True):
            assert (
                a.column_index_offset,
                a.column_index_length,
                a.offset_index_offset,
                a.offset_index_length,
            ) == (
                b.column_index_offset,
                b.column_index_length,
                b.offset_index_offset,
                b.offset_index_length,
            )


def test_layout_skips_missing_indexes():
    rgs = [fmt.RowGroup(columns=[_chunk(), _chunk()], total_byte_size=0, num_rows=0)]
    ci = fmt.ColumnIndex(
        null_pages=[False],
        min_values=[b"a"],
        max_values=[b"b"],
        boundary_order=P.ASCENDING,
        null_counts=[0],
    )
    oi = P.build_offset_index([(4, 20, 0)])
    blob = P.serialize_page_indexes(100, rgs, [[None, ci]], [[oi, None]])
    a, b = rgs[0].columns
    assert a.column_index_offset is None and b.offset_index_offset is None
    assert b.column_index_offset == 100 and a.offset_index_offset == 100 + b.column_index_length
    file = b"\0" * 100 + blob
    assert P.read_column_index(file, b) == ci and P.read_offset_index(file, a) == oi
    assert P.read_column_index(file, a) is None, "absent: None"
    with pytest.raises(ValueError):
        P.serialize_page_indexes(0, rgs, [[None]], [[None, None]])


# ================================================================ hostile input


def _file_with(ci_bytes: bytes, oi_bytes: bytes):
    file = b"PAR1" + ci_bytes + oi_bytes
    chunk = fmt.ColumnChunk(
        file_offset=0,
        column_index_offset=4,
        column_index_length=len(ci_bytes),
        offset_index_offset=4 + len(ci_bytes),
        offset_index_length=len(oi_bytes),
    )
    return file, chunk


GOOD_CI = fmt.ColumnIndex(
    null_pages=[False, True],
    min_values=[b"\x01", b""],
    max_values=[b"\x09", b""],
    boundary_order=P.ASCENDING,
    null_counts=[0, 4],
).to_bytes()
GOOD_OI = P.build_offset_index([(0, 2, 0), (2, 2, 7)]).to_bytes()


@pytest.mark.hostile
def test_every_strict_prefix_raises():
    for raw, reader in ((GOOD_CI, P.read_column_index), (GOOD_OI, P.read_offset_index)):
        for cut in range(1, len(raw)):
            file, chunk = _file_with(raw[:cut], raw[:cut])
            if reader is P.read_offset_index:
                chunk.offset_index_offset, chunk.offset_index_length = 4, cut
            with pytest.raises(DecodeError):
                reader(file, chunk)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "offset, length", [(-1, 5), (4, 0), (4, -3), (4, 10**6), (10**9, 5), (None, 5), (4, None)]
)
def test_bad_locations_raise(offset, length):
    file, chunk = _file_with(GOOD_CI, GOOD_OI)
    chunk.column_index_offset, chunk.column_index_length = offset, length
    chunk.offset_index_offset, chunk.offset_index_length = offset, length
    with pytest.raises(DecodeError):
        P.read_column_index(file, chunk)
    with pytest.raises(DecodeError):
        P.read_offset_index(file, chunk)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "ci",
    [
        fmt.ColumnIndex(
            null_pages=[False], min_values=[b"a", b"b"], max_values=[b"c"], boundary_order=0
        ),
        fmt.ColumnIndex(null_pages=[False], min_values=[b"a"], max_values=[b"c"], boundary_order=7),
        fmt.ColumnIndex(
            null_pages=[False],
            min_values=[b"a"],
            max_values=[b"c"],
            boundary_order=1,
            null_counts=[1, 2],
        ),
    ],
)
def test_inconsistent_column_index_raises(ci):
    file, chunk = _file_with(ci.to_bytes(), GOOD_OI)
    with pytest.raises(DecodeError):
        P.read_column_index(file, chunk)


@pytest.mark.hostile
@pytest.mark.parametrize(
    "locations",
    [
        [(0, 2, 3)],
        [(0, 2, 0), (1, 2, 5)],
        [(0, 2, 0), (2, 2, 0)],
        [(0, -2, 0)],
        [(0, 2, 0), (2, 10**6, 9)],
        [(-4, 2, 0)],
    ],
)
def test_inconsistent_offset_index_raises(locations):
    oi = fmt.OffsetIndex(
        page_locations=[
            fmt.PageLocation(offset=o, compressed_page_size=s, first_row_index=r)
            for o, s, r in locations
        ]
    )
    file, chunk = _file_with(GOOD_CI, oi.to_bytes())
    with pytest.raises(DecodeError):
        P.read_offset_index(file, chunk)


@pytest.mark.hostile
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_flips_and_bytes(data):
    which = data.draw(st.sampled_from(["ci", "oi", "random"]))
    if which == "random":
        raw = data.draw(st.binary(min_size=1, max_size=60))
    else:
        raw = bytearray(GOOD_CI if which == "ci" else GOOD_OI)
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        raw = bytes(raw)
    file, chunk = _file_with(raw, raw)
    chunk.offset_index_offset = 4
    for reader in (P.read_column_index, P.read_offset_index):
        try:
            got = reader(file, chunk)
        except DecodeError:
            continue
        assert isinstance(got, (fmt.ColumnIndex, fmt.OffsetIndex)), f"{reader.__name__}: {got!r}"
