"""Sessions where ``format("delta")`` works, on stock PySpark with no extra jars.

Spark's Python data source API cannot reach native Parquet speed (no column pruning),
so ``format("delta")`` is served in the driver instead: ``DataFrameReader`` and
``DataFrameWriter`` are wrapped so that, for the ``delta`` format only, reads become
native Parquet scans of the files the kernel names, and writes become native Parquet
writes followed by a kernel commit. Every other format goes to Spark untouched.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from .hooks import install

DEFAULT_CONFIGS = {
    # Parquet statistics for timestamps need INT64 timestamps (INT96 has none).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # The kernel lists files; Spark must not launch a job to re-list them.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.session.timeZone": "UTC",
    # DML caches joined rows it reads several times; without this, adaptive execution cannot
    # coalesce a cached plan's partitions and each later pass runs one task per shuffle partition.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    # Named tables persist in the embedded Hive metastore (metastore_db, spark-warehouse).
    "spark.sql.catalogImplementation": "hive",
}


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add sparkdelta's settings to ``builder`` and enable ``format("delta")``.

    Python workers run the driver's interpreter unless ``PYSPARK_PYTHON`` says otherwise;
    settings already on ``builder`` win over sparkdelta's defaults.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in DEFAULT_CONFIGS.items():
        if key not in builder._options:
            builder = builder.config(key, value)
    install()
    return builder


def spark_session(app_name: str = "sparkdelta", master: str | None = None) -> SparkSession:
    """A ready session: local master unless ``master`` (or ``spark.master``) says otherwise."""
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "true")
    builder = builder.master(master or os.environ.get("SPARK_MASTER", "local[*]"))
    return configure(builder).getOrCreate()
