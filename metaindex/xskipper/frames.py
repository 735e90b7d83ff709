"""The DataFrames xskipper's API returns, in xskipper's layouts, from metaindex's results.

- build / refresh: ``status string, new_entries_added int, old_entries_removed int``
  (xskipper's ``RefreshResult``);
- query stats: ``status string, isSkippable boolean, skipped_Bytes bigint, skipped_Objs
  bigint, total_Bytes bigint, total_Objs bigint`` (``QueryIndexStatsResult``), or
  ``status string, reason string`` with ``FAILED`` / ``No Data Was Supplied`` when there is
  nothing to report (``StatusResult``);
- describe: three string columns ``Data Skipping Index Stats``, the dataset's name,
  ``Comment``;
- list: ``Dataset``, ``Index type``, ``Index columns``.
"""

from __future__ import annotations

import json

__all__ = [
    "REFRESH_SCHEMA",
    "STATS_SCHEMA",
    "STATUS_SCHEMA",
    "LIST_COLUMNS",
    "XSKIPPER_KIND",
    "NO_DATA",
    "refresh_result",
    "stats_frame",
    "describe_frame",
    "list_frame",
]

REFRESH_SCHEMA = "status string, new_entries_added int, old_entries_removed int"
STATS_SCHEMA = (
    "status string, isSkippable boolean, skipped_Bytes bigint, "
    "skipped_Objs bigint, total_Bytes bigint, total_Objs bigint"
)
STATUS_SCHEMA = "status string, reason string"
LIST_COLUMNS = ("Dataset", "Index type", "Index columns")
NO_DATA = "No Data Was Supplied"

XSKIPPER_KIND = {"minmax": "minmax", "valuelist": "valuelist", "bloom": "bloomfilter"}
"""metaindex index kinds by the names xskipper shows (other kinds keep their own)."""

_NO_INDEX = "no index"  # metaindex.spark.hook's reason for a scan of a table without an index


def refresh_result(spark, result):
    """A build or refresh result (``metaindex.BuildResult``) as xskipper's one-row frame
    (``NO_CHANGE`` is xskipper's ``SUCCESS`` with 0 and 0)."""
    status = "SUCCESS" if result.status in ("SUCCESS", "NO_CHANGE") else result.status
    return spark.createDataFrame(
        [(status, int(result.entries_added), int(result.entries_removed))], REFRESH_SCHEMA
    )


def _failed(spark):
    return spark.createDataFrame([("FAILED", NO_DATA)], STATUS_SCHEMA)


def stats_frame(spark, rows, any_active: bool = False):
    """xskipper's stats frame from ``metaindex.spark.stats`` per-table rows (dicts with
    ``files``, ``skipped``, ``bytes``, ``bytes_skipped``, ``version``, ``reason``): scans that
    used an index count (``isSkippable`` true), scans whose index could not be used report
    ``isSkippable`` false and add nothing, scans of tables without an index are left out. No
    row left (and, for the aggregate, no dataset opened since ``reset``): the FAILED frame.
    """
    used = [r for r in rows if r.get("version") is not None]
    unusable = [r for r in rows if r.get("version") is None and r.get("reason") != _NO_INDEX]
    if not used and not unusable and not any_active:
        return _failed(spark)
    row = (
        "SUCCESS",
        bool(used),
        sum(r["bytes_skipped"] for r in used),
        sum(r["skipped"] for r in used),
        sum(r["bytes"] for r in used),
        sum(r["files"] for r in used),
    )
    return spark.createDataFrame([row], STATS_SCHEMA)


def _params_text(params: dict) -> str:
    return " ; ".join(
        f"{k} -> {json.dumps(v) if not isinstance(v, str) else v}"
        for k, v in sorted(params.items())
    )


def _status_rows(d: dict) -> list:
    fresh = d["freshness"]
    if d.get("damage"):  # the counts may be unknown: say why
        return [("Status", f"Damaged - {d['damage']['effect']}", "")]
    if fresh["new_files"] is None:
        return [("Status", f"Unknown - {fresh.get('unknown')}", "")]
    new = fresh["new_files"] + fresh["changed_files"]
    current = d["counts"]["indexed_files"] - fresh["deleted_files"] + fresh["new_files"]
    if new:
        share = f"{new / current:.0%}" if current else "100%"
        return [
            ("Status", "Out of date - please use REFRESH operation to update the index", ""),
            ("Total new/modified objects", f"{share} of the objects ({new} of {current})", ""),
        ]
    if fresh["deleted_files"]:
        return [
            (
                "Status",
                f"Index is up to date but contains {fresh['deleted_files']} "
                "obsolete objects - you can use REFRESH operation to remove these "
                "objects",
                "",
            )
        ]
    return [("Status", "Up to date", "")]


def describe_frame(spark, name: str, d: dict):
    """xskipper's describe layout from ``metaindex.spark.MetaIndex.describe().to_dict()``."""
    indexed = d["counts"]["indexed_files"]
    rows = _status_rows(d)
    rows.append(("Total objects indexed", str(indexed), ""))
    rows.append(("# Metadata properties", "", ""))
    rows.append(("Metadata location", d["store"], ""))
    rows.append(("Metadata version", str(d["version"]), ""))
    rows.append(("# Index information", "", ""))
    rows.append(("# Index type", "Columns", "Params"))
    for ix in d["indexes"]:
        comment = f"key: {ix['key_label']}" if ix.get("key_label") else ""
        params = _params_text(ix["params"])
        rows.append(
            (
                XSKIPPER_KIND.get(ix["kind"], ix["kind"]),
                ix["column"],
                f"{params} ; {comment}" if params and comment else params or comment,
            )
        )
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType(
        [StructField(c, StringType(), True) for c in ("Data Skipping Index Stats", name, "Comment")]
    )
    return spark.createDataFrame(rows, schema)


def list_frame(spark, base_path: str, datasets):
    """xskipper's list layout: the manager's parameters, then per dataset one row per index
    (the name on the first). ``datasets``: ``(name, [(kind, column), ...])`` pairs."""
    from pyspark.sql.types import StringType, StructField, StructType

    rows = [("# Metadatastore Manager parameters", "", ""), ("Metadata base path", base_path, "")]
    for name, indexes in datasets:
        for i, (kind, column) in enumerate(indexes):
            rows.append((name if i == 0 else "", XSKIPPER_KIND.get(kind, kind), column))
    schema = StructType([StructField(c, StringType(), True) for c in LIST_COLUMNS])
    return spark.createDataFrame(rows, schema)
