"""Delta tables inside SQL queries: each reference becomes a native scan under a temporary view.

Spark cannot scan a Delta table itself (its catalog entry's provider is a Python source
without scans), so before a query reaches ``spark.sql`` every Delta reference in it,
``name``, ``delta.`/path```, with ``VERSION AS OF``, ``TIMESTAMP AS OF``, ``@v<n>`` or
``@yyyyMMddHHmmssSSS``, and ``table_changes(name, start[, end])``, is loaded by sparkdelta's
native Parquet scan and put under a temporary view the rewritten query names. A
single-table query's WHERE is applied to its scan first, so data skipping prunes files.
Views are dropped once Spark has analyzed the query.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ...exceptions import DeltaAnalysisException
from ..catalog import delta_entry, is_delta_table_name
from ..options import TIMESTAMP_AS_OF, VERSION_AS_OF, DeltaOptions
from ..paths import normalize_location
from ..read.change_feed import table_changes_df
from ..read.scan import load
from .dialect import DeltaSpark, at_version

SparkSql = Callable[..., DataFrame]
# Runs one kind of statement; it is given a statement of the class it is registered for.
StatementHandler = Callable[[SparkSession, Any, SparkSql], DataFrame]


def table_name(table: exp.Table) -> str:
    return ".".join(p.name for p in table.parts)


# ``format.`/path``` reads a file source by path, never a catalog table.
_FILE_SOURCES = frozenset({"parquet", "csv", "json", "orc", "text", "avro", "binaryfile", "xml"})
# Functions whose value changes per call: a condition with one must not be evaluated twice.
_NONDETERMINISTIC = frozenset({"rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id"})


def delta_location(spark: SparkSession, table: exp.Table) -> str | None:
    """The location of the Delta table ``table`` names, or None when it names no Delta table."""
    if not isinstance(table.this, exp.Identifier):
        return None
    if table.db.lower() == "delta" and not table.catalog:
        return normalize_location(table.name)
    if table.db.lower() in _FILE_SOURCES and not table.catalog:
        return None
    name = ".".join(p.sql(dialect=DeltaSpark) for p in table.parts)
    try:
        if not name or not is_delta_table_name(spark, name):
            return None
    except Exception:  # a name Spark's parser refuses is not a Delta table's; Spark reports it
        return None
    return delta_entry(spark, name).location


def evaluate(spark: SparkSession, sql_expression: exp.Expression, original_sql: SparkSql) -> Any:
    """The value of a constant expression (``current_timestamp() - INTERVAL 1 HOUR``), computed by Spark."""
    row = original_sql(spark, f"SELECT {sql_expression.sql(dialect='spark')}").first()
    if row is None:
        raise DeltaAnalysisException(f"Spark gave no value for {sql_expression.sql(dialect='spark')}")
    return row[0]


def time_travel_options(spark: SparkSession, table: exp.Table, original_sql: SparkSql) -> DeltaOptions:
    """``versionAsOf`` / ``timestampAsOf`` for a reference's ``VERSION AS OF`` or ``@`` suffix."""
    version = table.args.get("version")
    alias = table.args.get("alias")
    if version is None and alias is not None and isinstance(alias.this, exp.Parameter):
        version = at_version(alias.this.this.name)
    if version is None:
        return DeltaOptions()
    if str(version.this).upper() == "VERSION":
        return DeltaOptions.parse({VERSION_AS_OF: evaluate(spark, version.expression, original_sql)})
    value = version.expression
    if isinstance(value, exp.Literal) and value.is_string:
        return DeltaOptions.parse({TIMESTAMP_AS_OF: value.this})
    return DeltaOptions.parse({TIMESTAMP_AS_OF: evaluate(spark, value, original_sql)})


def _table_changes(spark: SparkSession, call: exp.Expression, original_sql: SparkSql) -> DataFrame:

    arguments = [evaluate(spark, a, original_sql) for a in call.expressions]
    if len(arguments) not in (2, 3) or not isinstance(arguments[0], str):
        raise DeltaAnalysisException("table_changes(table, start[, end]): a table name or path, then versions or timestamps")
    return table_changes_df(spark, *arguments)


def load_reference(spark: SparkSession, table: exp.Table, original_sql: SparkSql) -> DataFrame | None:
    """The DataFrame a table reference reads, or None when it is not a Delta reference."""

    if isinstance(table.this, exp.Anonymous) and table.this.name.lower() == "table_changes":
        return _table_changes(spark, table.this, original_sql)
    location = delta_location(spark, table)
    if location is None:
        return None
    return load(spark, location, time_travel_options(spark, table, original_sql))


def _cte_names(statement: exp.Expression | exp.Query) -> set[str]:
    return {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}


def _single_table_filter(statement: exp.Expression, table: exp.Table) -> str | None:
    """The WHERE of the statement's own one-table SELECT, to prune the scan's files with.

    Only a deterministic condition without subqueries, in a SELECT that is not itself
    nested (no outer references), without laterals; the table's own qualifier is dropped.
    """
    select = table.find_ancestor(exp.Select)
    if select is None or select is not statement or select.args.get("where") is None:
        return None
    if select.args.get("joins") or select.args.get("laterals") or table.args.get("pivots") or table.args.get("sample"):
        return None
    source = select.args.get("from_") or select.args.get("from")
    if source is None or source.this is not table:
        return None
    condition = select.args["where"].this.copy()
    if condition.find(exp.Subquery, exp.Exists, exp.Rand, exp.Randn) or any(
        f.name.lower() in _NONDETERMINISTIC for f in condition.find_all(exp.Anonymous)
    ):
        return None
    own = {(table.alias or table.name).lower()}
    for column in condition.find_all(exp.Column):
        qualifier = column.args.get("table")
        if qualifier is not None and qualifier.name.lower() in own and not column.args.get("db"):
            column.set("table", None)
    return condition.sql(dialect=DeltaSpark)


