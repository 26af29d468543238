"""Projections spelled as SQL text, so that Spark parses a whole one in a single call.

On a classic session each ``Column`` built in Python is a round trip to the JVM, and
pyspark records the Python call site of every ``functions`` call and ``Column`` method
(about a dozen py4j calls each): ``F.col(name).cast(t).alias(name)`` costs some forty.
A read or a write of a wide table built one such Column per column, and those round
trips took more of a small DML statement's time than Spark's planning did.
``DataFrame.selectExpr`` takes the projection's text in one call, on Spark Connect too.

The text must mean what the Columns meant, so a type is spelled only where Spark's SQL
spells it whole: ``type_sql`` answers None for field metadata inside the type (a nested
column's comment or column mapping id), for arrays and maps whose elements may not be
null (``ARRAY<...>`` always allows them) and for types it does not name; callers keep
Columns for those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

# Types whose SQL name is their simpleString, spelled whole (StringType: below, by collation).
_NAMED = (
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    BinaryType,
    DateType,
    TimestampType,
    TimestampNTZType,
    VariantType,
)


def quote(name: str) -> str:
    """A column name as one SQL identifier, whatever it holds (dots, spaces, backquotes)."""
    return "`" + name.replace("`", "``") + "`"


def type_sql(data_type: DataType) -> str | None:
    """``data_type`` as Spark's SQL names it exactly (field names, nullability, collation),
    or None where SQL cannot say all of it."""
    if isinstance(data_type, StringType):
        # The collation is named: a bare STRING takes whatever default collation applies.
        return f"STRING COLLATE {data_type.collation}"
    if isinstance(data_type, _NAMED):
        return data_type.simpleString().upper()
    if isinstance(data_type, ArrayType):
        element = type_sql(data_type.elementType)
        return None if element is None or not data_type.containsNull else f"ARRAY<{element}>"
    if isinstance(data_type, MapType):
        key, value = type_sql(data_type.keyType), type_sql(data_type.valueType)
        return None if key is None or value is None or not data_type.valueContainsNull else f"MAP<{key}, {value}>"
    if isinstance(data_type, StructType):
        fields = []
        for field in data_type.fields:
            spelled = type_sql(field.dataType)
            if spelled is None or field.metadata:
                return None
            fields.append(f"{quote(field.name)}: {spelled}{'' if field.nullable else ' NOT NULL'}")
        return f"STRUCT<{', '.join(fields)}>"
    return None


def cast_sql(expression: str, data_type: DataType) -> str | None:
    """``CAST(expression AS type)``, or None where ``type_sql`` cannot spell the type."""
    spelled = type_sql(data_type)
    return None if spelled is None else f"CAST({expression} AS {spelled})"


def select_as(df: DataFrame, columns: Sequence[tuple[str, str | None, DataType | None]]) -> DataFrame:
    """``df`` projected to ``columns``, each (name, the column of ``df`` it is, or None for
    NULL, and the type to cast it to, or None to keep it), in one ``selectExpr``.

    A column that is not cast keeps its field metadata, as an alias keeps it; a cast has
    none. A cast ``type_sql`` cannot spell is made by a Column under a temporary name first.
    """
    texts: list[str] = []
    unspelled: dict[str, Column] = {}
    for name, source, data_type in columns:
        value = "NULL" if source is None else quote(source)
        text = value if data_type is None else cast_sql(value, data_type)
        if text is None:
            assert data_type is not None
            temporary = f"__sparkdelta_cast_{len(unspelled)}"
            unspelled[temporary] = (F.lit(None) if source is None else F.col(value)).cast(data_type)
            text = quote(temporary)
        texts.append(f"{text} AS {quote(name)}")
    return (df.withColumns(unspelled) if unspelled else df).selectExpr(*texts)


def with_field_metadata(df: DataFrame, names: Sequence[str], metadata: dict[str, dict[str, Any]]) -> DataFrame:
    """``df`` (whose columns are ``names``) with the field metadata of the columns ``metadata``
    names replaced by it, in one projection.

    A Spark Connect server drops the metadata of an alias given to ``withColumns``; a
    ``select`` keeps it, on either kind of session.
    """
    if not metadata:
        return df
    columns = [df[quote(name)] for name in names]
    return df.select(*[c.alias(n, metadata=metadata[n]) if n in metadata else c for n, c in zip(names, columns, strict=True)])
