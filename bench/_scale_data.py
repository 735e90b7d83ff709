"""The data model of bench/scale.py: one appended, time-ordered table, described per file.

File ``i`` (0-based, in append order) of the table:

* ``ts`` (timestamp, microseconds, UTC): the file covers ``[T0 + i * STEP + jitter,
  ... + WIDTH]`` with ``STEP`` one minute, ``WIDTH`` 90 s and a jitter below 30 s, so
  neighbours overlap a little, as in a table appended in time order (min/max index);
* ``app`` (string): the application version that wrote the rows, ``v%07d`` of ``i //
  FILES_PER_APP`` and, for files written during a roll-out, the next one or two versions: 1 to 3
  distinct values per file that drift with time (value-list index);
* ``req`` (int64): request ids, unique to the file, ``i * ROWS_PER_FILE + k`` (bloom index).

The same functions give the synthetic stores their metadata (vectorised, no data files) and
the real table its rows, so both answer the same predicates with the same files.
"""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

T0 = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z, in microseconds
STEP = 60_000_000  # one file per minute
WIDTH = 90_000_000
JITTER = 30_000_000
FILES_PER_APP = 1024
ROWS_PER_FILE = 16  # request ids per file (the bloom's distinct values)
SCHEMA = pa.schema(
    [("ts", pa.timestamp("us", tz="UTC")), ("app", pa.string()), ("req", pa.int64())]
)


def file_bounds(first: int, count: int, seed: int) -> tuple:
    """(min, max) of ``ts`` in microseconds for files ``first .. first + count - 1``."""
    rng = np.random.default_rng((seed, first))
    i = np.arange(first, first + count, dtype=np.int64)
    lo = T0 + i * STEP + rng.integers(0, JITTER, count)
    return lo, lo + WIDTH


def file_apps(first: int, count: int, seed: int) -> tuple:
    """(version numbers as a flat int64 array, per-file value counts) of ``app``: 1 to 3
    consecutive versions per file, the first ``i // FILES_PER_APP``."""
    rng = np.random.default_rng((seed, first, 1))
    i = np.arange(first, first + count, dtype=np.int64)
    k = rng.choice(np.array([1, 2, 3]), count, p=[0.7, 0.2, 0.1])
    base = np.repeat(i // FILES_PER_APP, k)
    offsets = np.concatenate([[0], np.cumsum(k)[:-1]])
    within = np.arange(int(k.sum())) - np.repeat(offsets, k)
    return base + within, k


def app_names(numbers) -> pa.Array:
    """``v%07d`` strings of version numbers (vectorised)."""
    digits = pc.utf8_lpad(pa.array(np.asarray(numbers, np.int64)).cast(pa.string()), 7, "0")
    return pc.binary_join_element_wise("v", digits, "")


def file_names(first: int, count: int) -> pa.Array:
    """``part-%09d.parquet`` object names (vectorised)."""
    digits = pc.utf8_lpad(
        pa.array(np.arange(first, first + count, dtype=np.int64)).cast(pa.string()), 9, "0"
    )
    return pc.binary_join_element_wise("part-", digits, ".parquet", "")


def request_ids(first: int, count: int) -> np.ndarray:
    """The request ids of files ``first ..``, shape ``(count, ROWS_PER_FILE)``."""
    i = np.arange(first, first + count, dtype=np.int64)
    return i[:, None] * ROWS_PER_FILE + np.arange(ROWS_PER_FILE, dtype=np.int64)


def ts_literal(micros: int) -> str:
    when = datetime.datetime.fromtimestamp(micros / 1e6, datetime.timezone.utc)
    return f"TIMESTAMP '{when.strftime('%Y-%m-%d %H:%M:%S')}'"


def predicates(n: int) -> dict:
    """The measured predicates over a table of ``n`` files, by name: a selective one on each
    index kind (about 0.1 % of the files by time range, one app version of 1,024 files, one
    request id) and an unselective one (every file)."""
    a = n * 6 // 10
    w = max(n // 1000, 1)
    app = a // FILES_PER_APP
    req = int(request_ids(a + 7, 1)[0, 3])
    return {
        "minmax": f"ts >= {ts_literal(T0 + a * STEP)} AND ts < {ts_literal(T0 + (a + w) * STEP)}",
        "valuelist": f"app = 'v{app:07d}'",
        "bloom": f"req = {req}",
        "unselective": f"ts >= {ts_literal(T0)}",
    }


def file_rows(i: int, seed: int) -> pa.Table:
    """The rows of real file ``i``: ``ROWS_PER_FILE`` rows inside the file's ``ts`` range,
    its app versions, its request ids."""
    lo, hi = file_bounds(i, 1, seed)
    rng = np.random.default_rng((seed, i, 2))
    ts = np.sort(rng.integers(lo[0], hi[0] + 1, ROWS_PER_FILE))
    ts[0], ts[-1] = lo[0], hi[0]
    versions, _ = file_apps(i, 1, seed)
    apps = np.resize(versions, ROWS_PER_FILE)
    return pa.table(
        [pa.array(ts, SCHEMA.field("ts").type), app_names(apps), pa.array(request_ids(i, 1)[0])],
        schema=SCHEMA,
    )
