"""The pruning view of one snapshot: :class:`PruneContext`, built by :func:`prune_context`.

Per snapshot (cached by ``MetaIndex``) a context holds what costs O(parts): the table schema
the snapshot recorded, its indexes (a value list per partition column, made from the
``key=value`` directories of object paths: exact, a file's partition value is in its path)
and its part summaries. Object names, sizes and mtimes (the *file list*) are read as Arrow
once per snapshot, and only when candidate files must be matched to entries
(:class:`NameLookup`) or an answer must name every object; pruning never builds per-object
Python objects. The rows of the parts a query cannot rule out are read with only the columns
it needs (:meth:`PruneContext.read_rows`).

A damaged store gets no context: :func:`prune_context` refuses a snapshot whose store's log is
damaged with :class:`~metaindex.errors.StoreDamageError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from threading import RLock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.arrays import (
    EMPTY,
    FALSE,
    combined,
    from_pylist,
    numeric_array,
    to_numpy,
)
from metaindex.engine import schema as schema_mod
from metaindex.engine.listing import parse_partition
from metaindex.errors import IntegrityError, StoreDamageError
from metaindex.store import KEYS_UNAVAILABLE_KEY, OBJ_MTIME, OBJ_NAME, OBJ_SIZE
from metaindex.threads import run_all

__all__ = ["PruneContext", "prune_context", "NameLookup", "Rows"]


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
            same = pc.equal(names, self.names.take(numeric_array(out)))
            out[~_true(same)] = -1
        elif found.any():
            idx = np.flatnonzero(found)
            same = pc.equal(
                names.take(numeric_array(idx)), self.names.take(numeric_array(out[idx]))
            )
            out[idx[~_true(same)]] = -1
        return out


def _true(mask) -> np.ndarray:
    mask = combined(mask)
    if mask.null_count:
        mask = mask.fill_null(FALSE)
    return np.asarray(to_numpy(mask), np.bool_)


def _name_hashes(names: pa.Array) -> np.ndarray:
    from metaindex.bloom import xxh64

    if names.null_count:
        names = names.fill_null(EMPTY)  # rows_of confirms by name: a null never matches
    return np.asarray(xxh64(names), np.uint64)


def _array(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return combined(col)


_UNKNOWN = object()  # a partition value that is not known: the metadata row is null


def _partition_metadata(ix, names: pa.Array, column: str, type_name: str) -> pa.Array:
    """Value-list metadata of ``ix`` (partition ``column``) for files named ``names``, from
    the ``key=value`` directories of their paths: parsed once per distinct directory."""
    kind = ix.metadata_type(schema_mod.partition_type(type_name))
    if not len(names):
        return pa.nulls(0, kind)
    directories = pc.dictionary_encode(
        pc.replace_substring_regex(
            names.fill_null(EMPTY) if names.null_count else names, r"[^/]*$", ""
        )
    )
    rows = []
    for directory in directories.dictionary.to_pylist():
        found = dict(parse_partition(directory + "f"))  # the last component is the file's
        if column not in found:
            rows.append(_UNKNOWN)  # no such directory: unknown, keep
            continue
        try:
            value = schema_mod.convert_partition_value(found[column], type_name)
        except ValueError:
            rows.append(_UNKNOWN)  # does not parse as the recorded type: unknown, keep
            continue
        rows.append(value)
    return _value_list_rows(rows, kind).take(directories.indices)


def _value_list_rows(rows: list, kind: pa.DataType) -> pa.Array:
    """Value-list metadata (``kind``) of one partition value per row: null for ``_UNKNOWN``,
    ``{values: [], has_null: true}`` for None, else ``{values: [value], has_null: false}``;
    built from buffers (``pa.array`` of the dicts would import pandas, see metaindex.arrays)."""
    unknown = np.array([r is _UNKNOWN for r in rows], np.bool_)
    is_null = np.array([r is None for r in rows], np.bool_)
    present = ~(unknown | is_null)
    offsets = np.zeros(len(rows) + 1, np.int32)
    offsets[1:] = np.cumsum(present)
    values = from_pylist(
        [r for r, p in zip(rows, present, strict=True) if p], kind.field("values").type.value_type
    )
    lists = pa.ListArray.from_arrays(numeric_array(offsets), values)
    return pa.StructArray.from_arrays(
        [lists, numeric_array(is_null)], fields=list(kind), mask=numeric_array(unknown)
    )


@dataclass(frozen=True)
class Rows:
    """The live rows of some parts, read for one decision."""

    parts: np.ndarray  # their positions in part_paths, ascending
    table: pa.Table  # obj_name, then the columns asked for
    part_of_row: np.ndarray
    metadata: dict  # index key -> metadata array over the rows


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
            by ``metaindex.engine.prune.Pruner.decide``.
    """

    def __init__(self, snapshot):
        from metaindex.index import ValueListIndex, make_index

        data_schema, partitions = schema_mod.recorded(snapshot)
        self.snapshot = snapshot
        self.version = snapshot.version
        self.schema = schema_mod.with_partitions(data_schema, partitions)
        self.part_paths = tuple(snapshot.part_paths)
        self.summary = snapshot.summary_table()
        self.part_objects = to_numpy(self.summary.column("objects")).astype(np.int64)
        self.part_bytes = to_numpy(self.summary.column("bytes")).astype(np.int64)
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
                len(self.part_paths), ix.metadata_type(schema_mod.partition_type(type_name))
            )
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
        part_index = np.asarray(to_numpy(files.column("part_index")), np.int64)
        if len(part_index) != self.object_count or np.any(np.diff(part_index) < 0):
            raise IntegrityError(
                f"{self.snapshot.table.uri}: the file list of version "
                f"{self.version} is not laid out part by part as its "
                "summary counts them"
            )
        return (
            _array(files, OBJ_NAME),
            np.asarray(to_numpy(files.column(OBJ_SIZE)), np.int64),
            np.asarray(to_numpy(files.column(OBJ_MTIME)), np.int64),
            part_index,
        )

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

    def file_rows(self, rows: Rows) -> np.ndarray:
        """The positions in the file list of ``rows`` (which come part by part in the same
        order)."""
        starts = np.concatenate(([0], np.cumsum(self.part_objects)))
        counts = self.part_objects[rows.parts]
        base = np.repeat(starts[rows.parts] - (np.cumsum(counts) - counts), counts)
        positions = base + np.arange(len(base), dtype=np.int64)
        if (
            len(positions) != rows.table.num_rows
            or not _true(
                pc.equal(self.names.take(numeric_array(positions)), rows.table.column(OBJ_NAME))
            ).all()
        ):
            raise IntegrityError(
                f"{self.snapshot.table.uri}: the parts read at version "
                f"{self.version} do not match its file list"
            )
        return positions

    @property
    def keys_unavailable(self) -> frozenset:
        return self._once("keys", self._keys_unavailable)

    def _keys_unavailable(self) -> frozenset:
        defs = [d for d in self.snapshot.index_defs if d.key_metadata is not None]
        if not defs or not self.part_paths:
            return frozenset()
        probe = self.snapshot.read_parts(self.part_paths[:1], [d.storage_name for d in defs])
        no_key = set(json.loads((probe.schema.metadata or {}).get(KEYS_UNAVAILABLE_KEY, b"[]")))
        readable: set[str] = set()
        unreadable: set[str] = set()
        defs_all = self.snapshot.index_defs  # self.indexes: these, then the partition columns'
        for d, ix in zip(defs_all, self.indexes[: len(defs_all)], strict=True):
            lost = (
                d.storage_name in no_key
                and probe.column(d.storage_name).null_count == probe.num_rows
            )
            (unreadable if lost else readable).add(ix.column)
        return frozenset(unreadable - readable)

    @property
    def table(self) -> pa.Table:
        return self.snapshot.metadata_table()

    @property
    def metadata(self) -> dict:
        return self._once(
            "metadata",
            lambda: self.read_rows(np.arange(len(self.part_paths)), self.indexes).metadata,
        )

    # ---------------------------------------------------------------- some parts

    def read_rows(self, parts: np.ndarray, indexes, columns=()) -> Rows:
        """The live rows of the parts at positions ``parts`` (ascending): obj_name, then
        ``columns``, then the metadata columns of ``indexes`` (partition value lists are
        made from the names). Columns are chunked, one chunk per part (no copy), unless the
        parts hold a column with different types (then aligned by the store)."""
        wanted = [*columns, *(ix.key for ix in indexes if ix.key not in self.partition_indexes)]
        paths = [self.part_paths[i] for i in parts]
        tables = run_all([(self.snapshot.read_parts, [path], wanted) for path in paths], True)
        if tables and all(t.schema.equals(tables[0].schema, check_metadata=True) for t in tables):
            table = pa.concat_tables(tables)
        else:
            table = self.snapshot.read_parts(paths, wanted)
        counts = self.part_objects[parts]
        if int(counts.sum()) != table.num_rows:
            raise IntegrityError(
                f"{self.snapshot.table.uri}: the parts read at version "
                f"{self.version} hold {table.num_rows} live rows, their "
                f"summaries count {int(counts.sum())}"
            )
        return Rows(parts, table, np.repeat(parts, counts), self.metadata_of(indexes, table))

    def metadata_of(self, indexes, table: pa.Table) -> dict:
        """{index key: metadata over the rows of ``table``} (obj_name and the index columns)."""
        out = {}
        for ix in indexes:
            if ix.key in self.partition_indexes:
                out[ix.key] = _partition_metadata(
                    ix, _array(table, OBJ_NAME), *self.partition_indexes[ix.key]
                )
            else:
                out[ix.key] = self._typed(ix, table.column(ix.key))
        return out

    def _typed(self, ix, metadata):
        """``metadata`` with the index's metadata type: an array of type null (no part or
        summary holds the column: unknown) becomes nulls of that type."""
        if not pa.types.is_null(metadata.type):
            return metadata
        column_type = schema_mod.resolve_column(self.schema, ix.column, case_sensitive=True)[1].type
        return pa.nulls(len(metadata), ix.metadata_type(column_type))


def prune_context(snapshot, damage=()) -> PruneContext:
    """The pruning view of ``snapshot`` (callers cache it per snapshot: ``MetaIndex`` keeps
    the one of its current snapshot).

    Raises:
        StoreDamageError: ``damage`` (the store's ``TableStore.damage()``) is not empty: a
            damaged store decides nothing.
    """
    if damage:
        raise StoreDamageError(
            f"{snapshot.table.uri}: the index is damaged: "
            f"{'; '.join(str(p) for p in damage[:3])}"
            f"{f' (and {len(damage) - 3} more)' if len(damage) > 3 else ''}"
            "; refresh() repairs it",
            damage,
        )
    return PruneContext(snapshot)
