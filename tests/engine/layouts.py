"""Tables laid out on purpose, for the effectiveness and advice tests."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_FILES = 40
ROWS = 250


def write_copies(root, seed: int = 7) -> dict:
    """The same rows as 40 files twice: ``clustered`` (sorted by x, cut in 40) and
    ``random`` (shuffled); columns x (float), day (timestamp, follows x), city, id.
    Returns {name: directory}."""
    rng = np.random.default_rng(seed)
    n = N_FILES * ROWS
    x = rng.uniform(0, 1000, n)
    data = {
        "x": x,
        "day": pa.array((x * 86_400e6).astype(np.int64), pa.timestamp("us")),
        "city": rng.choice([f"city-{i}" for i in range(8)], n),
        "id": rng.permutation(n),
    }
    out = {}
    for name, order in (("clustered", np.argsort(x)), ("random", rng.permutation(n))):
        table = pa.table(data).take(pa.array(order))
        path = os.path.join(root, name)
        os.makedirs(path)
        for f in range(N_FILES):
            pq.write_table(table.slice(f * ROWS, ROWS), os.path.join(path, f"part-{f:03d}.parquet"))
        out[name] = path
    return out


def write_two_columns(root, files: int = 32, rows: int = 300, seed: int = 3) -> str:
    """Independent uniform columns a (float) and b (int), rows in random order."""
    rng = np.random.default_rng(seed)
    n = files * rows
    table = pa.table({"a": rng.uniform(-5, 5, n), "b": rng.integers(0, 1_000_000, n)})
    os.makedirs(root)
    for f in range(files):
        pq.write_table(table.slice(f * rows, rows), os.path.join(root, f"p{f:03d}.parquet"))
    return root
