"""URI schemes to storage backends: the one table through which the metadata store
(:class:`~metaindex.store.MetadataStore`) and table listing
(:func:`metaindex.engine.listing.locate_table`) open storage.

A backend is a module with one function::

    def open_uri(uri: str, storage_options: dict) -> tuple[Storage, str]:
        '''(the storage holding uri, uri as a path on it)'''

whose storage implements :class:`metaindex.store.storage.Storage`. Built in:

==========================================  ==========================================
scheme                                      backend
==========================================  ==========================================
a plain path, ``file://``                   :mod:`metaindex.store.localfs`
``s3://`` (``s3a://``, ``s3n://``),         :mod:`metaindex.store.objectstore`
``gs://`` (``gcs://``), ``az://``,          (obstore; commits by conditional PUT)
``azure://``, ``abfs[s]://``, ``adl://``
any other scheme                            :mod:`metaindex.store.arrowfs`
                                            (``pyarrow.fs.FileSystem.from_uri``; read-only)
==========================================  ==========================================

A new scheme is one backend module and one line: an entry in :data:`SCHEMES`, or
``register_scheme("myfs", "mypackage.myfs")`` at run time. Scheme spellings that name one
filesystem (``s3a`` is ``s3``) are merged before the lookup
(:func:`metaindex.store.layout.canonical_scheme`), as they are for a table's identity.
"""

from __future__ import annotations

import importlib
import os
import threading
from types import ModuleType

from metaindex.store.layout import canonical_scheme
from metaindex.store.storage import check_storage_options

__all__ = ["SCHEMES", "FALLBACK", "register_scheme", "backend_for", "open_storage", "scheme_of"]

_OBJECT_STORE = "metaindex.store.objectstore"

SCHEMES: dict[str, str | ModuleType] = {
    "file": "metaindex.store.localfs",
    "s3": _OBJECT_STORE,
    "gs": _OBJECT_STORE,
    "az": _OBJECT_STORE,
    "azure": _OBJECT_STORE,
    "abfs": _OBJECT_STORE,
    "abfss": _OBJECT_STORE,
    "adl": _OBJECT_STORE,
}
"""Canonical URI scheme -> its backend module (a dotted name, imported on first use)."""

FALLBACK = "metaindex.store.arrowfs"
"""The backend of every scheme :data:`SCHEMES` does not name."""

_lock = threading.Lock()


def register_scheme(scheme: str, backend: str | ModuleType) -> None:
    """Serve URIs of ``scheme`` with ``backend`` (a module with ``open_uri``, or its dotted
    name), replacing what served them.

    Raises:
        TypeError: ``scheme`` is not a non-empty str, or ``backend`` neither a module nor a
            str.
        ValueError: ``scheme`` is not a URI scheme (letters, digits, ``+-.``, a letter first),
            or is not its canonical spelling (``s3a``: register ``s3``).
    """
    if not isinstance(scheme, str) or not scheme:
        raise TypeError(f"scheme must be a non-empty str, not {scheme!r}")
    if not (scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme)):
        raise ValueError(f"{scheme!r} is not a URI scheme")
    if canonical_scheme(scheme) != scheme:
        raise ValueError(
            f"{scheme!r} is spelled {canonical_scheme(scheme)!r} in metaindex: register that"
        )
    if not isinstance(backend, (str, ModuleType)):
        raise TypeError(f"backend must be a module or its dotted name, not {backend!r}")
    with _lock:
        SCHEMES[scheme] = backend


def scheme_of(location: str) -> str:
    """The canonical scheme of a path or URI (``file`` for a plain path)."""
    if "://" not in location:
        return "file"
    return canonical_scheme(location.partition("://")[0])


def backend_for(scheme: str) -> ModuleType:
    """The backend module serving ``scheme`` (any spelling), imported.

    Raises:
        ImportError: the registered module cannot be imported.
        TypeError: it has no ``open_uri``.
    """
    with _lock:
        entry = SCHEMES.get(canonical_scheme(scheme), FALLBACK)
    module = importlib.import_module(entry) if isinstance(entry, str) else entry
    if not callable(getattr(module, "open_uri", None)):
        raise TypeError(
            f"storage backend {module.__name__} (scheme {scheme!r}) has no "
            "open_uri(uri, storage_options) function"
        )
    return module


def open_storage(location, filesystem=None, storage_options=None) -> tuple:
    """``(Storage, location as a path on it)`` for a path or URI.

    Without ``filesystem`` the backend is :data:`SCHEMES`'s for the location's scheme,
    configured by ``storage_options`` (object stores: see :mod:`metaindex.store.objectstore`).
    With a ``pyarrow.fs.FileSystem``, ``location`` is a path on it (a URI's path part):
    a ``LocalFileSystem``, or a ``SubTreeFileSystem`` over one, is the local directory
    (:mod:`metaindex.store.localfs`); any other filesystem is read-only
    (:mod:`metaindex.store.arrowfs`).

    Raises:
        TypeError: ``location`` is not a non-empty str or os.PathLike, ``filesystem`` not a
            ``pyarrow.fs.FileSystem``, ``storage_options`` not a dict with str keys.
    """
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    if not isinstance(location, str) or not location:
        raise TypeError(f"location must be a non-empty path or URI, not {location!r}")
    options = check_storage_options(storage_options)
    if filesystem is not None:
        return _on_filesystem(filesystem, location)
    return backend_for(scheme_of(location)).open_uri(location, options)


def _on_filesystem(filesystem, path: str) -> tuple:
    from pyarrow import fs as pafs

    from metaindex.store import arrowfs, localfs

    if not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(
            f"filesystem must be a pyarrow.fs.FileSystem, not {type(filesystem).__name__}"
        )
    if "://" in path:
        path = pafs.FileSystem.from_uri(path)[1]
    if isinstance(filesystem, pafs.LocalFileSystem):
        return localfs.open_uri(path, {})
    if isinstance(filesystem, pafs.SubTreeFileSystem) and isinstance(
        filesystem.base_fs, pafs.LocalFileSystem
    ):
        return localfs.open_uri(os.path.join(filesystem.base_path, path.lstrip("/")), {})
    root = path.rstrip("/")
    return arrowfs.ArrowStorage(filesystem, root), root
