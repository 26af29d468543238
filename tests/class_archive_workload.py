"""The workloads whose loaded classes ``class_archives.py`` archives, one per kind of test JVM.

``python class_archive_workload.py sparkdelta ARCHIVE`` runs a short mix of
what the tests do through sparkdelta (writes, DML with and without deletion vectors, OPTIMIZE,
the change feed, a stream, catalog tables) on a session set up as the tests' is;
``... delta-spark ARCHIVE JARS`` the same through delta-spark, as its oracle runs, from the
delta-spark venv. Each then has its own JVM write the classes it loaded to ARCHIVE.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _session(kind: str, folder: Path, jars: str) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(folder / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={folder}")
    )
    if kind == "delta-spark":
        from deltaspark_server import INTERPRETED  # the oracle's own settings, so its classes are the ones archived

        return (
            builder.config("spark.jars", jars)
            .config(map=INTERPRETED)
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.databricks.delta.snapshotPartitions", "1")
            .getOrCreate()
        )
    import sparkdelta

    builder = builder.config(
        "spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={folder / 'metastore_db'};create=true"
    )
    return sparkdelta.configure(builder).getOrCreate()


def _delta_table(kind: str) -> Any:
    if kind == "delta-spark":
        from delta.tables import DeltaTable
    else:
        from sparkdelta.tables import DeltaTable
    return DeltaTable


def _work(spark: Any, kind: str, folder: Path) -> None:
    delta_table = _delta_table(kind)
    path = str(folder / "table")
    rows = spark.range(100).selectExpr("id", "id % 7 AS k", "CAST(id AS STRING) AS v")
    rows.write.format("delta").partitionBy("k").save(path)
    spark.range(50, 150).selectExpr("id", "id % 7 AS k", "'x' AS v").write.format("delta").mode("append").save(path)
    table = delta_table.forPath(spark, path)
    table.update("id < 10", {"v": "'u'"})
    table.delete("id > 140")
    source = spark.range(90, 200).selectExpr("id", "id % 7 AS k", "'m' AS v")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    table.delete("id = 3")
    with_dvs = str(folder / "deletion-vectors")
    spark.sql(
        f"CREATE TABLE delta.`{with_dvs}` (id BIGINT, k BIGINT, v STRING) USING delta "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    rows.write.format("delta").mode("append").save(with_dvs)
    dv_table = delta_table.forPath(spark, with_dvs)
    dv_table.delete("id = 3")
    dv_table.alias("t").merge(source.alias("s"), "t.id = s.id AND s.id < 120").whenMatchedDelete().execute()
    spark.read.format("delta").load(with_dvs).count()
    spark.read.format("delta").load(path).groupBy("k").count().collect()
    spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 5).load(path).collect()
    spark.read.format("delta").option("versionAsOf", 1).load(path).where("id > 5").collect()
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    table.history().collect()
    table.detail().collect()
    sink = str(folder / "sink")
    stream = (
        spark.readStream.format("delta")
        .load(path)
        .writeStream.format("delta")
        .option("checkpointLocation", str(folder / "checkpoint"))
        .trigger(availableNow=True)
        .start(sink)
    )
    stream.awaitTermination()
    spark.sql("CREATE TABLE named (a INT, b STRING) USING delta")
    spark.sql("INSERT INTO named VALUES (1, 'a'), (2, 'b')")
    spark.sql("UPDATE named SET b = 'c' WHERE a = 1")
    spark.table("named").collect()
    spark.sql("DESCRIBE HISTORY named").collect()


def _dump(spark: Any, archive: str) -> None:
    """This JVM's loaded classes to ``archive``, by its own ``jcmd`` (the JVM was started with
    ``-XX:+RecordDynamicDumpInfo``)."""
    jvm = spark.sparkContext._jvm
    pid = str(jvm.java.lang.ProcessHandle.current().pid())
    jcmd = str(Path(jvm.java.lang.System.getProperty("java.home")) / "bin" / "jcmd")
    subprocess.run([jcmd, pid, "VM.cds", "dynamic_dump", archive], check=True, capture_output=True)


def main() -> None:
    kind, archive, jars = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "")
    folder = Path(tempfile.mkdtemp(prefix="class-archive-"))
    try:
        spark = _session(kind, folder, jars)
        spark.sparkContext.setLogLevel("ERROR")
        _work(spark, kind, folder)
        _dump(spark, archive)
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
