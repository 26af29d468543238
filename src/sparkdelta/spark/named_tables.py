"""Reads and writes of named Delta tables: ``spark.table``, ``saveAsTable`` and ``insertInto``.

The catalog (``catalog.py``) says where a name lives; the table at that location is read
and written as any path is, and a failed first write of a managed table takes its new
catalog entry back out.
"""

from __future__ import annotations

import json
from dataclasses import replace as replace_options
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..exceptions import DeltaAnalysisException, spark_errors
from ..kernel import Metadata
from .catalog import default_location, delta_entry, lookup, register, unregister
from .options import DeltaOptions
from .paths import normalize_location
from .read.scan import load
from .storage import open_table
from .write.dataframe import Operation, is_dynamic_partition_overwrite, write_dataframe


@spark_errors
def read_table(spark: SparkSession, name: str, options: DeltaOptions) -> DataFrame:
    """``spark.table(name)`` for a Delta table: a native scan of its current (or requested) snapshot."""
    return load(spark, delta_entry(spark, name).location, options)


@spark_errors
def save_as_table(
    df: DataFrame,
    name: str,
    mode: str,
    partition_by: list[str] | None,
    options: DeltaOptions,
    properties: dict[str, str] | None = None,
    description: str | None = None,
    cluster_by: list[str] | None = None,
) -> None:
    """``df.write.format("delta").saveAsTable(name)``: write at the table's location, registering new names.

    ``option("path", ...)`` makes an external table; otherwise a new table is managed,
    under the warehouse. A failed first write leaves no catalog entry behind. As in
    delta-spark, creating a table is a ``CREATE TABLE AS SELECT`` and overwriting one a
    ``CREATE OR REPLACE TABLE AS SELECT`` that keeps the table's id (its schema is replaced).
    ``properties`` and ``description`` (TBLPROPERTIES and COMMENT) apply to a new table.
    """
    spark = df.sparkSession
    path = options.path
    options = replace_options(options, path=None)
    entry = lookup(spark, name)
    mode_name = mode.lower()
    dynamic = mode_name == "overwrite" and is_dynamic_partition_overwrite(df, options)
    overwrite_schema_given = options.overwrite_schema

    def as_select(operation: str, managed: bool, overwrite: bool = False) -> Operation:
        """The history entry, as delta-spark writes it: the committed table's partitioning."""

        def record(metadata: Metadata) -> tuple[str, dict[str, Any]]:
            parameters = {
                "isManaged": str(managed).lower(),
                "description": description,
                "partitionBy": json.dumps(list(metadata.partition_columns)),
                "clusterBy": json.dumps(cluster_by or []),
                "properties": json.dumps(properties or {}),
            }
            if overwrite:  # delta-spark's marks of a DataFrame overwrite, which keeps the table (its id)
                parameters["isV1SaveAsTableOverwrite"] = "true"
                if dynamic:
                    parameters["isDynamicPartitionOverwrite"] = "true"
                elif overwrite_schema_given:
                    parameters["canOverwriteSchema"] = "true"
            return operation, parameters

        return record

    if entry is not None:
        if not entry.is_delta:
            raise DeltaAnalysisException(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
        if mode_name in ("error", "errorifexists", "default"):
            raise DeltaAnalysisException(
                f"{entry.name} already exists (mode ErrorIfExists); use mode append or overwrite",
                errorClass="TABLE_OR_VIEW_ALREADY_EXISTS",
            )
        if mode_name == "ignore":
            return
        if path is not None and normalize_location(path) != entry.location:
            raise DeltaAnalysisException(
                f"{entry.name} is at {entry.location}, not at the given path {path}", errorClass="DELTA_TABLE_LOCATION_MISMATCH"
            )
        operation = None
        if mode_name == "overwrite":
            operation = as_select("CREATE OR REPLACE TABLE AS SELECT", entry.managed, overwrite=True)
            if not dynamic:  # a dynamic partition overwrite keeps the table's schema and other partitions
                options = replace_options(options, overwrite_schema=True)
        write_dataframe(df, entry.location, mode, partition_by, options, properties, description, operation, cluster_by)
        return
    create = "CREATE TABLE AS SELECT"
    if path is not None:
        location = normalize_location(path)
        write_dataframe(df, location, mode, partition_by, options, properties, description, as_select(create, False), cluster_by)
        register(spark, name, location, managed=False, comment=description)
        return
    location = default_location(spark, name)
    register(spark, name, location, managed=True, schema=df.schema, comment=description)
    try:
        write_dataframe(df, location, mode, partition_by, options, properties, description, as_select(create, True), cluster_by)
    except BaseException:
        unregister(spark, name)
        raise


@spark_errors
def insert_into(df: DataFrame, name: str, overwrite: bool) -> None:
    """``df.write.insertInto(name)``: columns by position, as SQL ``INSERT INTO``."""
    entry = delta_entry(df.sparkSession, name)
    table_columns = [f.name for f in open_table(df.sparkSession, entry.location).snapshot().schema.fields]
    if len(df.columns) != len(table_columns):
        raise DeltaAnalysisException(
            f"{entry.name}: insertInto matches columns by position; the table has {len(table_columns)} "
            f"columns ({', '.join(table_columns)}), the data has {len(df.columns)}",
            errorClass="DELTA_INSERT_COLUMN_ARITY_MISMATCH",
        )
    write_dataframe(df.toDF(*table_columns), entry.location, "overwrite" if overwrite else "append", None, DeltaOptions())
