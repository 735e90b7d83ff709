"""SparkExecutor runs collection tasks as Spark tasks on the shared local[2] session: same
results as the serial executor, in task order; progress up to the total; a task's own
exception type and message come back; an index built through it equals a local-pool build."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import LocalExecutor, SerialExecutor
from metaindex.errors import DecodeError, MetaIndexError
from metaindex.spark.executor import SparkExecutor

pytestmark = pytest.mark.spark


def _square(x):
    return x * x


def _fail_on_three(x):
    if x == 3:
        raise DecodeError("bad bytes at task three")
    return x


class _Unpicklable(Exception):
    def __init__(self, a, b):  # pickling calls __init__(message) only: cannot be rebuilt
        super().__init__(f"{a}/{b}")


def _fail_unpicklable(x):
    raise _Unpicklable("left", "right")


def _slow(x):
    import time

    time.sleep(0.4)
    return x


def _pid_and_thread(x):
    return (os.getpid(), x)


def test_results_equal_serial_and_in_order(spark):
    ex = SparkExecutor(spark)
    tasks = list(range(13))
    assert ex.map(_square, tasks) == SerialExecutor().map(_square, tasks), (
        "results come back in task order, one per task"
    )
    assert ex.parallelism == spark.sparkContext.defaultParallelism * 4
    assert ex.map(_square, []) == []


def test_tasks_run_in_spark_workers_not_the_driver(spark):
    pids = {pid for pid, _ in SparkExecutor(spark).map(_pid_and_thread, range(4))}
    assert os.getpid() not in pids, "tasks must run in Spark's Python workers"


def test_progress_reaches_total_in_calling_thread(spark):
    calls = []
    caller = threading.get_ident()

    def progress(done, total):
        calls.append((done, total, threading.get_ident()))

    assert SparkExecutor(spark).map(_slow, range(8), progress=progress) == list(range(8))
    assert calls, "progress must be reported"
    assert any(done < total for done, total, _ in calls), (
        f"the status tracker must report tasks finishing before the job ends: {calls}"
    )
    assert calls[-1][:2] == (8, 8), f"progress ends at the total: {calls}"
    assert [c[0] for c in calls] == sorted(c[0] for c in calls), "progress only moves forward"
    assert all(c[2] == caller for c in calls), "progress runs in the caller's thread"


def test_task_error_keeps_type_and_message(spark):
    with pytest.raises(DecodeError, match="bad bytes at task three") as info:
        SparkExecutor(spark).map(_fail_on_three, range(5))
    assert any("in a Spark task" in n for n in getattr(info.value, "__notes__", [])), (
        "the worker traceback is attached as a note"
    )


def test_unpicklable_error_keeps_message(spark):
    with pytest.raises(RuntimeError, match="left/right"):
        SparkExecutor(spark).map(_fail_unpicklable, [1])


def test_session_still_usable_after_a_failure(spark):
    with pytest.raises(DecodeError):
        SparkExecutor(spark).map(_fail_on_three, [3])
    assert SparkExecutor(spark).map(_square, [2, 3]) == [4, 9]


def test_bad_arguments():
    with pytest.raises(ValueError, match="tasks_per_core"):
        SparkExecutor(object(), tasks_per_core=0)


def _write_table(root, n_files=120, rows=20):
    root.mkdir()
    for i in range(n_files):
        base = i * rows
        pq.write_table(
            pa.table(
                {
                    "id": pa.array(range(base, base + rows), pa.int64()),
                    "temp": pa.array([float((base + r) % 97) for r in range(rows)], pa.float64()),
                    "city": pa.array([f"c{(i + r) % 11}" for r in range(rows)], pa.string()),
                }
            ),
            root / f"part-{i:04d}.parquet",
        )


def _metadata_rows(index) -> pa.Table:
    """Every indexed file's metadata row, sorted by file name (the part layout aside)."""
    from metaindex.store import OBJ_NAME

    return index._table_store.snapshot().metadata_table().sort_by(OBJ_NAME)


