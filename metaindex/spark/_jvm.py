"""The Java shim of automatic skipping: shipped compiled, one jar per Spark line, loaded once
per JVM.

The shim's sources live in ``jvm/`` (package ``io.metaindex.spark``; the one class that differs
between Spark lines is ``SparkCompat``). The package build compiles them with Maven against each
supported line's Spark into ``metaindex/spark/jars/metaindex-spark-<line>_<scala>.jar``
(:mod:`metaindex.spark.jarbuild`); each jar records the Spark lines it runs on.
:func:`jar_path` picks the one for the running Spark, for ``spark.jars`` with the extension
(``spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions``). Nothing is compiled at run
time: a JRE is enough. A Spark line no jar is for raises :class:`UnsupportedSparkError`
(:func:`supported_lines` lists the lines).

``enable(spark)`` uses the classes already on the driver's class path when the jar was given
with ``spark.jars`` (or ``--jars``, ``ADD JAR``), after checking they are the right line's;
otherwise it loads the jar through its own ``URLClassLoader`` whose parent is the loader of
Spark's classes (executors never need the classes). A JVM must hold one copy only — a second
copy from another loader breaks py4j's method cache — so the loader is kept per gateway for the
life of the process. py4j resolves classes through the calling thread's context class loader,
so :func:`calling` sets ours around every call that names a shim class (handing a Python
callback to Java included).
"""

from __future__ import annotations

import contextlib
import os
import threading

from metaindex.errors import MetaIndexError, UnsupportedVersionError
from metaindex.spark import jarbuild

__all__ = [
    "PACKAGE",
    "JARS_DIR",
    "ShimUnavailable",
    "UnsupportedSparkError",
    "shipped_jars",
    "supported_lines",
    "jar_path",
    "load",
    "loaded",
    "on_class_path",
    "calling",
]

PACKAGE = "io.metaindex.spark"
JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")
"""Where the package build puts the compiled shim, one jar per Spark line."""

_lock = threading.Lock()
_loaders: dict = {}  # id(gateway) -> (gateway, JVM URLClassLoader)

_NO_SHIM = (
    "automatic skipping needs the metaindex Java shim: {why}. The data source needs no "
    'JVM code: spark.read.format("metaindex").load(path)'
)


class ShimUnavailable(MetaIndexError):
    """The Java shim cannot be found or loaded here (an installation without its jars, jars
    older than the sources of this tree, the JVM refused the jar)."""


class UnsupportedSparkError(ShimUnavailable, UnsupportedVersionError):
    """The running Spark is of a line metaindex ships no jar for (the message lists the
    supported lines; ``metaindex jar`` exits 8, unsupported)."""


def shipped_jars() -> dict:
    """``{line: jar path}`` for every Spark line a shipped jar runs on."""
    out: dict[str, str] = {}
    names = sorted(os.listdir(JARS_DIR)) if os.path.isdir(JARS_DIR) else []
    for name in names:
        if name.endswith(".jar"):
            jar = os.path.join(JARS_DIR, name)
            for line in jarbuild.jar_lines(jar):
                out.setdefault(line, jar)
    return out


def _line_key(line: str):
    return tuple(int(p) if p.isdigit() else 0 for p in line.split("."))


def supported_lines() -> list:
    """The Spark lines (``major.minor``) this installation has a jar for, oldest first."""
    return sorted(shipped_jars(), key=_line_key)


