"""Test tools fetched from the package registries on first use and cached between runs: the
Azurite storage emulator (npm), the Hadoop S3A jars Spark needs to read ``s3a://`` and any other
jars with their dependencies (Maven Central, :func:`maven_classpath`), and Python environments a
test runs in a subprocess (PyPI, :func:`venv`: e.g. a pyspark line the shared venv does
not have). Each is installed once per version under :func:`cache_dir`, behind a file lock so two
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
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "metaindex-test"
    )
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
        done = subprocess.run(
            [tool, *args[1:]], capture_output=True, text=True, timeout=timeout, **kw
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolUnavailable(f"{what}: {' '.join(args)} ran over {timeout} s") from exc
    if done.returncode != 0:
        raise ToolUnavailable(
            f"{what}: {' '.join(args)} exited {done.returncode}:\n"
            f"{(done.stdout + done.stderr)[-3000:]}"
        )
    return done.stdout


def azurite_blob(version: str = AZURITE_VERSION) -> str:
    """The ``azurite-blob`` executable of Azurite ``version``, installed with npm into the
    cache on first use."""
    home = os.path.join(cache_dir(), f"azurite-{version}")
    exe = os.path.join(home, "node_modules", ".bin", "azurite-blob")
    with locked(f"azurite-{version}"):
        if not os.access(exe, os.X_OK):
            os.makedirs(home, exist_ok=True)
            _run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    home,
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    f"azurite@{version}",
                ],
                f"installing Azurite {version}",
                900,
            )
        if not os.access(exe, os.X_OK):
            raise ToolUnavailable(f"npm installed azurite@{version} but {exe} is missing")
    return exe


def pyspark_hadoop_version() -> str:
    """The Hadoop version pyspark bundles (from its ``hadoop-client-api-<v>.jar``)."""
    import pyspark

    jars = glob.glob(
        os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*.jar")
    )
    found = [re.search(r"hadoop-client-api-(.+)\.jar$", j) for j in jars]
    versions = sorted(m.group(1) for m in found if m)
    if not versions:
        raise ToolUnavailable(
            "pyspark ships no hadoop-client-api jar to take Hadoop's version from"
        )
    return versions[-1]


_POM = textwrap.dedent("""\
    <project xmlns="http://maven.apache.org/POM/4.0.0">
      <modelVersion>4.0.0</modelVersion>
      <groupId>io.metaindex.tests</groupId>
      <artifactId>{name}</artifactId>
      <version>1</version>
      <packaging>pom</packaging>
      <dependencies>
    {dependencies}
      </dependencies>
    </project>
    """)

_DEPENDENCY = (
    "    <dependency><groupId>{0}</groupId><artifactId>{1}</artifactId>"
    "<version>{2}</version></dependency>"
)


def maven_classpath(name: str, artifacts: list, what: str) -> list:
    """The runtime classpath of Maven ``artifacts`` (``"group:artifact:version"`` strings) and
    their dependencies, resolved by Maven from Maven Central into ``<cache>/<name>/m2`` on
    first use; later runs read the classpath Maven wrote and download nothing. ``what`` says
    what is being fetched, for the error when it fails."""
    home = os.path.join(cache_dir(), name)
    classpath = os.path.join(home, "classpath.txt")
    with locked(name):
        jars = _read_classpath(classpath)
        if not jars:
            os.makedirs(home, exist_ok=True)
            dependencies = "\n".join(_DEPENDENCY.format(*a.split(":")) for a in artifacts)
            with open(os.path.join(home, "pom.xml"), "w") as f:
                f.write(_POM.format(name=name, dependencies=dependencies))
            _run(
                [
                    "mvn",
                    "-B",
                    "-q",
                    "-f",
                    os.path.join(home, "pom.xml"),
                    f"-Dmaven.repo.local={os.path.join(home, 'm2')}",
                    "dependency:build-classpath",
                    "-Dmdep.includeScope=runtime",
                    f"-Dmdep.outputFile={classpath}",
                ],
                what,
                1800,
            )
            jars = _read_classpath(classpath)
        for artifact in artifacts:
            stem = artifact.split(":")[1] + "-"
            if not any(os.path.basename(j).startswith(stem) for j in jars):
                raise ToolUnavailable(f"Maven resolved no {stem}*.jar into {classpath}")
    return jars


def s3a_jars(hadoop_version: str | None = None) -> list:
    """The jar files Spark needs for ``s3a://`` with pyspark's Hadoop: ``hadoop-aws`` of that
    version and its runtime dependencies (the AWS SDK v2 bundle among them; ``hadoop-common``
    is pyspark's own), from Maven Central into the cache (:func:`maven_classpath`)."""
    version = hadoop_version or pyspark_hadoop_version()
    return maven_classpath(
        f"s3a-{version}",
        [f"org.apache.hadoop:hadoop-aws:{version}"],
        f"fetching hadoop-aws {version} and its dependencies from Maven Central",
    )


def cached_directory(name: str, build) -> str:
    """``<cache>/<name>``, made by ``build(path)`` on first use (into a temporary directory
    renamed into place when ``build`` returns, so a failed or killed build leaves nothing
    that looks done)."""
    home = os.path.join(cache_dir(), name)
    with locked(name):
        if not os.path.isdir(home):
            partial = home + ".partial"
            shutil.rmtree(partial, ignore_errors=True)
            os.makedirs(partial)
            build(partial)
            os.rename(partial, home)
    return home


def _read_classpath(path: str) -> list:
    try:
        with open(path) as f:
            jars = [j for j in f.read().strip().split(os.pathsep) if j]
    except FileNotFoundError:
        return []
    return jars if jars and all(os.path.isfile(j) for j in jars) else []


def clean_env() -> dict:
    """This environment without what would leak this checkout or pip settings into a venv's
    installs and builds."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PIP_NO_BUILD_ISOLATION", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(name, None)
    return env


def venv(name: str, *requirements: str) -> str:
    """The python of the cached venv ``name`` with ``requirements`` installed from PyPI (made
    once, in a temporary directory renamed into place, so an interrupted run leaves none)."""
    import sys

    path = os.path.join(cache_dir(), name)
    python = os.path.join(path, "bin", "python")
    with locked(name):
        if not os.path.isfile(os.path.join(path, ".complete")):
            partial = path + f".partial-{os.getpid()}"
            shutil.rmtree(partial, ignore_errors=True)
            _run(
                [sys.executable, "-m", "venv", partial], f"making venv {name}", 300, env=clean_env()
            )
            _run(
                [
                    os.path.join(partial, "bin", "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    *requirements,
                ],
                f"installing {requirements} into {name}",
                3000,
                env=clean_env(),
            )
            open(os.path.join(partial, ".complete"), "w").close()
            shutil.rmtree(path, ignore_errors=True)
            os.rename(partial, path)  # venv scripts name the partial path: call bin/python -m
    return python


XSKIPPER_VERSION = "1.6.0"
XSKIPPER_SOURCE_ENV = "METAINDEX_XSKIPPER_SOURCE"


def xskipper_jar(pyspark_jars: str, version: str = XSKIPPER_VERSION) -> str:
    """The jar of the real xskipper ``version`` (Scala 2.12, for Spark 3.5), cached.

    First use: Maven Central's ``io.xskipper:xskipper-core_2.12:<version>``; where Maven
    Central does not serve it, the jar is compiled from xskipper's own sources at tag
    ``v<version>`` with the Scala compiler pyspark 3.5 ships (``scala-compiler-2.12.18.jar``),
    against pyspark's jars. The sources are a git repository or checkout of
    xskipper-io/xskipper named by ``$METAINDEX_XSKIPPER_SOURCE``, else ``xskipper-src`` in the
    cache, else the workplace's mirror (``$XSKIPPER_MIRROR``, as the upstream-suite test
    finds it). Nothing is fetched once the jar is cached.
    """
    home = os.path.join(cache_dir(), f"xskipper-{version}")
    jar = os.path.join(home, f"xskipper-core_2.12-{version}.jar")
    with locked(f"xskipper-{version}"):
        if os.path.isfile(jar):
            return jar
        os.makedirs(home, exist_ok=True)
        try:
            _run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    f"-Dmaven.repo.local={os.path.join(home, 'm2')}",
                    "dependency:copy",
                    f"-Dartifact=io.xskipper:xskipper-core_2.12:{version}",
                    f"-DoutputDirectory={home}",
                ],
                "fetching xskipper from Maven Central",
                600,
            )
            if os.path.isfile(jar):
                return jar
        except ToolUnavailable:
            pass  # not served: build it from its sources
        _build_xskipper(home, jar, version, pyspark_jars)
    return jar


_XSKIPPER_MIRROR = os.environ.get("XSKIPPER_MIRROR", "/work/.mirror/xskipper-io+xskipper/repo")


def _build_xskipper(home: str, jar: str, version: str, pyspark_jars: str) -> None:
    source = os.environ.get(XSKIPPER_SOURCE_ENV) or os.path.join(cache_dir(), "xskipper-src")
    if not os.path.exists(source) and not os.environ.get(XSKIPPER_SOURCE_ENV):
        source = _XSKIPPER_MIRROR  # the workplace's git mirror, where there is one
    if not os.path.exists(source):
        raise ToolUnavailable(
            f"xskipper {version} is not on Maven Central and no source is at {source}: set "
            f"{XSKIPPER_SOURCE_ENV} to a git repository or checkout of xskipper-io/xskipper"
        )
    tree = os.path.join(home, "src")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    git_dir = (
        source if os.path.isfile(os.path.join(source, "HEAD")) else os.path.join(source, ".git")
    )
    if os.path.exists(git_dir):
        archive = os.path.join(home, "src.tar")
        _run(
            [
                "git",
                f"--git-dir={git_dir}",
                "archive",
                "-o",
                archive,
                f"v{version}",
                "src/main/scala",
            ],
            "exporting xskipper's sources",
            300,
        )
        _run(["tar", "-xf", archive, "-C", tree], "unpacking xskipper's sources", 300)
    else:
        shutil.copytree(
            os.path.join(source, "src", "main", "scala"), os.path.join(tree, "src", "main", "scala")
        )
    sources = sorted(glob.glob(os.path.join(tree, "src/main/scala/**/*.scala"), recursive=True))
    scala = [
        os.path.join(pyspark_jars, f"scala-{n}-2.12.18.jar")
        for n in ("compiler", "library", "reflect")
    ]
    if not sources or not all(os.path.isfile(j) for j in scala):
        raise ToolUnavailable(
            f"no Scala sources under {tree}, or pyspark at {pyspark_jars} "
            "ships no Scala 2.12.18 compiler"
        )
    classes = os.path.join(home, "classes")
    shutil.rmtree(classes, ignore_errors=True)
    os.makedirs(classes)
    _run(
        [
            "java",
            "-Xmx2g",
            "-cp",
            ":".join(scala),
            "scala.tools.nsc.Main",
            "-nowarn",
            "-classpath",
            os.path.join(pyspark_jars, "*"),
            "-d",
            classes,
            *sources,
        ],
        "compiling xskipper",
        1800,
    )
    partial = jar + ".partial"
    _run(["jar", "cf", partial, "-C", classes, "."], "packaging xskipper", 300)
    os.rename(partial, jar)
