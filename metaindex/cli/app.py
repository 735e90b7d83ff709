"""The ``metaindex`` click commands. Heavy imports (pyarrow, the engine, pyspark) happen inside
the commands, so ``--help`` stays fast."""

from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Any

import click

from metaindex import __version__
from metaindex.cli import errors as ex
from metaindex.cli.output import Output

__all__ = ["cli", "STATE"]

STATE: dict[str, Any] = {"debug": False, "json": False, "kms": False, "storage_options": {}}
"""What the error handler in :func:`metaindex.cli.main` needs from the options parsed."""

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _example(*lines: str) -> str:
    return "\b\nExamples:\n" + "\n".join(f"  $ {line}" for line in lines)


# ------------------------------------------------------------------------- shared options


def _remember(key):
    def callback(ctx, param, value):
        if value:
            STATE[key] = True
        return value

    return callback


def common_options(f):
    """--json, --quiet, --debug (every command)."""
    f = click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        callback=_remember("debug"),
        help="Print the traceback of an error.",
    )(f)
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bars or spinners.")(f)
    f = click.option(
        "--json",
        "json_mode",
        is_flag=True,
        callback=_remember("json"),
        help="Print one JSON document on stdout and nothing else.",
    )(f)
    return f


def _storage_options(ctx, param, values):
    options = {}
    for value in values:
        key, eq, setting = value.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE (e.g. region=eu-west-1)")
        options[key.strip()] = setting
    STATE["storage_options"] = options
    return options


def store_options(f):
    """--store, --kms, --storage-option (every command that opens an index)."""
    f = click.option(
        "--storage-option",
        "-o",
        metavar="KEY=VALUE",
        multiple=True,
        expose_value=False,
        callback=_storage_options,
        help="Object store setting for s3:// gs:// az:// tables and stores, e.g. "
        "endpoint=http://localhost:9000 or region=eu-west-1 (repeatable; "
        "added to the AWS_* / GOOGLE_* / AZURE_* environment).",
    )(f)
    f = click.option(
        "--kms",
        metavar="SPEC",
        envvar="METAINDEX_KMS",
        callback=_remember("kms"),
        help="KMS for an encrypted store: inmemory:keys.json (demos), file:PATH "
        "or module:Class (env: METAINDEX_KMS).",
    )(f)
    f = click.option(
        "--store",
        metavar="DIR",
        help="Metadata store directory or URI, e.g. s3://bucket/prefix (default: "
        "$METAINDEX_STORE, else _metaindex next to the table).",
    )(f)
    return f


def executor_options(f):
    """--spark, --workers (build and refresh)."""
    f = click.option(
        "--workers",
        type=click.IntRange(min=1),
        metavar="N",
        help="Local worker processes (default: one per CPU).",
    )(f)
    f = click.option(
        "--spark",
        is_flag=True,
        help="Run the per-file work as Spark tasks (starts a local[*] session "
        "if none is active) instead of the local process pool.",
    )(f)
    return f


class ByteSize(click.ParamType):
    """A byte count: 1048576, 64MiB, 64MB, 1G."""

    name = "SIZE"
    _UNITS = {
        "": 1,
        "b": 1,
        "k": 1024,
        "kb": 1000,
        "kib": 1024,
        "m": 1024**2,
        "mb": 1000**2,
        "mib": 1024**2,
        "g": 1024**3,
        "gb": 1000**3,
        "gib": 1024**3,
    }

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        unit = match and self._UNITS.get(match.group(2).lower())
        if not match or unit is None or float(match.group(1)) * unit < 1:
            self.fail(f"{value!r} is not a size such as 1048576, 64MiB or 1G", param, ctx)
        return int(float(match.group(1)) * unit)


# ------------------------------------------------------------------------- helpers


def _open(
    table: str, store: str | None, kms: str | None, encrypt: dict | None = None, formats=None
):
    """The core MetaIndex of ``table`` (store encryption from --kms and the build's key
    options, through the same conf reader the Spark layer uses; ``formats``: the
    ``FormatSpec`` to index with)."""
    from metaindex.spark.config import open_index, settings_from

    conf = {}
    if kms:
        conf["metaindex.encryption.kms"] = kms
    for key, value in (encrypt or {}).items():
        if value is not None:
            conf["metaindex.encryption." + key] = value
    return open_index(
        table,
        settings_from(conf),
        store=store,
        storage_options=STATE["storage_options"] or None,
        formats=formats,
    )


