"""Automatic skipping inside Spark's Delta scans: delta-spark's extension and ours together.

No delta-spark release supports the shared venv's pyspark yet, so the queries run in the cached
pyspark venv delta-spark 4.4.0 is built for (:func:`tests.delta.conftest.delta_spark_python`),
with delta-spark's jars and metaindex's jar of that Spark line. This file is also that run's
driver (``python test_delta_spark_rule.py OUT JARS``): metaindex is imported from this
worktree with the shared venv's packages after the venv's own pyspark. It writes the tables
with delta-spark, indexes them with ``MetaIndex(spark, path)`` (min/max, value list, bloom),
calls ``enable(spark)`` (which hands the driver's callback to the extension's rule), runs every
query with skipping on and off (``spark.metaindex.enabled``), and writes what it saw to
``OUT/results.json``; the test asserts on it. Besides the plain (its UUID lookup also inside
scalar, ``EXISTS`` and ``IN`` subqueries), partitioned, column-mapped,
deletion-vector, time-travel, OPTIMIZE and DML cases: a table evolved after its index was built
(``mergeSchema`` columns, ``typeWidening`` INT -> BIGINT), and a catalog table
(``saveAsTable`` under ``DeltaCatalog``) indexed as ``MetaIndex(spark, "db.events")``. The
session lists Delta's extension first; last, two more sessions in the same JVM repeat UUID
lookups with ours listed first and with Delta's alone plus ``enable(spark)``.
"""

from __future__ import annotations

import json
import os
import sys

if __name__ == "__main__":  # the driver: this worktree first, the shared packages last
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.path.append(os.environ["METAINDEX_SITE"])

import random
import shutil
import subprocess
import time

import pytest

FILES = 20
UUIDS = "uuid(42) AS u"
"""Random-looking ids that are the same in every run (Spark's ``uuid(seed)``, seeded per
partition): a lookup's files, read with Delta's min/max and with our bloom filters, are then
the same each run, where the unseeded ``uuid()`` once gave a bloom false positive in CI."""
ROWS = 2000


# ------------------------------------------------------------------------------ the test


