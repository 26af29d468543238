"""The schema side of a write: what the data may add to the table, and lining rows up with it.

Types are compared without field metadata or nullability: a column-mapped table keeps
ids in its nested fields that incoming data never has, and that is no mismatch.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ...exceptions import DeltaAnalysisException
from ...kernel.column_defaults import KEY as DEFAULT_KEY
from ...kernel.column_mapping import INTERNAL_FIELD_KEYS
from ...kernel.features import GENERATION_EXPRESSION
from ...kernel.schema import parse_schema
from ..projection import select_as
from .defaults import default_value, has_default
from .generated import generated_value

# Field metadata a DataFrame may carry from the table it was read from, which belongs to
# that table only: its column mapping, generated and identity columns, and column defaults.
_TABLE_OWNED_KEYS = (*INTERNAL_FIELD_KEYS, GENERATION_EXPRESSION, DEFAULT_KEY)


def delta_schema_json(schema: StructType) -> str:
    """Spark's schema JSON with the key order delta-spark writes."""
    return parse_schema(schema.json()).json()


def bare(data_type: DataType) -> DataType:
    """``data_type`` without field metadata or nullability, for comparisons."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, bare(f.dataType)) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(bare(data_type.elementType))
    if isinstance(data_type, MapType):
        return MapType(bare(data_type.keyType), bare(data_type.valueType))
    return data_type


def castable(data_type: DataType) -> DataType:
    """``data_type`` with every nested field, element and value nullable: what a write casts
    its rows to. Spark refuses a cast to a non-nullable nested field from a nullable one
    (an UPDATE of ``s.b`` makes all of ``s`` nullable); NOT NULL is the constraints' check
    (``constraints.py``), and the table's schema in the log keeps it."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, castable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(castable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(castable(data_type.keyType), castable(data_type.valueType), True)
    return data_type


def _own_metadata(metadata: dict) -> dict:
    return {k: v for k, v in metadata.items() if k not in _TABLE_OWNED_KEYS and not k.startswith("delta.identity.")}


def _fresh_type(data_type: DataType) -> DataType:
    if isinstance(data_type, StructType):
        return new_table_schema(data_type, nullable=None)
    if isinstance(data_type, ArrayType):
        return ArrayType(_fresh_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(_fresh_type(data_type.keyType), _fresh_type(data_type.valueType), data_type.valueContainsNull)
    return data_type


def new_table_schema(schema: StructType, nullable: bool | None = True) -> StructType:
    """The data's schema as a new table's: without metadata owned by another table, and
    with top-level columns nullable (delta-spark drops NOT NULL from DataFrame writes)."""
    return StructType(
        [
            StructField(f.name, _fresh_type(f.dataType), f.nullable if nullable is None else nullable, _own_metadata(f.metadata))
            for f in schema.fields
        ]
    )


def _field_text(field: StructField) -> str:
    return f"{field.name} {field.dataType.simpleString()}"


def merge_schemas(table: StructType, data: StructType, where: str) -> StructType:
    """Table schema plus the data's new columns at the end (names match case-insensitively)."""
    by_name = {f.name.lower(): f for f in data.fields}
    merged = []
    for field in table.fields:
        incoming = by_name.pop(field.name.lower(), None)
        if incoming is not None and bare(incoming.dataType) != bare(field.dataType):
            if isinstance(field.dataType, StructType) and isinstance(incoming.dataType, StructType):
                field = StructField(
                    field.name, merge_schemas(field.dataType, incoming.dataType, where), field.nullable, field.metadata
                )
            else:
                raise DeltaAnalysisException(
                    f"{where}: failed to merge column {field.name}: the table has {field.dataType.simpleString()}, "
                    f"the data has {incoming.dataType.simpleString()}",
                    errorClass="DELTA_FAILED_TO_MERGE_FIELDS",
                )
        merged.append(field)
    # New columns are nullable: rows written before them have none.
    fresh = new_table_schema(StructType([f for f in data.fields if f.name.lower() in by_name]))
    return StructType(merged + list(fresh.fields))


def check_schema(table: StructType, data: StructType, where: str) -> None:
    """Refuse data whose columns the table does not have, or with other types."""
    known = {f.name.lower(): f for f in table.fields}
    extra = [f for f in data.fields if f.name.lower() not in known]
    different = [
        (known[f.name.lower()], f)
        for f in data.fields
        if f.name.lower() in known and bare(known[f.name.lower()].dataType) != bare(f.dataType)
    ]
    if not extra and not different:
        return
    lines = [f"{where}: the data's schema does not match the table's."]
    if extra:
        lines.append("Columns not in the table: " + ", ".join(_field_text(f) for f in extra) + ".")
    for theirs, ours in different:
        lines.append(
            f"Column {ours.name}: the table has {theirs.dataType.simpleString()}, the data has {ours.dataType.simpleString()}."
        )
    lines.append(
        "To add the new columns, write with .option('mergeSchema', 'true') (or set "
        "spark.databricks.delta.schema.autoMerge.enabled=true); to replace the schema, overwrite with "
        ".option('overwriteSchema', 'true')."
    )
    raise DeltaAnalysisException(" ".join(lines), errorClass="DELTA_METADATA_MISMATCH")


def aligned(df: DataFrame, schema: StructType) -> DataFrame:
    """Rows in the table's column order, names and types.

    A column the data lacks is its default (``defaults.py``), else null, or computed from
    its expression when generated (after the other columns are in place, since
    expressions refer to them).
    """
    present = {f.name.lower(): f.name for f in df.schema.fields}
    computed = [f for f in schema.fields if GENERATION_EXPRESSION in f.metadata and f.name.lower() not in present]
    rows = select_as(df, [(f.name, present.get(f.name.lower()), castable(f.dataType)) for f in schema.fields if f not in computed])
    defaulted = [f for f in schema.fields if has_default(f) and f.name.lower() not in present]
    if defaulted:
        rows = rows.withColumns({f.name: default_value(f) for f in defaulted})
    if not computed:
        return rows
    with_generated = rows.withColumns({f.name: generated_value(f) for f in computed})
    return select_as(with_generated, [(f.name, f.name, None) for f in schema.fields])
