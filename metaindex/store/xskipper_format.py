"""Reading the metadata stores xskipper wrote (format versions 0-4, specs/metadata-store.md,
"Reading xskipper's stores").

An xskipper store of one table is a directory of Parquet files written by Spark: one row per
indexed object, ``obj_name`` = ``<path>#<modification time ms>`` (xskipper's
``Identifier.getFileId``), ``virtual_<col>`` partition values (version 4) and one column per
index, described by its Spark field metadata (``index`` -> ``name``, ``cols``, ``params``,
``key_metadata``). :func:`read_store` reads every such file (PME-encrypted ones with a
``KeyAccess``, as parquet-java wrote them) into :class:`XskipperStore`: the index definitions
in metaindex's terms and one Arrow table of the objects with each index's metadata converted to
the metadata type of the metaindex kind that answers for it:

* ``minmax`` -> ``minmax`` (``null_count`` unknown; ``nan_count`` unknown for floats, and a
  NaN bound widened: see :func:`_minmax`);
* ``valuelist`` -> ``valuelist`` (``has_null`` true: xskipper kept no nulls, so a file may
  hold one; floats canonical);
* ``bloomfilter`` -> ``sketchbloom`` (Spark's sketch filter, :mod:`metaindex.index.sketchbloom`).

A value this module does not understand (another index kind, a serialised value of another
class, a malformed filter, an object name without ``#mtime``) becomes unknown metadata, or no
entry: the file is read, never wrongly skipped. A version above 4 raises
:class:`~metaindex.errors.UnsupportedVersionError`.

Where xskipper keeps a table's store: :func:`table_identifier` (its default ``Identifier``:
the path of the table URI without a trailing ``/``) and :func:`store_directory`
(``<base>/<sha256 hex of the identifier>``).
"""

from __future__ import annotations

import hashlib
import json
import math
import urllib.parse
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import DecodeError, MetaIndexError, UnsupportedVersionError
from metaindex.index.sketchbloom import SketchBloomIndex
from metaindex.store.javaser import boxed_value, read_object, sketch_filter
from metaindex.store.model import EncryptionLabels, IndexDef
from metaindex.store.parts import _open as open_parquet  # PME when the footer says so
from metaindex.store.sparkschema import SPARK_ROW_METADATA

__all__ = [
    "NEWEST_VERSION",
    "XskipperIndex",
    "XskipperStore",
    "XskipperFormatWarning",
    "table_identifier",
    "store_directory",
    "is_store",
    "read_store",
    "ID",
    "PATH",
    "MTIME",
]

NEWEST_VERSION = 4
"""The newest format xskipper wrote (xskipper 1.x: ``PARQUET_MD_STORAGE_VERSION``)."""

ID, PATH, MTIME = "xskipper_id", "path", "mtime"
"""Columns of :attr:`XskipperStore.objects`: xskipper's object name, its path and mtime."""

_KINDS = {"minmax": "minmax", "valuelist": "valuelist", "bloomfilter": "sketchbloom"}
_BLOOM_PARAMS = {
    "fpp": ("io.xskipper.index.bloom.fpp", "fpp", float),
    "ndv": ("io.xskipper.index.bloom.ndv", "ndv", int),
}


class XskipperFormatWarning(UserWarning):
    """Part of an xskipper store was not understood (those files are read, not skipped)."""


def table_identifier(table_uri: str) -> str:
    """xskipper's table identifier of a table URI or path (``io.xskipper.utils.identifier.
    Identifier``): the URI's path, percent-decoded, without a trailing ``/``
    (``file:///data/t/`` -> ``/data/t``; ``s3a://bucket/a/t`` -> ``/a/t``). A catalog table
    name (``db.t``) is its own identifier."""
    if not isinstance(table_uri, str) or not table_uri:
        raise TypeError(f"a table URI is a non-empty str, not {table_uri!r}")
    path = (
        urllib.parse.urlsplit(table_uri).path
        if "://" in table_uri or table_uri.startswith("file:")
        else table_uri
    )
    path = urllib.parse.unquote(path)
    while "//" in path:
        path = path.replace("//", "/")
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def store_directory(base: str, identifier: str) -> str:
    """Where xskipper keeps a table's store under ``base`` (``EXPLICIT_BASE_PATH_LOCATION``,
    ``HIVE_DB_NAME``): ``<base>/<SHA-256 hex of the identifier>``."""
    return f"{base.rstrip('/')}/{hashlib.sha256(identifier.encode('utf-8')).hexdigest()}"


