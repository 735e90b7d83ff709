"""Pruning and building with metaindex.MetaIndex.

1. Prune time over 1 k / 10 k / 100 k indexed files with a three-index predicate
   (``ts`` min/max range AND ``city`` value list AND ``user`` bloom filter):
   * warm: the snapshot's metadata already in memory (repeated queries in one process);
     "head check" is the per-query check of the store's head (a listing of the log and
     the parts directories, ``MetaIndex.snapshot`` with nothing changed), included in "prune";
     "eval" is the evaluation alone (``metaindex.index.evaluate`` over every file), "prune"
     the whole ``MetaIndex.prune`` call with the candidate files given as a pyarrow table
     (``files=``, as the Spark layer passes its listing): log check, bind, evaluate, match
     candidates by name/size/mtime, stats; "+paths" adds materialising the kept list;
     "tuples" gives the candidates as a list of ``(path, size, mtime)`` tuples instead;
   * cold: a fresh process opening the index: replay the log, read and verify the parts,
     decode them, build the arrays, then prune (imports excluded); plaintext and PME-encrypted
     store (AES-GCM, footer + index columns encrypted).
   The stores are synthesised (per file: 200 user ids, 5 of 100 cities, a 1000-wide ts range)
   with the index kinds' own metadata types and bloom filters, then committed through the
   store like a build; no data files are needed because candidates are given.
2. Metadata bytes per file per index kind, from the part files' column chunk sizes (zstd).
3. Build throughput (files/s, one process: SerialExecutor) over real Parquet files written by
   pyarrow, min/max from footer statistics vs from scanning the column.
4. Listing: ``list_files`` over a directory of 10 k (empty) files in 10 partitions, next to
   pyarrow's own recursive ``get_file_info`` it is built on.

Usage: python bench/prune.py [--quick]   (--quick: 1 k / 10 k files only, fewer runs)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import machine, median_time, print_table

from metaindex.api import MetaIndex, StoreEncryption
from metaindex.bloom import SplitBlockBloomFilter, canonical_float_hashes
from metaindex.engine import schema as schema_mod
from metaindex.engine.executors import SerialExecutor
from metaindex.engine.listing import list_files, locate_table
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex, evaluate
from metaindex.store import (
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    EncryptionLabels,
    IndexDef,
    MetadataStore,
)

QUICK = "--quick" in sys.argv
SIZES = (1_000, 10_000) if QUICK else (1_000, 10_000, 100_000)
RUNS = 3 if QUICK else 7
PART_ROWS = 10_000
USERS_PER_FILE = 200
PREDICATE = "ts >= 500000 AND ts < 900000 AND city IN ('c7', 'c42') AND user = 1234567"
INDEXES = (
    MinMaxIndex("ts"),
    ValueListIndex("city", max_values=50),
    BloomFilterIndex("user", fpp=0.01),
)
SCHEMA = pa.schema([("ts", pa.int64()), ("city", pa.string()), ("user", pa.int64())])
KEYS = {"footer": b"0123456789abcdef", "idx": b"fedcba9876543210"}


def kms_factory(config):
    from metaindex.crypto import InMemoryKms

    return InMemoryKms(dict(KEYS))


ENCRYPTION = StoreEncryption(kms_factory, "footer", index_keys="idx")


def _bloom_column(rng, count: int, ndv: int) -> pa.Array:
    users = rng.integers(0, 10**9, (count, ndv))
    hashes = canonical_float_hashes(pa.array(users.ravel())).reshape(count, ndv)
    bitsets = []
    for row in hashes:
        f = SplitBlockBloomFilter.for_ndv(ndv, 0.01)
        f.insert_hashes(row)
        bitsets.append(f.to_bytes())
    return pa.StructArray.from_arrays(
        [pa.array(bitsets, pa.binary()), pa.array(np.zeros(count, np.bool_))],
        names=["bitset", "has_null"],
    )


def _part_table(start: int, count: int, rng) -> pa.Table:
    k = np.arange(start, start + count, dtype=np.int64)
    lo = rng.permutation(k) * 1000 + rng.integers(0, 500, count)  # files not in ts order
    minmax = pa.StructArray.from_arrays(
        [
            pa.array(lo),
            pa.array(lo + 999),
            pa.array(np.zeros(count, np.int64)),
            pa.array(np.zeros(count, np.int64)),
        ],
        names=["min", "max", "null_count", "nan_count"],
    )
    cities = rng.integers(0, 100, (count, 5))
    offsets = pa.array(np.arange(0, 5 * count + 1, 5, dtype=np.int32))
    values = pa.array([f"c{c}" for c in cities.ravel()], pa.string())
    valuelist = pa.StructArray.from_arrays(
        [pa.ListArray.from_arrays(offsets, values), pa.array(np.zeros(count, np.bool_))],
        names=["values", "has_null"],
    )
    bloom = _bloom_column(rng, count, USERS_PER_FILE)
    defs = [IndexDef.of(ix) for ix in INDEXES]
    return pa.table(
        {
            OBJ_NAME: pa.array([f"f{i:07d}.parquet" for i in k]),
            OBJ_SIZE: pa.array(np.full(count, 1 << 20, np.int64)),
            OBJ_MTIME: pa.array(np.full(count, 1_700_000_000_000, np.int64)),
            OBJ_ROWS: pa.array(np.full(count, 10_000, np.int64)),
            defs[0].storage_name: minmax,
            defs[1].storage_name: valuelist,
            defs[2].storage_name: bloom,
        }
    )


def synthesise(base: str, n: int, encrypted: bool) -> tuple:
    """A table directory (empty) and a store holding ``n`` indexed files."""
    root = os.path.join(base, f"table{n}{'e' if encrypted else ''}")
    os.makedirs(root, exist_ok=True)
    store_dir = os.path.join(base, "store")
    location = locate_table(root)
    key_access = ENCRYPTION.key_access() if encrypted else None
    table_store = MetadataStore(store_dir, key_access=key_access).table(location.uri)
    labels = EncryptionLabels("footer") if encrypted else None
    defs = [IndexDef(ix.name, ix.cols, ix.params, "idx" if encrypted else None) for ix in INDEXES]
    record = schema_mod.record(SCHEMA, {})
    table_store.create(defs, record, encryption=labels)
    rng = np.random.default_rng(n)
    parts = [
        table_store.write_part(_part_table(s, min(PART_ROWS, n - s), rng), defs, encryption=labels)
        for s in range(0, n, PART_ROWS)
    ]
    table_store.commit(0, add_parts=parts, operation="build", details=record)
    files = [(f"f{i:07d}.parquet", 1 << 20, 1_700_000_000_000) for i in range(n)]
    return root, store_dir, files


def _files_table(files: list) -> pa.Table:
    return pa.table(
        {
            "path": [f[0] for f in files],
            "size": [f[1] for f in files],
            "mtime": [f[2] for f in files],
        }
    )


def warm(root: str, store_dir: str, files: list, encrypted: bool) -> dict:
    from metaindex.expr import bind, parse_sql

    mi = MetaIndex(root, store=store_dir, encryption=ENCRYPTION if encrypted else None)
    table = _files_table(files)
    result = mi.prune(PREDICATE, files=table)
    ctx = mi.pruning_context()
    bound = bind(parse_sql(PREDICATE), ctx.schema)
    n = len(ctx.names)
    return {
        "kept": result.stats.kept_files,
        "head": median_time(mi.snapshot, RUNS),
        "eval": median_time(lambda: evaluate(bound, ctx.indexes, ctx.metadata, n), RUNS),
        "prune": median_time(lambda: mi.prune(PREDICATE, files=table), RUNS),
        "paths": median_time(lambda: mi.prune(PREDICATE, files=table).kept, RUNS),
        "tuples": median_time(lambda: mi.prune(PREDICATE, files=files), RUNS),
    }


COLD = textwrap.dedent("""
    import sys, time, pickle
    sys.path[:0] = {path!r}
    import prune as bench
    from metaindex.api import MetaIndex
    files = pickle.load(open({files!r}, "rb"))
    t0 = time.perf_counter()
    mi = MetaIndex({root!r}, store={store!r},
                   encryption=bench.ENCRYPTION if {encrypted!r} else None)
    r = mi.prune(bench.PREDICATE, files=files)
    print(time.perf_counter() - t0, r.stats.kept_files)
