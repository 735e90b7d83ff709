"""Metadata at scale: pruning, refresh and compaction of indexes over 100 k to 10 M files.

The table (bench/_scale_data.py): one file per minute of an appended, time-ordered table, with
a min/max index on ``ts`` (each file a 90 s range: clustered), a value-list index on ``app``
(1 to 3 of the application versions per file, one version per 1,024 files: values drift with
time) and a bloom index on ``req`` (16 request ids unique to each file, one 32-byte filter).

Synthetic stores (100 k, 1 M, 10 M files; bench/_scale_store.py has the details): generated
through the store's own writer, ``MetadataStore(dir).table(uri)`` then ``create``, one
``write_part`` per 65,536 files and one ``commit`` (a build), with every metadata column
computed vectorised in the index kinds' Arrow types and the bloom bitsets made from the real
ids by the XXH64 and bloomset kernels (checked bit for bit against
``SplitBlockBloomFilter``), so every predicate answers as on a real build. There are no data
files: the table root is an empty directory. Stores are cached under
``--dir``/``synthetic-v<store format>-g<generator>-<size>/`` and reused by later runs.

Measured per size (median of the runs given):

* cold prune: a fresh ``python`` process (bench/_scale_child.py) runs ``import metaindex``,
  ``MetaIndex(table, store=...)``, ``mi.pruner().decide(predicate).kept`` (every indexed file
  a candidate) and reports; "process" is the wall time of the whole process up to the answer
  (interpreter start included), "import→answer" from the start of ``import metaindex`` to the
  answer, "after import" the open + prune + answer part alone; "peak RSS" that process's
  peak resident set at the answer (``VmHWM``, not ``ru_maxrss``: that one inherits the parent's);
* warm prune: the same call repeated in that process (median of ``--warm-runs``), which
  includes the per-query check of the store's head;
* predicates: a selective one per index kind (``ts`` range of ~0.1 % of the files; one
  ``app`` version; one ``req`` id) and an unselective one (``ts >=`` the first file: keeps
  every file);
* refresh of 1 % new files, store side, on a hard-linked copy of the store (parts and log
  entries are immutable, so the cache is untouched): the metadata rows of 1 % new files
  (appended after the last one) and of 0.1 % existing files rewritten (random files among the
  newest 10 %, new mtime) are synthesised untimed, then timed: ``write_part`` of them in
  parts of <= 65,536 rows plus ``commit`` (operation "refresh": the store reads its state,
  validates the parts, supersedes the rewritten files' rows, writes the entry). This is what a
  refresh pays beyond listing the table and reading the new files;
* compaction: ``TableStore.compact()`` (default target) on that copy after the refresh,
  the whole call (plan, read, write, commit).

``--real``: a real table of 100 k small Parquet files (16 rows each, the same model; written
once by pyarrow in a process pool and cached under ``--dir``/``real-100k-g<generator>/``)
indexed end to end by ``metaindex.MetaIndex`` (listing, footers, three indexes, commit; a
fresh store each run), then cold and warm ``mi.prune(predicate)`` with the table's own listing
as candidates (listed on every call), plus the listing alone. It also prints issue 32's
acceptance ratios, each against its peer measured in this run: the warm prune against a bare
recursive ``pyarrow.fs`` listing of the table (timed in the query process, after each warm
prune; medians), the cold prune from a fresh process (import included), and the build against
``pyarrow.parquet.read_metadata`` of every file in a loop over a pool of as many processes as
the build's executor has (the same cores): medians of ``--runs`` builds and loops, each
after an untimed pass over the files, so both find them in the page cache (``warm_files``).
``--reuse-store`` queries the index an earlier
``--real`` run built there (and reports that run's build figures); ``--compare-tree DIR``
also queries with another checkout's metaindex (``/work/main``: before / after), its query
processes interleaved with this tree's so both see the same load. On a loaded machine the
CPU-time figures printed beside them (the cold process's CPU up to the answer, the warm prune's
CPU against the bare listing's) are the steadier ones.

``--build-only``: only that yardstick, on the first ``--files`` files of the real table (hard
links), for the ``--real`` build's three indexes or (``--kinds minmax``) min/max alone (from
the footer statistics: like for like with ``read_metadata``): medians of ``--runs`` of the
build on the local pool against the footer loop timed right after it, and of the one-core CPU
time per file of a build and of a ``read_metadata`` loop, and the CPU time of both pools
(processes and workers; load-proof, pool start included) (fresh processes,
bench/_scale_build_child.py); with ``--compare-tree``, the two trees' runs interleaved.

Usage: python bench/scale.py [--sizes 100k,1m,10m] [--quick] [--real] [--dir DIR]
(``--real`` alone runs only the real table; with ``--sizes`` both, in one table)
       [--cold-runs N] [--warm-runs N] [--predicates minmax,valuelist,bloom,unselective]
       [--regenerate] [--no-maintenance] [--reuse-store] [--compare-tree DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _scale_data as data  # noqa: E402
import _scale_store as gen  # noqa: E402
from _common import load_average, machine, median_time, print_table  # noqa: E402

from metaindex.store import FORMAT_VERSION  # noqa: E402

GENERATOR = 1
SIZES = {"100k": 100_000, "1m": 1_000_000, "10m": 10_000_000}
REAL_FILES = 100_000
INDEX_LABELS = ("minmax", "valuelist", "bloom", "unselective")


def _env(tree: str | None = None) -> dict:
    """The environment of the processes the bench starts: this tree (or ``tree``, another
    checkout of metaindex) first on the path, and bytecode caches allowed (an installed
    package has its ``.pyc`` files; without them every cold process would compile
    metaindex's sources again, about 2.5 s of CPU here)."""
    root = tree or os.path.dirname(HERE)
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_package(tree: str | None = None) -> None:
    """Write the ``.pyc`` files of this tree's (or ``tree``'s) metaindex, as installing it
    does."""
    import compileall

    compileall.compile_dir(os.path.join(tree or os.path.dirname(HERE), "metaindex"), quiet=1)


def _size_of(path: str) -> int:
    total = 0
    for base, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, n)) for n in names)
    return total


