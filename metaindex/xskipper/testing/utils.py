"""``XskipperTestCase``: a unittest base with a local SparkSession per test, as xskipper's.

Each test gets ``self.spark`` (``local[2]``, UI off, driver on 127.0.0.1, a warehouse under a
temporary directory), stopped in ``tearDown`` so the next test starts with a fresh session.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import unittest

__all__ = ["XskipperTestCase"]


class XskipperTestCase(unittest.TestCase):
    def setUp(self):
        from pyspark.sql import SparkSession

        self._old_sys_path = list(sys.path)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        self._scratch = tempfile.mkdtemp(prefix="xskipper-test-")
        self.spark = (
            SparkSession.builder.master("local[2]")
            .appName(type(self).__name__)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.warehouse.dir", os.path.join(self._scratch, "warehouse"))
            .getOrCreate()
        )

    def tearDown(self):
        self.spark.stop()
        sys.path = self._old_sys_path
        shutil.rmtree(self._scratch, ignore_errors=True)
