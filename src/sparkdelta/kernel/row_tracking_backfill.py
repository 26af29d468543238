"""Turning row tracking on for a table that already has files, as delta-spark's backfill does.

The spec lets ``delta.enableRowTracking`` be set only once every file has row ids. So,
before the metadata change, delta-spark commits the protocol that supports the feature
(``UPGRADE PROTOCOL``; from then on every commit assigns ids to its new files), then
re-adds each file that still lacks ids, unchanged but for the ids it is given
(``ROW TRACKING BACKFILL``). Both are ordinary commits, safe against concurrent writers: a
file removed meanwhile makes the backfill conflict rather than come back.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pyarrow.compute as pc

from . import row_tracking
from .features import is_true
from .file_actions import add_actions, file_paths
from .protocol import required_protocol
from .snapshot import Snapshot
from .table import Table


def turns_on(current: dict[str, str], wanted: dict[str, str]) -> bool:
    """Whether a table configured ``current`` gets ``delta.enableRowTracking`` by the configuration ``wanted``."""
    return is_true(wanted, row_tracking.ENABLE) and not is_true(current, row_tracking.ENABLE)


def backfill(table: Table, snapshot: Snapshot) -> Snapshot:
    """Give every file of the table row ids, supporting the feature first; the snapshot after.

    Nothing is committed for what is done already (the feature supported, no file without ids).
    """
    if not row_tracking.is_supported(snapshot.protocol):
        enabled = replace(snapshot.metadata, configuration={**snapshot.configuration, row_tracking.ENABLE: "true"})
        protocol = required_protocol(enabled, snapshot.protocol)
        parameters = {"newProtocol": json.dumps(protocol.to_dict(), separators=(",", ":"))}
        table.transaction(read_snapshot=snapshot).commit([protocol], "UPGRADE PROTOCOL", parameters)
        snapshot = table.snapshot()
    files = snapshot.files
    missing = files.filter(pc.is_null(files.column("baseRowId")))
    if missing.num_rows == 0:
        return snapshot
    missing = missing.take(pc.sort_indices(missing.column("path")))  # delta-spark's order: by path
    transaction = table.transaction(read_snapshot=snapshot)
    transaction.mark_files_read(file_paths(missing))
    transaction.commit(add_actions(missing, data_change=False), row_tracking.BACKFILL_OPERATION, {"batchId": "0"})
    return table.snapshot()
