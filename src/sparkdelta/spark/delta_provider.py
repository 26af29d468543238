"""The ``delta`` provider as Spark resolves it: a Python data source that needs only PySpark to load.

Spark's catalog records a table only under a provider it can resolve, and
``readStream.format("delta")`` finds its reader by that name. ``source.py`` registers this
class in each session, pickled by value: a Spark Connect server, whose Python workers
have no sparkdelta, can still load it. Spark calls it only where sparkdelta left it a
question:

- the catalog entries sparkdelta writes carry their columns, so Spark never asks for a schema;
- batch reads of Delta tables are sparkdelta's native scans, never this source's reader;
- a stream's reader, and a schema Spark asks for itself (``CREATE TABLE ... USING delta``
  that sparkdelta did not serve), need sparkdelta where Spark runs Python data sources.
  They import it inside the methods, so that loading the class never does.

Hence no module-level import of sparkdelta here: by-value pickling would carry it along.
"""

from __future__ import annotations

from types import ModuleType

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType


def _sparkdelta_source() -> ModuleType:
    """sparkdelta's side of the source, where Spark runs this data source's methods."""
    try:
        from sparkdelta.spark import source
    except ImportError as error:
        raise RuntimeError(
            "sparkdelta is not installed where Spark runs Python data sources (on a Spark Connect server, "
            "its Python workers): Spark itself cannot read a Delta table's schema or stream it there; "
            "use sparkdelta's APIs (spark.table, DeltaTable, CREATE TABLE with columns), which serve them in the client"
        ) from error
    return source


class DeltaSource(DataSource):
    """Resolves ``USING delta`` for Spark's catalog and ``readStream.format("delta")``."""

    @classmethod
    def name(cls) -> str:
        return "delta"

    def schema(self) -> StructType:
        return _sparkdelta_source().source_schema(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _sparkdelta_source().stream_reader(dict(self.options), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        raise ValueError(
            f"sparkdelta: Spark SQL cannot scan Delta table {self.options.get('path', '')} directly; "
            "read it with spark.table(name) or DeltaTable.forName(spark, name).toDF()"
        )
