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
from ...kernel.scan import scan_files
from ..catalog import delta_entry
from ..options import ENDING_TIMESTAMP, ENDING_VERSION, STARTING_TIMESTAMP, STARTING_VERSION, DeltaOptions
from ..storage import open_table
from ..time_zones import session_instant
from .field_metadata import read_schema
from .parquet import read_files, spark_schema

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
_FILE_COLUMNS = ("path", "partitionValues", "deletionVector")


def _labelled(actions: list[tuple[pa.StructArray, int, int]], change_type: str | None) -> pa.Table | None:
    """One table of file actions with the version, timestamp (and change type) of each.

    A ``deletionVector`` column of nulls stands in where actions have none (cdc files);
    ``scan_files`` gives it the descriptor's type.
    """
    parts = []
    for files, version, timestamp in actions:
        if len(files) == 0:
            continue
        columns = {name: files.field(name) if name in files.type.names else pa.nulls(len(files)) for name in _FILE_COLUMNS}
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


def _scan_files(changes: ChangeRange, files: pa.Table | None) -> pa.Table | None:
    """Labelled file actions in a kernel scan's layout, as ``read_files`` takes them."""
    snapshot = changes.snapshot
    return None if files is None else scan_files(files, snapshot.schema, snapshot.partition_columns)


def read_changes(spark: SparkSession, changes: ChangeRange) -> DataFrame:
    """The change rows of ``changes``: the table's columns, then the three change columns."""
    schema = read_schema(spark_schema(changes.snapshot))
    commits = changes.commits
    groups = [
        (_scan_files(changes, _labelled([(c.cdc, c.version, c.timestamp) for c in commits], None)), True),
        (_scan_files(changes, _labelled([(c.added, c.version, c.timestamp) for c in commits], "insert")), False),
        (_scan_files(changes, _labelled([(c.removed, c.version, c.timestamp) for c in commits], "delete")), False),
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


def load_changes(spark: SparkSession, path: str, options: DeltaOptions) -> DataFrame:
    """``spark.read.format("delta").option("readChangeFeed", "true")...load(path)``."""
    table = open_table(spark, path, options.storage)
    start, end = resolve_versions(
        table,
        starting_version=options.starting_version,
        ending_version=options.ending_version,
        starting_timestamp=session_instant(spark, options.starting_timestamp),
        ending_timestamp=session_instant(spark, options.ending_timestamp),
    )
    return read_changes(spark, table_changes(table, start, end))


def table_changes_df(
    spark: SparkSession, table: str, start: int | str | datetime, end: int | str | datetime | None = None
) -> DataFrame:
    """``table_changes(name or path, start[, end])``: versions as ints, timestamps as strings or datetimes."""

    location = table if "/" in table else delta_entry(spark, table).location
    given: dict[str, Any] = {STARTING_VERSION if isinstance(start, int) else STARTING_TIMESTAMP: start}
    if end is not None:
        given[ENDING_VERSION if isinstance(end, int) else ENDING_TIMESTAMP] = end
    return load_changes(spark, location, DeltaOptions.parse(given))
