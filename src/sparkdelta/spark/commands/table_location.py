"""``ALTER TABLE t SET LOCATION`` on a Delta table: delta-spark's ``AlterTableSetLocationDeltaCommand``.

The catalog entry moves to another Delta table; nothing is committed to either log. As
in delta-spark, only a named table has a location to change, the new location must hold
a Delta table, and its schema and partitioning must be the old table's (Delta's internal
field metadata aside) unless ``spark.databricks.delta.alterLocation.bypassSchemaCheck``
says otherwise: a table whose schema changed under its name would surprise every reader.
The checks pass, then Spark's own ``SET LOCATION`` changes the entry.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import Snapshot, Table
from ...kernel.errors import TableNotFoundError
from ..conf import ALTER_LOCATION_BYPASS_SCHEMA_CHECK, get_bool
from ..read.field_metadata import without_internal_metadata
from ..read.parquet import spark_schema
from ..storage import open_table


def check_set_location(spark: SparkSession, table: Table, name: str | None, location: str) -> None:
    """Refuse ``SET LOCATION`` of the table ``name`` (None: a path) to ``location`` as delta-spark does."""
    if name is None:
        raise DeltaAnalysisException(
            "Cannot change the location of a path based table.", errorClass="DELTA_CANNOT_SET_LOCATION_ON_PATH_IDENTIFIER"
        )
    old = table.snapshot()
    try:
        new = open_table(spark, location).snapshot()
    except TableNotFoundError:
        raise DeltaAnalysisException(f"`{location}` is not a Delta table.", errorClass="DELTA_MISSING_DELTA_TABLE") from None
    if get_bool(spark, ALTER_LOCATION_BYPASS_SCHEMA_CHECK):
        return
    old_schema, new_schema = _compared(old), _compared(new)
    if old_schema != new_schema or _partition_schema(old, old_schema) != _partition_schema(new, new_schema):
        raise DeltaAnalysisException(
            "\nThe schema of the new Delta location is different than the current table schema.\n"
            f"original schema:\n{old_schema.treeString()}\ndestination schema:\n{new_schema.treeString()}\n\n"
            "If this is an intended change, you may turn this check off by running:\n"
            f"%sql set {ALTER_LOCATION_BYPASS_SCHEMA_CHECK.key} = true",
            errorClass="DELTA_SET_LOCATION_SCHEMA_MISMATCH",
        )


def _compared(snapshot: Snapshot) -> StructType:
    return without_internal_metadata(spark_schema(snapshot))


def _partition_schema(snapshot: Snapshot, schema: StructType) -> StructType:
    by_name = {f.name.lower(): f for f in schema.fields}
    return StructType([by_name[c.lower()] for c in snapshot.partition_columns if c.lower() in by_name])


def refuse_rename_of_path(name: str | None, path: str) -> None:
    """``RENAME TO`` names a catalog entry; a path-based table has none (delta-spark fails the same way)."""
    if name is None:
        raise DeltaAnalysisException(
            "The schema `spark_catalog`.`delta` cannot be found. Verify the spelling and correctness of the schema and "
            f"catalog: delta.`{path}` is a path, not a table the catalog can rename.",
            errorClass="SCHEMA_NOT_FOUND",
        )
