"""INSERT, DELETE, UPDATE and MERGE statements on Delta tables, run by the commands the DeltaTable API runs.

DELETE, UPDATE and MERGE return delta-spark's one-row result (``num_affected_rows`` and the
like; INSERT, as delta-spark's, no rows), from the metrics its own command committed (never read back from the log, where a concurrent
writer's commit may come first), so SQL and the Python API cannot disagree.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
import sqlglot
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel.command_result import CommandResult
from ...kernel.features import GENERATION_EXPRESSION
from ..commands.dml.delete import delete as delete_rows
from ..commands.dml.merge import DeltaMergeBuilder, merge_builder, merge_frame
from ..commands.dml.merge import merge as merge_rows
from ..commands.dml.update import update as update_rows
from ..options import DeltaOptions
from ..read.parquet import spark_schema
from ..storage import open_table
from ..write.dataframe import write_dataframe
from ..write.defaults import KEYWORD, default_sql
from .commands import delta_table
from .dialect import DeltaSpark
from .reads import SparkSql, StatementHandler, delta_location, query_dataframe, table_name


def _allow_only(statement: exp.Expression, what: str, allowed: set[str]) -> None:
    """Refuse, by name, any clause of ``statement`` this module does not carry out."""
    for key, value in statement.args.items():
        if key not in allowed and value not in (None, False, [], ""):
            raise DeltaAnalysisException(f"{what}: {key.rstrip('_').upper()} is not supported")


def _no_subquery(node: exp.Expression | None, what: str) -> None:
    """delta-spark refuses subqueries in DML conditions and assignments; so does this."""
    if node is not None and node.find(exp.Subquery, exp.Exists, exp.Select):
        raise DeltaAnalysisException(f"{what}: subqueries are not supported ({node.sql(dialect='spark')})")


def _result(spark: SparkSession, columns: list[tuple[str, str]], result: CommandResult) -> DataFrame:
    """The statement's one row of counts; none for a statement skipped as already committed."""
    rows = [] if result.skipped else [tuple(result.count(metric) for _, metric in columns)]
    return spark.createDataFrame(rows, ", ".join(f"{name} long" for name, _ in columns))


