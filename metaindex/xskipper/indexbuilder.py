"""xskipper's ``IndexBuilder`` over :class:`metaindex.spark.api.IndexBuilder`."""

from __future__ import annotations

import numbers

from metaindex.errors import MetaIndexError
from metaindex.xskipper import conf as conf_mod
from metaindex.xskipper import frames
from metaindex.xskipper.registration import BUILTIN_INDEX_CLASSES, resolve_index_class

__all__ = ["IndexBuilder"]

_FPP_KEYS = (conf_mod.BLOOM_FPP, "spark.ibm.metaindex.index.bloom.fpp")


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_fpp(fpp) -> float:
    if not _number(fpp) or not 0.0 < float(fpp) < 1.0:
        raise MetaIndexError(f"bloom filter fpp must be a number between 0 and 1, not {fpp!r}")
    return float(fpp)


class IndexBuilder:
    """Collects index definitions for :meth:`Xskipper.indexBuilder`; ``build`` runs them.

    ``keyMetadata`` is the master key label of that index in an encrypted store (the store is
    encrypted when ``io.xskipper.parquet.encryption.footer.key`` is set); an index without
    one is left in plaintext, as in xskipper.
    """

    def __init__(self, xskipper):
        self._xskipper = xskipper
        self._specs: list = []  # (kind or Index, column, keyMetadata, params)

    def _add(self, kind, col, key_metadata, params) -> IndexBuilder:
        if not isinstance(col, str) or not col:
            raise TypeError(f"col must be a non-empty str, not {col!r}")
        if key_metadata is not None and (
            not isinstance(key_metadata, str) or not key_metadata.strip()
        ):
            raise TypeError(f"keyMetadata is a key label (non-empty str), not {key_metadata!r}")
        self._specs.append((kind, col, key_metadata, params))
        return self

    def addMinMaxIndex(self, col, keyMetadata=None) -> IndexBuilder:
        """Per object: min and max of ``col``."""
        return self._add("minmax", col, keyMetadata, {})

    def addValueListIndex(self, col, keyMetadata=None) -> IndexBuilder:
        """Per object: the distinct values of ``col``."""
        return self._add("valuelist", col, keyMetadata, {})

    def addBloomFilterIndex(self, col, *args, fpp=None, ndv=None, keyMetadata=None) -> IndexBuilder:
        """A bloom filter of ``col``. Positional forms as in xskipper: ``(col, keyMetadata)``
        (Python), ``(col, fpp)``, ``(col, fpp, ndv)``, ``(col, fpp, keyMetadata)``,
        ``(col, fpp, ndv, keyMetadata)``. ``fpp`` defaults to ``io.xskipper.index.bloom.fpp``
        (else 0.01); ``ndv`` is checked and not needed: each object's filter is sized for its
        own distinct values."""
        if len(args) > 3:
            raise TypeError(
                f"addBloomFilterIndex takes at most 4 positional arguments, got {1 + len(args)}"
            )
        rest = list(args)
        if rest and isinstance(rest[0], str):
            if len(rest) > 1:
                raise TypeError(
                    "addBloomFilterIndex(col, keyMetadata) takes nothing after keyMetadata"
                )
            keyMetadata = rest.pop(0)
        if rest:
            fpp = rest.pop(0)
        if rest and isinstance(rest[0], str):
            keyMetadata = rest.pop(0)
        elif rest:
            ndv = rest.pop(0)
        if rest:
            keyMetadata = rest.pop(0)
        if ndv is not None and (not _number(ndv) or ndv <= 0):
            raise MetaIndexError(f"bloom filter ndv must be a number > 0, not {ndv!r}")
        params = {} if fpp is None else {"fpp": _check_fpp(fpp)}
        return self._add("bloom", col, keyMetadata, params)

    def addCustomIndex(self, indexClass, cols, params, keyMetadata=None) -> IndexBuilder:
        """An index by class: xskipper's built-in ``io.xskipper.index.MinMaxIndex`` /
        ``ValueListIndex`` / ``BloomFilterIndex`` (``params`` may hold
        ``io.xskipper.index.bloom.fpp``), or a Python ``metaindex.index.Index`` subclass (or
        its ``module:Class`` name), constructed as ``cls(cols[0], **params)``.

        Raises:
            UnsupportedFeatureError: a Scala plugin class.
            MetaIndexError: not exactly one column.
        """
        if isinstance(cols, str) or len(cols) != 1:
            raise MetaIndexError(f"metaindex indexes cover exactly one column; got {cols!r}")
        params = dict(params or {})
        name = indexClass.strip().rstrip("$") if isinstance(indexClass, str) else None
        kind = None if name is None else BUILTIN_INDEX_CLASSES.get(name)
        if kind is None:
            cls = resolve_index_class(indexClass)
            try:
                index = cls(cols[0], **params)
            except TypeError as exc:
                raise MetaIndexError(f"{cls.__name__}({cols[0]!r}, **{params!r}): {exc}") from None
            return self._add(index, cols[0], keyMetadata, {})
        if kind != "bloom":
            if params:
                raise MetaIndexError(f"{indexClass} takes no parameters, got {params!r}")
            return self._add(kind, cols[0], keyMetadata, {})
        fpp = next((params.pop(k) for k in _FPP_KEYS if k in params), None)
        ndv = next(
            (
                params.pop(k)
                for k in ("io.xskipper.index.bloom.ndv", "spark.ibm.metaindex.index.bloom.ndv")
                if k in params
            ),
            None,
        )
        if params:
            raise MetaIndexError(f"unknown {indexClass} parameters {sorted(params)}")
        return self.addBloomFilterIndex(
            cols[0],
            fpp=None if fpp is None else float(fpp),
            ndv=None if ndv is None else float(ndv),
            keyMetadata=keyMetadata,
        )

    def build(self, reader=None):
        """Index every object in one commit; a DataFrame ``status, new_entries_added,
        old_entries_removed``. ``reader`` (xskipper's DataFrameReader, e.g.
        ``spark.read.format("csv").option("header", "true")``) says how the dataset is read:
        its format (Parquet, CSV, JSON or ORC), options and schema define the index, and
        later scans use it only when they read the dataset the same way. Without one, the
        dataset is Parquet.

        Raises:
            MetaIndexError: no index added, already indexed, no data files, a key label
                without an encrypted store.
            SchemaError: a missing or partition column.
            UnsupportedFormatError: a format metaindex does not index.
            UnsupportedFeatureError: reader options an index cannot record (a ``path``
                option, an option without a value).
        """
        if not self._specs:
            raise MetaIndexError(
                "Index creation failed: add an index (addMinMaxIndex, "
                "addValueListIndex, addBloomFilterIndex, addCustomIndex)"
            )
        x = self._xskipper
        conf = x._conf()
        index = x._index(reader)
        encrypted = bool(conf.get(conf_mod.FOOTER_KEY))
        builder = index.index_builder()
        for kind, col, key, params in self._specs:
            label = {"key_label": key} if key else {"plaintext": encrypted}
            if not isinstance(kind, str):  # an Index object (addCustomIndex)
                builder.add_index(kind, **label)
                continue
            if kind == "bloom":  # xskipper's conf default for bloom filters
                params = {"fpp": conf_mod.bloom_fpp(conf), **params}
            builder.add_index(kind, col, **label, **params)
        result = builder.build()
        x._touched(index)
        return frames.refresh_result(x.spark, result)
