"""The Parquet page-header scanner (compiled from cython_ext/pageheader.pyx): runs of v1 data
page headers read straight off the Thrift compact wire format, for the reader's fast path."""

from _typeshed import ReadableBuffer

__all__ = ["scan_data_pages"]

def scan_data_pages(
    data: ReadableBuffer,
    pos: int,
    max_values: int,
    encodings: int,
    exact: bool,
    no_crc: bool,
    levels_rle: bool = False,
) -> tuple[list[tuple[memoryview, int]], list[int], int, int, int]:
    """A run of v1 DATA_PAGE headers from ``data[pos:]`` read in C: one encoding, whose bit
    is set in ``encodings``; bodies inside ``data``; at most ``max_values`` values;
    ``exact``: compressed size equals uncompressed size; ``no_crc``: no crc field;
    ``levels_rle``: RLE definition levels. Never raises for the input: the run ends before
    the first page that does not qualify.

    Returns ``(pages, sizes, encoding, values, end)``: ``(body, num_values)`` per page,
    uncompressed sizes, the run's encoding (-1 when empty), its value count, the offset past it.
    """