@dataclass(frozen=True)
class XskipperIndex:
    """One index of an xskipper store.

    Attributes:
        name: xskipper's kind (``minmax``, ``valuelist``, ``bloomfilter``, or a plugin's).
        cols: the indexed columns. params: xskipper's parameters (strings).
        key_metadata: the label of the key encrypting its column (None: plaintext).
        column: its column in the store's files.
        definition: the metaindex index that answers for it, None when not understood.
    """

    name: str
    cols: tuple
    params: dict
    key_metadata: str | None
    column: str
    definition: IndexDef | None


@dataclass
class XskipperStore:
    """An xskipper store, read.

    Attributes:
        path: its directory. version: the format version (0-4).
        identifier: the table identifier it records (xskipper's ``tableIdentifier``).
        indexes: :class:`XskipperIndex` per index column, in file order.
        encryption: the footer key label and footer mode (labels only) or None.
        column_keys: xskipper's PME column key list (``label:col,col;label:col``) or None.
        files: the metadata files read.
        partitions: the ``virtual_<col>`` partition columns (version 4), in order.
        objects: one row per indexed object: ``xskipper_id`` (its name), ``path``, ``mtime``,
            the ``virtual_*`` columns, then one column per understood index named by its
            metaindex ``IndexDef.storage_name``, of that kind's metadata type. Objects named more
            than once (xskipper's refresh could leave duplicates) are dropped: not indexed.
        problems: what was not understood (and so is unknown: those files are read).
    """

    path: str
    version: int
    identifier: str
    indexes: tuple
    encryption: EncryptionLabels | None
    column_keys: str | None
    files: tuple
    partitions: tuple
    objects: pa.Table
    problems: list = field(default_factory=list)

    @property
    def index_defs(self) -> tuple:
        """The metaindex definitions of the understood indexes (key labels kept)."""
        return tuple(ix.definition for ix in self.indexes if ix.definition is not None)


# ---------------------------------------------------------------------------- files


def _data_files(storage, path: str) -> list:
    """The Parquet files Spark wrote in the store directory (not ``_``/``.`` names)."""
    return sorted(
        s.name
        for s in storage.list(path)
        if not s.name.startswith(("_", ".")) and s.name.endswith(".parquet")
    )


def is_store(path: str, *, filesystem=None, storage_options=None) -> bool:
    """Whether ``path`` is a directory holding xskipper metadata files (no file is read)."""
    from metaindex.store.schemes import open_storage

    storage, root = open_storage(path, filesystem, storage_options)
    try:
        return bool(_data_files(storage, root))
    except (OSError, MetaIndexError):
        return False


def _spark_fields(pf, where: str) -> list:
    raw = pf.key_value_metadata.get(SPARK_ROW_METADATA)
    if raw is None:
        raise DecodeError(f"{where}: not an xskipper metadata file (no {SPARK_ROW_METADATA})")
    try:
        fields = json.loads(raw)["fields"]
        out = [(f["name"], f["type"], f.get("metadata") or {}) for f in fields]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise DecodeError(f"{where}: unreadable Spark schema ({type(exc).__name__})") from None
    if not all(isinstance(n, str) and isinstance(m, dict) for n, _, m in out):
        raise DecodeError(f"{where}: bad Spark schema fields")
    return out


def _version(meta: dict, where: str) -> int:
    version = meta.get("version", 0)  # unversioned files are version 0
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise DecodeError(f"{where}: xskipper format version {version!r} is not a natural number")
    if version > NEWEST_VERSION:
        raise UnsupportedVersionError(
            f"{where}: xskipper metadata format version {version} is newer than the newest "
            f"metaindex reads ({NEWEST_VERSION}, xskipper 1.x): rebuild the index with "
            "metaindex"
        )
    return version


