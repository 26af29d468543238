"""Optimized writes and auto compaction (``delta.autoOptimize.*``) for tables fed by small appends."""

from __future__ import annotations

from pathlib import Path

import deltalake
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table


def test_optimized_writes_make_one_file_per_partition_instead_of_one_per_task(spark: SparkSession, tmp_path: Path) -> None:
    rows = spark.range(0, 4000, 1, 8).selectExpr("id", "id % 2 AS p")
    plain, optimized = str(tmp_path / "plain"), str(tmp_path / "optimized")
    rows.write.format("delta").partitionBy("p").save(plain)
    rows.write.format("delta").partitionBy("p").option("delta.autoOptimize.optimizeWrite", "true").save(optimized)
    assert Table(plain).snapshot().num_files == 16
    assert Table(optimized).snapshot().num_files == 2
    assert sorted(r["id"] for r in deltalake.DeltaTable(optimized).to_pyarrow_table().to_pylist()) == list(range(4000))


def test_auto_compaction_after_many_small_appends(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "6")
    try:
        first = spark.range(0, 10, 1, 2).selectExpr("id", "id % 2 AS p")
        first.write.format("delta").partitionBy("p").option("delta.autoOptimize.autoCompact", "true").save(path)
        for i in range(1, 4):
            spark.range(i * 10, i * 10 + 10, 1, 2).selectExpr("id", "id % 2 AS p").write.format("delta").mode("append").save(path)
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    history = [
        (h.version, h.commit_info["operation"], h.commit_info.get("operationParameters", {}).get("auto"))
        for h in Table(path).history()
    ]
    optimizes = [h for h in history if h[1] == "OPTIMIZE"]
    assert optimizes and all(auto == "true" for _, _, auto in optimizes)
    assert Table(path).snapshot().num_files <= 4
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == list(range(40))
    assert sorted(r["id"] for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()) == list(range(40))
