"""A snapshot: the index at one version, and its metadata as one Arrow table.

Reading a part checks its size and SHA-256 against the log before decoding. Parts are cached
in-process by content hash (they never change), whole metadata tables by (store, version);
decrypted data only for the same key access.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from threading import Lock
from types import MappingProxyType

import numpy as np
import pyarrow as pa

from metaindex.arrays import numeric_array, string_array
from metaindex.drift import common_type, conform_array
from metaindex.errors import IntegrityError, SchemaError
from metaindex.store.escaping import (
    FILE_INFO_COLUMNS,
    OBJ_ETAG,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    OBJECT_COLUMNS,
    VIRTUAL_PREFIX,
)
from metaindex.store.log import State
from metaindex.store.model import FileEntry
from metaindex.store.parts import (
    FILE_INFO_TYPES,
    KEYS_UNAVAILABLE_KEY,
    read_verified_part,
    verify_part,
)
from metaindex.store.summary import CALENDAR_TYPES, check_layout, summarize
from metaindex.store.tableschema import latest_table_state, merge_records

__all__ = ["Snapshot", "read_part", "scope_of"]

_TABLE_CACHE_SIZE = 4
_PART_CACHE_BYTES = 256 * 1024 * 1024
_tables: OrderedDict = OrderedDict()
_parts: OrderedDict = OrderedDict()
_parts_bytes = 0
_projections: dict = {}  # (scope, sha256) -> the column tuples of its cached reads
_SUMMARY_CACHE_SIZE = 4096
_summaries: OrderedDict = OrderedDict()  # summaries computed for format 5/6 parts
_TOKEN_CACHE_SIZE = 1024
_tokens: OrderedDict = OrderedDict()  # (scope, sha256, log key) -> tokens of a part's names
_lock = Lock()


def _cache_get(cache: OrderedDict, key):
    with _lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def _remember_table(key, table: pa.Table) -> None:
    with _lock:
        _tables[key] = table
        _tables.move_to_end(key)
        while len(_tables) > _TABLE_CACHE_SIZE:
            _tables.popitem(last=False)


def _remember_part(key, table: pa.Table) -> None:
    global _parts_bytes
    with _lock:
        if key in _parts:
            return
        _parts[key] = table
        _parts_bytes += table.nbytes
        _projections.setdefault(key[:2], set()).add(key[2])
        while _parts_bytes > _PART_CACHE_BYTES and len(_parts) > 1:
            old_key, old = _parts.popitem(last=False)
            _parts_bytes -= old.nbytes
            _forget_projection(old_key)


def _forget_projection(key) -> None:
    columns = _projections.get(key[:2])
    if columns is not None:
        columns.discard(key[2])
        if not columns:
            del _projections[key[:2]]


def forget_table(storage_key, table_dir: str) -> None:
    """Drop the cached metadata tables and parts of one table (scope = (storage key, table
    dir, ...))."""
    global _parts_bytes
    with _lock:
        for key in [k for k in _tables if k[0][0] == storage_key and k[0][1] == table_dir]:
            del _tables[key]
        for key in [k for k in _parts if k[0][0] == storage_key and k[0][1] == table_dir]:
            _parts_bytes -= _parts.pop(key).nbytes
            _forget_projection(key)
        for key in [k for k in _summaries if k[0][0] == storage_key and k[0][1] == table_dir]:
            del _summaries[key]
        for key in [k for k in _tokens if k[0][0] == storage_key and k[0][1] == table_dir]:
            del _tokens[key]


def scope_of(storage, table_dir: str, encryption, key_access) -> tuple:
    """The cache scope of a table's decoded parts: decrypted data is shared only with holders
    of the same key access."""
    return storage.key, table_dir, None if encryption is None else id(key_access)


def read_part(
    storage,
    table_dir: str,
    scope,
    record,
    columns: tuple | None,
    key_access,
    named_by: str = "the log",
) -> pa.Table:
    """All rows of a part (``columns``: as ``read_verified_part`` takes them), verified against
    its log record and cached by (scope, sha256, columns)."""
    key = (scope, record.sha256, columns)
    table = _cache_get(_parts, key)
    if table is not None:
        return table
    if columns is not None:  # a read of more columns is cached: project it
        wanted = {OBJ_NAME, *columns}
        with _lock:
            covers = [
                k
                for k in _projections.get((scope, record.sha256), ())
                if k is None or wanted <= {OBJ_NAME, *k}
            ]
        for cover in covers:
            whole = _cache_get(_parts, (scope, record.sha256, cover))
            if whole is not None:
                return whole.select([c for c in whole.column_names if c in wanted])
    where = storage.join(table_dir, record.path)
    try:
        data = storage.read(where)
    except FileNotFoundError:
        raise IntegrityError(f"{where}: part named by the log ({named_by}) is missing") from None
    verify_part(data, record.bytes, record.sha256, where)
    table = read_verified_part(data, where, key_access, columns)
    if table.num_rows != record.rows:
        raise IntegrityError(f"{where}: {table.num_rows} rows, the log recorded {record.rows}")
    _remember_part(key, table)
    return table


class Snapshot:
    """The metadata index of a table at one version (immutable).

    Attributes:
        version: the log version. timestamp: its commit time (ms since the epoch, UTC).
        operation: the operation that produced it ("create", "build", "refresh", ...).
        table: the :class:`TableIdentity`. index_defs: tuple of :class:`IndexDef`.
        encryption: :class:`EncryptionLabels` or None.
        files: {obj_name: :class:`FileEntry`} of every indexed object.
        parts: {relative part path: :class:`PartRecord`} of the live parts, oldest first.
        unreadable: {file name: (size, mtime, reason)} of the data files a build or refresh
            could not read (not indexed; retried once their size or mtime changes). In an
            encrypted store they are sealed in the log: reading them needs its keys
            (:attr:`unreadable_count` does not).
        schema_records: the table schema records of the log, oldest first (see
            :mod:`metaindex.store.tableschema`); :attr:`recorded_schema` merges them.
    """

    def __init__(self, storage, table_dir: str, state: State, key_access=None):
        self._storage = storage
        self._table_dir = table_dir
        self._state = state
        self._key_access = key_access
        # decrypted data is shared only with holders of the same key access
        self._scope = scope_of(storage, table_dir, state.encryption, key_access)
        self.version = state.version
        self.timestamp = state.timestamp
        self.operation = state.operation
        self.table = state.identity
        self.index_defs = state.index_defs
        self.encryption = state.encryption
        self.parts = MappingProxyType(state.parts)
        self.schema_records = tuple(state.schema_records or ())
        self._unreadable: Mapping[str, tuple] | None = None
        self._recorded: tuple | None = None
        self._files: Mapping[str, FileEntry] | None = None
        self._summary_table = None
        self._file_tables: dict = {}

    def __repr__(self) -> str:
        return (
            f"Snapshot(table={self.table.uri!r}, version={self.version}, "
            f"files={self.object_count}, parts={len(self.parts)}, "
            f"indexes={[d.storage_name for d in self.index_defs]})"
        )

    @property
    def unreadable_count(self) -> int:
        """How many data files a build or refresh could not read (no keys needed)."""
        return len(self._state.unreadable)

    @property
    def unreadable(self) -> Mapping:
        if self._unreadable is None:
            out: dict[str, tuple] = {}
            for key, record in self._state.unreadable.items():
                if isinstance(record, str):
                    name, size, mtime, reason = self._log_cipher().open(
                        record, f"unreadable/{key}", f"{self._table_dir} (version {self.version})"
                    )
                    out[name] = (size, mtime, reason)
                else:
                    out[key] = record
            self._unreadable = MappingProxyType(out)
        return self._unreadable

    def _log_cipher(self):
        """The store's LogCipher (None: its log names objects in clear)."""
        if self._state.log_key is None:
            return None
        from metaindex.store.logkey import cipher_for

        return cipher_for(
            self._state.log_key, self._key_access, self._state.identity.id, self._table_dir
        )

    def _tokens(self, path: str, names) -> pa.Array | None:
        """The tokens of a part's names under the log key (cached per part), when its log
        names objects by token and some of the part's objects are dead."""
        if self._state.log_key is None or not self._state.dead.get(path):
            return None
        key = (self._scope, self._state.parts[path].sha256, self._state.log_key)
        found = _cache_get(_tokens, key)
        if found is None or len(found) != len(names):
            found = self._log_cipher().tokens(names)
            with _lock:
                _tokens[key] = found
                while len(_tokens) > _TOKEN_CACHE_SIZE:
                    _tokens.popitem(last=False)
        return found

    @property
    def recorded_schema(self) -> tuple:
        """``(data schema, {partition column: type name})`` the builds and refreshes up to
        this version recorded (their union).

        Raises:
            SchemaError: no schema recorded (an index not built by ``metaindex.MetaIndex``),
                or records that cannot be read or merged.
        """
        if self._recorded is None:
            try:
                self._recorded = merge_records(self.schema_records)
            except SchemaError as exc:
                raise SchemaError(f"{self._table_dir}: {exc}") from None
        return self._recorded

    @property
    def table_state(self) -> dict:
        """Where in the table's history the newest build or refresh stood, as its table
        format recorded it (``{"delta_version": 12, ...}`` for a Delta table; ``{}`` for a
        directory, or a store written before it was recorded)."""
        return latest_table_state(self.schema_records)

    def live_objects(self, part: str) -> frozenset:
        """obj_names whose live row is in ``part`` (reads the part's names for a format-7
        part; O(its rows))."""
        if part not in self._state.parts:
            return frozenset()
        return frozenset(self.read_parts([part], columns=[]).column(OBJ_NAME).to_pylist())

    # ---------------------------------------------------------------- O(parts) facts

    @property
    def object_count(self) -> int:
        """How many objects are indexed (live), without touching any of them."""
        return self._state.object_count()

    @property
    def part_paths(self) -> tuple:
        """The live parts' relative paths, oldest first."""
        return tuple(self._state.parts)

    def summary_table(self) -> pa.Table:
        """One row per live part, in :attr:`part_paths` order: ``part`` (its path),
        ``objects`` and ``bytes`` (its live objects and their obj_size total), the four
        calendar columns, then one column per index definition named ``IndexDef.storage_name`` (of
        that index's metadata type; null: no summary, the part may match). The rules are those
        of :mod:`metaindex.store.summary`. Format-7 parts carry their summary in the log;
        older parts are read (the columns needed only) and their summary cached by content
        hash. Cached per snapshot."""
        if self._summary_table is None:
            self._summary_table = self._build_summaries()
        return self._summary_table

    def _part_summary(self, path: str) -> pa.Table:
        record = self._state.parts[path]
        if record.summary is not None:
            for d in self.index_defs:
                if d.storage_name in record.summary.column_names:
                    check_layout(
                        d,
                        record.summary.schema.field(d.storage_name).type,
                        f"{self._table_dir}: part {path}",
                    )
            return record.summary
        defs = tuple(self.index_defs)
        key = (self._scope, record.sha256, defs)
        table = _cache_get(_summaries, key)
        if table is None:
            wanted = [*CALENDAR_TYPES, *(d.storage_name for d in defs if d.key_metadata is None)]
            table = summarize(self._part_table(path, tuple(wanted)), defs)
            with _lock:
                _summaries[key] = table
                while len(_summaries) > _SUMMARY_CACHE_SIZE:
                    _summaries.popitem(last=False)
        return table

    def _build_summaries(self) -> pa.Table:
        paths = self.part_paths
        rows = [self._part_summary(p) for p in paths]
        fields = [
            pa.field("part", pa.string()),
            pa.field("objects", pa.int64()),
            pa.field("bytes", pa.int64()),
        ]
        fields += [pa.field(n, t) for n, t in CALENDAR_TYPES.items()]
        for d in self.index_defs:
            seen = {
                r.schema.field(d.storage_name).type
                for r in rows
                if d.storage_name in r.column_names
            } - {pa.null()}
            fields.append(pa.field(d.storage_name, _unified(d.storage_name, seen)))
        schema = pa.schema(fields)
        counts = np.array([self._state.live_counts(p) for p in paths], np.int64).reshape(-1, 2)
        columns = [string_array(paths), numeric_array(counts[:, 0]), numeric_array(counts[:, 1])]
        for f in list(schema)[3:]:
            chunks = []
            for r in rows:
                if f.name in r.column_names and not pa.types.is_null(r.schema.field(f.name).type):
                    col = r.column(f.name).combine_chunks()
                    chunks.append(col if col.type == f.type else conform_array(col, f.type))
                else:
                    chunks.append(pa.nulls(1, f.type))
            columns.append(pa.concat_arrays(chunks) if chunks else pa.nulls(0, f.type))
        return pa.Table.from_arrays(columns, schema=schema)

    # ---------------------------------------------------------------- reading parts

    def _part_table(self, path: str, columns: tuple | None = None) -> pa.Table:
        return read_part(
            self._storage,
            self._table_dir,
            self._scope,
            self._state.parts[path],
            columns,
            self._key_access,
            f"version {self.version}",
        )

    def live_counts(self, path: str) -> tuple:
        """``(live objects, their obj_size total)`` of a live part, from the log alone (for a
        format-5/6 part: its listed objects; format 7: its rows less its dead ones)."""
        return self._state.live_counts(path)

    def _check_columns(self, columns) -> tuple:
        if isinstance(columns, str):
            raise TypeError("columns is a list of column names, not one str")
        known = {*OBJECT_COLUMNS, *FILE_INFO_COLUMNS, *(d.storage_name for d in self.index_defs)}
        out = []
        for c in columns:
            if not isinstance(c, str) or not (c in known or c.startswith(VIRTUAL_PREFIX)):
                raise ValueError(
                    f"unknown metadata column {c!r}: the columns are "
                    f"{sorted(known)} and virtual_<partition column>"
                )
            if c != OBJ_NAME and c not in out:
                out.append(c)
        return tuple(out)

    def read_parts(self, paths, columns=None) -> pa.Table:
        """The live rows of the given parts.

        Args:
            paths: live part paths (from :attr:`part_paths`).
            columns: None for every column (laid out as :meth:`metadata_table`), or a list:
                ``obj_name`` then these columns (``obj_*``, the per-file columns,
                ``virtual_*`` or index columns), the only ones read, decoded and decrypted.
                A column a part lacks reads as nulls.
        """
        wanted = None if columns is None else self._check_columns(columns)
        tables = []
        for path in paths:
            if path not in self._state.parts:
                raise ValueError(f"{path} is not a live part at version {self.version}")
            table = self._part_table(path, wanted)
            names = table.column(OBJ_NAME)
            mask = self._state.live_mask(path, names, self._tokens(path, names))
            if mask is not None:
                table = table.filter(mask)
            tables.append((path, table))
        return self._align(tables, wanted)

    def file_table(self, columns=(OBJ_NAME, OBJ_SIZE, OBJ_MTIME)) -> pa.Table:
        """Every live object as Arrow: ``obj_name``, then ``columns``, then ``part_index``
        (int32: its part's position in :attr:`part_paths`). Cached per snapshot."""
        wanted = self._check_columns(columns)
        key = (self._scope, self.version, "files", wanted)
        table = self._file_tables.get(wanted) or _cache_get(_tables, key)
        if table is None:
            paths = self.part_paths
            parts = self.read_parts(paths, wanted)
            counts = [self._state.live_counts(p)[0] for p in paths]
            index = np.repeat(np.arange(len(paths), dtype=np.int32), counts)
            if len(index) != parts.num_rows:
                raise IntegrityError(
                    f"{self._table_dir}: the parts hold {parts.num_rows} live "
                    f"rows, the log counts {len(index)}"
                )
            table = parts.append_column("part_index", numeric_array(index))
            _remember_table(key, table)
        self._file_tables[wanted] = table
        return table

    @property
    def files(self) -> Mapping:
        """{obj_name: :class:`FileEntry`} of every indexed object, built on first use from
        :meth:`file_table` (O(objects) Python objects: not for the prune or refresh path)."""
        if self._files is None:
            files = self._state.legacy_files()
            if files is None:
                t = self.file_table((OBJ_NAME, OBJ_SIZE, OBJ_MTIME, OBJ_ROWS, OBJ_ETAG))
                paths = self.part_paths
                files = {
                    n: FileEntry(n, s, m, r, paths[p], e)
                    for n, s, m, r, e, p in zip(
                        *(
                            t.column(c).to_pylist()
                            for c in (
                                OBJ_NAME,
                                OBJ_SIZE,
                                OBJ_MTIME,
                                OBJ_ROWS,
                                OBJ_ETAG,
                                "part_index",
                            )
                        ),
                        strict=True,
                    )
                }
            self._files = MappingProxyType(files)
        return self._files

    def metadata_table(self) -> pa.Table:
        """One row per indexed object: obj_name, obj_size, obj_mtime, obj_rows, the per-file
        columns of ``FILE_INFO_COLUMNS`` (null in rows of format-5 parts), the
        ``virtual_*`` partition columns, then one column per index definition (named
        :attr:`IndexDef.storage_name`; all-null where a part predates the index, or where this
        reader cannot get the column's key: those columns are listed under the schema
        metadata key ``metaindex.store.KEYS_UNAVAILABLE_KEY``). Cached per (store, version)."""
        key = (self._scope, self.version)
        table = _cache_get(_tables, key)
        if table is None:
            table = self.read_parts(self.part_paths)
            _remember_table(key, table)
        return table

    def _align(self, tables: list, wanted: tuple | None = None) -> pa.Table:
        types: dict[str, dict] = {}
        virtual = []
        index_columns = {d.storage_name for d in self.index_defs}
        for path, t in tables:
            for f in t.schema:
                if (
                    f.name.startswith(VIRTUAL_PREFIX)
                    and f.name not in virtual
                    and f.name not in index_columns
                ):
                    virtual.append(f.name)
                types.setdefault(f.name, {}).setdefault(f.type, path)
        if wanted is None:
            columns = [
                *OBJECT_COLUMNS,
                *FILE_INFO_COLUMNS,
                *virtual,
                *(d.storage_name for d in self.index_defs),
            ]
        else:
            columns = [OBJ_NAME, *wanted]
        fields = []
        for name in columns:
            if name in FILE_INFO_TYPES:
                fields.append(pa.field(name, FILE_INFO_TYPES[name]))
            elif name in OBJECT_COLUMNS:
                fields.append(pa.field(name, pa.string() if name == OBJ_NAME else pa.int64()))
            else:
                seen = types.get(name, {})
                fields.append(pa.field(name, _unified(name, seen)))
        schema = pa.schema(fields)
        aligned = []
        for _, t in tables:
            arrays = []
            for f in schema:
                if f.name in t.column_names:
                    col = t.column(f.name)
                    arrays.append(col if col.type == f.type else conform_array(col, f.type))
                else:
                    arrays.append(pa.nulls(t.num_rows, f.type))
            aligned.append(pa.Table.from_arrays(arrays, schema=schema))
        missing = sorted(
            {
                name
                for _, t in tables
                for name in json.loads((t.schema.metadata or {}).get(KEYS_UNAVAILABLE_KEY, b"[]"))
            }
        )
        if missing:
            schema = schema.with_metadata({KEYS_UNAVAILABLE_KEY: json.dumps(missing).encode()})
            aligned = [t.replace_schema_metadata(schema.metadata) for t in aligned]
        if not aligned:  # not schema.empty_table(), which imports pandas
            return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
        return pa.concat_tables(aligned).combine_chunks()


def _unified(name: str, seen) -> pa.DataType:
    """One type for a column that parts hold with the types ``seen`` (a dict type -> a part
    naming it, or a set): the only one, or their join (``metaindex.drift``: the parts'
    values convert to it exactly or become null, unknown); ``null`` if none."""
    if len(seen) <= 1:
        return next(iter(seen), pa.null())
    try:
        return common_type(name, sorted(seen, key=str))
    except SchemaError:
        where = sorted(seen.values()) if isinstance(seen, dict) else "summaries"
        raise SchemaError(
            f"column {name!r} has incompatible types in parts {where}: {sorted(map(str, seen))}"
        ) from None
