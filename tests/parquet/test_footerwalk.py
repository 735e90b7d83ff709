"""The footer walk kernel (``metaindex._native.footerwalk.schema_spans``) and the small-file
open's decode of a footer whose schema was seen before (``formats.parquet._decode_small_footer``):
spans agree with the Thrift decoder, any bytes give an answer in bounds or None (never an
error), and a footer decoded the short way equals the whole decode, or is refused wherever
the whole decode refuses it."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.footerwalk import schema_spans
from metaindex.errors import MetaIndexError
from metaindex.formats import parquet as parquet_format
from metaindex.parquet import format as fmt


def _footer(table, **options) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, **options)
    raw = out.getvalue()
    n = int.from_bytes(raw[-8:-4], "little")
    return raw[-8 - n : -8]


_A = _footer(pa.table({"x": [1, 2, 3], "s": ["a", "b", None]}), row_group_size=2)
_B = _footer(pa.table({"x": [7, 8], "s": ["q", "r"]}))  # same schema, other statistics


def test_spans_are_the_schema_and_key_value_lists():
    s2, e2, s5, e5, end = schema_spans(_A)
    assert end == len(_A)
    footer = fmt.FileMetaData.from_bytes(_A)
    # each span is the list header (fewer than 15 structs: one byte) and the elements
    for (start, end_), items in ((s2, e2), footer.schema), ((s5, e5), footer.key_value_metadata):
        assert _A[start] == len(items) << 4 | 0x0C
        assert _A[start + 1 : end_] == b"".join(e.to_bytes() for e in items)


def test_no_key_value_metadata():
    footer = fmt.FileMetaData.from_bytes(_A)
    footer.key_value_metadata = None
    s2, e2, s5, e5, end = schema_spans(footer.to_bytes())
    assert (s5, e5) == (-1, -1) and s2 < e2 < end


def test_no_schema_or_not_a_struct():
    assert schema_spans(b"") is None
    assert schema_spans(b"\x00") is None  # a struct without field 2
    assert schema_spans(b"\x15\x02\x19") is None  # truncated
    assert schema_spans(b"\x1f") is None  # a bad type nibble


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_give_spans_in_bounds_or_none(data):
    found = schema_spans(data)
    if found is not None:
        s2, e2, s5, e5, end = found
        assert 0 < s2 < e2 <= end <= len(data)
        assert (s5, e5) == (-1, -1) or 0 < s5 < e5 <= end


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_footer_decodes_the_short_way_as_whole(data):
    """A footer (of a schema seen before) with bytes overwritten, inserted, cut or appended:
    the short decode refuses it (None or an error) when the whole decode does, and equals it
    when not."""
    parquet_format._SEEN_SCHEMAS.clear()
    assert parquet_format._decode_small_footer(memoryview(_A)) is not None  # seen whole
    raw = bytearray(_B)
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(st.sampled_from(["set", "insert", "cut", "append"]))
        at = data.draw(st.integers(0, len(raw) - 1))
        if how == "append":  # trailing bytes
            raw += bytes(data.draw(st.binary(min_size=1, max_size=3)))
        elif how == "set":
            raw[at] = data.draw(st.integers(0, 255))
        elif how == "insert":
            raw[at:at] = bytes([data.draw(st.integers(0, 255))])
        else:
            del raw[at]
    blob = bytes(raw)
    try:
        whole, end = fmt.FileMetaData.decode_prefix(blob)
        ok = end == len(blob) and whole.encryption_algorithm is None
    except MetaIndexError:
        ok = False
    try:
        short = parquet_format._decode_small_footer(memoryview(blob))
    except MetaIndexError:
        short = None
    if not ok:
        assert short is None
    elif short is not None:
        assert short[0] == whole


def test_seen_schema_gives_the_whole_decode():
    parquet_format._SEEN_SCHEMAS.clear()
    first = parquet_format._decode_small_footer(memoryview(_A))
    second = parquet_format._decode_small_footer(memoryview(_B))
    assert second[0] == fmt.FileMetaData.from_bytes(_B)
    assert second[1] is first[1] and second[2] is first[2]  # schema and derived shared
    assert second[0].schema is first[0].schema
