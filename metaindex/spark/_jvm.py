"""The Java shim of automatic skipping: shipped compiled, loaded once per JVM.

The shim's sources live in ``metaindex/spark/java/`` (package ``io.metaindex.spark``). The
package build compiles them against the installed pyspark's jars into
``metaindex/spark/jars/metaindex-spark.jar`` (:func:`jar_path`), the jar that
``spark.jars`` names for the extension (``spark.sql.extensions=io.metaindex.spark.
MetaIndexExtensions``). Only for a Spark line the shipped jar was not built for (or a build
without a JDK) is the shim compiled at run time with ``javac --release 17`` and cached under
``$XDG_CACHE_HOME/metaindex`` (default ``~/.cache/metaindex``), named by the Spark version and
the SHA-256 of the sources (:func:`shim_jar`).

``enable(spark)`` uses the classes already on the driver's class path when the jar was given
with ``spark.jars`` (or ``--jars``, ``ADD JAR``); otherwise it loads the jar through its own
``URLClassLoader`` whose parent is the loader of Spark's classes (executors never need the
classes). A JVM must hold one copy only — a second copy from another loader breaks py4j's
method cache — so the loader is kept per gateway for the life of the process. py4j resolves
classes through the calling thread's context class loader, so :func:`calling` sets ours around
every call that names a shim class (handing a Python callback to Java included).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading

from metaindex.errors import MetaIndexError
from metaindex.spark import jarbuild

__all__ = ["PACKAGE", "SHIPPED_JAR", "ShimUnavailable", "cache_dir", "jar_path", "shim_jar",
           "load", "loaded", "on_class_path", "calling"]

PACKAGE = "io.metaindex.spark"
SHIPPED_JAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars",
                           "metaindex-spark.jar")
"""Where the package build puts the compiled shim."""

_lock = threading.Lock()
_loaders: dict = {}  # id(gateway) -> (gateway, JVM URLClassLoader)

_NO_SHIM = ("automatic skipping needs the metaindex Java shim: {why}. Reinstall metaindex "
            "from a build that ships metaindex/spark/jars/metaindex-spark.jar (built when a "
            "JDK and pyspark are present at build time), or use the data source, which needs "
            "no JVM code: spark.read.format(\"metaindex\").load(path)")


class ShimUnavailable(MetaIndexError):
    """The Java shim cannot be found, built or loaded here (no shipped jar and no JDK, no
    Spark jars, compile error)."""


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/metaindex`` (default ``~/.cache/metaindex``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "metaindex")


def _javac() -> str | None:
    return jarbuild.javac()


def _pyspark_dir() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _spark_jars() -> str:
    jars = jarbuild.spark_jars_dir(_pyspark_dir())
    if jars is None:
        raise ShimUnavailable(_NO_SHIM.format(why="no Spark jars directory (pyspark/jars or "
                                                  "$SPARK_HOME/jars)"))
    return jars


def _installed_spark_version() -> str | None:
    jars = jarbuild.spark_jars_dir(_pyspark_dir())
    return jarbuild.spark_version_of(jars) if jars else None


def jar_path(spark_version: str | None = None) -> str:
    """The jar holding the metaindex Spark extension and shim, for ``spark.jars``/``--jars``.

    The jar shipped in the package when it was built for ``spark_version``'s line (default:
    the installed pyspark's) from these sources; else one compiled for that version at run
    time (needs a JDK; cached); else, without a JDK, the shipped jar as it is.

    Raises:
        ShimUnavailable: no shipped jar and it cannot be compiled here.
    """
    version = spark_version or _installed_spark_version()
    shipped = os.path.isfile(SHIPPED_JAR)
    if shipped:
        props = jarbuild.jar_properties(SHIPPED_JAR)
        built_for = props.get("spark.version")
        fresh = props.get("sources.sha256") == jarbuild.sources_digest()
        if fresh and (version is None or built_for is None
                      or jarbuild.spark_line(built_for) == jarbuild.spark_line(version)):
            return SHIPPED_JAR
    if version is not None and _javac() is not None:
        return shim_jar(version)
    if shipped:
        return SHIPPED_JAR
    if version is None:
        raise ShimUnavailable(_NO_SHIM.format(why="no shipped jar and no Spark installation "
                                                  "to compile one against"))
    return shim_jar(version)  # raises: no javac


def shim_jar(spark_version: str) -> str:
    """The path of a shim jar compiled for ``spark_version``, compiling it if the cache lacks
    it (the run-time fallback of :func:`jar_path`).

    Raises:
        ShimUnavailable: no ``javac`` (JDK), no Spark jars, or the sources do not compile
            against this Spark.
    """
    digest = jarbuild.sources_digest()
    tag = hashlib.sha256(f"{spark_version}\0{digest}".encode()).hexdigest()[:16]
    jar = os.path.join(cache_dir(), f"metaindex-shim-{spark_version}-{tag}.jar")
    if os.path.isfile(jar):
        return jar
    if _javac() is None:
        raise ShimUnavailable(_NO_SHIM.format(
            why="no shipped jar for Spark " + spark_version + ", and no javac on PATH or under "
                "JAVA_HOME (a JDK 17+, not only a JRE) to compile one"))
    try:
        return jarbuild.compile_jar(_spark_jars(), jar, spark_version)
    except jarbuild.JarBuildError as e:
        raise ShimUnavailable(_NO_SHIM.format(why=str(e))) from e


def load(spark):
    """The JVM class loader holding the shim for ``spark``'s JVM (built and loaded once).

    Raises:
        ShimUnavailable: see :func:`shim_jar`, or the JVM refused the jar.
    """
    gateway = spark.sparkContext._gateway
    with _lock:
        known = _loaders.get(id(gateway))
        if known is not None and known[0] is gateway:
            return known[1]
        jvm = gateway.jvm
        loader = _already_visible(jvm)
        if loader is None:
            jar = jar_path(spark.version)
            urls = gateway.new_array(jvm.java.net.URL, 1)
            urls[0] = jvm.java.io.File(jar).toURI().toURL()
            parent = spark._jsparkSession.getClass().getClassLoader()
            loader = jvm.java.net.URLClassLoader(urls, parent)
            try:
                loader.loadClass(PACKAGE + ".MetaIndexRule")
            except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's error
                raise ShimUnavailable(_NO_SHIM.format(why=f"the JVM could not load {jar}: "
                                                          f"{e}")) from e
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
