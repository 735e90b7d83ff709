"""Skipping by conf alone: the shipped jar, the extension, and the pruning process.

Spark checks run in fresh processes that set only conf (``spark.sql.extensions`` and
``spark.jars=jar_path()``), with a PATH and JAVA_HOME that hide ``javac`` (a JRE, no JDK): one
JVM holds a classic PySpark session and a Spark Connect server with its
client (``enable()`` is called only at the end, to check it on top of the extension), and
``spark-sql -e`` runs twice. Files read are Spark's own "number of files read" metric
(``files_read`` in a classic driver, ``df.executionInfo`` under Connect, the event log for
``spark-sql``). The pruning process is stopped and killed mid-query, and named as a Python that
does not exist: queries still return the full, correct result.
"""

from __future__ import annotations

import glob
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaindex import MetaIndex
from metaindex.engine.executors import SerialExecutor
from metaindex.spark import jarbuild
from metaindex.spark._jvm import JARS_DIR, UnsupportedSparkError, jar_path, supported_lines
from tests.spark.jre import jre_only

pytestmark = pytest.mark.spark

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTENSION = "io.metaindex.spark.MetaIndexExtensions"
N_FILES = 40
ROWS = 20
WHERE = "id < 100"
KEPT = 5  # ids 0..99 are in the first 5 files of 20 rows


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A 40-file table (ids 20k..20k+19 in file k) with a min/max index on id."""
    root = tmp_path_factory.mktemp("ext") / "events"
    root.mkdir()
    for k in range(N_FILES):
        ids = np.arange(k * ROWS, (k + 1) * ROWS, dtype=np.int64)
        pq.write_table(
            pa.table({"id": ids, "v": ids.astype(np.float64) / 2}), root / f"part-{k:04d}.parquet"
        )
    mi = MetaIndex(str(root))
    mi.index_builder().add_min_max_index("id").build(executor=SerialExecutor())
    assert mi.prune(WHERE).stats.kept_files == KEPT
    return str(root)


def _jre_only_env(tmp_path) -> dict:
    """The environment of a machine with a JRE and no JDK (:func:`tests.spark.jre.jre_only`)."""
    machine = jre_only(str(tmp_path / "machine"))
    if machine is None:
        pytest.skip("no java")
    env = dict(
        os.environ,
        **machine,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_HOME", None)
    return env


def _run_script(script: str, args: list, env: dict, timeout: int = 420) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"the script printed no result (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    out = json.loads(lines[-1])
    if "skip" in out:
        pytest.skip(out["skip"])
    return out


# ------------------------------------------------------------------------------ the jar


def _class_major(jar: str, cls: str) -> int:
    with zipfile.ZipFile(jar) as z:
        head = z.read(f"io/metaindex/spark/{cls}.class")[:8]
    return int.from_bytes(head[6:8], "big")


def test_shipped_jars_and_cli():
    """The package build put one jar per Spark line in the package, each built from these
    sources; jar_path() and `metaindex jar` name the installed pyspark's."""
    import pyspark

    names = jarbuild.expected_jars()
    assert sorted(os.listdir(JARS_DIR)) == sorted(names), (
        "make build / setup.py build_ext builds every line's jar with Maven, nothing else"
    )
    assert supported_lines() == ["3.5", "4.0", "4.1", "4.2", "4.3"]
    for name in names:
        jar = os.path.join(JARS_DIR, name)
        with zipfile.ZipFile(jar) as z:
            listed = z.namelist()
        for cls in (
            "MetaIndexExtensions",
            "MetaIndexRule",
            "MetaIndexFileIndex",
            "PruningProcess",
            "SparkCompat",
            "ShimBuild",
        ):
            assert f"io/metaindex/spark/{cls}.class" in listed, (name, cls)
        assert not any(n.startswith("org/apache/spark/") for n in listed), "Spark is provided"
        props = jarbuild.jar_properties(jar)
        assert props["sources.sha256"] == jarbuild.sources_digest(), (
            f"{name} is built from these sources"
        )
        assert props["scala.binary"] == (
            "2.12" if name.startswith("metaindex-spark-3.") else "2.13"
        )
        # Spark 3.5 runs on Java 8 (class file 52); Spark 4 needs Java 17 (61)
        assert _class_major(jar, "MetaIndexRule") == (52 if props["scala.binary"] == "2.12" else 61)
    line = jarbuild.spark_line(pyspark.__version__)
    assert line in jarbuild.jar_lines(jar_path())
    done = subprocess.run(
        [sys.executable, "-m", "metaindex", "jar"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert done.stdout.strip() == jar_path()
    done = subprocess.run(
        [sys.executable, "-m", "metaindex", "jar", "--spark-version", "3.5.1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert done.stdout.strip() == os.path.join(JARS_DIR, "metaindex-spark-3.5_2.12.jar")


def test_unsupported_spark_line():
    """A Spark line no jar is for: one typed error naming the supported lines (the CLI exits
    8, unsupported, with that one line)."""
    for version in ("3.4.4", "4.4.0", "9.9.0"):
        with pytest.raises(UnsupportedSparkError, match=r"3\.5, 4\.0, 4\.1, 4\.2, 4\.3"):
            jar_path(version)
    done = subprocess.run(
        [sys.executable, "-m", "metaindex", "jar", "--spark-version", "3.4.4"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 8, done
    assert "no jar for Spark 3.4.4" in done.stderr and "Traceback" not in done.stderr


OTHER_LINE_SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from metaindex.spark import enable
    from metaindex.spark.metrics import files_read

    root, where, jar = sys.argv[1], sys.argv[2], sys.argv[3]
    spark = (SparkSession.builder.master("local[2]")
             .config("spark.sql.extensions", "io.metaindex.spark.MetaIndexExtensions")
             .config("spark.jars", jar).config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    out = {"queries": []}
    for _ in range(3):
        df = spark.read.parquet(root).where(where)
        out["queries"].append([sorted(r.id for r in df.collect()), files_read(df)])
    try:
        enable(spark)
        out["enable"] = None
    except Exception as e:
        out["enable"] = [type(e).__name__, str(e)]
    spark.stop()
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_another_lines_jar_logs_one_line(table, tmp_path):
    """The extension given another Spark line's jar (the 3.5 jar, Scala 2.12, on this 4.x
    Spark): one warning in the JVM's log when the application starts and nothing installed, so
    queries read every file with the right rows and no stack traces; enable(spark) raises a
    ShimUnavailable naming this line's jar."""
    import pyspark

    if jarbuild.spark_line(pyspark.__version__) == "3.5":
        pytest.skip("needs a Spark line other than 3.5")
    other = os.path.join(JARS_DIR, "metaindex-spark-3.5_2.12.jar")
    proc = subprocess.run(
        [sys.executable, "-c", OTHER_LINE_SCRIPT, table, WHERE, other],
        capture_output=True,
        text=True,
        timeout=420,
        env=_jre_only_env(tmp_path),
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert out["queries"] == [[list(range(100)), N_FILES]] * 3
    warned = [ln for ln in proc.stderr.splitlines() if "metaindex" in ln]
    assert len(warned) == 1 and "not Spark " + pyspark.__version__ in warned[0], warned
    assert "Exception" not in proc.stderr and "\tat " not in proc.stderr, proc.stderr[-4000:]
    assert out["enable"][0] == "ShimUnavailable" and jar_path() in out["enable"][1], out


# ------------------------------------------------------------------------------ the process


def _frame(kind: str, ident: int, payload: str) -> bytes:
    body = payload.encode()
    return f"{kind} {ident} {len(body)}\n".encode() + body


def _read(stream):
    header = stream.readline()
    kind, ident, length = header.decode().split()
    return kind, int(ident), stream.read(int(length)).decode()


def _request(root: str, scan: int) -> str:
    return json.dumps(
        {
            "scan": scan,
            "session": "s1",
            "roots": ["file://" + root],
            "table": None,
            "filters": [{"op": "lt", "col": ["id"], "value": {"type": "long", "value": 100}}],
            "partition_filters": 0,
            "num_files": N_FILES,
            "num_bytes": 1,
            "query": "q1",
            "conf": {},
        }
    )


def test_pruning_process_protocol(table):
    """`python -m metaindex.spark.pruned` as the JVM drives it (specs/pruning-protocol.md)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    refused = subprocess.run(
        [sys.executable, "-m", "metaindex.spark.pruned", "--protocol", "99"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2 and "protocol 99" in refused.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "metaindex.spark.pruned", "--protocol", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        kind, _, hello = _read(proc.stdout)
        assert kind == "hello" and hello.split()[:2] == ["metaindex-pruned", "2"]
        assert int(hello.split()[2]) == proc.pid
        proc.stdin.write(
            _frame("prune", 7, _request(table, 1))
            + _frame("prune", 8, "{nope")
            + _frame("bogus", 9, "")
        )
        proc.stdin.flush()
        answers = {}
        for _ in range(3):
            kind, ident, payload = _read(proc.stdout)
            answers[ident] = (kind, payload)
        kind, reply = answers[7]
        stats_line, *lines = reply.split("\n")
        scan = json.loads(stats_line)
        assert (scan["files_total"], scan["files_named"], scan["version"]) == (
            N_FILES,
            N_FILES - KEPT,
            1,
        ), f"version 2 replies start with the scan's stats: {scan}"
        assert kind == "reply" and lines[0] == "OK\tfile://" + table
        assert len(lines) - 1 == N_FILES - KEPT, "names every file that cannot hold id < 100"
        assert all(ln.split("\t")[2] >= "part-0005" for ln in lines[1:])
        assert answers[8][0] == "error" and "JSONDecodeError" in answers[8][1]
        assert answers[9][0] == "error" and "unknown frame kind" in answers[9][1]
        proc.stdin.write(
            _frame("report", 0, json.dumps({"scan": 1, "files_skipped": 35, "bytes_skipped": 10}))
        )
        proc.stdin.write(b"garbage without a length\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 3, "a malformed frame ends the process"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_pruning_process_ends_with_its_stdin(table):
    """The process ends at the end of its stdin; a version 1 client (an older jar) gets
    replies without the stats line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "metaindex.spark.pruned"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith(b"hello 0 ")
    proc = subprocess.run(
        [sys.executable, "-m", "metaindex.spark.pruned", "--protocol", "1"],
        input=_frame("prune", 3, _request(table, 1)),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    stream = io.BytesIO(proc.stdout)
    assert _read(stream)[2].split()[:2] == ["metaindex-pruned", "1"]
    kind, ident, reply = _read(stream)
    assert (kind, ident) == ("reply", 3) and reply.split("\n")[0] == "OK\tfile://" + table, (
        "version 1: no stats line"
    )


# ------------------------------------------------------------------------------ classic + Connect

CLASSIC_SCRIPT = textwrap.dedent("""
    import json, os, shutil, signal, socket, sys, threading, time
    from pyspark.sql import SparkSession
    from metaindex.spark import jar_path, jarbuild
    from metaindex.spark.metrics import files_read, files_skipped

    root, where, kept, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    out = {"failures": []}
    def check(ok, what):
        if not ok:
            out["failures"].append(what)

    check(shutil.which("javac") is None and jarbuild.javac() is None, "javac is hidden")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spark = (SparkSession.builder.master("local[2]")
             .config("spark.sql.extensions", "io.metaindex.spark.MetaIndexExtensions")
             .config("spark.jars", jar_path())
             .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
             .config("spark.connect.grpc.binding.address", "127.0.0.1")
             .config("spark.connect.grpc.binding.port", str(port))
             .config("spark.metaindex.pruned.timeout", "3s")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    expected = list(range(100))

    def run():
        df = spark.read.parquet(root).where(where)
        return sorted(r.id for r in df.collect()), files_read(df)

    def skip_metrics(df):  # (name, value) of the metaindex metrics of df's executed plan
        found, stack = [], [df._jdf.queryExecution().executedPlan()]
        while stack:
            node = stack.pop()
            if node.nodeName() == "AdaptiveSparkPlan":
                stack.append(node.executedPlan())
            if node.nodeName() == "MetaIndexSkipping":
                metrics = node.metrics()
                for key in ("metaindexFilesSkipped", "metaindexBytesSkipped"):
                    m = metrics.apply(key)
                    found.append((m.name().get(), int(m.value())))
            seq = node.children()
            stack.extend(seq.apply(k) for k in range(seq.size()))
        return found

    def scan_stats(stats):
        return None if stats is None else [stats.files_total, stats.files_skipped,
                                           stats.skipped_by_index, stats.reason]

    # 1. conf only: the extension's rule asks the pruning process; the JVM's stats through
    #    the SQL function (no record in this Python process); the plan's metrics
    from metaindex.spark import last_query_stats
    df = spark.read.parquet(root).where(where)
    rows = sorted(r.id for r in df.collect())
    check(rows == expected, "rows with the extension")
    out["conf_only"] = files_read(df)
    out["conf_only_metrics"] = skip_metrics(df)
    import contextlib, io
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        df.explain("formatted")
    out["explained"] = [ln for ln in shown.getvalue().splitlines() if "metaindex" in ln]
    out["conf_only_stats"] = scan_stats(last_query_stats(spark))
    out["conf_only_conjuncts"] = last_query_stats(spark).tables[0]["conjuncts"]
    from metaindex.spark import clear_stats
    clear_stats(spark)
    out["cleared"] = scan_stats(last_query_stats(spark))
    client = spark._jvm.io.metaindex.spark.PruningProcess.shared(
        spark.sparkContext._jsc.sc().getConf())
    pid = client.pid()
    check(pid > 0, "a pruning process runs")

    # 1b. the metrics node in other plans: joins, a union, a subquery; row and columnar
    #     readers, with and without adaptive execution: rows as with skipping off, and the
    #     plan's "files skipped by metaindex" is what the stats say
    spark.read.parquet(root).createOrReplaceTempView("t")
    queries = ["SELECT a.id, b.v FROM t a JOIN t b ON a.id = b.id WHERE a.id < 100 AND b.id > 50",
               "SELECT * FROM t WHERE id < 30 UNION ALL SELECT * FROM t WHERE id > 770",
               "SELECT * FROM t WHERE id IN (SELECT id FROM t WHERE id < 25)"]
    out["plans"] = []
    for vectorized, adaptive in (("true", "true"), ("false", "false")):
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
        for q in queries:
            spark.conf.set("spark.metaindex.enabled", "false")
            off = sorted(map(tuple, spark.sql(q).collect()))
            spark.conf.unset("spark.metaindex.enabled")
            df = spark.sql(q)
            on = sorted(map(tuple, df.collect()))
            metric = files_skipped(df)
            stats = last_query_stats(spark)
            check(on == off, f"rows on and off: {q} ({vectorized}, {adaptive})")
            out["plans"].append([metric, stats.files_skipped])
    spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    spark.conf.unset("spark.sql.adaptive.enabled")

    # 2. skipping off for the session: every file, same rows
    spark.conf.set("spark.metaindex.enabled", "false")
    rows, read = run()
    check(rows == expected and read == total, f"skipping off reads all: {read}")
    spark.conf.unset("spark.metaindex.enabled")

    # 3. a Spark Connect client of this server (started with the same conf): Spark's metric
    #    in df.executionInfo, skipping on and off
    from pyspark.sql.connect.session import SparkSession as RemoteSession
    remote = RemoteSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    out["connect_type"] = type(remote).__module__

    def remote_run(df=None):
        if df is None:
            df = remote.read.parquet(root).where(where)
            rows = sorted(r.id for r in df.collect())
        else:
            rows = sorted(map(tuple, df.collect()))
        graph = df.executionInfo.metrics.extract_graph()[1]
        total = lambda name: sum(int(m.value) for node in graph.values()  # noqa: E731
                                 for m in node.metrics if m.name == name)
        # number of files read, files skipped by metaindex (None: no such node)
        skipped = [m.value for node in graph.values() for m in node.metrics
                   if m.name == "metaindexFilesSkipped"]
        return rows, total("numFiles"), sum(skipped) if skipped else None

    out["connect_on"] = remote_run()
    out["connect_stats"] = scan_stats(last_query_stats(remote))
    clear_stats(remote)
    out["connect_cleared"] = scan_stats(last_query_stats(remote))
    remote.conf.set("spark.metaindex.enabled", "false")
    out["connect_off"] = remote_run()

    # 3b. a CSV dataset indexed through Connect only: xskipper's build(reader) takes the Connect
    #     reader's format and options, Spark's CSV reader runs as a job on the server, refresh
    #     indexes a new file; queries skip on the server with the rows of skipping off
    from metaindex.spark import MetaIndex
    from metaindex.xskipper import Xskipper
    csv_root, csv_started = sys.argv[5], time.monotonic()
    def write_csv(name, ids):
        os.makedirs(csv_root, exist_ok=True)
        with open(f"{csv_root}/{name}.csv", "w") as f:
            f.write("id,name\\n" + "".join(f"{i},n{i % 4}\\n" for i in ids))
    for k in range(3):
        write_csv(f"part-{k}", range(10 * k, 10 * k + 5))
    csv_reader = lambda: remote.read.format("csv").option("header", "true").schema(  # noqa: E731
        "id INT, name STRING")
    built = Xskipper(remote, csv_root).indexBuilder().addMinMaxIndex("id").build(csv_reader())
    out["csv_built"] = built.collect()[0]["new_entries_added"]
    write_csv("part-3", [100, 101])
    out["csv_refreshed"] = MetaIndex(remote, csv_root).refresh().entries_added
    remote.conf.set("spark.metaindex.enabled", "true")
    out["csv_on"] = [remote_run(csv_reader().load(csv_root).where(w))
                     for w in ("id >= 20", "id > 50")]
    remote.conf.set("spark.metaindex.enabled", "false")
    out["csv_off"] = remote_run(csv_reader().load(csv_root).where("id >= 20"))
    out["csv_seconds"] = time.monotonic() - csv_started
    remote.stop()

    # 4. a stopped (slow) process: the request times out, the scan reads every file, and
    #    the process is replaced
    os.kill(pid, signal.SIGSTOP)
    rows, read = run()
    out["slow"] = read
    check(rows == expected, "rows with a slow process")
    out["slow_reason"] = client.lastFailure()
    out["slow_stats"] = scan_stats(last_query_stats(spark))
    rows, read = run()
    out["after_slow"] = read
    check(rows == expected, "rows after a slow process")
    pid2 = client.pid()
    check(pid2 > 0 and pid2 != pid, "the hung process was replaced")

    # 5. killed mid-query: the request waits, then the process dies
    os.kill(pid2, signal.SIGSTOP)
    result = {}
    worker = threading.Thread(target=lambda: result.update(zip(("rows", "read"), run())))
    worker.start()
    deadline = time.monotonic() + 120
    while client.waiting() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(client.waiting() > 0, "the query waited for the process")
    os.kill(pid2, signal.SIGKILL)
    worker.join(300)
    check(result.get("rows") == expected, "rows when the process is killed mid-query")
    out["killed"] = result.get("read")
    out["killed_reason"] = client.lastFailure()

    # 6. the next query starts a new process and skips again
    rows, read = run()
    check(rows == expected, "rows after a restart")
    out["restarted"] = read
    check(client.pid() > 0 and client.pid() != pid2, "a new process")

    # 7. enable() on the running session: no javac needed, no second rule, driver stats
    from metaindex.spark import _jvm, disable, enable, is_enabled
    check(is_enabled(spark), "is_enabled with the extension")
    enable(spark)
    check(_jvm.on_class_path(spark), "enable() uses the jar of spark.jars")
    rules = spark._jsparkSession.experimental().extraOptimizations()
    check(rules.size() == 0, "enable() adds no second rule where the extension runs")
    rows, read = run()
    stats = last_query_stats(spark)
    check(rows == expected, "rows after enable()")
    out["enabled"] = read
    out["stats"] = None if stats is None else [stats.files_total, stats.files_skipped]
    disable(spark)
    check(not is_enabled(spark), "disable() turns the extension off for the session")
    rows, read = run()
    check(rows == expected and read == total, f"after disable() every file is read: {read}")
    print(json.dumps(out))
    spark.stop()
""")


@pytest.mark.slow
def test_classic_and_connect_by_conf_only_without_jdk(table, tmp_path):
    """One JVM: a classic session and a Spark Connect server, both by conf only, with no
    javac; the pruning process stopped and killed mid-query; then enable() on top."""
    csv_root = str(tmp_path / "sensors")
    out = _run_script(
        CLASSIC_SCRIPT,
        [table, WHERE, str(KEPT), str(N_FILES), csv_root],
        _jre_only_env(tmp_path),
        timeout=600,
    )
    assert out["failures"] == [], out
    skipped = N_FILES - KEPT
    assert out["conf_only"] == KEPT, f"conf only: Spark read {out['conf_only']} files, not {KEPT}"
    assert out["conf_only_stats"] == [N_FILES, skipped, {"minmax(id)": skipped}, None], (
        f"last_query_stats of a scan the pruning process pruned (the JVM's record): {out}"
    )
    assert [c["used"] for c in out["conf_only_conjuncts"]] == [True, True], out
    assert out["cleared"] is None and out["connect_cleared"] is None, (
        "nothing since clear_stats (classic and Connect)"
    )
    names = dict(out["conf_only_metrics"])
    assert names.get("files skipped by metaindex") == skipped, (
        f"the plan's metric shows the {skipped} files skipped: {out['conf_only_metrics']}"
    )
    assert 0 < names.get("size of files skipped by metaindex", 0), out["conf_only_metrics"]
    assert any(
        ln.startswith(f"Files skipped by metaindex: {skipped} (") for ln in out["explained"]
    ), f"explain('formatted') after the action: {out['explained']}"
    assert all(metric == stats > 0 for metric, stats in out["plans"]), (
        f"the plan's files skipped by metaindex equal the stats': {out['plans']}"
    )
    assert out["connect_type"].startswith("pyspark.sql.connect"), "queries ran through Connect"
    (rows_on, read_on, skipped_on), (rows_off, read_off, skipped_off) = (
        out["connect_on"],
        out["connect_off"],
    )
    assert rows_on == rows_off == list(range(100)), "same rows with skipping on and off"
    assert read_on == KEPT and read_off == N_FILES, (
        f"Spark's files read under Connect: {read_on} on, {read_off} off"
    )
    assert skipped_on == skipped and skipped_off is None, (
        f"executionInfo's files skipped by metaindex: {skipped_on} on, {skipped_off} off"
    )
    assert out["connect_stats"] == [N_FILES, skipped, {"minmax(id)": skipped}, None], (
        f"last_query_stats of a Connect session: {out['connect_stats']}"
    )
    assert (out["csv_built"], out["csv_refreshed"]) == (3, 1), (
        f"CSV built and refreshed through Connect: {out['csv_built']}, {out['csv_refreshed']}"
    )
    (ge20, gt50), ge20_off = out["csv_on"], out["csv_off"]
    expected_ge20 = [[i, f"n{i % 4}"] for i in (*range(20, 25), 100, 101)]
    assert ge20[0] == ge20_off[0] == expected_ge20, out["csv_on"]
    assert gt50[0] == [[100, "n0"], [101, "n1"]], out["csv_on"]
    assert (ge20[1], ge20[2]) == (2, 2) and (ge20_off[1], ge20_off[2]) == (4, None), (
        f"id >= 20 under Connect: files read and skipped on {ge20[1:]}, off {ge20_off[1:]}"
    )
    assert (gt50[1], gt50[2]) == (1, 3), f"id > 50: only the refreshed file is read: {gt50[1:]}"
    print(f"CSV through Connect: {out['csv_seconds']:.1f} s")
    assert out["slow"] == N_FILES and "no answer within" in out["slow_reason"], (
        f"a stopped process: every file is read, and why is known: {out}"
    )
    files, none_skipped, _, reason = out["slow_stats"]
    assert (files, none_skipped) == (N_FILES, 0) and "no answer within" in reason, (
        f"the stats of the scan say why it read every file: {out['slow_stats']}"
    )
    assert out["after_slow"] == KEPT, "a new process replaces the one that hung"
    assert out["killed"] == N_FILES and "exited" in out["killed_reason"], (
        f"a process killed mid-query: every file is read: {out}"
    )
    assert out["restarted"] == KEPT, "the next query skips again"
    assert out["enabled"] == KEPT and out["stats"] == [N_FILES, N_FILES - KEPT], out


# ------------------------------------------------------------------------------ spark-sql


def _metric_in_event_logs(directory, name: str = "number of files read") -> int:
    """A SQL metric (Spark's "number of files read" by default) summed over the event logs in
    ``directory`` (the driver's updates: what the SQL UI shows)."""
    ids, total = set(), 0
    updates = []

    def plan_metrics(plan):
        for m in plan.get("metrics", ()):
            if m.get("name") == name:
                ids.add(m["accumulatorId"])
        for child in plan.get("children", ()):
            plan_metrics(child)

    for path in glob.glob(os.path.join(directory, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path) as f:
            for line in f:
                event = json.loads(line)
                kind = event.get("Event", "")
                if kind.endswith(
                    ("SparkListenerSQLExecutionStart", "SparkListenerSQLAdaptiveExecutionUpdate")
                ):
                    plan_metrics(event["sparkPlanInfo"])
                elif kind.endswith("SparkListenerDriverAccumUpdates"):
                    updates.extend(event["accumUpdates"])
    for acc, value in updates:
        if acc in ids:
            total += int(value)
    return total


def _spark_sql(env, tmp_path, table, name, extra_conf=()) -> tuple:
    import pyspark

    spark_sql = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-sql")
    events = tmp_path / f"events-{name}"
    events.mkdir()
    conf = {
        "spark.sql.extensions": EXTENSION,
        "spark.jars": jar_path(),
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{events}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.catalogImplementation": "in-memory",  # no Hive metastore to set up
        "spark.sql.warehouse.dir": str(tmp_path / f"wh-{name}"),
        **dict(extra_conf),
    }
    args = [spark_sql, "--master", "local[2]"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    args += ["-e", f"SELECT count(*), sum(id) FROM parquet.`{table}` WHERE {WHERE}"]
    proc = subprocess.run(
        args, capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return (
        proc.stdout.strip().splitlines()[-1].split(),
        _metric_in_event_logs(events),
        proc.stderr,
        _metric_in_event_logs(events, "files skipped by metaindex"),
    )


@pytest.mark.slow
def test_spark_sql_by_conf_and_a_missing_python(table, tmp_path):
    """`spark-sql -e` with the conf skips (Spark's metric, from the event log); with a Python
    that does not exist it reads every file, returns the right answer and logs why."""
    env = _jre_only_env(tmp_path)
    result, read, _, skipped = _spark_sql(env, tmp_path, table, "ok")
    assert result == ["100", str(sum(range(100)))]
    assert read == KEPT, f"spark-sql read {read} files, not the {KEPT} kept"
    assert skipped == N_FILES - KEPT, f"the SQL UI's files skipped by metaindex: {skipped}"
    result, read, log, skipped = _spark_sql(
        env, tmp_path, table, "nopython", {"spark.metaindex.python": str(tmp_path / "no-python")}
    )
    assert result == ["100", str(sum(range(100)))], "a missing pruning process fails no query"
    assert read == N_FILES and skipped == 0
    assert "could not be started" in log and "spark.metaindex.python" in log, log[-3000:]


# ------------------------------------------------------------------------------ a Java app

JAVA_APP = textwrap.dedent("""
    import java.util.List;

    import org.apache.spark.sql.Row;
    import org.apache.spark.sql.SparkSession;
    import org.apache.spark.sql.classic.Dataset;
    import org.apache.spark.sql.execution.SparkPlan;
    import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;

    import scala.jdk.javaapi.CollectionConverters;

    /** Reads a table with a filter; prints its rows' count and sum and Spark's scan metrics. */
    public class SkipApp {
        static void walk(SparkPlan p, long[] acc) {
            if (p instanceof AdaptiveSparkPlanExec) {
                walk(((AdaptiveSparkPlanExec) p).executedPlan(), acc);
            }
            if (p.metrics().contains("numFiles")) {
                acc[0] += p.metrics().apply("numFiles").value();
            }
            if (p.metrics().contains("metaindexFilesSkipped")) {
                acc[1] += p.metrics().apply("metaindexFilesSkipped").value();
            }
            for (SparkPlan c : CollectionConverters.asJava(p.children())) {
                walk(c, acc);
            }
        }

        public static void main(String[] args) {
            SparkSession spark = SparkSession.builder().getOrCreate();
            Dataset<Row> df = (Dataset<Row>) spark.read().parquet(args[0]).where(args[1])
                    .select("id");
            List<Row> rows = df.collectAsList();
            long sum = 0;
            for (Row r : rows) {
                sum += r.getLong(0);
            }
            long[] m = new long[2];
            walk(df.queryExecution().executedPlan(), m);
            System.out.println("{\\"rows\\": " + rows.size() + ", \\"sum\\": " + sum
                    + ", \\"files_read\\": " + m[0] + ", \\"skipped\\": " + m[1] + "}");
            spark.stop();
        }
    }
""")


@pytest.mark.slow
def test_spark_submit_of_a_java_app_by_conf(table, tmp_path):
    """A Java application run by spark-submit with only --jars and the extension conf (no
    javac visible to Spark) reads the kept files only, by Spark's own metric, with the rows
    of skipping off."""
    import pyspark

    javac = jarbuild.javac()
    if javac is None:
        pytest.skip("no javac to compile the test's Java application")
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    src = tmp_path / "src"
    src.mkdir()
    (src / "SkipApp.java").write_text(JAVA_APP)
    classes = tmp_path / "classes"
    subprocess.run(
        [
            javac,
            "--release",
            "17",
            "-nowarn",
            "-d",
            str(classes),
            "-cp",
            os.path.join(jars, "*"),
            str(src / "SkipApp.java"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    app = tmp_path / "skipapp.jar"
    with zipfile.ZipFile(app, "w") as z:
        z.write(classes / "SkipApp.class", "SkipApp.class")
    env = _jre_only_env(tmp_path)  # compiled above; Spark itself sees no javac
    spark_submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")

    def submit(*conf):
        args = [
            spark_submit,
            "--master",
            "local[2]",
            "--class",
            "SkipApp",
            "--jars",
            jar_path(),
            "--conf",
            f"spark.sql.extensions={EXTENSION}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
        ]
        for c in conf:
            args += ["--conf", c]
        proc = subprocess.run(
            [*args, str(app), table, WHERE],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            cwd=str(tmp_path),
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])

    on = submit()
    off = submit("spark.metaindex.enabled=false")
    assert (on["rows"], on["sum"]) == (off["rows"], off["sum"]) == (100, sum(range(100))), (
        f"same rows with skipping on and off: {on} {off}"
    )
    assert on["files_read"] == KEPT and off["files_read"] == N_FILES, (
        f"Spark's files read: {on['files_read']} on, {off['files_read']} off"
    )
    assert on["skipped"] == N_FILES - KEPT and off["skipped"] == 0, (on, off)


# ------------------------------------------------------------------------------ Thrift server


@pytest.mark.slow
def test_thrift_server_by_conf(table, tmp_path):
    """The Thrift JDBC/ODBC server (pyspark's HiveThriftServer2) started with only the conf:
    a beeline query reads the kept files (Spark's metric, from the event log) with the right
    answer, and metaindex_last_query_stats() answers in the JDBC session."""
    import signal
    import socket
    import time

    import pyspark

    bin_dir = os.path.join(os.path.dirname(pyspark.__file__), "bin")
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not glob.glob(os.path.join(jars, "spark-hive-thriftserver_*.jar")):
        pytest.skip("this pyspark ships no Thrift server")
    env = _jre_only_env(tmp_path)
    events = tmp_path / "events"
    events.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = {
        "spark.sql.extensions": EXTENSION,
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{events}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.sql.warehouse.dir": str(tmp_path / "wh"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={tmp_path / 'metastore'};create=true"
        ),
    }
    args = [
        os.path.join(bin_dir, "spark-submit"),
        "--master",
        "local[2]",
        "--class",
        "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
        "--jars",
        jar_path(),
    ]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    args += [
        "--hiveconf",
        f"hive.server2.thrift.port={port}",
        "--hiveconf",
        "hive.server2.thrift.bind.host=127.0.0.1",
        "spark-internal",
    ]
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            args,
            env=env,
            cwd=str(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert server.poll() is None, log.read_text()[-4000:]
                assert time.monotonic() < deadline, "the Thrift server did not start"
                time.sleep(1)
        sql = (
            f"SELECT count(*), sum(id) FROM parquet.`{table}` WHERE {WHERE}; "
            "SELECT get_json_object(metaindex_last_query_stats(), "
            "'$.scans[0].files_skipped') AS skipped;"
        )
        done = subprocess.run(
            [
                os.path.join(bin_dir, "beeline"),
                "-u",
                f"jdbc:hive2://127.0.0.1:{port}",
                "-n",
                "test",
                "--silent=true",
                "--outputformat=tsv2",
                "-e",
                sql,
            ],
            env=env,
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # a clean stop writes out the event log
        try:
            server.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    lines = done.stdout.split()
    assert lines[lines.index("sum(id)") + 1 :][:2] == ["100", str(sum(range(100)))], done.stdout
    assert lines[lines.index("skipped") + 1] == str(N_FILES - KEPT), done.stdout
    assert _metric_in_event_logs(events) == KEPT, "Spark read only the kept files"
    assert _metric_in_event_logs(events, "files skipped by metaindex") == N_FILES - KEPT