@pytest.mark.spark
@pytest.mark.slow
def test_skipping_inside_delta_scans(tmp_path):
    from tests.delta.conftest import delta_spark_command
    from tests.delta.spark_writer import DELTA_EXTENSION, METAINDEX_EXTENSION

    python, jars, env = delta_spark_command(with_metaindex=True)
    done = subprocess.run(
        [python, os.path.abspath(__file__), str(tmp_path), jars],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert done.returncode == 0, f"the Delta driver failed:\n{done.stderr[-8000:]}"
    with open(tmp_path / "results.json") as f:
        results = json.load(f)
    print(json.dumps(results["timings"]), file=sys.stderr)

    for name, queries in results["differential"].items():
        for q in queries:
            assert q["on"] == q["off"], (
                f"{name}: skipping changed the rows of {q['where']!r}: "
                f"{q['on_count']} rows on, {q['off_count']} off"
            )
    skipped = {
        name: sum(q["files_on"] < q["files_off"] for q in queries)
        for name, queries in results["differential"].items()
    }
    for name in ("plain", "partitioned", "deletion_vectors", "column_mapping"):
        assert skipped[name] > 0, f"{name}: no query read fewer files with skipping on"

    for name, lookup in results["uuid_lookup"].items():
        assert lookup["rows_on"] == lookup["rows_off"], name
        # a file of 100 random-looking ids rules out another one by its min/max with a chance
        # of about 2 in 101, so a few of the 19 other files may fall
        assert lookup["files_off"] >= FILES - 4, (
            f"{name}: Delta's own min/max should not rule out random UUIDs: "
            f"read {lookup['files_off']} of {FILES}"
        )
        assert lookup["files_on"] <= 1, (
            f"{name}: the bloom filter should leave the one file holding the UUID: "
            f"read {lookup['files_on']} ({lookup['stats']})"
        )
        stats = lookup["stats"]
        assert stats["files_total"] == lookup["files_off"]
        assert stats["files_skipped"] == lookup["files_off"] - lookup["files_on"]
        assert stats["delta_files_skipped"] == FILES - stats["files_total"], stats
    for name in ("deletion_vectors", "ours_first/deletion_vectors"):
        assert results["uuid_lookup"][name]["deleted_rows_on"] == 0, (
            f"{name}: a row a deletion vector hides came back with skipping on"
        )
    # the extensions in the other order (our pre-CBO rule before Delta's PrepareDeltaScan),
    # and Delta's alone with enable(spark): the lookups above skipped there too
    assert results["sessions"] == {
        "ours_first": f"{METAINDEX_EXTENSION},{DELTA_EXTENSION}",
        "enable_only": DELTA_EXTENSION,
    }
    assert {
        "ours_first/plain",
        "ours_first/deletion_vectors",
        "enable_only/plain",
    } <= set(results["uuid_lookup"])

    # a Delta scan inside a subquery is skipped too, in every order of the extensions
    assert set(results["subqueries"]) == {
        "plain/scalar",
        "plain/exists",
        "plain/in",
        "ours_first/plain/scalar",
        "enable_only/plain/scalar",
    }
    for name, q in results["subqueries"].items():
        assert q["rows_on"] == q["rows_off"] and q["rows_on"], name
        assert q["files_off"] >= FILES - 2 and q["files_on"] <= 1, (name, q)

    travel = results["time_travel"]
    for q in travel["queries"]:
        assert q["on"] == q["off"], f"versionAsOf 0: rows differ for {q['where']!r}"
    assert travel["stats"]["delta_version"] == 0, travel["stats"]
    # version 0's files the DELETE removed are not in the index (built later): always read
    assert travel["lookup_files_on"] <= travel["unknown_files"] + 1 < travel["lookup_files_off"], (
        f"versionAsOf 0: read {travel['lookup_files_on']} files, of which "
        f"{travel['unknown_files']} the index does not know"
    )

    stale = results["optimized"]
    for phase in ("before_refresh", "after_refresh"):
        for q in stale[phase]:
            assert q["on"] == q["off"], f"after OPTIMIZE ({phase}): {q['where']!r}"
    assert stale["refresh_lookup_files_on"] <= 1, stale

    [e] = results["explain"]
    assert (
        e["delta_version"] == 0
        and e["skipped_files"] == e["total_files"] - 1
        and e["delta_files_skipped"] == FILES - e["total_files"]
    ), e
    assert "skipped by Delta first" in e["text"], e["text"]

    assert "typeWidening" in results["evolved_protocol"], results["evolved_protocol"]
    for name in ("evolved", "evolved_new_columns"):
        assert any(q["files_on"] < q["files_off"] for q in results["differential"][name]), name

    catalog = results["catalog"]
    assert catalog["rows_on"] == catalog["rows_off"] and len(catalog["rows_on"]) == 1, catalog
    assert catalog["table_format"] == "delta" and catalog["partition_columns"] == ["p"], catalog
    assert catalog["table_name"] == "spark_catalog.db.events", catalog
    assert catalog["files_on"] == 1 < catalog["files_off"], catalog
    assert catalog["skipped"] == catalog["files_off"] - 1, catalog

    dml = results["dml"]
    assert dml["on"] == dml["off"], "DELETE / UPDATE / MERGE gave another table with skipping on"
    assert dml["rows"] > 0


def test_a_delta_request_names_decoded_paths_and_says_what_delta_skipped(tmp_path):
    """The Python side of a Delta scan's request, without Spark: files named by their decoded
    path under the root (what the shim compares a listed file's ``URI.getPath()`` with), and
    the stats carry the Delta version and the files Delta's own skipping left out."""
    pytest.importorskip("deltalake")
    import pyarrow as pa
    from deltalake import write_deltalake

    from metaindex import MetaIndex
    from metaindex.engine.executors import SerialExecutor
    from metaindex.spark import hook

    path = str(tmp_path / "t")
    for i in range(4):
        write_deltalake(
            path,
            pa.table(
                {"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "p": [f"a b%{i % 2}"] * 10}
            ),
            mode="append",
            partition_by=["p"],
        )
    mi = MetaIndex(path, store=str(tmp_path / "store"))
    mi.index_builder().add_min_max_index("id").build(executor=SerialExecutor())
    hook.register(None, mi)
    request = {
        "scan": 1,
        "session": "delta-request",
        "roots": [f"file:{path}"],
        "table": None,
        "filters": [{"op": "lt", "col": ["id"], "value": {"type": "long", "value": 10}}],
        "partition_filters": 0,
        "num_files": 3,
        "num_bytes": 1000,
        "query": "q",
        "delta_version": 2,
        "delta_files_total": 4,
        "conf": {},
    }
    try:
        reply = hook.handle_prune_request(json.dumps(request))
    finally:
        hook.unregister(None, mi.table_uri)
    stats_line, ok, *lines = reply.split("\n")
    stats = json.loads(stats_line)
    assert (stats["delta_version"], stats["delta_files_skipped"]) == (2, 1), stats
    assert ok == f"OK\tfile:{path}"
    names = [line.split("\t")[2] for line in lines]
    assert len(names) == 3, f"ids 10..39 cannot be < 10: three files named, not {names}"
    for name in names:  # delta-rs escapes the directory (p=a%20b%250), the log once more
        assert "%2520" not in name and os.path.isfile(os.path.join(path, name)), (
            f"{name!r} should be the decoded log path: the file's path under the root"
        )


# ------------------------------------------------------------------------------ the driver


def _session(jars: str, out: str, extensions: tuple):
    from tests.delta.spark_writer import delta_session

    return delta_session(
        jars,
        "metaindex-delta-rule",
        extensions,
        {"spark.sql.warehouse.dir": os.path.join(out, "warehouse")},
    )


class Driver:
    def __init__(self, spark, out: str):
        self.spark, self.out = spark, out
        self.rng = random.Random(31)
        self.results: dict = {"differential": {}, "uuid_lookup": {}, "sessions": {}, "timings": {}}
        self.deleted: str | None = None
        self.toggle = None
        """None: skipping on and off by ``spark.metaindex.enabled`` (the extension's rule);
        else a function of on / off (``enable`` / ``disable``: the rule ``enable`` installs
        without the extension does not read the conf)."""

    # tables
    def write(self, name: str, *, partitioned: bool = False, properties: str = "") -> str:
        path = os.path.join(self.out, name)
        frame = self.spark.range(ROWS).selectExpr(
            "id",
            UUIDS,
            "CAST(id DIV 100 AS INT) AS k",
            "concat('s', CAST(id % 97 AS STRING)) AS s",
            "CAST(id % 4 AS INT) AS p",
        )
        frame = frame.repartitionByRange(FILES, "id")
        if properties:
            self.spark.sql(
                f"CREATE TABLE delta.`{path}` (id BIGINT, u STRING, k INT, s STRING, "
                f"p INT) USING delta TBLPROPERTIES ({properties})"
            )
            frame.write.format("delta").mode("append").save(path)
        elif partitioned:
            frame.repartitionByRange(FILES // 4, "id").write.format("delta").partitionBy("p").save(
                path
            )
        else:
            frame.write.format("delta").save(path)
        return path

    def index(self, path: str, string_column: str = "s"):
        from metaindex.engine.executors import SerialExecutor
        from metaindex.spark import MetaIndex

        mi = MetaIndex(
            self.spark, path, store=os.path.join(self.out, "stores", os.path.basename(path))
        )
        mi.index_builder().add_min_max_index("id").add_value_list_index("k").add_bloom_filter_index(
            "u"
        ).add_value_list_index(string_column).build(executor=SerialExecutor())
        return mi

    # queries
    def frame(self, path: str, version: int | str | None = None):
        """The table (at ``version``; a str: ``timestampAsOf``)."""
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option(
                "timestampAsOf" if isinstance(version, str) else "versionAsOf", version
            )
        return reader.load(path)

    def run(self, path: str, where: str, on: bool, version: int | str | None = None):
        from metaindex.spark.metrics import files_read

        if self.toggle is None:
            self.spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
        else:
            self.toggle(on)
        df = self.frame(path, version).where(where)
        rows = sorted(tuple(r) for r in df.collect())
        return rows, files_read(df)

    def compare(self, path: str, where: str, version: int | str | None = None) -> dict:
        off, files_off = self.run(path, where, False, version)
        on, files_on = self.run(path, where, True, version)
        return {
            "where": where,
            "on": [list(r) for r in on],
            "off": [list(r) for r in off],
            "on_count": len(on),
            "off_count": len(off),
            "files_on": files_on,
            "files_off": files_off,
        }

    def predicates(self, path: str, string_column: str = "s") -> list:
        rng = self.rng
        known = [r.u for r in self.frame(path).select("u").sample(0.01, seed=3).collect()]
        out = []
        for pick in range(7):  # one of each shape, random literals
            if pick == 0:
                out.append(f"id = {rng.randrange(-50, ROWS + 50)}")
            elif pick == 1:
                lo = rng.randrange(ROWS)
                out.append(f"id BETWEEN {lo} AND {lo + rng.randrange(300)}")
            elif pick == 2:
                out.append(f"k IN ({', '.join(str(rng.randrange(-2, 22)) for _ in range(3))})")
            elif pick == 3:
                u = (
                    rng.choice(known)
                    if known and rng.random() < 0.7
                    else "00000000-0000-0000-0000-000000000000"
                )
                out.append(f"u = '{u}'")
            elif pick == 4:
                out.append(f"{string_column} = 's{rng.randrange(100)}' AND k = {rng.randrange(20)}")
            elif pick == 5:
                out.append(f"NOT (k <> {rng.randrange(20)}) OR id < {rng.randrange(100)}")
            else:
                u = rng.choice(known) if known else "x"
                out.append(f"u IN ('{u}', 'nope') OR k > {rng.randrange(15, 25)}")
        return out

    def differential(self, name: str, path: str, string_column: str = "s", shapes=7) -> None:
        """The first ``shapes`` predicates (5: without the NOT / OR mixes, still over every
        index kind)."""
        self.results["differential"][name] = [
            self.compare(path, where) for where in self.predicates(path, string_column)[:shapes]
        ]

    def uuid_lookup(self, name: str, path: str, deleted: str | None = None, where=None) -> None:
        """The UUID of the table's first row (``where``: a lookup made before, again)."""
        from metaindex.spark import last_query_stats

        if where is None:
            u = self.frame(path).select("u").orderBy("id").limit(1).collect()[0].u
            where = f"u = '{u}'"
        q = self.compare(path, where)
        stats = last_query_stats(self.spark)
        entry = {
            "where": q["where"],
            "rows_on": q["on"],
            "rows_off": q["off"],
            "files_on": q["files_on"],
            "files_off": q["files_off"],
            "stats": {
                "files_total": stats.files_total,
                "files_skipped": stats.files_skipped,
                "delta_files_skipped": stats.delta_files_skipped,
            },
        }
        if deleted is not None:
            entry["deleted_rows_on"] = len(self.run(path, f"u = '{deleted}'", True)[0])
        self.results["uuid_lookup"][name] = entry

    def subqueries(self, name: str, path: str, shapes=("scalar", "exists", "in")) -> None:
        """The plain table's UUID lookup inside a scalar, an ``EXISTS`` and an ``IN`` subquery
        (Delta prepares a subquery's scan with the plan around it, not on its own): rows and
        files read (``files_read`` counts subquery scans), skipping on and off."""
        where = self.results["uuid_lookup"]["plain"]["where"]
        scan = f"FROM delta.`{path}` WHERE {where}"
        sql = {
            "scalar": f"SELECT (SELECT max(id) {scan}) AS m",
            "exists": f"SELECT id FROM range(3) WHERE EXISTS (SELECT 1 {scan})",
            "in": f"SELECT id FROM range(3) WHERE id IN (SELECT id {scan})",
        }
        from metaindex.spark.metrics import files_read

        for shape in shapes:
            seen = {}
            for on in (False, True):
                if self.toggle is None:
                    self.spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
                else:
                    self.toggle(on)
                df = self.spark.sql(sql[shape])
                seen[on] = (
                    [list(r) for r in sorted(tuple(r) for r in df.collect())],
                    files_read(df),
                )
            self.results.setdefault("subqueries", {})[f"{name}/{shape}"] = {
                "rows_on": seen[True][0],
                "rows_off": seen[False][0],
                "files_on": seen[True][1],
                "files_off": seen[False][1],
            }

    def timed(self, label: str, step) -> None:
        started = time.monotonic()
        step()
        self.results["timings"][label] = round(time.monotonic() - started, 1)

    # the cases
    def plain(self) -> None:
        path = self.write("plain")
        self.index(path)
        self.differential("plain", path)
        self.uuid_lookup("plain", path)
        self.subqueries("plain", path)
        from metaindex.spark import explain

        self.spark.conf.set("spark.metaindex.enabled", "true")
        where = self.results["uuid_lookup"]["plain"]["where"]
        self.results["explain"] = [
            {
                "delta_version": e.delta_version,
                "delta_files_skipped": e.delta_files_skipped,
                "total_files": e.total_files,
                "skipped_files": e.skipped_files,
                "text": str(e),
            }
            for e in explain(self.spark, self.frame(path).where(where))
        ]

    def partitioned(self) -> None:
        path = self.write("partitioned", partitioned=True)
        self.index(path)
        self.differential("partitioned", path)

    def deletion_vectors(self) -> None:
        path = self.write("deletion_vectors", properties="'delta.enableDeletionVectors' = 'true'")
        deleted = self.deleted = self.frame(path).where("id = 1").collect()[0].u
        self.spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 5 = 1")
        files = self.spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].numFiles
        assert files == FILES, f"DELETE should have written deletion vectors, not files ({files})"
        self.index(path)
        self.differential("deletion_vectors", path, shapes=5)
        self.uuid_lookup("deletion_vectors", path, deleted)

    def column_mapping(self) -> None:
        path = self.write(
            "column_mapping",
            properties="'delta.columnMapping.mode' = 'name', "
            "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5'",
        )
        self.spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO s_renamed")
        self.index(path, "s_renamed")
        self.differential("column_mapping", path, "s_renamed", shapes=5)

    def time_travel(self) -> None:
        from metaindex.spark import last_query_stats

        path = self.write("travel")
        first = self.frame(path, 0).select("u").orderBy("id").limit(1).collect()[0].u
        self.spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 300")  # rewrites files (no DVs)
        self.frame(path).limit(1).write.format("delta").mode("append").save(path)
        self.index(path)  # at the latest version: version 0's first files are not known
        queries = [
            self.compare(path, w, version=0)
            for w in (f"u = '{first}'", "id BETWEEN 250 AND 350", "k IN (1, 2, 14)")
        ]
        last = (
            self.frame(path, 0).select("u").orderBy("id", ascending=False).limit(1).collect()[0].u
        )
        at_zero = (
            self.spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
            .where("version = 0")
            .selectExpr("CAST(timestamp AS STRING) AS t")
            .collect()[0]
            .t
        )  # session time zone
        queries.append(self.compare(path, "k IN (4, 16)", version=at_zero))
        lookup = self.compare(path, f"u = '{last}'", version=0)
        stats = last_query_stats(self.spark)
        at = {
            v: {
                r.f
                for r in self.frame(path, v)
                .selectExpr("input_file_name() AS f")
                .distinct()
                .collect()
            }
            for v in (0, None)
        }
        self.results["time_travel"] = {
            "unknown_files": len(at[0] - at[None]),
            "queries": queries + [lookup],
            "lookup_files_on": lookup["files_on"],
            "lookup_files_off": lookup["files_off"],
            "stats": {"delta_version": stats.tables[-1].get("delta_version")},
        }

    def optimized(self) -> None:
        from metaindex.engine.executors import SerialExecutor

        path = self.write("optimized", partitioned=True)
        mi = self.index(path)
        self.spark.sql(f"OPTIMIZE delta.`{path}`")
        wheres = ["id BETWEEN 100 AND 140", "k IN (3, 7)", "u = 'nope'"]
        before = [self.compare(path, w) for w in wheres]
        mi.refresh(executor=SerialExecutor())
        # after the refresh: the random predicates over every index kind (fixed ones above)
        after = [self.compare(path, w) for w in self.predicates(path)[:5]]
        u = self.frame(path).select("u").orderBy("id").limit(1).collect()[0].u
        lookup = self.compare(path, f"u = '{u}'")
        self.results["optimized"] = {
            "before_refresh": before,
            "after_refresh": after + [lookup],
            "refresh_lookup_files_on": lookup["files_on"],
        }

    def evolved(self) -> None:
        """Schema evolution after the index: a mergeSchema append adds columns, the table's
        ``k`` widens from INT to BIGINT (typeWidening) and takes values past INT; refreshed,
        then built again with indexes on the new columns (NULL in the files before them)."""
        from metaindex.engine.executors import SerialExecutor
        from metaindex.spark import MetaIndex

        path = self.write("evolved", properties="'delta.enableTypeWidening' = 'true'")
        mi = self.index(path)
        self.spark.range(ROWS, ROWS + 400).selectExpr(
            "id",
            UUIDS,
            "CAST(id DIV 100 AS INT) AS k",
            "concat('s', CAST(id % 97 AS STRING)) AS s",
            "CAST(id % 4 AS INT) AS p",
            "CAST(id % 13 AS INT) AS n",
            "concat('w', CAST(id % 5 AS STRING)) AS w",
        ).repartitionByRange(2, "id").write.format("delta").mode("append").option(
            "mergeSchema", "true"
        ).save(path)
        self.spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN k TYPE BIGINT")
        self.spark.range(ROWS + 400, ROWS + 500).selectExpr(
            "id",
            UUIDS,
            "id * 10000000000 AS k",
            "'s' AS s",
            "0 AS p",
            "CAST(NULL AS INT) AS n",
            "'w9' AS w",
        ).repartition(1).write.format("delta").mode("append").save(path)
        mi.refresh(executor=SerialExecutor())
        rng = self.rng
        old = self.predicates(path)  # min/max id and bloom u; k's value list below
        wheres = [old[0], old[3]] + [  # old columns, then the new and widened
            f"k = {(ROWS + rng.randrange(500)) * 10000000000}",
            f"k IN (3, {(ROWS + 450) * 10000000000})",
            f"n = {rng.randrange(13)}",
            "n IS NULL AND id > 1990",
            f"w = 'w{rng.randrange(10)}'",
            f"w IN ('w1', 'w9') AND k > {rng.randrange(30)}",
        ]
        self.results["differential"]["evolved"] = [self.compare(path, w) for w in wheres]
        mi.drop()
        mi = MetaIndex(self.spark, path, store=os.path.join(self.out, "stores", "evolved2"))
        mi.index_builder().add_min_max_index("n").add_value_list_index("w").add_min_max_index(
            "k"
        ).build(executor=SerialExecutor())
        # min/max k and n, value list w
        self.results["differential"]["evolved_new_columns"] = [
            self.compare(path, wheres[i]) for i in (2, 5, 6, 7)
        ]
        self.results["evolved_protocol"] = (
            self.spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0].tableFeatures
        )

    def catalog(self) -> None:
        """A Delta catalog table (DeltaCatalog as spark_catalog): ``MetaIndex(spark,
        "db.events")`` indexes its location from the log, and ``spark.table`` skips."""
        from metaindex.engine.executors import SerialExecutor
        from metaindex.spark import MetaIndex, last_query_stats
        from metaindex.spark.metrics import files_read

        self.spark.sql("CREATE DATABASE IF NOT EXISTS db")
        self.spark.range(ROWS).selectExpr(
            "id", UUIDS, "CAST(id % 4 AS INT) AS p"
        ).repartitionByRange(FILES // 4, "id").write.format("delta").partitionBy("p").saveAsTable(
            "db.events"
        )
        mi = MetaIndex(self.spark, "db.events", store=os.path.join(self.out, "stores", "db"))
        mi.index_builder().add_bloom_filter_index("u").build(executor=SerialExecutor())
        u = self.spark.table("db.events").where("id = 7").collect()[0].u
        out = {}
        for on in (False, True):
            self.spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
            df = self.spark.table("db.events").where(f"u = '{u}'")
            out[on] = ([list(r) for r in df.collect()], files_read(df))
        described = mi.describe().to_dict()
        self.results["catalog"] = {
            "rows_on": out[True][0],
            "rows_off": out[False][0],
            "files_on": out[True][1],
            "files_off": out[False][1],
            "skipped": last_query_stats(self.spark).files_skipped,
            "table_format": described["formats"]["table_format"],
            "partition_columns": list(mi.partition_columns),
            "table_name": mi.table_name,
        }

    def dml(self) -> None:
        path = self.write("dml_on")
        twin = os.path.join(self.out, "dml_off")
        shutil.copytree(path, twin)
        self.index(path)
        self.index(twin)
        us = [r.u for r in self.frame(path).orderBy("id").select("u").collect()]
        source = os.path.join(self.out, "merge_source")
        self.spark.createDataFrame(
            [
                (i, us[i] if i < ROWS else f"new-{i}", 99, "merged", 0)
                for i in (5, 777, 1500, ROWS + 1)
            ],
            "id long, u string, k int, s string, p int",
        ).write.format("delta").save(source)
        out = {}
        for table, on in ((path, True), (twin, False)):
            self.spark.conf.set("spark.metaindex.enabled", "true" if on else "false")
            self.spark.sql(f"DELETE FROM delta.`{table}` WHERE u = '{us[42]}' OR id = 1999")
            self.spark.sql(
                f"UPDATE delta.`{table}` SET s = 'updated' WHERE u = '{us[900]}' OR k IN (7, 8)"
            )
            self.spark.sql(
                f"MERGE INTO delta.`{table}` t USING delta.`{source}` m "
                "ON t.u = m.u WHEN MATCHED THEN UPDATE SET t.s = m.s "
                "WHEN NOT MATCHED THEN INSERT *"
            )
            self.spark.conf.set("spark.metaindex.enabled", "false")
            out[on] = sorted(tuple(r) for r in self.frame(table).collect())
        self.results["dml"] = {
            "on": [list(r) for r in out[True]],
            "off": [list(r) for r in out[False]],
            "rows": len(out[True]),
        }

    def other_sessions(self, jars: str) -> None:
        """The plain table and its index again (and the deletion-vector one) in a session
        whose ``spark.sql.extensions`` lists ours before Delta's, then in one that lists only
        Delta's, with ``enable(spark)`` alone. The conf is static: each is a new session, in
        the same JVM after the last one stopped."""
        from metaindex.spark import MetaIndex, disable, enable
        from tests.delta.spark_writer import DELTA_EXTENSION, METAINDEX_EXTENSION

        for label, extensions, names in (
            ("ours_first", (METAINDEX_EXTENSION, DELTA_EXTENSION), ("plain", "deletion_vectors")),
            ("enable_only", (DELTA_EXTENSION,), ("plain",)),
        ):
            self.spark.stop()
            self.spark = spark = _session(jars, self.out, extensions)
            enable(spark)
            if label == "enable_only":
                self.toggle = lambda on, spark=spark: (enable if on else disable)(spark)
            for name in names:
                path = os.path.join(self.out, name)
                MetaIndex(spark, path, store=os.path.join(self.out, "stores", name))
                deleted = self.deleted if name == "deletion_vectors" else None
                where = self.results["uuid_lookup"][name]["where"]
                self.uuid_lookup(f"{label}/{name}", path, deleted, where)
                if name == "plain":
                    self.subqueries(f"{label}/plain", path, shapes=("scalar",))
            self.results["sessions"][label] = self.spark.conf.get("spark.sql.extensions")


def main(out: str, jars: str) -> None:
    from metaindex.spark import enable
    from tests.delta.spark_writer import DELTA_EXTENSION, METAINDEX_EXTENSION

    spark = _session(jars, out, (DELTA_EXTENSION, METAINDEX_EXTENSION))
    enable(spark)  # the extension's rule then prunes through this driver's callback
    driver = Driver(spark, out)
    for label in (
        "plain",
        "partitioned",
        "deletion_vectors",
        "column_mapping",
        "time_travel",
        "optimized",
        "evolved",
        "catalog",
        "dml",
    ):
        driver.timed(label, getattr(driver, label))
    driver.timed("other_sessions", lambda: driver.other_sessions(jars))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(driver.results, f)
    driver.spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