def _params(meta: dict, version: int, where: str) -> dict:
    raw = meta.get("params")
    if raw is None:
        return {}
    if version <= 2:  # an array of "key:value" strings
        if not isinstance(raw, list) or not all(isinstance(s, str) and ":" in s for s in raw):
            raise DecodeError(f"{where}: index params must be 'key:value' strings")
        return dict(s.split(":", 1) for s in raw)
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise DecodeError(f"{where}: index params must be a map of strings")
    return dict(raw)


def _definition(name: str, cols: tuple, params: dict, key: str | None) -> IndexDef | None:
    kind = _KINDS.get(name)
    if kind is None or len(cols) != 1:
        return None
    ours = {}
    if kind == "sketchbloom":
        for param, (long_key, short_key, convert) in _BLOOM_PARAMS.items():
            value = params.get(long_key, params.get(short_key))
            if value is not None:
                try:
                    ours[param] = convert(value)
                    SketchBloomIndex(cols[0], **ours)
                except ValueError:
                    return None
    return IndexDef(kind, cols, ours, key)


def _labels(meta: dict, pf, where: str) -> tuple:
    enc = meta.get("encryption")
    if enc is None:
        return None, None
    if (
        not isinstance(enc, dict)
        or not isinstance(enc.get("encryption.footer.key"), str)
        or not isinstance(enc.get("encryption.column.keys"), str)
    ):
        raise DecodeError(
            f"{where}: obj_name 'encryption' metadata needs "
            "encryption.footer.key and encryption.column.keys"
        )
    plaintext = str(enc.get("encryption.plaintext.footer", "false")).lower() == "true"
    algorithm = pf.footer.encryption_algorithm or "AES_GCM_V1"
    return (
        EncryptionLabels(
            enc["encryption.footer.key"],
            plaintext,
            algorithm if algorithm in ("AES_GCM_V1", "AES_GCM_CTR_V1") else "AES_GCM_V1",
        ),
        enc["encryption.column.keys"],
    )


def _describe(fields: list, where: str) -> tuple:
    """(version, identifier, [XskipperIndex], encryption meta) from one file's Spark schema."""
    by_name = {n: m for n, _, m in fields}
    if "obj_name" not in by_name:
        raise DecodeError(f"{where}: not an xskipper metadata file (no obj_name column)")
    obj = by_name["obj_name"]
    version = _version(obj, where)
    identifier = obj.get("tableIdentifier")
    indexes = []
    for name, _, meta in fields:
        index = meta.get("index")
        if not isinstance(index, dict):
            continue
        if version == 0 and identifier is None:
            identifier = index.get("tableIdentifier")
        kind, cols = index.get("name"), index.get("cols")
        if (
            not isinstance(kind, str)
            or not isinstance(cols, list)
            or not cols
            or not all(isinstance(c, str) for c in cols)
        ):
            raise DecodeError(f"{where}: column {name!r} has bad index metadata")
        key = index.get("key_metadata")
        if key is not None and not isinstance(key, str):
            raise DecodeError(f"{where}: column {name!r}: key_metadata must be a label")
        params = _params(index, version, f"{where} ({name})")
        indexes.append(
            XskipperIndex(
                kind, tuple(cols), params, key, name, _definition(kind, tuple(cols), params, key)
            )
        )
    if not isinstance(identifier, str):
        raise DecodeError(f"{where}: no tableIdentifier: not an xskipper metadata file")
    return version, identifier, indexes, obj


# ---------------------------------------------------------------------------- values


def _canonical_floats(values: pa.Array) -> pa.Array:
    """-0.0 as 0.0 and every NaN as one quiet NaN (how metaindex compares floats)."""
    if not pa.types.is_floating(values.type):
        return values
    as_double = values.cast(pa.float64())
    fixed = pc.if_else(pc.equal(as_double, 0.0), pa.scalar(0.0), as_double)
    fixed = pc.if_else(pc.is_nan(fixed), pa.scalar(math.nan), fixed)
    return fixed.cast(values.type)


