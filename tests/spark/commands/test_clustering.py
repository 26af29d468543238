"""Liquid clustering: clusterBy / CLUSTER BY, OPTIMIZE clustering only unclustered files, ALTER ... CLUSTER BY."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable


def _domain(path: str) -> dict:
    return json.loads(Table(path).snapshot().domain_metadata["delta.clustering"].configuration)


def _append(spark: SparkSession, path: str, start: int, count: int, files: int) -> None:
    rows = spark.range(start, start + count, 1, files).selectExpr(
        "id", "cast(pmod(hash(id, 3), 100000) AS int) AS x", "cast(pmod(hash(id, 5), 100000) AS int) AS y"
    )
    rows.write.format("delta").mode("append").save(path)


def test_clustered_tables_cluster_on_optimize_incrementally(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = (
        (DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("x", "INT").addColumn("y", "INT"))
        .clusterBy("x", "y")
        .property("delta.targetFileSize", str(24 * 1024))
        .execute()
    )
    protocol = Table(path).snapshot().protocol
    assert {"clustering", "domainMetadata"} <= protocol.writer_features and protocol.min_reader_version == 1
    assert _domain(path) == {"clusteringColumns": [["x"], ["y"]]}
    assert table.detail().collect()[0].clusteringColumns == ["x", "y"]

    _append(spark, path, 0, 20000, 8)
    expected = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    metrics = table.optimize().executeCompaction().collect()[0].metrics
    assert metrics.numFilesRemoved == 8 and metrics.numFilesAdded >= 4
    files = Table(path).snapshot().files
    assert set(files.column("clusteringProvider").to_pylist()) == {"liquid"}
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == expected
    info = scan_info(spark.read.format("delta").load(path).where("x < 1000"))
    assert info.files_read < info.files_total
    commit = Table(path).snapshot().commit_info
    assert commit["operationParameters"]["clusterBy"] == '["x","y"]'

    clustered = set(Table(path).snapshot().file_paths())
    _append(spark, path, 20000, 3000, 3)
    metrics = table.optimize().executeCompaction().collect()[0].metrics
    assert metrics.numFilesRemoved == 3  # only what was not clustered yet
    assert clustered <= set(Table(path).snapshot().file_paths())
    version = Table(path).latest_version()
    assert table.optimize().executeCompaction().collect()[0].metrics.numFilesRemoved == 0
    assert Table(path).latest_version() == version
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 23000
    with pytest.raises(DeltaAnalysisException, match=r"DELTA_CLUSTERING_WITH_ZORDER_BY.*Please remove ZORDER BY \(y\)"):
        table.optimize().executeZOrderBy("y")


def test_cluster_by_in_sql_and_alter(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE clustered_trips (id BIGINT, x INT, y INT) USING delta CLUSTER BY (x) LOCATION '{path}'")
    spark.sql("DROP TABLE clustered_trips")  # the catalog entry only: the table stays at its location
    assert _domain(path) == {"clusteringColumns": [["x"]]}
    _append(spark, path, 0, 1000, 2)
    files = set(Table(path).snapshot().file_paths())
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (y, x)")
    assert _domain(path) == {"clusteringColumns": [["y"], ["x"]]}
    assert set(Table(path).snapshot().file_paths()) == files  # nothing rewritten
    assert Table(path).snapshot().commit_info["operation"] == "CLUSTER BY"
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    assert _domain(path) == {"clusteringColumns": []}
    assert DeltaTable.forPath(spark, path).detail().collect()[0].clusteringColumns == []

    partitioned = str(tmp_path / "p")
    spark.range(3).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(partitioned)
    for clustering in ("(id)", "NONE"):  # delta-spark refuses either on a partitioned table
        with pytest.raises(DeltaAnalysisException, match="cannot be applied to a partitioned table"):
            spark.sql(f"ALTER TABLE delta.`{partitioned}` CLUSTER BY {clustering}")
    plain = str(tmp_path / "plain")
    spark.range(3).write.format("delta").save(plain)
    spark.sql(f"ALTER TABLE delta.`{plain}` CLUSTER BY (id)")
    assert {"clustering", "domainMetadata"} <= Table(plain).snapshot().protocol.writer_features


def test_dataframe_writer_cluster_by_creates_a_clustered_table(spark: SparkSession, deltaspark: Any, tmp_path: Path) -> None:
    """``df.write.clusterBy(...)``: Spark documents it as clustering the output, so a new table
    is created liquid-clustered (delta-spark 4.4 ignores it on ``save(path)`` and refuses it on
    ``saveAsTable``); delta-spark reads the result as a clustered table. An append naming other
    columns is refused; ``overwriteSchema`` replaces them."""
    path = str(tmp_path / "t")
    rows = spark.range(0, 20000, 1, 8).selectExpr("id", "cast(pmod(hash(id, 3), 1000) AS int) AS x", "id % 7 AS y")
    rows.write.format("delta").clusterBy("x", "y").save(path)
    detail = deltaspark.run(
        "d = spark.sql(f'DESCRIBE DETAIL delta.`{path}`').collect()[0]\nresult = (d.clusteringColumns, sorted(d.tableFeatures))",
        path=path,
    )
    assert detail[0] == ["x", "y"] and {"clustering", "domainMetadata"} <= set(detail[1])
    assert DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics.numFilesRemoved == 8
    with pytest.raises(DeltaAnalysisException, match="DELTA_CLUSTERING_COLUMNS_MISMATCH"):
        rows.write.format("delta").mode("append").clusterBy("y").save(path)
    rows.write.format("delta").mode("append").clusterBy("X", "y").save(path)
    rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").clusterBy("y").save(path)
    assert _domain(path) == {"clusteringColumns": [["y"]]}
    with pytest.raises(AnalysisException, match="SPECIFY_CLUSTER_BY_WITH_PARTITIONED_BY_IS_NOT_ALLOWED"):
        rows.write.format("delta").partitionBy("y").clusterBy("x").save(str(tmp_path / "both"))  # as delta-spark
    assert not (tmp_path / "both").exists()

    rows.write.format("delta").clusterBy("x").saveAsTable("writer_clustered")
    assert spark.sql("DESCRIBE DETAIL writer_clustered").collect()[0].clusteringColumns == ["x"]
    spark.sql("DROP TABLE writer_clustered")
