"""The process's thread pool for independent pieces of work: one thread per core.

The Parquet reader and writer run whole column chunks on it (a row group's column to read, a
column to encode; the kernels release the GIL over a page's work, so two cores decode or
encode two chunks at once); the pruner reads the parts a query needs on it (each part then
reads its columns serially inside its pool thread: never nested waits).
"""

from __future__ import annotations

import os
import threading

__all__ = ["in_worker", "run_all"]

_POOL = None
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()


def _pool():
    """The process's reader / writer thread pool (one thread per core), made on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(
                max_workers=max(1, os.cpu_count() or 1),
                thread_name_prefix="metaindex",
                initializer=_mark_worker,
            )
        return _POOL


def _mark_worker() -> None:
    _IN_POOL.active = True


def in_worker() -> bool:
    """Whether this thread is one of the pool's (kernels then release the GIL even where
    that costs a little on one thread)."""
    return getattr(_IN_POOL, "active", False)


def _after_fork_in_child() -> None:
    # a forked child has none of the parent's threads: start a new pool when one is needed
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def run_all(tasks: list, use_threads: bool) -> list:
    """``[f(*args) for f, *args in tasks]``, in parallel on the pool when ``use_threads`` and
    there is more than one task (never from inside a pool thread: a task that waited on
    others could otherwise hold every worker). The first task's exception is raised, as
    typed as in a serial run."""
    if (
        not use_threads
        or len(tasks) < 2
        or (os.cpu_count() or 1) < 2
        or getattr(_IN_POOL, "active", False)
    ):
        return [f(*args) for f, *args in tasks]
    futures = [_pool().submit(f, *args) for f, *args in tasks]
    try:
        return [future.result() for future in futures]
    finally:
        for future in futures:
            future.cancel()
