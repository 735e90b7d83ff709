"""The page index: per-page bounds (ColumnIndex) and page locations (OffsetIndex).

Writing: the writer collects, for each data page of a chunk, the page's statistics
(:func:`metaindex.parquet.statistics.compute` on the page's values) and its location; at the end
of the file :func:`build_column_index` / :func:`build_offset_index` turn them into Thrift
structs and :func:`serialize_page_indexes` lays them out the way parquet-cpp does — the column
indexes of every chunk of every row group, then the offset indexes — setting each
``ColumnChunk``'s ``column_index_offset/length`` and ``offset_index_offset/length``. The blob goes
right before the footer.

Reading: :func:`read_column_index` / :func:`read_offset_index` check the locations a footer gives
against the file before decoding, and the decoded lists against each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise

from metaindex.errors import DecodeError, EncodeError
from metaindex.parquet import format as fmt
from metaindex.parquet.statistics import UNKNOWN, SortOrder, order_key

__all__ = [
    "build_column_index",
    "build_offset_index",
    "boundary_order",
    "serialize_page_indexes",
    "read_column_index",
    "read_offset_index",
]

UNORDERED, ASCENDING, DESCENDING = (
    fmt.BoundaryOrder.UNORDERED,
    fmt.BoundaryOrder.ASCENDING,
    fmt.BoundaryOrder.DESCENDING,
)
_I32_MAX = 2**31 - 1


def boundary_order(mins: Sequence, maxs: Sequence) -> int:
    """ASCENDING, DESCENDING or UNORDERED for the bounds of the non-null pages, in order.

    ``mins``/``maxs`` hold comparable keys (see ``statistics.order_key``). Like parquet-cpp:
    ascending when neither list ever decreases (so equal bounds, and a single page, count as
    ascending), else descending when neither ever increases; no pages at all is UNORDERED.
    """
    if not mins:
        return UNORDERED
    pairs = list(zip(mins, maxs, strict=True))
    if all(b[0] >= a[0] and b[1] >= a[1] for a, b in pairwise(pairs)):
        return ASCENDING
    if all(b[0] <= a[0] and b[1] <= a[1] for a, b in pairwise(pairs)):
        return DESCENDING
    return UNORDERED


def build_column_index(
    page_stats: Sequence,
    null_pages: Sequence[bool],
    ptype: int,
    sort_order: SortOrder,
    *,
    type_length: int | None = None,
    float16: bool = False,
    definition_level_histograms=None,
    repetition_level_histograms=None,
) -> fmt.ColumnIndex | None:
    """A chunk's ColumnIndex from its data pages' statistics, or None when it must not exist.

    Args:
        page_stats: one ``fmt.Statistics`` per data page, in page order (as ``compute`` makes
            them: ``min_value``/``max_value`` PLAIN bytes, ``null_count``, ``nan_count``).
        null_pages: per page, True when it holds no non-null value.
        ptype: the column's physical type.
        sort_order: the column's sort order.
        type_length: FIXED_LEN_BYTE_ARRAY width.
        float16: the column is FLOAT16.
        definition_level_histograms / repetition_level_histograms: optional concatenated
            per-page level histograms (SizeStatistics), written as given.

    Returns:
        The ColumnIndex; None when the order is UNKNOWN (INT96...), or a non-null page has no
        bounds (all its values are NaN: parquet.thrift forbids a column index then).

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(page_stats) != len(null_pages):
        raise ValueError(f"{len(page_stats)} page statistics for {len(null_pages)} null flags")
    if SortOrder(sort_order) == UNKNOWN:
        return None
    mins, maxs, keys_lo, keys_hi, null_counts, nan_counts = [], [], [], [], [], []
    for stats, is_null in zip(page_stats, null_pages, strict=True):
        null_counts.append(stats.null_count)
        nan_counts.append(stats.nan_count)
        if is_null:
            mins.append(b"")
            maxs.append(b"")
            continue
        if stats.min_value is None or stats.max_value is None:
            return None
        mins.append(bytes(stats.min_value))
        maxs.append(bytes(stats.max_value))
        keys_lo.append(
            order_key(stats.min_value, ptype, sort_order, float16=float16, type_length=type_length)
        )
        keys_hi.append(
            order_key(stats.max_value, ptype, sort_order, float16=float16, type_length=type_length)
        )
    return fmt.ColumnIndex(
        null_pages=[bool(x) for x in null_pages],
        min_values=mins,
        max_values=maxs,
        boundary_order=boundary_order(keys_lo, keys_hi),
        null_counts=None if None in null_counts else [int(c) for c in null_counts],
        repetition_level_histograms=repetition_level_histograms,
        definition_level_histograms=definition_level_histograms,
        nan_counts=None if None in nan_counts else [int(c) for c in nan_counts],
    )


