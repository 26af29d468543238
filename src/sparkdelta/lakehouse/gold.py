"""Gold: daily revenue and trips by vendor, pickup zone and payment type, and card tips by hour.

Kept up to date from silver's change feed, never recomputed: the changes since the
version a gold table last folded in are weighted (+1 for ``insert`` and
``update_postimage``, -1 for ``delete`` and ``update_preimage``) and summed per key, so
a correction moves a trip's amounts (or the trip itself, if its vendor, zone, payment
type or hour changed) and the counts and sums adjust.

Each table is updated with a MERGE of *absolute* values: the table as it stands plus the
net change since its recorded progress. The MERGE's commit carries the new progress
(``markers.app_transaction``), so a run that dies before it leaves the table as it was
and one that dies after leaves nothing to redo. Keys whose trips drop to zero are
deleted. Sums are DECIMAL, so the result equals a full recompute exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, LongType, StructType

from ..tables import DeltaTable
from . import markers, silver
from .trips import CREDIT_CARD
from .warehouse import GOLD_TABLE_NAMES, Location, Warehouse, retention_property

WEIGHT = "_weight"
COMMIT_VERSION = "_commit_version"  # the change feed's column: the silver version of a change


@dataclass(frozen=True)
class GoldTable:
    """An aggregate of silver: SQL expressions over silver's columns, summed per key."""

    name: str
    keys: dict[str, str]
    measures: dict[str, str]  # summed; every table also counts ``trips``
    where: str | None = None  # which silver rows count
    derived: dict[str, str] = field(default_factory=dict)  # over the table's own columns


TABLES = (
    GoldTable(
        "daily_vendor",
        {"PickupDate": "PickupDate", "VendorId": "VendorId"},
        {
            "passengers": "PassengerCount",
            "distance": "TripDistance",
            "fares": "FareAmount",
            "tips": "TipAmount",
            "revenue": "TotalAmount",
        },
    ),
    GoldTable("daily_zone", {"PickupDate": "PickupDate", "PickupLocationId": "PickupLocationId"}, {"revenue": "TotalAmount"}),
    GoldTable("daily_payment", {"PickupDate": "PickupDate", "PaymentType": "PaymentType"}, {"revenue": "TotalAmount"}),
    # Tips are recorded for card payments only (cash tips never reach the meter).
    GoldTable(
        "tips_by_hour",
        {"PickupDate": "PickupDate", "PickupHour": "hour(PickupTime)"},
        {"fares": "FareAmount", "tips": "TipAmount"},
        where=f"PaymentType = {CREDIT_CARD}",
        derived={"tip_pct": "CAST(round(tips * 100 / nullif(fares, 0), 2) AS DECIMAL(7, 2))"},
    ),
)
assert tuple(t.name for t in TABLES) == GOLD_TABLE_NAMES

# The silver columns the expressions above read: all a change-feed batch needs to keep.
INPUT_COLUMNS = ["PickupDate", "PickupTime", "VendorId", "PickupLocationId", "PaymentType", "PassengerCount"]
INPUT_COLUMNS += ["TripDistance", "FareAmount", "TipAmount", "TotalAmount"]


@dataclass
class GoldResult:
    silver_versions: tuple[int, int] | None = None  # silver versions folded in (first, last)
    change_rows: int = 0  # change feed rows read
    keys: dict[str, int] = field(default_factory=dict)  # keys inserted, updated or deleted per table


def aggregate(rows: DataFrame, table: GoldTable, weight: Column) -> DataFrame:
    """``trips`` and the measures per key, each row counted ``weight`` times (1 for a recompute)."""
    if table.where:
        rows = rows.where(table.where)
    sums = [F.sum(weight).cast(LongType()).alias("trips")]
    for name, expression in table.measures.items():
        kind = rows.select(F.expr(expression)).schema[0].dataType
        total = DecimalType(18, kind.scale) if isinstance(kind, DecimalType) else LongType()
        sums.append(F.sum(weight * F.expr(expression)).cast(total).alias(name))
    keys = [F.expr(expression).alias(name) for name, expression in table.keys.items()]
    return with_derived(rows.groupBy(*keys).agg(*sums), table)


def with_derived(df: DataFrame, table: GoldTable) -> DataFrame:
    for name, expression in table.derived.items():
        df = df.withColumn(name, F.expr(expression))
    return df


