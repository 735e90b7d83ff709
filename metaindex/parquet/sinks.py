"""Where a column chunk's values are decoded to: one output buffer per chunk, in Arrow's layout.

:class:`FixedSink` holds fixed-width values (one buffer allocated once for the chunk; a PLAIN
page holding the whole chunk is borrowed in place, a chunk of PLAIN pages read into memory of
ours is closed up over its headers; a flat nullable column's validity bitmap and its values
spread over their slots). :class:`BinarySink` holds BYTE_ARRAY values as one offsets array and
one growing data buffer (the ``*_into`` decoders' protocol, cython_ext/binsink.pxd); a flat
nullable column's validity bitmap too, its offsets spread over the null slots. Both
refuse value counts out of proportion to the chunk's bytes, so a hostile footer cannot make the
reader allocate gigabytes up front.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from metaindex._native import pagevalues
from metaindex._native.bindict import BinaryDictionary
from metaindex._native.levels_assemble import spread_fixed_from, spread_offsets
from metaindex.errors import DecodeError
from metaindex.parquet import values as vals

__all__ = ["FixedSink", "BinarySink", "FIXED_WIDTHS"]

FIXED_WIDTHS = {vals.INT32: 4, vals.INT64: 8, vals.FLOAT: 4, vals.DOUBLE: 8, vals.INT96: 12}
_DTYPES = {
    vals.INT32: np.int32,
    vals.INT64: np.int64,
    vals.FLOAT: np.float32,
    vals.DOUBLE: np.float64,
}


class FixedSink:
    """One buffer for a chunk's fixed-width values; pages decode into consecutive slices."""

    __slots__ = ("ptype", "width", "buf", "view", "total", "count", "bitmap", "present", "scratch")
    ptype: int
    width: int
    buf: np.ndarray | None
    view: np.ndarray | None
    total: int
    count: int
    bitmap: np.ndarray | None
    present: int
    scratch: np.ndarray | None

    @classmethod
    def make(
        cls, ptype: int, type_length: int, total: int, chunk_bytes: int, decimal128: bool = False
    ):
        """A sink for ``total`` values at most, or None for variable-width types and for
        value counts out of proportion to the chunk's bytes (a hostile footer must not make us
        allocate gigabytes up front: such chunks take the page-by-page path, which allocates
        only what each page proves it holds). ``decimal128``: FIXED_LEN_BYTE_ARRAY decimals
        of 1 to 16 bytes are converted to decimal128 as they are decoded, 16 bytes a value."""
        width = FIXED_WIDTHS.get(ptype, type_length if ptype == vals.FIXED_LEN_BYTE_ARRAY else 0)
        if decimal128 and ptype == vals.FIXED_LEN_BYTE_ARRAY and 1 <= type_length <= 16:
            width = 16
        if width <= 0 or total * width > 64 * chunk_bytes + (1 << 20):
            return None
        sink = cls()
        sink.ptype, sink.width, sink.count, sink.bitmap, sink.present = ptype, width, 0, None, 0
        sink.total, sink.buf, sink.view, sink.scratch = total, None, None, None
        return sink

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` values' bytes (the caller decodes into them)."""
        if self.buf is None:  # allocated on first use: a chunk read in place needs none
            self.buf = np.frombuffer(pa.allocate_buffer(self.total * self.width), np.uint8)
        a = self.count * self.width
        self.count += n
        return self.buf[a : a + n * self.width]

    def borrow(self, data, n: int) -> bool:
        """Take a PLAIN page holding all ``n`` values of the chunk in place: its bytes become
        the values (no copy) when they are aligned to the value width, as Arrow expects."""
        dtype = _DTYPES.get(self.ptype)
        if dtype is None or self.count or n != self.total or len(data) < n * self.width:
            return False
        view = np.frombuffer(data, np.uint8, n * self.width)
        if view.__array_interface__["data"][0] % self.width:
            return False
        self.view, self.count = view, n
        return True

    def close_up(self, chunk, run) -> bool:
        """Take every value of the chunk from ``run``, all of its pages (PLAIN, from the
        chunk's first byte), moved down over their headers into the start of ``chunk`` (a
        writable buffer of ours): that start becomes the values, when aligned as Arrow
        expects."""
        if self.count or len(chunk) < self.total * self.width:  # short pages: the kernel
            return False  # path raises for them
        view = np.frombuffer(chunk, np.uint8, self.total * self.width)
        if self.ptype in _DTYPES and view.__array_interface__["data"][0] % self.width:
            return False
        pagevalues.copy_plain_pages(run, self.width, view)
        self.view, self.count = view, self.total
        return True

    def flat_page(self, levels, n: int, prefixed: bool, decode, plain=None, spread=None) -> None:
        """One page of a flat nullable column: ``levels`` into the bitmap, then ``decode(out,
        present)`` packs the page's values into the start of its slots, which are spread;
        ``spread(first, n, present)``, when given (decimals read as decimal128: converted
        from a PLAIN page or gathered from their dictionary), decodes the values straight into
        their slots instead.
        ``plain``: the page's PLAIN values section, taken in place when the page holds the
        whole chunk without a null, else spread from where it lies (a section too short for
        the values goes through ``decode``, which raises for it)."""
        first = self.count
        present, _ = pagevalues.decode_levels_bitmap(levels, n, prefixed, self.bitmap, first)
        if present == n and plain is not None and self.borrow(plain, n):
            self.present += present
            return
        slots = self.take(n)
        if present == n:  # no null in the page: its values are the slots
            decode(slots, n)
        elif spread is not None:
            spread(first, n, present)
        elif plain is not None and len(plain) >= present * self.width:
            # PLAIN values spread over their slots straight from the page (no packed copy)
            spread_fixed_from(plain, slots, self.width, self.bitmap, first, n, present)
        else:
            # decoded packed into a scratch buffer reused page after page (it stays in cache),
            # then spread forward over the slots (cheaper than spreading in place)
            size = present * self.width
            if self.scratch is None or len(self.scratch) < size:
                self.scratch = np.empty(size, np.uint8)
            packed = self.scratch[:size]
            decode(packed, present)
            spread_fixed_from(packed, slots, self.width, self.bitmap, first, n, present)
        self.present += present

    def values(self):
        if self.view is not None:
            raw = self.view
        elif self.buf is None:
            raw = np.zeros(0, np.uint8)
        else:
            raw = self.buf[: self.count * self.width]
        dtype = _DTYPES.get(self.ptype)
        return raw.view(dtype) if dtype is not None else raw.reshape(self.count, self.width)


_INT32_MAX = (1 << 31) - 1


class BinarySink:
    """A chunk's BYTE_ARRAY values (the non-null ones), decoded page after page straight
    into one offsets array and one data buffer in Arrow's layout: no arrays per page and no
    join (the ``*_into`` decoders; the protocol is in cython_ext/binsink.pxd). Offsets are
    int32 until the values pass 2 GiB, then int64, as ``values.concat`` makes them."""

    __slots__ = (
        "offsets",
        "buf",
        "data",
        "count",
        "size",
        "total",
        "width",
        "bitmap",
        "entries",
        "present",
    )
    offsets: np.ndarray
    buf: pa.ResizableBuffer
    data: np.ndarray
    count: int
    size: int
    total: int
    width: int
    bitmap: np.ndarray | None
    entries: BinaryDictionary | None
    present: int

    @classmethod
    def make(cls, ptype: int, total: int, chunk_bytes: int, expected_bytes: int | None):
        """A sink for ``total`` values at most, or None (another type, or a value count out
        of proportion to the chunk's bytes: see ``FixedSink.make``). ``expected_bytes``:
        what the footer says the chunk's pages take uncompressed, the first guess at the
        values' bytes (a guess only: the buffer grows as pages need)."""
        limit = 64 * chunk_bytes + (1 << 20)
        if ptype != vals.BYTE_ARRAY or 4 * total > limit:
            return None
        sink = cls()
        sink.offsets = vals.pool_empty(total + 1, np.int32)
        sink.offsets[0] = 0
        guess = min(max(expected_bytes or 0, chunk_bytes), limit)
        sink.buf = pa.allocate_buffer(guess, resizable=True)
        sink.data = np.frombuffer(sink.buf, np.uint8)
        sink.count = sink.size = sink.width = sink.present = 0
        sink.total, sink.bitmap, sink.entries = total, None, None
        return sink

    def claim(self, n: int, nbytes: int):
        """Room for ``n`` more values of ``nbytes`` bytes (the buffer grows if it must):
        ``(first value, first byte, offsets, data)`` for the decoder to write at."""
        start, base = self.count, self.size
        if n > self.total - start:
            raise DecodeError(f"pages hold more values than the {self.total} of their chunk")
        end = base + nbytes
        if end > len(self.data):
            # the bytes a value has taken so far times the values the chunk has, or at
            # least half again the buffer (few regrowths), and at most 8 times what is
            # needed now (a page of long values among short ones must not allocate wildly)
            guess = end * self.total // (start + n) if start + n else end
            self.buf.resize(max(end, min(guess + guess // 16, 8 * end), len(self.data) * 3 // 2))
            self.data = np.frombuffer(self.buf, np.uint8)  # the old view's memory is gone
        if end > _INT32_MAX and self.offsets.dtype == np.int32:
            self.offsets = self.offsets.astype(np.int64)
        self.count, self.size = start + n, end
        return start, base, self.offsets, self.data

    @property
    def narrow_room(self) -> int:
        """Bytes the sink can still take with int32 offsets: a decoder that claims more than
        it will keep (and gives the rest back) keeps its claim within this, so that the
        offsets do not turn int64 for bytes never written (unlimited once they are int64)."""
        return _INT32_MAX - self.size if self.offsets.dtype == np.int32 else 1 << 62

    def dictionary(self, dictionary) -> None:
        """Take the chunk's dictionary (offsets from 0 and data, as a dictionary page
        decodes to), prepared once for the pages that gather from it; the buffer is sized
        for the values it will gather when nothing is in it yet."""
        offsets, data = dictionary
        self.entries = BinaryDictionary(np.ascontiguousarray(offsets, np.int32), data)
        entries = len(offsets) - 1
        if entries and not self.count:
            guess = int(offsets[-1]) * (self.total // entries + 1)
            if guess > len(self.data):
                self.buf.resize(min(guess, 8 * len(self.data) + (1 << 20)))
                self.data = np.frombuffer(self.buf, np.uint8)

    def flat_page(self, levels, n: int, prefixed: bool, decode, plain=None, spread=None) -> None:
        """One page of a flat nullable column (``FixedSink.flat_page``'s protocol): ``levels``
        into the bitmap, ``decode(None, present)`` decodes the page's non-null values into
        the sink packed, and their end offsets are spread over the page's ``n`` slots (a
        null slot holds no bytes, as Arrow builders make it). ``spread(first, n, present)``,
        when given (dictionary pages), decodes the values straight into their slots instead.
        ``plain`` is not used."""
        first = self.count
        if n > self.total - first:
            raise DecodeError(f"pages hold more values than the {self.total} of their chunk")
        present, _ = pagevalues.decode_levels_bitmap(levels, n, prefixed, self.bitmap, first)
        if spread is not None and present != n:
            spread(first, n, present)
        else:
            decode(None, present)
            if present != n:
                spread_offsets(self.offsets, self.bitmap, first, first, n, present)
        self.count = first + n
        self.present += present

    def values(self):
        return self.offsets[: self.count + 1], self.data[: self.size]
