"""Tables opened from a Spark session: the kernel reaches storage with Spark's own settings.

A user configures S3, Azure or GCS access once, for Spark (``spark.hadoop.fs.s3a.*``,
``fs.azure.account.key.<account>...``, set when the session is built or later with
``spark.conf.set``), and sparkdelta's kernel reads and commits the log with the same
credentials and endpoint. Options given for one table (``DeltaTable.forPath(spark, path,
hadoopConf)``, reader and writer options ``fs.s3a.*``) win over the session's. What
neither sets comes from the environment (``AWS_*``...), as for the kernel alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from ..kernel.object_store import storage_options_from_hadoop
from ..kernel.table import Table
from .paths import is_object_store, normalize_location

_HADOOP_PREFIXES = (
    "fs.",
    "spark.hadoop.fs.",
    "google.cloud.",
    "spark.hadoop.google.cloud.",
    "spark.delta.logstore.",  # delta-spark's multi-cluster S3 setup (DynamoDB commits)
    "spark.io.delta.storage.",
    "io.delta.storage.",
)


def hadoop_settings(options: Mapping[str, object] | None) -> dict[str, str]:
    """The storage settings among reader/writer or ``hadoopConf`` options (any case: reader
    options arrive lowercased)."""
    return {k: str(v) for k, v in (options or {}).items() if k.lower().startswith(_HADOOP_PREFIXES)}


def _engine_options(options: Mapping[str, object] | None) -> dict[str, str]:
    """The Hadoop ``fs.*`` options Spark's own reads and writes of the table take."""
    settings = {k.removeprefix("spark.hadoop."): v for k, v in hadoop_settings(options).items()}
    return {k: v for k, v in settings.items() if k.startswith("fs.")}


def storage_options(spark: SparkSession, location: str, options: Mapping[str, object] | None = None) -> dict[str, str]:
    """Kernel storage options for an object-store ``location``: the session's Hadoop
    settings, overridden by ``options`` (Hadoop keys), overridden by delta-rs style keys."""
    session = {k: v for k, v in spark.conf.getAll.items() if k.lower().startswith(_HADOOP_PREFIXES)}
    given = dict(options or {})
    hadoop = {**session, **hadoop_settings(given)}
    explicit = {k: str(v) for k, v in given.items() if k.lower().startswith(("aws_", "azure_", "google_"))}
    return {**storage_options_from_hadoop(hadoop, location), **explicit}


def open_table(spark: SparkSession, location: str, options: Mapping[str, object] | None = None) -> Table:
    """The table at ``location`` (local path, ``file:`` URI or object-store URL), its
    storage configured from the session and ``options``."""
    location = normalize_location(location)
    if not is_object_store(location):
        return Table(location)
    table = Table(location, storage_options=storage_options(spark, location, options))
    table.storage.engine_options = _engine_options(options)
    return table
