"""Run the engine's per-file collection tasks as Spark tasks.

::

    from metaindex import MetaIndex
    from metaindex.spark import SparkExecutor

    MetaIndex("/data/events").index_builder().add_min_max_index("temp") \\
        .build(executor=SparkExecutor(spark))

Each task becomes one Spark task (one partition of ``sc.parallelize``): the Python worker on
an executor opens the data files itself, collects their metadata with our kernels and writes
its own part file into the metadata store, then returns a small result (part path, file
names) to the driver, which makes the one commit. The data and the store must therefore be
reachable from the executors under the same paths or URIs, and metaindex must be importable
by their Python workers.

Errors: a task catches the exception its function raised, pickles it and raises it again as
a marker-carrying error, so Spark still retries the task (``spark.task.maxFailures``) and the
driver re-raises the original exception type and message, with the worker's traceback as a
note. An error that carries no marker (a worker that crashed, a result that cannot be
pickled) is raised as :class:`SparkTaskError` with Spark's message.

Progress: the job runs in a helper thread under its own job group while the calling thread
polls ``sc.statusTracker()`` and calls ``progress(done, total)`` (so the callback runs in the
caller's thread, as the ``Executor`` contract says). Interrupting the caller cancels the job.

Workers: before its first job on a SparkContext, :meth:`SparkExecutor.map` runs one tiny task
that imports metaindex (its kernels included) in a Python worker. Where that fails on a local
master whose worker Python nobody chose, the workers are switched to the driver's own
interpreter (``sys.executable``) and checked again; otherwise :class:`SparkWorkerError` says to
set ``PYSPARK_PYTHON`` — instead of a worker traceback from every task.

Classic PySpark only (it needs ``SparkContext``); under Spark Connect, :class:`SparkExecutor`
raises a ``MetaIndexError`` naming the local executor instead.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import re
import sys
import threading
import traceback
import uuid

from metaindex.engine.executors import Executor, Progress
from metaindex.errors import MetaIndexError

__all__ = ["SparkExecutor", "SparkTaskError", "SparkWorkerError", "check_workers"]

_MARK = "@@metaindex-task-error@@"
_POLL_SECONDS = 0.2
_TRACE_CHARS = 4000


class SparkTaskError(MetaIndexError, RuntimeError):
    """A Spark task failed in a way that did not carry the task's own exception back."""


class SparkWorkerError(SparkTaskError):
    """Spark's Python workers cannot import metaindex (set ``PYSPARK_PYTHON``); found before
    a build's first job by :func:`check_workers`."""


_log = logging.getLogger("metaindex.spark")
_LOCAL_MASTER = re.compile(r"^local(\[[^\]]*\])?$")  # workers run beside this driver
_checked_lock = threading.Lock()
_checked: dict = {}  # id(SparkContext) -> (SparkContext, worker Python that imports metaindex)


def _worker_probe():
    """A function Spark pickles by value (it is local), so that a worker without metaindex can
    still run it: (worker Python, None) or (worker Python, why metaindex does not import)."""

    def probe(_):
        import sys as worker_sys

        try:
            import metaindex  # noqa: F401
            import metaindex._native.thrift  # noqa: F401 - the compiled kernels too
        except Exception as e:  # noqa: BLE001 - reported to the driver
            return worker_sys.executable, f"{type(e).__name__}: {e}"
        return worker_sys.executable, None

    return probe


def _probe(sc) -> tuple:
    """(worker Python or None, None when metaindex imports, else why not)."""
    try:
        return sc.parallelize([0], 1).map(_worker_probe()).collect()[0]
    except Exception as e:  # noqa: BLE001 - the worker could not even start
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return None, f"the Python worker failed ({first[:300]})"


def _chosen_python(sc) -> bool:
    """Whether the user named the workers' Python (``PYSPARK_PYTHON``, spark.pyspark.python)."""
    from metaindex.spark.config import WORKER_PYTHON_CONF

    return bool(os.environ.get("PYSPARK_PYTHON")) or bool(
        sc.getConf().get(WORKER_PYTHON_CONF, None)
    )


