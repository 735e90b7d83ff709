"""Pruning: which files of a table might hold a row matching a predicate — the one decision path.

Every caller (``metaindex.MetaIndex.prune``, the CLI, the Spark hook, the Spark data source)
decides through :meth:`Pruner.decide`; none of them binds, drops or evaluates predicates itself.

Per snapshot (cached by ``MetaIndex``) a :class:`PruneContext` holds what costs O(parts):
the table schema the snapshot recorded, its indexes (a value list per partition column, made
from the ``key=value`` directories of object paths: exact, a file's partition value is in its
path) and its part summaries. Object names, sizes and mtimes (the *file list*) are read as
Arrow once per snapshot, and only when candidate files must be matched to entries or an
answer must name every object; pruning never builds per-object Python objects.

A query is a list of top-level AND-ed conjuncts (:class:`Conjunct`, or a SQL string / a
``metaindex.expr`` predicate, split at its top-level ANDs). The Pruner, for each conjunct once:

1. takes its converted predicate; a conjunct the caller could not convert (a function the
   converters do not know, such as ``upper(c) = 'X'`` or a cast of a column) is dropped;
2. resolves its columns in the recorded schema under the session's case rule (unknown or
   ambiguous column: dropped) and binds its literals to the columns' types, TIMESTAMP literals
   in the session time zone (a literal the column cannot take: dropped);
3. notes a conjunct none of whose columns has an index (used for nothing, said so).

Dropping a top-level conjunct only widens the predicate, so it can never lose a row; nothing
inside a conjunct is ever dropped (under OR or NOT that would narrow it). Each conjunct's fate
and the typed reason (:class:`DropReason`) are in :attr:`PruneStats.conjuncts`. The AND of the
bound conjuncts (NOT-free) is evaluated in two steps (``metaindex.index.evaluate`` both
times), with per-index counts: first over the snapshot's *part summaries* (one metadata row
per part that keeps whenever some row of the part would: ``Snapshot.summary_table``), then
over the files of the parts it keeps, read with only the columns the predicate uses (names,
sizes, the calendar columns for DATE/TIMESTAMP conjuncts, the indexes on its columns). The
files of the parts it rules out are skipped without being read.

Then each candidate file (the table's current listing, the files the caller gives, or by
default every file of the snapshot) is matched to its entry in the file list: a file is
*indexed* only when the snapshot has an entry with its path, size and mtime. Files that are not indexed (new, rewritten
in place, outside the table) are always kept; indexed files are kept when the evaluation says
they might match. One exception narrows what the index may decide: files whose stored
DATE/TIMESTAMP values Spark would rebase (or refuse) under the session's read modes are decided
by the conjuncts on other columns only (``metaindex.engine.calendar.guard``).

A damaged store is not used at all: :func:`prune_context` refuses a snapshot whose store's log
is damaged (a gap, an entry or checkpoint failing its checksum) with
:class:`~metaindex.errors.StoreDamageError`, as reading a damaged part raises
``IntegrityError`` / ``DecodeError``; every caller then reads every file, with a warning and
the reason (:func:`read_every_file` for callers that answer with a :class:`PruneResult`).

Partition conjuncts (the hook's): Spark applies partition filters itself, exactly, under its
own reading of the directory values. They never decide what is kept; they only mark which
snapshot files Spark listed (:attr:`PruneResult.listed_mask`), so a reply naming skipped files
can leave out the ones Spark never listed.
"""

from __future__ import annotations

import enum
import json
import time
from dataclasses import dataclass, field
from functools import cached_property, singledispatch
from threading import RLock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex import expr as ex
from metaindex.engine import calendar
from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import DataFile, Listing, TableLocation, parse_partition
from metaindex.errors import ExpressionError, IntegrityError, SchemaError, StoreDamageError
from metaindex.store import KEYS_UNAVAILABLE_KEY, OBJ_MTIME, OBJ_NAME, OBJ_SIZE, scheme_spellings
from metaindex.threads import run_all

__all__ = ["SessionSettings", "DropReason", "Conjunct", "ConjunctOutcome", "PruneStats",
           "PruneResult", "PruneContext", "Pruner", "Candidates", "candidates",
           "relativize", "prune_context", "to_conjuncts", "NameLookup", "read_every_file",
           "DamagedIndexWarning"]


class DamagedIndexWarning(UserWarning):
    """A query read every file because the index is damaged (the message says how)."""



# ------------------------------------------------------------------------------ session

