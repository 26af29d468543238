"""End-of-run upkeep: OPTIMIZE where small files piled up, VACUUM what retention allows.

Both act only when there is something to do, so a run that brought no new data leaves
every table at its version. OPTIMIZE runs per partition holding ``min_files`` small files
or more: silver's partitions are Z-ordered by the columns the gold dashboards slice a day
by (pickup zone, with 263 values, and payment type), the other tables are compacted.
Bronze stays in ingestion order (silver reads it by batch range). VACUUM uses each
table's ``delta.deletedFileRetentionDuration``, which the pipeline sets when it creates
the table; a dry run first, so a table with nothing to delete gets no VACUUM commits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import cast

from pyspark.sql import SparkSession

from ..kernel import Snapshot
from ..tables import DeltaTable
from . import markers
from .warehouse import Location, Warehouse

SMALL_FILE_BYTES = 64 * 1024 * 1024
ZORDER = {"silver.trips": ("PickupLocationId", "PaymentType")}
NOT_OPTIMIZED = {"bronze.trips"}


@dataclass
class TableMaintenance:
    table: str
    optimize: str | None = None  # what OPTIMIZE did, if it ran
    files_removed: int = 0
    files_added: int = 0
    vacuumed: int = 0  # files deleted by VACUUM


def crowded_partitions(snapshot: Snapshot, min_files: int) -> list[dict[str, str]]:
    """Partition values (``{}`` when unpartitioned) holding at least ``min_files`` small files."""
    files = snapshot.files
    small = Counter(
        tuple(sorted(dict(values or {}).items()))
        for values, size in zip(
            files.column("partitionValues").to_pylist(), cast(list[int], files.column("size").to_pylist()), strict=True
        )
        if size < SMALL_FILE_BYTES
    )
    return [dict(key) for key, count in sorted(small.items()) if count >= min_files]


def maintain(spark: SparkSession, warehouse: Warehouse, min_files: int) -> list[TableMaintenance]:
    done = []
    for name, path in warehouse.tables().items():
        found = markers.snapshot(path)
        if found is None:
            continue
        report = TableMaintenance(name)
        if name not in NOT_OPTIMIZED:
            _optimize(spark, path, found, min_files, ZORDER.get(name, ()), report)
        report.vacuumed = _vacuum(spark, path)
        done.append(report)
    return done


def _optimize(
    spark: SparkSession, path: Location, snapshot: Snapshot, min_files: int, zorder: tuple[str, ...], report: TableMaintenance
) -> None:
    crowded = crowded_partitions(snapshot, min_files)
    if not crowded:
        return
    builder = DeltaTable.forPath(spark, str(path)).optimize()
    if snapshot.partition_columns:
        builder = builder.where(" OR ".join(_partition_predicate(values) for values in crowded))
    if zorder:
        outcome = builder.executeZOrderBy(*zorder)
        report.optimize = f"z-order by {', '.join(zorder)}"
    else:
        outcome = builder.executeCompaction()
        report.optimize = "compaction"
    report.optimize += f" ({len(crowded)} partitions)" if snapshot.partition_columns else ""
    metrics = outcome.first()["metrics"]  # type: ignore[index]
    report.files_removed, report.files_added = metrics["numFilesRemoved"], metrics["numFilesAdded"]


def _partition_predicate(values: dict[str, str]) -> str:
    return "(" + " AND ".join(f"{column} = '{value}'" for column, value in values.items()) + ")"


def _vacuum(spark: SparkSession, path: Location) -> int:
    table = DeltaTable.forPath(spark, str(path))
    expired = table.vacuum(dryRun=True).count()
    if expired:
        table.vacuum()
    return expired