def _point_at_view(statement: exp.Expression, table: exp.Table, view: str) -> None:
    """Make ``table`` read ``view``, keeping its alias, sample and pivots; columns qualified
    with the table's full name (``db.t.col``) are requalified with the alias."""
    alias = table.args.get("alias")
    if alias is None or isinstance(alias.this, exp.Parameter):
        alias = exp.TableAlias(this=exp.to_identifier(table.name))
        db, name = table.db.lower(), table.name.lower()
        for column in statement.find_all(exp.Column):
            if column.args.get("db") and column.db.lower() == db and column.table.lower() == name:
                column.set("db", None)
                column.set("catalog", None)
    table.set("this", exp.to_identifier(view))
    table.set("db", None)
    table.set("catalog", None)
    table.set("version", None)
    table.set("alias", alias)


def delta_frames(
    spark: SparkSession, statement: exp.Expression, original_sql: SparkSql
) -> tuple[exp.Expression, dict[str, DataFrame]]:
    """``statement`` with each Delta reference renamed to a placeholder, and the Delta
    DataFrame each placeholder stands for (``run_with_frames`` runs them together)."""
    rewritten = statement.copy()
    frames: dict[str, DataFrame] = {}
    ctes = _cte_names(rewritten)
    for table in list(rewritten.find_all(exp.Table)):
        if not table.args.get("db") and table.name.lower() in ctes:
            continue
        df = load_reference(spark, table, original_sql)
        if df is None:
            continue
        condition = _single_table_filter(rewritten, table)
        if condition is not None:
            try:
                filtered = df.where(condition)
                filtered.schema  # noqa: B018 - a Connect session analyzes only when asked
                df = filtered
            except AnalysisException:
                pass  # Spark reports it against the whole query below
        name = frame_name()
        frames[name] = df
        if isinstance(table.this, exp.Anonymous):
            table.set("alias", table.args.get("alias") or exp.TableAlias(this=exp.to_identifier("table_changes")))
        _point_at_view(rewritten, table, name)
    return rewritten, frames


_PLACEHOLDER = "__sparkdelta_"
_PLACEHELD = re.compile(rf"`?({_PLACEHOLDER}[0-9a-f]{{32}})`?")


def frame_name() -> str:
    """A fresh placeholder for a DataFrame in SQL text (``sql_with_frames`` binds it)."""
    return f"{_PLACEHOLDER}{uuid.uuid4().hex}"


def sql_with_frames(original_sql: SparkSql, bound: dict[str, DataFrame] | None = None) -> SparkSql:
    """Spark's ``sql`` for text that names DataFrames by placeholder (``frame_name``): those
    given to the call, and ``bound`` (the user's ``spark.sql(text, df=...)`` arguments).

    Spark's own ``spark.sql(text, **frames)`` binds each ``{name}`` to its DataFrame: a
    classic session through a temporary view for the statement's analysis, a Spark Connect
    one by sending the DataFrames' plans with the statement (a Connect server analyzes a
    query again at each action, so a view dropped after the call would be gone by then).
    Braces of the text itself are escaped.
    """

    wrapped = getattr(original_sql, _FRAMES_OF, None)
    if wrapped is not None:  # already one (a statement run from within a statement): one binding only
        inner, outer = wrapped
        return sql_with_frames(inner, {**outer, **(bound or {})})

    def sql(spark: SparkSession, text: str, args: Any = None, **frames: DataFrame) -> DataFrame:
        named = {**(bound or {}), **frames}
        used = {name: named[name] for name in dict.fromkeys(_PLACEHELD.findall(text)) if name in named}
        if not used:
            return original_sql(spark, text, args)
        placeheld = _PLACEHELD.sub(r"{\1}", text.replace("{", "{{").replace("}", "}}"))
        return original_sql(spark, placeheld, args, **used)

    setattr(sql, _FRAMES_OF, (original_sql, dict(bound or {})))
    return sql


_FRAMES_OF = "_sparkdelta_frames_of"


def run_with_frames(
    spark: SparkSession, statement: exp.Expression, frames: dict[str, DataFrame], original_sql: SparkSql
) -> DataFrame:
    """Run ``statement`` (from ``delta_frames``) with its Delta DataFrames (``original_sql``
    is ``sql_with_frames``'s, as ``run_sql`` makes it)."""
    return original_sql(spark, statement.sql(dialect=DeltaSpark), None, **frames)


def has_delta_reference(spark: SparkSession, statement: exp.Expression | exp.Query) -> bool:
    ctes = _cte_names(statement)
    for table in statement.find_all(exp.Table):
        if isinstance(table.this, exp.Anonymous) and table.this.name.lower() == "table_changes":
            return True
        if table.args.get("version") is not None:
            return True
        if not table.args.get("db") and table.name.lower() in ctes:
            continue
        if delta_location(spark, table) is not None:
            return True
    return False


def run_query(spark: SparkSession, statement: exp.Expression, original_sql: SparkSql) -> DataFrame:
    """Run a statement that reads Delta tables."""
    rewritten, frames = delta_frames(spark, statement, original_sql)
    return run_with_frames(spark, rewritten, frames, original_sql)


def query_dataframe(spark: SparkSession, query: exp.Expression, original_sql: SparkSql) -> DataFrame:
    """A DataFrame for a SELECT (or VALUES) that may read Delta tables."""
    if has_delta_reference(spark, query):
        return run_query(spark, query, original_sql)
    return original_sql(spark, query.sql(dialect=DeltaSpark))
