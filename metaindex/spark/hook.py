"""Automatic skipping for ordinary PySpark queries: ``enable(spark)`` on a running session.

Classic PySpark: ``enable`` loads the Java shim (:mod:`metaindex.spark._jvm`) and adds its
optimizer rule to the session. The rule wraps the file index of every V1 Parquet, CSV, JSON and
ORC scan (and of every plain Delta read, after Delta's own data skipping: the request then
carries the Delta version read, see :func:`_delta_fields`); when a scan with filters lists its
files, the shim sends this module a small JSON request (table roots, the filters as JSON,
counts, the scan's format, reader options and data schema — never a file list) through a py4j
callback. An index is used only for a scan that reads the table as the index was built (same
format; for CSV/JSON/ORC the same schema, value options and time zone,
:func:`metaindex.formats.sparkread.read_mismatch`), else the scan reads every file and its
stats say why. We find the
table's index, convert each top-level filter (:func:`metaindex.spark.filters.to_conjuncts`)
and hand them to the one engine decision path (``metaindex.engine.prune.Pruner.decide``), which
binds, drops what it cannot use (with the reason in the scan stats) and evaluates the data
filters over every file of the index's current snapshot (partition filters are left to Spark,
which applies them exactly; they only shorten the reply), and answer with the files that
provably cannot match, each with the size and modification time the index recorded. The shim drops a
listed file only when all three agree, so a file added or rewritten since the last refresh is
always read; a file the index does not know is never named.

The shim sends the session's ``metaindex.*`` and S3A conf and the confs that change what a
filter means (:data:`SESSION_CONF`: time zone, case sensitivity, Parquet rebase read modes);
:class:`metaindex.spark.config.SessionConf` reads them (which index, and the Pruner's
``SessionSettings``). :func:`handle_prune_request` and
:func:`handle_report` answer the shim's two callbacks from their JSON strings, whoever carries
them (the py4j callback here, or a pruning process).

Each request re-checks the table's store head (``MetaIndex.pruner``: a listing of the log and
parts directories), so a new version, or a part damaged or removed since the previous query,
is noticed by the next query of the same session (which then reads every file, with the
reason).

Which index a scan uses: the one :func:`register` ed for the table root (or, for a catalog
table, its location), else the index found with the session's ``metaindex.*`` conf (sent with
each request, so conf changes apply to the next query) via
:func:`metaindex.spark.config.open_index`. A root without an index is remembered for
:data:`NEGATIVE_TTL` seconds. Only the table's own root (or catalog location) is matched: a
read of a sub-directory of an indexed table is not skipped.

Nothing here raises into Java: an unreadable, corrupt or undecryptable index makes the scan
read every file, with a :class:`SkippingWarning` and the reason in the query stats
(:mod:`metaindex.spark.stats`). Callbacks arrive on several threads; caches are guarded by a
lock and each table's core ``MetaIndex`` (not thread-safe) by a lock of its own.

Spark Connect sessions have no JVM access: there ``enable`` only turns on filter pushdown
for Python data sources (``spark.sql.python.filterPushdown.enabled``), which the ``metaindex``
data source needs (``spark.read.format("metaindex").load(path)``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metaindex.engine.prune import SessionSettings, unused_summary
from metaindex.errors import ExpressionError
from metaindex.spark import config
from metaindex.spark import stats as _stats
from metaindex.spark.config import ENABLED_CONF, EXTENSION, PUSHDOWN_CONF

__all__ = [
    "enable",
    "disable",
    "is_enabled",
    "register",
    "unregister",
    "SkippingWarning",
    "EXTENSION",
    "ENABLED_CONF",
    "handle_prune_request",
    "handle_report",
    "NEGATIVE_TTL",
    "MAX_ROOTS",
    "SESSION_CONF",
]

NEGATIVE_TTL = 2.0
"""Seconds a table root found without an index is not looked up again."""

MAX_ROOTS = 8
"""A scan's catalog location and first root paths tried for an index (a read of many paths or
a glob of files has many roots, none of them a table root)."""

_log = logging.getLogger("metaindex.spark")


class SkippingWarning(UserWarning):
    """A scan read every file because its index could not be used (the message says why)."""


# ------------------------------------------------------------------------------ public API


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def enable(spark) -> None:
    """Turn on automatic skipping for ``spark`` (this session only: ``newSession()`` needs
    its own call). Idempotent; takes effect for queries planned afterwards. Also registers the
    ``metaindex`` data source (:func:`metaindex.spark.datasource.register`, which sets
    ``spark.sql.python.filterPushdown.enabled``); under Spark Connect that is all it does
    (besides ``spark.metaindex.enabled=true`` for a server running the extension).

    Where the application runs the extension (``spark.sql.extensions`` names
    :data:`EXTENSION` and ``spark.jars`` the jar), its rule already wraps every scan: ``enable``
    then only hands this driver's Python callback to it (no second rule, no second wrapper),
    so scans are pruned in this process, with stats in :func:`last_query_stats`.

    Raises:
        UnsupportedSparkError: classic PySpark of a Spark line metaindex ships no jar for
            (the message lists the supported lines).
        ShimUnavailable: classic PySpark where the jar cannot be used (an installation
            without jars, another line's jar on the class path); the message names the data
            source ``spark.read.format("metaindex")``, which needs no jar.
    """
    if _is_connect(spark):
        _register_source(spark)
        spark.conf.set(ENABLED_CONF, "true")
        return
    from pyspark.java_gateway import ensure_callback_server_started

    from metaindex.spark import _jvm

    _jvm.load(spark)  # raises ShimUnavailable (a MetaIndexError) without a usable jar
    ensure_callback_server_started(spark.sparkContext._gateway)
    jsession = spark._jsparkSession
    with _jvm.calling(spark) as jvm:
        rule = jvm.io.metaindex.spark.MetaIndexRule
        if config.extension_installed(spark) and _jvm.on_class_path(spark):
            rule.setCallback(_callback())
        else:
            rule.install(jsession.experimental(), jsession.sessionUUID(), _callback())
    spark.conf.set(ENABLED_CONF, "true")
    _register_source(spark)  # the data source works in classic sessions too


def _register_source(spark) -> None:
    try:
        from metaindex.spark import datasource  # Python data sources: Spark 4.0 on

        datasource.register(spark)
    except Exception as exc:  # noqa: BLE001 - a Spark without Python data sources
        _log.debug("the metaindex data source could not be registered: %s", exc)
        try:
            spark.conf.set(PUSHDOWN_CONF, "true")
        except Exception:  # noqa: BLE001
            pass


def disable(spark) -> None:
    """Turn automatic skipping off for ``spark`` (queries planned afterwards read every
    file): the session's ``enable`` rule is removed and ``spark.metaindex.enabled=false``
    turns the extension's rule off for this session. Other sessions and other optimizer rules
    are left alone."""
    spark.conf.set(ENABLED_CONF, "false")
    if _is_connect(spark):
        spark.conf.set(PUSHDOWN_CONF, "false")
        return
    from metaindex.spark import _jvm

    if not _jvm.loaded(spark):
        return
    with _jvm.calling(spark) as jvm:
        jvm.io.metaindex.spark.MetaIndexRule.uninstall(spark._jsparkSession.experimental())


def is_enabled(spark) -> bool:
    """Whether skipping is in effect for ``spark``: ``enable`` was called, or the extension
    runs and the session did not turn it off (``disable``)."""
    if _is_connect(spark):
        return str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() == "true"
    if config.extension_installed(spark):
        return str(spark.conf.get(ENABLED_CONF, "true")).strip().lower() != "false"
    from metaindex.spark import _jvm

    if not _jvm.loaded(spark):
        return False
    with _jvm.calling(spark) as jvm:
        return bool(
            jvm.io.metaindex.spark.MetaIndexRule.isInstalled(spark._jsparkSession.experimental())
        )


def register(spark, core_index) -> None:
    """Use ``core_index`` (a core ``metaindex.MetaIndex``: its store and encryption) for scans
    of its table root. Process-wide: every session of this Python process sees it."""
    from metaindex.api import MetaIndex

    if not isinstance(core_index, MetaIndex):
        raise TypeError(f"register takes a metaindex.MetaIndex, not {type(core_index).__name__}")
    uri = core_index.table_uri
    with _state.lock:
        _state.registry[uri] = core_index
        _state.forget(uri)


def unregister(spark, table_uri) -> None:
    """Forget the registered index of ``table_uri`` (after its ``drop()``)."""
    from metaindex.store import normalize_table_uri

    uri = normalize_table_uri(table_uri)
    with _state.lock:
        _state.registry.pop(uri, None)
        _state.forget(uri)


# ------------------------------------------------------------------------------ state


class _TableState:
    """One table root's core index (not thread-safe: used under ``lock``)."""

    def __init__(self, core):
        self.core = core
        self.lock = threading.Lock()


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.registry: dict = {}  # table URI -> core MetaIndex (register)
        self.opened: dict = {}  # (table URI, conf key) -> _TableState
        self.negative: dict = {}  # (table URI, conf key) -> monotonic expiry
        self.settings: dict = {}  # SessionConf.index -> config.Settings
        self.sessions: dict = {}  # SessionConf.session -> engine SessionSettings
        self.pending: dict = {}  # scan id -> (session, ScanStats) awaiting Java's report

    def forget(self, uri: str) -> None:
        for cache in (self.opened, self.negative):
            for key in [k for k in cache if k[0] == uri]:
                del cache[key]


_state = _State()
_MAX_PENDING = 1000


def _cached(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` outside the lock when missing."""
    with _state.lock:
        found = cache.get(key)
    if found is None:
        found = make()
        with _state.lock:
            cache[key] = found
    return found


def _settings(conf_key):
    return _cached(_state.settings, conf_key, lambda: config.settings_from(dict(conf_key)))


def _table_state(uri: str, conf_key) -> _TableState | None:
    """The state of ``uri``'s index (``conf_key``: :attr:`SessionConf.index
    <metaindex.spark.config.SessionConf.index>`), or None when the root has no index."""
    now = time.monotonic()
    key = (uri, conf_key)
    with _state.lock:
        core = _state.registry.get(uri)
        if core is not None:
            state = _state.opened.get((uri, None))
            if state is None or state.core is not core:
                state = _state.opened[(uri, None)] = _TableState(core)
            return state
        state = _state.opened.get(key)
        if state is not None:
            return state
        if _state.negative.get(key, 0.0) > now:
            return None
    settings = _settings(conf_key)  # a malformed conf raises: the caller reports it
    try:
        core = config.open_index(uri, settings)
        indexed = core.is_indexed()
    except (FileNotFoundError, NotADirectoryError, ValueError):
        indexed = False  # a single-file root, a root gone since planning, no store parent
    if not indexed:
        with _state.lock:
            _state.negative[key] = now + NEGATIVE_TTL
        return None
    with _state.lock:
        return _state.opened.setdefault(key, _TableState(core))


# ------------------------------------------------------------------------------ callback


class _PruneCallback:
    """The py4j proxy the shim calls (``io.metaindex.spark.PruneCallback``)."""

    def prune(self, request):
        try:
            return handle_prune_request(request)
        except BaseException as e:  # noqa: BLE001 - never raise into Java
            _log.warning("metaindex: skipping failed: %s", e, exc_info=True)
            why = f"skipping failed ({type(e).__name__}: {e})"
            return json.dumps({"reason": why}) + "\nNONE"

    def report(self, report):
        try:
            handle_report(report)
        except BaseException:  # noqa: BLE001 - never raise into Java
            _log.warning("metaindex: bad scan report %r", report, exc_info=True)

    class Java:
        implements = ["io.metaindex.spark.PruneCallback"]


_the_callback = None


def _callback() -> _PruneCallback:
    global _the_callback
    with _state.lock:
        if _the_callback is None:
            _the_callback = _PruneCallback()
        return _the_callback


SESSION_CONF = config.session_keys()
"""The Spark session conf keys the shim sends with each request besides ``metaindex.*``
(time zone, case sensitivity, Parquet rebase read modes): they change what a filter means
(:func:`metaindex.spark.config.session_keys`)."""


def _session_settings(conf: config.SessionConf):
    """The request's session settings (cached per distinct conf)."""
    return _cached(_state.sessions, conf.session, conf.session_settings)


def _skippable(pruner, filters: list, partition_filters: int, session: SessionSettings):
    """(mask of the snapshot's files to name in the reply, PruneResult, PruneContext).

    Every indexed file is a candidate, decided by the Pruner on the data filters (the entries
    after the first ``partition_filters``). The partition filters only shorten the reply
    (``listed_mask``): files they rule out were not listed by Spark, so they are not named (a
    file wrongly left out of the reply is just read).
    """
    from metaindex.spark.filters import to_conjuncts

    result = pruner.decide(
        to_conjuncts(filters[partition_filters:]),
        None,
        to_conjuncts(filters[:partition_filters]),
        session,
    )
    mask = ~result.kept_mask
    if result.listed_mask is not None:
        mask &= result.listed_mask
    return mask, result, pruner.context


def _read_mismatch(snapshot, doc: dict) -> str | None:
    """Why the request's scan does not read the table as its index was built (its format,
    reader options and data schema, sent by the shim; a shim that sends none wraps Parquet
    scans only), so the index's values are not the ones it reads; None when it does
    (:func:`metaindex.formats.sparkread.read_mismatch`)."""
    from metaindex.formats import FormatSpec
    from metaindex.formats.sparkread import read_mismatch

    recorded = FormatSpec.from_record(snapshot.table.extra)
    conf = doc.get("conf") or {}
    return read_mismatch(
        recorded.data,
        recorded.options,
        doc.get("format") or "parquet",
        doc.get("options") or {},
        doc.get("data_schema"),
        conf.get("spark.sql.session.timeZone"),
    )


def _reply_lines(ctx, mask: np.ndarray) -> str:
    """``size\\tmtime\\tname`` per skippable file (names with a line break are left out)."""
    idx = np.flatnonzero(mask)
    names = ctx.names.take(pa.array(idx))
    safe = pc.invert(pc.match_substring_regex(names, "[\r\n]")).to_numpy(zero_copy_only=False)
    if not safe.all():
        idx, names = idx[safe], names.filter(pa.array(safe))
    sizes, mtimes = ctx.sizes[idx], ctx.mtimes[idx]
    return "\n".join(
        f"{s}\t{m}\t{n}"
        for s, m, n in zip(sizes.tolist(), mtimes.tolist(), names.to_pylist(), strict=True)
    )


def handle_prune_request(request: str) -> str:
    """Answer one prune request of the shim (JSON: session, table, roots, filters,
    partition_filters, num_files, num_bytes, query, scan, conf): a first line with the scan's
    stats as JSON (:meth:`~metaindex.spark.stats.ScanStats.to_json`, before the shim drops
    anything), then ``NONE`` (read every file), or ``OK\t<root>`` followed by one
    ``size\tmtime\tname`` line per file that provably cannot match. Records the scan's stats
    for the session. Raises only on a malformed request (the callback turns that into
    ``NONE``)."""
    from metaindex.store import normalize_table_uri

    started = time.perf_counter()
    try:
        doc = json.loads(request)
    except RecursionError:  # json nests no deeper than the interpreter's recursion limit
        raise ExpressionError(
            "filter request nested too deeply to decode (an AND / OR / NOT "
            "nesting near the interpreter's recursion limit)"
        ) from None
    session = doc["session"]
    roots = [doc["table"]] if doc.get("table") else []
    roots += [r for r in doc.get("roots", ()) if r not in roots]
    conf = config.SessionConf.of_request(doc.get("conf") or {})
    base = {
        "files_total": int(doc.get("num_files", 0)),
        "bytes_total": int(doc.get("num_bytes", 0)),
        "query": doc.get("query"),
        **_delta_fields(doc),
    }
    shown = roots[0] if roots else None

    def give_up(table, reason, error=None):
        if error is not None:
            message = f"metaindex: reading every file of {table}: {reason}"
            warnings.warn(message, SkippingWarning, stacklevel=2)
            _log.debug(message, exc_info=error)
        scan = _stats.ScanStats(table, reason=reason, seconds=time.perf_counter() - started, **base)
        _stats.record(session, scan)
        return _reply(scan, "NONE")

    try:
        session_settings = _session_settings(conf)
    except (TypeError, ValueError) as e:
        return give_up(
            normalize_table_uri(shown) if shown else None,
            f"session settings not understood ({e})",
            e,
        )
    for root in roots[:MAX_ROOTS]:
        uri = normalize_table_uri(root)
        try:
            state = _table_state(uri, conf.index)
        except Exception as e:  # noqa: BLE001 - a bad conf or store: say so, read all
            return give_up(uri, f"index not readable ({type(e).__name__}: {e})", e)
        if state is None:
            continue
        try:
            with state.lock:
                pruner = state.core.pruner()
                why = _read_mismatch(pruner.context.snapshot, doc)
                if why is None:
                    skip, result, ctx = _skippable(
                        pruner,
                        doc.get("filters") or [],
                        int(doc.get("partition_filters") or 0),
                        session_settings,
                    )
                    lines = _reply_lines(ctx, skip) if skip.any() else ""
        except Exception as e:  # noqa: BLE001 - corrupt, missing, undecryptable metadata
            return give_up(uri, f"index not usable ({type(e).__name__}: {e})", e)
        if why is not None:
            return give_up(uri, f"index not used: {why}")
        stats = _stats.ScanStats(
            uri,
            result.stats.version,
            skipped_by_index=dict(result.stats.skipped_by_index),
            reason=unused_summary(result.stats.conjuncts),
            seconds=time.perf_counter() - started,
            conjuncts=result.stats.conjuncts,
            files_named=lines.count("\n") + 1 if lines else 0,
            must_keep_files=result.stats.must_keep_files,
            **base,
        )
        if not lines:
            _stats.record(session, stats)
            return _reply(stats, f"OK\t{root}")
        with _state.lock:
            while len(_state.pending) >= _MAX_PENDING:
                _state.pending.pop(next(iter(_state.pending)))
            _state.pending[doc.get("scan")] = (session, stats)
        return _reply(stats, f"OK\t{root}\n{lines}")
    return give_up(normalize_table_uri(shown) if shown else None, "no index")


def _delta_fields(doc: dict) -> dict:
    """A Delta scan's ``delta_version`` and ``delta_files_skipped`` (files of that version
    Delta's own skipping left out before the index saw the scan) for its ScanStats; {} for
    other scans.

    A time-travel read is pruned like any other: a listed file is dropped only when its path,
    size and modification time equal an indexed file's, and Delta data files are immutable, so
    an indexed file holds the same rows at every version that has it; files of the version the
    index does not know are never named."""
    version = doc.get("delta_version")
    if version is None:
        return {}
    total = doc.get("delta_files_total")
    skipped = None if total is None else max(int(total) - int(doc.get("num_files", 0)), 0)
    return {"delta_version": int(version), "delta_files_skipped": skipped}


def _reply(stats, text: str) -> str:
    """The reply text after its stats line (JSON holds no raw line break)."""
    return f"{stats.to_json()}\n{text}"


def handle_report(report: str) -> None:
    """Take the shim's report of one scan (JSON: scan, files_skipped, bytes_skipped) and
    record the final stats of the scan :func:`handle_prune_request` answered."""
    from dataclasses import replace

    doc = json.loads(report)
    with _state.lock:
        found = _state.pending.pop(doc["scan"], None)
    if found is None:
        return
    session, stats = found
    _stats.record(
        session,
        replace(
            stats, files_skipped=int(doc["files_skipped"]), bytes_skipped=int(doc["bytes_skipped"])
        ),
    )
