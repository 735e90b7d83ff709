"""What skipping did: per query and aggregated over a session.

Each scan of a table that skipping looked at is recorded as a :class:`ScanStats` (by the hook
on the driver, or by the data source where it runs on the driver) under its session and query.
A *query* is one Spark SQL execution: the automatic-skipping shim sends the execution id
(``spark.sql.execution.id``, set while an action runs, including its subqueries and adaptive
stages) and falls back to an id of the optimised plan when a scan is listed outside an
execution. ``last_query_stats`` sums the scans of the query recorded last.

Only scans with filters reach the hook (nothing can be skipped without one), so an unfiltered
scan is not counted. Stats live in this Python process, per session, for the last
:data:`MAX_QUERIES` queries; :func:`aggregated_stats` covers every scan since the last
:func:`clear_stats`.

The JVM keeps its own record too: the extension's shim files each scan's stats (the JSON line
that starts every prune reply, whichever side answered: this process's callback or the
pruning process) under its Spark session (the last 256 sessions, each with its last 100
queries and 256 scans at most), and answers the SQL function :data:`SQL_FUNCTION`.
``last_query_stats`` reads it when this process has no record of the session (scans pruned by
the pruning process) and always for a Spark Connect session (whose client has no JVM).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

__all__ = [
    "ScanStats",
    "QueryStats",
    "record",
    "last_query_stats",
    "aggregated_stats",
    "clear_stats",
    "session_key",
    "mark",
    "scans_since",
    "MAX_QUERIES",
    "SQL_FUNCTION",
    "query_stats_from_json",
]

MAX_QUERIES = 100
"""Per session, how many recent queries keep their per-scan detail."""


@dataclass(frozen=True)
class ScanStats:
    """One scan of one table.

    Attributes:
        table: the table root (URI) or catalog location scanned.
        version: the index version used (None: no index was used).
        files_total / files_skipped: files Spark listed for the scan, files dropped.
        bytes_total / bytes_skipped: their sizes.
        skipped_by_index: per index ("minmax(temp)"), how many indexed files that index alone
            rules out.
        reason: why nothing was skipped (no index, metadata unreadable...); None when the
            index was used.
        seconds: time spent deciding (Python side).
        query: the query the scan belongs to (None: a query of its own).
        conjuncts: the Pruner's ``ConjunctOutcome`` per filter of the scan (used or dropped,
            why, the indexes that answered it), partition filters last.
        files_named: indexed files the index ruled out and named to Spark (Spark drops those
            whose size and mtime it still lists unchanged: ``files_skipped``).
        must_keep_files: files the index would rule out but kept because Spark rebases their
            old-calendar dates/timestamps under the session's read modes.
        delta_version: a Delta scan's table version (a time-travel read's), else None.
        delta_files_skipped: files of that Delta version Delta's own data skipping left out
            before the index saw the scan (``files_total`` is what Delta's index returned),
            None when not a Delta scan or unknown.
    """

    table: str | None
    version: int | None = None
    files_total: int = 0
    files_skipped: int = 0
    bytes_total: int = 0
    bytes_skipped: int = 0
    skipped_by_index: dict = field(default_factory=dict)
    reason: str | None = None
    seconds: float = 0.0
    query: str | None = None
    conjuncts: tuple = ()
    files_named: int = 0
    must_keep_files: int = 0
    delta_version: int | None = None
    delta_files_skipped: int | None = None

    def to_json(self) -> str:
        """The scan as one line of JSON (what a prune reply carries to the JVM's registry):
        every field; conjuncts as objects of text (cut at :data:`MAX_TEXT` characters), used,
        reason, detail, partition, indexes."""
        doc = {f: getattr(self, f) for f in _SCAN_FIELDS}
        doc["conjuncts"] = [{**c.as_dict(), "text": _short(c.text)} for c in self.conjuncts]
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)

    @staticmethod
    def from_json(doc: dict) -> ScanStats:
        """The :class:`ScanStats` of a :meth:`to_json` object (missing fields default;
        unknown ones are ignored, so a newer writer's extra fields do no harm)."""
        from metaindex.engine.prune import ConjunctOutcome

        fields = {f: doc[f] for f in _SCAN_FIELDS if doc.get(f) is not None}
        conjuncts = tuple(ConjunctOutcome.from_dict(c) for c in doc.get("conjuncts") or ())
        return ScanStats(conjuncts=conjuncts, **fields)

    def as_table_row(self) -> dict:
        return {
            "table": self.table,
            "version": self.version,
            "files": self.files_total,
            "skipped": self.files_skipped,
            "bytes": self.bytes_total,
            "bytes_skipped": self.bytes_skipped,
            "reason": self.reason,
            **(
                {
                    "delta_version": self.delta_version,
                    "delta_files_skipped": self.delta_files_skipped,
                }
                if self.delta_version is not None
                else {}
            ),
            "conjuncts": [c.as_dict() for c in self.conjuncts],
        }


MAX_TEXT = 500
"""A conjunct's text in :meth:`ScanStats.to_json` is cut to this many characters (a long IN list
would otherwise fill the JVM's record)."""


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


_SCAN_FIELDS = (
    "table",
    "version",
    "files_total",
    "files_skipped",
    "bytes_total",
    "bytes_skipped",
    "skipped_by_index",
    "reason",
    "seconds",
    "query",
    "files_named",
    "must_keep_files",
    "delta_version",
    "delta_files_skipped",
)


@dataclass(frozen=True)
class QueryStats:
    """Skipping over one query (or, from :func:`aggregated_stats`, over many).

    Attributes:
        files_total / files_skipped / bytes_total / bytes_skipped: over every recorded scan.
        skipped_by_index: per index, summed over the scans.
        tables: per scan: table, version, files, skipped, bytes, bytes_skipped, reason,
            conjuncts (text, used, reason, indexes); a Delta scan also ``delta_version`` and
            ``delta_files_skipped`` (what Delta's own skipping left out first).
        delta_files_skipped: files Delta's own data skipping left out of the Delta scans
            before the index saw them (``files_total`` counts what Delta's index returned;
            ``files_skipped`` what the index skipped after it); None with no Delta scan.
        reason: why skipping was off for some scan ("; "-joined, each once), None if it never
            was.
        seconds: time spent deciding.
    """

    files_total: int = 0
    files_skipped: int = 0
    bytes_total: int = 0
    bytes_skipped: int = 0
    skipped_by_index: dict = field(default_factory=dict)
    tables: list = field(default_factory=list)
    reason: str | None = None
    seconds: float = 0.0
    delta_files_skipped: int | None = None

    @property
    def skip_ratio(self) -> float:
        """Skipped files / listed files (0.0 when no file was listed)."""
        return self.files_skipped / self.files_total if self.files_total else 0.0

    @staticmethod
    def of(scans) -> QueryStats:
        by_index: dict = {}
        reasons: list = []
        for s in scans:
            for k, v in s.skipped_by_index.items():
                by_index[k] = by_index.get(k, 0) + v
            if s.reason and s.reason not in reasons:
                reasons.append(s.reason)
        return QueryStats(
            sum(s.files_total for s in scans),
            sum(s.files_skipped for s in scans),
            sum(s.bytes_total for s in scans),
            sum(s.bytes_skipped for s in scans),
            by_index,
            [s.as_table_row() for s in scans],
            "; ".join(reasons) if reasons else None,
            sum(s.seconds for s in scans),
            _delta_skipped(scans),
        )


def _delta_skipped(scans) -> int | None:
    """Files Delta's own skipping left out over the Delta scans (None: no Delta scan)."""
    known = [s.delta_files_skipped for s in scans if s.delta_files_skipped is not None]
    return sum(known) if known else None


class _Session:
    def __init__(self):
        self.queries: OrderedDict = OrderedDict()  # query key -> [ScanStats]; last = newest
        self.tables: dict = {}  # table -> ScanStats summed over every scan of it
        self.recent: deque = deque(maxlen=_RECENT)  # (sequence number, ScanStats)


_lock = threading.Lock()
_sessions: dict = {}
_anonymous = itertools.count()
_sequence = itertools.count(1)
_last_sequence = 0
_RECENT = 1000
_cleared: dict = {}  # session key -> the JVM's record when clear_stats was called


def _add(a: ScanStats, b: ScanStats) -> ScanStats:
    by_index = dict(a.skipped_by_index)
    for k, v in b.skipped_by_index.items():
        by_index[k] = by_index.get(k, 0) + v
    return ScanStats(
        a.table,
        b.version if b.version is not None else a.version,
        a.files_total + b.files_total,
        a.files_skipped + b.files_skipped,
        a.bytes_total + b.bytes_total,
        a.bytes_skipped + b.bytes_skipped,
        by_index,
        b.reason or a.reason,
        a.seconds + b.seconds,
        conjuncts=b.conjuncts or a.conjuncts,
        files_named=a.files_named + b.files_named,
        must_keep_files=a.must_keep_files + b.must_keep_files,
        delta_version=b.delta_version,
        delta_files_skipped=None
        if b.delta_files_skipped is None
        else (a.delta_files_skipped or 0) + b.delta_files_skipped,
    )


def session_key(spark_or_key) -> str:
    """The key stats are kept under: a str as is; a classic session's UUID; a Connect
    session's id.

    Raises:
        TypeError: anything else.
    """
    if isinstance(spark_or_key, str):
        return spark_or_key
    jsession = getattr(spark_or_key, "_jsparkSession", None)
    if jsession is not None:
        return str(jsession.sessionUUID())
    session_id = getattr(spark_or_key, "session_id", None)
    if isinstance(session_id, str):
        return session_id
    raise TypeError(f"expected a SparkSession or a str key, not {type(spark_or_key).__name__}")


def record(spark_or_key, scan_stats) -> None:
    """Record one scan (a :class:`ScanStats`, or a dict of its fields) for a session.

    Raises:
        TypeError: ``scan_stats`` is neither.
    """
    if isinstance(scan_stats, dict):
        scan_stats = ScanStats(**scan_stats)
    if not isinstance(scan_stats, ScanStats):
        raise TypeError(f"scan_stats is a ScanStats or a dict, not {type(scan_stats).__name__}")
    key = session_key(spark_or_key)
    query = scan_stats.query
    if query is None:
        query = f"anonymous-{next(_anonymous)}"
    global _last_sequence
    with _lock:
        session = _sessions.setdefault(key, _Session())
        _last_sequence = next(_sequence)
        session.recent.append((_last_sequence, scan_stats))
        scans = session.queries.pop(query, None) or []
        scans.append(scan_stats)
        session.queries[query] = scans  # now the newest
        while len(session.queries) > MAX_QUERIES:
            session.queries.popitem(last=False)
        total = session.tables.get(scan_stats.table)
        session.tables[scan_stats.table] = scan_stats if total is None else _add(total, scan_stats)


def last_query_stats(spark) -> QueryStats | None:
    """Skipping in the session's most recent query that scanned a filtered table (None if
    there was none since :func:`clear_stats`).

    What this Python process recorded (scans pruned by its ``enable(spark)`` callback, or a
    str key's records); else, for a session (classic or Spark Connect) of an application
    running the extension, what the JVM recorded, asked through the SQL function
    :data:`SQL_FUNCTION` (scans pruned by the pruning process, or by any callback).
    """
    key = session_key(spark)
    with _lock:
        session = _sessions.get(key)
        scans = (
            list(next(reversed(session.queries.values())))
            if session is not None and session.queries
            else None
        )
    if scans is not None and not _is_connect(spark):
        return QueryStats.of(scans)
    if isinstance(spark, str):
        return None
    return _jvm_last_query_stats(spark)


SQL_FUNCTION = "metaindex_last_query_stats"
"""The SQL function the extension injects: the session's last query's scan stats as JSON
(``{"session", "query", "scans": [...]}``), NULL when it recorded none."""


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _jvm_record(spark) -> str | None:
    """:data:`SQL_FUNCTION`'s JSON for the session; None when the JVM has no record, or when
    the application does not run the extension (no such function)."""
    from pyspark.errors import AnalysisException

    from metaindex.spark.config import extension_installed

    if not _is_connect(spark) and not extension_installed(spark):
        return None
    try:
        return spark.sql(f"SELECT {SQL_FUNCTION}() AS stats").collect()[0].stats
    except AnalysisException as e:
        if SQL_FUNCTION in str(e):  # UNRESOLVED_ROUTINE: no extension in this application
            return None
        raise


def _jvm_last_query_stats(spark) -> QueryStats | None:
    """The JVM's record of the session's last query (None: none, or none since
    :func:`clear_stats`)."""
    text = _jvm_record(spark)
    with _lock:
        cleared = _cleared.get(session_key(spark))
    return None if text is None or text == cleared else query_stats_from_json(text)


def query_stats_from_json(text: str) -> QueryStats:
    """The :class:`QueryStats` of :data:`SQL_FUNCTION`'s JSON. Each scan is the JVM's record
    (table, query, files and bytes listed and skipped, a reason of its own when the pruning
    side gave no answer) around ``detail``, the pruning side's :meth:`ScanStats.to_json`;
    the counts are the JVM's (what it really dropped)."""
    doc = json.loads(text)
    scans = []
    for scan in doc.get("scans") or ():
        detail = dict(scan.get("detail") or {})
        for k in ("files_total", "files_skipped", "bytes_total", "bytes_skipped", "query"):
            if scan.get(k) is not None:
                detail[k] = scan[k]
        for k in ("table", "reason"):
            if detail.get(k) is None and scan.get(k) is not None:
                detail[k] = scan[k]
        scans.append(ScanStats.from_json(detail))
    return QueryStats.of(scans)


def mark() -> int:
    """A position in the record of scans: :func:`scans_since` returns what comes after it."""
    with _lock:
        return _last_sequence


def scans_since(spark, position: int) -> list:
    """The session's :class:`ScanStats` recorded after :func:`mark` returned ``position``
    (the last 1000 at most), oldest first."""
    key = session_key(spark)
    with _lock:
        session = _sessions.get(key)
        return [] if session is None else [s for n, s in session.recent if n > position]


def aggregated_stats(spark) -> QueryStats:
    """Skipping summed over every scan of the session since :func:`clear_stats` (``tables``:
    one row per table, summed over its scans; its reason is the latest one)."""
    key = session_key(spark)
    with _lock:
        session = _sessions.get(key)
        scans = [] if session is None else list(session.tables.values())
    return QueryStats.of(scans)


def clear_stats(spark) -> None:
    """Forget the session's stats. The JVM's record (:data:`SQL_FUNCTION`) is not erased: the
    query it holds last when this is called no longer counts for :func:`last_query_stats`."""
    key = session_key(spark)
    seen = None if isinstance(spark, str) else _jvm_record(spark)
    with _lock:
        _sessions.pop(key, None)
        if seen is None:
            _cleared.pop(key, None)
        else:
            _cleared[key] = seen
