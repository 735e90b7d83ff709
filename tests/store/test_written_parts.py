"""Committing a part this process wrote: the committer checks its bytes (size, SHA-256) and
takes the row count, names, live bytes and summary write_part computed; that record must be
the one decoding the part gives (every type family, calendar columns, value lists, bloom
folds, encrypted stores), and a part changed between write and commit is refused."""

from __future__ import annotations

import hashlib
import pickle
import random

import pyarrow as pa
import pytest

from metaindex.crypto import InMemoryKms
from metaindex.errors import DecodeError, IntegrityError
from metaindex.index import BloomFilterIndex, MinMaxIndex, ValueListIndex
from metaindex.store import EncryptionLabels, IndexDef, KeyAccess, MetadataStore
from metaindex.store import commit as commitmod
from metaindex.store import receipts as receiptsmod
from tests.reference import prune as ref
from tests.store.helpers import DEFS, part_table

KEYS = {"footer": b"\x01" * 16, "col": b"\x02" * 16}


def _kms(config):
    return InMemoryKms(KEYS)


def _indexes(rng: random.Random) -> list:
    max_values = rng.choice([1, 3, 100])
    fpp = rng.choice([0.3, 0.01])
    return (
        [MinMaxIndex(c) for c in ref.COLUMNS]
        + [ValueListIndex(c, max_values=max_values) for c in ref.COLUMNS]
        + [BloomFilterIndex(c, fpp=fpp) for c in ref.COLUMNS if c != "flag"]
    )


def _random_part(rng: random.Random, indexes: list) -> pa.Table:
    """A part of every index kind over every type family, calendar columns included, with
    unknown (null) entries, obj_size as int32 (cast when written)."""
    files = ref.random_files(rng, rng.randint(1, 9))
    n = len(files)
    modes = [rng.choice(["CORRECTED", "LEGACY", None]) for _ in range(n)]
    if rng.random() < 0.5:
        modes = [modes[0]] * n
    cols = {
        "obj_name": pa.array([f"f{i}.parquet" for i in range(n)]),
        "obj_size": pa.array([rng.randint(0, 10**6) for _ in range(n)], pa.int32()),
        "obj_mtime": pa.array([rng.randint(0, 10**12) for _ in range(n)], pa.int64()),
        "obj_rows": pa.array([len(f) for f in files], pa.int64()),
        "obj_datetime_rebase": pa.array(modes, pa.string()),
        "obj_ancient_datetime": pa.array([rng.choice([True, False, None]) for _ in range(n)]),
        "virtual_p": pa.array([rng.choice(["x", "y"]) for _ in range(n)]),
    }
    for ix in indexes:
        kind = ix.metadata_type(ref.column_values(files[0], ix.column).type)
        cols[IndexDef.of(ix).storage_name] = pa.array(
            [
                None if rng.random() < 0.05 else ix.collect(ref.column_values(f, ix.column))
                for f in files
            ],
            kind,
        )
    return pa.table(cols)


def _values(table: pa.Table) -> str:
    return repr(table.to_pylist())  # NaN == NaN here


def _decoded_record(t, path: str, labels, defs):
    """The record and names the committer gets by decoding the part (nothing remembered)."""
    key = t._written_key(t._relative_part(path))
    kept = receiptsmod._written.pop(key)
    try:
        return commitmod._added_part(t, path, labels, defs)
    finally:
        receiptsmod._written[key] = kept


