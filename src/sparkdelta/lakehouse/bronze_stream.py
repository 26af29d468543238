"""Bronze as a stream: the landing folder read by Spark's CSV file source.

The file source keeps in its checkpoint which files it has read, so each landing file is
read by one micro-batch, and the Delta sink commits that micro-batch with a ``txn`` of
its query id and batch id: exactly once across restarts, as batch bronze is.

A stream's schema is fixed when it starts, and Spark's CSV reader maps a line's fields
to columns by position, not by the header's names. So the schema is the union of the
landing files' headers, each of which must be a prefix of it (feeds add columns at the
end, as the taxi feed added ``CongestionSurcharge``), all text as bronze keeps them, plus
one sentinel column past the end: a line with more fields than the stream knows fills
it, and its micro-batch fails naming the error instead of dropping the new column. The
pipeline then starts the query again, which reads the headers afresh and replays the
same files with the new column (merged into bronze's schema by the sink).

The rows get batch bronze's metadata columns:

- ``_source_file``: the file's name;
- ``_ingested_at`` and ``_batch_id``: the micro-batch's timestamp (as a time, and in
  epoch milliseconds). Spark gives every row of a micro-batch the same one, keeps it
  when it replays the batch, and takes a later one for the next batch: the monotone id
  silver orders batches by;
- ``_line``: a line's position, numbered as ``monotonically_increasing_id`` numbers
  rows (which Spark refuses in streams): the partition's index in the upper bits, the
  row's place in the partition below. A file's splits are packed into partitions in file
  order, so ``_line`` grows along each file; several files of one micro-batch are told
  apart by name (silver's order is batch, file, line).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ..tables import DeltaTable
from . import markers
from .errors import LandingColumnsError
from .warehouse import Location, Warehouse, retention_property, storage_at

NEW_COLUMNS = "LAKEHOUSE_NEW_LANDING_COLUMNS"
"""The error a bronze micro-batch fails with when a file has columns the query does not know."""
HEADER_BYTES = 1 << 16
_MORE_FIELDS = "_more_fields"  # the sentinel: a field past the known columns lands here
_PARTITION_SHIFT = 33  # as monotonically_increasing_id: 2^33 rows per partition


def landing_columns(warehouse: Warehouse) -> list[str]:
    """The union of the landing files' headers, in file order; each header must be a prefix of it."""
    columns: list[str] = []
    for path, size in warehouse.landing_listing():
        header = _header(path, size)
        shorter, longer = sorted((columns, header), key=len)
        if longer[: len(shorter)] != shorter:
            raise LandingColumnsError(
                f"{path}: its columns ({', '.join(header)}) and the other landing files' ({', '.join(columns)}) "
                "differ before their ends: the bronze stream reads CSV fields by position, so a feed may only add "
                "columns at the end"
            )
        columns = longer
    return columns


def _header(path: Location, size: int) -> list[str]:
    storage, name = storage_at(path)
    head = storage.read_range(name, 0, min(size, HEADER_BYTES))
    line, newline, _ = head.partition(b"\n")
    if not newline and size > HEADER_BYTES:
        raise LandingColumnsError(f"{path}: no end of the header line in its first {HEADER_BYTES} bytes")
    return next(csv.reader([line.decode("utf-8").rstrip("\r")]), [])


@F.arrow_udf(LongType())  # type: ignore[call-overload]
def _positions(rows: Iterator[pa.Array]) -> Iterator[pa.Array]:
    """Each row's ``_line``: the partition index shifted up, plus the row's place in the partition."""
    task = TaskContext.get()
    assert task is not None, "runs in a Spark task"
    position = task.partitionId() << _PARTITION_SHIFT
    for chunk in rows:
        yield pa.array(np.arange(position, position + len(chunk), dtype=np.int64))
        position += len(chunk)


# Not to be reordered, merged or run twice by the optimizer: it numbers rows as they come.
_line = _positions.asNondeterministic()


def _file_name() -> Column:
    """The file's name as batch bronze records it. ``_metadata.file_name`` is URI-encoded
    (``%20`` for a space); ``url_decode`` would also read a literal ``+`` as a space."""
    return F.url_decode(F.regexp_replace(F.col("_metadata.file_name"), r"\+", "%2B"))


def landing_stream(spark: SparkSession, warehouse: Warehouse, columns: list[str]) -> DataFrame:
    """The landing folder's lines as text ``columns``, with bronze's metadata columns."""
    schema = StructType([StructField(name, StringType()) for name in [*columns, _MORE_FIELDS]])
    raw = spark.readStream.schema(schema).option("header", True).option("mode", "PERMISSIVE").csv(warehouse.landing.spark_path)
    name = _file_name()
    unknown = F.raise_error(
        F.concat(F.lit(f"[{NEW_COLUMNS}] "), name, F.lit(" has more columns than the bronze stream reads: restart it"))
    )
    return raw.select(
        *columns,
        F.when(F.col(_MORE_FIELDS).isNull(), name).otherwise(unknown).alias("_source_file"),
        F.current_timestamp().alias("_ingested_at"),
        F.unix_millis(F.current_timestamp()).alias("_batch_id"),
        _line(F.lit(0)).alias("_line"),
    )


def ensure_table(spark: SparkSession, path: Location, schema: StructType, retention_hours: float) -> None:
    """Create bronze, empty, so that silver's stream has a table to start on before bronze's first
    batch; its columns nullable, as a batch write creates them."""
    if markers.snapshot(path) is None:
        (
            DeltaTable.createIfNotExists(spark)
            .location(str(path))
            .addColumns(StructType([StructField(f.name, f.dataType) for f in schema.fields]))
            .property("delta.deletedFileRetentionDuration", retention_property(retention_hours))
            .execute()
        )
