"""Small yellow-taxi tables for the SQL scenarios: staging rows, corrections, a snapshot, a legacy Parquet folder."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

TAXI_COLUMNS = (
    "RideId INT, VendorId INT, PickupTime TIMESTAMP, DropTime TIMESTAMP, PickupLocationId INT, DropLocationId INT, "
    "CabNumber STRING, DriverLicenseNumber STRING, PassengerCount INT, TripDistance DOUBLE, RateCodeId INT, "
    "PaymentType INT, TotalAmount DOUBLE, FareAmount DOUBLE, Extra DOUBLE, MtaTax DOUBLE, TipAmount DOUBLE, "
    "TollsAmount DOUBLE, ImprovementSurcharge DOUBLE"
)


def taxi_rows(spark: SparkSession, first_id: int, count: int, seed: int) -> DataFrame:
    """``count`` trips from RideId ``first_id``, deterministic in ``seed``, over the last months of 2025."""
    return spark.range(first_id, first_id + count, numPartitions=2).selectExpr(
        "CAST(id AS INT) AS RideId",
        f"CAST(1 + pmod(hash(id, {seed}), 3) AS INT) AS VendorId",
        "CAST(timestamp'2025-10-01 00:00:00' + make_interval(0, 0, 0, CAST(pmod(id, 90) AS INT), "
        "CAST(pmod(id, 24) AS INT), CAST(pmod(id, 60) AS INT), 0) AS TIMESTAMP) AS PickupTime",
        "CAST(timestamp'2025-10-01 00:20:00' + make_interval(0, 0, 0, CAST(pmod(id, 90) AS INT), "
        "CAST(pmod(id, 24) AS INT), CAST(pmod(id, 60) AS INT), 0) AS TIMESTAMP) AS DropTime",
        f"CAST(1 + pmod(hash(id, {seed} + 1), 200) AS INT) AS PickupLocationId",
        f"CAST(1 + pmod(hash(id, {seed} + 2), 200) AS INT) AS DropLocationId",
        "concat('CAB-', CAST(pmod(id, 500) AS STRING)) AS CabNumber",
        "concat('DL-', CAST(pmod(id, 900) AS STRING)) AS DriverLicenseNumber",
        f"CAST(1 + pmod(hash(id, {seed} + 3), 4) AS INT) AS PassengerCount",
        f"round(0.5 + pmod(hash(id, {seed} + 4), 200) / 10.0, 2) AS TripDistance",
        f"CAST(1 + pmod(hash(id, {seed} + 5), 3) AS INT) AS RateCodeId",
        f"CAST(1 + pmod(hash(id, {seed} + 6), 4) AS INT) AS PaymentType",
        f"round(5 + pmod(hash(id, {seed} + 7), 6000) / 100.0, 2) AS TotalAmount",
        f"round(4 + pmod(hash(id, {seed} + 8), 5000) / 100.0, 2) AS FareAmount",
        "0.5D AS Extra",
        "0.5D AS MtaTax",
        f"round(pmod(hash(id, {seed} + 9), 1000) / 100.0, 2) AS TipAmount",
        "0.0D AS TollsAmount",
        "0.3D AS ImprovementSurcharge",
    )
