"""Reading the Change Data Feed: ``option("readChangeFeed", "true")`` and ``table_changes``.

The kernel (``kernel/change_data.py``) says which files describe each version's changes;
here they are scanned natively and labelled. Rows of ``cdc`` files carry their own
``_change_type``; rows of added and removed files are ``insert`` and ``delete``. Every
row gets ``_commit_version`` and ``_commit_timestamp`` from the file that holds it. Rows
take the schema of the range's last version.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField

from ...kernel.change_data import ChangeRange, resolve_versions, table_changes
from ..catalog import delta_entry
from ..storage import open_table
from ..time_zones import session_instant
from .field_metadata import read_schema
from .parquet import read_files, spark_schema

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
_FILE_COLUMNS = ("path", "partitionValues", "deletionVector")


def _labelled(actions: list[tuple[pa.StructArray, int, int]], change_type: str | None) -> pa.Table | None:
    """One table of file actions with the version, timestamp (and change type) of each."""
    parts = []
    for files, version, timestamp in actions:
        if len(files) == 0:
            continue
        columns = {name: files.field(name) if name in files.type.names else pa.nulls(len(files)) for name in _FILE_COLUMNS}
        if not isinstance(columns["deletionVector"].type, pa.StructType):
            columns["deletionVector"] = pa.nulls(len(files), pa.struct([("storageType", pa.string())]))
        columns[COMMIT_VERSION] = pa.array([version] * len(files), pa.int64())
        columns[COMMIT_TIMESTAMP] = pa.array([timestamp * 1000] * len(files), pa.timestamp("us", tz="UTC"))
        if change_type is not None:
            columns[CHANGE_TYPE] = pa.array([change_type] * len(files), pa.string())
        parts.append(pa.table(columns))
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive")


def _read_each_once(spark: SparkSession, changes: ChangeRange, files: pa.Table, with_change_type: bool) -> list[DataFrame]:
    """Scans of ``files`` in which no file is read twice (a file may be added, removed or re-added in several versions)."""
    frames = []
    remaining = files
    while remaining.num_rows:
        mask = _first_occurrences(remaining.column("path"))
        batch, remaining = remaining.filter(mask), remaining.filter(pc.invert(mask))
        extra = [StructField(CHANGE_TYPE, StringType())] if with_change_type else []
        labels = [COMMIT_VERSION, COMMIT_TIMESTAMP] + ([] if with_change_type else [CHANGE_TYPE])
        frames.append(read_files(spark, changes.snapshot, batch, extra_fields=extra, file_columns=labels))
    return frames


def _first_occurrences(paths: pa.ChunkedArray) -> pa.Array:
    """True at the first row of each distinct path."""
    rows = pa.table({"path": paths, "row": pa.array(range(len(paths)), pa.int64())})
    first_rows = rows.group_by("path").aggregate([("row", "min")]).column("row_min")
    return pc.is_in(rows.column("row"), value_set=first_rows)


def read_changes(spark: SparkSession, changes: ChangeRange) -> DataFrame:
    """The change rows of ``changes``: the table's columns, then the three change columns."""
    schema = read_schema(spark_schema(changes.snapshot))
    commits = changes.commits
    groups = [
        (_labelled([(c.cdc, c.version, c.timestamp) for c in commits], None), True),
        (_labelled([(c.added, c.version, c.timestamp) for c in commits], "insert"), False),
        (_labelled([(c.removed, c.version, c.timestamp) for c in commits], "delete"), False),
    ]
    columns = [*[F.col(f"`{f.name}`") for f in schema.fields], F.col(CHANGE_TYPE), F.col(COMMIT_VERSION), F.col(COMMIT_TIMESTAMP)]
    frames = [
        frame.select(*columns)
        for files, has_change_type in groups
        if files is not None
        for frame in _read_each_once(spark, changes, files, has_change_type)
    ]
    if not frames:
        empty = schema.add(CHANGE_TYPE, StringType()).add(COMMIT_VERSION, "long").add(COMMIT_TIMESTAMP, "timestamp")
        return spark.createDataFrame([], empty)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _option(options: dict[str, Any], name: str) -> Any:
    return options.get(name.lower())


def load_changes(spark: SparkSession, path: str, options: dict[str, Any]) -> DataFrame:
    """``spark.read.format("delta").option("readChangeFeed", "true")...load(path)``."""
    table = open_table(spark, path, options)
    start, end = resolve_versions(
        table,
        starting_version=_option(options, "startingVersion"),
        ending_version=_option(options, "endingVersion"),
        starting_timestamp=session_instant(spark, _option(options, "startingTimestamp")),
        ending_timestamp=session_instant(spark, _option(options, "endingTimestamp")),
    )
    return read_changes(spark, table_changes(table, start, end))


def table_changes_df(
    spark: SparkSession, table: str, start: int | str | datetime, end: int | str | datetime | None = None
) -> DataFrame:
    """``table_changes(name or path, start[, end])``: versions as ints, timestamps as strings or datetimes."""

    location = table if "/" in table else delta_entry(spark, table).location
    options: dict[str, Any] = {}
    options["startingversion" if isinstance(start, int) else "startingtimestamp"] = start
    if end is not None:
        options["endingversion" if isinstance(end, int) else "endingtimestamp"] = end
    return load_changes(spark, location, options)
