"""AWS Key Management Service as the KMS of encrypted stores, through boto3.

The master key identifier of a key label is an AWS KMS key: a key id, a key ARN, an alias
(``alias/metaindex-footer``) or an alias ARN. Wrapping a data key is KMS ``Encrypt`` of its
bytes under that key; unwrapping is ``Decrypt`` naming the same key, so a wrapped key that was
made under another key is refused by the service, not unwrapped with the wrong one. Both carry
the encryption context ``{"metaindex.master_key": <identifier>}``, which KMS binds into the
ciphertext: a wrapped key copied under another label does not decrypt.

The master keys never leave KMS; the store holds only the ``CiphertextBlob`` (base64) in
parquet-java's key material, like any other KMS client's wrapped key. With double wrapping (the
default) KMS is asked once per master key and key-encryption key, not once per data key.

Configuration is boto3's: credentials from the standard chain (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, profiles, instance and web-identity roles),
the region from ``AWS_REGION`` (or the KMS spec ``aws:<region>``), and the endpoint from
``KmsConnectionConfig.kms_instance_url`` (Spark conf ``metaindex.encryption.kms.instance.url``)
or boto3's ``AWS_ENDPOINT_URL_KMS`` / ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import base64
import binascii
import os

from metaindex.crypto.kms import KMS_INSTANCE_DEFAULT, KmsClient, KmsConnectionConfig
from metaindex.errors import KeyAccessError

__all__ = ["AwsKms", "CONTEXT_KEY"]

CONTEXT_KEY = "metaindex.master_key"
"""The encryption context key every wrap and unwrap names its master key under."""


class AwsKms(KmsClient):
    """A :class:`~metaindex.crypto.KmsClient` over AWS KMS (boto3).

    Args:
        kms_connection_config: ``kms_instance_url`` is the endpoint (empty or ``DEFAULT``:
            boto3's own choice); the rest is unused.
        region: the AWS region (None: ``AWS_REGION``, else boto3's: ``AWS_DEFAULT_REGION`` or
            the profile).
        client: a ready boto3 KMS client to use instead (endpoint and region then unused).

    Raises:
        KeyAccessError: boto3 is not installed, or the client cannot be made (no region).
    """

    def __init__(
        self,
        kms_connection_config: KmsConnectionConfig | None = None,
        *,
        region: str | None = None,
        client=None,
    ):
        config = kms_connection_config or KmsConnectionConfig()
        url = config.kms_instance_url
        self.endpoint = None if url in ("", KMS_INSTANCE_DEFAULT) else url
        # boto3 reads AWS_DEFAULT_REGION and profiles; AWS_REGION is what obstore and the
        # other AWS SDKs read, so it counts here too
        self.region = region or os.environ.get("AWS_REGION") or None
        if client is None:
            try:
                import boto3
                import botocore.exceptions
            except ImportError:
                raise KeyAccessError("AwsKms needs boto3 (pip install 'metaindex[aws]')") from None
            try:
                client = boto3.client("kms", endpoint_url=self.endpoint, region_name=self.region)
            except botocore.exceptions.BotoCoreError as exc:
                raise KeyAccessError(f"AWS KMS client: {exc}") from None
        self._client = client

    def _call(self, operation: str, master_key_identifier: str, **kw) -> dict:
        from botocore.exceptions import BotoCoreError, ClientError

        context = {CONTEXT_KEY: master_key_identifier}
        try:
            return getattr(self._client, operation)(
                KeyId=master_key_identifier, EncryptionContext=context, **kw
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise KeyAccessError(
                f"AWS KMS {operation} with master key {master_key_identifier!r} refused: "
                f"{error.get('Code', 'error')}: {error.get('Message', exc)}"
            ) from None
        except BotoCoreError as exc:  # no credentials, endpoint unreachable, ...
            raise KeyAccessError(
                f"AWS KMS {operation} with master key {master_key_identifier!r} failed: {exc}"
            ) from None

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        answer = self._call("encrypt", master_key_identifier, Plaintext=bytes(key_bytes))
        return base64.b64encode(answer["CiphertextBlob"]).decode("ascii")

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        try:
            blob = base64.b64decode(wrapped_key, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise KeyAccessError(
                f"wrapped key for master key {master_key_identifier!r} is not base64"
            ) from None
        return bytes(self._call("decrypt", master_key_identifier, CiphertextBlob=blob)["Plaintext"])

    def __repr__(self) -> str:
        return f"AwsKms(endpoint={self.endpoint!r}, region={self.region!r})"
