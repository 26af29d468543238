"""OPTIMIZE against delta-spark, the oracle (``tests/deltaspark.py``): both run the same call on
copies of one table that delta-spark wrote, and must answer alike.

- the commit's ``operationParameters`` (the partition predicates as Catalyst prints them,
  ``zOrderBy``, ``clusterBy``, ``auto``) and the names of its ``operationMetrics``;
- the errors: a non-partition column in ``where``, Z-order on a partition column or on a
  missing one, a predicate on a clustered table;
- the metrics row, field for field (Z-order's ``zOrderStats`` too), but for the start time
  and the sizes of the files each wrote.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from deltaspark import DeltaSpark
from pyspark.errors import AnalysisException, IllegalArgumentException, UnsupportedOperationException
from pyspark.sql import SparkSession

from sparkdelta.tables import DeltaTable

# A partitioned table of small files: three appends, each file-per-partition, by delta-spark.
PARTITIONED = """
from pyspark.sql.functions import expr
for i in range(3):
    df = spark.range(i * 30, (i + 1) * 30, 1, 1).select(
        expr("id"),
        expr("CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' ELSE 'it''s' END AS key"),
        expr("CAST(id % 2 AS INT) AS n"),
        expr("CASE WHEN id % 5 = 0 THEN NULL ELSE DATE '2024-01-01' + CAST(id % 4 AS INT) END AS d"),
    )
    df.write.format("delta").mode("append").partitionBy("key", "n", "d").save(path)
"""

# The vendored Z-order tests' table: 100 rows in 4 tasks, partitioned by p (10 values).
Z_ORDER_TABLE = """
from pyspark.sql.functions import col, floor
from pyspark.sql.types import IntegerType
spark.createDataFrame([i for i in range(0, 100)], IntegerType()) \\
    .withColumn("col1", floor(col("value") % 7)) \\
    .withColumn("col2", floor(col("value") % 27)) \\
    .withColumn("p", floor(col("value") % 10)) \\
    .repartition(4).write.partitionBy("p").format("delta").save(path)
"""

LATEST_COMMIT = """
row = DeltaTable.forPath(spark, path).history(1).collect()[0]
result = (dict(row.operationParameters), sorted(row.operationMetrics))
"""

THEIR_OPTIMIZE = """
builder = DeltaTable.forPath(spark, path).optimize()
for where in wheres:
    builder = builder.where(where)
frame = builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()
result = (frame.schema.simpleString(), frame.collect()[0].metrics.asDict(recursive=True))
"""


# What each side picks by itself: when it started, and the sizes of the files it wrote.
WRITER_CHOSEN = ("startTimeMs",)


@pytest.fixture(scope="module")
def partitioned(deltaspark: DeltaSpark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("optimize-oracle") / "partitioned"
    deltaspark.run(PARTITIONED, path=str(path))
    return path


@pytest.fixture(scope="module")
def z_order_table(deltaspark: DeltaSpark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("optimize-oracle") / "zorder"
    deltaspark.run(Z_ORDER_TABLE, path=str(path))
    return path


def _copies(source: Path, tmp_path: Path) -> tuple[str, str]:
    """Two copies of ``source``: delta-spark's and sparkdelta's."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(source, theirs)
    shutil.copytree(source, ours)
    return str(theirs), str(ours)


def _our_optimize(spark: SparkSession, path: str, wheres: list[str], zorder: list[str]) -> tuple[str, dict[str, Any]]:
    builder = DeltaTable.forPath(spark, path).optimize()
    for where in wheres:
        builder = builder.where(where)
    frame = builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()
    return frame.schema.simpleString(), frame.collect()[0].metrics.asDict(recursive=True)


def _our_latest_commit(spark: SparkSession, path: str) -> tuple[dict[str, str], list[str]]:
    row = DeltaTable.forPath(spark, path).history(1).collect()[0]
    return dict(row.operationParameters), sorted(row.operationMetrics)


