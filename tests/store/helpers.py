"""Shared builders for the store tests: index definitions and part tables whose index values
are a pure function of (obj_name, mtime), so any stale or duplicated row is detectable."""

from __future__ import annotations

import zlib

import pyarrow as pa

from metaindex.store import IndexDef

MINMAX = IndexDef("minmax", ["temp"])
VALUES = IndexDef("valuelist", ["city"], {"max_values": 8})
BLOOM = IndexDef("bloom", ["user.id"], {"fpp": 0.01})
DEFS = (MINMAX, VALUES, BLOOM)

MINMAX_TYPE = pa.struct(
    [
        ("min", pa.int64()),
        ("max", pa.int64()),
        ("null_count", pa.int64()),
        ("nan_count", pa.int64()),
    ]
)
VALUES_TYPE = pa.struct([("values", pa.list_(pa.string())), ("has_null", pa.bool_())])
BLOOM_TYPE = pa.struct([("bitset", pa.binary()), ("has_null", pa.bool_())])


def seed_of(name: str, mtime: int) -> int:
    return zlib.crc32(f"{name}@{mtime}".encode())


def expected_row(name: str, size: int, mtime: int, rows: int, defs=DEFS) -> dict:
    s = seed_of(name, mtime)
    row = {"obj_name": name, "obj_size": size, "obj_mtime": mtime, "obj_rows": rows}
    for d in defs:
        if d.name == "minmax":
            row[d.storage_name] = {
                "min": s % 1000,
                "max": s % 1000 + 5,
                "null_count": s % 3,
                "nan_count": 0,
            }
        elif d.name == "valuelist":
            row[d.storage_name] = (
                None
                if s % 7 == 0
                else {"values": [f"c{s % 5}", f"c{s % 11}"], "has_null": bool(s % 2)}
            )
        else:
            row[d.storage_name] = {"bitset": s.to_bytes(4, "little") * 8, "has_null": False}
    return row


def part_table(objects, defs=DEFS, virtual: dict | None = None) -> pa.Table:
    """``objects``: [(name, size, mtime, rows)] -> a part table with deterministic indexes."""
    rows = [expected_row(*o, defs=defs) for o in objects]
    types = {"minmax": MINMAX_TYPE, "valuelist": VALUES_TYPE, "bloom": BLOOM_TYPE}
    cols = {
        "obj_name": pa.array([r["obj_name"] for r in rows], pa.string()),
        "obj_size": pa.array([r["obj_size"] for r in rows], pa.int64()),
        "obj_mtime": pa.array([r["obj_mtime"] for r in rows], pa.int64()),
        "obj_rows": pa.array([r["obj_rows"] for r in rows], pa.int64()),
    }
    for key, values in (virtual or {}).items():
        cols[f"virtual_{key}"] = pa.array(values)
    for d in defs:
        cols[d.storage_name] = pa.array([r[d.storage_name] for r in rows], types[d.name])
    return pa.table(cols)


def check_rows(snapshot) -> None:
    """Every row of the metadata table is the one its FileEntry says, exactly once."""
    table = snapshot.metadata_table()
    names = table.column("obj_name").to_pylist()
    assert len(names) == len(set(names)), "an object has two live rows"
    assert set(names) == set(snapshot.files), (
        f"rows {sorted(set(names) ^ set(snapshot.files))[:5]} differ from the snapshot's files"
    )
    for row in table.to_pylist():
        e = snapshot.files[row["obj_name"]]
        want = expected_row(e.name, e.size, e.mtime, e.rows, snapshot.index_defs)
        got = {k: row[k] for k in want}
        assert got == want, f"stale or wrong row for {e.name}: {got} != {want}"