@dataclass(frozen=True)
class SessionSettings:
    """The query engine's session settings that change what a predicate means.

    Attributes:
        time_zone: the session time zone (IANA name) ``TIMESTAMP '...'`` literals without a zone
            are read in (Spark's ``spark.sql.session.timeZone``).
        case_sensitive: resolve column names exactly (``spark.sql.caseSensitive``).
        datetime_rebase_read: ``spark.sql.parquet.datetimeRebaseModeInRead`` (EXCEPTION,
            CORRECTED or LEGACY).
        int96_rebase_read: ``spark.sql.parquet.int96RebaseModeInRead``.
    """

    time_zone: str = "UTC"
    case_sensitive: bool = False
    datetime_rebase_read: str = "CORRECTED"  # Spark 4's defaults (Spark 3's: EXCEPTION)
    int96_rebase_read: str = "CORRECTED"

    SPARK_CONF = {"time_zone": "spark.sql.session.timeZone",
                  "case_sensitive": "spark.sql.caseSensitive",
                  "datetime_rebase_read": "spark.sql.parquet.datetimeRebaseModeInRead",
                  "int96_rebase_read": "spark.sql.parquet.int96RebaseModeInRead"}

    def __post_init__(self):
        if not isinstance(self.time_zone, str) or not self.time_zone:
            raise TypeError(f"time_zone is an IANA zone name (str), not {self.time_zone!r}")
        if not isinstance(self.case_sensitive, bool):
            raise TypeError(f"case_sensitive is a bool, not {self.case_sensitive!r}")
        for name in ("datetime_rebase_read", "int96_rebase_read"):
            value = getattr(self, name)
            if not isinstance(value, str) or value.upper() not in calendar.MODES:
                raise ValueError(f"{name} is one of {', '.join(calendar.MODES)}, not {value!r}")
            object.__setattr__(self, name, value.upper())

    @classmethod
    def from_spark_conf(cls, conf) -> "SessionSettings":
        """The settings of a Spark session from its conf entries (``{key: value}``; missing
        keys take Spark's defaults). The legacy ``spark.sql.legacy.parquet.*`` spellings of the
        rebase modes are read too."""
        def get(key):
            value = conf.get(key)
            if value is None and key.startswith("spark.sql.parquet."):
                value = conf.get("spark.sql.legacy.parquet." + key[len("spark.sql.parquet."):])
            return value

        found = {}
        for name, key in cls.SPARK_CONF.items():
            value = get(key)
            if value is None or value == "":
                continue
            found[name] = str(value).strip().lower() == "true" if name == "case_sensitive" \
                else str(value).strip()
        return cls(**found)


# ------------------------------------------------------------------------------ conjuncts

class DropReason(str, enum.Enum):
    """Why a conjunct was not used for skipping (it then keeps every file)."""

    UNKNOWN_FUNCTION = "unknown function"
    """Not convertible: a function, a cast of a column, two columns compared..."""
    UNKNOWN_COLUMN = "unknown column"
    """A column the recorded schema does not have, or an ambiguous name."""
    TYPE_MISMATCH = "type mismatch"
    """A literal the column cannot be compared with, or that cannot be read as its type."""
    NO_INDEX = "no index on the column"
    """Binds, but no index (nor partition column) covers any of its columns."""
    KEYS_UNAVAILABLE = "keys unavailable"
    """The indexes of its columns are encrypted with keys this reader cannot get."""


@dataclass(frozen=True)
class Conjunct:
    """One top-level AND-ed conjunct as a caller has it.

    Attributes:
        text: how to show it (SQL, or the engine's rendering of its filter).
        predicate: its ``metaindex.expr`` predicate (unbound), or None when the caller could
            not convert it.
        error: why it could not be converted (with ``predicate`` None).
    """

    text: str
    predicate: object = None
    error: str | None = None


@dataclass(frozen=True)
class ConjunctOutcome:
    """What the Pruner did with one conjunct.

    Attributes:
        text: the conjunct as shown.
        used: whether it took part in the decision.
        reason: why not (a :class:`DropReason`), None when used.
        detail: the message behind ``reason``.
        partition: a partition conjunct (marks listed files only).
        indexes: the labels (as in :attr:`PruneStats.skipped_by_index`) of the indexes that
            answered it: those on its columns (partition value lists included), in index
            order; empty when dropped or when it binds to a constant.
    """

    text: str
    used: bool
    reason: DropReason | None = None
    detail: str | None = None
    partition: bool = False
    indexes: tuple = ()


def to_conjuncts(predicate, time_zone: str = "UTC") -> list:
    """:class:`Conjunct` s of a predicate: a SQL string (split at its top-level ANDs, each part
    converted on its own), a ``metaindex.expr`` predicate (split at its top-level ``And``), a
    :class:`Conjunct`, or a list / tuple of those.

    Raises:
        ExpressionError: SQL that does not parse (a syntax error), an unknown time zone.
        TypeError: anything else.
    """
    from metaindex.expr import And, BooleanExpression, parse_sql_conjuncts

    if isinstance(predicate, Conjunct):
        return [predicate]
    if isinstance(predicate, str):
        return [Conjunct(text, pred, error)
                for text, pred, error in parse_sql_conjuncts(predicate, time_zone=time_zone)]
    if isinstance(predicate, And):
        return to_conjuncts(predicate.left, time_zone) + to_conjuncts(predicate.right,
                                                                       time_zone)
    if isinstance(predicate, BooleanExpression):
        return [Conjunct(repr(predicate), predicate)]
    if isinstance(predicate, (list, tuple)):
        return [c for item in predicate for c in to_conjuncts(item, time_zone)]
    raise TypeError(f"a predicate is a metaindex.expr predicate, a SQL string, a Conjunct or a "
                    f"list of those, not {type(predicate).__name__}")


