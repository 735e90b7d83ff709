"""One local Spark session for every test under tests/spark/.

Skips the Spark tests cleanly when pyspark or a Java runtime is missing. Spark's Python workers
run this interpreter (PYSPARK_PYTHON), and the driver binds to the loopback interface only.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys

import pytest

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _java_missing() -> str | None:
    """Why Spark cannot start here (None: a ``java`` is on PATH or under JAVA_HOME)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return None
    if shutil.which("java"):
        return None
    return "no Java runtime (java on PATH or JAVA_HOME): Spark needs a JDK 17+"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A SparkSession on local[2]: UI off, 2 shuffle partitions, UTC session time zone."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install pyspark)")
    reason = _java_missing()
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    scratch = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("metaindex-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.local.dir", str(scratch / "local"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


ENCRYPTION_CONF_KEYS = (
    "metaindex.encryption.kms",
    "metaindex.encryption.footer.key",
    "metaindex.encryption.index.keys",
)


def write_demo_keys(path, labels=("footer", "cols", "secret")) -> None:
    """A JSON key file for an ``inmemory:`` KMS spec: fresh random 128-bit keys per label."""
    path.write_text(
        json.dumps({label: base64.b64encode(os.urandom(16)).decode() for label in labels})
    )


@pytest.fixture
def encryption_conf(spark, tmp_path):
    """The shared session's store encryption on (an ``inmemory:`` KMS with labels footer,
    cols and secret; footer key "footer", index key "cols"); yields the key file and unsets the
    conf keys afterwards."""
    keys = tmp_path / "keys.json"
    write_demo_keys(keys)
    spark.conf.set("metaindex.encryption.kms", f"inmemory:{keys}")
    spark.conf.set("metaindex.encryption.footer.key", "footer")
    spark.conf.set("metaindex.encryption.index.keys", "cols")
    try:
        yield keys
    finally:
        for key in ENCRYPTION_CONF_KEYS:
            spark.conf.unset(key)
