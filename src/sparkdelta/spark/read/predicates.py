"""Spark filters (SQL text or Columns) as kernel skipping predicates.

The Catalyst expression behind a Column is walked through py4j. Only shapes the kernel
can reason about are translated; anything else becomes "unknown", which keeps files.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from ...kernel import Snapshot
from ...kernel import skipping as S
from .parquet import spark_schema, without_field_metadata

_COMPARISONS = {
    "EqualTo": "=",
    "EqualNullSafe": "=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _name(expr: Any) -> str:
    return str(expr.getClass().getSimpleName())


def _children(expr: Any) -> list[Any]:
    children = expr.children()
    return [children.apply(i) for i in range(children.size())]


# Casts that keep every value exactly, hence its order: the analyzer's widening of a
# column to its comparison partner's type (an int column against a bigint literal).
_EXACT_WIDENINGS = {
    "byte": {"short", "integer", "long", "float", "double"},
    "short": {"integer", "long", "float", "double"},
    "integer": {"long", "double"},
    "long": set(),
    "float": {"double"},
}


def exact_widening(source: str, target: str) -> bool:
    """Whether a cast between these Spark type names keeps every value, hence order."""
    return target == source or target in _EXACT_WIDENINGS.get(source, ())


def _column(expr: Any) -> S.Column | None:
    name = _name(expr)
    if name == "AttributeReference":
        return S.Column((str(expr.name()),))
    if name == "GetStructField":
        (child,) = _children(expr)
        parent = _column(child)
        return None if parent is None else S.Column((*parent.path, str(expr.extractFieldName())))
    if name == "Cast":
        (child,) = _children(expr)
        source, target = str(child.dataType().typeName()), str(expr.dataType().typeName())
        if exact_widening(source, target):
            return _column(child)
    return None


def _literal(expr: Any) -> S.Literal | None:
    if _name(expr) == "Cast":
        (child,) = _children(expr)
        return _literal(child)
    if _name(expr) != "Literal":
        return None
    value = expr.value()
    type_name = str(expr.dataType().typeName())
    if value is None:
        return None
    if type_name == "string":
        return S.Literal(str(value.toString()))
    if type_name == "date":
        return S.Literal(dt.date(1970, 1, 1) + dt.timedelta(days=int(value)))
    if type_name == "timestamp":
        return S.Literal(_EPOCH + dt.timedelta(microseconds=int(value)))
    if type_name == "timestamp_ntz":
        return S.Literal(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value)))
    if type_name.startswith("decimal"):
        return S.Literal(Decimal(str(value.toString())))
    if isinstance(value, (bool, int, float)):
        return S.Literal(value)
    return None


def to_predicate(expr: Any, exact: bool = False) -> S.Predicate | None:
    """A kernel predicate for a Catalyst expression, or ``None`` when none is sound.

    The result may be weaker than ``expr`` (an AND keeps the side it can translate), which
    only keeps more files. Under NOT a weaker inner predicate would make a stronger
    outer one and drop files, so there the translation must be ``exact``.
    """
    name = _name(expr)
    children = _children(expr)
    if name in ("And", "Or"):
        left, right = (to_predicate(c, exact) for c in children)
        if left is None or right is None:
            return None if name == "Or" or exact else left or right
        return S.Or(left, right) if name == "Or" else S.And(left, right)
    if name == "Not":
        inner = to_predicate(children[0], exact=True)
        return None if inner is None else S.Not(inner)
    if name == "Between":  # x BETWEEN lower AND upper: lower <= x AND x <= upper
        column, lower, upper = _column(expr.input()), _literal(expr.lower()), _literal(expr.upper())
        if column is None or lower is None or upper is None:
            return None
        return S.And(S.Compare(">=", column, lower), S.Compare("<=", column, upper))
    if name == "EqualNullSafe" and exact:
        return None  # NOT (a <=> 1) holds for NULLs, NOT (a = 1) does not
    if name in _COMPARISONS:
        left, right = children
        column, literal = _column(left), _literal(right)
        op = _COMPARISONS[name]
        if column is None:
            column, literal, op = _column(right), _literal(left), S.flip(op)
        if column is None or literal is None:
            return None
        return S.Compare(op, column, literal)
    if name in ("In", "InSet"):
        column = _column(children[0])
        values = [_literal(c) for c in children[1:]]
        if column is None or not values or any(v is None for v in values):
            return None
        return S.In(column, tuple(v for v in values if v is not None))
    if name in ("IsNull", "IsNotNull"):
        column = _column(children[0])
        return None if column is None else S.IsNull(column, negated=(name == "IsNotNull"))
    if name in ("Like", "StartsWith"):
        column, pattern = _column(children[0]), _literal(children[1])
        if column is None or pattern is None or not isinstance(pattern.value, str):
            return None
        prefix = pattern.value
        if name == "Like":
            if not prefix.endswith("%") or any(ch in prefix[:-1] for ch in "%_\\"):
                return None
            prefix = prefix[:-1]
        return S.StartsWith(column, prefix)
    return None


def filtered_predicate(filtered: DataFrame) -> S.Predicate | None:
    """The kernel form of the condition of ``filtered``'s top ``Filter`` (plan analysis only, no job)."""
    try:
        plan = filtered._jdf.queryExecution().analyzed()
        if _name(plan) != "Filter":
            return None
        return to_predicate(plan.condition())
    except Exception:  # a shape py4j cannot walk: no skipping, never wrong rows
        return None


def condition_predicate(probe: DataFrame, condition: str | Column) -> S.Predicate | None:
    """Translate a ``filter``/``where`` argument, resolved against ``probe`` (a plain DataFrame)."""
    return filtered_predicate(probe.filter(condition))


def schema_probe(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame with ``schema``, to resolve conditions against."""
    return spark.createDataFrame([], schema)


Condition = str | Column


def kernel_predicate(spark: SparkSession, snapshot: Snapshot, condition: Condition | None) -> S.Predicate | None:
    """The kernel form of ``condition`` for skipping and conflict checks (None: nothing sound)."""
    if condition is None:
        return None
    probe = schema_probe(spark, without_field_metadata(spark_schema(snapshot)))
    return condition_predicate(probe, condition)
