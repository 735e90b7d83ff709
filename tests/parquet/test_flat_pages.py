"""Flat nullable fixed-width columns (max definition level 1, no repetition): runs of v1 pages
whose headers are read in C and decoded by ``pagevalues.decode_flat_pages`` (levels into the
validity bitmap, values straight into their slots) must give what pyarrow wrote, for every
codec, page size, encoding and null density; the kernel itself must match a plain numpy
reference and turn damaged pages into DecodeError."""

import contextlib
import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native import pagevalues
from metaindex.errors import DecodeError
from metaindex.parquet import read_table
from tests.reference.varint import uleb_encode

_TYPES = {
    "int32": lambda rng, n: pa.array(rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)),
    "int64": lambda rng, n: pa.array(rng.integers(-(2**62), 2**62, n)),
    "float": lambda rng, n: pa.array(rng.standard_normal(n).astype(np.float32)),
    "double": lambda rng, n: pa.array(rng.standard_normal(n)),
    "ts": lambda rng, n: pa.array(rng.integers(0, 10**15, n)).cast(pa.timestamp("us")),
    "dec": lambda rng, n: (
        pa.array(rng.integers(-(10**9), 10**9, n))
        .cast(pa.decimal128(21, 2))
        .cast(pa.decimal128(18, 2))
    ),
    "fsb": lambda rng, n: pa.array(
        [bytes([int(v)] * 5) for v in rng.integers(0, 256, n)], pa.binary(5)
    ),
}


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(_TYPES)),
    n=st.integers(0, 3000),
    nulls=st.sampled_from([0.0, 0.01, 0.1, 0.5, 0.97, 1.0]),
    distinct=st.sampled_from([None, 1, 40]),
    codec=st.sampled_from(["none", "snappy", "zstd"]),
    version=st.sampled_from(["1.0", "2.0"]),
    page_size=st.sampled_from([64, 700, 4096, 1 << 20]),
    checksums=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_nullable_columns_read_as_pyarrow_wrote_them(
    kind, n, nulls, distinct, codec, version, page_size, checksums, seed
):
    """Dictionary pages (``distinct`` values), falling back to PLAIN when the dictionary
    page fills up, and PLAIN pages; v1 and v2; crc written and verified or not."""
    rng = np.random.default_rng(seed)
    if distinct is None:
        arr = _TYPES[kind](rng, n)
    else:
        arr = _TYPES[kind](rng, distinct).take(pa.array(rng.integers(0, distinct, n)))
    arr = pc.if_else(pa.array(rng.random(n) < nulls), pa.scalar(None, arr.type), arr)
    table = pa.table([arr], schema=pa.schema([pa.field("c", arr.type, True)]))
    buf = io.BytesIO()
    pq.write_table(
        table,
        buf,
        compression=codec,
        use_dictionary=distinct is not None,
        dictionary_pagesize_limit=int(rng.choice([64, 1 << 20])),
        data_page_version=version,
        data_page_size=page_size,
        write_batch_size=int(rng.choice([7, 100, 1000])),
        write_page_checksum=checksums,
    )
    got = read_table(buf.getvalue(), verify_checksums=checksums)
    assert got.equals(table)
    assert got.column(0).null_count == table.column(0).null_count


def test_a_fallback_chunk_reads_its_dictionary_then_plain_runs():
    """A chunk whose dictionary page fills up part way: a run of dictionary pages, then a
    run of PLAIN ones, both through the kernel."""
    rng = np.random.default_rng(4)
    arr = pa.array(rng.integers(0, 5000, 20000))
    arr = pc.if_else(pa.array(rng.random(20000) < 0.2), pa.scalar(None, arr.type), arr)
    buf = io.BytesIO()
    pq.write_table(pa.table({"c": arr}), buf, dictionary_pagesize_limit=4000, data_page_size=2000)
    meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0).column(0)
    assert "PLAIN" in meta.encodings and "RLE_DICTIONARY" in meta.encodings
    got = read_table(buf.getvalue())
    assert got.column(0).equals(pa.chunked_array([arr]))


