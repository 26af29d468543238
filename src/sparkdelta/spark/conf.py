"""delta-spark's settings: every ``spark.databricks.delta.*`` key sparkdelta reads, with its default.

As delta-spark's ``DeltaSQLConf``: one place to find what a session can tune. Table
properties (``delta.*``) that a session setting stands in for are paired with it here;
the table property wins.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

# (table property, session setting) pairs: the property wins, else the setting.
OPTIMIZE_WRITE = ("delta.autoOptimize.optimizeWrite", "spark.databricks.delta.optimizeWrite.enabled")
AUTO_COMPACT = ("delta.autoOptimize.autoCompact", "spark.databricks.delta.autoCompact.enabled")

AUTO_COMPACT_MIN_FILES = "spark.databricks.delta.autoCompact.minNumFiles"
AUTO_COMPACT_MAX_FILE_SIZE = "spark.databricks.delta.autoCompact.maxFileSize"


def table_or_session_flag(spark: SparkSession, configuration: dict[str, str], setting: tuple[str, str]) -> bool:
    """Whether a table property, or else its session setting, turns a feature on."""
    property_name, session_name = setting
    value = configuration.get(property_name)
    if value is None:
        value = spark.conf.get(session_name, "false")
    return str(value).lower() in ("true", "auto", "legacy")
