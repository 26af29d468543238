"""Spark filters (SQL text or Columns) as kernel skipping predicates.

The condition becomes sparkdelta's neutral expression tree (``spark/expressions``),
resolved against the table's schema in Python, the same way on classic and Spark
Connect sessions. Only shapes the kernel can reason about are translated; anything else
becomes "unknown", which keeps files.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from ...kernel import Snapshot
from ...kernel import skipping as S
from ..expressions import Relation, resolve_condition
from .parquet import spark_schema, without_field_metadata

Condition = str | Column


def condition_predicate(
    spark: SparkSession, schema: StructType, condition: Condition, alias: str | None = None
) -> S.Predicate | None:
    """The kernel form of a ``filter``/``where`` argument over rows of ``schema`` (named ``alias``, if any)."""
    return resolve_condition(spark, condition, [Relation(schema, alias)]).predicate()


def schema_probe(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame with ``schema``, to resolve conditions against."""
    return spark.createDataFrame([], schema)


def table_schema(snapshot: Snapshot) -> StructType:
    """The table's columns as conditions name them (no field metadata)."""
    return without_field_metadata(spark_schema(snapshot))


def kernel_predicate(spark: SparkSession, snapshot: Snapshot, condition: Condition | None) -> S.Predicate | None:
    """The kernel form of ``condition`` for skipping and conflict checks (None: nothing sound)."""
    if condition is None:
        return None
    return condition_predicate(spark, table_schema(snapshot), condition)