def _require_index(mi) -> None:
    if not mi.is_indexed():
        raise ex.NotFound(
            f"{mi.table_uri} has no index in {mi.store_path}; build one with "
            "`metaindex build` (or pass the --store it was built in)"
        )


class _Executor:
    """The executor of --spark / --workers, with the Spark session it started (stopped on
    exit)."""

    def __init__(self, spark: bool, workers: int | None):
        if spark and workers:
            raise click.UsageError(
                "--workers sizes the local pool; with --spark the Spark "
                "session decides the parallelism"
            )
        self._spark_flag = spark
        self._workers = workers
        self._started: Any = None  # the SparkSession this command started (lazy pyspark)

    def __enter__(self):
        if not self._spark_flag:
            if self._workers:
                from metaindex.engine.executors import LocalExecutor

                return LocalExecutor(self._workers)
            return None
        try:
            from pyspark.sql import SparkSession
        except ImportError as exc:
            raise click.UsageError(
                f"--spark needs pyspark ({exc}); pip install pyspark, "
                "or leave out --spark to use the local pool"
            ) from None
        from metaindex.spark.executor import SparkExecutor

        session = SparkSession.getActiveSession()
        if session is None:
            # local[*]: the Python workers run on this machine, so they can run this
            # interpreter (the one metaindex is installed in) unless told otherwise
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            session = (
                SparkSession.builder.master("local[*]")
                .appName("metaindex")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
            if not STATE["debug"]:
                session.sparkContext.setLogLevel("ERROR")
            self._started = session
        return SparkExecutor(session)

    def __exit__(self, *exc):
        if self._started is not None:
            self._started.stop()


def _all_files(table: str) -> int:
    """How many files a build indexes (for the progress bar)."""
    from metaindex.engine.listing import list_files, locate_table

    return len(list_files(locate_table(table, storage_options=STATE["storage_options"] or None)))


def _pending_files(mi) -> int | None:
    """How many files a refresh indexes: the new and the rewritten ones (None: unknown, e.g.
    a damaged store, which the refresh repairs first)."""
    fresh = mi.describe().freshness
    if fresh.new_files is None:
        return None
    return fresh.new_files + fresh.changed_files


def _build_doc(operation: str, mi, result, executor: str) -> dict:
    return {
        "operation": operation,
        "table": mi.table_uri,
        "store": mi.store_path,
        "status": result.status,
        "version": result.version,
        "files_indexed": result.entries_added,
        "entries_removed": result.entries_removed,
        "failed": dict(result.failed),
        "footer_minmax": result.footer_minmax,
        "scanned_minmax": result.scanned_minmax,
        "seconds": result.seconds,
        "executor": executor,
    }


def _split(values) -> list[str]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


# ------------------------------------------------------------------------- the group


@click.group(context_settings=CONTEXT, epilog=ex.EXIT_TABLE)
@click.version_option(__version__, "--version", "-V", prog_name="metaindex")
def cli():
    """Data-skipping indexes for Parquet tables: build, keep fresh, prune, and inspect files.

    A table is a directory (or pyarrow.fs URI) of Parquet files. Its index lives in a
    metadata store: --store, else $METAINDEX_STORE, else _metaindex next to the table.
    Every command takes --json (one JSON document on stdout) and --debug (tracebacks).
    """


# ------------------------------------------------------------------------- build


@cli.command(
    epilog=_example(
        "metaindex build /data/sensors --min-max time,temp --value-list city --bloom device_id",
        "metaindex build /data/sensors --min-max temp --bloom device_id --fpp 0.001 --workers 4",
        "metaindex build /data/sensors --min-max temp --value-list city --kms inmemory:keys.json "
        "\\\n      --encrypt-footer-key footer --index-key pii:city",
        "metaindex build /data/sensors --min-max temp --spark --json",
    )
)
@click.argument("table")
@click.option(
    "--min-max",
    "min_max",
    multiple=True,
    metavar="COL[,COL]",
    help="Min/max index on these columns (repeatable).",
)
@click.option(
    "--value-list",
    "value_list",
    multiple=True,
    metavar="COL[,COL]",
    help="Value-list index (distinct values per file) on these columns.",
)
@click.option(
    "--bloom", multiple=True, metavar="COL[,COL]", help="Bloom filter index on these columns."
)
@click.option(
    "--fpp",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="Bloom filter false-positive rate.",
)
@click.option(
    "--max-values",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Value-list size above which a file's list is 'unknown' (kept).",
)
@click.option(
    "--scan/--footer-stats",
    "scan",
    default=False,
    help="Always read columns for min/max (default: take trusted footer "
    "statistics where possible).",
)
@store_options
@click.option(
    "--encrypt-footer-key",
    metavar="LABEL",
    help="Encrypt the store (PME); master key label for footers and file columns. Needs --kms.",
)
@click.option(
    "--index-key",
    "index_keys",
    multiple=True,
    metavar="LABEL|LABEL:COL,COL",
    help="Key label for index columns: one label for all, or label:col,col "
    "(repeatable; default: the footer key).",
)
@click.option(
    "--plaintext-footer", is_flag=True, help="Signed plaintext footers instead of encrypted ones."
)
@click.option(
    "--algorithm",
    type=click.Choice(["AES_GCM_V1", "AES_GCM_CTR_V1"]),
    default="AES_GCM_V1",
    show_default=True,
    help="PME algorithm.",
)
@executor_options
@common_options
def build(
    table,
    min_max,
    value_list,
    bloom,
    fpp,
    max_values,
    scan,
    store,
    kms,
    encrypt_footer_key,
    index_keys,
    plaintext_footer,
    algorithm,
    spark,
    workers,
    json_mode,
    quiet,
):
    """Index every file of TABLE (a directory or URI of Parquet files) in one commit."""
    out = Output(json_mode, quiet)
    columns = (
        [("min-max", c) for c in _split(min_max)]
        + [("value-list", c) for c in _split(value_list)]
        + [("bloom", c) for c in _split(bloom)]
    )
    if not columns:
        raise click.UsageError(
            "name at least one index: --min-max COL, --value-list COL or --bloom COL"
        )
    encrypt = None
    if encrypt_footer_key:
        if not kms:
            raise click.UsageError(
                "--encrypt-footer-key needs --kms SPEC (where the master keys are)"
            )
        encrypt = {
            "footer.key": encrypt_footer_key,
            "index.keys": ";".join(index_keys) or None,
            "plaintext.footer": "true" if plaintext_footer else "false",
            "algorithm": algorithm,
        }
    elif index_keys or plaintext_footer:
        raise click.UsageError("--index-key and --plaintext-footer need --encrypt-footer-key")
    mi = _open(table, store, kms, encrypt)
    builder = mi.index_builder()
    for kind, column in columns:
        if kind == "min-max":
            builder.add_min_max_index(column)
        elif kind == "value-list":
            builder.add_value_list_index(column, max_values=max_values)
        else:
            builder.add_bloom_filter_index(column, fpp=fpp)
    _collect(
        out,
        mi,
        "build",
        spark,
        workers,
        lambda: _all_files(table),
        lambda executor, progress: builder.build(
            executor=executor, progress=progress, footer_statistics=not scan
        ),
    )


def _collect(out, mi, operation, spark, workers, count_files, run) -> None:
    """Run a build or refresh (``run(executor, progress)``) with a progress bar over
    ``count_files()`` files, then report its result."""
    label = {"build": "indexing", "refresh": "refreshing", "upgrade": "upgrading"}[operation]
    with _Executor(spark, workers) as executor:
        total = count_files() if out.live else None
        with out.progress(label, total) as progress:
            result = run(executor, progress)
    doc = _build_doc(operation, mi, result, "spark" if spark else "local")
    from metaindex.cli import render

    out.emit(doc, render.build_result(doc))


# ------------------------------------------------------------------------- refresh


@cli.command(
    epilog=_example(
        "metaindex refresh /data/sensors",
        "metaindex refresh /data/sensors --verify",
        "metaindex refresh /data/sensors --store /idx --kms file:~/.keys --json",
    )
)
@click.argument("table")
@click.option(
    "--scan/--footer-stats", "scan", default=False, help="Always read columns for min/max."
)
@click.option(
    "--verify",
    is_flag=True,
    default=False,
    help="Also re-read the footer of files whose size and mtime match their entry "
    "and re-index those rewritten in place (cp -p, rsync -a, touch -r).",
)
@store_options
@executor_options
@common_options
def refresh(table, scan, verify, store, kms, spark, workers, json_mode, quiet):
    """Index new and rewritten files of TABLE and forget deleted ones, in one commit."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    _collect(
        out,
        mi,
        "refresh",
        spark,
        workers,
        lambda: _pending_files(mi),
        lambda executor, progress: mi.refresh(
            executor=executor, progress=progress, footer_statistics=not scan, verify=verify
        ),
    )


# ------------------------------------------------------------------------- upgrade


@cli.command(
    epilog=_example(
        "metaindex upgrade /data/sensors --xskipper /data/_xskipper",
        "metaindex upgrade /data/sensors --xskipper /md/3fa9...f6d --kms file:~/.keys --store /idx",
        "metaindex upgrade /data/logs --xskipper /data/_xskipper --spark --format csv "
        "--option header=true --option 'schema=ts TIMESTAMP, temp DOUBLE'",
    )
)
@click.argument("table")
@click.option(
    "--format",
    "data_format",
    default="parquet",
    show_default=True,
    metavar="NAME",
    help="How TABLE's files are read: parquet, csv, json or orc (xskipper's store does not "
    "say; name the format its build(reader) read). csv, json and orc need --spark.",
)
@click.option(
    "--option",
    "reader_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark reader option of the format (repeatable), as given to xskipper's reader: "
    "header=true, sep=;, nullValue=NA, schema=<DDL>, timeZone=... With schema, Spark "
    "reads no file to infer one.",
)
@click.option(
    "--xskipper",
    "xskipper",
    required=True,
    metavar="DIR",
    help="Where xskipper kept TABLE's index: its base path "
    "(io.xskipper.parquet.mdlocation, EXPLICIT_BASE_PATH_LOCATION: the store is "
    "DIR/<sha256 of the table path>) or that store directory itself.",
)
@click.option(
    "--scan/--footer-stats",
    "scan",
    default=False,
    help="Always read columns for min/max (files the xskipper store did not cover).",
)
@store_options
@executor_options
@common_options
def upgrade(
    table,
    data_format,
    reader_options,
    xskipper,
    scan,
    store,
    kms,
    spark,
    workers,
    json_mode,
    quiet,
):
    """Write TABLE's metaindex index from the store xskipper wrote (format versions 0-4):
    unchanged files keep their entries without being read again, then new and changed files
    are indexed. The index records TABLE's format and reader options (--format, --option)."""
    from metaindex.formats import FormatSpec
    from metaindex.store.xskipper_format import is_store, store_directory, table_identifier

    options = {}
    for item in reader_options:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--option")
        options[key.strip()] = value
    formats = FormatSpec(data=data_format, options=options)
    if formats.data_format().needs_spark and not spark:
        raise click.UsageError(f"--format {data_format} is read by Spark's own reader: add --spark")
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms, formats=formats)
    if mi.is_indexed():
        raise click.UsageError(
            f"{mi.table_uri} already has a metaindex index in "
            f"{mi.store_path}: refresh it (or drop it first)"
        )
    path = (
        xskipper
        if is_store(xskipper)
        else store_directory(xskipper, table_identifier(mi.table_uri))
    )
    if not is_store(path):
        raise ex.NotFound(f"no xskipper store of {mi.table_uri} at {xskipper} (looked in {path})")
    _collect(
        out,
        mi,
        "upgrade",
        spark,
        workers,
        lambda: _all_files(table),
        lambda executor, progress: mi.upgrade(
            path, executor=executor, progress=progress, footer_statistics=not scan
        ),
    )


