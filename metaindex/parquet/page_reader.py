"""Reading one column chunk from its pages: page bytes in, levels and values out.

A chunk is read by walking page headers from its first page until the chunk's value count is
reached, checking every size against the chunk's bytes. Values are decoded into one sink per
chunk (``parquet/sinks.py``) where their type allows: fixed-width values into one buffer
allocated once, BYTE_ARRAY values into one offsets array and one data buffer; other values page
by page, joined at the end. A required fixed-width column's runs of v1 pages have their headers
read in C (``metaindex._native.pageheader``) and are decoded without per-page Python work; so
are a flat nullable fixed-width column's runs of PLAIN or dictionary v1 pages
(``pagevalues.decode_flat_pages``: levels into the validity bitmap, values into their slots).

Values come back in the kernel conventions (see ``metaindex.parquet.values`` and
:class:`metaindex.parquet.pages.ColumnData`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from metaindex._native import bindict, bss, decimals, pagevalues, plain
from metaindex._native import pageheader as _pageheader
from metaindex.errors import DecodeError
from metaindex.parquet import compression as codecs
from metaindex.parquet import encoding as enc
from metaindex.parquet import values as vals
from metaindex.parquet.pages import (
    BIT_PACKED,
    DATA_PAGE,
    DATA_PAGE_V2,
    DICTIONARY_PAGE,
    PLAIN,
    PLAIN_DICTIONARY,
    RLE,
    RLE_DICTIONARY,
    ColumnData,
    ColumnSpec,
    page_at,
    page_crc,
)
from metaindex.parquet.sinks import FIXED_WIDTHS, BinarySink, FixedSink
from metaindex.threads import in_worker

__all__ = ["read_chunk"]


def read_chunk(
    chunk,
    base: int,
    spec: ColumnSpec,
    meta,
    verify_checksums: bool = False,
    decryptor=None,
    flat: bool = False,
    owned: bool = False,
    decimal128: bool = False,
) -> ColumnData:
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
    ``decimal128``: FIXED_LEN_BYTE_ARRAY decimals of 1 to 16 bytes are converted to Arrow's
    decimal128 as they are decoded (the dictionary once, PLAIN pages straight from the page)
    and come back as int64 limbs of shape (n, 2) (see ``values``); a chunk without a sink
    still comes back as raw bytes.
    """
    ptype = spec.physical_type
    total = meta.num_values
    if total is None or total < 0:
        raise DecodeError(f"column {'.'.join(spec.path)}: negative num_values {total}")
    sink = FixedSink.make(
        ptype, spec.type_length, total, len(chunk), decimal128
    ) or BinarySink.make(ptype, total, len(chunk), meta.total_uncompressed_size)
    # decimals converted as they are decoded (the sink holds 16 bytes a value): the pages'
    # bytes per value, else 0
    wide = decimal128 and ptype == vals.FIXED_LEN_BYTE_ARRAY and sink is not None
    dec = spec.type_length if wide and sink.width == 16 else 0
    if (
        sink is not None
        and flat
        and spec.max_def == 1
        and spec.max_rep == 0
        and BIT_PACKED not in (meta.encodings or ())
    ):
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
    batched = (
        sink is not None
        and sink.width
        and spec.max_rep == 0
        and decryptor is None
        # (decimal128 values of a flat nullable chunk take the general path's converting
        # spreads: the flat runs copy values as they are stored)
        and (spec.max_def == 0 or (sink.bitmap is not None and not dec))
    )
    # required BYTE_ARRAY values of dictionary-encoded v1 pages: once the dictionary is read,
    # a run of them has its headers read in C and each page is gathered into the sink with
    # no per-page Python work but the kernel call (the scan stops at any other page)
    binary_run = (
        sink is not None
        and not sink.width
        and sink.bitmap is None
        and spec.max_def == 0
        and spec.max_rep == 0
        and decryptor is None
    )
    # a flat nullable column's runs: v1 pages of RLE levels, PLAIN or dictionary-encoded
    nullable = batched and sink.bitmap is not None
    run_encodings = _FLAT_ENCODINGS if nullable else _RUN_ENCODINGS
    dict_raw = None
    pos, end = 0, len(chunk)
    while pos < end:
        if binary_run and sink.entries is not None:
            taken, pos = _binary_dict_run(
                chunk, pos, total - seen, meta.codec, sink, verify_checksums
            )
            seen += taken
            if seen == total:
                break
            if taken:
                continue
        if batched:
            run, sizes, encoding, count, after = _pageheader.scan_data_pages(
                chunk,
                pos,
                total - seen,
                run_encodings if dict_raw is None else run_encodings | _DICT_ENCODINGS,
                meta.codec == codecs.UNCOMPRESSED,
                verify_checksums,
                nullable,
            )
            kind = _BATCH_KINDS.get(encoding, 0)
            if kind == _PLAIN_PAGES and count == total and len(run) == 1:
                kind = 0  # one page holds the chunk: the general path may borrow it in place
            if (
                kind == _PLAIN_PAGES
                and owned
                and not nullable
                and count == total
                and pos == 0
                and meta.codec == codecs.UNCOMPRESSED
                and not dec
                and sink.close_up(chunk, run)
            ):
                seen = count
                break
            if kind and nullable:
                _decode_flat_run(run, sizes, count, kind, meta.codec, sink, dict_raw)
                seen += count
                pos = after
                if seen == total:
                    break
                continue
            if kind:
                _decode_run(run, sizes, count, kind, meta.codec, sink, spec, dict_raw, dec)
                seen += count
                pos = after
                if seen == total:
                    break
                continue
        header, body, pos = page_at(chunk, pos, base, decryptor)
        if verify_checksums and header.crc is not None and page_crc(body) != header.crc:
            raise DecodeError(
                f"page CRC checksum verification failed in column {'.'.join(spec.path)}"
            )
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
            if dec:  # converted once: the pages gather decimal128 values from it
                dictionary = _decimal_dictionary(dictionary, dec)
            if batched:
                dict_raw = np.ascontiguousarray(dictionary).reshape(-1).view(np.uint8)
            continue
        if header.type == DATA_PAGE:
            n, rep, dfl, values = _read_v1(
                header, body, spec, meta.codec, dictionary, sink, total - seen, dec
            )
        elif header.type == DATA_PAGE_V2:
            n, rep, dfl, values = _read_v2(
                header, body, spec, meta.codec, dictionary, sink, total - seen, dec
            )
        else:
            continue  # index pages and unknown page types carry no values
        seen += n
        if seen > total:
            raise DecodeError(
                f"column {'.'.join(spec.path)}: pages hold more values ({seen}) "
                f"than the chunk's num_values ({total})"
            )
        if sink is None:
            value_parts.append(values)
        if dfl is not None:
            def_parts.append(dfl)
        if rep is not None:
            rep_parts.append(rep)
        if seen == total:
            break
    if seen != total:
        raise DecodeError(
            f"column {'.'.join(spec.path)}: pages hold {seen} values, the chunk says {total}"
        )
    if sink is not None and sink.bitmap is not None:
        return ColumnData(
            values=_sink_values(sink, dec),
            num_levels=total,
            validity=sink.bitmap,
            null_count=total - sink.present,
        )
    return ColumnData(
        values=_sink_values(sink, dec)
        if sink is not None
        else vals.concat(value_parts, ptype, spec.type_length),
        num_levels=total,
        def_levels=_join_levels(def_parts) if spec.max_def > 0 else None,
        rep_levels=_join_levels(rep_parts) if spec.max_rep > 0 else None,
    )


