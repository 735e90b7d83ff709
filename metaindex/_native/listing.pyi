"""A recursive listing of a local directory into Arrow-layout arrays (cython_ext/listing.pyx).

Regular files only, symbolic links followed, Spark's hidden names skipped (hidden directories
not entered), a directory cycle walked once; paths sorted in UTF-8 byte order.
"""

import os

import numpy as np
from numpy.typing import NDArray

def walk_data_files(
    root: str | bytes | os.PathLike[str],
) -> tuple[NDArray[np.int64], NDArray[np.uint8], NDArray[np.int64], NDArray[np.int64]]:
    """``(offsets, data, sizes, mtimes)`` of the data files below ``root``: the relative paths
    as Arrow string buffers (int64 offsets, n + 1 of them), sizes in bytes and modification
    times in ms since the epoch."""