def _unqualified(node: exp.Expression, qualifiers: set[str]) -> str:
    """``node`` as Spark SQL with the target's own qualifier removed from its columns."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        if column.table and column.table.lower() in qualifiers:
            column.set("table", None)
    return copy.sql(dialect=DeltaSpark)


def _qualifiers(target: exp.Table) -> set[str]:
    alias = target.alias
    return {alias.lower()} if alias else {target.name.lower()}


def _assignments(expressions: list[exp.Expression], qualifiers: set[str], keep_values_qualified: bool) -> dict[str, str]:
    result = {}
    for assignment in expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            raise DeltaAnalysisException(f"SET takes column = expression pairs, not {assignment.sql(dialect='spark')}")
        column = _unqualified(assignment.this, qualifiers)  # quoted as written: the key is a column name, `a.b` too
        value = assignment.expression
        result[column] = value.sql(dialect=DeltaSpark) if keep_values_qualified else _unqualified(value, qualifiers)
    return result


def delete(spark: SparkSession, statement: exp.Delete, original_sql: SparkSql) -> DataFrame:
    target: exp.Table = statement.this
    what = f"DELETE FROM {table_name(target)}"
    _allow_only(statement, what, {"this", "where"})
    table = delta_table(spark, target)
    where = statement.args.get("where")
    _no_subquery(where, what)
    result = delete_rows(spark, table, _unqualified(where.this, _qualifiers(target)) if where is not None else None)
    return _result(spark, [("num_affected_rows", "numDeletedRows")], result)


def update(spark: SparkSession, statement: exp.Update, original_sql: SparkSql) -> DataFrame:
    target: exp.Table = statement.this
    table = delta_table(spark, target)
    qualifiers = _qualifiers(target)
    where = statement.args.get("where")
    what = f"UPDATE {table_name(target)}"
    _allow_only(statement, what, {"this", "expressions", "where"})
    _no_subquery(where, what)
    for assignment in statement.expressions:
        _no_subquery(assignment, what)
    assignments = _assignments(statement.expressions, qualifiers, keep_values_qualified=False)
    result = update_rows(spark, table, _unqualified(where.this, qualifiers) if where is not None else None, assignments)
    return _result(spark, [("num_affected_rows", "numUpdatedRows")], result)


def _merge_source(spark: SparkSession, using: exp.Expression, original_sql: SparkSql) -> tuple[DataFrame, str]:
    alias = using.alias
    if isinstance(using, exp.Subquery):
        if not alias:
            raise DeltaAnalysisException("MERGE: a subquery source needs an alias")
        return query_dataframe(spark, using.this, original_sql), alias
    if isinstance(using, exp.Table):
        bare = using.copy()
        bare.set("alias", None)
        return query_dataframe(spark, exp.select("*").from_(bare), original_sql), alias or using.name
    raise DeltaAnalysisException(f"MERGE: unsupported source {using.sql(dialect='spark')}")


def merge(spark: SparkSession, statement: exp.Merge, original_sql: SparkSql) -> DataFrame:
    target: exp.Table = statement.this
    what = f"MERGE INTO {table_name(target)}"
    _allow_only(statement, what, {"this", "using", "on", "whens"})
    _no_subquery(statement.args["on"], what)
    for when in statement.args["whens"].expressions if statement.args.get("whens") else []:
        _no_subquery(when.args.get("condition"), what)
        _no_subquery(when.args.get("then"), what)
    table = delta_table(spark, target)
    source, source_alias = _merge_source(spark, statement.args["using"], original_sql)
    target_alias = target.alias or target.name
    builder = merge_builder(spark, table, target_alias, source.alias(source_alias), statement.args["on"].sql(dialect=DeltaSpark))
    qualifiers = {target_alias.lower()}
    whens = statement.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        builder = _clause(builder, when, qualifiers)
    return merge_frame(spark, merge_rows(builder))


def _clause(builder: DeltaMergeBuilder, when: exp.When, qualifiers: set[str]) -> DeltaMergeBuilder:
    condition_node = when.args.get("condition")
    condition = condition_node.sql(dialect=DeltaSpark) if condition_node is not None else None
    then = when.args["then"]
    matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        if matched:
            return builder.whenMatchedDelete(condition)
        if by_source:
            return builder.whenNotMatchedBySourceDelete(condition)
        raise DeltaAnalysisException("MERGE: WHEN NOT MATCHED takes INSERT, not DELETE")
    if isinstance(then, exp.Update):
        star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
        if star:
            if not matched:
                raise DeltaAnalysisException("MERGE: UPDATE SET * needs WHEN MATCHED")
            return builder.whenMatchedUpdateAll(condition)
        assignments = _assignments(then.expressions, qualifiers, keep_values_qualified=True)
        if matched:
            return builder.whenMatchedUpdate(condition, assignments)
        if by_source:
            return builder.whenNotMatchedBySourceUpdate(condition, assignments)
        raise DeltaAnalysisException("MERGE: WHEN NOT MATCHED takes INSERT, not UPDATE")
    if isinstance(then, exp.Insert):
        if matched or by_source:
            raise DeltaAnalysisException("MERGE: INSERT needs WHEN NOT MATCHED [BY TARGET]")
        if isinstance(then.this, exp.Star):
            return builder.whenNotMatchedInsertAll(condition)
        columns = [c.sql(dialect=DeltaSpark) for c in then.this.expressions]
        values = [v.sql(dialect=DeltaSpark) for v in then.expression.expressions]
        if len(columns) != len(values):
            raise DeltaAnalysisException(f"MERGE: INSERT names {len(columns)} columns but gives {len(values)} values")
        return builder.whenNotMatchedInsert(condition, dict(zip(columns, values, strict=True)))
    raise DeltaAnalysisException(f"MERGE: unsupported clause {when.sql(dialect='spark')}")


def insert(spark: SparkSession, statement: exp.Insert, original_sql: SparkSql) -> DataFrame:
    """``INSERT INTO | OVERWRITE [TABLE] t [(columns)] [REPLACE WHERE cond] query``."""

    target = statement.this
    columns: list[str] | None = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    if target.args.get("partition") is not None:
        raise DeltaAnalysisException(f"INSERT {table_name(target)}: a PARTITION clause is not supported; use REPLACE WHERE")
    location = delta_location(spark, target)
    if location is None:
        raise DeltaAnalysisException(f"{table_name(target)} is not a Delta table", errorClass="DELTA_MISSING_DELTA_TABLE")
    snapshot = open_table(spark, location).snapshot()
    _allow_only(statement, f"INSERT {table_name(target)}", {"this", "expression", "overwrite", "where", "by_name", "with_"})
    query = statement.expression
    if isinstance(query, exp.Values) and not statement.args.get("by_name"):
        query = _defaults_given(query, snapshot, columns, table_name(target))
    if statement.args.get("with_") is not None:
        query = query.copy()
        query.set("with_", statement.args["with_"])
    rows = query_dataframe(spark, query, original_sql)
    if not statement.args.get("by_name"):
        rows = rows.toDF(*_positional_columns(snapshot, columns, len(rows.columns), table_name(target)))
    rows = _store_assigned(rows, snapshot)
    where = statement.args.get("where")
    mode = "overwrite" if statement.args.get("overwrite") or where is not None else "append"
    options = DeltaOptions(replace_where=where.sql(dialect=DeltaSpark) if where is not None else None)
    write_dataframe(rows, location, mode, None, options)
    return spark.range(0).select()  # as delta-spark's INSERT: no columns, no rows


def _is_default(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Var, exp.Column)) and not node.args.get("table") and node.name.upper() == KEYWORD


def _defaults_given(values: exp.Values, snapshot: Any, columns: list[str] | None, name: str) -> exp.Values:
    """VALUES with each ``DEFAULT`` replaced by its column's default (NULL for a column without one)."""
    rows = values.expressions
    if not any(_is_default(v) for row in rows for v in row.expressions):
        return values
    targets = _positional_columns(snapshot, columns, len(rows[0].expressions), name)
    fields = {f.name.lower(): f for f in spark_schema(snapshot).fields}
    filled = values.copy()
    for row in filled.expressions:
        for position, value in enumerate(list(row.expressions)):
            if _is_default(value) and targets[position].lower() in fields:
                value.replace(sqlglot.parse_one(default_sql(fields[targets[position].lower()]), dialect=DeltaSpark))
    return filled


