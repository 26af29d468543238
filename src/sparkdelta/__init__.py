"""sparkdelta: Delta Lake in Python, with PySpark as its engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__version__ = "0.1.0"

__all__ = ["configure", "spark_session", "sql"]


def sql(spark: SparkSession, text: str) -> DataFrame:
    """Run SQL with Delta's statements (``spark/sql/runner.py``); the last statement's DataFrame."""
    from .spark.sql.runner import run_sql

    return run_sql(spark, text)


def __getattr__(name: str) -> Any:
    # PySpark is imported only when a Spark surface is used (the CLI and kernel stay light).
    if name in ("configure", "spark_session"):
        from .spark import session

        return getattr(session, name)
    raise AttributeError(name)
