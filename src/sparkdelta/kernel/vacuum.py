"""VACUUM: delete the files no version inside the retention window can read.

A data file may go when the latest snapshot does not reference it, no tombstone younger
than the retention window (``delta.deletedFileRetentionDuration``, default one week)
names it, and its own modification time is older than the window. Every version
committed inside the window, and the last one before it, reads only files that are
active now or were removed inside the window, so time travel to them keeps working.
Files a concurrent writer is adding are new, hence younger than the window: they stay.
Deletion-vector files follow the data files that use them; ``_change_data`` files and
files no log entry names go by age alone.

Hidden paths (``_``/``.`` prefixes: ``_delta_log``, ``_SUCCESS``) are never touched,
except ``_change_data``, partition directories such as ``_p=1``, and ``_delta_staging``:
what a killed write left there (it never reached the log) goes by age alone, so a write
still staging, whose files are younger than the window, keeps them (all but S3A's empty
folder markers, which obstore cannot name). (delta-spark stages
nothing: a killed write of its leaves its files among the table's, where they go by age.)

Log paths are compared decoded (``canonical_paths``), so every spelling of a file keeps
it. Nothing outside the table root is ever deleted: only listed files under it are
candidates, and a plan naming anything else (or ``_delta_log``) is refused whole. Files
the log names absolutely outside the root (a shallow clone's source) are never touched.
"""

from __future__ import annotations

import itertools
import os
import posixpath
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .checkpoint import DEFAULT_TOMBSTONE_RETENTION, parse_interval_ms
from .command_result import CommandResult
from .deletion_vectors import DeletionVectorDescriptor
from .errors import PathOutsideTableError, VacuumRetentionError
from .file_paths import CHANGE_DATA_DIR, STAGING_DIR, canonical_paths
from .log_files import LOG_DIR
from .snapshot import Snapshot
from .storage import FileStatus
from .table import Table

RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"


@dataclass(frozen=True)
class VacuumPlan:
    """What a VACUUM deletes, decided against one snapshot."""

    table_root: str
    version: int
    retention_ms: int
    default_retention_ms: int
    cutoff_ms: int
    files: tuple[FileStatus, ...]
    directories: tuple[str, ...]

    @property
    def size_in_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class VacuumResult(CommandResult):
    """A VACUUM: its VACUUM END commit and metrics, and the ``plan`` it carried out (a dry
    run, which commits nothing, only made it)."""

    plan: VacuumPlan


def table_retention_ms(snapshot: Snapshot) -> int:
    return parse_interval_ms(snapshot.configuration.get(RETENTION_PROPERTY, DEFAULT_TOMBSTONE_RETENTION))


def _is_hidden(name: str, partition_columns: tuple[str, ...]) -> bool:
    """delta-spark's rule for names VACUUM leaves alone."""
    if not name.startswith(("_", ".")):
        return False
    return not name.startswith(CHANGE_DATA_DIR) and not any(name.startswith(f"{c}=") for c in partition_columns)


def _collectable(table: Table, staged: FileStatus) -> bool:
    """Whether VACUUM may delete a staged object: on object stores, not the empty folders
    Hadoop's S3A writes as zero-byte keys ending in ``/``, which obstore lists without the
    ``/`` and so cannot delete; they hold no data, as an empty local folder holds none."""
    return staged.size > 0 or table.storage.local_path(staged.path) is not None


def _relative_inside(table_root: str, path: str) -> str | None:
    """``path`` relative to the root, once normalized, if it lies strictly inside it; else None."""
    scheme, sep, rest = path.partition("://")  # an object-store URL keeps its "//"
    normalized = scheme + sep + posixpath.normpath(rest) if sep else posixpath.normpath(path)
    prefix = table_root.rstrip("/") + "/"
    return normalized[len(prefix) :] if normalized.startswith(prefix) else None


def _deletable(table_root: str, path: str) -> bool:
    """Inside the root, outside its log: the only places VACUUM may delete."""
    relative = _relative_inside(table_root, path)
    return relative is not None and relative.split("/", 1)[0] != LOG_DIR


def _dv_files(table_root: str, deletion_vectors: pa.StructArray) -> set[str]:
    """Relative paths of the DV files that ``deletion_vectors`` (rows of a ``deletionVector`` column) use."""
    in_files = pc.not_equal(deletion_vectors.field("storageType"), pa.scalar("i")).fill_null(False)
    stored = deletion_vectors.filter(cast(pa.BooleanArray, in_files))
    paths = set()
    # The stubs type ``to_pylist`` for arrays of basic types only, not structs.
    for raw in cast(list[dict[str, Any]], stored.to_pylist()):  # type: ignore[misc]
        location = DeletionVectorDescriptor.from_dict(raw).absolute_path(table_root)
        relative = _relative_inside(table_root, location) if location is not None else None
        if relative is not None:
            paths.add(relative)
    return paths


def _referenced(snapshot: Snapshot, cutoff_ms: int) -> set[str]:
    """Relative, decoded paths of every file the snapshot or a tombstone inside the window references.

    Keys are decoded once, by ``canonical_paths``: decoding again would turn a file named
    ``a%2541`` (logged ``a%252541``) into ``a%41`` and lose it.
    """
    root = snapshot.table_root
    tombstones = snapshot.tombstones
    deleted_at = tombstones.column("deletionTimestamp").fill_null(pa.scalar(0, pa.int64()))
    young = tombstones.filter(pc.greater(deleted_at, pa.scalar(cutoff_ms, pa.int64())))
    paths: set[str] = set()
    for files in (snapshot.files, young):
        canonical = canonical_paths(files.column("path").combine_chunks(), root)
        paths.update(cast(list[str], canonical.to_pylist()))
        paths |= _dv_files(root, cast(pa.StructArray, files.column("deletionVector").combine_chunks()))
    return paths


