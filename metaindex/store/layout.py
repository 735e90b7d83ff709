"""Where things live in a metadata store (specs/metadata-store.md, "Layout").

``<store>/<table id>/`` holds ``table.json`` (the readable identity), ``_log/`` (commit entries
``<20-digit version>.json`` and checkpoints ``<version>.checkpoint.json``) and ``parts/`` (part
files ``<32 hex>.parquet``; the only place unreferenced files may exist). The table id is the
first 32 hex digits of SHA-256 of the normalised table URI.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from metaindex.errors import DecodeError

__all__ = [
    "TABLE_JSON",
    "LOG_DIR",
    "PARTS_DIR",
    "TableIdentity",
    "canonical_scheme",
    "scheme_spellings",
    "normalize_table_uri",
    "table_id_for",
    "table_identifier",
    "entry_name",
    "checkpoint_name",
    "parse_log_name",
    "new_part_name",
    "temp_name",
    "is_part_name",
]

TABLE_JSON = "table.json"
LOG_DIR = "_log"
PARTS_DIR = "parts"
_VERSION_DIGITS = 20
_LOG_NAME = re.compile(r"^(\d{20})\.(json|checkpoint\.json)$")
_PART_NAME = re.compile(r"^parts/[0-9a-f]{32}\.parquet$")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


def canonical_scheme(scheme: str) -> str:
    """One spelling per filesystem, lower-cased: ``s3a``/``s3n`` (Hadoop's S3 connectors) are
    ``s3``, ``gcs`` is ``gs``. Table and store URIs go through this, so a table Spark reads
    as ``s3a://b/t`` has the same index as ``s3://b/t``."""
    scheme = scheme.lower()
    return _SCHEME_ALIASES.get(scheme, scheme)


def scheme_spellings(scheme: str) -> tuple:
    """Every spelling of a scheme, the canonical one first: ``s3`` -> ``("s3", "s3a", "s3n")``
    (for matching file paths an engine reports under another spelling)."""
    canonical = canonical_scheme(scheme)
    return (canonical, *sorted(a for a, c in _SCHEME_ALIASES.items() if c == canonical))


def normalize_table_uri(table_uri) -> str:
    """The canonical URI of a table: local paths become absolute ``file:///...`` URIs.

    Scheme lower-cased and aliases merged (:func:`canonical_scheme`: ``s3a://b/t`` is
    ``s3://b/t``), ``.``/``..``/duplicate slashes resolved, no trailing slash; symlinks are not
    resolved (two spellings of one directory through a symlink are two tables).
    """
    if isinstance(table_uri, os.PathLike):
        table_uri = os.fspath(table_uri)
    if not isinstance(table_uri, str) or not table_uri:
        raise TypeError(f"table_uri must be a non-empty str or os.PathLike, not {table_uri!r}")
    parts = urlsplit(table_uri)
    scheme = canonical_scheme(parts.scheme)
    if len(scheme) <= 1:  # no scheme, or a Windows drive letter
        return "file://" + _posix_abs(os.path.abspath(table_uri))
    if scheme == "file":
        return "file://" + _posix_abs(unquote(parts.path) or "/")
    path = posixpath.normpath(parts.path) if parts.path not in ("", "/") else ""
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return f"{scheme}://{parts.netloc}{path}"


def _posix_abs(path: str) -> str:
    path = path.replace(os.sep, "/")
    normal = posixpath.normpath(path if path.startswith("/") else "/" + path)
    return "/" + normal.lstrip("/")


def table_id_for(normalized_uri: str) -> str:
    """32 hex digits (128 bits) of SHA-256 of the normalised URI."""
    return hashlib.sha256(normalized_uri.encode("utf-8")).hexdigest()[:32]


def table_identifier(normalized_uri: str) -> str:
    """xskipper's ``tableIdentifier``: ``<bucket>/<object>`` for object stores, else the path
    without its leading ``/``."""
    parts = urlsplit(normalized_uri)
    if parts.scheme == "file":
        return unquote(parts.path).lstrip("/")
    return f"{parts.netloc}{parts.path}"


@dataclass(frozen=True)
class TableIdentity:
    """Who a store directory belongs to: recorded in ``table.json``, every log entry and the
    ``obj_name`` field metadata of every part.

    Attributes:
        uri: the normalised table URI.
        id: :func:`table_id_for` of ``uri`` (the store directory name).
        identifier: xskipper's ``tableIdentifier``.
        extra: free-form JSON attributes the caller records (e.g. partition columns).
    """

    uri: str
    id: str
    identifier: str
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def for_uri(cls, table_uri, extra=None) -> TableIdentity:
        uri = normalize_table_uri(table_uri)
        return cls(uri, table_id_for(uri), table_identifier(uri), dict(extra or {}))

    def to_json(self) -> dict:
        return {
            "uri": self.uri,
            "id": self.id,
            "identifier": self.identifier,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data, where: str) -> TableIdentity:
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), str) for k in ("uri", "id", "identifier")
        ):
            raise DecodeError(
                f"{where}: 'table' must be an object with string uri, id and identifier"
            )
        extra = data.get("extra", {})
        if not isinstance(extra, dict):
            raise DecodeError(f"{where}: table 'extra' must be an object")
        return cls(data["uri"], data["id"], data["identifier"], extra)


def entry_name(version: int) -> str:
    return f"{LOG_DIR}/{version:0{_VERSION_DIGITS}d}.json"


def checkpoint_name(version: int) -> str:
    return f"{LOG_DIR}/{version:0{_VERSION_DIGITS}d}.checkpoint.json"


def parse_log_name(name: str):
    """``(version, "entry" | "checkpoint")`` for a file name in ``_log/``, else None."""
    m = _LOG_NAME.match(name)
    if m is None:
        return None
    return int(m.group(1)), "entry" if m.group(2) == "json" else "checkpoint"


def new_part_name() -> str:
    """A fresh, unique part path relative to the table directory."""
    return f"{PARTS_DIR}/{uuid.uuid4().hex}.parquet"


def temp_name() -> str:
    """A fresh temporary file (under ``parts/``, where vacuum collects leftovers)."""
    return f"{PARTS_DIR}/_tmp-{uuid.uuid4().hex}"


def is_part_name(relative: str) -> bool:
    return _PART_NAME.match(relative) is not None
