"""The Delta workload that ``test_cluster.py`` runs against a standalone Spark cluster.

It runs as its own process because a process holds one SparkContext and the test
session's is ``local[2]``. The session comes from ``sparkdelta.configure`` alone (the
test removes ``PYSPARK_PYTHON`` from this process's environment), so what the executors
get is what sparkdelta arranges. The job only produces: the rows it read go to Parquet
files, everything else to ``result.json``, and the test checks them against delta-rs and
a Python model of the rows.

Usage: ``python cluster_job.py MASTER_URL OUT_DIR [COLUMN_MAPPED_TABLE]``, in ``OUT_DIR``
(the table it writes has a path relative to it). The column-mapped reference table is
optional: the conformance tables are not everywhere the tests run.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import AtomicType

import sparkdelta
from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable

APP_NAME = "sparkdelta-cluster-test"
EXECUTORS = 2
# Partition values: spaces need escaping in directory names and in the log, None is the
# Hive default partition.
CITIES = ["New York", None, "San Francisco", "Rio de Janeiro"]
# (first id, end id, Spark partitions) of each write; the third keeps only New York rows.
FIRST_WRITE = (0, 1000, 4)
APPEND = (1000, 1200, 2)
REPLACEMENT = (2000, 2200, 2)
REPLACE_WHERE = "city = 'New York'"
# The table path is relative to the driver's working directory; executors run elsewhere.
TABLE = "tables/events"
EXECUTOR_TIME_ZONE = "Pacific/Kiritimati"


def filters() -> dict[str, str | Column]:
    """Filters whose files the kernel prunes: by partition and the id stats; by a null partition value."""
    return {"recent_san_francisco": "city = 'San Francisco' AND id >= 1000", "no_city": F.col("city").isNull()}


def events(spark: SparkSession, first: int, end: int, partitions: int) -> DataFrame:
    """Rows ``id``, ``city`` (``CITIES[id % 4]``), ``value`` (``id / 2``), ``at`` (``id`` hours after
    the epoch), generated on the executors."""
    cities = F.array(*[F.lit(c).cast("string") for c in CITIES])
    city = F.element_at(cities, (F.col("id") % len(CITIES) + 1).cast("int"))
    return spark.range(first, end, 1, partitions).select(
        "id", city.alias("city"), (F.col("id") / 2).alias("value"), F.timestamp_seconds(F.col("id") * 3600).alias("at")
    )


def session(master: str, directory: Path) -> SparkSession:
    """A sparkdelta session on ``master`` that starts only once all executors have registered."""
    builder = (
        SparkSession.builder.master(master)
        .appName(APP_NAME)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.port", "0")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(EXECUTORS))
        .config("spark.executor.memory", "512m")
        # Executors in another time zone than the driver: timestamps must not depend on it.
        .config("spark.executor.extraJavaOptions", f"-Duser.timezone={EXECUTOR_TIME_ZONE}")
        .config("spark.executorEnv.TZ", EXECUTOR_TIME_ZONE)
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(directory / "warehouse"))
    )
    spark = sparkdelta.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def save_rows(df: DataFrame, out: Path, name: str) -> None:
    pq.write_table(df.toArrow(), out / f"{name}.parquet")


def python_workers(spark: SparkSession) -> list[dict[str, Any]]:
    """Where the Python tasks ran: process id, working directory (the executor's) and interpreter."""
    sc = spark.sparkContext
    probe = sc.parallelize(range(4 * EXECUTORS), 4 * EXECUTORS)
    return probe.map(lambda _: {"pid": os.getpid(), "cwd": os.getcwd(), "prefix": sys.prefix}).collect()


def executors(spark: SparkSession) -> list[dict[str, Any]]:
    """The application's executors with their task counts, from Spark's REST API."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/allexecutors"
    with urllib.request.urlopen(url, timeout=30) as response:
        return [{k: e[k] for k in ("id", "hostPort", "totalTasks", "isActive")} for e in json.load(response)]


def rejected_write(spark: SparkSession, table: str) -> dict[str, str] | None:
    """Overwrite New York with rows of every city: the executors' replaceWhere check must refuse it."""
    try:
        events(spark, *REPLACEMENT).write.format("delta").mode("overwrite").option("replaceWhere", REPLACE_WHERE).save(table)
    except Exception as exc:  # the test checks which error it is
        return {"error": type(exc).__name__, "message": str(exc)}
    return None


def run(master: str, out: Path, column_mapped: str | None) -> None:
    """Write, rewrite and read ``TABLE`` (relative to the working directory) and record what happened in ``out``."""
    spark = session(master, out)
    table = TABLE
    result: dict[str, Any] = {"app_id": spark.sparkContext.applicationId, "driver_pid": os.getpid()}
    result["table"] = os.path.abspath(table)
    result["python_workers"] = python_workers(spark)

    events(spark, *FIRST_WRITE).write.format("delta").partitionBy("city").save(table)
    events(spark, *APPEND).write.format("delta").mode("append").save(table)
    replacement = events(spark, *REPLACEMENT).where(REPLACE_WHERE)
    replacement.write.format("delta").mode("overwrite").option("replaceWhere", REPLACE_WHERE).save(table)

    result["rejected_write"] = rejected_write(spark, table)

    for version in (0, 1):
        save_rows(spark.read.format("delta").option("versionAsOf", version).load(table), out, f"v{version}")
    save_rows(spark.read.format("delta").load(table), out, "latest")
    result["scans"] = {}
    for name, condition in filters().items():
        filtered = spark.read.format("delta").load(table).where(condition)
        info = scan_info(filtered)
        assert info is not None, "a filtered Delta read keeps its scan"
        result["scans"][name] = {"files_read": info.files_read, "files_total": info.files_total}
        save_rows(filtered, out, name)

    if column_mapped:
        mapped = spark.read.format("delta").load(column_mapped)
        atomic = [f.name for f in mapped.schema.fields if isinstance(f.dataType, AtomicType)]
        save_rows(mapped.select(*atomic), out, "column_mapped")

    history = DeltaTable.forPath(spark, table).history().collect()
    result["history"] = [{"version": h.version, "operation": h.operation, "mode": h.operationParameters["mode"]} for h in history]
    result["executors"] = executors(spark)
    spark.stop()
    (out / "result.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    run(sys.argv[1], Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
