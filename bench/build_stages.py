"""Where one core's time goes in a build of many small Parquet files (issue 32's build ratio).

Builds ``bench/scale.py --build-only``'s three indexes (min/max on ``ts``, value list on
``app``, bloom on ``req``; ``--kinds minmax``: min/max alone) of the first ``--files`` files
of the ``--real`` table in this process on one core (``SerialExecutor``), twice (the first
pass untimed: warm page cache and caches), with a CPU timer (``time.process_time``) around
each stage of the per-file collection (:mod:`metaindex.engine.collect`):

* open: ``ParquetFormat.open`` (file opened, footer read and decoded into Python objects);
* footer min/max: ``_footer_minmax`` (statistics decoded, the min/max scalar made);
* column read: ``ParquetReader.read_row_groups`` (the value list's and bloom's columns);
* collectors: ``_scan`` less the column read (value-list set, bloom hashing, their scalars);
* still listed: the stat after a file is read; part write: ``TableStore.write_part``;
* other: the rest of ``run_task`` (the per-file glue, conversions, the part's columns).

Beside them, per file on the same core: ``pyarrow.parquet.read_metadata`` of every file in a
loop (the acceptance yardstick), and the I/O floor a batch kernel would keep (``os.open``,
``fstat``, three ``pread`` s of the tail, footer and chunks, ``close``). Stages nest inside
``run_task``; the timers add ~1 µs a call. CPU µs a file, the machine's load printed beside.

Usage: python bench/build_stages.py [--files 1000] [--kinds all|minmax] [--dir DIR]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import struct
import sys
import time

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import load_average, machine  # noqa: E402
from scale import subset_table  # noqa: E402

from metaindex import MetaIndex  # noqa: E402
from metaindex.engine import collect  # noqa: E402
from metaindex.engine.executors import SerialExecutor  # noqa: E402
from metaindex.formats import directory, parquet  # noqa: E402
from metaindex.store import table as store_table  # noqa: E402

STAGES = (
    (parquet.ParquetFormat, "open", "open"),
    (collect, "_footer_minmax", "footer min/max"),
    (parquet.ParquetReader, "read_row_groups", "column read"),
    (collect, "_scan", "scan"),
    (directory.DirectoryFormat, "still_listed", "still listed"),
    (store_table.TableStore, "write_part", "part write"),
    (collect, "run_task", "run_task"),
)


def timed(spent: collections.Counter) -> None:
    """Wrap each stage's function with a CPU timer adding to ``spent[label]``."""
    for owner, name, label in STAGES:
        inner = getattr(owner, name)

        def wrapper(*args, _inner=inner, _label=label, **kwargs):
            t0 = time.process_time()
            try:
                return _inner(*args, **kwargs)
            finally:
                spent[_label] += time.process_time() - t0

        setattr(owner, name, wrapper)


def build(table: str, store: str, kinds: str) -> None:
    shutil.rmtree(store, ignore_errors=True)
    builder = MetaIndex(table, store=store).index_builder().add_min_max_index("ts")
    if kinds == "all":
        builder = builder.add_value_list_index("app").add_bloom_filter_index("req", fpp=0.01)
    result = builder.build(executor=SerialExecutor())
    if result.failed:
        raise AssertionError(f"the build failed on {len(result.failed)} files")


def io_floor(paths: list) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            n = struct.unpack("<i", os.pread(fd, 8, size - 8)[:4])[0]
            os.pread(fd, n, size - 8 - n)
            os.pread(fd, size - 12 - n, 4)
        finally:
            os.close(fd)


def per_file(step, n: int) -> float:
    """CPU µs a file of ``step()``, after one untimed call."""
    step()
    t0 = time.process_time()
    step()
    return (time.process_time() - t0) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kinds", choices=("all", "minmax"), default="all")
    parser.add_argument("--dir", default="/tmp/metaindex-scale")
    args = parser.parse_args()
    table = subset_table(args.dir, args.files)
    paths = sorted(os.path.join(table, name) for name in os.listdir(table))
    n = len(paths)
    store = os.path.join(os.path.dirname(table), "store-build-stages")
    print(f"machine: {machine()}\nstart: {load_average()}", flush=True)
    footers = per_file(lambda: [pq.read_metadata(p) for p in paths], n)
    floor = per_file(lambda: io_floor(paths), n)
    spent: collections.Counter = collections.Counter()
    timed(spent)
    build(table, store, args.kinds)  # untimed: warm caches
    spent.clear()
    t0 = time.process_time()
    build(table, store, args.kinds)
    total = (time.process_time() - t0) / n * 1e6
    spent = collections.Counter({k: v / n * 1e6 for k, v in spent.items()})
    spent["collectors"] = spent.pop("scan", 0.0) - spent["column read"]
    named = ("open", "footer min/max", "column read", "collectors", "still listed", "part write")
    spent["other"] = spent.pop("run_task") - sum(spent[k] for k in named)
    print(f"{n} files, {args.kinds}: build {total:.0f} us a file on one core")
    for k in (*named, "other"):
        print(f"  {k:15} {spent[k]:6.0f} us  {spent[k] / total:5.1%}")
    print(f"read_metadata loop {footers:.0f} us a file: build = {total / footers:.2f}x (target 3)")
    print(f"I/O floor (open, fstat, 3 preads, close) {floor:.1f} us a file")
    print(f"end: {load_average()}")


if __name__ == "__main__":
    main()
