"""The Java shim of automatic skipping: compiled on first use, loaded once per JVM.

The shim's sources live in ``metaindex/spark/java/`` (package ``io.metaindex.spark``). They are
compiled with ``javac --release 17`` against the running pyspark's jars and cached as a jar
under ``$XDG_CACHE_HOME/metaindex`` (default ``~/.cache/metaindex``), named by the Spark version
and the SHA-256 of the sources; the jar is written to a temporary file and renamed into place,
so processes compiling at once never see a partial jar.

The driver loads the jar through its own ``URLClassLoader`` whose parent is the loader of
Spark's classes (executors never need the classes). A JVM must hold one copy only — a second
copy from another loader breaks py4j's method cache — so the loader is kept per gateway for
the life of the process. py4j resolves classes through the calling thread's context class
loader, so :func:`calling` sets ours around every call that names a shim class (handing a
Python callback to Java included).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile

from metaindex.errors import MetaIndexError

__all__ = ["PACKAGE", "ShimUnavailable", "cache_dir", "shim_jar", "load", "loaded", "calling"]

PACKAGE = "io.metaindex.spark"
_SOURCES = os.path.join(os.path.dirname(__file__), "java")
_lock = threading.Lock()
_loaders: dict = {}  # id(gateway) -> (gateway, JVM URLClassLoader)

_NO_SHIM = ("automatic skipping needs the metaindex Java shim, compiled with javac against "
            "this Spark's jars: {why}. Use the data source instead, which needs no JVM code: "
            "spark.read.format(\"metaindex\").load(path) (it also works under Spark Connect)")


class ShimUnavailable(MetaIndexError):
    """The Java shim cannot be built or loaded here (no JDK, no Spark jars, compile error)."""


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/metaindex`` (default ``~/.cache/metaindex``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "metaindex")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "javac")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("javac")


def _spark_jars() -> str:
    import pyspark

    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not os.path.isdir(jars) and os.environ.get("SPARK_HOME"):
        jars = os.path.join(os.environ["SPARK_HOME"], "jars")
    if not os.path.isdir(jars):
        raise ShimUnavailable(_NO_SHIM.format(why=f"no Spark jars directory ({jars})"))
    return jars


def _sources() -> list:
    return sorted(os.path.join(_SOURCES, n) for n in os.listdir(_SOURCES) if n.endswith(".java"))


def shim_jar(spark_version: str) -> str:
    """The path of the shim jar for ``spark_version``, compiling it if the cache lacks it.

    Raises:
        ShimUnavailable: no ``javac`` (JDK), no Spark jars, or the sources do not compile
            against this Spark.
    """
    digest = hashlib.sha256(spark_version.encode())
    for path in _sources():
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    directory = cache_dir()
    jar = os.path.join(directory, f"metaindex-shim-{spark_version}-{digest.hexdigest()[:16]}.jar")
    if os.path.isfile(jar):
        return jar
    javac = _javac()
    if javac is None:
        raise ShimUnavailable(_NO_SHIM.format(why="no javac on PATH or under JAVA_HOME (a JDK "
                                                  "17+, not only a JRE)"))
    classpath = os.path.join(_spark_jars(), "*")
    os.makedirs(directory, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=directory)
    try:
        classes = os.path.join(work, "classes")
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-d", classes,
                               "-cp", classpath, *_sources()],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ShimUnavailable(_NO_SHIM.format(
                why=f"javac failed against Spark {spark_version}: "
                    f"{done.stderr.strip()[-2000:]}"))
        partial = os.path.join(work, "shim.jar")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for base, _, names in os.walk(classes):
                for name in sorted(names):
                    full = os.path.join(base, name)
                    z.write(full, os.path.relpath(full, classes).replace(os.sep, "/"))
        os.replace(partial, jar)  # atomic: a reader sees no jar or the whole jar
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return jar


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
            jar = shim_jar(spark.version)
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