def plan_vacuum(
    table: Table, retention_hours: float | None = None, *, check_retention: bool = True, now_ms: int | None = None
) -> VacuumPlan:
    """The files and empty directories VACUUM would delete now, at the latest version."""
    snapshot = table.snapshot()
    default_retention = table_retention_ms(snapshot)
    retention = default_retention if retention_hours is None else int(retention_hours * 3_600_000)
    if retention < 0:
        raise VacuumRetentionError(
            f"{table.root}: the retention must not be negative, got {retention_hours} hours",
            error_class="DELTA_VACUUM_RETENTION_PERIOD_NEGATIVE",
        )
    if check_retention and retention < default_retention:
        raise VacuumRetentionError(
            f"{table.root}: VACUUM with a retention of {retention / 3_600_000:g} hours, below the table's "
            f"{RETENTION_PROPERTY} of {default_retention / 3_600_000:g} hours, could delete files that running readers or "
            "writers still use and break time travel inside the window. Give a longer retention, or set "
            "spark.databricks.delta.retentionDurationCheck.enabled=false if you are sure"
        )
    cutoff = (now_ms if now_ms is not None else int(time.time() * 1000)) - retention
    referenced = _referenced(snapshot, cutoff)
    partitions = snapshot.partition_columns
    prefix = len(table.root) + 1
    listed = table.storage.list_tree(table.root, lambda name: not _is_hidden(name, partitions))
    visible = (status for status in listed if not _is_hidden(status.name, partitions))
    staged = (
        status
        for status in table.storage.list_tree(f"{table.root}/{STAGING_DIR}", lambda name: True)
        if _collectable(table, status)
    )
    doomed = [
        status
        for status in itertools.chain(visible, staged)
        if status.modification_time < cutoff
        and _deletable(table.root, status.path)  # whatever a store lists beside the root
        and status.path[prefix:] not in referenced
    ]
    directories = sorted({os.path.dirname(f.path) for f in doomed} - {table.root}, key=len, reverse=True)
    return VacuumPlan(table.root, snapshot.version, retention, default_retention, cutoff, tuple(doomed), tuple(directories))


def _refuse_foreign(plan: VacuumPlan) -> None:
    """A plan built elsewhere (or a stale one for another root) must not delete outside the table."""
    for path in (*(f.path for f in plan.files), *plan.directories):
        if not _deletable(plan.table_root, path):
            raise PathOutsideTableError(
                f"{plan.table_root}: the VACUUM plan for version {plan.version} names {path!r}, which is not a file "
                "of the table (outside its root, or in its log); refusing to delete anything"
            )


def _deleted_directories(table: Table, candidates: tuple[str, ...]) -> int:
    """Empty directories left behind, deepest first, climbing to (not including) the root."""
    count, seen = 0, set()
    for directory in candidates:
        while directory != table.root and directory not in seen and table.storage.delete_empty_directory(directory):
            seen.add(directory)
            count += 1
            directory = os.path.dirname(directory)
    return count


def execute_vacuum(
    table: Table, plan: VacuumPlan, parallelism: int = 8, progress: Callable[[Iterator[str], int], Iterator[str]] | None = None
) -> VacuumResult:
    """Delete the planned files in parallel, recording VACUUM START and VACUUM END in the history, as delta-spark does."""
    if plan.table_root != table.root:
        raise PathOutsideTableError(f"{table.root}: the VACUUM plan is for another table, {plan.table_root}")
    _refuse_foreign(plan)
    parameters = {
        "retentionCheckEnabled": plan.retention_ms >= plan.default_retention_ms,
        "defaultRetentionMillis": plan.default_retention_ms,
        "specifiedRetentionMillis": plan.retention_ms,
    }
    metrics = {"numFilesToDelete": len(plan.files), "sizeOfDataToDelete": plan.size_in_bytes}
    table.transaction().commit([], "VACUUM START", parameters, metrics)
    done = table.storage.delete_many([f.path for f in plan.files], parallelism)  # bulk requests on object stores
    for _ in progress(done, len(plan.files)) if progress else done:
        pass
    directories = _deleted_directories(table, plan.directories)
    end_metrics = {"numDeletedFiles": len(plan.files), "numVacuumedDirectories": directories}
    end = table.transaction().commit([], "VACUUM END", {"status": "COMPLETED"}, end_metrics)
    return VacuumResult(end, end_metrics, plan)


def vacuum(
    table: Table,
    retention_hours: float | None = None,
    *,
    dry_run: bool = False,
    check_retention: bool = True,
    parallelism: int = 8,
    progress: Callable[[Iterator[str], int], Iterator[str]] | None = None,
) -> VacuumResult:
    """The VACUUM command, as the API, SQL and the CLI run it: plan, then (unless ``dry_run``) delete."""
    plan = plan_vacuum(table, retention_hours, check_retention=check_retention)
    if dry_run:
        return VacuumResult(None, {}, plan)
    return execute_vacuum(table, plan, parallelism, progress)
