"""DESCRIBE HISTORY and DESCRIBE DETAIL as DataFrames with delta-spark's columns.

Shared by ``DeltaTable.history()`` / ``detail()`` and the SQL statements; the facts come
from the kernel (``Table.history``, ``table_detail``), which the CLI reads too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ...kernel import Table
from ...kernel.describe import table_detail
from ..paths import qualified

HISTORY_SCHEMA = StructType(
    [
        StructField("version", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("userId", StringType()),
        StructField("userName", StringType()),
        StructField("operation", StringType()),
        StructField("operationParameters", MapType(StringType(), StringType())),
        StructField("job", MapType(StringType(), StringType())),
        StructField("notebook", MapType(StringType(), StringType())),
        StructField("clusterId", StringType()),
        StructField("readVersion", LongType()),
        StructField("isolationLevel", StringType()),
        StructField("isBlindAppend", BooleanType()),
        StructField("operationMetrics", MapType(StringType(), StringType())),
        StructField("userMetadata", StringType()),
        StructField("engineInfo", StringType()),
    ]
)

DETAIL_SCHEMA = StructType(
    [
        StructField("format", StringType()),
        StructField("id", StringType()),
        StructField("name", StringType()),
        StructField("description", StringType()),
        StructField("location", StringType()),
        StructField("createdAt", TimestampType()),
        StructField("lastModified", TimestampType()),
        StructField("partitionColumns", ArrayType(StringType())),
        StructField("clusteringColumns", ArrayType(StringType())),
        StructField("numFiles", LongType()),
        StructField("sizeInBytes", LongType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("minReaderVersion", LongType()),
        StructField("minWriterVersion", LongType()),
        StructField("tableFeatures", ArrayType(StringType())),
    ]
)


def _string_map(value: Any) -> dict[str, str | None] | None:
    if value is None:
        return None
    return {str(k): v if v is None or isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _instant(millis: int | None) -> datetime | None:
    return datetime.fromtimestamp(millis / 1000, UTC) if millis is not None else None


def history(spark: SparkSession, table: Table, limit: int | None = None) -> DataFrame:
    """The table's commits, newest first (the newest ``limit``), with delta-spark's history columns."""
    rows = []
    for record in table.history(limit):
        info = record.commit_info
        rows.append(
            (
                record.version,
                _instant(record.timestamp),
                info.get("userId"),
                info.get("userName"),
                info.get("operation"),
                _string_map(info.get("operationParameters")),
                _string_map(info.get("job")),
                _string_map(info.get("notebook")),
                info.get("clusterId"),
                info.get("readVersion"),
                info.get("isolationLevel"),
                info.get("isBlindAppend"),
                _string_map(info.get("operationMetrics")),
                info.get("userMetadata"),
                info.get("engineInfo"),
            )
        )
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def detail(spark: SparkSession, table: Table, name: str | None = None) -> DataFrame:
    """One row describing the table, as ``DESCRIBE DETAIL``; ``name`` is its catalog name, if it has one."""
    facts = table_detail(table.snapshot())
    row = (
        "delta",
        facts.id,
        name or facts.name,
        facts.description,
        qualified(facts.location),
        _instant(facts.created_at),
        _instant(facts.last_modified),
        facts.partition_columns,
        facts.clustering_columns,
        facts.num_files,
        facts.size_in_bytes,
        facts.properties,
        facts.min_reader_version,
        facts.min_writer_version,
        facts.table_features,
    )
    return spark.createDataFrame([row], DETAIL_SCHEMA)
