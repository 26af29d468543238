"""RESTORE from a Spark session: the kernel's command, a timestamp read in the session time zone."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame, SparkSession

from ...kernel import Table
from ...kernel.command_result import CommandResult
from ...kernel.restore import restore as restore_table
from ..time_zones import session_instant

# delta-spark's result columns, each with the operationMetrics name it shows.
_COLUMNS = (
    ("table_size_after_restore", "tableSizeAfterRestore"),
    ("num_of_files_after_restore", "numOfFilesAfterRestore"),
    ("num_removed_files", "numRemovedFiles"),
    ("num_restored_files", "numRestoredFiles"),
    ("removed_files_size", "removedFilesSize"),
    ("restored_files_size", "restoredFilesSize"),
)


def restore(
    spark: SparkSession, table: Table, version: int | None = None, timestamp: str | datetime | None = None
) -> CommandResult:
    """Commit ``table`` back to ``version``, or to the version at ``timestamp`` (text in the session time zone)."""
    return restore_table(table, version, session_instant(spark, timestamp) if timestamp is not None else None)


def restore_frame(spark: SparkSession, result: CommandResult) -> DataFrame:
    """delta-spark's one-row result of RESTORE, from the metrics it committed."""
    return spark.createDataFrame(
        [tuple(result.count(metric) for _, metric in _COLUMNS)], ", ".join(f"{name} long" for name, _ in _COLUMNS)
    )
