"""Object stores (S3 and its compatibles, GCS, Azure Blob) as store storage, through ``obstore``.

Commits use the stores' conditional PUT: S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``,
Azure ``If-None-Match: *`` (obstore's ``mode="create"``). The PUT either creates the whole object
or fails with 412 when the name exists; nothing partial is ever visible, so no temporary object
is needed. A lost response followed by a retry that meets our own object is told apart from a
lost race by reading the object back.

Configuration is the ecosystem's: URIs ``s3://bucket/prefix`` (``s3a://``/``s3n://`` too),
``gs://bucket/prefix``, ``az://container/prefix`` or ``abfs[s]://container@account...``;
endpoint, region and credentials from the standard environment variables (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``;
``GOOGLE_*``; ``AZURE_*``) and the instance / container / web-identity credential chain, plus an
optional ``storage_options`` dict of obstore's configuration keys (``endpoint``, ``region``,
``access_key_id``, ``secret_access_key``, ``session_token``, ... for S3), client options
(``allow_http``, ``timeout``, ...) and ``credential_provider`` (e.g. obstore's
``Boto3CredentialProvider`` for AWS profiles and SSO). An ``http://`` endpoint (S3 ``endpoint``,
GCS ``base_url``, Azure ``endpoint``, or their environment variables) allows plain HTTP.

Data files of an object store table are read through ``pyarrow.fs`` configured from the same
settings (:func:`arrow_filesystem`), and a Spark session's Hadoop S3A settings
(``fs.s3a.endpoint``, ``fs.s3a.access.key``, ...) translate to these options
(:func:`s3a_storage_options`), so one session config serves Spark and metaindex.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from metaindex.errors import (
    StorageAccessError,
    StorageError,
    StorageNotFoundError,
    UnsupportedFeatureError,
)
from metaindex.store.layout import canonical_scheme
from metaindex.store.storage import WALK_SCHEMA, FileStat, Storage, check_storage_options

__all__ = [
    "ObjectStorage",
    "OBJECT_SCHEMES",
    "canonical_scheme",
    "is_object_store_uri",
    "check_storage_options",
    "arrow_s3_options",
    "arrow_filesystem",
    "arrow_error",
    "s3a_storage_options",
    "open_uri",
]

OBJECT_SCHEMES = frozenset({"s3", "gs", "az", "azure", "abfs", "abfss", "adl"})
"""URI schemes (after :func:`canonical_scheme`) whose stores :class:`ObjectStorage` serves (the
lines of :data:`metaindex.store.schemes.SCHEMES` that name this module)."""

_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "default_headers",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "root_certificate",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)
_SPECIAL_KEYS = frozenset({"credential_provider", "retry_config"})
_STATUS = re.compile(r"status code: (\d{3})")
_XML = re.compile(r"<(Code|Message)>([^<]{1,300})</")
_NO_CONTAINER = (
    "NoSuchBucket",
    "ContainerNotFound",
    "bucket does not exist",
    "The specified bucket does not exist",
)


def is_object_store_uri(uri: str) -> bool:
    """Whether ``uri`` names a location :class:`ObjectStorage` serves."""
    return "://" in uri and canonical_scheme(urlsplit(uri).scheme) in OBJECT_SCHEMES


# where each scheme's endpoint is set: storage_options keys, then environment variables
_ENDPOINTS = {
    "s3": (
        ("endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url"),
        ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    ),
    "gs": (("base_url", "google_base_url"), ("GOOGLE_BASE_URL",)),
    "azure": (
        ("endpoint", "azure_storage_endpoint", "azure_endpoint"),
        ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"),
    ),
}


def _family(scheme: str) -> str:
    """``s3``, ``gs`` or ``azure`` (every Azure spelling) for a canonical scheme."""
    return scheme if scheme in ("s3", "gs") else "azure"


def _endpoint(options: dict, scheme: str = "s3") -> str | None:
    """The endpoint URL ``options`` (else the environment) set for ``scheme``'s service."""
    return _first(options, *_ENDPOINTS[_family(scheme)])


