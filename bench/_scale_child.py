"""One fresh query process for bench/scale.py (run as a script; do not import).

``python _scale_child.py TABLE STORE PREDICATE WARM_RUNS MODE``: imports metaindex, opens
``MetaIndex(TABLE, store=STORE)`` and prunes PREDICATE once (the cold prune), materialising
the answer (the kept paths, as the Arrow array ``PruneResult.kept_paths``); prints one JSON
line (seconds for the import and for open + prune + answer, kept files, this process's peak
RSS so far) and flushes it, so the parent
stamps the wall time of the whole process up to the answer when the line arrives. Then, if
WARM_RUNS > 0, repeats the same call WARM_RUNS times after one more (warm) and prints a
second line with the median (MODE "table": also the median of a bare recursive
``pyarrow.fs`` listing of TABLE, timed after each warm prune, the peer of the warm prune).
MODE "index": ``mi.pruner().decide(PREDICATE)`` (every indexed
file is a candidate; no listing); MODE "table": ``mi.prune(PREDICATE)`` (candidates = the
table's own listing, listed on every call). CPU times (``time.process_time``) ride along:
the process's at the answer, and the medians of the warm prunes and bare listings, figures a
shared machine's load inflates far less than wall times.
"""

import time

_t0 = time.perf_counter()
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

from metaindex import MetaIndex  # noqa: E402

_t1 = time.perf_counter()


def _peak_rss_kib() -> int:
    """This process's peak resident set (KiB): ``VmHWM``, the high-water mark of its own
    address space. (``ru_maxrss`` is no good here: Linux carries the parent's peak over a
    fork + exec into the child's, so a big parent would show as the child's peak.)"""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    table, store, predicate, warm_runs, mode = sys.argv[1:6]
    started = time.perf_counter()
    mi = MetaIndex(table, store=store)

    def prune():
        result = mi.pruner().decide(predicate) if mode == "index" else mi.prune(predicate)
        return result.kept_paths  # the answer as Arrow: no Python object per file

    kept = len(prune())
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "import_s": _t1 - _t0,
                "after_import_s": done - started,
                "kept": kept,
                "maxrss_kib": _peak_rss_kib(),
                "cpu_s": time.process_time(),  # the process's CPU so far, start included
            }
        ),
        flush=True,
    )
    runs = int(warm_runs)
    if runs <= 0:
        return
    prune()
    times, listings, cpu, listing_cpu = [], [], [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        prune()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if mode == "table":  # the peer, same process, interleaved: a bare pyarrow.fs listing
            t, c = time.perf_counter(), time.process_time()
            bare_listing(table)
            listings.append(time.perf_counter() - t)
            listing_cpu.append(time.process_time() - c)
    out = {"warm_s": statistics.median(times), "warm_cpu_s": statistics.median(cpu)}
    if listings:
        out["bare_listing_s"] = statistics.median(listings)
        out["bare_listing_cpu_s"] = statistics.median(listing_cpu)
    print(json.dumps(out), flush=True)


def bare_listing(table: str) -> list:
    """The yardstick of a warm prune: one recursive ``pyarrow.fs`` listing of the table (the
    ``FileInfo`` list, sizes and mtimes included; nothing done with it)."""
    import pyarrow.fs as pafs

    return pafs.LocalFileSystem().get_file_info(pafs.FileSelector(table, recursive=True))


main()