def check_workers(sc) -> None:
    """Make sure ``sc``'s Python workers can import metaindex (checked once per context).

    On a ``local``/``local[N]`` master (workers started by this driver's JVM) where nobody
    chose the workers' Python (no ``PYSPARK_PYTHON``, no ``spark.pyspark.python``), a failing
    default is replaced by the driver's (``sys.executable``, which imports metaindex), with a
    log message.

    Raises:
        SparkWorkerError: the workers cannot import metaindex (message: the worker Python,
            the import error, and to set ``PYSPARK_PYTHON``).
    """
    with _checked_lock:
        known = _checked.get(id(sc))
        if known is not None and known[0] is sc:
            return
    python, why = _probe(sc)
    if (
        why is not None
        and _LOCAL_MASTER.match(str(sc.master))
        and not _chosen_python(sc)
        and sc.pythonExec != sys.executable
    ):
        _log.warning(
            "metaindex: Spark's Python workers (%s) cannot import metaindex (%s); "
            "using the driver's Python %s for them",
            sc.pythonExec,
            why,
            sys.executable,
        )
        sc.pythonExec = sys.executable
        python, why = _probe(sc)
    if why is not None:
        raise SparkWorkerError(
            f"Spark's Python workers cannot import metaindex (worker Python "
            f"{python or sc.pythonExec}: {why}): install metaindex on every executor, or set "
            f"PYSPARK_PYTHON (or spark.pyspark.python) before the SparkContext starts to a "
            f"Python that has it, e.g. {sys.executable}"
        )
    with _checked_lock:
        _checked[id(sc)] = (sc, python)


