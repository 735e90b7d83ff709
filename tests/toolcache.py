"""Test tools fetched from the package registries on first use and cached between runs: the
Azurite storage emulator (npm) and the Hadoop S3A jars Spark needs to read ``s3a://`` (Maven
Central). Each is installed once per version under :func:`cache_dir`, behind a file lock so two
test runs on one machine do not install it twice at the same time.

The cache is ``$METAINDEX_TEST_CACHE``, else ``$XDG_CACHE_HOME/metaindex-test``, else
``~/.cache/metaindex-test``. A missing tool (no ``npm``, no ``mvn``, the registry unreachable)
raises :class:`ToolUnavailable` with what failed; the fixtures turn that into a test failure,
not a skip, because these tests are part of ``make test``.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import re
import shutil
import subprocess
import textwrap

AZURITE_VERSION = "3.37.0"


class ToolUnavailable(RuntimeError):
    """A test tool could not be installed (what was run and what it said)."""


def cache_dir() -> str:
    root = os.environ.get("METAINDEX_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "metaindex-test")
    os.makedirs(root, exist_ok=True)
    return root


@contextlib.contextmanager
def locked(name: str):
    """Hold the cache's file lock ``name`` (one installer at a time per machine)."""
    with open(os.path.join(cache_dir(), f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(args: list, what: str, timeout: int, **kw) -> str:
    tool = shutil.which(args[0])
    if tool is None:
        raise ToolUnavailable(f"{what}: {args[0]} is not on PATH")
    try:
        done = subprocess.run([tool, *args[1:]], capture_output=True, text=True,
                              timeout=timeout, **kw)
    except subprocess.TimeoutExpired as exc:
        raise ToolUnavailable(f"{what}: {' '.join(args)} ran over {timeout} s") from exc
    if done.returncode != 0:
        raise ToolUnavailable(f"{what}: {' '.join(args)} exited {done.returncode}:\n"
                              f"{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def azurite_blob(version: str = AZURITE_VERSION) -> str:
    """The ``azurite-blob`` executable of Azurite ``version``, installed with npm into the
    cache on first use."""
    home = os.path.join(cache_dir(), f"azurite-{version}")
    exe = os.path.join(home, "node_modules", ".bin", "azurite-blob")
    with locked(f"azurite-{version}"):
        if not os.access(exe, os.X_OK):
            os.makedirs(home, exist_ok=True)
            _run(["npm", "install", "--prefix", home, "--no-audit", "--no-fund",
                  "--no-save", f"azurite@{version}"], f"installing Azurite {version}", 900)
        if not os.access(exe, os.X_OK):
            raise ToolUnavailable(f"npm installed azurite@{version} but {exe} is missing")
    return exe


def pyspark_hadoop_version() -> str:
    """The Hadoop version pyspark bundles (from its ``hadoop-client-api-<v>.jar``)."""
    import pyspark

    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars",
                                  "hadoop-client-api-*.jar"))
    found = [re.search(r"hadoop-client-api-(.+)\.jar$", j) for j in jars]
    versions = sorted(m.group(1) for m in found if m)
    if not versions:
        raise ToolUnavailable("pyspark ships no hadoop-client-api jar to take Hadoop's "
                              "version from")
    return versions[-1]


_S3A_POM = textwrap.dedent("""\
    <project xmlns="http://maven.apache.org/POM/4.0.0">
      <modelVersion>4.0.0</modelVersion>
      <groupId>io.metaindex.tests</groupId>
      <artifactId>s3a-jars</artifactId>
      <version>1</version>
      <packaging>pom</packaging>
      <dependencies>
        <dependency>
          <groupId>org.apache.hadoop</groupId>
          <artifactId>hadoop-aws</artifactId>
          <version>{version}</version>
        </dependency>
      </dependencies>
    </project>
    """)


def s3a_jars(hadoop_version: str | None = None) -> list:
    """The jar files Spark needs for ``s3a://`` with pyspark's Hadoop: ``hadoop-aws`` of that
    version and its runtime dependencies (the AWS SDK v2 bundle among them; ``hadoop-common``
    is pyspark's own), resolved by Maven from Maven Central into the cache's local repository
    on first use; later runs read the classpath Maven wrote and download nothing."""
    version = hadoop_version or pyspark_hadoop_version()
    home = os.path.join(cache_dir(), f"s3a-{version}")
    classpath = os.path.join(home, "classpath.txt")
    with locked(f"s3a-{version}"):
        jars = _read_classpath(classpath)
        if not jars:
            os.makedirs(home, exist_ok=True)
            with open(os.path.join(home, "pom.xml"), "w") as f:
                f.write(_S3A_POM.format(version=version))
            _run(["mvn", "-B", "-q", "-f", os.path.join(home, "pom.xml"),
                  f"-Dmaven.repo.local={os.path.join(home, 'm2')}",
                  "dependency:build-classpath", "-Dmdep.includeScope=runtime",
                  f"-Dmdep.outputFile={classpath}"],
                 f"fetching hadoop-aws {version} and its dependencies from Maven Central", 1800)
            jars = _read_classpath(classpath)
        if not any(os.path.basename(j).startswith("hadoop-aws-") for j in jars):
            raise ToolUnavailable(f"Maven resolved no hadoop-aws jar into {classpath}")
    return jars


def _read_classpath(path: str) -> list:
    try:
        with open(path) as f:
            jars = [j for j in f.read().strip().split(os.pathsep) if j]
    except FileNotFoundError:
        return []
    return jars if jars and all(os.path.isfile(j) for j in jars) else []
