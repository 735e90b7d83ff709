"""The page layer's shared vocabulary: what a leaf column is to it (:class:`ColumnSpec`), a
leaf column's content (:class:`ColumnData`), the page types and encodings, and the walk over a
chunk's page headers.

A column chunk is an optional dictionary page followed by data pages (v1 or v2). It is written
by ``parquet/page_writer.py`` and read by ``parquet/page_reader.py``, the layer between the
kernels (values and levels encodings, codecs) and the file layout.

Values travel in the kernel conventions (see ``metaindex.parquet.values``): non-null leaf values
only, with definition and repetition levels as int16 numpy arrays (None when the max level is 0).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from metaindex.errors import DecodeError
from metaindex.parquet import format as fmt

__all__ = ["ColumnSpec", "ColumnData", "iter_pages", "page_at", "page_crc"]

DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED = 0, 2, 3, 4
RLE_DICTIONARY = 8


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

    values: Any  # an ndarray, or (offsets, data) for BYTE_ARRAY
    num_levels: int
    def_levels: np.ndarray | None = None
    rep_levels: np.ndarray | None = None
    validity: np.ndarray | None = None  # read_chunk(flat=True): values fill every slot, and
    null_count: int = 0  # this Arrow bitmap replaces the definition levels
    validity_offset: int = 0  # writing: the bitmap's bit of slot 0


def iter_pages(chunk, base: int, decryptor=None):
    """Yield ``(header, body)`` for every page in ``chunk`` (a memoryview of the chunk's bytes).

    ``base`` is the file offset of ``chunk[0]``, used only in error messages. With a
    ``decryptor`` (a ChunkDecryptor), headers are decrypted and bodies are the stored frames.
    """
    pos = 0
    while pos < len(chunk):
        header, body, pos = page_at(chunk, pos, base, decryptor)
        yield header, body


def page_at(chunk, pos: int, base: int, decryptor=None):
    """The page at ``chunk[pos]``: ``(header, body, offset past the body)``.

    Raises:
        DecodeError: a header that does not decode, a negative size, or a body that runs past
            the chunk.
    """
    try:
        if decryptor is None:
            header, hend = fmt.PageHeader.decode_prefix(chunk, pos)
        else:
            header, hend = decryptor.page_header(chunk, pos)
    except DecodeError as exc:
        raise DecodeError(f"bad page header at file offset {base + pos}: {exc}") from exc
    size = header.compressed_page_size
    if (
        size is None
        or size < 0
        or header.uncompressed_page_size is None
        or header.uncompressed_page_size < 0
    ):
        raise DecodeError(f"page header at file offset {base + pos} has a negative size")
    if size > len(chunk) - hend:
        raise DecodeError(
            "page body runs past its column chunk",
            offset=base + hend,
            needed=size,
            remaining=len(chunk) - hend,
        )
    return header, chunk[hend : hend + size], hend + size


def page_crc(body) -> int:
    """The page CRC of ``body`` as PageHeader's ``crc`` holds it (a signed i32)."""
    crc = zlib.crc32(body)
    return crc - (1 << 32) if crc >= 1 << 31 else crc