# ------------------------------------------------------------------ the kernel on its own


def _hybrid(levels: np.ndarray, runs: list) -> bytes:
    """Width-1 levels as the RLE / bit-packing hybrid, as ``runs`` says: ``("rle", k)`` or
    ``("bp", groups)`` taking the next levels in order (a bit-packed run's tail past the
    levels is padded with zeros)."""
    out, i = bytearray(), 0
    for kind, k in runs:
        if kind == "rle":
            value = int(levels[i]) if i < len(levels) else 0
            header = k << 1
            out += uleb_encode(header) + bytes([value])
            i += k
        else:
            bits = np.zeros(8 * k, np.uint8)
            take = levels[i : i + 8 * k]
            bits[: len(take)] = take
            out += uleb_encode(k << 1 | 1) + np.packbits(bits, bitorder="little").tobytes()
            i += 8 * k
    return bytes(out)


@st.composite
def _levels_page(draw):
    """Levels made of runs of one value and of bit-packed groups, their encoding, and the
    runs (an RLE run only where its levels are all equal)."""
    runs, levels = [], []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            k = draw(st.integers(1, 70))
            v = draw(st.integers(0, 1))
            runs.append(("rle", k))
            levels += [v] * k
        else:
            g = draw(st.integers(1, 4))
            runs.append(("bp", g))
            levels += draw(st.lists(st.integers(0, 1), min_size=8 * g, max_size=8 * g))
    n = draw(st.integers(0, len(levels)))  # a page may use fewer levels than encoded
    return np.array(levels[:n], np.uint8), _hybrid(np.array(levels, np.uint8), runs)


def _reference(levels, values, width, bitmap_bits):
    """Slots and validity as the general path makes them: values in set slots, zeros else."""
    slots = np.zeros((len(levels), width), np.uint8)
    slots[levels.astype(bool)] = values.reshape(-1, width)[: int(levels.sum())]
    return slots.reshape(-1), bitmap_bits


@contextlib.contextmanager
def _spread(vector: bool):
    """The AVX2 spread (where the CPU has it) or the portable loop, for the block."""
    was = pagevalues._vector_spread(vector)
    try:
        yield
    finally:
        pagevalues._vector_spread(was)


