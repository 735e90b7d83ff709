"""Synthetic metadata stores for bench/scale.py, written through the store's public API.

``generate(directory, n)`` creates ``<directory>/table`` (an empty directory: the table root
the index is keyed by) and ``<directory>/store`` holding an index of ``n`` files with a
min/max index on ``ts``, a value-list index on ``app`` and a bloom index on ``req``
(bench/_scale_data.py describes the files). The metadata columns are computed vectorised in
the index kinds' own Arrow types: min/max structs from numpy bounds; value lists as a list
array built from offsets; bloom bitsets by hashing every file's real request ids with the
batch XXH64 kernel (``canonical_float_hashes``, as the index hashes a column), turning each
hash into its eight mask words with the bloomset kernel (``hash_masks``) and OR-ing the masks
of a file into its one-block (32-byte) filter, the size ``SplitBlockBloomFilter.for_ndv(16,
0.01)`` gives; the first files of each part are checked bit for bit against
``SplitBlockBloomFilter.insert_hashes``, so a bloom query answers exactly as on a real build.
Then ``MetadataStore(...).table(uri)``: ``create``, one ``write_part`` per ``PART_ROWS``
files, one ``commit`` (operation "build", with the table schema recorded as a build records
it). The calendar columns say what a pyarrow-written file gets (writer mode SESSION, no
ancient values); footer fingerprints are random.
"""

from __future__ import annotations

import json
import os
import sys
import time

import _scale_data as data
import numpy as np
import pyarrow as pa

from metaindex._native import bloomset
from metaindex.bloom import SplitBlockBloomFilter, canonical_float_hashes
from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import locate_table
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.store import (
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_FOOTER_CRC,
    OBJ_FOOTER_LEN,
    OBJ_INT96_REBASE,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    IndexDef,
    MetadataStore,
)

PART_ROWS = 65_536
FPP = 0.01
INDEXES = (MinMaxIndex("ts"), ValueListIndex("app"), BloomFilterIndex("req", fpp=FPP))
DEFS = tuple(IndexDef.of(ix) for ix in INDEXES)
BLOOM_BYTES = SplitBlockBloomFilter.for_ndv(data.ROWS_PER_FILE, FPP).num_bytes
SEED = 19


def bloom_column(first: int, count: int, check: int = 4) -> pa.StructArray:
    """One-block bitsets of files ``first ..`` over their request ids (kernels, vectorised)."""
    if BLOOM_BYTES != 32:
        raise AssertionError(
            f"the generator builds one-block filters; for_ndv gives {BLOOM_BYTES} bytes"
        )
    ids = data.request_ids(first, count)
    hashes = canonical_float_hashes(pa.array(ids.ravel()))
    masks = bloomset.hash_masks(hashes).reshape(count, data.ROWS_PER_FILE, 8)
    words = np.bitwise_or.reduce(masks, axis=1)  # (count, 8) uint32: the one block
    raw = np.ascontiguousarray(words).view(np.uint8).ravel()
    offsets = np.arange(0, 32 * count + 1, 32, dtype=np.int32)
    bitsets = pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(raw)]
    )
    for k in range(min(check, count)):
        f = SplitBlockBloomFilter.for_ndv(data.ROWS_PER_FILE, FPP)
        f.insert_hashes(hashes[k * data.ROWS_PER_FILE : (k + 1) * data.ROWS_PER_FILE])
        if f.to_bytes() != bitsets[k].as_py():
            raise AssertionError(
                f"generated bitset of file {first + k} differs from SplitBlockBloomFilter's"
            )
    return pa.StructArray.from_arrays(
        [bitsets, pa.array(np.zeros(count, np.bool_))], names=["bitset", "has_null"]
    )


def part_table(first: int, count: int, seed: int = SEED, *, mtime_shift: int = 0) -> pa.Table:
    """The metadata rows of files ``first .. first + count - 1`` (``mtime_shift``: a rewrite)."""
    rng = np.random.default_rng((seed, first, 3))
    lo, hi = data.file_bounds(first, count, seed)
    ts_type = data.SCHEMA.field("ts").type
    zeros = pa.array(np.zeros(count, np.int64))
    minmax = pa.StructArray.from_arrays(
        [pa.array(lo, ts_type), pa.array(hi, ts_type), zeros, zeros],
        names=["min", "max", "null_count", "nan_count"],
    )
    versions, k = data.file_apps(first, count, seed)
    offsets = np.concatenate([[0], np.cumsum(k)]).astype(np.int32)
    valuelist = pa.StructArray.from_arrays(
        [
            pa.ListArray.from_arrays(pa.array(offsets), data.app_names(versions)),
            pa.array(np.zeros(count, np.bool_)),
        ],
        names=["values", "has_null"],
    )
    mtime = (hi // 1000 + 60_000 + mtime_shift).astype(np.int64)
    session = pa.array(np.full(count, "SESSION", object), pa.string())
    false = pa.array(np.zeros(count, np.bool_))
    columns = {
        OBJ_NAME: data.file_names(first, count),
        OBJ_SIZE: pa.array(rng.integers(1 << 20, 128 << 20, count)),
        OBJ_MTIME: pa.array(mtime),
        OBJ_ROWS: pa.array(rng.integers(10_000, 2_000_000, count)),
        OBJ_FOOTER_LEN: pa.array(rng.integers(1_000, 20_000, count)),
        OBJ_FOOTER_CRC: pa.array(rng.integers(0, 1 << 32, count)),
        OBJ_DATETIME_REBASE: session,
        OBJ_INT96_REBASE: session,
        OBJ_ANCIENT_DATETIME: false,
        OBJ_ANCIENT_INT96: false,
        DEFS[0].storage_name: minmax,
        DEFS[1].storage_name: valuelist,
        DEFS[2].storage_name: bloom_column(first, count),
    }
    return pa.table(columns)


def table_store(directory: str):
    location = locate_table(os.path.join(directory, "table"))
    return MetadataStore(os.path.join(directory, "store")).table(location.uri)


def generate(directory: str, n: int) -> dict:
    """Write the store of ``n`` files under ``directory``; returns timings."""
    os.makedirs(os.path.join(directory, "table"), exist_ok=True)
    store = table_store(directory)
    record = schema_mod.record(data.SCHEMA, {})
    t0 = time.perf_counter()
    store.create(DEFS, record)
    make = write = 0.0
    parts = []
    for first in range(0, n, PART_ROWS):
        t1 = time.perf_counter()
        table = part_table(first, min(PART_ROWS, n - first))
        t2 = time.perf_counter()
        parts.append(store.write_part(table, DEFS))
        t3 = time.perf_counter()
        make += t2 - t1
        write += t3 - t2
    t4 = time.perf_counter()
    store.commit(0, add_parts=parts, operation="build", details=record)
    t5 = time.perf_counter()
    return {
        "files": n,
        "parts": len(parts),
        "synthesis_s": make,
        "write_part_s": write,
        "commit_s": t5 - t4,
        "total_s": t5 - t0,
    }


if __name__ == "__main__":  # python _scale_store.py DIRECTORY N   (prints the timings as JSON)
    print(json.dumps(generate(sys.argv[1], int(sys.argv[2]))))
