"""The pruning process: ``python -m metaindex.spark.pruned --protocol 2``.

Started and supervised by the metaindex Spark extension (``io.metaindex.spark.PruningProcess``)
in a JVM with no PySpark driver of its own (``spark-submit`` of a JVM or SQL job,
``spark-sql``, the Thrift server, a Spark Connect server). It reads framed requests on stdin and
answers on stdout, as ``specs/pruning-protocol.md`` says; it answers with the same functions as
the in-driver py4j callback (:func:`metaindex.spark.hook.handle_prune_request` and
:func:`~metaindex.spark.hook.handle_report`), so pruning stays one Python implementation. It
needs no pyspark and no JVM access; the index is found from the conf sent with each request.

Logs (and every :class:`~metaindex.spark.hook.SkippingWarning`, each saying why a scan read
every file) go to stderr, which the JVM copies into its own log. The process ends when its
stdin closes (the JVM exited or stopped it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "PROTOCOL",
    "PROTOCOLS",
    "MAX_HEADER",
    "ProtocolError",
    "read_frame",
    "write_frame",
    "serve",
    "main",
]

PROTOCOL = 2
"""The newest protocol version this process speaks (``specs/pruning-protocol.md``)."""

PROTOCOLS = (1, 2)
"""Every version it speaks: version 1 replies carry no stats line."""

MAX_HEADER = 64
"""Longest frame header line, in bytes (without its newline)."""

_MAX_PAYLOAD = 1 << 30
_KINDS = ("prune", "report")


class ProtocolError(Exception):
    """A malformed frame: the stream cannot be resynchronised, so the process ends."""


def read_frame(stream) -> tuple | None:
    """The next ``(kind, id, payload)`` of a binary stream; None at a clean end of stream.

    Raises:
        ProtocolError: a malformed header, or the stream ends inside a frame.
    """
    header = stream.readline(MAX_HEADER + 1)
    if not header:
        return None
    if not header.endswith(b"\n"):
        raise ProtocolError(f"frame header too long or cut: {header[:MAX_HEADER]!r}")
    words = header[:-1].split(b" ")
    if len(words) != 3 or not words[1].isdigit() or not words[2].isdigit():
        raise ProtocolError(f"malformed frame header {header!r}")
    length = int(words[2])
    if length > _MAX_PAYLOAD:
        raise ProtocolError(f"frame length {length} out of range")
    payload = stream.read(length)
    if len(payload) != length:
        raise ProtocolError("end of stream inside a frame")
    return words[0].decode("ascii", "replace"), int(words[1]), payload.decode("utf-8")


def write_frame(stream, lock: threading.Lock, kind: str, ident: int, payload: str) -> None:
    """Write one frame (whole, under ``lock``) and flush."""
    body = payload.encode("utf-8")
    with lock:
        stream.write(f"{kind} {ident} {len(body)}\n".encode("ascii") + body)
        stream.flush()


def serve(inp, out, workers: int = 2, protocol: int = PROTOCOL) -> None:
    """Answer frames from ``inp`` on ``out`` until ``inp`` ends (both binary streams).

    ``prune`` requests run on a pool of ``workers`` threads and are answered ``reply`` (the
    callback's text; under protocol 1 without its first line, the stats) or ``error`` (a
    message) under the request's id; ``report`` frames are recorded and not answered; an
    unknown kind is answered ``error``.

    Raises:
        ProtocolError: a malformed frame.
    """
    from metaindex.spark.hook import handle_prune_request, handle_report

    lock = threading.Lock()
    log = logging.getLogger("metaindex.spark.pruned")

    def answer(ident: int, request: str) -> None:
        try:
            reply = handle_prune_request(request)
        except BaseException as e:  # noqa: BLE001 - the JVM reads every file; say why
            log.warning("request %d failed: %s", ident, e, exc_info=True)
            write_frame(out, lock, "error", ident, f"{type(e).__name__}: {e}")
            return
        if protocol == 1:
            reply = reply.split("\n", 1)[1]
        write_frame(out, lock, "reply", ident, reply)

    def record(report: str) -> None:
        try:
            handle_report(report)
        except Exception:  # noqa: BLE001 - a lost report only leaves stats short
            log.warning("bad scan report %r", report, exc_info=True)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pruned") as pool:
        while True:
            frame = read_frame(inp)
            if frame is None:
                return
            kind, ident, payload = frame
            if kind == "prune":
                pool.submit(answer, ident, payload)
            elif kind == "report":
                pool.submit(record, payload)
            else:
                write_frame(
                    out,
                    lock,
                    "error",
                    ident,
                    f"unknown frame kind {kind!r}; this process speaks {_KINDS}",
                )


def main(argv=None) -> int:
    """Entry point; the exit code (0 at the end of stdin, 2 on a protocol version this
    process does not speak, 3 on a malformed frame)."""
    parser = argparse.ArgumentParser(
        prog="python -m metaindex.spark.pruned",
        description="metaindex pruning process (started by the metaindex Spark extension)",
    )
    parser.add_argument(
        "--protocol",
        type=int,
        default=PROTOCOL,
        help=f"protocol version the client speaks (this process: {PROTOCOLS})",
    )
    parser.add_argument("--workers", type=int, default=2, help="threads answering requests")
    args = parser.parse_args(argv)
    if args.protocol not in PROTOCOLS:
        print(
            f"metaindex pruned: protocol {args.protocol} requested, this metaindex speaks "
            f"{', '.join(map(str, PROTOCOLS))}: install the same metaindex version for the "
            f"JVM's jar and its Python (spark.metaindex.python)",
            file=sys.stderr,
        )
        return 2
    # stdout carries frames only: the protocol gets its own descriptor, and anything else
    # written to stdout (a stray print, a library) goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.captureWarnings(True)
    from metaindex.spark.hook import SkippingWarning  # heavy imports before we say we are ready

    warnings.simplefilter("always", SkippingWarning)  # every scan that reads all says why
    with out:
        write_frame(
            out, threading.Lock(), "hello", 0, f"metaindex-pruned {args.protocol} {os.getpid()}"
        )
        try:
            serve(sys.stdin.buffer, out, max(1, args.workers), args.protocol)
        except ProtocolError as e:
            print(f"metaindex pruned: {e}; exiting", file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
