"""Every statement of ``../shared/examples/scenarios.sql``, run in order on small taxi data.

Each statement must run; where the Python API has the same operation, the SQL result
(rows, metrics, the table after it) must equal what the API gives on a deep clone of
the table taken just before the statement. Paths move under a temporary folder and the
databases get test names; literal dates of the file that fall before the tables exist
are moved to moments inside their history (see ``_adapted``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import deltalake
import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from sql_scenario_data import taxi_rows

from sparkdelta.exceptions import VacuumRetentionError
from sparkdelta.kernel import Table
from sparkdelta.spark.sql.runner import split_statements
from sparkdelta.tables import DeltaTable

SCENARIOS = Path(__file__).resolve().parents[3] / "shared" / "examples" / "scenarios.sql"
TIMING_METRICS = {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs"}

pytestmark = pytest.mark.skipif(not SCENARIOS.exists(), reason="../shared/examples/scenarios.sql is absent")


def _rows(df: DataFrame) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _metrics(location: str) -> dict[str, str]:
    info = Table(location).snapshot().commit_info or {}
    return {k: v for k, v in (info.get("operationMetrics") or {}).items() if k not in TIMING_METRICS}


class Scenario:
    """The run's state: the session, where things live, and moments to time travel to."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.lake = root / "lake"
        self.trips = str(self.lake / "YellowTaxis")
        self.moments: dict[str, str] = {}
        self.clones = 0

    def table(self) -> DeltaTable:
        return DeltaTable.forPath(self.spark, self.trips)

    def clone_trips(self) -> str:
        """A deep clone of the trips table as it is now: the Python API's side of a comparison."""
        self.clones += 1
        target = str(self.root / f"api_{self.clones}")
        self.table().clone(target)
        return target

    def mark(self, name: str) -> None:
        time.sleep(0.05)
        self.moments[name] = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:23]
        time.sleep(0.05)


def _adapted(statement: str, run: Scenario) -> str:
    """Names and dates moved for the test (see the module docstring)."""
    text = statement.replace("/tmp/lake", str(run.lake))
    text = re.sub(r"\btaxidb\b", "sql_taxidb", text)
    text = re.sub(r"\barchive\b", "sql_archive", text)
    after_merges = run.moments.get("after_merges", "")
    text = text.replace("'2026-01-01 00:00:00'", f"'{after_merges}'")
    text = text.replace("@20260101000000000", "@" + re.sub(r"\D", "", after_merges).ljust(17, "0")[:17])
    text = text.replace("'2026-01-01')", f"'{run.moments.get('aggregates_v1', '')}')")
    return text.replace("current_timestamp() - INTERVAL '1' HOUR", f"timestamp'{after_merges}' - INTERVAL '1' MILLISECOND")


def _same_dml(run: Scenario, sql: str, api: Callable[[DeltaTable], Any]) -> None:
    """The statement through SQL on the table, the API on a clone: same rows, same metrics."""
    clone = run.clone_trips()
    result = run.spark.sql(sql).collect()
    api(DeltaTable.forPath(run.spark, clone))
    assert _metrics(run.trips) == _metrics(clone)
    assert _rows(run.table().toDF()) == _rows(DeltaTable.forPath(run.spark, clone).toDF())
    assert result[0].num_affected_rows >= 0


def _merge_corrections(t: DeltaTable, source: DataFrame) -> None:
    (
        t.alias("target")
        .merge(source.alias("source"), "target.RideId = source.RideId")
        .whenMatchedUpdate(set={"VendorId": "source.VendorId"})
        .whenNotMatchedInsertAll()
        .execute()
    )


def _merge_snapshot(t: DeltaTable, source: DataFrame) -> None:
    (
        t.alias("target")
        .merge(source.alias("source"), "target.RideId = source.RideId")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete()
        .execute()
    )


def _merge_conditional(t: DeltaTable, source: DataFrame) -> None:
    (
        t.alias("target")
        .merge(source.alias("source"), "target.RideId = source.RideId")
        .whenMatchedDelete("source.TotalAmount < 0")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll("source.VendorId IS NOT NULL")
        .whenNotMatchedBySourceUpdate("target.PickupTime >= current_date() - INTERVAL '5' DAY", {"PaymentType": "0"})
        .execute()
    )