def _comparable(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics less what each writer picks: start time, and the sizes of the files it wrote."""
    kept = {k: v for k, v in metrics.items() if k not in WRITER_CHOSEN}
    kept["filesAdded"] = {"totalFiles": metrics["filesAdded"]["totalFiles"]}
    return kept


@pytest.mark.parametrize(
    "wheres",
    [
        ["key = 'a'"],
        ["key = 'a'", "n = 1"],
        ["key IN ('a', \"it's\") AND n BETWEEN 0 AND 0"],
        ["d = DATE '2024-01-02' OR d IS NULL"],
        ["key = 'it''s' AND NOT n <> 1"],
        ["key != 'b' AND d >= '2024-01-03' AND n = 0 AND key NOT LIKE 'x%'"],
        ["n = 1L OR n = 0BD", "upper(key) = 'B'"],
    ],
)
def test_optimize_records_the_partition_predicates_delta_spark_records(
    spark: SparkSession, deltaspark: DeltaSpark, partitioned: Path, tmp_path: Path, wheres: list[str]
) -> None:
    theirs, ours = _copies(partitioned, tmp_path)
    their_schema, their_metrics = deltaspark.run(THEIR_OPTIMIZE, path=theirs, wheres=wheres, zorder=[])
    our_schema, our_metrics = _our_optimize(spark, ours, wheres, [])
    assert their_metrics["numFilesRemoved"] > 0, "the predicates select files to compact"
    assert deltaspark.run(LATEST_COMMIT, path=theirs) == _our_latest_commit(spark, ours)
    assert _comparable(our_metrics) == _comparable(their_metrics)
    assert our_schema == their_schema


def test_sql_optimize_records_its_where_as_written(
    spark: SparkSession, deltaspark: DeltaSpark, partitioned: Path, tmp_path: Path
) -> None:
    theirs, ours = _copies(partitioned, tmp_path)
    statement = "OPTIMIZE delta.`{path}` WHERE key = 'it''s' AND n = 1L ZORDER BY (id)"
    deltaspark.run("spark.sql(statement.format(path=path)).collect()", statement=statement, path=theirs)
    spark.sql(statement.format(path=ours)).collect()
    their_commit = deltaspark.run(LATEST_COMMIT, path=theirs)
    assert their_commit[0]["predicate"] == "[\"(('key = it's) AND ('n = 1))\"]"
    assert _our_latest_commit(spark, ours) == their_commit


def test_z_order_metrics_match_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, z_order_table: Path, tmp_path: Path
) -> None:
    for wheres in (["p = 2"], []):
        theirs, ours = _copies(z_order_table, tmp_path / str(len(wheres)))
        their_schema, their_metrics = deltaspark.run(THEIR_OPTIMIZE, path=theirs, wheres=wheres, zorder=["col1", "col2"])
        our_schema, our_metrics = _our_optimize(spark, ours, wheres, ["col1", "col2"])
        assert our_schema == their_schema
        assert _comparable(our_metrics) == _comparable(their_metrics)
        assert our_metrics["zOrderStats"]["strategyName"] == "all"
        assert our_metrics["zOrderStats"]["numOutputCubes"] == (1 if wheres else 10)
        assert deltaspark.run(LATEST_COMMIT, path=theirs) == _our_latest_commit(spark, ours)


def test_compaction_metrics_match_delta_spark_when_there_is_nothing_to_do(
    spark: SparkSession, deltaspark: DeltaSpark, partitioned: Path, tmp_path: Path
) -> None:
    theirs, ours = _copies(partitioned, tmp_path)
    for _ in range(2):  # the second run finds every partition compacted
        their_schema, their_metrics = deltaspark.run(THEIR_OPTIMIZE, path=theirs, wheres=[], zorder=[])
        our_schema, our_metrics = _our_optimize(spark, ours, [], [])
        assert _comparable(our_metrics) == _comparable(their_metrics)
    assert their_metrics["numFilesAdded"] == 0 and their_metrics["numBatches"] == 1


def test_deletion_vector_stats_match_delta_spark(spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path) -> None:
    source = tmp_path / "source"
    deltaspark.run(
        "spark.range(0, 1000, 1, 4).write.format('delta').option('delta.enableDeletionVectors', 'true').save(path)\n"
        "DeltaTable.forPath(spark, path).delete('id % 7 = 0')",
        path=str(source),
    )
    theirs, ours = _copies(source, tmp_path)
    _, their_metrics = deltaspark.run(THEIR_OPTIMIZE, path=theirs, wheres=[], zorder=[])
    _, our_metrics = _our_optimize(spark, ours, [], [])
    assert their_metrics["deletionVectorStats"] == {"numDeletionVectorsRemoved": 4, "numDeletionVectorRowsRemoved": 143}
    assert _comparable(our_metrics) == _comparable(their_metrics)


ERRORS = """
try:
    builder = DeltaTable.forPath(spark, path).optimize()
    for where in wheres:
        builder = builder.where(where)
    builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()
    result = None
except Exception as error:
    result = (type(error).__name__, str(error))
"""


@pytest.mark.parametrize(
    ("wheres", "zorder", "expected"),
    [
        (["id = 1"], [], AnalysisException),
        (["key = 'a' AND id > 1"], [], AnalysisException),
        (["n = 1"], ["key"], IllegalArgumentException),
        ([], ["nope"], IllegalArgumentException),
        (["key = (SELECT max(key) FROM range(1))"], [], AnalysisException),
        (["key = "], [], AnalysisException),
    ],
)
def test_optimize_refuses_what_delta_spark_refuses(
    spark: SparkSession,
    deltaspark: DeltaSpark,
    partitioned: Path,
    wheres: list[str],
    zorder: list[str],
    expected: type[Exception],
) -> None:
    kind, message = deltaspark.run(ERRORS, path=str(partitioned), wheres=wheres, zorder=zorder)
    builder = DeltaTable.forPath(spark, str(partitioned)).optimize()
    for where in wheres:
        builder = builder.where(where)
    with pytest.raises(expected) as raised:
        builder.executeZOrderBy(*zorder) if zorder else builder.executeCompaction()
    assert kind == expected.__name__
    condition = raised.value.getCondition()
    assert message.startswith(f"[{condition}] "), message
    assert message.startswith(str(raised.value)), (str(raised.value), message)


def test_clustered_optimize_matches_delta_spark_and_refuses_predicates_and_z_order(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path
) -> None:
    source = str(tmp_path / "clustered")
    deltaspark.run(
        'spark.sql(f"CREATE TABLE delta.`{path}` (a INT, b STRING) USING delta CLUSTER BY (a)")\n'
        "for i in range(2):\n"
        "    spark.range(0, 100, 1, 2).selectExpr('CAST(id % 13 AS INT) AS a', 'CAST(id AS STRING) AS b')"
        ".write.format('delta').mode('append').save(path)",
        path=source,
    )
    kind, message = deltaspark.run(ERRORS, path=source, wheres=["a = 1"], zorder=[])
    with pytest.raises(UnsupportedOperationException) as raised:
        DeltaTable.forPath(spark, source).optimize().where("a = 1").executeCompaction()
    assert kind == "UnsupportedOperationException" and message.startswith(str(raised.value))
    kind, message = deltaspark.run(ERRORS, path=source, wheres=[], zorder=["b"])
    with pytest.raises(AnalysisException) as refused:
        DeltaTable.forPath(spark, source).optimize().executeZOrderBy("b")
    assert kind == "AnalysisException" and message.startswith(str(refused.value))

    theirs, ours = _copies(Path(source), tmp_path)
    their_schema, their_metrics = deltaspark.run(THEIR_OPTIMIZE, path=theirs, wheres=[], zorder=[])
    our_schema, our_metrics = _our_optimize(spark, ours, [], [])
    assert their_metrics["clusteringStats"]["mergedFiles"]["numFiles"] == 4
    assert _comparable(our_metrics) == _comparable(their_metrics)
    assert deltaspark.run(LATEST_COMMIT, path=theirs) == _our_latest_commit(spark, ours)
