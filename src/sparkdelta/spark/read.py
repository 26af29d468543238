"""Reading a Delta snapshot as a Spark DataFrame with Spark's native Parquet reader.

The kernel names the files; Spark scans them directly (column pruning, vectorized
decoding, row-group skipping), with glob expansion off: the names are literal, and
partition values may hold ``[``, ``{``, ``*``, ``?`` or ``\\``. Partition values come
from the log: when the table is partitioned, each row's file (``_metadata.file_path``)
is joined to a small broadcast table of typed partition values. The join is an outer one
that fails loudly if a file's path, as Spark spells it, matches no entry, so a path
spelling mismatch can never drop rows silently. Column-mapped tables are read by
physical name and renamed to the logical schema.
"""

from __future__ import annotations


import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ..kernel import Snapshot
from ..kernel.partitions import typed_partition_values
from .paths import absolute_path, hadoop_path, spark_file_uri

# Reader features this engine implements on top of the kernel's log replay.
ENGINE_READER_FEATURES = frozenset(
    {"columnMapping", "timestampNtz", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview", "v2Checkpoint"}
)

_FILE_KEY = "__sparkdelta_file"
_MATCHED = "__sparkdelta_matched"
# Take the kernel's paths literally: DataSource's internal option turns glob expansion off
# (a "[" in a path fails, "*" or "?" could match other files). With it alone, Spark 4 reads
# some files several times once any path holds a glob character; recursiveFileLookup
# (a no-op for file paths) avoids that, and Hive partition inference on "p=v" directories.
_NO_GLOB = {"__globPaths__": "false", "recursiveFileLookup": "true"}


def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def spark_schema(snapshot: Snapshot) -> StructType:
    """The table's logical schema as a Spark type (Delta's JSON is Spark's)."""
    return StructType.fromJson(snapshot.schema.to_json())


def _column_mapping_mode(snapshot: Snapshot) -> str:
    return snapshot.configuration.get("delta.columnMapping.mode", "none")


def _physical(data_type: DataType) -> DataType:
    """The same type with every struct field renamed to its physical name."""
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(
                    f.metadata.get("delta.columnMapping.physicalName", f.name), _physical(f.dataType), f.nullable, f.metadata
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_physical(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(_physical(data_type.keyType), _physical(data_type.valueType), data_type.valueContainsNull)
    return data_type


def _physical_field(field: StructField) -> StructField:
    renamed = _physical(StructType([field]))
    assert isinstance(renamed, StructType)
    return renamed.fields[0]


def without_field_metadata(data_type: StructType) -> StructType:
    return StructType([StructField(f.name, f.dataType, f.nullable) for f in data_type.fields])


def read_snapshot(spark: SparkSession, snapshot: Snapshot, files: pa.Table | None = None) -> DataFrame:
    """Rows of ``snapshot`` (only of ``files``, when given): data from Parquet, partition values from the log."""
    snapshot.require_readable(ENGINE_READER_FEATURES)
    schema = spark_schema(snapshot)
    partition_names = {c.lower() for c in snapshot.partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in partition_names]
    mapped = _column_mapping_mode(snapshot) != "none"
    read_fields = [_physical_field(f) if mapped else f for f in data_fields]

    files = snapshot.files if files is None else files
    if files.num_rows == 0:
        return spark.createDataFrame([], without_field_metadata(schema))
    root = snapshot.table_root
    local_paths = [absolute_path(root, p) for p in files.column("path").to_pylist()]
    data = spark.read.options(**_NO_GLOB).schema(StructType(read_fields)).parquet(*[hadoop_path(p) for p in local_paths])
    if not mapped and not snapshot.partition_columns:
        return data  # the scan already has the table's names, types and order
    # Renaming nested physical names needs a cast; otherwise the scan already has the table's types.
    columns: dict[str, Column] = {
        logical.name: (_col(physical.name).cast(logical.dataType) if mapped else _col(physical.name)).alias(logical.name)
        for logical, physical in zip(data_fields, read_fields)
    }
    if snapshot.partition_columns:
        keys = pa.array([spark_file_uri(p) for p in local_paths], pa.string())
        values = typed_partition_values(files.column("partitionValues").combine_chunks(), snapshot.schema, snapshot.partition_columns)
        lookup = spark.createDataFrame(values.append_column(_FILE_KEY, keys))
        lookup = lookup.select(
            F.col(_FILE_KEY),
            F.lit(True).alias(_MATCHED),
            *[_col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields if f.name.lower() in partition_names],
        )
        data = data.withColumn(_FILE_KEY, F.col("_metadata.file_path")).join(F.broadcast(lookup), _FILE_KEY, "left")
        unmatched = F.raise_error(
            F.concat(
                F.lit("sparkdelta: Spark read data file "),
                F.col(_FILE_KEY),
                F.lit(f", which matches no file of {root} version {snapshot.version} in the log: its partition values are unknown"),
            )
        )
        for f in schema.fields:
            if f.name.lower() in partition_names:
                columns[f.name] = F.when(F.col(_MATCHED).isNull(), unmatched).otherwise(_col(f.name)).alias(f.name)
    return data.select(*[columns[f.name] for f in schema.fields])

