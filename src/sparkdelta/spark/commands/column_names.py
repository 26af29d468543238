"""How Spark and delta-spark spell columns and types in errors and in operation parameters.

Users compare these with delta-spark's (``DESCRIBE HISTORY``, error messages), so each
follows the Scala function it is named after.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql.types import DataType


def quoted(parts: Sequence[str]) -> str:
    """Spark's ``toSQLId``: every part in backticks (```s`.`x``)."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def attribute_name(parts: Sequence[str]) -> str:
    """Spark's ``UnresolvedAttribute(parts).name``: only parts with a dot in backticks (``s.x``, ```a.b```)."""
    return ".".join(f"`{p}`" if "." in p else p for p in parts)


def type_name(data_type: DataType) -> str:
    """Scala's ``DataType.typeName`` (``integer``, ``decimal(10,2)``, ``struct``)."""
    value = data_type.jsonValue()
    return value if isinstance(value, str) else data_type.typeName()


def sql_type(data_type: DataType) -> str:
    """Spark's ``DataType.sql`` for the types ALTER TABLE names (``INT``, ``DECIMAL(10,2)``)."""
    return data_type.simpleString().upper()