# ------------------------------------------------------------------------- compact / vacuum


@cli.command(
    epilog=_example(
        "metaindex compact /data/sensors",
        "metaindex compact /data/sensors --target-size 64MiB --json",
    )
)
@click.argument("table")
@click.option(
    "--target-size",
    type=ByteSize(),
    metavar="SIZE",
    help="Target part size, e.g. 134217728 or 128MiB (default: the store's).",
)
@store_options
@common_options
def compact(table, target_size, store, kms, json_mode, quiet):
    """Rewrite the small metadata parts of TABLE's index into fewer, larger ones."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    before = mi.snapshot().version
    with out.progress("compacting", None, unit="parts") as progress:
        version = mi.compact(target_size, progress=progress)
    doc = {
        "table": mi.table_uri,
        "store": mi.store_path,
        "version": version,
        "compacted": version != before,
        "parts_removed": 0,
        "parts_added": 0,
    }
    if version != before:
        last = mi.history()[-1]
        doc.update(parts_removed=last.parts_removed, parts_added=last.parts_added)
    from metaindex.cli import render

    out.emit(doc, render.compact_result(doc))


@cli.command(
    epilog=_example(
        "metaindex vacuum /data/sensors",
        "metaindex vacuum /data/sensors --retain-hours 24 --json",
        "metaindex vacuum /data/sensors --retain-hours 0 --force",
    )
)
@click.argument("table")
@click.option(
    "--retain-hours",
    type=click.FloatRange(min=0),
    default=168.0,
    show_default=True,
    help="Keep every version that was current during the last N hours (at least 1 unless --force).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Allow --retain-hours below 1: queries reading older versions and writers "
    "slower than that have to start over.",
)
@store_options
@common_options
def vacuum(table, retain_hours, force, store, kms, json_mode, quiet):
    """Delete metadata files of TABLE's index that no recent version needs (what it deletes
    is committed first: a concurrent writer never loses a part)."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    with out.status("vacuuming the index"):
        result = mi.vacuum(retain_hours * 3600.0, force=force)
    doc = {
        "table": mi.table_uri,
        "store": mi.store_path,
        "version": result.version,
        "oldest_version": result.oldest_version,
        "deleted_parts": list(result.deleted_parts),
        "deleted_log_entries": list(result.deleted_log_entries),
    }
    from metaindex.cli import render

    out.emit(doc, render.vacuum_result(doc))


