"""``_metadata`` on ``format("delta")`` reads, against delta-spark (``tests/deltaspark.py``).

Users read a scan's hidden ``_metadata`` column from Delta tables as from Parquet ones (the
vendored Z-order tests count a table's files with ``_metadata.file_path``). Both
implementations read the same tables, partitioned, column-mapped and with deletion
vectors on all or some of their files, and must give every row the same file path, name, size, block and modification
time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltaspark import DeltaSpark, plain
from pyspark.sql import SparkSession

# 100 rows in 4 tasks, partitioned by p (10 values): several files per partition.
PARTITIONED = """
from pyspark.sql.functions import col, floor
from pyspark.sql.types import IntegerType
spark.createDataFrame([i for i in range(0, 100)], IntegerType()) \\
    .withColumn("col1", floor(col("value") % 7)) \\
    .withColumn("p", floor(col("value") % 10)) \\
    .repartition(4).write.partitionBy("p").format("delta").save(path)
"""

COLUMNS = ("file_path", "file_name", "file_size", "file_block_start", "file_block_length", "file_modification_time")

METADATA = """
df = spark.read.format("delta").load(path)
if where:
    df = df.filter(where)
result = sorted(
    plain(tuple(r)) for r in df.select(
        key, *(f"_metadata.{c}" for c in columns)
    ).collect()
)
"""


@pytest.fixture(scope="module")
def partitioned(deltaspark: DeltaSpark, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("metadata") / "partitioned")
    deltaspark.run(PARTITIONED, path=path)
    return path


def _ours(spark: SparkSession, path: str, key: str, where: str | None = None) -> list[tuple]:
    df = spark.read.format("delta").load(path)
    if where:
        df = df.filter(where)
    return sorted(plain(tuple(r)) for r in df.select(key, *(f"_metadata.{c}" for c in COLUMNS)).collect())


@pytest.mark.parametrize("where", [None, "p = 2"])
def test_metadata_of_a_partitioned_read_matches_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, partitioned: str, where: str | None
) -> None:
    theirs = deltaspark.run(METADATA, path=partitioned, where=where, key="value", columns=COLUMNS)
    ours = _ours(spark, partitioned, "value", where)
    assert ours == theirs
    assert len({r[1] for r in ours}) > (1 if where else 10)


@pytest.mark.parametrize(
    "setup",
    [
        "spark.range(0, 50, 1, 2).selectExpr('id', 'id % 2 AS p')"
        ".write.format('delta').option('delta.columnMapping.mode', 'name').partitionBy('p').save(path)",
        "spark.range(0, 50, 1, 2).write.format('delta').option('delta.enableDeletionVectors', 'true').save(path)\n"
        "DeltaTable.forPath(spark, path).delete('id % 3 = 0')",
        # Some files with a DV, others without: one scan for both kinds.
        "spark.range(0, 50, 1, 2).write.format('delta').option('delta.enableDeletionVectors', 'true').save(path)\n"
        "spark.range(50, 60, 1, 1).write.format('delta').mode('append').save(path)\n"
        "DeltaTable.forPath(spark, path).delete('id = 3')",
    ],
    ids=["column_mapping", "deletion_vectors", "some_files_with_deletion_vectors"],
)
def test_metadata_of_column_mapped_and_deletion_vector_reads_matches_delta_spark(
    spark: SparkSession, deltaspark: DeltaSpark, tmp_path: Path, setup: str
) -> None:
    path = str(tmp_path / "t")
    deltaspark.run(setup, path=path)
    assert _ours(spark, path, "id") == deltaspark.run(METADATA, path=path, where=None, key="id", columns=COLUMNS)
