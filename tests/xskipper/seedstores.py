"""Stores of xskipper's format versions 0-4 built from the seed specification's layout
(``specs/metadata-store.md``, "Versions 0-4"), written with pyarrow, over a small table of
Parquet files whose paths and mtimes the stores name.

The Java-serialised values (version 0's min/max, every version's bloom filter) are written by
:class:`JavaStream`, a minimal writer of the Java Object Serialization Stream Protocol for the
classes xskipper serialised; the bloom filters inside are built with the test's own Spark
sketch hashing (``metaindex.index.sketchbloom``, itself checked bit for bit against Spark).
"""

from __future__ import annotations

import json
import os
import struct

import pyarrow as pa
import pyarrow.parquet as pq

from metaindex.index.sketchbloom import SketchBloomIndex
from metaindex.store.sparkschema import SPARK_ROW_METADATA

MTIME0 = 1_700_000_000_000


def _utf(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def _desc(name: str, flags: int, fields, parent: bytes = b"\x70", suid: int = 1) -> bytes:
    out = (
        b"\x72"
        + _utf(name)
        + struct.pack(">q", suid)
        + bytes([flags])
        + struct.pack(">H", len(fields))
    )
    for code, fname, ftype in fields:
        out += code.encode() + _utf(fname) + (b"\x74" + _utf(ftype) if ftype else b"")
    return out + b"\x78" + parent


def _blocks(data: bytes) -> bytes:
    out = b""
    for i in range(0, len(data), 1024):
        chunk = data[i : i + 1024]
        out += (
            b"\x77" + bytes([len(chunk)])
            if len(chunk) <= 255
            else b"\x7a" + struct.pack(">i", len(chunk))
        ) + chunk
    return out + b"\x78"


def boxed(value) -> bytes:
    """A java.lang boxed value (or a String) as stream content."""
    if value is None:
        return b"\x70"
    if isinstance(value, str):
        return b"\x74" + _utf(value)
    number = _desc("java.lang.Number", 0x02, [], suid=-8742448824652078965)
    if isinstance(value, bool):
        return (
            b"\x73"
            + _desc("java.lang.Boolean", 0x02, [("Z", "value", None)])
            + struct.pack(">?", value)
        )
    if isinstance(value, int):
        return (
            b"\x73"
            + _desc("java.lang.Long", 0x02, [("J", "value", None)], number)
            + struct.pack(">q", value)
        )
    return (
        b"\x73"
        + _desc("java.lang.Double", 0x02, [("D", "value", None)], number)
        + struct.pack(">d", value)
    )


def minmax_blob(lo, hi, package: str = "com.ibm.metaindex.metadata.index.types") -> bytes:
    """A serialised ``MinMaxMetaData(min, max)`` (version 0)."""
    parent = _desc(f"{package}.MetadataType", 0x02, [])
    cls = _desc(
        f"{package}.MinMaxMetaData",
        0x02,
        [("L", "max", "Ljava/lang/Object;"), ("L", "min", "Ljava/lang/Object;")],
        parent,
    )
    return b"\xac\xed\x00\x05\x73" + cls + boxed(hi) + boxed(lo)


def bloom_blob(num_hashes: int, words: bytes, package: str = "io.xskipper.index.metadata") -> bytes:
    """A serialised ``BloomFilterMetaData`` holding Spark's ``BloomFilterImpl`` (V1)."""
    parent = _desc(f"{package}.MetadataType", 0x02, [])
    cls = _desc(
        f"{package}.BloomFilterMetaData",
        0x02,
        [("L", "bloomFilter", "Lorg/apache/spark/util/sketch/BloomFilter;")],
        parent,
    )
    impl = _desc(
        "org.apache.spark.util.sketch.BloomFilterImpl",
        0x03,
        [("I", "numHashFunctions", None), ("L", "bits", "Lorg/apache/spark/util/sketch/BitArray;")],
    )
    data = struct.pack(">iii", 1, num_hashes, len(words) // 8) + words
    return b"\xac\xed\x00\x05\x73" + cls + b"\x73" + impl + _blocks(data)


def sketch_blob(
    values,
    t: pa.DataType,
    ndv: int = 1000,
    fpp: float = 0.01,
    package: str = "io.xskipper.index.metadata",
) -> bytes:
    s = SketchBloomIndex("c", fpp=fpp, ndv=ndv).collect(pa.array(values, t)).as_py()
    return bloom_blob(s["num_hashes"], s["words"], package)


# ------------------------------------------------------------------------------ the table

FILES = {  # relative path -> rows (i int32, s string)
    "a.parquet": {"i": [1, 2, 3], "s": ["x", "y", None]},
    "b.parquet": {"i": [10, 20, None], "s": ["y", "z", "z"]},
    "c.parquet": {"i": [100, 150, 200], "s": ["w", "w", "w"]},
}
PARTITIONED = {f"p={k}/{name}": rows for k, (name, rows) in enumerate(FILES.items())}


def write_table(root: str, files: dict) -> dict:
    """Write the data files; returns {relative path: mtime ms}."""
    out = {}
    for k, (name, rows) in enumerate(files.items()):
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(
            pa.table({"i": pa.array(rows["i"], pa.int32()), "s": pa.array(rows["s"], pa.string())}),
            path,
        )
        mtime = MTIME0 + 1000 * k
        os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
        out[name] = mtime
    return out


def _column_name(version: int, col: str, kind: str) -> str:
    if version == 0:
        return f"{col}_{kind}"
    if version == 1:
        return f"{col}_{kind}"
    return f"{col}_{kind}_{len(col)}"


def _params(version: int, params: dict):
    if version <= 2:
        return [f"{k}:{v}" for k, v in params.items()]
    return dict(params)


def write_store(
    directory: str,
    table_root: str,
    version: int,
    mtimes: dict,
    files: dict,
    *,
    unversioned: bool = False,
    minmax_only: bool = False,
    null_bounds: tuple = (),
) -> str:
    """One metadata file of format ``version`` indexing ``files`` (min/max on ``i``, a value
    list on ``s`` from version 1, bloom filters on ``i`` and ``s``; ``minmax_only``: the
    min/max alone, as xskipper read it from footers, with null bounds for the files named in
    ``null_bounds``). Returns its path."""
    identifier = table_root.rstrip("/")
    ids = [f"{identifier}/{name}#{mtimes[name]}" for name in files]
    obj_meta = {} if unversioned else {"version": version}
    if version >= 1:
        obj_meta["tableIdentifier"] = identifier
    fields = [{"name": "obj_name", "type": "string", "nullable": False, "metadata": obj_meta}]
    arrays = [pa.array(ids, pa.string())]
    if version >= 4 and any("=" in n for n in files):
        fields.append({"name": "virtual_p", "type": "integer", "nullable": True, "metadata": {}})
        arrays.append(pa.array([int(n.split("=")[1].split("/")[0]) for n in files], pa.int32()))

    def index_meta(kind, params=None):
        meta = {"cols": [c], "name": kind}
        if version == 0:
            meta["tableIdentifier"] = identifier
        if params:
            meta["params"] = _params(version, params)
        return {"index": meta}

    c = "i"
    lows = [
        None if n in null_bounds else min(v for v in r["i"] if v is not None)
        for n, r in files.items()
    ]
    highs = [
        None if n in null_bounds else max(v for v in r["i"] if v is not None)
        for n, r in files.items()
    ]
    name = _column_name(version, c, "minmax")
    if version == 0:
        udt = {
            "type": "udt",
            "class": "MinMaxMetaDataTypeUDT",
            "pyClass": None,
            "sqlType": "binary",
        }
        fields.append(
            {"name": name, "type": udt, "nullable": True, "metadata": index_meta("minmax")}
        )
        arrays.append(
            pa.array([minmax_blob(lo, hi) for lo, hi in zip(lows, highs, strict=True)], pa.binary())
        )
    else:
        fields.append(
            {
                "name": name,
                "type": {
                    "type": "struct",
                    "fields": [
                        {"name": "min", "type": "integer", "nullable": True, "metadata": {}},
                        {"name": "max", "type": "integer", "nullable": True, "metadata": {}},
                    ],
                },
                "nullable": True,
                "metadata": index_meta("minmax"),
            }
        )
        arrays.append(
            pa.array(
                [{"min": lo, "max": hi} for lo, hi in zip(lows, highs, strict=True)],
                pa.struct([("min", pa.int32()), ("max", pa.int32())]),
            )
        )
    if version >= 1 and not minmax_only:
        c = "s"
        fields.append(
            {
                "name": _column_name(version, c, "valuelist"),
                "type": {"type": "array", "elementType": "string", "containsNull": True},
                "nullable": True,
                "metadata": index_meta("valuelist"),
            }
        )
        arrays.append(
            pa.array(
                [sorted({v for v in r["s"] if v is not None}) for r in files.values()],
                pa.list_(pa.string()),
            )
        )
    package = (
        "io.xskipper.index.metadata" if version >= 3 else "com.ibm.metaindex.metadata.index.types"
    )
    for c, t in () if minmax_only else (("i", pa.int32()), ("s", pa.string())):
        params = (
            {"io.xskipper.index.bloom.fpp": "0.01", "io.xskipper.index.bloom.ndv": "1000"}
            if version >= 3
            else {"fpp": "0.01", "ndv": "1000"}
        )
        fields.append(
            {
                "name": _column_name(version, c, "bloomfilter"),
                "type": {
                    "type": "udt",
                    "class": "BloomFilterMetaDataTypeUDT",
                    "pyClass": None,
                    "sqlType": "binary",
                },
                "nullable": True,
                "metadata": index_meta("bloomfilter", params),
            }
        )
        arrays.append(
            pa.array(
                [
                    sketch_blob([v for v in r[c] if v is not None], t, package=package)
                    for r in files.values()
                ],
                pa.binary(),
            )
        )
    table = pa.Table.from_arrays(arrays, [f["name"] for f in fields])
    table = table.replace_schema_metadata(
        {
            SPARK_ROW_METADATA: json.dumps({"type": "struct", "fields": fields}),
            "org.apache.spark.version": "3.5.0",
        }
    )
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "part-00000-0000-c000.snappy.parquet")
    pq.write_table(table, path)
    open(os.path.join(directory, "_SUCCESS"), "w").close()
    return path
