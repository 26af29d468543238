"""The ``delta`` provider in Spark's catalog and streams: registration, and the source's sparkdelta side.

Spark's catalog only records a table whose provider it can resolve, so sparkdelta
registers a Python data source named ``delta`` (``delta_provider.py``) in each session,
classic or Connect. It does not scan data in batch: that API has no column pruning and
runs at half of native speed, so batch reads are native scans through
``format("delta").load``, ``spark.table`` and ``DeltaTable``.

The functions here run where Spark runs the data source's methods (the driver's Python
worker for a stream's reader): they answer schema questions from the Delta log
(``CREATE TABLE t USING delta LOCATION '...'`` that Spark serves itself) and read
``readStream.format("delta")`` (``stream/source.py``).
"""

from __future__ import annotations

import sys

from pyspark import cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from .delta_provider import DeltaSource
from .paths import normalize_location
from .session_catalog import check_metastore_free
from .stream.options import stream_options
from .stream.source import DeltaStreamReader, open_source_table, stream_schema

# By value: a Spark Connect server loads the class without sparkdelta (see delta_provider.py).
cloudpickle.register_pickle_by_value(sys.modules[DeltaSource.__module__])

_REGISTERED = "_sparkdelta_source"


def _path(options: dict[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise ValueError("sparkdelta: a Delta table without columns needs a LOCATION holding a Delta table")
    return normalize_location(path)


def source_schema(options: dict[str, str]) -> StructType:
    """The rows' schema of the table the source's options name (its change feed's, when asked)."""
    snapshot = open_source_table(_path(options), options).snapshot()
    return stream_schema(snapshot, stream_options(options).read_change_feed)


def stream_reader(options: dict[str, str], schema: StructType) -> DeltaStreamReader:
    """The reader of ``readStream.format("delta")`` over the table the options name."""
    return DeltaStreamReader(_path(options), options, schema)


def ensure_delta_source(spark: SparkSession) -> None:
    """Prepare ``spark`` for Delta once: its metastore checked free (``session_catalog.py``), the ``delta`` provider registered."""
    if spark.__dict__.get(_REGISTERED):
        return
    check_metastore_free(spark)
    spark.dataSource.register(DeltaSource)
    spark.__dict__[_REGISTERED] = True
