"""delta-spark's Python argument checks, with its exception types and messages.

Code ported from delta-spark may catch or test these (``except TypeError``, or a message
match in its tests), so ``DeltaTable``, the merge builder and OPTIMIZE check their
arguments here, word for word as delta-spark's ``delta/tables.py`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column

CONDITION = "'condition'"


def condition_arg(condition: Any, argname: str = CONDITION) -> str | Column | None:
    """A condition: SQL text, a Column, or None."""
    if condition is None or isinstance(condition, (str, Column)):
        return condition
    raise TypeError(
        f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), found to be of type {type(condition)}"
    )


def column_mapping_arg(mapping: Any, argname: str) -> dict[str, str | Column]:
    """``set`` / ``values``: column names to SQL text or Columns."""
    if mapping is None:
        raise ValueError(f"{argname} cannot be None")
    if type(mapping) is not dict and not isinstance(mapping, Mapping):
        raise TypeError(f"{argname} must be a dict, found to be {type(mapping)}")
    for column, expression in mapping.items():
        if type(column) is not str:
            raise TypeError(
                f"Keys of dict in {argname} must contain only strings with column names, found '{column}' of type '{type(column)}"
            )
        if not isinstance(expression, (str, Column)):
            raise TypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings (expressions in SQL "
                f"syntax) as values, found '{expression}' of type '{type(expression)}'"
            )
    return dict(mapping)


def str_arg(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} needs to be a string but got '{type(value)}'.")
    return value


def int_arg(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} needs to be an int but got '{type(value)}'.")
    return value


def bool_arg(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} needs to be a boolean but got '{type(value)}'.")
    return value


def version_arg(value: Any, name: str) -> int:
    """A protocol version (delta-spark's ``upgradeTableProtocol`` wording)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"The {name} needs to be an integer but got '{type(value)}'.")
    return value
