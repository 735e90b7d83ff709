"""Split-block bloom filters inside Parquet files: BloomFilterHeader + bitset per column chunk.

Written the way parquet-cpp and parquet-java write them (header: numBytes, algorithm BLOCK, hash
XXHASH, compression UNCOMPRESSED; then the bitset), at ``ColumnMetaData.bloom_filter_offset``
with ``bloom_filter_length`` covering header and bitset. Values are hashed from their physical
(PLAIN) form exactly as the Parquet spec says; no index-level canonicalisation happens here.
"""

from __future__ import annotations

from metaindex._native.crypto import GCM_OVERHEAD
from metaindex.bloom import (
    MAX_BYTES,
    SplitBlockBloomFilter,
    distinct_count,
    optimal_num_bytes,
    xxh64,
)
from metaindex.errors import DecodeError, UnsupportedFeatureError
from metaindex.parquet import format as fmt
from metaindex.parquet import values as vals

__all__ = ["BloomOptions", "bloom_options", "build_filter", "serialize", "read_bloom_filter"]

_MAX_HEADER = 1024  # a BloomFilterHeader is a handful of bytes; more is corruption


class BloomOptions:
    """Validated per-column options: ``{"ndv": int, "fpp": float}`` (pyarrow's shape)."""

    __slots__ = ("ndv", "fpp")

    def __init__(self, ndv: int = 1_000_000, fpp: float = 0.05):
        if not isinstance(ndv, int) or isinstance(ndv, bool) or ndv <= 0:
            raise ValueError(f"bloom filter ndv must be a positive int, not {ndv!r}")
        if not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise ValueError(f"bloom filter fpp must be in (0, 1), not {fpp!r}")
        self.ndv, self.fpp = ndv, float(fpp)


def bloom_options(option) -> BloomOptions | None:
    """Normalise one column's ``bloom_filter_options`` entry (True = defaults)."""
    if option is None or option is False:
        return None
    if option is True:
        return BloomOptions()
    if isinstance(option, dict):
        unknown = set(option) - {"ndv", "fpp"}
        if unknown:
            raise ValueError(f"unknown bloom filter options {sorted(unknown)}; use ndv and fpp")
        return BloomOptions(**option)
    raise TypeError(f"bloom filter options must be a dict with ndv/fpp or True, not {option!r}")


def build_filter(values, ptype: int, options: BloomOptions) -> SplitBlockBloomFilter:
    """A filter holding every present value, sized for min(ndv option, actual distinct count).

    Sizing by the distinct hashes actually seen gives the asked-for fpp with the smallest
    filter (pyarrow sizes by min(ndv, rows), or by the dictionary size when it has one, so our
    filters are never larger than its and equal where it knows the true count).
    """
    if ptype == vals.BOOLEAN:
        raise UnsupportedFeatureError("Parquet defines no bloom filter for BOOLEAN columns")
    hashes = xxh64(values, physical_type=ptype) if vals.count(values, ptype) else None
    distinct = 1 if hashes is None else max(1, distinct_count(hashes))
    # Arrow's sizing formula, so a file's filters are bit-identical to pyarrow's where both
    # size for the same count (our index uses the stricter SplitBlockBloomFilter.for_ndv).
    bloom = SplitBlockBloomFilter(optimal_num_bytes(min(options.ndv, distinct), options.fpp))
    if hashes is not None:
        bloom.insert_hashes(hashes)
    return bloom


def serialize(bloom: SplitBlockBloomFilter, encryptor=None) -> bytes:
    """Header + bitset; with the chunk's ChunkEncryptor, two encrypted modules."""
    header = fmt.BloomFilterHeader(
        numBytes=bloom.num_bytes,
        algorithm=fmt.BloomFilterAlgorithm(BLOCK=fmt.SplitBlockAlgorithm()),
        hash=fmt.BloomFilterHash(XXHASH=fmt.XxHash()),
        compression=fmt.BloomFilterCompression(UNCOMPRESSED=fmt.Uncompressed()),
    )
    if encryptor is not None:
        return bytes(encryptor.module("bloom_filter_header", header.to_bytes())) + bytes(
            encryptor.module("bloom_filter_bitset", bloom.to_bytes())
        )
    return header.to_bytes() + bloom.to_bytes()


def read_bloom_filter(
    source, meta, max_bytes: int = MAX_BYTES, decryptor=None
) -> SplitBlockBloomFilter:
    """Read the filter a ``ColumnMetaData`` points to from ``source`` (``read_at``/``size``).

    ``decryptor``: the chunk's ChunkDecryptor when the column is encrypted (header and bitset
    are then two GCM modules).
    """
    offset, length = meta.bloom_filter_offset, meta.bloom_filter_length
    if offset < 4 or offset >= source.size:
        raise DecodeError(f"bloom filter offset {offset} lies outside the file", offset=offset)
    if length is not None and (length <= 0 or length > source.size - offset):
        raise DecodeError(
            f"bloom filter length {length} runs past the file",
            offset=offset,
            needed=length,
            remaining=source.size - offset,
        )
    head = source.read_at(
        offset,
        min(_MAX_HEADER, source.size - offset, length if length is not None else _MAX_HEADER),
    )
    overhead = 0
    if decryptor is None:
        header, end = fmt.BloomFilterHeader.decode_prefix(head)
    else:
        plain, end = decryptor.module("bloom_filter_header", head, exact=False)
        header = fmt.BloomFilterHeader.from_bytes(plain)
        overhead = GCM_OVERHEAD
    n = header.numBytes
    if header.algorithm is None or header.algorithm.BLOCK is None:
        raise DecodeError("bloom filter uses an unknown algorithm (not split-block)", offset=offset)
    if header.hash is None or header.hash.XXHASH is None:
        raise DecodeError(
            "bloom filter uses an unknown hash (not XXH64; legacy murmur3?)", offset=offset
        )
    if header.compression is None or header.compression.UNCOMPRESSED is None:
        raise DecodeError(
            "bloom filter bitset is compressed, which the spec does not define", offset=offset
        )
    if n is None or n < 32 or n > max_bytes or n & (n - 1):
        raise DecodeError(
            f"bloom filter numBytes {n} is not a power of two in [32, {max_bytes}]", offset=offset
        )
    if length is not None and end + n + overhead != length:
        raise DecodeError(
            f"bloom filter length {length} disagrees with its header "
            f"({end} + {n + overhead} bytes)",
            offset=offset,
        )
    bitset = source.read_at(offset + end, n + overhead)
    if decryptor is not None:
        bitset, _ = decryptor.module("bloom_filter_bitset", bitset)
    return SplitBlockBloomFilter.from_bytes(bitset, max_bytes=max_bytes)
