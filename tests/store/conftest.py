"""The store suite runs on every storage backend: ``backend`` is a local directory, then an S3
bucket on the session's moto server (tests/s3server.py)."""

from __future__ import annotations

import pytest

from tests.store.backends import LocalBackend, S3Backend


@pytest.fixture(params=["local", "s3"])
def backend(request, tmp_path):
    if request.param == "local":
        return LocalBackend(tmp_path)
    return S3Backend(request.getfixturevalue("moto_s3"), tmp_path)