# ------------------------------------------------------------------------- describe / history


@cli.command(
    epilog=_example(
        "metaindex describe /data/sensors",
        "metaindex describe /data/sensors --json | jq .freshness",
        "metaindex describe /data/sensors --plot ranges.png",
    )
)
@click.argument("table")
@click.option(
    "--plot",
    "plot_path",
    metavar="FILE",
    help="Also draw each min/max index's file ranges into FILE (.png, .svg, .pdf; "
    "needs `pip install metaindex[plot]`).",
)
@store_options
@common_options
def describe(table, plot_path, store, kms, json_mode, quiet):
    """The index of TABLE at a glance: indexes, counts, freshness, version, size, and how
    well each index skips (estimated from the index, with a verdict)."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    doc = mi.describe().to_dict()
    if plot_path:
        doc["plot"] = mi.plot(plot_path, title=mi.table_uri)
    from metaindex.cli import render

    out.emit(doc, render.describe(doc))


@cli.command(
    epilog=_example(
        "metaindex check /data/sensors", "metaindex check /data/sensors --json | jq .problems"
    )
)
@click.argument("table")
@store_options
@common_options
def check(table, store, kms, json_mode, quiet):
    """Verify TABLE's whole index: the log (every entry and checkpoint, every version
    replayed), the parts every version names, the latest version's parts decoded and compared
    with the log. Exits non-zero (4, corrupt) naming what is wrong; `metaindex refresh`
    repairs it."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    with out.status("checking the index"):
        report = mi.check()
    doc = {"table": mi.table_uri, "store": mi.store_path, **report.to_json()}
    from metaindex.cli import render

    out.emit(doc, render.check(doc))
    if not report.healthy:
        raise click.exceptions.Exit(ex.exit_code_of_damage())