def arrow_s3_options(options: dict) -> dict:
    """``pyarrow.fs.S3FileSystem`` keyword arguments for the same ``storage_options`` (the
    table side reads data files through pyarrow); keys it has no equivalent for are ignored
    there."""
    out: dict = {}
    endpoint = None
    for key in ("endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url"):
        if options.get(key):
            endpoint = str(options[key])
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme in ("http", "https"):
            out["scheme"] = parts.scheme
            endpoint = parts.netloc + parts.path.rstrip("/")
        out["endpoint_override"] = endpoint
    for ours, theirs in (
        ("region", "region"),
        ("aws_region", "region"),
        ("access_key_id", "access_key"),
        ("aws_access_key_id", "access_key"),
        ("secret_access_key", "secret_key"),
        ("aws_secret_access_key", "secret_key"),
        ("session_token", "session_token"),
        ("aws_session_token", "session_token"),
        ("token", "session_token"),
    ):
        if options.get(ours):
            out[theirs] = str(options[ours])
    if str(options.get("allow_http", "")).lower() == "true" and "scheme" not in out:
        out["scheme"] = "http"
    return out


def _first(options: dict, keys: tuple, env: tuple = ()) -> str | None:
    for key in keys:
        if options.get(key) not in (None, ""):
            return str(options[key])
    for name in env:
        if os.environ.get(name):
            return os.environ[name]
    return None


def _truthy(text) -> bool:
    return str(text).strip().lower() in ("true", "1", "yes")


def _authority(endpoint: str) -> tuple:
    """``(scheme, host[:port])`` of an endpoint URL (a bare ``host:port`` is https)."""
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    return parts.scheme, parts.netloc


def _gcs_service(options: dict) -> tuple:
    """``(endpoint, unsigned)`` of GCS settings: ``base_url``, else the ``gcs_base_url`` of an
    emulator's service account key (``{"gcs_base_url": ..., "disable_oauth": true}``);
    unsigned when that key disables OAuth or ``skip_signature`` is set."""
    endpoint = _endpoint(options, "gs")
    unsigned = _truthy(
        _first(options, ("skip_signature", "google_skip_signature"), ("GOOGLE_SKIP_SIGNATURE",))
    )
    key = _first(
        options,
        ("service_account_key", "google_service_account_key"),
        ("GOOGLE_SERVICE_ACCOUNT_KEY",),
    )
    if key:
        import json

        try:
            account = json.loads(key)
        except ValueError:
            account = {}
        if isinstance(account, dict):
            endpoint = endpoint or account.get("gcs_base_url")
            unsigned = unsigned or bool(account.get("disable_oauth"))
    return endpoint, unsigned


def _arrow_gcs(options: dict) -> dict:
    out: dict = {}
    endpoint, anonymous = _gcs_service(options)
    if endpoint:
        out["scheme"], out["endpoint_override"] = _authority(endpoint)
    if anonymous:
        out["anonymous"] = True
    return out


def _arrow_azure(netloc: str, options: dict) -> dict:
    host = netloc.partition("@")[2]  # abfs[s]://container@account.dfs.core.windows.net
    account = _first(
        options, ("account_name", "azure_storage_account_name"), ("AZURE_STORAGE_ACCOUNT_NAME",)
    ) or (host.split(".", 1)[0] or None)
    if account is None:
        return {}
    out: dict = {"account_name": account}
    key = _first(
        options,
        (
            "account_key",
            "azure_storage_account_key",
            "access_key",
            "azure_storage_access_key",
            "master_key",
            "azure_storage_master_key",
        ),
        ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_MASTER_KEY"),
    )
    if key:
        out["account_key"] = key
    sas = _first(
        options,
        ("sas_key", "sas_token", "azure_storage_sas_key", "azure_storage_sas_token"),
        ("AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN"),
    )
    if sas and not key:
        out["sas_token"] = sas
    endpoint = _endpoint(options, "azure")
    if endpoint:
        scheme, authority = _authority(endpoint)
        out.update(
            blob_storage_authority=authority,
            blob_storage_scheme=scheme,
            dfs_storage_authority=authority,
            dfs_storage_scheme=scheme,
        )
    return out


def arrow_filesystem(uri: str, options: dict) -> tuple:
    """``(pyarrow.fs.FileSystem, path)`` reading the objects under ``uri`` (an object store
    URI, canonical scheme) with the endpoint, region and credentials of ``options`` and the
    environment, as :class:`ObjectStorage` does: S3 through :func:`arrow_s3_options`; GCS with
    ``base_url`` (or an emulator's ``service_account_key`` naming ``gcs_base_url``) and
    ``skip_signature`` (anonymous), else Google's default credentials; Azure with the account
    name (option, ``AZURE_STORAGE_ACCOUNT_NAME`` or the ``abfs`` host), its key or SAS token
    and ``endpoint``. Without such settings, ``pyarrow.fs.FileSystem.from_uri``.

    Raises:
        OSError / pyarrow.ArrowException: pyarrow cannot make the filesystem.
    """
    import pyarrow.fs as pafs

    parts = urlsplit(uri)
    family = _family(canonical_scheme(parts.scheme))
    path = f"{parts.netloc.partition('@')[0]}{parts.path}".rstrip("/")
    if family == "s3":
        kw = arrow_s3_options(options)
        if kw:
            return pafs.S3FileSystem(**kw), path
    elif family == "gs":
        kw = _arrow_gcs(options)
        if kw:
            return pafs.GcsFileSystem(**kw), path
    else:
        kw = _arrow_azure(parts.netloc, options)
        if kw:
            return pafs.AzureFileSystem(**kw), path
    filesystem, found = pafs.FileSystem.from_uri(uri)
    return filesystem, found.rstrip("/")


