"""Pruning: which files of a table might hold a row matching a predicate — the one decision path.

Every caller (``metaindex.MetaIndex.prune``, the CLI, the Spark hook, the Spark data source)
decides through :meth:`Pruner.decide`; none of them binds, drops or evaluates predicates itself.
The decision's parts live beside it, and every name below stays importable from here:

* :mod:`metaindex.engine.session`: :class:`SessionSettings` (time zone, case rule, rebase
  read modes).
* :mod:`metaindex.engine.conjuncts`: a query as top-level AND-ed conjuncts
  (:class:`Conjunct`, :func:`to_conjuncts`) and the one place a conjunct is bound or dropped,
  with its typed reason (:class:`DropReason`, :class:`ConjunctOutcome`).
* :mod:`metaindex.engine.context`: the pruning view of one snapshot (:class:`PruneContext`,
  :func:`prune_context`): schema, indexes, part summaries, the file list read on demand.
* :mod:`metaindex.engine.candidates`: the files a caller asks about (:func:`candidates`,
  :func:`relativize`).
* here: the decision (:class:`Pruner`) and its answer (:class:`PruneResult`,
  :class:`PruneStats`, :func:`read_every_file`).

The Pruner binds the conjuncts once (dropping a top-level conjunct only widens the predicate,
so it can never lose a row; nothing inside a conjunct is ever dropped). The AND of the bound
conjuncts (NOT-free) is evaluated in two steps (``metaindex.index.evaluate`` both times), with
per-index counts: first over the snapshot's *part summaries* (one metadata row per part that
keeps whenever some row of the part would: ``Snapshot.summary_table``), then over the files of
the parts it keeps, read with only the columns the predicate uses (names, sizes, the calendar
columns for DATE/TIMESTAMP conjuncts, the indexes on its columns). The files of the parts it
rules out are skipped without being read.

Then each candidate file (the table's current listing, the files the caller gives, or by
default every file of the snapshot) is matched to its entry in the file list: a file is
*indexed* only when the snapshot has an entry with its path, size and mtime. Files that are
not indexed (new, rewritten in place, outside the table) are always kept; indexed files are
kept when the evaluation says they might match. One exception narrows what the index may
decide: files whose stored DATE/TIMESTAMP values Spark would rebase (or refuse) under the
session's read modes are decided by the conjuncts on other columns only
(``metaindex.engine.calendar.guard``).

A damaged store is not used at all: :func:`prune_context` refuses a snapshot whose store's log
is damaged (a gap, an entry or checkpoint failing its checksum) with
:class:`~metaindex.errors.StoreDamageError`, as reading a damaged part raises
``IntegrityError`` / ``DecodeError``; every caller then reads every file, with a warning and
the reason (:func:`read_every_file` for callers that answer with a :class:`PruneResult`).

Partition conjuncts (the hook's): Spark applies partition filters itself, exactly, under its
own reading of the directory values. They never decide what is kept; they only mark which
snapshot files Spark listed (:attr:`PruneResult.listed_mask`), so a reply naming skipped files
can leave out the ones Spark never listed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from metaindex.arrays import numeric_array, to_numpy
from metaindex.engine import calendar
from metaindex.engine.candidates import Candidates, candidates, relativize
from metaindex.engine.conjuncts import (
    Conjunct,
    ConjunctOutcome,
    DropReason,
    bind_conjuncts,
    indexes_of,
    to_conjuncts,
    unused_summary,
)
from metaindex.engine.context import NameLookup, PruneContext, Rows, prune_context
from metaindex.engine.session import SessionSettings
from metaindex.store import OBJ_NAME, OBJ_SIZE

__all__ = [
    "SessionSettings",
    "DropReason",
    "Conjunct",
    "ConjunctOutcome",
    "unused_summary",
    "PruneStats",
    "PruneResult",
    "PruneContext",
    "Pruner",
    "Candidates",
    "candidates",
    "relativize",
    "prune_context",
    "to_conjuncts",
    "NameLookup",
    "read_every_file",
    "DamagedIndexWarning",
]


class DamagedIndexWarning(UserWarning):
    """A query read every file because the index is damaged (the message says how)."""


# ------------------------------------------------------------------------------ stats, result


@dataclass(frozen=True)
class PruneStats:
    """Counts of one decision.

    Attributes:
        version: the index version used.
        total_files / kept_files / skipped_files: over the candidate files.
        unindexed_files: candidates without a current entry (new, rewritten since the last
            refresh, or outside the table): always kept.
        must_keep_files: indexed candidates the evaluation would skip but that were kept
            because their stored dates/timestamps cannot be trusted under the session's rebase
            read modes (``metaindex.engine.calendar``).
        total_bytes / kept_bytes / skipped_bytes: sizes of the candidate files.
        skipped_by_index: per index ("minmax(temp)", "bloom(city)", "partition(day)"), how
            many of the snapshot's entries that index alone proves cannot match, as far as
            the decision looked: a part that index alone rules out on its summary counts all
            of its live entries; in the parts the decision read, each entry the index alone
            rules out counts once; entries of parts skipped by several indexes together (none
            alone) are not read and count for none. A lower bound of the per-file count.
        conjuncts: a :class:`ConjunctOutcome` per top-level conjunct, in order.
        seconds: wall time of the decision (binding, evaluation and matching).
        damage: why every file was read (the index is damaged), None when it was used.
    """

    version: int
    total_files: int
    kept_files: int
    skipped_files: int
    unindexed_files: int
    total_bytes: int
    kept_bytes: int
    skipped_bytes: int
    skipped_by_index: dict = field(default_factory=dict)
    seconds: float = 0.0
    conjuncts: tuple = ()
    must_keep_files: int = 0
    damage: str | None = None

    @property
    def dropped(self) -> tuple:
        """The conjuncts not used, as :class:`ConjunctOutcome` s."""
        return tuple(c for c in self.conjuncts if not c.used)


class PruneResult:
    """The outcome of :meth:`Pruner.decide` (and :meth:`metaindex.MetaIndex.prune`).

    Attributes:
        kept: paths of the files that might hold a matching row (read these), a list of str.
        kept_paths: the same as a ``pyarrow.ChunkedArray`` of strings (no Python object per
            file: the form for millions of files).
        skipped: paths of the files that cannot.
        kept_mask: the verdict per candidate (numpy bool).
        listed_mask: per candidate, False where the partition conjuncts rule the file out
            (Spark does not list it); None without partition conjuncts.
        stats: :class:`PruneStats`.

    Paths are the caller's strings when files were given, else the table's display prefix
    (the local root, or the table URI) joined with the file's relative path, or the snapshot's
    object names when no candidates were given.

    Everything but ``stats`` is materialised on first use. Without candidates the candidates
    are every object of the snapshot, in :meth:`metaindex.store.Snapshot.file_table` order:
    ``kept`` comes from the parts the decision read, while ``skipped``, ``kept_mask`` and
    ``listed_mask`` need every object's name, so their first use reads the snapshot's file
    list (``Snapshot.file_table``, once per snapshot).
    """

    def __init__(self, paths, kept_mask, stats: PruneStats, listed_mask=None, *, kept=None):
        # paths, kept_mask, listed_mask: values, or zero-argument callables giving them;
        # kept: the kept paths (pa.Array) when known without the mask
        self._paths = paths
        self._kept_mask = kept_mask
        self._listed_mask = listed_mask
        self._kept = kept
        self.stats = stats

    @staticmethod
    def _value(thunk):
        return thunk() if callable(thunk) else thunk

    @cached_property
    def paths(self) -> pa.Array:
        """Every candidate's path (what ``kept_mask`` is aligned with)."""
        return self._value(self._paths)

    @cached_property
    def kept_mask(self) -> np.ndarray:
        return self._value(self._kept_mask)

    @cached_property
    def listed_mask(self) -> np.ndarray | None:
        return self._value(self._listed_mask)

    @cached_property
    def kept_paths(self) -> pa.ChunkedArray:
        kept = (
            self._kept
            if self._kept is not None
            else self.paths.filter(numeric_array(self.kept_mask))
        )
        return kept if isinstance(kept, pa.ChunkedArray) else pa.chunked_array([kept], pa.string())

    @cached_property
    def kept(self) -> list:
        return self.kept_paths.to_pylist()

    @cached_property
    def skipped(self) -> list:
        return self.paths.filter(numeric_array(~self.kept_mask)).to_pylist()

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"PruneResult(kept={s.kept_files}, skipped={s.skipped_files} of "
            f"{s.total_files} files, version={s.version})"
        )


