"""Sessions where ``format("delta")`` works, on stock PySpark with no extra jars.

Spark's Python data source API cannot reach native Parquet speed (no column pruning),
so ``format("delta")`` is served in the driver instead: ``DataFrameReader`` and
``DataFrameWriter`` are wrapped so that, for the ``delta`` format only, reads become
native Parquet scans of the files the kernel names, and writes become native Parquet
writes followed by a kernel commit. Every other format goes to Spark untouched.

The wrappers work in any session, whoever built it. ``configure`` adds recommended
settings to a *new* session only, and never one the user set: Spark applies a builder's
settings to a session that already runs, which would change it behind the user's back.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from .hooks import install
from .session_catalog import (
    DELTA_SPARK_CATALOG,
    DELTA_SPARK_EXTENSION,
    EXTENSIONS,
    SESSION_CATALOG,
    dropped_setting_warning,
    metastore_configs,
)

# Settings for a new session; each is a recommendation, none is needed for correct results.
DEFAULT_CONFIGS = {
    # Timestamps written as INT64 get min/max statistics in the footer, which data skipping
    # uses; Spark's default (INT96) has none.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # The kernel lists files; Spark must not launch a job to re-list them.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    # DML caches joined rows it reads several times; without this, adaptive execution cannot
    # coalesce a cached plan's partitions and each later pass runs one task per shuffle partition.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
}
# ...and for a classic session, whose catalog is the client's own: named tables persist in
# the embedded Hive metastore (see session_catalog.py for where). A Spark Connect server
# keeps the catalog it was started with.
CLASSIC_CONFIGS = {"spark.sql.catalogImplementation": "hive"}


def builds_connect_session(builder: SparkSession.Builder) -> bool:
    """Whether ``builder`` makes a Spark Connect session, by PySpark's own rules."""
    from pyspark.util import is_remote_only

    options = builder._options
    return (
        is_remote_only()
        or "spark.remote" in options
        or "SPARK_REMOTE" in os.environ
        or "SPARK_CONNECT_MODE_ENABLED" in os.environ
        or str(options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", ""))).lower() == "connect"
    )


def _session_runs(connect: bool) -> bool:
    """Whether ``getOrCreate`` would return a running session rather than make one."""
    if connect:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        return ConnectSession.getActiveSession() is not None or ConnectSession._get_default_session() is not None
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def _without_delta_spark_settings(builder: SparkSession.Builder) -> None:
    """Drop delta-spark's extension and catalog from ``builder``, each with a warning."""
    options = builder._options
    extensions = options.get(EXTENSIONS)
    if extensions and DELTA_SPARK_EXTENSION in extensions.split(","):
        kept = [name for name in extensions.split(",") if name.strip() != DELTA_SPARK_EXTENSION]
        if kept:
            options[EXTENSIONS] = ",".join(kept)
        else:
            del options[EXTENSIONS]
        dropped_setting_warning(EXTENSIONS, DELTA_SPARK_EXTENSION)
    if options.get(SESSION_CATALOG) == DELTA_SPARK_CATALOG:
        del options[SESSION_CATALOG]
        dropped_setting_warning(SESSION_CATALOG, DELTA_SPARK_CATALOG)


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Enable ``format("delta")`` and add sparkdelta's recommended settings to ``builder``.

    Settings already on ``builder`` win over sparkdelta's. When a session already runs,
    ``getOrCreate`` returns it, and sparkdelta adds nothing to it (Spark would apply the
    additions to the running session); Delta still works there, through the same wrappers.
    A Spark Connect builder gets only session settings: its server's catalog and static
    settings are the server's.
    delta-spark's JVM settings are dropped with a warning: their classes are not installed.
    Python workers run the driver's interpreter unless ``PYSPARK_PYTHON`` says otherwise.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _without_delta_spark_settings(builder)
    install()
    connect = builds_connect_session(builder)
    if _session_runs(connect):
        return builder
    recommended = dict(DEFAULT_CONFIGS)
    if not connect:
        recommended.update(CLASSIC_CONFIGS)
        if builder._options.get("spark.sql.catalogImplementation", "hive") == "hive":
            recommended.update(metastore_configs(builder._options, sparkdelta_home()))
    for key, value in recommended.items():
        if key not in builder._options:
            builder = builder.config(key, value)
    return builder


def sparkdelta_home() -> Path:
    """Where sparkdelta keeps a session's metastore and warehouse: ``$SPARKDELTA_HOME``, else ``~/.sparkdelta``."""
    return Path(os.environ.get("SPARKDELTA_HOME") or Path.home() / ".sparkdelta").expanduser().resolve()


def spark_session(app_name: str = "sparkdelta", master: str | None = None) -> SparkSession:
    """A ready session: local master unless ``master`` (or ``spark.master``) says otherwise."""
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "true")
    builder = builder.master(master or os.environ.get("SPARK_MASTER", "local[*]"))
    return configure(builder).getOrCreate()
