"""A real Azure Blob API server on 127.0.0.1 for tests: Azurite (Microsoft's emulator, from npm,
installed into the test cache by :func:`tests.toolcache.azurite_blob`), blob service only, in
memory, telemetry off, on a free port.

Azurite serves the well-known development account ``devstoreaccount1`` with its published key
and checks every request's SharedKey signature; it honours ``If-None-Match: *`` on Put Blob
(409 when the blob exists), the conditional write metaindex commits with.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from email.utils import formatdate

from tests.s3server import _free_port, stop_process

ACCOUNT = "devstoreaccount1"
# Azurite's published development key (the same for every installation)
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_API = "2021-08-06"


class AzuriteServer:
    """``AzuriteServer().start()``: a running blob service; ``bucket()`` makes a container."""

    scheme = "az"

    def __init__(self):
        self.proc = None
        self.endpoint = ""  # the account URL: http://127.0.0.1:<port>/devstoreaccount1
        self._log = None

    def start(self) -> AzuriteServer:
        from tests.toolcache import azurite_blob

        exe = azurite_blob()
        for _ in range(5):
            port = _free_port()
            self._log = tempfile.NamedTemporaryFile(prefix="azurite-", suffix=".log")
            self.proc = subprocess.Popen(
                [
                    exe,
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    str(port),
                    "--inMemoryPersistence",
                    "--disableTelemetry",
                    "--skipApiVersionCheck",
                    "--silent",
                ],
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            self.endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
            end = time.monotonic() + 60
            while time.monotonic() < end and self.proc.poll() is None:
                try:
                    urllib.request.urlopen(f"{self.endpoint}?comp=list", timeout=1).close()
                except urllib.error.HTTPError:
                    return self  # it answers (403: an unsigned request)
                except OSError:
                    time.sleep(0.1)
            self.stop()
        raise RuntimeError("Azurite did not start")

    def stop(self) -> None:
        stop_process(self.proc)
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def options(self) -> dict:
        """``storage_options`` that point metaindex (obstore and pyarrow) at this server."""
        return {"account_name": ACCOUNT, "account_key": KEY, "endpoint": self.endpoint}

    @property
    def env(self) -> dict:
        """The same as the standard Azure environment variables."""
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": KEY,
            "AZURE_STORAGE_ENDPOINT": self.endpoint,
        }

    def bucket(self, name: str | None = None) -> str:
        """Create a container (a fresh unique one by default) and return its name: a
        SharedKey-signed Create Container request."""
        name = name or f"c-{uuid.uuid4().hex[:20]}"
        date = formatdate(usegmt=True)
        path = f"/{ACCOUNT}/{name}"
        signed = "\n".join(
            [
                "PUT",
                "",
                "",
                "",
                "",
                "application/octet-stream",
                "",
                "",
                "",
                "",
                "",
                "",
                f"x-ms-date:{date}",
                f"x-ms-version:{_API}",
                f"/{ACCOUNT}{path}\nrestype:container",
            ]
        )
        digest = hmac.new(base64.b64decode(KEY), signed.encode(), hashlib.sha256).digest()
        request = urllib.request.Request(
            f"{self.endpoint.rsplit('/', 1)[0]}{path}?restype=container",
            data=b"",
            method="PUT",
            headers={
                "Content-Type": "application/octet-stream",
                "x-ms-date": date,
                "x-ms-version": _API,
                "Authorization": f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode()}",
            },
        )
        urllib.request.urlopen(request, timeout=30).close()
        return name

    def arrow_filesystem(self):
        """A ``pyarrow.fs.AzureFileSystem`` on this server (for writing test tables)."""
        import pyarrow.fs as pafs

        authority = self.endpoint.split("://", 1)[1].split("/", 1)[0]
        return pafs.AzureFileSystem(
            account_name=ACCOUNT,
            account_key=KEY,
            blob_storage_authority=authority,
            blob_storage_scheme="http",
            dfs_storage_authority=authority,
            dfs_storage_scheme="http",
        )

    def __enter__(self) -> AzuriteServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
