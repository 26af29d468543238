"""DESCRIBE DETAIL's facts about a table, from its snapshot alone.

Kernel code, so the CLI's ``describe`` and Spark's ``DESCRIBE DETAIL`` /
``DeltaTable.detail()`` read the same facts; DESCRIBE HISTORY is ``Table.history``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from .checksum import read_checksum
from .clustering import clustering_columns
from .protocol import reader_features, writer_features
from .snapshot import Snapshot


@dataclass(frozen=True)
class TableDetail:
    """delta-spark's DESCRIBE DETAIL columns (times in epoch milliseconds, the location as the kernel spells it)."""

    id: str
    name: str | None
    description: str | None
    location: str
    created_at: int | None
    last_modified: int
    partition_columns: list[str]
    clustering_columns: list[str]
    num_files: int
    size_in_bytes: int
    properties: dict[str, str]
    min_reader_version: int
    min_writer_version: int
    table_features: list[str]


def table_detail(snapshot: Snapshot) -> TableDetail:
    """The table's detail at ``snapshot``; files are counted and sized by the version's checksum,
    else from their ``size`` column only."""
    metadata = snapshot.metadata
    protocol = snapshot.protocol
    recorded = read_checksum(snapshot.storage, snapshot.table_root, snapshot.version) if snapshot.loaded_paths() is None else None
    if recorded is not None:  # the version's checksum: no log replay
        num_files, size_in_bytes = recorded.num_files, recorded.table_size_bytes
    else:
        sizes = snapshot.active_files(["size"]).column("size")
        num_files, size_in_bytes = len(sizes), int(pc.sum(sizes).as_py() or 0)
    return TableDetail(
        id=metadata.id,
        name=metadata.name,
        description=metadata.description,
        location=snapshot.table_root,
        created_at=metadata.created_time,
        last_modified=snapshot.timestamp,
        partition_columns=list(metadata.partition_columns),
        clustering_columns=clustering_columns(snapshot) or [],
        num_files=num_files,
        size_in_bytes=size_in_bytes,
        properties=dict(metadata.configuration),
        min_reader_version=protocol.min_reader_version,
        min_writer_version=protocol.min_writer_version,
        table_features=sorted(reader_features(protocol) | writer_features(protocol)),
    )
