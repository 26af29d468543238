"""Projections spelled as SQL text (``spark/projection.py``) against the Columns they replace.

Oracle: Spark itself. Each projection ``select_as`` makes must have the schema (names,
types, nullability, field metadata) and the rows of the ``F.col(...).cast(...).alias(...)``
projection it stands for, on either kind of session.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession
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
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from sparkdelta.spark.projection import select_as, type_sql, with_field_metadata

_NESTED = StructType(
    [
        StructField("a b", LongType(), False),
        StructField("c`d", ArrayType(MapType(StringType(), StringType()))),
        StructField("e.f", StructType([StructField("g", DecimalType(12, 3))])),
    ]
)


@pytest.fixture(scope="module")
def source(spark: SparkSession) -> DataFrame:
    """One row of each kind of value, under awkward names."""
    return spark.sql(
        "SELECT 1L AS `id`, 'x' AS `a.b`, CAST('2024-01-02 03:04:05' AS TIMESTAMP) AS `t s`, "
        "named_struct('a b', 2L, 'c`d', array(map('k', 'v')), 'e.f', named_struct('g', 1.5BD)) AS `s`, "
        "CAST('ab' AS BINARY) AS bin, true AS flag, DATE'2024-01-02' AS day"
    )


def _by_columns(df: DataFrame, columns: list[tuple[str, str | None, DataType | None]]) -> DataFrame:
    """The projection as Columns, as the callers of ``select_as`` built it before."""
    out = []
    for name, source, data_type in columns:
        value = F.lit(None) if source is None else F.col("`" + source.replace("`", "``") + "`")
        out.append((value if data_type is None else value.cast(data_type)).alias(name))
    return df.select(*out)


@pytest.mark.parametrize(
    ("source_name", "data_type"),
    [
        ("id", LongType()),
        ("id", IntegerType()),
        ("id", ShortType()),
        ("id", ByteType()),
        ("id", DoubleType()),
        ("id", FloatType()),
        ("id", DecimalType(20, 2)),
        ("id", StringType()),
        ("a.b", StringType("UTF8_LCASE")),
        ("t s", TimestampNTZType()),
        ("t s", TimestampType()),
        ("t s", DateType()),
        ("bin", BinaryType()),
        ("flag", BooleanType()),
        ("day", StringType()),
        ("s", _NESTED),
        (None, _NESTED),
        (None, VariantType()),
    ],
)
def test_a_cast_spelled_in_sql_is_the_columns_cast(source: DataFrame, source_name: str | None, data_type: DataType) -> None:
    assert type_sql(data_type) is not None
    columns: list[tuple[str, str | None, DataType | None]] = [("out`put", source_name, data_type), ("id", "id", None)]
    ours, theirs = select_as(source, columns), _by_columns(source, columns)
    assert ours.schema == theirs.schema
    assert ours.collect() == theirs.collect()


@pytest.mark.parametrize(
    "data_type",
    [
        StructType([StructField("a b", LongType(), False, {"comment": "nested metadata"}), *_NESTED.fields[1:]]),
        ArrayType(LongType(), containsNull=False),
        MapType(StringType(), LongType(), valueContainsNull=False),
    ],
    ids=["nested-metadata", "array-without-nulls", "map-without-null-values"],
)
def test_a_type_sql_cannot_spell_is_cast_by_a_column(source: DataFrame, data_type: DataType) -> None:
    assert type_sql(data_type) is None
    source_name = "s" if isinstance(data_type, StructType) else None
    columns: list[tuple[str, str | None, DataType | None]] = [("x", source_name, data_type), ("a.b", "a.b", None)]
    ours, theirs = select_as(source, columns), _by_columns(source, columns)
    assert ours.schema == theirs.schema
    assert ours.columns == ["x", "a.b"]  # the temporary column made for the cast is gone


def test_a_column_kept_keeps_its_metadata_and_a_cast_drops_it(source: DataFrame) -> None:
    described = source.withMetadata("id", {"comment": "the key"})
    kept = select_as(described, [("key", "id", None), ("cast", "id", LongType())])
    assert [f.metadata for f in kept.schema.fields] == [{"comment": "the key"}, {}]


def test_values_survive_the_round_trip(spark: SparkSession) -> None:
    row = select_as(
        spark.sql("SELECT '12.345' AS v, '2024-05-06 07:08:09.5' AS t"),
        [("d", "v", DecimalType(10, 3)), ("t", "t", TimestampNTZType())],
    ).collect()[0]
    assert row == (Decimal("12.345"), dt.datetime(2024, 5, 6, 7, 8, 9, 500000))


def test_field_metadata_is_set_by_name_and_kept_elsewhere(source: DataFrame) -> None:
    """On either kind of session (a Connect server drops an alias's metadata in ``withColumns``)."""
    described = source.withMetadata("id", {"comment": "the key"})
    names = described.columns
    relabelled = with_field_metadata(described, names, {"a.b": {"comment": "dotted"}, "t s": {"k": 1}})
    assert relabelled.columns == names
    assert {f.name: f.metadata for f in relabelled.schema.fields if f.metadata} == {
        "id": {"comment": "the key"},
        "a.b": {"comment": "dotted"},
        "t s": {"k": 1},
    }