def build_offset_index(
    locations: Iterable, unencoded_byte_array_data_bytes=None
) -> fmt.OffsetIndex:
    """A chunk's OffsetIndex from its data pages' ``(offset, compressed_page_size,
    first_row_index)`` (the size includes the page header).

    Raises:
        EncodeError: the first page does not start at row 0, rows or offsets do not increase,
            a size is not in 1..2**31-1, or the byte-array sizes do not match the pages.
    """
    pages = [
        fmt.PageLocation(offset=int(o), compressed_page_size=int(s), first_row_index=int(r))
        for o, s, r in locations
    ]
    for i, p in enumerate(pages):
        if not 0 < p.compressed_page_size <= _I32_MAX or p.offset < 0:
            raise EncodeError(
                f"page {i}: offset {p.offset} / size {p.compressed_page_size} out of range"
            )
        if i == 0 and p.first_row_index != 0:
            raise EncodeError(f"the first page starts at row {p.first_row_index}, not 0")
        if i and (
            p.first_row_index <= pages[i - 1].first_row_index
            or p.offset < pages[i - 1].offset + pages[i - 1].compressed_page_size
        ):
            raise EncodeError(
                f"page {i} does not start after page {i - 1} (rows and offsets must increase)"
            )
    sizes = None
    if unencoded_byte_array_data_bytes is not None:
        sizes = [int(x) for x in unencoded_byte_array_data_bytes]
        if len(sizes) != len(pages):
            raise EncodeError(f"{len(sizes)} unencoded byte-array sizes for {len(pages)} pages")
    return fmt.OffsetIndex(page_locations=pages, unencoded_byte_array_data_bytes=sizes)


def serialize_page_indexes(
    start: int,
    row_groups: Sequence,
    column_indexes: Sequence,
    offset_indexes: Sequence,
    encryptors: Sequence | None = None,
) -> bytes:
    """Lay out every chunk's page index from file offset ``start``; returns the bytes to write.

    ``column_indexes[r][c]`` / ``offset_indexes[r][c]`` belong to
    ``row_groups[r].columns[c]`` (None: that chunk has none). Column indexes of all chunks come
    first, then offset indexes, as parquet-cpp writes them; each chunk's
    ``column_index_offset/length`` and ``offset_index_offset/length`` are set (or cleared).
    ``encryptors[r][c]``: the chunk's ChunkEncryptor (None: plaintext) in an encrypted file.
    """
    parts = []
    pos = start
    for field, table in (("column_index", column_indexes), ("offset_index", offset_indexes)):
        if len(table) != len(row_groups):
            raise ValueError(f"{len(table)} rows of {field}es for {len(row_groups)} row groups")
        for r, (rg, entries) in enumerate(zip(row_groups, table, strict=True)):
            if len(entries) != len(rg.columns):
                raise ValueError(f"{len(entries)} {field}es for {len(rg.columns)} column chunks")
            for c, (chunk, index) in enumerate(zip(rg.columns, entries, strict=True)):
                if index is None:
                    setattr(chunk, f"{field}_offset", None)
                    setattr(chunk, f"{field}_length", None)
                    continue
                blob = index.to_bytes()
                if encryptors is not None and encryptors[r][c] is not None:
                    blob = bytes(encryptors[r][c].module(field, blob))
                if len(blob) > _I32_MAX:
                    raise EncodeError(f"a {field} of {len(blob)} bytes does not fit an i32 length")
                setattr(chunk, f"{field}_offset", pos)
                setattr(chunk, f"{field}_length", len(blob))
                parts.append(blob)
                pos += len(blob)
    return b"".join(parts)


