"""The PySpark engine: ``format("delta")`` reads and writes on Spark's native Parquet I/O."""

from .session import configure, spark_session

__all__ = ["configure", "spark_session"]
