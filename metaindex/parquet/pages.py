"""One column chunk as pages: levels and values in, page bytes out, and back.

This is the layer between the kernels (values and levels encodings, codecs) and the file
layout. A chunk is written as an optional dictionary page followed by data pages (v1 or v2),
each split at record boundaries; it is read by walking page headers from the chunk's first page
until the chunk's value count is reached, checking every size against the chunk's bytes.

Values travel in the kernel conventions (see ``metaindex.parquet.values``): non-null leaf values
only, with definition and repetition levels as int16 numpy arrays (None when the max level is 0).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from metaindex.errors import DecodeError, EncodeError
from metaindex.parquet import compression as codecs
from metaindex.parquet import encoding as enc
from metaindex.parquet import format as fmt
from metaindex.parquet import page_index as pidx
from metaindex.parquet import statistics as stats_mod
from metaindex.parquet import values as vals
from metaindex.threads import in_worker
from metaindex._native import bss, pagevalues, plain
from metaindex._native import thrift as _thrift
from metaindex._native.levels_assemble import spread_fixed_from

__all__ = ["ColumnSpec", "ColumnData", "ChunkOptions", "flat_binary_ok", "write_chunk",
           "read_chunk"]

DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED = 0, 2, 3, 4
RLE_DICTIONARY = 8
_MAX_PAGE_HEADER = 16 * 1024 * 1024  # larger headers are corrupt (parquet-java caps them too)


@dataclass(frozen=True)
class ColumnSpec:
    """What the page layer needs to know about a leaf column."""

    path: tuple
    physical_type: int
    type_length: int = 0
    max_def: int = 0
    max_rep: int = 0


@dataclass
class ColumnData:
    """A leaf column's content: non-null values plus levels.

    Writing, ``def_levels`` None with ``max_def`` > 0 means every level is ``max_def`` (a
    nullable column without nulls in this chunk: no level array is built). A nullable
    top-level BYTE_ARRAY column written PLAIN (:func:`flat_binary_ok`) may instead come as
    Arrow has it: ``values`` the ``(offsets, data)`` of every slot, ``validity`` its bitmap
    from bit ``validity_offset``, ``null_count`` its nulls (no shredding, no level array).
    """

    values: object
    num_levels: int
    def_levels: np.ndarray | None = None
    rep_levels: np.ndarray | None = None
    validity: np.ndarray | None = None  # read_chunk(flat=True): values fill every slot, and
    null_count: int = 0                 # this Arrow bitmap replaces the definition levels
    validity_offset: int = 0            # writing: the bitmap's bit of slot 0


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
    statistics: bool = True           # write the chunk's Statistics
    page_index: bool = False          # build the chunk's ColumnIndex / OffsetIndex
    sort_order: int = stats_mod.SIGNED  # statistics.sort_order(schema element)
    float16: bool = False             # statistics.is_float16(schema element)
    truncate_length: int | None = 64  # longest BYTE_ARRAY bound (None: never truncate)
    max_rows_per_page: int | None = None  # at most this many levels per data page
    content_defined_chunking: tuple | None = None  # cdc.cdc_options(): content-defined pages


# ---------------------------------------------------------------------------- writing


def _page_bounds(spec: ColumnSpec, data: ColumnData, value_bytes: int, page_size: int,
                 max_rows: int | None = None):
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
    starts = list(starts) + [n]
    for a, b in zip(starts, starts[1:]):
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


def _header_bytes(header, body: bytes, checksum: bool) -> bytes:
    if checksum:
        header.crc = _crc(body)
    return header.to_bytes()


def _crc(body: bytes) -> int:
    crc = zlib.crc32(body)
    return crc - (1 << 32) if crc >= 1 << 31 else crc


_PLAIN_DTYPES = {vals.INT32: np.dtype("<i4"), vals.INT64: np.dtype("<i8"),
                 vals.FLOAT: np.dtype("<f4"), vals.DOUBLE: np.dtype("<f8")}


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
    return memoryview(values[a:b].reshape(-1).view(np.uint8))


def flat_binary_ok(spec: ColumnSpec, opts: ChunkOptions) -> bool:
    """Whether :func:`write_chunk` takes this leaf's values with an Arrow validity bitmap
    (see :class:`ColumnData`): a nullable top-level BYTE_ARRAY column written PLAIN in v1
    pages, without a dictionary, page index or content-defined pages (each page's levels and
    values then come from one kernel call on Arrow's buffers)."""
    return (spec.physical_type == vals.BYTE_ARRAY and spec.max_def == 1 and spec.max_rep == 0
            and not opts.use_dictionary and opts.encoding in (None, PLAIN)
            and opts.data_page_version == 1 and not opts.page_index
            and opts.content_defined_chunking is None)


def write_chunk(sink, offset: int, spec: ColumnSpec, data: ColumnData, opts: ChunkOptions,
                encryptor=None, dictionary=None):
    """Write one column chunk to ``sink`` (a binary file) starting at file ``offset``.

    ``encryptor``: the chunk's ``metaindex.crypto`` ChunkEncryptor for an encrypted column
    (pages and headers become encrypted modules; CRCs cover the stored, encrypted bytes).
    ``dictionary``: ``(dictionary values, uint32 indices)`` to write as given (an Arrow
    dictionary array's own dictionary) instead of building one.
    Returns the chunk's ``ColumnMetaData`` (without statistics, which the caller adds).
    """
    ptype = spec.physical_type
    n_values = vals.count(data.values, ptype)
    if data.def_levels is None and data.rep_levels is None and n_values != data.num_levels:
        raise EncodeError(f"column {'.'.join(spec.path)}: {n_values} values for "
                          f"{data.num_levels} levels without definition levels")
    flat = data.validity is not None
    if flat and not flat_binary_ok(spec, opts):
        raise EncodeError(f"column {'.'.join(spec.path)}: values with a validity bitmap are "
                          "written only as flat_binary_ok() says")
    written = 0
    uncompressed_total = 0
    encodings = set()
    encoding_stats = []
    dictionary_page_offset = None

    given, dictionary, indices = dictionary, None, None
    if opts.use_dictionary and ptype != vals.BOOLEAN:
        built = given if given is not None else enc.build_dictionary(
            data.values, ptype, spec.type_length, opts.dictionary_page_size_limit)
        if built is not None:
            dictionary, indices = built

    codec, level = opts.codec, opts.compression_level
    checksum = opts.write_page_checksum

    def emit(header, body, raw_size):
        """A page whose (compressed) body is ready: header and body go to the sink as they
        are (a view of the values or the codec's buffer is not copied here)."""
        nonlocal written, uncompressed_total
        if encryptor is None:
            head = _header_bytes(header, body, checksum)
        else:
            body = encryptor.page(header.type, body)
            header.compressed_page_size = len(body)
            head = encryptor.page_header(header.type, _header_bytes(header, body, checksum))
        sink.write(head)
        sink.write(body)
        written += len(head) + len(body)
        uncompressed_total += len(head) + raw_size

    def emit_parts(header, parts, raw_size):
        """A page whose uncompressed body is ``parts`` (byte buffers, ``raw_size`` bytes in
        all): uncompressed, each part goes to the sink as it is (no join)."""
        nonlocal written, uncompressed_total
        if encryptor is not None or codec != codecs.UNCOMPRESSED:
            raw = parts[0] if len(parts) == 1 else b"".join(parts)
            body = codecs.compress_buffer(codec, raw, level)
            header.compressed_page_size = len(body)
            emit(header, body, raw_size)
            return
        header.compressed_page_size = raw_size
        if checksum:
            crc = 0
            for part in parts:
                crc = zlib.crc32(part, crc)
            header.crc = crc - (1 << 32) if crc >= 1 << 31 else crc
        head = header.to_bytes()
        sink.write(head)
        for part in parts:
            sink.write(part)
        written += len(head) + raw_size
        uncompressed_total += len(head) + raw_size

    if dictionary is not None:
        dictionary_page_offset = offset
        raw = enc.encode_values(dictionary, ptype, PLAIN, spec.type_length)
        body = codecs.compress_buffer(codec, raw, level)
        n_dict = vals.count(dictionary, ptype)
        header = fmt.PageHeader(
            type=DICTIONARY_PAGE, uncompressed_page_size=len(raw), compressed_page_size=len(body),
            dictionary_page_header=fmt.DictionaryPageHeader(num_values=n_dict, encoding=PLAIN,
                                                             is_sorted=False))
        emit(header, body, len(raw))
        encodings.add(PLAIN)
        encoding_stats.append(fmt.PageEncodingStats(page_type=DICTIONARY_PAGE, encoding=PLAIN, count=1))
        value_encoding = RLE_DICTIONARY
        value_bytes = max(1, (int(n_dict).bit_length() + 7) // 8)
    else:
        value_encoding = PLAIN if opts.encoding is None else opts.encoding
        value_bytes = vals.average_width(data.values, ptype, spec.type_length)

    data_page_offset = offset + written
    pages = 0
    first_row = 0
    page_stats, null_pages, locations = [], [], []
    if opts.content_defined_chunking is not None:
        from metaindex.parquet import cdc

        bounds = cdc.page_bounds(spec, data, vals.average_width(data.values, ptype,
                                                                spec.type_length),
                                 opts.content_defined_chunking)
    else:
        bounds = _page_bounds(spec, data, value_bytes, opts.data_page_size,
                              opts.max_rows_per_page)
    page_values = _page_values(spec, data, bounds)
    if page_values and page_values[-1][1] != n_values:
        raise EncodeError(f"column {'.'.join(spec.path)}: {n_values} values but levels say "
                          f"{page_values[-1][1]}")
    for (a, b), (va, vb) in zip(bounds, page_values):
        page_start = offset + written
        values_raw = None
        if flat:  # levels and values of the page in one kernel call on Arrow's buffers
            offsets, raw_data = data.values
            body, _ = plain.encode_plain_binary_page(offsets, raw_data, data.validity,
                                                     data.validity_offset, a, b, True)
            header = fmt.PageHeader(
                type=DATA_PAGE, uncompressed_page_size=len(body), compressed_page_size=0,
                data_page_header=fmt.DataPageHeader(
                    num_values=b - a, encoding=PLAIN, definition_level_encoding=RLE,
                    repetition_level_encoding=RLE))
            emit_parts(header, [body], len(body))
            pages += 1
            first_row += b - a
            page_type = DATA_PAGE
            continue
        if indices is not None:
            values_raw = enc.encode_indices(indices[va:vb], vals.count(dictionary, ptype))
        elif value_encoding == PLAIN and ptype == vals.BYTE_ARRAY:  # one pass, Arrow's pool
            values_raw, _ = plain.encode_plain_binary_page(data.values[0], data.values[1], None,
                                                           0, va, vb, False)
        elif value_encoding == PLAIN:
            values_raw = _plain_view(data.values, ptype, va, vb)
        if values_raw is None:
            values_raw = enc.encode_values(vals.slice(data.values, ptype, va, vb), ptype,
                                           value_encoding, spec.type_length)
        rep = None if data.rep_levels is None else data.rep_levels[a:b]
        dfl = None if data.def_levels is None else data.def_levels[a:b]
        num_rows = (b - a) if rep is None else int(np.count_nonzero(rep == 0))
        if opts.data_page_version == 1:
            parts = []
            if spec.max_rep > 0:
                parts.append(enc.encode_levels_v1(rep, spec.max_rep))
            if spec.max_def > 0:
                parts.append(enc.encode_levels_v1(dfl, spec.max_def) if dfl is not None else
                             enc.constant_levels(b - a, spec.max_def, prefixed=True))
            parts.append(values_raw)
            raw_size = sum(len(part) for part in parts)
            header = fmt.PageHeader(
                type=DATA_PAGE, uncompressed_page_size=raw_size, compressed_page_size=0,
                data_page_header=fmt.DataPageHeader(
                    num_values=b - a, encoding=value_encoding,
                    definition_level_encoding=RLE, repetition_level_encoding=RLE))
            emit_parts(header, parts, raw_size)
            page_type = DATA_PAGE
        else:
            rep_raw = enc.encode_levels_v2(rep, spec.max_rep) if spec.max_rep > 0 else b""
            def_raw = b"" if spec.max_def == 0 else enc.encode_levels_v2(dfl, spec.max_def) \
                if dfl is not None else enc.constant_levels(b - a, spec.max_def, prefixed=False)
            compressed = opts.codec != codecs.UNCOMPRESSED
            values_body = codecs.compress_buffer(codec, values_raw, level) \
                if compressed else values_raw
            body = b"".join((rep_raw, def_raw, values_body))
            raw_size = len(rep_raw) + len(def_raw) + len(values_raw)
            header = fmt.PageHeader(
                type=DATA_PAGE_V2, uncompressed_page_size=raw_size, compressed_page_size=len(body),
                data_page_header_v2=fmt.DataPageHeaderV2(
                    num_values=b - a, num_nulls=(b - a) - (vb - va), num_rows=num_rows,
                    encoding=value_encoding, definition_levels_byte_length=len(def_raw),
                    repetition_levels_byte_length=len(rep_raw), is_compressed=compressed))
            emit(header, body, raw_size)
            page_type = DATA_PAGE_V2
        pages += 1
        if opts.page_index:
            page_stats.append(stats_mod.compute(
                vals.slice(data.values, ptype, va, vb), ptype, spec.type_length, opts.sort_order,
                (b - a) - (vb - va), opts.truncate_length, float16=opts.float16))
            null_pages.append(vb == va)
            locations.append((page_start, offset + written - page_start, first_row))
        first_row += num_rows
    encodings.add(value_encoding)
    if spec.max_def > 0 or spec.max_rep > 0:
        encodings.add(RLE)
    encoding_stats.append(fmt.PageEncodingStats(page_type=page_type, encoding=value_encoding,
                                                count=pages))
    statistics = None
    if opts.statistics:
        statistics = stats_mod.compute(
            data.values, ptype, spec.type_length, opts.sort_order,
            data.null_count if flat else data.num_levels - n_values, opts.truncate_length,
            float16=opts.float16, validity=data.validity if flat else None,
            validity_offset=data.validity_offset)
    meta = fmt.ColumnMetaData(
        type=ptype, encodings=sorted(encodings), path_in_schema=list(spec.path), codec=opts.codec,
        num_values=data.num_levels, total_uncompressed_size=uncompressed_total,
        total_compressed_size=written, data_page_offset=data_page_offset,
        dictionary_page_offset=dictionary_page_offset, encoding_stats=encoding_stats,
        statistics=statistics)
    column_index = offset_index = None
    if opts.page_index:
        column_index = pidx.build_column_index(page_stats, null_pages, ptype, opts.sort_order,
                                               type_length=spec.type_length, float16=opts.float16)
        offset_index = pidx.build_offset_index(locations)
    return meta, column_index, offset_index


# ---------------------------------------------------------------------------- reading


def iter_pages(chunk, base: int, decryptor=None):
    """Yield ``(header, body)`` for every page in ``chunk`` (a memoryview of the chunk's bytes).

    ``base`` is the file offset of ``chunk[0]``, used only in error messages. With a
    ``decryptor`` (a ChunkDecryptor), headers are decrypted and bodies are the stored frames.
    """
    pos = 0
    while pos < len(chunk):
        header, body, pos = _page_at(chunk, pos, base, decryptor)
        yield header, body


def _page_at(chunk, pos: int, base: int, decryptor=None):
    """The page at ``chunk[pos]``: ``(header, body, offset past the body)``."""
    try:
        if decryptor is None:
            header, hend = fmt.PageHeader.decode_prefix(chunk, pos)
        else:
            header, hend = decryptor.page_header(chunk, pos)
    except DecodeError as exc:
        raise DecodeError(f"bad page header at file offset {base + pos}: {exc}") from exc
    size = header.compressed_page_size
    if size is None or size < 0 or header.uncompressed_page_size is None \
            or header.uncompressed_page_size < 0:
        raise DecodeError(f"page header at file offset {base + pos} has a negative size")
    if size > len(chunk) - hend:
        raise DecodeError("page body runs past its column chunk",
                          offset=base + hend, needed=size, remaining=len(chunk) - hend)
    return header, chunk[hend:hend + size], hend + size


def read_chunk(chunk, base: int, spec: ColumnSpec, meta, verify_checksums: bool = False,
               decryptor=None, flat: bool = False, owned: bool = False) -> ColumnData:
    """Decode a whole column chunk (``chunk``: its bytes, from its first page).

    Fixed-width values of every page are decoded straight into one buffer allocated once for
    the chunk (PLAIN pages are one memcpy each); other types are decoded per page and joined.
    A required column's consecutive PLAIN, dictionary or BYTE_STREAM_SPLIT v1 pages have
    their headers read in C and are decoded in one kernel call when uncompressed (a bad
    page's DecodeError names its place in the run); compressed ones are decoded one by one
    right after each is decompressed, while the page is still in cache (PLAIN ones decompress
    straight into the buffer).
    ``decryptor``: the chunk's ChunkDecryptor when the column is encrypted.
    ``flat``: the caller takes an Arrow validity bitmap instead of definition levels for a
    fixed-width leaf with max_def 1 and max_rep 0 (a nullable top-level column): levels decode
    straight into the bitmap and values are spread over their slots (PLAIN values straight
    from the page, others from a scratch buffer they are decoded into; the result's
    ``validity`` is set; without it the chunk is returned with levels as usual).
    ``owned``: ``chunk`` is a writable buffer nobody else holds (read from a file for this
    call): an uncompressed required chunk of PLAIN pages only then has its values closed up
    over the page headers in place, and they are the result (no second buffer, no copy into
    memory not yet in cache).
    """
    ptype = spec.physical_type
    total = meta.num_values
    if total is None or total < 0:
        raise DecodeError(f"column {'.'.join(spec.path)}: negative num_values {total}")
    sink = _FixedSink.make(ptype, spec.type_length, total, len(chunk)) or \
        _BinarySink.make(ptype, total, len(chunk), meta.total_uncompressed_size)
    if sink is not None and sink.width and flat and spec.max_def == 1 and spec.max_rep == 0 \
            and BIT_PACKED not in (meta.encodings or ()):
        sink.bitmap = np.frombuffer(pa.allocate_buffer((total + 7) // 8), np.uint8)
        sink.bitmap[:] = 0
    dictionary = None
    value_parts, def_parts, rep_parts = [], [], []
    seen = 0
    # required fixed-width values of v1 pages: a run of PLAIN, dictionary or BYTE_STREAM_SPLIT
    # pages of one encoding has its headers read in C (scan_data_pages); an uncompressed run
    # is then decoded in one kernel call (no per-page Python work), a compressed one page by
    # page, each decoded right after it is decompressed while it is still in cache (PLAIN
    # pages decompress straight into the chunk's buffer). Any other page, and a page the
    # scan stops at, takes the general path below, which raises for a bad one.
    batched = sink is not None and sink.width and sink.bitmap is None and spec.max_def == 0 \
        and spec.max_rep == 0 and decryptor is None
    dict_raw = None
    pos, end = 0, len(chunk)
    while pos < end:
        if batched:
            run, sizes, encoding, count, after = _thrift.scan_data_pages(
                chunk, pos, total - seen, _RUN_ENCODINGS if dict_raw is None else
                _RUN_ENCODINGS | _DICT_ENCODINGS, meta.codec == codecs.UNCOMPRESSED,
                verify_checksums)
            kind = _BATCH_KINDS.get(encoding, 0)
            if kind == _PLAIN_PAGES and count == total and len(run) == 1:
                kind = 0  # one page holds the chunk: the general path may borrow it in place
            if kind == _PLAIN_PAGES and owned and count == total and pos == 0 and \
                    meta.codec == codecs.UNCOMPRESSED and sink.close_up(chunk, run):
                seen = count
                break
            if kind:
                _decode_run(run, sizes, count, kind, meta.codec, sink, spec, dict_raw)
                seen += count
                pos = after
                if seen == total:
                    break
                continue
        header, body, pos = _page_at(chunk, pos, base, decryptor)
        if verify_checksums and header.crc is not None and _crc(bytes(body)) != header.crc:
            raise DecodeError(f"page CRC checksum verification failed in column "
                              f"{'.'.join(spec.path)}")
        if decryptor is not None:
            body = decryptor.page(body)
        if header.type == DICTIONARY_PAGE:
            dph = header.dictionary_page_header
            if dph is None or dph.num_values is None or dph.num_values < 0:
                raise DecodeError("dictionary page without a valid header")
            if dictionary is not None:
                raise DecodeError("a column chunk holds two dictionary pages")
            raw = codecs.decompress(meta.codec, body, header.uncompressed_page_size)
            dictionary, _ = enc.decode_values(raw, dph.num_values, ptype, PLAIN, spec.type_length)
            if sink is not None and not sink.width:
                sink.dictionary(dictionary)
            if batched:
                dict_raw = np.ascontiguousarray(dictionary).reshape(-1).view(np.uint8)
            continue
        if header.type == DATA_PAGE:
            n, rep, dfl, values = _read_v1(header, body, spec, meta.codec, dictionary, sink,
                                           total - seen)
        elif header.type == DATA_PAGE_V2:
            n, rep, dfl, values = _read_v2(header, body, spec, meta.codec, dictionary, sink,
                                           total - seen)
        else:
            continue  # index pages and unknown page types carry no values
        seen += n
        if seen > total:
            raise DecodeError(f"column {'.'.join(spec.path)}: pages hold more values ({seen}) "
                              f"than the chunk's num_values ({total})")
        if sink is None:
            value_parts.append(values)
        if dfl is not None:
            def_parts.append(dfl)
        if rep is not None:
            rep_parts.append(rep)
        if seen == total:
            break
    if seen != total:
        raise DecodeError(f"column {'.'.join(spec.path)}: pages hold {seen} values, "
                          f"the chunk says {total}")
    if sink is not None and sink.bitmap is not None:
        return ColumnData(values=sink.values(), num_levels=total, validity=sink.bitmap,
                          null_count=total - sink.present)
    return ColumnData(
        values=sink.values() if sink is not None else
        vals.concat(value_parts, ptype, spec.type_length),
        num_levels=total,
        def_levels=_join_levels(def_parts) if spec.max_def > 0 else None,
        rep_levels=_join_levels(rep_parts) if spec.max_rep > 0 else None,
    )


_DICT_PAGES, _BSS_PAGES, _PLAIN_PAGES = 1, 2, 3
_BATCH_KINDS = {PLAIN_DICTIONARY: _DICT_PAGES, RLE_DICTIONARY: _DICT_PAGES,
                enc.BYTE_STREAM_SPLIT: _BSS_PAGES, PLAIN: _PLAIN_PAGES}
_RUN_ENCODINGS = 1 << PLAIN | 1 << enc.BYTE_STREAM_SPLIT
_DICT_ENCODINGS = 1 << PLAIN_DICTIONARY | 1 << RLE_DICTIONARY
_INTO_CODECS = (codecs.ZSTD, codecs.SNAPPY)


def _decode_run(run, sizes, n, kind, codec, sink, spec, dict_raw) -> None:
    """Decode a run of a required chunk's pages of one kind (``(body, count)`` each, their
    uncompressed ``sizes``, ``n`` values in all) into the sink."""
    if codec == codecs.UNCOMPRESSED:  # the bodies are the values sections: one kernel call
        out = sink.take(n)
        if kind == _PLAIN_PAGES:
            pagevalues.copy_plain_pages(run, sink.width, out)
        elif kind == _DICT_PAGES:
            pagevalues.decode_dictionary_pages(run, dict_raw, sink.width, out, in_worker())
        else:
            bss.decode_byte_stream_split_pages(run, spec.physical_type, spec.type_length, out)
        return
    for (body, count), size in zip(run, sizes):
        if kind != _PLAIN_PAGES:
            # decoded at once from the page just decompressed (still in cache), and dropped
            # before the next page so that one reuses its memory
            _decode_page(codecs.decompress(codec, body, size, True), count, kind, sink, spec,
                         dict_raw)
        elif codec in _INTO_CODECS and size == count * sink.width:
            codecs.decompress_into(codec, body, sink.take(count))  # the page is its values
        else:
            plain.decode_plain(codecs.decompress(codec, body, size, True), count,
                               spec.physical_type, spec.type_length, sink.take(count))


def _decode_page(data, n, kind, sink, spec, dict_raw) -> None:
    """Decode one dictionary or BYTE_STREAM_SPLIT page's ``n`` values into the sink."""
    if kind == _DICT_PAGES:
        pagevalues.decode_dictionary_into(data, n, dict_raw, sink.width, sink.take(n),
                                          in_worker())
    else:
        bss.decode_byte_stream_split(data, n, spec.physical_type, spec.type_length,
                                     sink.take(n))


_FIXED = {vals.INT32: 4, vals.INT64: 8, vals.FLOAT: 4, vals.DOUBLE: 8, vals.INT96: 12}
_DTYPES = {vals.INT32: np.int32, vals.INT64: np.int64, vals.FLOAT: np.float32,
           vals.DOUBLE: np.float64}


class _FixedSink:
    """One buffer for a chunk's fixed-width values; pages decode into consecutive slices."""

    __slots__ = ("ptype", "width", "buf", "view", "total", "count", "bitmap", "present",
                 "scratch")

    @classmethod
    def make(cls, ptype: int, type_length: int, total: int, chunk_bytes: int):
        """A sink for ``total`` values at most, or None for variable-width types and for
        value counts out of proportion to the chunk's bytes (a hostile footer must not make us
        allocate gigabytes up front: such chunks take the page-by-page path, which allocates
        only what each page proves it holds)."""
        width = _FIXED.get(ptype, type_length if ptype == vals.FIXED_LEN_BYTE_ARRAY else 0)
        if width <= 0 or total * width > 64 * chunk_bytes + (1 << 20):
            return None
        sink = cls()
        sink.ptype, sink.width, sink.count, sink.bitmap, sink.present = ptype, width, 0, None, 0
        sink.total, sink.buf, sink.view, sink.scratch = total, None, None, None
        return sink

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` values' bytes (the caller decodes into them)."""
        if self.buf is None:  # allocated on first use: a chunk read in place needs none
            self.buf = np.frombuffer(pa.allocate_buffer(self.total * self.width), np.uint8)
        a = self.count * self.width
        self.count += n
        return self.buf[a:a + n * self.width]

    def borrow(self, data, n: int) -> bool:
        """Take a PLAIN page holding all ``n`` values of the chunk in place: its bytes become
        the values (no copy) when they are aligned to the value width, as Arrow expects."""
        dtype = _DTYPES.get(self.ptype)
        if dtype is None or self.count or n != self.total or len(data) < n * self.width:
            return False
        view = np.frombuffer(data, np.uint8, n * self.width)
        if view.__array_interface__["data"][0] % self.width:
            return False
        self.view, self.count = view, n
        return True

    def close_up(self, chunk, run) -> bool:
        """Take every value of the chunk from ``run``, all of its pages (PLAIN, from the
        chunk's first byte), moved down over their headers into the start of ``chunk`` (a
        writable buffer of ours): that start becomes the values, when aligned as Arrow
        expects."""
        if self.count or len(chunk) < self.total * self.width:  # short pages: the kernel
            return False                                           # path raises for them
        view = np.frombuffer(chunk, np.uint8, self.total * self.width)
        if self.ptype in _DTYPES and view.__array_interface__["data"][0] % self.width:
            return False
        pagevalues.copy_plain_pages(run, self.width, view)
        self.view, self.count = view, self.total
        return True

    def flat_page(self, levels, n: int, prefixed: bool, decode, plain=None) -> None:
        """One page of a flat nullable column: ``levels`` into the bitmap, then ``decode(out,
        present)`` packs the page's values into the start of its slots, which are spread.
        ``plain``: the page's PLAIN values section, taken in place when the page holds the
        whole chunk without a null, else spread from where it lies (a section too short for
        the values goes through ``decode``, which raises for it)."""
        first = self.count
        present, _ = pagevalues.decode_levels_bitmap(levels, n, prefixed, self.bitmap, first)
        if present == n and plain is not None and self.borrow(plain, n):
            self.present += present
            return
        slots = self.take(n)
        if present == n:  # no null in the page: its values are the slots
            decode(slots, n)
        elif plain is not None and len(plain) >= present * self.width:
            # PLAIN values spread over their slots straight from the page (no packed copy)
            spread_fixed_from(plain, slots, self.width, self.bitmap, first, n, present)
        else:
            # decoded packed into a scratch buffer reused page after page (it stays in cache),
            # then spread forward over the slots (cheaper than spreading in place)
            size = present * self.width
            if self.scratch is None or len(self.scratch) < size:
                self.scratch = np.empty(size, np.uint8)
            packed = self.scratch[:size]
            decode(packed, present)
            spread_fixed_from(packed, slots, self.width, self.bitmap, first, n, present)
        self.present += present

    def values(self):
        if self.view is not None:
            raw = self.view
        elif self.buf is None:
            raw = np.zeros(0, np.uint8)
        else:
            raw = self.buf[:self.count * self.width]
        dtype = _DTYPES.get(self.ptype)
        return raw.view(dtype) if dtype is not None else raw.reshape(self.count, self.width)


_INT32_MAX = (1 << 31) - 1


class _BinarySink:
    """A chunk's BYTE_ARRAY values (the non-null ones), decoded page after page straight
    into one offsets array and one data buffer in Arrow's layout: no arrays per page and no
    join (the ``*_into`` decoders; the protocol is in cython_ext/binsink.pxd). Offsets are
    int32 until the values pass 2 GiB, then int64, as ``values.concat`` makes them."""

    __slots__ = ("offsets", "buf", "data", "count", "size", "total", "width", "bitmap",
                 "entries")

    @classmethod
    def make(cls, ptype: int, total: int, chunk_bytes: int, expected_bytes: int | None):
        """A sink for ``total`` values at most, or None (another type, or a value count out
        of proportion to the chunk's bytes: see ``_FixedSink.make``). ``expected_bytes``:
        what the footer says the chunk's pages take uncompressed, the first guess at the
        values' bytes (a guess only: the buffer grows as pages need)."""
        limit = 64 * chunk_bytes + (1 << 20)
        if ptype != vals.BYTE_ARRAY or 4 * total > limit:
            return None
        sink = cls()
        sink.offsets = vals.pool_empty(total + 1, np.int32)
        sink.offsets[0] = 0
        guess = min(max(expected_bytes or 0, chunk_bytes), limit)
        sink.buf = pa.allocate_buffer(guess, resizable=True)
        sink.data = np.frombuffer(sink.buf, np.uint8)
        sink.count = sink.size = sink.width = 0
        sink.total, sink.bitmap, sink.entries = total, None, None
        return sink

    def claim(self, n: int, nbytes: int):
        """Room for ``n`` more values of ``nbytes`` bytes (the buffer grows if it must):
        ``(first value, first byte, offsets, data)`` for the decoder to write at."""
        start, base = self.count, self.size
        if n > self.total - start:
            raise DecodeError(f"pages hold more values than the {self.total} of their chunk")
        end = base + nbytes
        if end > len(self.data):
            # the bytes a value has taken so far times the values the chunk has, or at
            # least half again the buffer (few regrowths), and at most 8 times what is
            # needed now (a page of long values among short ones must not allocate wildly)
            guess = end * self.total // (start + n) if start + n else end
            self.buf.resize(max(end, min(guess + guess // 16, 8 * end),
                                len(self.data) * 3 // 2))
            self.data = np.frombuffer(self.buf, np.uint8)  # the old view's memory is gone
        if end > _INT32_MAX and self.offsets.dtype == np.int32:
            self.offsets = self.offsets.astype(np.int64)
        self.count, self.size = start + n, end
        return start, base, self.offsets, self.data

    def dictionary(self, dictionary) -> None:
        """Take the chunk's dictionary (offsets from 0 and data, as a dictionary page
        decodes to); the buffer is sized for the values it will gather when nothing is in
        it yet."""
        offsets, data = dictionary
        self.entries = np.ascontiguousarray(offsets, np.int32), data
        entries = len(offsets) - 1
        if entries and not self.count:
            guess = int(offsets[-1]) * (self.total // entries + 1)
            if guess > len(self.data):
                self.buf.resize(min(guess, 8 * len(self.data) + (1 << 20)))
                self.data = np.frombuffer(self.buf, np.uint8)

    def values(self):
        return self.offsets[:self.count + 1], self.data[:self.size]


def _join_levels(parts) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, np.int16)
    out = vals.pool_empty(sum(len(p) for p in parts), parts[0].dtype)  # see pool_empty
    return np.concatenate(parts, out=out)


def _present(spec: ColumnSpec, dfl, n: int) -> int:
    return n if dfl is None else int(np.count_nonzero(dfl == spec.max_def))


def _read_v1(header, body, spec, codec, dictionary, sink, room):
    dph = header.data_page_header
    if dph is None or dph.num_values is None or dph.num_values < 0:
        raise DecodeError("data page without a valid header")
    n = dph.num_values
    if sink is not None and sink.width and codec in _INTO_CODECS and dph.encoding == PLAIN and \
            spec.max_def == 0 and spec.max_rep == 0 and n <= room and \
            header.uncompressed_page_size == n * sink.width:
        # a required PLAIN page is its values: decompressed straight into the chunk's buffer
        codecs.decompress_into(codec, body, sink.take(n))
        return n, None, None, None
    # fixed-width values are copied into the sink (or the page is borrowed whole): the page
    # is dropped before the next one, so it may take memory the allocator recycles
    raw = memoryview(codecs.decompress(codec, body, header.uncompressed_page_size,
                                       sink is not None))
    if sink is not None and sink.bitmap is not None:
        if n > room:
            raise DecodeError(f"column {'.'.join(spec.path)}: a page holds {n} values, "
                              f"more values than the {room} the chunk has left")
        if dph.definition_level_encoding not in (RLE, None):
            raise DecodeError("definition levels of a page are not RLE-encoded, unlike the "
                              "chunk's encodings list says")
        used = 4 + int.from_bytes(raw[:4], "little") if len(raw) >= 4 else 4
        sink.flat_page(raw, n, True, lambda out, count: _read_values(
            raw[used:], count, dph.encoding, spec, dictionary, out=out),
            raw[used:] if dph.encoding == PLAIN else None)
        return n, None, None, None
    pos = 0
    rep = dfl = None
    if spec.max_rep > 0:
        rep, used = enc.decode_levels_v1(raw, n, spec.max_rep, dph.repetition_level_encoding)
        pos += used
    if spec.max_def > 0:
        dfl, used = enc.decode_levels_v1(raw[pos:], n, spec.max_def, dph.definition_level_encoding)
        pos += used
    values = _read_values(raw[pos:], _present(spec, dfl, n), dph.encoding, spec, dictionary,
                          sink, room)
    return n, rep, dfl, values


def _read_v2(header, body, spec, codec, dictionary, sink, room):
    dph = header.data_page_header_v2
    if dph is None or dph.num_values is None or dph.num_values < 0:
        raise DecodeError("data page v2 without a valid header")
    n = dph.num_values
    rlen, dlen = dph.repetition_levels_byte_length or 0, dph.definition_levels_byte_length or 0
    if rlen < 0 or dlen < 0 or rlen + dlen > len(body):
        raise DecodeError("data page v2 level lengths exceed the page")
    rep = dfl = None
    flat = sink is not None and sink.bitmap is not None
    if flat and n > room:
        raise DecodeError(f"column {'.'.join(spec.path)}: a page holds {n} values, "
                          f"more values than the {room} the chunk has left")
    if spec.max_rep > 0:
        rep = enc.decode_levels_v2(body[:rlen], n, spec.max_rep)
    if spec.max_def > 0 and not flat:
        dfl = enc.decode_levels_v2(body[rlen:rlen + dlen], n, spec.max_def)
    rest = body[rlen + dlen:]
    raw_size = header.uncompressed_page_size - rlen - dlen
    if dph.is_compressed is None or dph.is_compressed:
        rest = codecs.decompress(codec, rest, raw_size, sink is not None)
    if flat:
        sink.flat_page(body[rlen:rlen + dlen], n, False, lambda out, count: _read_values(
            memoryview(rest), count, dph.encoding, spec, dictionary, out=out),
            memoryview(rest) if dph.encoding == PLAIN else None)
        return n, None, None, None
    values = _read_values(memoryview(rest), _present(spec, dfl, n), dph.encoding, spec,
                          dictionary, sink, room)
    return n, rep, dfl, values


def _read_values(data, count, encoding, spec, dictionary, sink=None, room=0, out=None):
    """Decode a page's ``count`` values: into ``sink`` (or the buffer ``out``) when given."""
    if sink is not None and count > room:
        raise DecodeError(f"column {'.'.join(spec.path)}: a page holds {count} values, "
                          f"more values than the {room} the chunk has left")
    if encoding == BIT_PACKED:
        raise DecodeError("BIT_PACKED is only valid for levels")
    if sink is not None and not sink.width:  # BYTE_ARRAY: into the chunk's offsets and data
        enc.decode_binary_into(data, count, encoding, sink, sink.entries)
        return None
    if sink is not None:
        if encoding == PLAIN and sink.borrow(data, count):
            return None
        out = sink.take(count)
    if encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        if dictionary is None:
            raise DecodeError("dictionary-encoded page but the chunk has no dictionary page")
        if out is not None:  # fixed width: indices gathered straight into the chunk's buffer
            raw = np.ascontiguousarray(dictionary).reshape(-1).view(np.uint8)
            width = _FIXED.get(spec.physical_type, spec.type_length)
            pagevalues.decode_dictionary_into(data, count, raw, width, out, in_worker())
            return out
        indices, _ = enc.decode_indices(data, count)
        return enc.take(dictionary, indices, spec.physical_type, out)
    values, _ = enc.decode_values(data, count, spec.physical_type, encoding, spec.type_length,
                                  out)
    return values