_DICT_PAGES, _BSS_PAGES, _PLAIN_PAGES = 1, 2, 3
_BATCH_KINDS = {
    PLAIN_DICTIONARY: _DICT_PAGES,
    RLE_DICTIONARY: _DICT_PAGES,
    enc.BYTE_STREAM_SPLIT: _BSS_PAGES,
    PLAIN: _PLAIN_PAGES,
}
_RUN_ENCODINGS = 1 << PLAIN | 1 << enc.BYTE_STREAM_SPLIT
_FLAT_ENCODINGS = 1 << PLAIN
_FLAT_GROUP_BYTES = 1 << 19  # compressed flat pages decompressed at a time (stay in cache)
_DICT_ENCODINGS = 1 << PLAIN_DICTIONARY | 1 << RLE_DICTIONARY
_INTO_CODECS = (codecs.ZSTD, codecs.SNAPPY)


def _sink_values(sink, dec: int):
    """The sink's values; decimal128 limbs as int64 (n, 2) when ``dec`` (see read_chunk)."""
    values = sink.values()
    return values.view(np.int64) if dec else values


def _decimal_dictionary(dictionary, dec: int) -> np.ndarray:
    """A FIXED_LEN_BYTE_ARRAY dictionary of ``dec``-byte decimals as decimal128 (n, 16)."""
    out = np.empty((len(dictionary), 16), np.uint8)
    decimals.to_decimal128(np.ascontiguousarray(dictionary), dec, out)
    return out


