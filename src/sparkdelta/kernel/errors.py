"""Exceptions raised by the kernel: the kernel's one error module (no pyspark here, ever).

Names follow delta-spark's so that code catching ``ConcurrentAppendException`` and
friends ports unchanged. Every message names the table and, where one applies, the
version, so an operator can act on it without a traceback.

Each error may carry delta-spark's error class for the same failure (``error_class``,
also answered by ``getCondition()`` as pyspark's exceptions answer it). The Spark surface
(``sparkdelta.exceptions``) turns the kernel errors a Spark user meets into the classes
delta-spark raises there (``AnalysisException``...), keeping the class and the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .log_files import LogFile


class DeltaError(Exception):
    """Base of every error the kernel raises on purpose."""

    error_class: str | None = None

    def __init__(self, message: str = "", *, error_class: str | None = None) -> None:
        super().__init__(message)
        if error_class is not None:
            self.error_class = error_class  # a raise site that knows better than its class

    def getCondition(self) -> str | None:
        """delta-spark's error class for this failure, when one fits (pyspark's name for it)."""
        return self.error_class


class TableNotFoundError(DeltaError):
    """The path holds no Delta table (no ``_delta_log`` with commits)."""

    error_class = "DELTA_TABLE_NOT_FOUND"


class VersionNotFoundError(DeltaError):
    """A requested version or timestamp lies outside the table's reconstructable history."""

    error_class = "DELTA_VERSION_NOT_FOUND"


class InvalidLogError(DeltaError):
    """The log is malformed: a gap in versions, no protocol or metadata, unreadable files."""


class PathOutsideTableError(InvalidLogError):
    """A relative file path in the log leaves the table root (``..``, ``%2E%2E``, ``%2F``...).

    The protocol's relative paths name files under the root; following one out would
    read, rewrite or delete files of another table or the host.
    """


class DeletionVectorError(InvalidLogError):
    """A deletion vector that cannot be found, decoded, or fails its own checks."""


class DamagedCheckpointError(Exception):
    """A checkpoint part (or one of its sidecars) that cannot be decoded.

    Internal, hence no ``DeltaError``: snapshots catch it and replay past the checkpoint,
    or raise ``InvalidLogError``.
    """

    def __init__(self, part: LogFile, path: str, cause: Exception) -> None:
        super().__init__(f"{path}: {cause}")
        self.part = part
        self.path = path
        self.cause = cause


class StorageError(DeltaError, OSError):
    """The object store refused or could not answer: bad credentials, a missing bucket or
    container, an unreachable endpoint. The message names the table and the cause.

    An ``OSError`` too, so code that handles I/O failures generically keeps doing so; never a
    ``FileNotFoundError``, so a missing bucket is not mistaken for a missing log file.
    """


class UnsupportedFeatureError(DeltaError):
    """The table needs a protocol version or table feature this library does not implement."""

    error_class = "DELTA_UNSUPPORTED_FEATURES_FOR_READ"

    def __init__(self, message: str, features: frozenset[str] = frozenset(), *, error_class: str | None = None) -> None:
        super().__init__(message, error_class=error_class)
        self.features = features


class InvalidTableOperationError(DeltaError):
    """An operation the table's protocol or properties forbid (e.g. deleting from appendOnly)."""


class InvalidTablePropertyError(DeltaError, ValueError):
    """A table property with a value it cannot take, or a key Delta does not know."""


class UnsupportedModeError(DeltaError, ValueError):
    """A command given a mode it does not have (``GENERATE xyz FOR TABLE``)."""

    error_class = "DELTA_MODE_NOT_SUPPORTED"


class PostCommitHookError(DeltaError):
    """The commit landed, but work that follows it failed (a manifest that could not be
    written): the version stands, and ``version`` names it."""

    error_class = "DELTA_POST_COMMIT_HOOK_FAILED"

    def __init__(self, message: str, version: int, *, error_class: str | None = None) -> None:
        super().__init__(message, error_class=error_class)
        self.version = version


class VacuumRetentionError(DeltaError, ValueError):
    """A retention shorter than the table's, refused while the safety check is on (delta-spark's check)."""

    error_class = "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"


class ChangeDataFeedError(DeltaError):
    """A change feed that cannot be read: CDF off for a version, a bad range, a cleaned-up log."""


class StreamingSourceError(DeltaError):
    """A stream over a Delta table that cannot go on: a change its options do not allow, a
    schema change, a starting point the table lacks, a commit gone from the log."""


class CloneTargetExistsError(DeltaError):
    """The clone's target already holds a Delta table (and ``replace`` was not asked) or other data files."""

    error_class = "DELTA_TABLE_ALREADY_EXISTS"


class RestoreFilesMissingError(DeltaError):
    """The version to restore reads files that are gone (removed by VACUUM)."""


class ConcurrentModificationException(DeltaError):
    """A concurrent commit made this transaction's commit logically invalid
    (delta-spark's ``DeltaConcurrentModificationException``)."""


class ConcurrentWriteException(ConcurrentModificationException):
    """Generic concurrent commit conflict."""

    error_class = "DELTA_CONCURRENT_WRITE"


class ConcurrentAppendException(ConcurrentModificationException):
    """Files were added that this transaction should have read."""

    error_class = "DELTA_CONCURRENT_APPEND"


class ConcurrentDeleteReadException(ConcurrentModificationException):
    """A file this transaction read was removed concurrently."""

    error_class = "DELTA_CONCURRENT_DELETE_READ"


class ConcurrentDeleteDeleteException(ConcurrentModificationException):
    """A file this transaction removes was removed concurrently."""

    error_class = "DELTA_CONCURRENT_DELETE_DELETE"


class MetadataChangedException(ConcurrentModificationException):
    """The table metadata changed concurrently."""

    error_class = "DELTA_METADATA_CHANGED"


class ProtocolChangedException(ConcurrentModificationException):
    """The table protocol changed concurrently (or the table was created concurrently)."""

    error_class = "DELTA_PROTOCOL_CHANGED"


class ConcurrentTransactionException(ConcurrentModificationException):
    """The same application transaction id or domain was committed concurrently."""

    error_class = "DELTA_CONCURRENT_TRANSACTION"
