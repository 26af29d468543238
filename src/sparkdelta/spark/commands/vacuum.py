"""VACUUM from a Spark session: delta-spark's options and result, on the kernel's plan."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession

from ...kernel import Table
from ...kernel.vacuum import execute_vacuum, plan_vacuum
from ...progress import progress
from ..conf import RETENTION_DURATION_CHECK, VACUUM_PARALLEL_DELETE, get_bool
from ..paths import qualified


def vacuum(spark: SparkSession, table: Table, retention_hours: float | None = None, dry_run: bool = False) -> DataFrame:
    """Delete the files outside the retention window; a ``path`` column as delta-spark returns.

    A dry run lists the files it would delete and changes nothing; a real run returns the
    table's path and records VACUUM START / VACUUM END with their metrics.
    """
    check = get_bool(spark, RETENTION_DURATION_CHECK)
    plan = plan_vacuum(table, retention_hours, check_retention=check)
    if dry_run:
        return spark.createDataFrame([(qualified(f.path),) for f in plan.files], "path string")
    parallel = get_bool(spark, VACUUM_PARALLEL_DELETE)

    def shown(done: Iterator[None], total: int) -> Iterator[None]:
        return progress(done, total, f"VACUUM {table.root}: deleting {total} files")

    execute_vacuum(table, plan, parallelism=8 if parallel else 1, progress=shown)
    return spark.createDataFrame([(qualified(table.root),)], "path string")