def _decode_run(run, sizes, n, kind, codec, sink, spec, dict_raw, dec=0) -> None:
    """Decode a run of a required chunk's pages of one kind (``(body, count)`` each, their
    uncompressed ``sizes``, ``n`` values in all) into the sink (``dec``: decimals converted
    to decimal128 as they are decoded, see read_chunk)."""
    if codec != codecs.UNCOMPRESSED and kind != _PLAIN_PAGES:
        whole = codecs.decompress_run(codec, run, sizes)  # one call for the run's pages
        if whole is not None:
            run, codec = whole, codecs.UNCOMPRESSED
    if codec == codecs.UNCOMPRESSED:  # the bodies are the values sections: one kernel call
        out = sink.take(n)
        if kind == _PLAIN_PAGES and dec:
            decimals.plain_pages_to_decimal128(run, dec, out)
        elif kind == _PLAIN_PAGES:
            pagevalues.copy_plain_pages(run, sink.width, out)
        elif kind == _DICT_PAGES:
            pagevalues.decode_dictionary_pages(run, dict_raw, sink.width, out, in_worker())
        elif dec:
            raw = np.empty(n * dec, np.uint8)
            bss.decode_byte_stream_split_pages(run, spec.physical_type, dec, raw)
            decimals.to_decimal128(raw, dec, out)
        else:
            bss.decode_byte_stream_split_pages(run, spec.physical_type, spec.type_length, out)
        return
    for (body, count), size in zip(run, sizes, strict=True):
        if kind != _PLAIN_PAGES:
            # decoded at once from the page just decompressed (still in cache) into the
            # thread's scratch buffer, which the next page reuses
            _decode_page(
                codecs.decompress_scratch(codec, body, size),
                count,
                kind,
                sink,
                spec,
                dict_raw,
                dec,
            )
        elif dec:  # converted from the page just decompressed, still in cache
            decimals.decode_plain_decimal128(
                codecs.decompress_scratch(codec, body, size), count, dec, sink.take(count)
            )
        elif codec in _INTO_CODECS and size == count * sink.width:
            codecs.decompress_into(codec, body, sink.take(count))  # the page is its values
        else:
            plain.decode_plain(
                codecs.decompress_scratch(codec, body, size),
                count,
                spec.physical_type,
                spec.type_length,
                sink.take(count),
            )


def _binary_dict_run(chunk, pos, room, codec, sink, verify_checksums):
    """Gather the run of dictionary-encoded v1 pages of a required BYTE_ARRAY chunk from
    ``pos`` (at most ``room`` values) into the sink: ``(values taken, offset past the run)``
    (``(0, pos)`` for an empty run: the general path then reads, and raises for, the page
    there)."""
    run, sizes, _, count, after = _pageheader.scan_data_pages(
        chunk, pos, room, _DICT_ENCODINGS, codec == codecs.UNCOMPRESSED, verify_checksums
    )
    if not run:
        return 0, pos
    entries = sink.entries
    for (body, n), size in zip(run, sizes, strict=True):
        if codec != codecs.UNCOMPRESSED:  # gathered from the page just decompressed (in cache)
            body = codecs.decompress_scratch(codec, body, size)
        bindict.decode_into(body, n, entries, sink)
    return count, after


def _decode_flat_run(run, sizes, n, kind, codec, sink, dict_raw) -> None:
    """Decode a run of a flat nullable chunk's v1 pages of one kind (PLAIN or dictionary;
    ``(body, count)`` each, their uncompressed ``sizes``, ``n`` slots in all): levels into
    the sink's bitmap and values straight into their slots by one kernel call for the run
    when uncompressed. Compressed pages go in groups of up to ``_FLAT_GROUP_BYTES``
    uncompressed, each decompressed into the thread's scratch buffer by one call (ZSTD) or
    page by page, then decoded by one kernel call while they are still in cache."""
    dictionary = dict_raw if kind == _DICT_PAGES else None
    release = in_worker()
    if codec == codecs.UNCOMPRESSED:
        first = sink.count
        sink.present += pagevalues.decode_flat_pages(
            run, dictionary, sink.width, sink.take(n), sink.bitmap, first, release
        )
        return
    start = 0
    while start < len(run):
        stop, size = start + 1, sizes[start]
        while stop < len(run) and size + sizes[stop] <= _FLAT_GROUP_BYTES:
            size += sizes[stop]
            stop += 1
        group = codecs.decompress_run(codec, run[start:stop], sizes[start:stop])
        if group is None:  # no one-call path for this codec: page by page
            group = [
                (codecs.decompress(codec, body, size, True), count)
                for (body, count), size in zip(run[start:stop], sizes[start:stop], strict=True)
            ]
        first = sink.count
        sink.present += pagevalues.decode_flat_pages(
            group,
            dictionary,
            sink.width,
            sink.take(sum(count for _, count in group)),
            sink.bitmap,
            first,
            release,
        )
        start = stop


