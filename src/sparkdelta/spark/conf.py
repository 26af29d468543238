"""delta-spark's settings: every ``spark.databricks.delta.*`` key sparkdelta reads, with its default.

As delta-spark's ``DeltaSQLConf``: one place to find what a session can tune, and typed
accessors that refuse a value of the wrong kind, naming the key (Spark's own SQLConf
refuses it when set; these keys are not registered with PySpark's, so they are checked
when read). Table properties (``delta.*``) that a session setting stands in for are
paired with it here; the table property wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pyspark.sql import SparkSession

from ..exceptions import DeltaIllegalArgumentException

_T = TypeVar("_T")


@dataclass(frozen=True)
class Setting(Generic[_T]):
    """A session setting: its key and the value it has when unset."""

    key: str
    default: _T


SCHEMA_AUTO_MERGE = Setting("spark.databricks.delta.schema.autoMerge.enabled", False)
ALLOW_ARBITRARY_PROPERTIES = Setting("spark.databricks.delta.allowArbitraryProperties.enabled", False)
ALTER_LOCATION_BYPASS_SCHEMA_CHECK = Setting("spark.databricks.delta.alterLocation.bypassSchemaCheck", False)
PROPERTY_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
USER_METADATA = Setting[str | None]("spark.databricks.delta.commitInfo.userMetadata", None)
# Whether a replaceWhere overwrite checks that every row it writes matches the predicate.
REPLACE_WHERE_CONSTRAINT_CHECK = Setting("spark.databricks.delta.replaceWhere.constraintCheck.enabled", True)
RETENTION_DURATION_CHECK = Setting("spark.databricks.delta.retentionDurationCheck.enabled", True)
VACUUM_PARALLEL_DELETE = Setting("spark.databricks.delta.vacuum.parallelDelete.enabled", True)
MERGE_MATERIALIZE_SOURCE = Setting("spark.databricks.delta.merge.materializeSource", "auto")
OPTIMIZE_MAX_FILE_SIZE = Setting("spark.databricks.delta.optimize.maxFileSize", 1 << 30)
AUTO_COMPACT_MIN_FILES = Setting("spark.databricks.delta.autoCompact.minNumFiles", 50)
AUTO_COMPACT_MAX_FILE_SIZE = Setting("spark.databricks.delta.autoCompact.maxFileSize", 128 * 1024 * 1024)
# Idempotent writes and DML (the write options txnAppId / txnVersion win over these).
TXN_APP_ID = Setting[str | None]("spark.databricks.delta.write.txnAppId", None)
TXN_VERSION = Setting[int | None]("spark.databricks.delta.write.txnVersion", None)
TXN_VERSION_AUTO_RESET = Setting("spark.databricks.delta.write.txnVersion.autoReset.enabled", False)
# Identity columns: whether tables may have them, and whether SYNC IDENTITY may lower a high-water mark.
IDENTITY_COLUMNS_ENABLED = Setting("spark.databricks.delta.identityColumn.enabled", True)
SYNC_IDENTITY_LOWERS_MARK = Setting("spark.databricks.delta.identityColumn.allowSyncIdentityToLowerHighWaterMark.enabled", False)

# (table property, session setting) pairs: the property wins, else the setting.
OPTIMIZE_WRITE = ("delta.autoOptimize.optimizeWrite", Setting("spark.databricks.delta.optimizeWrite.enabled", False))
AUTO_COMPACT = ("delta.autoOptimize.autoCompact", Setting("spark.databricks.delta.autoCompact.enabled", False))


def _raw(spark: SparkSession, setting: Setting[_T]) -> str | None:
    value = spark.conf.get(setting.key, None)
    return None if value is None or str(value).strip() == "" else str(value).strip()


def get_bool(spark: SparkSession, setting: Setting[bool]) -> bool:
    """A boolean setting (``true`` / ``false``, any case)."""
    value = _raw(spark, setting)
    if value is None:
        return setting.default
    if value.lower() not in ("true", "false"):
        raise DeltaIllegalArgumentException(f"{setting.key} should be boolean, but was {value}")
    return value.lower() == "true"


def get_int(spark: SparkSession, setting: Setting[_T]) -> int | _T:
    """An integer setting (counts, sizes in bytes, versions)."""
    value = _raw(spark, setting)
    if value is None:
        return setting.default
    try:
        return int(value)
    except ValueError:
        raise DeltaIllegalArgumentException(f"{setting.key} should be int, but was {value}") from None


def get_str(spark: SparkSession, setting: Setting[_T]) -> str | _T:
    """A text setting, as set."""
    value = spark.conf.get(setting.key, None)
    return setting.default if value is None else str(value)


def property_defaults(spark: SparkSession) -> dict[str, str]:
    """``spark.databricks.delta.properties.defaults.<key>`` settings as the ``delta.<key>`` properties
    every new table gets (given properties override them)."""
    return {
        "delta." + key[len(PROPERTY_DEFAULTS_PREFIX) :]: str(value)
        for key, value in spark.conf.getAll.items()
        if key.startswith(PROPERTY_DEFAULTS_PREFIX)
    }


def table_or_session_flag(spark: SparkSession, configuration: dict[str, str], setting: tuple[str, Setting[bool]]) -> bool:
    """Whether a table property, or else its session setting, turns a feature on."""
    property_name, session = setting
    value = configuration.get(property_name)
    if value is None:
        value = _raw(spark, session) or str(session.default)
    return value.lower() in ("true", "auto", "legacy")
