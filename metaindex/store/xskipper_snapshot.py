"""A read-only view of an xskipper store shaped like :class:`metaindex.store.Snapshot`, so the
one pruning path (``metaindex.engine.prune.PruneContext`` and ``Pruner``) uses it unchanged.

What the pruner takes from a snapshot, and what this view gives:

* ``recorded_schema``: the table's data schema and partition types (xskipper records no data
  schema: the caller reads it from the table, e.g. one file's footer);
* ``index_defs``: the understood indexes (``XskipperStore.index_defs``);
* ``part_paths`` / ``summary_table()`` / ``read_parts()`` / ``file_table()`` /
  ``metadata_table()``: one pseudo part holding every entry, in metaindex's layout;
* ``table.uri`` and ``version`` (0: xskipper's stores have no versions).

Identities: xskipper names an object ``<path>#<mtime>`` and records no size. An entry is
matched to the table's current listing (``files``) by its path relative to the table root and
its mtime (xskipper's identity); its size is taken from that listing. Entries not in the
listing with the same mtime are left out (their files, if any, are not indexed: read).

Calendar record: xskipper kept no writer rebase mode. An entry is marked as holding no value
before Spark's rebase cutoff only when every DATE/TIMESTAMP min/max and value list of it has
a minimum more than a year after the cutoff; otherwise its record is unknown, so conjuncts on
DATE/TIMESTAMP columns do not decide it (``metaindex.engine.calendar``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.store.escaping import (
    FILE_INFO_COLUMNS,
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_INT96_REBASE,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    VIRTUAL_PREFIX,
)
from metaindex.store.layout import table_id_for
from metaindex.store.parts import FILE_INFO_TYPES
from metaindex.store.summary import summarize
from metaindex.store.xskipper_format import MTIME, PATH, XskipperStore, table_identifier

__all__ = ["XskipperSnapshot", "XskipperTable", "PART", "entries"]

PART = "xskipper"
"""The one pseudo part path."""

_SAFE_DATE = datetime.date(1583, 10, 15)
_SAFE_TIMESTAMP = datetime.datetime(1901, 1, 1, tzinfo=datetime.timezone.utc)
"""A year after Spark's rebase cutoffs (1582-10-15, 1900-01-01Z): a minimum from then on is
not ancient whether xskipper recorded it as stored or as rebased."""


@dataclass(frozen=True)
class XskipperTable:
    """The identity the pruner reads (``uri``), plus xskipper's identifier of it."""

    uri: str
    id: str
    identifier: str


def _ancient(objects: pa.Table, defs) -> pa.Array:
    """Per entry: False when every temporal index has a known minimum after the cutoffs (with a
    year's margin), else null (unknown)."""
    safe = np.ones(objects.num_rows, np.bool_)
    for d in defs:
        col = objects.column(d.storage_name).combine_chunks()
        if d.name == "minmax":
            lows = col.field("min")
        elif d.name == "valuelist":
            lows = (
                pc.list_element(pc.list_sort(col.field("values")), 0)
                if hasattr(pc, "list_sort")
                else None
            )
            if lows is None:
                lows = pa.array(
                    [min(v["values"]) if v and v["values"] else None for v in col.to_pylist()],
                    col.type.field(0).type.value_type,
                )
        else:
            continue
        t = lows.type
        if pa.types.is_date(t):
            bound = pa.scalar(_SAFE_DATE, t)
        elif pa.types.is_timestamp(t):
            bound = (
                pa.scalar(_SAFE_TIMESTAMP, pa.timestamp("us", "UTC")).cast(t)
                if t.tz
                else pa.scalar(_SAFE_TIMESTAMP.replace(tzinfo=None), t)
            )
        else:
            continue
        safe &= np.asarray(
            pc.fill_null(pc.greater_equal(lows, bound), False).to_numpy(zero_copy_only=False),
            np.bool_,
        )
    return pa.array([False if s else None for s in safe.tolist()], pa.bool_())