def _decode_page(data, n, kind, sink, spec, dict_raw, dec=0) -> None:
    """Decode one dictionary or BYTE_STREAM_SPLIT page's ``n`` values into the sink."""
    if kind == _DICT_PAGES:
        pagevalues.decode_dictionary_into(data, n, dict_raw, sink.width, sink.take(n), in_worker())
    elif dec:  # decimals to decimal128, through a copy
        raw = np.empty(n * dec, np.uint8)
        bss.decode_byte_stream_split(data, n, spec.physical_type, dec, raw)
        decimals.to_decimal128(raw, dec, sink.take(n))
    else:
        bss.decode_byte_stream_split(data, n, spec.physical_type, spec.type_length, sink.take(n))


def _join_levels(parts) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, np.int16)
    out = vals.pool_empty(sum(len(p) for p in parts), parts[0].dtype)  # see pool_empty
    return np.concatenate(parts, out=out)


def _binary(sink):
    """``sink`` when it takes BYTE_ARRAY values (a flat page's values decode into it), else
    None (fixed-width values decode into the buffer the sink hands out)."""
    return None if sink.width else sink


def _spread(data, encoding, sink, dec=0, dictionary=None):
    """For a flat page of a BYTE_ARRAY chunk with a dictionary, dictionary-encoded: the
    ``spread`` that gathers its values straight into their slots (``BinarySink.flat_page``);
    for a PLAIN or dictionary page of ``dec``-byte decimals read as decimal128, the one that
    converts or gathers them straight into their slots (``FixedSink.flat_page``); else None."""
    if dec and encoding == PLAIN:
        return lambda first, n, present: decimals.spread_plain_decimal128(
            data, dec, sink.bitmap, first, n, present, sink.buf[16 * first : 16 * (first + n)]
        )
    if dec and dictionary is not None and encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        return lambda first, n, present: decimals.gather_spread_decimal128(
            enc.decode_indices(data, present)[0],
            dictionary,
            sink.bitmap,
            first,
            n,
            present,
            sink.buf[16 * first : 16 * (first + n)],
        )
    entries = None if sink.width else sink.entries
    if entries is None or encoding not in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        return None
    return lambda first, n, present: bindict.decode_spread_into(
        data, present, entries, sink, sink.bitmap, first, n
    )


def _present(spec: ColumnSpec, dfl, n: int) -> int:
    return n if dfl is None else int(np.count_nonzero(dfl == spec.max_def))


def _read_v1(header, body, spec, codec, dictionary, sink, room, dec=0):
    dph = header.data_page_header
    if dph is None or dph.num_values is None or dph.num_values < 0:
        raise DecodeError("data page without a valid header")
    n = dph.num_values
    if (
        sink is not None
        and sink.width
        and codec in _INTO_CODECS
        and dph.encoding == PLAIN
        and not dec
        and spec.max_def == 0
        and spec.max_rep == 0
        and n <= room
        and header.uncompressed_page_size == n * sink.width
    ):
        # a required PLAIN page is its values: decompressed straight into the chunk's buffer
        codecs.decompress_into(codec, body, sink.take(n))
        return n, None, None, None
    # fixed-width values are copied into the sink (or the page is borrowed whole): the page
    # is dropped before the next one, so it may take memory the allocator recycles
    raw = memoryview(
        codecs.decompress(codec, body, header.uncompressed_page_size, sink is not None)
    )
    if sink is not None and sink.bitmap is not None:
        if n > room:
            raise DecodeError(
                f"column {'.'.join(spec.path)}: a page holds {n} values, "
                f"more values than the {room} the chunk has left"
            )
        if dph.definition_level_encoding not in (RLE, None):
            raise DecodeError(
                "definition levels of a page are not RLE-encoded, unlike the "
                "chunk's encodings list says"
            )
        used = 4 + int.from_bytes(raw[:4], "little") if len(raw) >= 4 else 4
        sink.flat_page(
            raw,
            n,
            True,
            lambda out, count: _read_values(
                raw[used:], count, dph.encoding, spec, dictionary, _binary(sink), room, out, dec
            ),
            raw[used:] if dph.encoding == PLAIN and not dec else None,
            _spread(raw[used:], dph.encoding, sink, dec, dictionary),
        )
        return n, None, None, None
    pos = 0
    rep = dfl = None
    if spec.max_rep > 0:
        rep, used = enc.decode_levels_v1(raw, n, spec.max_rep, dph.repetition_level_encoding)
        pos += used
    if spec.max_def > 0:
        dfl, used = enc.decode_levels_v1(raw[pos:], n, spec.max_def, dph.definition_level_encoding)
        pos += used
    values = _read_values(
        raw[pos:], _present(spec, dfl, n), dph.encoding, spec, dictionary, sink, room, None, dec
    )
    return n, rep, dfl, values


