"""Build, refresh and prune orchestration, independent of any query engine.

* :mod:`~metaindex.engine.listing` — where a table lives (its root on a filesystem); which
  files it has and how each is read is its formats' answer (:mod:`metaindex.formats`)
* :mod:`~metaindex.engine.diff` — new / changed / deleted files against a snapshot
* :mod:`~metaindex.engine.collect` — per-file index metadata, read through the table's data
  format; a task writes one part file
* :mod:`~metaindex.engine.executors` — where tasks run: local process pool, serial, pluggable
* :mod:`~metaindex.engine.build`, :mod:`~metaindex.engine.refresh`,
  :mod:`~metaindex.engine.prune` — the operations behind ``metaindex.MetaIndex``
* the decision of :mod:`~metaindex.engine.prune` is made of
  :mod:`~metaindex.engine.session` (the session settings a predicate depends on),
  :mod:`~metaindex.engine.conjuncts` (split, bind, drop), :mod:`~metaindex.engine.context`
  (a snapshot's pruning view), :mod:`~metaindex.engine.candidates` (the files asked about)
  and :mod:`~metaindex.engine.calendar` (the rebase guard)
"""

from metaindex.engine.diff import Diff, diff
from metaindex.engine.listing import (
    DataFile,
    Listing,
    TableLocation,
    list_files,
    locate_table,
)
from metaindex.engine.prune import PruneResult, PruneStats

__all__ = [
    "BuildResult",
    "PruneResult",
    "PruneStats",
    "Executor",
    "LocalExecutor",
    "SerialExecutor",
    "DataFile",
    "Listing",
    "TableLocation",
    "list_files",
    "locate_table",
    "Diff",
    "diff",
]


_LAZY = {
    "BuildResult": "metaindex.engine.build",
    "Executor": "metaindex.engine.executors",
    "LocalExecutor": "metaindex.engine.executors",
    "SerialExecutor": "metaindex.engine.executors",
}


def __getattr__(name: str):
    # the build side (collection tasks, process pools) is imported on first use: a prune
    # from a fresh process does not pay for it
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'metaindex.engine' has no attribute {name!r}")
