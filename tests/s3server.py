"""A real S3 API server on 127.0.0.1 for tests and benchmarks: moto's server (its WSGI app, as
``python -m moto.server`` runs it) in a child process, on a free port chosen at run time.

moto (5.x) checks ``If-None-Match: *`` and then stores the object without a lock, so under load
two concurrent create-only PUTs of one key can both succeed, where S3 lets exactly one win. The
child process therefore runs moto's requests that write (PUT, POST, DELETE) one at a time;
reads stay concurrent. Every other behaviour is moto's (the server also serves KMS)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGION = "us-east-1"
ACCESS_KEY = "metaindex-test"
SECRET_KEY = "metaindex-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc) -> None:
    """Terminate a server process we started (kill it after 10 s), if it still runs."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class MotoServer:
    """``with MotoServer() as s3:`` a running server; ``s3.bucket()`` makes a fresh bucket.

    Args:
        auth: enforce IAM authentication (every request must be signed with a known key), for
            the bad-credentials tests; buckets must then be made before, with ``bootstrap``.
        bootstrap: buckets to create while the server still accepts anything (auth only).
    """

    scheme = "s3"

    def __init__(self, *, auth: bool = False, bootstrap: tuple = ()):
        self._auth = auth
        self._bootstrap = bootstrap
        self.proc = None
        self.endpoint = ""
        self._log = None  # the server's request log (one line per request)

    def start(self) -> MotoServer:
        env = dict(os.environ)
        if self._auth:  # requests before this count are free: the bootstrap's bucket creations
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(len(self._bootstrap))
        for _attempt in range(5):
            port = _free_port()
            self._log = tempfile.NamedTemporaryFile(prefix="moto-", suffix=".log")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.s3server", str(port)],
                cwd=_REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
            )
            self.endpoint = f"http://127.0.0.1:{port}"
            end = time.monotonic() + 30
            while time.monotonic() < end and self.proc.poll() is None:
                try:
                    urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).close()
                    for name in self._bootstrap:
                        self.bucket(name)
                    return self
                except OSError:
                    time.sleep(0.05)
            self.stop()  # the port was taken between choosing and binding it: try another
        raise RuntimeError("the moto S3 server did not start")

    def stop(self) -> None:
        stop_process(self.proc)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_offset(self) -> int:
        """Where the request log ends now (for :meth:`requests_since`)."""
        return os.path.getsize(self._log.name)

    def requests_since(self, offset: int) -> list:
        """``(method, path)`` of every request the server logged after ``offset``."""
        time.sleep(0.2)  # the server logs a request after answering it
        with open(self._log.name, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        out = []
        for line in text.splitlines():
            start = line.find('"')
            if start < 0:
                continue
            parts = line[start + 1 :].split(" ")
            if len(parts) >= 2 and parts[0] in ("GET", "PUT", "HEAD", "POST", "DELETE"):
                out.append((parts[0], parts[1]))
        return out

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def env(self) -> dict:
        """The standard AWS environment variables that point a client at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
        }

    @property
    def options(self) -> dict:
        """The same settings as a ``storage_options`` dict."""
        return {
            "endpoint": self.endpoint,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "region": REGION,
        }

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh unique one by default) and return its name."""
        name = name or f"b-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name

    def arrow_filesystem(self):
        """A ``pyarrow.fs.S3FileSystem`` on this server (for writing test tables)."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            endpoint_override=self.endpoint.split("://", 1)[1],
            scheme="http",
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
        )


class _OneWriteAtATime:
    """WSGI middleware: moto's writes run under one lock (each answer fully produced inside
    it), so its check of a precondition and the write it guards are one step."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
            with self.lock:
                return list(self.app(environ, start_response))
        return self.app(environ, start_response)


def _serve(port: int) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    os.environ.setdefault("MOTO_PORT", str(port))
    run_simple(
        "127.0.0.1",
        port,
        _OneWriteAtATime(DomainDispatcherApplication(create_backend_app)),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
