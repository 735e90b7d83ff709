"""xskipper's ``Xskipper`` class over :mod:`metaindex.spark`.

Class-level calls take the session first, as in xskipper (``Xskipper.enable(spark)``); called
on an instance they may leave it out (``xskipper.setConf(conf)``) and use the instance's.
"""

from __future__ import annotations

import threading
from typing import Any

from metaindex.errors import MetaIndexError
from metaindex.xskipper import conf as conf_mod
from metaindex.xskipper import frames
from metaindex.xskipper import registration as reg
from metaindex.xskipper.indexbuilder import IndexBuilder

__all__ = ["Xskipper", "XskipperException"]

XskipperException = MetaIndexError
"""xskipper's exception: every error metaindex raises on purpose is a ``MetaIndexError``."""

_lock = threading.Lock()
_active: set = set()
"""Table URIs opened through an Xskipper instance since the last ``reset`` (xskipper's active
metadata handles): with any, ``getLatestQueryAggregatedStats`` reports SUCCESS rows."""


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it (local paths or URIs)."""
    import os

    def norm(p):
        p = p[len("file://") :] if p.startswith("file://") else p
        return (p if "://" in p else os.path.abspath(p)).rstrip("/")

    return (norm(path) + "/").startswith(norm(directory) + "/")


def _is_session(value) -> bool:
    return type(value).__name__ == "SparkSession" and hasattr(value, "conf")


class _SessionMethod:
    """A class-level method ``fn(sparkSession, ...)``; on an instance the session may be left
    out (the instance's is used)."""

    def __init__(self, fn):
        self._fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self._fn

        def bound(*args, **kwargs):
            if args and _is_session(args[0]):
                return self._fn(*args, **kwargs)
            return self._fn(obj.spark, *args, **kwargs)

        bound.__doc__ = self._fn.__doc__
        return bound


class Xskipper:
    """The index of one dataset (a path or URI) or catalog table (``db.table``), with
    xskipper's API (see README "Coming from xskipper?" for what each call maps to).

    Args:
        sparkSession: the SparkSession.
        uri: a path or URI, or a catalog table name.
        metadataStoreManagerClassName: None (the active manager: metaindex's Parquet store
            unless ``Registration.setActiveMetadataStoreManager`` chose a Python one), one of
            xskipper's Parquet manager names, or a Python manager callable.

    Raises:
        UnsupportedFeatureError: an unknown metadata-store manager name.
        TableNotFoundError: no such table or directory (when first used).
    """

    def __init__(self, sparkSession, uri, metadataStoreManagerClassName=None):
        self.spark = sparkSession
        self.uri = uri
        self._manager = reg.manager_for(metadataStoreManagerClassName)
        self._params: dict = {}
        self._opened = None  # (key, metaindex.spark.MetaIndex)
        conf_mod.apply_to_session(sparkSession)

    def __repr__(self) -> str:
        return f"Xskipper({self.uri!r})"

    # ------------------------------------------------------------------ plumbing

    def _conf(self) -> dict:
        return conf_mod.effective(self._params)

    def _index(self, reader=None):
        """The ``metaindex.spark.MetaIndex`` for the current conf (re-opened when it
        changes), with the format, options and schema of ``reader`` (a ``DataFrameReader``)
        when one is given: those define an index that is built, and must be the ones an
        existing index was built with.

        Raises:
            MetaIndexError: an indexed dataset that ``reader`` reads otherwise.
            UnsupportedFeatureError: reader options an index cannot record.
            UnsupportedFormatError: a format metaindex does not index.
        """
        from metaindex.spark import MetaIndex
        from metaindex.spark import catalog as catalog_mod
        from metaindex.spark import config as config_mod
        from metaindex.spark.reading import reader_settings

        fmt, options = (None, None) if reader is None else reader_settings(reader)

        conf = self._conf()
        resolved = catalog_mod.resolve_table(self.spark, self.uri)
        if self._manager is None:
            store = conf_mod.resolve_store(self.spark, resolved, conf)
        else:
            from metaindex.store import normalize_table_uri

            store = self._manager(self.spark, normalize_table_uri(resolved.location), dict(conf))
        mapped = conf_mod.metaindex_conf(conf)
        if mapped.get("metaindex.encryption.footer.key") and not config_mod.conf_entries(
            self.spark
        ).get("metaindex.encryption.kms"):
            raise MetaIndexError(
                f"{conf_mod.FOOTER_KEY} is set but the session has no KMS: set "
                "metaindex.encryption.kms ('inmemory:keys.json', 'file:PATH' or "
                "'module:Class', see README 'Encryption and key management'); parquet-java's "
                "Hadoop KMS settings (parquet.encryption.kms.client.class) are not used"
            )
        key = (
            store if isinstance(store, str) or store is None else id(store),
            tuple(sorted(mapped.items())),
            tuple(sorted(config_mod.conf_entries(self.spark).items())),
            fmt,
            None if options is None else tuple(sorted(options.items())),
        )
        if self._opened is None or self._opened[0] != key:
            index = MetaIndex(
                self.spark, self.uri, store=store, conf=mapped, format=fmt, options=options
            )
            self._opened = (key, index)
        return self._opened[1]

    @staticmethod
    def _touched(index) -> None:
        """Remember ``index``'s table as active (xskipper: a metadata handle was made)."""
        with _lock:
            _active.add(index.table_uri)

    def _display_name(self, index) -> str:
        return index.table_name or index.table_uri

    # ------------------------------------------------------------------ the dataset's index

    def indexBuilder(self) -> IndexBuilder:
        """A builder: add indexes, then ``build(reader)``."""
        return IndexBuilder(self)

    def _xskipper_store(self, index) -> str | None:
        """The store xskipper wrote for the dataset, where xskipper would find it (None: none
        there)."""
        from metaindex.spark import catalog as catalog_mod

        resolved = catalog_mod.resolve_table(self.spark, self.uri)
        return conf_mod.xskipper_store(self.spark, resolved, self._conf(), index.table_uri)

    def isIndexed(self) -> bool:
        """Whether the dataset has an index: metaindex's, or a store xskipper wrote (which
        ``refreshIndex`` upgrades)."""
        index = self._index()
        self._touched(index)
        return index.is_indexed() or self._xskipper_store(index) is not None

    def dropIndex(self) -> None:
        """Delete the index (nothing to do when there is none)."""
        index = self._index()
        if index.is_indexed():
            index.drop()

    def refreshIndex(self, dataFrameReader=None):
        """Index new and modified objects, forget deleted ones; a DataFrame ``status,
        new_entries_added, old_entries_removed``. ``dataFrameReader`` (as in xskipper:
        ``spark.read.format("csv").option("header", "true")``), when given, must read the
        dataset as the index was built: the same format, schema and value-changing options
        (new files are read with the recorded ones either way).

        A dataset whose only index is a store xskipper wrote (format versions 0-4) is
        upgraded, as xskipper upgrades its older versions on refresh: its entries for
        unchanged files are carried over without reading their data, each index keeps its
        kind and key label, and the metaindex index is written where ``setConf`` points
        (the xskipper store is left as it was). ``new_entries_added`` counts both.

        Raises:
            MetaIndexError: the dataset has no index, or ``dataFrameReader`` reads it
                otherwise than the index was built.
            UnsupportedFeatureError: reader options an index cannot record.
            UnsupportedVersionError: an xskipper store newer than version 4.
        """
        index = self._index(dataFrameReader)
        if not index.is_indexed():
            found = self._xskipper_store(index)
            if found is None:
                raise MetaIndexError(f"Index Not Found: {self.uri}")
            if _inside(index.store_path, found):
                raise MetaIndexError(
                    f"{self.uri}: the upgraded index would be written inside xskipper's store "
                    f"{found} ({conf_mod.MD_LOCATION_TYPE}={conf_mod.EXPLICIT}); point "
                    f"{conf_mod.MD_LOCATION} elsewhere for the upgrade (e.g. a base path with "
                    f"{conf_mod.EXPLICIT_BASE_PATH})"
                )
            result = index.upgrade(found)
            self._touched(index)
            return frames.refresh_result(self.spark, result)
        result = index.refresh()
        self._touched(index)
        return frames.refresh_result(self.spark, result)

    def describeIndex(self, dataFrameReader=None):
        """The index status and definitions (xskipper's three-column layout);
        ``dataFrameReader`` is checked as for ``refreshIndex``.

        Raises:
            MetaIndexError: the dataset has no index, or ``dataFrameReader`` reads it
                otherwise than the index was built.
        """
        index = self._index(dataFrameReader)
        if not index.is_indexed():
            raise MetaIndexError(f"Index Not Found: {self.uri}")
        return frames.describe_frame(
            self.spark, self._display_name(index), index.describe().to_dict()
        )

    def getLatestQueryStats(self):
        """Skipping stats of this dataset, summed over its scans in the instance's session
        since the last ``clearStats`` (xskipper accumulates the same way)."""
        from metaindex.spark import stats

        uri = self._index().table_uri
        rows = [r for r in stats.aggregated_stats(self.spark).tables if r["table"] == uri]
        return frames.stats_frame(self.spark, rows)

    def setParams(self, params) -> None:
        """Instance settings over the process-wide ones (``io.xskipper.*`` keys)."""
        checked = dict(conf_mod.check(k, v) for k, v in dict(params).items())
        self._params.update(checked)

    # ------------------------------------------------------------------ process-wide

    @_SessionMethod
    def setConf(sparkSession, params) -> None:
        """Set process-wide ``io.xskipper.*`` keys (xskipper: JVM-wide), applied to the
        given session's conf too.

        Raises:
            UnsupportedFeatureError: a key (or value) metaindex does not support.
        """
        conf_mod.set_entries(params)
        conf_mod.apply_to_session(sparkSession)

    @_SessionMethod
    def getConf(sparkSession) -> dict:
        """Every process-wide key set, as a dict."""
        return conf_mod.get_all()

    @_SessionMethod
    def set(sparkSession, key, value) -> None:
        """Set one process-wide key."""
        conf_mod.set_entries({key: value})
        conf_mod.apply_to_session(sparkSession)

    @_SessionMethod
    def unset(sparkSession, key) -> None:
        """Remove one process-wide key."""
        conf_mod.unset(key)
        conf_mod.apply_to_session(sparkSession)

    @_SessionMethod
    def get(sparkSession, key):
        """The value of a process-wide key, or None."""
        return conf_mod.get(key)

    @_SessionMethod
    def getLatestQueryAggregatedStats(sparkSession):
        """Skipping stats over every dataset scanned in the session since the last
        ``clearStats`` (xskipper's accumulated stats); the FAILED frame when there is none."""
        from metaindex.spark import stats

        with _lock:
            active = bool(_active)
        return frames.stats_frame(
            sparkSession, stats.aggregated_stats(sparkSession).tables, any_active=active
        )

    @_SessionMethod
    def clearStats(sparkSession) -> None:
        """Forget the session's skipping stats."""
        from metaindex.spark import stats

        stats.clear_stats(sparkSession)

    @_SessionMethod
    def reset(sparkSession) -> None:
        """Disable skipping in the session, forget its stats, the process-wide conf (and the
        session conf it set) and the active metadata-store manager choice."""
        from metaindex.spark import hook, stats

        hook.disable(sparkSession)
        conf_mod.clear()
        conf_mod.apply_to_session(sparkSession)
        stats.clear_stats(sparkSession)
        with _lock:
            _active.clear()
        reg._reset_manager()

    @_SessionMethod
    def listIndexes(sparkSession: Any):  # called with the session (see _SessionMethod)
        """The indexes in the configured store (``io.xskipper.parquet.mdlocation``) and those
        opened in this process, in xskipper's layout."""
        from metaindex.spark import list_indexes

        conf_mod.apply_to_session(sparkSession)
        base = sparkSession.conf.get("metaindex.store", None)
        rows = list_indexes(sparkSession).collect()
        datasets = []
        for row in rows:
            pairs = []
            for text in row["indexes"]:
                kind, _, column = text.partition("(")
                pairs.append((kind, column[:-1]))
            datasets.append((row["table"], pairs))
        return frames.list_frame(sparkSession, base or "(next to each table: _metaindex)", datasets)

    @_SessionMethod
    def enable(sparkSession) -> None:
        """Turn on skipping for the session (``metaindex.spark.enable``)."""
        from metaindex.spark import enable

        conf_mod.apply_to_session(sparkSession)
        enable(sparkSession)

    @_SessionMethod
    def disable(sparkSession) -> None:
        """Turn skipping off for the session."""
        from metaindex.spark import disable

        disable(sparkSession)

    @_SessionMethod
    def isEnabled(sparkSession) -> bool:
        """Whether skipping is on for the session."""
        from metaindex.spark import is_enabled

        return is_enabled(sparkSession)

    @staticmethod
    def installExceptionWrapper() -> None:
        """Nothing to install: metaindex raises its errors in Python, each a
        ``MetaIndexError`` (which ``XskipperException`` names)."""
