"""Part files: one Parquet file per commit task, one row per indexed object (version 7).

Written with metaindex's own Parquet writer (PME when the store is encrypted) and read with its
reader. A part is immutable once written; the log records its size and SHA-256, and every read
checks both before decoding, so a truncated, replaced or bit-flipped part is an
:class:`IntegrityError` naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import (
    DecodeError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    SchemaError,
)
from metaindex.index import KINDS
from metaindex.parquet.reader import ParquetFile
from metaindex.parquet.shred import leaf_specs, level_tree
from metaindex.store.escaping import (
    FILE_INFO_COLUMNS,
    OBJ_ETAG,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJECT_COLUMNS,
    VIRTUAL_PREFIX,
)
from metaindex.store.layout import TableIdentity
from metaindex.store.model import (
    FORMAT_VERSION,
    EncryptionLabels,
    check_format_version,
    require_key_access,
)
from metaindex.store.sparkschema import SPARK_ROW_METADATA, arrow_field_metadata, spark_schema_json

__all__ = [
    "PartInfo",
    "encode_part",
    "encode_part_table",
    "inspect_part",
    "verify_part",
    "read_verified_part",
    "FILE_INFO_TYPES",
    "KEYS_UNAVAILABLE_KEY",
]

FILE_INFO_TYPES = dict(
    zip(
        FILE_INFO_COLUMNS,
        (
            pa.string(),
            pa.int64(),
            pa.int64(),
            pa.string(),
            pa.string(),
            pa.bool_(),
            pa.bool_(),
            pa.string(),
        ),
        strict=True,
    )
)

KEYS_UNAVAILABLE_KEY = b"metaindex.keys_unavailable"
"""Schema metadata key of a part table (and a snapshot's metadata table): the JSON list of the
index columns whose key the reader could not get (read as nulls: unknown, files kept)."""

_ENCRYPTION_KEYS = (
    "encryption.column.keys",
    "encryption.footer.key",
    "encryption.plaintext.footer",
    "encryption.algorithm",
)


@dataclass(frozen=True)
class PartInfo:
    """What a part file says about itself (read at commit time)."""

    version: int
    table_id: str
    encryption: EncryptionLabels | None
    index_columns: dict  # column name -> {"name", "cols", "params", "key_metadata"?}
    table: pa.Table  # obj_name, obj_size, obj_mtime, obj_rows + the columns asked
    rows: int
    bytes: int
    sha256: str


# ---------------------------------------------------------------------------- writing


def _int64_column(table: pa.Table, name: str) -> pa.ChunkedArray:
    col = table.column(name)
    if not pa.types.is_integer(col.type):
        raise SchemaError(f"{name} must be an integer column, not {col.type}")
    try:
        col = col.cast(pa.int64())
    except (pa.ArrowInvalid, OverflowError) as exc:
        raise SchemaError(f"{name} does not fit int64: {exc}") from None
    if col.null_count and name != OBJ_ROWS:
        raise SchemaError(f"{name} has {col.null_count} nulls")
    if name != OBJ_MTIME and len(col) and (pc.min(col).as_py() or 0) < 0:
        raise SchemaError(f"{name} has negative values")
    return col


def _leaf_paths(field: pa.Field) -> list[str]:
    return [".".join(s.path) for s in leaf_specs(level_tree(field))]


def _column_keys(fields, labels: EncryptionLabels, defs_by_column: dict) -> dict:
    """{label: [leaf paths]}: obj_* / virtual_* under the footer label, each index under its
    key_metadata label; plaintext indexes are not listed."""
    keys: dict[str, list[str]] = {}
    for f in fields:
        d = defs_by_column.get(f.name)
        label = labels.footer_key if d is None else d.key_metadata
        if label is not None:
            keys.setdefault(label, []).extend(_leaf_paths(f))
    return keys


def encode_part(
    table: pa.Table,
    defs,
    identity: TableIdentity,
    encryption: EncryptionLabels | None,
    key_access=None,
) -> bytes:
    """The bytes of a part file (the current format version) holding ``table``.

    ``table`` has obj_name (string), obj_size / obj_mtime / obj_rows (integers), optionally
    the per-file columns of ``FILE_INFO_COLUMNS`` (written as nulls when absent), any
    ``virtual_<col>`` columns, and one column per index named ``IndexDef.storage_name``.
    """
    return b"".join(encode_part_table(table, defs, identity, encryption, key_access)[0])


def encode_part_table(
    table: pa.Table,
    defs,
    identity: TableIdentity,
    encryption: EncryptionLabels | None,
    key_access=None,
) -> tuple:
    """``(pieces, written)``: :func:`encode_part`'s bytes as the writer made them (a list of
    ``bytes``, in order; a part under 8 MiB is one) and the Arrow table they encode
    (``obj_*`` columns cast to their stored types, absent per-file columns as nulls, field
    metadata as stored), whose column types are those a reader decodes from the part."""
    if not isinstance(table, pa.Table):
        raise TypeError(f"a part is written from a pyarrow.Table, not {type(table).__name__}")
    defs_by_column = {d.storage_name: d for d in defs}
    names = table.column_names
    if len(set(names)) != len(names):
        raise SchemaError(f"duplicate column names in {names}")
    missing = [c for c in (*OBJECT_COLUMNS, *defs_by_column) if c not in names]
    if missing:
        raise SchemaError(f"the part table lacks columns {missing}")
    virtual = [c for c in names if c.startswith(VIRTUAL_PREFIX) and c not in defs_by_column]
    extra = (
        set(names)
        - set(OBJECT_COLUMNS)
        - set(FILE_INFO_COLUMNS)
        - set(virtual)
        - set(defs_by_column)
    )
    if extra:
        raise SchemaError(
            f"unknown columns {sorted(extra)}: a part holds {list(OBJECT_COLUMNS)}"
            f", virtual_<partition column> and the index columns "
            f"{list(defs_by_column)}"
        )
    if any(d.key_metadata is not None for d in defs) and encryption is None:
        raise ValueError(
            "an index has key_metadata but the store has no encryption labels (footer key)"
        )
    name_col = table.column(OBJ_NAME)
    if not (pa.types.is_string(name_col.type) or pa.types.is_large_string(name_col.type)):
        raise SchemaError(f"obj_name must be a string column, not {name_col.type}")
    name_col = name_col.cast(pa.string())
    if name_col.null_count:
        raise SchemaError(f"obj_name has {name_col.null_count} nulls")
    if len(pc.unique(name_col)) != len(name_col):
        raise SchemaError("obj_name values must be unique within a part")

    obj_meta = {
        "version": FORMAT_VERSION,
        "tableIdentifier": identity.identifier,
        "table_id": identity.id,
        "table_uri": identity.uri,
    }
    columns = [name_col] + [_int64_column(table, c) for c in OBJECT_COLUMNS[1:]]
    # obj_rows is null where unknown (entries carried over from an xskipper store of CSV,
    # JSON or ORC files, which has no row count): only then is the field optional
    fields = [pa.field(OBJ_NAME, pa.string(), nullable=False)] + [
        pa.field(c, pa.int64(), nullable=c == OBJ_ROWS and col.null_count > 0)
        for c, col in zip(OBJECT_COLUMNS[1:], columns[1:], strict=True)
    ]
    for name, kind in FILE_INFO_TYPES.items():
        if name not in names:
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, kind)]))
        else:
            try:
                columns.append(table.column(name).cast(kind))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(f"{name} must be {kind}: {exc}") from None
        fields.append(pa.field(name, kind))
    spark_meta: dict[str, dict] = {}  # column -> its Spark field metadata
    for name in virtual:
        columns.append(table.column(name))
        fields.append(table.schema.field(name).remove_metadata())
    for d in defs:
        index_meta = {"name": d.name, "cols": list(d.cols)}
        if d.params:
            index_meta["params"] = dict(d.params)
        if d.key_metadata is not None:
            index_meta["key_metadata"] = d.key_metadata
        spark_meta[d.storage_name] = {"index": index_meta}
        columns.append(table.column(d.storage_name))
        fields.append(table.schema.field(d.storage_name).remove_metadata())

    props = None
    if encryption is not None:
        column_keys = _column_keys(fields, encryption, defs_by_column)
        obj_meta["encryption"] = {
            "encryption.column.keys": ";".join(
                f"{label}:{','.join(paths)}" for label, paths in column_keys.items()
            ),
            "encryption.footer.key": encryption.footer_key,
            "encryption.plaintext.footer": "true" if encryption.plaintext_footer else "false",
            "encryption.algorithm": encryption.algorithm,
        }
        props = require_key_access(key_access, "the store").encryption_properties(
            encryption, column_keys
        )
    spark_meta[OBJ_NAME] = obj_meta
    fields = [
        f.with_metadata(arrow_field_metadata(spark_meta[f.name])) if f.name in spark_meta else f
        for f in fields
    ]
    schema = pa.schema(fields)
    out = pa.Table.from_arrays(columns, schema=schema)
    sink = _Pieces()
    # the random bits of hash filters (a kind's RANDOM_FIELDS: bloom bitsets): zstd cannot
    # shrink them, so they are stored uncompressed, and as they never repeat and no reader
    # filters on them, without a dictionary or bounds
    bitsets = {
        f"{d.storage_name}.{name}"
        for d in defs
        for name in getattr(KINDS.get(d.name), "RANDOM_FIELDS", ())
    }
    codecs = {f.name: "zstd" for f in fields}
    codecs.update(dict.fromkeys(bitsets, "none"))
    plain = [path for f in fields for path in _leaf_paths(f) if path not in bitsets]
    from metaindex.parquet.writer import write_table  # not on the read (prune) path

    write_table(
        out,
        sink,
        row_group_size=65536,
        compression=codecs,
        use_dictionary=plain,
        write_statistics=plain,
        key_value_metadata={SPARK_ROW_METADATA: spark_schema_json(schema, spark_meta)},
        encryption_properties=props,
    )
    return sink.pieces, out


class _Pieces:
    """A write-only binary stream that keeps what it is given, uncopied where that is safe:
    ``bytes``, and views of buffers nobody writes to again (the writer hands page bodies
    over as views of the Arrow table's values, of the codec's output or of a page buffer
    made for that page alone), kept as byte ``memoryview``s. A ``bytearray`` (which its
    owner may reuse) or a non-contiguous buffer is copied once into ``bytes``."""

    def __init__(self):
        self.pieces: list = []

    def write(self, data) -> int:
        if type(data) is not bytes:
            view = memoryview(data)
            if isinstance(view.obj, bytearray) or not view.c_contiguous:
                data = view.tobytes()
            else:
                data = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        self.pieces.append(data)
        return len(data)


# ---------------------------------------------------------------------------- reading


def _named(exc: MetaIndexError, where: str) -> MetaIndexError:
    if where in str(exc):
        return exc
    renamed = type(exc).__new__(type(exc))
    renamed.__dict__.update(exc.__dict__)
    renamed.args = (f"{where}: {exc}",)
    return renamed


def _source(data: bytes, where: str) -> io.BytesIO:
    source = io.BytesIO(data)
    source.name = where  # the reader names its source in its errors
    return source


def _open(data: bytes, where: str, key_access) -> ParquetFile:
    try:
        if data[:4] == b"PARE":
            props = require_key_access(key_access, where).decryption_properties()
            return ParquetFile(_source(data, where), decryption_properties=props)
        pf = ParquetFile(_source(data, where))
        if pf.footer.encryption_algorithm is None:
            return pf
        props = require_key_access(key_access, where).decryption_properties()
        return ParquetFile(_source(data, where), decryption_properties=props)
    except MetaIndexError as exc:
        raise _named(exc, where) from exc


def _spark_fields(pf: ParquetFile, where: str) -> dict:
    raw = pf.key_value_metadata.get(SPARK_ROW_METADATA)
    if raw is None:
        raise DecodeError(f"{where}: not a metaindex part file (no {SPARK_ROW_METADATA} entry)")
    try:
        schema = json.loads(raw)
        fields = {f["name"]: f.get("metadata") or {} for f in schema["fields"]}
    except (ValueError, TypeError, KeyError, RecursionError, AttributeError) as exc:
        raise DecodeError(f"{where}: unreadable Spark schema ({type(exc).__name__})") from None
    if not all(isinstance(m, dict) for m in fields.values()):
        raise DecodeError(f"{where}: Spark field metadata must be objects")
    if OBJ_NAME not in fields:
        raise DecodeError(f"{where}: not a metaindex part file (no obj_name column)")
    check_format_version(fields[OBJ_NAME].get("version", 0), f"{where} (obj_name version)")
    return fields


def _labels(obj_meta: dict, where: str) -> EncryptionLabels | None:
    enc = obj_meta.get("encryption")
    if enc is None:
        return None
    if not isinstance(enc, dict) or not all(isinstance(enc.get(k), str) for k in _ENCRYPTION_KEYS):
        raise DecodeError(f"{where}: obj_name 'encryption' metadata must hold {_ENCRYPTION_KEYS}")
    try:
        return EncryptionLabels(
            enc["encryption.footer.key"],
            enc["encryption.plaintext.footer"] == "true",
            enc["encryption.algorithm"],
        )
    except (TypeError, ValueError) as exc:
        raise DecodeError(f"{where}: bad encryption metadata: {exc}") from None


def inspect_part(data: bytes, where: str, key_access=None, columns=()) -> PartInfo:
    """Validate a part and read its objects (commit time: the part is not in the log yet):
    the ``obj_*`` columns and those of ``columns`` the part has (None: every column; an index
    column whose key this reader cannot get reads as nulls, as ``read_verified_part``)."""
    pf = _open(data, where, key_access)
    with pf:
        fields = _spark_fields(pf, where)
        obj_meta = fields[OBJ_NAME]
        table_id = obj_meta.get("table_id")
        if not isinstance(table_id, str):
            raise DecodeError(f"{where}: obj_name metadata has no table_id")
        index_columns = {
            n: m["index"] for n, m in fields.items() if isinstance(m.get("index"), dict)
        }
        wanted = None if columns is None else {*OBJECT_COLUMNS, *columns}
        try:
            objs = pf.read(
                columns=None
                if wanted is None
                else [f.name for f in pf.schema_arrow if f.name in wanted]
            )
        except KeyAccessError:
            objs = _read_with_keys_at_hand(pf, where, wanted)
        except MetaIndexError as exc:
            raise _named(exc, where) from exc
    for name, kind in zip(
        OBJECT_COLUMNS, (pa.string(), pa.int64(), pa.int64(), pa.int64()), strict=True
    ):
        col = objs.column(name)
        if col.type != kind or (col.null_count and name != OBJ_ROWS):
            raise DecodeError(f"{where}: {name} must be non-null {kind}, not {col.type}")
    if len(pc.unique(objs.column(OBJ_NAME))) != objs.num_rows:
        raise DecodeError(f"{where}: obj_name values repeat within the part")
    if OBJ_ETAG in objs.column_names and not pa.types.is_string(objs.column(OBJ_ETAG).type):
        raise DecodeError(f"{where}: {OBJ_ETAG} must be string")
    return PartInfo(
        fields[OBJ_NAME]["version"],
        table_id,
        _labels(obj_meta, where),
        index_columns,
        objs,
        objs.num_rows,
        len(data),
        hashlib.sha256(data).hexdigest(),
    )


def _read_with_keys_at_hand(pf, where: str, columns=None) -> pa.Table:
    """Every column (of ``columns``, None: all) whose key this reader can get; an index
    column whose key it cannot is all nulls (unknown metadata: its files are kept) and named
    under :data:`KEYS_UNAVAILABLE_KEY`. The ``obj_*`` columns are needed: without their key the
    whole part fails."""
    arrays, missing, fields = [], [], []
    for field in pf.schema_arrow:
        if columns is not None and field.name not in columns:
            continue
        try:
            arrays.append(pf.read(columns=[field.name]).column(0))
        except KeyAccessError as exc:
            if field.name in OBJECT_COLUMNS:
                raise _named(exc, where) from exc
            arrays.append(pa.nulls(pf.num_rows, field.type))
            missing.append(field.name)
        except MetaIndexError as exc:
            raise _named(exc, where) from exc
        fields.append(field)
    schema = pa.schema(
        fields,
        metadata={
            **(pf.schema_arrow.metadata or {}),
            KEYS_UNAVAILABLE_KEY: json.dumps(missing).encode(),
        },
    )
    return pa.Table.from_arrays(arrays, schema=schema)


def verify_part(data: bytes, size: int, sha256: str, where: str) -> None:
    """The bytes are the ones the log recorded."""
    if len(data) != size:
        raise IntegrityError(
            f"{where}: the part is {len(data)} bytes, the log recorded {size} "
            "(truncated or replaced)"
        )
    if hashlib.sha256(data).hexdigest() != sha256:
        raise IntegrityError(
            f"{where}: SHA-256 differs from the one the log recorded "
            "(the part was modified after it was committed)"
        )


def read_verified_part(data: bytes, where: str, key_access=None, columns=None) -> pa.Table:
    """The columns of a part whose bytes passed :func:`verify_part`: all of them (``columns``
    None), else ``obj_name`` and those of ``columns`` the part has, in file order. Only the
    columns read are decoded and decrypted."""
    pf = _open(data, where, key_access)
    with pf:
        _spark_fields(pf, where)
        if columns is not None:
            wanted = {OBJ_NAME, *columns}
            columns = [f.name for f in pf.schema_arrow if f.name in wanted]
        try:
            table = pf.read(columns=columns)
        except KeyAccessError:
            table = _read_with_keys_at_hand(pf, where, columns)
        except MetaIndexError as exc:
            raise _named(exc, where) from exc
    if table.schema.field(OBJ_NAME).type != pa.string():
        raise DecodeError(f"{where}: obj_name is {table.schema.field(OBJ_NAME).type}, not string")
    return table
