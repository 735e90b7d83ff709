"""Where per-file collection tasks run.

An :class:`Executor` runs ``fn(task)`` for every task and returns the results in task order.
``fn`` is a module-level function and tasks are picklable, so an executor may ship them to
other processes or machines: :class:`LocalExecutor` uses local worker processes,
:class:`SerialExecutor` the calling thread, and the Spark layer adds one that runs the tasks as
Spark tasks (each task then writes its part file from the executor, so the metadata store must
be reachable from there).

Progress: ``map(..., progress=callback)`` calls ``callback(done, total)`` in the calling
process after each finished task (in completion order).
"""

from __future__ import annotations

import abc
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "Executor",
    "SerialExecutor",
    "LocalExecutor",
    "default_executor",
    "Progress",
    "read_message",
    "write_message",
]

Progress = Callable[[int, int], None]
_HEADER = struct.Struct("<Q")


def read_message(stream):
    """One length-prefixed (8 bytes, little-endian) pickle from ``stream``; None at EOF."""
    header = stream.read(_HEADER.size)
    if not header:
        return None
    if len(header) != _HEADER.size:
        raise EOFError("truncated message header")
    (size,) = _HEADER.unpack(header)
    body = stream.read(size)
    if len(body) != size:
        raise EOFError(f"truncated message: {len(body)} of {size} bytes")
    return pickle.loads(body)


def write_message(stream, obj) -> None:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)))
    stream.write(body)
    stream.flush()


class Executor(abc.ABC):
    """Runs independent tasks; the one method an engine integration implements."""

    @property
    def parallelism(self) -> int:
        """How many tasks run at once (a hint for splitting work)."""
        return 1

    def task_threads(self, num_tasks: int) -> bool:
        """Whether ``num_tasks`` tasks may spread their reads over the process's threads (a
        row group's columns decoded on all its cores): only where one task has the machine to
        itself. False here: tasks that run side by side (worker processes, Spark task slots)
        already use every core, and threads would only add their hand-offs."""
        return False

    def prepare(self, delay: float = 0.0) -> None:
        """A hint that a :meth:`map` follows soon: an executor may start what it needs for it
        now, or in ``delay`` seconds unless a ``map`` or :meth:`release` comes first
        (:class:`LocalExecutor` starts its worker processes), so that the start overlaps
        the caller's own work (a build's listing). Nothing here. A caller that prepares calls
        :meth:`release` when done, whether it ran a ``map`` or not."""
        return None

    def release(self) -> None:
        """Give up what :meth:`prepare` started that no :meth:`map` used. Nothing here."""
        return None

    @abc.abstractmethod
    def map(self, fn: Callable, tasks: Sequence, *, progress: Progress | None = None) -> list:
        """``[fn(t) for t in tasks]``, possibly in parallel; results in task order.

        The first exception a task raises is raised here (other tasks may or may not have
        run).
        """


class SerialExecutor(Executor):
    """Every task in the calling thread, one after the other, each on one core (its reads
    are single-threaded)."""

    def map(self, fn, tasks, *, progress=None) -> list:
        out = []
        for task in tasks:
            out.append(fn(task))
            if progress is not None:
                progress(len(out), len(tasks))
        return out

    def __repr__(self) -> str:
        return "SerialExecutor()"


