"""DROP FEATURE with Spark doing the data part: purging deletion vectors by a rewrite."""

from __future__ import annotations

from pyspark.sql import SparkSession

from ...kernel import Table
from ...kernel.drop_feature import DropOutcome, drop_feature
from .optimize import purge_deletion_vectors


def drop_table_feature(spark: SparkSession, table: Table, feature: str, truncate_history: bool = False) -> DropOutcome:
    """``ALTER TABLE ... DROP FEATURE feature [TRUNCATE HISTORY]`` (``kernel.drop_feature``)."""

    def purge(target: Table, name: str) -> bool:
        if name != "deletionVectors":
            return False
        before = target.snapshot().version
        purge_deletion_vectors(spark, target)
        return target.snapshot().version != before

    return drop_feature(table, feature, truncate_history, purge)