def _store_assigned(rows: DataFrame, snapshot: Any) -> DataFrame:
    """Values cast to their columns' types, as SQL INSERT does (Spark's ANSI store assignment)."""
    types = {f.name.lower(): f.dataType for f in spark_schema(snapshot).fields}
    return rows.select(
        *[
            F.col(f"`{f.name}`").cast(types[f.name.lower()]).alias(f.name)
            if f.name.lower() in types and f.dataType != types[f.name.lower()]
            else F.col(f"`{f.name}`")
            for f in rows.schema.fields
        ]
    )


def _positional_columns(snapshot: Any, columns: list[str] | None, count: int, name: str) -> list[str]:
    """The table columns an INSERT's values go to, by position (generated columns may be left out)."""
    if columns is not None:
        if len(columns) != count:
            raise DeltaAnalysisException(f"INSERT {name}: {len(columns)} columns named but {count} values given")
        return columns
    fields = snapshot.schema.fields
    every = [f.name for f in fields]
    if count == len(every):
        return every
    stored = [f.name for f in fields if GENERATION_EXPRESSION not in (f.metadata or {})]
    if count == len(stored):
        return stored
    raise DeltaAnalysisException(
        f"INSERT {name}: the table has {len(every)} columns ({', '.join(every)}), the query gives {count}",
        errorClass="DELTA_INSERT_COLUMN_ARITY_MISMATCH",
    )


HANDLERS: dict[type[exp.Expression], StatementHandler] = {
    exp.Delete: delete,
    exp.Update: update,
    exp.Merge: merge,
    exp.Insert: insert,
}
