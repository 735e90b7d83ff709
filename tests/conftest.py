"""Fixtures shared across test packages: a real S3 API server (moto) started once per session,
only when a test asks for it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def moto_s3():
    """A running :class:`tests.s3server.MotoServer` (skips when moto[server] is missing)."""
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server]")
    pytest.importorskip("obstore", reason="object stores need obstore")
    from tests.s3server import MotoServer

    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(moto_s3, monkeypatch):
    """The standard AWS environment variables pointing at the session's server (and nothing
    else: no profile, no config file)."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN",
                 "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for name, value in moto_s3.env.items():
        monkeypatch.setenv(name, value)
    return moto_s3