@cli.command(
    epilog=_example(
        "metaindex advise /data/sensors",
        "metaindex advise /data/sensors --sample-rows 200000 --json",
    )
)
@click.argument("table")
@click.option(
    "--sample-files",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Most data files to sample (picked at random).",
)
@click.option(
    "--sample-rows",
    type=click.IntRange(min=1),
    default=50_000,
    show_default=True,
    help="Most rows to sample in all.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the random choice of files and rows.",
)
@store_options
@common_options
def advise(table, sample_files, sample_rows, seed, store, kms, json_mode, quiet):
    """Which layout of TABLE would make its min/max indexes skip, and the Spark code to write
    it (estimated from the index and a sample of rows; the data is never rewritten)."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    with out.status("sampling the table"):
        advice = mi.advise(sample_files=sample_files, sample_rows=sample_rows, seed=seed)
    doc = {"table": mi.table_uri, **advice.to_dict()}
    from metaindex.cli import render

    out.emit(doc, render.advice(doc))


@cli.command(
    epilog=_example(
        "metaindex history /data/sensors", "metaindex history /data/sensors --limit 5 --json"
    )
)
@click.argument("table")
@click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="Only the N most recent versions."
)
@store_options
@common_options
def history(table, limit, store, kms, json_mode, quiet):
    """Every version of TABLE's index still in its log, oldest first."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    entries = mi.history().to_dicts()
    if limit:
        entries = entries[-limit:]
    doc = {"table": mi.table_uri, "store": mi.store_path, "history": entries}
    from metaindex.cli import render

    out.emit(doc, render.history(doc))


