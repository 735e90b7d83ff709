"""Run the installed pyarrow's own Parquet tests on pyarrow, then with metaindex.parquet swapped in.

    python -m tests.pyarrow_suite.run [--verbose] [--min-ratio 0.95]

The tests come from the installed ``pyarrow/tests/parquet/`` package (six modules, below); the
plugin (``plugin.py``) swaps our names in and deselects the tests ``deselected.txt`` lists. The
denominator is the set of tests that pass on pyarrow in the same run; the exit status is 0 when at
least ``--min-ratio`` of them pass with ours. ``PARQUET_TEST_DATA`` (pyarrow's own variable) is
pointed at the parquet-testing corpus when ``tests/corpus.py`` finds it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODULES = [
    "test_basic",
    "test_data_types",
    "test_parquet_file",
    "test_parquet_writer",
    "test_metadata",
    "test_compliant_nested_type",
]
PASSED = ("passed", "xpassed")
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


def _suite_dir() -> Path:
    import pyarrow

    path = Path(pyarrow.__file__).parent / "tests" / "parquet"
    if not (path / "test_basic.py").is_file():
        raise SystemExit(
            f"pyarrow {pyarrow.__version__} was installed without its tests ({path} is missing)"
        )
    return path


def run_suite(swap: bool, extra_env: dict) -> tuple[dict[str, str], float, str]:
    """``({test: outcome}, seconds, pytest's summary line)`` of one run."""
    suite = _suite_dir()
    with tempfile.TemporaryDirectory(prefix="metaindex-pyarrow-suite-") as tmp:
        report = Path(tmp) / "report.jsonl"
        env = {
            **os.environ,
            **extra_env,
            "METAINDEX_SWAP": "1" if swap else "0",
            "METAINDEX_SUITE_REPORT": str(report),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            str(HERE / "suite.ini"),
            f"--rootdir={suite}",
            f"--basetemp={Path(tmp) / 'basetemp'}",
            "-p",
            "tests.pyarrow_suite.plugin",
            "--tb=no",
            "-o",
            "console_output_style=classic",
            *[str(suite / f"{m}.py") for m in MODULES],
        ]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        outcomes: dict[str, str] = {}
        if report.exists():
            for line in report.read_text().splitlines():
                rec = json.loads(line)
                old = outcomes.get(rec["test"])
                if old is None or _RANK[rec["outcome"]] > _RANK[old]:
                    outcomes[rec["test"]] = rec["outcome"]
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        summary = lines[-1] if lines else proc.stderr.strip()[-500:]
        if proc.returncode not in (0, 1) or not outcomes:
            raise SystemExit(
                f"pytest failed to run (exit {proc.returncode}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return outcomes, seconds, summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-ratio", type=float, default=0.95)
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="list every test that passes on pyarrow and fails with ours",
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from tests.corpus import parquet_testing_dir
    from tests.pyarrow_suite.plugin import deselections

    env = {}
    root, how = parquet_testing_dir()
    if root is not None:
        env["PARQUET_TEST_DATA"] = str(root / "data")
    base, base_s, base_line = run_suite(False, env)
    ours, ours_s, ours_line = run_suite(True, env)

    denominator = sorted(t for t, o in base.items() if o in PASSED)
    kept = [t for t in denominator if ours.get(t) in PASSED]
    lost = [t for t in denominator if ours.get(t) not in PASSED]
    ratio = len(kept) / len(denominator) if denominator else 0.0
    print(f"corpus for PARQUET_TEST_DATA: {how}")
    print(f"deselected by name: {len(deselections())} (tests/pyarrow_suite/deselected.txt)")
    print(f"pyarrow baseline: {base_line}  [{base_s:.1f} s]")
    print(f"metaindex swapped in: {ours_line}  [{ours_s:.1f} s]")
    print(
        f"passing on pyarrow: {len(denominator)}; also passing with metaindex: {len(kept)} "
        f"({ratio:.1%}); failing with metaindex: {len(lost)}"
    )
    if args.verbose or ratio < args.min_ratio:
        for t in lost:
            print(f"  {ours.get(t, 'not run')}: {t}")
    return 0 if ratio >= args.min_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
