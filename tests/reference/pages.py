"""Locate a column chunk's pages in a Parquet file without our Thrift kernel (tests only).

A generic pure-Python Thrift compact-protocol struct reader: every field is read into a
``{field_id: value}`` dict (structs nested as dicts, lists and sets as lists, maps as dicts), so
unknown fields are skipped by construction. Enough to walk PageHeaders from pyarrow's column
chunk metadata (``dictionary_page_offset`` / ``data_page_offset``).

PageHeader fields used by tests: 1 type (0 DATA_PAGE, 2 DICTIONARY_PAGE, 3 DATA_PAGE_V2),
2 uncompressed_page_size, 3 compressed_page_size, 5 data_page_header {1 num_values, 2 encoding,
3 definition_level_encoding}, 7 dictionary_page_header {1 num_values},
8 data_page_header_v2 {1 num_values, 2 num_nulls, 4 encoding,
5 definition_levels_byte_length, 6 repetition_levels_byte_length}.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tests.reference.varint import uleb_decode, zigzag_decode

DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3


class CompactReader:
    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        value, self.pos = uleb_decode(self.data, self.pos)
        return value

    def value(self, ctype: int):
        if ctype in (1, 2):  # bool inside a struct: the type nibble holds the value
            return ctype == 1
        if ctype == 3:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if ctype in (4, 5, 6):
            return zigzag_decode(self.varint())
        if ctype == 7:
            self.pos += 8
            return struct.unpack("<d", self.data[self.pos - 8 : self.pos])[0]
        if ctype == 8:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if ctype in (9, 10):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if etype in (1, 2):  # bools in a list are one byte each
                return [self.byte() == 1 for _ in range(size)]
            return [self.value(etype) for _ in range(size)]
        if ctype == 11:
            size = self.varint()
            if not size:
                return {}
            kv = self.byte()
            return {self.value(kv >> 4): self.value(kv & 0x0F) for _ in range(size)}
        if ctype == 12:
            return self.struct()
        raise ValueError(f"unknown compact type {ctype}")

    def struct(self) -> dict:
        fields, last = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ctype = head >> 4, head & 0x0F
            fid = last + delta if delta else zigzag_decode(self.varint())
            fields[fid] = self.value(ctype)
            last = fid


@dataclass
class Page:
    header: dict
    body: bytes

    @property
    def type(self) -> int:
        return self.header[1]


def column_pages(file_bytes: bytes, column_meta) -> list[Page]:
    """Every page of one column chunk; ``column_meta`` is pyarrow's ColumnChunkMetaData."""
    start = (
        column_meta.dictionary_page_offset
        if column_meta.has_dictionary_page
        else column_meta.data_page_offset
    )
    end = start + column_meta.total_compressed_size
    pages, pos = [], start
    while pos < end:
        reader = CompactReader(file_bytes, pos)
        header = reader.struct()
        size = header[3]
        pages.append(Page(header, file_bytes[reader.pos : reader.pos + size]))
        pos = reader.pos + size
    return pages
