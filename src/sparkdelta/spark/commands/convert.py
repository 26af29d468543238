"""CONVERT TO DELTA: make a directory of Parquet files a Delta table in place, without rewriting data.

The files are listed (hidden paths skipped, as Spark and VACUUM skip them), the schema is
Spark's merged schema of the files plus the given partition columns (at the end, as
delta-spark puts them), partition values come from the ``column=value`` directories,
and each file's stats come from its footer. One commit, operation CONVERT, adds them
all. Converting a directory that is already a Delta table does nothing.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from ...exceptions import DeltaAnalysisException
from ...kernel import AddFile, Table
from ...kernel.command_result import NOTHING_COMMITTED, CommandResult
from ...kernel.create_table import create_table
from ...kernel.parquet_footer import parquet_metadata
from ...kernel.stats_schema import stats_leaves
from ...kernel.storage import FileStatus
from ..paths import log_path, read_path, scan_options
from ..write.schema import delta_schema_json, new_table_schema
from ..write.stats import file_stats

_PARQUET_IDENTIFIER = re.compile(r"^\s*parquet\s*\.\s*`(?P<path>.+)`\s*$", re.IGNORECASE)
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _partition_schema(spec: str | StructType | None) -> StructType:
    if spec is None:
        return StructType()
    if isinstance(spec, StructType):
        return spec
    parsed = _parse_datatype_string(spec)
    return parsed if isinstance(parsed, StructType) else StructType()


def _partition_values(root: str, status: FileStatus, columns: list[str]) -> dict[str, str | None]:
    """``column=value`` directories between the root and the file, checked against the partition schema."""
    relative_dir = status.path[len(root) + 1 :].rpartition("/")[0]
    found: dict[str, str | None] = {}
    for part in relative_dir.split("/") if relative_dir else []:
        name, sep, value = part.partition("=")
        if not sep:
            raise DeltaAnalysisException(f"{root}: {status.path} is in directory {part!r}, which is not a column=value partition")
        value = unquote(value)
        found[name] = None if value == _HIVE_NULL else value
    if [n.lower() for n in found] != [c.lower() for c in columns]:
        raise DeltaAnalysisException(
            f"{root}: {status.path} has partition directories {list(found) or 'none'}, "
            f"but the partition schema names {columns or 'none'}"
        )
    return {c: found[n] for c, n in zip(columns, found, strict=True)}


def parquet_path(identifier: str) -> str:
    """The directory ``parquet.`/path``` (or a plain path) names."""
    match = _PARQUET_IDENTIFIER.match(identifier)
    return match.group("path") if match else identifier


def convert_to_delta(spark: SparkSession, table: Table, partition_schema: str | StructType | None = None) -> CommandResult:
    """Make the Parquet files under ``table``'s root a Delta table (nothing to do if it is one)."""
    if table.exists():
        return NOTHING_COMMITTED
    partitions = _partition_schema(partition_schema)
    columns = [f.name for f in partitions.fields]
    files = [
        s
        for s in table.storage.list_tree(table.root, lambda name: not name.startswith(("_", ".")))
        if s.name.endswith(".parquet") and not s.name.startswith(("_", "."))
    ]
    if not files:
        raise DeltaAnalysisException(f"{table.root}: no Parquet files to convert")
    values = [_partition_values(table.root, f, columns) for f in files]
    data = (
        spark.read.options(**scan_options(spark), mergeSchema="true").parquet(*[read_path(spark, f.path) for f in files]).schema
    )
    clashing = {f.name.lower() for f in data.fields} & {c.lower() for c in columns}
    if clashing:
        raise DeltaAnalysisException(
            f"{table.root}: partition column(s) {', '.join(sorted(clashing))} are also in the data files"
        )
    schema = new_table_schema(StructType([*data.fields, *partitions.fields]))
    new = create_table(table.root, delta_schema_json(schema), columns)
    indexed = {leaf.physical for leaf in stats_leaves(new.metadata.schema, new.metadata.partition_columns, {})}
    adds = [
        AddFile(
            log_path(f.path[len(table.root) + 1 :]),
            partition,
            f.size,
            f.modification_time,
            True,
            file_stats(parquet_metadata(table.storage, f.path, f.size), indexed, f.path)[0],
        )
        for f, partition in zip(files, values, strict=True)
    ]
    parameters = {"numFiles": len(adds), "partitionedBy": json.dumps(columns), "collectStats": True}
    metrics = {"numConvertedFiles": len(adds)}
    return CommandResult(table.transaction().commit([*new.actions, *adds], "CONVERT", parameters, metrics), metrics)