def _installed_spark_version() -> str | None:
    """The installed pyspark's version (None without pyspark)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python 3.10+ has it
        return None
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return None


def jar_path(spark_version: str | None = None) -> str:
    """The jar holding the metaindex Spark extension and shim for ``spark_version`` (default:
    the installed pyspark's), for ``spark.jars``/``--jars``: the shipped jar of its line.

    Raises:
        UnsupportedSparkError: no shipped jar is for that Spark line (the message lists the
            lines that have one).
        ShimUnavailable: this installation carries no jars, the version is not known (no
            pyspark and none given), or (in a source tree) the jars are older than ``jvm/``.
    """
    version = spark_version or _installed_spark_version()
    jars = shipped_jars()
    if not jars:
        raise ShimUnavailable(
            _NO_SHIM.format(
                why=f"this installation of metaindex has no jars in {JARS_DIR} (built without "
                "Maven? `make jars` in a source tree)"
            )
        )
    if version is None:
        raise ShimUnavailable(
            _NO_SHIM.format(
                why="no pyspark is installed to tell the Spark version; pass it (`metaindex jar "
                "--spark-version X.Y.Z`)"
            )
        )
    line = jarbuild.spark_line(version)
    jar = jars.get(line)
    if jar is None:
        raise UnsupportedSparkError(
            f"metaindex has no jar for Spark {version}: the supported Spark lines are "
            f"{', '.join(supported_lines())}. Automatic skipping is off; "
            'the data source spark.read.format("metaindex") needs no jar'
        )
    digest = jarbuild.sources_digest()
    if digest is not None and jarbuild.jar_properties(jar).get("sources.sha256") != digest:
        raise ShimUnavailable(
            _NO_SHIM.format(
                why=f"{jar} was built from other sources than {jarbuild.JVM_DIR}; rebuild the jars "
                "(`make jars`)"
            )
        )
    return jar


def load(spark):
    """The JVM class loader holding the shim for ``spark``'s JVM (loaded once): the jar of
    its Spark line, or the shim already on the driver's class path when that is the jar of
    this line.

    Raises:
        UnsupportedSparkError: no jar is for this Spark line.
        ShimUnavailable: see :func:`jar_path`; the class path holds another line's jar; the
            JVM refused the jar.
    """
    gateway = spark.sparkContext._gateway
    with _lock:
        known = _loaders.get(id(gateway))
        if known is not None and known[0] is gateway:
            return known[1]
        jvm = gateway.jvm
        jar = jar_path(spark.version)
        loader = _already_visible(jvm)
        if loader is not None:
            mismatch = jvm.io.metaindex.spark.ShimBuild.mismatch()
            if mismatch is not None:
                raise ShimUnavailable(f"{mismatch}. enable(spark) needs this line's jar: {jar}")
        else:
            urls = gateway.new_array(jvm.java.net.URL, 1)
            urls[0] = jvm.java.io.File(jar).toURI().toURL()
            parent = spark._jsparkSession.getClass().getClassLoader()
            loader = jvm.java.net.URLClassLoader(urls, parent)
            try:
                loader.loadClass(PACKAGE + ".MetaIndexRule")
            except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's error
                raise ShimUnavailable(
                    _NO_SHIM.format(why=f"the JVM could not load {jar}: {e}")
                ) from e
        _loaders[id(gateway)] = (gateway, loader)
        return loader


def loaded(spark) -> bool:
    """Whether this process already loaded the shim into ``spark``'s JVM."""
    gateway = spark.sparkContext._gateway
    with _lock:
        known = _loaders.get(id(gateway))
    return known is not None and known[0] is gateway


def on_class_path(spark) -> bool:
    """Whether the shim's classes come from the driver's own class path (``spark.jars``,
    ``--jars``), which the extension uses too, rather than from a loader of ours."""
    return _already_visible(spark.sparkContext._gateway.jvm) is not None


def _already_visible(jvm):
    """The context class loader of this thread when it already resolves the shim (a user
    added the jar with ADD JAR or --jars); else None."""
    current = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(PACKAGE + ".MetaIndexRule", False, current)
    except Exception:  # noqa: BLE001 - ClassNotFoundException through py4j
        return None
    return current


@contextlib.contextmanager
def calling(spark):
    """Within the block, py4j resolves the shim's classes (``jvm.io.metaindex.spark.X``) on
    this thread; the thread's previous context class loader is restored afterwards."""
    loader = load(spark)
    thread = spark.sparkContext._gateway.jvm.java.lang.Thread.currentThread()
    previous = thread.getContextClassLoader()
    thread.setContextClassLoader(loader)
    try:
        yield spark.sparkContext._gateway.jvm
    finally:
        thread.setContextClassLoader(previous)