def _encode_error(exc: BaseException) -> str:
    """``exc`` pickled between markers, for the message of the error a worker raises."""
    trace = traceback.format_exc()[-_TRACE_CHARS:]
    try:
        body = pickle.dumps((exc, trace), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(body)  # an exception that cannot come back whole is sent as text
    except Exception:  # noqa: BLE001 - any pickling failure
        body = pickle.dumps((RuntimeError(f"{type(exc).__name__}: {exc}"), trace))
    return _MARK + base64.b64encode(body).decode("ascii") + _MARK


def _decode_error(message: str):
    """``(exception, worker traceback)`` from a Spark error message, or None."""
    start = message.find(_MARK)
    if start < 0:
        return None
    end = message.find(_MARK, start + len(_MARK))
    if end < 0:
        return None
    try:
        return pickle.loads(base64.b64decode(message[start + len(_MARK) : end]))
    except Exception:  # noqa: BLE001 - a mangled payload: fall back to the message
        return None


class _WorkerError(Exception):
    """Raised in the Spark worker; its message carries the task's pickled exception."""


def _run_partition(fn, items):
    """The partition function: ``[(i, fn(task))]`` for the partition's ``(i, task)`` pairs."""
    out = []
    for i, task in items:
        try:
            out.append((i, fn(task)))
        except Exception as exc:  # noqa: BLE001 - sent to the driver, which re-raises it
            raise _WorkerError(_encode_error(exc)) from None
    return out


class SparkExecutor(Executor):
    """Runs each task of :meth:`map` as one Spark task on ``spark``'s cluster.

    Args:
        spark: a classic ``SparkSession`` (or ``SparkContext``).
        tasks_per_core: :attr:`parallelism` is ``defaultParallelism * tasks_per_core``, the
            hint the engine splits files by.

    Raises:
        MetaIndexError: ``spark`` is a Spark Connect session (no SparkContext).
        ValueError: ``tasks_per_core`` < 1.
    """

    def __init__(self, spark, tasks_per_core: int = 4):
        if (
            isinstance(tasks_per_core, bool)
            or not isinstance(tasks_per_core, int)
            or tasks_per_core < 1
        ):
            raise ValueError(f"tasks_per_core must be an int >= 1, not {tasks_per_core!r}")
        self._sc = _spark_context(spark)
        self._session = None if spark is self._sc else spark
        self.tasks_per_core = tasks_per_core

    reads_with_spark = True
    """Files of formats that ``needs_spark`` (CSV, JSON, ORC) are collected by
    :meth:`collect_read` with Spark's own readers (:mod:`metaindex.spark.reading`)."""

    def _spark(self):
        if self._session is None:
            from pyspark.sql import SparkSession

            self._session = SparkSession(self._sc)
        return self._session

    def read_schema(self, location, formats, partitions) -> tuple:
        """``(Arrow data schema, formats with the schema recorded)`` as Spark reads the
        table (:func:`metaindex.spark.reading.read_schema`)."""
        from metaindex.spark.reading import read_schema

        return read_schema(self._spark(), location, formats, partitions)

    def collect_read(self, location, tasks, *, progress: Progress | None = None) -> list:
        """The collection ``tasks`` run as one Spark job reading the files with Spark's
        reader (:func:`metaindex.spark.reading.collect_read`)."""
        from metaindex.spark.reading import collect_read

        check_workers(self._sc)
        try:
            return collect_read(self._spark(), location, list(tasks), progress)
        except Exception as exc:  # a task's own error comes back as itself
            if type(exc).__module__.startswith("metaindex"):
                raise
            raise _task_error(exc) from None

    @property
    def parallelism(self) -> int:
        return max(1, self._sc.defaultParallelism) * self.tasks_per_core

    def __repr__(self) -> str:
        return f"SparkExecutor(master={self._sc.master!r}, tasks_per_core={self.tasks_per_core})"

    def map(self, fn, tasks, *, progress: Progress | None = None) -> list:
        tasks = list(tasks)
        if not tasks:
            return []
        sc = self._sc
        check_workers(sc)
        total = len(tasks)
        group = f"metaindex-{uuid.uuid4().hex}"
        rdd = sc.parallelize(list(enumerate(tasks)), numSlices=total).mapPartitions(
            lambda items: _run_partition(fn, items)
        )
        outcome: dict = {}

        def job() -> None:
            try:
                sc.setJobGroup(
                    group, f"metaindex: {total} collection task(s)", interruptOnCancel=True
                )
                outcome["rows"] = rdd.collect()
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                outcome["error"] = exc

        runner = threading.Thread(target=job, name=group, daemon=True)
        runner.start()
        reported = 0
        try:
            while runner.is_alive():
                runner.join(_POLL_SECONDS)
                if progress is not None and runner.is_alive():
                    done = min(total, _completed_tasks(sc, group))
                    if done > reported:
                        reported = done
                        progress(done, total)
        except BaseException:
            sc.cancelJobGroup(group)
            runner.join(30)
            raise
        if "error" in outcome:
            raise _task_error(outcome["error"]) from None
        rows = outcome["rows"]
        if len(rows) != total:
            raise SparkTaskError(f"Spark returned {len(rows)} results for {total} tasks")
        if progress is not None and reported < total:
            progress(total, total)
        rows.sort(key=lambda r: r[0])
        return [r[1] for r in rows]


def _spark_context(spark):
    from pyspark import SparkContext

    if isinstance(spark, SparkContext):
        return spark
    try:
        sc = spark.sparkContext
    except Exception as exc:  # noqa: BLE001 - Connect raises a PySparkNotImplementedError
        raise MetaIndexError(
            "SparkExecutor needs a classic Spark session (a SparkContext); this session has "
            f"none ({type(exc).__name__}), as under Spark Connect: build with "
            "executor='local' (a local process pool) instead"
        ) from None
    if not isinstance(sc, SparkContext):
        raise TypeError(f"spark must be a SparkSession or SparkContext, not {spark!r}")
    return sc


def _completed_tasks(sc, group: str) -> int:
    tracker = sc.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        for stage_id in info.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
    return done


def _task_error(exc: BaseException) -> BaseException:
    """The task's own exception if ``exc`` (from ``collect``) carries it, else a
    :class:`SparkTaskError` keeping Spark's message."""
    decoded = _decode_error(_full_message(exc))
    if decoded is not None:
        original, trace = decoded
        if isinstance(original, ModuleNotFoundError) and original.name:
            return _worker_python_error(original.name, original)
        if trace and hasattr(original, "add_note"):  # Python >= 3.11
            original.add_note(f"in a Spark task:\n{trace}")
        return original
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return exc
    missing = re.search(r"No module named '([^']+)'", _full_message(exc))
    if missing:
        return _worker_python_error(missing.group(1), exc)
    error = SparkTaskError(
        f"a Spark collection task failed: {type(exc).__name__}: {_full_message(exc)}"
    )
    error.__cause__ = exc
    return error


def _worker_python_error(module: str, cause: BaseException) -> SparkTaskError:
    """A task failed to import ``module``: the workers run a Python without metaindex (or
    its dependencies); say how to point them at one that has it."""
    error = SparkTaskError(
        f"Spark's Python workers cannot import {module!r}: they run a Python without "
        f"metaindex and its dependencies (this driver runs {sys.executable}). Set "
        "PYSPARK_PYTHON to a Python that has metaindex installed before the SparkContext "
        "starts (e.g. os.environ['PYSPARK_PYTHON'] = sys.executable), or build with "
        "executor='local'"
    )
    error.__cause__ = cause
    return error


def _full_message(exc: BaseException) -> str:
    parts = [str(exc)]
    desc = getattr(exc, "desc", None) or getattr(exc, "_desc", None)
    if desc:
        parts.append(str(desc))
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            parts.append(str(java.toString()))
        except Exception:  # noqa: BLE001 - a dead gateway: the Python text is enough
            pass
    return "\n".join(parts)
