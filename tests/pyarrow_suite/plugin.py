"""A pytest plugin that runs the installed pyarrow's own Parquet tests against metaindex.parquet.

Loaded with ``-p tests.pyarrow_suite.plugin`` by ``tests/pyarrow_suite/run.py``. With
``METAINDEX_SWAP=1`` every public name of ``metaindex.parquet`` that ``pyarrow.parquet`` also
defines (``write_table``, ``read_table``, ``ParquetFile``, ``ParquetWriter``, the metadata
classes, ...) replaces pyarrow's attribute before any test module is imported; pyarrow's tests
call them as ``pq.<name>``. Without it the run is the pyarrow baseline. Either way the tests
listed in ``deselected.txt`` are deselected, and with ``METAINDEX_SUITE_REPORT=<file>`` each
test's outcome is written there as one JSON object per line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

DESELECTED = Path(__file__).with_name("deselected.txt")


def deselections() -> dict[str, str]:
    """``{test name: reason}`` from ``deselected.txt`` (``name  # reason`` lines)."""
    out = {}
    for line in DESELECTED.read_text().splitlines():
        name, _, reason = line.partition("#")
        name, reason = name.strip(), reason.strip()
        if name:
            if not reason:
                raise ValueError(f"{DESELECTED.name}: {name} has no reason")
            out[name] = reason
    return out


def swapped_names() -> list[str]:
    import pyarrow.parquet as pq

    import metaindex.parquet as ours

    return sorted(n for n in ours.__all__ if hasattr(pq, n))


def pytest_configure(config):
    config.addinivalue_line("markers", "parquet: pyarrow's marker for its Parquet tests")
    if os.environ.get("METAINDEX_SWAP") == "1":
        import pyarrow.parquet as pq

        import metaindex.parquet as ours

        for name in swapped_names():
            setattr(pq, name, getattr(ours, name))


def pytest_report_header(config):
    if os.environ.get("METAINDEX_SWAP") == "1":
        return "metaindex.parquet swapped in for pyarrow.parquet: " + ", ".join(swapped_names())
    return "pyarrow.parquet baseline (nothing swapped)"


def pytest_collection_modifyitems(config, items):
    names = deselections()
    keep, drop = [], []
    for item in items:
        base = item.name.split("[", 1)[0]
        (drop if item.name in names or base in names else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    path = os.environ.get("METAINDEX_SUITE_REPORT")
    if not path:
        return
    outcome = None
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.outcome == "passed" else "xfailed"
        elif report.when == "setup" and report.outcome == "failed":
            outcome = "error"
    elif report.when == "teardown" and report.outcome == "failed":
        outcome = "error"
    if outcome is not None:
        with open(path, "a") as f:
            f.write(json.dumps({"test": report.nodeid, "outcome": outcome}) + "\n")
