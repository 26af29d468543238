"""``sparkdelta.sql(spark, text)``: Delta's SQL on stock PySpark.

Each statement in ``text`` is parsed with the Delta dialect (``sql_dialect``). Delta
statements run through the DeltaTable API; queries that read Delta tables run in Spark
over native scans (``sql_reads``); everything else goes to ``spark.sql`` unchanged. The
DataFrame of the last statement is returned. ``spark.sql`` itself is routed here by
``hooks.install``, so both spellings behave the same.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from .sql_alter import run_alter
from .sql_commands import HANDLERS as COMMAND_HANDLERS
from .sql_commands import describe_table
from .sql_create import is_delta_create, run_delta_statement
from .sql_dialect import DeltaSpark, parse
from .sql_dml import HANDLERS as DML_HANDLERS
from .sql_reads import DeltaSqlError, SparkSql, delta_location, has_delta_reference, run_query

logging.getLogger("sqlglot").setLevel(logging.ERROR)

# Statements that only Delta's grammar has: a parse error in one is reported, not passed on.
_DELTA_WORDS = ("VACUUM", "OPTIMIZE", "RESTORE", "CONVERT", "REORG", "MERGE")


def split_statements(text: str) -> list[str]:
    """The statements of ``text``, split at top-level semicolons (not inside strings or comments)."""
    try:
        tokens = DeltaSpark().tokenize(text)
    except Exception:  # the tokenizer's errors are Spark's to report
        return [text]
    pieces, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            pieces.append(text[start : token.start])
            start = token.end + 1
    pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


def _is_delta_only(text: str) -> bool:
    words = text.split(None, 2)
    first = words[0].upper() if words else ""
    second = words[1].upper() if len(words) > 1 else ""
    return first in _DELTA_WORDS or (first in ("DESCRIBE", "DESC") and second in ("HISTORY", "DETAIL"))


def run_statement(spark: SparkSession, text: str, original_sql: SparkSql) -> DataFrame:
    """Run one statement: Delta's here, Spark's in Spark."""
    try:
        statements = parse(text)
    except ParseError as error:
        if text.strip()[:5].upper() == "ALTER" and run_alter(spark, text, None):
            return spark.range(0).select()
        if _is_delta_only(text.strip()):
            raise DeltaSqlError(f"cannot parse the statement {text.strip()!r}: {error}") from error
        return original_sql(spark, text)
    if len(statements) != 1:
        return original_sql(spark, text)
    statement = statements[0]
    handler = COMMAND_HANDLERS.get(type(statement)) or DML_HANDLERS.get(type(statement))
    if handler is not None and (type(statement) in COMMAND_HANDLERS or _targets_delta(spark, statement)):
        return handler(spark, statement, original_sql)
    if text.strip()[:5].upper() == "ALTER":
        if run_alter(spark, text, statement if isinstance(statement, exp.Alter) else None):
            return spark.range(0).select()
        return original_sql(spark, text)
    if is_delta_create(statement):
        return run_delta_statement(spark, statement, lambda s, q: run_sql(s, q, original_sql))
    if isinstance(statement, exp.Describe) and isinstance(statement.this, exp.Table):
        if delta_location(spark, statement.this) is not None:
            return describe_table(spark, statement.this)
    if isinstance(statement, exp.Query) and has_delta_reference(spark, statement):
        return run_query(spark, statement, original_sql)
    return original_sql(spark, text)


def _targets_delta(spark: SparkSession, statement: exp.Expression) -> bool:
    target = statement.this
    if isinstance(target, exp.Schema):
        target = target.this
    return isinstance(target, exp.Table) and delta_location(spark, target) is not None


def run_sql(spark: SparkSession, text: str, original_sql: SparkSql | None = None) -> DataFrame:
    """Run every statement in ``text``; the last one's DataFrame."""
    run_original = original_sql or _original_sql()
    statements = split_statements(text)
    if not statements:
        raise DeltaSqlError("no SQL statement given")
    result: DataFrame | None = None
    for statement in statements:
        result = run_statement(spark, statement, run_original)
    assert result is not None
    return result


def _original_sql() -> SparkSql:
    """Spark's own ``SparkSession.sql``, beneath sparkdelta's hook."""
    sql = SparkSession.sql
    return getattr(sql, "__wrapped__", sql)
