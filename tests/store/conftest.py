"""The store suite runs on every storage backend: ``backend`` is a local directory, then a
bucket on each object store server of the session (tests/conftest.py: S3 on moto, GCS on
fake-gcs-server, Azure on Azurite)."""

from __future__ import annotations

import pytest

from tests.conftest import SERVERS
from tests.store.backends import LocalBackend, ObjectBackend


@pytest.fixture(params=["local", *sorted(SERVERS)])
def backend(request, tmp_path):
    if request.param == "local":
        return LocalBackend(tmp_path)
    return ObjectBackend(request.param, request.getfixturevalue(SERVERS[request.param]),
                         tmp_path)
