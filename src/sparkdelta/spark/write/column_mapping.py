"""Writing column-mapped tables: rows in the table's names go to files in its physical names.

Every column (nested ones too) is renamed to its ``delta.columnMapping.physicalName`` and
tagged with ``parquet.field.id`` = its column id, which Spark's Parquet writer stores as
the Parquet field id: readers resolve mapped columns by physical name (``name`` mode) or
by field id (``id`` mode), and the spec asks writers for both.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ...kernel.column_mapping import ID, PARQUET_FIELD_ID, PHYSICAL_NAME


def _file_metadata(field: StructField) -> dict[str, int]:
    return {PARQUET_FIELD_ID: int(field.metadata[ID])} if ID in field.metadata else {}


def physical_type(data_type: DataType) -> DataType:
    """``data_type`` with struct fields renamed to physical names and carrying only their field ids."""
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(f.metadata.get(PHYSICAL_NAME, f.name), physical_type(f.dataType), f.nullable, _file_metadata(f))
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(physical_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(physical_type(data_type.keyType), physical_type(data_type.valueType), data_type.valueContainsNull)
    return data_type


def _has_struct(data_type: DataType) -> bool:
    if isinstance(data_type, StructType):
        return True
    if isinstance(data_type, ArrayType):
        return _has_struct(data_type.elementType)
    if isinstance(data_type, MapType):
        return _has_struct(data_type.keyType) or _has_struct(data_type.valueType)
    return False


def physical_name(field: StructField) -> str:
    return str(field.metadata.get(PHYSICAL_NAME, field.name))


def to_physical(df: DataFrame, schema: StructType) -> DataFrame:
    """``df`` (columns named and ordered as ``schema``) renamed to the physical layout.

    Nested fields are renamed by a cast, which Spark applies by position.
    """
    columns: list[Column] = []
    for field in schema.fields:
        column = df["`" + field.name.replace("`", "``") + "`"]  # a DataFrame's own column: one call, F.col takes a dozen
        if _has_struct(field.dataType):
            column = column.cast(physical_type(field.dataType))
        columns.append(column.alias(physical_name(field), metadata=_file_metadata(field)))
    return df.select(*columns)
