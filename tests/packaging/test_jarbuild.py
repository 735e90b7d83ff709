"""The Maven build of the Spark jars as the package build drives it (metaindex.spark.jarbuild):
one module per line, the sources it digests, and what a machine without Maven or a JDK is
told."""

from __future__ import annotations

import os

import pytest

from metaindex.spark import jarbuild


def test_a_module_per_spark_line():
    """jvm/pom.xml: one jar per line, 3.5 on Scala 2.12, 4.x on 2.13, the 4.2 jar also for
    4.3."""
    modules = jarbuild.modules()
    assert [name for _, name, _ in modules] == [
        "metaindex-spark-3.5_2.12.jar",
        "metaindex-spark-4.0_2.13.jar",
        "metaindex-spark-4.1_2.13.jar",
        "metaindex-spark-4.2_2.13.jar",
    ]
    assert [lines for _, _, lines in modules] == [["3.5"], ["4.0"], ["4.1"], ["4.2", "4.3"]]
    assert jarbuild.expected_jars() == [name for _, name, _ in modules]


def test_sources_are_what_maven_reads():
    """The digest covers the poms, the shared sources, every compat class and the resources,
    and nothing Maven writes (target/)."""
    rel = [os.path.relpath(p, jarbuild.JVM_DIR) for p in jarbuild.sources()]
    for path in (
        "pom.xml",
        "spark-3.5/pom.xml",
        "spark-4.2/pom.xml",
        "src/main/java/io/metaindex/spark/MetaIndexRule.java",
        "src/compat-3.5/java/io/metaindex/spark/SparkCompat.java",
        "src/compat-4/java/io/metaindex/spark/SparkCompat.java",
        "src/main/resources/META-INF/metaindex-spark.properties",
    ):
        assert path in rel
    assert not [p for p in rel if "target" in p.split(os.sep)]
    assert len(jarbuild.sources_digest()) == 64


def test_no_maven_or_jdk_is_named(tmp_path, monkeypatch):
    """Without Maven and a JDK the build fails before running anything, naming both."""
    monkeypatch.setenv("MVN", str(tmp_path / "no-mvn"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert jarbuild.missing_tools() == [
        "Maven (`mvn` on PATH, or $MVN)",
        "a JDK 17+ (`javac` on PATH or under $JAVA_HOME; a JRE is not enough)",
    ]
    with pytest.raises(jarbuild.JarBuildError, match=r"missing Maven .*; a JDK 17\+"):
        jarbuild.build_jars(str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_spark_line():
    assert [jarbuild.spark_line(v) for v in ("3.5.9", "4.3.0", "4.1.0rc1", "4.2")] == [
        "3.5",
        "4.3",
        "4.1",
        "4.2",
    ]
