"""The Change Data Feed: ours against delta-rs's ``load_cdf`` on the same tables, and its refusals."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from sparkdelta.exceptions import ChangeDataFeedError
from sparkdelta.spark.read.change_feed import table_changes_df

CDF = {"delta.enableChangeDataFeed": "true"}


def _changes(rows: list) -> Counter:
    return Counter((r["id"], r["p"], r["_change_type"], r["_commit_version"]) for r in rows)


def _ours(spark: SparkSession, path: str, start: int, end: int) -> Counter:
    df = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start)
        .option("endingVersion", end)
        .load(path)
    )
    assert df.columns == ["id", "p", "_change_type", "_commit_version", "_commit_timestamp"]
    return _changes(df.collect())


def _theirs(path: str, start: int, end: int) -> Counter:
    table = pa.table(RsTable(path).load_cdf(starting_version=start, ending_version=end).read_all())
    return _changes(table.to_pylist())


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A partitioned table that delta-rs changes every way it can, with CDF on."""
    path = str(tmp_path_factory.mktemp("cdf") / "rides")
    write_deltalake(path, pa.table({"id": [1, 2, 3, 4], "p": ["a", "a", "b", "b"]}), partition_by=["p"], configuration=CDF)
    table = RsTable(path)
    table.delete("id = 1")
    table.update(updates={"id": "id + 100"}, predicate="id = 3")
    write_deltalake(path, pa.table({"id": [5, 6], "p": ["c", None]}), mode="append")
    source = pa.table({"id": [2, 7], "p": ["a", "c"]})
    (
        RsTable(path)
        .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"id": "s.id + 1000"})
        .when_not_matched_insert_all()
        .execute()
    )
    table = RsTable(path)
    table.delete("p = 'c'")  # whole files: a commit without change data files
    write_deltalake(path, pa.table({"id": [9], "p": ["d"]}), mode="overwrite", partition_by=["p"])
    return path


def test_every_range_matches_delta_rs(spark: SparkSession, rs_table: str) -> None:
    latest = RsTable(rs_table).version()
    assert latest == 6
    for start in range(latest + 1):
        for end in range(start, latest + 1):
            assert _ours(spark, rs_table, start, end) == _theirs(rs_table, start, end), (start, end)


def test_commit_timestamps_are_the_commits(spark: SparkSession, rs_table: str) -> None:
    df = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(rs_table)
    stamps = {r["_commit_version"]: r["_commit_timestamp"] for r in df.select("_commit_version", "_commit_timestamp").collect()}
    history = {h["version"]: h["timestamp"] for h in RsTable(rs_table).history()}
    assert sorted(stamps) == sorted(history)
    for version, stamp in stamps.items():
        assert abs(stamp.timestamp() * 1000 - history[version]) < 1000


def test_timestamp_bounds_and_table_changes(spark: SparkSession, rs_table: str) -> None:
    df = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(rs_table)
    stamps = sorted({(r["_commit_version"], r["_commit_timestamp"]) for r in df.collect()})
    v2_time = stamps[2][1].strftime("%Y-%m-%d %H:%M:%S.%f")
    by_time = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingTimestamp", v2_time)
        .option("endingTimestamp", v2_time)
        .load(rs_table)
    )
    assert {r["_commit_version"] for r in by_time.collect()} == {2}
    assert _changes(table_changes_df(spark, rs_table, 1, 3).collect()) == _theirs(rs_table, 1, 3)


def test_refusals_name_the_table_and_version(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"id": [1], "p": ["a"]}))
    with pytest.raises(ChangeDataFeedError, match=r"not enabled at version 0"):
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    with pytest.raises(ChangeDataFeedError, match="after the latest version 0"):
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 3).load(path)
    with pytest.raises(ChangeDataFeedError, match="startingVersion or startingTimestamp"):
        spark.read.format("delta").option("readChangeFeed", "true").load(path)

    cdf = str(tmp_path / "cdf")
    write_deltalake(cdf, pa.table({"id": [1, 2], "p": ["a", "b"]}), configuration=CDF)
    RsTable(cdf).delete("id = 1")
    for name in os.listdir(cdf):
        if name.endswith(".parquet"):
            os.unlink(os.path.join(cdf, name))  # as VACUUM would, after a rewrite
    with pytest.raises(ChangeDataFeedError, match="no longer exists"):
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(cdf)