@singledispatch
def _columns(node) -> list:
    """The column names an unbound predicate refers to."""
    return []  # AlwaysTrue, AlwaysFalse


@_columns.register(ex.And)
@_columns.register(ex.Or)
def _(node):
    return _columns(node.left) + _columns(node.right)


@_columns.register(ex.Not)
def _(node):
    return _columns(node.child)


@_columns.register(ex.UnboundPredicate)
def _(node):
    return [node.term.name]



# ------------------------------------------------------------------------------ stats, result

@dataclass(frozen=True)
class PruneStats:
    """Counts of one decision.

    Attributes:
        version: the index version used.
        total_files / kept_files / skipped_files: over the candidate files.
        unindexed_files: candidates without a current entry (new, rewritten since the last
            refresh, or outside the table): always kept.
        must_keep_files: indexed candidates the evaluation would skip but that were kept
            because their stored dates/timestamps cannot be trusted under the session's rebase
            read modes (``metaindex.engine.calendar``).
        total_bytes / kept_bytes / skipped_bytes: sizes of the candidate files.
        skipped_by_index: per index ("minmax(temp)", "bloom(city)", "partition(day)"), how
            many of the snapshot's entries that index alone proves cannot match, as far as
            the decision looked: a part that index alone rules out on its summary counts all
            of its live entries; in the parts the decision read, each entry the index alone
            rules out counts once; entries of parts skipped by several indexes together (none
            alone) are not read and count for none. A lower bound of the per-file count.
        conjuncts: a :class:`ConjunctOutcome` per top-level conjunct, in order.
        seconds: wall time of the decision (binding, evaluation and matching).
        damage: why every file was read (the index is damaged), None when it was used.
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
    conjuncts: tuple = ()
    must_keep_files: int = 0
    damage: str | None = None

    @property
    def dropped(self) -> tuple:
        """The conjuncts not used, as :class:`ConjunctOutcome` s."""
        return tuple(c for c in self.conjuncts if not c.used)


class PruneResult:
    """The outcome of :meth:`Pruner.decide` (and :meth:`metaindex.MetaIndex.prune`).

    Attributes:
        kept: paths of the files that might hold a matching row (read these), a list of str.
        kept_paths: the same as a ``pyarrow.ChunkedArray`` of strings (no Python object per
            file: the form for millions of files).
        skipped: paths of the files that cannot.
        kept_mask: the verdict per candidate (numpy bool).
        listed_mask: per candidate, False where the partition conjuncts rule the file out
            (Spark does not list it); None without partition conjuncts.
        stats: :class:`PruneStats`.

    Paths are the caller's strings when files were given, else the table's display prefix
    (the local root, or the table URI) joined with the file's relative path, or the snapshot's
    object names when no candidates were given.

    Everything but ``stats`` is materialised on first use. Without candidates the candidates
    are every object of the snapshot, in :meth:`metaindex.store.Snapshot.file_table` order:
    ``kept`` comes from the parts the decision read, while ``skipped``, ``kept_mask`` and
    ``listed_mask`` need every object's name, so their first use reads the snapshot's file
    list (``Snapshot.file_table``, once per snapshot).
    """

    def __init__(self, paths, kept_mask, stats: PruneStats, listed_mask=None, *, kept=None):
        # paths, kept_mask, listed_mask: values, or zero-argument callables giving them;
        # kept: the kept paths (pa.Array) when known without the mask
        self._paths = paths
        self._kept_mask = kept_mask
        self._listed_mask = listed_mask
        self._kept = kept
        self.stats = stats

    @staticmethod
    def _value(thunk):
        return thunk() if callable(thunk) else thunk

    @cached_property
    def paths(self) -> pa.Array:
        """Every candidate's path (what ``kept_mask`` is aligned with)."""
        return self._value(self._paths)

    @cached_property
    def kept_mask(self) -> np.ndarray:
        return self._value(self._kept_mask)

    @cached_property
    def listed_mask(self) -> np.ndarray | None:
        return self._value(self._listed_mask)

    @cached_property
    def kept_paths(self) -> pa.ChunkedArray:
        kept = self._kept if self._kept is not None else \
            self.paths.filter(pa.array(self.kept_mask))
        return kept if isinstance(kept, pa.ChunkedArray) else pa.chunked_array([kept],
                                                                                pa.string())

    @cached_property
    def kept(self) -> list:
        return self.kept_paths.to_pylist()

    @cached_property
    def skipped(self) -> list:
        return self.paths.filter(pa.array(~self.kept_mask)).to_pylist()

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

