"""A standalone Spark cluster: a master and a worker started from pyspark's own jars with
``spark-class`` (pyspark's pip package has no ``sbin/start-master.sh``), bound to 127.0.0.1, as
the README shows. A driver in a fresh process builds the index as Spark tasks that run on the
worker's executor (Spark's own per-executor task counts), skips with ``enable(spark)`` by
Spark's files-read metric with the rows of skipping off, and refreshes (again on the executor)
after files are added and one is rewritten: before the refresh the changed files are read, after
it only the files that can match.

The executors' Python workers run this interpreter (``PYSPARK_PYTHON``, which the driver
passes on) with this tree first on their path (``spark.executorEnv.PYTHONPATH``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log_path, text: str, proc, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        with open(log_path, errors="replace") as f:
            log = f.read()
        if text in log:
            return
        assert proc.poll() is None, f"exited {proc.returncode}:\n{log[-4000:]}"
        assert time.monotonic() < deadline, f"no {text!r} after {seconds} s:\n{log[-4000:]}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``spark://127.0.0.1:<port>`` of a running master with one registered worker (2 cores,
    2 GiB)."""
    pyspark = pytest.importorskip("pyspark")
    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    work = tmp_path_factory.mktemp("cluster")
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_WORKER_DIR=str(work / "worker"),
        SPARK_LOG_DIR=str(work),
    )
    env.pop("SPARK_HOME", None)
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        for name, args, ready in (
            (
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(_free_port()),
                ],
                "I have been elected leader",
            ),
            (
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(_free_port()),
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(work / "worker"),
                    master_url,
                ],
                "Successfully registered with master",
            ),
        ):
            log = work / f"{name}.log"
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    [spark_class, *args],
                    env=env,
                    cwd=str(work),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            procs.append(proc)
            _wait_for(log, ready, proc, 180)
        yield master_url
    finally:
        for proc in reversed(procs):  # the worker first: it stops its executors
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


DRIVER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from pyspark.sql import SparkSession
    from metaindex.spark import MetaIndex, enable
    from metaindex.spark.metrics import files_read

    master, root, pythonpath = sys.argv[1], sys.argv[2], sys.argv[3]
    where = "id < 30"

    def write(name, ids):
        ids = np.asarray(ids, dtype=np.int64)
        pq.write_table(pa.table({"id": ids, "v": ids * 2}), f"{root}/{name}")

    os.makedirs(root)
    for k in range(20):
        write(f"part-{k:04d}.parquet", range(k * 10, k * 10 + 10))
    spark = (SparkSession.builder.master(master).appName("metaindex-cluster-test")
             .config("spark.executorEnv.PYTHONPATH", pythonpath)
             .config("spark.executor.memory", "1g").config("spark.cores.max", "2")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = {}

    def tasks():  # Spark's own count of tasks run, per executor id ("driver" included)
        seq = spark.sparkContext._jsc.sc().statusStore().executorList(True)
        return {seq.apply(i).id(): int(seq.apply(i).totalTasks()) for i in range(seq.size())}

    def run():
        df = spark.read.parquet(root).where(where)
        return sorted(tuple(r) for r in df.collect()), files_read(df)

    def ran_on(action):
        before = tasks()
        result = action()
        after = tasks()
        return result, {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}

    mi = MetaIndex(spark, root)
    built, out["build_tasks"] = ran_on(
        lambda: mi.index_builder().add_min_max_index("id").build())
    out["build"] = [built.status, built.entries_added]
    out["off"] = run()
    enable(spark)
    out["on"] = run()

    write("part-0100.parquet", range(1000, 1010))         # new, cannot match
    write("part-0101.parquet", [3, 4, 5])                 # new, matches
    time.sleep(1.1)
    write("part-0010.parquet", [7, 100, 101])             # rewritten: now matches
    out["changed"] = run()
    refreshed, out["refresh_tasks"] = ran_on(mi.refresh)
    out["refresh"] = [refreshed.status, refreshed.entries_added, refreshed.entries_removed]
    out["refreshed"] = run()
    spark.conf.set("spark.metaindex.enabled", "false")
    from metaindex.spark import disable
    disable(spark)
    out["refreshed_off"] = run()
    spark.stop()
    print(json.dumps(out))
""")


def test_build_skip_and_refresh_on_a_standalone_cluster(cluster, tmp_path):
    root = str(tmp_path / "events")
    pythonpath = os.pathsep.join(p for p in [REPO, os.environ.get("PYTHONPATH", "")] if p)
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=pythonpath,
    )
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, cluster, root, pythonpath],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=str(tmp_path),
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-6000:]
    out = json.loads(lines[-1])

    def rows(key):
        return [tuple(r) for r in out[key][0]], out[key][1]

    first = sorted((i, 2 * i) for i in range(30))
    assert out["build"] == ["SUCCESS", 20]
    assert out["build_tasks"].get("driver", 0) == 0 and sum(out["build_tasks"].values()) >= 1, (
        f"the build's tasks ran on the worker's executor: {out['build_tasks']}"
    )
    assert rows("off") == (first, 20)
    assert rows("on") == (first, 3), "skipping on the cluster: files 0-2 are read"

    changed = sorted(first + [(3, 6), (4, 8), (5, 10), (7, 14)])
    assert rows("changed") == (changed, 6), (
        "before the refresh the two new files and the rewritten one are read"
    )
    assert out["refresh"][0] == "SUCCESS" and out["refresh"][1] == 3, out["refresh"]
    assert sum(out["refresh_tasks"].values()) >= 1 and out["refresh_tasks"].get("driver", 0) == 0, (
        out["refresh_tasks"]
    )
    assert rows("refreshed") == (changed, 5), (
        "after the refresh the new file that cannot match is skipped"
    )
    assert rows("refreshed_off")[0] == changed and rows("refreshed_off")[1] == 22
