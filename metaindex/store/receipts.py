"""What a process knows of the parts it wrote: :class:`PartReceipt` s, and the memory that
holds them until the parts are committed.

:meth:`TableStore.write_part <metaindex.store.TableStore.write_part>` remembers a receipt for
each part it writes (its size, SHA-256, object names, summary). Committing a part in a process
that holds its receipt checks the part's bytes against it (:func:`record_of`) instead of
decoding the part again; a build's task hands its receipts to the committing driver
(``take_receipt`` / ``expect_part``). The memory is bounded (:data:`_WRITTEN_MAX_PARTS` parts,
:data:`_WRITTEN_MAX_BYTES` bytes of names and summaries): a part whose receipt was forgotten is
decoded at commit, as one without a receipt.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from metaindex.errors import IntegrityError
from metaindex.store.escaping import OBJ_NAME, OBJ_SIZE
from metaindex.store.model import EncryptionLabels, PartRecord
from metaindex.store.summary import summarize

__all__ = [
    "PartReceipt",
    "receipt_for",
    "remember",
    "take",
    "held",
    "forget",
    "forget_table",
    "record_of",
]

_WRITTEN_MAX_PARTS = 4096
_WRITTEN_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class PartReceipt:
    """What :meth:`TableStore.write_part` knows of a part it wrote (picklable): committing
    the part in a process that holds its receipt checks the part's bytes (size, SHA-256)
    against it instead of decoding the part again. See :meth:`TableStore.take_receipt`.

    Attributes:
        path: the part's path relative to the table directory.
        bytes / sha256: the size and SHA-256 of the bytes written.
        rows / live_bytes / names: its object count, their summed ``obj_size``, ``obj_name``.
        summary: :func:`~metaindex.store.summarize` of the table written, for ``defs``.
        defs: the index definitions it was written with.
        table_id / encryption: the table id and labels it was written with.
    """

    path: str
    bytes: int
    sha256: str
    rows: int
    live_bytes: int
    names: pa.Array
    summary: pa.Table
    defs: tuple
    table_id: str
    encryption: EncryptionLabels | None

    @property
    def weight(self) -> int:
        return self.names.nbytes + self.summary.nbytes


def receipt_for(
    rel: str, pieces: list, written: pa.Table, defs: tuple, table_id: str, encryption
) -> PartReceipt:
    """The receipt of a part written as ``pieces`` (its bytes) from ``written`` (the table
    its encoder wrote)."""
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    return PartReceipt(
        rel,
        sum(map(len, pieces)),
        digest.hexdigest(),
        written.num_rows,
        pc.sum(written.column(OBJ_SIZE)).as_py() or 0,
        written.column(OBJ_NAME).combine_chunks(),
        summarize(written, defs),
        defs,
        table_id,
        encryption,
    )


# (storage key, table dir, rel path) -> (receipt, the key access of the store it came from)
_written: OrderedDict[tuple, tuple] = OrderedDict()
_written_bytes = 0
_written_lock = threading.Lock()


def remember(key: tuple, receipt: PartReceipt, key_access) -> None:
    """Remember a part's receipt under ``key`` (storage key, table directory, relative path);
    the oldest are forgotten past the bounds (their commit then decodes them, as for a part
    without one)."""
    global _written_bytes
    with _written_lock:
        old = _written.pop(key, None)
        if old is not None:
            _written_bytes -= old[0].weight
        _written[key] = (receipt, key_access)
        _written_bytes += receipt.weight
        while _written and (
            len(_written) > _WRITTEN_MAX_PARTS or _written_bytes > _WRITTEN_MAX_BYTES
        ):
            _written_bytes -= _written.popitem(last=False)[1][0].weight


def take(key: tuple) -> PartReceipt | None:
    """Forget a part's receipt; the receipt (None: none held)."""
    global _written_bytes
    with _written_lock:
        found = _written.pop(key, None)
        if found is None:
            return None
        _written_bytes -= found[0].weight
        return found[0]


def held(key: tuple) -> tuple:
    """``(receipt, key access of the store that wrote it)`` held for ``key`` ((None, None):
    none)."""
    with _written_lock:
        return _written.get(key, (None, None))


def forget(keys) -> None:
    for key in keys:
        take(key)


def forget_table(storage_key, table_dir: str) -> None:
    """Forget every receipt of one table's parts (its index was dropped, or changed on disk)."""
    with _written_lock:
        keys = [k for k in _written if k[0] == storage_key and k[1] == table_dir]
    forget(keys)


def record_of(rel: str, full: str, data: bytes, receipt: PartReceipt) -> PartRecord:
    """The record of the part at ``rel`` (``full`` on the storage) with a receipt, once
    ``data`` (its bytes now) are the ones written: what decoding them would give is what the
    writer encoded.

    Raises:
        IntegrityError: the size or SHA-256 differs from the receipt's.
    """
    if len(data) != receipt.bytes:
        raise IntegrityError(
            f"{full}: the part changed after it was written: "
            f"{len(data)} bytes, {receipt.bytes} were written"
        )
    if hashlib.sha256(data).hexdigest() != receipt.sha256:
        raise IntegrityError(
            f"{full}: the part changed after it was written: its "
            "SHA-256 is not that of the bytes written"
        )
    return PartRecord(
        rel, receipt.rows, receipt.bytes, receipt.sha256, (), receipt.live_bytes, receipt.summary
    )
