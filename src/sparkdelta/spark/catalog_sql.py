"""The SQL text sparkdelta hands Spark's catalog: column lists and string literals.

sparkdelta writes catalog entries with ``CREATE TABLE`` statements, which classic and
Spark Connect sessions run alike (``spark.catalog.createTable`` on a Connect session reads
the new table back through its data source, which only sparkdelta can read).
"""

from __future__ import annotations

from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from .commands.column_names import quoted


def string_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslash escapes, Spark's default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _field_sql(field: StructField, separator: str) -> str:
    text = f"{quoted([field.name])}{separator}{type_sql(field.dataType)}"
    if not field.nullable:
        text += " NOT NULL"
    comment = field.metadata.get("comment")
    if isinstance(comment, str):
        text += f" COMMENT {string_literal(comment)}"
    return text


def type_sql(data_type: DataType) -> str:
    """A type as Spark's DDL spells it: nested fields quoted, with their nullability and comments.

    Arrays' and maps' nullability of elements has no DDL; the catalog's copy of a Delta
    table's schema is informational only (reads take the snapshot's).
    """
    if isinstance(data_type, StructType):
        return "STRUCT<" + ", ".join(_field_sql(f, ": ") for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{type_sql(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{type_sql(data_type.keyType)}, {type_sql(data_type.valueType)}>"
    return data_type.simpleString()


def columns_sql(schema: StructType) -> str:
    """A ``CREATE TABLE`` column list (without its parentheses)."""
    return ", ".join(_field_sql(f, " ") for f in schema.fields)
