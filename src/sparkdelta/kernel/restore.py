"""RESTORE: one new commit after which the table reads as an earlier version did.

The commit removes the files the latest version has and the target lacks, and adds back
the target's files the latest lacks (with their stats and deletion vectors); the
target's metadata comes back too, but for the identity columns' high-water marks, and the
protocol never goes down (a table that gained a feature keeps it). A file that VACUUM already deleted cannot come back: the
restore is refused, naming it, before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .actions import Action
from .command_result import CommandResult
from .errors import RestoreFilesMissingError
from .file_actions import add_actions, remove_actions, storage_path
from .file_paths import canonical_paths
from .identity import with_merged_high_water_marks
from .replay import dv_unique_ids
from .snapshot import Snapshot
from .table import Table


@dataclass(frozen=True)
class RestoreMetrics:
    """delta-spark's RESTORE metrics."""

    table_size_after_restore: int
    num_of_files_after_restore: int
    num_removed_files: int
    num_restored_files: int
    removed_files_size: int
    restored_files_size: int

    def as_operation_metrics(self) -> dict[str, int]:
        return {
            "tableSizeAfterRestore": self.table_size_after_restore,
            "numOfFilesAfterRestore": self.num_of_files_after_restore,
            "numRemovedFiles": self.num_removed_files,
            "numRestoredFiles": self.num_restored_files,
            "removedFilesSize": self.removed_files_size,
            "restoredFilesSize": self.restored_files_size,
        }


def _keys(snapshot: Snapshot) -> pa.StringArray:
    """One key per active file: its canonical path and deletion vector."""
    files = snapshot.files
    paths = cast(pa.StringArray, canonical_paths(files.column("path").combine_chunks(), snapshot.table_root))
    vectors = dv_unique_ids(cast(pa.StructArray, files.column("deletionVector").combine_chunks()))
    # The stubs want the separator as an array too; Arrow takes a Python string.
    return cast(pa.StringArray, pc.binary_join_element_wise(paths, vectors, "\n"))  # type: ignore[call-overload]


def _only_in(snapshot: Snapshot, other: Snapshot) -> pa.Table:
    """Files active in ``snapshot`` and not in ``other``."""
    return snapshot.files.filter(pc.invert(pc.is_in(_keys(snapshot), value_set=_keys(other))))


def restore(table: Table, version: int | None = None, timestamp: datetime | str | int | None = None) -> CommandResult:
    """Commit the table back to ``version`` (or the version at ``timestamp``), with delta-spark's metrics."""
    if (version is None) == (timestamp is None):
        raise ValueError(f"{table.root}: RESTORE needs a version or a timestamp (one of them)")
    latest = table.snapshot()
    target = table.snapshot(version=version, timestamp=timestamp)
    restored, removed = _only_in(target, latest), _only_in(latest, target)
    missing = [
        p for p in cast(list[str], restored.column("path").to_pylist()) if not table.storage.exists(storage_path(table.root, p))
    ]
    if missing:
        raise RestoreFilesMissingError(
            f"{table.root}: cannot restore to version {target.version}: {len(missing)} of its data files no longer exist "
            f"(removed by VACUUM?), for example {missing[0]}"
        )
    restored_size = int(pc.sum(restored.column("size")).as_py() or 0)
    removed_size = int(pc.sum(removed.column("size")).as_py() or 0)
    metrics = RestoreMetrics(
        target.size_in_bytes, target.num_files, removed.num_rows, restored.num_rows, removed_size, restored_size
    )
    actions: list[Action] = [*remove_actions(removed, data_change=True), *add_actions(restored)]
    # The identity columns' high-water marks stay where they are: values generated after the
    # restored version may still be in the table's future (a RESTORE can be restored away).
    metadata = with_merged_high_water_marks(target.metadata, latest.metadata)
    if metadata.to_dict() != latest.metadata.to_dict():
        actions.insert(0, metadata)
    parameters: dict[str, Any] = {"version": target.version} if version is not None else {"timestamp": str(timestamp)}
    transaction = table.transaction(read_snapshot=latest)
    transaction.mark_read_whole_table()
    operation_metrics = metrics.as_operation_metrics()
    return CommandResult(transaction.commit(actions, "RESTORE", parameters, operation_metrics), operation_metrics)