def _instants(values: pa.Array) -> pa.Array:
    """``values`` with every ``timestamp[ns]`` without a zone (a Spark TIMESTAMP xskipper's
    Parquet writer stored as INT96), at any depth of structs and lists, as the instant Spark
    reads (``timestamp[us, UTC]``, the nanoseconds within the microsecond dropped, rounding
    down as Spark does): the type metaindex records a TIMESTAMP column in."""
    t = values.type
    if pa.types.is_timestamp(t) and t.unit == "ns" and t.tz is None:
        ns = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        us = np.floor_divide(ns, 1000)
        return pa.array(us, pa.int64(), mask=values.is_null().to_numpy(zero_copy_only=False)).cast(
            pa.timestamp("us", "UTC")
        )
    if pa.types.is_struct(t):
        children = [_instants(values.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, names=[f.name for f in t], mask=values.is_null()
        )
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(
            values.offsets, _instants(values.values), mask=values.is_null()
        )
    return values


def entries(store: XskipperStore, table_uri: str, files: pa.Table) -> pa.Table:
    """The store's entries that name a current file of the table, in metaindex's part layout:
    ``obj_name`` (relative path), ``obj_size`` (from ``files``), ``obj_mtime``, ``obj_rows``
    (null: xskipper did not record it), the per-file columns, the ``virtual_*`` columns, then
    one column per understood index.

    Args:
        files: the table's current files: ``path`` (relative to its root), ``size``,
            ``mtime`` (ms).
    """
    objects = store.objects
    prefix = table_identifier(table_uri).rstrip("/") + "/"
    paths = objects.column(PATH)
    under = pc.fill_null(pc.starts_with(paths, prefix), False)
    relative = pc.if_else(
        under, pc.utf8_slice_codeunits(paths, len(prefix)), pa.nulls(len(paths), pa.string())
    )
    listed = pa.table(
        {
            "name": files.column("path").cast(pa.string()),
            "size": files.column("size").cast(pa.int64()),
            "mtime": files.column("mtime").cast(pa.int64()),
        }
    )
    keys = pa.table(
        {
            "__name": relative,
            MTIME: objects.column(MTIME),
            "__row": pa.array(np.arange(objects.num_rows), pa.int64()),
        }
    )
    matched = keys.join(listed, ["__name", MTIME], ["name", "mtime"], join_type="inner").sort_by(
        "__row"
    )
    joined = (
        objects.take(matched.column("__row"))
        .append_column("__name", matched.column("__name"))
        .append_column("size", matched.column("size"))
    )
    n = joined.num_rows
    defs = store.index_defs
    columns = {
        OBJ_NAME: joined.column("__name"),
        OBJ_SIZE: joined.column("size"),
        OBJ_MTIME: joined.column(MTIME),
        OBJ_ROWS: pa.nulls(n, pa.int64()),
    }
    ancient = _ancient(joined, defs)
    calendar = {
        OBJ_DATETIME_REBASE: pa.array(["SESSION"] * n, pa.string()),
        OBJ_INT96_REBASE: pa.array(["SESSION"] * n, pa.string()),
        OBJ_ANCIENT_DATETIME: ancient,
        OBJ_ANCIENT_INT96: ancient,
    }
    for name in FILE_INFO_COLUMNS:
        columns[name] = calendar.get(name, pa.nulls(n, FILE_INFO_TYPES[name]))
    for name in objects.column_names:
        if name.startswith(VIRTUAL_PREFIX):
            columns[name] = joined.column(name)
    for d in defs:
        columns[d.storage_name] = _instants(joined.column(d.storage_name).combine_chunks())
    return pa.table(columns)


class XskipperSnapshot:
    """An xskipper store as a read-only snapshot for the pruner (see the module docstring).

    Args:
        store: the :class:`XskipperStore`.
        table_uri: the table's normalised URI (``metaindex.store.normalize_table_uri``).
        files: the table's current files (``path`` relative, ``size``, ``mtime`` ms).
        data_schema: the table's data schema (``pyarrow.Schema``).
        partitions: {partition column: type name} (``metaindex.engine.schema``'s names).
    """

    version = 0
    operation = "xskipper"
    encryption = None

    def __init__(
        self,
        store: XskipperStore,
        table_uri: str,
        files: pa.Table,
        data_schema: pa.Schema,
        partitions: dict,
    ):
        self.store = store
        self.table = XskipperTable(table_uri, table_id_for(table_uri), store.identifier)
        self.index_defs = store.index_defs
        self.recorded_schema = (data_schema, dict(partitions))
        self._rows = entries(store, table_uri, files)
        self._summary = None

    def __repr__(self) -> str:
        return (
            f"XskipperSnapshot(table={self.table.uri!r}, store={self.store.path!r}, "
            f"version={self.store.version}, files={self.object_count})"
        )

    @property
    def object_count(self) -> int:
        return self._rows.num_rows

    @property
    def part_paths(self) -> tuple:
        return (PART,) if self._rows.num_rows else ()

    def live_counts(self, path: str) -> tuple:
        return self._rows.num_rows, int(pc.sum(self._rows.column(OBJ_SIZE)).as_py() or 0)

    def summary_table(self) -> pa.Table:
        """One row per pseudo part (see ``Snapshot.summary_table``)."""
        if self._summary is None:
            head = pa.table(
                {
                    "part": pa.array(list(self.part_paths), pa.string()),
                    "objects": pa.array([self._rows.num_rows] * len(self.part_paths), pa.int64()),
                    "bytes": pa.array(
                        [self.live_counts(PART)[1]] * len(self.part_paths), pa.int64()
                    ),
                }
            )
            if self.part_paths:
                summary = summarize(self._rows, self.index_defs)
            else:
                summary = summarize(self._rows.slice(0, 0), self.index_defs).slice(0, 0)
            for name in summary.column_names:
                head = head.append_column(name, summary.column(name))
            self._summary = head
        return self._summary

    def _check_columns(self, columns) -> tuple:
        if isinstance(columns, str):
            raise TypeError("columns is a list of column names, not one str")
        known = set(self._rows.column_names)
        out = []
        for c in columns:
            if c not in known:
                raise ValueError(f"unknown metadata column {c!r}: the columns are {sorted(known)}")
            if c != OBJ_NAME and c not in out:
                out.append(c)
        return tuple(out)

    def read_parts(self, paths, columns=None) -> pa.Table:
        """The entries of the given pseudo parts: every column, or ``obj_name`` then
        ``columns``."""
        for p in paths:
            if p not in self.part_paths:
                raise ValueError(f"{p} is not a part of this xskipper snapshot")
        rows = self._rows if paths else self._rows.slice(0, 0)
        if columns is None:
            return rows
        return rows.select([OBJ_NAME, *self._check_columns(columns)])

    def file_table(self, columns=(OBJ_NAME, OBJ_SIZE, OBJ_MTIME)) -> pa.Table:
        table = self.read_parts(self.part_paths, columns)
        return table.append_column(
            "part_index", pa.array(np.zeros(table.num_rows, np.int32), pa.int32())
        )

    def metadata_table(self) -> pa.Table:
        return self._rows
