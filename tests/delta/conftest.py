"""Delta tables written by the real writers, once per test run.

delta-spark: no Delta release supports pyspark 4.3 (the shared venv's) yet. The newest,
delta-spark 4.4.0 (``io.delta:delta-spark_2.13:4.4.0`` on Maven Central), is built against
Spark 4.2.0, so the tables are written by pyspark 4.2.0 in its own venv, created in the test
cache on first use (:func:`tests.toolcache.venv`), with the delta-spark jars Maven
fetches into the cache (:func:`tests.toolcache.maven_classpath`); a second run fetches nothing.
:mod:`tests.delta.spark_writer` runs there as a subprocess and records what delta-spark says
each table holds (the oracle); tables and oracle are kept in the cache too (see
:func:`spark_tables`).

deltalake (delta-rs, a test extra) writes in this process.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

DELTA_SPARK = "4.4.0"
"""The delta-spark release the tables are written with."""
SPARK = "4.2.0"
"""The Spark line delta-spark 4.4.0 is built for (its POM's spark-sql version)."""

_JAR_STEM = re.compile(r"-\d[\w.\-]*\.jar$")


def delta_spark_python() -> str:
    from tests.toolcache import venv

    return venv(f"pyspark-{SPARK}", f"pyspark=={SPARK}")


def delta_spark_jars(python: str) -> list:
    """delta-spark and the dependencies pyspark does not already ship (its own Hadoop,
    Jackson, Parquet and Scala jars stay the ones Spark was built with)."""
    from tests.toolcache import maven_classpath

    jars = maven_classpath(
        f"delta-spark-{DELTA_SPARK}",
        [f"io.delta:delta-spark_2.13:{DELTA_SPARK}"],
        f"fetching delta-spark {DELTA_SPARK} from Maven Central",
    )
    site = subprocess.run(
        [python, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shipped = {
        _JAR_STEM.sub("", os.path.basename(j))
        for j in glob.glob(os.path.join(site, "jars", "*.jar"))
    }
    return [j for j in jars if _JAR_STEM.sub("", os.path.basename(j)) not in shipped]


def delta_spark_command(with_metaindex: bool = False) -> tuple:
    """``(python, jars, env)`` to run a script under delta-spark: the python of the pyspark
    venv delta-spark supports, the jars for ``spark.jars`` (comma-separated: delta-spark's,
    and with ``with_metaindex`` metaindex's jar of that Spark line) and the environment (no
    ``PYSPARK*`` / ``SPARK_*`` variables, an empty ``PYTHONPATH``; ``METAINDEX_SITE``: this
    venv's packages, which a driver importing metaindex appends to its path)."""
    import sysconfig

    python = delta_spark_python()
    jars = delta_spark_jars(python)
    if with_metaindex:
        from metaindex.spark import jar_path

        jars.append(jar_path(SPARK))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    env["PYTHONPATH"] = ""
    env["METAINDEX_SITE"] = sysconfig.get_paths()["purelib"]
    return python, ",".join(jars), env


def _write_tables(out: str) -> None:
    python, jars, env = delta_spark_command()
    done = subprocess.run(
        [python, _WRITER, out, jars],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"delta-spark writer failed ({done.returncode}):\n{done.stderr[-6000:]}")


_WRITER = os.path.join(os.path.dirname(__file__), "spark_writer.py")


@pytest.fixture(scope="session")
def spark_tables(tmp_path_factory):
    """``(directory, oracle)``: the tables :mod:`tests.delta.spark_writer` wrote with
    delta-spark, and what delta-spark said about each version.

    Writing them takes minutes (a JVM, ~50 Delta operations, a Spark job per version), so the
    written tables and the oracle are kept in the test cache, keyed by the delta-spark release
    and the writer's own source: a run after the first (or after ``METAINDEX_TEST_CACHE`` is
    cleared, or the writer changes) compares against them without starting Spark. The tests
    get a copy (modification times kept: time travel reads them)."""
    with open(_WRITER, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:12]
    from tests.toolcache import cached_directory

    cached = cached_directory(f"delta-tables-{DELTA_SPARK}-{key}", _write_tables)
    out = str(tmp_path_factory.mktemp("delta-spark") / "tables")
    shutil.copytree(cached, out)
    with open(os.path.join(out, "oracle.json")) as f:
        oracle = json.load(f)
    print(
        f"delta-spark {DELTA_SPARK} on Spark {oracle['_meta']['spark']}: "
        f"{oracle['_meta']['timings']}",
        file=sys.stderr,
    )
    return out, oracle