def _minmax(bounds: pa.Array, value_type: pa.DataType, reduced: bool) -> pa.Array:
    """xskipper's ``struct<min, max>`` as metaindex's ``struct<min, max, null_count,
    nan_count>``.

    ``null_count`` is unknown (null). xskipper reduced min/max with Scala's ``Ordering``
    (``java.lang.Double.compare``: NaN above every number) unless it read them from Parquet
    footer statistics (only for a store whose every index is a min/max on a non-decimal
    numeric column: ``reduced`` False), where a writer may have left NaN out. For floats a NaN
    ``max`` means the file holds NaN: ``max`` becomes +inf (a bound that holds), and a NaN
    ``min`` (only NaN and nulls) leaves both bounds null, with ``nan_count`` unknown; a
    non-NaN ``max`` proves the file holds no NaN (``nan_count`` 0) only when ``reduced``.
    Null bounds mean "only nulls" only when ``reduced``: from footers they are what xskipper
    wrote when the statistics had no min/max (parquet-java drops a float column's min/max
    when one is NaN), so there the entry is unknown. A struct with one bound and not the
    other is unknown (null)."""
    lo, hi = bounds.field("min").cast(value_type), bounds.field("max").cast(value_type)
    valid = pc.and_(bounds.is_valid(), pc.equal(lo.is_valid(), hi.is_valid()))
    if not reduced:  # from footers, no bounds need not mean no values: unknown
        valid = pc.and_(valid, lo.is_valid())
    if pa.types.is_floating(value_type):
        lo_nan = pc.fill_null(pc.is_nan(lo), False)
        hi_nan = pc.fill_null(pc.is_nan(hi), False)
        inf = pa.scalar(math.inf, value_type)
        hi = pc.if_else(lo_nan, pa.nulls(len(hi), value_type), pc.if_else(hi_nan, inf, hi))
        lo = pc.if_else(lo_nan, pa.nulls(len(lo), value_type), _canonical_floats(lo))
        hi = _canonical_floats(hi)
    counts = pa.nulls(len(bounds), pa.int64())
    nans = counts
    if pa.types.is_floating(value_type) and reduced:
        nans = pc.if_else(pc.or_(lo_nan, hi_nan), counts, pa.scalar(0, pa.int64()))
    return pa.StructArray.from_arrays(
        [lo, hi, counts, nans], ["min", "max", "null_count", "nan_count"], mask=pc.invert(valid)
    )


def _v0_minmax(blobs: pa.Array, problems: list, where: str) -> tuple:
    """Version 0 min/max: serialised ``MinMaxMetaData(min, max)`` of boxed values."""
    pairs: list[tuple[Any, Any] | None] = []
    for blob in blobs.to_pylist():
        try:
            obj = None if blob is None else read_object(blob)
            if obj is None:
                pairs.append(None)
                continue
            if not getattr(obj, "class_name", "").endswith(".MinMaxMetaData"):
                raise DecodeError(f"a {getattr(obj, 'class_name', obj)!r} is not MinMaxMetaData")
            pairs.append((boxed_value(obj.fields.get("min")), boxed_value(obj.fields.get("max"))))
        except DecodeError as exc:
            problems.append(f"{where}: {exc}")
            pairs.append(None)
    kinds = {type(v) for p in pairs if p for v in p if v is not None}
    types = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}
    if len(kinds) != 1 or next(iter(kinds)) not in types:
        if kinds:
            problems.append(f"{where}: version-0 min/max of mixed or unknown types")
        return None, None
    t = types[kinds.pop()]
    bounds = pa.array(
        [None if p is None else {"min": p[0], "max": p[1]} for p in pairs],
        pa.struct([("min", t), ("max", t)]),
    )
    return bounds, t


def _valuelist(lists: pa.Array) -> tuple:
    values = lists.flatten()
    canonical = _canonical_floats(values)
    rebuilt = pa.ListArray.from_arrays(lists.offsets, canonical, mask=lists.is_null())
    longest = int(pc.max(pc.list_value_length(lists)).as_py() or 0)
    may_have_null = pa.array(np.ones(len(lists), np.bool_))  # xskipper drops nulls
    out = pa.StructArray.from_arrays(
        [rebuilt, may_have_null], ["values", "has_null"], mask=lists.is_null()
    )
    return out, longest


