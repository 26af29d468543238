"""delta-spark's ``delta.exceptions``: the commit conflicts under their Python names."""

from __future__ import annotations

from sparkdelta.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeltaConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
)

__all__ = [
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "DeltaConcurrentModificationException",
    "MetadataChangedException",
    "ProtocolChangedException",
]
