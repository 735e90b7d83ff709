"""Compile the Java shim (``metaindex/spark/java/``) into a jar: once at package build time
(``setup.py``), and at run time only for a Spark line the shipped jar was not built for.

Standard library only: ``setup.py`` loads this file by path, before metaindex is importable.
The jar carries ``META-INF/metaindex-spark.properties``: the Spark version it was compiled
against and the SHA-256 of the sources, so a stale or foreign jar is recognised.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile

__all__ = ["SOURCES", "PROPERTIES", "JarBuildError", "javac", "sources", "sources_digest",
           "spark_jars_dir", "spark_version_of", "jar_properties", "spark_line", "compile_jar"]

SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
PROPERTIES = "META-INF/metaindex-spark.properties"
_SPARK_SQL_JAR = re.compile(r"^spark-sql_\d+\.\d+-(\d+\.\d+\.\d+.*)\.jar$")


class JarBuildError(Exception):
    """The jar cannot be compiled here (no javac, no Spark jars, a compile error)."""


def javac() -> str | None:
    """``$JAVA_HOME/bin/javac`` if executable, else ``javac`` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "javac")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("javac")


def sources() -> list:
    """The shim's ``.java`` files, sorted."""
    return sorted(os.path.join(SOURCES, n) for n in os.listdir(SOURCES) if n.endswith(".java"))


def sources_digest() -> str:
    """SHA-256 (hex) over the shim's source names and contents."""
    digest = hashlib.sha256()
    for path in sources():
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def spark_jars_dir(pyspark_dir: str | None) -> str | None:
    """Spark's jars: ``<pyspark>/jars``, else ``$SPARK_HOME/jars``; None when neither exists."""
    candidates = [os.path.join(pyspark_dir, "jars")] if pyspark_dir else []
    if os.environ.get("SPARK_HOME"):
        candidates.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    for c in candidates:
        if os.path.isdir(c):
            return c
    return None


def spark_version_of(jars_dir: str) -> str | None:
    """The Spark version of a jars directory (from its ``spark-sql_2.13-X.jar``)."""
    for name in os.listdir(jars_dir):
        m = _SPARK_SQL_JAR.match(name)
        if m:
            return m.group(1)
    return None


def spark_line(version: str) -> str:
    """``major.minor`` of a Spark version ("4.3.0" -> "4.3")."""
    return ".".join(version.split(".")[:2])


def jar_properties(jar: str) -> dict:
    """The ``key=value`` lines of the jar's properties entry ({} when it has none)."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(PROPERTIES).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            out[key.strip()] = value.strip()
    return out


def compile_jar(jars_dir: str, out: str, spark_version: str) -> str:
    """Compile the sources with ``javac --release 17`` against ``jars_dir`` into ``out``.

    The jar is written next to ``out`` and renamed into place, so a reader sees no jar or the
    whole jar. Returns ``out``.

    Raises:
        JarBuildError: no javac, or the sources do not compile against these jars.
    """
    compiler = javac()
    if compiler is None:
        raise JarBuildError("no javac on PATH or under JAVA_HOME (a JDK 17+, not only a JRE)")
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=directory)
    try:
        classes = os.path.join(work, "classes")
        done = subprocess.run([compiler, "--release", "17", "-nowarn", "-d", classes,
                               "-cp", os.path.join(jars_dir, "*"), *sources()],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JarBuildError(f"javac failed against Spark {spark_version}: "
                                f"{done.stderr.strip()[-2000:]}")
        partial = os.path.join(work, "shim.jar")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n"
                       "Created-By: metaindex\r\n\r\n")
            z.writestr(PROPERTIES, f"spark.version={spark_version}\n"
                                   f"sources.sha256={sources_digest()}\n")
            for base, _, names in sorted(os.walk(classes)):
                for name in sorted(names):
                    full = os.path.join(base, name)
                    z.write(full, os.path.relpath(full, classes).replace(os.sep, "/"))
        os.replace(partial, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out