def _read_v2(header, body, spec, codec, dictionary, sink, room, dec=0):
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
        raise DecodeError(
            f"column {'.'.join(spec.path)}: a page holds {n} values, "
            f"more values than the {room} the chunk has left"
        )
    if spec.max_rep > 0:
        rep = enc.decode_levels_v2(body[:rlen], n, spec.max_rep)
    if spec.max_def > 0 and not flat:
        dfl = enc.decode_levels_v2(body[rlen : rlen + dlen], n, spec.max_def)
    rest = body[rlen + dlen :]
    raw_size = header.uncompressed_page_size - rlen - dlen
    if dph.is_compressed is None or dph.is_compressed:
        rest = codecs.decompress(codec, rest, raw_size, sink is not None)
    if flat:
        sink.flat_page(
            body[rlen : rlen + dlen],
            n,
            False,
            lambda out, count: _read_values(
                memoryview(rest),
                count,
                dph.encoding,
                spec,
                dictionary,
                _binary(sink),
                room,
                out,
                dec,
            ),
            memoryview(rest) if dph.encoding == PLAIN and not dec else None,
            _spread(memoryview(rest), dph.encoding, sink, dec, dictionary),
        )
        return n, None, None, None
    values = _read_values(
        memoryview(rest),
        _present(spec, dfl, n),
        dph.encoding,
        spec,
        dictionary,
        sink,
        room,
        None,
        dec,
    )
    return n, rep, dfl, values


def _read_values(data, count, encoding, spec, dictionary, sink=None, room=0, out=None, dec=0):
    """Decode a page's ``count`` values: into ``sink`` (or the buffer ``out``) when given
    (``dec``: decimals of that many bytes converted to decimal128 as they are decoded; the
    dictionary is then decimal128 already, see read_chunk)."""
    if sink is not None and count > room:
        raise DecodeError(
            f"column {'.'.join(spec.path)}: a page holds {count} values, "
            f"more values than the {room} the chunk has left"
        )
    if encoding == BIT_PACKED:
        raise DecodeError("BIT_PACKED is only valid for levels")
    if sink is not None and not sink.width:  # BYTE_ARRAY: into the chunk's offsets and data
        enc.decode_binary_into(data, count, encoding, sink, sink.entries)
        return None
    if sink is not None:
        if encoding == PLAIN and not dec and sink.borrow(data, count):
            return None
        out = sink.take(count)
    if encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
        if dictionary is None:
            raise DecodeError("dictionary-encoded page but the chunk has no dictionary page")
        if out is not None:  # fixed width: indices gathered straight into the chunk's buffer
            raw = np.ascontiguousarray(dictionary).reshape(-1).view(np.uint8)
            width = 16 if dec else FIXED_WIDTHS.get(spec.physical_type, spec.type_length)
            pagevalues.decode_dictionary_into(data, count, raw, width, out, in_worker())
            return out
        indices, _ = enc.decode_indices(data, count)
        return enc.take(dictionary, indices, spec.physical_type, out)
    if dec:  # into decimal128: PLAIN values straight from the page, others through a copy
        if encoding == PLAIN:
            decimals.decode_plain_decimal128(data, count, dec, out)
        else:
            values, _ = enc.decode_values(data, count, spec.physical_type, encoding, dec)
            decimals.to_decimal128(np.ascontiguousarray(values), dec, out)
        return out
    values, _ = enc.decode_values(data, count, spec.physical_type, encoding, spec.type_length, out)
    return values
