"""VACUUM: random histories aged into the past, vacuumed with random retention windows.

After VACUUM every version inside the window (and the last one before it) must read the
same rows as before, by our reader and by delta-rs; the files deleted must be exactly the
ones delta-rs's own full VACUUM would delete, and never a file the latest snapshot reads,
even when a writer commits while VACUUM lists the table.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import VacuumRetentionError
from sparkdelta.kernel import Table
from sparkdelta.kernel.snapshot import clear_log_cache
from sparkdelta.kernel.storage import LocalStorage
from sparkdelta.spark.paths import absolute_path
from sparkdelta.tables import DeltaTable

HOUR_MS = 3_600_000


def _rows(spark: SparkSession, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def _build_history(spark: SparkSession, path: str, rng: random.Random, steps: int) -> None:
    """A partitioned table changed by appends, deletes, updates and overwrites; no checkpoints."""
    next_id = 0

    def batch(count: int) -> Any:
        nonlocal next_id
        rows = [(i, i % 3, rng.randrange(100)) for i in range(next_id, next_id + count)]
        next_id += count
        return spark.createDataFrame(rows, "id long, p long, v long").repartition(2)

    batch(20).write.format("delta").partitionBy("p").option("delta.checkpointInterval", "1000").save(path)
    table = DeltaTable.forPath(spark, path)
    for _ in range(steps):
        step = rng.choice(["append", "delete", "update", "overwrite"])
        if step == "append":
            batch(rng.randrange(3, 10)).write.format("delta").mode("append").save(path)
        elif step == "delete":
            table.delete(f"v < {rng.randrange(10, 40)}")
        elif step == "update":
            table.update(f"p = {rng.randrange(3)}", {"v": "v + 1"})
        else:
            batch(12).write.format("delta").mode("overwrite").save(path)


def _age(path: str, hours_between: float) -> list[int]:
    """Move version i (its commit, tombstones and new files) to now - (latest - i + 0.5) * hours_between.

    Returns each version's new timestamp, in millis.
    """
    log = Path(path) / "_delta_log"
    commits = sorted(log.glob("*.json"))
    now = int(time.time() * 1000)
    times = []
    for version, commit in enumerate(commits):
        moment = now - int((len(commits) - version - 0.5) * hours_between * HOUR_MS)
        times.append(moment)
        lines = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in lines:
            if "remove" in action:
                action["remove"]["deletionTimestamp"] = moment
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] = moment
            for kind in ("add", "cdc"):
                if kind in action:
                    target = absolute_path(path, action[kind]["path"])
                    os.utime(target, (moment / 1000, moment / 1000))
        commit.write_text("".join(json.dumps(a) + "\n" for a in lines))
        os.utime(commit, (moment / 1000, moment / 1000))
    clear_log_cache()
    return times


def _data_files(path: str) -> set[str]:
    return {p.relative_to(path).as_posix() for p in Path(path).rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def _put(path: str, name: str, age_hours: float) -> None:
    target = Path(path) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"not referenced")
    moment = time.time() - age_hours * 3600
    os.utime(target, (moment, moment))


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_vacuum_keeps_every_version_in_the_window_and_deletes_what_delta_rs_would(
    spark: SparkSession, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    _build_history(spark, path, rng, steps=6)
    latest = Table(path).latest_version()
    before = {v: _rows(spark, path, v) for v in range(latest + 1)}
    times = _age(path, hours_between=1)
    _put(path, "orphan-old.parquet", age_hours=latest + 5)
    _put(path, "p=1/orphan-young.parquet", age_hours=0)
    _put(path, "_hidden/old.parquet", age_hours=latest + 5)
    _put(path, "_SUCCESS", age_hours=latest + 5)
    retention = rng.randrange(1, latest + 2)
    cutoff = int(time.time() * 1000) - retention * HOUR_MS

    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table = DeltaTable.forPath(spark, path)
        planned = {r.path.removeprefix(f"file:{path}/") for r in table.vacuum(retention, dryRun=True).collect()}
        theirs = deltalake.DeltaTable(path).vacuum(retention, dry_run=True, enforce_retention_duration=False, full=True)
        assert planned == {t.removeprefix(path + "/") for t in theirs}
        assert "orphan-old.parquet" in planned and not planned & {"p=1/orphan-young.parquet", "_hidden/old.parquet", "_SUCCESS"}
        on_disk = _data_files(path)
        table.vacuum(retention)
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")

    assert _data_files(path) == on_disk - planned
    readable = [v for v in range(latest + 1) if v == latest or times[v + 1] > cutoff]
    for version in readable:
        assert _rows(spark, path, version) == before[version], f"version {version} (retention {retention} h)"
        theirs = deltalake.DeltaTable(path, version=version).to_pyarrow_table().to_pylist()
        assert sorted((r["id"], r["p"], r["v"]) for r in theirs) == before[version]
    history = table.history(2).collect()
    assert [r.operation for r in history] == ["VACUUM END", "VACUUM START"]
    assert history[0].operationMetrics["numDeletedFiles"] == str(len(planned))
    assert history[1].operationMetrics["numFilesToDelete"] == str(len(planned))
    assert history[1].operationParameters["specifiedRetentionMillis"] == str(retention * HOUR_MS)


def test_a_short_retention_is_refused_and_a_dry_run_changes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(10).coalesce(1).write.format("delta").save(path)
    spark.range(5).coalesce(1).write.format("delta").mode("overwrite").save(path)
    _age(path, hours_between=24 * 20)  # version 1, the overwrite, 10 days ago
    on_disk, version = _data_files(path), Table(path).latest_version()
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(VacuumRetentionError, match="retentionDurationCheck"):
        table.vacuum(1)
    assert len(table.vacuum(dryRun=True).collect()) == 1  # the overwritten file: its tombstone is 10 days old
    assert _data_files(path) == on_disk and Table(path).latest_version() == version
    table.vacuum()
    assert len(_data_files(path)) == len(on_disk) - 1
    assert sorted(r.id for r in table.toDF().collect()) == list(range(5))


def test_a_writer_committing_during_vacuum_loses_nothing(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 30, 1, 3).selectExpr("id", "0L AS p").write.format("delta").save(path)
    _age(path, hours_between=1)
    table = DeltaTable.forPath(spark, path)
    listing = LocalStorage.list_tree

    listed: list[str] = []  # VACUUM lists the table, then its staging folder: the writes go during the first

    def list_while_writing(self: LocalStorage, directory: str, descend: Any) -> Any:
        monkeypatch.setattr(LocalStorage, "list_tree", listing)  # the writers below list their staged files
        listed.append(directory)
        if len(listed) == 1:
            table.delete("id < 10")  # removes an old file: a tombstone younger than any window
            spark.range(100, 105).selectExpr("id", "0L AS p").write.format("delta").mode("append").save(path)
        yield from listing(self, directory, descend)

    monkeypatch.setattr(LocalStorage, "list_tree", list_while_writing)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    assert sorted(r.id for r in table.toDF().collect()) == [*range(10, 30), *range(100, 105)]
    assert sorted(r["id"] for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()) == [
        *range(10, 30),
        *range(100, 105),
    ]
