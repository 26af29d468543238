"""sparkdelta and delta-spark writing one table at the same time (``tests/deltaspark.py``).

Both commit with put-if-absent on the same ``_delta_log``: appends racing from both sides
all land, and each implementation's conflict detection refuses a commit the other's
concurrent write invalidated. To order the steps exactly, the slow side's DELETE carries
a gate UDF: the UDF runs only after that side has read its snapshot, writes ``started``,
and waits for ``go``, while the other side commits in between.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from deltaspark import DeltaSpark, DeltaSparkError, in_background, rows
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from sparkdelta.exceptions import ConcurrentAppendException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

APPENDS = 8

GATE = """
import os, time
def gate(value, started=started, go=go):
    open(started, "w").close()
    deadline = time.time() + 120
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.05)
    return value
spark.udf.register("gate", gate, "bigint")
"""


def wait_for(path: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_appends_from_both_land(tmp_path: Path, spark: SparkSession, deltaspark: DeltaSpark) -> None:
    """With row tracking on: each commit rebased over the other side's takes row ids above its."""
    path = str(tmp_path / "shared")
    spark.range(0).selectExpr("id", "'none' AS writer").write.format("delta").option("delta.enableRowTracking", "true").save(path)
    theirs = deltaspark.submit(
        """
for i in range(n):
    spark.range(1000 + i * 10, 1000 + i * 10 + 10).selectExpr("id", "'delta-spark' AS writer") \\
        .write.format("delta").mode("append").save(path)
""",
        path=path,
        n=APPENDS,
    )
    for i in range(APPENDS):
        spark.range(i * 10, i * 10 + 10).selectExpr("id", "'sparkdelta' AS writer").write.format("delta").mode("append").save(
            path
        )
    theirs.result(timeout=600)

    assert Table(path).snapshot().version == 2 * APPENDS, "every append got its own version"
    ours = [(i, "sparkdelta") for i in range(APPENDS * 10)]
    expected = sorted(ours + [(1000 + i, "delta-spark") for i in range(APPENDS * 10)], key=repr)  # as rows() sorts
    assert rows(spark.read.format("delta").load(path)) == expected
    assert deltaspark.run("result = rows(spark.read.format('delta').load(path))", path=path) == expected
    writers = deltaspark.run(
        "result = [r.engineInfo or '' for r in DeltaTable.forPath(spark, path).history().orderBy('version').collect()]",
        path=path,
    )
    assert sum("sparkdelta" in w for w in writers) == APPENDS + 1
    assert sum("sparkdelta" not in w for w in writers) == APPENDS
    ids = deltaspark.run("result = rows(spark.read.format('delta').load(path).select('_metadata.row_id'))", path=path)
    assert sorted(i for (i,) in ids) == list(range(2 * APPENDS * 10)), "every row its own id, none skipped"


@pytest.fixture
def table(tmp_path: Path, spark: SparkSession) -> str:
    path = str(tmp_path / "contended")
    spark.range(100).withColumn("p", F.col("id") % 2).write.format("delta").partitionBy("p").save(path)
    return path


def test_deltaspark_refuses_a_delete_sparkdelta_invalidated(
    tmp_path: Path, table: str, spark: SparkSession, deltaspark: DeltaSpark
) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    deltaspark.run(GATE, started=str(started), go=str(go))
    theirs = deltaspark.submit('spark.sql(f"DELETE FROM delta.`{path}` WHERE p = 0 AND gate(id) < 50")', path=table)
    wait_for(started)
    DeltaTable.forPath(spark, table).delete("p = 0 AND id >= 90")  # sparkdelta commits in between
    go.touch()
    with pytest.raises(DeltaSparkError) as refused:
        theirs.result(timeout=600)
    # Its DELETE rewrote the file ours read: delta-spark checks for added files first.
    assert refused.value.kind == "ConcurrentAppendException", refused.value.trace
    assert Table(table).snapshot().version == 1, "delta-spark's DELETE did not land"
    assert rows(spark.read.format("delta").load(table).where("p = 0")) == sorted(((i, 0) for i in range(0, 90, 2)), key=repr)


def test_sparkdelta_refuses_a_delete_deltaspark_invalidated(
    tmp_path: Path, table: str, spark: SparkSession, deltaspark: DeltaSpark
) -> None:
    started, go = tmp_path / "started", tmp_path / "go"

    def gate(value: int) -> int:
        started.touch()
        deadline = time.time() + 120
        while not go.exists() and time.time() < deadline:
            time.sleep(0.05)
        return value

    spark.udf.register("gate", gate, "bigint")
    ours = in_background(lambda: DeltaTable.forPath(spark, table).delete("p = 0 AND gate(id) < 50"))
    wait_for(started)
    deltaspark.run('spark.sql(f"DELETE FROM delta.`{path}` WHERE p = 0 AND id >= 90")', path=table)
    go.touch()
    with pytest.raises(ConcurrentAppendException):  # the same class delta-spark raises the other way round
        ours.result(timeout=600)
    assert Table(table).snapshot().version == 1, "sparkdelta's DELETE did not land"
    theirs = deltaspark.run("result = rows(spark.read.format('delta').load(path).where('p = 0'))", path=table)
    assert theirs == sorted(((i, 0) for i in range(0, 90, 2)), key=repr)