class NameLookup:
    """Finds rows of an array of names by name: sorted XXH64 hashes and a binary search over
    sorted queries; every hit is confirmed by comparing the names themselves, so a hash
    collision can only turn a file into "not indexed" (kept), never into another file's row.
    """

    def __init__(self, names: pa.Array):
        self.names = names
        hashes = _name_hashes(names)
        self.order = np.argsort(hashes)
        self.hashes = hashes[self.order]

    def rows_of(self, names: pa.Array) -> np.ndarray:
        """For each name, its row, or -1."""
        out = np.full(len(names), -1, np.int64)
        if not len(self.names) or not len(names):
            return out
        hashes = _name_hashes(names)
        order = np.argsort(hashes)
        at = np.searchsorted(self.hashes, hashes[order])
        at = np.minimum(at, len(self.hashes) - 1)
        hit = self.hashes[at] == hashes[order]
        out[order[hit]] = self.order[at[hit]]
        found = out >= 0
        if found.all():  # the usual case: confirm without gathering the queries
            same = pc.equal(names, self.names.take(pa.array(out)))
            out[~_true(same)] = -1
        elif found.any():
            idx = np.flatnonzero(found)
            same = pc.equal(names.take(pa.array(idx)), self.names.take(pa.array(out[idx])))
            out[idx[~_true(same)]] = -1
        return out


def _true(mask) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    if mask.null_count:
        mask = mask.fill_null(False)
    return np.asarray(mask.to_numpy(zero_copy_only=False), np.bool_)


def _name_hashes(names: pa.Array) -> np.ndarray:
    from metaindex.bloom import xxh64

    if names.null_count:
        names = names.fill_null("")  # rows_of confirms by name: a null never matches
    return np.asarray(xxh64(names), np.uint64)


def _array(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _partition_metadata(ix, names: pa.Array, column: str, type_name: str) -> pa.Array:
    """Value-list metadata of ``ix`` (partition ``column``) for files named ``names``, from
    the ``key=value`` directories of their paths: parsed once per distinct directory."""
    t = schema_mod.partition_type(type_name)
    if not len(names):
        return pa.array([], ix.metadata_type(t))
    directories = pc.dictionary_encode(pc.replace_substring_regex(
        names.fill_null("") if names.null_count else names, r"[^/]*$", ""))
    rows = []
    for directory in directories.dictionary.to_pylist():
        found = dict(parse_partition(directory + "f"))  # the last component is the file's
        if column not in found:
            rows.append(None)  # no such directory: unknown, keep
            continue
        try:
            value = schema_mod.convert_partition_value(found[column], type_name)
        except ValueError:
            rows.append(None)  # does not parse as the recorded type: unknown, keep
            continue
        rows.append({"values": [] if value is None else [value], "has_null": value is None})
    return pa.array(rows, ix.metadata_type(t)).take(directories.indices)


def _indexes_of(tree, indexes) -> list:
    """The indexes (in ``indexes`` order) on the columns the leaves of a bound, NOT-free
    predicate refer to."""
    from metaindex.index import leaf

    columns, stack = set(), [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ex.And, ex.Or)):
            stack += (node.left, node.right)
        elif not isinstance(node, (ex.AlwaysTrue, ex.AlwaysFalse)):
            columns.add(leaf(node).column)
    return [ix for ix in indexes if ix.column in columns]


@dataclass(frozen=True)
class _Rows:
    """The live rows of some parts, read for one decision."""

    parts: np.ndarray      # their positions in part_paths, ascending
    table: pa.Table        # obj_name, then the columns asked for
    part_of_row: np.ndarray
    metadata: dict         # index key -> metadata array over the rows