def _slice(data, column_chunk, field: str) -> tuple[memoryview, int] | None:
    offset = getattr(column_chunk, f"{field}_offset")
    length = getattr(column_chunk, f"{field}_length")
    if offset is None and length is None:
        return None
    if offset is None or length is None:
        raise DecodeError(
            f"{field}_offset and {field}_length must be set together "
            f"(got {offset!r} and {length!r})"
        )
    view = memoryview(data).cast("B")
    size = len(view)
    if offset < 0 or length <= 0:
        raise DecodeError(
            f"{field} at offset {offset} with length {length} is invalid",
            offset=offset if offset >= 0 else None,
        )
    if offset > size or length > size - offset:
        raise DecodeError(
            f"{field} runs past the end of the file",
            offset=offset,
            needed=length,
            remaining=max(0, size - offset),
        )
    return view[offset : offset + length], offset


def read_column_index(data, column_chunk) -> fmt.ColumnIndex | None:
    """The ColumnIndex a ``fmt.ColumnChunk`` points to in ``data`` (the whole file), or None.

    Raises:
        DecodeError: a location outside the file, a negative or zero length, a struct that does
            not fill its bytes exactly, lists of different lengths, an unknown boundary order.
    """
    found = _slice(data, column_chunk, "column_index")
    if found is None:
        return None
    return decode_column_index(*found)


def decode_column_index(raw, offset: int) -> fmt.ColumnIndex:
    """Decode and validate a ColumnIndex read from file ``offset`` (see read_column_index)."""
    try:
        ci = fmt.ColumnIndex.from_bytes(raw)
    except DecodeError as exc:
        raise DecodeError(f"bad column index at file offset {offset}: {exc}") from exc
    n = len(ci.null_pages)
    lengths = {"min_values": len(ci.min_values), "max_values": len(ci.max_values)}
    if ci.null_counts is not None:
        lengths["null_counts"] = len(ci.null_counts)
    if ci.nan_counts is not None:
        lengths["nan_counts"] = len(ci.nan_counts)
    wrong = {k: v for k, v in lengths.items() if v != n}
    if wrong:
        raise DecodeError(f"column index at file offset {offset}: {n} null_pages but {wrong}")
    if ci.boundary_order not in (UNORDERED, ASCENDING, DESCENDING):
        raise DecodeError(
            f"column index at file offset {offset}: unknown boundary order {ci.boundary_order}"
        )
    return ci


def read_offset_index(data, column_chunk) -> fmt.OffsetIndex | None:
    """The OffsetIndex a ``fmt.ColumnChunk`` points to in ``data`` (the whole file), or None.

    Raises:
        DecodeError: a location outside the file, a struct that does not fill its bytes exactly,
            a page outside the file or with a size <= 0, a first page not at row 0, rows or
            offsets that do not increase.
    """
    found = _slice(data, column_chunk, "offset_index")
    if found is None:
        return None
    return decode_offset_index(*found, len(memoryview(data).cast("B")))


def decode_offset_index(raw, offset: int, size: int) -> fmt.OffsetIndex:
    """Decode and validate an OffsetIndex read from file ``offset`` of a ``size``-byte file."""
    try:
        oi = fmt.OffsetIndex.from_bytes(raw)
    except DecodeError as exc:
        raise DecodeError(f"bad offset index at file offset {offset}: {exc}") from exc
    prev = None
    for i, p in enumerate(oi.page_locations):
        if (
            p.offset < 0
            or p.compressed_page_size <= 0
            or p.first_row_index < 0
            or p.offset > size - p.compressed_page_size
        ):
            raise DecodeError(
                f"offset index at file offset {offset}: page {i} (offset "
                f"{p.offset}, size {p.compressed_page_size}, first row "
                f"{p.first_row_index}) lies outside the file or is invalid"
            )
        if prev is None and p.first_row_index != 0:
            raise DecodeError(
                f"offset index at file offset {offset}: the first page starts at "
                f"row {p.first_row_index}, not 0"
            )
        if prev is not None and (
            p.first_row_index <= prev.first_row_index
            or p.offset < prev.offset + prev.compressed_page_size
        ):
            raise DecodeError(
                f"offset index at file offset {offset}: page {i} does not follow page {i - 1}"
            )
        prev = p
    sizes = oi.unencoded_byte_array_data_bytes
    if sizes is not None and len(sizes) != len(oi.page_locations):
        raise DecodeError(
            f"offset index at file offset {offset}: {len(sizes)} byte-array sizes "
            f"for {len(oi.page_locations)} pages"
        )
    return oi
