"""xskipper's store versions 0-4, built from the seed specification's layout, read by
metaindex and used for pruning; the Java-serialisation reader on hostile input."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex.engine.listing import list_files, locate_table
from metaindex.engine.prune import PruneContext, Pruner, candidates
from metaindex.engine.xskipper import open_snapshot, upgrade
from metaindex.errors import DecodeError, MetaIndexError, UnsupportedVersionError
from metaindex.store import MetadataStore
from metaindex.store.javaser import boxed_value, read_object, sketch_filter
from metaindex.store.sparkschema import SPARK_ROW_METADATA
from metaindex.store.xskipper_format import is_store, read_store, store_directory, table_identifier
from tests.xskipper import seedstores

QUERIES = {  # predicate -> files holding a matching row
    "i > 50": {"c.parquet"},
    "i = 20": {"b.parquet"},
    "i = 25": set(),
    "i IN (3, 150)": {"a.parquet", "c.parquet"},
    "s = 'z'": {"b.parquet"},
    "s = 'w'": {"c.parquet"},
    "s IN ('q', 'x')": {"a.parquet"},
    "NOT (i = 2)": {"a.parquet", "b.parquet", "c.parquet"},
    "s IS NULL": {"a.parquet"},
}


def _truth(files: dict, predicate: str) -> set:
    want = QUERIES[predicate]
    return {n for n in files if n.rsplit("/", 1)[-1] in want}


def _build(tmp_path, version, files=seedstores.FILES, **kw):
    root = str(tmp_path / "table")
    mtimes = seedstores.write_table(root, files)
    md = store_directory(str(tmp_path / "md"), table_identifier(root))
    seedstores.write_store(md, root, version, mtimes, files, **kw)
    return root, md


@pytest.mark.parametrize(
    "version,unversioned", [(0, True), (0, False), (1, False), (2, False), (3, False), (4, False)]
)
def test_each_version_is_read(tmp_path, version, unversioned):
    root, md = _build(tmp_path, version, unversioned=unversioned)
    store = read_store(md)
    assert store.version == version
    assert store.identifier == root
    kinds = {(d.name, d.cols) for d in store.index_defs}
    assert ("minmax", ("i",)) in kinds and ("sketchbloom", ("s",)) in kinds
    assert (("valuelist", ("s",)) in kinds) == (version >= 1), (
        "version 0's serialised value lists are not read (unknown: their files are kept)"
    )
    bloom = next(d for d in store.index_defs if d.name == "sketchbloom")
    assert bloom.params == {"fpp": 0.01, "ndv": 1000}
    assert store.objects.num_rows == 3


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("predicate", sorted(QUERIES))
def test_pruning_keeps_every_matching_file(tmp_path, version, predicate):
    files = seedstores.PARTITIONED if version == 4 else seedstores.FILES
    root, md = _build(tmp_path, version, files)
    location = locate_table(root)
    pruner = Pruner(PruneContext(open_snapshot(location, md)))
    result = pruner.decide(predicate, candidates(location, list_files(location)))
    kept = {p[len(root) + 1 :] for p in result.kept}
    truth = _truth(files, predicate)
    assert truth <= kept, f"skipped a file with a matching row: {truth - kept}"
    if predicate in ("i > 50", "i = 25", "s = 'w'"):
        assert kept == truth, f"{predicate}: should skip every other file, kept {kept}"


def test_version_4_partition_columns(tmp_path):
    root, md = _build(tmp_path, 4, seedstores.PARTITIONED)
    store = read_store(md)
    assert store.partitions == ("p",)
    assert store.objects.column("virtual_p").to_pylist() == [0, 1, 2]


def test_changed_file_is_not_indexed(tmp_path):
    root, md = _build(tmp_path, 3)
    os.utime(os.path.join(root, "c.parquet"), ns=(5 * 10**18, 5 * 10**18))
    location = locate_table(root)
    snapshot = open_snapshot(location, md)
    assert snapshot.object_count == 2, "c.parquet's mtime changed: its entry no longer holds"
    result = Pruner(PruneContext(snapshot)).decide(
        "i = 1000", candidates(location, list_files(location))
    )
    assert {p.rsplit("/", 1)[-1] for p in result.kept} == {"c.parquet"}
    assert result.stats.unindexed_files == 1


def test_newer_version_is_refused(tmp_path):
    root, md = _build(tmp_path, 4)
    path = os.path.join(
        md,
        os.listdir(md)[0] if os.listdir(md)[0].endswith(".parquet") else sorted(os.listdir(md))[-1],
    )
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[SPARK_ROW_METADATA.encode()])
    meta["fields"][0]["metadata"]["version"] = 5
    table = table.replace_schema_metadata({SPARK_ROW_METADATA: json.dumps(meta)})
    pq.write_table(table, path)
    with pytest.raises(UnsupportedVersionError, match="version 5 is newer"):
        read_store(md)


def test_upgrade_keeps_indexes_and_reads_no_data(tmp_path):
    root, md = _build(tmp_path, 4, seedstores.PARTITIONED)
    location = locate_table(root)
    table_store = MetadataStore(str(tmp_path / "ours")).table(location.uri)
    result = upgrade(location, table_store, md)
    assert result.entries_added == 3
    snap = table_store.snapshot()
    assert {(d.name, d.cols) for d in snap.index_defs} == {
        ("minmax", ("i",)),
        ("valuelist", ("s",)),
        ("sketchbloom", ("i",)),
        ("sketchbloom", ("s",)),
    }
    assert snap.object_count == 3
    assert sorted(snap.files) == sorted(seedstores.PARTITIONED)
    from metaindex import MetaIndex

    mi = MetaIndex(root, store=str(tmp_path / "ours"))
    for predicate in QUERIES:
        kept = {p[len(root) + 1 :] for p in mi.prune(predicate).kept}
        assert _truth(seedstores.PARTITIONED, predicate) <= kept, predicate
    assert mi.prune("i > 50").stats.skipped_files == 2
    with pytest.raises(MetaIndexError, match="already indexed"):
        upgrade(location, table_store, md)


def test_location_helpers(tmp_path):
    assert table_identifier("file:///data/t/") == "/data/t"
    assert table_identifier("s3a://bucket/a//t") == "/a/t"
    assert table_identifier("/data/a%20b") == "/data/a b"
    assert table_identifier("db.tbl") == "db.tbl"
    assert (
        store_directory("/md/", "/data/t").startswith("/md/")
        and len(store_directory("/md", "/data/t")) == len("/md/") + 64
    )
    assert not is_store(str(tmp_path))


# ------------------------------------------------------------------------------ hostile input


def test_every_prefix_of_a_blob_is_a_decode_error():
    blob = seedstores.sketch_blob(["a", "b"], pa.string(), ndv=10)
    assert sketch_filter(read_object(blob)).num_hashes > 0
    for n in range(len(blob)):
        with pytest.raises(DecodeError):
            sketch_filter(read_object(blob[:n]))


def test_boxed_values():
    assert boxed_value(read_object(b"\xac\xed\x00\x05" + seedstores.boxed(7))) == 7
    assert boxed_value(read_object(b"\xac\xed\x00\x05" + seedstores.boxed(2.5))) == 2.5
    assert boxed_value(read_object(b"\xac\xed\x00\x05" + seedstores.boxed("x"))) == "x"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 199))
def test_hostile_bytes_raise_decode_error(noise, at):
    blob = bytearray(seedstores.sketch_blob([1, 2], pa.int64(), ndv=10))
    for data in (
        bytes(noise),
        b"\xac\xed\x00\x05" + bytes(noise),
        bytes(blob[: at % len(blob)]) + bytes(noise),
    ):
        try:
            sketch_filter(read_object(data))
        except DecodeError:
            pass


def test_cli_upgrade(tmp_path):
    from click.testing import CliRunner

    from metaindex.cli.app import cli

    root, md = _build(tmp_path, 3)
    ours = str(tmp_path / "ours")
    runner = CliRunner()
    base = str(tmp_path / "md")
    done = runner.invoke(cli, ["upgrade", root, "--xskipper", base, "--store", ours, "--json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert doc["operation"] == "upgrade" and doc["files_indexed"] == 3
    pruned = runner.invoke(cli, ["prune", root, "--where", "i > 50", "--store", ours, "--json"])
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.output)["kept_files"] == 1
    again = runner.invoke(cli, ["upgrade", root, "--xskipper", base, "--store", ours])
    assert again.exit_code != 0 and "already has a metaindex index" in again.output
    missing = runner.invoke(
        cli,
        [
            "upgrade",
            root,
            "--xskipper",
            str(tmp_path / "nowhere"),
            "--store",
            str(tmp_path / "other"),
        ],
    )
    assert isinstance(missing.exception, MetaIndexError) and "no xskipper store" in str(
        missing.exception
    )
    other = ["upgrade", root, "--xskipper", base, "--store", str(tmp_path / "other")]
    text = runner.invoke(cli, [*other, "--format", "csv", "--option", "header=true"])
    assert text.exit_code == 2 and "add --spark" in text.output, text.output
    bad = runner.invoke(cli, [*other, "--format", "csv", "--spark", "--option", "header"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output, bad.output
    assert not os.path.exists(str(tmp_path / "other")), "nothing is written"


def test_value_lists_decide_alone(tmp_path):
    """A converted value list is known (it rules files out by itself)."""
    root, md = _build(tmp_path, 3)
    location = locate_table(root)
    result = Pruner(PruneContext(open_snapshot(location, md))).decide(
        "s IN ('w', 'q')", candidates(location, list_files(location))
    )
    assert result.stats.skipped_by_index["valuelist(s)"] == 2
    assert result.stats.skipped_by_index["sketchbloom(s)"] == 2


def test_null_bounds_read_from_footers_are_unknown(tmp_path):
    """A store of numeric min/max only was read from footers by xskipper: null bounds there
    mean "no statistics" (a NaN-holding double chunk), not "only nulls": the file is kept."""
    root = str(tmp_path / "table")
    mtimes = seedstores.write_table(root, seedstores.FILES)
    md = store_directory(str(tmp_path / "md"), table_identifier(root))
    seedstores.write_store(
        md, root, 4, mtimes, seedstores.FILES, minmax_only=True, null_bounds=("c.parquet",)
    )
    location = locate_table(root)
    result = Pruner(PruneContext(open_snapshot(location, md))).decide(
        "i > 50", candidates(location, list_files(location))
    )
    assert {p.rsplit("/", 1)[-1] for p in result.kept} == {"c.parquet"}
    assert result.stats.skipped_files == 2