class PruneContext:
    """The pruning view of one snapshot (:func:`prune_context`; ``MetaIndex`` caches the one of
    its current snapshot). Safe to share between threads.

    Built from the snapshot's per-part facts only (O(parts)): its recorded schema, index
    definitions and part summaries (``Snapshot.summary_table``: one metadata row per part
    that stands for all of its rows). Per-object data is read on demand: the rows of the parts
    a query cannot rule out (``Snapshot.read_parts``, only the columns the query needs; the
    store caches parts by content hash and columns), and, once per snapshot, the file list
    (``Snapshot.file_table``: names, sizes, mtimes, part of each) when candidate files are
    matched or an answer must name every object.

    Attributes:
        version: the snapshot's version. snapshot: the snapshot.
        schema: the recorded table schema with the partition columns.
        indexes / labels: the indexes (partition value lists included) and their display
            labels by key.
        part_paths: the live parts. summary: ``Snapshot.summary_table()``.
        part_objects / part_bytes: live objects and bytes per part (numpy).
        part_metadata: {index key: metadata array with one row per part} (partition value
            lists: null, "may match", at part level).
        partition_indexes: {index key: (partition column, type name)} of the value lists
            made from object paths.
        indexed_columns: the table columns an index covers.
        encrypted_columns: the table columns covered by an encrypted index.
        keys_unavailable: columns whose every index is unreadable here (this reader cannot
            get their key): conjuncts on them are dropped with
            :attr:`DropReason.KEYS_UNAVAILABLE` (known on first use: reads one part's
            encrypted index columns).
        names / sizes / mtimes / part_index: every object, from the file list (read on
            first use).
        metadata: {index key: metadata array over every object}; table: the snapshot's
            whole metadata table. Both read every part: for tools and benchmarks, never used
            by :meth:`Pruner.decide`.
    """

    def __init__(self, snapshot):
        from metaindex.index import ValueListIndex, make_index

        data_schema, partitions = schema_mod.recorded(snapshot)
        self.snapshot = snapshot
        self.version = snapshot.version
        self.schema = schema_mod.with_partitions(data_schema, partitions)
        self.part_paths = tuple(snapshot.part_paths)
        self.summary = snapshot.summary_table()
        self.part_objects = np.asarray(self.summary.column("objects").to_numpy(), np.int64)
        self.part_bytes = np.asarray(self.summary.column("bytes").to_numpy(), np.int64)
        self.object_count = int(self.part_objects.sum())
        self.indexes, self.labels, self.part_metadata = [], {}, {}
        self.partition_indexes = {}
        encrypted = set()
        for d in snapshot.index_defs:
            ix = make_index(d.name, d.cols, d.params)
            self.indexes.append(ix)
            self.labels[ix.key] = f"{ix.name}({ix.column})"
            self.part_metadata[ix.key] = self._typed(ix, _array(self.summary, d.storage_name))
            if d.key_metadata is not None:
                encrypted.add(ix.column)
        for column, type_name in partitions.items():
            ix = ValueListIndex(column)
            if ix.key in self.part_metadata:
                continue  # a real value-list index on the same column
            self.indexes.append(ix)
            self.labels[ix.key] = f"partition({column})"
            self.part_metadata[ix.key] = pa.nulls(
                len(self.part_paths), ix.metadata_type(schema_mod.partition_type(type_name)))
            self.partition_indexes[ix.key] = (column, type_name)
        self.indexed_columns = frozenset(ix.column for ix in self.indexes)
        self.encrypted_columns = frozenset(encrypted)
        self._lock = RLock()
        self._lazy: dict = {}

    def _once(self, name: str, build):
        value = self._lazy.get(name)
        if value is None:
            with self._lock:
                value = self._lazy.get(name)
                if value is None:
                    value = self._lazy[name] = build()
        return value

    # ---------------------------------------------------------------- every object

    def _file_list(self) -> tuple:
        files = self.snapshot.file_table()
        part_index = np.asarray(files.column("part_index").to_numpy(), np.int64)
        if len(part_index) != self.object_count or np.any(np.diff(part_index) < 0):
            raise IntegrityError(f"{self.snapshot.table.uri}: the file list of version "
                                 f"{self.version} is not laid out part by part as its "
                                 "summary counts them")
        return (_array(files, OBJ_NAME),
                np.asarray(files.column(OBJ_SIZE).to_numpy(), np.int64),
                np.asarray(files.column(OBJ_MTIME).to_numpy(), np.int64), part_index)

    @property
    def names(self) -> pa.Array:
        return self._once("files", self._file_list)[0]

    @property
    def sizes(self) -> np.ndarray:
        return self._once("files", self._file_list)[1]

    @property
    def mtimes(self) -> np.ndarray:
        return self._once("files", self._file_list)[2]

    @property
    def part_index(self) -> np.ndarray:
        return self._once("files", self._file_list)[3]

    def rows_of(self, names: pa.Array) -> np.ndarray:
        """For each name, its row in the file list (:attr:`names`), or -1 (see
        :class:`NameLookup`)."""
        return self._once("lookup", lambda: NameLookup(self.names)).rows_of(names)

    def file_rows(self, rows: _Rows) -> np.ndarray:
        """The positions in the file list of ``rows`` (which come part by part in the same
        order)."""
        starts = np.concatenate(([0], np.cumsum(self.part_objects)))
        counts = self.part_objects[rows.parts]
        base = np.repeat(starts[rows.parts] - (np.cumsum(counts) - counts), counts)
        positions = base + np.arange(len(base), dtype=np.int64)
        if len(positions) != rows.table.num_rows or not _true(pc.equal(
                self.names.take(pa.array(positions)), rows.table.column(OBJ_NAME))).all():
            raise IntegrityError(f"{self.snapshot.table.uri}: the parts read at version "
                                 f"{self.version} do not match its file list")
        return positions

    @property
    def keys_unavailable(self) -> frozenset:
        return self._once("keys", self._keys_unavailable)

    def _keys_unavailable(self) -> frozenset:
        defs = [d for d in self.snapshot.index_defs if d.key_metadata is not None]
        if not defs or not self.part_paths:
            return frozenset()
        probe = self.snapshot.read_parts(self.part_paths[:1], [d.storage_name for d in defs])
        no_key = set(json.loads((probe.schema.metadata or {}).get(KEYS_UNAVAILABLE_KEY,
                                                                   b"[]")))
        readable, unreadable = set(), set()
        for d, ix in zip(self.snapshot.index_defs, self.indexes):
            lost = d.storage_name in no_key and \
                probe.column(d.storage_name).null_count == probe.num_rows
            (unreadable if lost else readable).add(ix.column)
        return frozenset(unreadable - readable)

    @property
    def table(self) -> pa.Table:
        return self.snapshot.metadata_table()

    @property
    def metadata(self) -> dict:
        return self._once("metadata", lambda: self.read_rows(
            np.arange(len(self.part_paths)), self.indexes).metadata)

    # ---------------------------------------------------------------- some parts

    def read_rows(self, parts: np.ndarray, indexes, columns=()) -> _Rows:
        """The live rows of the parts at positions ``parts`` (ascending): obj_name, then
        ``columns``, then the metadata columns of ``indexes`` (partition value lists are
        made from the names). Columns are chunked, one chunk per part (no copy), unless the
        parts hold a column with different types (then aligned by the store)."""
        wanted = [*columns,
                  *(ix.key for ix in indexes if ix.key not in self.partition_indexes)]
        paths = [self.part_paths[i] for i in parts]
        tables = run_all([(self.snapshot.read_parts, [path], wanted) for path in paths], True)
        if tables and all(t.schema.equals(tables[0].schema, check_metadata=True)
                          for t in tables):
            table = pa.concat_tables(tables)
        else:
            table = self.snapshot.read_parts(paths, wanted)
        counts = self.part_objects[parts]
        if int(counts.sum()) != table.num_rows:
            raise IntegrityError(f"{self.snapshot.table.uri}: the parts read at version "
                                 f"{self.version} hold {table.num_rows} live rows, their "
                                 f"summaries count {int(counts.sum())}")
        return _Rows(parts, table, np.repeat(parts, counts),
                     self.metadata_of(indexes, table))

    def metadata_of(self, indexes, table: pa.Table) -> dict:
        """{index key: metadata over the rows of ``table``} (obj_name and the index columns)."""
        out = {}
        for ix in indexes:
            if ix.key in self.partition_indexes:
                out[ix.key] = _partition_metadata(ix, _array(table, OBJ_NAME),
                                                  *self.partition_indexes[ix.key])
            else:
                out[ix.key] = self._typed(ix, table.column(ix.key))
        return out

    def _typed(self, ix, metadata):
        """``metadata`` with the index's metadata type: an array of type null (no part or
        summary holds the column: unknown) becomes nulls of that type."""
        if not pa.types.is_null(metadata.type):
            return metadata
        column_type = schema_mod.resolve_column(self.schema, ix.column,
                                                case_sensitive=True)[1].type
        return pa.nulls(len(metadata), ix.metadata_type(column_type))


