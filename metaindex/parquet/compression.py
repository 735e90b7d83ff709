"""Page compression codecs, through well-kept libraries (never hand-written compressors).

Codec ids are parquet.thrift's ``CompressionCodec``. Every decompression is *exact*: the page
header states the uncompressed size, and output of any other length (or a library failure) is a
:class:`~metaindex.errors.DecodeError`, so a lying header can neither pad a page with zeros nor
inflate a decompression bomb past the size it announced.

=============  ======================================================================
codec          library
=============  ======================================================================
UNCOMPRESSED   none
SNAPPY         ``cramjam`` to decompress (twice Arrow's ``Codec.decompress`` speed, and into a
               given buffer), pyarrow to compress; the length preamble is checked first
GZIP           pyarrow to compress; :mod:`zlib` to decompress, reading every member
BROTLI         pyarrow to compress; ``brotli`` to decompress with an output limit
ZSTD           the system's libzstd where it is found (``metaindex._native.zstd``: its
               assembly Huffman decoders, which ``zstandard``'s build leaves out), else
               ``zstandard``; the writer's pages: Arrow's codec, see :func:`compress_buffer`
LZ4_RAW        ``lz4.block``
LZ4            read only: Hadoop framing (big-endian sizes) around LZ4 blocks, with the
               raw-block fallback that parquet-cpp uses for files it once wrote that way
LZO            not supported (UnsupportedFeatureError), like pyarrow
=============  ======================================================================
"""

from __future__ import annotations

import struct
import threading
import zlib
from functools import lru_cache

from metaindex._native import zstd as _zstd_kernel
from metaindex.errors import DecodeError, EncodeError, UnsupportedFeatureError

__all__ = [
    "UNCOMPRESSED",
    "SNAPPY",
    "GZIP",
    "LZO",
    "BROTLI",
    "LZ4",
    "ZSTD",
    "LZ4_RAW",
    "CODEC_NAMES",
    "codec_id",
    "compress",
    "compress_buffer",
    "decompress",
    "decompress_into",
    "decompress_scratch",
    "decompress_run",
]

UNCOMPRESSED, SNAPPY, GZIP, LZO, BROTLI, LZ4, ZSTD, LZ4_RAW = range(8)

CODEC_NAMES = {
    UNCOMPRESSED: "UNCOMPRESSED",
    SNAPPY: "SNAPPY",
    GZIP: "GZIP",
    LZO: "LZO",
    BROTLI: "BROTLI",
    LZ4: "LZ4",
    ZSTD: "ZSTD",
    LZ4_RAW: "LZ4_RAW",
}
_BY_NAME = {name: cid for cid, name in CODEC_NAMES.items()}
_BY_NAME["NONE"] = UNCOMPRESSED


def codec_id(codec: str | int | None) -> int:
    """Normalise a codec given as pyarrow-style name (``"zstd"``, ``"none"``) or thrift id."""
    if codec is None:
        return UNCOMPRESSED
    if isinstance(codec, int) and not isinstance(codec, bool):
        if codec in CODEC_NAMES:
            return codec
        raise ValueError(f"unknown compression codec id {codec}")
    if isinstance(codec, str):
        try:
            return _BY_NAME[codec.upper()]
        except KeyError:
            raise ValueError(
                f"unknown compression {codec!r}; expected one of "
                + ", ".join(sorted(n.lower() for n in _BY_NAME))
            ) from None
    raise TypeError(f"compression must be a str or int codec id, not {type(codec).__name__}")


def _arrow_codec(name: str, level: int | None):
    """This thread's Arrow codec (Arrow's GZIP codec keeps one zlib stream per object)."""
    return _thread_codec(name, level, threading.get_ident())


@lru_cache(maxsize=64)
def _thread_codec(name: str, level: int | None, thread: int):
    import pyarrow as pa

    return pa.Codec(name, compression_level=level)


_LOCAL = threading.local()  # zstandard's (de)compressor objects are not thread-safe


def _zstd_compressor(level: int):
    """This thread's compressor for ``level``."""
    made = getattr(_LOCAL, "compressors", None)
    if made is None:
        made = _LOCAL.compressors = {}
    compressor = made.get(level)
    if compressor is None:
        import zstandard

        compressor = made[level] = zstandard.ZstdCompressor(level=level)
    return compressor