# ------------------------------------------------------------------------------ stores


def synthetic_store(directory: str, label: str, regenerate: bool = False) -> tuple:
    """(store directory, generation record), generating it on first use (or when asked)."""
    where = os.path.join(directory, f"synthetic-v{FORMAT_VERSION}-g{GENERATOR}-{label}")
    marker = os.path.join(where, "generated.json")
    if os.path.exists(marker) and not regenerate:
        with open(marker) as fh:
            return where, json.load(fh)
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    print(f"  generating the {label} store in {where} ...", flush=True)
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "_scale_store.py"), where, str(SIZES[label])],
        capture_output=True,
        text=True,
        env=_env(),
    )
    if out.returncode:
        raise RuntimeError(f"generating {label} failed:\n{out.stderr}")
    record = json.loads(out.stdout.strip().splitlines()[-1])
    record["store_bytes"] = _size_of(os.path.join(where, "store"))
    with open(marker, "w") as fh:
        json.dump(record, fh)
    return where, record


# ------------------------------------------------------------------------------ queries


def query_process(
    table: str, store: str, predicate: str, warm_runs: int, mode: str, tree: str | None = None
) -> dict:
    """One fresh process (bench/_scale_child.py): cold figures, and warm if asked; with
    ``tree``, that checkout's metaindex answers."""
    cmd = [
        sys.executable,
        os.path.join(HERE, "_scale_child.py"),
        table,
        store,
        predicate,
        str(warm_runs),
        mode,
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tree)
    )
    first = proc.stdout.readline()
    wall = time.perf_counter() - started
    rest = proc.stdout.read()
    err = proc.stderr.read()
    if proc.wait() or not first:
        raise RuntimeError(f"query process failed ({predicate}):\n{err}")
    result = json.loads(first)
    result["process_s"] = wall
    for line in rest.splitlines():
        result.update(json.loads(line))
    return result


def measure_compared(
    table: str,
    store: str,
    predicates: dict,
    cold_runs: int,
    warm_runs: int,
    mode: str,
    trees: list,
) -> list:
    """For each of ``trees`` (None: this tree), {predicate name: {kept, process_s,
    import_answer_s, after_import_s, maxrss_kib, warm_s}}: medians over ``cold_runs`` fresh
    processes, the first also measuring warm; the trees' processes interleaved (tree 1, tree
    2, tree 1, ...) so that each sees the same machine load."""
    every: list = [{} for _ in trees]
    for name, predicate in predicates.items():
        done: list = [[] for _ in trees]
        for k in range(cold_runs):
            for t, tree in enumerate(trees):
                done[t].append(
                    query_process(table, store, predicate, warm_runs if k == 0 else 0, mode, tree)
                )
        for out, runs in zip(every, done, strict=True):
            out[name] = _summary(runs, name)
    return every