def schema(spark: SparkSession, table: GoldTable) -> StructType:
    return aggregate(spark.createDataFrame([], silver.SCHEMA), table, F.lit(1)).schema


def ensure_table(spark: SparkSession, path: Location, table: GoldTable, retention_hours: float) -> None:
    # Unpartitioned: a gold table holds a few hundred rows per day.
    if markers.snapshot(path) is None:
        (
            DeltaTable.createIfNotExists(spark)
            .location(str(path))
            .addColumns(schema(spark, table))
            .property("delta.deletedFileRetentionDuration", retention_property(retention_hours))
            .execute()
        )


def weighted_changes(spark: SparkSession, path: Location, first: int, last: int) -> DataFrame:
    """Silver's change feed over versions ``first..last``: gold's input columns and each row's weight."""
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", first)
        .option("endingVersion", last)
        .load(str(path))
    )
    return weighted(changes)


def weighted(changes: DataFrame) -> DataFrame:
    """Change feed rows as gold's input columns, the silver version they come from and their weight."""
    adds = F.col("_change_type").isin("insert", "update_postimage")
    return changes.select(*INPUT_COLUMNS, COMMIT_VERSION, F.when(adds, 1).otherwise(-1).alias(WEIGHT))


def refresh(spark: SparkSession, warehouse: Warehouse, retention_hours: float, on_commit: Callable[[str], None]) -> GoldResult:
    """Fold silver's changes since each gold table's recorded version into it."""
    result = GoldResult()
    latest = markers.version(warehouse.silver)
    if latest is None:
        return result
    behind: dict[int, list[GoldTable]] = {}
    for table in TABLES:
        path = warehouse.gold(table.name)
        ensure_table(spark, path, table, retention_hours)
        done = markers.progress(markers.snapshot(path), markers.GOLD, default=-1)
        if done < latest:
            behind.setdefault(done, []).append(table)
    # Tables normally share their progress; they differ only after a run died between them.
    for done, tables in sorted(behind.items()):
        changes = weighted_changes(spark, warehouse.silver, done + 1, latest).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            count = changes.count()
            # Only versions without data changes (OPTIMIZE, silver MERGEs that changed no row):
            # nothing to fold and, so that a rerun with no new data changes no table, nothing
            # to record either.
            if count == 0:
                continue
            result.change_rows += count
            first = done + 1 if result.silver_versions is None else min(done + 1, result.silver_versions[0])
            result.silver_versions = (first, latest)
            for table in tables:
                progress = markers.Progress(markers.GOLD, latest, f"{table.name} holds silver up to version {latest}")
                result.keys[table.name] = fold(spark, warehouse.gold(table.name), table, changes, progress, on_commit)
        finally:
            changes.unpersist()
    return result


def fold(
    spark: SparkSession,
    path: Location,
    table: GoldTable,
    changes: DataFrame,
    progress: markers.Progress,
    on_commit: Callable[[str], None],
) -> int:
    """MERGE the table plus ``changes`` (``weighted`` rows) into it, in a commit recording
    ``progress``; the keys it inserted, updated or deleted."""
    deltas = aggregate(changes, table, F.col(WEIGHT)).drop(*table.derived)
    base = spark.read.format("delta").load(str(path))
    sums = ["trips", *table.measures]
    base = base.select(*table.keys, *[F.col(c).alias(f"_base_{c}") for c in sums])
    kinds = {f.name: f.dataType for f in deltas.schema.fields}
    absolute = deltas.join(base, list(table.keys), "left").select(
        *table.keys, *[(F.coalesce(F.col(f"_base_{c}"), F.lit(0)) + F.col(c)).cast(kinds[c]).alias(c) for c in sums]
    )
    absolute = with_derived(absolute, table)
    on = " AND ".join(f"t.{key} = s.{key}" for key in table.keys)
    with markers.app_transaction(spark, *progress):
        outcome = (
            DeltaTable.forPath(spark, str(path))
            .alias("t")
            .merge(absolute.alias("s"), on)
            .whenMatchedDelete("s.trips = 0")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll("s.trips > 0")
            .execute()
            .first()
        )
    on_commit(f"gold:{table.name}:merge")
    return outcome["num_affected_rows"] if outcome else 0  # None: skipped, another run recorded ``progress``
