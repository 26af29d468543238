"""``DeltaTable``: the delta-spark Python API (``from delta.tables import DeltaTable``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from .builder import DeltaTableBuilder, IdentityGenerator
from .exceptions import DeltaError, DeltaIllegalArgumentException, StorageError, TableNotFoundError, spark_surface
from .kernel import Table
from .kernel.manifest import generate
from .kernel.protocol_upgrade import add_feature, upgrade_protocol
from .spark.arguments import bool_arg, column_mapping_arg, condition_arg, int_arg, str_arg, version_arg
from .spark.catalog import delta_entry
from .spark.commands.clone import clone_table
from .spark.commands.convert import convert_to_delta, parquet_path
from .spark.commands.describe import detail, history
from .spark.commands.dml.delete import delete
from .spark.commands.dml.merge import merge_builder
from .spark.commands.dml.update import update
from .spark.commands.drop_feature import drop_table_feature
from .spark.commands.optimize import DeltaOptimizeBuilder
from .spark.commands.restore import restore, restore_frame
from .spark.commands.vacuum import vacuum, vacuum_frame
from .spark.read.scan import scan
from .spark.storage import open_table

if TYPE_CHECKING:
    from .builder import DeltaTableBuilder
    from .spark.commands.dml.merge import DeltaMergeBuilder
    from .spark.commands.optimize import DeltaOptimizeBuilder

__all__ = ["DeltaTable", "IdentityGenerator", "kernel_table"]

# delta-spark's DeltaTableUtils.validDeltaTableHadoopPrefixes: what forPath's hadoopConf may set.
_HADOOP_CONF_PREFIXES = ("fs.", "dfs.")


def kernel_table(sparkSession: SparkSession, path: str, hadoopConf: Mapping[str, str] | None = None) -> Table:
    """The kernel's ``Table`` at ``path``, its storage reached with the session's settings (and
    ``hadoopConf``) as ``DeltaTable.forPath`` reaches it: for reads of the log that need no
    Spark job (snapshots, app transactions, history), and the files beside a table. Unlike
    ``forPath``, ``path`` need not hold a table yet."""
    return open_table(sparkSession, path, hadoopConf)


def _builder(spark: SparkSession | None, mode: str) -> DeltaTableBuilder:

    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValueError("DeltaTable builders need a SparkSession: pass one, or create one first")
    return DeltaTableBuilder(session, mode)


@spark_surface
class DeltaTable:
    """A Delta table, addressed by path or by catalog name."""

    def __init__(
        self, spark: SparkSession, path: str, name: str | None = None, hadoop_conf: Mapping[str, str] | None = None
    ) -> None:
        self._spark = spark
        self._table = open_table(spark, path, hadoop_conf)
        self._name = name
        self._alias: str | None = None
        if not self._table.exists():
            what = f"table {name} (at {self._table.root})" if name else self._table.root
            raise TableNotFoundError(f"{what} is not a Delta table", error_class="DELTA_MISSING_DELTA_TABLE")

    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, hadoopConf: Mapping[str, str] | None = None) -> DeltaTable:
        """The Delta table at ``path``. ``hadoopConf`` (``fs.s3a.access.key``...) reaches its
        storage, over the session's settings, as delta-spark's does: for this table's log, its
        data reads and writes, and the files its commands write (manifests). As in delta-spark,
        keys that are no file system settings (``fs.``, ``dfs.``) are refused, not ignored."""
        unsupported = sorted(k for k in hadoopConf or {} if not str(k).startswith(_HADOOP_CONF_PREFIXES))
        if unsupported:
            raise DeltaIllegalArgumentException(
                "Currently DeltaTable.forPath only supports hadoop configuration keys starting with "
                f"[{','.join(_HADOOP_CONF_PREFIXES)}] but got {','.join(unsupported)}",
                errorClass="DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF",
            )
        return cls(sparkSession, path, hadoop_conf=hadoopConf)

    @classmethod
    def convertToDelta(
        cls, sparkSession: SparkSession, identifier: str, partitionSchema: str | StructType | None = None
    ) -> DeltaTable:
        """Make ``parquet.`/path``` a Delta table in place (``partitionSchema`` names its partition columns)."""

        table = open_table(sparkSession, parquet_path(identifier))
        convert_to_delta(sparkSession, table, partitionSchema)
        return cls(sparkSession, table.root)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        """The Delta table the catalog knows as ``tableOrViewName`` (``table`` or ``db.table``)."""

        entry = delta_entry(sparkSession, tableOrViewName)
        return cls(sparkSession, entry.location, f"spark_catalog.{entry.name}")

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        """Whether ``identifier`` (a path or URL) holds a Delta table. A store that cannot be
        read (wrong credentials, a missing bucket) raises ``StorageError`` rather than
        answering ``False``, which would send "create if absent" code to overwrite."""
        try:
            return open_table(sparkSession, identifier).exists()
        except StorageError:
            raise
        except (DeltaError, NotImplementedError, OSError):
            return False

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates a new table, failing if it exists."""
        return _builder(sparkSession, "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates a table unless one exists."""
        return _builder(sparkSession, "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that replaces an existing table's schema and data (history is kept)."""
        return _builder(sparkSession, "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """A builder that creates the table, or replaces it if it exists."""
        return _builder(sparkSession, "createOrReplace")

    def toDF(self) -> DataFrame:
        """The table's rows as a Delta scan, so filters on it prune files as on ``spark.read.format("delta")``."""
        return scan(self._spark, self._table.snapshot(), alias=self._alias)

    def alias(self, aliasName: str) -> DeltaTable:
        """The same table under ``aliasName``, by which ``toDF()`` and ``merge`` conditions name its columns."""
        aliased = copy.copy(self)
        aliased._alias = aliasName
        return aliased

    def merge(self, source: DataFrame, condition: str | Column) -> DeltaMergeBuilder:
        """Merge ``source`` into this table on ``condition``; add ``when...`` clauses, then ``execute()``."""

        return merge_builder(self._spark, self._table, self._alias, source, condition)

    # --- DELETE and UPDATE (delta-spark returns None; the metrics are in history()) ---

    def delete(self, condition: str | Column | None = None) -> None:
        """Delete the rows where ``condition`` (SQL text or Column) is true; every row without one."""

        delete(self._spark, self._table, condition_arg(condition))

    def update(self, condition: str | Column | None = None, set: dict[str, str | Column] | None = None) -> None:
        """Set columns (``set``: name -> SQL text or Column) on the rows where ``condition`` is true.

        Names are delta-spark's: backquotes quote a part (```x-y,z```, ```a.b``` the column),
        an unquoted dot reaches into a struct (``s.f``), and case does not matter.
        """

        assignments = column_mapping_arg(set, "'set'")  # checked first, as delta-spark does
        checked = condition_arg(condition)
        if not assignments:
            raise ValueError("'set' needs at least one column to update")
        update(self._spark, self._table, checked, assignments)

    def updateExpr(self, condition_or_set: str | dict[str, str], set: dict[str, str] | None = None) -> None:
        """delta-spark's Scala ``updateExpr(set)`` / ``updateExpr(condition, set)``: everything as SQL text."""
        if isinstance(condition_or_set, dict):
            self.update(None, dict(condition_or_set))
        else:
            self.update(condition_or_set, dict(set) if isinstance(set, dict) else None)  # not a dict: update refuses it

    def generate(self, mode: str) -> None:
        """Write the manifests ``mode`` names (``"symlink_format_manifest"``, any case) for engines
        that read the table through them (Presto, Athena); no commit."""
        generate(self._table, mode)

    def vacuum(self, retentionHours: float | None = None, dryRun: bool = False) -> DataFrame:
        """Delete files no version inside the retention window reads (``delta.deletedFileRetentionDuration``
        unless ``retentionHours``); ``dryRun`` lists them instead."""

        return vacuum_frame(self._spark, vacuum(self._spark, self._table, retentionHours, dryRun))

    def optimize(self) -> DeltaOptimizeBuilder:
        """OPTIMIZE: ``.where(partition filter)``, then ``executeCompaction()`` or ``executeZOrderBy(cols)``."""

        return DeltaOptimizeBuilder(self._spark, self._table)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Commit the table back to ``version``; one row of delta-spark's restore metrics."""
        return restore_frame(self._spark, restore(self._spark, self._table, version=int_arg(version, "version")))

    def restoreToTimestamp(self, timestamp: str | datetime) -> DataFrame:
        """Commit the table back to the version at ``timestamp`` (text in the session time zone)."""
        if not isinstance(timestamp, datetime):
            str_arg(timestamp, "timestamp")
        return restore_frame(self._spark, restore(self._spark, self._table, timestamp=timestamp))

    def clone(
        self, target: str, isShallow: bool = False, replace: bool = False, properties: dict[str, str] | None = None
    ) -> DeltaTable:
        """Clone the latest version to ``target`` (a path or a table name): shallow (log only) or deep (files copied)."""
        return self._clone(target, isShallow, replace, properties)

    def cloneAtVersion(
        self, version: int, target: str, isShallow: bool = False, replace: bool = False, properties: dict[str, str] | None = None
    ) -> DeltaTable:
        """Clone ``version`` to ``target``."""
        return self._clone(target, isShallow, replace, properties, version=version)

    def cloneAtTimestamp(
        self,
        timestamp: str | datetime,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: dict[str, str] | None = None,
    ) -> DeltaTable:
        """Clone the version at ``timestamp`` (text in the session time zone) to ``target``."""
        return self._clone(target, isShallow, replace, properties, timestamp=timestamp)

    def _clone(
        self,
        target: str,
        shallow: bool,
        replace: bool,
        properties: dict[str, str] | None,
        version: int | None = None,
        timestamp: str | datetime | None = None,
    ) -> DeltaTable:

        cloned = clone_table(self._spark, self._table, target, shallow, version, timestamp, replace, properties)
        return DeltaTable(self._spark, cloned.location, f"spark_catalog.{cloned.name}" if cloned.name else None)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the protocol to at least these versions (never lower), keeping every supported feature."""
        upgrade_protocol(self._table, version_arg(readerVersion, "readerVersion"), version_arg(writerVersion, "writerVersion"))

    def addFeatureSupport(self, featureName: str) -> None:
        """Add a table feature to the protocol (moving it to table features if needed)."""
        add_feature(self._table, str_arg(featureName, "featureName"))

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Drop a table feature and lower the protocol (delta-spark 4's ``ALTER TABLE ... DROP FEATURE``)."""

        truncate = False if truncateHistory is None else bool_arg(truncateHistory, "truncateHistory")
        drop_table_feature(self._spark, self._table, str_arg(featureName, "featureName"), truncate)

    def history(self, limit: int | None = None) -> DataFrame:
        """The table's commits, newest first, with delta-spark's history columns."""
        return history(self._spark, self._table, limit)

    def detail(self) -> DataFrame:
        """One row describing the table, as ``DESCRIBE DETAIL``."""
        return detail(self._spark, self._table, self._name)
