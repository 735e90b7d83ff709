"""Per-file index metadata, and the collection task that writes one part file.

For each file of a task: open it with the table's data format (``task.data_format``, a
:class:`metaindex.formats.DataFormat`; Parquet: our reader, footer only), then per index

* min/max from the file's statistics (``FileReader.statistics``; Parquet: the footer's) when
  every row group's are trusted, exact and say how many nulls (and, for floats, NaNs) there
  are (``MinMaxIndex.collect_from_statistics``) — no column is read. Writers rarely record NaN
  counts (pyarrow does not), and without one a float column's bounds cannot rule out NaN
  (which Spark sorts above every number), so such float columns are scanned;
* otherwise (and for value lists and bloom filters) from the column itself: only the top-level
  columns the indexes need are read, row group by row group, nested fields extracted with
  their parents' nulls; a column is no longer read once its indexes cannot change (a value
  list past ``max_values``: the rest of the file is not read for it). Each index takes the
  row groups through its :meth:`~metaindex.index.Index.collector` (bloom filters and value
  lists hash / dedupe them in kernels from the Arrow buffers, :mod:`metaindex.index.columns`).

Small files (issue 32): value lists and bloom filters of flat INT32 / INT64 / BYTE_ARRAY
columns of a small unencrypted Parquet file are scanned by :func:`_scan_small`: the file read
whole, each chunk decoded by one kernel call (:mod:`metaindex._native.smallfiles`) into its
non-null values, fed straight to the kernels the collectors use (the value list's
``ValueSet``, the bloom's hashing and sizing), kept as plain entries (:class:`_SmallList`,
:class:`_SmallBloom`) from which :func:`run_task` builds each index's column of the part at
once; the metadata is the same as the general read's (tests/engine/test_smallfiles.py); any
other column, page shape or inconsistency goes the general way (``METAINDEX_SMALL_FILES=0``
turns the fast path off).

A file without an indexed column holds NULL there for every row (Spark's reading of a column
added later), and is indexed that way. A file that cannot be read (not of its format, corrupt)
or that changed while it was read (``TableFormat.still_listed``) is not indexed: it is reported
in :attr:`TaskResult.failed` and, having no entry, is always kept by pruning.

Types that drift (specs/metadata-store.md): each file's metadata is collected in the file's
own type of the column; the task records a column in the table's type joined with its files'
types (:func:`metaindex.drift.join_fields`) and converts every file's entry to it exactly or
not at all (:func:`metaindex.drift.conform`). An entry that does not convert is null (the file
is kept for that column) and the file's ``obj_type_drift`` names the index and the file's type.
Values are taken as the query engine reads them (``FileReader.as_read``: Parquet INT96 as
microseconds, rounded down).

Per file the task also records (store format 6) the reader's fingerprint (Parquet: the
footer's length and CRC-32, the cheap check ``refresh(verify=True)`` compares), the object's
ETag when the listing has one, and the calendar facts of :mod:`metaindex.engine.calendar`: the
writer's rebase modes (``FileReader.rebase_modes``: Parquet footer keys) and whether an indexed
DATE/TIMESTAMP or INT96 column holds a value before Spark's rebase cutoff (the footer minimum
when the min/max came from it, else the scanned column; INT96 from the raw Julian days).

The task's rows go into one part file, written by the task itself (``TableStore.write_part``),
so tasks may run anywhere the data and the store are reachable.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from metaindex._native.bloomset import insert_binary_new, insert_fixed_new
from metaindex._native.colhash import binary_hashes, fixed_hashes
from metaindex._native.distinct import ValueSet
from metaindex._native.smallfiles import flat_chunk
from metaindex.drift import conform, join_fields
from metaindex.engine import calendar
from metaindex.engine.schema import locate
from metaindex.errors import MetaIndexError
from metaindex.formats import DataFormat, DirectoryFormat, FileReader, ParquetFormat, TableFormat
from metaindex.formats.parquet import ParquetReader
from metaindex.index.bloom import BloomFilterIndex
from metaindex.index.bloom import _filled as bloom_filled
from metaindex.index.minmax import MinMaxIndex
from metaindex.index.valuelist import ValueListIndex
from metaindex.parquet.compression import decompress
from metaindex.store import (
    OBJ_ANCIENT_DATETIME,
    OBJ_ANCIENT_INT96,
    OBJ_DATETIME_REBASE,
    OBJ_ETAG,
    OBJ_FOOTER_CRC,
    OBJ_FOOTER_LEN,
    OBJ_INT96_REBASE,
    OBJ_MTIME,
    OBJ_NAME,
    OBJ_ROWS,
    OBJ_SIZE,
    OBJ_TYPE_DRIFT,
    IndexDef,
    virtual_column_name,
)

if TYPE_CHECKING:
    from metaindex.store.model import EncryptionLabels
    from metaindex.store.table import TableStore

__all__ = ["CollectTask", "TaskResult", "run_task", "collect_file", "split_tasks"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CollectTask:
    """Everything one task needs (picklable).

    Attributes:
        store: the ``TableStore`` the part is written to.
        filesystem / root: where the data files are.
        files: the :class:`DataFile` to index.
        index_defs: the store's index definitions (``IndexDef``, key labels included).
        indexes: the matching ``metaindex.index`` kinds, same order.
        column_types: {indexed column path: its Arrow type in the table schema}.
        partition_columns: the table's partition columns (``virtual_<col>`` strings).
        encryption: the store's ``EncryptionLabels`` or None.
        footer_statistics: take min/max from trusted footer statistics where possible.
        decryption_properties: ``FileDecryptionProperties`` for encrypted data files.
        use_threads: read a row group's columns on the process's threads
            (``Executor.task_threads``: only for a task that has the machine to itself).
        table_format / data_format: the table's formats (:mod:`metaindex.formats`): whether a
            file is still the one listed, and how it is read.
    """

    store: TableStore
    filesystem: pafs.FileSystem
    root: str
    files: tuple
    index_defs: tuple
    indexes: tuple
    column_types: dict
    partition_columns: tuple = ()
    encryption: EncryptionLabels | None = None
    footer_statistics: bool = True
    decryption_properties: object = None
    use_threads: bool = False
    table_format: TableFormat = DirectoryFormat()
    data_format: DataFormat = ParquetFormat()


@dataclass
class TaskResult:
    """What a task did.

    Attributes:
        part: path of the part file written (None when no file could be indexed).
        indexed: obj_names written to the part.
        failed: {obj_name: reason} of files left unindexed.
        footer_minmax: min/max values taken from footer statistics.
        scanned_minmax: min/max values computed by reading the column.
        schemas: the distinct Arrow schemas of the indexed files.
        receipt: the part's ``PartReceipt`` (``TableStore.take_receipt``), for the committing
            process (``TableStore.expect_part``): it then checks the part's bytes against
            it instead of decoding the part.
    """

    part: str | None = None
    indexed: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    footer_minmax: int = 0
    scanned_minmax: int = 0
    schemas: list = field(default_factory=list)
    receipt: object = None


def split_tasks(files, parallelism: int, *, min_files: int = 32, max_files: int = 5000) -> list:
    """Split files into consecutive chunks: about four per worker, each of ``min_files`` to
    ``max_files`` files (one chunk = one task = one part file)."""
    files = list(files)
    if not files:
        return []
    per = -(-len(files) // max(1, 4 * parallelism))
    per = max(min_files, min(max_files, per))
    return [tuple(files[i : i + per]) for i in range(0, len(files), per)]


def _string_family(t: pa.DataType) -> int:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return 1
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return 2
    return 0


def _footer_minmax(index, reader: FileReader, leaf_path: str, file_type: pa.DataType):
    """A kind's metadata from the file's statistics (``Index.collect_from_statistics``,
    min/max's), or None when a scan is needed."""
    offered = reader.statistics(leaf_path)
    if offered is None:
        return None
    stored, stats = offered.stored_type, offered.row_groups
    value_type = file_type.value_type if pa.types.is_dictionary(file_type) else file_type
    if stored != value_type and not (
        _string_family(stored) and _string_family(stored) == _string_family(value_type)
    ):
        return None  # e.g. timestamp[s] stored in ms: the bounds are in another unit
    for s in stats:
        if s is not None and s.trusted and s.min is not None and not s.exact:
            return None
    limits = _plain_limits(stored) if SMALL_FILES and type(index) is MinMaxIndex else None
    if limits is not None:
        return _plain_minmax(stats, reader.num_rows, stored, limits)
    found = index.collect_from_statistics(stats, reader.num_rows, stored)
    if (
        found is not None
        and found.is_valid
        and pa.types.is_struct(found.type)
        and found.type.get_field_index("nan_count") >= 0
        and not found["nan_count"].is_valid
    ):
        return None  # float bounds without a NaN count keep every file for > and >=: scan
    return found


class _SmallMinMax:
    """A file's min/max from its footer statistics, as plain values
    (:meth:`MinMaxIndex.bounds_from_statistics`: ``min`` / ``max``, None for none, ``nulls``,
    ``nans``) of the stored value ``type``: a task makes its column of them at once
    (:func:`_minmax_column`), not a struct scalar per file."""

    __slots__ = ("min", "max", "nulls", "nans", "type")

    def __init__(self, lo, hi, nulls: int, nans: int, t: pa.DataType) -> None:
        self.min, self.max, self.nulls, self.nans, self.type = lo, hi, nulls, nans, t


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_PLAIN_LIMITS: dict = {}
"""{stored type: ``(smallest, largest)`` integer a bound of it may be, ``(float,)`` for float
types, or False}: the types whose footer bounds take the plain way (:func:`_plain_minmax`)."""


def _plain_limits(t: pa.DataType):
    found = _PLAIN_LIMITS.get(t)
    if found is None:
        found = False
        if pa.types.is_integer(t):
            bits = t.bit_width
            found = (
                (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
                if pa.types.is_signed_integer(t)
                else (0, 2**bits - 1)
            )
        elif pa.types.is_date32(t):
            found = _INT32
        elif pa.types.is_timestamp(t) or pa.types.is_date64(t):
            found = _INT64
        elif pa.types.is_float32(t) or pa.types.is_float64(t):
            found = (float,)
        _PLAIN_LIMITS[t] = found
    return found or None


def _plain_minmax(stats: list, num_rows: int, stored: pa.DataType, limits: tuple):
    """:meth:`MinMaxIndex.collect_from_statistics` for a numeric, date or timestamp ``stored``
    type, as a :class:`_SmallMinMax`; None where that gives None (a bound that the type
    cannot hold included) or a float column's NaN count is unknown (then it is scanned)."""
    floating = len(limits) == 1
    found = MinMaxIndex.bounds_from_statistics(stats, num_rows, floating)
    if found is None:
        return None
    lo, hi, nulls, nans = found
    if lo is not None:
        if floating:
            if type(lo) is not float or type(hi) is not float:
                return None
        elif (
            type(lo) is not int
            or type(hi) is not int
            or not limits[0] <= lo <= limits[1]
            or not limits[0] <= hi <= limits[1]
        ):
            return None
    if nans is None:  # float bounds without a NaN count keep every file for > and >=: scan
        return None
    return _SmallMinMax(lo, hi, nulls, nans, stored)


def collect_file(
    reader: FileReader, task: CollectTask, result: TaskResult, ancient: dict | None = None
) -> list:
    """One metadata scalar per index of ``task`` for the open file ``reader`` (a
    :class:`metaindex.formats.FileReader` of ``task.data_format``), in the metadata
    type of ``task.column_types`` (converted exactly or not at all: None where the file's
    values do not convert, see :func:`metaindex.drift.conform`).

    ``ancient``: when given, ``ancient["datetime"]`` / ``ancient["int96"]`` are set True when
    an indexed DATE/TIMESTAMP (INT32/INT64) / INT96 column holds a value before the rebase
    cutoff (:mod:`metaindex.engine.calendar`).
    """
    out = []
    for ix, (value, file_type) in zip(
        task.indexes, _collect_own(reader, task, result, ancient), strict=True
    ):
        target = ix.metadata_type(task.column_types[ix.column])
        out.append(_converted([_entry_scalar(value, ix, file_type)], target)[0][0])
    return out


def _collect_own(
    reader: FileReader,
    task: CollectTask,
    result: TaskResult,
    ancient: dict | None,
    plans: list | None = None,
) -> list:
    """Per index of ``task``: ``(metadata scalar or None, the file's type of the column)``
    (the small path's entry in place of a scalar: :func:`_entry_scalar` makes it one),
    the scalar in the metadata type of that file type (a file without the column: all NULL
    in the table's type). ``plans``: the :class:`_Plan` s of the schemas seen so far, shared
    by the files of a task (each schema's plan made once; a schema's hash costs more than a
    comparison). INT96 values are taken as Spark reads them:
    microseconds of an instant, the nanoseconds within the microsecond dropped (rounding
    down)."""
    schema = reader.schema
    plan = None
    for p in plans or ():
        if p.schema is schema or p.schema.equals(schema):  # (readers of a footer share one)
            plan = p
            break
    if plan is None:
        plan = _Plan(task, schema)
        if plans is not None:
            plans.insert(0, plan)  # (the latest schema first: files come in runs of one)
            del plans[8:]
    located = plan.located
    out: list = [None] * len(task.indexes)
    scan = []
    seen_time: set = set()

    def note(column, leaf_path, minimum=None, values=None):
        """Calendar facts from a footer minimum (decides), or from one scanned part (decides
        once a part holds an old value); called again for each further part."""
        if ancient is None or column in seen_time:
            return
        days = reader.raw_day_range(leaf_path)
        if days is not False:
            seen_time.add(column)
            if days is not None and days[0] < calendar.INT96_CUTOFF_JULIAN_DAY:
                ancient["int96"] = True
            return
        if values is not None and pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        try:
            if values is not None:
                old = calendar.is_ancient(values)
            elif isinstance(minimum, _SmallMinMax):
                old = calendar.stored_is_ancient(minimum.min, minimum.type)
            else:
                old = calendar.is_ancient(minimum["min"])
        except TypeError:  # not stored as a DATE/TIMESTAMP: cannot tell, assume so
            old = True
        if old:
            ancient["datetime"] = True
        if old or values is None:
            seen_time.add(column)

    for i, (ix, where) in enumerate(zip(task.indexes, located, strict=True)):
        if where is None:  # the file predates the column: all NULL
            t = task.column_types[ix.column]
            out[i] = (ix.collect(pa.nulls(reader.num_rows, t)), t)
            continue
        if not plan.indexable[i]:  # a type this kind cannot index (e.g. a boolean for a bloom)
            out[i] = (NOT_INDEXABLE, plan.types[i])
            continue
        if ix.FOOTER_STATISTICS and task.footer_statistics:
            found = _footer_minmax(ix, reader, plan.leaves[i], plan.types[i])
            if found is not None:
                out[i] = (found, plan.types[i])
                result.footer_minmax += 1
                if plan.temporal[i]:
                    note(ix.column, plan.leaves[i], minimum=found)
                continue
        scan.append(i)

    def settled(column):
        return (
            ancient is None
            or ancient["datetime"]
            or column in seen_time
            or not calendar.is_temporal(task.column_types[column])
        )

    if scan:
        for i, value in _scan(reader, task, scan, plan, note, settled).items():
            ix = task.indexes[i]
            # (e.g. INT96 outside the nanosecond range: unknown, keep; the small path reads no
            # INT96 column)
            if not isinstance(value, _SMALL_ENTRIES) and not reader.exact(plan.leaves[i]):
                value = None
            out[i] = (value, plan.types[i])
            if ix.FOOTER_STATISTICS:
                result.scanned_minmax += 1
    if schema not in result.schemas:
        result.schemas.append(schema)
    return out


class _Plan:
    """What :func:`_collect_own` works out once per distinct file schema of a task (files of
    a task mostly share one): where each index's column is in the schema (``located``:
    :func:`~metaindex.engine.schema.locate`'s answer or None), its dotted leaf path ("" when
    absent) and its file type (``types``, None when absent), whether the kind can index that
    type, and whether the column is a DATE/TIMESTAMP of the table (its calendar facts are
    noted)."""

    __slots__ = ("schema", "located", "leaves", "types", "indexable", "temporal")

    def __init__(self, task: CollectTask, schema: pa.Schema) -> None:
        self.schema = schema
        self.located = [locate(schema, ix.column) for ix in task.indexes]
        self.leaves = ["" if w is None else ".".join([w[0], *w[1]]) for w in self.located]
        self.types = [None if w is None else w[2].type for w in self.located]
        self.indexable = []
        for ix, where in zip(task.indexes, self.located, strict=True):
            try:
                if where is not None:
                    ix.metadata_type(where[2].type)
            except TypeError:
                self.indexable.append(False)
            else:
                self.indexable.append(True)
        self.temporal = [calendar.is_temporal(task.column_types[ix.column]) for ix in task.indexes]


NOT_INDEXABLE = object()
"""Stands for the metadata of a file whose type of the column its index kind cannot index."""


def _converted(scalars: list, target: pa.DataType) -> tuple:
    """``(scalars as target, [indexes of the ones that did not convert exactly])``; None
    stays None, :data:`NOT_INDEXABLE` becomes None and is counted as not converted. Scalars
    of one type are converted together."""
    out = list(scalars)
    failed: list = []
    groups: dict = {}
    for k, s in enumerate(scalars):
        if s is NOT_INDEXABLE:
            out[k] = None
            failed.append(k)
        elif s is not None and not s.type.equals(target):
            groups.setdefault(s.type, []).append(k)
    for t, where in groups.items():
        converted, bad = conform(_metadata_array([scalars[k] for k in where], t), target)
        for j, k in enumerate(where):
            out[k] = converted[j]
            if bad[j]:
                failed.append(k)
    return out, failed


def _scan(reader: FileReader, task: CollectTask, scan: list, plan: _Plan, note, settled) -> dict:
    """Collect the indexes ``scan`` (positions in ``task.indexes``) from their columns, row
    groups in growing batches: only the top-level columns they need are read, and a column is
    no longer read once every index on it has said further row groups cannot change its result
    (a value list past its limit) and ``settled(column)`` (its calendar facts are known).
    ``note(column, leaf_path, values=part)`` sees each part of a DATE/TIMESTAMP column.
    Values are taken as the query engine reads them (``reader.as_read``: Parquet INT96 as
    microseconds).

    Returns:
        {i: the index's metadata scalar for the file, or the small path's entry}.
    """
    small: dict = {}
    if SMALL_FILES and isinstance(reader, ParquetReader):
        small = _scan_small(reader, task, scan, plan) or {}
        scan = [i for i in scan if i not in small]
        if not scan:
            return small
    collectors: dict = {}
    done: set = set()
    located = plan.located
    first, batch = 0, 1
    while first < reader.num_row_groups:
        tops = sorted(
            {located[i][0] for i in scan if i not in done or not settled(task.indexes[i].column)}
        )
        if not tops:
            break
        # row groups in batches of 1, 2, 4, ...: a file of many small row groups is not
        # read one call per row group, and an early stop still skips most of the rest
        groups = range(first, min(first + batch, reader.num_row_groups))
        table = reader.read_row_groups(groups, tops, use_threads=task.use_threads)
        first, batch = groups.stop, batch * 2
        noted: set = set()
        for i in scan:
            top, nested, _ = located[i]
            if top not in tops:
                continue
            values = table.column(top)
            if nested:
                values = pc.struct_field(values, nested)
            values = reader.as_read(plan.leaves[i], values)
            column = task.indexes[i].column
            if column not in noted and plan.temporal[i]:
                noted.add(column)
                note(column, plan.leaves[i], values=values)
            if i in done:
                continue
            if i not in collectors:
                collectors[i] = task.indexes[i].collector(values.type)
            if not collectors[i].add(values):
                done.add(i)
    return {
        **small,
        **{
            i: collectors[i].result()
            if i in collectors
            else task.indexes[i].collect(pa.chunked_array([], located[i][2].type))
            for i in scan
        },
    }


SMALL_FILES = os.environ.get("METAINDEX_SMALL_FILES", "1") != "0"
"""Whether :func:`_scan` takes the small-file fast path (:func:`_scan_small`) and footer
min/max bounds are kept as plain values (:func:`_plain_minmax`); the environment variable
``METAINDEX_SMALL_FILES=0`` turns both off (tests compare both ways)."""

SMALL_FILE_BYTES = 1 << 20
"""The largest file :func:`_scan_small` reads whole."""

# Arrow types the fast path gives its collectors, by the Parquet physical type they are
# stored as (the reader gives these types from those physical types with no conversion)
_SMALL_TYPES = {pa.int32(): 1, pa.int64(): 2, pa.string(): 6, pa.binary(): 6}
_SMALL_KINDS = (ValueListIndex, BloomFilterIndex)
_SMALL_CODECS = (0, 1, 6)  # UNCOMPRESSED, SNAPPY, ZSTD
_SMALL_ROWS = 1 << 20  # (the kernel's scratch is a row group's rows: a footer's claim)


def _small_leaf(reader: ParquetReader, path: str):
    """``(leaf index, physical type, max definition level)`` of a flat column, or None when
    the fast path does not take it; worked out once per footer schema."""
    key = ("small-leaf", path)
    if key not in reader._derived:
        found = None
        for column in reader.footer_schema.columns:
            if column.node.kind == "leaf" and ".".join(column.specs[0].path) == path:
                spec = column.specs[0]
                if spec.max_rep == 0 and spec.max_def <= 1:
                    found = (column.first_leaf, spec.physical_type, spec.max_def)
                break
        reader._derived[key] = found
    return reader._derived[key]


def _scan_small(reader: ParquetReader, task: CollectTask, scan: list, plan: _Plan):
    """:func:`_scan` of the indexes of ``scan`` it can take, for a small, plain Parquet file:
    the whole file read at once and each scanned chunk decoded by one kernel call
    (:func:`metaindex._native.smallfiles.flat_chunk`) into its non-null values, which the
    collectors' kernels take (``_SMALL_ACCUMULATORS``). It takes value lists and bloom
    filters of flat, non-temporal INT32 / INT64 / BYTE_ARRAY columns read as int32 / int64 /
    string / binary, in unencrypted files of at most :data:`SMALL_FILE_BYTES` with
    UNCOMPRESSED / SNAPPY / ZSTD chunks: ``{i: entry}`` of those (a :class:`_SmallList` /
    :class:`_SmallBloom`; the caller scans the rest the general way). None when it takes
    none, or a chunk is outside the kernel's shape or does not decode: the caller then reads
    them all the general way (which raises the typed error of a damaged file)."""
    if not reader.num_row_groups:
        return None
    leaves = []
    for i in scan:
        ix, where = task.indexes[i], plan.located[i]
        if type(ix) not in _SMALL_KINDS or where[1] or plan.temporal[i]:
            continue
        physical = _SMALL_TYPES.get(plan.types[i])
        leaf = _small_leaf(reader, plan.leaves[i])
        if physical is not None and leaf is not None and leaf[1] == physical:
            leaves.append((i, *leaf))
    if not leaves:
        return None
    blob = reader.small_file(SMALL_FILE_BYTES)
    if blob is None:
        return None
    end = len(blob) - 8
    found: dict = {}
    done: set = set()
    for rg in reader.footer.row_groups:
        chunks = rg.columns or []
        for i, leaf, physical, max_def in leaves:
            if i in done:
                continue
            if leaf >= len(chunks) or chunks[leaf].crypto_metadata is not None:
                return None
            meta = chunks[leaf].meta_data
            if meta is None or meta.type != physical or meta.codec not in _SMALL_CODECS:
                return None
            offsets = [
                o
                for o in (meta.dictionary_page_offset, meta.data_page_offset)
                if o is not None and o >= 4
            ]
            size = meta.total_compressed_size
            if not offsets or size is None or not 0 <= size <= end - min(offsets):
                return None
            start = min(offsets)
            if not 0 <= (rg.num_rows or 0) <= _SMALL_ROWS:
                return None
            decoded = flat_chunk(
                blob[start : start + size],
                rg.num_rows or 0,
                physical,
                max_def,
                meta.codec,
                decompress,
            )
            if decoded is None:
                return None
            acc = found.get(i)
            if acc is None:
                acc = found[i] = _SMALL_ACCUMULATORS[type(task.indexes[i])](
                    task.indexes[i], plan.types[i], physical
                )
            if not acc.add(*decoded):
                done.add(i)
    return {i: acc.result() for i, acc in found.items()}


# ------------------------------------------------------------------ the small path's entries
#
# The fast path keeps a file's value list / bloom filter as plain Python values (a _SmallList
# / _SmallBloom), not a pa.Scalar: run_task builds each index's column of the part from them
# at once (_small_column), and makes scalars of them (_entry_scalar) only where a column also
# holds entries of the general path or needs a type conversion. Both give what the index's
# collector gives for the same values (tests/engine/test_smallfiles.py compares the parts).


class _SmallList:
    """A file's value list: ``count`` distinct values of ``type`` (-1: over ``max_values``,
    the entry is null), first-seen order, ``data`` their bytes (fixed width, or back to back
    with ``ends``, their int32 end offsets as bytes: ``ValueSet.packed``); ``has_null``: a
    null was seen."""

    __slots__ = ("type", "data", "ends", "count", "has_null")

    def __init__(self, t: pa.DataType, data: bytes, ends, count: int, has_null: bool) -> None:
        self.type, self.data, self.ends, self.count, self.has_null = (
            t,
            data,
            ends,
            count,
            has_null,
        )


class _SmallBloom:
    """A file's bloom filter: ``bits`` (uint8 numpy, None: no non-null value) and
    ``has_null``."""

    __slots__ = ("bits", "has_null")

    def __init__(self, bits, has_null: bool) -> None:
        self.bits, self.has_null = bits, has_null


def _binary_offsets(ends: bytes) -> bytes:
    return b"\0\0\0\0" + ends


class _ListAccumulator:
    """:class:`ValueListIndex`'s collector over the kernel's chunks (``columns.Distinct``'s
    rules: a chunk's nulls noted, its values added to the kernel's set until it holds more
    than ``max_values``)."""

    __slots__ = ("type", "binary", "set", "has_null")

    def __init__(self, index: ValueListIndex, t: pa.DataType, physical: int) -> None:
        self.type = t
        self.binary = physical == 6
        self.set = ValueSet(0 if self.binary else 4 if physical == 1 else 8, 0, index.max_values)
        self.has_null = False

    def add(self, values: bytes, ends, count: int, has_null: bool) -> bool:
        self.has_null |= has_null
        if not count:
            return True
        if self.binary:
            return self.set.add_binary(None, _binary_offsets(ends), 4, values, 0, count)
        return self.set.add_fixed(None, values, 0, count)

    def result(self) -> _SmallList:
        if self.set.overflow:
            return _SmallList(self.type, b"", None, -1, False)
        data, ends = self.set.packed()
        return _SmallList(self.type, data, ends, len(self.set), self.has_null)


class _BloomAccumulator:
    """:class:`BloomFilterIndex`'s collect over the kernel's chunks: every non-null value
    hashed (in the index's scheme: scheme 2 hashes an INT32 value as an int64) into a filter
    sized for their distinct count (``bloom._filled``)."""

    __slots__ = ("index", "chunks", "n", "has_null", "width")

    def __init__(self, index: BloomFilterIndex, t: pa.DataType, physical: int) -> None:
        self.index = index
        self.chunks: list = []
        self.n = 0
        self.has_null = False
        self.width = 0 if physical == 6 else 4 if physical == 1 else 8

    def add(self, values, ends, count: int, has_null: bool) -> bool:
        self.has_null |= has_null
        if count:
            if self.width == 4 and self.index.hash_scheme == 2:
                values = np.frombuffer(values, "<i4", count).astype("<i8")
            elif ends is not None:
                ends = _binary_offsets(ends)
            self.chunks.append((values, ends, count))
            self.n += count
        return True

    def _width(self) -> int:
        return 8 if self.width == 4 and self.index.hash_scheme == 2 else self.width

    def _insert(self, bits: np.ndarray) -> int:
        fresh = 0
        width = self._width()
        for values, offsets, count in self.chunks:
            if width:
                fresh += insert_fixed_new(bits, None, values, 0, count, width, 0)
            else:
                fresh += insert_binary_new(bits, None, offsets, 4, values, 0, count)
        return fresh

    def _hashes(self) -> np.ndarray:
        out = np.empty(self.n, np.uint64)
        pos = 0
        width = self._width()
        for values, offsets, count in self.chunks:
            if width:
                pos += fixed_hashes(None, values, 0, count, width, 0, 0, out, pos)
            else:
                pos += binary_hashes(None, offsets, 4, values, 0, count, 0, out, pos)
        return out

    def result(self) -> _SmallBloom:
        if not self.n:
            return _SmallBloom(None, self.has_null)
        ix = self.index
        return _SmallBloom(
            bloom_filled(self.n, self._insert, self._hashes, ix.fpp, ix.max_bytes), self.has_null
        )


_SMALL_ACCUMULATORS: dict = {ValueListIndex: _ListAccumulator, BloomFilterIndex: _BloomAccumulator}
_SMALL_ENTRIES = (_SmallList, _SmallBloom, _SmallMinMax)


def _entry_scalar(entry, ix, file_type: pa.DataType):
    """A metadata entry as a scalar of the file's metadata type (small-path entries made
    scalars; others as they are)."""
    return _entry_scalars([entry], ix, [file_type])[0]


def _entry_scalars(entries: list, ix, file_types: list) -> list:
    """:func:`_entry_scalar` of each entry, the small path's entries of each file type made
    one column at once."""
    out = list(entries)
    groups: dict = {}
    for k, (e, t) in enumerate(zip(entries, file_types, strict=True)):
        if isinstance(e, _SMALL_ENTRIES):
            groups.setdefault(t, []).append(k)
    for t, where in groups.items():
        target = ix.metadata_type(t)
        column = _small_column([entries[k] for k in where], target)
        for j, k in enumerate(where):
            if column is not None:
                out[k] = column[j]
            else:  # (bitsets past 2 GiB together: one at a time)
                one = _small_column([entries[k]], target)
                assert one is not None  # (one entry of its own type: it fits)
                out[k] = one[0]
    return out


def _small_column(entries: list, target: pa.DataType) -> pa.Array | None:
    """The column of ``target`` of entries that are all the small path's (or None, a null
    entry) of ``target``'s value type, built at once; None for any other list (the caller
    takes the scalars' way)."""
    kinds = set(map(type, entries))
    kinds.discard(type(None))
    if kinds == {_SmallBloom}:
        return _bloom_column(entries, target)
    if kinds == {_SmallMinMax}:
        bound = target.field("min").type
        if all(e is None or e.type is bound or e.type.equals(bound) for e in entries):
            return _minmax_column(entries, target, bound)
        return None
    if kinds == {_SmallList}:
        value_type = target.field("values").type.value_type
        if all(e is None or e.type is value_type or e.type.equals(value_type) for e in entries):
            return _list_column(entries, target, value_type)
    return None


def _mask(valid: list) -> pa.Array | None:
    """A struct's / list's null mask (True: null) of per-entry validity, None when all are."""
    return None if all(valid) else pa.array([not v for v in valid], pa.bool_())


def _bloom_column(entries: list, target: pa.DataType) -> pa.Array | None:
    n = len(entries)
    valid = [e is not None for e in entries]
    bitsets = [e.bits if ok else None for e, ok in zip(entries, valid, strict=True)]
    sized = [b for b in bitsets if b is not None]
    has_bits = [b is not None for b in bitsets]
    sizes = np.zeros(n, np.int64)
    sizes[np.array(has_bits, np.bool_)] = [len(b) for b in sized]
    ends = np.cumsum(sizes)
    if n and ends[-1] >= 2**31:
        return None  # (the scalars' way says what it says of that)
    offsets = np.zeros(n + 1, np.int32)
    offsets[1:] = ends
    bitset = pa.Array.from_buffers(
        pa.binary(),
        n,
        [
            None if len(sized) == n else pa.py_buffer(np.packbits(has_bits, bitorder="little")),
            pa.py_buffer(offsets),
            pa.py_buffer(b"".join(sized)),
        ],
        n - len(sized),
    )
    has_null = pa.array(
        [e.has_null if ok else None for e, ok in zip(entries, valid, strict=True)], pa.bool_()
    )
    return pa.StructArray.from_arrays([bitset, has_null], fields=list(target), mask=_mask(valid))


def _minmax_column(entries: list, target: pa.DataType, bound: pa.DataType) -> pa.Array:
    valid = [e is not None for e in entries]
    fields = [
        pa.array([e.min if ok else None for e, ok in zip(entries, valid, strict=True)], bound),
        pa.array([e.max if ok else None for e, ok in zip(entries, valid, strict=True)], bound),
        pa.array([e.nulls if ok else None for e, ok in zip(entries, valid, strict=True)], _I64),
        pa.array([e.nans if ok else None for e, ok in zip(entries, valid, strict=True)], _I64),
    ]
    return pa.StructArray.from_arrays(fields, fields=list(target), mask=_mask(valid))


_I64 = pa.int64()


def _list_column(entries: list, target: pa.DataType, value_type: pa.DataType) -> pa.Array | None:
    n = len(entries)
    valid = [e is not None and e.count >= 0 for e in entries]
    chosen = entries if all(valid) else [e for e, ok in zip(entries, valid, strict=True) if ok]
    counts = np.array([e.count for e in chosen], np.int64)
    list_offsets = np.zeros(n + 1, np.int64)
    if len(chosen) == n:
        np.cumsum(counts, out=list_offsets[1:])
    else:
        every = np.zeros(n, np.int64)
        every[np.array(valid, np.bool_)] = counts
        np.cumsum(every, out=list_offsets[1:])
    total = int(list_offsets[-1])
    data = b"".join([e.data for e in chosen])
    if _SMALL_TYPES.get(value_type) == 6:
        if len(data) >= 2**31:
            return None
        sizes = np.array([len(e.data) for e in chosen], np.int64)
        value_offsets = np.zeros(total + 1, np.int32)
        value_offsets[1:] = np.frombuffer(b"".join([e.ends for e in chosen]), "<i4") + np.repeat(
            np.cumsum(sizes) - sizes, counts
        )
        buffers = [None, pa.py_buffer(value_offsets), pa.py_buffer(data)]
    else:
        buffers = [None, pa.py_buffer(data)]
    values = pa.Array.from_buffers(value_type, total, buffers)
    if len(counts) and int(counts.max()) > 1:  # a file with more than one value: each sorted
        parents = np.repeat(np.arange(len(chosen), dtype=np.int64), counts)
        order = pc.sort_indices(
            pa.table({"p": parents, "v": values}),
            sort_keys=[("p", "ascending"), ("v", "ascending")],
        )
        values = values.take(order)
    mask = _mask(valid)
    lists = pa.ListArray.from_arrays(
        pa.array(list_offsets.astype(np.int32)), values, type=target.field("values").type, mask=mask
    )
    has_null = pa.array(
        [e.has_null if ok else None for e, ok in zip(entries, valid, strict=True)], pa.bool_()
    )
    return pa.StructArray.from_arrays([lists, has_null], fields=list(target), mask=mask)


def _task_types(task: CollectTask, collected: list) -> dict:
    """{indexed column: the type the task records it in}: the table's type joined with the
    type of every file of the task (``metaindex.drift.join_fields``, the join the table
    schema makes of them afterwards), so that a file of a wider type is recorded exactly."""
    out = {}
    for i, ix in enumerate(task.indexes):
        if ix.column in out:
            continue
        joined = pa.field("c", task.column_types[ix.column])
        seen = [joined.type]
        for values in collected:
            t = values[i][1]
            if not any(t is s or t.equals(s) for s in seen):  # each distinct type once, in order
                seen.append(t)
                joined = join_fields(joined, pa.field("c", t))
        out[ix.column] = joined.type
    return out


def run_task(task: CollectTask) -> TaskResult:
    """Collect every file of the task and write their rows as one part file."""
    result = TaskResult()
    rows: list = []
    infos: list = []
    plans: list = []
    for f in task.files:
        try:
            path = f"{task.root}/{f.path}"
            with task.data_format.open(
                path, task.filesystem, decryption_properties=task.decryption_properties
            ) as reader:
                ancient = {"datetime": False, "int96": False}
                values = _collect_own(reader, task, result, ancient, plans)
                num_rows = reader.num_rows
                info = (
                    getattr(f, "etag", None),
                    *reader.fingerprint(),
                    *reader.rebase_modes(),
                    ancient["datetime"],
                    ancient["int96"],
                )
            if not task.table_format.still_listed(task.filesystem, path, f):
                result.failed[f.path] = "changed while it was being indexed"
                continue
        except (MetaIndexError, OSError, pa.ArrowException) as exc:
            result.failed[f.path] = f"{type(exc).__name__}: {exc}"
            log.warning("not indexing %s: %s", f.path, result.failed[f.path])
            continue
        rows.append((f, num_rows, values))
        infos.append(info)
    if not rows:
        return result
    columns = {
        OBJ_NAME: pa.array([f.path for f, _, _ in rows], pa.string()),
        OBJ_SIZE: pa.array([f.size for f, _, _ in rows], pa.int64()),
        OBJ_MTIME: pa.array([f.mtime for f, _, _ in rows], pa.int64()),
        OBJ_ROWS: pa.array([n for _, n, _ in rows], pa.int64()),
    }
    info_columns = (
        OBJ_ETAG,
        OBJ_FOOTER_LEN,
        OBJ_FOOTER_CRC,
        OBJ_DATETIME_REBASE,
        OBJ_INT96_REBASE,
        OBJ_ANCIENT_DATETIME,
        OBJ_ANCIENT_INT96,
    )
    info_types = (
        pa.string(),
        pa.int64(),
        pa.int64(),
        pa.string(),
        pa.string(),
        pa.bool_(),
        pa.bool_(),
    )
    for k, (name, kind) in enumerate(zip(info_columns, info_types, strict=True)):
        columns[name] = pa.array([i[k] for i in infos], kind)
    for col in task.partition_columns:
        columns[virtual_column_name(col)] = pa.array(
            [dict(f.partition).get(col) for f, _, _ in rows], pa.string()
        )
    types = _task_types(task, [v for _, _, v in rows])
    unconverted: list = [{} for _ in rows]
    for i, (d, ix) in enumerate(zip(task.index_defs, task.indexes, strict=True)):
        target = ix.metadata_type(types[ix.column])
        entries = [v[i][0] for _, _, v in rows]
        column = _small_column(entries, target)
        if column is None:
            entries = _entry_scalars(entries, ix, [v[i][1] for _, _, v in rows])
            scalars, failed = _converted(entries, target)
            for k in failed:
                scalars[k] = None
                unconverted[k][IndexDef.of(d).storage_name] = str(rows[k][2][i][1])
            column = _metadata_array(scalars, target)
        columns[IndexDef.of(d).storage_name] = column
    columns[OBJ_TYPE_DRIFT] = pa.array(
        [json.dumps(u, sort_keys=True) if u else None for u in unconverted], pa.string()
    )
    table = pa.table(columns)
    result.part = task.store.write_part(table, task.index_defs, encryption=task.encryption)
    result.receipt = task.store.take_receipt(result.part)
    result.indexed = [f.path for f, _, _ in rows]
    return result


def _metadata_array(scalars: list, t: pa.DataType) -> pa.Array:
    """``pa.array(scalars, t)`` (None: null), binary values (bloom bitsets, also as a field
    of a struct) concatenated from zero-copy views of the scalars' buffers into one array of
    the exact size, in Arrow's memory pool (pyarrow's builder grows by doubling, copying a
    task's bitsets, 256 KiB a file, several times)."""
    if pa.types.is_struct(t) and any(f.type == pa.binary() for f in t):
        valid = [s is not None and s.is_valid for s in scalars]
        children = [
            _metadata_array(
                [s[f.name] if ok else None for s, ok in zip(scalars, valid, strict=True)], f.type
            )
            for f in t
        ]
        mask = None if all(valid) else pa.array([not ok for ok in valid], pa.bool_())
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if t != pa.binary() or not scalars:
        # (null list scalars: pyarrow's pa.array takes len() of them and fails)
        return pa.array([None if s is not None and not s.is_valid else s for s in scalars], t)
    null = pa.nulls(1, t)
    pieces = []
    for s in scalars:
        if s is None or not s.is_valid:
            pieces.append(null)
        else:
            value = s.as_buffer()
            ends = pa.py_buffer(np.array([0, value.size], np.int32))
            pieces.append(pa.Array.from_buffers(t, 1, [None, ends, value]))
    return pa.concat_arrays(pieces)
