"""Where the CLI's output goes: one JSON document on stdout (``--json``), or rich text for people;
progress bars and spinners on stderr, only when stderr is a terminal and output is not
``--json``/``--quiet``."""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import enum
import json
import math
import sys
import time
from typing import Any

__all__ = ["Output", "jsonable", "human_bytes"]


def jsonable(value):
    """``value`` made of JSON types: datetimes as ISO 8601, bytes as ``{"base64": ...}``,
    Decimals as strings, enums by name, non-finite floats as strings, sets sorted."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if hasattr(value, "item"):  # numpy scalars
        return jsonable(value.item())
    return str(value)


def human_bytes(n) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)  # unreachable


class Output:
    """Output settings of one command run.

    Args:
        json_mode: print exactly one JSON document on stdout and nothing else.
        quiet: no progress bars or spinners (results are still printed).
    """

    def __init__(self, json_mode: bool = False, quiet: bool = False):
        self.json_mode = json_mode
        self.quiet = quiet
        self._out: Any = None  # rich Consoles, made on first use (rich is imported lazily)
        self._err: Any = None

    @property
    def console(self):
        """The rich console for human output on stdout."""
        if self._out is None:
            from rich.console import Console

            # a terminal's own width; piped output is not wrapped at 80 columns
            width = None if sys.stdout.isatty() else 160
            self._out = Console(highlight=False, soft_wrap=False, width=width)
        return self._out

    @property
    def err_console(self):
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, highlight=False)
        return self._err

    @property
    def live(self) -> bool:
        """Whether to draw progress: a terminal on stderr, and neither --json nor --quiet."""
        return not (self.json_mode or self.quiet) and sys.stderr.isatty()

    def emit(self, doc, render=None) -> None:
        """The result: ``doc`` as JSON in ``--json`` mode, else ``render(console)``."""
        if self.json_mode:
            sys.stdout.write(json.dumps(jsonable(doc), indent=2, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        elif render is not None:
            render(self.console)

    def note(self, text: str) -> None:
        """A remark for people on stderr (never in --json or --quiet mode)."""
        if not (self.json_mode or self.quiet):
            self.err_console.print(text)

    @contextlib.contextmanager
    def status(self, text: str):
        """A spinner on stderr while the block runs (when :attr:`live`)."""
        if not self.live:
            yield
            return
        with self.err_console.status(text):
            yield

    @contextlib.contextmanager
    def progress(self, description: str, total_files: int | None, unit: str = "files"):
        """A progress bar over files; yields ``callback(done_tasks, total_tasks)`` (None when
        not :attr:`live`).

        The engine reports finished tasks (chunks of files); the bar shows files by scaling
        the task fraction to ``total_files`` (tasks when the file count is unknown). No bar
        when there is nothing to do (``total_files == 0``). ``unit`` names what is counted
        when the callback's own counts are shown (``total_files`` None).
        """
        if not self.live or total_files == 0:
            yield None
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        if total_files is None and unit == "files":
            unit = "tasks"
        columns = (
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
        )
        with Progress(*columns, console=self.err_console, refresh_per_second=10) as bar:
            task = bar.add_task(description, total=total_files or None, rate="", eta="")
            started = time.monotonic()

            def callback(done: int, total: int) -> None:
                if not total:
                    return
                goal = total_files or total
                completed = goal if done >= total else int(goal * done / total)
                # average over the run: tasks finish in bursts, so a windowed rate jumps
                rate = completed / max(time.monotonic() - started, 1e-3)
                eta = (goal - completed) / rate if rate else None
                bar.update(
                    task,
                    completed=completed,
                    total=goal,
                    rate=f"{rate:,.0f} {unit}/s" if completed else "",
                    eta="" if eta is None else f"ETA {int(eta) // 60}:{int(eta) % 60:02d}",
                )

            yield callback
