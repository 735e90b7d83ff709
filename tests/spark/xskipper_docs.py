"""Run the Python snippets of xskipper's documentation against metaindex.xskipper.

Used by ``test_xskipper_upstream_spark.py``: the pages are read at test time from the public
xskipper repository's mirror (nothing of xskipper is kept in this repository). Each snippet
runs as written except for two edits, both ones the docs ask their readers to make:
``from xskipper`` becomes ``from metaindex.xskipper``, and the example locations
``"/tmp/data"`` / ``"/tmp/metadata"`` (marked "TODO: change to your ... location") point into
a temporary directory. A page's snippets run in order in one namespace, after a preamble that
defines what the page takes from an earlier page (``spark``, a sample dataset, ``reader``,
``xskipper``) and, for the encryption page, the KMS configuration the page leaves out.

``python -m tests.spark.xskipper_docs MIRROR_GIT_DIR OUT.json`` runs every page in one Spark
session (``local[2]``) and writes ``[{page, block, code, ok, error, extra}]``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import traceback

PAGES = (
    "site/docs/getting-started/quick-start-guide.md",
    "site/docs/api/indexing.md",
    "site/docs/api/encryption.md",
    "site/docs/api/configuration/configuration.md",
    "site/docs/api/configuration/parquet-mdstore-configuration.md",
)

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```[ \t]*python[ \t]*$", re.IGNORECASE)
_IMPORT = re.compile(r"^(\s*)(from|import)\s+xskipper\b", re.MULTILINE)


def python_blocks(markdown: str) -> list:
    """The fenced ``python`` code blocks of a Markdown page, dedented, in order."""
    lines = markdown.splitlines()
    out, i = [], 0
    while i < len(lines):
        found = _FENCE.match(lines[i])
        if not found:
            i += 1
            continue
        indent = found.group("indent")
        body, i = [], i + 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        out.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
        i += 1
    return out


def rewrite_imports(code: str) -> str:
    """``from xskipper ...`` / ``import xskipper`` lines pointed at ``metaindex.xskipper``."""
    return _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)} metaindex.xskipper", code)


def read_page(git_dir: str, page: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{page}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


_DATASET = """
from pyspark.sql.types import StructType, StructField, StringType, DoubleType
dataset_location = dataset_path = {data!r}
_schema = StructType([StructField(name, DoubleType() if name == "temp" else StringType(), True)
                      for name in ("dt", "temp", "city", "vid")])
_rows = [("2017-07-07", 20.0, "Tel-Aviv", "a"), ("2017-07-08", 30.0, "Jerusalem", "b")]
spark.createDataFrame(_rows, schema=_schema).write.partitionBy("dt").mode("overwrite") \
    .parquet(dataset_location)
reader = spark.read.format("parquet")
"""

_INSTANCE = """
from metaindex.xskipper import Xskipper
xskipper = Xskipper(spark, dataset_location)
if xskipper.isIndexed():
    xskipper.dropIndex()
"""


def _preamble(page: str, block: int, scratch: str, keys: str) -> str:
    data = os.path.join(scratch, "data")
    if page.endswith("quick-start-guide.md"):
        return "import pyspark\n"
    if page.endswith("indexing.md"):  # the page goes on from the quick-start's session
        return "from metaindex.xskipper import Xskipper\n" + (
            _DATASET.format(data=data) if block == 0 else ""
        )
    if page.endswith("encryption.md"):  # the PME configuration the page leaves out
        return (
            f"spark.conf.set('metaindex.encryption.kms', 'inmemory:{keys}')\n"
            + _DATASET.format(data=data)
            + _INSTANCE
        )
    if block == 0:
        return _DATASET.format(data=data) + _INSTANCE
    return ""


def _encryption_check(namespace) -> dict:
    """What the encryption sample built: key label per index column, footer label, mode."""
    index = namespace["xskipper"]._index()
    snap = index.core.snapshot()
    labels = {d.cols[0]: d.key_metadata for d in snap.index_defs}
    enc = snap.encryption.to_json() if snap.encryption is not None else None
    return {"labels": labels, "encryption": enc}


def run(git_dir: str) -> list:
    from pyspark.sql import SparkSession

    from metaindex.xskipper import Xskipper

    scratch = tempfile.mkdtemp(prefix="xskipper-docs-")
    keys = os.path.join(scratch, "keys.json")
    with open(keys, "w") as f:
        json.dump({k: base64.b64encode(os.urandom(16)).decode() for k in ("k1", "k2")}, f)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("xskipper-docs")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    try:
        for page in PAGES:
            blocks = python_blocks(read_page(git_dir, page))
            namespace: dict = {"spark": spark, "spark_session": spark}
            for i, block in enumerate(blocks):
                code = (
                    rewrite_imports(block)
                    .replace('"/tmp/data"', repr(os.path.join(scratch, "data")))
                    .replace('"/tmp/metadata"', repr(os.path.join(scratch, "metadata")))
                )
                if page.endswith("encryption.md"):
                    namespace = {"spark": spark}
                    Xskipper.reset(spark)
                result = {
                    "page": page,
                    "block": i,
                    "code": code,
                    "ok": True,
                    "error": None,
                    "extra": None,
                }
                try:
                    exec(
                        compile(_preamble(page, i, scratch, keys), f"<preamble {i}>", "exec"),
                        namespace,
                    )
                    exec(compile(code, f"<{page} block {i}>", "exec"), namespace)
                    if page.endswith("encryption.md"):
                        result["extra"] = _encryption_check(namespace)
                except Exception as exc:  # noqa: BLE001 - reported to the test
                    result.update(
                        ok=False,
                        error=f"{type(exc).__name__}: {exc}",
                        extra=traceback.format_exc()[-2000:],
                    )
                results.append(result)
            Xskipper.reset(spark)
            spark.conf.unset("metaindex.encryption.kms")
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return results


if __name__ == "__main__":
    out = run(sys.argv[1])
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, default=str)
