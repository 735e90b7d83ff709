"""The storage backends the store suite runs on: a local directory, a bucket on each of the
session's object store servers (S3: moto; GCS: fake-gcs-server; Azure: Azurite), and the
``dirstore://`` scheme a test module registers (tests/store/dirstore.py: a new scheme is a module
and a registry line). Each gives the store root and raw file access for tests that inspect or
damage what the store wrote (paths are the store's own: local paths or ``s3://`` / ``gs://`` /
``az://`` / ``dirstore://`` URIs)."""

from __future__ import annotations

import os
import shutil

from metaindex.store import MetadataStore
from tests.store import dirstore


class LocalBackend:
    name = "local"
    pace = 1.0  # how much longer than a local directory a commit takes (crash test delays)

    def __init__(self, tmp_path):
        self.root = str(tmp_path / "store")
        self.options = None

    def store(self, **kw) -> MetadataStore:
        return MetadataStore(self.root, **kw)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write(self, path: str, data: bytes) -> None:
        """Create or overwrite (tests that damage files)."""
        with open(path, "wb") as f:
            f.write(data)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def delete(self, path: str) -> None:
        os.unlink(path)

    def copy(self, src: str, dst: str) -> None:
        shutil.copy(src, dst)

    def listdir(self, path: str) -> list:
        """Names directly under ``path`` (files and directories; [] when it does not exist)."""
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    def files(self, path: str) -> list:
        """Every file below ``path``."""
        return [os.path.join(root, n) for root, _, names in os.walk(path) for n in names]

    def age(self, paths, seconds: float) -> None:
        """Make files look ``seconds`` older (vacuum tests)."""
        for path in paths:
            old = os.path.getmtime(path) - seconds
            os.utime(path, (old, old))


class ObjectBackend(LocalBackend):
    """A bucket (container) on ``server``; ``name`` is the fixture's parameter."""

    def __init__(self, name, server, tmp_path):
        self.name = name
        # Azurite and fake-gcs-server (behind its adapter process) answer slower than moto
        self.pace = {"s3": 1.0, "azure": 3.0}.get(name, 6.0)
        self.server = server
        self.bucket = server.bucket()
        self.root = f"{server.scheme}://{self.bucket}/stores/idx"
        self.options = dict(server.options)
        self._storage = MetadataStore(self.root, storage_options=self.options).storage

    def store(self, **kw) -> MetadataStore:
        return MetadataStore(self.root, storage_options=self.options, **kw)

    def read(self, path: str) -> bytes:
        return self._storage.read(path)

    def write(self, path: str, data: bytes) -> None:
        self._storage.write(path, data)  # a plain PUT overwrites

    def exists(self, path: str) -> bool:
        return self._storage.exists(path)

    def delete(self, path: str) -> None:
        self._storage.delete(path)

    def copy(self, src: str, dst: str) -> None:
        self.write(dst, self.read(src))

    def listdir(self, path: str) -> list:
        import obstore

        prefix = self._storage._key(path.rstrip("/") + "/")
        found = obstore.list_with_delimiter(self._storage.store, prefix=prefix)
        names = [o["path"] for o in found["objects"]] + list(found["common_prefixes"])
        return sorted(n.rstrip("/").rsplit("/", 1)[-1] for n in names)

    def files(self, path: str) -> list:
        return [f"{path}/{s.name}" for s in self._storage.objects(path)]

    def age(self, paths, seconds: float) -> None:
        """Object stores cannot back-date objects; the vacuum tests use retain=0, for which any
        object written before the call is old enough."""


class DirStoreBackend(LocalBackend):
    """A bucket of the ``dirstore://`` scheme (a directory under ``tmp_path``)."""

    name = dirstore.SCHEME
    pace = 2.0  # every write fsyncs a file, every listing walks directories

    def __init__(self, tmp_path):
        self.options = {"base": str(tmp_path / "dirstore")}
        self.root = f"{dirstore.SCHEME}://bucket/stores/idx"
        self._storage = MetadataStore(self.root, storage_options=self.options).storage
        assert isinstance(self._storage, dirstore.DirStorage), "the registry serves dirstore://"

    def store(self, **kw) -> MetadataStore:
        return MetadataStore(self.root, storage_options=self.options, **kw)

    def read(self, path: str) -> bytes:
        return super().read(self._storage.file(path))

    def write(self, path: str, data: bytes) -> None:
        self._storage.write(path, data)

    def exists(self, path: str) -> bool:
        return self._storage.exists(path)

    def delete(self, path: str) -> None:
        os.unlink(self._storage.file(path))

    def copy(self, src: str, dst: str) -> None:
        self.write(dst, self.read(src))

    def listdir(self, path: str) -> list:
        """Objects and prefixes directly under ``path`` (a prefix exists while an object is
        under it, as on an object store)."""
        names = (
            {s.name.split("/", 1)[0] for s in self._storage.walk(path)}
            if os.path.isdir(self._storage.file(path))
            else set()
        )
        return sorted(names)

    def files(self, path: str) -> list:
        if not os.path.isdir(self._storage.file(path)):
            return []
        return [f"{path}/{s.name}" for s in self._storage.walk(path)]

    def age(self, paths, seconds: float) -> None:
        super().age([self._storage.file(p) for p in paths], seconds)
