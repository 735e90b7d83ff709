"""Shared benchmark helpers: median timing, machine description, table printing."""

from __future__ import annotations

import os
import platform
import statistics
import time


def median_time(fn, runs: int = 5, warmup: int = 1, clock=time.perf_counter) -> float:
    """Median time of ``fn()`` in seconds over ``runs`` runs after ``warmup`` runs, by
    ``clock`` (wall time; ``time.process_time`` for this process's CPU time)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    import pyarrow

    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, pyarrow {pyarrow.__version__}"
    )


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min) as text, to print beside every figure a
    benchmark takes on a shared machine."""
    try:
        with open("/proc/loadavg") as fh:
            return "load average " + ", ".join(fh.read().split()[:3])
    except OSError:
        return "load average unknown"


def single_thread() -> None:
    """Pin Arrow (and BLAS) to one thread so ratios compare single-threaded kernels."""
    import pyarrow

    pyarrow.set_cpu_count(1)
    pyarrow.set_io_thread_count(1)


def print_table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    text = "\n".join(lines)
    print(text)
    return text


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)
