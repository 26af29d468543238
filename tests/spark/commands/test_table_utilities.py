"""CLONE, CONVERT TO DELTA and protocol upgrades, checked against delta-rs and the log; and the
history, maintenance and recovery lines of ``../shared/examples/scenarios.py``."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import (
    CloneTargetExistsError,
    UnsupportedFeatureError,
    VacuumRetentionError,
)
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable


def _rows(spark: SparkSession, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted((tuple(r) for r in reader.load(path).collect()), key=repr)


def _theirs(path: str) -> list[tuple]:
    return sorted((tuple(r.values()) for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()), key=repr)


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("shallow", [True, False], ids=["shallow", "deep"])
def test_clones_read_as_their_source_version(spark: SparkSession, tmp_path: Path, shallow: bool, vectors: bool) -> None:
    source = str(tmp_path / "source")
    rows = spark.range(0, 40, 1, 2).selectExpr("id", "id % 2 AS p")
    rows.write.format("delta").partitionBy("p").option("delta.enableDeletionVectors", str(vectors).lower()).save(source)
    DeltaTable.forPath(spark, source).delete("id % 3 = 0")
    expected, first = _rows(spark, source), _rows(spark, source, 0)

    target = str(tmp_path / "clone")
    clone = DeltaTable.forPath(spark, source).clone(
        target, isShallow=shallow, properties={"delta.logRetentionDuration": "interval 60 days"}
    )
    assert _rows(spark, target) == expected
    snapshot = Table(target).snapshot()
    assert snapshot.configuration["delta.logRetentionDuration"] == "interval 60 days"
    assert snapshot.metadata.id != Table(source).snapshot().metadata.id
    paths = snapshot.file_paths()
    assert all(p.startswith("file:///") for p in paths) if shallow else not any(":" in p for p in paths)
    commit = snapshot.commit_info
    assert commit["operation"] == "CLONE" and commit["operationParameters"]["isShallow"] == str(shallow).lower()
    assert int(commit["operationMetrics"]["numCopiedFiles"]) == (0 if shallow else Table(source).snapshot().num_files)
    if not vectors and not shallow:  # delta-rs 1.6.6 reads neither DVs nor absolute file paths
        assert _theirs(target) == expected
    assert sorted(r.id for r in clone.toDF().collect()) == [r[0] for r in sorted(expected)]

    with pytest.raises(CloneTargetExistsError, match="already exists"):
        DeltaTable.forPath(spark, source).clone(target, isShallow=shallow)
    DeltaTable.forPath(spark, source).cloneAtVersion(0, target, isShallow=shallow, replace=True)
    assert _rows(spark, target) == first
    if not shallow:  # a deep clone stands alone
        shutil.rmtree(source)
        assert _rows(spark, target) == first


def test_convert_a_partitioned_parquet_directory(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "legacy")
    data = spark.range(0, 30, 1, 3).selectExpr("id", "cast(id % 3 AS int) AS PickupMonth", "cast(id AS string) AS s")
    data.write.partitionBy("PickupMonth").parquet(path)
    (Path(path) / "_SUCCESS").touch()
    table = DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "PickupMonth INT")
    expected = sorted((tuple(r) for r in data.select("id", "s", "PickupMonth").collect()), key=repr)
    assert _rows(spark, path) == expected and _theirs(path) == expected
    snapshot = Table(path).snapshot()
    assert snapshot.partition_columns == ("PickupMonth",) and snapshot.version == 0
    assert all(json.loads(s)["numRecords"] > 0 for s in snapshot.files.column("stats").to_pylist())
    assert snapshot.commit_info["operation"] == "CONVERT"
    assert spark.read.format("delta").load(path).where("id < 3").count() == 3
    assert DeltaTable.convertToDelta(spark, f"parquet.`{path}`", "PickupMonth INT").toDF().count() == 30
    assert Table(path).latest_version() == 0 and table.toDF().count() == 30


def test_protocol_upgrades(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.addFeatureSupport("appendOnly")  # (1, 2) has it already: delta-spark changes nothing
    assert Table(path).latest_version() == 0
    table.upgradeTableProtocol(1, 7)  # table features listing (1, 2)'s own: delta-spark 4.4 keeps (1, 2)
    assert Table(path).latest_version() == 0
    table.upgradeTableProtocol(1, 4)
    protocol = Table(path).snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 4)
    assert Table(path).snapshot().commit_info["operation"] == "UPGRADE PROTOCOL"
    table.upgradeTableProtocol(1, 2)  # never a downgrade, and no error (delta-spark)
    assert Table(path).latest_version() == 1
    table.addFeatureSupport("deletionVectors")
    protocol = Table(path).snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "deletionVectors" in protocol.reader_features and "deletionVectors" in protocol.writer_features
    with pytest.raises(UnsupportedFeatureError, match="DELTA_UNSUPPORTED_FEATURES_IN_CONFIG") as refused:
        table.addFeatureSupport("noSuchFeature")
    assert "delta.feature.noSuchFeature" in str(refused.value)
    assert sorted(r.id for r in table.toDF().collect()) == [0, 1, 2]


def test_history_maintenance_and_recovery_scenario_lines(spark: SparkSession, tmp_path: Path) -> None:
    """The lines of scenarios.py as a user writes them, with the results delta-spark gives."""
    path = str(tmp_path / "lake" / "trips")
    trips = spark.range(0, 120, 1, 6).selectExpr(
        "cast(id AS int) AS RideId",
        "cast(id % 12 + 1 AS int) AS PickupMonth",
        "cast(pmod(hash(id), 263) AS int) AS PickupLocationId",
        "cast(pmod(hash(id, 7), 263) AS int) AS DropLocationId",
        "id * 1.5 AS TotalAmount",
    )
    trips.write.format("delta").partitionBy("PickupMonth").save(path)
    trips.limit(10).write.format("delta").mode("append").save(path)
    t = DeltaTable.forPath(spark, path)

    history = t.history().select("version", "operation", "operationMetrics").collect()
    assert [(r.version, r.operation) for r in history] == [(1, "WRITE"), (0, "WRITE")]
    assert history[0].operationMetrics["numOutputRows"] == "10"
    assert t.history(1).count() == 1
    detail = t.detail().collect()[0]
    assert detail.format == "delta" and detail.partitionColumns == ["PickupMonth"] and detail.numFiles > 12

    t.optimize().executeCompaction()
    assert Table(path).snapshot().num_files == 12  # one per month
    t.optimize().where("PickupMonth = 12").executeZOrderBy("PickupLocationId", "DropLocationId")
    assert t.history(1).collect()[0].operationParameters["zOrderBy"] == '["PickupLocationId","DropLocationId"]'
    t.vacuum()  # default retention: nothing is old enough
    with pytest.raises(VacuumRetentionError, match="100 hours"):  # below 7 days: refused, as delta-spark refuses it
        t.vacuum(100)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        t.vacuum(100)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert [r.operation for r in t.history(4).collect()] == ["VACUUM END", "VACUUM START", "VACUUM END", "VACUUM START"]
    assert _rows(spark, path, 1) == _rows(spark, path)

    t.restoreToVersion(1)
    assert _rows(spark, path) == _rows(spark, path, 1)
    t.restoreToTimestamp(
        dt.datetime.fromtimestamp(Table(path).history()[-1].timestamp / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    )
    assert spark.read.format("delta").load(path).count() == 120

    clone = str(tmp_path / "lake" / "trips_clone")
    t.clone(clone, isShallow=True)
    assert _rows(spark, clone) == _rows(spark, path)
    t.upgradeTableProtocol(1, 7)  # nothing but legacy features: delta-spark 4.4 keeps (1, 2)
    assert Table(path).snapshot().protocol.min_writer_version == 2
    t.upgradeTableProtocol(1, 4)
    assert Table(path).snapshot().protocol.min_writer_version == 4

    legacy = str(tmp_path / "lake" / "legacy_trips")
    trips.write.partitionBy("PickupMonth").parquet(legacy)
    DeltaTable.convertToDelta(spark, f"parquet.`{legacy}`", "PickupMonth INT")
    assert spark.read.format("delta").load(legacy).count() == 120
    assert deltalake.DeltaTable(legacy).to_pyarrow_table().num_rows == 120
