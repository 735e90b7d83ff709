"""Part summaries (format 7): one metadata row standing for every row of a part.

A summary has the four calendar columns and one column per index definition, each of the type
of that index's metadata column, so ``metaindex.index.evaluate`` runs on a table of summaries
unchanged. The rule each kind follows makes the summary *keep* whenever some row of the part
is kept (specs/metadata-store.md, "Version 7"):

* min/max: the smallest ``min`` and the largest ``max`` of the rows (rows without bounds, all
  null or all NaN, take no part), null and NaN counts summed (null when one is unknown); a
  null when some row is unknown (a null struct, one bound without the other, a NaN bound).
* value list: the union of the rows' values when every row is known and the union holds at
  most ``max_values`` values; ``has_null`` = any row's.
* bloom: the rows' split-block bitsets folded to the smallest size among them and OR-ed
  (exact: a hash selects block ``((h >> 32) * z) >> 32``, the top ``log2 z`` bits, so block
  ``i`` of a filter of ``z`` blocks lands in block ``i >> log2(z / z')`` of ``z'`` blocks and
  its bit pattern, from the low 32 bits, is the same); null when some row is unknown or has a
  bitset that is not a valid filter, or when more than half of the folded bits are set.
* calendar: the rebase mode common to every row (else null); ``ancient`` true when a row's is
  true, else null when a row's is null, else false.
* an encrypted index (``IndexDef.key_metadata``) or a kind without a rule: null. Summaries are
  written to the log in clear and never carry encrypted metadata.
"""

from __future__ import annotations

import base64

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import DecodeError
from metaindex.store.escaping import (OBJ_ANCIENT_DATETIME, OBJ_ANCIENT_INT96,
                                      OBJ_DATETIME_REBASE, OBJ_INT96_REBASE)

__all__ = ["summarize", "CALENDAR_TYPES", "encode_summary", "decode_summary", "fold_bitset",
           "check_layout", "VALUELIST_DEFAULT_MAX_VALUES"]

CALENDAR_TYPES = {OBJ_DATETIME_REBASE: pa.string(), OBJ_INT96_REBASE: pa.string(),
                  OBJ_ANCIENT_DATETIME: pa.bool_(), OBJ_ANCIENT_INT96: pa.bool_()}
"""The calendar columns of a summary, in order, with their types."""

VALUELIST_DEFAULT_MAX_VALUES = 100  # metaindex.index.valuelist.DEFAULT_MAX_VALUES
_BLOOM_MIN_BYTES = 32
_BLOOM_MAX_BYTES = 128 * 1024 * 1024


def _column(table: pa.Table, name: str) -> pa.Array | None:
    if name not in table.column_names:
        return None
    col = table.column(name)
    if not isinstance(col, pa.ChunkedArray):
        return col
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()  # (that one copies)


def _any3(col: pa.Array | None):
    """True if a value is true, else None if one is null, else False (no rows: False)."""
    if col is None:
        return None
    if pc.any(col).as_py():
        return True
    return None if col.null_count else False


def _common(col: pa.Array | None):
    if col is None or col.null_count or len(col) == 0:
        return None
    distinct = pc.unique(col)
    return distinct[0].as_py() if len(distinct) == 1 else None


def _summed(col: pa.Array):
    if col.null_count:
        return None
    total = pc.sum(col).as_py()
    return 0 if total is None else total


def _struct(values: dict, t: pa.DataType) -> pa.Array:
    arrays = []
    for i in range(t.num_fields):
        f = t.field(i)
        v = values[f.name]
        arrays.append(pa.array([v], f.type) if not isinstance(v, pa.Array) else v)
    return pa.StructArray.from_arrays(arrays, fields=[t.field(i) for i in range(t.num_fields)])


