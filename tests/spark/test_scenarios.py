"""The write, read and builder lines of ``../shared/examples/scenarios.py``, as a delta-spark user writes them.

Each step's table is compared with a pandas model of what Delta Lake must hold after it,
and read back through delta-rs as well as through sparkdelta.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable as RsTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import lit

from sparkdelta.exceptions import DeltaError
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

COLUMNS = ["RideId", "VendorId", "PickupTime", "PickupMonth", "PaymentType", "PassengerCount", "TipAmount", "TotalAmount"]


def _taxi_rows(count: int) -> pd.DataFrame:
    start = dt.datetime(2025, 1, 1)
    return pd.DataFrame(
        {
            "RideId": range(1, count + 1),
            "VendorId": [1 + i % 2 for i in range(count)],
            "PickupTime": [start + dt.timedelta(days=i * 3, minutes=i) for i in range(count)],
            "PickupMonth": [(start + dt.timedelta(days=i * 3)).month for i in range(count)],
            "PaymentType": [1 + i % 4 for i in range(count)],
            "PassengerCount": [1 + i % 3 for i in range(count)],
            "TipAmount": [round(i * 0.25, 2) for i in range(count)],
            "TotalAmount": [round(10 + i * 1.5, 2) for i in range(count)],
        }
    )


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    columns = sorted(frame.columns)
    return frame[columns].sort_values(columns, na_position="first").reset_index(drop=True)


def _assert_table(df: DataFrame, model: pd.DataFrame, path: str | None = None) -> None:
    ours = df.toPandas()
    pd.testing.assert_frame_equal(_sorted(ours), _sorted(model), check_dtype=False)
    if path is not None:
        theirs = RsTable(path).to_pandas()
        theirs["PickupTime"] = theirs["PickupTime"].dt.tz_localize(None) if theirs["PickupTime"].dt.tz else theirs["PickupTime"]
        pd.testing.assert_frame_equal(_sorted(theirs), _sorted(model), check_dtype=False)


@pytest.fixture(scope="module")
def taxi(spark: SparkSession) -> Iterator[tuple[DataFrame, pd.DataFrame]]:
    model = _taxi_rows(240)
    frame = spark.createDataFrame(model).selectExpr(
        "CAST(RideId AS INT) AS RideId",
        "CAST(VendorId AS INT) AS VendorId",
        "CAST(PickupTime AS TIMESTAMP) AS PickupTime",
        "CAST(PickupMonth AS INT) AS PickupMonth",
        "CAST(PaymentType AS INT) AS PaymentType",
        "CAST(PassengerCount AS INT) AS PassengerCount",
        "TipAmount",
        "TotalAmount",
    )
    yield frame, model


def test_write_and_read_lines(spark: SparkSession, taxi: tuple[DataFrame, pd.DataFrame], tmp_path: Path) -> None:
    df, model = taxi
    path = str(tmp_path / "lake" / "trips")

    df.write.format("delta").save(path)  # default mode: error if it exists
    with pytest.raises(DeltaError, match="already exists"):
        df.write.format("delta").save(path)
    df.write.format("delta").mode("append").save(path)
    _assert_table(spark.read.format("delta").load(path), pd.concat([model, model]), path)

    df.write.format("delta").mode("overwrite").partitionBy("VendorId").option("overwriteSchema", "true").save(path)
    assert Table(path).snapshot().partition_columns == ("VendorId",)
    _assert_table(spark.read.format("delta").load(path), model, path)

    df.withColumn("CongestionSurcharge", lit(2.5)).write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    merged = pd.concat([model.assign(CongestionSurcharge=float("nan")), model.assign(CongestionSurcharge=2.5)])
    _assert_table(spark.read.format("delta").load(path), merged, path)

    df.where("PickupMonth = 12").write.format("delta").mode("overwrite").option("replaceWhere", "PickupMonth = 12").save(path)
    replaced = pd.concat(
        [merged[merged.PickupMonth != 12], model[model.PickupMonth == 12].assign(CongestionSurcharge=float("nan"))]
    )
    assert (model.PickupMonth == 12).any()
    _assert_table(spark.read.format("delta").load(path), replaced, path)

    version_before = Table(path).latest_version()
    df.write.format("delta").mode("overwrite").option("dataChange", "false").save(path)
    snapshot = Table(path).snapshot()
    assert snapshot.version == version_before + 1
    assert not any(snapshot.files.column("dataChange").to_pylist())
    _assert_table(spark.read.format("delta").load(path), model.assign(CongestionSurcharge=float("nan")), path)

    spark.sql("CREATE DATABASE IF NOT EXISTS taxidb")
    df.write.format("delta").mode("overwrite").saveAsTable("taxidb.trips")
    _assert_table(spark.table("taxidb.trips"), model)

    # Read, time travel
    assert spark.read.format("delta").load(path).where("PaymentType = 3").count() == int((model.PaymentType == 3).sum())
    _assert_table(spark.read.format("delta").option("versionAsOf", 1).load(path), pd.concat([model, model]))
    history = {r.version: r.timestamp for r in DeltaTable.forPath(spark, path).history().collect()}
    at_v1 = history[1].strftime("%Y-%m-%d %H:%M:%S.%f")
    _assert_table(spark.read.format("delta").option("timestampAsOf", at_v1).load(path), pd.concat([model, model]))
    with pytest.raises(DeltaError, match="before"):
        spark.read.format("delta").option("timestampAsOf", "2026-01-01 00:00:00").load(path)

    t = DeltaTable.forPath(spark, path)
    t2 = DeltaTable.forName(spark, "taxidb.trips")
    _assert_table(t.toDF(), model.assign(CongestionSurcharge=float("nan")))
    _assert_table(t2.toDF(), model)
    assert DeltaTable.isDeltaTable(spark, path)
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path))


def test_builder_line(spark: SparkSession) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS taxidb")
    DeltaTable.createIfNotExists(spark).tableName("taxidb.drivers").addColumn("DriverId", "INT", nullable=False).addColumn(
        "Name", "STRING"
    ).addColumn("JoinYear", "INT", generatedAlwaysAs="YEAR(JoinDate)").addColumn("JoinDate", "DATE").partitionedBy(
        "JoinYear"
    ).property("delta.enableChangeDataFeed", "true").execute()

    drivers = DeltaTable.forName(spark, "taxidb.drivers")
    detail = drivers.detail().first()
    assert detail["partitionColumns"] == ["JoinYear"]
    assert detail["properties"]["delta.enableChangeDataFeed"] == "true"
    assert {"changeDataFeed", "generatedColumns"} <= set(detail["tableFeatures"])
    schema = {f.name: f for f in drivers.toDF().schema.fields}
    assert list(schema) == ["DriverId", "Name", "JoinYear", "JoinDate"]
    assert not schema["DriverId"].nullable

    rows = spark.createDataFrame([(7, "Ada", dt.date(2019, 5, 1))], "DriverId INT, Name STRING, JoinDate DATE")
    rows.write.format("delta").mode("append").saveAsTable("taxidb.drivers")
    assert [tuple(r) for r in spark.table("taxidb.drivers").collect()] == [(7, "Ada", 2019, dt.date(2019, 5, 1))]
    # Running the line again is a no-op.
    version = Table(detail["location"].removeprefix("file:")).latest_version()
    DeltaTable.createIfNotExists(spark).tableName("taxidb.drivers").addColumn("DriverId", "INT").execute()
    assert Table(detail["location"].removeprefix("file:")).latest_version() == version
