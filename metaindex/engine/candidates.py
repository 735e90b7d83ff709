"""Candidates: the files a caller asks the decision about, normalised.

A :class:`Listing` of the table, a ``pyarrow.Table`` (``path``, ``size``, ``mtime`` in ms: the
fast form for many files) or an iterable of :class:`DataFile` / ``(path, size, mtime_ms)``
tuples becomes one :class:`Candidates`: the reported paths, their names relative to the table
root (as the store names its objects; None for a file outside the table), sizes and mtimes.
A candidate is later matched to the snapshot's entry of that name, size and mtime
(``metaindex.engine.context.PruneContext.rows_of``); one without an entry is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import FALSE, combined, string_array, to_numpy
from metaindex.engine.listing import DataFile, Listing, TableLocation
from metaindex.store import scheme_spellings

__all__ = ["Candidates", "candidates", "relativize"]


@dataclass(frozen=True)
class Candidates:
    """Files to decide on: their reported paths, relative names (None: outside the table),
    sizes and mtimes (ms)."""

    paths: pa.Array
    names: pa.Array
    sizes: np.ndarray
    mtimes: np.ndarray


def _prefixes(location: TableLocation) -> list:
    root = location.root.rstrip("/")
    out = [root + "/", location.uri.rstrip("/") + "/"]
    scheme, _, rest = location.uri.partition("://")
    if scheme == "file":
        out += ["file:" + root + "/", "file://localhost" + root + "/"]
    else:
        out += [f"{alias}://{rest.rstrip('/')}/" for alias in scheme_spellings(scheme)[1:]]
    return out


def relativize(location: TableLocation, path: str) -> str | None:
    """A file path as the store names it (relative to the table root); None when the path is
    not under the table."""
    return _relativize(location, pa.array([path], pa.string()))[0].as_py()


def _relativize(location: TableLocation, paths: pa.Array) -> pa.Array:
    """:func:`relativize` over an array of paths, vectorised."""
    first = _prefixes(location)[0]
    if pc.all(pc.starts_with(paths, first)).as_py() is not False and not paths.null_count:
        return pc.utf8_slice_codeunits(paths, len(first))  # all under the root (or none)
    outside = pc.or_(
        pc.or_(pc.match_substring(paths, "://"), pc.starts_with(paths, "/")),
        pc.or_(pc.starts_with(paths, "file:"), pc.starts_with(paths, "../")),
    )
    if not paths.null_count and not pc.any(outside).as_py():
        return paths  # all relative already
    names = pa.nulls(len(paths), pa.string())
    undecided = pc.fill_null(pc.is_valid(paths), FALSE)
    for prefix in _prefixes(location):
        hit = pc.and_(undecided, pc.starts_with(paths, prefix))
        if pc.any(hit).as_py():
            names = pc.if_else(hit, pc.utf8_slice_codeunits(paths, len(prefix)), names)
            undecided = pc.and_(undecided, pc.invert(hit))
    relative = pc.and_(undecided, pc.invert(outside))
    return pc.if_else(relative, paths, names)


def _from_arrow(location: TableLocation, files) -> Candidates:
    missing = {"path", "size", "mtime"} - set(files.schema.names)
    if missing:
        raise TypeError(
            f"a files table needs columns path (string), size and mtime (ms, "
            f"integers); it lacks {sorted(missing)}"
        )
    columns = {}
    for name in ("path", "size", "mtime"):
        col = files.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if col.null_count:
            raise TypeError(f"files column {name!r} has nulls")
        columns[name] = col
    paths = columns["path"]
    if not (pa.types.is_string(paths.type) or pa.types.is_large_string(paths.type)):
        raise TypeError(f"files column 'path' must be strings, not {paths.type}")
    numbers = []
    for name in ("size", "mtime"):
        if not pa.types.is_integer(columns[name].type):
            raise TypeError(f"files column {name!r} must be integers, not {columns[name].type}")
        numbers.append(np.asarray(to_numpy(columns[name]), np.int64))
    paths = paths.cast(pa.string())
    return Candidates(paths, _relativize(location, paths), *numbers)


def candidates(location: TableLocation, files) -> Candidates:
    """Normalise the candidate files: a :class:`Listing`; a ``pyarrow.Table`` with columns
    ``path``, ``size``, ``mtime`` (ms) — the fast form for many files; or an iterable of
    :class:`DataFile` / ``(path, size, mtime_ms)`` tuples. Paths are relative to the table or
    absolute under it.

    Raises:
        TypeError: an element of another kind.
    """
    if isinstance(files, Listing):
        names = combined(files.table.column("path"))
        prefix = location.display.rstrip("/") + "/"
        paths = pc.binary_join_element_wise(string_array([prefix])[0], names, string_array([""])[0])
        return Candidates(paths, names, files.sizes, files.mtimes)
    if isinstance(files, (pa.Table, pa.RecordBatch)):
        return _from_arrow(location, files)
    files = list(files)
    try:
        if files and isinstance(files[0], DataFile):
            files = [(f.path, f.size, f.mtime) for f in files]
        shapes = set(map(len, files))
    except (AttributeError, TypeError):
        shapes = set()
    if files and shapes != {3}:
        raise TypeError(
            "files are DataFile objects or (path, size, mtime_ms) tuples, "
            f"not e.g. {files[0]!r:.80}"
        )
    reported, sizes, mtimes = (list(c) for c in zip(*files, strict=True)) if files else ([], [], [])
    try:
        paths = pa.array(reported, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        raise TypeError("file paths must be str") from None
    sizes_np, mtimes_np = np.asarray(sizes), np.asarray(mtimes)
    for what, arr in (("size", sizes_np), ("mtime_ms", mtimes_np)):
        if len(arr) and arr.dtype.kind not in "iu":
            raise TypeError(f"file {what}s must be ints, got {arr.dtype} values")
    return Candidates(
        paths, _relativize(location, paths), sizes_np.astype(np.int64), mtimes_np.astype(np.int64)
    )
