"""The bloom-filter index: per file a split-block bloom filter of the column's values.

Stored as ``struct<bitset: binary, has_null: bool>``: the raw SBBF bitset (specs/bloom-index.md:
XXH64 seed 0 over each value in the form of the index's ``hash_scheme``: 2, the canonical form
of the value whatever type or width a file stores it in; 1, for indexes built before scheme 2,
the PLAIN encoding in the file's own type; floats canonical in both so -0.0 = 0.0 and
NaN = NaN), sized for the file's own distinct count at the index's ``fpp``; ``bitset`` is null
when the file has no non-null value. A null struct, or a bitset whose length is not a power of
two >= 32 bytes, is unknown: the file is kept. Filters are not probed where the column's type
drifted in a way the hashes cannot follow (:func:`literal_hashes`).

Only equality can use a bloom filter: ``=``, ``<=>`` with a non-null literal, ``IN`` and
``isnan`` (= NaN) probe the literals' hashes in every file's bitset at once (the bloomset
kernel over the concatenated bitsets); ``IS NULL`` reads ``has_null``. Every other predicate
keeps each file that has a value (``NOT isnan`` also each file with a null).
Booleans cannot be indexed (Parquet defines no bloom hash for BOOLEAN).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex._native import bloomset as _kernel
from metaindex._native.distinct import count_distinct
from metaindex.arrays import from_pylist
from metaindex.bloom import MAX_BYTES, MIN_BYTES, SplitBlockBloomFilter, canonical_float_hashes
from metaindex.drift import Drift
from metaindex.index import base, columns
from metaindex.index.base import Estimate, Index, Leaf, to_bool, valid_mask

_METADATA_TYPE = pa.struct([pa.field("bitset", pa.binary()), pa.field("has_null", pa.bool_())])
_NO_BITSET = pa.nulls(1, pa.binary())

__all__ = [
    "BloomFilterIndex",
    "DEFAULT_FPP",
    "DEFAULT_MAX_BYTES",
    "HASH_SCHEME",
    "filter_bits",
    "literal_hashes",
    "probe",
    "bitset_offsets",
    "V1_TRUSTED",
    "fold_bitset",
]

HASH_SCHEME = 2
"""The hash scheme new bloom indexes use (specs/bloom-index.md)."""

DEFAULT_FPP = 0.01
DEFAULT_MAX_BYTES = 1 << 20
"""Largest bitset per file (1 MiB holds ~870 k distinct values at fpp 0.01); files with more
distinct values get a fuller filter (a higher false-positive rate, never a wrong answer)."""


class BloomFilterIndex(Index):
    """A split-block bloom filter of one column per file.

    Args:
        col: the column's dotted path.
        fpp: the false-positive rate each file's filter is sized for.
        max_bytes: the largest bitset per file (a power of two, 32 .. 128 MiB).
    """

    name = "bloom"
    label = "bloom filter"
    RANDOM_FIELDS = ("bitset",)
    SATURATED = (
        "saturated bloom filter: files hold more distinct values than max_bytes "
        "allows at the fpp; raise max_bytes"
    )
    __slots__ = ()
    STORED_DEFAULTS = {"hash_scheme": 1}  # definitions written before scheme 2 existed

    def __init__(
        self,
        col: str,
        fpp: float = DEFAULT_FPP,
        max_bytes: int = DEFAULT_MAX_BYTES,
        hash_scheme: int = HASH_SCHEME,
    ) -> None:
        if isinstance(fpp, bool) or not isinstance(fpp, (int, float)) or not 0.0 < fpp < 1.0:
            raise ValueError(f"fpp must be a number in (0, 1), got {fpp!r}")
        if (
            isinstance(max_bytes, bool)
            or not isinstance(max_bytes, (int, np.integer))
            or not MIN_BYTES <= max_bytes <= MAX_BYTES
            or max_bytes & (max_bytes - 1)
        ):
            raise ValueError(
                f"max_bytes must be a power of two in [{MIN_BYTES}, {MAX_BYTES}], got {max_bytes!r}"
            )
        if isinstance(hash_scheme, bool) or hash_scheme not in columns.SCHEMES:
            raise ValueError(f"hash_scheme must be one of {columns.SCHEMES}, got {hash_scheme!r}")
        super().__init__(
            col, fpp=float(fpp), max_bytes=int(max_bytes), hash_scheme=int(hash_scheme)
        )

    @property
    def fpp(self) -> float:
        return self._params["fpp"]

    @property
    def max_bytes(self) -> int:
        return self._params["max_bytes"]

    @property
    def hash_scheme(self) -> int:
        """What is hashed (specs/bloom-index.md): 1, each value's PLAIN encoding in the file's
        own type (indexes built before scheme 2); 2, its canonical form."""
        return self._params["hash_scheme"]

    def metadata_type(self, arrow_type: pa.DataType) -> pa.DataType:
        t = base.value_type(arrow_type)
        if pa.types.is_boolean(t):
            raise TypeError(
                "a bloom index cannot cover a boolean column (Parquet defines no "
                "bloom hash for BOOLEAN); use a min/max or value-list index"
            )
        return _METADATA_TYPE

    def collect(self, values: pa.Array | pa.ChunkedArray) -> pa.Scalar:
        parts, t, has_null = columns.plain_chunks(values)
        kind = self.metadata_type(values.type)
        bitset = _NO_BITSET
        n = sum(len(c) - c.null_count for c in parts)
        if n:
            scheme = self.hash_scheme
            bits = _filled(
                n,
                lambda b: columns.insert_new(b, parts, t, scheme),
                lambda: columns.hashes_of(parts, t, scheme),
                self.fpp,
                self.max_bytes,
            )
            offsets = np.array([0, len(bits)], np.int32)
            bitset = pa.Array.from_buffers(
                pa.binary(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(bits)]
            )
        return pa.StructArray.from_arrays(
            [bitset, columns.flag_array(has_null)], fields=list(kind)
        )[0]

    def metadata_type_ok(self, t: pa.DataType) -> bool:
        """``struct<bitset: binary | large_binary, has_null: bool>``."""
        return (
            pa.types.is_struct(t)
            and [t.field(i).name for i in range(t.num_fields)] == ["bitset", "has_null"]
            and t.field("bitset").type in (pa.binary(), pa.large_binary())
            and t.field("has_null").type == pa.bool_()
        )

    def summarize(self, metadata: pa.Array) -> pa.Scalar | None:
        """The entries' bitsets folded to the smallest size among them and OR-ed (exact: a
        hash selects block ``((h >> 32) * z) >> 32``, the top ``log2 z`` bits, so block ``i``
        of a filter of ``z`` blocks lands in block ``i >> log2(z / z')`` of ``z'`` blocks and
        its bit pattern, from the low 32 bits, is the same); ``has_null`` true when an entry's
        is, else null when one is null. None when some entry is unknown or has a bitset that
        is not a valid filter, or when more than half of the folded bits are set."""
        return _summary(metadata)

    def estimate(self, metadata: pa.Array, rows: np.ndarray) -> Estimate:
        """Each file's distinct count and false-positive rate from its filter's fill; how
        many files share a value from sampled pairs of filters (see
        ``metaindex.engine.effectiveness``)."""
        return _estimate(self, metadata, rows)

    def type_note(self, column_type: pa.DataType) -> str | None:
        """Scheme-1 filters on a type whose narrower widths hashed equal values apart are not
        probed (:func:`literal_hashes`): say so, and how to get scheme 2."""
        t = column_type.value_type if pa.types.is_dictionary(column_type) else column_type
        if self.hash_scheme != 1 or any(test(t) for test in V1_TRUSTED):
            return None
        if pa.types.is_integer(t) and t.bit_width == 64:
            return (
                "bloom hash scheme 1: each value is probed as a 4-byte and an 8-byte "
                "integer (files of other widths hashed it differently); drop and build the "
                "index again for scheme 2"
            )
        return (
            f"bloom hash scheme 1 is not used on a {t} column (files of other widths or "
            "types hashed equal values differently): drop and build the index again for "
            "scheme 2"
        )

    def _evaluate(self, lf: Leaf, metadata: pa.Array) -> np.ndarray:
        t = metadata.type
        if not pa.types.is_struct(t) or [t.field(i).name for i in range(t.num_fields)] != [
            "bitset",
            "has_null",
        ]:
            raise TypeError(
                f"bloom metadata must be struct<bitset: binary, has_null: bool>, got {t}"
            )
        bitsets = metadata.field("bitset")
        known = valid_mask(metadata)
        has_null = to_bool(metadata.field("has_null"), True)
        if lf.op == base.IS_NULL:
            return has_null | ~known
        if lf.op == base.NOT_NAN:  # Spark: isnan(NULL) is false, so NOT isnan(NULL) is true
            return valid_mask(bitsets) | has_null | ~known
        literals = _probed(lf)
        if literals is not None:
            hashes = literal_hashes(literals, lf.type, self.hash_scheme, lf.drift)
            if hashes is not None:
                return probe(bitsets, hashes) | ~known
        return valid_mask(bitsets) | ~known


def filter_bits(hashes: np.ndarray, fpp: float, max_bytes: int) -> np.ndarray:
    """The bitset of a file's filter: ``hashes`` inserted into a filter of
    ``SplitBlockBloomFilter.for_ndv(ndv, fpp, max_bytes)`` bytes, ``ndv`` their distinct
    count (the same bits as building that filter and inserting them).

    The size is a power of two, non-decreasing in ``ndv``, so only a few ``ndv`` change it.
    The hashes go into the filter ``len(hashes)`` distinct values would get, counting those
    that set a bit (certainly new: a lower bound of ``ndv``, cython_ext/bloomset.pyx). When
    that count is above every ``ndv`` of a smaller filter the filter is done; else the
    distinct hashes are counted (only as far as that decides the size) and the filter folded
    down to its size: halving a split-block filter ORs blocks ``2k`` and ``2k + 1`` into block
    ``k``, which is where the smaller filter puts each hash (its block is
    ``((h >> 32) * z) >> 32``), the bits within a block depending on ``h`` alone. The ``ndv``
    bounds of each size are computed once per process (``for_ndv`` is not cheap).
    """
    return _filled(
        len(hashes), lambda bits: _kernel.insert_new(bits, hashes), lambda: hashes, fpp, max_bytes
    )


def _filled(n: int, insert, hashes, fpp: float, max_bytes: int) -> np.ndarray:
    """:func:`filter_bits` of ``n`` hashes that ``insert(bits)`` inserts (returning how many
    set a bit) and ``hashes()`` gives as an array (only when the size is left open)."""
    size = _sized(n, fpp, max_bytes)
    bits = np.zeros(size, np.uint8)
    fresh = insert(bits)
    below = _largest_ndv_below(size, fpp, max_bytes)
    if below < 0 or fresh > below:
        return bits
    ndv = count_distinct(hashes(), below)
    while 0 <= ndv <= below:  # a smaller filter: which one
        size //= 2
        below = _largest_ndv_below(size, fpp, max_bytes)
    while len(bits) > size:
        pairs = bits.reshape(-1, 2, 32)
        bits = (pairs[:, 0, :] | pairs[:, 1, :]).reshape(-1)
    return bits


@functools.lru_cache(maxsize=4096)
def _sized(ndv: int, fpp: float, max_bytes: int) -> int:
    return SplitBlockBloomFilter.for_ndv(ndv, fpp, max_bytes).num_bytes


@functools.lru_cache(maxsize=1024)
def _largest_ndv_below(num_bytes: int, fpp: float, max_bytes: int) -> int:
    """The largest ndv whose filter is smaller than ``num_bytes`` (-1: none is)."""
    if _sized(0, fpp, max_bytes) >= num_bytes:
        return -1
    lo, hi = 0, 1  # _sized(lo) < num_bytes <= _sized(hi)
    while _sized(hi, fpp, max_bytes) < num_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _sized(mid, fpp, max_bytes) < num_bytes:
            lo = mid
        else:
            hi = mid
    return lo


def _probed(lf: Leaf):
    """The values whose presence decides ``lf``; None when a filter cannot decide it."""
    if lf.type is None:
        return None
    if lf.op == base.EQ:
        return (lf.value,)
    if lf.op == base.IN:
        return lf.value
    if lf.op == base.IS_NAN and base.is_float(base.value_type(lf.type)):
        return (float("nan"),)
    return None


_NO_DRIFT = Drift()  # immutable: a column whose files agree on its type


def literal_hashes(
    values, arrow_type: pa.DataType, scheme: int = 1, drift: Drift = _NO_DRIFT
) -> np.ndarray | None:
    """The hashes to probe for literals of a column of ``arrow_type`` (None: the filters
    cannot decide, keep every file that has a value).

    The literals become an Arrow array of the column's own type and hash exactly as
    :meth:`BloomFilterIndex.collect` hashes a column of that type with ``scheme``. A literal
    that does not convert (an integer out of range, a decimal with more digits than the
    scale) has no hash: the caller keeps every file rather than reason about it.

    Whether the filters may be probed at all depends on how the column drifted (``drift``,
    from the table schema): not when a file's values may not have converted exactly to the
    table's type (*lossy*), nor when Spark may read them wrapped (*wrap*). Scheme 1 filters
    hash in each file's own type, which the table does not record: they are probed only for
    the types whose every narrower width hashes alike (integers up to 32 bits, strings and
    binaries, dates), and for 64-bit integers with the literal in both widths
    (:data:`V1_PROBED`); any other type keeps every file.
    """
    if drift.lossy or drift.wrap or drift.values_unreliable:
        return None
    t = base.value_type(arrow_type)
    try:
        arr = from_pylist(list(values), t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if arr.null_count:
        return None
    if scheme == 2:
        return np.unique(columns.hashes_of([arr], t, 2))
    if any(test(t) for test in V1_TRUSTED):
        return np.unique(canonical_float_hashes(arr))
    if pa.types.is_integer(t) and t.bit_width == 64:
        return np.unique(_v1_integer_hashes(arr.to_pylist()))
    return None


V1_TRUSTED = (
    pa.types.is_int8,
    pa.types.is_int16,
    pa.types.is_int32,
    pa.types.is_uint8,
    pa.types.is_uint16,
    pa.types.is_uint32,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
    pa.types.is_date32,
)
"""Column types whose scheme-1 filters agree with a literal hashed in the column's type: every
type that joins into them (and that an older version joined into them) hashed the same bytes
for an equal value (INT32 for integers up to 32 bits, unsigned as the bit pattern; the bytes
of a string or binary; INT32 days)."""

V1_PROBED = "64-bit integers: the literal as 4 bytes (if in [-2**31, 2**32)) and as 8 bytes"
"""How scheme-1 filters on a 64-bit integer column are probed: a file of the column may have
been an int8..int32 / uint8..uint32 one (hashed as the 4 bytes of INT32, unsigned as the bit
pattern) or a 64-bit one (8 bytes)."""


def _v1_integer_hashes(values: list) -> np.ndarray:
    """Scheme-1 hashes of integer literals as every width a file may have hashed them in."""
    four = [v & 0xFFFFFFFF for v in values if -(2**31) <= v < 2**32]
    eight = [v & 0xFFFFFFFFFFFFFFFF for v in values]
    parts = [canonical_float_hashes(np.array(eight, np.uint64).view(np.int64))]
    if four:
        parts.append(canonical_float_hashes(np.array(four, np.uint32).view(np.int32)))
    return np.concatenate(parts)


def bitset_offsets(bitsets: pa.Array) -> np.ndarray:
    """The n + 1 offsets of a binary (or large_binary) bitset column as int64, absolute into
    its data buffer (``bitsets.buffers()[2]``); entry ``i`` spans ``[off[i], off[i + 1])``."""
    dtype = np.int64 if pa.types.is_large_binary(bitsets.type) else np.int32
    n = len(bitsets)
    buf = bitsets.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n + 1, np.int64)
    raw = np.frombuffer(buf, dtype, count=n + 1, offset=bitsets.offset * dtype().itemsize)
    return raw.astype(np.int64)


def probe(bitsets: pa.Array, hashes: np.ndarray) -> np.ndarray:
    """For each file, might its bitset hold one of ``hashes``? (cython_ext/bloomset.pyx)

    Args:
        bitsets: binary (or large_binary) array, one SBBF bitset per file; null = no value.
        hashes: uint64 XXH64 hashes to look for.

    Returns:
        numpy bool per file: False where the bitset is null or holds none of the hashes;
        True where one may be present, and where the entry is not a valid bitset (length
        not a power of two in [32 bytes, 128 MiB]), which proves nothing.
    """
    if not (pa.types.is_binary(bitsets.type) or pa.types.is_large_binary(bitsets.type)):
        raise TypeError(f"bitsets must be binary or large_binary, got {bitsets.type}")
    data = bitsets.buffers()[2]
    return _kernel.probe(
        bitset_offsets(bitsets),
        data if data is not None else b"",
        valid_mask(bitsets),
        np.asarray(hashes, np.uint64),
        MAX_BYTES,
    )


# ------------------------------------------------------------------------------ part summaries


def fold_bitset(bitset: np.ndarray, num_bytes: int) -> np.ndarray:
    """A split-block bitset (uint8) folded to ``num_bytes`` (a power of two, not larger):
    block ``i`` OR-ed into block ``i * new_blocks // old_blocks``."""
    blocks, target = len(bitset) // 32, num_bytes // 32
    return np.bitwise_or.reduce(bitset.reshape(target, blocks // target, 32), axis=1).reshape(-1)


_bitwise_count = getattr(np, "bitwise_count", None)


def _too_full(bitset: np.ndarray) -> bool:
    """More than half the bits set: a summary that would rule (almost) nothing out."""
    if _bitwise_count is None:  # numpy < 2
        return int(np.unpackbits(bitset).sum()) * 2 > bitset.size * 8
    return int(_bitwise_count(bitset.view(np.uint64)).sum()) * 2 > bitset.size * 8


def _summary(col: pa.Array) -> pa.Scalar | None:
    t = col.type
    if col.null_count or len(col) == 0:
        return None  # an unknown row: keep
    flags = col.field("has_null")
    has_null = True if pc.any(flags).as_py() else (None if flags.null_count else False)
    bitsets = col.field("bitset")
    present = bitsets.drop_null() if bitsets.null_count else bitsets
    if not len(present):
        return pa.StructArray.from_arrays(
            [pa.nulls(1, t.field("bitset").type), pa.array([has_null], pa.bool_())], fields=list(t)
        )[0]
    lengths = pc.binary_length(present).to_numpy(zero_copy_only=False).astype(np.int64)
    if ((lengths < MIN_BYTES) | (lengths > MAX_BYTES) | (lengths & (lengths - 1) != 0)).any():
        return None  # a row whose filter proves nothing
    size = int(lengths.min())
    out = np.zeros(size, np.uint8)
    sizes = np.unique(lengths)
    for length in sizes:
        same = present if len(sizes) == 1 else present.filter(pa.array(lengths == length))
        same = pa.concat_arrays([same]) if same.offset else same
        offsets = same.buffers()[1]
        first = np.frombuffer(
            offsets, np.int32 if not pa.types.is_large_binary(same.type) else np.int64, count=1
        )[0]
        data = np.frombuffer(
            same.buffers()[2], np.uint8, count=len(same) * int(length), offset=int(first)
        ).reshape(len(same), int(length))
        # OR the rows in growing batches and give up as soon as the summary is too full to
        # rule anything out (filters sized per file are often a third full: a few rows do it)
        at, batch = 0, 2
        while at < len(same):
            merged = np.bitwise_or.reduce(data[at : at + batch], axis=0)
            out |= fold_bitset(merged, size)
            if _too_full(out):
                return None
            at, batch = at + batch, batch * 4
    return pa.StructArray.from_arrays(
        [pa.array([out.tobytes()], t.field("bitset").type), pa.array([has_null], pa.bool_())],
        fields=list(t),
    )[0]


# ------------------------------------------------------------------------------ effectiveness

_PAIRS = 256  # sampled file pairs for the overlap estimate
_PAIR_BYTES = 64 << 20  # at most this many bitset bytes folded for it
_FILL_BYTES = 64 << 20  # fills are measured on a random subset of files above this
_CHUNK_BLOCKS = 1 << 16
_LANES = np.arange(32)
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _block_fill(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Fraction of bits set in each 32-byte block starting at ``starts`` (in chunks, so the
    memory used stays small whatever the index size)."""
    out = np.empty(len(starts))
    for i in range(0, len(starts), _CHUNK_BLOCKS):
        chunk = starts[i : i + _CHUNK_BLOCKS]
        out[i : i + len(chunk)] = _POPCOUNT[data[chunk[:, None] + _LANES]].sum(axis=1) / 256.0
    return out


def _inserts(fill: np.ndarray) -> float:
    """Values inserted into blocks with these fills (each sets one bit in each 32-bit word)."""
    f = np.minimum(fill, 255.0 / 256.0)
    return float(np.sum(np.log1p(-f)) / math.log1p(-1.0 / 32.0))


def _fold(block_bytes: np.ndarray, blocks: int) -> np.ndarray:
    """A filter's bitset (``(z, 32)`` bytes) folded to ``blocks`` blocks."""
    z = len(block_bytes)
    if z == blocks:
        return block_bytes
    return np.bitwise_or.reduce(block_bytes.reshape(blocks, z // blocks, 32), axis=1)


def _estimate(ix: BloomFilterIndex, meta: pa.Array, rows: np.ndarray) -> Estimate:
    n = len(meta)
    bitsets = meta.field("bitset")
    offsets = bitset_offsets(bitsets)
    sizes = np.diff(offsets)
    present = valid_mask(meta) & valid_mask(bitsets)
    valid = present & (sizes >= 32) & ((sizes & (sizes - 1)) == 0)
    unknown = int(n - np.count_nonzero(valid_mask(meta) & (valid | ~valid_mask(bitsets))))
    files = np.flatnonzero(valid)
    data_buf = bitsets.buffers()[2]
    if not len(files) or data_buf is None:
        fraction = unknown / n if unknown else None  # else no file holds a value
        return Estimate(unknown, fraction)
    data = np.frombuffer(data_buf, np.uint8)
    measured = files
    if sizes[files].sum() > _FILL_BYTES:  # estimate the fills from a random subset
        shuffled = np.random.default_rng(1).permutation(files)
        measured = np.sort(
            shuffled[: max(1, int(np.searchsorted(np.cumsum(sizes[shuffled]), _FILL_BYTES)))]
        )
    nblocks = sizes[measured] // 32
    block_file = np.repeat(np.arange(len(measured)), nblocks)
    first = np.repeat(offsets[measured], nblocks)
    within = np.arange(len(block_file)) - np.repeat(np.cumsum(nblocks) - nblocks, nblocks)
    fill = _block_fill(data, first + 32 * within)
    fpp = np.bincount(block_file, weights=fill**8) / nblocks
    log_empty = np.log1p(-np.minimum(fill, 255.0 / 256.0))
    ndv = np.bincount(block_file, weights=log_empty) / math.log1p(-1.0 / 32.0)
    share = _shared_fraction(data, offsets, measured, nblocks, rows)
    nb = len(files)
    holders = 1.0 + (nb - 1) * (share or 0.0)
    mean_fpp = float(fpp.mean())
    fraction = min(1.0, (holders + (nb - holders) * mean_fpp + unknown) / n)
    target = ix.params.get("fpp", 0.01)
    saturated = mean_fpp > max(3 * target, 0.05)
    details = {
        "estimated_fpp": mean_fpp,
        "fpp": target,
        "distinct_per_file": float(ndv.mean()),
        "files_per_value": None if share is None else holders,
    }
    return Estimate(unknown, fraction, None, bool(saturated), details)


def _shared_fraction(
    data: np.ndarray, offsets: np.ndarray, files: np.ndarray, nblocks: np.ndarray, rows: np.ndarray
) -> float | None:
    """Mean over sampled pairs (A, B) of |A ∩ B| / |A|: the chance that another file holds a
    value of a file (A drawn by rows, B uniformly). None when no pair could tell (one file,
    or every sampled union too full): the caller then counts one file per value."""
    nb = len(files)
    if nb < 2:
        return None
    rng = np.random.default_rng(0)
    weights = np.maximum(rows[files], 1.0)
    pairs = min(_PAIRS, nb * (nb - 1))
    a = rng.choice(nb, size=pairs, p=weights / weights.sum())
    b = (a + rng.integers(1, nb, size=pairs)) % nb
    total, used, spent = 0.0, 0, 0

    def blocks_of(i: int) -> np.ndarray:
        start = offsets[files[i]]
        return data[start : start + 32 * nblocks[i]].reshape(nblocks[i], 32)

    for i, j in zip(a, b, strict=True):
        z = int(min(nblocks[i], nblocks[j]))
        fa, fb = _fold(blocks_of(i), z), _fold(blocks_of(j), z)
        union = fa | fb
        u_fill = _POPCOUNT[union].sum(axis=1) / 256.0
        if u_fill.mean() > 0.9:
            continue  # too full to tell overlaps apart
        na = _inserts(_POPCOUNT[fa].sum(axis=1) / 256.0)
        nbv = _inserts(_POPCOUNT[fb].sum(axis=1) / 256.0)
        if na <= 0:
            continue
        total += (na + nbv - _inserts(u_fill)) / na
        used += 1
        spent += 64 * z
        if spent > _PAIR_BYTES:
            break
    return min(1.0, max(0.0, total / used)) if used else None
