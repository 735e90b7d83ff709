"""Where a Parquet footer's schema and key/value metadata lie (compiled from
cython_ext/footerwalk.pyx)."""

from _typeshed import ReadableBuffer

__all__ = ["schema_spans"]

def schema_spans(footer: ReadableBuffer) -> tuple[int, int, int, int, int] | None:
    """``(schema start, schema end, kv start, kv end, struct end)`` of a FileMetaData's
    fields 2 and 5 (-1, -1: no field 5), or None."""
