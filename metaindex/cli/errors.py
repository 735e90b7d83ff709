"""Exit codes of the ``metaindex`` command: every error family maps to one code, here only.

The table below is printed at the end of ``metaindex --help`` and repeated in the package
docstring; :func:`family` is the one place an exception becomes a code.
"""

from __future__ import annotations

import click

from metaindex.errors import (
    CommitConflictError,
    DecodeError,
    ExpressionError,
    IntegrityError,
    KeyAccessError,
    MetaIndexError,
    SchemaError,
    StorageError,
    StoreDamageError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
)

__all__ = ["EXIT_CODES", "EXIT_TABLE", "NotFound", "family", "exit_code_of_damage"]


class NotFound(MetaIndexError):
    """A table without an index (the CLI's own check, reported like a bad path)."""


OK = 0
OTHER = 1
USAGE = 2
NOT_FOUND = 3
CORRUPT = 4
KEY = 5
INPUT = 6
CONFLICT = 7
UNSUPPORTED = 8
STORAGE = 9
INTERNAL = 70
INTERRUPTED = 130

EXIT_CODES = {
    OK: "success",
    OTHER: "other metaindex error (e.g. already indexed, no data files, bad value)",
    USAGE: "usage: unknown option, missing argument (click)",
    NOT_FOUND: "not found: no such file or directory, a table without an index",
    CORRUPT: "corrupt data: DecodeError, IntegrityError (checksum, GCM tag), StoreDamageError; "
    "`check` found damage",
    KEY: "key access: KeyAccessError (no KMS, wrong or missing key)",
    INPUT: "bad column or predicate: SchemaError, ExpressionError",
    CONFLICT: "concurrent writer won: CommitConflictError",
    UNSUPPORTED: "unsupported: UnsupportedFeatureError, UnsupportedVersionError",
    STORAGE: "object store: StorageError (bucket missing, credentials refused, service failed)",
    INTERNAL: "internal error (a bug: rerun with --debug and report the traceback)",
    INTERRUPTED: "interrupted (Ctrl-C)",
}

EXIT_TABLE = "\b\nExit codes:\n" + "\n".join(
    f"  {code:<5}{text}" for code, text in EXIT_CODES.items()
)

# most specific first: KeyAccessError is also a PermissionError (an OSError), DecodeError a
# ValueError
_FAMILIES = (
    ((NotFound,), NOT_FOUND, "not found"),
    ((DecodeError, IntegrityError), CORRUPT, "corrupt"),
    ((KeyAccessError,), KEY, "key access"),
    ((SchemaError, ExpressionError), INPUT, "bad column or predicate"),
    ((CommitConflictError,), CONFLICT, "commit conflict"),
    ((UnsupportedFeatureError, UnsupportedVersionError), UNSUPPORTED, "unsupported"),
    ((StorageError,), STORAGE, "object store"),
    ((MetaIndexError,), OTHER, "metaindex"),
    (
        (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError),
        NOT_FOUND,
        "not found",
    ),
    ((OSError,), OTHER, "i/o"),
    ((TypeError, ValueError), OTHER, "bad value"),
    ((click.ClickException,), USAGE, "usage"),
    ((KeyboardInterrupt,), INTERRUPTED, "interrupted"),
)


def exit_code_of_damage() -> int:
    """The code of a store that ``metaindex check`` finds damaged: that of
    :class:`~metaindex.errors.StoreDamageError`."""
    return family(StoreDamageError("damaged"))[0]


def family(exc: BaseException) -> tuple[int, str]:
    """``(exit code, family name)`` of an exception (INTERNAL for anything unexpected)."""
    if isinstance(exc, click.ClickException):
        return exc.exit_code, "usage"
    for types, code, name in _FAMILIES:
        if isinstance(exc, types):
            return code, name
    return INTERNAL, "internal"
