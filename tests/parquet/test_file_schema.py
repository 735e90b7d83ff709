"""FileSchema.of: one FileSchema shared by the footers with the same schema (issue 32)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.errors import DecodeError
from metaindex.parquet import format as fmt
from metaindex.parquet.reader import ParquetFile
from metaindex.parquet.schema import FileSchema

_TYPES = [
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.string(),
    pa.binary(),
    pa.timestamp("us", tz="UTC"),
    pa.date32(),
    pa.decimal128(9, 2),
    pa.list_(pa.int64()),
    pa.struct([("a", pa.int32()), ("b", pa.string())]),
]


def _footer(schema: pa.Schema, metadata: dict | None = None) -> fmt.FileMetaData:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([], schema.with_metadata(metadata or {})), sink)
    return ParquetFile(io.BytesIO(sink.getvalue())).footer


_schemas = st.lists(
    st.tuples(st.sampled_from(range(len(_TYPES))), st.booleans()), min_size=1, max_size=4
).map(
    lambda cols: pa.schema(
        [pa.field(f"c{i}", _TYPES[t], nullable=n) for i, (t, n) in enumerate(cols)]
    )
)


@settings(max_examples=20, deadline=None)
@given(_schemas, _schemas, st.sampled_from([None, {"k": "v"}, {"k": "w"}]))
def test_equal_footer_schemas_share_one_file_schema_and_others_do_not(first, second, metadata):
    a, a_again = _footer(first), _footer(first)
    b = _footer(second, metadata)
    shared = FileSchema.of(a)
    assert FileSchema.of(a_again) is shared  # another file's equal footer
    assert shared.arrow_schema().equals(FileSchema(a).arrow_schema(), check_metadata=True)
    made = FileSchema.of(b)
    same = a.schema == b.schema and a.key_value_metadata == b.key_value_metadata
    assert (made is shared) == same
    assert made.arrow_schema().equals(FileSchema(b).arrow_schema(), check_metadata=True)
    assert list(made.key_value_metadata.items()) == [
        (kv.key, kv.value) for kv in b.key_value_metadata or []
    ]


def test_the_depth_limit_is_part_of_the_key():
    footer = _footer(pa.schema([("s", pa.struct([("a", pa.struct([("b", pa.int32())]))]))]))
    assert FileSchema.of(footer) is not None
    with pytest.raises(DecodeError, match="too deeply nested"):
        FileSchema.of(footer, max_depth=2)


def test_an_invalid_schema_raises_every_time_and_is_not_kept():
    footer = _footer(pa.schema([("x", pa.int64())]))
    footer.schema[0].num_children = 2  # the root claims a column the schema does not have
    for _ in range(2):
        with pytest.raises(DecodeError, match="ends inside a group"):
            FileSchema.of(footer)
