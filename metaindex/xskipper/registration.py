"""xskipper's ``Registration``: plugins and the metadata-store manager, the metaindex way.

xskipper plugins are Scala objects (index factories, metadata filter factories, metadata and
clause translators). Their metaindex counterpart is one Python class: a
``metaindex.index.Index`` subclass collects a file's metadata (``collect``) and answers
might-match (``_evaluate``); the store encodes its metadata as a Parquet column by itself. So
each ``add*`` method takes such a class (or its ``"module:Class"`` / ``"module.Class"`` name)
and registers it with :func:`metaindex.index.register_index_kind`; xskipper's own built-in
Scala names are accepted (metaindex has their counterparts built in), and any other Scala name
is refused with an ``UnsupportedFeatureError`` naming it.

The metadata-store manager: xskipper's Parquet manager names map to metaindex's store; a
Python callable ``manager(spark, table_uri, conf) -> store`` (a directory, a URI or a
``metaindex.store.MetadataStore``; ``conf`` is the instance's io.xskipper.* conf) may be
registered as the active one instead.
"""

from __future__ import annotations

import importlib
import threading

from metaindex.errors import UnsupportedFeatureError

__all__ = [
    "Registration",
    "PARQUET_MANAGER_TYPE",
    "resolve_index_class",
    "active_manager",
    "manager_for",
]

PARQUET_MANAGER_TYPE = "io.xskipper.metadatastore.parquet.Parquet$"
"""What ``getActiveMetadataStoreManagerType`` returns for the Parquet store (xskipper's
canonical Scala name)."""

_PARQUET_NAMES = frozenset(
    {
        "io.xskipper.metadatastore.parquet.Parquet",
        "io.xskipper.metadatastore.parquet.ParquetMetadataStoreManager",
        "com.ibm.metaindex.metadata.metadatastore.parquet.Parquet",
        "com.ibm.metaindex.metadata.metadatastore.parquet.ParquetMetadataStoreManager",
    }
)
"""xskipper's (and its IBM predecessor's) Parquet metadata-store manager and type names."""

_BUILTIN_PLUGINS = {
    "index factory": {
        "io.xskipper.index.BaseIndexFactory",
        "com.ibm.metaindex.metadata.index.BaseIndexFactory",
    },
    "metadata filter factory": {
        "io.xskipper.search.filters.BaseFilterFactory",
        "com.ibm.metaindex.metadata.filter.BaseFilterFactory",
    },
    "metadata translator": {
        "io.xskipper.metadatastore.parquet.ParquetBaseMetaDataTranslator",
        "com.ibm.metaindex.metadata.metadatastore.parquet.ParquetBaseMetaDataTranslator",
    },
    "clause translator": {
        "io.xskipper.metadatastore.parquet.ParquetBaseClauseTranslator",
        "com.ibm.metaindex.metadata.metadatastore.parquet.ParquetBaseClauseTranslator",
    },
}

BUILTIN_INDEX_CLASSES = {
    "io.xskipper.index.MinMaxIndex": "minmax",
    "io.xskipper.index.ValueListIndex": "valuelist",
    "io.xskipper.index.BloomFilterIndex": "bloom",
}
"""xskipper's built-in index classes (``addCustomIndex``) and the metaindex kind of each."""

_lock = threading.Lock()
_active = {"manager": None}  # None: the Parquet store


def _strip(name: str) -> str:
    name = name.strip()
    return name[:-1] if name.endswith("$") else name


def _load_python(name: str):
    """The object named ``module:attr`` or ``module.attr``; None if ``name`` names none."""
    module, sep, attr = name.partition(":")
    candidates = (
        [(module, attr)]
        if sep
        else [
            (name.rsplit(".", i)[0], ".".join(name.rsplit(".", i)[1:]))
            for i in range(1, name.count(".") + 1)
        ]
    )
    for mod_name, path in candidates:
        if not mod_name or not path:
            continue
        try:
            target = importlib.import_module(mod_name)
        except ImportError:
            continue
        try:
            for part in path.split("."):
                target = getattr(target, part)
        except AttributeError:
            continue
        return target
    return None


def _scala_refusal(name: str, what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"{name!r} ({what}) cannot be used by metaindex: xskipper's Scala plugins (such as "
        "io.xskipper.plugins.regex.*) do not run in metaindex. Write the index as a Python "
        "metaindex.index.Index subclass (collect + might-match) and register it: "
        "Registration.addIndexFactory(spark, MyIndex) or "
        "metaindex.index.register_index_kind(MyIndex)"
    )


