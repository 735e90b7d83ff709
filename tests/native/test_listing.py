"""The native listing kernel (metaindex._native.listing) against pyarrow.fs's recursive listing
of the same real directories: same data files, sizes and ms mtimes, in path byte order, with
Spark's hidden-file rule (is_hidden) applied to pyarrow's; symlinks, FIFOs, unicode names,
empty and hidden directories, cycles; and its typed errors."""

from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaindex._native.listing import walk_data_files
from metaindex.errors import DecodeError, StorageAccessError
from metaindex.store.localfs import LocalStorage
from metaindex.store.storage import WALK_SCHEMA, is_hidden


def kernel(root: str) -> list:
    """[(path, size, mtime ms)] of the kernel's listing, in its order."""
    offsets, data, sizes, mtimes = walk_data_files(root)
    paths = pa.Array.from_buffers(
        pa.large_string(), len(sizes), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    paths.validate(full=True)
    return list(zip(paths.to_pylist(), sizes.tolist(), mtimes.tolist(), strict=True))


def arrow(root: str) -> list:
    """The same from pyarrow.fs (regular files, hidden components dropped), sorted by the
    paths' UTF-8 bytes."""
    out = []
    for info in pafs.LocalFileSystem().get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root.rstrip("/")) + 1 :]
        if any(is_hidden(c) for c in rel.split("/")):
            continue
        out.append((rel, info.size, info.mtime_ns // 1_000_000))
    return sorted(out, key=lambda r: r[0].encode())


def write(root: str, rel: str, data: bytes = b"x") -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def test_a_tree_lists_as_pyarrow_lists_it(tmp_path):
    root = str(tmp_path / "t")
    for rel, data in [
        ("a.parquet", b"12345"),
        ("a.b/x", b"1"),  # '.' sorts before '/': a.b/x before a/...
        ("a/x", b"12"),
        ("k=1/b.parquet", b"x"),
        ("_k=2/c.parquet", b"yy"),  # '_' with '=' is a partition, not hidden
        ("_SUCCESS", b""),
        ("_temporary/0/d.parquet", b"z"),
        (".spark-staging/e.parquet", b"z"),
        ("k=1/.f.crc", b"c"),
        ("f.parquet._COPYING_", b"c"),
        ("é/日本/ü.parquet", b"uni"),
        ("zero", b""),
    ]:
        write(root, rel, data)
    os.makedirs(os.path.join(root, "empty", "deeper"))
    os.mkfifo(os.path.join(root, "k=1", "fifo"))
    write(str(tmp_path), "outside/o.parquet", b"out")
    os.symlink(os.path.join(root, "a.parquet"), os.path.join(root, "link.parquet"))
    os.symlink(os.path.join(str(tmp_path), "outside"), os.path.join(root, "linked"))
    os.symlink("nowhere", os.path.join(root, "dangling"))
    os.symlink("loop2", os.path.join(root, "loop1"))
    os.symlink("loop1", os.path.join(root, "loop2"))
    os.utime(os.path.join(root, "zero"), ns=(0, -1_500_000_123))  # before 1970: floored
    got = kernel(root)
    assert got == arrow(root), "the kernel lists what pyarrow.fs lists, less hidden names"
    paths = [p for p, _, _ in got]
    assert "link.parquet" in paths and "linked/o.parquet" in paths, "symlinks are followed"
    assert "k=1/fifo" not in paths and "dangling" not in paths and "loop1" not in paths
    assert "_k=2/c.parquet" in paths and "_SUCCESS" not in paths
    assert {p: m for p, _, m in got}["zero"] == -1501, "ms floored, as // does"
    assert kernel(root + "/") == got, "a trailing slash changes nothing"


def test_an_empty_directory_lists_nothing(tmp_path):
    assert kernel(str(tmp_path)) == []
    table = LocalStorage(str(tmp_path)).walk_data_table(str(tmp_path))
    assert table.schema == WALK_SCHEMA and table.num_rows == 0


def test_a_cycle_is_walked_once(tmp_path):
    write(str(tmp_path), "d/a.parquet")
    os.symlink("..", os.path.join(str(tmp_path), "d", "up"))
    os.symlink(".", os.path.join(str(tmp_path), "self"))
    assert [p for p, _, _ in kernel(str(tmp_path))] == ["d/a.parquet"], (
        "a link back to a directory on the walk's path is not walked again"
    )


def test_walk_data_table_is_walk_table_less_hidden_files(tmp_path):
    root = str(tmp_path)
    for rel in ("b/x.parquet", "_x/y", "a=1/z.parquet", ".h", "a=1/_SUCCESS"):
        write(root, rel)
    storage = LocalStorage(root)
    got = storage.walk_data_table(root)
    assert got.schema == WALK_SCHEMA
    base = super(LocalStorage, storage).walk_data_table(root)  # walk_table + hidden_paths
    assert got.equals(base.sort_by("path")), "the kernel's data files are the filtered walk's"


def test_errors_are_typed(tmp_path):
    with pytest.raises(FileNotFoundError):
        walk_data_files(str(tmp_path / "missing"))
    write(str(tmp_path), "f")
    with pytest.raises(NotADirectoryError):
        walk_data_files(str(tmp_path / "f"))
    os.mkdir(str(tmp_path / "bad"))
    with open(os.path.join(os.fsencode(str(tmp_path / "bad")), b"\xff.parquet"), "wb"):
        pass
    with pytest.raises(DecodeError, match="not UTF-8"):
        walk_data_files(str(tmp_path / "bad"))
    with pytest.raises(ValueError):
        walk_data_files("a\x00b")


def test_an_unreadable_directory_raises_storage_access_error(tmp_path):
    root = tempfile.mkdtemp(prefix="mi-listing-")  # not under pytest's 0700 tmp dirs
    try:
        write(root, "ok/a.parquet")
        write(root, "locked/b.parquet")
        os.chmod(os.path.join(root, "locked"), 0o000)
        os.chmod(root, 0o755)
        if os.geteuid() != 0:
            with pytest.raises(StorageAccessError):
                walk_data_files(root)
            return
        # root reads every directory: ask as an unprivileged user, in a forked child (the
        # interpreter's own files may not be readable by that user, so no new process)
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child reports by its exit code)
            code = 1
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                walk_data_files(root)
            except StorageAccessError as exc:
                code = 0 if isinstance(exc, PermissionError) and exc.errno == 13 else 2
            except BaseException:
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, (
            "an unreadable directory raises StorageAccessError (a PermissionError, errno 13)"
        )
    finally:
        os.chmod(os.path.join(root, "locked"), 0o755)
        shutil.rmtree(root)


_NAMES = (
    st.lists(
        st.sampled_from(["a", "b", ".", "_", "=", "é", "日", "-", "1", "._COPYING_", " "]),
        min_size=1,
        max_size=4,
    )
    .map("".join)
    .filter(lambda n: n not in (".", ".."))
)
_TREE = st.recursive(
    st.binary(max_size=3),
    lambda children: st.dictionaries(_NAMES, children, max_size=4),
    max_leaves=12,
)


def _make(path: str, node) -> None:
    if isinstance(node, bytes):
        with open(path, "wb") as fh:
            fh.write(node)
        return
    os.mkdir(path)
    for name, child in node.items():
        _make(os.path.join(path, name), child)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_NAMES, _TREE, max_size=5))
def test_random_trees_list_as_pyarrow_lists_them(tree):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "t")
        _make(root, tree)
        assert kernel(root) == arrow(root)
