"""One error hierarchy for metaindex.

Every failure metaindex raises on purpose is a :class:`MetaIndexError`. Children also inherit
the builtin that fits, so ``except ValueError`` keeps working for callers who do not know us,
and the builtins pyarrow's errors derive from for the same situation, so code written for
``pyarrow.parquet`` keeps catching them: corrupt input and failed encodes are ``OSError`` (as
parquet-cpp's ``ParquetException``) and ``ValueError`` (as ``ArrowInvalid``); unsupported
features ``NotImplementedError`` (as ``ArrowNotImplementedError``); failed decryption or
verification ``OSError``; missing keys ``PermissionError`` (an ``OSError``).

This module imports nothing of metaindex: it is the one Python module the Cython kernels
(``cython_ext/``) import, so that kernels raise the same typed errors users catch. That is a
deliberate, narrow exception to DESIGN.md's "kernels import no Python layer" rule.
"""

from __future__ import annotations

__all__ = [
    "MetaIndexError",
    "DecodeError",
    "EncodeError",
    "IntegrityError",
    "StoreDamageError",
    "KeyAccessError",
    "UnsupportedVersionError",
    "UnsupportedFeatureError",
    "UnsupportedFormatError",
    "MissingDependencyError",
    "CommitConflictError",
    "UnsafeRetentionError",
    "SchemaError",
    "ExpressionError",
    "IndexDefinitionError",
    "StorageError",
    "StorageAccessError",
    "StorageNotFoundError",
    "DeltaLogError",
    "DeltaLogDamageError",
    "DeltaLogGapError",
    "DeltaVersionError",
    "DeltaTableNotFoundError",
    "UnsupportedDeltaFeatureError",
]


class MetaIndexError(Exception):
    """Base of every error metaindex raises on purpose."""


class DecodeError(MetaIndexError, ValueError, OSError):
    """Bytes that cannot be decoded: truncated, corrupt or hostile input.

    Attributes:
        offset: position in the input where decoding failed (None if unknown).
        needed: bytes the decoder needed at ``offset`` (None if not a length problem).
        remaining: bytes that were left at ``offset`` (None if not a length problem).
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        needed: int | None = None,
        remaining: int | None = None,
    ) -> None:
        self.offset = offset
        self.needed = needed
        self.remaining = remaining
        detail = []
        if offset is not None:
            detail.append(f"at offset {offset}")
        if needed is not None:
            detail.append(f"needed {needed} bytes")
        if remaining is not None:
            detail.append(f"{remaining} remaining")
        super().__init__(f"{message} ({', '.join(detail)})" if detail else message)

    def __reduce__(self):  # keep pickling (process pools) working with keyword-only fields
        return (_rebuild_decode_error, (self.args[0], self.offset, self.needed, self.remaining))


def _rebuild_decode_error(message, offset, needed, remaining):
    err = DecodeError(message)  # ``message`` already carries the detail suffix
    err.offset, err.needed, err.remaining = offset, needed, remaining
    return err


class EncodeError(MetaIndexError, ValueError, OSError):
    """Values that cannot be encoded as asked (wrong type, out of range, over a limit)."""


class IntegrityError(MetaIndexError, OSError):
    """Authenticated data failed verification (tampered, swapped or wrong-key module)."""


class StoreDamageError(IntegrityError):
    """A metadata store whose log, checkpoints or parts do not verify: a gap in the log, an
    entry or checkpoint that fails its checksum or does not parse, a part that is missing or
    damaged. ``refresh()`` repairs it (``metaindex check`` lists what is wrong).

    Attributes:
        problems: one line per damaged file or version, each naming it.
    """

    def __init__(self, message: str, problems=()):
        super().__init__(message)
        self.problems = tuple(problems)

    def __reduce__(self):
        return (type(self), (self.args[0], self.problems))


class KeyAccessError(MetaIndexError, PermissionError):
    """A key needed to read or write encrypted data is missing or cannot be retrieved."""


class UnsupportedVersionError(MetaIndexError):
    """A format version newer than this metaindex understands."""


class UnsupportedFeatureError(MetaIndexError, NotImplementedError):
    """A valid input that uses a feature metaindex does not support (e.g. a codec)."""


class UnsupportedFormatError(UnsupportedFeatureError):
    """A table or data format name no format is registered under
    (``metaindex.formats``), or a format option the format does not take.

    Attributes:
        format: the format name asked for.
    """

    def __init__(self, message: str, format: str | None = None):
        super().__init__(message)
        self.format = format

    def __reduce__(self):
        return (type(self), (self.args[0], self.format))


class MissingDependencyError(UnsupportedFeatureError, ImportError):
    """An optional dependency a feature needs is not installed (the message says which extra
    to install, e.g. ``pip install metaindex[plot]``)."""


class CommitConflictError(MetaIndexError):
    """Another writer committed the same version first and the change no longer applies."""


class UnsafeRetentionError(MetaIndexError, ValueError):
    """A ``vacuum`` retention below the store's floor (``metaindex.store.MIN_RETAIN``) without
    ``force=True``: versions that concurrent readers and writers may still use would go."""


class SchemaError(MetaIndexError, ValueError):
    """A schema or column reference that does not fit the data."""


class ExpressionError(MetaIndexError, ValueError):
    """A predicate that cannot be parsed or bound: unsupported SQL syntax, an unreadable literal."""


class IndexDefinitionError(MetaIndexError, ValueError):
    """An index that cannot be defined: an unknown kind (the message lists the known ones) or
    parameters the kind does not take or accept."""


class StorageError(MetaIndexError, OSError):
    """An object store (S3, GCS, Azure) refused or failed a request: the service is unreachable,
    answered with an error, or is misconfigured (bad endpoint, region, options); or a local
    table listing's system call failed (``errno`` set)."""