def arrow_error(exc: BaseException, where: str) -> BaseException:
    """A ``pyarrow.fs`` object store failure as the typed error metaindex raises."""
    text = str(exc)
    if any(s in text for s in ("NoSuchBucket", "NO_SUCH_BUCKET", "bucket does not exist")) or (
        "Bucket" in text and "not found" in text
    ):
        return StorageNotFoundError(f"{where}: the bucket or container does not exist ({text})")
    if any(
        s in text
        for s in (
            "ACCESS_DENIED",
            "AccessDenied",
            "INVALID_ACCESS_KEY_ID",
            "SignatureDoesNotMatch",
            "SIGNATURE_DOES_NOT_MATCH",
            "403",
        )
    ):
        return StorageAccessError(
            f"{where}: the object store refused the credentials or denied access ({text})"
        )
    return StorageError(f"{where}: {text}")


_S3A = "fs.s3a."
_S3A_KEYS = {
    "access.key": "access_key_id",
    "secret.key": "secret_access_key",
    "session.token": "session_token",
    "endpoint.region": "region",
}


def s3a_storage_options(conf) -> dict:
    """S3 ``storage_options`` from Hadoop S3A settings, so the ``fs.s3a.*`` configuration a
    Spark session reads ``s3a://`` tables with also configures metaindex.

    ``conf`` maps Hadoop keys (``fs.s3a.endpoint``) or their Spark conf spelling
    (``spark.hadoop.fs.s3a.endpoint``; the plain key wins, as it does in the session's Hadoop
    configuration) to values. Read: ``endpoint`` (a bare host is ``https://``, or ``http://``
    with ``connection.ssl.enabled=false``), ``endpoint.region``, ``path.style.access``,
    ``access.key``, ``secret.key``, ``session.token``, and an anonymous
    ``aws.credentials.provider``. Per-bucket keys (``fs.s3a.bucket.<name>.*``) are not read.
    Empty when no such key is set.
    """
    found: dict = {}
    for key, value in conf.items():
        for prefix in ("spark.hadoop." + _S3A, _S3A):
            if key.startswith(prefix) and value is not None and str(value).strip() != "":
                name = key[len(prefix) :]
                if prefix == _S3A or name not in found:
                    found[name] = str(value).strip()
    out: dict = {}
    for name, option in _S3A_KEYS.items():
        if name in found:
            out[option] = found[name]
    endpoint = found.get("endpoint")
    if endpoint:
        if "://" not in endpoint:
            ssl = found.get("connection.ssl.enabled", "true").lower() != "false"
            endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
        out["endpoint"] = endpoint
    style = found.get("path.style.access")
    if style is not None:
        out["virtual_hosted_style_request"] = "false" if _truthy(style) else "true"
    if "Anonymous" in found.get("aws.credentials.provider", ""):
        out["skip_signature"] = "true"
    return out


def translate(exc: BaseException, where: str, *, writing: bool = False) -> BaseException:
    """An obstore exception as the error metaindex raises: FileNotFoundError for a missing
    object, :class:`StorageNotFoundError` for a missing bucket, :class:`StorageAccessError` for
    refused credentials, :class:`StorageError` otherwise."""
    from obstore import exceptions as ox

    text = str(exc)
    status = _STATUS.search(text)
    code = int(status.group(1)) if status else None
    answer = dict(_XML.findall(text))  # the service's own error code and message, when given
    first = (
        f"HTTP {code} {answer.get('Code', '')}: {answer.get('Message', '')}"
        if code and answer
        else text.split("\n", 1)[0][:300]
    )
    if any(s in text for s in _NO_CONTAINER) or (writing and isinstance(exc, FileNotFoundError)):
        return StorageNotFoundError(f"{where}: the bucket or container does not exist ({first})")
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(f"{where}: no such object")
    if isinstance(exc, (ox.PermissionDeniedError, ox.UnauthenticatedError)) or code in (401, 403):
        return StorageAccessError(
            f"{where}: the object store refused the credentials or denied access ({first})"
        )
    if isinstance(exc, ox.UnknownConfigurationKeyError):
        return TypeError(f"storage_options: {first}")
    return StorageError(f"{where}: object store request failed ({type(exc).__name__}: {first})")


