"""Writing one column chunk as pages: levels and values in, page bytes out.

A chunk is written as an optional dictionary page followed by data pages (v1 or v2), each
split at record boundaries (or where content-defined chunking puts its cuts). Each page's
values section is a view of the values where PLAIN is their layout, one kernel call on Arrow's
buffers for BYTE_ARRAY, or the encoding kernel's output; pages go to the sink as their parts
(no join) when neither a codec nor encryption needs them whole. The caller gets the chunk's
``ColumnMetaData`` and, when asked, its page index.

Values travel in the kernel conventions (see ``metaindex.parquet.values`` and
:class:`metaindex.parquet.pages.ColumnData`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from metaindex._native import plain
from metaindex.errors import EncodeError
from metaindex.parquet import compression as codecs
from metaindex.parquet import encoding as enc
from metaindex.parquet import format as fmt
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.parquet.pages import (
    DATA_PAGE,
    DATA_PAGE_V2,
    DICTIONARY_PAGE,
    PLAIN,
    RLE,
    RLE_DICTIONARY,
    ColumnData,
    ColumnSpec,
    page_crc,
)

__all__ = ["ChunkOptions", "flat_binary_ok", "write_chunk"]


@dataclass
class ChunkOptions:
    """How to write one column chunk (the writer fills these from its keyword options)."""

    codec: int = codecs.UNCOMPRESSED
    compression_level: int | None = None
    encoding: int | None = None  # the value encoding when not dictionary-encoded; None = PLAIN
    use_dictionary: bool = True
    dictionary_page_size_limit: int = 1024 * 1024
    data_page_size: int = 1024 * 1024
    data_page_version: int = 1
    write_page_checksum: bool = False
    statistics: bool = True  # write the chunk's Statistics
    page_index: bool = False  # build the chunk's ColumnIndex / OffsetIndex
    sort_order: stats_mod.SortOrder = stats_mod.SIGNED  # statistics.sort_order(schema element)
    float16: bool = False  # statistics.is_float16(schema element)
    truncate_length: int | None = 64  # longest BYTE_ARRAY bound (None: never truncate)
    max_rows_per_page: int | None = None  # at most this many levels per data page
    content_defined_chunking: tuple | None = None  # cdc.cdc_options(): content-defined pages


def flat_binary_ok(spec: ColumnSpec, opts: ChunkOptions) -> bool:
    """Whether :func:`write_chunk` takes this leaf's values with an Arrow validity bitmap
    (see :class:`ColumnData`): a nullable top-level BYTE_ARRAY column written PLAIN in v1
    pages, without a dictionary, page index or content-defined pages (each page's levels and
    values then come from one kernel call on Arrow's buffers)."""
    return (
        spec.physical_type == vals.BYTE_ARRAY
        and spec.max_def == 1
        and spec.max_rep == 0
        and not opts.use_dictionary
        and opts.encoding in (None, PLAIN)
        and opts.data_page_version == 1
        and not opts.page_index
        and opts.content_defined_chunking is None
    )


def write_chunk(
    sink,
    offset: int,
    spec: ColumnSpec,
    data: ColumnData,
    opts: ChunkOptions,
    encryptor=None,
    dictionary=None,
):
    """Write one column chunk to ``sink`` (a binary file) starting at file ``offset``.

    ``encryptor``: the chunk's ``metaindex.crypto`` ChunkEncryptor for an encrypted column
    (pages and headers become encrypted modules; CRCs cover the stored, encrypted bytes).
    ``dictionary``: ``(dictionary values, uint32 indices)`` to write as given (an Arrow
    dictionary array's own dictionary) instead of building one.
    Returns ``(ColumnMetaData, ColumnIndex or None, OffsetIndex or None)``; the
    ``ColumnMetaData`` has the chunk's statistics when ``opts.statistics`` asks for them.
    """
    n_values = _check_chunk(spec, data, opts)
    out = _PageSink(sink, offset, opts, encryptor)
    values = _ValueEncoder(spec, data, opts, dictionary)
    dictionary_page_offset = None
    if values.dictionary is not None:
        dictionary_page_offset = out.position
        _write_dictionary_page(out, spec, values.dictionary)
    data_page_offset = out.position
    bounds = _data_page_bounds(spec, data, opts, values.value_bytes)
    page_values = _page_values(spec, data, bounds)
    if page_values and page_values[-1][1] != n_values:
        raise EncodeError(
            f"column {'.'.join(spec.path)}: {n_values} values but levels say {page_values[-1][1]}"
        )
    index = _PageIndexBuilder(spec, data, opts) if opts.page_index else None
    first_row = 0
    for (a, b), (va, vb) in zip(bounds, page_values, strict=True):
        page_start = out.position
        if data.validity is not None:
            num_rows = _write_flat_page(out, data, a, b)
        elif opts.data_page_version == 1:
            num_rows = _write_v1_page(
                out, spec, data, a, b, values.encoding, values.section(va, vb)
            )
        else:
            num_rows = _write_v2_page(
                out, spec, data, (a, b), (va, vb), values.encoding, values.section(va, vb)
            )
        if index is not None:
            index.add(va, vb, b - a, page_start, out.position - page_start, first_row)
        first_row += num_rows
    meta = _chunk_meta(
        spec,
        data,
        opts,
        n_values,
        values,
        len(bounds),
        out,
        data_page_offset,
        dictionary_page_offset,
    )
    if index is None:
        return meta, None, None
    return meta, *index.build()


def _check_chunk(spec: ColumnSpec, data: ColumnData, opts: ChunkOptions) -> int:
    """The chunk's value count, after checking that values and levels agree."""
    n_values = vals.count(data.values, spec.physical_type)
    if data.def_levels is None and data.rep_levels is None and n_values != data.num_levels:
        raise EncodeError(
            f"column {'.'.join(spec.path)}: {n_values} values for "
            f"{data.num_levels} levels without definition levels"
        )
    if data.validity is not None and not flat_binary_ok(spec, opts):
        raise EncodeError(
            f"column {'.'.join(spec.path)}: values with a validity bitmap are "
            "written only as flat_binary_ok() says"
        )
    return n_values


class _PageSink:
    """The chunk's pages going to the file: headers (with CRCs, encrypted where the column
    is), bodies compressed with the chunk's codec, and the byte counts ``ColumnMetaData``
    records."""

    def __init__(self, sink, offset: int, opts: ChunkOptions, encryptor):
        self.sink, self.offset, self.encryptor = sink, offset, encryptor
        self.codec, self.level, self.checksum = (
            opts.codec,
            opts.compression_level,
            opts.write_page_checksum,
        )
        self.written = 0  # bytes stored (total_compressed_size)
        self.uncompressed_total = 0  # headers plus uncompressed bodies

    @property
    def position(self) -> int:
        """The file offset of the next page."""
        return self.offset + self.written

    def emit(self, header, body, raw_size: int) -> None:
        """A page whose (compressed) body is ready: header and body go to the sink as they
        are (a view of the values or the codec's buffer is not copied here)."""
        if self.encryptor is None:
            head = _header_bytes(header, body, self.checksum)
        else:
            body = self.encryptor.page(header.type, body)
            header.compressed_page_size = len(body)
            head = self.encryptor.page_header(
                header.type, _header_bytes(header, body, self.checksum)
            )
        self.sink.write(head)
        self.sink.write(body)
        self.written += len(head) + len(body)
        self.uncompressed_total += len(head) + raw_size

    def emit_compressed(self, header, raw) -> None:
        """A page whose uncompressed body is ``raw``: compressed with the chunk's codec."""
        body = codecs.compress_buffer(self.codec, raw, self.level)
        header.compressed_page_size = len(body)
        self.emit(header, body, len(raw))

    def emit_parts(self, header, parts, raw_size: int) -> None:
        """A page whose uncompressed body is ``parts`` (byte buffers, ``raw_size`` bytes in
        all): uncompressed, each part goes to the sink as it is (no join)."""
        if self.encryptor is not None or self.codec != codecs.UNCOMPRESSED:
            self.emit_compressed(header, parts[0] if len(parts) == 1 else b"".join(parts))
            return
        header.compressed_page_size = raw_size
        if self.checksum:
            crc = 0
            for part in parts:
                crc = zlib.crc32(part, crc)
            header.crc = crc - (1 << 32) if crc >= 1 << 31 else crc
        head = header.to_bytes()
        self.sink.write(head)
        for part in parts:
            self.sink.write(part)
        self.written += len(head) + raw_size
        self.uncompressed_total += len(head) + raw_size


def _header_bytes(header, body, checksum: bool) -> bytes:
    if checksum:
        header.crc = page_crc(body)
    return header.to_bytes()


class _ValueEncoder:
    """The chunk's value encoding and each page's values section.

    Dictionary-encoded (indices into ``dictionary``) where the options ask for it and the
    dictionary stays within its page size limit; else the options' encoding, PLAIN by
    default. ``value_bytes``: about what one value takes, to size pages by.
    """

    def __init__(self, spec: ColumnSpec, data: ColumnData, opts: ChunkOptions, given=None):
        ptype = spec.physical_type
        self.spec, self.data = spec, data
        self.dictionary = self.indices = None
        if opts.use_dictionary and ptype != vals.BOOLEAN:
            built = (
                given
                if given is not None
                else enc.build_dictionary(
                    data.values, ptype, spec.type_length, opts.dictionary_page_size_limit
                )
            )
            if built is not None:
                self.dictionary, self.indices = built
        if self.dictionary is not None:
            self.entries = vals.count(self.dictionary, ptype)
            self.encoding = RLE_DICTIONARY
            self.value_bytes = max(1, (int(self.entries).bit_length() + 7) // 8)
        else:
            self.encoding = PLAIN if opts.encoding is None else opts.encoding
            self.value_bytes = vals.average_width(data.values, ptype, spec.type_length)

    def section(self, va: int, vb: int):
        """The encoded values ``va:vb`` (a view of the values where PLAIN is their layout)."""
        spec, values, ptype = self.spec, self.data.values, self.spec.physical_type
        raw: bytes | memoryview | None = None
        if self.indices is not None:
            raw = enc.encode_indices(self.indices[va:vb], self.entries)
        elif self.encoding == PLAIN and ptype == vals.BYTE_ARRAY:  # one pass, Arrow's pool
            raw, _ = plain.encode_plain_binary_page(values[0], values[1], None, 0, va, vb, False)
        elif self.encoding == PLAIN:
            raw = _plain_view(values, ptype, va, vb)
        if raw is None:
            raw = enc.encode_values(
                vals.slice(values, ptype, va, vb), ptype, self.encoding, spec.type_length
            )
        return raw


_PLAIN_DTYPES = {
    vals.INT32: np.dtype("<i4"),
    vals.INT64: np.dtype("<i8"),
    vals.FLOAT: np.dtype("<f4"),
    vals.DOUBLE: np.dtype("<f8"),
}


def _plain_view(values, ptype: int, a: int, b: int):
    """The PLAIN bytes of fixed-width values ``a:b`` as a view of the values (PLAIN is their
    little-endian layout: nothing to encode or copy), or None where that does not hold."""
    if not isinstance(values, np.ndarray) or not values.flags.c_contiguous:
        return None
    if ptype in _PLAIN_DTYPES:
        if values.dtype != _PLAIN_DTYPES[ptype] or values.ndim != 1:
            return None
    elif ptype in (vals.INT96, vals.FIXED_LEN_BYTE_ARRAY):
        if values.dtype != np.uint8 or values.ndim != 2:
            return None
    else:
        return None
    return values[a:b].reshape(-1).view(np.uint8).data


def _write_dictionary_page(out: _PageSink, spec: ColumnSpec, dictionary) -> None:
    ptype = spec.physical_type
    raw = enc.encode_values(dictionary, ptype, PLAIN, spec.type_length)
    header = fmt.PageHeader(
        type=DICTIONARY_PAGE,
        uncompressed_page_size=len(raw),
        compressed_page_size=0,
        dictionary_page_header=fmt.DictionaryPageHeader(
            num_values=vals.count(dictionary, ptype), encoding=PLAIN, is_sorted=False
        ),
    )
    out.emit_compressed(header, raw)


def _data_page_bounds(
    spec: ColumnSpec, data: ColumnData, opts: ChunkOptions, value_bytes: int
) -> list:
    """``(first, end)`` level positions of each data page."""
    if opts.content_defined_chunking is not None:
        from metaindex.parquet import cdc

        width = vals.average_width(data.values, spec.physical_type, spec.type_length)
        return cdc.page_bounds(spec, data, width, opts.content_defined_chunking)
    return _page_bounds(spec, data, value_bytes, opts.data_page_size, opts.max_rows_per_page)


def _page_bounds(
    spec: ColumnSpec,
    data: ColumnData,
    value_bytes: int,
    page_size: int,
    max_rows: int | None = None,
):
    """Split level positions into pages of about ``page_size`` bytes (and at most ``max_rows``
    levels), at record starts."""
    n = data.num_levels
    per_page = max(1, page_size // max(1, value_bytes))
    if max_rows is not None:
        per_page = min(per_page, max_rows)
    if n <= per_page:
        return [(0, n)]
    bounds = []
    starts = np.arange(0, n, per_page)
    if data.rep_levels is not None:
        record_starts = np.flatnonzero(data.rep_levels == 0)
        idx = np.searchsorted(record_starts, starts)
        idx = idx[idx < len(record_starts)]
        starts = np.unique(record_starts[idx])
    for a, b in pairwise([*starts.tolist(), n]):
        if b > a:
            bounds.append((int(a), int(b)))
    return bounds


def _page_values(spec: ColumnSpec, data: ColumnData, bounds) -> list:
    """``(first, end)`` value index of each page's level range (no cumulative sum over every
    level: without definition levels every level is a value; with them, one count per page)."""
    if data.def_levels is None:
        return list(bounds)
    out, seen = [], 0
    for a, b in bounds:
        present = int(np.count_nonzero(data.def_levels[a:b] == spec.max_def))
        out.append((seen, seen + present))
        seen += present
    return out


def _write_flat_page(out: _PageSink, data: ColumnData, a: int, b: int) -> int:
    """Slots ``a:b`` of a flat nullable BYTE_ARRAY column (see :func:`flat_binary_ok`): the
    page's levels and values in one kernel call on Arrow's buffers. Returns its row count."""
    offsets, raw_data = data.values
    body, _ = plain.encode_plain_binary_page(
        offsets, raw_data, data.validity, data.validity_offset, a, b, True
    )
    header = fmt.PageHeader(
        type=DATA_PAGE,
        uncompressed_page_size=len(body),
        compressed_page_size=0,
        data_page_header=fmt.DataPageHeader(
            num_values=b - a,
            encoding=PLAIN,
            definition_level_encoding=RLE,
            repetition_level_encoding=RLE,
        ),
    )
    out.emit_parts(header, [body], len(body))
    return b - a


def _page_levels(data: ColumnData, a: int, b: int):
    """``(repetition, definition levels, rows)`` of levels ``a:b``."""
    rep = None if data.rep_levels is None else data.rep_levels[a:b]
    dfl = None if data.def_levels is None else data.def_levels[a:b]
    return rep, dfl, (b - a) if rep is None else int(np.count_nonzero(rep == 0))


def _write_v1_page(
    out: _PageSink, spec: ColumnSpec, data: ColumnData, a: int, b: int, encoding: int, values_raw
) -> int:
    """A v1 data page of levels ``a:b``: RLE levels with length prefixes, then the values,
    compressed together. Returns its row count."""
    rep, dfl, num_rows = _page_levels(data, a, b)
    parts = []
    if spec.max_rep > 0:
        parts.append(enc.encode_levels_v1(rep, spec.max_rep))
    if spec.max_def > 0:
        parts.append(
            enc.encode_levels_v1(dfl, spec.max_def)
            if dfl is not None
            else enc.constant_levels(b - a, spec.max_def, prefixed=True)
        )
    parts.append(values_raw)
    raw_size = sum(len(part) for part in parts)
    header = fmt.PageHeader(
        type=DATA_PAGE,
        uncompressed_page_size=raw_size,
        compressed_page_size=0,
        data_page_header=fmt.DataPageHeader(
            num_values=b - a,
            encoding=encoding,
            definition_level_encoding=RLE,
            repetition_level_encoding=RLE,
        ),
    )
    out.emit_parts(header, parts, raw_size)
    return num_rows


def _write_v2_page(
    out: _PageSink,
    spec: ColumnSpec,
    data: ColumnData,
    levels: tuple,
    values: tuple,
    encoding: int,
    values_raw,
) -> int:
    """A v2 data page of levels ``levels`` and values ``values`` (``(first, end)`` each):
    uncompressed levels without prefixes, then the values, compressed alone. Returns its row
    count."""
    (a, b), (va, vb) = levels, values
    rep, dfl, num_rows = _page_levels(data, a, b)
    rep_raw = enc.encode_levels_v2(rep, spec.max_rep) if spec.max_rep > 0 else b""
    def_raw = (
        b""
        if spec.max_def == 0
        else enc.encode_levels_v2(dfl, spec.max_def)
        if dfl is not None
        else enc.constant_levels(b - a, spec.max_def, prefixed=False)
    )
    compressed = out.codec != codecs.UNCOMPRESSED
    values_body = (
        codecs.compress_buffer(out.codec, values_raw, out.level) if compressed else values_raw
    )
    body = b"".join((rep_raw, def_raw, values_body))
    raw_size = len(rep_raw) + len(def_raw) + len(values_raw)
    header = fmt.PageHeader(
        type=DATA_PAGE_V2,
        uncompressed_page_size=raw_size,
        compressed_page_size=len(body),
        data_page_header_v2=fmt.DataPageHeaderV2(
            num_values=b - a,
            num_nulls=(b - a) - (vb - va),
            num_rows=num_rows,
            encoding=encoding,
            definition_levels_byte_length=len(def_raw),
            repetition_levels_byte_length=len(rep_raw),
            is_compressed=compressed,
        ),
    )
    out.emit(header, body, raw_size)
    return num_rows


class _PageIndexBuilder:
    """Each data page's statistics and location, for the chunk's ColumnIndex and
    OffsetIndex."""

    def __init__(self, spec: ColumnSpec, data: ColumnData, opts: ChunkOptions):
        self.spec, self.data, self.opts = spec, data, opts
        self.page_stats: list[fmt.Statistics] = []
        self.null_pages: list[bool] = []
        self.locations: list[tuple[int, int, int]] = []

    def add(self, va: int, vb: int, levels: int, start: int, size: int, first_row: int):
        """A page of values ``va:vb`` and ``levels`` levels, stored at ``start``."""
        spec, opts, ptype = self.spec, self.opts, self.spec.physical_type
        self.page_stats.append(
            stats_mod.compute(
                vals.slice(self.data.values, ptype, va, vb),
                ptype,
                spec.type_length,
                opts.sort_order,
                levels - (vb - va),
                opts.truncate_length,
                float16=opts.float16,
            )
        )
        self.null_pages.append(vb == va)
        self.locations.append((start, size, first_row))

    def build(self):
        """``(ColumnIndex, OffsetIndex)``."""
        opts, spec = self.opts, self.spec
        column_index = pidx.build_column_index(
            self.page_stats,
            self.null_pages,
            spec.physical_type,
            opts.sort_order,
            type_length=spec.type_length,
            float16=opts.float16,
        )
        return column_index, pidx.build_offset_index(self.locations)


def _chunk_meta(
    spec: ColumnSpec,
    data: ColumnData,
    opts: ChunkOptions,
    n_values: int,
    values: _ValueEncoder,
    pages: int,
    out: _PageSink,
    data_page_offset: int,
    dictionary_page_offset: int | None,
) -> fmt.ColumnMetaData:
    """The chunk's ``ColumnMetaData``: encodings, sizes, offsets and statistics."""
    ptype, flat = spec.physical_type, data.validity is not None
    encodings = {values.encoding}
    encoding_stats = []
    if values.dictionary is not None:
        encodings.add(PLAIN)
        encoding_stats.append(
            fmt.PageEncodingStats(page_type=DICTIONARY_PAGE, encoding=PLAIN, count=1)
        )
    if spec.max_def > 0 or spec.max_rep > 0:
        encodings.add(RLE)
    encoding_stats.append(
        fmt.PageEncodingStats(
            page_type=DATA_PAGE if opts.data_page_version == 1 else DATA_PAGE_V2,
            encoding=values.encoding,
            count=pages,
        )
    )
    statistics = None
    if opts.statistics:
        statistics = stats_mod.compute(
            data.values,
            ptype,
            spec.type_length,
            opts.sort_order,
            data.null_count if flat else data.num_levels - n_values,
            opts.truncate_length,
            float16=opts.float16,
            validity=data.validity if flat else None,
            validity_offset=data.validity_offset,
        )
    return fmt.ColumnMetaData(
        type=ptype,
        encodings=sorted(encodings),
        path_in_schema=list(spec.path),
        codec=opts.codec,
        num_values=data.num_levels,
        total_uncompressed_size=out.uncompressed_total,
        total_compressed_size=out.written,
        data_page_offset=data_page_offset,
        dictionary_page_offset=dictionary_page_offset,
        encoding_stats=encoding_stats,
        statistics=statistics,
    )
