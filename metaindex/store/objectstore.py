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
``Boto3CredentialProvider`` for AWS profiles and SSO). An ``http://`` endpoint allows plain HTTP.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import datetime
from urllib.parse import urlsplit

from metaindex.errors import (StorageAccessError, StorageError, StorageNotFoundError,
                              UnsupportedFeatureError)
from metaindex.store.layout import canonical_scheme
from metaindex.store.storage import FileStat, Storage

__all__ = ["ObjectStorage", "OBJECT_SCHEMES", "canonical_scheme", "is_object_store_uri",
           "check_storage_options", "arrow_s3_options"]

OBJECT_SCHEMES = frozenset({"s3", "gs", "az", "azure", "abfs", "abfss", "adl"})
"""URI schemes (after :func:`canonical_scheme`) whose stores :class:`ObjectStorage` serves."""

_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "default_headers", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url",
    "proxy_ca_certificate", "proxy_excludes", "root_certificate", "randomize_addresses",
    "read_timeout", "timeout", "user_agent"})
_SPECIAL_KEYS = frozenset({"credential_provider", "retry_config"})
_STATUS = re.compile(r"status code: (\d{3})")
_XML = re.compile(r"<(Code|Message)>([^<]{1,300})</")
_NO_CONTAINER = ("NoSuchBucket", "ContainerNotFound", "bucket does not exist",
                 "The specified bucket does not exist")


def is_object_store_uri(uri: str) -> bool:
    """Whether ``uri`` names a location :class:`ObjectStorage` serves."""
    return "://" in uri and canonical_scheme(urlsplit(uri).scheme) in OBJECT_SCHEMES


def check_storage_options(options) -> dict:
    """``storage_options`` as a plain dict of str keys (None: empty); TypeError otherwise."""
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise TypeError(f"storage_options must be a dict with str keys, not {options!r}")
    return dict(options)


def _endpoint(options: dict) -> str | None:
    for key in ("endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url"):
        if options.get(key):
            return str(options[key])
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


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
    for ours, theirs in (("region", "region"), ("aws_region", "region"),
                         ("access_key_id", "access_key"), ("aws_access_key_id", "access_key"),
                         ("secret_access_key", "secret_key"),
                         ("aws_secret_access_key", "secret_key"),
                         ("session_token", "session_token"), ("aws_session_token", "session_token"),
                         ("token", "session_token")):
        if options.get(ours):
            out[theirs] = str(options[ours])
    if str(options.get("allow_http", "")).lower() == "true" and "scheme" not in out:
        out["scheme"] = "http"
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
    first = (f"HTTP {code} {answer.get('Code', '')}: {answer.get('Message', '')}"
             if code and answer else text.split("\n", 1)[0][:300])
    if any(s in text for s in _NO_CONTAINER) or (writing and isinstance(exc, FileNotFoundError)):
        return StorageNotFoundError(f"{where}: the bucket or container does not exist ({first})")
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(f"{where}: no such object")
    if isinstance(exc, (ox.PermissionDeniedError, ox.UnauthenticatedError)) or code in (401, 403):
        return StorageAccessError(f"{where}: the object store refused the credentials or denied "
                                  f"access ({first})")
    if isinstance(exc, ox.UnknownConfigurationKeyError):
        return TypeError(f"storage_options: {first}")
    return StorageError(f"{where}: object store request failed ({type(exc).__name__}: {first})")


class ObjectStorage(Storage):
    """A bucket or container of an object store. Paths are full URIs
    (``s3://bucket/prefix/<table id>/_log/...``), so every error names the object."""

    def __init__(self, uri: str, storage_options: dict | None = None):
        parts = urlsplit(uri)
        scheme = canonical_scheme(parts.scheme)
        if scheme not in OBJECT_SCHEMES:
            raise ValueError(f"{uri}: not an object store URI "
                             f"({', '.join(sorted(OBJECT_SCHEMES))})")
        if not parts.netloc:
            raise ValueError(f"{uri}: no bucket or container")
        self._base = f"{scheme}://{parts.netloc}"
        self._options = check_storage_options(storage_options)
        # caches key on the options too, hashed so no secret sits in a key that may be shown
        digest = hashlib.sha256(repr(sorted((k, repr(v)) for k, v in self._options.items()))
                                .encode()).hexdigest()[:16]
        self.key = ("object", self._base, digest)
        self._store = None

    def __getstate__(self):
        return {"_base": self._base, "_options": self._options, "key": self.key,
                "_store": None}

    @property
    def store(self):
        """The obstore ``ObjectStore`` of the bucket (made on first use)."""
        if self._store is None:
            try:
                from obstore.store import from_url
            except ImportError as exc:  # pragma: no cover - obstore is a dependency
                raise UnsupportedFeatureError(
                    "object stores need the obstore package (pip install obstore)") from exc
            config, client, special = {}, {}, {}
            for k, v in self._options.items():
                (special if k in _SPECIAL_KEYS else client if k in _CLIENT_KEYS
                 else config)[k] = v
            endpoint = _endpoint(self._options)
            if self._base.startswith("s3://") and endpoint and endpoint.startswith("http://"):
                client.setdefault("allow_http", True)
            try:
                self._store = from_url(self._base, config=config or None,
                                       client_options=client or None, **special)
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
        return path[len(self._base) + 1:]

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
        listing = self._call(lambda: obstore.list_with_delimiter(self.store, prefix=prefix),
                             directory)
        return [FileStat(o["path"].rsplit("/", 1)[-1], o["size"],
                         _ms(o["last_modified"]), o.get("e_tag"))
                for o in listing["objects"] if not o["path"].endswith("/")]

    def walk(self, directory: str, limit: int | None = None) -> list[FileStat]:
        """Every object below ``directory`` (one paged LIST), named by its path relative to
        it; at most ``limit`` of them."""
        import obstore

        prefix = self._key(directory.rstrip("/") + "/")
        out: list[FileStat] = []

        def run():
            for batch in obstore.list(self.store, prefix=prefix,
                                      chunk_size=min(limit or 1000, 1000)):
                for o in batch:
                    out.append(FileStat(o["path"][len(prefix):], o["size"],
                                        _ms(o["last_modified"]), o.get("e_tag")))
                if limit is not None and len(out) >= limit:
                    return

        self._call(run, directory)
        return out[:limit] if limit is not None else out

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
        keys = [prefix + s.name for s in self.walk(path)]
        if keys:
            self._call(lambda: obstore.delete(self.store, keys), path)

    def makedirs(self, path: str) -> None:
        """Object stores have no directories."""


def _ms(stamp: datetime) -> int:
    return int(stamp.timestamp() * 1000)