def read_every_file(files: Candidates, reason: str, version: int = -1) -> PruneResult:
    """The answer when the index cannot be used: every candidate kept, ``stats.damage`` the
    reason."""
    n = len(files.sizes)
    total = int(np.asarray(files.sizes, np.int64).sum())
    stats = PruneStats(version, n, n, 0, n, total, total, 0, damage=reason)
    return PruneResult(files.paths, np.ones(n, np.bool_), stats)


# ------------------------------------------------------------------------------ the Pruner


class Pruner:
    """Decides which candidate files might hold a matching row (see the module docstring).

    Holds no per-query state: one Pruner per snapshot serves concurrent queries.
    """

    def __init__(self, context: PruneContext):
        if not isinstance(context, PruneContext):
            raise TypeError(f"a Pruner needs a PruneContext, not {type(context).__name__}")
        self.context = context

    def decide(
        self,
        conjuncts,
        candidates: Candidates | None = None,
        partition_conjuncts=(),
        session: SessionSettings | None = None,
    ) -> PruneResult:
        """Decide every candidate file.

        Args:
            conjuncts: the query's top-level conjuncts (see :func:`to_conjuncts`).
            candidates: the files to decide (:func:`candidates`); None: every file of the
                snapshot, by object name.
            partition_conjuncts: conjuncts Spark applies itself to partition directories; they
                only mark listed files (:attr:`PruneResult.listed_mask`).
            session: :class:`SessionSettings` (default: UTC, case-insensitive).

        Raises:
            ExpressionError: a SQL conjunct that does not parse.
            TypeError: conjuncts of another kind.
        """
        session = SessionSettings() if session is None else session
        if not isinstance(session, SessionSettings):
            raise TypeError(f"session is a SessionSettings, not {type(session).__name__}")
        started = time.perf_counter()
        ctx = self.context
        tree, outcomes = bind_conjuncts(
            ctx, to_conjuncts(conjuncts, session.time_zone), session, False
        )
        part_tree, part_outcomes = None, []
        if partition_conjuncts:
            part_tree, part_outcomes = bind_conjuncts(
                ctx, to_conjuncts(partition_conjuncts, session.time_zone), session, True
            )
        used = indexes_of(tree, ctx.indexes)
        parts, alone = self._parts(tree, used, session)
        columns = [OBJ_SIZE] if candidates is None else []
        if calendar.split_temporal(tree)[0]:
            columns += calendar.CALENDAR_COLUMNS
        rows = (
            ctx.read_rows(np.flatnonzero(parts), used, columns)
            if used or candidates is None
            else None
        )
        row_kept, rescued_rows, by_index = self._rows(tree, used, rows, alone, session)
        outcomes = tuple(outcomes + part_outcomes)
        if candidates is None:
            assert rows is not None, "read above whenever candidates is None"
            return self._every_object(
                rows, row_kept, rescued_rows, by_index, part_tree, outcomes, started
            )
        return self._candidates(
            candidates, parts, rows, row_kept, rescued_rows, by_index, part_tree, outcomes, started
        )

    def _parts(self, tree, used: list, session: SessionSettings) -> tuple:
        """(parts the decision reads: bool per part, {index key: parts that index alone
        does not rule out}), from the part summaries with the calendar guard."""
        from metaindex.index import evaluate

        ctx = self.context
        n = len(ctx.part_paths)
        meta = {ix.key: ctx.part_metadata[ix.key] for ix in used}
        kept = evaluate(tree, used, meta, n, per_index=False).kept
        kept = calendar.guard(kept, tree, ctx.summary, session, used, meta)
        alone = {
            ix.key: evaluate(tree, [ix], {ix.key: meta[ix.key]}, n, per_index=False).kept
            for ix in used
        }
        return kept, alone

    def _rows(
        self, tree, used: list, rows: Rows | None, alone: dict, session: SessionSettings
    ) -> tuple:
        """(verdict per row read, rows kept only by the calendar guard or None, files each
        index alone rules out: {label: count} over every index)."""
        from metaindex.index import evaluate

        ctx = self.context
        by_index = {ctx.labels[ix.key]: 0 for ix in ctx.indexes}
        if rows is None:
            return None, None, by_index
        n = rows.table.num_rows
        ev = evaluate(tree, used, rows.metadata, n, per_index=True)
        kept = calendar.guard(ev.kept, tree, rows.table, session, used, rows.metadata)
        rescued = None if kept is ev.kept else kept & ~ev.kept
        for ix in used:
            out = ~alone[ix.key]
            count = int(ctx.part_objects[out].sum())  # parts ruled out count whole
            ruled = out[rows.part_of_row]  # read anyway (calendar guard): counted already
            if ruled.any():
                mine = evaluate(
                    tree, [ix], {ix.key: rows.metadata[ix.key]}, n, per_index=False
                ).kept
                count += int(np.count_nonzero(~mine & ~ruled))
            else:
                count += ev.skipped_by_index[ix.key]
            by_index[ctx.labels[ix.key]] = count
        return kept, rescued, by_index

    def _listed(self, part_tree, names: pa.Array) -> np.ndarray:
        """Per name, whether the partition conjuncts let Spark list it (they refer to
        partition columns, whose value lists come from the names; another index they use
        reads its metadata from every part)."""
        from metaindex.index import evaluate

        ctx = self.context
        used = indexes_of(part_tree, ctx.indexes)
        if all(ix.key in ctx.partition_indexes for ix in used):
            meta = ctx.metadata_of(used, pa.table({OBJ_NAME: names}))
            return evaluate(part_tree, used, meta, len(names), per_index=False).kept
        every = ctx.metadata  # xskipper-style value lists on a partition column: rare
        found = ctx.rows_of(names)
        listed = evaluate(
            part_tree,
            used,
            {ix.key: every[ix.key] for ix in used},
            ctx.object_count,
            per_index=False,
        ).kept
        return (found < 0) | listed[np.maximum(found, 0)]

    def _every_object(
        self, rows: Rows, row_kept, rescued_rows, by_index, part_tree, outcomes, started
    ) -> PruneResult:
        ctx = self.context
        kept_names = rows.table.column(OBJ_NAME).filter(numeric_array(row_kept))
        sizes = np.asarray(to_numpy(rows.table.column(OBJ_SIZE)), np.int64)
        total_bytes = int(ctx.part_bytes.sum())
        kept_bytes = int(sizes[row_kept].sum())
        kept_files = int(np.count_nonzero(row_kept))
        stats = PruneStats(
            ctx.version,
            ctx.object_count,
            kept_files,
            ctx.object_count - kept_files,
            0,
            total_bytes,
            kept_bytes,
            total_bytes - kept_bytes,
            by_index,
            time.perf_counter() - started,
            outcomes,
            0 if rescued_rows is None else int(np.count_nonzero(rescued_rows)),
        )

        def kept_mask():
            mask = np.zeros(ctx.object_count, np.bool_)
            mask[ctx.file_rows(rows)] = row_kept
            return mask

        listed = None if part_tree is None else (lambda: self._listed(part_tree, ctx.names))
        return PruneResult(lambda: ctx.names, kept_mask, stats, listed, kept=kept_names)

    def _candidates(
        self,
        files: Candidates,
        parts,
        rows: Rows | None,
        row_kept,
        rescued_rows,
        by_index,
        part_tree,
        outcomes,
        started,
    ) -> PruneResult:
        ctx = self.context
        sizes = files.sizes
        rescued = None
        if ctx.object_count:
            found = ctx.rows_of(files.names)
            at = np.maximum(found, 0)
            indexed = (found >= 0) & (ctx.sizes[at] == sizes) & (ctx.mtimes[at] == files.mtimes)
            file_kept = parts[ctx.part_index]
            if rows is not None:
                positions = ctx.file_rows(rows)
                file_kept[positions] = row_kept
                if rescued_rows is not None:
                    file_rescued = np.zeros(ctx.object_count, np.bool_)
                    file_rescued[positions] = rescued_rows
                    rescued = indexed & file_rescued[at]
            keep = ~indexed | file_kept[at]
        else:
            indexed = np.zeros(len(sizes), np.bool_)
            keep = np.ones(len(sizes), np.bool_)
        listed = None
        if part_tree is not None:
            listed = ~indexed
            if indexed.any():
                where = np.flatnonzero(indexed)
                listed[where] = self._listed(part_tree, files.names.take(numeric_array(where)))
        total_bytes = int(sizes.sum())
        kept_bytes = int(sizes[keep].sum())
        kept_files = int(np.count_nonzero(keep))
        stats = PruneStats(
            ctx.version,
            len(keep),
            kept_files,
            len(keep) - kept_files,
            int(len(keep) - np.count_nonzero(indexed)),
            total_bytes,
            kept_bytes,
            total_bytes - kept_bytes,
            by_index,
            time.perf_counter() - started,
            outcomes,
            0 if rescued is None else int(np.count_nonzero(rescued)),
        )
        return PruneResult(files.paths, keep, stats, listed)
