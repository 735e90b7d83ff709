"""The Parquet file format on our kernels: a reader and a writer that interoperate with pyarrow,
DuckDB and Spark (parquet-java). Option names mirror ``pyarrow.parquet``."""

from metaindex.parquet.reader import ParquetFile, footer_fingerprint, read_footer, read_table
from metaindex.parquet.writer import ParquetWriter, write_table

__all__ = ["ParquetFile", "ParquetWriter", "footer_fingerprint", "read_footer", "read_table",
           "write_table"]
