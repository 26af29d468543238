"""MERGE INTO a Delta table: delta-spark's ``DeltaMergeBuilder``.

``DeltaTable.alias("t").merge(source.alias("s"), "t.id = s.id")`` returns a builder; each
``when...`` call returns a new builder with one more clause, and ``execute()`` runs the
merge as one commit (``merge_execute``) and returns delta-spark 3.x's one-row DataFrame
of ``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
``num_inserted_rows``.

Clauses of one kind are tried in the order given and the first whose condition holds
acts; a condition that is NULL does not hold. Only the last clause of a kind may omit its
condition, since any clause after an unconditional one could never act. Conditions,
``set`` and ``values`` expressions are SQL text or Columns, naming columns through the
source's and the target's aliases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession

from ....exceptions import DeltaAnalysisException, spark_surface
from ....kernel import Table
from ....kernel.command_result import CommandResult
from ...arguments import column_mapping_arg, condition_arg
from .merge_execute import run_merge
from .merge_plan import Expression, MergeClause

__all__ = ["DeltaMergeBuilder", "MergeClause", "merge", "merge_builder", "merge_frame"]

# delta-spark's SQL names of the clause kinds, for error messages.
_KIND_SQL = {"matched": "MATCHED", "notMatched": "NOT MATCHED", "notMatchedBySource": "NOT MATCHED BY SOURCE"}
_KIND_ERROR = {
    "matched": "NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION",
    "notMatched": "NON_LAST_NOT_MATCHED_BY_TARGET_CLAUSE_OMIT_CONDITION",
    "notMatchedBySource": "NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION",
}


@dataclass(frozen=True)
@spark_surface
class DeltaMergeBuilder:
    """Builds a MERGE of ``source`` into the Delta ``table``; ``execute()`` runs it."""

    spark: SparkSession
    table: Table
    target_alias: str | None
    source: DataFrame
    condition: Expression
    clauses: tuple[MergeClause, ...] = ()
    schema_evolution: bool = False

    def _with(self, clause: MergeClause) -> DeltaMergeBuilder:
        return replace(self, clauses=(*self.clauses, clause))

    def whenMatchedUpdate(
        self, condition: Expression | None = None, set: Mapping[str, Expression] | None = None
    ) -> DeltaMergeBuilder:
        """Update a matched target row with ``set`` (target column -> expression), when ``condition`` holds."""
        assignments = tuple(column_mapping_arg(set, "'set' in whenMatchedUpdate").items())  # before the condition, as delta-spark
        return self._with(MergeClause("matched", "update", condition_arg(condition), assignments))

    def whenMatchedUpdateAll(self, condition: Expression | None = None) -> DeltaMergeBuilder:
        """Update every column of a matched target row from the source column of the same name."""
        return self._with(MergeClause("matched", "update", condition_arg(condition)))

    def whenMatchedDelete(self, condition: Expression | None = None) -> DeltaMergeBuilder:
        """Delete a matched target row, when ``condition`` holds."""
        return self._with(MergeClause("matched", "delete", condition_arg(condition)))

    def whenNotMatchedInsert(
        self, condition: Expression | None = None, values: Mapping[str, Expression] | None = None
    ) -> DeltaMergeBuilder:
        """Insert a source row that matches no target row, with ``values`` (target column -> expression)."""
        assignments = tuple(column_mapping_arg(values, "'values' in whenNotMatchedInsert").items())
        return self._with(MergeClause("notMatched", "insert", condition_arg(condition), assignments))

    def whenNotMatchedInsertAll(self, condition: Expression | None = None) -> DeltaMergeBuilder:
        """Insert a source row that matches no target row, every column from the source column of the same name."""
        return self._with(MergeClause("notMatched", "insert", condition_arg(condition)))

    def whenNotMatchedBySourceUpdate(
        self, condition: Expression | None = None, set: Mapping[str, Expression] | None = None
    ) -> DeltaMergeBuilder:
        """Update a target row no source row matches, with ``set`` (expressions over the target only)."""
        assignments = tuple(column_mapping_arg(set, "'set' in whenNotMatchedBySourceUpdate").items())
        return self._with(MergeClause("notMatchedBySource", "update", condition_arg(condition), assignments))

    def whenNotMatchedBySourceDelete(self, condition: Expression | None = None) -> DeltaMergeBuilder:
        """Delete a target row no source row matches, when ``condition`` holds."""
        return self._with(MergeClause("notMatchedBySource", "delete", condition_arg(condition)))

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        """Let ``updateAll`` / ``insertAll`` add the source's new columns (and struct fields) to the table."""
        return replace(self, schema_evolution=True)

    def execute(self) -> DataFrame:
        """Run the merge as one commit; one row of ``num_affected_rows``, ``num_updated_rows``,
        ``num_deleted_rows`` and ``num_inserted_rows`` (none when skipped as already committed)."""
        return merge_frame(self.spark, merge(self))


def merge(builder: DeltaMergeBuilder) -> CommandResult:
    """The MERGE command: the merge ``builder`` describes, checked and run as one commit."""
    check_clauses(builder.clauses)
    return run_merge(builder)


def merge_frame(spark: SparkSession, result: CommandResult) -> DataFrame:
    """delta-spark 3.x's one-row result of a MERGE, from the metrics it committed; no row when
    the merge was skipped as already committed (``txnAppId`` / ``txnVersion``), as in delta-spark."""
    updated, deleted, inserted = (
        result.count(m) for m in ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
    )
    return spark.createDataFrame(
        [] if result.skipped else [(updated + deleted + inserted, updated, deleted, inserted)],
        "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long",
    )


def check_clauses(clauses: tuple[MergeClause, ...]) -> None:
    """delta-spark's analysis rules on the clause list: at least one, and only a kind's last may omit its condition."""
    if not clauses:
        raise DeltaAnalysisException(
            "There must be at least one WHEN clause in a MERGE statement.", errorClass="DELTA_MERGE_MISSING_WHEN"
        )
    for kind in _KIND_SQL:
        of_kind = [c for c in clauses if c.kind == kind]
        if any(c.condition is None for c in of_kind[:-1]):
            raise DeltaAnalysisException(
                f"When there are more than one {_KIND_SQL[kind]} clauses in a MERGE statement, "
                f"only the last {_KIND_SQL[kind]} clause can omit the condition.",
                errorClass=_KIND_ERROR[kind],
            )


def merge_builder(
    spark: SparkSession, table: Table, target_alias: str | None, source: DataFrame, condition: Expression
) -> DeltaMergeBuilder:
    """What ``DeltaTable.merge`` returns, after delta-spark's argument checks."""
    if source is None:
        raise ValueError("'source' in merge cannot be None")
    if not isinstance(source, DataFrame):
        raise TypeError("Type of 'source' in merge must be DataFrame.")
    if condition is None:
        raise ValueError("'condition' in merge cannot be None")
    condition_arg(condition)
    return DeltaMergeBuilder(spark, table, target_alias, source, condition)
