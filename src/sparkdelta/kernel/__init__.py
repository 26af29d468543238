"""The Delta transaction-log kernel: pure Python and Arrow, no Spark.

Start from ``Table``: ``Table(path).snapshot()`` for state, ``.transaction()`` to commit.
"""

from .actions import AddCDCFile, AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, SetTransaction
from .conflicts import IsolationLevel
from .deletion_vectors import DeletionVectorError
from .errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeltaError,
    InvalidLogError,
    InvalidTableOperationError,
    MetadataChangedException,
    ProtocolChangedException,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from .snapshot import Snapshot
from .table import Table
from .transaction import CommitResult, Transaction

__all__ = [
    "AddCDCFile",
    "AddFile",
    "CommitResult",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "DeletionVectorError",
    "DeltaError",
    "DomainMetadata",
    "InvalidLogError",
    "InvalidTableOperationError",
    "IsolationLevel",
    "Metadata",
    "MetadataChangedException",
    "Protocol",
    "ProtocolChangedException",
    "RemoveFile",
    "SetTransaction",
    "Snapshot",
    "StorageError",
    "Table",
    "TableNotFoundError",
    "Transaction",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]