class ObjectStorage(Storage):
    """A bucket or container of an object store. Paths are full URIs
    (``s3://bucket/prefix/<table id>/_log/...``), so every error names the object."""

    uri_paths = True

    def __init__(self, uri: str, storage_options: dict | None = None):
        parts = urlsplit(uri)
        scheme = canonical_scheme(parts.scheme)
        if scheme not in OBJECT_SCHEMES:
            raise ValueError(
                f"{uri}: not an object store URI ({', '.join(sorted(OBJECT_SCHEMES))})"
            )
        if not parts.netloc:
            raise ValueError(f"{uri}: no bucket or container")
        self._base = f"{scheme}://{parts.netloc}"
        self._options = check_storage_options(storage_options)
        # caches key on the options too, hashed so no secret sits in a key that may be shown
        digest = hashlib.sha256(
            repr(sorted((k, repr(v)) for k, v in self._options.items())).encode()
        ).hexdigest()[:16]
        self.key = ("object", self._base, digest)
        self._store: Any = None  # an obstore store, made on first use

    def __getstate__(self):
        return {"_base": self._base, "_options": self._options, "key": self.key, "_store": None}

    @property
    def store(self):
        """The obstore ``ObjectStore`` of the bucket (made on first use)."""
        if self._store is None:
            try:
                from obstore.store import from_url
            except ImportError as exc:  # pragma: no cover - obstore is a dependency
                raise UnsupportedFeatureError(
                    "object stores need the obstore package (pip install obstore)"
                ) from exc
            config: dict[str, Any] = {}
            client: dict[str, Any] = {}
            special: dict[str, Any] = {}
            for k, v in self._options.items():
                (special if k in _SPECIAL_KEYS else client if k in _CLIENT_KEYS else config)[k] = v
            scheme = self._base.split(":", 1)[0]
            endpoint = (
                _gcs_service(self._options)[0]
                if scheme == "gs"
                else _endpoint(self._options, scheme)
            )
            if endpoint and endpoint.startswith("http://"):
                client.setdefault("allow_http", True)
            try:
                # obstore types config per backend; check_storage_options checked the keys
                self._store = from_url(
                    self._base,
                    config=config or None,  # type: ignore[arg-type]  # one dict for all schemes
                    client_options=client or None,  # type: ignore[arg-type]  # a plain dict
                    **special,
                )
            except Exception as exc:  # noqa: BLE001 - obstore's configuration errors
                raise translate(exc, self._base) from None
        return self._store

    def root_path(self, uri: str) -> str:
        """``uri`` (any accepted spelling) as this storage's path: canonical scheme, no
        trailing slash."""
        parts = urlsplit(uri)
        return f"{self._base}/{parts.path.strip('/')}".rstrip("/")

    def _key(self, path: str) -> str:
        if not path.startswith(self._base + "/"):
            raise ValueError(f"{path} is not in {self._base}")
        return path[len(self._base) + 1 :]

    def _call(self, what, path: str, *, writing: bool = False):
        try:
            return what()
        except Exception as exc:  # noqa: BLE001 - every obstore error is translated
            raise translate(exc, path, writing=writing) from None

    def read(self, path: str) -> bytes:
        import obstore

        key = self._key(path)
        return self._call(lambda: bytes(obstore.get(self.store, key).bytes()), path)

    def write(self, path: str, data) -> None:
        import obstore

        key = self._key(path)
        body = b"".join(data) if isinstance(data, list) else bytes(data)
        self._call(lambda: obstore.put(self.store, key, body), path, writing=True)

    def create_if_absent(self, path: str, data, temp_path: str) -> bool:
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        key, data = self._key(path), bytes(data)
        try:
            obstore.put(self.store, key, data, mode="create", use_multipart=False)
            return True
        except (AlreadyExistsError, PreconditionError):
            pass
        except Exception as exc:  # noqa: BLE001 - every obstore error is translated
            raise translate(exc, path, writing=True) from None
        # 412: the name exists. Ours when a retried PUT met the object its first attempt made.
        try:
            return self.read(path) == data
        except FileNotFoundError:  # deleted since (a drop): the name was taken, not by us
            return False

    def list(self, directory: str) -> list[FileStat]:
        import obstore

        prefix = self._key(directory.rstrip("/") + "/")
        listing = self._call(
            lambda: obstore.list_with_delimiter(self.store, prefix=prefix), directory
        )
        return [
            FileStat(
                o["path"].rsplit("/", 1)[-1], o["size"], _ms(o["last_modified"]), o.get("e_tag")
            )
            for o in listing["objects"]
            if not o["path"].endswith("/")
        ]

    def objects(self, directory: str, limit: int | None = None) -> builtins.list[FileStat]:
        """Every object below ``directory`` (one paged LIST), named by its path relative to
        it; at most ``limit`` of them."""
        import obstore

        prefix = self._key(directory.rstrip("/") + "/")
        out: list[FileStat] = []

        def run():
            for batch in obstore.list(
                self.store, prefix=prefix, chunk_size=min(limit or 1000, 1000)
            ):
                for o in batch:
                    out.append(
                        FileStat(
                            o["path"][len(prefix) :],
                            o["size"],
                            _ms(o["last_modified"]),
                            o.get("e_tag"),
                        )
                    )
                if limit is not None and len(out) >= limit:
                    return

        self._call(run, directory)
        return out[:limit] if limit is not None else out

    def walk(self, directory: str) -> builtins.list[FileStat]:
        """:meth:`objects` that can hold data: empty objects hold no rows (Spark plans no
        split for them), and they include the ``dir/`` markers S3 clients write, which the
        object store client reports without the ``/``."""
        return [s for s in self.objects(directory) if s.size]

    def walk_table(self, directory: str):
        """:meth:`walk` as one Arrow table: the same paged LIST, each page taken as Arrow
        (obstore's ``return_arrow``), the objects of no bytes dropped and the relative paths,
        ms times and ETags made by Arrow compute (times exactly as :meth:`walk` makes them)."""
        import numpy as np
        import obstore
        import pyarrow as pa
        import pyarrow.compute as pc

        from metaindex.arrays import numeric_array, to_numpy

        prefix = self._key(directory.rstrip("/") + "/")
        batches = self._call(
            lambda: [
                pa.record_batch(b)
                for b in obstore.list(self.store, prefix=prefix, chunk_size=1000, return_arrow=True)
            ],
            directory,
        )
        if not batches:
            return WALK_SCHEMA.empty_table()
        listed = pa.Table.from_batches(batches).combine_chunks()
        listed = listed.filter(pc.greater(listed.column("size"), 0))
        micros = to_numpy(listed.column("last_modified").cast(pa.int64()))
        # datetime.timestamp() * 1000, truncated, as _ms does it: the same float steps
        mtime = np.trunc(micros / 1e6 * 1000).astype(np.int64)
        paths = pc.utf8_slice_codeunits(listed.column("path"), len(prefix))
        return pa.Table.from_arrays(
            [
                paths.cast(pa.string()),
                listed.column("size").cast(pa.int64()),
                numeric_array(mtime),
                listed.column("e_tag").cast(pa.string()),
            ],
            schema=WALK_SCHEMA,
        )

    def is_dir(self, path: str) -> bool:
        return bool(self.objects(path, limit=1))

    def arrow_filesystem(self, path: str) -> tuple:
        """:func:`arrow_filesystem` of ``path`` with this storage's options."""
        import pyarrow as pa

        try:
            return arrow_filesystem(path, self._options)
        except (OSError, pa.ArrowException) as exc:
            raise arrow_error(exc, path) from None

    def exists(self, path: str) -> bool:
        import obstore

        key = self._key(path)
        try:
            self._call(lambda: obstore.head(self.store, key), path)
        except FileNotFoundError:
            return False
        return True

    def delete(self, path: str) -> None:
        import obstore

        key = self._key(path)
        try:
            self._call(lambda: obstore.delete(self.store, key), path)
        except FileNotFoundError:
            pass

    def remove_dir(self, path: str) -> None:
        import obstore

        prefix = self._key(path.rstrip("/") + "/")
        keys = [prefix + s.name for s in self.objects(path)]
        if keys:
            self._call(lambda: obstore.delete(self.store, keys), path)

    def makedirs(self, path: str) -> None:
        """Object stores have no directories."""


def _ms(stamp: datetime) -> int:
    return int(stamp.timestamp() * 1000)


def open_uri(uri: str, storage_options: dict) -> tuple:
    """``(ObjectStorage of the bucket, uri as its path)`` (the registry's entry point)."""
    storage = ObjectStorage(uri, storage_options)
    return storage, storage.root_path(uri)