""")


def cold(base: str, root: str, store_dir: str, files: list, encrypted: bool) -> float:
    import pickle

    path = os.path.join(base, "files.pickle")
    with open(path, "wb") as f:
        pickle.dump(_files_table(files), f)
    code = COLD.format(
        path=[os.path.dirname(os.path.abspath(__file__)), *sys.path],
        files=path,
        root=root,
        store=store_dir,
        encrypted=encrypted,
    )
    times = []
    for _ in range(max(3, RUNS // 2)):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.split()[0]))
    return float(np.median(times))


def metadata_bytes(base: str) -> list:
    """Bytes per file per index kind (column chunks, zstd), at two bloom sizes."""
    rows = []
    bloom_col = IndexDef.of(INDEXES[2]).storage_name
    for label, ndv in (
        ("200 users, 5 cities / file", USERS_PER_FILE),
        ("10 k users, 5 cities / file", 10_000),
    ):
        rng = np.random.default_rng(1)
        table = _part_table(0, 1000, rng)
        table = table.set_column(
            table.column_names.index(bloom_col), bloom_col, _bloom_column(rng, 1000, ndv)
        )
        path = os.path.join(base, "sizes.parquet")
        pq.write_table(table, path, compression="zstd")
        meta = pq.ParquetFile(path).metadata
        sizes: dict = {}
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                chunk = meta.row_group(rg).column(c)
                top = chunk.path_in_schema.split(".")[0]
                sizes[top] = sizes.get(top, 0) + chunk.total_compressed_size
        d = [IndexDef.of(ix).storage_name for ix in INDEXES]
        obj = sum(sizes[c] for c in (OBJ_NAME, OBJ_SIZE, OBJ_MTIME, OBJ_ROWS))
        rows.append([label, obj / 1000, sizes[d[0]] / 1000, sizes[d[1]] / 1000, sizes[d[2]] / 1000])
    return rows


def build_throughput(base: str) -> list:
    root = os.path.join(base, "data")
    os.makedirs(root)
    n = 60 if QUICK else 200
    rng = np.random.default_rng(0)
    for k in range(n):
        t = pa.table(
            {
                "ts": rng.integers(0, 10**12, 100_000),
                "city": pa.array([f"c{c}" for c in rng.integers(0, 100, 100_000)]),
                "user": rng.integers(0, 10**9, 100_000),
            }
        )
        pq.write_table(t, os.path.join(root, f"f{k:04d}.parquet"), row_group_size=25_000)
    rows = []
    for label, footer, builder in (
        ("min/max ts, footer statistics", True, lambda b: b.add_min_max_index("ts")),
        ("min/max ts, column scan", False, lambda b: b.add_min_max_index("ts")),
        (
            "min/max + value list + bloom, footer",
            True,
            lambda b: (
                b.add_min_max_index("ts")
                .add_value_list_index("city")
                .add_bloom_filter_index("user")
            ),
        ),
    ):
        times = []
        for _ in range(1 if QUICK else 3):
            store = tempfile.mkdtemp(dir=base)
            mi = MetaIndex(root, store=store)
            t0 = time.perf_counter()
            builder(mi.index_builder()).build(executor=SerialExecutor(), footer_statistics=footer)
            times.append(time.perf_counter() - t0)
            shutil.rmtree(store)
        rows.append([label, n, n / float(np.median(times))])
    return rows


def listing_time(base: str) -> tuple:
    import pyarrow.fs as pafs

    root = os.path.join(base, "many")
    for d in range(10):
        os.makedirs(os.path.join(root, f"day={d}"))
        for k in range(1000):
            open(os.path.join(root, f"day={d}", f"f{k}.parquet"), "wb").close()
    location = locate_table(root)
    raw = median_time(
        lambda: location.filesystem.get_file_info(pafs.FileSelector(root, recursive=True)), RUNS
    )
    return median_time(lambda: list_files(location), RUNS), raw


def main() -> None:
    print(f"machine: {machine()}")
    print(f"predicate: {PREDICATE}\n")
    base = tempfile.mkdtemp(prefix="metaindex-bench-prune-")
    try:
        rows = []
        for n in SIZES:
            for encrypted in (False, True):
                root, store_dir, files = synthesise(base, n, encrypted)
                w = warm(root, store_dir, files, encrypted)
                c = cold(base, root, store_dir, files, encrypted)
                rows.append(
                    [
                        n,
                        "PME" if encrypted else "plain",
                        w["kept"],
                        w["head"] * 1e3,
                        w["eval"] * 1e3,
                        w["prune"] * 1e3,
                        w["paths"] * 1e3,
                        w["tuples"] * 1e3,
                        c * 1e3,
                    ]
                )
        print("prune (ms, median)")
        print_table(
            [
                "indexed files",
                "store",
                "kept",
                "head check",
                "warm eval",
                "warm prune",
                "warm +paths",
                "warm, tuples",
                "cold prune",
            ],
            rows,
        )
        print("\nmetadata bytes per file (zstd column chunks)")
        print_table(
            [
                "data per file",
                "obj_* columns",
                "minmax(ts)",
                "valuelist(city)",
                "bloom(user) fpp 0.01",
            ],
            metadata_bytes(base),
        )
        print("\nbuild throughput, one process (100 k rows x 3 columns per file)")
        print_table(["indexes", "files", "files/s"], build_throughput(base))
        ours, raw = listing_time(base)
        print(
            f"\nlist_files over 10 k files in 10 partitions: {ours * 1e3:.1f} ms "
            f"(pyarrow get_file_info alone: {raw * 1e3:.1f} ms)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
