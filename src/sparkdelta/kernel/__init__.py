"""The Delta transaction-log kernel: pure Python and Arrow, no Spark.

Start from ``Table``: ``Table(path).snapshot()`` for state, ``.transaction()`` to commit.

The names below are imported on first use, not with the package: a program that only
reads (the ``sparkdelta`` CLI) then never loads the writer's modules (transactions,
conflict checks, checkpoints, deletion vectors and their pyroaring), and starts sooner.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .actions import AddCDCFile, AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, SetTransaction
    from .conflicts import IsolationLevel
    from .errors import (
        ConcurrentAppendException,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadException,
        ConcurrentModificationException,
        ConcurrentTransactionException,
        ConcurrentWriteException,
        DeletionVectorError,
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
    from .storage import Storage
    from .table import Table
    from .transaction import CommitResult, Transaction

_MODULES = {
    "actions": ("AddCDCFile", "AddFile", "DomainMetadata", "Metadata", "Protocol", "RemoveFile", "SetTransaction"),
    "conflicts": ("IsolationLevel",),
    "errors": (
        "ConcurrentAppendException",
        "ConcurrentDeleteDeleteException",
        "ConcurrentDeleteReadException",
        "ConcurrentModificationException",
        "ConcurrentTransactionException",
        "ConcurrentWriteException",
        "DeletionVectorError",
        "DeltaError",
        "InvalidLogError",
        "InvalidTableOperationError",
        "MetadataChangedException",
        "ProtocolChangedException",
        "StorageError",
        "TableNotFoundError",
        "UnsupportedFeatureError",
        "VersionNotFoundError",
    ),
    "snapshot": ("Snapshot",),
    "storage": ("Storage",),
    "table": ("Table",),
    "transaction": ("CommitResult", "Transaction"),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}

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
    "Storage",
    "StorageError",
    "Table",
    "TableNotFoundError",
    "Transaction",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
