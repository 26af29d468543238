"""Generated columns (``delta.generationExpression`` in a column's metadata).

A write may leave a generated column out: it is computed from its expression. A write
that provides it must provide exactly that value: the spec's condition
``(<value> <=> <expression>) IS TRUE`` is checked per row inside the write job, like the
CHECK constraints, so a bad row fails the job and nothing is committed.
"""

from __future__ import annotations

import sqlglot
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ...kernel.features import GENERATION_EXPRESSION
from ..expressions.spark_types import can_up_cast
from .constraints import Constraint


def generation_expressions(schema: StructType) -> dict[str, str]:
    """Generated top-level columns and their expressions, by column name."""
    return {f.name: str(f.metadata[GENERATION_EXPRESSION]) for f in schema.fields if GENERATION_EXPRESSION in f.metadata}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def generated_value(field: StructField) -> Column:
    """The column's value computed from its expression, as the column's type."""
    return F.expr(str(field.metadata[GENERATION_EXPRESSION])).cast(field.dataType).alias(field.name)


def generated_checks(schema: StructType, provided: set[str]) -> list[Constraint]:
    """One check per generated column the data provides (by lower-cased name)."""
    return [
        Constraint(name, expression, "GENERATED", f"({_quoted(name)} <=> ({expression}))")
        for name, expression in generation_expressions(schema).items()
        if name.lower() in provided
    ]


def validate_generated_columns(spark: SparkSession, schema: StructType, table: str) -> None:
    """Refuse expressions that cannot define a generated column, as delta-spark does.

    Each must be deterministic SQL over the table's other, non-generated columns, without
    subqueries or aggregates, whose result type can be stored in the column.
    """
    expressions = generation_expressions(schema)
    if not expressions:
        return
    base = StructType([StructField(f.name, f.dataType, f.nullable) for f in schema.fields if f.name not in expressions])
    empty = spark.createDataFrame([], base)
    by_name = {f.name: f for f in schema.fields}
    for name, expression in expressions.items():
        where = f"{table}: generated column {name} ({expression})"
        try:
            parsed = sqlglot.parse_one(expression, read="spark")
        except sqlglot.errors.ParseError as exc:
            raise DeltaAnalysisException(f"{where}: not a SQL expression: {exc}") from exc
        if parsed.find(exp.Select, exp.Subquery) is not None:
            raise DeltaAnalysisException(f"{where}: subqueries are not allowed in a generation expression")
        try:
            result_type = empty.selectExpr(expression).schema.fields[0].dataType
        except AnalysisException as exc:
            raise DeltaAnalysisException(
                f"{where}: the expression must use only the table's non-generated columns: {exc}"
            ) from exc
        refused = _refused_in_join(spark, empty, expression)
        if refused == "UNSUPPORTED_EXPR_FOR_OPERATOR":
            raise DeltaAnalysisException(f"{where}: aggregate and window functions are not allowed")
        if refused == "INVALID_NON_DETERMINISTIC_EXPRESSIONS":
            raise DeltaAnalysisException(f"{where}: the expression must be deterministic")
        if not can_up_cast(result_type, by_name[name].dataType):
            raise DeltaAnalysisException(
                f"{where}: the expression's type {result_type.simpleString()} does not fit the column's type "
                f"{by_name[name].dataType.simpleString()}"
            )


def _refused_in_join(spark: SparkSession, rows: DataFrame, expression: str) -> str | None:
    """The error class Spark's analysis gives ``expression`` in a join condition, if any.

    A join condition is where Spark refuses both what a generated column may not hold:
    aggregate and window functions (``UNSUPPORTED_EXPR_FOR_OPERATOR``) and nondeterministic
    expressions (``INVALID_NON_DETERMINISTIC_EXPRESSIONS``), by the same ``deterministic``
    flag delta-spark checks; plain DataFrame analysis, so on any kind of session.
    """
    other = spark.range(0).select(F.lit(1).alias("__sparkdelta_probe"))
    try:
        rows.join(other, F.expr(expression).isNull()).schema  # noqa: B018 - analysis only
    except AnalysisException as exc:
        return exc.getCondition()
    return None
