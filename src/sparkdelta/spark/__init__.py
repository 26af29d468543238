"""The PySpark engine: ``format("delta")`` reads and writes on Spark's native Parquet I/O."""

from .session import configure, spark_session
from .sql_runner import run_sql as sql

__all__ = ["configure", "spark_session", "sql"]
