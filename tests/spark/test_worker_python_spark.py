"""A Spark-task build whose Python workers run an interpreter without metaindex's dependencies
(PYSPARK_PYTHON pointing at a plain system Python) fails with a typed error that says to set
PYSPARK_PYTHON, not with a bare worker ModuleNotFoundError. Runs in its own process: the
worker Python is fixed when the SparkContext starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.spark.conftest import _java_missing

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCRIPT = r"""
import sys
import pyarrow as pa, pyarrow.parquet as pq
from pyspark.sql import SparkSession
from metaindex.spark import MetaIndex
from metaindex.spark.executor import SparkTaskError

root = sys.argv[1]
for i in range(2):
    pq.write_table(pa.table({"x": [i]}), f"{root}/t/part-{i}.parquet")
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.warehouse.dir", f"{root}/wh").getOrCreate())
try:
    MetaIndex(spark, f"{root}/t", store=f"{root}/store").index_builder() \
        .add_min_max_index("x").build(executor="spark")
    print("BUILT")
except SparkTaskError as e:
    print("SparkTaskError:", e)
finally:
    spark.stop()
"""


def _plain_python() -> str | None:
    """A system Python of this minor version without pyarrow (so without metaindex's deps)."""
    for candidate in (
        f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
        "/usr/bin/python3",
    ):
        if not os.access(candidate, os.X_OK) or os.path.realpath(candidate) == os.path.realpath(
            sys.executable
        ):
            continue
        probe = subprocess.run([candidate, "-c", "import pyarrow"], capture_output=True)
        if probe.returncode != 0:
            return candidate
    return None


def test_workers_without_metaindex_raise_a_pyspark_python_hint(tmp_path):
    pytest.importorskip("pyspark")
    reason = _java_missing()
    if reason:
        pytest.skip(reason)
    plain = _plain_python()
    if plain is None:
        pytest.skip("no system Python without pyarrow to run Spark's workers with")
    (tmp_path / "t").mkdir()
    env = dict(
        os.environ,
        PYSPARK_PYTHON=plain,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout
    assert "SparkTaskError:" in out, (out + proc.stderr)[-4000:]
    assert "PYSPARK_PYTHON" in out and "cannot import" in out, out
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*_log*")), (
        "nothing committed"
    )
    shutil.rmtree(tmp_path / "t")
