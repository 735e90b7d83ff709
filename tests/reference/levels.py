"""Pure-Python reference for Dremel shredding / assembly, and a tiny Parquet page reader.

Obviously-correct, slow code to check the levels kernels against:

* :func:`shred_ref` walks ``array.to_pylist()`` recursively and returns, per leaf column, the
  Parquet path, max levels, def / rep levels and the present leaf values.
* :func:`assemble_ref` parses each leaf's level stream back into partial Python values and
  merges the leaves into full records (``to_pylist()`` form).
* :func:`pyarrow_levels` reads the def / rep levels pyarrow itself wrote for each column of a
  Parquet file (DATA_PAGE_V2, uncompressed): a minimal Thrift compact-protocol reader for the
  PageHeader and an RLE / bit-packing hybrid decoder. Independent of our Thrift and RLE kernels.

Arrow nodes along a leaf's path are ``(kind, nullable, key)`` tuples: kind is "leaf",
"struct" (key: the child field name on the path), "list" or "map" (a map's entries are
``{"key": k, "value": v}`` dicts while shredding / assembling).
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq

# ----------------------------------------------------------------------------- leaf paths


def leaf_chains(field: pa.Field):
    """Every leaf of an Arrow field: (Parquet path, [(kind, nullable, key), ...])."""
    out = []

    def walk(t, nullable, path, chain):
        if pa.types.is_struct(t):
            for f in t:
                walk(f.type, f.nullable, path + (f.name,), chain + [("struct", nullable, f.name)])
        elif pa.types.is_map(t):
            entries = chain + [("map", nullable, None)]
            walk(
                t.key_type, False, path + ("key_value", "key"), entries + [("struct", False, "key")]
            )
            walk(
                t.item_type,
                t.item_field.nullable,
                path + ("key_value", "value"),
                entries + [("struct", False, "value")],
            )
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            vf = t.value_field
            walk(
                vf.type, vf.nullable, path + ("list", "element"), chain + [("list", nullable, None)]
            )
        else:
            out.append((path, chain + [("leaf", nullable, None)]))

    walk(field.type, field.nullable, (field.name,), [])
    return out


def max_levels(chain):
    """(max_def, max_rep) of a leaf chain: optional levels + repeated levels, repeated levels."""
    reps = sum(1 for kind, _, _ in chain if kind in ("list", "map"))
    return sum(1 for _, nullable, _ in chain if nullable) + reps, reps


# ------------------------------------------------------------------------------- shredding


def _items(kind, v):
    if kind == "map":
        return [{"key": k, "value": x} for k, x in v]
    return list(v)


def shred_chain(records, chain):
    """Def / rep levels and present values of one leaf over a list of Python records."""
    defs, reps, vals = [], [], []

    def walk(v, i, d, r, depth):
        kind, nullable, key = chain[i]
        if v is None:
            if not nullable:
                raise ValueError("null in a required level")
            defs.append(d)
            reps.append(r)
            return
        if nullable:
            d += 1
        if kind == "leaf":
            defs.append(d)
            reps.append(r)
            vals.append(v)
        elif kind == "struct":
            walk(v[key], i + 1, d, r, depth)
        else:
            items = _items(kind, v)
            if not items:
                defs.append(d)
                reps.append(r)
            for j, item in enumerate(items):
                walk(item, i + 1, d + 1, r if j == 0 else depth + 1, depth + 1)

    for rec in records:
        walk(rec, 0, 0, 0, 0)
    return defs, reps, vals


def shred_ref(array: pa.Array, field: pa.Field):
    """[(path, max_def, max_rep, defs, reps or None, values)] for every leaf of ``field``."""
    records = array.to_pylist()
    out = []
    for path, chain in leaf_chains(field):
        max_def, max_rep = max_levels(chain)
        defs, reps, vals = shred_chain(records, chain)
        out.append((path, max_def, max_rep, defs, reps if max_rep else None, vals))
    return out


# -------------------------------------------------------------------------------- assembly


def assemble_chain(chain, defs, reps, vals):
    """Partial records of one leaf: structs as dicts holding only this leaf's path."""
    n = len(defs)
    reps = reps if reps is not None else [0] * n
    state = {"pos": 0, "val": 0}

    def parse(i, d, depth):
        kind, nullable, key = chain[i]
        if nullable:
            if defs[state["pos"]] <= d:
                state["pos"] += 1
                return None
            d += 1
        if kind == "leaf":
            v = vals[state["val"]]
            state["val"] += 1
            state["pos"] += 1
            return v
        if kind == "struct":
            return {key: parse(i + 1, d, depth)}
        if defs[state["pos"]] <= d:  # an empty list
            state["pos"] += 1
            return []
        items = [parse(i + 1, d + 1, depth + 1)]
        while state["pos"] < n and reps[state["pos"]] == depth + 1:
            items.append(parse(i + 1, d + 1, depth + 1))
        return items

    records = []
    while state["pos"] < n:
        records.append(parse(0, 0, 0))
    assert state["val"] == len(vals), "values left over"
    return records