class StorageAccessError(StorageError, PermissionError):
    """The object store refused the credentials (unknown key, bad signature, access denied), or
    a local directory below a table root may not be read (``errno`` EACCES/EPERM)."""


class StorageNotFoundError(StorageError):
    """The bucket or container does not exist (a missing object inside an existing bucket is
    a plain ``FileNotFoundError``)."""


class DeltaLogError(MetaIndexError, OSError):
    """A Delta Lake transaction log (``_delta_log/``) that cannot give a correct snapshot or
    change list: :mod:`metaindex.delta` raises this (or a child) rather than return a file
    list it cannot vouch for.

    Attributes:
        table: the table root (None if unknown).
        version: the table version concerned (None if not one version).
        path: the log file concerned, relative to the table root (None if not one file).
    """

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        version: int | None = None,
        path: str | None = None,
    ):
        super().__init__(message)
        self.table, self.version, self.path = table, version, path

    def __str__(self) -> str:
        return self.args[0] if self.args else ""

    def __reduce__(self):
        return (
            _rebuild_delta_error,
            (type(self), self.args[0], self.table, self.version, self.path),
        )


def _rebuild_delta_error(cls, message, table, version, path):
    return cls(message, table=table, version=version, path=path)


class DeltaLogDamageError(DeltaLogError, ValueError):
    """A log file that does not parse or breaks the protocol: malformed JSON, an action with a
    missing or wrongly typed field, a checkpoint that cannot be read or disagrees with its
    name, a sidecar of the wrong size, a snapshot that contradicts the version checksum
    (``.crc``) the writer left."""


class DeltaLogGapError(DeltaLogError):
    """A commit the snapshot needs is missing while later ones exist (a hole in the log)."""


class DeltaVersionError(DeltaLogError, ValueError):
    """A version or timestamp the log cannot give: newer than the latest commit, older than
    the earliest version still reconstructable after log cleanup, or a timestamp outside the
    commits' time range (as Delta's time travel refuses it)."""


class DeltaTableNotFoundError(DeltaLogError, FileNotFoundError):
    """No Delta table at the path: no ``_delta_log/`` or no commit and no checkpoint in it."""


class UnsupportedDeltaFeatureError(UnsupportedFeatureError):
    """A Delta table whose protocol needs a reader feature (or reader version) metaindex
    cannot stay sound under.

    Attributes:
        features: the reader features (or ``minReaderVersion=N``) that are not supported.
    """

    def __init__(self, message: str, features=()):
        super().__init__(message)
        self.features = tuple(features)

    def __reduce__(self):
        return (type(self), (self.args[0], self.features))
