"""DELETE: ``DeltaTable.delete(condition)``, as delta-spark's DeleteCommand does it.

Three ways, cheapest first:

- no condition, or one on partition columns only: whole files go, by remove actions
  alone (a metadata-only delete; no data is read, row counts come from the log's stats);
- deletion vectors on: the matching rows' positions are marked in each touched file's DV;
- otherwise copy-on-write: each file holding a matching row is rewritten without it.

With the change data feed on, a row-level delete also writes the deleted rows as
``delete`` change rows; a metadata-only delete needs none (the feed reads its removed
files as deletes).
"""

from __future__ import annotations

import json

import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ....kernel import Table
from ....kernel.command_result import ALREADY_COMMITTED, CommandResult
from ....kernel.scan import logical_rows
from .common import (
    CHANGE_TYPE_COLUMN,
    FILE_PATH_COLUMN,
    MATCHED_ROWS_COLUMN,
    ROW_INDEX_COLUMN,
    Condition,
    DmlCommit,
    candidate_files,
    change_data_feed_enabled,
    condition_sql,
    deletion_vectors_enabled,
    matched,
    partition_only_files,
    read_target,
    rows_written,
    touched_files,
)


def delete(spark: SparkSession, table: Table, condition: Condition | None = None) -> CommandResult:
    """Delete the rows where ``condition`` is true (every row without one); ``numDeletedRows`` counts them."""
    snapshot = table.snapshot()
    parameters = {"predicate": json.dumps([condition_sql(spark, snapshot, condition)] if condition is not None else [])}
    with DmlCommit(spark, table, snapshot, "DELETE", parameters, txn_when_unchanged=False) as dml:
        if dml.already_committed():
            return ALREADY_COMMITTED
        with dml.timed("scanTimeMs", "finding the files to delete from"):
            whole = snapshot.scan().files if condition is None else partition_only_files(spark, snapshot, condition)
        if whole is not None:
            if condition is None:
                dml.transaction.mark_read_whole_table()
            else:
                dml.read(whole, condition)
            dml.remove_files(whole)
            return dml.commit({"numDeletedRows": logical_rows(whole), "numCopiedRows": 0})

        with dml.timed("scanTimeMs", "finding the files to delete from"):
            candidates = candidate_files(spark, snapshot, condition)
            dml.read(candidates, condition)
        gone = read_target(spark, snapshot, candidates).where(matched(condition))
        if deletion_vectors_enabled(snapshot):
            with dml.timed("rewriteTimeMs", "writing deletion vectors"):
                touched = dml.delete_rows(candidates, gone).touched
            copied = 0
        else:
            with dml.timed("scanTimeMs", "finding the files to rewrite"):
                touched = touched_files(candidates, gone)
            copied = 0
            if touched.num_rows:
                with dml.timed("rewriteTimeMs", "rewriting the files"):
                    dml.remove_files(touched)
                    copied = rows_written(dml.add_rows(read_target(spark, snapshot, touched).where(~matched(condition))))
        if change_data_feed_enabled(snapshot) and touched.num_rows:
            with dml.timed("rewriteTimeMs", "writing the change data"):
                changes = read_target(spark, snapshot, touched).where(matched(condition))
                dml.add_changes(changes.drop(FILE_PATH_COLUMN, ROW_INDEX_COLUMN).withColumn(CHANGE_TYPE_COLUMN, F.lit("delete")))
        deleted = int(pc.sum(touched.column(MATCHED_ROWS_COLUMN)).as_py() or 0) if touched.num_rows else 0
        return dml.commit({"numDeletedRows": deleted, "numCopiedRows": copied})
