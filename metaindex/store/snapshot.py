"""A snapshot: the index at one version, and its metadata as one Arrow table.

Reading a part checks its size and SHA-256 against the log before decoding. Parts are cached
in-process by content hash (they never change), whole metadata tables by (store, version);
decrypted data only for the same key access.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from types import MappingProxyType

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import IntegrityError, SchemaError
from metaindex.store.escaping import FILE_INFO_COLUMNS, OBJ_NAME, OBJECT_COLUMNS, VIRTUAL_PREFIX
from metaindex.store.log import State
from metaindex.store.parts import FILE_INFO_TYPES, read_verified_part, verify_part

__all__ = ["Snapshot"]

_TABLE_CACHE_SIZE = 4
_PART_CACHE_BYTES = 256 * 1024 * 1024
_tables: OrderedDict = OrderedDict()
_parts: OrderedDict = OrderedDict()
_parts_bytes = 0
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
        while _parts_bytes > _PART_CACHE_BYTES and len(_parts) > 1:
            _, old = _parts.popitem(last=False)
            _parts_bytes -= old.nbytes


def forget_table(storage_key, table_dir: str) -> None:
    """Drop the cached metadata tables of one table (scope = (storage key, table dir, ...))."""
    with _lock:
        for key in [k for k in _tables if k[0][0] == storage_key and k[0][1] == table_dir]:
            del _tables[key]


class Snapshot:
    """The metadata index of a table at one version (immutable).

    Attributes:
        version: the log version. timestamp: its commit time (ms since the epoch, UTC).
        operation: the operation that produced it ("create", "build", "refresh", ...).
        table: the :class:`TableIdentity`. index_defs: tuple of :class:`IndexDef`.
        encryption: :class:`EncryptionLabels` or None.
        files: {obj_name: :class:`FileEntry`} of every indexed object.
        parts: {relative part path: :class:`PartRecord`} of the live parts, oldest first.
    """

    def __init__(self, storage, table_dir: str, state: State, key_access=None):
        self._storage = storage
        self._table_dir = table_dir
        self._state = state
        self._key_access = key_access
        # decrypted data is shared only with holders of the same key access
        self._scope = (storage.key, table_dir, None if state.encryption is None
                       else id(key_access))
        self.version = state.version
        self.timestamp = state.timestamp
        self.operation = state.operation
        self.table = state.table
        self.index_defs = state.index_defs
        self.encryption = state.encryption
        self.files = MappingProxyType(state.files)
        self.parts = MappingProxyType(state.parts)

    def __repr__(self) -> str:
        return (f"Snapshot(table={self.table.uri!r}, version={self.version}, "
                f"files={len(self.files)}, parts={len(self.parts)}, "
                f"indexes={[d.column for d in self.index_defs]})")

    def live_objects(self, part: str) -> frozenset:
        """obj_names whose live row is in ``part``."""
        return frozenset(self._state.members.get(part, ()))

    def _part_table(self, path: str) -> pa.Table:
        record = self._state.parts[path]
        key = (self._scope, record.sha256)
        table = _cache_get(_parts, key)
        if table is not None:
            return table
        where = self._storage.join(self._table_dir, path)
        try:
            data = self._storage.read(where)
        except FileNotFoundError:
            raise IntegrityError(f"{where}: part named by the log (version {self.version}) is "
                                 "missing") from None
        verify_part(data, record.bytes, record.sha256, where)
        table = read_verified_part(data, where, self._key_access)
        if table.num_rows != record.rows:
            raise IntegrityError(f"{where}: {table.num_rows} rows, the log recorded "
                                 f"{record.rows}")
        _remember_part(key, table)
        return table

    def read_parts(self, paths) -> pa.Table:
        """The live rows of the given parts, as :meth:`metadata_table` lays them out."""
        tables = []
        for path in paths:
            table = self._part_table(path)
            live = self._state.members[path]
            if len(live) != table.num_rows:
                table = table.filter(pc.is_in(table.column(OBJ_NAME),
                                              value_set=pa.array(sorted(live), pa.string())))
            tables.append((path, table))
        return self._align(tables)

    def metadata_table(self) -> pa.Table:
        """One row per indexed object: obj_name, obj_size, obj_mtime, obj_rows, the per-file
        columns of ``FILE_INFO_COLUMNS`` (null in rows of format-5 parts), the
        ``virtual_*`` partition columns, then one column per index definition (named
        :attr:`IndexDef.column`; all-null where a part predates the index). Cached per
        (store, version)."""
        key = (self._scope, self.version)
        table = _cache_get(_tables, key)
        if table is None:
            table = self.read_parts(self._state.parts)
            _remember_table(key, table)
        return table

    def _align(self, tables: list) -> pa.Table:
        virtual, types = [], {}
        for path, t in tables:
            for f in t.schema:
                if f.name.startswith(VIRTUAL_PREFIX) and f.name not in virtual and \
                        f.name not in {d.column for d in self.index_defs}:
                    virtual.append(f.name)
                types.setdefault(f.name, {}).setdefault(f.type, path)
        columns = [*OBJECT_COLUMNS, *FILE_INFO_COLUMNS, *virtual,
                   *(d.column for d in self.index_defs)]
        fields = []
        for name in columns:
            if name in FILE_INFO_TYPES:
                fields.append(pa.field(name, FILE_INFO_TYPES[name]))
                continue
            seen = types.get(name, {})
            if len(seen) <= 1:
                fields.append(pa.field(name, next(iter(seen), pa.null())))
                continue
            try:
                unified = pa.unify_schemas([pa.schema([pa.field(name, t)]) for t in seen],
                                           promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                raise SchemaError(f"column {name!r} has incompatible types in parts "
                                  f"{sorted(seen.values())}: {sorted(map(str, seen))}") from None
            fields.append(unified.field(name))
        schema = pa.schema(fields)
        aligned = []
        for path, t in tables:
            arrays = []
            for f in schema:
                if f.name in t.column_names:
                    col = t.column(f.name)
                    arrays.append(col if col.type == f.type else col.cast(f.type))
                else:
                    arrays.append(pa.nulls(t.num_rows, f.type))
            aligned.append(pa.Table.from_arrays(arrays, schema=schema))
        if not aligned:
            return schema.empty_table()
        return pa.concat_tables(aligned).combine_chunks()
