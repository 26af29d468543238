"""``ALTER TABLE t ALTER COLUMN c SYNC IDENTITY``: an identity column's high-water mark from its data.

A ``BY DEFAULT`` column takes values users give without moving its mark, so the next
generated value may collide with one of them; SYNC IDENTITY moves the mark past the
column's largest value (smallest for a negative step), by delta-spark's rules
(``kernel.identity.valid_high_water_mark``: rounded to a value the column generates,
never back, unless ``spark.databricks.delta.identityColumn.allowSyncIdentityToLowerHighWaterMark.enabled``).

It commits the metadata as delta-spark does, even when the mark stays: operation
``CHANGE COLUMN`` with the column as it was, tagged as a change of marks only, and reading
the whole table (a concurrent write conflicts with it).
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ...exceptions import DeltaAnalysisException
from ...kernel import Table
from ...kernel.command_result import CommandResult
from ...kernel.identity import SCHEMA_UPDATE_TAG, identity_info, is_identity, with_high_water_marks
from ...kernel.protocol import require_writable
from ..conf import SYNC_IDENTITY_LOWERS_MARK, get_bool
from ..read.parquet import read_snapshot, spark_schema


def sync_identity(spark: SparkSession, table: Table, path: list[str]) -> CommandResult:
    """Move the high-water mark of identity column ``path`` to its data's extreme value."""
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    field = next((f for f in spark_schema(snapshot).fields if len(path) == 1 and f.name.lower() == path[0].lower()), None)
    if field is None and len(path) == 1:
        raise DeltaAnalysisException(f"{table.root}: no column {path[0]}", errorClass="DELTA_COLUMN_NOT_FOUND_IN_SCHEMA")
    if field is None or not is_identity(field.metadata, field.name):
        raise DeltaAnalysisException(
            "ALTER TABLE ALTER COLUMN SYNC IDENTITY cannot be called on non IDENTITY columns.",
            errorClass="DELTA_IDENTITY_COLUMNS_ALTER_NON_IDENTITY_COLUMN",
        )
    info = identity_info(field.name, field.metadata)
    column = F.col(f"`{field.name.replace('`', '``')}`")
    extreme = read_snapshot(spark, snapshot).select(F.max(column) if info.step > 0 else F.min(column)).first()
    metadata = snapshot.metadata
    if extreme is not None and extreme[0] is not None:
        lowering = get_bool(spark, SYNC_IDENTITY_LOWERS_MARK)
        metadata = with_high_water_marks(metadata, {field.name: int(extreme[0])}, allow_lowering=lowering)
    transaction = table.transaction(read_snapshot=snapshot)
    transaction.mark_read_whole_table()
    parameters = {"column": json.dumps(field.jsonValue(), separators=(",", ":"))}
    commit = transaction.commit([metadata], "CHANGE COLUMN", parameters, tags={SCHEMA_UPDATE_TAG: "true"})
    return CommandResult(commit, {})
