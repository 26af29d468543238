"""RESTORE: the table reads as the restored version did, by our reader and delta-rs; vacuumed files refuse it."""

from __future__ import annotations

from pathlib import Path

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import RestoreFilesMissingError
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable


def _rows(spark: SparkSession, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted((tuple(r) for r in reader.load(path).collect()), key=repr)


def _history(spark: SparkSession, path: str) -> dict[int, list[tuple]]:
    spark.range(0, 20, 1, 2).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    t = DeltaTable.forPath(spark, path)
    t.delete("id < 5")
    spark.range(100, 110).selectExpr("id", "id % 2 AS p").write.format("delta").mode("append").save(path)
    t.update("p = 1", {"id": "id + 1000"})
    spark.range(7).selectExpr("id", "id % 2 AS p", "'x' AS extra").write.format("delta").mode("append").option(
        "mergeSchema", "true"
    ).save(path)
    return {v: _rows(spark, path, v) for v in range(Table(path).latest_version() + 1)}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_restore_to_each_version_reads_as_it_did(spark: SparkSession, tmp_path: Path, version: int) -> None:
    path = str(tmp_path / "t")
    before = _history(spark, path)
    latest = Table(path).snapshot()
    target = Table(path).snapshot(version)

    result = DeltaTable.forPath(spark, path).restoreToVersion(version).collect()[0]
    assert _rows(spark, path) == before[version]
    assert spark.read.format("delta").load(path).columns == ["id", "p"]  # the schema comes back too
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted(((r["id"], r["p"]) for r in theirs), key=repr) == before[version]
    restored = Table(path).snapshot()
    assert set(restored.file_paths()) == set(target.file_paths())
    assert result.num_of_files_after_restore == target.num_files and result.table_size_after_restore == target.size_in_bytes
    assert result.num_removed_files == len(set(latest.file_paths()) - set(target.file_paths()))
    assert result.num_restored_files == len(set(target.file_paths()) - set(latest.file_paths()))
    commit = restored.commit_info
    assert commit["operation"] == "RESTORE" and commit["operationParameters"]["version"] == str(version)
    assert int(commit["operationMetrics"]["numRestoredFiles"]) == result.num_restored_files
    assert all(_rows(spark, path, v) == rows for v, rows in before.items())  # history is untouched


def test_restore_by_timestamp_and_refusal_when_files_are_gone(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    before = _history(spark, path)
    when = Table(path).history()[-2].timestamp  # version 1's commit time, in millis
    import datetime as dt

    stamp = dt.datetime.fromtimestamp(when / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    DeltaTable.forPath(spark, path).restoreToTimestamp(stamp)
    assert _rows(spark, path) == before[1]

    for name in Table(path).snapshot(0).file_paths():
        (Path(path) / name).unlink(missing_ok=True)  # as VACUUM would after a long retention
    version = Table(path).latest_version()
    with pytest.raises(RestoreFilesMissingError, match="version 0.*no longer exist"):
        DeltaTable.forPath(spark, path).restoreToVersion(0)
    assert Table(path).latest_version() == version
