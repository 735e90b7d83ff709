"""pyarrow's own Parquet tests, run with metaindex.parquet swapped in (``run.py``): at least 95%
of the tests that pass on pyarrow must pass with ours. The counts are printed (``make test``
shows them; ``make pyarrow-suite`` lists every test that fails with ours)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.pyarrow_suite.run import REPO

pytest.importorskip("pandas")  # pyarrow's suite needs it for most of its tests


@pytest.mark.slow
def test_pyarrow_parquet_suite_passes_with_metaindex_swapped_in(capsys):
    proc = subprocess.run(
        [sys.executable, "-m", "tests.pyarrow_suite.run", "--min-ratio", "0.95"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    with capsys.disabled():
        print("\n" + proc.stdout.strip())
    assert proc.returncode == 0, (
        f"fewer than 95% of pyarrow's passing tests pass with "
        f"metaindex.parquet:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )
