"""``sparkdelta.sql(spark, text)``: Delta's SQL on stock PySpark.

Each statement in ``text`` is parsed with the Delta dialect (``sql_dialect``). Delta
statements run the commands the DeltaTable API runs; queries that read Delta tables run in Spark
over native scans (``sql_reads``); everything else goes to ``spark.sql`` unchanged. An ALTER
TABLE (or COMMENT ON TABLE) of a Delta table never does (``sql/alter.py``): Spark would change
only its catalog entry. It is run or refused by name. The
DataFrame of the last statement is returned. ``spark.sql`` itself is routed here by
``hooks.install``, so both spellings behave the same.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from ...exceptions import DeltaAnalysisException, spark_errors
from .alter import run_alter, run_comment
from .commands import HANDLERS as COMMAND_HANDLERS
from .commands import describe_table
from .create import is_delta_create, run_delta_statement
from .dialect import DeltaSpark, ShowTblProperties, parse
from .dml import HANDLERS as DML_HANDLERS
from .reads import SparkSql, delta_location, has_delta_reference, query_dataframe, run_query, table_name

logging.getLogger("sqlglot").setLevel(logging.ERROR)

# Statements that only Delta's grammar has: a parse error in one is reported, not passed on.
_DELTA_WORDS = ("VACUUM", "OPTIMIZE", "RESTORE", "CONVERT", "REORG", "MERGE", "GENERATE")


def split_statements(text: str) -> list[str]:
    """The statements of ``text``, split at top-level semicolons (not inside strings or comments)."""
    try:
        tokens = DeltaSpark().tokenize(text)
    except Exception:  # the tokenizer's errors are Spark's to report
        return [text]
    pieces, start, has_tokens = [], 0, False
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if has_tokens:
                pieces.append(text[start : token.start])
            start, has_tokens = token.end + 1, False
        else:
            has_tokens = True
    if has_tokens:
        pieces.append(text[start:])
    return pieces


def _is_delta_only(text: str) -> bool:
    words = text.split(None, 2)
    first = words[0].upper() if words else ""
    second = words[1].upper() if len(words) > 1 else ""
    return first in _DELTA_WORDS or (first in ("DESCRIBE", "DESC") and second in ("HISTORY", "DETAIL"))


def _bound(statement: exp.Expression, args: Any) -> exp.Expression:
    """``statement`` with its parameter markers (``:name`` or ``?``) replaced by ``args``' values."""
    positional = iter(args) if isinstance(args, (list, tuple)) else None

    def bind(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Placeholder):
            return node
        if positional is not None:
            return _literal(next(positional))
        if not isinstance(args, dict) or node.name not in args:
            raise DeltaAnalysisException(f"no value given for the parameter :{node.name}")
        return _literal(args[node.name])

    return statement.transform(bind)


def _literal(value: Any) -> exp.Expression:
    # sqlglot types ``convert``'s result as its ``Expr`` trait; it is an Expression.
    return cast(exp.Expression, exp.convert(value))


def _passing_args(original_sql: SparkSql, text: str, args: Any) -> SparkSql:
    """Spark's ``sql`` that hands ``args`` on when it is given this very statement."""

    def spark_sql(session: SparkSession, query: str, *more: Any, **frames: Any) -> DataFrame:
        return original_sql(session, query, args) if query == text else original_sql(session, query, *more, **frames)

    return spark_sql


def run_statement(spark: SparkSession, text: str, original_sql: SparkSql, args: Any = None) -> DataFrame:
    """Run one statement: Delta's here, Spark's in Spark (with ``args`` for its parameter markers)."""
    if args is not None:
        original_sql = _passing_args(original_sql, text, args)
    try:
        statements = parse(text)
    except ParseError as error:
        if text.strip()[:5].upper() == "ALTER" and run_alter(spark, text, None, original_sql, error):
            return spark.range(0).select()
        if text.strip()[:7].upper() == "COMMENT" and run_comment(spark, text):
            return spark.range(0).select()
        if _is_delta_only(text.strip()):
            raise DeltaAnalysisException(
                f"cannot parse the statement {text.strip()!r}: {error}", errorClass="PARSE_SYNTAX_ERROR"
            ) from error
        return original_sql(spark, text)
    if len(statements) != 1:
        return original_sql(spark, text)
    statement = statements[0] if args is None else _bound(statements[0], args)
    if isinstance(statement, ShowTblProperties) and delta_location(spark, statement.this) is None:
        return original_sql(spark, text)
    handler = COMMAND_HANDLERS.get(type(statement)) or DML_HANDLERS.get(type(statement))
    if handler is not None and (type(statement) in COMMAND_HANDLERS or _targets_delta(spark, statement)):
        return handler(spark, statement, original_sql)
    if text.strip()[:5].upper() == "ALTER":
        if run_alter(spark, text, statement if isinstance(statement, exp.Alter) else None, original_sql):
            return spark.range(0).select()
        return original_sql(spark, text)
    if isinstance(statement, exp.Comment) and run_comment(spark, text):
        return spark.range(0).select()
    if is_delta_create(statement):
        return run_delta_statement(spark, statement, lambda s, q: run_sql(s, q, original_sql))
    if isinstance(statement, exp.Describe) and isinstance(statement.this, exp.Table):
        if delta_location(spark, statement.this) is not None:
            return describe_table(spark, statement)
    if isinstance(statement, exp.Query) and has_delta_reference(spark, statement):
        return run_query(spark, statement, original_sql)
    if any(has_delta_reference(spark, query) for query in statement.find_all(exp.Query)):
        return _statement_reading_delta(spark, statement, original_sql)
    return original_sql(spark, text)


def _statement_reading_delta(spark: SparkSession, statement: exp.Expression, original_sql: SparkSql) -> DataFrame:
    """A Spark statement that reads Delta tables: a temporary view or an insert into another
    table gets the query's DataFrame; anything else runs over views kept for the session."""
    if isinstance(statement, exp.Create) and str(statement.args.get("kind", "")).upper() == "VIEW":
        if not statement.args.get("properties") or not any(
            isinstance(p, exp.TemporaryProperty) for p in statement.args["properties"].expressions
        ):
            raise DeltaAnalysisException("a permanent view cannot read a Delta table here; create a TEMPORARY VIEW")
        query_dataframe(spark, statement.expression, original_sql).createOrReplaceTempView(statement.this.name)
        return spark.range(0).select()
    if isinstance(statement, exp.Insert) and isinstance(statement.this, exp.Table) and statement.expression is not None:
        query = statement.expression
        if statement.args.get("with_") is not None:
            query = query.copy()
            query.set("with_", statement.args["with_"])
        rows = query_dataframe(spark, query, original_sql)
        rows.write.insertInto(table_name(statement.this), overwrite=bool(statement.args.get("overwrite")))
        return spark.range(0).select()
    return run_query(spark, statement, original_sql)


def _targets_delta(spark: SparkSession, statement: exp.Expression) -> bool:
    target = statement.this
    if isinstance(target, exp.Schema):
        target = target.this
    return isinstance(target, exp.Table) and delta_location(spark, target) is not None


@spark_errors
def run_sql(spark: SparkSession, text: str, original_sql: SparkSql | None = None, args: Any = None) -> DataFrame:
    """Run every statement in ``text``; the last one's DataFrame. ``args`` are Spark's
    parameter values (a dict for ``:name`` markers, a list for ``?``)."""
    run_original = original_sql or _original_sql(spark)
    statements = split_statements(text)
    if not statements:
        raise DeltaAnalysisException("no SQL statement given")
    result: DataFrame | None = None
    for statement in statements:
        result = run_statement(spark, statement, run_original, args)
    assert result is not None
    return result


def _original_sql(spark: SparkSession) -> SparkSql:
    """Spark's own ``sql`` of ``spark``'s kind of session (classic or Connect), beneath sparkdelta's hook."""
    sql = type(spark).sql
    return getattr(sql, "__wrapped__", sql)
