"""Executors: results in task order, progress, errors surfaced, workers that do not re-run
the caller's script."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from metaindex.engine.executors import (
    Executor,
    LocalExecutor,
    SerialExecutor,
    read_message,
    write_message,
)


def _square(x):
    return x * x


def _pid(_):
    return os.getpid()


def _square_pid(x):
    return x * x, os.getpid()


def _fail_on_three(x):
    if x == 3:
        raise ValueError("task three fails")
    return x


def test_serial_map_and_progress():
    seen = []
    out = SerialExecutor().map(_square, [1, 2, 3], progress=lambda d, t: seen.append((d, t)))
    assert out == [1, 4, 9]
    assert seen == [(1, 3), (2, 3), (3, 3)], "progress after every task"


def test_local_executor_runs_in_other_processes_in_order():
    seen = []
    ex = LocalExecutor(max_workers=2)
    out = ex.map(_square_pid, list(range(7)), progress=lambda d, t: seen.append((d, t)))
    assert [sq for sq, _ in out] == [x * x for x in range(7)], "results come in task order"
    assert seen[-1] == (7, 7) and len(seen) == 7
    assert os.getpid() not in {pid for _, pid in out}, "tasks ran in worker processes"
    assert ex.parallelism == 2


def test_local_executor_single_task_runs_inline():
    assert LocalExecutor(2).map(_pid, [0]) == [os.getpid()]


def test_local_executor_raises_the_task_error():
    with pytest.raises(ValueError, match="task three fails") as info:
        LocalExecutor(max_workers=2).map(_fail_on_three, list(range(6)))
    assert any("worker" in n for n in getattr(info.value, "__notes__", [])), (
        "the worker's traceback is attached"
    )


def test_bad_max_workers():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            LocalExecutor(bad)


def test_executor_interface_is_pluggable():
    class Reversed(Executor):  # e.g. what the Spark layer implements
        def map(self, fn, tasks, *, progress=None):
            return [fn(t) for t in reversed(tasks)][::-1]

    assert Reversed().map(_square, [2, 3]) == [4, 9]
    assert Reversed().parallelism == 1
    assert not Reversed().task_threads(1), "tasks of an unknown executor read on one thread"


def test_only_a_task_alone_on_the_machine_reads_with_threads():
    assert LocalExecutor(2).task_threads(1), "one task runs inline with every core"
    assert not LocalExecutor(2).task_threads(3), "workers already use every core"
    assert not LocalExecutor(1).task_threads(1)
    assert not SerialExecutor().task_threads(1), "a serial build runs on one core"


def test_message_framing_roundtrip(tmp_path):
    path = tmp_path / "m"
    with open(path, "wb") as f:
        write_message(f, ("ok", [1, "x"]))
    with open(path, "rb") as f:
        assert read_message(f) == ("ok", [1, "x"])
        assert read_message(f) is None, "EOF ends the stream"
    with open(path, "r+b") as f:
        f.truncate(10)
    with open(path, "rb") as f, pytest.raises(EOFError):
        read_message(f)


def test_script_without_main_guard(tmp_path):
    """multiprocessing's spawn would re-run this script in every worker; ours must not."""
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        print("script body ran", file=sys.stderr)
        from metaindex.engine.executors import LocalExecutor
        from tests.engine.test_executors import _square
        print(LocalExecutor(2).map(_square, [1, 2, 3, 4]))
    """)
    )
    done = _run_script(script)
    assert done.stdout.strip() == "[1, 4, 9, 16]"
    assert done.stderr.count("script body ran") == 1, "workers must not re-run the script"


def _run_script(script, unbuffered: bool = True) -> subprocess.CompletedProcess:
    """``python script`` with this test run's import path, which must succeed
    (``unbuffered=False``: without ``PYTHONUNBUFFERED``, as a worker's stdout buffers by
    default)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if not unbuffered:
        env.pop("PYTHONUNBUFFERED", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.getcwd(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _print_then_square(x):
    print(f"stray print {x}", end="")  # buffered in the worker's sys.stdout, no newline
    return x * x


def _spawned(monkeypatch) -> list:
    """Every worker process LocalExecutors start from now on."""
    from metaindex.engine import executors

    procs: list = []
    spawn = executors._spawn_worker

    def spy():
        procs.append(spawn())
        return procs[-1]

    monkeypatch.setattr(executors, "_spawn_worker", spy)
    return procs


def _reaped(procs) -> bool:
    return all(p.returncode is not None for p in procs)


def test_prepared_workers_run_the_next_map(monkeypatch):
    procs = _spawned(monkeypatch)
    ex = LocalExecutor(max_workers=2)
    ex.prepare()
    ex.prepare()  # a second hint starts no more
    assert len(procs) == 2 and not _reaped(procs), "prepare starts the workers at once"
    out = ex.map(_square_pid, list(range(6)))
    assert [sq for sq, _ in out] == [x * x for x in range(6)]
    assert {pid for _, pid in out} <= {p.pid for p in procs}, "the prepared workers ran them"
    assert len(procs) == 2, "map started no others"
    assert _reaped(procs), "map reaps its workers"
    ex.map(_square, [1, 2, 3])
    assert len(procs) == 4, "the next map starts its own"
    assert _reaped(procs)


def test_prepared_workers_are_stopped_when_no_map_takes_them(monkeypatch):
    procs = _spawned(monkeypatch)
    ex = LocalExecutor(max_workers=2)
    ex.prepare()
    ex.release()
    assert len(procs) == 2 and _reaped(procs), "release kills and reaps them"
    ex.release()  # nothing prepared: nothing to do

    ex.prepare()
    assert ex.map(_pid, [0]) == [os.getpid()], "a single task still runs inline"
    assert _reaped(procs), "and the prepared workers are stopped"

    ex.prepare()
    assert LocalExecutor(1).map(_square, [1, 2]) == [1, 4]
    del ex  # an executor dropped with prepared workers stops them
    import gc

    gc.collect()
    assert len(procs) == 6 and _reaped(procs)
    LocalExecutor(1).prepare()
    assert len(procs) == 6, "one worker: tasks run inline, nothing to prepare"


def test_prepared_workers_are_stopped_when_a_task_fails(monkeypatch):
    procs = _spawned(monkeypatch)
    ex = LocalExecutor(max_workers=2)
    ex.prepare()
    with pytest.raises(ValueError, match="task three fails"):
        ex.map(_fail_on_three, list(range(6)))
    assert len(procs) == 2 and _reaped(procs)


def test_a_build_stops_the_workers_it_prepared_when_it_fails(monkeypatch, tmp_path):
    """build() starts the pool before it lists the table; a build that fails before (or
    without) collecting leaves no worker behind."""
    from metaindex import MetaIndex
    from metaindex.errors import MetaIndexError

    procs = _spawned(monkeypatch)
    (tmp_path / "t").mkdir()
    ex = LocalExecutor(max_workers=2)
    mi = MetaIndex(str(tmp_path / "t"), store=str(tmp_path / "s"))
    with pytest.raises(MetaIndexError, match="no data files"):
        mi.index_builder().add_min_max_index("x").build(executor=ex)
    assert procs == [], "a build over before PREPARE_DELAY starts none"
    monkeypatch.setattr("metaindex.engine.build.PREPARE_DELAY", 0.0)
    with pytest.raises(MetaIndexError, match="no data files"):
        mi.index_builder().add_min_max_index("x").build(executor=ex)
    assert len(procs) == 2, "the build prepared the pool before listing"
    assert _reaped(procs) and not ex._ready


def test_a_delayed_prepare_starts_the_workers_only_if_nothing_came_first(monkeypatch):
    procs = _spawned(monkeypatch)
    ex = LocalExecutor(max_workers=2)
    ex.prepare(delay=30)
    assert ex.map(_square, [1, 2, 3]) == [1, 4, 9]
    assert len(procs) == 2 and _reaped(procs), "the map cancelled it and started its own"
    ex.prepare(delay=30)
    ex.release()
    assert len(procs) == 2, "release cancelled it"
    ex.prepare(delay=0.01)
    deadline = time.monotonic() + 30
    while len(procs) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(procs) == 4 and not _reaped(procs[2:]), "started once the delay was over"
    out = ex.map(_square_pid, list(range(6)))
    assert {pid for _, pid in out} <= {p.pid for p in procs[2:]}, "and used by the next map"
    assert len(procs) == 4 and _reaped(procs)


def test_stray_prints_of_a_task_reach_stderr(tmp_path):
    """A worker ends at once at the end of its input (no interpreter teardown); what its
    tasks printed is flushed first."""
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent("""
        from metaindex.engine.executors import LocalExecutor
        from tests.engine.test_executors import _print_then_square
        print(LocalExecutor(2).map(_print_then_square, [1, 2, 3, 4]))
    """)
    )
    done = _run_script(script, unbuffered=False)
    assert done.stdout.strip() == "[1, 4, 9, 16]", "prints never corrupt the answers"
    for x in range(1, 5):
        assert f"stray print {x}" in done.stderr
