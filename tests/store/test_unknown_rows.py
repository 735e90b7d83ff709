"""Entries whose row count is unknown (``obj_rows`` null): what an upgrade of an xskipper store
over CSV/JSON/ORC files carries over (xskipper recorded no row count, and those files have no
footer to read one from without reading the data). Such parts are written, committed, decoded,
checked and compacted like any other; a part whose counts are all known is written exactly as
before (``obj_rows`` required)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from metaindex.engine.effectiveness import effectiveness
from metaindex.store import MetadataStore
from metaindex.store.parts import inspect_part
from tests.store.helpers import DEFS, part_table


def _with_unknown_rows(objects, unknown: set) -> pa.Table:
    table = part_table(objects)
    rows = [None if n in unknown else r for n, _, _, r in objects]
    return table.set_column(
        table.schema.get_field_index("obj_rows"), "obj_rows", pa.array(rows, pa.int64())
    )


def _rows(snap) -> dict:
    table = snap.metadata_table()
    return dict(
        zip(table.column("obj_name").to_pylist(), table.column("obj_rows").to_pylist(), strict=True)
    )


def test_unknown_row_counts_are_stored_checked_and_compacted(tmp_path):
    t = MetadataStore(str(tmp_path / "store")).table("file:///data/t")
    t.create(DEFS)
    carried = _with_unknown_rows([("a.csv", 10, 1, 0), ("b.csv", 20, 2, 0)], {"a.csv", "b.csv"})
    v = t.commit(0, add_parts=[t.write_part(carried, DEFS)])
    known = part_table([("c.csv", 30, 3, 7)])
    v = t.commit(v, add_parts=[t.write_part(known, DEFS)])
    snap = t.snapshot()
    assert _rows(snap) == {"a.csv": None, "b.csv": None, "c.csv": 7}
    parts = {
        p: pq.read_schema(str(tmp_path / "store" / snap.table.id / p)) for p in snap.part_paths
    }
    nullable = sorted(s.field("obj_rows").nullable for s in parts.values())
    assert nullable == [False, True], "only the part holding an unknown count is optional"
    for p in snap.part_paths:  # the committer's and the checker's decoding accept it
        data = (tmp_path / "store" / snap.table.id / p).read_bytes()
        assert inspect_part(data, p).rows in (1, 2)
    for e in effectiveness(snap):  # unknown counts weigh as average files: no NaN
        assert e.files == 3 and e.point_read_fraction is not None, e
        assert 0 <= e.point_read_fraction <= 1, e
    assert t.check().healthy, t.check().problems
    compacted = t.compact()
    assert compacted > v
    after = t.snapshot()
    assert len(after.part_paths) == 1
    assert _rows(after) == {"a.csv": None, "b.csv": None, "c.csv": 7}
    assert t.check().healthy, t.check().problems