def _minmax(col: pa.Array) -> pa.Array | None:
    t = col.type
    if col.null_count or len(col) == 0:
        return None
    mins, maxs = col.field("min"), col.field("max")
    if mins.null_count != maxs.null_count or \
            (mins.null_count and not pc.all(pc.equal(mins.is_valid(), maxs.is_valid())).as_py()):
        return None  # a row with one bound and not the other is unknown
    if pa.types.is_floating(mins.type) and (pc.any(pc.is_nan(mins)).as_py()
                                            or pc.any(pc.is_nan(maxs)).as_py()):
        return None
    lo = pc.min(mins)
    hi = pc.max(maxs)
    return _struct({"min": pa.array([lo], mins.type), "max": pa.array([hi], maxs.type),
                    "null_count": _summed(col.field("null_count")),
                    "nan_count": _summed(col.field("nan_count"))}, t)


def _valuelist(col: pa.Array, max_values: int) -> pa.Array | None:
    t = col.type
    lists, has_null = col.field("values"), col.field("has_null")
    if col.null_count or lists.null_count or has_null.null_count or len(col) == 0:
        return None
    start, end = lists.offsets[0].as_py(), lists.offsets[-1].as_py()
    flat = lists.values.slice(start, end - start)
    if pa.types.is_floating(flat.type):
        from metaindex.bloom import canonical_floats

        flat = pa.array(canonical_floats(flat), flat.type)
    distinct = pc.unique(flat)
    if len(distinct) > max_values:
        return None
    distinct = distinct.take(pc.sort_indices(distinct))
    values = pa.ListArray.from_arrays(pa.array([0, len(distinct)], pa.int32()), distinct,
                                      type=t.field("values").type)
    return _struct({"values": values, "has_null": bool(pc.any(has_null).as_py())}, t)


