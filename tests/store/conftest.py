"""The store suite runs on every storage backend: ``backend`` is a local directory, a bucket on
each object store server of the session (tests/conftest.py: S3 on moto, GCS on fake-gcs-server,
Azure on Azurite), then a ``dirstore://`` bucket (the scheme tests/store/dirstore.py registers)."""

from __future__ import annotations

import pytest

from tests.conftest import SERVERS
from tests.store.backends import DirStoreBackend, LocalBackend, ObjectBackend


@pytest.fixture(params=["local", *sorted(SERVERS), "dirstore"])
def backend(request, tmp_path):
    if request.param == "local":
        return LocalBackend(tmp_path)
    if request.param == "dirstore":
        return DirStoreBackend(tmp_path)
    return ObjectBackend(request.param, request.getfixturevalue(SERVERS[request.param]), tmp_path)
