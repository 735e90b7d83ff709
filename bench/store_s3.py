"""Pruning with the metadata store on S3 next to the same store on local disk.

The S3 side is moto's S3 server on 127.0.0.1 (tests/s3server.py), so the figures show the
request pattern's cost (one LIST of ``_log/`` per prune, plus GETs of the log entry, checkpoint
and parts on a cold open) over loopback HTTP with a Python server, not real S3 latency (a real
bucket adds ~10-30 ms per request, more across regions).

Same synthetic index as bench/prune.py (min/max + value list + bloom over 1 k / 10 k indexed
files, one part per 10 k files, the same three-index predicate, candidates given as a pyarrow
table), written to a local directory and to an S3 bucket:

* warm: repeated ``MetaIndex.prune`` in one process (snapshot cached; each call lists ``_log/``
  to notice new commits);
* cold: a fresh process opening the index (imports excluded): list the log, read the entries
  and parts, verify, decode, build the arrays, prune.

Usage: python bench/store_s3.py [--quick]
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import prune as base  # noqa: E402 - bench/prune.py: the synthetic index and predicate
from _common import machine, median_time, print_table  # noqa: E402

from metaindex.api import MetaIndex  # noqa: E402
from metaindex.engine import schema as schema_mod  # noqa: E402
from metaindex.engine.listing import locate_table  # noqa: E402
from metaindex.store import IndexDef, MetadataStore  # noqa: E402
from tests.s3server import MotoServer  # noqa: E402

QUICK = "--quick" in sys.argv
SIZES = (1_000,) if QUICK else (1_000, 10_000)
RUNS = 3 if QUICK else 7


def synthesise(table_root: str, store_root: str, n: int) -> list:
    """The bench/prune.py index of ``n`` files in the store at ``store_root``."""
    uri = locate_table(table_root).uri
    table_store = MetadataStore(store_root).table(uri)
    defs = [IndexDef(ix.name, ix.cols, ix.params) for ix in base.INDEXES]
    record = schema_mod.record(base.SCHEMA, {})
    table_store.create(defs, record)
    rng = np.random.default_rng(n)
    parts = [
        table_store.write_part(base._part_table(s, min(base.PART_ROWS, n - s), rng), defs)
        for s in range(0, n, base.PART_ROWS)
    ]
    table_store.commit(0, add_parts=parts, operation="build", details=record)
    return [(f"f{i:07d}.parquet", 1 << 20, 1_700_000_000_000) for i in range(n)]


def warm(table_root: str, store_root: str, files) -> float:
    mi = MetaIndex(table_root, store=store_root)
    mi.prune(base.PREDICATE, files=files)
    return median_time(lambda: mi.prune(base.PREDICATE, files=files), RUNS)


COLD = textwrap.dedent("""
    import pickle, sys, time
    sys.path[:0] = {path!r}
    import prune as bench
    from metaindex.api import MetaIndex
    files = pickle.load(open({files!r}, "rb"))
    t0 = time.perf_counter()
    r = MetaIndex({root!r}, store={store!r}).prune(bench.PREDICATE, files=files)
    print(time.perf_counter() - t0, r.stats.kept_files)
""")


def cold(tmp: str, table_root: str, store_root: str, files) -> float:
    path = os.path.join(tmp, "files.pickle")
    with open(path, "wb") as f:
        pickle.dump(files, f)
    code = COLD.format(path=[HERE, *sys.path], files=path, root=table_root, store=store_root)
    times = []
    for _ in range(max(3, RUNS // 2)):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        times.append(float(out.stdout.split()[0]))
    return float(np.median(times))


def main() -> None:
    print(f"machine: {machine()}")
    print(f"predicate: {base.PREDICATE}\n")
    tmp = tempfile.mkdtemp(prefix="metaindex-bench-s3-")
    try:
        with MotoServer() as s3:
            os.environ.update(s3.env)
            bucket = s3.bucket()
            rows = []
            for n in SIZES:
                table_root = os.path.join(tmp, f"table{n}")
                os.makedirs(table_root)
                figures = {}
                for where, store_root in (
                    ("local", os.path.join(tmp, "store")),
                    ("s3", f"s3://{bucket}/store"),
                ):
                    files = base._files_table(synthesise(table_root, store_root, n))
                    figures[where] = (
                        warm(table_root, store_root, files),
                        cold(tmp, table_root, store_root, files),
                    )
                (lw, lc), (sw, sc) = figures["local"], figures["s3"]
                rows.append([n, lw * 1e3, sw * 1e3, sw / lw, lc * 1e3, sc * 1e3, sc / lc])
        print("prune (ms, median): store on local disk vs on S3 (moto, 127.0.0.1)")
        print_table(
            [
                "indexed files",
                "warm local",
                "warm S3",
                "S3/local",
                "cold local",
                "cold S3",
                "S3/local",
            ],
            rows,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
