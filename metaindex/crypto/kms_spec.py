"""KMS clients named by a string, for configuration files, Spark conf keys and the CLI.

A *KMS spec* names where master keys come from:

- ``inmemory:PATH`` — :class:`~metaindex.crypto.InMemoryKms` loaded from a JSON file
  ``{"key label": "base64 key", ...}``. For tests and demos: the keys sit in a plain file.
- ``file:PATH`` — :class:`~metaindex.crypto.LocalFileKms`: ``label: base64`` lines in a file only
  its owner can read (``chmod 600``).
- ``aws:`` or ``aws:REGION`` — :class:`~metaindex.crypto.AwsKms`: AWS KMS through boto3; key
  labels are KMS key ids, ARNs or aliases; the endpoint is the connection config's
  ``kms_instance_url`` or boto3's ``AWS_ENDPOINT_URL_KMS``.
- ``module:attr`` (e.g. ``mycompany.vault:VaultKms``) — the user's own ``KmsClient`` subclass, or
  any callable taking a ``KmsConnectionConfig`` and returning a ``KmsClient``.

:func:`kms_factory` turns a spec into a picklable factory (``factory(KmsConnectionConfig) ->
KmsClient``), which is what :class:`metaindex.StoreEncryption` and the metadata store expect:
worker processes and Spark executors rebuild the client from the spec string.
"""

from __future__ import annotations

import importlib
import json
import os

from metaindex.errors import KeyAccessError

__all__ = ["KmsFactory", "kms_factory"]


class KmsFactory:
    """``factory(kms_connection_config) -> KmsClient`` for a KMS spec (see the module docstring).

    Picklable by value (only the spec string travels); the client is created on first call in
    each process and reused.
    """

    def __init__(self, spec: str):
        if not isinstance(spec, str) or not spec.strip():
            raise TypeError(
                f"a KMS spec is a non-empty str such as 'inmemory:keys.json', "
                f"'file:/etc/keys', 'aws:eu-west-1' or 'module:Class', not {spec!r}"
            )
        self.spec = spec.strip()
        kind, sep, rest = self.spec.partition(":")
        if not sep or not (rest or kind == "aws"):
            raise KeyAccessError(
                f"KMS spec {self.spec!r}: expected 'inmemory:PATH', "
                "'file:PATH', 'aws:[REGION]' or 'module:attr'"
            )
        self._kind, self._rest = kind, rest
        self._client = None

    def __getstate__(self):
        return {"spec": self.spec}

    def __setstate__(self, state):
        KmsFactory.__init__(self, state["spec"])

    def __eq__(self, other) -> bool:
        return isinstance(other, KmsFactory) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)

    def __repr__(self) -> str:
        return f"KmsFactory({self.spec!r})"

    def __call__(self, kms_connection_config=None):
        if self._client is None:
            self._client = self._create(kms_connection_config)
        return self._client

    def _create(self, config):
        from metaindex.crypto.kms import InMemoryKms, KmsClient, KmsConnectionConfig, LocalFileKms

        if self._kind == "inmemory":
            return InMemoryKms(_read_json_keys(self._rest))
        if self._kind == "file":
            return LocalFileKms(os.path.expanduser(self._rest))
        if self._kind == "aws":
            from metaindex.crypto.awskms import AwsKms

            return AwsKms(config, region=self._rest or None)
        try:
            target = importlib.import_module(self._kind)
            for part in self._rest.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise KeyAccessError(
                f"KMS spec {self.spec!r}: cannot load {self._rest!r} from "
                f"module {self._kind!r}: {exc}"
            ) from None
        if not callable(target):
            raise KeyAccessError(f"KMS spec {self.spec!r}: {self._rest!r} is not callable")
        client = target(config if config is not None else KmsConnectionConfig())
        if not isinstance(client, KmsClient):
            raise KeyAccessError(
                f"KMS spec {self.spec!r}: {self._rest!r} returned "
                f"{type(client).__name__}, not a metaindex.crypto.KmsClient"
            )
        return client


def _read_json_keys(path: str) -> dict:
    path = os.path.expanduser(path)
    try:
        with open(path, encoding="utf-8") as f:
            keys = json.load(f)
    except OSError as exc:
        raise KeyAccessError(f"cannot read KMS key file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise KeyAccessError(f"KMS key file {path} is not JSON: {exc}") from None
    if (
        not isinstance(keys, dict)
        or not keys
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items())
    ):
        raise KeyAccessError(
            f'KMS key file {path} must hold a JSON object {{"key label": "base64 key", ...}}'
        )
    return keys


def kms_factory(spec: str) -> KmsFactory:
    """A picklable ``KmsClient`` factory for ``spec`` (see the module docstring).

    Raises:
        TypeError: ``spec`` is not a non-empty string.
        KeyAccessError: the spec is malformed (the client itself is created on first use).
    """
    return KmsFactory(spec)