def _sketch(blobs: pa.Array, problems: list, where: str) -> pa.Array:
    rows: list[dict[str, Any] | None] = []
    for blob in blobs.to_pylist():
        if blob is None:
            rows.append(None)
            continue
        try:
            f = sketch_filter(read_object(blob))
            rows.append({"num_hashes": f.num_hashes, "words": f.words})
        except DecodeError as exc:
            problems.append(f"{where}: {exc}")
            rows.append(None)
    return pa.array(
        rows, pa.struct([pa.field("num_hashes", pa.int32()), pa.field("words", pa.binary())])
    )


def _convert(
    ix: XskipperIndex,
    column: pa.Array,
    version: int,
    problems: list,
    where: str,
    reduced: bool = False,
):
    """``(metaindex metadata array or None, value type or None, extra params)``."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    assert ix.definition is not None, "the caller converts understood indexes only"
    name = ix.definition.name
    if name == "sketchbloom":
        if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
            return None, None, {}
        return _sketch(column, problems, where), None, {}
    if name == "minmax":
        if version == 0 and pa.types.is_binary(column.type):
            column, t = _v0_minmax(column, problems, where)
            if column is None:
                return None, None, {}
        elif (
            pa.types.is_struct(column.type)
            and [f.name for f in column.type] == ["min", "max"]
            and column.type.field(0).type == column.type.field(1).type
        ):
            t = column.type.field(0).type
        else:
            problems.append(
                f"{where}: min/max column {ix.column} of type {column.type} not understood"
            )
            return None, None, {}
        return _minmax(column, t, reduced), t, {}
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        out, longest = _valuelist(column)
        return out, column.type.value_type, {"max_values": max(100, longest)}
    problems.append(
        f"{where}: value list column {ix.column} of type {column.type} not "
        "understood (version-0 serialised sets are not read)"
    )
    return None, None, {}


# ---------------------------------------------------------------------------- the store


def _split_ids(ids: pa.Array) -> tuple:
    """``(path, mtime)`` of ``<path>#<mtime>`` names; both null where a name has no mtime."""
    paths, mtimes = [], []
    for name in ids.to_pylist():
        path, sep, mtime = (name or "").rpartition("#")
        ok = bool(sep and path and mtime.isascii() and mtime.isdigit() and len(mtime) <= 18)
        paths.append(path if ok else None)
        mtimes.append(int(mtime) if ok else None)
    return pa.array(paths, pa.string()), pa.array(mtimes, pa.int64())


def read_store(
    path: str, *, filesystem=None, storage_options=None, key_access=None
) -> XskipperStore:
    """Read the xskipper store in directory ``path``.

    Args:
        key_access: a ``metaindex.store.KeyAccess`` reaching the KMS that holds the store's
            master keys (needed for an encrypted store; an index whose key it cannot get is
            unknown).

    Raises:
        MetaIndexError: no metadata files there.
        UnsupportedVersionError: a file of a format newer than version 4.
        DecodeError: files that are not xskipper metadata, or disagree on the version, the
            table or the indexes.
        KeyAccessError: an encrypted store without keys for its footer.
    """
    from metaindex.store.schemes import open_storage

    storage, root = open_storage(path, filesystem, storage_options)
    names = _data_files(storage, root)
    if not names:
        raise MetaIndexError(f"{path}: no xskipper metadata files")
    problems: list = []
    head, tables, encryption = None, [], (None, None)
    for name in names:
        where = storage.join(root, name)
        with open_parquet(storage.read(where), where, key_access) as pf:
            fields = _spark_fields(pf, where)
            version, identifier, indexes, obj_meta = _describe(fields, where)
            if head is None:
                head = (version, identifier, indexes)
                encryption = _labels(obj_meta, pf, where)
            elif (version, identifier, [i.column for i in indexes]) != (
                head[0],
                head[1],
                [i.column for i in head[2]],
            ):
                raise DecodeError(
                    f"{where}: disagrees with {names[0]} on the version, table "
                    "or indexes: not an xskipper store that metaindex reads"
                )
            tables.append(_read_columns(pf, fields, where, problems))
    assert head is not None, "names is not empty"
    version, identifier, indexes = head
    objects, indexes = _objects(tables, indexes, version, problems, storage.join(root, names[0]))
    partitions = tuple(
        c[len("virtual_") :] for c in objects.column_names if c.startswith("virtual_")
    )
    for p in problems[:5]:
        warnings.warn(p, XskipperFormatWarning, stacklevel=2)
    return XskipperStore(
        root,
        version,
        identifier,
        tuple(indexes),
        encryption[0],
        encryption[1],
        tuple(names),
        partitions,
        objects,
        problems,
    )


