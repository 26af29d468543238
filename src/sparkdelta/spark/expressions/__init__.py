"""Spark conditions understood in Python, the same way on classic and Spark Connect sessions.

``tree.py`` builds one neutral expression tree from SQL text or a Column; ``resolve.py``
resolves its names against schemas (``spark.sql.caseSensitive``); ``kernel.py`` turns it
into kernel skipping predicates; ``sql_text.py`` prints it as Catalyst prints the
analyzed expression. ``Condition`` below is the entry point the commands use: a
condition resolved against the relations it may name, under the session's settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

from pyspark.sql import Column, SparkSession
from pyspark.sql.types import StructType

from ...kernel import skipping as S
from ..time_zones import session_zone
from .kernel import to_predicate
from .resolve import Relation, ansi, case_sensitive, references, resolve
from .sql_text import analyzed_sql
from .tree import Col, Expr, from_condition

__all__ = ["Relation", "ResolvedCondition", "resolve_condition"]


@dataclass(frozen=True)
class ResolvedCondition:
    """A condition's tree, its names resolved, and the session time zone its literals are read in."""

    expr: Expr
    time_zone: tzinfo
    ansi: bool = True

    def predicate(self) -> S.Predicate | None:
        """The kernel skipping predicate (None: nothing sound to skip by)."""
        return to_predicate(self.expr, self.time_zone)

    def references(self) -> list[Col] | None:
        """The columns it reads, or None when that is not certain."""
        return references(self.expr)

    def sql(self) -> str | None:
        """Its SQL as Catalyst prints the analyzed expression, or None."""
        return analyzed_sql(self.expr, self.time_zone, self.ansi)


def resolve_condition(
    spark: SparkSession, condition: str | Column | Expr, relations: Sequence[Relation] | StructType
) -> ResolvedCondition:
    """``condition`` (SQL text, a Column, or a tree) resolved against ``relations`` (or one schema)."""
    expr = condition if not isinstance(condition, (str, Column)) else from_condition(condition)
    scope = [Relation(relations)] if isinstance(relations, StructType) else list(relations)
    return ResolvedCondition(resolve(expr, scope, case_sensitive(spark)), session_zone(spark), ansi(spark))