def _spawn_worker() -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # a session of its own: a Ctrl-C at the terminal interrupts this process only, which then
    # stops the workers (they would each print a KeyboardInterrupt traceback)
    return subprocess.Popen(
        [sys.executable, "-m", "metaindex.engine._worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def _stop_workers(workers: list) -> None:
    """Kill and reap ``workers`` (emptying the list), closing their pipes."""
    procs = list(workers)
    workers.clear()
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:  # a write buffered for a worker that is gone
                    pass


class LocalExecutor(Executor):
    """A pool of local worker processes, started for each :meth:`map` call (or by
    :meth:`prepare`, ahead of it).

    Workers are fresh interpreters (``python -m metaindex.engine._worker``) fed pickled tasks
    over a pipe: safe next to pyarrow's threads (no fork), and unlike ``multiprocessing``'s
    spawn they do not re-run the caller's ``__main__``, so plain scripts work. A single task
    runs in the calling process: starting a worker would cost more than it saves.

    Args:
        max_workers: worker processes (default: the CPUs this process may use).
    """

    def __init__(self, max_workers: int | None = None):
        if max_workers is None:
            try:
                max_workers = len(os.sched_getaffinity(0))
            except AttributeError:  # not on Linux
                max_workers = os.cpu_count() or 1
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be an int >= 1, not {max_workers!r}")
        self.max_workers = max_workers
        self._ready: list[subprocess.Popen] = []  # started by prepare(), for the next map
        self._ready_lock = threading.Lock()
        self._pending: threading.Timer | None = None  # prepare(delay)'s start, not yet run
        # workers prepared and never used nor released are killed with the executor, or at
        # interpreter exit
        self._finalizer = weakref.finalize(self, _stop_workers, self._ready)

    @property
    def parallelism(self) -> int:
        return self.max_workers

    def prepare(self, delay: float = 0.0) -> None:
        """Start the worker processes of the next :meth:`map` now, or in ``delay`` seconds
        unless a ``map`` or :meth:`release` comes first (a build of a few files is over
        before its workers would have started: none are started for nothing). Their
        interpreter start and imports then overlap the caller's work; :meth:`release` stops
        them if no ``map`` takes them. Nothing with one worker."""
        if self.max_workers == 1:
            return
        if delay > 0:
            with self._ready_lock:
                if self._pending is None and not self._ready:
                    self._pending = threading.Timer(delay, self._start_ready)
                    self._pending.daemon = True
                    self._pending.start()
            return
        self._start_ready()

    def _start_ready(self) -> None:
        with self._ready_lock:
            while len(self._ready) < self.max_workers:
                self._ready.append(_spawn_worker())

    def _settle(self) -> None:
        """Cancel a pending delayed start, or wait for it to finish starting them."""
        with self._ready_lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()
            pending.join()

    def release(self) -> None:
        self._settle()
        with self._ready_lock:
            _stop_workers(self._ready)

    def _workers(self, n: int) -> list:
        """``n`` workers: prepared ones first (the rest of those stopped), then new ones."""
        self._settle()
        with self._ready_lock:
            taken = self._ready[:n]
            del self._ready[:n]
            _stop_workers(self._ready)
        try:
            while len(taken) < n:
                taken.append(_spawn_worker())
        except BaseException:
            _stop_workers(taken)
            raise
        return taken

    def task_threads(self, num_tasks: int) -> bool:
        """A single task runs in the calling process with the workers' cores to itself."""
        return num_tasks == 1 and self.max_workers > 1

    def __repr__(self) -> str:
        return f"LocalExecutor(max_workers={self.max_workers})"

    def map(self, fn, tasks, *, progress=None) -> list:
        tasks = list(tasks)
        if len(tasks) <= 1 or self.max_workers == 1:
            self.release()  # the task runs here, with the cores to itself
            return SerialExecutor().map(fn, tasks, progress=progress)
        results: list = [None] * len(tasks)
        state: dict[str, Any] = {"next": 0, "done": 0, "error": None}
        lock = threading.Lock()
        workers = self._workers(min(self.max_workers, len(tasks)))

        def feed(proc) -> None:
            while True:
                with lock:
                    i = state["next"]
                    if i >= len(tasks) or state["error"] is not None:
                        if i >= len(tasks) and state["error"] is None:
                            _finish(proc)  # no more work: it exits while the others run
                        return
                    state["next"] += 1
                try:
                    write_message(proc.stdin, (fn, tasks[i]))
                    reply = read_message(proc.stdout)
                    if reply is None:
                        raise RuntimeError(
                            f"worker process {proc.pid} exited (status "
                            f"{proc.wait()}) while running task {i}"
                        )
                except (OSError, EOFError, pickle.PickleError, RuntimeError) as exc:
                    reply = ("error", exc, "")
                with lock:
                    if reply[0] != "ok":
                        if state["error"] is None:
                            state["error"] = reply
                        return
                    results[i] = reply[1]
                    state["done"] += 1
                    done = state["done"]
                if progress is not None:
                    progress(done, len(tasks))

        threads = [threading.Thread(target=feed, args=(p,), daemon=True) for p in workers]
        stop = False
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except BaseException:  # KeyboardInterrupt: stop the workers now, not after their tasks
            stop = True
            raise
        finally:
            for proc in workers:  # all told to stop before any is waited for
                if stop or state["error"] is not None:
                    proc.kill()
                else:
                    _finish(proc)
            for proc in workers:
                proc.wait()
            for t in threads:  # each sees its worker's end of output and returns
                if t.ident is not None:
                    t.join()
            for proc in workers:
                if proc.stdout is not None:
                    proc.stdout.close()
                if proc.stdin and not proc.stdin.closed:
                    proc.stdin.close()
        if state["error"] is not None:
            _, exc, trace = state["error"]
            if trace and hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"in a LocalExecutor worker:\n{trace}")
            raise exc
        return results


def _finish(proc) -> None:
    """Close a worker's input: it exits at the end of it."""
    try:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
    except OSError:  # it is gone already
        pass


@contextlib.contextmanager
def prepared(executor, delay: float = 0.0, wanted: bool = True):
    """``executor.prepare(delay)`` for the ``with`` block and ``executor.release()`` after it,
    however it ends (nothing when not ``wanted`` or for an executor without ``prepare``)."""
    if not wanted or not hasattr(executor, "prepare"):
        yield executor
        return
    executor.prepare(delay)
    try:
        yield executor
    finally:
        executor.release()


def default_executor() -> Executor:
    """The executor builds and refreshes use when none is given: :class:`LocalExecutor`."""
    return LocalExecutor()