def _read_columns(pf, fields: list, where: str, problems: list) -> pa.Table:
    """Every column of one file; an index column whose key this reader lacks is all null."""
    from metaindex.errors import KeyAccessError

    arrays, names = [], []
    for name, _, meta in fields:
        try:
            arrays.append(pf.read(columns=[name]).column(0))
        except KeyAccessError:
            if "index" not in meta:
                raise
            problems.append(f"{where}: no key for index column {name}: its files are read")
            arrays.append(None)
        names.append(name)
    n = pf.num_rows
    return pa.table(
        {k: (pa.nulls(n) if a is None else a) for k, a in zip(names, arrays, strict=True)}
    )


def _footer_minmax_type(t: pa.DataType) -> bool:
    """Whether xskipper may have read min/max of this stored type from Parquet footers
    (``MetadataProcessor``'s optimisation: numeric, not decimal)."""
    if not pa.types.is_struct(t) or not t.num_fields:
        return True  # not known: assume it may have
    v = t.field(0).type
    return pa.types.is_integer(v) or pa.types.is_floating(v)


def _objects(tables: list, indexes: list, version: int, problems: list, where: str):
    """(the objects table, indexes with their definitions completed)."""
    table = pa.concat_tables(tables, promote_options="permissive")
    ids = table.column("obj_name").combine_chunks().cast(pa.string())
    paths, mtimes = _split_ids(ids)
    columns = {ID: ids, PATH: paths, MTIME: mtimes}
    for name in table.column_names:
        if name.startswith("virtual_"):
            columns[name] = table.column(name).combine_chunks()
    done = []
    reduced = not all(
        ix.name == "minmax" and _footer_minmax_type(table.column(ix.column).type) for ix in indexes
    )
    for ix in indexes:
        if ix.definition is None:
            problems.append(
                f"{where}: index {ix.name}({', '.join(ix.cols)}) is not a kind "
                "metaindex reads: queries on it read every file"
            )
            done.append(ix)
            continue
        column = table.column(ix.column)
        if pa.types.is_null(column.type):
            metadata = None  # unreadable here (no key): unknown
        else:
            metadata, _, extra = _convert(ix, column, version, problems, where, reduced)
        if metadata is None:
            done.append(
                XskipperIndex(ix.name, ix.cols, ix.params, ix.key_metadata, ix.column, None)
            )
            continue
        d = ix.definition
        d = IndexDef(d.name, d.cols, {**d.params, **extra}, d.key_metadata)
        done.append(XskipperIndex(ix.name, ix.cols, ix.params, ix.key_metadata, ix.column, d))
        columns[d.storage_name] = metadata
    out = pa.table(columns)
    counts = pc.value_counts(ids)
    repeated = counts.filter(pc.greater(counts.field("counts"), 1)).field("values")
    keep = pc.and_(pc.invert(pc.is_in(ids, repeated)), pc.is_valid(paths))
    if not pc.all(keep).as_py():
        dropped = len(ids) - pc.sum(keep.cast(pa.int64())).as_py()
        problems.append(
            f"{where}: {dropped} rows dropped (named twice, or a name without "
            "#mtime): those files are read"
        )
        out = out.filter(keep)
    return out, done
