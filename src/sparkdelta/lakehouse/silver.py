"""Silver: typed, validated, one row per ride with its latest correction, change feed on.

From the bronze batches it has not refined yet, silver

1. types every row and quarantines the invalid ones, with their reason, in
   ``silver/quarantine`` (an append carrying the batch as its ``txn``: exactly once);
2. drops exact duplicates and keeps, per ride, its latest line (by batch, then file name,
   then line; a batch is one file, or one micro-batch of several in stream mode): "latest
   correction wins";
3. MERGEs those on RideId: new rides insert, and a ride silver holds is updated only by a
   newer line with other content, so resends change nothing. The MERGE's commit carries
   the batch as its ``txn`` (``markers.app_transaction``), even when no line was valid,
   so the rows and the progress land together and a replayed batch is skipped.

The table is partitioned by pickup date (gold aggregates per day, and late corrections
touch only yesterday's partition), has CHECK constraints, and the change feed on, which is
what gold reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType

from ..tables import DeltaTable
from . import markers
from .bronze import METADATA_COLUMNS
from .trips import TYPED_COLUMNS
from .validation import REASON, REASONS, checked
from .warehouse import Location, Warehouse, retention_property

CONSTRAINTS = {
    "total_not_negative": "TotalAmount >= 0",
    "fare_not_negative": "FareAmount >= 0",
    "passengers_not_negative": "PassengerCount >= 0",
    "drop_after_pickup": "DropTime >= PickupTime",
}

PARTITION_COLUMN = "PickupDate"

# Which of two lines of a ride is the later: bronze batch, then file name, then line.
ORDER = ("_batch_id", "_source_file", "_line")

SCHEMA = StructType(
    [StructField(name, kind, nullable=name != "RideId") for name, kind in TYPED_COLUMNS.items()]
    + [
        StructField(PARTITION_COLUMN, DateType()),
        StructField("_batch_id", LongType()),
        StructField("_line", LongType()),
        StructField("_source_file", StringType()),
        StructField("_row_hash", LongType()),  # content fingerprint: tells a resend from a correction
    ]
)


@dataclass
class SilverResult:
    batches: tuple[int, int] | None = None  # bronze batches read
    rows_in: int = 0  # bronze rows read
    quarantined: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    duplicates: int = 0  # exact copies of another line of the same ride
    superseded: int = 0  # older lines of a ride replaced by a later one read in the same run
    unchanged: int = 0  # rides silver already held at that line or with that content
    inserted: int = 0
    updated: int = 0  # corrections of rides silver already held

    @property
    def corrections(self) -> int:
        return self.superseded + self.updated


def ensure_table(spark: SparkSession, path: Location, retention_hours: float) -> None:
    """Create silver (partitioned, change feed and CHECK constraints on) in one commit.

    A constraint added to ``CONSTRAINTS`` later reaches existing tables by ALTER TABLE,
    which also checks the rows already there.
    """
    if markers.snapshot(path) is None:
        builder = (
            DeltaTable.createIfNotExists(spark)
            .location(str(path))
            .addColumns(SCHEMA)
            .partitionedBy(PARTITION_COLUMN)
            .property("delta.enableChangeDataFeed", "true")
            .property("delta.deletedFileRetentionDuration", retention_property(retention_hours))
        )
        for name, check in CONSTRAINTS.items():
            builder = builder.property(f"delta.constraints.{name}", check)
        builder.execute()
    found = markers.snapshot(path)
    configuration = found.configuration if found else {}
    for name, check in CONSTRAINTS.items():
        if f"delta.constraints.{name}" not in configuration:
            spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT {name} CHECK ({check})")


def refine(spark: SparkSession, warehouse: Warehouse, retention_hours: float, on_commit: Callable[[str], None]) -> SilverResult:
    """Bring silver and quarantine up to bronze's last batch."""
    result = SilverResult()
    bronze = markers.snapshot(warehouse.bronze)
    if bronze is None:
        return result
    ensure_table(spark, warehouse.silver, retention_hours)
    last = markers.progress(bronze, markers.BRONZE)
    merged = markers.progress(markers.snapshot(warehouse.silver), markers.SILVER)
    quarantined = markers.progress(markers.snapshot(warehouse.quarantine), markers.SILVER)
    start = min(merged, quarantined)
    if last <= start:
        return result
    result.batches = (start + 1, last)
    batch = F.col("_batch_id")
    lines = spark.read.format("delta").option("versionAsOf", bronze.version).load(str(warehouse.bronze))
    lines = lines.where((batch > start) & (batch <= last))
    result.rows_in = lines.count()
    rows = checked(lines)
    if quarantined < last:
        bad = rows.where(F.col(REASON).isNotNull() & (batch > quarantined))
        append_quarantine(bad, warehouse, markers.SILVER, last, retention_hours)
        result.quarantined = _quarantined(spark, warehouse, quarantined, last)
        on_commit("silver:quarantine")
    if merged < last:
        with markers.app_transaction(spark, markers.SILVER, last, f"silver holds bronze batches up to {last}"):
            merge(spark, rows.where(F.col(REASON).isNull() & (batch > merged)), warehouse, result)
        on_commit("silver:merge")
    return result