@pytest.mark.parametrize("vector", [True, False], ids=["vector", "portable"])
@settings(max_examples=150, deadline=None)
@given(
    pages=st.lists(_levels_page(), min_size=1, max_size=4),
    width=st.sampled_from([4, 8, 12, 3]),
    dictionary=st.booleans(),
    offset=st.integers(0, 13),
    seed=st.integers(0, 2**32 - 1),
)
def test_flat_pages_match_a_reference(vector, pages, width, dictionary, offset, seed):
    """Values in their slots, zeros in null slots, the levels' bits from ``offset``, and the
    present count: over runs of 1s, 0s and bit-packed groups, pages not starting on a byte
    of the bitmap, pages holding fewer levels than encoded, and extra bytes after values."""
    rng = np.random.default_rng(seed)
    entries = rng.integers(0, 256, 37 * width, dtype=np.uint8)
    run, want_slots, want_bits, total_present = [], [], [], 0
    for levels, encoded in pages:
        present = int(levels.sum())
        if dictionary:
            idx = rng.integers(0, 37, present)
            values = entries.reshape(-1, width)[idx].reshape(-1)
            from metaindex._native.rle import encode_rle

            body = bytes([6]) + encode_rle(idx.astype(np.uint32), 6)
        else:
            values = rng.integers(0, 256, present * width, dtype=np.uint8)
            body = values.tobytes() + bytes(int(rng.integers(0, 3)))  # trailing bytes unused
        page = len(encoded).to_bytes(4, "little") + encoded + body
        run.append((page, len(levels)))
        slots, bits = _reference(levels, values, width, levels)
        want_slots.append(slots)
        want_bits.append(bits)
        total_present += present
    total = sum(n for _, n in run)
    out = np.full(total * width, 0xAB, np.uint8)
    bitmap = np.zeros((offset + total + 7) // 8 + 1, np.uint8)
    with _spread(vector):
        got = pagevalues.decode_flat_pages(
            run, entries if dictionary else None, width, out, bitmap, offset, bool(seed & 1)
        )
    assert got == total_present
    assert out.tobytes() == np.concatenate(want_slots + [np.zeros(0, np.uint8)]).tobytes()
    bits = np.unpackbits(bitmap, bitorder="little")
    want = np.concatenate(want_bits + [np.zeros(0, np.uint8)])
    assert (bits[offset : offset + total] == want).all()
    assert not bits[:offset].any() and not bits[offset + total :].any()


@pytest.mark.parametrize("vector", [True, False], ids=["vector", "portable"])
@settings(max_examples=150, deadline=None)
@given(
    page=_levels_page(),
    dictionary=st.booleans(),
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    truncate=st.integers(0, 10**6),
    seed=st.integers(0, 2**32 - 1),
)
def test_damaged_flat_pages_decode_or_raise_decode_error(
    vector, page, dictionary, cuts, truncate, seed
):
    """Damaged bytes anywhere in a page (levels prefix, runs, bit width, indices, values) or
    a page cut short: the kernel decodes something or raises DecodeError naming the page,
    and never reads or writes outside its buffers (the sanitizer build checks that)."""
    rng = np.random.default_rng(seed)
    levels, encoded = page
    width = 8
    present = int(levels.sum())
    entries = rng.integers(0, 256, 5 * width, dtype=np.uint8)
    if dictionary:
        from metaindex._native.rle import encode_rle

        body = bytes([3]) + encode_rle(rng.integers(0, 5, present).astype(np.uint32), 3)
    else:
        body = rng.integers(0, 256, present * width, dtype=np.uint8).tobytes()
    data = bytearray(len(encoded).to_bytes(4, "little") + encoded + body)
    for at, value in cuts:
        if data:
            data[at % len(data)] = value
    data = bytes(data[: len(data) - truncate % (len(data) + 1)])
    n = len(levels)
    out = np.zeros(n * width, np.uint8)
    bitmap = np.zeros((n + 7) // 8, np.uint8)
    try:
        with _spread(vector):
            got = pagevalues.decode_flat_pages(
                [(data, n)], entries if dictionary else None, width, out, bitmap, 0, bool(seed & 1)
            )
    except DecodeError as exc:
        assert "page 0 of 1" in str(exc)
    else:
        assert 0 <= got <= n
        assert int(np.unpackbits(bitmap, bitorder="little")[:n].sum()) == got


def test_flat_pages_refuse_bad_arguments():
    page = (2).to_bytes(4, "little") + bytes([8 << 1, 1]) + bytes(2)  # 8 values, one RLE run
    with pytest.raises(ValueError):
        pagevalues.decode_flat_pages(
            [(page, 8)], None, 4, np.zeros(32, np.uint8), np.zeros(0, np.uint8), 0
        )
    with pytest.raises(ValueError):
        pagevalues.decode_flat_pages(
            [(page, 8)], None, 4, np.zeros(31, np.uint8), np.zeros(1, np.uint8), 0
        )
    with pytest.raises(ValueError):
        pagevalues.decode_flat_pages(
            [(page, 8)], bytes(6), 4, np.zeros(32, np.uint8), np.zeros(1, np.uint8), 0
        )
    with pytest.raises(DecodeError, match="negative"):
        pagevalues.decode_flat_pages(
            [(page, -1)], None, 4, np.zeros(0, np.uint8), np.zeros(1, np.uint8), 0
        )
    # 8 values present, the page holds 2 bytes of values: too short
    with pytest.raises(DecodeError, match="page 0 of 1: truncated PLAIN values"):
        pagevalues.decode_flat_pages(
            [(page, 8)], None, 4, np.zeros(32, np.uint8), np.zeros(1, np.uint8), 0
        )
