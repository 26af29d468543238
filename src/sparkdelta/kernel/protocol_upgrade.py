"""Protocol upgrades on demand: delta-spark's ``upgradeTableProtocol`` and ``addFeatureSupport``.

Both commit a protocol action alone. The new protocol is the one ``required_protocol``
would pick were the table to ask for it by property (``delta.minReaderVersion``,
``delta.minWriterVersion``, ``delta.feature.<name>``), so the upgrade rules live in one
place: features the old protocol supported stay listed, and nothing is ever downgraded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .protocol import (
    FEATURE_PROP_PREFIX,
    MIN_READER_VERSION_PROP,
    MIN_WRITER_VERSION_PROP,
    require_writable,
    required_protocol,
)
from .table import Table


def _commit_protocol_for(table: Table, asked: dict[str, str], operation: str, parameters: dict[str, Any]) -> None:
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    wanted = replace(snapshot.metadata, configuration={**snapshot.metadata.configuration, **asked})
    protocol = required_protocol(wanted, snapshot.protocol)
    if protocol is snapshot.protocol:
        return
    require_writable(protocol, snapshot.metadata, table.root)
    table.transaction(read_snapshot=snapshot).commit([protocol], operation, parameters)


def upgrade_protocol(table: Table, reader_version: int, writer_version: int) -> None:
    """Raise the protocol to at least (``reader_version``, ``writer_version``); a version below the
    table's is kept as it is (delta-spark: protocols are never downgraded, and asking is no error)."""
    current = table.snapshot().protocol
    reader_version = max(reader_version, current.min_reader_version)
    writer_version = max(writer_version, current.min_writer_version)
    asked = {MIN_READER_VERSION_PROP: str(reader_version), MIN_WRITER_VERSION_PROP: str(writer_version)}
    parameters = {"newProtocol": {"minReaderVersion": reader_version, "minWriterVersion": writer_version}}
    _commit_protocol_for(table, asked, "UPGRADE PROTOCOL", parameters)


def add_feature(table: Table, feature: str) -> None:
    """Add ``feature`` to the table's protocol (unknown names are refused by name)."""
    _commit_protocol_for(table, {f"{FEATURE_PROP_PREFIX}{feature}": "supported"}, "UPGRADE PROTOCOL", {"feature": feature})
