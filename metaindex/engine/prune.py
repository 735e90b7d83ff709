"""Pruning: which files of a table might hold a row matching a predicate.

Per snapshot (cached by ``MetaIndex``) the engine holds the snapshot's metadata table as
arrays: object names, sizes and mtimes, one metadata array per index, and for each partition
column a value list made from the ``key=value`` directories of each object's path (exact: a
file's partition value is in its path). A query binds the predicate to the recorded table
schema, pushes NOT to the leaves, and evaluates it over every indexed file at once
(``metaindex.index.evaluate``). Then each candidate file (the table's current listing, or the
files the caller gives) is matched to its entry: a file is *indexed* only when the snapshot
has an entry with its path, size and mtime. Files that are not indexed (new, rewritten in place,
outside the table) are always kept; indexed files are kept when the evaluation says they might
match.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import DataFile, Listing, TableLocation, parse_partition
from metaindex.store import OBJ_MTIME, OBJ_NAME, OBJ_SIZE, scheme_spellings

__all__ = ["PruneResult", "PruneStats", "prune", "candidates", "relativize",
           "metadata_context"]



@dataclass(frozen=True)
class PruneStats:
    """Counts of one prune.

    Attributes:
        version: the index version used.
        total_files / kept_files / skipped_files: over the candidate files.
        unindexed_files: candidates without a current entry (new, rewritten, or outside the
            table): always kept.
        total_bytes / kept_bytes / skipped_bytes: sizes of the candidate files.
        skipped_by_index: per index ("minmax(temp)", "bloom(city)", "partition(day)"), how
            many of the snapshot's entries that index alone proves cannot match.
        seconds: wall time of the prune (binding, evaluation and matching).
    """

    version: int
    total_files: int
    kept_files: int
    skipped_files: int
    unindexed_files: int
    total_bytes: int
    kept_bytes: int
    skipped_bytes: int
    skipped_by_index: dict = field(default_factory=dict)
    seconds: float = 0.0


class PruneResult:
    """The outcome of :meth:`metaindex.MetaIndex.prune`.

    Attributes:
        kept: paths of the files that might hold a matching row (read these).
        skipped: paths of the files that cannot.
        stats: :class:`PruneStats`.

    Paths are the caller's strings when files were given, else the table's display prefix
    (the local root, or the table URI) joined with the file's relative path. ``kept`` and
    ``skipped`` are materialised on first use; ``kept_mask`` gives the verdict per candidate.
    """

    def __init__(self, paths: pa.Array, kept_mask: np.ndarray, stats: PruneStats):
        self._paths = paths
        self.kept_mask = kept_mask
        self.stats = stats

    @cached_property
    def kept(self) -> list:
        return self._paths.filter(pa.array(self.kept_mask)).to_pylist()

    @cached_property
    def skipped(self) -> list:
        return self._paths.filter(pa.array(~self.kept_mask)).to_pylist()

    def __repr__(self) -> str:
        s = self.stats
        return (f"PruneResult(kept={s.kept_files}, skipped={s.skipped_files} of "
                f"{s.total_files} files, version={s.version})")


# ------------------------------------------------------------------------------ candidates

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
    outside = pc.or_(pc.or_(pc.match_substring(paths, "://"), pc.starts_with(paths, "/")),
                     pc.or_(pc.starts_with(paths, "file:"), pc.starts_with(paths, "../")))
    if not paths.null_count and not pc.any(outside).as_py():
        return paths  # all relative already
    names = pa.nulls(len(paths), pa.string())
    undecided = pc.fill_null(pc.is_valid(paths), False)
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
        raise TypeError(f"a files table needs columns path (string), size and mtime (ms, "
                        f"integers); it lacks {sorted(missing)}")
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
            raise TypeError(f"files column {name!r} must be integers, not "
                            f"{columns[name].type}")
        numbers.append(np.asarray(columns[name].to_numpy(), np.int64))
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
        names = pa.array(files.paths, pa.string())
        prefix = location.display.rstrip("/") + "/"
        paths = pc.binary_join_element_wise(prefix, names, "")
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
        raise TypeError("files are DataFile objects or (path, size, mtime_ms) tuples, "
                        f"not e.g. {files[0]!r:.80}")
    reported, sizes, mtimes = (list(c) for c in zip(*files)) if files else ([], [], [])
    try:
        paths = pa.array(reported, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        raise TypeError("file paths must be str") from None
    sizes_np, mtimes_np = np.asarray(sizes), np.asarray(mtimes)
    for what, arr in (("size", sizes_np), ("mtime_ms", mtimes_np)):
        if len(arr) and arr.dtype.kind not in "iu":
            raise TypeError(f"file {what}s must be ints, got {arr.dtype} values")
    return Candidates(paths, _relativize(location, paths), sizes_np.astype(np.int64),
                      mtimes_np.astype(np.int64))


# ------------------------------------------------------------------------------ metadata

@dataclass
class _Context:
    version: int
    names: pa.Array
    sizes: np.ndarray
    mtimes: np.ndarray
    schema: pa.Schema
    indexes: list
    metadata: dict
    labels: dict
    table: pa.Table = None          # the snapshot's metadata table (calendar columns)
    name_order: np.ndarray = None   # rows sorted by the XXH64 of their obj_name
    name_hashes: np.ndarray = None  # those hashes, sorted

    def __post_init__(self):
        hashes = _name_hashes(self.names)
        self.name_order = np.argsort(hashes)
        self.name_hashes = hashes[self.name_order]

    def rows_of(self, names: pa.Array) -> np.ndarray:
        """For each name, its row in the snapshot, or -1.

        Hash lookup (sorted XXH64 + binary search over sorted queries), then every hit is
        confirmed by comparing the names themselves, so a hash collision can only turn a
        file into "not indexed" (kept), never into another file's entry.
        """
        out = np.full(len(names), -1, np.int64)
        if not len(self.names) or not len(names):
            return out
        hashes = _name_hashes(names)
        order = np.argsort(hashes)
        at = np.searchsorted(self.name_hashes, hashes[order])
        at = np.minimum(at, len(self.name_hashes) - 1)
        hit = self.name_hashes[at] == hashes[order]
        out[order[hit]] = self.name_order[at[hit]]
        found = out >= 0
        if found.all():  # the usual case: confirm without gathering the candidates
            same = pc.equal(names, self.names.take(pa.array(out)))
            out[~_true(same)] = -1
        elif found.any():
            idx = np.flatnonzero(found)
            same = pc.equal(names.take(pa.array(idx)), self.names.take(pa.array(out[idx])))
            out[idx[~_true(same)]] = -1
        return out


def _true(mask: pa.Array) -> np.ndarray:
    if mask.null_count:
        mask = mask.fill_null(False)
    return np.asarray(mask.to_numpy(zero_copy_only=False), np.bool_)


def _name_hashes(names: pa.Array) -> np.ndarray:
    from metaindex.bloom import xxh64

    if names.null_count:
        names = names.fill_null("")  # rows_of confirms by name: a null never matches
    return np.asarray(xxh64(names), np.uint64)


def _partition_metadata(names: list, column: str, type_name: str):
    """A value-list metadata array for partition ``column`` from object paths."""
    from metaindex.index import ValueListIndex

    ix = ValueListIndex(column)
    t = schema_mod.partition_type(type_name)
    rows = []
    for name in names:
        found = dict(parse_partition(name))
        if column not in found:
            rows.append(None)  # no such directory: unknown, keep
            continue
        try:
            value = schema_mod.convert_partition_value(found[column], type_name)
        except ValueError:
            rows.append(None)  # does not parse as the recorded type: unknown, keep
            continue
        rows.append({"values": [] if value is None else [value], "has_null": value is None})
    return ix, pa.array(rows, ix.metadata_type(t))


def metadata_context(storage, table_store, snapshot) -> _Context:
    """The arrays pruning evaluates over for ``snapshot`` (callers cache it per snapshot:
    ``MetaIndex`` keeps the one of its current snapshot)."""
    from metaindex.index import make_index

    data_schema, partitions = schema_mod.recorded(storage, table_store, snapshot)
    table = snapshot.metadata_table()
    names = table.column(OBJ_NAME).combine_chunks()
    indexes, metadata, labels = [], {}, {}
    for d in snapshot.index_defs:
        ix = make_index(d.name, d.cols, d.params)
        indexes.append(ix)
        metadata[ix.key] = table.column(d.column).combine_chunks()
        labels[ix.key] = f"{ix.name}({ix.column})"
    if partitions:
        name_list = names.to_pylist()
        for column, type_name in partitions.items():
            ix, array = _partition_metadata(name_list, column, type_name)
            if ix.key in metadata:
                continue  # a real value-list index on the same column
            indexes.append(ix)
            metadata[ix.key] = array
            labels[ix.key] = f"partition({column})"
    return _Context(snapshot.version, names,
                    np.asarray(table.column(OBJ_SIZE).to_numpy(), np.int64),
                    np.asarray(table.column(OBJ_MTIME).to_numpy(), np.int64),
                    schema_mod.with_partitions(data_schema, partitions), indexes, metadata,
                    labels, table)


# ------------------------------------------------------------------------------ prune

def bind_predicate(predicate, schema: pa.Schema, case_sensitive: bool = False):
    """A predicate (expression or SQL string) bound to ``schema``, NOT pushed to the leaves."""
    from metaindex.expr import BooleanExpression, bind, parse_sql, rewrite_not

    if isinstance(predicate, str):
        predicate = parse_sql(predicate)
    elif not isinstance(predicate, BooleanExpression):
        raise TypeError(f"prune takes a metaindex.expr predicate or a SQL string, not "
                        f"{type(predicate).__name__}")
    return rewrite_not(bind(predicate, schema, case_sensitive=case_sensitive))


def prune(ctx: _Context, predicate, files: Candidates, *,
          case_sensitive: bool = False, settings=None) -> PruneResult:
    """Decide every candidate file (see the module docstring) with the arrays of
    :func:`metadata_context`; ``settings``: the reading session's rebase confs
    (:class:`metaindex.engine.calendar.RebaseSettings`, default Spark 4's)."""
    from metaindex.engine import calendar
    from metaindex.index import evaluate

    started = time.perf_counter()
    bound = bind_predicate(predicate, ctx.schema, case_sensitive)
    n = len(ctx.names)
    ev = evaluate(bound, ctx.indexes, ctx.metadata, n, per_index=True)
    settings = settings if settings is not None else calendar.RebaseSettings()
    # i13-calendar (moves into the Pruner): old-calendar values Spark rebases decide nothing
    kept_rows = calendar.guard(ev.kept, bound, ctx.table, settings, ctx.indexes, ctx.metadata)
    rows = ctx.rows_of(files.names)
    found = rows >= 0
    at = np.maximum(rows, 0)
    if n:
        indexed = found & (ctx.sizes[at] == files.sizes) & (ctx.mtimes[at] == files.mtimes)
        keep = ~indexed | kept_rows[at]
    else:
        indexed = np.zeros(len(files.sizes), np.bool_)
        keep = np.ones(len(files.sizes), np.bool_)
    total_bytes = int(files.sizes.sum())
    kept_bytes = int(files.sizes[keep].sum())
    kept_files = int(np.count_nonzero(keep))
    stats = PruneStats(
        ctx.version, len(keep), kept_files, len(keep) - kept_files,
        int(len(keep) - np.count_nonzero(indexed)), total_bytes, kept_bytes,
        total_bytes - kept_bytes,
        {ctx.labels[k]: v for k, v in ev.skipped_by_index.items()},
        time.perf_counter() - started)
    return PruneResult(files.paths, keep, stats)
