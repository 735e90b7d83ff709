"""A worker process of :class:`metaindex.engine.executors.LocalExecutor`.

Run as ``python -m metaindex.engine._worker``. Reads ``(fn, task)`` pickles from stdin, each
preceded by its length (8 bytes, little-endian), and answers each with a pickle of
``("ok", result)`` or ``("error", exception, formatted traceback)`` on the original stdout.
Anything the task prints goes to stderr, so it cannot corrupt the answers. Exits at EOF.

A fresh interpreter (not a fork) runs the tasks: it never shares pyarrow's thread pools or
locks with the parent, and it does not re-run the caller's ``__main__`` the way
``multiprocessing``'s spawn and forkserver methods do (which breaks scripts without an
``if __name__ == "__main__"`` guard).
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys
import traceback

from metaindex.engine.executors import read_message, write_message

_WARM = ("metaindex.engine.collect", "metaindex.parquet.writer", "cramjam", "pandas")
"""What the collection tasks (``collect.run_task``) import on first use, imported at start:
while the parent still lists the table, not in the worker's first task. pandas: pyarrow
imports it at the first ``pa.array`` / ``pa.scalar`` of Python values, which a task makes
today (its part's columns, min/max's struct scalar); drop it here when those go."""


def _answer(fn, task):
    try:
        return ("ok", fn(task))
    except BaseException as exc:  # reported to the parent, which re-raises it
        return ("error", exc, traceback.format_exc())


def _warm() -> None:
    for name in _WARM:
        try:
            importlib.import_module(name)
        except Exception:  # a task that needs it reports the error itself
            pass


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    requests = sys.stdin.buffer
    _warm()
    while True:
        message = read_message(requests)
        if message is None:
            # every answer is written and flushed: skip the interpreter's teardown (freeing
            # every module, pyarrow's pools), which the parent would wait for; stray prints
            # (sys.stdout, on stderr) flushed first
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(0)
        fn, task = message
        reply = _answer(fn, task)
        try:
            write_message(answers, reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            write_message(
                answers,
                (
                    "error",
                    RuntimeError(f"the task's {reply[0]} value cannot be pickled: {exc}"),
                    traceback.format_exc(),
                ),
            )


if __name__ == "__main__":
    main()
