"""Column defaults in writes (``kernel/column_defaults.py``): the value a column gets where a
write gives it none, and the ``DEFAULT`` keyword of INSERT VALUES, UPDATE SET and MERGE.

A column without a default gets NULL, as before; the value is the default expression cast
to the column's type, evaluated by Spark per row (``current_timestamp()`` included).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from ...kernel.column_defaults import KEY

KEYWORD = "DEFAULT"
_V = TypeVar("_V")


def default_sql(field: StructField) -> str:
    """The column's default as SQL of its type: its expression, or NULL without one."""
    expression = field.metadata.get(KEY) if field.metadata else None
    return f"CAST(({expression}) AS {field.dataType.simpleString()})" if expression else f"CAST(NULL AS {field.dataType.simpleString()})"


def default_value(field: StructField) -> Column:
    return F.expr(default_sql(field))


def has_default(field: StructField) -> bool:
    return bool(field.metadata) and KEY in field.metadata


def is_keyword(value: object) -> bool:
    """Whether an assigned value (SQL text) is the ``DEFAULT`` keyword."""
    return isinstance(value, str) and value.strip().upper() == KEYWORD


def with_keywords_resolved(assignments: Iterable[tuple[str, _V]], schema: StructType) -> list[tuple[str, _V | str]]:
    """``(column, value)`` pairs with each ``DEFAULT`` value replaced by its column's default (SQL text)."""
    by_name = {f.name.lower(): f for f in schema.fields}
    resolved: list[tuple[str, _V | str]] = []
    for key, value in assignments:
        field = by_name.get(key.strip("`").lower())
        resolved.append((key, default_sql(field) if field is not None and is_keyword(value) else value))
    return resolved