@pytest.mark.parametrize("encrypted", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_remembered_record_is_the_decoded_one(tmp_path, seed, encrypted):
    rng = random.Random(seed)
    indexes = _indexes(rng)
    defs = tuple(IndexDef.of(ix) for ix in indexes)
    labels = None
    if encrypted:  # one index under its own key (summarised as null), the rest plaintext
        defs = (IndexDef(defs[0].name, defs[0].cols, defs[0].params, "col"), *defs[1:])
        labels = EncryptionLabels("footer", plaintext_footer=bool(seed % 2))
    t = MetadataStore(tmp_path / "store", key_access=KeyAccess(_kms)).table(tmp_path / "data")
    t.create(defs, encryption=labels)
    path = t.write_part(_random_part(rng, indexes), defs, encryption=labels)
    record, names = commitmod._added_part(t, path, labels, defs)
    decoded, decoded_names = _decoded_record(t, path, labels, defs)
    assert record.summary.schema == decoded.summary.schema, (
        "the remembered summary has the types a reader decodes from the part"
    )
    assert _values(record.summary) == _values(decoded.summary)
    assert (record.path, record.rows, record.bytes, record.sha256, record.live_bytes) == (
        decoded.path,
        decoded.rows,
        decoded.bytes,
        decoded.sha256,
        decoded.live_bytes,
    )
    assert names.equals(decoded_names)
    v = t.commit(0, add_parts=[path])
    logged = t.snapshot(v).summary_table().select(decoded.summary.column_names)
    assert _values(logged) == _values(decoded.summary), "the log holds the decoded summary"


def test_bloom_summary_of_mixed_sizes_is_remembered_exactly(tmp_path):
    """Sparse bitsets of several sizes, folded to the smallest: as decoding gives."""
    d = IndexDef("bloom", ["x"], {"fpp": 0.01})
    rng = random.Random(7)
    bitsets = []
    for size in (32, 256, 1024, 64):
        bits = bytearray(size)
        for _ in range(6):
            bits[rng.randrange(size)] |= 1 << rng.randrange(8)
        bitsets.append(bytes(bits))
    kind = pa.struct([("bitset", pa.binary()), ("has_null", pa.bool_())])
    part = pa.table(
        {
            "obj_name": ["a", "b", "c", "d"],
            "obj_size": [1, 2, 3, 4],
            "obj_mtime": [1, 1, 1, 1],
            "obj_rows": [1, 1, 1, 1],
            d.storage_name: pa.array(
                [{"bitset": b, "has_null": i == 2} for i, b in enumerate(bitsets)], kind
            ),
        }
    )
    t = MetadataStore(tmp_path / "store").table(tmp_path / "data")
    t.create([d])
    path = t.write_part(part, [d])
    record, _ = commitmod._added_part(t, path, None, (d,))
    decoded, _ = _decoded_record(t, path, None, (d,))
    assert _values(record.summary) == _values(decoded.summary)
    folded = record.summary.column(d.storage_name).to_pylist()[0]
    assert folded["has_null"] and len(folded["bitset"]) == 32 and any(folded["bitset"]), (
        f"a folded, non-empty summary (not vacuous): {folded}"
    )


@pytest.mark.parametrize("damage", ["truncated", "flipped", "replaced"])
def test_a_part_changed_between_write_and_commit_is_refused(backend, tmp_path, damage):
    t = backend.store().table(tmp_path / "data")
    t.create(DEFS)
    path = t.write_part(part_table([("x", 1, 1, 1)]), DEFS)
    data = backend.read(path)
    if damage == "truncated":
        data = data[:-3]
    elif damage == "flipped":
        data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
    else:  # another valid part of this table, under the same name
        other = t.write_part(part_table([("y", 1, 1, 1)]), DEFS)
        data = backend.read(other)
    backend.write(path, data)
    with pytest.raises(IntegrityError, match=path.rsplit("/", 1)[1] + ".*changed after"):
        t.commit(0, add_parts=[path])
    assert t.latest_version() == 0


def test_a_part_written_elsewhere_is_decoded(backend, tmp_path):
    """Another process (here: a store object that forgot what it wrote) decodes the part:
    damage is then a decode error, and an intact part commits with the same record."""
    t = backend.store().table(tmp_path / "data")
    t.create(DEFS)
    good = t.write_part(part_table([("a", 5, 1, 1), ("b", 7, 1, 1)]), DEFS)
    bad = t.write_part(part_table([("x", 1, 1, 1)]), DEFS)
    t.forget_cached()
    backend.write(bad, backend.read(bad)[:-3])
    with pytest.raises(DecodeError, match=bad.rsplit("/", 1)[1]):
        t.commit(0, add_parts=[bad])
    v = t.commit(0, add_parts=[good])
    assert t.snapshot(v).object_count == 2


def test_remembered_parts_are_bounded_and_forgotten_once_committed(tmp_path, monkeypatch):
    monkeypatch.setattr(receiptsmod, "_WRITTEN_MAX_PARTS", 2)
    t = MetadataStore(tmp_path / "store").table(tmp_path / "data")
    t.create(DEFS)
    paths = [t.write_part(part_table([(f"o{i}", 1, 1, 1)]), DEFS) for i in range(3)]
    keys = [t._written_key(t._relative_part(p)) for p in paths]
    assert [k in receiptsmod._written for k in keys] == [False, True, True]
    v = t.commit(0, add_parts=paths)  # the forgotten one is decoded
    assert not any(k in receiptsmod._written for k in keys)
    assert t.snapshot(v).object_count == 3


def test_a_receipt_hands_the_check_to_the_committing_process(backend, tmp_path, monkeypatch):
    """A build's task takes the receipt of the part it wrote; the process that commits holds
    it (pickled across processes) and checks the bytes instead of decoding the part."""
    writer = backend.store().table(tmp_path / "data")
    writer.create(DEFS)
    good = writer.write_part(part_table([("a", 5, 1, 1), ("b", 7, 1, 1)]), DEFS)
    bad = writer.write_part(part_table([("x", 1, 1, 1)]), DEFS)
    receipts = [pickle.loads(pickle.dumps(writer.take_receipt(p))) for p in (good, bad)]
    assert writer.take_receipt(good) is None, "handed over: the writer forgot it"
    committer = backend.store().table(tmp_path / "data")
    for receipt in receipts:
        committer.expect_part(receipt)
    backend.write(bad, backend.read(bad)[:-3])
    with pytest.raises(IntegrityError, match=bad.rsplit("/", 1)[1] + ".*changed after"):
        committer.commit(0, add_parts=[bad])

    def no_decoding(*args, **kwargs):
        raise AssertionError("a part with a receipt is not decoded at commit")

    monkeypatch.setattr(commitmod, "inspect_part", no_decoding)
    v = committer.commit(0, add_parts=[good])
    assert sorted(committer.snapshot(v).files) == ["a", "b"]
    with pytest.raises(TypeError):
        committer.expect_part(good)


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_part_of_several_writer_pieces_is_written_whole(backend, tmp_path, encrypted):
    """A part over the writer's 8 MiB flush reaches storage as several pieces (not joined
    into one more copy): the file is the whole part, its recorded size and SHA-256 are the
    file's, and it reads back."""
    d = IndexDef("bloom", ["x"], {"fpp": 0.01})
    labels = EncryptionLabels("footer") if encrypted else None
    rng = random.Random(5)
    n = 40  # 40 x 256 KiB of bitsets
    kind = pa.struct([("bitset", pa.binary()), ("has_null", pa.bool_())])
    part = pa.table(
        {
            "obj_name": [f"f{i}" for i in range(n)],
            "obj_size": [1] * n,
            "obj_mtime": [1] * n,
            "obj_rows": [1] * n,
            d.storage_name: pa.array(
                [{"bitset": rng.randbytes(256 * 1024), "has_null": False} for _ in range(n)], kind
            ),
        }
    )
    t = backend.store(key_access=KeyAccess(_kms)).table(tmp_path / "data")
    t.create([d], encryption=labels)
    path = t.write_part(part, [d], encryption=labels)
    v = t.commit(0, add_parts=[path])
    data = backend.read(path)
    (record,) = t.snapshot(v).parts.values()
    assert len(data) > 10 * 1024 * 1024
    assert (record.bytes, record.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    receiptsmod._written.clear()
    t.forget_cached()
    snap = t.snapshot(v)
    got = snap.read_parts(snap.part_paths)
    assert got.column(d.storage_name).to_pylist() == part.column(d.storage_name).to_pylist()


def test_part_pieces_keep_views_and_copy_mutable_buffers():
    """encode_part_table's sink holds page bodies uncopied (no second copy of a part's
    bitsets) but copies a bytearray, which its owner may reuse; lengths are in bytes."""
    import numpy as np

    from metaindex.store.parts import _Pieces

    sink = _Pieces()
    values = np.arange(4, dtype=np.int64)
    mutable = bytearray(b"abc")
    assert sink.write(values) == 32
    assert sink.write(mutable) == 3
    assert sink.write(b"xy") == 2
    mutable[:] = b"zzz"
    assert np.shares_memory(np.frombuffer(sink.pieces[0], np.uint8), values)
    assert b"".join(sink.pieces) == values.tobytes() + b"abcxy"