def fold_bitset(bitset: np.ndarray, num_bytes: int) -> np.ndarray:
    """A split-block bitset (uint8) folded to ``num_bytes`` (a power of two, not larger):
    block ``i`` OR-ed into block ``i * new_blocks // old_blocks``."""
    blocks, target = len(bitset) // 32, num_bytes // 32
    return np.bitwise_or.reduce(bitset.reshape(target, blocks // target, 32), axis=1).reshape(-1)


_bitwise_count = getattr(np, "bitwise_count", None)


def _too_full(bitset: np.ndarray) -> bool:
    """More than half the bits set: a summary that would rule (almost) nothing out."""
    if _bitwise_count is None:  # numpy < 2
        return int(np.unpackbits(bitset).sum()) * 2 > bitset.size * 8
    return int(_bitwise_count(bitset.view(np.uint64)).sum()) * 2 > bitset.size * 8


def _bloom(col: pa.Array) -> pa.Array | None:
    t = col.type
    if col.null_count or len(col) == 0:
        return None  # an unknown row: keep
    has_null = _any3(col.field("has_null"))
    bitsets = col.field("bitset")
    present = bitsets.drop_null() if bitsets.null_count else bitsets
    if not len(present):
        return _struct({"bitset": None, "has_null": has_null}, t)
    lengths = pc.binary_length(present).to_numpy(zero_copy_only=False).astype(np.int64)
    if ((lengths < _BLOOM_MIN_BYTES) | (lengths > _BLOOM_MAX_BYTES)
            | (lengths & (lengths - 1) != 0)).any():
        return None  # a row whose filter proves nothing
    size = int(lengths.min())
    out = np.zeros(size, np.uint8)
    sizes = np.unique(lengths)
    for length in sizes:
        same = present if len(sizes) == 1 else present.filter(pa.array(lengths == length))
        same = pa.concat_arrays([same]) if same.offset else same
        offsets = same.buffers()[1]
        first = np.frombuffer(offsets, np.int32 if not pa.types.is_large_binary(same.type)
                              else np.int64, count=1)[0]
        data = np.frombuffer(same.buffers()[2], np.uint8, count=len(same) * int(length),
                             offset=int(first)).reshape(len(same), int(length))
        # OR the rows in growing batches and give up as soon as the summary is too full to
        # rule anything out (filters sized per file are often a third full: a few rows do it)
        at, batch = 0, 2
        while at < len(same):
            merged = np.bitwise_or.reduce(data[at:at + batch], axis=0)
            out |= fold_bitset(merged, size)
            if _too_full(out):
                return None
            at, batch = at + batch, batch * 4
    return _struct({"bitset": pa.array([out.tobytes()], t.field("bitset").type),
                    "has_null": has_null}, t)


def _index_summary(d, col: pa.Array | None) -> pa.Array:
    """One index's summary value (a one-row array of the column's type)."""
    if col is None:
        return pa.nulls(1)
    if d.key_metadata is None and not pa.types.is_null(col.type):
        try:
            if d.name == "minmax":
                out = _minmax(col)
            elif d.name == "valuelist":
                out = _valuelist(col, int(d.params.get("max_values",
                                                       VALUELIST_DEFAULT_MAX_VALUES)))
            elif d.name == "bloom":
                out = _bloom(col)
            else:
                out = None
        except (KeyError, pa.ArrowException, TypeError, ValueError):
            out = None  # not the layout its kind stores: no summary (keep)
        if out is not None:
            return out
    return pa.nulls(1, col.type)


def summarize(part_table: pa.Table, index_defs) -> pa.Table:
    """The summary row of a part's rows (see the module docstring for the rules).

    Args:
        part_table: rows of a part (the calendar columns and index columns it has; missing
            ones summarise as null).
        index_defs: the :class:`metaindex.store.IndexDef` of the index columns wanted.

    Returns:
        A one-row table: the four calendar columns, then one column per definition named
        ``IndexDef.storage_name`` (typed as the part's column; ``null`` type where it has none).
    """
    names, arrays = [], []
    for name in (OBJ_DATETIME_REBASE, OBJ_INT96_REBASE):
        names.append(name)
        arrays.append(pa.array([_common(_column(part_table, name))], pa.string()))
    for name in (OBJ_ANCIENT_DATETIME, OBJ_ANCIENT_INT96):
        names.append(name)
        arrays.append(pa.array([_any3(_column(part_table, name))], pa.bool_()))
    for d in index_defs:
        names.append(d.storage_name)
        arrays.append(_index_summary(d, _column(part_table, d.storage_name)))
    return pa.Table.from_arrays(arrays, names=names)


_LAYOUTS = {"minmax": ("min", "max", "null_count", "nan_count"),
            "valuelist": ("values", "has_null"), "bloom": ("bitset", "has_null")}


def check_layout(d, t: pa.DataType, where: str) -> None:
    """DecodeError unless ``t`` can be a summary of index ``d`` (null, or the struct layout of
    its kind: a summary read from the log goes to that kind's evaluator)."""
    fields = _LAYOUTS.get(d.name)
    if pa.types.is_null(t) or fields is None:
        return
    ok = pa.types.is_struct(t) and tuple(t.field(i).name for i in range(t.num_fields)) == fields
    if ok and d.name == "minmax":
        ok = t.field("min").type == t.field("max").type and all(
            t.field(n).type == pa.int64() for n in ("null_count", "nan_count"))
    elif ok and d.name == "valuelist":
        ok = pa.types.is_list(t.field("values").type) and t.field("has_null").type == pa.bool_()
    elif ok:
        ok = t.field("bitset").type in (pa.binary(), pa.large_binary()) and \
            t.field("has_null").type == pa.bool_()
    if not ok:
        raise DecodeError(f"{where}: the summary of {d.storage_name} is {t}, not a {d.name} "
                          "summary")


def encode_summary(summary: pa.Table) -> str:
    """A summary row as base64 Arrow IPC (stream) text, as the log stores it."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, summary.schema) as writer:
        writer.write_table(summary)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def decode_summary(text, where: str) -> pa.Table:
    """:func:`encode_summary` reversed; DecodeError naming ``where`` if it is not one row."""
    if not isinstance(text, str):
        raise DecodeError(f"{where}: a part summary is base64 text, not {type(text).__name__}")
    try:
        table = pa.ipc.open_stream(pa.py_buffer(base64.b64decode(text, validate=True))) \
            .read_all()
    except (ValueError, TypeError, pa.ArrowException) as exc:
        raise DecodeError(f"{where}: unreadable part summary: {exc}") from None
    if table.num_rows != 1:
        raise DecodeError(f"{where}: a part summary has one row, not {table.num_rows}")
    for name, kind in CALENDAR_TYPES.items():
        if name not in table.column_names or table.schema.field(name).type != kind:
            raise DecodeError(f"{where}: a part summary has {name} of type {kind}")
    return table