def _check(run: Scenario, original: str, sql: str) -> None:
    """Run one statement, compared with the Python API where the API has its operation."""
    spark = run.spark
    head = " ".join(original.split())[:60]
    trips = run.table
    if head.startswith("DELETE FROM taxidb.YellowTaxis"):
        _same_dml(run, sql, lambda t: t.delete("RideId = 100000"))
    elif head.startswith("UPDATE taxidb.YellowTaxis"):
        _same_dml(run, sql, lambda t: t.update("RideId = 100001", {"PassengerCount": "2"}))
    elif head.startswith("MERGE INTO") and "trip_corrections" in original:
        _same_dml(run, sql, lambda t: _merge_corrections(t, spark.table("trip_corrections")))
    elif head.startswith("MERGE INTO") and "BY SOURCE THEN DELETE" in original:
        _same_dml(run, sql, lambda t: _merge_snapshot(t, spark.table("trip_snapshot")))
    elif head.startswith("MERGE INTO"):
        _same_dml(run, sql, lambda t: _merge_conditional(t, spark.table("trip_snapshot")))
        run.mark("after_merges")
    elif head.startswith("SELECT COUNT(*) FROM taxidb.YellowTaxis;") or head == "SELECT COUNT(*) FROM taxidb.YellowTaxis":
        assert spark.sql(sql).first()[0] == trips().toDF().count() > 0
    elif head.startswith("SELECT * FROM delta.`"):
        expected = spark.read.format("delta").load(run.trips).where("PickupMonth = 12 AND PaymentType = 3")
        assert _rows(spark.sql(sql)) == _rows(expected)
    elif "VERSION AS OF 2 WHERE" in original or "@v2" in original:
        expected = spark.read.format("delta").option("versionAsOf", 2).load(run.trips).where("VendorId = 1").count()
        assert spark.sql(sql).first()[0] == expected
    elif "TIMESTAMP AS OF '2026" in original or "@2026" in original:
        expected = spark.read.format("delta").option("timestampAsOf", run.moments["after_merges"]).load(run.trips).count()
        assert spark.sql(sql).first()[0] == expected
    elif head.startswith("SELECT SUM(PassengerCount)"):
        now = trips().toDF().agg({"PassengerCount": "sum"}).first()[0]
        then = spark.read.format("delta").option("versionAsOf", 1).load(run.trips).agg({"PassengerCount": "sum"}).first()[0]
        assert spark.sql(sql).first()[0] == now - then
    elif head.startswith("DESCRIBE HISTORY"):
        assert spark.sql(sql).collect() == trips().history().collect()
    elif head.startswith("DESCRIBE TABLE"):
        described = {r.col_name: r.data_type for r in spark.sql(sql).collect() if not r.col_name.startswith("#")}
        assert described == {f.name: f.dataType.simpleString() for f in trips().toDF().schema.fields}
    elif head.startswith("SHOW TBLPROPERTIES"):
        shown = {r.key: r.value for r in spark.sql(sql).collect()}
        snapshot = Table(run.trips).snapshot()
        protocol_keys = ("delta.min", "delta.feature.")
        assert {k: v for k, v in shown.items() if not k.startswith(protocol_keys)} == snapshot.configuration
        assert shown["delta.minWriterVersion"] == str(snapshot.protocol.min_writer_version)
    elif head.startswith("OPTIMIZE taxidb.YellowTaxis"):
        clone = run.clone_trips()
        metrics = spark.sql(sql).first().metrics
        builder = DeltaTable.forPath(spark, clone).optimize()
        if "ZORDER" in original:
            expected = builder.where("PickupMonth = 12").executeZOrderBy("PickupLocationId", "DropLocationId")
        else:
            expected = builder.executeCompaction()
        assert metrics.numFilesAdded == expected.first().metrics.numFilesAdded
        assert metrics.numFilesRemoved == expected.first().metrics.numFilesRemoved
        assert _rows(trips().toDF()) == _rows(DeltaTable.forPath(spark, clone).toDF())
    elif head.startswith("RESTORE TABLE"):
        reader = spark.read.format("delta")
        if "TIMESTAMP" in original:
            moment = datetime.strptime(run.moments["after_merges"], "%Y-%m-%d %H:%M:%S.%f") - timedelta(milliseconds=1)
            reader = reader.option("timestampAsOf", moment.strftime("%Y-%m-%d %H:%M:%S.%f"))
        else:
            reader = reader.option("versionAsOf", 1)
        expected = _rows(reader.load(run.trips))
        restored = spark.sql(sql).first()
        assert _rows(trips().toDF()) == expected
        assert restored.num_of_files_after_restore == Table(run.trips).snapshot().num_files
    elif head.startswith("VACUUM") and "RETAIN 200 HOURS" in original:
        with pytest.raises(VacuumRetentionError):
            spark.sql(sql)
        with pytest.raises(VacuumRetentionError):
            trips().vacuum(200)
    elif head.startswith("VACUUM") and "DRY RUN" in original:
        assert _rows(spark.sql(sql)) == _rows(trips().vacuum(dryRun=True))
    elif head.startswith("SELECT * FROM table_changes('taxidb.tripAggregates', 1, 4)"):
        feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1)
        expected = feed.option("endingVersion", 4).table("sql_taxidb.tripAggregates")
        if "update_postimage" in original:
            expected = expected.where("VendorId = 1 AND _change_type = 'update_postimage'")
        assert _rows(spark.sql(sql)) == _rows(expected)
    elif head.startswith("SELECT * FROM table_changes"):
        start = run.moments["aggregates_v1"]
        feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingTimestamp", start)
        expected = feed.table("sql_taxidb.tripAggregates").where("_change_type = 'insert'")
        assert _rows(spark.sql(sql)) == _rows(expected) and expected.count() > 0
    elif head.startswith("CREATE TABLE IF NOT EXISTS taxidb.tripAggregates"):
        spark.sql(sql)
        _aggregate_history(run)
    else:
        spark.sql(sql).collect()


