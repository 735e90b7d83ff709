"""Build the Java shim's jars, one per supported Spark line, with Maven (``jvm/``).

Used at package build time only (``setup.py``: ``make build``, ``pip wheel .``, ``pip install
.``) and by ``make jars``; never at run time, where :mod:`metaindex.spark._jvm` picks the
shipped jar for the running Spark.

``jvm/pom.xml`` lists a module per line (``jvm/spark-<line>/pom.xml``: the Spark and Scala
versions compiled against, and the lines the jar runs on). Maven compiles the sources against
each line's Spark jars from Maven Central (cached in the local Maven repository, ``~/.m2`` by
default) and writes ``META-INF/metaindex-spark.properties`` into each jar: ``spark.lines``,
``spark.version``, ``scala.binary`` and ``sources.sha256`` (the SHA-256 of everything under
``jvm/`` that the build reads), so a stale or foreign jar is recognised.

Standard library only: ``setup.py`` loads this file by path, before metaindex is importable.
Environment: ``MVN`` (default ``mvn`` on PATH), ``METAINDEX_MAVEN_ARGS`` (extra arguments,
e.g. ``-o`` to stay offline).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zipfile

__all__ = [
    "JVM_DIR",
    "PROPERTIES",
    "JarBuildError",
    "sources",
    "sources_digest",
    "modules",
    "expected_jars",
    "jar_properties",
    "jar_lines",
    "spark_line",
    "up_to_date",
    "javac",
    "missing_tools",
    "build_jars",
    "main",
]

JVM_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "jvm"
)
"""The Maven build (present in a source tree or sdist, absent from an installed wheel)."""
PROPERTIES = "META-INF/metaindex-spark.properties"
_POM = "{http://maven.apache.org/POM/4.0.0}"
_BUILD_INPUT = re.compile(r"\.(java|xml|properties)$")


class JarBuildError(Exception):
    """The jars cannot be built here (no Maven or JDK, a compile or download error)."""


def sources() -> list:
    """Every file under ``jvm/`` the Maven build reads (poms, Java sources, resources),
    sorted; [] without ``jvm/``."""
    out: list[str] = []
    for base, dirs, names in os.walk(JVM_DIR):
        dirs[:] = sorted(d for d in dirs if d != "target" and not d.startswith("."))
        out.extend(os.path.join(base, n) for n in names if _BUILD_INPUT.search(n))
    return sorted(out)


def sources_digest() -> str | None:
    """SHA-256 (hex) over the build's file paths (relative to ``jvm/``) and contents; None
    without ``jvm/``."""
    files = sources()
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            rel = os.path.relpath(path, JVM_DIR).replace(os.sep, "/")
            digest.update(rel.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def _text(element, tag: str) -> str | None:
    found = element.find(f"{_POM}properties/{_POM}{tag}")
    return found.text.strip() if found is not None and found.text else None


def modules() -> list:
    """``(module directory, jar file name, lines)`` of every module of ``jvm/pom.xml``."""
    parent = ET.parse(os.path.join(JVM_DIR, "pom.xml")).getroot()
    out = []
    for m in parent.iter(f"{_POM}module"):
        directory = os.path.join(JVM_DIR, (m.text or "").strip())
        pom = ET.parse(os.path.join(directory, "pom.xml")).getroot()
        line, scala = _text(pom, "spark.line"), _text(pom, "scala.binary")
        if line is None or scala is None:
            raise JarBuildError(f"{directory}/pom.xml sets no spark.line or scala.binary")
        lines = (_text(pom, "spark.lines") or line).split(",")
        out.append((directory, f"metaindex-spark-{line}_{scala}.jar", [x.strip() for x in lines]))
    return out


def expected_jars() -> list:
    """The jar file names a complete build makes (from ``jvm/``)."""
    return [name for _, name, _ in modules()]


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
        if sep and not line.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def jar_lines(jar: str) -> list:
    """The Spark lines a jar runs on (its ``spark.lines``)."""
    return [x.strip() for x in jar_properties(jar).get("spark.lines", "").split(",") if x.strip()]


def spark_line(version: str) -> str:
    """``major.minor`` of a Spark version ("4.3.0" -> "4.3")."""
    return ".".join(str(version).split(".")[:2])


def up_to_date(directory: str) -> bool:
    """Whether ``directory`` holds every jar of ``jvm/``, each built from these sources."""
    digest = sources_digest()
    if digest is None:
        return False
    for name in expected_jars():
        if jar_properties(os.path.join(directory, name)).get("sources.sha256") != digest:
            return False
    return True


def _mvn() -> str | None:
    return shutil.which(os.environ.get("MVN") or "mvn")


def javac() -> str | None:
    """``$JAVA_HOME/bin/javac`` if executable, else ``javac`` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac")


def missing_tools() -> list:
    """What the build needs and this machine lacks (``jvm/``, Maven, a JDK), as phrases."""
    out = []
    if not os.path.isfile(os.path.join(JVM_DIR, "pom.xml")):
        out.append(f"the Maven build {JVM_DIR}/pom.xml")
    if _mvn() is None:
        out.append("Maven (`mvn` on PATH, or $MVN)")
    if javac() is None:
        out.append("a JDK 17+ (`javac` on PATH or under $JAVA_HOME; a JRE is not enough)")
    return out


def build_jars(directory: str) -> list:
    """Build every line's jar with Maven and put them in ``directory`` (each renamed into
    place whole); other ``*.jar`` files there (stale builds) are removed. Returns the paths.

    Raises:
        JarBuildError: a tool is missing (named), or Maven failed (its last output lines).
    """
    missing = missing_tools()
    if missing:
        raise JarBuildError("cannot build the Spark jars: missing " + "; ".join(missing))
    digest = sources_digest()
    mvn = _mvn()
    assert mvn is not None, "missing_tools() checked it"
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        os.path.join(JVM_DIR, "pom.xml"),
        f"-Dsources.sha256={digest}",
        *shlex.split(os.environ.get("METAINDEX_MAVEN_ARGS", "")),
        "package",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-40:])
        raise JarBuildError(f"Maven failed ({shlex.join(command)}):\n{tail}")
    os.makedirs(directory, exist_ok=True)
    out = []
    for module, name, _ in modules():
        built = os.path.join(module, "target", name)
        if jar_properties(built).get("sources.sha256") != digest:
            raise JarBuildError(f"Maven did not produce {built} from these sources")
        fd, partial = tempfile.mkstemp(prefix=".jar-", dir=directory)
        os.close(fd)
        shutil.copyfile(built, partial)
        os.chmod(partial, 0o644)
        os.replace(partial, os.path.join(directory, name))
        out.append(os.path.join(directory, name))
    keep = {os.path.basename(p) for p in out}
    for stale in os.listdir(directory):
        if stale.endswith(".jar") and stale not in keep:
            os.remove(os.path.join(directory, stale))
    return out


def main() -> int:
    """``python metaindex/spark/jarbuild.py``: the jars into ``metaindex/spark/jars/`` unless
    they are up to date (``make jars``)."""
    import sys

    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")
    if up_to_date(directory):
        print(f"metaindex: the Spark jars in {directory} are up to date")
        return 0
    try:
        built = build_jars(directory)
    except JarBuildError as e:
        print(f"metaindex: {e}", file=sys.stderr)
        return 1
    print("metaindex: built " + ", ".join(os.path.basename(p) for p in built))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
