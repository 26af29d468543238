"""The PySpark engine: ``format("delta")`` reads and writes on Spark's native Parquet I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .session import configure, spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["configure", "spark_session", "sql"]


def sql(spark: SparkSession, text: str) -> DataFrame:
    """Run SQL with Delta's statements (``sql_runner``); the last statement's DataFrame."""
    from .sql_runner import run_sql

    return run_sql(spark, text)
