"""The ``delta`` provider in Spark's catalog and streams, as a Python data source.

Spark's catalog only records a table whose provider it can resolve, so sparkdelta
registers a Python data source named ``delta``. It answers schema questions from the
Delta log (``CREATE TABLE t USING delta LOCATION '...'`` over an existing table), and
serves ``readStream.format("delta")`` (``stream/source.py``). It does not scan data in
batch: that API has no column pruning and runs at half of native speed, so batch reads
are native scans through ``format("delta").load``, ``spark.table`` and ``DeltaTable``.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from .paths import normalize_location
from .session_catalog import check_metastore_free
from .stream.options import stream_options
from .stream.source import DeltaStreamReader, open_source_table, stream_schema


class DeltaSource(DataSource):
    """Resolves ``USING delta`` for Spark's catalog."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ValueError("sparkdelta: a Delta table without columns needs a LOCATION holding a Delta table")
        return normalize_location(path)

    def schema(self) -> StructType:
        snapshot = open_source_table(self._path(), dict(self.options)).snapshot()
        return stream_schema(snapshot, stream_options(dict(self.options)).read_change_feed)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return DeltaStreamReader(self._path(), dict(self.options), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        raise ValueError(
            f"sparkdelta: Spark SQL cannot scan Delta table {self.options.get('path', '')} directly; "
            "read it with spark.table(name) or DeltaTable.forName(spark, name).toDF()"
        )


def ensure_delta_source(spark: SparkSession) -> None:
    """Prepare ``spark`` for Delta once: its metastore checked free (``session_catalog.py``), the ``delta`` provider registered."""
    if spark.__dict__.get("_sparkdelta_source"):
        return
    check_metastore_free(spark)
    spark.dataSource.register(DeltaSource)
    spark.__dict__["_sparkdelta_source"] = True