def resolve_index_class(spec, what: str = "index class"):
    """The ``metaindex.index.Index`` subclass ``spec`` names (the class itself, or
    ``"module:Class"`` / ``"module.Class"``), registered as an index kind; None for one of
    xskipper's built-in plugin names of ``what``.

    Raises:
        UnsupportedFeatureError: a name that is neither (e.g. a Scala plugin class).
        TypeError: an object that is not an Index subclass.
    """
    from metaindex.index import Index, register_index_kind

    if isinstance(spec, str):
        name = _strip(spec)
        if name in _BUILTIN_PLUGINS.get(what, ()):
            return None
        target = _load_python(name)
        if target is None:
            raise _scala_refusal(spec, what)
    else:
        target = spec
    if not (isinstance(target, type) and issubclass(target, Index)):
        raise TypeError(f"a {what} is a metaindex.index.Index subclass (or its name), not {spec!r}")
    return register_index_kind(target)


def active_manager():
    """The active metadata-store manager: None (metaindex's Parquet store) or a callable."""
    with _lock:
        return _active["manager"]


def manager_for(name):
    """The manager for ``Xskipper(spark, uri, name)``: None (Parquet) or a callable.

    Raises:
        UnsupportedFeatureError: an unknown manager name.
    """
    if name is None:
        return active_manager()
    if callable(name) and not isinstance(name, str):
        return name
    if isinstance(name, str) and _strip(name) in _PARQUET_NAMES:
        return None
    raise UnsupportedFeatureError(
        f"metadata store manager {name!r} is not supported: metaindex stores indexes in its "
        f"own Parquet metadata store ({sorted(_PARQUET_NAMES)}), or a Python callable "
        "manager(spark, table_uri, conf) -> store directory, URI or MetadataStore"
    )


def _reset_manager() -> None:
    with _lock:
        _active["manager"] = None


class Registration:
    """Register plugins and choose the metadata-store manager (xskipper's ``Registration``;
    see the module docstring for what each accepts)."""

    @staticmethod
    def addMetadataFilterFactory(sparkSession, filterFactory) -> None:
        """A Python index class (its might-match is its filter) or xskipper's built-in
        ``io.xskipper.search.filters.BaseFilterFactory``."""
        resolve_index_class(filterFactory, "metadata filter factory")

    @staticmethod
    def addIndexFactory(sparkSession, indexFactory) -> None:
        """A Python index class, registered as an index kind (``addCustomIndex`` then takes
        it or its name), or xskipper's built-in ``io.xskipper.index.BaseIndexFactory``."""
        resolve_index_class(indexFactory, "index factory")

    @staticmethod
    def addMetaDataTranslator(sparkSession, metadataTranslator) -> None:
        """A Python index class (its ``metadata_type`` is its translation) or xskipper's
        built-in ``ParquetBaseMetaDataTranslator``."""
        resolve_index_class(metadataTranslator, "metadata translator")

    @staticmethod
    def addClauseTranslator(sparkSession, clauseTranslator) -> None:
        """A Python index class or xskipper's built-in ``ParquetBaseClauseTranslator``."""
        resolve_index_class(clauseTranslator, "clause translator")

    @staticmethod
    def setActiveMetadataStoreManager(sparkSession, metadataStoreManager) -> None:
        """xskipper's Parquet manager or type name (metaindex's store), or a Python callable
        ``manager(spark, table_uri, conf) -> store`` used by Xskipper instances created
        afterwards.

        Raises:
            UnsupportedFeatureError: any other name (xskipper only logs a warning).
        """
        manager = manager_for(metadataStoreManager)
        with _lock:
            _active["manager"] = manager

    @staticmethod
    def getActiveMetadataStoreManagerType(sparkSession) -> str:
        """``io.xskipper.metadatastore.parquet.Parquet$`` for metaindex's store, else the
        registered callable's ``module.qualname``."""
        manager = active_manager()
        if manager is None:
            return PARQUET_MANAGER_TYPE
        return (
            f"{getattr(manager, '__module__', '?')}."
            f"{getattr(manager, '__qualname__', type(manager).__qualname__)}"
        )
