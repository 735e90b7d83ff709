"""One fresh build process for ``bench/scale.py --build-only`` (run as a script; do not import).

``python _scale_build_child.py TABLE STORE KINDS MODE``: builds an index of TABLE into a fresh
STORE with the metaindex first on the path (the parent puts the tree under test there) and
prints one JSON line. KINDS ``all``: min/max on ``ts``, a value list on ``app`` and a bloom
filter on ``req`` (the ``--real`` build; the value list and the bloom read both columns of every
file); ``minmax``: min/max on ``ts`` only (from the footer statistics: no column is read, like
for like with ``read_metadata``). MODE ``local``: the build on the local process pool (as many
workers as cores), ``{"build_s": wall seconds, "build_pool_cpu_s": CPU seconds of this process
and its workers}``; MODE ``serial``: the build in this process on one core
(``SerialExecutor``) and a ``pyarrow.parquet.read_metadata`` loop over the same files,
``{"build_cpu_s", "footers_cpu_s"}`` in CPU seconds (``time.process_time``), each after one
untimed pass (a warm page cache and warm caches of the tree, as in a build of many files).
"""

import json
import os
import resource
import shutil
import sys
import time

import pyarrow.parquet as pq

from metaindex import MetaIndex
from metaindex.engine.executors import LocalExecutor, SerialExecutor

FPP = 0.01


def build(table: str, store: str, kinds: str, executor) -> int:
    shutil.rmtree(store, ignore_errors=True)
    builder = MetaIndex(table, store=store).index_builder().add_min_max_index("ts")
    if kinds == "all":
        builder = builder.add_value_list_index("app").add_bloom_filter_index("req", fpp=FPP)
    result = builder.build(executor=executor)
    if result.failed:
        raise AssertionError(f"the build failed on {len(result.failed)} files")
    return result.entries_added


def cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


def main() -> None:
    table, store, kinds, mode = sys.argv[1:5]
    if mode == "local":
        c0, t0 = cpu(), time.perf_counter()
        files = build(table, store, kinds, LocalExecutor())
        took = {"build_s": time.perf_counter() - t0, "build_pool_cpu_s": cpu() - c0}
        print(json.dumps({**took, "files": files}), flush=True)
        return
    paths = sorted(os.path.join(table, n) for n in os.listdir(table))
    out = {}
    for name, step in (
        ("footers_cpu_s", lambda: [pq.read_metadata(p) for p in paths]),
        ("build_cpu_s", lambda: build(table, store, kinds, SerialExecutor())),
    ):
        step()
        t0 = time.process_time()
        step()
        out[name] = time.process_time() - t0
    print(json.dumps({**out, "files": len(paths)}), flush=True)


if __name__ == "__main__":
    main()
