"""The ``delta`` provider in Spark's catalog, as a Python data source.

Spark's catalog only records a table whose provider it can resolve, so sparkdelta
registers a Python data source named ``delta``. It answers schema questions from the
Delta log (``CREATE TABLE t USING delta LOCATION '...'`` over an existing table). It does
not scan data: that API has no column pruning and runs at half of native speed, so named
tables are read natively through ``spark.table`` and ``DeltaTable.forName``.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType


class DeltaSource(DataSource):
    """Resolves ``USING delta`` for Spark's catalog."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def schema(self) -> StructType:
        from ..kernel import Table

        path = self.options.get("path")
        if not path:
            raise ValueError("sparkdelta: a Delta table without columns needs a LOCATION holding a Delta table")
        from .paths import normalize_location

        return StructType.fromJson(Table(normalize_location(path)).snapshot().schema.to_json())

    def reader(self, schema: StructType) -> DataSourceReader:
        raise ValueError(
            f"sparkdelta: Spark SQL cannot scan Delta table {self.options.get('path', '')} directly; "
            "read it with spark.table(name) or DeltaTable.forName(spark, name).toDF()"
        )


def ensure_delta_source(spark: SparkSession) -> None:
    """Register the ``delta`` provider in ``spark`` once."""
    jsession = spark._jsparkSession
    if getattr(spark, "_sparkdelta_source", None) is jsession:
        return
    spark.dataSource.register(DeltaSource)
    spark._sparkdelta_source = jsession  # type: ignore[attr-defined]