def _summary(runs: list, name: str) -> dict:
    """The medians of one predicate's query processes (the first one's warm figures)."""
    kept = {r["kept"] for r in runs}
    if len(kept) != 1:
        raise AssertionError(f"{name}: runs disagree on the kept files: {kept}")
    for r in runs:
        r["import_answer_s"] = r["import_s"] + r["after_import_s"]
    return {
        "kept": kept.pop(),
        "warm_s": runs[0].get("warm_s"),
        "bare_listing_s": runs[0].get("bare_listing_s"),
        "warm_cpu_s": runs[0].get("warm_cpu_s"),
        "bare_listing_cpu_s": runs[0].get("bare_listing_cpu_s"),
        **{
            k: statistics.median(r[k] for r in runs if k in r)
            if any(k in r for r in runs)
            else None
            for k in ("process_s", "import_answer_s", "after_import_s", "maxrss_kib", "cpu_s")
        },
    }


# ------------------------------------------------------------------------------ maintenance


def _refresh_rows(n: int) -> pa.Table:
    """The metadata rows a 1 % refresh commits: n // 100 new files after the last one, and
    n // 1000 rewritten ones (random among the newest 10 %, mtime moved on)."""
    new = gen.part_table(n, max(n // 100, 1))
    newest = max(n // 10, 1)
    rewritten = gen.part_table(n - newest, newest, mtime_shift=3_600_000)
    rng = np.random.default_rng(n)
    pick = np.sort(rng.choice(newest, max(n // 1000, 1), replace=False))
    return pa.concat_tables([new, rewritten.take(pa.array(pick))])


def maintenance(where: str, n: int) -> dict:
    """Refresh of 1 % and compaction, timed on a hard-linked copy of the store."""
    from metaindex.engine.listing import locate_table
    from metaindex.store import MetadataStore

    copy = os.path.join(where, "work-store")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(where, "store"), copy, copy_function=os.link)
    try:
        store = MetadataStore(copy).table(locate_table(os.path.join(where, "table")).uri)
        rows = _refresh_rows(n)
        base = store.latest_version()
        t0 = time.perf_counter()
        parts = [
            store.write_part(rows.slice(s, gen.PART_ROWS), gen.DEFS)
            for s in range(0, rows.num_rows, gen.PART_ROWS)
        ]
        t1 = time.perf_counter()
        store.commit(
            base,
            add_parts=parts,
            operation="refresh",
            details={"new_files": n // 100, "changed_files": n // 1000},
        )
        t2 = time.perf_counter()
        before = (
            len(store.snapshot().part_paths)
            if hasattr(store.snapshot(), "part_paths")
            else len(store.snapshot().parts)
        )
        t3 = time.perf_counter()
        store.compact()
        t4 = time.perf_counter()
        snap = store.snapshot()
        after = len(snap.part_paths) if hasattr(snap, "part_paths") else len(snap.parts)
        return {
            "refresh_write_s": t1 - t0,
            "refresh_commit_s": t2 - t1,
            "refresh_s": t2 - t0,
            "refresh_rows": rows.num_rows,
            "compact_s": t4 - t3,
            "parts_before": before,
            "parts_after": after,
        }
    finally:
        shutil.rmtree(copy, ignore_errors=True)


# ------------------------------------------------------------------------------ real table


def _write_files(args) -> int:
    import pyarrow.parquet as pq

    root, first, count = args
    for i in range(first, first + count):
        pq.write_table(data.file_rows(i, gen.SEED), os.path.join(root, f"part-{i:09d}.parquet"))
    return count


def real_table(directory: str) -> str:
    """The table root of 100 k small Parquet files, written on first use."""
    from concurrent.futures import ProcessPoolExecutor

    where = os.path.join(directory, f"real-100k-g{GENERATOR}")
    root = os.path.join(where, "table")
    marker = os.path.join(where, "written.json")
    if os.path.exists(marker):
        return root
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(root)
    print(f"  writing {REAL_FILES} Parquet files into {root} ...", flush=True)
    t0 = time.perf_counter()
    chunks = [(root, s, min(2000, REAL_FILES - s)) for s in range(0, REAL_FILES, 2000)]
    with ProcessPoolExecutor(max(os.cpu_count() or 1, 1)) as pool:
        written = sum(pool.map(_write_files, chunks))
    with open(marker, "w") as fh:
        json.dump({"files": written, "seconds": time.perf_counter() - t0}, fh)
    return root


def build_real(root: str, store: str, runs: int = 3) -> dict:
    """Index the real table into a fresh ``store`` (three indexes, the local executor) and
    read every footer with pyarrow on as many processes, ``runs`` times each, alternating,
    both after an untimed pass over the files (:func:`warm_files`): ``{build_s, footers_s,
    workers}`` (medians), also written to ``store``/built.json (``--reuse-store`` reads it
    back). The last build's index stays in ``store``."""
    from metaindex import MetaIndex
    from metaindex.engine.executors import LocalExecutor

    executor = LocalExecutor()
    workers = executor.max_workers
    builds, loops = [], []
    for k in range(runs):
        shutil.rmtree(store, ignore_errors=True)
        print(f"  building the index of {REAL_FILES} files ({k + 1}/{runs}) ...", flush=True)
        mi = MetaIndex(root, store=store)
        warm_files(root, workers)
        t0 = time.perf_counter()
        result = (
            mi.index_builder()
            .add_min_max_index("ts")
            .add_value_list_index("app")
            .add_bloom_filter_index("req", fpp=gen.FPP)
            .build(executor=executor)
        )
        builds.append(time.perf_counter() - t0)
        if result.failed or result.entries_added != REAL_FILES:
            raise AssertionError(
                f"the build indexed {result.entries_added} files, failed on {len(result.failed)}"
            )
        loops.append(footer_loop(root, workers))
        print(
            f"  built in {builds[-1]:.2f} s, footers read in {loops[-1]:.2f} s ({load_average()})",
            flush=True,
        )
    record = {
        "build_s": statistics.median(builds),
        "footers_s": statistics.median(loops),
        "workers": workers,
        "runs": runs,
    }
    with open(os.path.join(store, "built.json"), "w") as fh:
        json.dump(record, fh)
    return record


def run_real(
    directory: str,
    cold_runs: int,
    warm_runs: int,
    chosen: list,
    reuse_store: bool = False,
    compare_tree: str | None = None,
    build_runs: int = 3,
) -> tuple:
    from metaindex.engine.listing import list_files, locate_table

    root = real_table(directory)
    store = os.path.join(os.path.dirname(root), f"store-v{FORMAT_VERSION}")
    marker = os.path.join(store, "built.json")
    if reuse_store and os.path.exists(marker):
        with open(marker) as fh:
            built = json.load(fh)
        print(f"  reusing the index in {store} (build not timed in this run)", flush=True)
    else:
        built = build_real(root, store, build_runs)
    build_s, footers_s, workers = (built.get(k) for k in ("build_s", "footers_s", "workers"))
    location = locate_table(root)
    listing_s = median_time(lambda: list_files(location), 3)
    predicates = {k: v for k, v in data.predicates(REAL_FILES).items() if k in chosen}
    trees = [None] if compare_tree is None else [None, compare_tree]
    if compare_tree is not None:
        compile_package(compare_tree)
    measured = measure_compared(root, store, predicates, cold_runs, warm_runs, "table", trees)
    queries = measured[0]
    rows = _rows(
        f"{REAL_FILES // 1000} k real",
        chosen,
        queries,
        [
            f"build {build_s:.0f} s" if build_s else "build reused",
            f"listing {listing_s * 1e3:.0f} ms",
        ],
    )
    ratios = {
        "build_s": build_s,
        "footers_s": footers_s,
        "workers": workers,
        "build_ratio": build_s / footers_s if build_s and footers_s else None,
        "list_files_s": listing_s,
        "queries": _acceptance(queries),
    }
    if compare_tree is not None:
        rows += _rows(f"{compare_tree}", chosen, measured[1], [])
        ratios["compared"] = {"tree": compare_tree, "queries": _acceptance(measured[1])}
    return rows, ratios


def subset_table(directory: str, files: int) -> str:
    """A table of the first ``files`` files of the real table (hard links, made once)."""
    root = real_table(directory)
    if files >= REAL_FILES:
        return root
    where = os.path.join(directory, f"real-{files}-g{GENERATOR}", "table")
    if not os.path.isdir(where) or len(os.listdir(where)) != files:
        shutil.rmtree(where, ignore_errors=True)
        os.makedirs(where)
        for name in sorted(os.listdir(root))[:files]:
            os.link(os.path.join(root, name), os.path.join(where, name))
    return where


def build_process(table: str, store: str, kinds: str, mode: str, tree: str | None) -> dict:
    """One fresh build process (bench/_scale_build_child.py) with ``tree``'s metaindex."""
    cmd = [sys.executable, os.path.join(HERE, "_scale_build_child.py"), table, store, kinds, mode]
    # run in the tree: the pool's workers (python -m) import metaindex from the working
    # directory first, which must be the tree under test
    root = tree or os.path.dirname(HERE)
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(tree), cwd=root)
    if done.returncode:
        raise RuntimeError(f"build process failed ({tree or 'this tree'}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def build_compared(table: str, kinds: str, runs: int, trees: list) -> list:
    """Per tree (None: this tree): medians over ``runs`` of the build on the local pool
    (wall) against the footer loop on as many processes, timed right after it, and of the
    one-core CPU time per file of a build and of a ``read_metadata`` loop; the trees' runs
    interleaved (tree 1, tree 2, tree 1, ...) so that each sees the same machine load."""
    from metaindex.engine.executors import LocalExecutor

    workers = LocalExecutor().max_workers
    # one store per run: two runs at once (a shared machine) must not build into the same one
    store = os.path.join(os.path.dirname(table), f"store-build-only-{os.getpid()}")
    seen: list = [
        {k: [] for k in ("build_s", "footers_s", "build_pool_cpu_s", "footers_pool_cpu_s")}
        | {"build_us": [], "footers_us": []}
        for _ in trees
    ]
    for k in range(runs):
        for t, tree in enumerate(trees):
            label = tree or "this tree"
            warm_files(table, workers)
            local = build_process(table, store, kinds, "local", tree)
            footers_s, footers_cpu = _footer_loop(table, workers)
            warm_files(table, 1)
            serial = build_process(table, store, kinds, "serial", tree)
            n = serial["files"]
            seen[t]["build_s"].append(local["build_s"])
            seen[t]["footers_s"].append(footers_s)
            seen[t]["build_pool_cpu_s"].append(local["build_pool_cpu_s"])
            seen[t]["footers_pool_cpu_s"].append(footers_cpu)
            seen[t]["build_us"].append(serial["build_cpu_s"] / n * 1e6)
            seen[t]["footers_us"].append(serial["footers_cpu_s"] / n * 1e6)
            print(
                f"  run {k + 1} [{label}]: build {local['build_s']:.2f} s / footer loop "
                f"{footers_s:.2f} s; one core {seen[t]['build_us'][-1]:.0f} / "
                f"{seen[t]['footers_us'][-1]:.0f} us a file ({load_average()})",
                flush=True,
            )
    shutil.rmtree(store, ignore_errors=True)
    out = []
    for tree, got in zip(trees, seen, strict=True):
        med = {k: statistics.median(v) for k, v in got.items()}
        out.append(
            {
                "tree": tree or "this tree",
                "kinds": kinds,
                "files": len(os.listdir(table)),
                "workers": workers,
                **med,
                "build_ratio": med["build_s"] / med["footers_s"],
                "cpu_ratio": med["build_us"] / med["footers_us"],
                "pool_cpu_ratio": med["build_pool_cpu_s"] / med["footers_pool_cpu_s"],
            }
        )
    return out


def _acceptance(queries: dict) -> dict:
    return {
        k: {
            "warm_s": q["warm_s"],
            "bare_listing_s": q.get("bare_listing_s"),
            "warm_ratio": q["warm_s"] / q["bare_listing_s"],
            "cold_import_answer_s": q["import_answer_s"],
            "cold_process_s": q["process_s"],
            "cold_cpu_s": q["cpu_s"],
            "warm_cpu_ratio": q["warm_cpu_s"] / q["bare_listing_cpu_s"]
            if q.get("warm_cpu_s") and q.get("bare_listing_cpu_s")
            else None,
        }
        for k, q in queries.items()
    }


def _read_footers(paths: list) -> int:
    import pyarrow.parquet as pq

    for path in paths:
        pq.read_metadata(path)
    return len(paths)


def footer_loop(root: str, workers: int) -> float:
    """The build's yardstick: ``pyarrow.parquet.read_metadata`` of every file in a loop, the
    files split in ``workers`` slices over a pool of as many processes (the build's cores);
    wall time, pool start included, after one untimed pass (warm page cache, as the build)."""
    return _footer_loop(root, workers)[0]


def _footer_loop(root: str, workers: int) -> tuple:
    """:func:`footer_loop`'s wall time and the CPU time of its pool's processes."""
    import resource
    from concurrent.futures import ProcessPoolExecutor

    def ended_cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    slices = warm_files(root, workers)
    c0, t0 = ended_cpu(), time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        done = sum(pool.map(_read_footers, slices))
    elapsed, cpu = time.perf_counter() - t0, ended_cpu() - c0
    if done != sum(map(len, slices)):
        raise AssertionError(f"read {done} footers of {sum(map(len, slices))}")
    return elapsed, cpu


def warm_files(root: str, workers: int) -> list:
    """One untimed ``read_metadata`` pass over every file of ``root`` (on ``workers``
    processes), so that what is timed next (a build or the footer loop) finds the files in
    the page cache: this machine's kernel reclaims idle page cache (DAMON), and a build timed
    on a cold cache measured 19.9 s where a warm one took 7.3 s. Returns the files in
    ``workers`` slices."""
    from concurrent.futures import ProcessPoolExecutor

    paths = sorted(os.path.join(root, n) for n in os.listdir(root))
    slices = [paths[k::workers] for k in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_read_footers, slices))
    return slices


def print_ratios(ratios: dict) -> None:
    """The acceptance ratios of issue 32, all from this run."""
    if ratios["build_ratio"] is not None:
        _print_build(ratios)
    compared = ratios.get("compared")
    for label, queries in [("", ratios["queries"])] + (
        [(f"[{compared['tree']}] ", compared["queries"])] if compared else []
    ):
        _print_acceptance(label, queries)
    print(json.dumps(ratios))


def _print_build(ratios: dict) -> None:
    print(
        f"\nbuild {ratios['build_s']:.1f} s / footer loop {ratios['footers_s']:.1f} s "
        f"({ratios['workers']} processes) = {ratios['build_ratio']:.2f}x (target <= 3)"
    )


def _print_acceptance(label: str, queries: dict) -> None:
    for name, q in queries.items():
        print(
            f"{label}{name}: warm prune {q['warm_s'] * 1e3:.0f} ms / bare pyarrow.fs listing "
            f"{q['bare_listing_s'] * 1e3:.0f} ms = {q['warm_ratio']:.2f}x (target <= 1.3); "
            f"cold import->answer {q['cold_import_answer_s']:.2f} s, process "
            f"{q['cold_process_s']:.2f} s (target <= 1.0)"
        )
        if q.get("warm_cpu_ratio") is not None:
            print(
                f"{label}{name}: in CPU time (load-proof): warm / bare listing "
                f"{q['warm_cpu_ratio']:.2f}x, cold process {q['cold_cpu_s']:.2f} s"
            )


# ------------------------------------------------------------------------------ main


def _rows(label: str, chosen: list, queries: dict, notes: list) -> list:
    """Table rows of one size: a row per predicate, the notes down the last column."""
    rows = []
    for k in range(max(len(chosen), len(notes))):
        note = notes[k] if k < len(notes) else None
        if k >= len(chosen):
            rows.append(["", "", "", "", "", "", "", "", note])
            continue
        q = queries[chosen[k]]
        rows.append(
            [
                label if k == 0 else "",
                chosen[k],
                q["kept"],
                q["process_s"],
                q["import_answer_s"],
                q["after_import_s"],
                None if q["warm_s"] is None else q["warm_s"] * 1e3,
                q["maxrss_kib"] / 1024,
                note,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", help="synthetic sizes (default 100k,1m,10m; none with --real unless given)"
    )
    parser.add_argument("--quick", action="store_true", help="100 k only")
    parser.add_argument(
        "--real",
        action="store_true",
        help="the real 100 k-file table, end to end (alone, or after --sizes)",
    )
    parser.add_argument("--dir", default="/tmp/metaindex-scale")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--warm-runs", type=int, default=7)
    parser.add_argument(
        "--predicates",
        default=",".join(INDEX_LABELS),
        help="which predicates to measure (default: all)",
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help="write the synthetic stores again (after a store change that kept the format version)",
    )
    parser.add_argument(
        "--reuse-store",
        action="store_true",
        help="--real: query the index a previous run built (its build figures reported again)",
    )
    parser.add_argument(
        "--compare-tree",
        help="--real: also query with another checkout's metaindex (e.g. main), interleaved",
    )
    parser.add_argument(
        "--no-maintenance", action="store_true", help="skip the refresh and compaction measurements"
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="only the build against the read_metadata loop, on the first --files files of the "
        "real table (with --compare-tree: both trees, interleaved); no queries",
    )
    parser.add_argument("--files", type=int, default=REAL_FILES, help="--build-only: table size")
    parser.add_argument(
        "--kinds",
        choices=("all", "minmax"),
        default="all",
        help="--build-only: the --real build's three indexes, or min/max from the footers only",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="builds timed (--real; --build-only: per tree)"
    )
    args = parser.parse_args()
    if args.build_only:
        os.makedirs(args.dir, exist_ok=True)
        trees = [None] if args.compare_tree is None else [None, args.compare_tree]
        for tree in trees:
            compile_package(tree)
        print(f"machine: {machine()}")
        print(f"start: {load_average()}", flush=True)
        table = subset_table(args.dir, args.files)
        for got in build_compared(table, args.kinds, args.runs, trees):
            print(
                f"[{got['tree']}] {got['files']} files, {got['kinds']}: build "
                f"{got['build_s']:.2f} s / footer loop {got['footers_s']:.2f} s "
                f"({got['workers']} processes) = {got['build_ratio']:.2f}x; one core "
                f"{got['build_us']:.0f} / {got['footers_us']:.0f} us a file = "
                f"{got['cpu_ratio']:.2f}x (target <= 3); CPU of the pools "
                f"{got['build_pool_cpu_s']:.2f} / {got['footers_pool_cpu_s']:.2f} s = "
                f"{got['pool_cpu_ratio']:.2f}x"
            )
            print(json.dumps(got))
        print(f"end: {load_average()}")
        return
    sizes = args.sizes or ("" if args.real else "100k,1m,10m")
    labels = ["100k"] if args.quick else [s.strip().lower() for s in sizes.split(",") if s]
    for label in labels:
        if label not in SIZES:
            parser.error(f"unknown size {label!r}; choose from {', '.join(SIZES)}")
    chosen = [p.strip() for p in args.predicates.split(",")]
    for name in chosen:
        if name not in INDEX_LABELS:
            parser.error(f"unknown predicate {name!r}; choose from {', '.join(INDEX_LABELS)}")
    os.makedirs(args.dir, exist_ok=True)
    compile_package()
    print(f"machine: {machine()}")
    print(f"store format {FORMAT_VERSION}; start: {load_average()}")
    headers = [
        "indexed files",
        "predicate",
        "kept",
        "cold: process s",
        "cold: import→answer s",
        "of which after import s",
        "warm ms",
        "peak RSS MiB",
        "store",
    ]
    rows = []
    for label in labels:
        n = SIZES[label]
        where, record = synthetic_store(args.dir, label, args.regenerate)
        print(
            f"  {label}: {record['parts']} parts, {record['store_bytes'] / 2**20:.0f} MiB, "
            f"generated in {record['total_s']:.1f} s; querying ...",
            flush=True,
        )
        predicates = {k: v for k, v in data.predicates(n).items() if k in chosen}
        queries = measure_compared(
            os.path.join(where, "table"),
            os.path.join(where, "store"),
            predicates,
            args.cold_runs,
            args.warm_runs,
            "index",
            [None],
        )[0]
        maint = None if args.no_maintenance else maintenance(where, n)
        notes = [
            f"{record['parts']} parts, {record['store_bytes'] / 2**20:.0f} MiB",
            f"generated {record['total_s']:.0f} s",
        ]
        if maint is not None:
            notes += [
                f"refresh 1 %: {maint['refresh_s']:.2f} s (write "
                f"{maint['refresh_write_s']:.2f} + commit {maint['refresh_commit_s']:.2f})",
                f"compact: {maint['compact_s']:.1f} s ({maint['parts_before']} -> "
                f"{maint['parts_after']} parts)",
            ]
        rows.extend(_rows(label, chosen, queries, notes))
        print(f"  {label} done ({load_average()})", flush=True)
    ratios = None
    if args.real:
        real_rows, ratios = run_real(
            args.dir,
            args.cold_runs,
            args.warm_runs,
            chosen,
            args.reuse_store,
            args.compare_tree,
            args.runs,
        )
        rows.extend(real_rows)
    print(f"end: {load_average()}\n")
    print_table(headers, rows)
    if ratios is not None:
        print_ratios(ratios)


if __name__ == "__main__":
    main()