def test_build_through_spark_equals_local_pool(spark, tmp_path):
    table = tmp_path / "t"
    _write_table(table)
    built = {}
    for name, executor in (("spark", SparkExecutor(spark)), ("local", LocalExecutor(2))):
        mi = MetaIndex(table, tmp_path / f"store-{name}")
        result = (
            mi.index_builder()
            .add_min_max_index("id")
            .add_value_list_index("city")
            .add_bloom_filter_index("temp")
            .build(executor=executor)
        )
        assert result.status == "SUCCESS" and result.entries_added == 120, result
        assert not result.failed, result.failed
        built[name] = mi
    queries = [
        "id < 100",
        "id BETWEEN 500 AND 530",
        "city = 'c3'",
        "city IN ('zz', 'c0')",
        "temp = 12.0",
        "temp = 1000.0",
        "id > 2390 OR city = 'nope'",
    ]
    for q in queries:
        kept = {name: sorted(mi.prune(q).kept) for name, mi in built.items()}
        assert kept["spark"] == kept["local"], f"{q}: both builds must prune alike"
    assert sorted(built["spark"].prune("temp = 1000.0").kept) == [], (
        "bloom from the Spark build must rule every file out"
    )
    assert _metadata_rows(built["spark"]).equals(_metadata_rows(built["local"])), (
        "the Spark build must write exactly the metadata the local pool writes"
    )
    d_spark, d_local = built["spark"].describe(), built["local"].describe()
    assert d_spark.counts.indexed_files == d_local.counts.indexed_files == 120
    assert d_spark.indexes == d_local.indexes


def test_connect_like_session_is_refused():
    class NoContext:
        @property
        def sparkContext(self):
            raise NotImplementedError("no SparkContext under Connect")

    with pytest.raises(MetaIndexError, match="executor='local'"):
        SparkExecutor(NoContext())


def test_workers_that_cannot_import_metaindex(spark, tmp_path, monkeypatch):
    """A worker Python that cannot run metaindex, found before the job: chosen by the user
    (PYSPARK_PYTHON), a SparkWorkerError that says to set it; not chosen, on a local master,
    the workers are switched to the driver's interpreter."""
    import sys

    from metaindex.spark import executor

    sc = spark.sparkContext
    before = sc.pythonExec
    sc.pythonExec = str(tmp_path / "no-such-python")
    executor._checked.pop(id(sc), None)
    try:
        monkeypatch.setenv("PYSPARK_PYTHON", sc.pythonExec)
        with pytest.raises(executor.SparkWorkerError, match="PYSPARK_PYTHON"):
            SparkExecutor(spark).map(_square, [1, 2, 3])
        assert sc.pythonExec != sys.executable, "a Python the user chose is left alone"
        monkeypatch.delenv("PYSPARK_PYTHON")
        assert SparkExecutor(spark).map(_square, [1, 2, 3]) == [1, 4, 9]
        assert sc.pythonExec == sys.executable, "the workers now run the driver's Python"
    finally:
        sc.pythonExec = before
        executor._checked.pop(id(sc), None)


CLUSTER_SCRIPT = """
import json, os, sys
from pyspark.sql import SparkSession

root, bare_python = sys.argv[1], sys.argv[2]
out = {}

def session():
    return (SparkSession.builder.master("local-cluster[2,1,1024]")
            .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())

from metaindex.spark import MetaIndex
from metaindex.spark.executor import SparkWorkerError

os.environ["PYSPARK_PYTHON"] = bare_python  # a Python without metaindex (nor pyspark)
spark = session()
try:
    MetaIndex(spark, root).index_builder().add_min_max_index("id").build()
    out["bare"] = "built"
except SparkWorkerError as e:
    out["bare"] = str(e)
spark.stop()

os.environ["PYSPARK_PYTHON"] = sys.executable
spark = session()
result = MetaIndex(spark, root).index_builder().add_min_max_index("id").build()
out["built"] = [result.status, result.entries_added]
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
spark.stop()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_distributed_build_on_local_cluster(tmp_path):
    """local-cluster[2,1,1024]: separate executor JVMs. Workers on a Python without metaindex
    give a SparkWorkerError naming PYSPARK_PYTHON (no worker traceback); with it, the build
    runs as Spark tasks."""
    import json
    import subprocess
    import sys

    root = tmp_path / "t"
    root.mkdir()
    for k in range(8):
        pq.write_table(
            pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64())}),
            root / f"part-{k}.parquet",
        )
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    proc = subprocess.run(
        [sys.executable, "-c", CLUSTER_SCRIPT, str(root), str(bare / "bin" / "python")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=repo,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    out = json.loads(lines[-1])
    assert "PYSPARK_PYTHON" in out["bare"] and "Traceback" not in out["bare"], out["bare"]
    assert out["built"] == ["SUCCESS", 8] and out["executors"] == 2, out