def _aggregate_history(run: Scenario) -> None:
    """Versions 1 to 4 of tripAggregates, for the change feed statements (the file reads them)."""
    spark = run.spark
    time.sleep(1.1)
    run.mark("aggregates_v1")
    spark.sql(
        "INSERT INTO sql_taxidb.tripAggregates SELECT VendorId, PassengerCount, CAST(SUM(FareAmount) AS INT) "
        "FROM sql_taxidb.YellowTaxis GROUP BY VendorId, PassengerCount"
    )
    spark.sql("UPDATE sql_taxidb.tripAggregates SET FareAmount = FareAmount + 1 WHERE VendorId = 1")
    spark.sql("DELETE FROM sql_taxidb.tripAggregates WHERE PassengerCount = 4")
    spark.sql("INSERT INTO sql_taxidb.tripAggregates VALUES (9, 9, 9)")
    assert Table(str(DeltaTable.forName(spark, "sql_taxidb.tripAggregates")._table.root)).latest_version() == 4


def _final_checks(run: Scenario) -> None:
    spark = run.spark
    detail = DeltaTable.forName(spark, "sql_taxidb.tripsClustered").detail().first()
    assert detail.clusteringColumns == []
    converted = str(run.lake / "legacy_trips")
    assert spark.read.format("delta").load(converted).count() == 50
    assert sorted(deltalake.DeltaTable(converted).to_pyarrow_table().column("RideId").to_pylist()) == list(range(1, 51))
    clone = Table(DeltaTable.forName(spark, "sql_taxidb.YellowTaxisClone")._table.root).snapshot()
    cloned = sorted(Path(p.replace("file:", "")).name for p in clone.file_paths())
    assert cloned == sorted(Path(p).name for p in Table(run.trips).snapshot(version=3).file_paths())
    assert "CabId" in DeltaTable.forPath(spark, run.trips).toDF().columns
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("__sparkdelta")]


def test_every_scenario_statement_runs_and_matches_the_api(spark: SparkSession, tmp_path: Path) -> None:
    run = Scenario(spark, tmp_path)
    spark.sql("CREATE DATABASE IF NOT EXISTS sql_archive")
    taxi_rows(spark, 99_990, 40, 1).createOrReplaceTempView("staging_trips")
    taxi_rows(spark, 100_000, 10, 2).createOrReplaceTempView("trip_corrections")
    taxi_rows(spark, 99_995, 30, 3).createOrReplaceTempView("trip_snapshot")
    legacy = taxi_rows(spark, 1, 50, 4).selectExpr("*", "month(PickupTime) AS PickupMonth")
    legacy.write.partitionBy("PickupMonth").parquet(str(run.lake / "legacy_trips"))
    statements = split_statements(re.sub(r"--[^\n]*", "", SCENARIOS.read_text()))
    assert len(statements) == 50
    try:
        for statement in statements:
            _check(run, statement.strip(), _adapted(statement.strip(), run))
        _final_checks(run)
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableChangeDataFeed")


def test_scenario_rows_are_taxi_rows(spark: SparkSession) -> None:
    row: Row = taxi_rows(spark, 5, 1, 0).first()
    assert row.RideId == 5 and row.DropTime > row.PickupTime and row.TotalAmount > 0