@lru_cache(maxsize=1)
def _frame_content_size():
    import zstandard

    return zstandard.frame_content_size


NATIVE_ZSTD = _zstd_kernel.available  # decompress ZSTD with the system's libzstd


def _native_zstd():
    """This thread's libzstd decompressor, or None (no usable libzstd, or NATIVE_ZSTD off)."""
    if not NATIVE_ZSTD:
        return None
    decompressor = getattr(_LOCAL, "native", None)
    if decompressor is None:
        decompressor = _LOCAL.native = _zstd_kernel.Decompressor()
    return decompressor


def _zstd_decompressor():
    """This thread's ``zstandard`` decompressor."""
    decompressor = getattr(_LOCAL, "decompressor", None)
    if decompressor is None:
        import zstandard

        decompressor = _LOCAL.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress one page body with ``codec`` (a thrift id); ``level`` None = library default."""
    if codec == UNCOMPRESSED:
        return data if isinstance(data, bytes) else bytes(data)  # no copy of a page's bytes
    if codec == ZSTD:  # Arrow's default level is 1; so is ours, for the same files and speed
        return _zstd_compressor(1 if level is None else level).compress(data)
    if codec == LZ4_RAW:
        import lz4.block

        return lz4.block.compress(data, store_size=False)
    if codec in (SNAPPY, GZIP, BROTLI):
        name = CODEC_NAMES[codec].lower()
        try:
            return _arrow_codec(name, level).compress(data, asbytes=True)
        except (ValueError, OSError) as exc:
            raise EncodeError(f"{CODEC_NAMES[codec]} compression failed: {exc}") from exc
    if codec in (LZ4, LZO):
        raise UnsupportedFeatureError(
            f"writing {CODEC_NAMES[codec]} is not supported (deprecated codec); use LZ4_RAW or ZSTD"
        )
    raise ValueError(f"unknown compression codec id {codec}")


def compress_buffer(codec: int, data, level: int | None = None):
    """:func:`compress`, returning the buffer the library made instead of ``bytes``: a byte
    ``memoryview`` of a buffer in Arrow's pool for ZSTD, SNAPPY, GZIP and BROTLI (no copy into
    a ``bytes``), ``data`` itself when uncompressed. The writer's page bodies come from here.
    Arrow's ZSTD at its default level 1 is pyarrow's own page compressor (and ~8 % faster
    than ``zstandard``'s build of the library on this machine)."""
    if codec == UNCOMPRESSED:
        return data
    if codec in (ZSTD, SNAPPY, GZIP, BROTLI):
        name = CODEC_NAMES[codec].lower()
        try:
            return memoryview(_arrow_codec(name, level).compress(data)).cast("B")
        except (ValueError, OSError) as exc:
            raise EncodeError(f"{CODEC_NAMES[codec]} compression failed: {exc}") from exc
    return compress(codec, data, level)


def decompress(codec: int, data, uncompressed_size: int, transient: bool = False) -> bytes:
    """Decompress one page body to exactly ``uncompressed_size`` bytes or raise DecodeError.

    ``transient``: the caller decodes the result and drops it before the next page (so the
    allocator hands the same, cache-hot memory to the next page): ZSTD pages then decompress
    with ``zstandard`` into a new bytes object, faster than Arrow's codec into its pool (which
    wins only when many pages are held at once)."""
    if uncompressed_size < 0:
        raise DecodeError(f"negative uncompressed page size {uncompressed_size}")
    name = CODEC_NAMES.get(codec)
    if name is None:
        raise DecodeError(f"unknown compression codec id {codec}")
    if uncompressed_size == 0 and len(data) == 0:
        return b""  # nothing was compressed (an empty v2 page); not a valid codec stream
    try:
        if transient and codec == ZSTD:
            out = _zstd_transient(data, uncompressed_size)
        else:
            out = _DECOMPRESSORS[codec](data, uncompressed_size)
    except (DecodeError, UnsupportedFeatureError):
        raise
    except Exception as exc:  # every library has its own error types; all mean corrupt input
        raise DecodeError(f"{name} page does not decompress: {exc}") from exc
    if len(out) != uncompressed_size:
        raise DecodeError(
            f"{name} page decompressed to {len(out)} bytes, header says {uncompressed_size}"
        )
    return out


def decompress_into(codec: int, data, out) -> None:
    """Decompress one ZSTD or SNAPPY page body straight into ``out`` (a writable buffer of
    exactly the page's uncompressed size): no intermediate buffer to copy from. DecodeError
    when the page decodes to any other size."""
    if codec not in (ZSTD, SNAPPY):
        raise ValueError(
            f"decompress_into takes ZSTD or SNAPPY pages, not {CODEC_NAMES.get(codec)}"
        )
    view = memoryview(out).cast("B")
    size = len(view)
    if codec == SNAPPY:
        _snappy_into(data, view)
        return
    native = _native_zstd()
    if native is not None:
        native.decompress_into(data, view)
        return
    try:
        reader = _zstd_decompressor().stream_reader(data)
        got = reader.readinto(view) if size else 0
        extra = reader.read(1)
    except Exception as exc:  # zstandard.ZstdError and friends: a corrupt frame
        raise DecodeError(f"ZSTD page does not decompress: {exc}") from exc
    if got != size or extra:
        raise DecodeError(
            f"ZSTD page decompressed to {got if not extra else 'more than '}"
            f"{'' if not extra else size} bytes, header says {size}"
        )


def decompress_scratch(codec: int, data, uncompressed_size: int):
    """:func:`decompress` for a page the caller decodes at once and drops: a ZSTD page goes
    into this thread's scratch buffer (grown as pages need, reused page after page, so it
    stays in cache), which the thread's next call overwrites; other pages as
    ``decompress(..., transient=True)``."""
    native = _native_zstd() if codec == ZSTD else None
    if native is None or not 0 < uncompressed_size <= 64 * 1024 * len(data) + (1 << 20):
        return decompress(codec, data, uncompressed_size, True)
    out = _scratch(uncompressed_size)
    native.decompress_into(data, out)
    return out


def decompress_run(codec: int, run: list, sizes: list):
    """A run of ZSTD pages (``(body, count)`` pairs, their uncompressed ``sizes``)
    decompressed into this thread's scratch buffer in one kernel call: the same pairs with
    each body replaced by its uncompressed bytes there (valid until the thread's next
    decompression into its scratch). None where there is no such path: another codec, no
    libzstd, or a page size beyond any real ratio (those pages go one by one)."""
    native = _native_zstd() if codec == ZSTD else None
    if native is None:
        return None
    total = 0
    for (body, _), size in zip(run, sizes, strict=True):
        if size > 64 * 1024 * len(body) + (1 << 20):
            return None
        total += size
    out = _scratch(total)
    native.decompress_pages(run, sizes, out)
    pages, at = [], 0
    for (_, count), size in zip(run, sizes, strict=True):
        pages.append((out[at : at + size], count))
        at += size
    return pages


def _scratch(size: int) -> memoryview:
    """The first ``size`` bytes of this thread's scratch buffer (grown as needed)."""
    scratch = getattr(_LOCAL, "scratch", None)
    if scratch is None or len(scratch) < size:
        scratch = _LOCAL.scratch = memoryview(bytearray(size))
    return scratch[:size]


def _none(data, size):
    return data  # no copy: callers slice it (memoryview) and check its length


def _zstd_transient(data, size):
    if _native_zstd() is not None:
        return _zstd(data, size)
    # the frame's own content size must be the header's: zstandard allocates what the frame
    # says (a hostile frame must not make it allocate more than the page header announced)
    stated = _frame_content_size()(data)
    if stated < 0 or size > 64 * 1024 * len(data) + (1 << 20):
        return _zstd(data, size)  # no stated size, or beyond any real ratio: as _zstd checks
    if stated != size:
        raise DecodeError(f"ZSTD page holds {stated} bytes, header says {size}")
    return _zstd_decompressor().decompress(data)


def _snappy_length(data, size: int) -> None:
    # The snappy block starts with the uncompressed length as a ULEB128 varint: check it
    # first, so a lying header is caught before any output is written.
    view = memoryview(data).cast("B")
    value = shift = 0
    for i in range(min(5, len(view))):
        value |= (view[i] & 0x7F) << shift
        if view[i] < 0x80:
            break
        shift += 7
    else:
        raise DecodeError("SNAPPY page has no valid length preamble")
    if value != size:
        raise DecodeError(f"SNAPPY page holds {value} bytes, header says {size}")


def _snappy_into(data, view: memoryview) -> None:
    """Decompress a snappy block into ``view`` (exactly its uncompressed size)."""
    import cramjam

    size = len(view)
    _snappy_length(data, size)
    try:
        got = cramjam.snappy.decompress_raw_into(data, view)
    except Exception as exc:  # cramjam.DecompressionError: a corrupt block
        raise DecodeError(f"SNAPPY page does not decompress: {exc}") from exc
    if got != size:
        raise DecodeError(f"SNAPPY page decompressed to {got} bytes, header says {size}")


def _snappy(data, size):
    # into an Arrow buffer (Arrow's pool recycles the memory) rather than a new bytes object
    import pyarrow as pa

    out = pa.allocate_buffer(size)
    if size:
        _snappy_into(data, memoryview(out))
    else:
        _snappy_length(data, 0)
    return out


def _gzip(data, size):
    # Readers should accept several concatenated gzip members (parquet spec, GZIP codec).
    out = bytearray()
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(wbits=31)
        out += d.decompress(rest, size + 1 - len(out))
        if len(out) > size:
            raise DecodeError(f"GZIP page decompresses past the {size} bytes its header says")
        if not d.eof:
            raise DecodeError("GZIP page is truncated")
        rest = d.unused_data
        if not rest:
            return bytes(out)


def _brotli(data, size):
    import brotli

    d = brotli.Decompressor()
    out = d.process(bytes(data), output_buffer_limit=size + 1)
    if not d.is_finished():
        raise DecodeError("BROTLI page is truncated or longer than its header says")
    return out


def _zstd(data, size):
    if size == 0 or size > 64 * 1024 * len(data) + (1 << 20):
        # Arrow's codec refuses an empty output, and allocates whatever a (possibly hostile)
        # header says up front: beyond any real zstd ratio, let zstandard check the frame
        return _zstd_decompressor().decompress(data, max_output_size=size)
    native = _native_zstd()
    if native is not None:  # into Arrow's pool, which recycles the memory page after page
        import pyarrow as pa

        out = pa.allocate_buffer(size)
        native.decompress_into(data, out)
        return out
    # Arrow's zstd into its pool: 1.6x zstandard's decompress into a new bytes object per page;
    # a frame that decodes to any other size than ``size`` raises (caught as corrupt)
    return _arrow_codec("zstd", None).decompress(data, decompressed_size=size)


def _lz4_raw(data, size):
    import lz4.block

    return lz4.block.decompress(data, uncompressed_size=size)


_HADOOP = struct.Struct(">II")


def _lz4_hadoop(data, size):
    # Hadoop's BlockCompressorStream: [u32 BE raw size][u32 BE block size][block]..., repeated.
    view = bytes(data)
    out = bytearray()
    pos = 0
    try:
        while pos < len(view):
            if pos + 8 > len(view):
                raise DecodeError("truncated Hadoop LZ4 frame header", offset=pos)
            raw, comp = _HADOOP.unpack_from(view, pos)
            pos += 8
            if comp > len(view) - pos or len(out) + raw > size:
                raise DecodeError("Hadoop LZ4 frame sizes exceed the page", offset=pos)
            out += _lz4_raw(view[pos : pos + comp], raw)
            pos += comp
        return bytes(out)
    except Exception:
        # parquet-cpp once wrote plain LZ4 blocks under this codec id; read those too.
        return _lz4_raw(view, size)


def _lzo(data, size):
    raise UnsupportedFeatureError("LZO-compressed pages are not supported (nor by pyarrow)")


_DECOMPRESSORS = {
    UNCOMPRESSED: _none,
    SNAPPY: _snappy,
    GZIP: _gzip,
    LZO: _lzo,
    BROTLI: _brotli,
    LZ4: _lz4_hadoop,
    ZSTD: _zstd,
    LZ4_RAW: _lz4_raw,
}
