"""VACUUM from a Spark session: delta-spark's settings and result, on the kernel's command."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession

from ...kernel import Table
from ...kernel.vacuum import VacuumResult
from ...kernel.vacuum import vacuum as vacuum_table
from ...progress import progress
from ..conf import RETENTION_DURATION_CHECK, VACUUM_PARALLEL_DELETE, get_bool
from ..paths import qualified


def vacuum(spark: SparkSession, table: Table, retention_hours: float | None = None, dry_run: bool = False) -> VacuumResult:
    """Delete the files outside the retention window (a dry run only lists them), under the session's settings.

    A real run records VACUUM START / VACUUM END with their metrics.
    """
    check = get_bool(spark, RETENTION_DURATION_CHECK)
    parallel = get_bool(spark, VACUUM_PARALLEL_DELETE)

    def shown(done: Iterator[str], total: int) -> Iterator[str]:
        return progress(done, total, f"VACUUM {table.root}: deleting {total} files")

    return vacuum_table(
        table, retention_hours, dry_run=dry_run, check_retention=check, parallelism=8 if parallel else 1, progress=shown
    )


def vacuum_frame(spark: SparkSession, result: VacuumResult) -> DataFrame:
    """delta-spark's ``path`` column: the files a dry run would delete, else the table's path."""
    if result.commit is None:
        return spark.createDataFrame([(qualified(f.path),) for f in result.plan.files], "path string")
    return spark.createDataFrame([(qualified(result.plan.table_root),)], "path string")
