"""Bronze: each landing file ingested once, as it is, with where and when it came from.

Columns stay text (a malformed number must reach silver to be quarantined with its
reason, not be lost to a cast here), new columns in the feed are merged into the schema,
and every row gets ``_source_file``, ``_ingested_at``, ``_batch_id`` and ``_line``.

Exactly once: which files are new is decided from the table (the ``_source_file`` values
it holds), and each file is one append carrying ``txnAppId``/``txnVersion`` = its batch id,
the next after the table's recorded one. The rows and the batch id commit together, so a
crash before the commit leaves no trace of the file and one after it leaves the file fully
ingested; a retried write of a batch the table already has is skipped by Delta itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..progress import progress as track
from . import markers
from .warehouse import Location, Warehouse, retention_property, table_at

METADATA_COLUMNS = ("_source_file", "_ingested_at", "_batch_id", "_line")


@dataclass
class BronzeResult:
    files: list[str] = field(default_factory=list)
    rows: int = 0
    batches: tuple[int, int] | None = None  # first and last batch id committed by this run


def ingested_files(spark: SparkSession, bronze: Location) -> set[str]:
    """The landing files the table already holds (one small column scan)."""
    if markers.snapshot(bronze) is None:
        return set()
    rows = spark.read.format("delta").load(str(bronze)).select("_source_file").distinct().collect()
    return {row[0] for row in rows}


def read_landing_file(spark: SparkSession, path: Location, batch_id: int) -> DataFrame:
    """One landing file as text columns plus the ingestion metadata.

    ``_line`` orders rows within the file (silver's "later line wins"): a single file is
    read as splits in file order and ``monotonically_increasing_id`` grows along them.
    """
    raw = spark.read.option("header", True).option("mode", "PERMISSIVE").csv(path.spark_path)
    return raw.select(
        *raw.columns,
        F.lit(path.name).alias("_source_file"),
        F.current_timestamp().alias("_ingested_at"),
        F.lit(batch_id).cast("long").alias("_batch_id"),
        F.monotonically_increasing_id().alias("_line"),
    )


def ingest(spark: SparkSession, warehouse: Warehouse, retention_hours: float, on_commit: Callable[[str], None]) -> BronzeResult:
    """Append every landing file bronze does not hold yet, one atomic batch per file."""
    done = ingested_files(spark, warehouse.bronze)
    new = [p for p in warehouse.landing_files() if p.name not in done]
    result = BronzeResult()
    if not new:
        return result
    batch = markers.progress(markers.snapshot(warehouse.bronze), markers.BRONZE)
    first = batch + 1
    for path in track(new, len(new), "bronze"):
        batch += 1
        (
            read_landing_file(spark, path, batch)
            .write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .option("txnAppId", markers.BRONZE)
            .option("txnVersion", batch)
            .option("delta.deletedFileRetentionDuration", retention_property(retention_hours))
            .save(str(warehouse.bronze))
        )
        info = table_at(warehouse.bronze).snapshot().commit_info or {}
        result.rows += int(info.get("operationMetrics", {}).get("numOutputRows", 0))
        result.files.append(path.name)
        on_commit(f"bronze:{batch}")
    result.batches = (first, batch)
    return result
