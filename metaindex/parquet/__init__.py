"""The Parquet file format on our kernels: a reader and a writer that interoperate with pyarrow,
DuckDB and Spark (parquet-java). Names, keywords and metadata objects mirror ``pyarrow.parquet``
(``tests/pyarrow_suite`` runs pyarrow's own tests against them); our typed footer is
``ParquetFile.footer`` / ``FileMetaData.thrift``."""

from typing import TYPE_CHECKING

from metaindex.parquet.functions import read_metadata, read_pandas, read_schema, write_metadata
from metaindex.parquet.metadata import (
    ColumnChunkMetaData,
    ColumnSchema,
    FileMetaData,
    ParquetLogicalType,
    ParquetSchema,
    RowGroupMetaData,
    SortingColumn,
    Statistics,
)
from metaindex.parquet.reader import ParquetFile, footer_fingerprint, read_footer, read_table

if TYPE_CHECKING:
    from metaindex.parquet.writer import ParquetWriter, write_table

__all__ = [
    "ParquetFile",
    "ParquetWriter",
    "footer_fingerprint",
    "read_footer",
    "read_table",
    "write_table",
    "read_metadata",
    "read_schema",
    "read_pandas",
    "write_metadata",
    "FileMetaData",
    "RowGroupMetaData",
    "ColumnChunkMetaData",
    "Statistics",
    "ParquetSchema",
    "ColumnSchema",
    "ParquetLogicalType",
    "SortingColumn",
]


def __getattr__(name: str):
    # the writer (and the encryption it brings) loads on first use: reading, and so pruning,
    # never imports it
    if name in ("ParquetWriter", "write_table"):
        from metaindex.parquet import writer

        return getattr(writer, name)
    raise AttributeError(f"module 'metaindex.parquet' has no attribute {name!r}")
