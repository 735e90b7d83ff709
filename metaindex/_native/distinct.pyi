"""Distinct count of 64-bit hashes (cython_ext/distinct.pyx)."""

from typing import Any


def count_distinct(hashes: Any) -> int:
    """The number of distinct values in a 1-D uint64 array."""
