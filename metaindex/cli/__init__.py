"""The ``metaindex`` command (also ``python -m metaindex``).

Commands: ``build``, ``refresh``, ``compact``, ``vacuum``, ``describe`` (``--plot FILE``),
``check``, ``advise``, ``history``, ``drop``, ``prune TABLE --where "..."`` and ``inspect FILE``;
``metaindex COMMAND --help`` shows each one's options and examples. Every command takes
``--json`` (exactly one JSON document on stdout — also for errors: ``{"error": {...}}``),
``--quiet`` and ``--debug``. Progress bars and spinners go to
stderr and only when it is a terminal.

An error is one line on stderr, ``error: <what went wrong>``, and an exit code per family
(the traceback only with ``--debug``):

====  ==========================================================================
Code  Family
====  ==========================================================================
0     success
1     other metaindex error (already indexed, no data files, a bad value)
2     usage: unknown option, missing argument, conflicting options (click)
3     not found: no such file or directory, a table without an index
4     corrupt data: ``DecodeError``, ``IntegrityError`` (checksum, GCM tag),
      ``StoreDamageError``; ``check`` found damage
5     key access: ``KeyAccessError`` (no KMS, a wrong or missing key)
6     bad column or predicate: ``SchemaError``, ``ExpressionError``
7     a concurrent writer won: ``CommitConflictError``
8     unsupported: ``UnsupportedFeatureError``, ``UnsupportedVersionError``
9     object store: ``StorageError`` (a missing bucket, refused credentials, a failed service)
70    internal error (a bug: rerun with ``--debug`` and report the traceback)
130   interrupted (Ctrl-C)
====  ==========================================================================

The mapping lives in :mod:`metaindex.cli.errors` only.
"""

from __future__ import annotations

import json
import sys
import traceback

__all__ = ["main"]


def _one_line(exc: BaseException) -> str:
    format_message = getattr(exc, "format_message", None)  # click's own wording
    text = (format_message() if callable(format_message) else str(exc)).strip() or type(
        exc
    ).__name__
    return " ".join(text.split())


def _report(exc: BaseException, state: dict) -> int:
    import click

    from metaindex.cli.errors import INTERNAL, INTERRUPTED, KEY, family

    code, name = family(exc)
    if state.get("debug") and not isinstance(exc, click.ClickException):
        traceback.print_exception(exc, file=sys.stderr)
    if code == INTERRUPTED:
        message = "interrupted"
    elif code == INTERNAL:
        message = (
            f"internal error: {type(exc).__name__}: {_one_line(exc)} (rerun with "
            "--debug for the traceback)"
        )
    else:
        message = _one_line(exc)
    if code == KEY and not state.get("kms"):
        message += " (pass --kms SPEC, or set METAINDEX_KMS)"
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    if state.get("json"):
        doc = {
            "error": {"code": code, "family": name, "type": type(exc).__name__, "message": message}
        }
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    return code


def main(argv=None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``) and exit with its code."""
    import click

    from metaindex.cli.app import STATE, cli

    STATE.update(debug=False, json=False, kms=False, storage_options={})
    try:
        code = cli.main(args=argv, prog_name="metaindex", standalone_mode=False)
        code = code if isinstance(code, int) else 0
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.Abort as exc:
        interrupted = isinstance(exc.__context__, KeyboardInterrupt)
        sys.stderr.write("error: interrupted\n" if interrupted else "error: aborted\n")
        code = 130 if interrupted else 1
    except BaseException as exc:  # noqa: BLE001 - every error becomes one line and a code
        if isinstance(exc, SystemExit):
            raise
        code = _report(exc, STATE)
    sys.exit(code)
