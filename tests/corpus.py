"""apache/parquet-testing, the Parquet implementations' shared corpus, for tests that read it.

Never copied into this repository: taken from ``$PARQUET_TESTING_DIR`` (a checkout, holding
``data/`` and ``bad_data/``), or else extracted once from a git mirror
(``$PARQUET_TESTING_MIRROR``, default ``/work/.mirror/apache+parquet-testing/repo``) into the
temp directory, keyed by the mirror's commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DEFAULT_MIRROR = "/work/.mirror/apache+parquet-testing/repo"


def parquet_testing_dir() -> tuple[Path | None, str]:
    """``(root, how)``: the corpus root and where it came from, or ``(None, why not)``."""
    given = os.environ.get("PARQUET_TESTING_DIR")
    if given:
        root = Path(given)
        if (root / "data").is_dir():
            return root, f"PARQUET_TESTING_DIR={given}"
        return None, f"PARQUET_TESTING_DIR={given} has no data/ directory"
    mirror = os.environ.get("PARQUET_TESTING_MIRROR", DEFAULT_MIRROR)
    if not os.path.isdir(mirror) or shutil.which("git") is None:
        return None, (
            "no parquet-testing corpus: set PARQUET_TESTING_DIR to a checkout of "
            f"apache/parquet-testing (no git mirror at {mirror})"
        )
    git = ["git", f"--git-dir={mirror}"]
    try:
        commit = subprocess.run(
            git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
    except subprocess.CalledProcessError as exc:
        return None, f"git mirror {mirror} unreadable: {exc.stderr.strip()}"
    root = Path(tempfile.gettempdir()) / f"metaindex-parquet-testing-{commit[:12]}"
    if not (root / "data").is_dir():
        staging = Path(tempfile.mkdtemp(prefix="metaindex-parquet-testing-"))
        archive = subprocess.run(
            git + ["archive", "--format=tar", commit, "data", "bad_data"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(staging)], input=archive, check=True)
        try:
            staging.rename(root)
        except OSError:  # another process extracted it first
            shutil.rmtree(staging, ignore_errors=True)
    return root, f"git mirror {mirror} at {commit[:12]}"
