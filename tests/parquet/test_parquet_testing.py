"""apache/parquet-testing, file by file: we read every ``data/`` file as pyarrow does, and refuse
every ``bad_data/`` file with a typed error.

The corpus comes from ``$PARQUET_TESTING_DIR`` or a git mirror (``tests/corpus.py``); without
either the tests skip and say why. Nothing of the corpus is kept in this repository.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex.errors import MetaIndexError, UnsupportedFeatureError
from metaindex.parquet import read_metadata, read_table
from tests.corpus import parquet_testing_dir

ROOT, HOW = parquet_testing_dir()
pytestmark = pytest.mark.skipif(ROOT is None, reason=HOW)


def _files(folder: str) -> list[str]:
    if ROOT is None:
        return []
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and p.name.endswith((".parquet", ".parquet.encrypted"))
    )


def _canonical(table: pa.Table):
    """Rows as Python values, NaN made comparable (NaN == NaN for this comparison)."""

    def fix(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return [fix(v) for column in table.columns for v in column.to_pylist()]


def _read(reader, path):
    try:
        return reader(path), None
    except Exception as exc:  # noqa: BLE001  (pyarrow's refusal can be any of its errors)
        return None, exc


def _huge_byte_array(path: str) -> bool:
    """A BYTE_ARRAY chunk of 2 GiB or more (large_string_map.brotli.parquet: 4 KB on disk).

    pyarrow decodes all of it before refusing it, which takes > 2 GB of memory and a minute;
    we refuse it from the footer, so pyarrow is not asked."""
    try:
        meta = read_metadata(path)
    except MetaIndexError:
        return False
    return any(
        meta.row_group(i).column(j).physical_type == "BYTE_ARRAY"
        and meta.row_group(i).column(j).total_uncompressed_size >= 1 << 31
        for i in range(meta.num_row_groups)
        for j in range(meta.num_columns)
    )


@pytest.mark.parametrize("name", _files("data"))
def test_data_file_reads_as_pyarrow_reads_it(name):
    path = str(ROOT / name)
    if not name.endswith(".encrypted") and _huge_byte_array(path):
        with pytest.raises(UnsupportedFeatureError, match="2 GiB"):
            read_table(path)
        return
    theirs, their_error = _read(pq.read_table, path)
    ours, our_error = _read(read_table, path)
    if theirs is None:
        assert isinstance(our_error, MetaIndexError), (
            f"pyarrow refuses {name} ({their_error!r}); ours must refuse with a typed error, "
            f"not {our_error!r}"
        )
        return
    assert our_error is None, f"pyarrow reads {name}, we raise {our_error!r}"
    assert ours.schema == theirs.schema, f"{name}: schema\n{ours.schema}\nvs\n{theirs.schema}"
    assert ours.num_rows == theirs.num_rows
    assert ours.equals(theirs) or _canonical(ours) == _canonical(theirs), (
        f"{name}: values differ from pyarrow's"
    )


@pytest.mark.parametrize("name", _files("bad_data"))
def test_bad_data_file_is_refused_with_a_typed_error(name):
    path = str(ROOT / name)
    theirs, _ = _read(pq.read_table, path)
    if theirs is not None:
        # pyarrow reads it since fixing its reader (GH-43605: an RLE dictionary index bit
        # width of 0, which is what a one-entry dictionary needs): then so must we, equally
        assert read_table(path).equals(theirs)
        return
    with pytest.raises(MetaIndexError):
        read_table(path)


def test_the_three_files_issue_13_names():
    """byte_array_decimal (DECIMAL on BYTE_ARRAY), an empty compressed v2 page, and a
    parquet-mr 1.2.8 chunk whose size leaves out its dictionary page header."""
    for name, rows in (
        ("byte_array_decimal.parquet", 24),
        ("datapage_v2_empty_datapage.snappy.parquet", 1),
        ("nation.dict-malformed.parquet", 25),
    ):
        path = str(ROOT / "data" / name)
        ours = read_table(path)
        assert ours.num_rows == rows
        assert ours.equals(pq.read_table(path)), name
