"""xskipper's own Python tests and documentation snippets, run against metaindex.xskipper.

Both come from the mirror of the public xskipper repository at test time (nothing of
xskipper's is kept here): the two test modules are copied into a temporary directory with
only their import lines changed, the snippets are extracted by ``tests.spark.xskipper_docs``.
Each runs in its own Python process and Spark session (xskipper's tests stop their session
after every test, and the xskipper face keeps process-wide configuration).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.spark.conftest import _java_missing

MIRROR = os.environ.get("XSKIPPER_MIRROR", "/work/.mirror/xskipper-io+xskipper/repo")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_MODULES = (
    "python/xskipper/tests/test_xskipper.py",
    "python/xskipper/tests/test_registration.py",
)

pytestmark = pytest.mark.slow


def _skip_reason() -> str | None:
    if not os.path.isdir(MIRROR):
        return f"no mirror of xskipper-io/xskipper at {MIRROR} (set XSKIPPER_MIRROR)"
    if shutil.which("git") is None:
        return "git is not installed"
    return _java_missing()


@pytest.fixture(scope="module")
def mirror():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("pyspark")
    return MIRROR


def _show(path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", MIRROR, "show", f"HEAD:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _import_rewrite(line: str) -> str:
    return re.sub(r"^(\s*)(from|import)\s+xskipper\b", r"\1\2 metaindex.xskipper", line)


def test_xskipper_python_tests_pass_with_only_the_imports_changed(mirror, tmp_path):
    for path in TEST_MODULES:
        original = _show(path).splitlines(keepends=True)
        copied = [_import_rewrite(line) for line in original]
        changed = [a for a, b in zip(original, copied, strict=True) if a != b]
        assert changed and all(re.match(r"\s*(from|import) xskipper\b", a) for a in changed), (
            f"only import lines may change in {path}: {changed}"
        )
        (tmp_path / os.path.basename(path)).write_text("".join(copied))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "test_registration.py",
            "test_xskipper.py",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, f"xskipper's tests failed on metaindex.xskipper:\n{tail}"
    assert re.search(r"\b6 passed\b", proc.stdout), f"expected xskipper's 6 tests:\n{tail}"
    assert not (tmp_path / "spark-warehouse").exists(), "the tests must not write to the cwd"


# Snippets that cannot run as written, and why (anything else must run).
_EXPECTED_FAILURES = {
    # A Scala idiom in a Python snippet: `false` is not a Python name (xskipper's own Python
    # API fails the same way).
    ("quick-start-guide.md", "show(false)"): "NameError: name 'false' is not defined",
    # xskipper's regex plugin is Scala code: refused with a typed error naming the class.
    (
        "indexing.md",
        "io.xskipper.plugins.regex",
    ): "UnsupportedFeatureError: 'io.xskipper.plugins.regex",
}


def test_xskipper_doc_snippets_run_with_only_the_import_changed(mirror, tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spark.xskipper_docs", MIRROR, str(out)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    results = json.loads(out.read_text())
    pages = {r["page"].rsplit("/", 1)[-1] for r in results}
    assert pages == {
        "quick-start-guide.md",
        "indexing.md",
        "encryption.md",
        "configuration.md",
        "parquet-mdstore-configuration.md",
    }
    assert len(results) >= 30, f"too few snippets found: {len(results)}"
    for r in results:
        page = r["page"].rsplit("/", 1)[-1]
        expected = next(
            (
                why
                for (p, marker), why in _EXPECTED_FAILURES.items()
                if p == page and marker in r["code"]
            ),
            None,
        )
        if expected is None:
            assert r["ok"], (
                f"{page} snippet {r['block']} failed: {r['error']}\n{r['code']}\n{r['extra']}"
            )
        else:
            assert not r["ok"] and r["error"].startswith(expected), (
                f"{page} snippet {r['block']}: expected {expected!r}, got {r['error']!r}"
            )
    encryption = [r["extra"] for r in results if r["page"].endswith("encryption.md")]
    assert len(encryption) == 2
    for sample, plaintext_footer in zip(encryption, (False, True), strict=True):
        assert sample["labels"] == {"temp": "k2", "city": None}, (
            "temp's index under key k2, city's in plaintext (no keyMetadata)"
        )
        assert sample["encryption"]["footer_key"] == "k1"
        assert sample["encryption"]["plaintext_footer"] is plaintext_footer
