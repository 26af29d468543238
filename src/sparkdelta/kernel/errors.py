"""Exceptions raised by the kernel.

Names follow delta-spark's so that code catching ``ConcurrentAppendException`` and
friends ports unchanged. Every message names the table and, where one applies, the
version, so an operator can act on it without a traceback.
"""

from __future__ import annotations


class DeltaError(Exception):
    """Base of every error the kernel raises on purpose."""


class TableNotFoundError(DeltaError):
    """The path holds no Delta table (no ``_delta_log`` with commits)."""


class VersionNotFoundError(DeltaError):
    """A requested version or timestamp lies outside the table's reconstructable history."""


class InvalidLogError(DeltaError):
    """The log is malformed: a gap in versions, no protocol or metadata, unreadable files."""


class PathOutsideTableError(InvalidLogError):
    """A relative file path in the log leaves the table root (``..``, ``%2E%2E``, ``%2F``...).

    The protocol's relative paths name files under the root; following one out would
    read, rewrite or delete files of another table or the host.
    """


class StorageError(DeltaError, OSError):
    """The object store refused or could not answer: bad credentials, a missing bucket or
    container, an unreachable endpoint. The message names the table and the cause.

    An ``OSError`` too, so code that handles I/O failures generically keeps doing so; never a
    ``FileNotFoundError``, so a missing bucket is not mistaken for a missing log file.
    """


class UnsupportedFeatureError(DeltaError):
    """The table needs a protocol version or table feature this library does not implement."""

    def __init__(self, message: str, features: frozenset[str] = frozenset()) -> None:
        super().__init__(message)
        self.features = features


class InvalidTableOperationError(DeltaError):
    """An operation the table's protocol or properties forbid (e.g. deleting from appendOnly)."""


class ConcurrentModificationException(DeltaError):
    """A concurrent commit made this transaction's commit logically invalid."""


class ConcurrentWriteException(ConcurrentModificationException):
    """Generic concurrent commit conflict."""


class ConcurrentAppendException(ConcurrentModificationException):
    """Files were added that this transaction should have read."""


class ConcurrentDeleteReadException(ConcurrentModificationException):
    """A file this transaction read was removed concurrently."""


class ConcurrentDeleteDeleteException(ConcurrentModificationException):
    """A file this transaction removes was removed concurrently."""


class MetadataChangedException(ConcurrentModificationException):
    """The table metadata changed concurrently."""


class ProtocolChangedException(ConcurrentModificationException):
    """The table protocol changed concurrently (or the table was created concurrently)."""


class ConcurrentTransactionException(ConcurrentModificationException):
    """The same application transaction id or domain was committed concurrently."""