# ------------------------------------------------------------------------- drop


@cli.command(epilog=_example("metaindex drop /data/sensors", "metaindex drop /data/sensors --yes"))
@click.argument("table")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@store_options
@common_options
def drop(table, yes, store, kms, json_mode, quiet):
    """Delete TABLE's index (every version). The data files are not touched."""
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    if not yes:
        if json_mode or not sys.stdin.isatty():
            raise click.UsageError("drop deletes the index: pass --yes (no terminal to ask on)")
        click.confirm(
            f"Delete the index of {mi.table_uri} in {mi.store_path}?", abort=True, err=True
        )
    mi.drop()
    doc = {"table": mi.table_uri, "store": mi.store_path, "dropped": True}
    out.emit(doc, lambda console: console.print(f"[green]dropped[/] the index of {mi.table_uri}"))


# ------------------------------------------------------------------------- prune


@cli.command(
    epilog=_example(
        "metaindex prune /data/sensors --where \"temp > 30 AND city IN ('Paris', 'Rome')\"",
        "metaindex prune /data/sensors --where \"device_id = 'd-42'\" --files",
        "metaindex prune /data/sensors --where \"time >= TIMESTAMP '2024-06-01'\" --json",
        "metaindex prune /data/sensors --where \"upper(city) = 'OSLO' AND temp > 30\" --explain",
        "metaindex prune /data/sensors --where \"upper(city) = 'OSLO' AND temp > 30\" "
        "--allow-unused",
    )
)
@click.argument("table")
@click.option(
    "--where",
    "where",
    required=True,
    metavar="PREDICATE",
    help="A Spark SQL predicate on the table's columns.",
)
@click.option(
    "--allow-unused",
    is_flag=True,
    help="Prune with the conjuncts that can be used when some cannot (a function "
    "metaindex does not know, a literal the column cannot take); without it "
    "such a conjunct is an error (exit 6).",
)
@click.option("--files", "list_files", is_flag=True, help="List the kept and the skipped files.")
@click.option(
    "--explain",
    "explain",
    is_flag=True,
    help="Per conjunct: used or dropped and why, the indexes that answered it and "
    "how many files each rules out; files kept as new or changed.",
)
@click.option(
    "--case-sensitive",
    is_flag=True,
    help="Resolve column names case-sensitively (Spark's default is not).",
)
@click.option(
    "--time-zone",
    default="UTC",
    show_default=True,
    metavar="ZONE",
    help="Session time zone (IANA name) for TIMESTAMP '...' literals.",
)
@store_options
@common_options
def prune(
    table,
    where,
    allow_unused,
    list_files,
    explain,
    case_sensitive,
    time_zone,
    store,
    kms,
    json_mode,
    quiet,
):
    """Which files of TABLE might hold rows matching --where, and which can be skipped.

    Every top-level AND-ed conjunct of --where must be usable: one that is not (a function
    metaindex does not know, two columns compared, a literal the column cannot take, a
    misspelled column) is an error naming it, unless --allow-unused (then it only keeps more
    files). A conjunct on a column without an index is fine. --explain reports every
    conjunct's fate instead.
    """
    out = Output(json_mode, quiet)
    mi = _open(table, store, kms)
    _require_index(mi)
    from metaindex.engine.prune import DamagedIndexWarning

    if explain:
        if list_files:
            raise click.UsageError("--explain and --files do not combine: run them apart")
        explanation = mi.explain(where, case_sensitive=case_sensitive, time_zone=time_zone)
        doc = {"where": where, "time_zone": time_zone, **explanation.as_dict()}
        # plain echo: a console would wrap the long lines of the conjuncts
        out.emit(doc, lambda console: click.echo(str(explanation)))
        return
    with warnings.catch_warnings():  # the damage is in the result, rendered below
        warnings.simplefilter("ignore", DamagedIndexWarning)
        result = mi.prune(where, case_sensitive=case_sensitive, time_zone=time_zone)
    s = result.stats
    unusable = [c for c in s.conjuncts if not c.used and c.reason.in_predicate]
    if unusable and not allow_unused:
        from metaindex.errors import ExpressionError

        raise ExpressionError(
            "; ".join(
                f"conjunct {c.text} cannot be used ({c.reason.value}: {c.detail})" for c in unusable
            )
            + " (--allow-unused prunes with the other conjuncts)"
        )
    doc = {
        "table": mi.table_uri,
        "where": where,
        "version": s.version,
        "total_files": s.total_files,
        "kept_files": s.kept_files,
        "skipped_files": s.skipped_files,
        "unindexed_files": s.unindexed_files,
        "total_bytes": s.total_bytes,
        "kept_bytes": s.kept_bytes,
        "skipped_bytes": s.skipped_bytes,
        "skipped_by_index": dict(s.skipped_by_index),
        "time_zone": time_zone,
        "conjuncts": [c.as_dict() for c in s.conjuncts],
        "seconds": s.seconds,
        "damage": s.damage,
    }
    if list_files:
        doc["kept"] = list(result.kept)
        doc["skipped"] = list(result.skipped)
    from metaindex.cli import render

    out.emit(doc, render.prune(doc))


