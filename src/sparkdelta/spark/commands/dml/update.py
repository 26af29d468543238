"""UPDATE: ``DeltaTable.update(condition, set)``, as delta-spark's UpdateCommand does it.

Rows where the condition is true get the assigned values (an identity column cannot be
assigned, as in delta-spark); generated columns that are not assigned are recomputed from
their expressions, and every constraint is checked on the rows written (a violation fails
the write job and nothing is committed). Copy-on-write
rewrites each touched file with its rows updated in place; with deletion vectors the
old versions are marked deleted and only the new versions are written. With the change
data feed on, each updated row is recorded as an ``update_preimage`` and an
``update_postimage`` change row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField

from ....exceptions import DeltaAnalysisException
from ....kernel import Snapshot, Table
from ....kernel.command_result import ALREADY_COMMITTED, CommandResult
from ....kernel.features import GENERATION_EXPRESSION
from ... import row_tracking
from ...read.parquet import spark_schema, without_field_metadata
from ...write.defaults import with_keywords_resolved
from ...write.generated import generated_value
from ...write.identity import refuse_update
from .assignments import resolve_assignments, struct_update
from .common import (
    CHANGE_TYPE_COLUMN,
    FILE_PATH_COLUMN,
    MATCHED_ROWS_COLUMN,
    ROW_INDEX_COLUMN,
    Condition,
    DmlCommit,
    candidate_files,
    change_data_feed_enabled,
    condition_column,
    condition_sql,
    deletion_vectors_enabled,
    matched,
    read_target,
    rows_written,
    touched_files,
)

_HIT = "__sparkdelta_update_hit"


def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _assignments(spark: SparkSession, snapshot: Snapshot, assignments: Mapping[str, str | Column]) -> dict[str, Column]:
    """Each assigned column's new value, cast to its type, keyed by the table's spelling of its name.

    Keys are column names as delta-spark parses them (``identifiers.attribute_parts``):
    ```x-y,z``` is that column, ``s.f`` field ``f`` of the struct ``s``, folded into it.
    """
    where = f"the UPDATE of {snapshot.table_root}"
    if not assignments:
        raise DeltaAnalysisException(f"{where} needs at least one column to set")
    schema = spark_schema(snapshot)
    given = with_keywords_resolved(assignments.items(), schema)  # SET c = DEFAULT
    resolved = resolve_assignments([(k, condition_column(v)) for k, v in given], schema, None, where)
    refuse_update(schema, [a.column.name for a in resolved])
    values = {a.column.name: a.value.cast(a.column.dataType) for a in resolved if not a.path}
    nested = [a for a in resolved if a.path]
    if nested:  # their values' types, to fit them into the struct's fields
        probe = spark.createDataFrame([], without_field_metadata(schema))
        types = probe.select(*[a.value for a in nested]).schema.fields
        by_column: dict[str, list[tuple[tuple[str, ...], Column, DataType]]] = {}
        for assignment, typed in zip(nested, types, strict=True):
            by_column.setdefault(assignment.column.name, []).append((assignment.path, assignment.value, typed.dataType))
        for a in nested:
            values[a.column.name] = struct_update(_col(a.column.name), a.column, by_column[a.column.name])
    return values


def _recomputed(snapshot: Snapshot, values: dict[str, Column]) -> list[StructField]:
    """Generated columns the update does not set: they follow the columns it sets."""
    return [f for f in spark_schema(snapshot).fields if GENERATION_EXPRESSION in f.metadata and f.name not in values]


def _updated(
    rows: DataFrame, values: dict[str, Column], generated: list[StructField], only_hits: bool, tracked: bool = False
) -> DataFrame:
    """``rows`` with the assignments applied (to rows flagged ``_HIT`` only, if ``only_hits``).

    All assignments read the old values (one projection); generated columns are then
    computed from the new ones. ``tracked``: the rows carry row tracking's columns, and updated
    ones keep their ids and take the commit's version.
    """

    def pick(new: Column, name: str) -> Column:
        return F.when(F.col(_HIT), new).otherwise(_col(name)) if only_hits else new

    assigned = rows.withColumns({name: pick(value, name) for name, value in values.items()}) if values else rows
    # Connect's withColumns refuses an empty mapping.
    computed = assigned.withColumns({f.name: pick(generated_value(f), f.name) for f in generated}) if generated else assigned
    return row_tracking.updated(computed, F.col(_HIT) if only_hits else None) if tracked else computed


def update(
    spark: SparkSession, table: Table, condition: Condition | None, assignments: Mapping[str, str | Column]
) -> CommandResult:
    """Set ``assignments`` (column -> SQL text or Column) on the rows where ``condition`` is true;
    ``numUpdatedRows`` counts them."""
    snapshot = table.snapshot()
    values = _assignments(spark, snapshot, assignments)
    generated = _recomputed(snapshot, values)
    tracked = row_tracking.preserves(snapshot)
    parameters = {"predicate": json.dumps([condition_sql(spark, snapshot, condition)] if condition is not None else [])}
    with DmlCommit(spark, table, snapshot, "UPDATE", parameters) as dml:
        if dml.already_committed():
            return ALREADY_COMMITTED
        with dml.timed("scanTimeMs", "finding the files to update"):
            candidates = candidate_files(spark, snapshot, condition)
            dml.read(candidates, condition)
        hits = read_target(spark, snapshot, candidates).where(matched(condition))
        if deletion_vectors_enabled(snapshot):
            with dml.timed("rewriteTimeMs", "writing deletion vectors and the updated rows"):
                touched = dml.delete_rows(candidates, hits).touched
                if touched.num_rows:
                    old = read_target(spark, snapshot, touched).where(matched(condition))
                    dml.add_rows(_updated(old, values, generated, only_hits=False, tracked=tracked))
            copied = 0
        else:
            with dml.timed("scanTimeMs", "finding the files to update"):
                touched = touched_files(candidates, hits)
            copied = 0
            if touched.num_rows:
                with dml.timed("rewriteTimeMs", "rewriting the files"):
                    dml.remove_files(touched)
                    rows = read_target(spark, snapshot, touched).withColumn(_HIT, matched(condition))
                    written = rows_written(dml.add_rows(_updated(rows, values, generated, only_hits=True, tracked=tracked)))
                    copied = written - int(pc.sum(touched.column(MATCHED_ROWS_COLUMN)).as_py() or 0)
        updated = int(pc.sum(touched.column(MATCHED_ROWS_COLUMN)).as_py() or 0) if touched.num_rows else 0
        if change_data_feed_enabled(snapshot) and touched.num_rows:
            with dml.timed("rewriteTimeMs", "writing the change data"):
                before = read_target(spark, snapshot, touched).where(matched(condition)).drop(FILE_PATH_COLUMN, ROW_INDEX_COLUMN)
                after = _updated(before, values, generated, only_hits=False)
                dml.add_changes(
                    before.withColumn(CHANGE_TYPE_COLUMN, F.lit("update_preimage")).unionByName(
                        after.withColumn(CHANGE_TYPE_COLUMN, F.lit("update_postimage"))
                    )
                )
        return dml.commit({"numUpdatedRows": updated, "numCopiedRows": copied})