def prune_context(snapshot, damage=()) -> PruneContext:
    """The pruning view of ``snapshot`` (callers cache it per snapshot: ``MetaIndex`` keeps
    the one of its current snapshot).

    Raises:
        StoreDamageError: ``damage`` (the store's ``TableStore.damage()``) is not empty: a
            damaged store decides nothing.
    """
    if damage:
        raise StoreDamageError(f"{snapshot.table.uri}: the index is damaged: "
                               f"{'; '.join(str(p) for p in damage[:3])}"
                               f"{f' (and {len(damage) - 3} more)' if len(damage) > 3 else ''}"
                               "; refresh() repairs it", damage)
    return PruneContext(snapshot)


def read_every_file(files: Candidates, reason: str, version: int = -1) -> PruneResult:
    """The answer when the index cannot be used: every candidate kept, ``stats.damage`` the
    reason."""
    n = len(files.sizes)
    total = int(np.asarray(files.sizes, np.int64).sum())
    stats = PruneStats(version, n, n, 0, n, total, total, 0, damage=reason)
    return PruneResult(files.paths, np.ones(n, np.bool_), stats)



# ------------------------------------------------------------------------------ the Pruner

class Pruner:
    """Decides which candidate files might hold a matching row (see the module docstring).

    Holds no per-query state: one Pruner per snapshot serves concurrent queries.
    """

    def __init__(self, context: PruneContext):
        if not isinstance(context, PruneContext):
            raise TypeError(f"a Pruner needs a PruneContext, not {type(context).__name__}")
        self.context = context

    def decide(self, conjuncts, candidates: Candidates | None = None, partition_conjuncts=(),
               session: SessionSettings | None = None) -> PruneResult:
        """Decide every candidate file.

        Args:
            conjuncts: the query's top-level conjuncts (see :func:`to_conjuncts`).
            candidates: the files to decide (:func:`candidates`); None: every file of the
                snapshot, by object name.
            partition_conjuncts: conjuncts Spark applies itself to partition directories; they
                only mark listed files (:attr:`PruneResult.listed_mask`).
            session: :class:`SessionSettings` (default: UTC, case-insensitive).

        Raises:
            ExpressionError: a SQL conjunct that does not parse.
            TypeError: conjuncts of another kind.
        """
        session = SessionSettings() if session is None else session
        if not isinstance(session, SessionSettings):
            raise TypeError(f"session is a SessionSettings, not {type(session).__name__}")
        started = time.perf_counter()
        ctx = self.context
        tree, outcomes = self._bind_all(to_conjuncts(conjuncts, session.time_zone), session,
                                        False)
        part_tree, part_outcomes = None, []
        if partition_conjuncts:
            part_tree, part_outcomes = self._bind_all(
                to_conjuncts(partition_conjuncts, session.time_zone), session, True)
        used = _indexes_of(tree, ctx.indexes)
        parts, alone = self._parts(tree, used, session)
        columns = [OBJ_SIZE] if candidates is None else []
        if calendar.split_temporal(tree)[0]:
            columns += calendar.CALENDAR_COLUMNS
        rows = ctx.read_rows(np.flatnonzero(parts), used, columns) \
            if used or candidates is None else None
        row_kept, rescued_rows, by_index = self._rows(tree, used, rows, alone, session)
        outcomes = tuple(outcomes + part_outcomes)
        if candidates is None:
            return self._every_object(rows, row_kept, rescued_rows, by_index, part_tree,
                                      outcomes, started)
        return self._candidates(candidates, parts, rows, row_kept, rescued_rows, by_index,
                                part_tree, outcomes, started)

    def _parts(self, tree, used: list, session: SessionSettings) -> tuple:
        """(parts the decision reads: bool per part, {index key: parts that index alone
        does not rule out}), from the part summaries with the calendar guard."""
        from metaindex.index import evaluate

        ctx = self.context
        n = len(ctx.part_paths)
        meta = {ix.key: ctx.part_metadata[ix.key] for ix in used}
        kept = evaluate(tree, used, meta, n, per_index=False).kept
        kept = calendar.guard(kept, tree, ctx.summary, session, used, meta)
        alone = {ix.key: evaluate(tree, [ix], {ix.key: meta[ix.key]}, n,
                                  per_index=False).kept for ix in used}
        return kept, alone

    def _rows(self, tree, used: list, rows: _Rows | None, alone: dict,
              session: SessionSettings) -> tuple:
        """(verdict per row read, rows kept only by the calendar guard or None, files each
        index alone rules out: {label: count} over every index)."""
        from metaindex.index import evaluate

        ctx = self.context
        by_index = {ctx.labels[ix.key]: 0 for ix in ctx.indexes}
        if rows is None:
            return None, None, by_index
        n = rows.table.num_rows
        ev = evaluate(tree, used, rows.metadata, n, per_index=True)
        kept = calendar.guard(ev.kept, tree, rows.table, session, used, rows.metadata)
        rescued = None if kept is ev.kept else kept & ~ev.kept
        for ix in used:
            out = ~alone[ix.key]
            count = int(ctx.part_objects[out].sum())  # parts ruled out count whole
            ruled = out[rows.part_of_row]  # read anyway (calendar guard): counted already
            if ruled.any():
                mine = evaluate(tree, [ix], {ix.key: rows.metadata[ix.key]}, n,
                                per_index=False).kept
                count += int(np.count_nonzero(~mine & ~ruled))
            else:
                count += ev.skipped_by_index[ix.key]
            by_index[ctx.labels[ix.key]] = count
        return kept, rescued, by_index

    def _listed(self, part_tree, names: pa.Array) -> np.ndarray:
        """Per name, whether the partition conjuncts let Spark list it (they refer to
        partition columns, whose value lists come from the names; another index they use
        reads its metadata from every part)."""
        from metaindex.index import evaluate

        ctx = self.context
        used = _indexes_of(part_tree, ctx.indexes)
        if all(ix.key in ctx.partition_indexes for ix in used):
            meta = ctx.metadata_of(used, pa.table({OBJ_NAME: names}))
            return evaluate(part_tree, used, meta, len(names), per_index=False).kept
        every = ctx.metadata  # xskipper-style value lists on a partition column: rare
        found = ctx.rows_of(names)
        listed = evaluate(part_tree, used, {ix.key: every[ix.key] for ix in used},
                          ctx.object_count, per_index=False).kept
        return (found < 0) | listed[np.maximum(found, 0)]

    def _every_object(self, rows: _Rows, row_kept, rescued_rows, by_index, part_tree,
                      outcomes, started) -> PruneResult:
        ctx = self.context
        kept_names = rows.table.column(OBJ_NAME).filter(pa.array(row_kept))
        sizes = np.asarray(rows.table.column(OBJ_SIZE).to_numpy(), np.int64)
        total_bytes = int(ctx.part_bytes.sum())
        kept_bytes = int(sizes[row_kept].sum())
        kept_files = int(np.count_nonzero(row_kept))
        stats = PruneStats(
            ctx.version, ctx.object_count, kept_files, ctx.object_count - kept_files, 0,
            total_bytes, kept_bytes, total_bytes - kept_bytes, by_index,
            time.perf_counter() - started, outcomes,
            0 if rescued_rows is None else int(np.count_nonzero(rescued_rows)))

        def kept_mask():
            mask = np.zeros(ctx.object_count, np.bool_)
            mask[ctx.file_rows(rows)] = row_kept
            return mask

        listed = None if part_tree is None else (lambda: self._listed(part_tree, ctx.names))
        return PruneResult(lambda: ctx.names, kept_mask, stats, listed, kept=kept_names)

    def _candidates(self, files: Candidates, parts, rows: _Rows | None, row_kept,
                    rescued_rows, by_index, part_tree, outcomes, started) -> PruneResult:
        ctx = self.context
        sizes = files.sizes
        rescued = None
        if ctx.object_count:
            found = ctx.rows_of(files.names)
            at = np.maximum(found, 0)
            indexed = (found >= 0) & (ctx.sizes[at] == sizes) & (ctx.mtimes[at] == files.mtimes)
            file_kept = parts[ctx.part_index]
            if rows is not None:
                positions = ctx.file_rows(rows)
                file_kept[positions] = row_kept
                if rescued_rows is not None:
                    file_rescued = np.zeros(ctx.object_count, np.bool_)
                    file_rescued[positions] = rescued_rows
                    rescued = indexed & file_rescued[at]
            keep = ~indexed | file_kept[at]
        else:
            indexed = np.zeros(len(sizes), np.bool_)
            keep = np.ones(len(sizes), np.bool_)
        listed = None
        if part_tree is not None:
            listed = ~indexed
            if indexed.any():
                where = np.flatnonzero(indexed)
                listed[where] = self._listed(part_tree, files.names.take(pa.array(where)))
        total_bytes = int(sizes.sum())
        kept_bytes = int(sizes[keep].sum())
        kept_files = int(np.count_nonzero(keep))
        stats = PruneStats(
            ctx.version, len(keep), kept_files, len(keep) - kept_files,
            int(len(keep) - np.count_nonzero(indexed)), total_bytes, kept_bytes,
            total_bytes - kept_bytes, by_index, time.perf_counter() - started, outcomes,
            0 if rescued is None else int(np.count_nonzero(rescued)))
        return PruneResult(files.paths, keep, stats, listed)

    def _bind_all(self, conjuncts: list, session: SessionSettings, partition: bool):
        """(AND of the conjuncts that bind, NOT-free; a ConjunctOutcome per conjunct)."""
        from metaindex.expr import AlwaysTrue, And

        tree, outcomes = AlwaysTrue(), []
        for c in conjuncts:
            bound, outcome = self._bind_one(c, session, partition)
            outcomes.append(outcome)
            if bound is not None:
                tree = And(tree, bound)
        return tree, outcomes

    def _bind_one(self, c: Conjunct, session: SessionSettings, partition: bool):
        """(bound predicate or None, ConjunctOutcome): the one place a conjunct is dropped."""
        from metaindex.expr import AlwaysFalse, AlwaysTrue, bind
        from metaindex.expr.resolve import resolve

        def dropped(reason, detail):
            return None, ConjunctOutcome(c.text, False, reason, detail, partition)

        if c.predicate is None:
            return dropped(DropReason.UNKNOWN_FUNCTION, c.error)
        schema = self.context.schema
        columns = set()
        for name in _columns(c.predicate):
            try:
                columns.add(resolve(schema, name, session.case_sensitive).name)
            except (SchemaError, ExpressionError) as exc:
                return dropped(DropReason.UNKNOWN_COLUMN, str(exc))
        try:
            bound = bind(c.predicate, schema, case_sensitive=session.case_sensitive)
        except (SchemaError, ExpressionError, ValueError, TypeError) as exc:
            return dropped(DropReason.TYPE_MISMATCH, str(exc))
        indexed = columns & self.context.indexed_columns
        lost = self.context.keys_unavailable if indexed & self.context.encrypted_columns \
            else frozenset()
        if columns and not isinstance(bound, (AlwaysFalse, AlwaysTrue)):
            if not indexed:
                return dropped(DropReason.NO_INDEX, f"no index on {', '.join(sorted(columns))}")
            if indexed <= lost:
                return dropped(DropReason.KEYS_UNAVAILABLE,
                               f"no key to read the indexes of {', '.join(sorted(indexed))}")
        usable = indexed - lost
        labels = tuple(self.context.labels[ix.key] for ix in self.context.indexes
                       if ix.column in usable) \
            if not isinstance(bound, (AlwaysFalse, AlwaysTrue)) else ()
        return bound, ConjunctOutcome(c.text, True, partition=partition, indexes=labels)