# ------------------------------------------------------------------------- inspect


@cli.command(
    epilog=_example(
        "metaindex inspect /data/sensors/part-0001.parquet",
        "metaindex inspect part.parquet --pages",
        "metaindex inspect secret.parquet --kms inmemory:keys.json --json",
    )
)
@click.argument("file")
@click.option(
    "--kms",
    metavar="SPEC",
    envvar="METAINDEX_KMS",
    callback=_remember("kms"),
    help="KMS to decrypt an encrypted file (without it: what the file says without keys).",
)
@click.option("--pages", is_flag=True, help="List every page of the page index.")
@common_options
def inspect(file, kms, pages, json_mode, quiet):
    """What a Parquet FILE holds: footer, schema, row groups, column chunks (encodings,
    codecs, sizes, statistics), page index, bloom filters and encryption."""
    from metaindex.cli import render
    from metaindex.cli.parquet_info import inspect_file

    out = Output(json_mode, quiet)
    doc = inspect_file(file, kms=kms, pages=pages)
    out.emit(doc, render.inspect(doc))


# ------------------------------------------------------------------------- jar


@cli.command(
    epilog=_example(
        "metaindex jar",
        'spark-sql --jars "$(metaindex jar)" '
        "--conf spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions -e '...'",
    )
)
@click.option(
    "--spark-version",
    metavar="X.Y.Z",
    help="The Spark the jar is for (default: the installed pyspark's).",
)
@common_options
def jar(spark_version, json_mode, quiet):
    """Print the path of the metaindex Spark jar, for --jars / spark.jars with
    spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions."""
    from metaindex.spark._jvm import PACKAGE, jar_path

    path = jar_path(spark_version)
    out = Output(json_mode, quiet)
    # plain echo: a console would wrap a long path
    out.emit(
        {"jar": path, "extension": PACKAGE + ".MetaIndexExtensions"},
        lambda console: click.echo(path),
    )