def _merge(a, b):
    if a is None or b is None:
        assert a is None and b is None, "leaves disagree on a null"
        return None
    if isinstance(a, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _merge(out[k], v) if k in out else v
        return out
    if isinstance(a, list):
        assert len(a) == len(b), "leaves disagree on a list length"
        return [_merge(x, y) for x, y in zip(a, b, strict=True)]
    raise AssertionError("two leaves hold the same value")


def _finish(v, t):
    """Partial-record form -> to_pylist() form (maps as (key, value) tuples)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _finish(v[f.name], f.type) for f in t}
    if pa.types.is_map(t):
        return [(_finish(e["key"], t.key_type), _finish(e["value"], t.item_type)) for e in v]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [_finish(x, t.value_type) for x in v]
    return v


def assemble_ref(field: pa.Field, leaves):
    """Records (to_pylist() form) from [(defs, reps, values)] in leaf order."""
    parts = [
        assemble_chain(chain, d, r, v)
        for (_, chain), (d, r, v) in zip(leaf_chains(field), leaves, strict=True)
    ]
    records = parts[0]
    for p in parts[1:]:
        assert len(p) == len(records), "leaves disagree on the record count"
        records = [_merge(a, b) for a, b in zip(records, p, strict=True)]
    return [_finish(r, field.type) for r in records]


# ------------------------------------------------------------ Thrift compact, RLE hybrid


def read_varint(b: bytes, pos: int):
    shift = result = 0
    while True:
        byte = b[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _zigzag(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def _read_value(b: bytes, pos: int, t: int):
    if t in (1, 2):  # bool inside a field header
        return t == 1, pos
    if t == 3:
        return struct.unpack_from("<b", b, pos)[0], pos + 1
    if t in (4, 5, 6):
        u, pos = read_varint(b, pos)
        return _zigzag(u), pos
    if t == 7:
        return struct.unpack_from("<d", b, pos)[0], pos + 8
    if t == 8:
        n, pos = read_varint(b, pos)
        return bytes(b[pos : pos + n]), pos + n
    if t in (9, 10):
        head = b[pos]
        pos += 1
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n, pos = read_varint(b, pos)
        items = []
        for _ in range(n):
            if et in (1, 2):  # bools in a list are one byte each
                items.append(b[pos] == 1)
                pos += 1
            else:
                v, pos = _read_value(b, pos, et)
                items.append(v)
        return items, pos
    if t == 11:
        n, pos = read_varint(b, pos)
        if n == 0:
            return {}, pos
        kt, vt = b[pos] >> 4, b[pos] & 0x0F
        pos += 1
        out = {}
        for _ in range(n):
            k, pos = _read_value(b, pos, kt)
            v, pos = _read_value(b, pos, vt)
            out[k] = v
        return out, pos
    if t == 12:
        return read_struct(b, pos)
    raise ValueError(f"unknown compact type {t}")


def read_struct(b: bytes, pos: int = 0):
    """A compact-protocol struct as {field id: value}; returns (fields, next position)."""
    fields, last = {}, 0
    while True:
        head = b[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, t = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            u, pos = read_varint(b, pos)
            fid = _zigzag(u)
        last = fid
        fields[fid], pos = _read_value(b, pos, t)


def decode_rle_hybrid(data: bytes, bit_width: int, count: int):
    """``count`` values of the RLE / bit-packing hybrid (no length prefix)."""
    out, pos, mask = [], 0, (1 << bit_width) - 1
    while len(out) < count:
        header, pos = read_varint(data, pos)
        if header & 1:
            groups = header >> 1
            nbytes = groups * bit_width
            bits = int.from_bytes(data[pos : pos + nbytes], "little")
            pos += nbytes
            out.extend((bits >> (i * bit_width)) & mask for i in range(groups * 8))
        else:
            nbytes = (bit_width + 7) // 8
            out.extend([int.from_bytes(data[pos : pos + nbytes], "little")] * (header >> 1))
            pos += nbytes
    return out[:count]


DATA_PAGE_V2 = 3


def pyarrow_levels(data: bytes):
    """[(path, max_def, max_rep, defs, reps)] per column of a Parquet file's bytes.

    The file must be written with ``compression="NONE", use_dictionary=False,
    data_page_version="2.0"``. Levels of all pages of all row groups are concatenated.
    """
    pf = pq.ParquetFile(pa.BufferReader(data))
    out = []
    for ci in range(pf.metadata.num_columns):
        col = pf.schema.column(ci)
        max_def, max_rep = col.max_definition_level, col.max_repetition_level
        defs, reps = [], []
        for rg in range(pf.metadata.num_row_groups):
            meta = pf.metadata.row_group(rg).column(ci)
            pos, end = meta.data_page_offset, meta.data_page_offset + meta.total_compressed_size
            while pos < end:
                header, pos = read_struct(data, pos)
                body = header[3]  # compressed_page_size
                assert header[1] == DATA_PAGE_V2, f"page type {header[1]}, expected V2"
                v2 = header[8]
                n, rlen, dlen = v2[1], v2[6], v2[5]
                rep_bytes = data[pos : pos + rlen]
                def_bytes = data[pos + rlen : pos + rlen + dlen]
                reps += (
                    decode_rle_hybrid(rep_bytes, max_rep.bit_length(), n) if max_rep else [0] * n
                )
                defs += (
                    decode_rle_hybrid(def_bytes, max_def.bit_length(), n) if max_def else [0] * n
                )
                pos += body
        out.append((tuple(col.path.split(".")), max_def, max_rep, defs, reps if max_rep else None))
    return out
