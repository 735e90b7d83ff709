"""pyarrow.parquet's module-level helpers on our reader and writer: ``read_metadata``,
``read_schema``, ``read_pandas`` and ``write_metadata``."""

from __future__ import annotations

import pyarrow as pa

from metaindex.parquet import metadata as md
from metaindex.parquet.reader import ParquetFile, read_table

__all__ = ["read_metadata", "read_schema", "read_pandas", "write_metadata"]


def read_metadata(
    where, memory_map: bool | None = None, decryption_properties=None, filesystem=None
) -> md.FileMetaData:
    """The footer of a Parquet file, with pyarrow's ``FileMetaData`` API."""
    with ParquetFile(
        where,
        memory_map=memory_map,
        decryption_properties=decryption_properties,
        filesystem=filesystem,
    ) as pf:
        meta = pf.metadata
        meta.schema  # noqa: B018  (built while the file is open)
        return meta


def read_schema(
    where,
    memory_map: bool | None = None,
    decryption_properties=None,
    filesystem=None,
    arrow_extensions_enabled: bool = True,
) -> pa.Schema:
    """The Arrow schema a Parquet file reads as."""
    with ParquetFile(
        where,
        memory_map=memory_map,
        decryption_properties=decryption_properties,
        filesystem=filesystem,
        arrow_extensions_enabled=arrow_extensions_enabled,
    ) as pf:
        return pf.schema_arrow


def read_pandas(source, columns=None, **kwargs) -> pa.Table:
    """``read_table`` that also reads the pandas index columns (``use_pandas_metadata=True``)."""
    return read_table(source, columns=columns, use_pandas_metadata=True, **kwargs)


def write_metadata(
    schema: pa.Schema, where, metadata_collector=None, filesystem=None, **kwargs
) -> None:
    """Write a metadata-only Parquet file (a ``_common_metadata`` or ``_metadata`` file).

    With ``metadata_collector`` (a list of :class:`metaindex.parquet.FileMetaData`), their row
    groups are appended, making a ``_metadata`` summary of those files.
    """
    from metaindex.parquet.writer import ParquetWriter  # not on the read path

    with ParquetWriter(where, schema, filesystem=filesystem, **kwargs) as writer:
        pass
    if metadata_collector:
        meta = md.FileMetaData._of(writer.footer)
        for other in metadata_collector:
            meta.append_row_groups(other)
        if hasattr(where, "write"):
            raise ValueError(
                "write_metadata with metadata_collector needs a path, not a file object"
            )
        if filesystem is not None:
            from metaindex.parquet.options import resolve_filesystem

            with resolve_filesystem(filesystem).open_output_stream(str(where)) as out:
                meta.write_metadata_file(out)
        else:
            meta.write_metadata_file(where)