def _lines(spark: SparkSession, path: Location, after: int, last: int) -> DataFrame:
    """A table's rows from bronze batches ``after+1..last``."""
    return spark.read.format("delta").load(str(path)).where(F.col("_batch_id").between(after + 1, last))


def append_quarantine(bad: DataFrame, warehouse: Warehouse, app_id: str, version: int, retention_hours: float) -> None:
    """Append invalid rows as they came, with their reason, in a commit carrying ``app_id``'s ``version``."""
    typed = {f"t_{name}" for name in TYPED_COLUMNS}
    feed = [c for c in bad.columns if c not in typed and c not in (REASON, *METADATA_COLUMNS)]
    (
        bad.select(*feed, F.col(REASON).alias("reason"), *METADATA_COLUMNS)
        .write.format("delta")
        .mode("append")
        .option("mergeSchema", "true")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .option("delta.deletedFileRetentionDuration", retention_property(retention_hours))
        .save(str(warehouse.quarantine))
    )


def _quarantined(spark: SparkSession, warehouse: Warehouse, after: int, last: int) -> dict[str, int]:
    """Quarantined rows of bronze batches ``after+1..last`` per reason."""
    counts = dict.fromkeys(REASONS, 0)
    for row in _lines(spark, warehouse.quarantine, after, last).groupBy("reason").count().collect():
        counts[row["reason"]] = row["count"]
    return counts


def typed_rows(valid: DataFrame) -> DataFrame:
    """Valid bronze rows in silver's schema."""
    values = [F.col(f"t_{name}").alias(name) for name in TYPED_COLUMNS]
    out = valid.select(
        *values,
        F.to_date(F.col("t_PickupTime")).alias(PARTITION_COLUMN),
        "_batch_id",
        "_line",
        "_source_file",
        F.xxhash64(*[F.col(f"t_{name}") for name in TYPED_COLUMNS]).alias("_row_hash"),
    )
    return out.select(*[F.col(f.name).cast(f.dataType) for f in SCHEMA.fields])


def merge(spark: SparkSession, valid: DataFrame, warehouse: Warehouse, result: SilverResult) -> None:
    """MERGE the latest of ``valid`` (checked bronze rows) per ride into silver; add what it did to ``result``."""
    rows = typed_rows(valid)
    newest_first = Window.partitionBy("RideId").orderBy(*[F.desc(c) for c in ORDER])
    copies = Window.partitionBy("RideId", "_row_hash").orderBy(*ORDER)
    ranked = rows.withColumn("_rank", F.row_number().over(newest_first)).withColumn("_copy", F.row_number().over(copies))
    latest = F.col("_rank") == 1
    # Counted as the MERGE reads its source (once). Per ride: lines = distinct contents +
    # exact copies, and every content but the newest is superseded.
    line_counts = [
        F.count(F.when(F.col("_copy") > 1, 1)).alias("duplicates"),
        (F.count(F.when(F.col("_copy") == 1, 1)) - F.count(F.when(latest, 1))).alias("superseded"),
        F.count(F.when(latest, 1)).alias("rides"),
    ]
    counts = Observation("silver_lines")
    unobserved = ranked
    ranked = ranked.observe(counts, *line_counts)
    newer = F.struct(*[F.col(f"s.{c}") for c in ORDER]) > F.struct(*[F.col(f"t.{c}") for c in ORDER])
    # A ride silver holds is updated only by a newer line with other content: resends change nothing.
    outcome = (
        DeltaTable.forPath(spark, str(warehouse.silver))
        .alias("t")
        .merge(ranked.where(latest).drop("_rank", "_copy").alias("s"), "t.RideId = s.RideId")
        .whenMatchedUpdateAll(newer & (F.col("s._row_hash") != F.col("t._row_hash")))
        .whenNotMatchedInsertAll()
        .execute()
        .first()
    )
    if outcome is None:  # skipped: another run committed this batch since refine looked
        return
    # A Spark Connect client learns an observation only from an action on its own plan, and
    # MERGE materializes its source with a checkpoint: then the lines are counted again.
    seen = counts.get or unobserved.agg(*line_counts).collect()[0].asDict()
    inserted, updated = outcome["num_inserted_rows"], outcome["num_updated_rows"]
    result.duplicates += seen["duplicates"]
    result.superseded += seen["superseded"]
    result.inserted += inserted
    result.updated += updated
    result.unchanged += seen["rides"] - inserted - updated
